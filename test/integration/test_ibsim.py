"""ibresd on a simulated InfiniBand fabric with a real Subnet Manager (ibsim +
OpenSM, test/fabric/ibsim): port discovery, SA PathRecords (route protocol
sa, QUERY_SA), IB multicast groups, no SM, an unplugged destination, and
the ip transport carrying names while the SA supplies the paths.

The simulator takes at most 9 clients besides OpenSM: at most 8 daemons per
fabric, and saquery runs one at a time."""
import os
import socket
import struct
import time

import pytest

from conftest import needs_root
from fabric_util import (ST_ENODATA, Client, acme, cache_list, host, path_fields, resolve,
                         stats, wait_until)
from ibsim_util import SimDaemon, SimFabric, group_mgid, missing, sim_config

MISSING = missing()
pytestmark = [pytest.mark.skipif(bool(MISSING), reason="no simulated fabric here: missing " +
                                 (MISSING or "")), needs_root]

GROUP = ("239.255.73.1", 2048, "10")
ST_ENOTCONN = 5


def hosts_file(path, fabric, ks):
    """A static hosts file naming the simulated hosts @ks by GID and LID."""
    with open(path, "w") as f:
        for k in ks:
            h = fabric.hcas[k]
            # no SM yet, no LID yet: any; paths are asked by GID
            f.write("%s %d node%d\n" % (h["gid"], h["lid"] or 1000 + k, k))
    return path


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    f = SimFabric(tmp_path_factory.mktemp("ibsim"), 4).up()
    yield f
    f.down()


@pytest.fixture(scope="module")
def nodes(fabric, tmp_path_factory):
    """Daemons on hca001..hca003 with route protocol sa, one group each and the
    others in their static hosts file."""
    base = tmp_path_factory.mktemp("nodes")
    hf = hosts_file(str(base / "hosts"), fabric, [1, 2, 3, 4])
    ds = {}
    for k in (1, 2, 3):
        d = base / ("hca%d" % k)
        ds[k] = SimDaemon(fabric, "hca%03d" % k, d,
                          sim_config(k, str(d / "ibresd.sock"), hosts_file=hf,
                                     groups=[GROUP])).start()
    yield ds
    for d in ds.values():
        d.kill()


def test_port_discovery(fabric, nodes):
    for k, d in nodes.items():
        ep = d.endpoint()
        assert ep["gids"] == [fabric.hcas[k]["gid"]], d.logtext()
        assert ep["lid"] == fabric.hcas[k]["lid"]
        assert ep["pkey"] == 0xffff
        assert ep["mtu_bytes"] == 2048 and ep["rate_gbps"] == "10"
        assert "ibsim0 port 1: ACTIVE, LID %d, SM LID 1" % fabric.hcas[k]["lid"] in d.logtext()


def test_reload_keeps_port_data(fabric, nodes):
    import signal
    d = nodes[2]
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded" in d.logtext(), 10, what="reload")
    ep = d.endpoint()
    assert ep["gids"] == [fabric.hcas[2]["gid"]] and ep["lid"] == fabric.hcas[2]["lid"]
    status, rec = host(d.socket, "node2")
    assert status == 0 and rec["lid"] == fabric.hcas[2]["lid"]


def test_relabel_keeps_port_data(fabric, nodes):
    """A reload that only relabels an endpoint with a device keeps what its port
    gave it (GID, LID): the SA port stays bound to the endpoint at its place, as
    the fabric's transport does, not to its label."""
    import signal
    d = nodes[3]
    text = open(d.config).read()
    relabelled = text.replace("[endpoint ib0]", "[endpoint rail0]", 1)
    assert relabelled != text
    with open(d.config, "w") as f:
        f.write(relabelled)
    reloads = d.logtext().count("configuration reloaded")
    try:
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: d.logtext().count("configuration reloaded") > reloads, 10,
                   what="reload")
        ep = d.endpoint()
        assert ep["label"] == "rail0", ep
        assert ep["gids"] == [fabric.hcas[3]["gid"]] and ep["lid"] == fabric.hcas[3]["lid"], ep
        status, rec = host(d.socket, "node3")
        assert status == 0 and rec["gids"] == [fabric.hcas[3]["gid"]], rec
    finally:
        with open(d.config, "w") as f:
            f.write(text)
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: d.logtext().count("configuration reloaded") > reloads + 1, 10,
                   what="reload back")


