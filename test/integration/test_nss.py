"""libnss_ib.so.2 against a real ibresd: getent through each glibc path, every
entry point with every buffer size, AF_IB, failures (no daemon, stopped
daemon), 64 threads, valgrind, and the module's hygiene."""
import errno
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import not_sanitized, preload_sanitizer, run, without_sanitizer_libs
from nss_helpers import (NSS_MODULE, client_env, helpers, parse_kv,  # noqa: F401 (fixture)
                         static_hosts_config)

AF_INET, AF_INET6, AF_IB = 2, 10, 27
NETDB_SUCCESS, HOST_NOT_FOUND, TRY_AGAIN, NO_RECOVERY, NO_DATA = 0, 1, 2, 3, 4
INT32_MAX = 2**31 - 1


@pytest.fixture
def static(daemon_factory):
    """ibresd with the example static hosts (node2..node4, login1)."""
    return daemon_factory(static_hosts_config(), name="static").start()


def nss_call(helpers, env, *args, timeout=60):
    r = run([helpers["nss_call"]] + list(args[:-3]) + [NSS_MODULE] + list(args[-3:]),
            env=env, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    kv = parse_kv(r.stdout)
    assert "error" not in kv, r.stdout
    return kv


def getent(env, *args, timeout=30):
    return run(["getent"] + list(args), env=env, timeout=timeout)


# ---- hygiene ------------------------------------------------------------------

def test_exports_only_nss_entry_points():
    out = run(["nm", "-D", "--defined-only", NSS_MODULE], check=True).stdout
    names = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert names == sorted("_nss_ib_gethost%s_r" % e for e in
                           ("byname", "byname2", "byname3", "byname4", "byaddr", "byaddr2"))


def test_links_only_libc_and_is_hardened():
    out = run(["readelf", "-d", NSS_MODULE], check=True).stdout
    needed = without_sanitizer_libs(re.findall(r"\(NEEDED\).*\[(.*)\]", out))
    assert needed == ["libc.so.6"]
    assert "NODELETE" in out and "NOW" in out


# ---- getent: the glibc paths --------------------------------------------------

def test_getent_hosts_forward_and_reverse(single):
    env = client_env(single)
    r = getent(env, "-s", "hosts:ib", "hosts", "node1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2001:db8::1", "node1"]  # getent asks AF_INET6 first
    r = getent(env, "-s", "hosts:ib", "hosts", "198.18.0.1")
    assert r.returncode == 0 and r.stdout.split() == ["198.18.0.1", "node1"]
    r = getent(env, "-s", "hosts:ib", "hosts", "2001:db8::1")
    assert r.returncode == 0 and r.stdout.split() == ["2001:db8::1", "node1"]


def test_getent_ahosts(single):
    env = client_env(single)
    r = getent(env, "-s", "ib", "ahosts", "node1")
    assert r.returncode == 0, r.stderr
    addrs = {line.split()[0] for line in r.stdout.splitlines()}
    assert addrs == {"198.18.0.1", "2001:db8::1"}
    assert "node1" in r.stdout.split()
    r = getent(env, "-s", "ib", "ahostsv4", "node1")
    assert r.returncode == 0
    assert {line.split()[0] for line in r.stdout.splitlines()} == {"198.18.0.1"}
    r = getent(env, "-s", "ib", "ahostsv6", "node1")
    assert r.returncode == 0
    assert {line.split()[0] for line in r.stdout.splitlines()} == {"2001:db8::1"}


def test_getent_aliases_and_ipv4_only_host(static):
    env = client_env(static)
    r = getent(env, "-s", "hosts:ib", "hosts", "node2.cluster.example")
    assert r.returncode == 0
    assert r.stdout.split() == ["2001:db8::2", "node2", "node2.cluster.example"]
    # no IPv6 address: getent's AF_INET6 attempt is NOTFOUND, AF_INET answers
    r = getent(env, "-s", "hosts:ib", "hosts", "node4")
    assert r.returncode == 0 and r.stdout.split() == ["198.18.0.4", "node4"]
    r = getent(env, "-s", "ib", "ahostsv6", "node4")  # v4-mapped by glibc
    assert r.returncode == 0 and "::ffff:198.18.0.4" in r.stdout


def test_getent_not_found(single):
    r = getent(client_env(single), "-s", "hosts:ib", "hosts", "no-such-host")
    assert r.returncode == 2 and r.stdout == ""


# ---- AF_IB through glibc ------------------------------------------------------

def test_af_ib_through_glibc(helpers, single):
    env = client_env(single)
    r = run([helpers["nss_glibc"], "ib", "byname2", "node1", str(AF_IB)], env=env)
    kv = parse_kv(r.stdout)
    assert kv["ret"] == "0" and kv["name"] == "node1", r.stdout
    assert kv["af"] == "27" and kv["length"] == "16"
    assert kv["addrs"] == "fe80::2:c903:0:1"
    r = run([helpers["nss_glibc"], "ib", "byaddr", "fe80::2:c903:0:1", str(AF_IB)], env=env)
    kv = parse_kv(r.stdout)
    assert kv["ret"] == "0" and kv["name"] == "node1" and kv["af"] == "27", r.stdout
    assert kv["addrs"] == "fe80::2:c903:0:1"


# ---- every entry point, every buffer size ------------------------------------

FORWARD = [
    ("byname", "node2", AF_INET, "198.18.0.2"),
    ("byname2", "node2", AF_INET, "198.18.0.2"),
    ("byname2", "node2.cluster.example", AF_INET6, "2001:db8::2"),
    ("byname2", "node3", AF_IB, "fe80::2:c903:0:3"),
    ("byname3", "node2", AF_INET6, "2001:db8::2"),
    ("byname3", "login1", AF_IB, "fe80::2:c903:0:10"),
]


@pytest.mark.parametrize("entry,name,af,addr", FORWARD)
def test_forward_every_buffer_size(helpers, static, entry, name, af, addr):
    kv = nss_call(helpers, client_env(static), "--sweep", entry, name, str(af))
    assert kv["status"] == "SUCCESS"
    assert kv["h_errno"] == str(NETDB_SUCCESS)  # reset from the helper's 12345
    assert int(kv["minbuf"]) > 8  # the smaller sizes all gave ERANGE first
    assert kv["name"] == name.split(".")[0]
    assert kv["af"] == str(af)
    assert kv["length"] == ("4" if af == AF_INET else "16")
    assert kv["addrs"] == addr
    if name in ("node2", "node2.cluster.example"):
        assert kv["aliases"] == "node2.cluster.example"
    if entry == "byname3":
        assert 0 < int(kv["ttl"]) <= INT32_MAX


@pytest.mark.parametrize("prealloc", [False, True])
def test_byname4_every_buffer_size(helpers, static, prealloc):
    args = ["--sweep"] + (["--prealloc"] if prealloc else []) + ["byname4", "node3", "0"]
    kv = nss_call(helpers, client_env(static), *args)
    assert kv["status"] == "SUCCESS" and kv["h_errno"] == "0"
    assert kv["name"] == "node3"
    # AF_INET/AF_INET6 tuples only, never AF_IB
    assert kv["tuples"] == "10/2001:db8::3,2/198.18.0.3"
    assert 0 < int(kv["ttl"]) <= INT32_MAX


REVERSE = [
    ("byaddr", "198.18.0.2", AF_INET, "node2"),
    ("byaddr", "2001:db8::3", AF_INET6, "node3"),
    ("byaddr", "fe80::2:c903:0:10", AF_IB, "login1"),
    ("byaddr2", "198.18.1.1", AF_INET, "login1"),
    ("byaddr2", "fe80::2:c903:0:4", AF_IB, "node4"),
]


@pytest.mark.parametrize("entry,addr,af,name", REVERSE)
def test_reverse_every_buffer_size(helpers, static, entry, addr, af, name):
    kv = nss_call(helpers, client_env(static), "--sweep", entry, addr, str(af))
    assert kv["status"] == "SUCCESS" and kv["h_errno"] == "0"
    assert kv["name"] == name
    assert kv["af"] == str(af)
    assert kv["addrs"] == addr  # the address asked about
    if entry == "byaddr2":
        assert 0 < int(kv["ttl"]) <= INT32_MAX


def test_not_found_statuses(helpers, static):
    env = client_env(static)
    kv = nss_call(helpers, env, "byname2", "no-such-host", str(AF_INET))
    assert kv["status"] == "NOTFOUND" and kv["h_errno"] == str(HOST_NOT_FOUND)
    assert kv["errno"] == str(errno.ENOENT)
    kv = nss_call(helpers, env, "byaddr", "198.18.9.9", str(AF_INET))
    assert kv["status"] == "NOTFOUND" and kv["h_errno"] == str(HOST_NOT_FOUND)
    # the host exists, but has no address of that family
    kv = nss_call(helpers, env, "byname2", "node4", str(AF_INET6))
    assert kv["status"] == "NOTFOUND" and kv["h_errno"] == str(NO_DATA)
    # names the protocol cannot carry are not sent at all
    kv = nss_call(helpers, env, "byname2", "x" * 300, str(AF_INET))
    assert kv["status"] == "NOTFOUND"
    # a family the module does not serve
    kv = nss_call(helpers, env, "byname2", "node2", "1")
    assert kv["status"] == "UNAVAIL" and kv["errno"] == str(errno.EAFNOSUPPORT)


# ---- failures: no daemon, stopped daemon --------------------------------------

def test_no_daemon_is_unavail_at_once(helpers, tmp_path):
    env = client_env(socket_path=str(tmp_path / "absent.sock"))
    t0 = time.monotonic()
    kv = nss_call(helpers, env, "byname2", "node1", str(AF_INET))
    assert time.monotonic() - t0 < 1.0
    assert kv["status"] == "UNAVAIL" and kv["h_errno"] == str(NO_RECOVERY)
    assert kv["errno"] == str(errno.ENOENT)
    # a socket file that nobody listens on
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(tmp_path / "dead.sock"))
    s.close()
    env = client_env(socket_path=str(tmp_path / "dead.sock"))
    kv = nss_call(helpers, env, "byname4", "node1", "0")
    assert kv["status"] == "UNAVAIL" and kv["errno"] == str(errno.ECONNREFUSED)


