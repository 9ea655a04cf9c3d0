"""[daemon] user: ibresd started as root opens what needs root, then runs as
that user for good; clients are still told apart by their own uid."""
import os
import pwd
import shutil
import signal
import tempfile
import time

import pytest

from conftest import (IBRESD, SINGLE_NODE, Client, Daemon, acm_hdr, config_with, have,
                      parse_hdr, parse_tlvs, run)
from test_daemon import resolve_name

OP_CACHE_FLUSH, T_COUNT = 0x0a, 17

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop privileges")

try:
    NOBODY = pwd.getpwnam("nobody")
except KeyError:
    NOBODY = None


@pytest.fixture
def open_dir():
    """A directory every user may read (pytest's tmp dirs are root's, 0700):
    the daemon's user must read its configuration there to reload."""
    d = tempfile.mkdtemp(prefix="ibres-privs-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def proc_ids(pid):
    ids = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Uid", "Gid", "Groups", "CapEff", "CapPrm"):
                ids[key] = rest.split()
    return ids


def wait_log(d, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while text not in d.logtext():
        assert time.monotonic() < deadline, "%r not logged:\n%s" % (text, d.logtext())
        time.sleep(0.05)


@pytest.mark.skipif(NOBODY is None, reason="no user 'nobody'")
def test_runs_as_nobody(open_dir):
    conf = os.path.join(open_dir, "ibresd.conf")
    with open(conf, "w") as f:
        f.write(config_with({"daemon": ["user = nobody"]}))
    os.chmod(conf, 0o644)
    d = Daemon(os.path.join(open_dir, "d"), config_path=conf,
               sock=os.path.join(open_dir, "ibresd.sock"))
    d.start()
    try:
        wait_log(d, "running as user nobody")
        ids = proc_ids(d.proc.pid)
        assert ids["Uid"] == [str(NOBODY.pw_uid)] * 4, ids
        assert ids["Gid"] == [str(NOBODY.pw_gid)] * 4, ids
        assert ids["CapEff"] == ["0000000000000000"], ids
        assert ids["CapPrm"] == ["0000000000000000"], ids
        # it serves: the raw protocol, and ib_acme when installed
        c = Client(d.socket)
        assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
        c.close()
        if have("ib_acme"):
            r = run(["ib_acme", "-S", d.socket, "-f", "n", "-d", "node1", "-s", "node1"])
            assert r.returncode == 0 and "return status 0x0" in r.stdout, r.stdout
        # the admin check is on the client's uid, not the daemon's: root may flush
        c = Client(d.socket)
        ans = c.request(acm_hdr(OP_CACHE_FLUSH, 16))
        c.close()
        assert parse_hdr(ans)["status"] == 0 and parse_tlvs(ans[16:])[0][0] == T_COUNT
        # a reload reads the file as nobody, and opens nothing new
        d.signal(signal.SIGHUP)
        wait_log(d, "configuration reloaded")
        assert "reload failed" not in d.logtext()
        assert proc_ids(d.proc.pid)["Uid"] == [str(NOBODY.pw_uid)] * 4
        assert d.stop() == 0
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(5)


@pytest.mark.skipif(NOBODY is None, reason="no user 'nobody'")
def test_unreadable_config_is_reported(open_dir):
    """A configuration only root can read: the daemon starts (read as root)
    but warns that reloads as its user will fail, and a reload does fail
    while the daemon keeps serving."""
    conf = os.path.join(open_dir, "ibresd.conf")
    with open(conf, "w") as f:
        f.write(config_with({"daemon": ["user = nobody"]}))
    os.chmod(conf, 0o600)
    d = Daemon(os.path.join(open_dir, "d"), config_path=conf,
               sock=os.path.join(open_dir, "ibresd.sock"))
    d.start()
    try:
        wait_log(d, "is not readable by the daemon's user")
        d.signal(signal.SIGHUP)
        wait_log(d, "reload failed")
        c = Client(d.socket)
        assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
        c.close()
        assert d.stop() == 0
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(5)


def test_unknown_user(tmp_path):
    conf = tmp_path / "ibresd.conf"
    conf.write_text(config_with({"daemon": ["user = no-such-user-ibres"]}))
    for args in (["--check-config"], ["-f", "-s", str(tmp_path / "s.sock")]):
        r = run([IBRESD, "-c", str(conf)] + args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert "no-such-user-ibres" in r.stderr and "no such user" in r.stderr, r.stderr
    assert not os.path.exists(str(tmp_path / "s.sock"))


def test_user_none_and_check_config():
    r = run([IBRESD, "--check-config", "-c", SINGLE_NODE])
    assert r.returncode == 0 and "user = none" in r.stdout, r.stdout
