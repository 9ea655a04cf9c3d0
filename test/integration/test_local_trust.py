"""Issue 21's attacks on the readers of the shared host directory, each run as an
unprivileged uid this module creates and removes (a throwaway system account), each
asserted to fail:

- the daemon's own account, and any user, holding the directory's descriptor cannot
  truncate, grow, punch or write it under a root process that has it mapped (a SIGBUS
  there would kill sudo, sshd, root's getent);
- a root process that inherited a user's environment (su without -, sudo -E) does not
  talk to a socket that user serves, nor map what it passes, and a path in
  IBRES_DIRECTORY is never opened;
- a user can fool only itself: its own fake daemon is believed by its own processes.

Code that runs as the attacker is this module's own, in a forked child that dropped to
the attacker's uid: the checkout may sit in a folder only root may enter (/root), so the
attacker runs none of its files."""
import errno
import fcntl
import os
import pwd
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, IBRESCTL, ROOT, SAN_CFLAGS, needs_root, run
from fabric_util import stats, wait_until
from nss_helpers import (HDR_LEN, NSS_MODULE, client_env, directory_request,  # noqa: F401
                         fetch_directory, helpers, parse_kv,
                         static_hosts_config)

AF_INET = 2

pytestmark = needs_root

try:
    NOBODY_UID = pwd.getpwnam("nobody").pw_uid
except KeyError:
    NOBODY_UID = None


@pytest.fixture(scope="module")
def attacker():
    """A throwaway system account: (name, uid, gid)."""
    name = "ibres-atk%d" % (os.getpid() % 100000)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    name], check=True, timeout=60)
    try:
        pw = pwd.getpwnam(name)
        yield name, pw.pw_uid, pw.pw_gid
    finally:
        subprocess.run(["userdel", name], timeout=60)


@pytest.fixture
def open_dir():
    """A folder root owns that everyone may enter (a socket there is reachable by the
    attacker; pytest's own tmp folders are root's alone)."""
    d = tempfile.mkdtemp(prefix="ibres-trust-")
    os.chmod(d, 0o755)
    yield d
    subprocess.run(["rm", "-rf", d], timeout=30)


def as_user_start(uid, gid, fn, *args):
    """Run fn(*args) in a child that dropped to @uid/@gid for good; its return value
    (a short str) or the exception's text comes back through a pipe: (pid, the
    pipe's end to give as_user_result())."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            out = str(fn(*args))
        except BaseException as e:  # noqa: B902 -- everything goes back to the test
            out = "exception: %r" % (e,)
        os.write(w, out.encode()[:65536])
        os._exit(0)
    os.close(w)
    return pid, r


def as_user_result(pid, r):
    """What the child as_user_start() made returned, once it ended."""
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def as_user(uid, gid, fn, *args):
    """fn(*args) run as @uid/@gid (as_user_start()), waited for: what it returned."""
    return as_user_result(*as_user_start(uid, gid, fn, *args))


def try_all(fd):
    """Every way a holder of the descriptor could change it; what each did."""
    size = os.fstat(fd).st_size
    out = {}

    def attempt(name, fn):
        try:
            fn()
            out[name] = "done"
        except OSError as e:
            out[name] = errno.errorcode.get(e.errno, str(e.errno))
    attempt("truncate", lambda: os.ftruncate(fd, 0))
    attempt("shrink", lambda: os.ftruncate(fd, size - 4096))
    attempt("grow", lambda: os.ftruncate(fd, size + 4096))
    attempt("write", lambda: os.pwrite(fd, b"\0" * 64, 0))
    attempt("punch", lambda: fallocate_punch(fd, size))
    attempt("unseal", lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE))
    attempt("mmap-write", lambda: mmap_write(fd, size))
    # a second, read-write open of the same memfd through /proc
    try:
        fd2 = os.open("/proc/self/fd/%d" % fd, os.O_RDWR)
        attempt("reopen-truncate", lambda: os.ftruncate(fd2, 0))
        attempt("reopen-write", lambda: os.pwrite(fd2, b"\0" * 64, 0))
        os.close(fd2)
    except OSError as e:
        out["reopen"] = errno.errorcode.get(e.errno, str(e.errno))
    out["size"] = os.fstat(fd).st_size == size
    return out


def fallocate_punch(fd, size):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    if libc.fallocate(fd, 0x02 | 0x01, 0, size) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def mmap_write(fd, size):
    import mmap
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    m[0:8] = b"\0" * 8
    m.close()


def attack_descriptor(sock_path):
    status, fd = fetch_directory(sock_path)
    if fd is None:
        return "no descriptor, status %d" % status
    return repr(try_all(fd))


def attack_daemon_fds(pid):
    """As the daemon's own account: every memfd the daemon holds, through /proc."""
    found = {}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError as e:
        return "listdir: " + errno.errorcode.get(e.errno, str(e.errno))
    for n in names:
        path = "/proc/%d/fd/%s" % (pid, n)
        try:
            target = os.readlink(path)
        except OSError:
            continue
        if "ibres-hosts.db" not in target:
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            found[n] = "open: " + errno.errorcode.get(e.errno, str(e.errno))
            continue
        found[n] = try_all(fd)
        os.close(fd)
    return repr(found)


