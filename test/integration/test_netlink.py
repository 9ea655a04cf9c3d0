"""Local addresses from the kernel (netlink): endpoints take their interface's
addresses, follow them at run time and announce the change to the fabric; a
RESOLVE without a source leaves from where the kernel's route says.

Multi-node tests run on a cluster made by test/fabric/emulate; the others in a
network namespace of their own with two veth pairs. Every wait is bounded."""
import ipaddress
import signal
import struct
import subprocess
import uuid

import pytest

from conftest import IBRESCTL, Client, Daemon, needs_root, parse_hdr, run
from fabric_util import ST_ENODATA, ST_SUCCESS, Cluster, host, resolve_request, stats, wait_until

pytestmark = needs_root

BOUND = 10.0      # a change reaches every node within this (the task's bound)
AT_ONCE = 2.0     # ... and the node itself "at once" (one netlink event)


def ip(netns, *args):
    r = run(["ip", "-n", netns] + [str(a) for a in args], timeout=30)
    assert r.returncode == 0, "ip %s: %s" % (" ".join(map(str, args)), r.stderr)
    return r.stdout


def owner(sock, addr):
    """The canonical name @sock's daemon resolves @addr to, or None."""
    status, rec = host(sock, addr, cache_only=True)
    return rec["names"][0] if status == ST_SUCCESS else None


def wait_owner(sock, addr, want, timeout=BOUND):
    return wait_until(lambda: owner(sock, addr) == want, timeout, interval=0.05,
                      what="%s resolving to %s on %s" % (addr, want, sock))


# --- the cluster ------------------------------------------------------------------

@pytest.fixture(scope="module")
def c4(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("nl"), 4)
    c.up()
    try:
        c.wait_settled()
        yield c
    finally:
        c.down()


def test_added_address_reaches_every_node(c4):
    """An address added on node 3's ib0 resolves to node 3 there at once and
    on every other node after its announcement; IPv6 too."""
    v4, v6 = "198.18.1.3", "2001:db8::1:3"
    for k in c4.nodes:
        assert owner(c4.sock(k), v4) is None
    ip(c4.netns(3), "addr", "add", v4 + "/16", "dev", "ib0")
    ip(c4.netns(3), "addr", "add", v6 + "/64", "dev", "ib0", "nodad")
    wait_owner(c4.sock(3), v4, "node3", AT_ONCE)
    wait_owner(c4.sock(3), v6, "node3", AT_ONCE)
    for k in (1, 2, 4):
        wait_owner(c4.sock(k), v4, "node3")
        wait_owner(c4.sock(k), v6, "node3")
    # the command-line tool sees it too, and the node announces both families
    r = run([IBRESCTL, "--socket", c4.sock(2), "host", v4])
    assert r.returncode == 0 and "node3" in r.stdout and v6 in r.stdout, r.stdout + r.stderr
    log = c4.log(3)
    assert "address %s added" % v4 in log and "address %s added" % v6 in log, log[-3000:]
    # the configured addresses stay first: the transport is bound to them
    status, rec = host(c4.sock(1), "node3")
    assert status == ST_SUCCESS and rec["ipv4"][0] == c4.nodes[3]["ipv4"], rec


def test_removed_address_stops_resolving(c4):
    """Removed from node 2: gone on node 2 at once, on the others after the
    announcement (authoritative "not found" once settled)."""
    v4 = "198.18.2.2"
    ip(c4.netns(2), "addr", "add", v4 + "/16", "dev", "ib0")
    for k in c4.nodes:
        wait_owner(c4.sock(k), v4, "node2")
    ip(c4.netns(2), "addr", "del", v4 + "/16", "dev", "ib0")
    wait_owner(c4.sock(2), v4, None, AT_ONCE)
    for k in (1, 3, 4):
        wait_owner(c4.sock(k), v4, None)
        # not only gone from the cache: a full lookup finds nothing either
        assert host(c4.sock(k), v4)[0] == ST_ENODATA
    assert "address %s removed" % v4 in c4.log(2)
    # the node itself still resolves its other addresses
    assert owner(c4.sock(2), c4.nodes[2]["ipv4"]) == "node2"


