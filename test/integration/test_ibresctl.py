"""ibresctl against a real ibresd: every subcommand in text and JSON, the exit
codes (0 ok, 1 negative answer, 2 usage, 3 unreachable), paging of the cache
listing, the admin check, and config check."""
import json
import os
import shutil
import signal
import stat
import tempfile
import time

import pytest

from conftest import IBRESCTL, SINGLE_NODE, needs_root, run
from nss_helpers import HOSTS_EXAMPLE, client_env, static_hosts_config
from other_user import NOBODY, world_copy


@pytest.fixture
def static(daemon_factory):
    return daemon_factory(static_hosts_config(), name="static").start()


def ctl(daemon, *args, env=None, timeout=30):
    if env is None:
        env = client_env(daemon)
    return run([IBRESCTL] + list(args), env=env, timeout=timeout)


def ctl_json(daemon, *args):
    r = ctl(daemon, "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---- usage ---------------------------------------------------------------------

def test_help_and_version():
    r = run([IBRESCTL, "--help"])
    assert r.returncode == 0
    for word in ("resolve", "host", "endpoints", "cache list", "cache flush", "stats",
                 "config check", "--socket", "--timeout", "--json", "--version", "Exit status"):
        assert word in r.stdout
    r = run([IBRESCTL, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("ibresctl (nss-ib) ")


@pytest.mark.parametrize("args", [
    [], ["bogus"], ["host"], ["host", "a", "b"], ["resolve"], ["resolve", "a", "b", "c"],
    ["cache"], ["cache", "drop"], ["stats", "x"], ["endpoints", "x"], ["config", "check"],
    ["--timeout", "0", "stats"], ["--timeout", "abc", "stats"], ["--nosuchoption", "stats"],
    ["host", "x" * 300], ["resolve", "y" * 70], ["cache", "flush", "gid:zz"],
])
def test_usage_errors_exit_2(args, tmp_path):
    r = run([IBRESCTL] + args, env=client_env(socket_path=str(tmp_path / "none.sock")))
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stderr


def test_unreachable_exit_3(tmp_path):
    env = client_env(socket_path=str(tmp_path / "none.sock"))
    for args in (["host", "node1"], ["stats"], ["cache", "list"], ["resolve", "node1"]):
        r = run([IBRESCTL] + args, env=env)
        assert r.returncode == 3, args
        assert "cannot reach ibresd" in r.stderr and "none.sock" in r.stderr


def test_socket_option_overrides_environment(single, tmp_path):
    env = client_env(socket_path=str(tmp_path / "none.sock"))
    r = run([IBRESCTL, "--socket", single.socket, "host", "node1"], env=env)
    assert r.returncode == 0 and r.stdout.startswith("node1\n")


def test_timeout_option_bounds_a_stopped_daemon(single):
    single.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = ctl(single, "--timeout", "300", "host", "node1")
        dt = time.monotonic() - t0
    finally:
        single.signal(signal.SIGCONT)
    assert r.returncode == 3 and "timed out" in r.stderr
    assert dt < 2.0


def test_default_bound_outlasts_the_daemons(single):
    """Without --timeout or $IBRES_TIMEOUT_MS ibresctl waits 10 s, longer than
    the daemon makes a lookup wait with its defaults (8.2 s), so that the
    daemon's own answer comes first; a stopped daemon shows it."""
    env = {k: v for k, v in os.environ.items() if k != "IBRES_TIMEOUT_MS"}
    env["IBRES_SOCKET"] = single.socket
    single.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = ctl(single, "host", "node1", env=env)
        dt = time.monotonic() - t0
    finally:
        single.signal(signal.SIGCONT)
    assert r.returncode == 3 and "timed out" in r.stderr
    assert 9.9 <= dt < 12.0, dt


# ---- host ----------------------------------------------------------------------

def test_host_text(static):
    r = ctl(static, "host", "node2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "node2"
    body = {tuple(line.split(None, 1)) for line in lines[1:]}
    for item in [("alias", "node2.cluster.example"), ("ipv4", "198.18.0.2"),
                 ("ipv6", "2001:db8::2"), ("gid", "fe80::2:c903:0:2"), ("lid", "2"),
                 ("qpn", "0x1"), ("pkey", "0xffff")]:
        assert item in body


@pytest.mark.parametrize("key", ["login1", "login1.cluster.example", "198.18.1.1",
                                 "fe80::2:c903:0:10", "gid:fe80::2:c903:0:10"])
def test_host_json_every_key_kind(static, key):
    h = ctl_json(static, "host", key)
    assert h == {"name": "login1", "aliases": ["login1.cluster.example"],
                 "ipv4": ["198.18.1.1"], "ipv6": [], "gids": ["fe80::2:c903:0:10"],
                 "lid": 16, "qpn": 0x48, "pkey": 0x7fff, "ttl": h["ttl"]}
    assert h["ttl"] > 0


def test_host_not_found_exit_1(static):
    r = ctl(static, "host", "no-such-host")
    assert r.returncode == 1 and "not found" in r.stderr
    r = ctl(static, "--json", "host", "198.18.9.9")
    assert r.returncode == 1
    assert json.loads(r.stdout) == {"error": "not found", "status": 3}
    assert ctl(static, "--cache-only", "host", "node3").returncode == 0


# ---- resolve -------------------------------------------------------------------

PATH_FIELDS = {"flags", "flag_names", "service_id", "dgid", "sgid", "dlid", "slid",
               "flow_label", "hop_limit", "tclass", "reversible", "numpath", "pkey",
               "qos_class", "sl", "mtu_selector", "mtu", "mtu_bytes", "rate_selector", "rate",
               "rate_gbps", "packet_lifetime_selector", "packet_lifetime", "preference"}


@pytest.mark.parametrize("args", [["node1"], ["198.18.0.1"], ["2001:db8::1"],
                                  ["fe80::2:c903:0:1"], ["198.18.0.1", "node1"],
                                  ["gid:fe80::2:c903:0:1", "gid:fe80::2:c903:0:1"]])
def test_resolve_json(single, args):
    out = ctl_json(single, "resolve", *args)
    assert len(out["paths"]) == 1
    p = out["paths"][0]
    assert set(p) == PATH_FIELDS
    assert p["flags"] == 0x2b
    assert p["flag_names"] == ["gmp", "primary", "outbound", "inbound-reverse"]
    assert p["dgid"] == p["sgid"] == "fe80::2:c903:0:1"
    assert p["dlid"] == p["slid"] == 1
    assert p["pkey"] == 0xffff and p["mtu_bytes"] == 2048 and p["rate_gbps"] == "10"
    if len(args) == 1 and not args[0].startswith("fe80"):
        assert "source" in out


def test_resolve_text_prints_every_field(single):
    r = ctl(single, "resolve", "node1")
    assert r.returncode == 0, r.stderr
    for field in ("flags", "service_id", "dgid", "sgid", "dlid", "slid", "flow_label",
                  "hop_limit", "tclass", "reversible", "numpath", "pkey", "qos_class", "sl",
                  "mtu", "rate", "packet_lifetime", "preference"):
        assert "\n  %s " % field in r.stdout
    assert "2048 bytes" in r.stdout and "10 Gb/s" in r.stdout


def test_resolve_unknown_exit_1(single):
    r = ctl(single, "resolve", "no-such-host")
    assert r.returncode == 1 and r.stderr


# ---- endpoints, stats ----------------------------------------------------------

def test_endpoints(single):
    out = ctl_json(single, "endpoints")
    (ep,) = out["endpoints"]
    assert ep["label"] == "ib0" and ep["name"] == "node1"
    assert ep["ipv4"] == ["198.18.0.1"] and ep["ipv6"] == ["2001:db8::1"]
    assert ep["gids"] == ["fe80::2:c903:0:1"] and ep["lid"] == 1
    assert ep["mtu_bytes"] == 2048 and ep["rate_gbps"] == "10" and ep["sl"] == 0
    r = ctl(single, "endpoints")
    assert r.returncode == 0 and r.stdout.startswith("endpoint ib0: node1\n")


def test_stats(single):
    ctl(single, "host", "node1")
    counters = ctl_json(single, "stats")["counters"]
    assert counters["requests"] >= 1
    assert all(isinstance(v, int) for v in counters.values())
    r = ctl(single, "stats")
    assert r.returncode == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert names == list(counters)


# ---- cache ---------------------------------------------------------------------

def test_cache_list(static):
    out = ctl_json(static, "cache", "list")
    assert out["count"] == len(out["entries"])
    keys = {(e["key_type"], e["key"]) for e in out["entries"]}
    assert ("name", "node2") in keys and ("ipv4", "198.18.0.2") in keys
    e = next(e for e in out["entries"] if e["key"] == "login1")
    assert e["origin"] == "static" and e["state"] in ("resolved", "routed")
    assert e["host"]["gids"] == ["fe80::2:c903:0:10"]
    r = ctl(static, "cache", "list")
    assert r.returncode == 0
    assert r.stdout.splitlines()[0].split() == ["TYPE", "KEY", "STATE", "ORIGIN", "TTL",
                                                "HOST", "GID"]
    assert len(r.stdout.splitlines()) == out["count"] + 1


def test_cache_list_pages(daemon_factory, tmp_path):
    """Enough static hosts that the listing needs many CACHE_LIST round trips."""
    n = 1500
    hosts = tmp_path / "hosts"
    with open(hosts, "w") as f:
        for i in range(1, n + 1):
            f.write("fe80::2:c903:1:%x %d big%d 198.19.%d.%d\n" % (i, 1000 + i, i, i // 250,
                                                                  i % 250 + 1))
    conf = open(SINGLE_NODE).read().replace("[resolve]\n", "[resolve]\nhosts_file = %s\n" % hosts)
    d = daemon_factory(conf, name="big").start()
    before = ctl_json(d, "stats")["counters"]["requests"]
    out = ctl_json(d, "cache", "list")
    stats = ctl_json(d, "stats")["counters"]
    assert stats["requests"] - before - 1 >= 5  # pages
    assert out["count"] == len(out["entries"]) == stats["cache_entries"]
    assert out["count"] >= 4 * n
    assert len({(e["key_type"], e["key"]) for e in out["entries"]}) == out["count"]


def test_cache_flush_as_root(static):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = ctl_json(static, "cache", "flush")
    assert isinstance(out["flushed"], int)
    r = ctl(static, "cache", "flush", "node2")
    assert r.returncode in (0, 1), r.stderr  # 1 only if the daemon says "not found"
    r = ctl(static, "cache", "flush", "198.18.0.3")
    assert r.returncode in (0, 1) and ("flushed" in r.stdout or "not found" in r.stderr)


@needs_root
def test_cache_flush_needs_root(daemon_factory):
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv")
    # a socket directory the unprivileged user can reach
    sockdir = tempfile.mkdtemp(prefix="ibres-ctl-")
    os.chmod(sockdir, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        d = daemon_factory(name="perm", sock=os.path.join(sockdir, "s.sock")).start()
        # the build's ibresctl, copied where nobody may run it wherever the
        # checkout is (other_user.py)
        with world_copy(IBRESCTL) as ctl_copy:
            cmd = NOBODY + [ctl_copy]
            cwd = os.path.dirname(ctl_copy)
            r = run(cmd + ["cache", "flush"], env=client_env(d), cwd=cwd)
            assert r.returncode == 1 and "permission denied" in r.stderr, r.stderr
            # reading needs no privilege
            r = run(cmd + ["host", "node1"], env=client_env(d), cwd=cwd)
            assert r.returncode == 0, r.stderr
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


# ---- config check --------------------------------------------------------------

def test_config_check(tmp_path):
    r = run([IBRESCTL, "config", "check", SINGLE_NODE])
    assert r.returncode == 0 and "configuration OK" in r.stdout
    bad = tmp_path / "bad.conf"
    bad.write_text("[daemon]\nno_such_key = 1\n")
    r = run([IBRESCTL, "config", "check", str(bad)])
    assert r.returncode == 1 and r.stderr
    r = run([IBRESCTL, "--json", "config", "check", str(bad)])
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["valid"] is False and out["output"]
    out = json.loads(run([IBRESCTL, "--json", "config", "check", SINGLE_NODE]).stdout)
    assert out["valid"] is True


def test_config_check_without_ibresd(tmp_path):
    lone = tmp_path / "ibresctl"
    shutil.copy(IBRESCTL, lone)
    env = dict(os.environ, PATH=str(tmp_path))
    r = run([str(lone), "config", "check", HOSTS_EXAMPLE], env=env)
    assert r.returncode == 3 and "could not run" in r.stderr
