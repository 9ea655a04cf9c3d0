"""In the VM (--daemons --rails 2, 3 nodes): two rails per node on soft-RoCE.
Node K's endpoints rxeK (198.18.0.K) and rxeKr1 (198.19.1.K) are one host
nodeK with the aliases nodeK-ib0 and nodeK-ib1, on two bridges that share
nothing; every daemon runs a UD QP on each of its devices. Rail to rail by
name and address, no path across rails, NSS lists both rails, and a rail
whose port leaves ACTIVE."""
import csv
import ipaddress
import itertools
import os
import socket
import struct

import pytest

from vmlib import BUILD, acme, ctl, known, nodes, run, stats, wait_until

NAMES = ["node1", "node2", "node3"]
ST_SUCCESS, ST_ENODATA, ST_ENOTCONN, ST_EDESTADDR = 0, 3, 5, 9  # include/ibres_proto.h


def rails():
    """name -> [row of rail 0, row of rail 1] from $VM_RAILS_TSV."""
    out = {}
    with open(os.environ["VM_RAILS_TSV"], newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            out.setdefault(r["name"], []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: int(r["rail"]))
    return out


def rail(name, r):
    return rails()[name][r]


# --- a raw RESOLVE (ibacm's client protocol, version 1), for the exact status
# (ib_acme turns EDESTADDR and ESRCADDR alike into EADDRNOTAVAIL) -------------

FLAG_SOURCE, FLAG_DEST = 1, 2
TYPE_NAME, TYPE_IP, TYPE_IP6 = 1, 2, 3
PATH = struct.Struct(">Q16s16sHHIBBHHBBBB6x")


def _entry(flags, value):
    try:
        a = ipaddress.ip_address(value)
        etype, info = (TYPE_IP if a.version == 4 else TYPE_IP6), a.packed
    except ValueError:
        etype, info = TYPE_NAME, value.encode() + b"\0"
    return struct.pack("<IHH", flags, etype, 0) + info.ljust(64, b"\0")[:64]


def gid_str(raw):
    """A GID as $VM_RAILS_TSV writes it (an IPv4-mapped one as ::ffff:a.b.c.d,
    whatever this python's str() does)."""
    a = ipaddress.IPv6Address(raw)
    return "::ffff:%s" % a.ipv4_mapped if a.ipv4_mapped else str(a)


def resolve(node, dest, src=None):
    """RESOLVE @dest (from @src) at @node's daemon: (status, path dict or None)."""
    body = (_entry(FLAG_SOURCE, src) if src is not None else b"") + _entry(FLAG_DEST, dest)
    msg = struct.pack("<BBB3sHQ", 1, 0x01, 0, b"\0\0\0", 16 + len(body), 7) + body
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(nodes()[node]["socket"])
        s.sendall(msg)
        buf = b""
        while len(buf) < 16 or len(buf) < struct.unpack_from("<H", buf, 6)[0]:
            chunk = s.recv(4096)
            assert chunk, "the daemon closed the connection"
            buf += chunk
    finally:
        s.close()
    status = buf[2]
    if status or len(buf) < 16 + 72:
        return status, None
    (_, dgid, sgid, dlid, slid, _, _, _, pkey, _, _, _, _, _) = PATH.unpack_from(buf, 16 + 8)
    return status, dict(dgid=gid_str(dgid), sgid=gid_str(sgid), dlid=dlid, slid=slid, pkey=pkey)


def host_status(node, key):
    """`ibresctl --cache-only host KEY` at @node: (exit status, output)."""
    r = ctl(node, "--cache-only", "host", key)
    return r.returncode, r.stdout + r.stderr


def every_endpoint_known():
    return all(known(a, rail(b, r)["alias"]) for a, b in itertools.permutations(NAMES, 2)
               for r in (0, 1))


@pytest.fixture(scope="module", autouse=True)
def settled():
    """Every node has heard both rails of every other one."""
    assert sorted(nodes()) == NAMES and sorted(rails()) == NAMES
    wait_until(every_endpoint_known, 30, "every node knows both rails of every other")
    for n in NAMES:
        wait_until(lambda: stats(n)["uptime_s"] >= 5, 10, "%s is past its start-up" % n)


def test_two_ud_qps_per_daemon_one_per_rail():
    r = run(["rdma", "res", "show", "qp"], check=True)
    for rows in rails().values():
        for rl in rows:
            assert any(f"link {rl['device']}/1 " in line and "type UD" in line and
                       "comm ibresd" in line for line in r.stdout.splitlines()), r.stdout
    for n in NAMES:
        out = ctl(n, "endpoints").stdout
        for rl in rails()[n]:
            assert f"endpoint {rl['device']}: {n}" in out and rl["alias"] in out, out


@pytest.mark.parametrize("src,dst", list(itertools.permutations(NAMES, 2)))
def test_every_pair_rail_to_rail_by_name_and_address(src, dst):
    for r in (0, 1):
        s, d = rail(src, r), rail(dst, r)
        what = "%s rail %d -> %s" % (src, r, dst)
        # the host name from rail R's alias: the destination's rail-R endpoint
        status, f, out = acme(src, "n", s["alias"], dst)
        assert status == 0 and "return status 0x0" in out, (what, out)
        assert f["sgid"] == s["gid"] and f["dgid"] == d["gid"], (what, out)
        assert f["slid"] == "0" and f["dlid"] == "0" and f["hop limit"] == "64", (what, out)
        assert f["pkey"] == "0xffff", (what, out)
        # the rail's own name too
        status, f, out = acme(src, "n", s["alias"], d["alias"])
        assert status == 0 and (f["sgid"], f["dgid"]) == (s["gid"], d["gid"]), (what, out)
        # by IPv4 and IPv6 (what librdmacm asks): resolved; on RoCE without a
        # path (rdma_cm builds it), so only the status counts
        for fam in ("ipv4", "ipv6"):
            status, f, out = acme(src, "i", s[fam], d[fam])
            assert status == 0 and "return status 0x0" in out, (what, fam, out)
        # the raw answer: that rail's GIDs
        st, path = resolve(src, dst, s["alias"])
        assert st == ST_SUCCESS and (path["sgid"], path["dgid"]) == (s["gid"], d["gid"]), \
            (what, st, path)


@pytest.mark.parametrize("src,dst", list(itertools.permutations(NAMES, 2)))
def test_no_path_across_rails(src, dst):
    """From one rail's address (or alias) for the other rail's: EDESTADDR."""
    for r, q in ((0, 1), (1, 0)):
        s, d = rail(src, r), rail(dst, q)
        for key in ("ipv4", "ipv6", "alias"):
            st, path = resolve(src, d[key], s[key])
            assert st == ST_EDESTADDR and path is None, \
                "%s rail %d -> %s of %s rail %d: status %d, path %s" % (
                    src, r, d[key], dst, q, st, path)
        # ib_acme shows it as EADDRNOTAVAIL, never a path
        status, f, out = acme(src, "i", s["ipv4"], d["ipv4"])
        assert status != 0 and "Cannot assign requested address" in out, out


@pytest.mark.parametrize("src,dst", list(itertools.permutations(NAMES, 2)))
def test_by_name_without_source_rail0(src, dst):
    """No source: the first rail up in configuration order, rail 0."""
    st, path = resolve(src, dst)
    assert st == ST_SUCCESS and (path["sgid"], path["dgid"]) == (
        rail(src, 0)["gid"], rail(dst, 0)["gid"]), (st, path)


def getent(node, *args):
    env = dict(os.environ, IBRES_SOCKET=nodes()[node]["socket"], LD_LIBRARY_PATH=BUILD)
    return run(["getent", "-s", "ib"] + list(args), env=env, timeout=30)


@pytest.mark.parametrize("src,dst", list(itertools.product(NAMES, repeat=2)))
def test_nss_lists_both_rails_rail0_first(src, dst):
    """getent -s ib hosts nodeD (IPv6) and ahostsv4 nodeD: both rails'
    addresses, rail 0 first, under the host's name; a rail's alias gives its
    own address alone."""
    r = getent(src, "hosts", dst)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.strip()]
    assert [row[0] for row in rows] == [rl["ipv6"] for rl in rails()[dst]], r.stdout
    assert all(row[1] == dst for row in rows), r.stdout
    r = getent(src, "ahostsv4", dst)
    assert r.returncode == 0, r.stdout + r.stderr
    addrs = []
    for line in r.stdout.splitlines():
        if line.split() and line.split()[0] not in addrs:
            addrs.append(line.split()[0])
    assert addrs == [rl["ipv4"] for rl in rails()[dst]], r.stdout
    for rl in rails()[dst]:
        r = getent(src, "ahostsv4", rl["alias"])
        assert r.returncode == 0, r.stdout + r.stderr
        assert {line.split()[0] for line in r.stdout.splitlines() if line.strip()} == \
            {rl["ipv4"]}, r.stdout


