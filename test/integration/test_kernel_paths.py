"""The kernel's path queries (NETLINK_RDMA local service) on a machine whose
kernel may have no RDMA netlink (like CI's): the daemon says so once and
carries on serving clients, reports its kpath_* statistics, gives up
CAP_NET_ADMIN when it has nothing to answer, and takes [resolve]
kernel_paths and kernel_path_timeout. The codec is tested in
test/unit/test_kpath_codec.c; the real kernel group in the test VM
(test/vm) and on hardware (doc/hardware-testing.md)."""
import json
import os
import socket
import time

import pytest

from conftest import IBRESCTL, IBRESD, config_with, run
from nss_helpers import client_env

NETLINK_RDMA = 20
CAP_NET_ADMIN = 12


def kernel_has_rdma_netlink():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_RDMA)
    except OSError:
        return False
    s.close()
    return True


def cap_eff(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    raise AssertionError("no CapEff")


def stats(daemon):
    r = run([IBRESCTL, "--json", "stats"], env=client_env(daemon))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["counters"]


def with_device(extra=""):
    """The single-node example on an InfiniBand device (absent here: the
    daemon skips the port and keeps the configured values)."""
    return config_with({"resolve": [extra]} if extra else {}).replace(
        "transport = none", "transport = none\ndevice = mlx5_0\nport_num = 1")


@pytest.fixture
def single(daemon_factory):
    return daemon_factory(with_device()).start()


def test_without_rdma_netlink_logs_once_and_serves(single):
    if kernel_has_rdma_netlink():
        pytest.skip("this kernel has RDMA netlink (the VM test covers it)")
    r = run([IBRESCTL, "host", "node1"], env=client_env(single))
    assert r.returncode == 0, r.stderr
    log = single.logtext()
    lines = [x for x in log.splitlines() if "kernel path queries" in x]
    assert len(lines) == 1, log
    assert "no NETLINK_RDMA local service here" in lines[0]
    c = stats(single)
    for name in ("kpath_requests", "kpath_ip_requests", "kpath_answered", "kpath_refused",
                 "kpath_malformed", "kpath_tx_errors", "kpath_outstanding"):
        assert c[name] == 0, name
    # a reload changes nothing about it, and says nothing more
    single.signal(1)
    deadline = time.monotonic() + 10
    while "configuration reloaded" not in single.logtext():
        assert time.monotonic() < deadline, single.logtext()
        time.sleep(0.05)
    r = run([IBRESCTL, "host", "node1"], env=client_env(single))
    assert r.returncode == 0
    assert len([x for x in single.logtext().splitlines() if "kernel path queries" in x]) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (capabilities)")
def test_cap_net_admin_dropped_when_nothing_to_answer(daemon_factory):
    if kernel_has_rdma_netlink():
        pytest.skip("this kernel has RDMA netlink: the daemon keeps CAP_NET_ADMIN")
    assert cap_eff(os.getpid()) & (1 << CAP_NET_ADMIN), "the test runs with CAP_NET_ADMIN"
    for setting in ("kernel_paths = yes", "kernel_paths = no"):
        d = daemon_factory(with_device(setting), name=setting[-3:].strip()).start()
        run([IBRESCTL, "stats"], env=client_env(d))  # ready and serving
        eff = cap_eff(d.proc.pid)
        assert not eff & (1 << CAP_NET_ADMIN), (setting, hex(eff))
        # only that one went: the others stay as they were (the unit bounds them)
        assert eff & (1 << 0), hex(eff)  # CAP_CHOWN, say
        if setting.endswith("no"):
            assert "kernel path queries: off (kernel_paths = no)" in d.logtext()


def test_not_listening_without_an_infiniband_endpoint(daemon_factory):
    # the kernel asks only for its IB ports: an ip-only node has nothing to say
    d = daemon_factory().start()
    run([IBRESCTL, "stats"], env=client_env(d))
    assert "kernel path queries: no endpoint names an InfiniBand device; not listening" \
        in d.logtext()
    if os.geteuid() == 0:
        assert not cap_eff(d.proc.pid) & (1 << CAP_NET_ADMIN)


def test_config_keys(tmp_path):
    conf = tmp_path / "k.conf"
    conf.write_text(config_with({"resolve": ["kernel_paths = no",
                                             "kernel_path_timeout = 250ms"]}))
    r = run([IBRESD, "--check-config", "--config", str(conf)])
    assert r.returncode == 0, r.stderr
    assert "kernel_paths = no\n" in r.stdout and "kernel_path_timeout = 250ms\n" in r.stdout
    r = run([IBRESD, "--check-config", "--config", str(tmp_path / "none")])
    assert r.returncode != 0  # a missing config is an error, not the defaults
    conf.write_text(config_with({"resolve": []}))
    r = run([IBRESD, "--check-config", "--config", str(conf)])
    assert "kernel_paths = yes\n" in r.stdout and "kernel_path_timeout = 1s\n" in r.stdout
    for bad in ("kernel_path_timeout = 50ms", "kernel_path_timeout = 2m", "kernel_paths = maybe"):
        conf.write_text(config_with({"resolve": [bad]}))
        r = run([IBRESD, "--check-config", "--config", str(conf)])
        assert r.returncode == 1 and "kernel_path" in r.stderr, (bad, r.stderr)