def test_no_daemon_falls_through_to_files(tmp_path):
    env = client_env(socket_path=str(tmp_path / "absent.sock"))
    t0 = time.monotonic()
    r = getent(env, "-s", "hosts:ib files", "hosts", "localhost")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] in ("127.0.0.1", "::1")
    assert time.monotonic() - t0 < 2.0


def test_stopped_daemon_is_bounded(helpers, single):
    # the socket's bound: the shared directory would answer node1 itself
    env = client_env(single, IBRES_TIMEOUT_MS=300, IBRES_DIRECTORY="off")
    single.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        kv = nss_call(helpers, env, "byname2", "node1", str(AF_INET))
        dt = time.monotonic() - t0
        assert kv["status"] == "TRYAGAIN" and kv["h_errno"] == str(TRY_AGAIN)
        assert kv["errno"] == str(errno.ETIMEDOUT)
        assert 0.29 <= dt < 2.0
        t0 = time.monotonic()
        r = getent(env, "-s", "hosts:ib", "hosts", "node1")
        assert r.returncode != 0
        assert time.monotonic() - t0 < 3.0  # two families, 300 ms each
    finally:
        single.signal(signal.SIGCONT)
    r = getent(env, "-s", "hosts:ib", "hosts", "node1")
    assert r.returncode == 0 and "node1" in r.stdout


