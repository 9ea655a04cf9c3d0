"""The shared host directory (hosts.db beside the daemon's socket) through
the real libnss_ib and libibres: no system call for a hit or for a name the
directory can rule out, answers equal to the socket's for every entry point,
family and buffer size, a stopped or killed and restarted daemon, damaged
files, a full /run, fork()."""
import errno
import os
import re
import shutil
import signal
import struct
import subprocess
import time

import pytest

from conftest import IBRESCTL, IBRESD, needs_root, not_sanitized, run
from fabric_util import stats
from nss_helpers import (NSS_MODULE, client_env, helpers, parse_kv,  # noqa: F401 (fixture)
                         static_hosts_config)

AF_INET, AF_INET6, AF_IB = 2, 10, 27
HEARTBEAT_STALE_S = 5.0

# (entry, key, af) asked of the example static hosts (node2..node4, login1)
# and of the daemon's own endpoint (node1)
MATRIX = [
    ("byname", "node1", AF_INET), ("byname2", "node1", AF_INET6), ("byname2", "node2", AF_IB),
    ("byname3", "node2", AF_INET), ("byname3", "NODE3", AF_INET6), ("byname3", "node4", AF_IB),
    ("byname3", "node4", AF_INET6), ("byname2", "login1", AF_INET), ("byname4", "node2", 0),
    ("byname4", "node4", 0), ("byname2", "no-such-host", AF_INET), ("byname4", "nope", 0),
    ("byaddr", "198.18.0.1", AF_INET), ("byaddr2", "198.18.0.3", AF_INET),
    ("byaddr2", "2001:db8::2", AF_INET6), ("byaddr2", "198.18.9.9", AF_INET),
    ("byaddr", "fe80::2:c903:0:1", AF_IB), ("byaddr2", "fe80::2:c903:0:99", AF_IB),
]


@pytest.fixture
def static(daemon_factory):
    return daemon_factory(static_hosts_config(), name="static").start()