def test_moved_address_follows_its_new_owner(c4):
    """Moved from node 3 to node 4: the old owner's announcement releases it
    (first come, first served holds while the owner claims it), so within
    the bound every node resolves it to node 4."""
    addr = "198.18.3.9"
    ip(c4.netns(3), "addr", "add", addr + "/16", "dev", "ib0")
    for k in c4.nodes:
        wait_owner(c4.sock(k), addr, "node3")
    ip(c4.netns(3), "addr", "del", addr + "/16", "dev", "ib0")
    ip(c4.netns(4), "addr", "add", addr + "/16", "dev", "ib0")
    for k in c4.nodes:
        wait_owner(c4.sock(k), addr, "node4")
    # and node 3's record no longer lists it anywhere
    for k in (1, 2, 4):
        status, rec = host(c4.sock(k), "node3", cache_only=True)
        assert status == ST_SUCCESS and addr not in rec["ipv4"], (k, rec)
    # moved back, while node 4 still lives: node 3 claims it again, node 4 lets go
    ip(c4.netns(4), "addr", "del", addr + "/16", "dev", "ib0")
    ip(c4.netns(3), "addr", "add", addr + "/16", "dev", "ib0")
    for k in c4.nodes:
        wait_owner(c4.sock(k), addr, "node3")


def test_address_taken_from_a_live_owner_is_refused(c4):
    """While node 1 claims an address, node 2 adding it too does not take it
    over on the other nodes (first come, first served); node 2 answers for it
    locally only."""
    addr = "198.18.4.1"
    ip(c4.netns(1), "addr", "add", addr + "/16", "dev", "ib0")
    for k in c4.nodes:
        wait_owner(c4.sock(k), addr, "node1")
    before = {k: stats(c4.sock(k))["fabric_rx_conflict"] for k in (1, 3, 4)}
    try:
        ip(c4.netns(2), "addr", "add", addr + "/16", "dev", "ib0", "nodad")
        wait_owner(c4.sock(2), addr, "node2", AT_ONCE)
        # node 2's announcement was heard, and refused
        wait_until(lambda: all(stats(c4.sock(k))["fabric_rx_conflict"] > before[k]
                               for k in before), BOUND, what="node 2 refused everywhere")
        for k in (1, 3, 4):
            assert owner(c4.sock(k), addr) == "node1"
    finally:
        run(["ip", "-n", c4.netns(2), "addr", "del", addr + "/16", "dev", "ib0"])
        run(["ip", "-n", c4.netns(1), "addr", "del", addr + "/16", "dev", "ib0"])


# --- one namespace, two interfaces ----------------------------------------------------

CONF = """\
[daemon]
log_level = debug

[resolve]
hosts_file = {hosts}

[endpoint ib0]
name = multi
address = 198.18.0.1
gid = fe80::2:c903:0:1
lid = 1
transport = none
interface = ib0

[endpoint ib1]
name = multi-ib1
gid = fe80::2:c903:0:2
lid = 2
transport = none
interface = ib1
"""

HOSTS = """\
fe80::2:c903:0:50 80 far 198.20.0.5 2001:db8:20::5
fe80::2:c903:0:51 81 near 198.18.5.5 2001:db8:18::5
"""

GID0, GID1 = "fe80::2:c903:0:1", "fe80::2:c903:0:2"


@pytest.fixture
def ns2(tmp_path):
    """A namespace with ib0 (198.18.0.1/16, 2001:db8:18::1/64) and ib1
    (198.19.0.1/16, 2001:db8:19::1/64), each a veth whose peer stays in the
    namespace, and routes to 198.20.0.0/16 and 2001:db8:20::/64 via ib1."""
    ns = "ibres-nl-%s" % uuid.uuid4().hex[:10]
    run(["ip", "netns", "add", ns], check=True)
    try:
        for dev in ("ib0", "ib1"):
            ip(ns, "link", "add", dev, "type", "veth", "peer", "name", dev + "p")
            ip(ns, "link", "set", dev, "up")
            ip(ns, "link", "set", dev + "p", "up")
        ip(ns, "link", "set", "lo", "up")
        ip(ns, "addr", "add", "198.18.0.1/16", "dev", "ib0")
        ip(ns, "addr", "add", "2001:db8:18::1/64", "dev", "ib0", "nodad")
        ip(ns, "addr", "add", "198.19.0.1/16", "dev", "ib1")
        ip(ns, "addr", "add", "2001:db8:19::1/64", "dev", "ib1", "nodad")
        ip(ns, "route", "add", "198.20.0.0/16", "dev", "ib1", "src", "198.19.0.1")
        ip(ns, "-6", "route", "add", "2001:db8:20::/64", "dev", "ib1", "src",
           "2001:db8:19::1")
        yield ns
    finally:
        run(["ip", "netns", "del", ns])