def refused_everything(text):
    d = eval(text, {})  # our own repr() from the child
    assert d.pop("size") is True, text
    assert all(v in ("EPERM", "EACCES", "EBADF", "EINVAL") for v in d.values()), text
    return d


def watch(helpers, env, ms):
    return subprocess.Popen([helpers["nss_glibc"], "ib", "watch", str(ms), "4", "node2",
                             "198.18.0.2"], env=env, stdout=subprocess.PIPE, text=True)


def watched_cleanly(p):
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, (p.returncode, out)  # not killed by SIGBUS (status -7)
    slices = [tuple(int(x) for x in l.split()[1:]) for l in out.splitlines()
              if l.startswith("slice=")]
    assert sum(s[1] for s in slices) == 0 and sum(s[2] for s in slices) == 0, out
    return slices


def test_no_holder_of_the_descriptor_can_change_it_under_a_root_reader(
        helpers, daemon_factory, attacker, open_dir):
    """Any local user may ask for the directory; what it gets can be read and nothing
    more. A root process reading from it meanwhile never fails and never dies."""
    _, uid, gid = attacker
    d = daemon_factory(static_hosts_config(), name="d",
                       sock=os.path.join(open_dir, "ibresd.sock")).start()
    reader = watch(helpers, client_env(d), 4000)
    time.sleep(1.0)
    text = as_user(uid, gid, attack_descriptor, d.socket)
    assert not text.startswith("exception") and not text.startswith("no descriptor"), text
    refused_everything(text)
    watched_cleanly(reader)
    # and root holding it cannot either: the seals bind everyone
    status, fd = fetch_directory(d.socket)
    refused_everything(repr(try_all(fd)))
    os.close(fd)


def test_the_daemons_own_account_cannot_change_it(helpers, daemon_factory, attacker,
                                                  open_dir):
    """`user =` the attacker's account: the daemon drops to it, and that account is the
    one that could reach the daemon's descriptors. It truncated hosts.db under root's
    readers before; the memfd's seals hold against it too."""
    name, uid, gid = attacker
    conf = static_hosts_config().replace("[daemon]\n", "[daemon]\nuser = %s\n" % name, 1)
    cfg_dir = tempfile.mkdtemp(prefix="ibres-trust-cfg-")
    try:
        os.chmod(cfg_dir, 0o755)
        cfg = os.path.join(cfg_dir, "ibresd.conf")
        with open(cfg, "w") as f:
            f.write(conf)
        os.chmod(cfg, 0o644)
        d = daemon_factory(name="u", config_path=cfg,
                           sock=os.path.join(open_dir, "ibresd.sock")).start()
        time.sleep(0.5)
        assert os.stat("/proc/%d" % d.proc.pid).st_uid in (0, uid)
        reader = watch(helpers, client_env(d), 4000)
        time.sleep(1.0)
        text = as_user(uid, gid, attack_daemon_fds, d.proc.pid)
        assert not text.startswith("exception"), text
        if text.startswith("{"):
            for v in eval(text, {}).values():  # noqa: S307 -- our own repr()
                if isinstance(v, dict):
                    refused_everything(repr(v))
        text = as_user(uid, gid, attack_descriptor, d.socket)
        refused_everything(text)
        watched_cleanly(reader)
        assert d.alive()
    finally:
        subprocess.run(["rm", "-rf", cfg_dir], timeout=30)