def test_groups_joined_in_sa(fabric, nodes):
    mgid = group_mgid(0xffff, 4, 3, GROUP[0])
    wait_until(lambda: all(stats(d.socket)["mcast_groups_joined"] == 1 for d in nodes.values()),
               10, what="every daemon joined its group")
    assert mgid in fabric.groups("hca004")
    for k, d in nodes.items():
        m = fabric.membership("hca004", mgid, fabric.hcas[k]["gid"])
        assert m, "hca%03d is not a member of %s" % (k, mgid)
        assert m["joinstate"] == "0x1"
        assert int(m["mlid"], 16) >= 0xc000
        assert m["qkey"] == "0xc9425253"
        assert "joined group %s: MLID" % mgid in d.logtext()


def test_sa_path_equals_saquery(fabric, nodes):
    d = nodes[1]
    before = stats(d.socket)
    status, out = d.resolve("node2")
    assert status == 0, (out, d.logtext()[-2000:])
    p = out["paths"][0]
    sa = fabric.saquery_path("hca004", fabric.hcas[1]["lid"], fabric.hcas[2]["lid"])
    assert sa, "saquery found no path"
    assert p["dlid"] == int(sa["dlid"]) and p["slid"] == int(sa["slid"])
    assert p["dgid"] == fabric.hcas[2]["gid"] and p["sgid"] == fabric.hcas[1]["gid"]
    assert p["pkey"] == int(sa["pkey"], 16)
    assert p["sl"] == int(sa["sl"], 16)
    assert p["mtu"] | p["mtu_selector"] << 6 == int(sa["mtu"], 16)
    assert p["rate"] | p["rate_selector"] << 6 == int(sa["rate"], 16)
    assert p["packet_lifetime"] | p["packet_lifetime_selector"] << 6 == int(sa["pkt_life"], 16)
    after = stats(d.socket)
    assert after["sa_path_queries"] == before["sa_path_queries"] + 1
    # the second resolution, by name or by any other key of that host, asks nothing
    for key in ("node2", "gid:" + fabric.hcas[2]["gid"]):
        status, out2 = d.resolve(key)
        assert status == 0 and out2["paths"][0] == p
    again = stats(d.socket)
    assert again["sa_path_queries"] == after["sa_path_queries"]
    assert again["route_cache"] >= after["route_cache"] + 2


def test_concurrent_requests_share_one_query(fabric, nodes):
    d = nodes[2]
    before = stats(d.socket)["sa_path_queries"]
    clients = [Client(d.socket, timeout=10) for _ in range(5)]
    from fabric_util import resolve_request
    for c in clients:
        c.send(resolve_request("node3"))
    answers = [c.recv_msg() for c in clients]
    for c in clients:
        c.close()
    assert all(a is not None and a[2] == 0 for a in answers)
    assert stats(d.socket)["sa_path_queries"] == before + 1


def test_query_sa_verification(fabric, nodes):
    d = nodes[3]
    r = acme(d.socket, "-f", "n", "-d", "node1", "-s", "node3", "-v")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SA verification: success" in r.stdout
    fields = path_fields(r.stdout)
    assert int(fields["dlid"]) == fabric.hcas[1]["lid"]
    # QUERY_SA goes to the SA every time
    n = stats(d.socket)["sa_path_queries"]
    r = acme(d.socket, "-f", "n", "-d", "node1", "-s", "node3", "-v")
    assert "SA verification: success" in r.stdout
    assert stats(d.socket)["sa_path_queries"] == n + 1


def test_forged_responses_dropped_and_counted(fabric, nodes):
    """A GetResp no query asked for, sent from another simulated host to the
    daemon's SA agent, is dropped and counted."""
    d = nodes[1]
    before = stats(d.socket)
    prog = os.path.join(os.path.dirname(__file__), "umad_inject.py")
    r = fabric.run_as("hca004", "/usr/bin/python3", prog, str(fabric.hcas[1]["lid"]))
    assert r.returncode == 0, r.stdout + r.stderr
    def arrived():
        s = stats(d.socket)
        return s["sa_rx_unsolicited"] >= before["sa_rx_unsolicited"] + 2 and \
            s["sa_rx_malformed"] >= before["sa_rx_malformed"] + 1
    try:
        wait_until(arrived, 5, what="the forged MADs dropped and counted")
    except AssertionError:
        raise AssertionError("before %s after %s injector %s" % (
            {k: v for k, v in before.items() if k.startswith("sa_rx")},
            {k: v for k, v in stats(d.socket).items() if k.startswith("sa_rx")}, r.stdout))
    # and the daemon still answers from the SA
    status, _ = d.resolve("node3")
    assert status == 0