@pytest.fixture
def multi(ns2, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text(HOSTS)
    d = Daemon(tmp_path / "d", config_text=CONF.format(hosts=hosts), netns=ns2)
    d.start()
    yield d
    if d.proc and d.proc.poll() is None:
        d.stop()


def resolve_source(sock, dest):
    """RESOLVE @dest with no SOURCE: (path's sgid, the SOURCE entry's address)."""
    c = Client(sock)
    try:
        ans = c.request(resolve_request(dest))
    finally:
        c.close()
    h = parse_hdr(ans)
    assert h["status"] == 0 and h["length"] == 16 + 2 * 72, h
    sgid = str(ipaddress.IPv6Address(ans[16 + 8 + 24:16 + 8 + 40]))
    flags, etype = struct.unpack_from("<IH", ans, 16 + 72)
    assert flags == 1, flags
    n = 4 if etype == 2 else 16
    src = str(ipaddress.ip_address(ans[16 + 72 + 8:16 + 72 + 8 + n]))
    return sgid, src


def test_interface_addresses_join_the_config_ones(multi):
    """ib0: its configured address, then the kernel's IPv6; ib1 has no
    address in the config and takes both of its interface's."""
    status, rec = host(multi.socket, "multi")
    assert status == ST_SUCCESS
    assert rec["ipv4"] == ["198.18.0.1"] and rec["ipv6"] == ["2001:db8:18::1"], rec
    status, rec = host(multi.socket, "multi-ib1")
    assert status == ST_SUCCESS
    assert rec["ipv4"] == ["198.19.0.1"] and rec["ipv6"] == ["2001:db8:19::1"], rec
    # link-local and loopback addresses are never taken
    assert not any(a.startswith("fe80") or a == "::1" for a in rec["ipv6"]), rec
    assert owner(multi.socket, "127.0.0.1") is None


def test_source_follows_the_kernel_route(multi, ns2):
    """No SOURCE in the request: the endpoint the kernel's route leaves from
    (its preferred source, or its interface); the old rule (first endpoint
    with an address of the family) only when routing says nothing."""
    assert resolve_source(multi.socket, "198.20.0.5") == (GID1, "198.19.0.1")
    assert resolve_source(multi.socket, "2001:db8:20::5") == (GID1, "2001:db8:19::1")
    assert resolve_source(multi.socket, "198.18.5.5") == (GID0, "198.18.0.1")
    assert resolve_source(multi.socket, "2001:db8:18::5") == (GID0, "2001:db8:18::1")
    # a name has no route: the first endpoint
    c = Client(multi.socket)
    ans = c.request(resolve_request("far"))
    c.close()
    assert parse_hdr(ans)["status"] == 0
    assert ans[16 + 72 + 8:16 + 72 + 8 + 6] == b"multi\0"
    # the route moves to ib0 (no preferred source: by its interface): so does the choice
    ip(ns2, "route", "replace", "198.20.0.0/16", "dev", "ib0")
    assert resolve_source(multi.socket, "198.20.0.5") == (GID0, "198.18.0.1")
    # no route at all: the old rule
    ip(ns2, "route", "del", "198.20.0.0/16")
    assert resolve_source(multi.socket, "198.20.0.5") == (GID0, "198.18.0.1")


def test_config_address_stays_kernel_address_goes(multi, ns2):
    """A configured address stays when its interface loses it; one taken
    from the kernel goes at once, and comes back when re-added."""
    ip(ns2, "addr", "del", "198.18.0.1/16", "dev", "ib0")
    ip(ns2, "addr", "del", "198.19.0.1/16", "dev", "ib1")
    wait_owner(multi.socket, "198.19.0.1", None, AT_ONCE)
    assert owner(multi.socket, "198.18.0.1") == "multi"
    ip(ns2, "addr", "add", "198.19.0.1/16", "dev", "ib1")
    wait_owner(multi.socket, "198.19.0.1", "multi-ib1", AT_ONCE)
    # an address of ib1 moved to ib0 changes endpoint
    ip(ns2, "addr", "del", "2001:db8:19::1/64", "dev", "ib1")
    ip(ns2, "addr", "add", "2001:db8:19::1/64", "dev", "ib0", "nodad")
    wait_owner(multi.socket, "2001:db8:19::1", "multi", AT_ONCE)
    log = multi.logtext()
    assert "endpoint ib1: address 198.19.0.1 removed" in log, log
    assert "endpoint ib1: address 198.19.0.1 added" in log, log


def test_reload_keeps_interface_addresses(multi):
    multi.signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded" in multi.logtext(), 5.0, what="reload")
    assert owner(multi.socket, "198.19.0.1") == "multi-ib1"
    assert owner(multi.socket, "2001:db8:18::1") == "multi"


def test_renamed_interface(multi, ns2):
    """The endpoint follows the interface name: renamed away, its addresses
    go; another link renamed to it brings its own."""
    ip(ns2, "link", "set", "ib1", "down")
    ip(ns2, "link", "set", "ib1", "name", "old1")
    wait_owner(multi.socket, "198.19.0.1", None, AT_ONCE)
    ip(ns2, "link", "set", "ib1p", "down")
    ip(ns2, "link", "set", "ib1p", "name", "ib1")
    ip(ns2, "link", "set", "ib1", "up")
    ip(ns2, "addr", "add", "198.19.9.9/16", "dev", "ib1")
    wait_owner(multi.socket, "198.19.9.9", "multi-ib1", AT_ONCE)


def test_lost_notifications_resync(multi, ns2):
    """Thousands of changes while the daemon is stopped overrun its netlink
    socket; it reads every address again, and its endpoint holds at most
    IBRES_HOST_ADDRS_MAX (8) per family, configured ones first."""
    n = 6000
    multi.signal(signal.SIGSTOP)
    try:
        batch = "".join("addr add 10.%d.%d.%d/8 dev ib0\n" % (i >> 16, (i >> 8) & 255, i & 255)
                        for i in range(1, n + 1))
        r = subprocess.run(["ip", "-n", ns2, "-batch", "-"], input=batch, text=True,
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
    finally:
        multi.signal(signal.SIGCONT)
    wait_until(lambda: "notifications were lost" in multi.logtext(), BOUND,
               what="overrun noticed")

    def eight():
        status, rec = host(multi.socket, "multi")
        return status == ST_SUCCESS and len(rec["ipv4"]) == 8 and rec
    rec = wait_until(eight, BOUND, what="8 IPv4 addresses")
    assert rec["ipv4"][0] == "198.18.0.1", rec
    assert "addresses left out" in multi.logtext()
    # and it keeps following changes afterwards
    ip(ns2, "addr", "flush", "dev", "ib0", "to", "10.0.0.0/8")
    try:
        wait_until(lambda: host(multi.socket, "multi")[1]["ipv4"] == ["198.18.0.1"], BOUND,
                   what="the 10/8 addresses gone")
    except AssertionError:
        raise AssertionError("%s\n%s\n%s" % (host(multi.socket, "multi"),
                                             ip(ns2, "-4", "addr", "show", "dev", "ib0")[-500:],
                                             multi.logtext()[-3000:]))


def test_endpoint_without_interface_address_fails_cleanly(tmp_path, ns2):
    """transport ip on an interface with no IPv4 address: the daemon says
    which endpoint lacks one and exits 1."""
    conf = CONF.replace("transport = none\ninterface = ib1",
                        "transport = ip\ninterface = ib1\ngroup = 239.255.73.1")
    conf = conf.replace("hosts_file = {hosts}\n", "")
    ip(ns2, "addr", "flush", "dev", "ib1")
    d = Daemon(tmp_path / "d", config_text=conf, netns=ns2)
    d.start(wait=False)
    assert d.proc.wait(20) == 1
    assert "ib1" in d.logtext() and "no IPv4 address" in d.logtext(), d.logtext()