def fake_daemon(sock_path, log_path):
    """As the attacker: a socket that passes an unsealed memfd holding garbage and
    answers anything; it notes every byte it is sent."""
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(sock_path)
    os.chmod(sock_path, 0o777)
    ls.listen(16)
    ls.settimeout(8)
    got = 0
    try:
        while True:
            c, _ = ls.accept()
            c.settimeout(2)
            try:
                data = c.recv(4096)
            except OSError:
                data = b""
            got += len(data)
            with open(log_path, "a") as f:
                f.write("%d\n" % len(data))
            if len(data) >= HDR_LEN:
                fd = os.memfd_create("ibres-hosts.db", 0)
                os.write(fd, os.urandom(8192))
                ans = struct.pack(">BBB3sH", 1, data[1] | 0x80, 0, b"", HDR_LEN + 12) + \
                    data[8:16] + struct.pack(">HHQ", 17, 8, 8192)
                try:
                    socket.send_fds(c, [ans], [fd])
                except OSError:
                    pass
                os.ftruncate(fd, 0)  # under whoever mapped it
            c.close()
    except OSError:
        pass
    return got


def test_root_with_a_users_environment_ignores_the_users_socket(helpers, attacker,
                                                                 daemon_factory):
    """su without -, sudo -E: root's process carries IBRES_SOCKET (and IBRES_DIRECTORY)
    pointing at what the user controls. It talks to no socket whose listener is not root,
    so it sends nothing there and maps nothing; the lookup is UNAVAIL."""
    _, uid, gid = attacker
    home = tempfile.mkdtemp(prefix="ibres-trust-home-")
    try:
        os.chown(home, uid, gid)
        evil = os.path.join(home, "evil.sock")
        log = os.path.join(home, "log")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.close(w)
            fake_daemon(evil, log)
            os._exit(0)
        os.close(w)
        os.close(r)
        deadline = time.monotonic() + 10
        while not os.path.exists(evil) and time.monotonic() < deadline:
            time.sleep(0.05)
        bait = os.path.join(home, "hosts.db")
        with open(bait, "wb") as f:
            f.write(os.urandom(8192))
        os.chown(bait, uid, gid)
        env = client_env(socket_path=evil, IBRES_DIRECTORY=bait, IBRES_TIMEOUT_MS=5000)
        t0 = time.monotonic()
        res = run([helpers["nss_call"], NSS_MODULE, "byname2", "node2", str(AF_INET)],
                  env=env, timeout=30)
        took = time.monotonic() - t0
        kv = parse_kv(res.stdout)
        assert res.returncode == 0 and kv["status"] == "UNAVAIL", res.stdout + res.stderr
        assert took < 2.5, took  # refused at once, not after the 5 s timeout
        # ibresctl, as root, refuses it too
        res = run(["env", "IBRES_SOCKET=" + evil, IBRESCTL, "host", "node2"], timeout=30)
        assert res.returncode != 0, res.stdout
        time.sleep(0.3)
        sent = open(log).read().split() if os.path.exists(log) else []
        assert all(n == "0" for n in sent), sent  # connected, then hung up: no request
        # a user can fool only itself: its own process does talk to its own socket
        # (copies of the helper and the module in its folder: the checkout may be root's)
        for src in (helpers["nss_call"], NSS_MODULE):
            dst = os.path.join(home, os.path.basename(src))
            subprocess.run(["cp", src, dst], check=True, timeout=30)
            os.chmod(dst, 0o755)
        res = as_user(uid, gid, user_lookup, os.path.join(home, "nss_call"),
                      os.path.join(home, os.path.basename(NSS_MODULE)), evil)
        assert "status=" in res, res
        time.sleep(0.3)
        sent = open(log).read().split()
        assert any(n != "0" for n in sent), sent
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (OSError, UnboundLocalError):
            pass
        subprocess.run(["rm", "-rf", home], timeout=30)


def user_lookup(nss_call, module, sock):
    env = dict(os.environ, IBRES_SOCKET=sock, IBRES_TIMEOUT_MS="2000")
    return subprocess.run([nss_call, module, "byname2", "node2", "2"], env=env,
                          capture_output=True, text=True, timeout=30).stdout


