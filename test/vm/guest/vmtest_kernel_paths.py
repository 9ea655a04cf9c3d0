"""In the VM (--daemons): the kernel's path queries. Every node's ibresd has
an endpoint on an rxe device, so it binds the real NETLINK_RDMA
local-service group (RDMA_NL_GROUP_LS, 3) of a real RDMA kernel and tells the
kernel its wait (SET_TIMEOUT), which the kernel takes from a process with
CAP_NET_ADMIN. RoCE ports send no path queries (the kernel asks for IB ports
only): the end-to-end check is doc/hardware-testing.md, step 13."""
import re

from vmlib import (LS_GROUP_BIT, NETLINK_RDMA, VMDIR, daemon_pid, nodes, rdma_netlink_sockets,
                   socket_inodes, start_daemon, stats, stop_daemon, wait_until)

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


# Hands ibresd a NETLINK_RDMA socket the way systemd passes one (fd 3,
# LISTEN_FDS, LISTEN_PID of the process that then runs ibresd), bound to no
# group: what a unit saying `ListenNetlink=rdma 3` (the group's number where
# systemd wants a mask of groups) would pass.
PASS_UNJOINED = """
import os, socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, %d)
s.bind((0, 0))
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execv(sys.argv[1], sys.argv[1:])
""" % NETLINK_RDMA


def test_a_passed_socket_outside_the_group_is_made_to_join_it():
    """Last in this file: node3's daemon, restarted with such a socket, says
    so, joins the local-service group itself on that same socket, and binds
    no second one; node3 then gets its ordinary daemon back."""
    node = "node3"
    stop_daemon(node)
    seen = len(log_of(node))
    try:
        start_daemon(node, argv_prefix=("python3", "-c", PASS_UNJOINED))
        wait_until(lambda: "kernel path queries: listening" in log_of(node)[seen:], 10,
                   "%s listens for kernel path queries" % node)
        log = log_of(node)[seen:]
        assert "is not in the local-service group" in log, log
        assert "listening on NETLINK_RDMA group 3 (socket from systemd)" in log, log
        pid = daemon_pid(node)
        mine = [g for g, inode in rdma_netlink_sockets() if inode in socket_inodes(pid)]
        assert len(mine) == 1 and mine[0] & LS_GROUP_BIT, [hex(g) for g in mine]
        assert stats(node)["kpath_tx_errors"] == 0
    finally:
        stop_daemon(node)
        start_daemon(node)
