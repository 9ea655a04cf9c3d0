"""Helpers for the tests that run inside the test VM (test/vm/run --daemons):
the nodes of $VM_NODES, their daemons, the rxe devices' counters."""
import csv
import os
import re
import signal
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("VM_BUILD") or os.path.join(ROOT, "build")  # test/vm/run's
IBRESD = os.path.join(BUILD, "ibresd")
IBRESCTL = os.path.join(BUILD, "ibresctl")
VMDIR = "/run/nss-ib-vm"
QKEY = 0xC9425253  # IBRES_QKEY, resolverd/ib/sa_mad.h
NETLINK_RDMA = 20
LS_GROUP_BIT = 1 << (3 - 1)  # RDMA_NL_GROUP_LS as a group mask


def nodes():
    """name -> row of $VM_NODES (name, ipv4, ipv6, device, gid, socket)."""
    with open(os.environ["VM_NODES"], newline="") as f:
        return {r["name"]: r for r in csv.DictReader(f, delimiter="\t")}


def run(cmd, timeout=30, check=False, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check:
        assert r.returncode == 0, "%s: %d\n%s%s" % (cmd, r.returncode, r.stdout, r.stderr)
    return r


def ctl(node, *args, timeout=30):
    """ibresctl against @node's daemon."""
    return run([IBRESCTL, "-s", nodes()[node]["socket"]] + list(args), timeout=timeout)


def stats(node):
    r = ctl(node, "stats")
    assert r.returncode == 0, r.stderr
    out = {}
    for line in r.stdout.splitlines():
        name, _, value = line.partition(" ")
        out[name] = int(value.strip())
    return out


def known(node, key):
    """Does @node's daemon hold @key in its cache (no fabric query)?"""
    return ctl(node, "--cache-only", "host", key).returncode == 0


def hw_counters(device):
    d = "/sys/class/infiniband/%s/ports/1/hw_counters" % device
    return {f: int(open(os.path.join(d, f)).read()) for f in os.listdir(d)}


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError("after %.0fs: %s" % (timeout, what() if callable(what) else what))


def acme(node, fmt, src, dst):
    """ib_acme against @node's daemon: (status, {field: value})."""
    r = run(["ib_acme", "-S", nodes()[node]["socket"], "-f", fmt, "-s", src, "-d", dst])
    fields = {}
    for line in r.stdout.splitlines():
        k, sep, v = line.strip().partition(": ")
        if sep:
            fields[k] = v
    return r.returncode, fields, r.stdout + r.stderr


def daemon_pid(node):
    with open("%s/%s.pid" % (VMDIR, node)) as f:
        return int(f.read())


def stop_daemon(node, sig=signal.SIGTERM):
    pid = daemon_pid(node)
    os.kill(pid, sig)

    def gone():
        # not always our child (test/vm/guest-init may have started it): gone
        # from /proc, or a zombie
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split()[2] == "Z"
        except (FileNotFoundError, ProcessLookupError):
            return True

    wait_until(gone, 10, "%s exited" % node)


def start_daemon(node, extra_resolve=(), argv_prefix=(), drop=()):
    """Start @node's daemon again from its config (plus [resolve] lines, less
    the lines setting the keys in @drop), through @argv_prefix (a program
    that ends by exec'ing the rest) if given."""
    conf = "%s/%s.conf" % (VMDIR, node)
    if extra_resolve or drop:
        text = open(conf).read()
        for key in drop:
            text = re.sub(r"(?m)^%s = .*\n" % re.escape(key), "", text)
        for line in extra_resolve:
            key = line.split("=")[0].strip()
            text, n = re.subn(r"(?m)^%s = .*$" % re.escape(key), line, text)
            if not n:
                text = text.replace("[resolve]\n", "[resolve]\n" + line + "\n", 1)
        conf = "%s/%s-extra.conf" % (VMDIR, node)
        with open(conf, "w") as f:
            f.write(text)
    sock = nodes()[node]["socket"]
    if os.path.exists(sock):
        os.unlink(sock)
    log = open("%s/%s.log" % (VMDIR, node), "a")
    proc = subprocess.Popen(list(argv_prefix) + [IBRESD, "--foreground", "--config", conf],
                            stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    with open("%s/%s.pid" % (VMDIR, node), "w") as f:
        f.write(str(proc.pid))
    try:
        wait_until(lambda: ctl(node, "stats").returncode == 0, 10, "%s's daemon answers" % node)
    except AssertionError:
        raise AssertionError("%s's daemon did not start:\n%s" % (
            node, open("%s/%s.log" % (VMDIR, node)).read()[-2000:]))
    return proc


def socket_inodes(pid):
    """The inodes of the sockets process @pid holds."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            m = re.match(r"socket:\[(\d+)\]$", os.readlink(os.path.join(fd_dir, fd)))
        except OSError:
            continue
        if m:
            inodes.add(int(m.group(1)))
    return inodes


def rdma_netlink_sockets():
    """(groups, inode) of every NETLINK_RDMA socket, from /proc/net/netlink."""
    rows = []
    with open("/proc/net/netlink") as f:
        header = f.readline().split()
        for line in f:
            row = dict(zip(header, line.split()))
            if int(row["Eth"]) == NETLINK_RDMA:
                rows.append((int(row["Groups"], 16), int(row["Inode"])))
    return rows