def test_default_timeout_is_five_seconds(helpers, single):
    """A stopped daemon: the module gives up after its own default, 5 s
    (libibres and ibresctl wait 10 s: test_ibresctl.py)."""
    env = client_env(single, IBRES_DIRECTORY="off")
    single.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        kv = nss_call(helpers, env, "byname2", "node1", str(AF_INET))
        dt = time.monotonic() - t0
    finally:
        single.signal(signal.SIGCONT)
    assert kv["status"] == "TRYAGAIN"
    assert 4.9 <= dt < 7.0


# ---- load and memory ----------------------------------------------------------

@pytest.mark.timeout(300)
def test_64_threads_10000_lookups_each(helpers, single):
    r = run([helpers["nss_glibc"], "ib", "threads", "64", "10000", "node1", "198.18.0.1"],
            env=client_env(single), timeout=600)
    kv = parse_kv(r.stdout)
    assert r.returncode == 0, r.stderr
    assert kv["lookups"] == "640000"
    assert kv["wrong"] == "0" and kv["failed"] == "0", r.stdout
    assert single.alive()


VALGRIND = ["valgrind", "-q", "--error-exitcode=9", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect"]


@pytest.mark.parametrize("args", [
    ["--sweep", "byname3", "node2", str(AF_INET)],
    ["--sweep", "byname4", "node2", "0"],
    ["--sweep", "--prealloc", "byname4", "node3", "0"],
    ["--sweep", "byaddr2", "fe80::2:c903:0:2", str(AF_IB)],
    ["byname2", "no-such-host", str(AF_INET)],
])
@not_sanitized("valgrind cannot run ASan code")
@pytest.mark.valgrind
def test_valgrind_clean(helpers, static, args):
    cmd = VALGRIND + [helpers["nss_call"]] + args[:-3] + [NSS_MODULE] + args[-3:]
    r = run(cmd, env=client_env(static), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error=" not in r.stdout


@not_sanitized("valgrind cannot run ASan code")
@pytest.mark.valgrind
def test_valgrind_clean_through_glibc_threads(helpers, single):
    cmd = VALGRIND + [helpers["nss_glibc"], "ib", "threads", "8", "50", "node1", "198.18.0.1"]
    r = run(cmd, env=client_env(single), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert parse_kv(r.stdout)["wrong"] == "0"


def test_module_needs_no_daemon_to_load(tmp_path):
    """dlopen with no daemon and no environment: nothing runs at load time."""
    env = dict(os.environ)
    env.pop("IBRES_SOCKET", None)
    env["LD_LIBRARY_PATH"] = os.path.dirname(NSS_MODULE)
    preload_sanitizer(env)
    r = subprocess.run(["python3", "-c", "import ctypes; ctypes.CDLL(%r)" % NSS_MODULE],
                       env=env, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
