"""In the VM booted with systemd as PID 1 (--systemd --daemons, 2 nodes):
nss-ib installed by `make install`, node1's ibresd the system's daemon behind
ibresd.socket and ibresd-acm.socket, node2's a plain process."""
import os
import re
import subprocess
import time

from vmlib import known, nodes, run, stats, wait_until

ENV = dict(os.environ, SYSTEMD_PAGER="", SYSTEMD_COLORS="0")
CONF = "/etc/ibres/ibresd.conf"


def systemctl(*args, check=True):
    return run(["systemctl", "--no-pager"] + list(args), env=ENV, check=check, timeout=60)


def prop(unit, name):
    return systemctl("show", "-p", name, "--value", unit).stdout.strip()


def main_pid():
    return int(prop("ibresd.service", "MainPID"))


def test_first_query_activates_the_daemon_and_it_reports_ready():
    assert prop("ibresd.socket", "ActiveState") == "active"
    assert prop("ibresd-acm.socket", "ActiveState") == "active"
    assert {"ibresd.socket", "ibresd-acm.socket"} <= set(
        prop("ibresd.service", "TriggeredBy").split())
    # a lookup during the boot may have started it already: stop it, the
    # client sockets stay and wait for the next query (the kernel's path
    # query socket too would start it again at once: stopped for this test
    # and the next ones)
    systemctl("stop", "ibresd-kernel.socket", "ibresd.service")
    wait_until(lambda: prop("ibresd.service", "ActiveState") == "inactive", 10,
               "ibresd.service stopped")
    # rdma-core's ibacm is masked: ibresd-acm.socket owns ibacm's paths
    assert prop("ibacm.socket", "LoadState") == "masked"
    assert os.readlink("/run/ibacm.sock") == "/run/ibacm-unix.sock"
    # through the socket, not the shared host directory the stopped daemon
    # left (which would answer without waking anything)
    r = run(["getent", "hosts", "node2"], timeout=30,
            env=dict(os.environ, IBRES_DIRECTORY="off"))
    assert r.returncode == 0 and r.stdout.split()[1] == "node2", r.stdout + r.stderr
    # Type=notify: "active" only after READY=1
    assert prop("ibresd.service", "Type") == "notify"
    assert prop("ibresd.service", "ActiveState") == "active"
    assert prop("ibresd.service", "SubState") == "running"


def test_the_hardening_is_in_force_and_the_daemon_works_under_it():
    pid = main_pid()
    status = open("/proc/%d/status" % pid).read()
    fields = dict(l.split(":\t", 1) for l in status.splitlines() if ":\t" in l)
    # CAP_NET_ADMIN (12: the kernel's path queries) and CAP_NET_RAW (13: the
    # controlled Q_Key of its UD QP) only
    assert int(fields["CapBnd"], 16) == 1 << 12 | 1 << 13
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"
    # ProtectSystem=strict: the file system is read-only in its namespace
    r = run(["nsenter", "--target", str(pid), "--mount", "--", "touch", "/etc/ibres/x"])
    assert r.returncode != 0 and "Read-only file system" in r.stderr, r.stderr
    # and under all that its UD QP is open on rxe1
    r = run(["rdma", "res", "show", "qp"], check=True)
    assert re.search(r"link rxe1/1 lqpn \d+ type UD state RTS .*pid %d comm ibresd" % pid,
                     r.stdout), r.stdout
    assert known("node2", "node1")


def test_the_journal_holds_the_logs():
    r = run(["journalctl", "--no-pager", "-u", "ibresd.service", "-o", "cat"], env=ENV,
            check=True)
    assert "UD QP" in r.stdout and "RoCE v2" in r.stdout
    assert re.search(r"ibresd \S+ ready", r.stdout), r.stdout


