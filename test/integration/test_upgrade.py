"""A rolling upgrade (issue 20): daemons from before multi-rail hosts and
the ones built here keep resolving each other while the cluster is upgraded
node by node.

The previous daemon is built from PREVIOUS, the last commit before a host
became a set of endpoints (store, fabric protocol item RAILS, message
RAIL_DOWN, records of 16 names and 32 addresses), with `git archive` into a
folder of its own, once per machine (it is reused by later runs, e.g. the
sanitized suite). Without git or without that commit in the checkout (a
tarball), the test is skipped, saying why.

test_upgrade_lossy_fetch mixes daemons of PREVIOUS_BUDGET, the last commit
before the boot budget (issue 22: three NEWCOMER announces each, range
answers by a walk, names in any order, no WHERE flag, no HINT_AT item),
with new ones in a lossy boot: each side fetches from the other.

test_upgrade_range_queries does the same with PREVIOUS_DIGEST, the last
commit before range queries (issue 22: the DIGEST item, but no RANGES flag,
no RANGE_QUERY): a new daemon asks only peers whose digest says they answer,
so an older one never sees a range query, and a peer restarted with the
older daemon is asked no more.

test_previous_module_reads_an_ordered_directory loads the NSS module of
PREVIOUS_UNORDERED, which an application started before the upgrade still
has mapped, against the new daemon's directory: it finds every host there and
rules out every other name without asking the daemon. So does the module of
PREVIOUS_START_ONLY, from before packed records' addresses shared bytes at
their end: it asks the daemon for such a record only.

Every wait is bounded; nothing asserts a timing."""
import ipaddress
import os
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import IBRESD, SINGLE_NODE, needs_root, run
from nss_helpers import NSS_MODULE, client_env, helpers, parse_kv  # noqa: F401
from fabric_util import (ST_SUCCESS, Cluster, acme, emulate, host, knows_every_rail,
                         path_fields, stats, wait_until)

pytestmark = [needs_root]

AF_INET, AF_INET6 = 2, 10

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREVIOUS = "bdde62b21630f55bc48a809e8119dd2f583ba818"
PREVIOUS_DIGEST = "29e8b13af61a89241670e5ecf9a813ace06923a5"
PREVIOUS_BUDGET = "c67b3f35bf4ee3d34e84ebfd0d871214e1d89d03"
# the last commit before the shared directory's tables were kept in Robin Hood
# order (IBDIR_ORDERED): its NSS module probes to an empty slot
PREVIOUS_UNORDERED = "45545fdc04f1ef4309ed8cd28f83332602b87cd0"
# the last commit before a packed record's GIDs and IPv6 addresses could
# share bytes at their end (IBDIR_REC_PACKED_ENDS)
PREVIOUS_START_ONLY = "5acab6597b9491a53122890febfa45b97a4c0dce"
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


