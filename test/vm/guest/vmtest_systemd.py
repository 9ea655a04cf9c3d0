"""In the VM booted with systemd as PID 1 (--systemd --daemons, 2 nodes):
nss-ib installed from its Debian packages with dpkg (test/vm/run --debs; by
`make install` where the host cannot build them), node1's ibresd the system's
daemon behind ibresd.socket, ibresd-acm.socket and ibresd-kernel.socket,
node2's a plain process."""
import os
import re
import socket
import struct
import subprocess
import time

import pytest

from vmlib import (LS_GROUP_BIT, NETLINK_RDMA, known, nodes, rdma_netlink_sockets, run,
                   socket_inodes, stats, wait_until)

ENV = dict(os.environ, SYSTEMD_PAGER="", SYSTEMD_COLORS="0")
CONF = "/etc/ibres/ibresd.conf"


def systemctl(*args, check=True):
    return run(["systemctl", "--no-pager"] + list(args), env=ENV, check=check, timeout=60)


def prop(unit, name):
    return systemctl("show", "-p", name, "--value", unit).stdout.strip()


def main_pid():
    return int(prop("ibresd.service", "MainPID"))


def stop_watched(*units):
    """systemctl stop @units with systemd logging at debug level meanwhile
    (it then names the socket whose traffic starts the service again); the
    time it began, for who_started()."""
    since = time.strftime("%Y-%m-%d %H:%M:%S")
    systemctl("log-level", "debug")
    try:
        systemctl("stop", *units)
    finally:
        systemctl("log-level", "info")
    return since


def who_started(since):
    """What systemd logged about ibresd's units since @since (at debug level
    it names the socket whose traffic started the service), and who holds a
    connection to a socket in /run/ibres: for a failure's message."""
    log = run(["journalctl", "--no-pager", "-o", "short-monotonic", "--since", since],
              env=ENV).stdout
    lines = [l for l in log.splitlines()
             if "ibresd" in l and re.search(r"Incoming traffic|Trigger|Start|Stop|Deactiv", l)]
    ss = run(["ss", "-xpn"], env=ENV).stdout
    return "\n".join(lines[-40:] + [l for l in ss.splitlines() if "ibres" in l or "ibacm" in l])


PACKAGES = ("ibresd", "libnss-ib", "libibres1", "libibres-dev", "ibres-tools")
MULTIARCH = "x86_64-linux-gnu"


@pytest.mark.skipif(os.environ.get("VM_DEBS") != "1", reason="installed by make install")
def test_installed_from_the_debian_packages_the_debian_way():
    for pkg in PACKAGES:
        r = run(["dpkg-query", "-W", "-f", "${Status} ${Version}", pkg], check=True)
        assert r.stdout.startswith("install ok installed "), (pkg, r.stdout)
    # the files are the packages': programs, NSS module, units
    owners = {"/usr/sbin/ibresd": "ibresd", "/usr/bin/ibresctl": "ibres-tools",
              "/usr/sbin/ibres-nsswitch": "libnss-ib",
              "/usr/lib/%s/libnss_ib.so.2" % MULTIARCH: "libnss-ib",
              "/lib/systemd/system/ibresd.service": "ibresd",
              "/lib/systemd/system/ibresd-kernel.socket": "ibresd"}
    for path, pkg in owners.items():
        r = run(["dpkg", "-S", path], timeout=180, check=True)  # reads every package's file list: slow under TCG
        assert r.stdout.split(":")[0] == pkg, r.stdout
    assert not os.path.exists("/usr/local/sbin/ibresd")
    for unit in ("ibresd.service", "ibresd.socket", "ibresd-kernel.socket"):
        assert prop(unit, "FragmentPath") == "/lib/systemd/system/" + unit
    # dh_installsystemd enabled the service and, through its Also=, both of
    # its sockets (the harness enabled only ibresd-acm.socket, the
    # administrator's choice); nothing was started at install (systemd was
    # not running yet, as in an image build), the boot started the sockets
    assert systemctl("is-enabled", "ibresd.service").stdout.strip() == "enabled"
    for unit in ("ibresd.socket", "ibresd-kernel.socket"):
        assert systemctl("is-enabled", unit).stdout.strip() == "enabled", unit
    log = open("/run/nss-ib-vm/install.log").read()
    assert "Created symlink" in log and "ibresd.service" in log, log
    assert "/etc/nsswitch.conf was not changed" in log, log  # libnss-ib's postinst says how
    # the daemon systemd runs is the packaged one
    r = run(["getent", "hosts", "node2"], timeout=30, env=dict(os.environ, IBRES_DIRECTORY="off"))
    assert r.returncode == 0, r.stderr
    wait_until(lambda: main_pid() > 0, 10, "ibresd.service runs")
    assert os.readlink("/proc/%d/exe" % main_pid()) == "/usr/sbin/ibresd"