def nss(helpers, env, *args, timeout=60):
    r = run([helpers["nss_call"]] + list(args[:-3]) + [NSS_MODULE] + [str(a) for a in args[-3:]],
            env=env, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def between_markers(trace):
    """The system calls that the process which wrote the markers made between
    them, from an strace -f log. Each line starts with its pid: another
    process's calls (a parent's wait4 for the child that writes the markers)
    are not counted. A call strace splits in two around another process's
    line ("... <unfinished ...>", then "<... NAME resumed> ...") counts once,
    as its first half: the marker writes' second halves are not calls."""
    lines = open(trace).read().splitlines()
    begin = next((l for l in lines if '"repeat-begin' in l), None)
    assert begin is not None, "markers missing"
    pid = begin.split(None, 1)[0]
    assert pid.isdigit(), "strace -f prints a pid on each line: " + begin
    mine = [l for l in lines if l.split(None, 1)[:1] == [pid]]
    b = mine.index(begin)
    end = [i for i, l in enumerate(mine) if i > b and '"repeat-end' in l]
    assert end, "end marker missing"
    return [l for l in mine[b + 1:end[0]]
            if "resumed>" not in l and not re.match(r"\d+\s+(---|\+\+\+)", l)]


def strace(env, tmp_path, argv):
    trace = str(tmp_path / "trace")
    r = run(["strace", "-f", "-o", trace] + argv, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, between_markers(trace)


def without_ttl(text):
    return re.sub(r"ttl=-?\d+\n", "", text)


def ttl_of(text):
    return int(parse_kv(text)["ttl"])


# ---- no system call -------------------------------------------------------------------

# ASan's allocator maps memory for itself (mmap) in the middle of the module's calls
NOT_UNDER_ASAN = "ASan's runtime makes system calls of its own"


@pytest.mark.parametrize("entry,key,af", [
    ("byname2", "node2", AF_INET), ("byname3", "node3", AF_IB), ("byname4", "login1", 0),
    ("byaddr2", "198.18.0.3", AF_INET), ("byaddr2", "2001:db8::2", AF_INET6),
    ("byaddr", "fe80::2:c903:0:1", AF_IB)])
@not_sanitized(NOT_UNDER_ASAN)
def test_1000_hits_make_no_system_call(helpers, static, tmp_path, entry, key, af):
    r, calls = strace(client_env(static), tmp_path,
                      [helpers["nss_call"], "--repeat", "1000", NSS_MODULE, entry, key, str(af)])
    kv = parse_kv(r.stdout)
    assert kv["status"] == "SUCCESS" and kv["repeat_differ"] == "0", r.stdout
    assert calls == [], calls[:10]
    # and the daemon was asked nothing
    assert stats(static.socket)["host_lookups"] == 0


@not_sanitized(NOT_UNDER_ASAN)
def test_1000_names_outside_the_cluster_make_no_system_call(helpers, static, tmp_path):
    # no fabric: what the store does not hold does not exist
    r, calls = strace(client_env(static), tmp_path,
                      [helpers["nss_call"], "--repeat", "1000", NSS_MODULE, "byname4",
                       "www%ld.example.com", "0"])
    kv = parse_kv(r.stdout)
    assert kv["status"] == "NOTFOUND" and kv["repeat_differ"] == "0", r.stdout
    assert calls == [], calls[:10]
    assert stats(static.socket)["host_lookups"] == 0


def test_through_glibc_only_glibcs_own_calls(helpers, static, tmp_path):
    """Through gethostbyname2_r, glibc itself checks /etc/resolv.conf once a
    call (its resolver context); the module adds nothing."""
    for name in ("node2", "www.example.com"):
        r, calls = strace(client_env(static), tmp_path,
                          [helpers["nss_glibc"], "ib", "repeat", "1000", name, str(AF_INET)])
        assert "repeat_differ=0" in r.stdout, r.stdout
        others = [c for c in calls if "/etc/resolv.conf" not in c]
        assert others == [], others[:10]
        assert len(calls) <= 1000


def test_a_forked_child_answers_from_the_parents_mapping(helpers, static, tmp_path):
    r, calls = strace(client_env(static), tmp_path,
                      [helpers["nss_glibc"], "ib", "fork", "node3", str(AF_INET)])
    assert "ret=0" in r.stdout and "name=node3" in r.stdout, r.stdout
    assert [c for c in calls if "/etc/resolv.conf" not in c] == []


# ---- the same answers ---------------------------------------------------------------------

@pytest.mark.parametrize("entry,key,af", MATRIX)
def test_file_and_socket_agree_at_every_buffer_size(helpers, static, entry, key, af):
    on = nss(helpers, client_env(static), "--sweep", entry, key, af)
    off = nss(helpers, client_env(static, IBRES_DIRECTORY="off"), "--sweep", entry, key, af)
    assert on.stdout == off.stdout


def test_libibres_answers_from_the_file_as_from_the_socket(helpers, static):
    for args in (["host", "node2"], ["host", "Login1"], ["addr", "2", "198.18.0.4"],
                 ["addr", "10", "2001:db8::3"], ["addr", "27", "fe80::2:c903:0:2"],
                 ["host", "unknown-host"]):
        on = run([helpers["nss_libibres"]] + args, env=client_env(static), timeout=30)
        off = run([helpers["nss_libibres"]] + args,
                  env=client_env(static, IBRES_DIRECTORY="off"), timeout=30)
        assert on.returncode == off.returncode and on.stdout == off.stdout, (args, on, off)
    assert stats(static.socket)["host_lookups"] == 6  # the "off" half only


def test_directory_is_announced_in_stats_and_removed_at_stop(static):
    path = os.path.join(os.path.dirname(static.socket), "hosts.db")
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o644 and st.st_uid == os.geteuid()
    s = stats(static.socket)
    assert s["directory_hosts"] == 5 and s["directory_bytes"] == st.st_size
    assert s["directory_rebuilds"] == 1 and s["directory_failures"] == 0
    assert static.stop() == 0
    assert not os.path.exists(path)


def test_none_turns_publishing_off(daemon_factory, helpers):
    d = daemon_factory(static_hosts_config().replace(
        "[daemon]\n", "[daemon]\nhost_directory = none\n", 1), name="nodir").start()
    assert not os.path.exists(os.path.join(d.dir, "hosts.db"))
    kv = parse_kv(nss(helpers, client_env(d), "byname2", "node2", AF_INET).stdout)
    assert kv["status"] == "SUCCESS"
    assert stats(d.socket)["host_lookups"] == 1


# ---- a daemon that stops, dies, comes back ---------------------------------------------------

def test_stopped_daemon_file_serves_until_its_heartbeat_is_stale(helpers, static):
    env = client_env(static, IBRES_TIMEOUT_MS=300)
    static.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        kv = parse_kv(nss(helpers, env, "byname2", "node2", AF_INET).stdout)
        assert kv["status"] == "SUCCESS"
        time.sleep(max(0.0, HEARTBEAT_STALE_S + 0.5 - (time.monotonic() - t0)))
        t1 = time.monotonic()
        kv = parse_kv(nss(helpers, env, "byname2", "node2", AF_INET).stdout)
        assert kv["status"] == "TRYAGAIN" and kv["errno"] == str(errno.ETIMEDOUT)
        assert time.monotonic() - t1 < 2.0
    finally:
        static.signal(signal.SIGCONT)
    time.sleep(1.5)  # a heartbeat
    kv = parse_kv(nss(helpers, env, "byname2", "node2", AF_INET).stdout)
    assert kv["status"] == "SUCCESS"


def test_killed_and_restarted_daemon_under_32_threads(helpers, daemon_factory):
    d = daemon_factory(static_hosts_config(), name="kill").start()
    env = client_env(d, IBRES_TIMEOUT_MS=500)
    watch = subprocess.Popen([helpers["nss_glibc"], "ib", "watch", "10000", "32", "node2",
                              "198.18.0.2"], env=env, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    d.proc.send_signal(signal.SIGKILL)  # mid-update or not: it never says goodbye
    d.proc.wait(5)
    d.log.close()
    time.sleep(HEARTBEAT_STALE_S + 1.0)  # the dead daemon's file goes stale
    d.start()
    out, _ = watch.communicate(timeout=60)
    slices = [tuple(int(x) for x in l.split()[1:]) for l in out.splitlines()
              if l.startswith("slice=")]
    longest = float(parse_kv(out)["longest_ms"])
    assert sum(s[1] for s in slices) == 0, out  # never a wrong answer
    assert slices[0][0] > 0 and slices[0][2] == 0  # before: from the file
    assert any(s[2] > 0 for s in slices), out  # stale file, no daemon: failed, fast
    assert slices[-1][0] > 0 and slices[-1][2] == 0, out  # after: the new file
    # bounded: the socket's 500 ms and a reconnect, plus what a loaded 2-core
    # machine's scheduler adds to 32 busy threads (seen: 2.3 s at load 50)
    assert longest < 5000, out
    # the restarted daemon's file is the one answering now: a new reader's
    # lookups cost that daemon nothing
    before = stats(d.socket)["host_lookups"]
    kv = parse_kv(nss(helpers, env, "byname2", "node2", AF_INET).stdout)
    assert kv["status"] == "SUCCESS"
    assert stats(d.socket)["host_lookups"] == before


# ---- files that cannot be trusted -------------------------------------------------------------

def now_ms():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1000)


HDR = struct.Struct("<8sIIQQIIQQII")  # up to scope_seq
TABLES_AT = HDR.size


def damage(kind, good):
    b = bytearray(good)
    struct.pack_into("<Q", b, 40, now_ms())  # a live heartbeat
    tables = list(struct.unpack_from("<8I", b, TABLES_AT))
    if kind == "truncated":
        return b[:len(b) // 2]
    if kind == "random":
        return bytearray(os.urandom(len(b)))
    if kind == "version":
        struct.pack_into("<I", b, 8, 99)
    elif kind == "huge-offsets":
        tables[0] = 0xfffffff8
        struct.pack_into("<8I", b, TABLES_AT, *tables)
    elif kind == "table-outside":
        tables[1] = 0x7ffff000
        tables[2] = len(b) - 8
        struct.pack_into("<8I", b, TABLES_AT, *tables)
    elif kind == "slots-outside":
        for t in range(4):
            off, n = tables[2 * t], tables[2 * t + 1]
            for i in range(n):
                (slot,) = struct.unpack_from("<Q", b, off + 8 * i)
                if slot & 0xffffffff > 1:
                    struct.pack_into("<Q", b, off + 8 * i, (slot & ~0xffffffff) | 0xfffffff8)
    elif kind == "records-garbage":
        rec_off, rec_size = struct.unpack_from("<II", b, TABLES_AT + 32)
        b[rec_off:rec_off + 4096] = os.urandom(4096)
    elif kind == "file-size":
        struct.pack_into("<Q", b, 16, len(b) * 4)
    return b


@pytest.mark.parametrize("kind", ["truncated", "random", "version", "huge-offsets",
                                  "table-outside", "slots-outside", "records-garbage",
                                  "file-size"])
def test_damaged_file_falls_back_to_the_socket(helpers, daemon_factory, kind):
    good_daemon = daemon_factory(static_hosts_config(), name="good").start()
    good = open(os.path.join(good_daemon.dir, "hosts.db"), "rb").read()
    d = daemon_factory(static_hosts_config().replace(
        "[daemon]\n", "[daemon]\nhost_directory = none\n", 1), name="plain").start()
    path = os.path.join(d.dir, "hosts.db")
    with open(path, "wb") as f:
        f.write(damage(kind, good))
    os.chmod(path, 0o644)
    for entry, key, af in (("byname2", "node2", AF_INET), ("byname4", "login1", 0),
                           ("byaddr2", "2001:db8::2", AF_INET6),
                           ("byname2", "no-such-host", AF_INET)):
        on = nss(helpers, client_env(d), entry, key, af)
        off = nss(helpers, client_env(d, IBRES_DIRECTORY="off"), entry, key, af)
        assert without_ttl(on.stdout) == without_ttl(off.stdout), (kind, entry, key)
    asked = stats(d.socket)["host_lookups"]
    if kind in ("slots-outside", "records-garbage"):
        # the header holds: a miss that touches no damaged slot is still
        # answered by the file; every host found went to the daemon
        assert asked >= 6, asked
    else:
        assert asked == 8, asked  # the file was refused: everything went to the daemon


def test_a_file_others_may_write_is_not_used(helpers, daemon_factory):
    good_daemon = daemon_factory(static_hosts_config(), name="good").start()
    d = daemon_factory(static_hosts_config().replace(
        "[daemon]\n", "[daemon]\nhost_directory = none\n", 1), name="plain").start()
    path = os.path.join(d.dir, "hosts.db")
    shutil.copy(os.path.join(good_daemon.dir, "hosts.db"), path)
    os.chmod(path, 0o666)
    kv = parse_kv(nss(helpers, client_env(d), "byname2", "node2", AF_INET).stdout)
    assert kv["status"] == "SUCCESS"
    assert stats(d.socket)["host_lookups"] == 1


# ---- /run full ---------------------------------------------------------------------------------

def many_hosts(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write("fe80::3:%x:0:%x %d bulk%d 198.19.%d.%d\n"
                    % (i // 250, i % 250 + 1, 100 + i, i, i // 250, i % 250 + 1))


@needs_root
@pytest.mark.parametrize("size,when", [("16k", "start"), ("300k", "growth")])
def test_full_run_the_daemon_logs_once_and_serves(helpers, tmp_path, size, when):
    """The socket's folder is a small tmpfs in a mount namespace of its own.
    start: the file cannot be reserved at start (nor on the retries).
    growth: the first file (~200 KiB) fits, a reload brings 3,000 static hosts, and the
    bigger file does not. Either way the daemon says so once and clients are
    answered correctly, over the socket where the file cannot answer."""
    top = tmp_path / "run"
    top.mkdir()
    conf = tmp_path / "ibresd.conf"
    conf.write_text(static_hosts_config())
    sock = top / "ibresd.sock"
    log = open(tmp_path / "log", "wb")
    script = 'mount -t tmpfs -o size=%s tmpfs "$1" && shift && exec "$@"' % size
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                          str(top), IBRESD, "--foreground", "--config", str(conf), "--socket",
                          str(sock)], stdout=log, stderr=subprocess.STDOUT)
    try:
        env = client_env(socket_path=str(sock))
        enter = ["nsenter", "-t", str(p.pid), "-m", "--"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if run(enter + ["test", "-S", str(sock)], timeout=10).returncode == 0:
                break
            time.sleep(0.05)
        keys = ["node2", "login1"]
        if when == "growth":
            assert run(enter + ["test", "-f", str(top / "hosts.db")], timeout=10).returncode == 0
            bulk = tmp_path / "bulk.hosts"
            many_hosts(bulk, 3000)
            # the example hosts give way to 3,000 others
            conf.write_text(static_hosts_config().replace("hosts_file = ",
                                                          "hosts_file = %s\n#" % bulk))
            p.send_signal(signal.SIGHUP)
            keys = ["bulk0", "bulk2999", "node1"]
        time.sleep(6)  # a retry or more
        for key in keys + ["no-such-host"]:
            r = run(enter + [helpers["nss_call"], NSS_MODULE, "byname2", key, "2"], env=env,
                    timeout=30)
            off = run(enter + [helpers["nss_call"], NSS_MODULE, "byname2", key, "2"],
                      env=dict(env, IBRES_DIRECTORY="off"), timeout=30)
            assert r.stdout == off.stdout, (key, r.stdout, off.stdout)
            assert parse_kv(r.stdout)["status"] == ("NOTFOUND" if key == "no-such-host"
                                                     else "SUCCESS"), r.stdout
        r = run(enter + [IBRESCTL, "--socket", str(sock), "stats"], timeout=30)
        assert re.search(r"directory_failures\s+[1-9]", r.stdout), r.stdout
    finally:
        p.terminate()
        p.wait(10)
        log.close()
    text = open(tmp_path / "log", errors="replace").read()
    assert text.count("No space left on device") == 1, text
    assert "clients ask over the socket" in text