def build_previous(commit, target="ibresd"):
    """@target (the daemon, or another file make builds in build/) of @commit:
    (path, None), or (None, why not)."""
    CACHE = os.path.join("/var/tmp", "ibres-previous-" + commit[:12] +
                         ("" if target == "ibresd" else "-" + target))
    binary = os.path.join(CACHE, "build", target)
    if root_only(CACHE, True) and root_only(os.path.join(CACHE, "build"), True) and \
            root_only(binary, False) and (target != "ibresd" or run(
                [binary, "--version"], timeout=10).returncode == 0):
        return binary, None
    try:
        r = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", commit + "^{commit}"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "git: %s" % e
    if r.returncode != 0:
        return None, "commit %s is not in this checkout" % commit[:12]
    # built in a folder of our own (mkdtemp: 0700, a fresh name)
    src = tempfile.mkdtemp(prefix="ibres-previous-", dir="/var/tmp")
    r = subprocess.run("git -C %s archive %s | tar -x -C %s" % (ROOT, commit, src),
                       shell=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # a make of its own: not the calling make's variables (B=..., -j...)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = run(["make", "-C", src, "-j2", "B=build", "build/" + target], timeout=BUILD_TIMEOUT,
            env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # kept for later runs only where nothing is in the way (a half-made or
    # someone else's cache is never taken); else used from where it was built
    if not os.path.lexists(CACHE):
        try:
            os.rename(src, CACHE)
            return binary, None
        except OSError:
            pass
    return os.path.join(src, "build", target), None


@pytest.fixture(scope="module")
def previous():
    path, why = build_previous(PREVIOUS)
    if not path:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def previous_digest():
    path, why = build_previous(PREVIOUS_DIGEST)
    if not path:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def previous_budget():
    path, why = build_previous(PREVIOUS_BUDGET)
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


def upgrade_round(c, previous, resolves, what):
    """Each node in turn runs @previous and then the new daemon again (down,
    restarted with the other build); after each step @resolves(c) within 20 s."""
    for k in sorted(c.nodes):
        for build in (previous, IBRESD):
            c.kill(k)
            emulate("start", "--dir", c.dir, "--node", k, "--ibresd", build, timeout=60)
            wait_until(lambda: resolves(c), 20, interval=0.3,
                       what="node%d on %s: %s" % (k, build, what))


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
        upgrade_round(c, previous, every_pair_resolves, "resolves and is resolved")
        for k in c.nodes:
            assert stats(c.sock(k))["fabric_rx_conflict"] == 0, k
    finally:
        c.down()


@pytest.mark.timeout(BUILD_TIMEOUT + 300)
def test_upgrade_range_queries(tmp_path, previous_digest):
    """Three new daemons; node 3 is restarted with the daemon from before range
    queries. A forged digest claiming hosts nobody has makes node 1
    incomplete: it fetches from node 2 (a new daemon) only, is complete again,
    and node 3 never receives a datagram it cannot parse. Every pair still
    resolves, and node 3 back on the new daemon answers range queries."""
    from test_fetch import claim_more
    c = Cluster(tmp_path / "rq", 3)
    c.up()
    try:
        wait_until(lambda: every_pair_resolves(c), 15, interval=0.3,
                   what="the new cluster resolves")
        c.kill(3)
        emulate("start", "--dir", c.dir, "--node", 3, "--ibresd", previous_digest, timeout=60)
        wait_until(lambda: every_pair_resolves(c), 15, interval=0.3,
                   what="node3 on the previous daemon resolves and is resolved")
        wait_until(lambda: stats(c.sock(1))["directory_complete"] == 1, 10,
                   what="node1 complete with node3 on the previous daemon")
        before = {k: stats(c.sock(k)) for k in c.nodes}
        claim_more(c, 3)
        wait_until(lambda: stats(c.sock(1))["directory_complete"] == 0, 3.0,
                   what="node1 incomplete after a digest with more hosts")
        wait_until(lambda: stats(c.sock(1))["directory_complete"] == 1, 10.0,
                   what="node1 complete again, node2 vouching")
        after = {k: stats(c.sock(k)) for k in c.nodes}
        assert after[2]["fabric_range_answered"] > before[2]["fabric_range_answered"]
        assert after[3]["fabric_rx_malformed"] == before[3]["fabric_rx_malformed"] == 0
        assert "fabric_range_answered" not in after[3]   # the previous daemon
        assert every_pair_resolves(c)
        # node 3 upgraded again: asked and answering
        c.kill(3)
        emulate("start", "--dir", c.dir, "--node", 3, "--ibresd", IBRESD, timeout=60)
        wait_until(lambda: every_pair_resolves(c), 15, interval=0.3,
                   what="node3 on the new daemon again")
        for k in c.nodes:
            assert stats(c.sock(k))["fabric_rx_conflict"] == 0, k
    finally:
        c.down()


def lacks(c):
    """{k: peers node k lacks}, read from each cache only."""
    return {k: [d for d in c.nodes if d != k and
                host(c.sock(k), c.nodes[d]["name"], cache_only=True)[0] != ST_SUCCESS]
            for k in c.nodes}


@pytest.mark.timeout(BUILD_TIMEOUT + 300)
def test_upgrade_lossy_fetch(tmp_path, previous_budget):
    """Eight nodes boot while 60 % of what each sends is lost; nodes 5 to 8
    then restart, still lossy, with the daemon from before the boot budget.
    Once the loss is lifted every node fetches what it lacks from whichever
    peers it asks, old or new: an old asker gets plain names from a new
    answerer (sorted, no HINT_AT), a new asker gets an old answerer's names
    without WHERE and splits. Every new node must know every other and count
    its directory complete within the bound, no old daemon may count a
    datagram malformed, and every pair resolves."""
    # A boot where some node missed a peer that another node holds: that is
    # what a fetch can find. A node every other one missed (all its
    # announces lost) is found by its next announce, not by a fetch: with
    # the old daemon, which may count itself complete knowing only itself,
    # it then says nothing for announce_interval (seen here), so such a boot
    # is drawn again.
    for attempt in range(6):
        c = Cluster(tmp_path / ("lf%d" % attempt), 8, "--loss", 60,
                    "--set", "resolve.announce_interval=60s", "--set", "resolve.addr_ttl=1h")
        c.up()
        try:
            for k in (5, 6, 7, 8):
                c.kill(k)
                emulate("start", "--dir", c.dir, "--node", k, "--ibresd", previous_budget,
                        timeout=60)
            time.sleep(2.5)   # the restarted nodes' settle time and bursts
            known = lacks(c)
            missing = sum(len(v) for v in known.values())
            unheld = [d for d in c.nodes if all(d in known[k] for k in c.nodes if k != d)]
            c.loss(0)
            lifted = time.monotonic()
            if missing and not unheld:
                break
        except BaseException:
            c.down()
            raise
        c.down()
    assert missing and not unheld, \
        "no boot of 6 where a node missed a peer another held (last: %d missing, unheld %s)" % (
            missing, unheld)
    try:
        # the new daemons: every peer known, old or new, and complete. The
        # previous daemons are not held to it: one peer's repeated answers
        # vouch three times there (the flaw "one peer, one voice" fixed),
        # and such a node may count itself complete lacking a host until
        # the next announce round (seen once in CI)
        def done():
            known = lacks(c)
            return all(not known[k] for k in (1, 2, 3, 4)) and \
                all(stats(c.sock(k))["directory_complete"] == 1 for k in (1, 2, 3, 4))
        wait_until(done, 25, interval=0.3, what="every new node knows every other, complete")
        took = time.monotonic() - lifted
        st = {k: stats(c.sock(k)) for k in c.nodes}
        print("missing at the lift: %d; all known and complete after %.1f s; fetch hints "
              "new %d old %d; unicast requests (new) %d" % (
                  missing, took, sum(st[k]["fabric_fetch_hints"] for k in (1, 2, 3, 4)),
                  sum(st[k]["fabric_fetch_hints"] for k in (5, 6, 7, 8)),
                  sum(st[k]["fabric_requests_unicast"] for k in (1, 2, 3, 4))))
        for k in (5, 6, 7, 8):
            assert "fabric_requests_unicast" not in st[k]   # the previous daemon
            assert st[k]["fabric_rx_malformed"] == 0, k
        for k in c.nodes:
            assert st[k]["fabric_rx_conflict"] == 0, k
        # every new node resolves every node by path, old and new
        for a in (1, 2, 3, 4):
            for b in c.nodes:
                if a != b:
                    assert acme_ok(c, a, b) == c.nodes[b]["gid"], (a, b)
    finally:
        c.down()


HOSTS_MANY = 1500  # more names than the smallest table holds: it is made larger, 7/10 full


@pytest.mark.timeout(BUILD_TIMEOUT + 300)
def test_previous_module_reads_an_ordered_directory(tmp_path, daemon_factory, helpers):
    module, why = build_previous(PREVIOUS_UNORDERED, "libnss_ib.so.2")
    if not module:
        pytest.skip(why)
    # without it, the rest is tested all the same
    start_only, _ = build_previous(PREVIOUS_START_ONLY, "libnss_ib.so.2")
    hosts = tmp_path / "hosts"
    # and one host whose names share most of their bytes: the daemon packs
    # its record (IBDIR_REC_PACKED), which the module of PREVIOUS_UNORDERED
    # cannot read; and one whose IPv6 addresses, a rail's subnet each,
    # differ in the middle: packed sharing their end too
    # (IBDIR_REC_PACKED_ENDS), which neither previous module reads
    hosts.write_text("".join(
        "fe80::2:c903:1:%x %d host%d host%d.cluster.example 198.18.%d.%d\n" % (
            i + 1, i + 100, i, i, 100 + i // 250, 1 + i % 250) for i in range(HOSTS_MANY)) +
        "fe80::2:c903:2:1 4000 packedhost packedhost-storage-rail-one "
        "packedhost-storage-rail-two packedhost-storage-rail-three 198.18.99.1\n"
        "fe80::2:c903:3:1 4001 endshost endshost-rails 2001:db8:0:1::5 2001:db8:0:2::5 "
        "2001:db8:0:3::5\n")
    text = open(SINGLE_NODE).read().replace("[resolve]\n", "[resolve]\nhosts_file = %s\n" %
                                            hosts, 1)
    d = daemon_factory(text, name="ordered").start()
    env = client_env(d)
    for mod in [m for m in (module, start_only, NSS_MODULE) if m]:
        before = stats(d.socket)["host_lookups"]
        for key, af, want in (("host%ld", AF_INET, "SUCCESS"), ("host%ld.cluster.example",
                                                              AF_INET, "SUCCESS"),
                              ("www%ld.example.com", AF_INET, "NOTFOUND")):
            # host0 .. host1499, each asked once
            r = run([helpers["nss_call"], "--repeat", str(HOSTS_MANY - 1), mod, "byname2", key,
                     str(af)], env=env, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            kv = parse_kv(r.stdout)
            assert kv["status"] == want and kv["repeat_status_differ"] == "0", \
                (mod, key, r.stdout)
        # every answer came from the directory: the daemon was asked nothing
        assert stats(d.socket)["host_lookups"] == before, mod
        # a packed record a module cannot read: it takes it for damage and
        # asks the daemon, and answers all the same; one that can reads it
        # in place
        for name, af, canonical, addrs, reads in (
                ("packedhost-storage-rail-two", AF_INET, "packedhost", {"198.18.99.1"},
                 mod != module),
                ("endshost-rails", AF_INET6, "endshost",
                 {"2001:db8:0:1::5", "2001:db8:0:2::5", "2001:db8:0:3::5"},
                 mod == NSS_MODULE)):
            before = stats(d.socket)["host_lookups"]
            r = run([helpers["nss_call"], mod, "byname2", name, str(af)], env=env, timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
            kv = parse_kv(r.stdout)
            assert kv["status"] == "SUCCESS" and kv["name"] == canonical, (mod, r.stdout)
            assert set(kv["addrs"].split(",")) == addrs, (mod, r.stdout)
            asked = stats(d.socket)["host_lookups"] - before
            assert asked == 0 if reads else asked >= 1, (mod, name, asked)


def every_node_knows_every_rail(c):
    return all(knows_every_rail(c, k) for k in c.nodes)


@pytest.mark.timeout(BUILD_TIMEOUT + 300)
def test_rolling_upgrade_rails(tmp_path, previous):
    """Two rails (LIDs distinct: the previous daemon takes a LID for the cluster's).
    The previous daemon cannot name one host on two endpoints, so a multi-rail
    cluster upgrades with what it ran: one host name per rail (nodeK-ibR). Each node
    in turn runs the previous daemon and then the new one; at every step every node
    resolves every rail of every other by name. Then every node gets its host name on
    both rails (reloads one after the other, without waiting: each rail says goodbye
    under its old name and announces the new one at once): peers take each node's
    rails as one host, every host name lists both rails, every rail name still
    answers, and nobody counted a conflict."""
    c = Cluster(tmp_path / "up", 3, "--rails", 2)
    c.up()
    try:
        shared = {k: c.config(k) for k in c.nodes}
        for k in c.nodes:
            # one name per rail: each endpoint's first name line goes
            per_rail = "\n".join(line for line in shared[k].split("\n")
                                 if line != "name = %s" % c.nodes[k]["name"])
            assert per_rail != shared[k]
            with open(os.path.join(c.dir, "node%d" % k, "ibresd.conf"), "w") as f:
                f.write(per_rail)
            c.kill(k)
            c.start(k)
        wait_until(lambda: every_node_knows_every_rail(c), 20, interval=0.3,
                   what="every rail known by its own name")
        upgrade_round(c, previous, every_node_knows_every_rail, "every rail known")
        for k in sorted(c.nodes):
            with open(os.path.join(c.dir, "node%d" % k, "ibresd.conf"), "w") as f:
                f.write(shared[k])
            c.kill(k, "HUP")
        want = {j: [rl["gid"] for rl in c.rails[j]] for j in c.nodes}

        def hosts_whole():
            for k in c.nodes:
                for j in c.nodes:
                    if j == k:
                        continue
                    status, rec = host(c.sock(k), c.nodes[j]["name"], cache_only=True)
                    if status != ST_SUCCESS or sorted(rec["gids"]) != sorted(want[j]):
                        return False
            return every_node_knows_every_rail(c)
        wait_until(hosts_whole, 30, interval=0.3, what="every host name lists both rails")
        for k in c.nodes:
            assert stats(c.sock(k))["fabric_rx_conflict"] == 0, k
    finally:
        c.down()
