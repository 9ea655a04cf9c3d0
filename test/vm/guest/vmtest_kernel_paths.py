"""In the VM (--daemons): the kernel's path queries. Every node's ibresd has
an endpoint on an rxe device, so it binds the real NETLINK_RDMA
local-service group (RDMA_NL_GROUP_LS, 3) of a real RDMA kernel and tells the
kernel its wait (SET_TIMEOUT), which the kernel takes from a process with
CAP_NET_ADMIN. RoCE ports send no path queries (the kernel asks for IB ports
only): the end-to-end check is doc/hardware-testing.md, step 13."""
import re

from vmlib import (LS_GROUP_BIT, VMDIR, daemon_pid, nodes, rdma_netlink_sockets, socket_inodes,
                   stats, wait_until)

CAP_NET_ADMIN = 12


def log_of(node):
    with open("%s/%s.log" % (VMDIR, node)) as f:
        return f.read()


def test_every_daemon_binds_the_local_service_group():
    socks = rdma_netlink_sockets()
    for node in nodes():
        wait_until(lambda: "kernel path queries: listening" in log_of(node), 10,
                   "%s listens for kernel path queries" % node)
        mine = [g for g, inode in socks if inode in socket_inodes(daemon_pid(node))]
        assert len(mine) == 1, (node, socks)
        assert mine[0] & LS_GROUP_BIT, (node, hex(mine[0]))


def test_set_timeout_taken_and_nothing_refused():
    for node in nodes():
        log = log_of(node)
        assert "kernel path queries: listening on NETLINK_RDMA group 3\n" in log, log
        assert "answering within 1000 ms (kernel told to wait 1250 ms)" in log, log
        # the kernel acknowledges a refused message with an error: none came
        assert "EPERM" not in log and "no NETLINK_RDMA" not in log, log
        s = stats(node)
        assert s["kpath_tx_errors"] == 0 and s["kpath_malformed"] == 0, s
        # it keeps what answering needs
        with open("/proc/%d/status" % daemon_pid(node)) as f:
            eff = int(re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)
        assert eff & (1 << CAP_NET_ADMIN), hex(eff)


def test_roce_ports_send_no_queries():
    # rdma_cm over rxe resolves routes itself (vmtest_rdmacm.py connects by
    # name through rdma_getaddrinfo): nothing reaches the local service
    for node in nodes():
        assert stats(node)["kpath_requests"] == 0