def test_leave_on_shutdown(fabric, nodes, tmp_path):
    mgid = group_mgid(0xffff, 4, 3, GROUP[0])
    k = 4
    d = SimDaemon(fabric, "hca004", tmp_path / "hca4",
                  sim_config(k, str(tmp_path / "hca4" / "ibresd.sock"),
                             groups=[GROUP, ("239.255.73.9", 1024, "10")])).start()
    try:
        wait_until(lambda: stats(d.socket)["mcast_groups_joined"] == 2, 10,
                   what="two groups joined")
        other = group_mgid(0xffff, 3, 3, "239.255.73.9")
        assert fabric.membership("hca004", other, fabric.hcas[k]["gid"])
        assert d.stop() == 0
        assert "left group %s" % other in d.logtext()
        assert fabric.membership("hca001", mgid, fabric.hcas[k]["gid"]) is None
        # nobody else is in the second group: the SA dropped it
        assert other not in fabric.groups("hca001")
        # the others are still members of the first
        assert fabric.membership("hca001", mgid, fabric.hcas[1]["gid"])
    finally:
        d.kill()


# --- no SM ---------------------------------------------------------------------------

def test_no_sm_then_sm(tmp_path):
    f = SimFabric(tmp_path / "fab", 2, sm=False).up()
    try:
        hf = hosts_file(str(tmp_path / "hosts"), f, [1, 2])
        d = SimDaemon(f, "hca001", tmp_path / "d1",
                      sim_config(1, str(tmp_path / "d1" / "ibresd.sock"), hosts_file=hf,
                                 groups=[GROUP])).start()
        try:
            assert "no SA until a Subnet Manager brings it up" in d.logtext()
            # what it has it serves: the static host...
            status, rec = host(d.socket, "node2")
            assert status == 0 and rec["gids"] == [f.hcas[2]["gid"]]
            # ...but a path from the SA: a clear error, at once
            c = Client(d.socket)
            t0 = time.monotonic()
            status, _ = resolve(c, "node2")
            c.close()
            assert status == ST_ENOTCONN
            assert time.monotonic() - t0 < 1.0
            f.sm_start()
            wait_until(lambda: stats(d.socket)["mcast_groups_joined"] == 1, 10,
                       what="joined once the SM came")
            assert "PORT_ACTIVE" in d.logtext()
            ep = d.endpoint()
            assert ep["lid"] == f.hcas[1]["lid"] and ep["lid"] > 0
            status, out = d.resolve("node2")
            assert status == 0 and out["paths"][0]["dlid"] == f.hcas[2]["lid"]
            # the SM goes away: cached paths still served, new ones time out
            f.sm_stop()
            status, out = d.resolve("node2")
            assert status == 0
            assert d.stop() == 0
        finally:
            d.kill()
    finally:
        f.down()


# --- the ip transport carries names, the SA supplies paths -------------------------------

@pytest.fixture(scope="module")
def netfabric(tmp_path_factory):
    f = SimFabric(tmp_path_factory.mktemp("ibsimns"), 3, netns=True).up()
    yield f
    f.down()


def ip_config(k, sock, route_prot):
    return sim_config(k, sock, route_prot=route_prot, transport="ip",
                      groups=[GROUP, ("239.255.73.2", 2048, "10")],
                      extra_resolve=["name_pattern = node*", "settle_time = 500ms",
                                     "announce_interval = 30s", "addr_ttl = 120s"])


@pytest.fixture(scope="module")
def ipnodes(netfabric, tmp_path_factory):
    base = tmp_path_factory.mktemp("ipnodes")
    ds = {}
    for k in (1, 2, 3):
        d = base / ("hca%d" % k)
        ds[k] = SimDaemon(netfabric, "hca%03d" % k, d,
                          ip_config(k, str(d / "ibresd.sock"), "sa")).start()
    time.sleep(0.7)  # past the settle time
    yield ds
    for d in ds.values():
        d.kill()


def test_name_in_sa_path_out(netfabric, ipnodes):
    d = ipnodes[1]
    r = acme(d.socket, "-f", "n", "-d", "node2", "-s", "node1")
    assert r.returncode == 0, r.stdout + r.stderr + d.logtext()[-3000:]
    fields = path_fields(r.stdout)
    sa = netfabric.saquery_path("hca003", netfabric.hcas[1]["lid"], netfabric.hcas[2]["lid"])
    assert int(fields["dlid"]) == int(sa["dlid"]) == netfabric.hcas[2]["lid"]
    assert int(fields["slid"]) == int(sa["slid"])
    assert fields["dgid"] == netfabric.hcas[2]["gid"]
    assert int(fields["mtu"]) == int(sa["mtu"], 16) & 0x3f
    assert int(fields["rate"]) == int(sa["rate"], 16) & 0x3f
    assert int(fields["packet lifetime"]) == int(sa["pkt_life"], 16) & 0x3f
    # by IPv4 too, from the same SA answer (one query per destination)
    n = stats(d.socket)["sa_path_queries"]
    c = Client(d.socket)
    status, p = resolve(c, "198.18.1.2")
    c.close()
    assert status == 0 and p["dlid"] == netfabric.hcas[2]["lid"]
    assert stats(d.socket)["sa_path_queries"] == n