# --- a rail taken down -------------------------------------------------------------

def port_state(device):
    out = run(["rdma", "link", "show", device + "/1"], check=True).stdout
    return out.split(" state ")[1].split()[0], out


@pytest.fixture
def node3_rail1_down():
    """node3's rail 1 loses its link: its veth peer on vmbr1 goes down, so
    n3r1 loses its carrier and rxe3r1's port leaves ACTIVE. Up again after
    the test whatever happened."""
    rl = rail("node3", 1)
    assert port_state(rl["device"])[0] == "ACTIVE"
    before = dict(log_size=os.path.getsize("/run/nss-ib-vm/node3.log"),
                  goodbyes={n: stats(n)["fabric_goodbyes_rx"] for n in ("node1", "node2")})
    run(["ip", "link", "set", rl["peer"], "down"], check=True)
    try:
        wait_until(lambda: port_state(rl["device"])[0] != "ACTIVE", 10,
                   lambda: "rxe3r1 left ACTIVE: %s" % port_state(rl["device"])[1])
        yield before
    finally:
        run(["ip", "link", "set", rl["peer"], "up"], check=True)
        wait_until(lambda: port_state(rl["device"])[0] == "ACTIVE", 10,
                   lambda: "rxe3r1 ACTIVE again: %s" % port_state(rl["device"])[1])