def test_reload_rereads_the_config():
    pid = main_pid()
    text = open(CONF).read()
    assert "name = node1\n" in text
    with open(CONF, "w") as f:
        f.write(text.replace("name = node1\n", "name = node1\nname = node1-alias\n", 1))
    systemctl("reload", "ibresd.service")
    assert main_pid() == pid  # re-read in place, not restarted
    # the endpoint has its new name: node1's daemon answers it as its own
    wait_until(lambda: known("node1", "node1-alias"), 10, "node1 took its new name")
    r = run(["getent", "hosts", "node1-alias"], check=True)
    assert nodes()["node1"]["ipv4"] in r.stdout or nodes()["node1"]["ipv6"] in r.stdout


def test_stop_says_goodbye_and_the_socket_starts_it_again():
    assert known("node2", "node1")
    before = stats("node2")["fabric_goodbyes_rx"]
    systemctl("stop", "ibresd.service")
    assert prop("ibresd.service", "ActiveState") == "inactive"
    wait_until(lambda: not known("node2", "node1"), 5, "node2 forgot node1")
    assert stats("node2")["fabric_goodbyes_rx"] == before + 1
    # the socket stayed: the next query starts the daemon again
    assert prop("ibresd.socket", "ActiveState") == "active"
    r = run(["getent", "hosts", "node2"], timeout=30,
            env=dict(os.environ, IBRES_DIRECTORY="off"))
    assert r.returncode == 0
    assert prop("ibresd.service", "ActiveState") == "active"


def timed(cmd, env=None, timeout=30):
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return r, time.monotonic() - start


def test_our_clients_bound_their_wait_where_librdmacm_blocks():
    """rdma-core's ibacm on a RoCE-only machine, socket-activated, takes the
    connection and exits without answering ("no devices"; see
    ../shared/reference/kernel-rdma-vm.md): what is left on ibacm's socket is
    a peer that accepted and never answers. Such a peer stands here for it
    (the real ibacm's exit races the client's send: the client is then killed
    by SIGPIPE instead). librdmacm's rdma_getaddrinfo() waits in recv() for
    as long as it is let; our clients, at the same socket, give up within
    their bound."""
    systemctl("stop", "ibresd-acm.socket")
    if os.path.lexists("/run/ibacm.sock"):  # the socket unit's link may stay
        os.unlink("/run/ibacm.sock")
    silent = subprocess.Popen(["python3", "-c", SILENT, "/run/ibacm.sock"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert silent.stdout.readline().strip() == "listening"
        r, took = timed(["timeout", "8", "strace", "-f", "-o", "/tmp/rdma_client.strace",
                         "rdma_client", "-s", "node2", "-p", "7499"])
        assert r.returncode == 124, (r.returncode, r.stdout, r.stderr)  # killed by timeout(1)
        trace = open("/tmp/rdma_client.strace").read()
        assert re.search(r'connect\(\d+, \{sa_family=AF_UNIX, sun_path="/run/ibacm.sock"', trace)
        # its last call: the recv() after sending ibacm's RESOLVE, interrupted
        # by timeout(1)'s SIGTERM, never returned
        last = [l for l in trace.splitlines() if "recv" in l][-1]
        assert "<unfinished ...>" in last or "= ? ERESTARTSYS" in last, trace[-2000:]
        assert "killed by SIGTERM" in trace.splitlines()[-1], trace[-2000:]
        # ours, at the same socket
        dead = dict(os.environ, IBRES_SOCKET="/run/ibacm.sock")
        r, took = timed(["ibresctl", "-t", "2000", "stats"], env=dead)
        assert r.returncode == 3 and took < 6, (r.returncode, took, r.stderr)
        r, took = timed(["getent", "hosts", "node2"], env=dead)
        assert took < 15, took
    finally:
        silent.kill()
        silent.wait()
        if os.path.lexists("/run/ibacm.sock"):
            os.unlink("/run/ibacm.sock")
        systemctl("start", "ibresd-acm.socket", check=False)


SILENT = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
print("listening", flush=True)
conns = []
while True:
    c, _ = s.accept()
    conns.append(c)  # kept open, never read, never answered
"""