def test_first_query_activates_the_daemon_and_it_reports_ready():
    assert prop("ibresd.socket", "ActiveState") == "active"
    assert prop("ibresd-acm.socket", "ActiveState") == "active"
    assert {"ibresd.socket", "ibresd-acm.socket"} <= set(
        prop("ibresd.service", "TriggeredBy").split())
    # a lookup during the boot may have started it already: stop it, the
    # client sockets stay and wait for the next query (the kernel's path
    # query socket too would start it again at once: stopped for this test
    # and the next ones)
    since = stop_watched("ibresd-kernel.socket", "ibresd.service")
    wait_until(lambda: prop("ibresd.service", "ActiveState") == "inactive", 10,
               lambda: "ibresd.service stopped\n" + who_started(since))
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
    # and it publishes its host directory there (memfd_create, the seals and
    # SCM_RIGHTS under the unit's system call filter): the NSS module maps it
    r = run(["ibresctl", "stats"], check=True)
    assert re.search(r"^directory_bytes\s+[1-9]", r.stdout, re.M), r.stdout
    assert re.search(r"^directory_failures\s+0$", r.stdout, re.M), r.stdout
    fds = [os.readlink("/proc/%d/fd/%s" % (pid, n)) for n in os.listdir("/proc/%d/fd" % pid)]
    assert any(t.startswith("/memfd:ibres-hosts.db") for t in fds), fds


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
    since = stop_watched("ibresd.service")
    state = prop("ibresd.service", "ActiveState")
    assert state == "inactive", (state, who_started(since))
    wait_until(lambda: not known("node2", "node1"), 5, "node2 forgot node1")
    assert stats("node2")["fabric_goodbyes_rx"] == before + 1
    # the socket stayed: the next query starts the daemon again
    assert prop("ibresd.socket", "ActiveState") == "active"
    r = run(["getent", "hosts", "node2"], timeout=30,
            env=dict(os.environ, IBRES_DIRECTORY="off"))
    assert r.returncode == 0
    assert prop("ibresd.service", "ActiveState") == "active"


LS_NLA_TYPE_DGID = 4
RDMA_NL_LS = 4
RDMA_NL_LS_OP_RESOLVE = 0
NLM_F_REQUEST = 1


def ls_resolve(device, port, dgid, seq):
    """An RDMA_NL_LS RESOLVE message laid out as the kernel sends it
    (rdma/rdma_netlink.h): struct rdma_ls_resolve_header (device name, port,
    path use ALL), aligned, then a DGID attribute."""
    body = device.encode().ljust(64, b"\0") + bytes([port, 0]) + b"\0\0"
    body += struct.pack("=HH", 4 + 16, LS_NLA_TYPE_DGID) + dgid
    return struct.pack("=IHHII", 16 + len(body), RDMA_NL_LS << 10 | RDMA_NL_LS_OP_RESOLVE,
                       NLM_F_REQUEST, seq, 0) + body


def kernel_path_sockets(pid):
    """Inodes of @pid's NETLINK_RDMA sockets in the local-service group."""
    mine = socket_inodes(pid)
    return [inode for groups, inode in rdma_netlink_sockets()
            if groups & LS_GROUP_BIT and inode in mine]


def test_a_kernel_path_query_starts_the_daemon_through_ibresd_kernel_socket():
    """ListenNetlink=rdma 4: systemd holds the local-service group's socket
    while no daemon runs; a query that arrives starts ibresd.service, which
    takes that socket and reads the query waiting in it. On an InfiniBand
    port the sender is the kernel (RoCE ports send no path queries); here a
    root process sends to the same group. ibresd takes queries from the
    kernel only (netlink port 0), so it drops this one and counts it in
    kpath_malformed: the count shows the query queued before the daemon
    ran reached the daemon systemd started for it."""
    systemctl("start", "ibresd-kernel.socket")
    assert prop("ibresd-kernel.socket", "ActiveState") == "active"
    held = kernel_path_sockets(1)
    assert len(held) == 1, rdma_netlink_sockets()
    # stopped, and staying stopped: any host lookup in the guest (the NSS
    # module) connects to ibresd.socket and starts the daemon again, so the
    # client socket is stopped too while the kernel's socket alone can start
    # it; ibresd.service wants ibresd.socket, which starts with it again
    since = stop_watched("ibresd.socket", "ibresd.service")
    wait_until(lambda: prop("ibresd.service", "ActiveState") == "inactive", 10,
               lambda: "ibresd.service stopped (it is %s/%s)\n%s" % (
                   prop("ibresd.service", "ActiveState"), prop("ibresd.service", "SubState"),
                   who_started(since)))
    time.sleep(1)
    assert prop("ibresd.service", "ActiveState") == "inactive"
    # systemd says which socket had the traffic at debug level
    systemctl("log-level", "debug")
    since = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        dgid = socket.inet_pton(socket.AF_INET6, nodes()["node2"]["gid"])
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_RDMA) as s:
            s.bind((0, 0))
            s.sendto(ls_resolve("rxe1", 1, dgid, 7), (0, LS_GROUP_BIT))
        wait_until(lambda: prop("ibresd.service", "ActiveState") == "active", 30,
                   "the query started ibresd.service")
    finally:
        systemctl("log-level", "info")
        systemctl("start", "ibresd.socket", check=False)
    assert prop("ibresd.socket", "ActiveState") == "active"
    r = run(["journalctl", "--no-pager", "-o", "cat", "--since", since], env=ENV, check=True)
    # the kernel socket's traffic came first: it started the service (a
    # client of ibresd.socket may arrive while the daemon starts)
    log = r.stdout
    kernel = log.find("ibresd-kernel.socket: Incoming traffic")
    assert kernel >= 0, log[-3000:]
    for other in ("ibresd.socket: Incoming traffic", "ibresd-acm.socket: Incoming traffic"):
        assert log.find(other) < 0 or log.find(other) > kernel, log[-3000:]
    pid = main_pid()
    # the daemon serves systemd's socket, and binds no second one
    assert kernel_path_sockets(pid) == held
    s = stats("node1")
    assert s["kpath_malformed"] == 1 and s["kpath_requests"] == 0, s
    r = run(["journalctl", "--no-pager", "-u", "ibresd.service", "-o", "cat", "--since", since],
            env=ENV, check=True)
    assert "listening on NETLINK_RDMA group 3 (socket from systemd)" in r.stdout, r.stdout
    # it keeps CAP_NET_ADMIN for as long as it serves the kernel
    with open("/proc/%d/status" % pid) as f:
        eff = int(re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)
    assert eff & (1 << 12), hex(eff)


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
