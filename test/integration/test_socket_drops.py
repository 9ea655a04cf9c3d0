"""The ip transport counts what the kernel dropped at its sockets (issue 22).

A datagram that arrives while a UDP socket's receive buffer is full is
dropped by the kernel; the daemon learns how many from the SO_RXQ_OVFL count
that comes with the next datagram it reads, counts them
(fabric_rx_socket_drops) and reports the loss to the completeness rule
(doc/fabric-protocol.md, "When the directory is complete"), as the ib
transport reports an empty receive queue: the directory is incomplete and a
miss of a cluster name is asked on the fabric.

The overrun is real: the test takes a duplicate of the daemon's unicast
socket (pidfd_getfd, root), shrinks its receive buffer, stops the daemon and
sends far more datagrams than fit."""
import ctypes
import os
import signal
import socket

from conftest import needs_root
from fabric_util import (FABRIC_PORT, ST_ENODATA, cluster_factory, host,  # noqa: F401 (fixture)
                         send_datagrams, stats, wait_until)

pytestmark = needs_root

SETTLE = 1.0
FLOOD = 400
SYS_PIDFD_GETFD = 438   # the same number on every architecture


def daemon_socket(pid, addr, port):
    """A duplicate of daemon @pid's UDP socket bound to (@addr, @port)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir("/proc/%d/fd" % pid):
            try:
                if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
            assert fd >= 0, os.strerror(ctypes.get_errno())
            s = socket.socket(fileno=fd)
            try:
                if s.type == socket.SOCK_DGRAM and s.getsockname()[:2] == (addr, port):
                    return s
            except OSError:
                pass
            s.close()
    finally:
        os.close(pidfd)
    raise AssertionError("no socket of %d bound to %s:%d" % (pid, addr, port))


def test_socket_overrun_is_a_loss(cluster_factory):
    c = cluster_factory(2)
    c.wait_settled(SETTLE)
    wait_until(lambda: all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes),
               5.0, what="both directories complete")
    before = stats(c.sock(1))
    assert before["fabric_rx_socket_drops"] == 0
    pid, addr = c.pid(1), c.nodes[1]["ipv4"]
    s = daemon_socket(pid, addr, FABRIC_PORT)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    finally:
        s.close()
    junk = b"not a fabric datagram" * 8
    os.kill(pid, signal.SIGSTOP)
    try:
        send_datagrams(c.netns(2), addr, FABRIC_PORT, [junk] * FLOOD, src=c.nodes[2]["ipv4"])
    finally:
        os.kill(pid, signal.SIGCONT)
    # the count comes with the next datagram read after the drops
    send_datagrams(c.netns(2), addr, FABRIC_PORT, [junk], src=c.nodes[2]["ipv4"])
    wait_until(lambda: stats(c.sock(1))["fabric_rx_socket_drops"] > 0, 5.0,
               what="node1 counts the kernel's drops")
    after = stats(c.sock(1))
    # most of the flood did not fit; what did was read and refused as malformed
    read = after["fabric_rx_malformed"] - before["fabric_rx_malformed"]
    assert after["fabric_rx_socket_drops"] + read == FLOOD + 1
    assert after["fabric_rx_socket_drops"] > FLOOD // 2
    # the rule's 1 s tick reads the counter: a loss, the directory incomplete
    wait_until(lambda: stats(c.sock(1))["directory_complete"] == 0, 3.0,
               what="node1 incomplete after its socket dropped datagrams")
    mid = stats(c.sock(1))
    assert mid["fabric_rx_drops_detected"] > before["fabric_rx_drops_detected"]
    assert mid["fabric_rx_queue_empty"] == 0   # the ib transport's counter stays apart
    # a miss of a cluster name is asked on the fabric instead of denied at once;
    # a live peer is still answered
    assert host(c.sock(1), c.nodes[2]["name"])[0] == 0
    assert host(c.sock(1), "node77", timeout=15.0)[0] != ST_ENODATA
    assert stats(c.sock(1))["fabric_incomplete_queries"] > mid["fabric_incomplete_queries"]
    assert "dropped" in c.log(1) and "at its sockets" in c.log(1)
