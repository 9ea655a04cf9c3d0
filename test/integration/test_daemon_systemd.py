"""ibresd under systemd's protocols, without systemd: socket activation through
systemd-socket-activate(1) (LISTEN_FDS) and readiness notification through a
datagram socket of the test's own in NOTIFY_SOCKET (sd_notify(3))."""
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import (IBRESD, SINGLE_NODE, Client, acm_hdr, config_with, ep_entry, have,
                      parse_hdr, run, wait_for_socket)
from test_daemon import resolve_name

ACTIVATE = "systemd-socket-activate"

needs_activate = pytest.mark.skipif(not have(ACTIVATE), reason="systemd-socket-activate missing")
needs_acme = pytest.mark.skipif(not have("ib_acme"), reason="ib_acme (package ibacm) missing")


def wait_path(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.02)


def wait_log(path, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        with open(path, "rb") as f:
            log = f.read().decode(errors="replace")
        if text in log:
            return log
        assert time.monotonic() < deadline, "%r not logged:\n%s" % (text, log)
        time.sleep(0.05)


class Activated:
    """ibresd started by systemd-socket-activate on the sockets @listen; the
    daemon replaces the tool in the same process on the first connection."""

    def __init__(self, tmp_path, listen, names=(), config=None, sock=None):
        self.dir = str(tmp_path)
        self.conf = os.path.join(self.dir, "ibresd.conf")
        with open(self.conf, "w") as f:
            f.write(config or open(SINGLE_NODE).read())
        self.sock = sock or listen[0]
        self.log_path = os.path.join(self.dir, "ibresd.log")
        cmd = [ACTIVATE]
        for addr in listen:
            cmd += ["-l", addr]
        if names:
            cmd.append("--fdname=" + ":".join(names))
        cmd += [IBRESD, "-f", "-d", "-c", self.conf, "-s", self.sock]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def logtext(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise
        self.log.close()
        return self.proc.returncode


@pytest.fixture
def activated(tmp_path):
    made = []

    def make(*a, **kw):
        d = Activated(tmp_path, *a, **kw)
        made.append(d)
        return d
    yield make
    for d in made:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(5)
        d.log.close()


@needs_activate
@needs_acme
def test_socket_activation(activated, tmp_path):
    """The daemon serves the socket it was handed (ib_acme works on it),
    neither locks nor removes it, and leaves it in place at SIGTERM."""
    sock = str(tmp_path / "act.sock")
    d = activated([sock], names=["ibresd"])
    wait_path(sock)
    # the first connection starts the daemon; it is answered, not lost
    r = run(["ib_acme", "-S", sock, "-f", "n", "-d", "node1", "-s", "node1"], timeout=20)
    assert r.returncode == 0 and "return status 0x0" in r.stdout, r.stdout + r.stderr
    log = wait_log(d.log_path, "ready")
    assert "listening on %s (socket 'ibresd' from systemd)" % sock in log, log
    assert not os.path.exists(sock + ".lock"), "an adopted socket is systemd's: no lock file"
    c = Client(sock)
    assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
    c.close()
    assert d.stop() == 0
    assert os.path.exists(sock), "systemd's socket file must survive the daemon"


@needs_activate
def test_activation_acm_socket_and_strays(activated, tmp_path):
    """The configured acm_socket is taken from the passed sockets too (and
    no ibacm.sock link is made: that is systemd's Symlinks=); a passed Unix
    socket the config does not name is served as well; a TCP one is closed."""
    sock, acm, extra = (str(tmp_path / n) for n in ("own.sock", "acm-unix.sock", "extra.sock"))
    conf = open(SINGLE_NODE).read().replace(
        "[daemon]\n", "[daemon]\nacm_socket = %s\nacm_link = yes\n" % acm, 1)
    with socket.socket() as probe:  # a free TCP port on loopback for the stray
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    d = activated([sock, acm, extra, "127.0.0.1:%d" % port],
                  names=["ibresd", "acm", "extra", "tcp"], config=conf)
    wait_path(extra)
    for path in (extra, acm, sock):   # the first connection starts it
        c = Client(path, timeout=10)
        assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0, path
        c.close()
    log = d.logtext()
    assert "listening on %s (socket 'acm' from systemd)" % acm in log, log
    assert "socket %s ('extra') from systemd is not in the configuration" % extra in log, log
    assert "('tcp') from systemd is not a listening Unix stream socket" in log, log
    assert not os.path.lexists(str(tmp_path / "ibacm.sock"))
    assert d.stop() == 0
    for path in (sock, acm, extra):
        assert os.path.exists(path), path


@needs_activate
def test_activation_socket_named_acm_answers_as_for_librdmacm(activated, tmp_path):
    """A passed socket named "acm" (ibresd-acm.socket's FileDescriptorName=) is ibacm's
    socket even when ibresd.conf names no acm_socket: a RESOLVE by IP address there gets
    the source and no path (nss-ib(8), RDMA_CM AND AF_IB); the daemon's own socket the
    path."""
    sock, acm = str(tmp_path / "own.sock"), str(tmp_path / "acm-unix.sock")
    d = activated([sock, acm], names=["ibresd", "acm"])
    wait_path(acm)
    body = ep_entry(2, 2, socket.inet_pton(socket.AF_INET, "198.18.0.1"))
    req = acm_hdr(1, 16 + len(body)) + body
    types = {}
    for path in (acm, sock):
        c = Client(path, timeout=10)
        ans = c.request(req)
        c.close()
        assert parse_hdr(ans)["status"] == 0, path
        types[path] = [int.from_bytes(ans[o + 4:o + 6], "little")
                       for o in range(16, len(ans), 72)]
    assert types[acm] == [2], types     # the source (ADDRESS_IP) alone
    assert types[sock] == [0x10, 2], types  # PATH, then the source
    assert d.stop() == 0


@needs_activate
def test_activation_for_another_path_binds_its_own(activated, tmp_path):
    """A passed socket that is not the configured path does not stop the
    daemon from making its own, which it removes again at exit."""
    passed, own = str(tmp_path / "passed.sock"), str(tmp_path / "own.sock")
    d = activated([passed], names=["other"], sock=own)
    wait_path(passed)
    c = Client(passed, timeout=10)
    assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
    c.close()
    wait_for_socket(own)
    c = Client(own)
    assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
    c.close()
    assert d.stop() == 0
    assert os.path.exists(passed) and not os.path.exists(own)


# --- sd_notify ----------------------------------------------------------------------

class Notify:
    """A datagram socket standing in for systemd's notification socket."""

    def __init__(self, path):
        self.path = path
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(path)

    def wait_for(self, state, timeout=10.0):
        """Messages until one carries @state (e.g. READY=1); all of them."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "no %s; got %r" % (state, seen)
            self.s.settimeout(left)
            try:
                msg = self.s.recv(4096).decode()
            except socket.timeout:
                continue
            seen.append(msg)
            if state in msg.split("\n"):
                return seen

    def close(self):
        self.s.close()


def test_sd_notify(tmp_path):
    """READY=1 once the socket accepts; RELOADING=1 then READY=1 on SIGHUP;
    STOPPING=1 at shutdown."""
    sock = str(tmp_path / "ibresd.sock")
    n = Notify(str(tmp_path / "notify"))
    env = dict(os.environ, NOTIFY_SOCKET=n.path)
    proc = subprocess.Popen([IBRESD, "-f", "-c", SINGLE_NODE, "-s", sock], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        n.wait_for("READY=1")
        # ready means serving: no retry, no wait
        c = Client(sock)
        assert parse_hdr(c.request(resolve_name("node1")))["status"] == 0
        c.close()
        proc.send_signal(signal.SIGHUP)
        seen = n.wait_for("READY=1")
        assert any("RELOADING=1" in m.split("\n") for m in seen), seen
        proc.send_signal(signal.SIGTERM)
        n.wait_for("STOPPING=1")
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        n.close()


def test_sd_notify_config_error_sends_no_ready(tmp_path):
    """A daemon that cannot start never says READY=1."""
    bad = tmp_path / "bad.conf"
    bad.write_text(config_with({"daemon": ["user = no-such-user-ibres"]}))
    n = Notify(str(tmp_path / "notify"))
    env = dict(os.environ, NOTIFY_SOCKET=n.path)
    try:
        r = subprocess.run([IBRESD, "-f", "-c", str(bad), "-s", str(tmp_path / "s.sock")],
                           env=env, capture_output=True, text=True, timeout=20)
        assert r.returncode == 1 and "no-such-user-ibres" in r.stderr, r.stderr
        n.s.setblocking(False)
        with pytest.raises(BlockingIOError):
            n.s.recv(4096)
    finally:
        n.close()