def new_log(node, since):
    with open("/run/nss-ib-vm/%s.log" % node) as f:
        f.seek(since)
        return f.read()


def test_rail1_port_down_rail0_still_resolves(node3_rail1_down):
    """The kernel's side and rail 0: with rxe3r1 DOWN, every peer still
    resolves node3 on rail 0, by name and address; back up, rail 1 resolves
    again rail to rail."""
    assert port_state("rxe3r1")[0] == "DOWN", port_state("rxe3r1")[1]
    for n in ("node1", "node2"):
        s, d = rail(n, 0), rail("node3", 0)
        status, f, out = acme(n, "n", s["alias"], "node3")
        assert status == 0 and (f["sgid"], f["dgid"]) == (s["gid"], d["gid"]), out
        status, f, out = acme(n, "i", s["ipv4"], d["ipv4"])
        assert status == 0 and "return status 0x0" in out, out
        assert known(n, d["alias"])


def test_rail1_up_again_resolves():
    """After the fixture above put it back: rail 1 to rail 1 with node3."""
    for n in ("node1", "node2"):
        s, d = rail(n, 1), rail("node3", 1)
        wait_until(lambda: acme(n, "n", s["alias"], "node3")[0] == 0, 20,
                   "%s resolves node3 on rail 1 again" % n)
        status, f, out = acme(n, "n", s["alias"], "node3")
        assert (f["sgid"], f["dgid"]) == (s["gid"], d["gid"]), out


def test_rail_down_forgotten_by_peers_then_known_again(node3_rail1_down):
    """node3's rail 1 down: node3 tells its peers on rail 0, they drop its
    rail-1 endpoint (node3-ib1 and its address: ENODATA) and keep rail 0;
    node3's own source on rail 1 gets ENOTCONN. Back up, announced, known
    again."""
    log_since, before = node3_rail1_down["log_size"], node3_rail1_down["goodbyes"]
    gone = rail("node3", 1)
    for n in ("node1", "node2"):
        wait_until(lambda: host_status(n, gone["alias"])[0] == 1, 10,
                   lambda: "%s dropped node3-ib1 (node3's log since: %r)" % (
                       n, new_log("node3", log_since)))
        code, out = host_status(n, gone["alias"])
        assert "not found" in out, out
        for key in (gone["ipv4"], gone["ipv6"]):
            assert host_status(n, key)[0] == 1, key
        assert known(n, rail("node3", 0)["alias"])
        assert stats(n)["fabric_goodbyes_rx"] > before[n]
        st, path = resolve(n, rail("node3", 0)["alias"], rail(n, 0)["alias"])
        assert st == ST_SUCCESS, st
    st, path = resolve("node3", "node1", gone["ipv4"])
    assert st == ST_ENOTCONN and path is None, (st, path)
    st, path = resolve("node3", "node1")
    assert st == ST_SUCCESS and path["sgid"] == rail("node3", 0)["gid"], (st, path)
    # back up (the fixture's end would do it; here to see it announced)
    run(["ip", "link", "set", gone["peer"], "up"], check=True)
    wait_until(lambda: port_state(gone["device"])[0] == "ACTIVE", 10, "rxe3r1 ACTIVE again")
    for n in ("node1", "node2"):
        wait_until(lambda: known(n, gone["alias"]), 15, "%s knows node3-ib1 again" % n)
