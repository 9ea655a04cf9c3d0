"""A local attacker gains nothing (issue 21): each attack runs as an
unprivileged user the test creates and removes, and each must fail.

- files of the socket: a lock-file symlink planted in the socket's folder
  does not make root create a file elsewhere; a socket folder another user
  can write to (or owns) is refused by a root daemon with a clear message;
  the socket comes out 0666 with no chmod by path; a daemon that is not
  root may use a sticky /tmp;
- the socket itself: connections each holding one byte of a request, or
  pipelined requests whose answers are never read, do not deny root's
  lookups, and the counters say what happened;
- CACHE_LIST: another user sees no negative entries and no queries in
  flight, and is told why.

The checkout may sit where only root may enter (/root): the attacker runs
this module's own code in a forked child that became that user, or programs
copied into a world-readable folder."""
import contextlib
import os
import pickle
import pwd
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time

import pytest

from conftest import (IBRESCTL, IBRESD, Client, Daemon, acm_hdr, config_with, have, parse_hdr,
                      parse_tlvs, run, tlv)
from fabric_util import cache_list, stats
from test_daemon import resolve_name

OP_HOST, OP_CACHE_LIST, OP_STATS = 0x08, 0x09, 0x0b
T_NAME, T_FLAGS, T_NEST, T_STATE = 1, 10, 13, 11
STATE_QUERYING, STATE_NEGATIVE = 1, 4
LIST_WITHHELD = 1

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates a user, runs root daemons"),
    pytest.mark.skipif(not have("useradd") or not have("userdel"), reason="no useradd/userdel"),
]


# --- the attacker ------------------------------------------------------------

@pytest.fixture(scope="module")
def attacker():
    """A throwaway system user, removed at the end."""
    name = "ibres-attacker-%d" % os.getpid()
    r = run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", "--user-group", name])
    assert r.returncode == 0, r.stderr
    try:
        yield pwd.getpwnam(name)
    finally:
        run(["userdel", name])
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            pytest.fail("user %s not removed" % name)


