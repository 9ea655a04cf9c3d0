"""A machine that booted seconds ago (a fresh CI machine, a cluster node whose daemon starts
with the system): the unit tests and real daemons run in time namespaces whose
CLOCK_MONOTONIC and CLOCK_BOOTTIME read UPTIME_S seconds, and everything that depends on
timers still works: the fabric resolves, announcements fill the directory, entries expire,
a query of a dead node ends within its bound, an idle client is closed, a restarted node is
found again. Any unsigned wrap of `now - something` would show here as a timer due in the
far future (a hang, caught by the test's timeout) or one that is always due."""
import glob
import os
import stat
import subprocess
import time

import pytest

from conftest import BUILD, Client, IBRESD, have, needs_root, run
from fabric_util import (ST_SUCCESS, Cluster, host, resolve, stats, wait_until)

UPTIME_S = 20


def boot_offsets():
    """Seconds to take off CLOCK_MONOTONIC and CLOCK_BOOTTIME to read UPTIME_S (0 on a
    machine younger than that)."""
    mono = time.clock_gettime(time.CLOCK_MONOTONIC)
    boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    return max(0, int(mono) - UPTIME_S), max(0, int(boot) - UPTIME_S)


def fresh_boot(cmd):
    """@cmd run in a new time namespace at UPTIME_S seconds of uptime. unshare(1) enters the
    namespace itself (setns on time_for_children) and execs @cmd: the pid stays the same."""
    mono, boot = boot_offsets()
    return ["unshare", "--time", "--monotonic=-%d" % mono, "--boottime=-%d" % boot] + cmd


def time_ns_works():
    if not have("unshare") or os.geteuid() != 0:
        return False
    try:
        return run(fresh_boot(["true"]), timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


pytestmark = [needs_root,
              pytest.mark.skipif(not time_ns_works(),
                                 reason="no time namespaces (unshare --time, CONFIG_TIME_NS)")]


def test_the_namespace_clock_reads_a_fresh_boot():
    code = "import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))"
    r = run(fresh_boot(["/usr/bin/python3", "-c", code]), timeout=30, check=True)
    assert float(r.stdout) < UPTIME_S + 10
    r = run(fresh_boot(["cat", "/proc/uptime"]), timeout=30, check=True)
    assert float(r.stdout.split()[0]) < UPTIME_S + 10


UNIT_TESTS = sorted(p for p in glob.glob(os.path.join(BUILD, "test", "test_*"))
                    if os.stat(p).st_mode & stat.S_IXUSR)


@pytest.mark.skipif(not UNIT_TESTS, reason="unit tests not built (make unit)")
@pytest.mark.timeout(300)
@pytest.mark.parametrize("binary", UNIT_TESTS, ids=[os.path.basename(p) for p in UNIT_TESTS])
def test_unit_tests_at_fresh_boot(binary):
    r = run(fresh_boot([binary]), timeout=120)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]


@pytest.fixture
def wrapper(tmp_path):
    """An ibresd that starts at UPTIME_S seconds of uptime (for emulate --ibresd)."""
    path = tmp_path / "ibresd-fresh-boot"
    path.write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (
        " ".join(fresh_boot([])), IBRESD))
    path.chmod(0o755)
    return str(path)


def daemon_uptime(pid):
    """CLOCK_MONOTONIC as process @pid sees it now, from its time namespace's offset."""
    with open("/proc/%d/timens_offsets" % pid) as f:
        for line in f:
            clock, sec, _ = line.split()
            if clock in ("monotonic", "1"):
                return time.clock_gettime(time.CLOCK_MONOTONIC) + int(sec)
    raise AssertionError("no monotonic offset for %d" % pid)


@pytest.mark.timeout(120)
def test_daemons_at_fresh_boot(tmp_path, wrapper):
    """Two nodes on the emulated fabric, both at UPTIME_S seconds: every timer fires."""
    c = Cluster(tmp_path / "c", 2, "--ibresd", wrapper,
                "--set", "resolve.addr_ttl=3s", "--set", "resolve.route_ttl=3s",
                "--set", "resolve.negative_ttl=1s", "--set", "resolve.announce_interval=60s",
                "--set", "daemon.client_timeout=1s")
    c.up()
    try:
        for k in (1, 2):
            assert daemon_uptime(c.pid(k)) < UPTIME_S + 60, "node%d not in the namespace" % k
        # start-up announcements (a jittered timer) and the settle time fill the directory
        wait_until(lambda: host(c.sock(1), "node2", cache_only=True)[0] == ST_SUCCESS, 10,
                   what="node1 learns node2 from its announcement")
        cl = Client(c.sock(1), timeout=10)
        status, path = resolve(cl, "node2", "node1")
        cl.close()
        assert status == ST_SUCCESS and path["dlid"] == c.nodes[2]["lid"]

        # an idle client is closed after client_timeout (1 s), not never and not at once
        idle = Client(c.sock(1))
        t0 = time.monotonic()
        assert idle.closed_by_peer(timeout=10)
        assert 0.5 <= time.monotonic() - t0 < 5
        idle.close()

        # SIGKILL (no GOODBYE): the entry expires after addr_ttl (3 s) through the sweep
        c.kill(2, "KILL")
        wait_until(lambda: host(c.sock(1), "node2", cache_only=True)[0] != ST_SUCCESS, 10,
                   interval=0.2, what="node2 expires on node1")
        # asking for it now ends within the query bound (attempt timers), as a failure
        t0 = time.monotonic()
        status, _ = host(c.sock(1), "node2", timeout=15)
        assert status != ST_SUCCESS
        assert time.monotonic() - t0 < 6
        assert stats(c.sock(1))["fabric_query_timeouts"] >= 1

        # restarted (a new namespace, again at UPTIME_S), it is found again
        c.start(2)
        assert daemon_uptime(c.pid(2)) < UPTIME_S + 60

        def found():
            cl = Client(c.sock(1), timeout=10)
            try:
                return resolve(cl, "node2", "node1")[0] == ST_SUCCESS
            finally:
                cl.close()
        wait_until(found, 15, interval=0.5, what="restarted node2 resolves from node1")
    finally:
        c.down()
