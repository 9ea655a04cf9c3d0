"""In the VM (--daemons, 3 nodes): real rdma_cm programs (rdmacm-utils)
connect to another node by its host name. glibc resolves the name through
the guest's nsswitch.conf (ib, node1's daemon); librdmacm's
rdma_getaddrinfo() then asks node1's daemon on ibacm's socket, whose answer
gives an unbound client its source address."""
import subprocess
import time

from vmlib import nodes, run, stats, wait_until

PORT = [7470]


def port():
    PORT[0] += 1
    return str(PORT[0])


def serve(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1)  # rdmacm-utils have no "listening" signal; a bound wait
    return proc


def connect(cmd, tries=5):
    """The client, again (a bounded number of times) while nobody listens
    yet: under TCG on a loaded host the server's start can take longer than
    serve()'s second, and the peer then rejects (no listener on the port)."""
    for _ in range(tries):
        r = run(cmd, timeout=30)
        text = r.stdout + r.stderr
        if r.returncode == 0 or not ("REJECTED" in text or "refused" in text):
            return r
        time.sleep(1)
    return r


def finish(proc):
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return proc.returncode, out


def test_getent_uses_the_guests_nsswitch():
    r = run(["getent", "hosts", "node2"], check=True)
    assert r.stdout.split()[0] in (nodes()["node2"]["ipv4"], nodes()["node2"]["ipv6"])


def test_ucmatose_connects_by_name_unbound():
    """No -b: the source address comes from the daemon's answer."""
    before = stats("node1")["resolve"]
    p = port()
    # the server binds the address getaddrinfo() puts first for the client
    srv = serve(["ucmatose", "-b", nodes()["node3"]["ipv6"], "-p", p, "-C", "5"])
    r = connect(["ucmatose", "-s", "node3", "-p", p, "-C", "5"])
    status, out = finish(srv)
    assert r.returncode == 0 and "data transfers complete" in r.stdout, r.stdout + r.stderr
    assert status == 0 and "data transfers complete" in out, out
    # rdma_getaddrinfo() asked node1's daemon (ibacm's RESOLVE)
    assert stats("node1")["resolve"] > before


def test_ucmatose_connects_by_name_bound():
    p = port()
    srv = serve(["ucmatose", "-b", nodes()["node2"]["ipv6"], "-p", p, "-C", "5"])
    r = connect(["ucmatose", "-s", "node2", "-b", nodes()["node1"]["ipv6"], "-p", p, "-C", "5"])
    status, out = finish(srv)
    assert r.returncode == 0 and "data transfers complete" in r.stdout, r.stdout + r.stderr
    assert status == 0, out


def test_rdma_client_and_server_by_name():
    p = port()
    srv = serve(["rdma_server", "-s", "node3", "-p", p])
    r = connect(["rdma_client", "-s", "node3", "-p", p])
    status, out = finish(srv)
    assert r.returncode == 0 and "rdma_client: end 0" in r.stdout, r.stdout + r.stderr
    assert status == 0 and "rdma_server: end 0" in out, out