def pipeline_directory_requests(sock_path, n):
    """As the attacker: @n DIRECTORY requests in one send on one connection, then read
    everything: (answers, descriptors) received before the daemon hung up."""
    req = directory_request()
    got, fds = b"", 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        try:
            s.sendall(req * n)
        except OSError:
            pass  # the daemon may close before it read them all
        while True:
            try:
                data, passed, _, _ = socket.recv_fds(s, 4096, 8)
            except OSError:
                break
            for fd in passed:
                os.close(fd)
            fds += len(passed)
            if not data:
                break
            got += data
    return "%d %d" % (len(got) // 28, fds)


def test_one_descriptor_per_connection(daemon_factory, attacker, open_dir):
    """Asking for the directory over and over on one connection without reading would
    leave a passed descriptor in flight per answer, counted against the daemon's
    open-file limit, until passing fails for every reader: the daemon answers one
    DIRECTORY per connection and closes it."""
    _, uid, gid = attacker
    d = daemon_factory(static_hosts_config(), name="d",
                       sock=os.path.join(open_dir, "ibresd.sock")).start()
    out = as_user(uid, gid, pipeline_directory_requests, d.socket, 64)
    assert out == "1 1", out
    # and readers still get theirs
    status, fd = fetch_directory(d.socket)
    assert status == 0 and fd is not None
    os.close(fd)
    assert d.alive()


def leave_directories_unread(sock_path, n, ready_w, go_r):
    """As the attacker: ask for the directory on @n connections one after the
    other, each answer peeked at (MSG_PEEK takes no descriptor out of flight) and
    never read; a connection whose answer carried one is kept open. Then tell the
    test (@ready_w) and hold them until it says (@go_r). Returns "kept refused
    dropped": answers with a descriptor, answers EAGAIN, connections the daemon
    closed without an answer."""
    kept, refused, dropped = [], 0, 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(directory_request())
        head = s.recv(HDR_LEN, socket.MSG_PEEK | socket.MSG_WAITALL)
        if len(head) < HDR_LEN:
            dropped += 1
            s.close()
        elif head[2] == 0:
            kept.append(s)
        else:
            assert head[2] == STATUS_EAGAIN, head
            refused += 1
            s.close()
    os.write(ready_w, b"r")
    os.read(go_r, 1)
    for s in kept:
        s.close()
    return "%d %d %d" % (len(kept), refused, dropped)


STATUS_EAGAIN = 12


@pytest.mark.skipif(not NOBODY_UID, reason="no user 'nobody'")
def test_unread_descriptors_take_nothing_from_others(daemon_factory, attacker, open_dir):
    """The kernel counts a descriptor in flight against the daemon's user until its
    reader takes it, and past the daemon's open-file limit passes none
    (ETOOMANYREFS). A user who asks for the directory on many connections and reads
    none gets 8 passed, then EAGAIN; every other reader still gets the directory.
    The daemon runs as nobody with an open-file limit of 64 (root passes without
    that limit), and the attacker leaves 100 requests unread."""
    _, uid, gid = attacker
    conf = static_hosts_config().replace("[daemon]\n", "[daemon]\nuser = nobody\n", 1)
    d = daemon_factory(conf, name="d", sock=os.path.join(open_dir, "ibresd.sock"),
                       nofile=64).start()
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()

    def attack():
        try:
            return leave_directories_unread(d.socket, 100, ready_w, go_r)
        except BaseException:
            os.write(ready_w, b"r")  # the test waits for it
            raise

    pid, out_r = as_user_start(uid, gid, attack)
    os.close(ready_w)  # a child that failed before attack() leaves EOF, not a hang
    try:
        assert os.read(ready_r, 1) == b"r"
        # while the attacker holds its connections: root's reader gets the directory
        status, fd = fetch_directory(d.socket)
        assert status == 0 and fd is not None, status
        os.close(fd)
    finally:
        os.write(go_w, b"g")
        out = as_user_result(pid, out_r)
        for f in (ready_r, go_r, go_w):
            os.close(f)
    assert out == "8 92 0", out
    assert stats(d.socket)["directory_unread_refused"] == 92
    # the attacker gone, its kept sockets close at the next sweep: passing goes on
    status, fd = fetch_directory(d.socket)
    assert status == 0 and fd is not None
    os.close(fd)
    assert d.alive()


# A set-user-ID root program a user starts: it connects to the socket in argv[1]
# (SO_PEERCRED says uid 0), asks CACHE_FLUSH (root's right), prints the answer's
# status, and keeps its connection until its stdin closes. With a second
# argument "dir" it asks DIRECTORY instead, prints 0 and never reads the answer;
# with "silent" it sends nothing (a program stopped before it asked) and prints 0.
SETUID_HOLDER = r"""
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned char req[16] = {1, 0x0a, 0, 0, 0, 0, 0, 16}, ans[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pollfd pf[2];
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	ssize_t n;

	if (argc < 2 || strlen(argv[1]) >= sizeof(sa.sun_path))
		return 2;
	if (argc > 2)
		req[1] = 0x0d; /* DIRECTORY, its answer (and descriptor) left unread */
	strcpy(sa.sun_path, argv[1]);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	if (argc > 2 && !strcmp(argv[2], "silent")) {
		n = 0; /* stopped before it sent anything */
	} else if (write(s, req, 16) != 16) {
		return 1;
	} else {
		n = argc > 2 ? 0 : read(s, ans, sizeof(ans));
		n = n >= 16 ? ans[2] : argc > 2 ? 0 : -1;
	}
	printf("%d\n", (int)n);
	fflush(stdout);
	pf[0] = (struct pollfd){.fd = 0, .events = POLLIN};
	pf[1] = (struct pollfd){.fd = s, .events = POLLIN};
	/* the unread answer would wake it: then only stdin */
	poll(pf, argc > 2 && !strcmp(argv[2], "dir") ? 1 : 2, 60000);
	return 0;
}
"""


def build_holders(tmp_path, open_dir):
    """SETUID_HOLDER built twice where the attacker may run it: set-user-ID root, and
    plain. (setuid path, plain path)."""
    src = tmp_path / "holder.c"
    src.write_text(SETUID_HOLDER)
    setuid, plain = os.path.join(open_dir, "holder"), os.path.join(open_dir, "holder-plain")
    for path in (setuid, plain):
        r = run(["cc", "-o", path, str(src)])
        assert r.returncode == 0, r.stderr
        os.chown(path, 0, 0)
    os.chmod(setuid, 0o4755)
    os.chmod(plain, 0o755)
    return setuid, plain


def start_holder(path, sock, uid, gid, *args):
    """@path run as @uid/@gid: (process, the status its CACHE_FLUSH got)."""
    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    p = subprocess.Popen([path, sock] + list(args), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, preexec_fn=drop)
    return p, p.stdout.readline().strip()


def stop_holders(procs):
    for p in procs:
        p.stdin.close()
        p.wait(10)


def test_setuid_programs_count_against_their_user(daemon_factory, attacker, open_dir, tmp_path):
    """Root is exempt from max_clients_per_uid, and a set-user-ID root program runs
    with uid 0: any user could fill the socket with such programs, each keeping its
    connection. Such a connection counts against its process's real uid: the user
    who started the program, at whose share (3 here) its own oldest goes. What the
    program sends says who it is (SO_PASSCRED); once root holds a share's worth,
    /proc says so at its accept already. Of 9 programs, 3 are the user's and 6
    closed; each keeps root's rights (CACHE_FLUSH answered)."""
    _, uid, gid = attacker
    holder, _ = build_holders(tmp_path, open_dir)
    conf = static_hosts_config().replace("[daemon]\n", "[daemon]\nmax_clients_per_uid = 3\n", 1)
    d = daemon_factory(conf, name="d", sock=os.path.join(open_dir, "ibresd.sock")).start()
    base = stats(d.socket)
    procs = []
    try:
        for _ in range(9):
            p, status = start_holder(holder, d.socket, uid, gid)
            procs.append(p)
            assert status == b"0"  # root's right: flushed
        s = stats(d.socket)
        assert s["clients_evicted"] - base["clients_evicted"] == 6, s
        # the user's three left, and this stats request
        assert s["clients_connected"] == 4, s
    finally:
        stop_holders(procs)
    assert d.alive()


def silent_programs_then_nobody(d, holder, plain, uid, gid, n, procs):
    """@n of the user's set-user-ID programs (@holder, run as @uid/@gid) stopped before
    they asked anything, then nobody's connection (@plain), let in: its CACHE_FLUSH
    gets EPERM. Each process goes into @procs as it starts."""
    nobody = pwd.getpwnam("nobody")
    for _ in range(n):
        p, status = start_holder(holder, d.socket, uid, gid, "silent")
        procs.append(p)
        assert status == b"0"
    p, status = start_holder(plain, d.socket, nobody.pw_uid, nobody.pw_gid)
    procs.append(p)
    assert status == b"11"  # let in (and nobody may not flush: EPERM)


@pytest.mark.skipif(not NOBODY_UID, reason="no user 'nobody'")
def test_setuid_programs_taken_as_roots_go_for_others(daemon_factory, attacker, open_dir,
                                                     tmp_path):
    """Below root's share a root connection that has sent nothing is taken unchecked
    (the read in /proc costs; what it sends would say whose it is). With the socket
    full (max_clients 4: three of the user's set-user-ID programs, stopped before they
    asked, and nobody's connection), a newcomer makes root's connections looked at in
    /proc: the user's programs count against the user, and one of them goes, not
    nobody's."""
    _, uid, gid = attacker
    holder, plain = build_holders(tmp_path, open_dir)
    conf = static_hosts_config().replace(
        "[daemon]\n", "[daemon]\nmax_clients = 4\nmax_clients_per_uid = 3\n", 1)
    d = daemon_factory(conf, name="d", sock=os.path.join(open_dir, "ibresd.sock")).start()
    procs = []
    try:
        silent_programs_then_nobody(d, holder, plain, uid, gid, 3, procs)
        other = procs[-1]
        s = stats(d.socket)  # a fifth connection: one must go
        assert s["clients_evicted"] == 1, s
        wait_until(lambda: procs[0].poll() is not None, 10,
                   what="the user's oldest program closed")
        time.sleep(0.3)
        assert other.poll() is None, "nobody's connection went for the user's programs"
        assert all(p.poll() is None for p in procs[1:3])
    finally:
        stop_holders(procs)
    assert d.alive()


# The daemon under its own /proc, mounted hidepid=invisible: as the shipped unit's
# ProtectProc=invisible does, it hides every process the daemon (run as nobody)
# may not trace, a set-user-ID program among them.
HIDDEN_PROC = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount -t proc -o hidepid=invisible proc /proc && exec "$@"', "sh"]


@pytest.mark.skipif(not NOBODY_UID, reason="no user 'nobody'")
def test_hidden_setuid_programs_cannot_fill_the_socket(daemon_factory, attacker, open_dir,
                                                      tmp_path):
    """A daemon that cannot read a set-user-ID program's real uid (ProtectProc=invisible)
    counts its connection as root's until it sends something (SO_PASSCRED then says
    whose it is). A user who leaves four such programs holding theirs, stopped before
    they asked, fills max_clients 4; nobody's connection still comes in: root's
    connections beyond its quota (1) that wait for nothing go as any uid's, the
    oldest first. Before, root's never went for another uid and nobody was refused."""
    _, uid, gid = attacker
    holder, plain = build_holders(tmp_path, open_dir)
    conf = static_hosts_config().replace(
        "[daemon]\n", "[daemon]\nuser = nobody\nmax_clients = 4\nmax_clients_per_uid = 1\n",
        1)
    d = daemon_factory(conf, name="d", sock=os.path.join(open_dir, "ibresd.sock"),
                       wrap=HIDDEN_PROC).start()
    procs = []
    try:
        silent_programs_then_nobody(d, holder, plain, uid, gid, 4, procs)
        wait_until(lambda: procs[0].poll() is not None, 10,
                   what="the oldest set-user-ID program's connection closed")
        assert all(p.poll() is None for p in procs[1:])
        assert stats(d.socket)["clients_evicted"] >= 1
    finally:
        stop_holders(procs)
    assert d.alive()


@pytest.mark.skipif(not NOBODY_UID, reason="no user 'nobody'")
def test_hidden_setuid_programs_leave_root_its_directory(daemon_factory, attacker, open_dir,
                                                        tmp_path):
    """A daemon that cannot read a set-user-ID program's real uid in /proc learns it
    from what the program sends (SO_PASSCRED: the kernel's word for its sender's
    real uid). A user whose ten such programs ask for the directory and never read
    the answer takes its own 8 slots of unread descriptors, not root's: root's reader
    still gets the directory. Before, they were root's, and root got EAGAIN."""
    _, uid, gid = attacker
    holder, _ = build_holders(tmp_path, open_dir)
    conf = static_hosts_config().replace("[daemon]\n", "[daemon]\nuser = nobody\n", 1)
    d = daemon_factory(conf, name="d", sock=os.path.join(open_dir, "ibresd.sock"),
                       wrap=HIDDEN_PROC).start()
    procs = []
    try:
        for _ in range(10):
            p, status = start_holder(holder, d.socket, uid, gid, "dir")
            procs.append(p)
            assert status == b"0"
        wait_until(lambda: stats(d.socket)["directory_unread_refused"] >= 2, 10,
                   what="the user's ninth and tenth requests refused")
        status, fd = fetch_directory(d.socket)
        assert status == 0 and fd is not None, status
        os.close(fd)
    finally:
        stop_holders(procs)
    assert d.alive()


PATH_HOLDER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <ibres.h>

int main(int argc, char **argv)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct ibv_path_data *paths = NULL;
	struct ibres *h;
	size_t n = 0;
	char c;
	int ret;

	if (argc != 2 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1)
		return 2;
	ret = ibres_open(&h, NULL, 0);
	if (!ret)
		ret = ibres_resolve_path(h, NULL, (struct sockaddr *)&dst, 0, &paths, &n);
	printf("%d\n", ret);
	fflush(stdout);
	free(paths);
	if (read(0, &c, 1) < 0)
		return 1;
	ibres_close(h);
	return 0;
}
"""


def sockets_of(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except FileNotFoundError:
            pass
    return n


def test_privileged_programs_keep_no_connection(daemon_factory, attacker, open_dir, tmp_path):
    """Where the daemon cannot see who runs a set-user-ID root program (the shipped
    unit's ProtectProc=invisible), its connection counts as root's: so libibres
    keeps none between calls in a process with privileges it did not start with
    (AT_SECURE), and a user who leaves many such programs waiting after a look-up
    (sudo at its password prompt) holds none. Such a program ignores IBRES_SOCKET:
    it runs in a mount namespace whose /run/ibres is the test daemon's folder. The
    same program without the set-user-ID bit keeps its connection (one socket)."""
    _, uid, gid = attacker
    src = tmp_path / "path_holder.c"
    src.write_text(PATH_HOLDER)
    for lib in ("libibres.so.1",):
        subprocess.run(["cp", os.path.join(BUILD, lib), open_dir], check=True, timeout=10)
    setuid, plain = os.path.join(open_dir, "path-holder"), os.path.join(open_dir, "path-plain")
    # a sanitized libibres needs its runtime first: a set-user-ID program ignores
    # LD_PRELOAD, so the program itself is built with it
    san = SAN_CFLAGS
    for path in (setuid, plain):
        r = run(["cc", "-o", path, str(src), "-I", os.path.join(ROOT, "include"),
                 os.path.join(open_dir, "libibres.so.1"), "-Wl,-rpath," + open_dir] + san)
        assert r.returncode == 0, r.stderr
    os.chmod(setuid, 0o4755)
    d = daemon_factory(static_hosts_config(), name="d",
                       sock=os.path.join(open_dir, "ibresd.sock")).start()
    held = {}
    for path in (setuid, plain):
        script = ("mount -t tmpfs tmpfs /run && mkdir /run/ibres && mount --bind %s /run/ibres "
                  "&& exec setpriv --reuid %d --regid %d --clear-groups %s 198.18.0.2"
                  % (open_dir, uid, gid, path))
        env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") +
                   ":detect_leaks=0")  # no leak check in a set-user-ID process
        p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                              script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        try:
            line = p.stdout.readline().strip()
            assert line and int(line) not in (-errno.ENOENT, -errno.ECONNREFUSED,
                                              -errno.EACCES), line
            held[path] = (int(line), sockets_of(p.pid))
        finally:
            p.stdin.close()
            p.wait(10)
    assert held[plain][1] == 1, held  # the same call keeps its connection there
    assert held[setuid] == (held[plain][0], 0), held
    assert d.alive()