@pytest.fixture
def open_dir():
    """A folder every user may enter, root's and not writable by others."""
    d = tempfile.mkdtemp(prefix="ibres-sec-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def become(pw):
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    assert os.geteuid() == pw.pw_uid and os.getuid() == pw.pw_uid


def as_user(pw, fn, *args, timeout=30.0):
    """fn(*args) in a forked child running as @pw; its result (or its exception, as text)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            become(pw)
            res = ("ok", fn(*args))
        except BaseException as e:  # noqa: B902: everything goes back to the test
            res = ("error", repr(e))
        try:
            os.write(w, pickle.dumps(res))
        finally:
            os._exit(0)
    os.close(w)
    data, deadline = b"", time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "the attacker's child did not finish in %.0fs" % timeout
            if select.select([r], [], [], left)[0]:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                data += chunk
    finally:
        os.close(r)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    assert kind == "ok", "as %s: %s" % (pw.pw_name, value)
    return value


class Attack:
    """fn(ready) as @pw in a child until stop(): fn calls ready() once it holds what it wants,
    then goes on (a bound of its own ends it)."""

    def __init__(self, pw, fn, *args):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            try:
                become(pw)
                fn(lambda: os.write(w, b"r"), *args)
            finally:
                os._exit(0)
        os.close(w)
        self.ready_fd = r

    def wait_ready(self, timeout=10.0):
        assert select.select([self.ready_fd], [], [], timeout)[0], "the attack never got going"
        assert os.read(self.ready_fd, 1) == b"r", "the attack failed to start"

    def stop(self):
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.ready_fd)


def closed(s):
    """Has the daemon closed @s? Never blocks, and reads nothing: answers stay unread."""
    p = select.poll()
    p.register(s, select.POLLHUP | select.POLLERR)
    return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in p.poll(0))


def hold(ready, path, n, payload, seconds=40.0):
    """Keep @n connections, each sent @payload and never read; whenever the daemon closes
    one, take another."""
    conns, said = [], False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        conns = [s for s in conns if not closed(s) or s.close()]
        while len(conns) < n:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(1)
                s.connect(path)
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.send(payload)
            except OSError:
                s.close()
                break
            conns.append(s)
        if not said:
            ready()
            said = True
        time.sleep(0.02)


ONE_BYTE = b"\x01"
PIPELINED = acm_hdr(OP_STATS, 16) * 400  # ~1.5 MB of answers, far over a socket's buffer


# --- helpers -------------------------------------------------------------------

def start_daemon(folder, settings=(), text=None, name="ibresd.sock"):
    conf = os.path.join(folder, "ibresd.conf")
    text = text or config_with({"daemon": list(settings)})
    with open(conf, "w") as f:
        f.write(text)
    os.chmod(conf, 0o644)
    return Daemon(os.path.join(folder, "d"), config_path=conf,
                  sock=os.path.join(folder, name)).start()


def root_lookups(sock, n=10):
    """n lookups through the socket as root, one connection each: how many were answered."""
    answered = 0
    for _ in range(n):
        c = Client(sock, timeout=5)
        try:
            ans = c.request(resolve_name("node1"))
            answered += ans is not None and parse_hdr(ans)["status"] == 0
        except OSError:
            pass
        finally:
            c.close()
    return answered


def stopped(d):
    if d.proc.poll() is None:
        d.stop()


def refused_start(folder_sock, conf):
    """ibresd on @folder_sock as root: its exit status and what it said."""
    r = run([IBRESD, "--foreground", "--config", conf, "--socket", folder_sock], timeout=20)
    return r.returncode, r.stdout + r.stderr


def write_conf(folder):
    conf = os.path.join(folder, "ibresd.conf")
    with open(conf, "w") as f:
        f.write(config_with({}))
    os.chmod(conf, 0o644)
    return conf


# --- (4) files of the socket ---------------------------------------------------

def test_lock_symlink_does_not_make_root_create_a_file(attacker, open_dir):
    """A symlink planted as the lock file (here by root, standing in for an account that
    once could write the folder) is refused: nothing is created where it points."""
    conf = write_conf(open_dir)
    secret = tempfile.mkdtemp(prefix="ibres-secret-", dir="/tmp")  # root-only, 0700
    target = os.path.join(secret, "nologin")
    run_dir = os.path.join(open_dir, "run")
    os.mkdir(run_dir, 0o755)
    try:
        os.symlink(target, os.path.join(run_dir, "ibresd.sock.lock"))
        rc, out = refused_start(os.path.join(run_dir, "ibresd.sock"), conf)
        assert rc != 0 and "symbolic link" in out, out
        assert not os.path.lexists(target), "root followed the lock symlink"
        assert not os.path.exists(os.path.join(run_dir, "ibresd.sock"))

        # a lock that is another user's file, or a hard link, is refused as well
        lock = os.path.join(run_dir, "ibresd.sock.lock")
        os.unlink(lock)
        with open(lock, "w"):
            pass
        os.chown(lock, attacker.pw_uid, attacker.pw_gid)
        rc, out = refused_start(os.path.join(run_dir, "ibresd.sock"), conf)
        assert rc != 0 and "not a regular file of uid 0" in out, out
        os.unlink(lock)
        os.link(conf, lock)
        rc, out = refused_start(os.path.join(run_dir, "ibresd.sock"), conf)
        assert rc != 0 and "2 links" in out, out
        os.unlink(lock)
    finally:
        shutil.rmtree(secret, ignore_errors=True)


def test_folder_of_another_user_is_refused(attacker, open_dir):
    """The attacker owns the socket's folder and plants the lock symlink itself: a root
    daemon refuses the folder before it opens anything there."""
    conf = write_conf(open_dir)
    secret = tempfile.mkdtemp(prefix="ibres-secret-", dir="/tmp")
    target = os.path.join(secret, "nologin")
    run_dir = os.path.join(open_dir, "run")
    os.mkdir(run_dir, 0o755)
    os.chown(run_dir, attacker.pw_uid, attacker.pw_gid)
    try:
        as_user(attacker, os.symlink, target, os.path.join(run_dir, "ibresd.sock.lock"))
        rc, out = refused_start(os.path.join(run_dir, "ibresd.sock"), conf)
        assert rc != 0, out
        assert ("socket folder %s is owned by uid %d with mode 0755" %
                (run_dir, attacker.pw_uid)) in out, out
        assert not os.path.lexists(target)
    finally:
        shutil.rmtree(secret, ignore_errors=True)


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777])
def test_writable_socket_folder_is_refused_by_root(open_dir, mode):
    conf = write_conf(open_dir)
    run_dir = os.path.join(open_dir, "run")
    os.mkdir(run_dir)
    os.chmod(run_dir, mode)
    rc, out = refused_start(os.path.join(run_dir, "ibresd.sock"), conf)
    assert rc == 1, out
    assert "socket folder %s is owned by uid 0 with mode %04o" % (run_dir, mode) in out, out
    assert "refusing to start" in out
    assert os.listdir(run_dir) == []


@contextlib.contextmanager
def traced_daemon(conf, sock, trace, syscalls, **popen):
    """The daemon under strace (-e trace=@syscalls, into @trace), from its socket's
    appearance until the block ends; then stopped by the pid its peer credentials name."""
    p = subprocess.Popen(["strace", "-f", "-qq", "-o", trace, "-e", "trace=" + syscalls,
                          IBRESD, "--foreground", "--config", conf, "--socket", sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         # LeakSanitizer cannot run under ptrace (SANITIZE=1)
                         env=dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "")
                                  + ":detect_leaks=0"), **popen)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            assert p.poll() is None and time.monotonic() < deadline, "no socket"
            time.sleep(0.05)
        yield p
    finally:
        # the daemon, not strace: its peer credentials name it
        with contextlib.suppress(OSError):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.connect(sock)
                pid = struct.unpack("iII", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                        12))[0]
            os.kill(pid, signal.SIGTERM)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
            raise


def test_socket_is_0666_without_chmod(open_dir):
    """Whatever the umask the daemon starts with, and without any chmod by path."""
    if not have("strace"):
        pytest.skip("strace missing")
    conf = write_conf(open_dir)
    sock = os.path.join(open_dir, "run", "ibresd.sock")
    trace = os.path.join(open_dir, "trace")
    with traced_daemon(conf, sock, trace, "chmod,fchmodat,umask,bind",
                       preexec_fn=lambda: os.umask(0o077)):
        time.sleep(0.2)
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o666
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o755
        lock = os.lstat(sock + ".lock")
        assert stat.S_ISREG(lock.st_mode) and lock.st_uid == 0
    text = open(trace).read()
    assert "bind(" in text and "umask(0111)" in text, text
    assert "chmod" not in text, text


def test_socket_name_appears_listening(open_dir):
    """The socket is bound under .NAME.new and renamed to its name only once it listens: a
    client that finds the name (NSS while the daemon starts) is never refused. A .NAME.new
    left by a start that died half way is replaced."""
    if not have("strace"):
        pytest.skip("strace missing")
    conf = write_conf(open_dir)
    run_dir = os.path.join(open_dir, "run")
    os.mkdir(run_dir, 0o755)
    sock = os.path.join(run_dir, "ibresd.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(os.path.join(run_dir, ".ibresd.sock.new"))
    trace = os.path.join(open_dir, "trace")
    with traced_daemon(conf, sock, trace, "bind,listen,rename,renameat,renameat2"):
        assert root_lookups(sock, 1) == 1
        assert sorted(os.listdir(run_dir)) == ["ibresd.sock", "ibresd.sock.lock"]
    calls = [line.split(None, 1)[1] for line in open(trace).read().splitlines()
             if "ibresd.sock" in line and line.split(None, 1)[1].startswith(("bind(", "rename"))
             or " listen(" in line]
    text = "\n".join(calls)
    bound = [i for i, c in enumerate(calls) if c.startswith("bind(") and ".ibresd.sock.new" in c]
    listened = [i for i, c in enumerate(calls) if c.startswith("listen(")]
    renamed = [i for i, c in enumerate(calls) if c.startswith("rename")
               and ".ibresd.sock.new" in c and c.count("ibresd.sock") == 2]
    assert bound and listened and renamed, text
    assert bound[0] < listened[0] < renamed[0], text
    assert not any(c.startswith("bind(") and '/ibresd.sock"' in c for c in calls), text


def test_non_root_daemon_may_use_sticky_tmp(attacker, open_dir):
    """README's single-user example: a daemon that is not root, its socket in a sticky
    folder anyone may write to (as /tmp). Root refuses the same folder."""
    bindir = os.path.join(open_dir, "bin")
    os.mkdir(bindir, 0o755)
    prog = shutil.copy(IBRESD, bindir)
    conf = write_conf(open_dir)
    tmp = os.path.join(open_dir, "tmp")
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    sock = os.path.join(tmp, "ibresd.sock")
    rc, out = refused_start(sock, conf)
    assert rc == 1 and "a sticky folder such as /tmp is refused to root" in out, out
    p = subprocess.Popen([prog, "--foreground", "--config", conf, "--socket", sock],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         user=attacker.pw_uid, group=attacker.pw_gid, extra_groups=[])
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            assert p.poll() is None and time.monotonic() < deadline, p.stdout.read().decode()
            time.sleep(0.05)
        assert os.lstat(sock).st_uid == attacker.pw_uid
        try:
            answered = root_lookups(sock, 2)
        except OSError as e:
            answered = e
        if answered != 2:
            # what the daemon said (it may have exited): read after it stopped
            p.terminate()
            out = p.communicate(timeout=20)[0].decode(errors="replace")
            raise AssertionError("root's lookups: %r; the daemon (exit %s) said:\n%s" % (
                answered, p.returncode, out))
    finally:
        if p.poll() is None:
            p.terminate()
        p.wait(20)


# --- (5) denial of service on the socket ----------------------------------------

DOS_CONFIG = ["max_clients = 8", "client_timeout = 1s"]


@pytest.mark.parametrize("per_uid", [0, 8], ids=["default-quota", "quota-max_clients"])
@pytest.mark.parametrize("payload", [ONE_BYTE, PIPELINED], ids=["partial", "unread"])
def test_one_user_does_not_deny_root(attacker, open_dir, per_uid, payload):
    """One user keeps 20 connections, each holding one byte of a request (partial) or
    pipelined requests whose answers it never reads (unread), and takes another whenever
    one is closed. Root's lookups are all answered: under the default quota (a quarter of
    max_clients) the user never holds more than 2; with a quota of max_clients it fills
    the socket and its oldest connections make room for root."""
    d = start_daemon(open_dir, DOS_CONFIG + ["max_clients_per_uid = %d" % per_uid])
    attack = Attack(attacker, hold, d.socket, 20, payload)
    try:
        attack.wait_ready()
        time.sleep(0.3)
        assert root_lookups(d.socket, 10) == 10
        held = stats(d.socket)["clients_connected"] - 1  # this one is root's
        if per_uid == 0:
            assert held <= 2, held
        # the attack goes on over a client timeout: still answered
        time.sleep(1.5)
        assert root_lookups(d.socket, 10) == 10
        s = stats(d.socket)
    finally:
        attack.stop()
        stopped(d)
    # the user's own oldest connections made room (nothing waited on a lookup: none refused)
    assert s["clients_evicted"] > 0, s
    assert s["clients_rejected"] == 0 and s["clients_quota_rejected"] == 0, s


def test_unread_answers_are_closed_after_client_timeout(attacker, open_dir):
    """Below every bound: a connection whose answers wait unread is closed after
    client_timeout, not held for good."""
    d = start_daemon(open_dir, ["client_timeout = 1s"])

    def pipelined_then_wait(path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.send(PIPELINED)
        start = time.monotonic()
        time.sleep(3)
        # drain: the daemon must have closed it (EOF after what it had sent)
        s.setblocking(True)
        s.settimeout(5)
        while s.recv(1 << 20):
            pass
        return time.monotonic() - start

    try:
        took = as_user(attacker, pipelined_then_wait, d.socket)
        s = stats(d.socket)
    finally:
        stopped(d)
    assert took < 10
    assert s["clients_output_timed_out"] == 1, s


# --- (6) CACHE_LIST -----------------------------------------------------------------

def cache_list_raw(path):
    """Every page of CACHE_LIST: (states listed, flags seen)."""
    states, flags, offset = [], 0, 0
    for _ in range(1000):
        body = tlv(15, struct.pack(">I", offset)) if offset else b""
        c = Client(path)
        ans = c.request(acm_hdr(OP_CACHE_LIST, 16 + len(body)) + body)
        c.close()
        assert parse_hdr(ans)["status"] == 0
        nxt = None
        for t, v in parse_tlvs(ans[16:]):
            if t == T_NEST:
                states += [x[1][0] for x in parse_tlvs(v) if x[0] == T_STATE]
            elif t == T_FLAGS:
                flags |= struct.unpack(">I", v)[0]
            elif t == 16:
                nxt = struct.unpack(">I", v)[0]
        if nxt is None:
            return states, flags
        offset = nxt
    raise AssertionError("CACHE_LIST never ends")


def fabric_config(port):
    """One endpoint on the loopback carrying the fabric protocol: unknown names are asked
    there (no announcements: no directory to say they do not exist), nobody answers, and
    they become negative entries."""
    return ("[daemon]\n[resolve]\ntimeout = 1000ms\nretries = 1\nnegative_ttl = 60s\n"
            "announce_interval = 0\n[endpoint lo]\nname = lonode\naddress = 127.0.0.1\n"
            "gid = fe80::9:1\nlid = 9\ntransport = ip\ninterface = lo\n"
            "group = 239.255.73.99\nudp_port = %d\n" % port)


def test_cache_list_hides_other_users_lookups(attacker, open_dir):
    d = start_daemon(open_dir, text=fabric_config(20000 + os.getpid() % 20000))
    bindir = os.path.join(open_dir, "bin")
    os.mkdir(bindir, 0o755)
    ctl = shutil.copy(IBRESCTL, bindir)
    try:
        # root's lookup of a name nobody has: a query in flight, then a negative entry
        c = Client(d.socket, timeout=10)
        c.send(acm_hdr(OP_HOST, 16 + 4 + 5) + tlv(T_NAME, b"ghost"))
        time.sleep(0.3)
        states, flags = cache_list_raw(d.socket)
        assert STATE_QUERYING in states, states
        states, flags = as_user(attacker, cache_list_raw, d.socket)
        assert STATE_QUERYING not in states and flags & LIST_WITHHELD, (states, flags)
        assert parse_hdr(c.recv_msg())["status"] != 0
        c.close()
        states, flags = cache_list_raw(d.socket)
        assert STATE_NEGATIVE in states and not flags, (states, flags)
        states, flags = as_user(attacker, cache_list_raw, d.socket)
        assert STATE_NEGATIVE not in states and flags & LIST_WITHHELD, (states, flags)
        assert states, "the hosts are still listed"
        # ibresctl says why
        env = {"IBRES_SOCKET": d.socket, "PATH": "/usr/bin:/bin"}
        r = subprocess.run([ctl, "cache", "list"], capture_output=True, text=True, env=env,
                           user=attacker.pw_uid, group=attacker.pw_gid, extra_groups=[],
                           timeout=30)
        assert r.returncode == 0, r.stderr
        assert "ghost" not in r.stdout, r.stdout
        assert not any(" negative " in line for line in r.stdout.splitlines()), r.stdout
        assert "negative entries and queries in flight: shown to root only" in r.stdout
        r = subprocess.run([ctl, "--json", "cache", "list"], capture_output=True, text=True,
                           env=env, user=attacker.pw_uid, group=attacker.pw_gid,
                           extra_groups=[], timeout=30)
        assert '"withheld": true' in r.stdout, r.stdout
        # root sees it all, and no such line
        r = run([IBRESCTL, "cache", "list"], env=env)
        assert "ghost" in r.stdout and "shown to root only" not in r.stdout, r.stdout
        assert any(e.get("key") == "ghost" for e in cache_list(d.socket))
    finally:
        stopped(d)
