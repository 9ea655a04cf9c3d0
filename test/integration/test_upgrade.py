"""A rolling upgrade (issue 20): daemons from before multi-rail hosts and
the ones built here keep resolving each other while the cluster is upgraded
node by node.

The previous daemon is built from PREVIOUS, the last commit before a host
became a set of endpoints (store, fabric protocol item RAILS, message
RAIL_DOWN, records of 16 names and 32 addresses), with `git archive` into a
folder of its own, once per machine (it is reused by later runs, e.g. the
sanitized suite). Without git or without that commit in the checkout (a
tarball), the test is skipped, saying why.

Every wait is bounded; nothing asserts a timing."""
import ipaddress
import os
import stat
import subprocess
import tempfile

import pytest

from conftest import IBRESD, needs_root, run
from fabric_util import (ST_SUCCESS, Cluster, acme, emulate, host, path_fields, stats,
                         wait_until)

pytestmark = [needs_root]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREVIOUS = "bdde62b21630f55bc48a809e8119dd2f583ba818"
CACHE = os.path.join("/var/tmp", "ibres-previous-" + PREVIOUS[:12])
BUILD_TIMEOUT = 900


def root_only(path, want_dir):
    """Is @path root's, not a link, and writable by root alone? /var/tmp is
    everyone's: a cache another user made (or swapped for a link) is never
    run, as root, by this test."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    return kind and st.st_uid == 0 and not st.st_mode & 0o022


def build_previous():
    """The previous daemon: (path, None), or (None, why not)."""
    binary = os.path.join(CACHE, "build", "ibresd")
    if root_only(CACHE, True) and root_only(os.path.join(CACHE, "build"), True) and \
            root_only(binary, False) and run([binary, "--version"], timeout=10).returncode == 0:
        return binary, None
    try:
        r = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", PREVIOUS + "^{commit}"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "git: %s" % e
    if r.returncode != 0:
        return None, "commit %s is not in this checkout" % PREVIOUS[:12]
    # built in a folder of our own (mkdtemp: 0700, a fresh name)
    src = tempfile.mkdtemp(prefix="ibres-previous-", dir="/var/tmp")
    r = subprocess.run("git -C %s archive %s | tar -x -C %s" % (ROOT, PREVIOUS, src),
                       shell=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = run(["make", "-C", src, "-j2", "build/ibresd"], timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # kept for later runs only where nothing is in the way (a half-made or
    # someone else's cache is never taken); else used from where it was built
    if not os.path.lexists(CACHE):
        try:
            os.rename(src, CACHE)
            return binary, None
        except OSError:
            pass
    return os.path.join(src, "build", "ibresd"), None


@pytest.fixture(scope="module")
def previous():
    path, why = build_previous()
    if not path:
        pytest.skip(why)
    return path


def acme_ok(c, s, d):
    """Node @s resolves node @d by name with ib_acme: the path's DGID, or None."""
    r = acme(c.sock(s), "-f", "n", "-s", c.nodes[s]["name"], "-d", c.nodes[d]["name"],
             timeout=60)
    if r.returncode != 0 or "return status 0x0" not in r.stdout:
        return None
    return str(ipaddress.IPv6Address(path_fields(r.stdout)["dgid"]))


def every_pair_resolves(c):
    for s in c.nodes:
        for d in c.nodes:
            if s == d:
                continue
            if acme_ok(c, s, d) != c.nodes[d]["gid"]:
                return False
            status, rec = host(c.sock(s), c.nodes[d]["name"], cache_only=True)
            if status != ST_SUCCESS or rec["gids"][:1] != [c.nodes[d]["gid"]]:
                return False
    return True


@pytest.mark.timeout(BUILD_TIMEOUT + 300)
def test_rolling_upgrade(tmp_path, previous):
    """Three nodes of the new daemon; each in turn runs the previous one and
    then the new one again (down, restarted with the other build): at every
    step every node resolves every other by name, by path (ib_acme) and by a
    HOST lookup, and nobody counts a conflict."""
    c = Cluster(tmp_path / "up", 3)
    c.up()
    try:
        wait_until(lambda: every_pair_resolves(c), 15, interval=0.3,
                   what="the new cluster resolves")
        for k in sorted(c.nodes):
            for build in (previous, IBRESD):
                c.kill(k)
                emulate("start", "--dir", c.dir, "--node", k, "--ibresd", build, timeout=60)
                wait_until(lambda: every_pair_resolves(c), 15, interval=0.3,
                           what="node%d on %s resolves and is resolved" % (k, build))
        for k in c.nodes:
            assert stats(c.sock(k))["fabric_rx_conflict"] == 0, k
    finally:
        c.down()