def test_mcast_paths_take_the_joined_group(netfabric, ipnodes, tmp_path):
    """route_prot mcast: the path's parameters are those the SA gave the group."""
    d3 = ipnodes[3]
    wait_until(lambda: stats(d3.socket)["mcast_groups_joined"] == 2, 10, what="joins")
    mgid = group_mgid(0xffff, 4, 3, "239.255.73.2")
    m = netfabric.membership("hca001", mgid, netfabric.hcas[3]["gid"])
    assert m
    status, out = d3.resolve("node1")
    assert status == 0
    p = out["paths"][0]
    assert p["mtu"] == int(m["mtu"], 16) & 0x3f and p["rate"] == int(m["rate"], 16) & 0x3f


def query_sa(sock, dgid, sgid, dlid, slid, pkey):
    """A QUERY_SA RESOLVE (ib_acme -v): the PathRecord's DGID, SGID, DLID,
    SLID, reversible, one path, and P_Key; the daemon's answer."""
    from fabric_util import acm_hdr, ep_entry
    import ipaddress
    rec = struct.pack(">Q16s16sHHIBBHHBBBB6x", 0, ipaddress.IPv6Address(dgid).packed,
                      ipaddress.IPv6Address(sgid).packed, dlid, slid, 0, 0, 0x81, pkey,
                      0, 0, 0, 0, 0)
    body = ep_entry(0x80000000, 0x10, rec)
    c = Client(sock)
    try:
        return c.request(acm_hdr(1, 16 + len(body)) + body)
    finally:
        c.close()


def test_client_terms_drop_nothing(netfabric, ipnodes):
    """Any local user may send a QUERY_SA whose own terms no path meets (a
    DLID that is not node3's with node3's GID): it is answered ENODATA and
    drops nothing. The daemon asks the SA again in its own terms, which
    finds node3."""
    d = ipnodes[1]
    gid3 = netfabric.hcas[3]["gid"]
    status, out = d.resolve("node3")
    assert status == 0
    path = out["paths"][0]
    before = stats(d.socket)
    ans = query_sa(d.socket, gid3, path["sgid"], 0x777, path["slid"], path["pkey"])
    assert ans[2] == ST_ENODATA
    wait_until(lambda: stats(d.socket)["sa_rx"] >= before["sa_rx"] + 2 and
               stats(d.socket)["sa_queries_outstanding"] == 0, 10,
               what="the SA answered the client's query and the daemon's own")
    after = stats(d.socket)
    assert after["sa_path_queries"] == before["sa_path_queries"] + 2, (before, after)
    assert after["sa_hosts_dropped"] == before["sa_hosts_dropped"]
    assert any(gid3 in e.get("gids", []) for e in cache_list(d.socket))
    assert d.resolve("node3")[0] == 0


def test_unlinked_destination(netfabric, ipnodes):
    d = ipnodes[1]
    gid3 = netfabric.hcas[3]["gid"]
    status, out = d.resolve("node3")
    assert status == 0
    path = out["paths"][0]
    netfabric.console('Unlink "hca003"')
    try:
        # verifying the cached path with the SA fails cleanly...
        ans = wait_until(lambda: (lambda a: a if a[2] != 0 else None)(
            query_sa(d.socket, gid3, path["sgid"], path["dlid"], path["slid"],
                     path["pkey"])), 10, interval=0.3, what="the SA stops knowing hca003")
        assert ans[2] == ST_ENODATA
        # ...and the stale entry goes once the daemon's own query agrees
        wait_until(lambda: not any(gid3 in e.get("gids", []) for e in cache_list(d.socket)),
                   10, what="the stale entry dropped")
        assert stats(d.socket)["sa_hosts_dropped"] >= 1
        # the unplugged daemon saw its port go down
        wait_until(lambda: "PORT_ERR" in ipnodes[3].logtext(), 5, what="PORT_ERR on hca003")
    finally:
        netfabric.console('ReLink "hca003"')
    wait_until(lambda: "PORT_ACTIVE" in ipnodes[3].logtext(), 10, what="PORT_ACTIVE again")


def test_ib_transport_needs_verbs(fabric, tmp_path):
    """transport = ib builds here but libibverbs sees no device under the
    simulator: a clear start-up error, not a crash."""
    d = SimDaemon(fabric, "hca004", tmp_path / "ib",
                  sim_config(4, str(tmp_path / "ib" / "ibresd.sock"), transport=None,
                             extra_endpoint=["transport = ib"]))
    d.start(wait=False)
    assert d.proc.wait(20) == 1
    log = d.logtext()
    assert "endpoint ib0: no RDMA device 'ibsim0'" in log, log
    assert "cannot start the fabric protocol" in log
