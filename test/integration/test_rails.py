"""Multi-rail nodes (issue 20) on the emulated fabric: `emulate up --rails 4
--planes` gives each node four endpoints, one per rail, each rail a fabric of
its own (bridge, subnet, groups) whose LIDs start from 1, so node K has LID K
on every rail and all GIDs keep the default prefix.

What must hold (DESIGN.md "Rails", doc/fabric-protocol.md):
- every ordered pair resolves rail to rail, by name and by address, and the
  path's SGID, DGID, SLID and DLID are that rail's, never another's; asking
  from one rail for another rail's own name or address gives EDESTADDR, never
  a path across fabrics;
- NSS: the host name gives every rail's addresses, rail 0 first; a rail's own
  alias gives that rail's alone; any rail's address gives the host's name;
- LIDs that repeat across planes are not forgeries (no fabric_rx_conflict);
  a forged endpoint on rail 1 claiming node2's name, LID, rails, GIDs or
  addresses is dropped as a conflict and takes nothing of rail 0 or rail 1;
- the daemon accepts a node's multi-rail config and refuses two endpoints of
  one host with the same GID and P_Key.

Clusters are made in pytest tmp dirs and always torn down by their fixtures;
every wait is bounded; nothing asserts a timing."""
import errno
import ipaddress
import itertools
import json
import os
import re
import time

import pytest

from conftest import IBRESCTL, Client, have, needs_root, run
from fabric_util import cluster_factory  # noqa: F401 (a fixture, shared)
from fabric_util import (FABRIC_PORT, FW_ANNOUNCE, FW_GOODBYE, ORIGIN_FABRIC, ST_SUCCESS,
                         Cluster, acme, cache_list, cut_off, emulate, fabric_msg, group_items,
                         knows_every_rail,
                         host, identity_items, path_fields, rails_item, resolve, send_datagrams,
                         stats, wait_until)
from nss_helpers import NSS_MODULE, client_env, gai_entries, helpers, parse_kv  # noqa: F401

pytestmark = [needs_root,
              pytest.mark.skipif(not have("ib_acme"), reason="ib_acme (package ibacm) missing")]

RAILS = 4
ST_EDESTADDR = 9            # IBRES_STATUS_EDESTADDR (include/ibres_proto.h)
AF_INET = 2
KEY_NAME, KEY_LID = 1, 5
IBRESD = os.environ.get("IBRESD") or os.path.join(
    os.environ.get("IBRES_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
    "ibresd")


# --- clusters ------------------------------------------------------------------------

def rail(c, k, r):
    """rails.tsv's row of node @k's rail @r."""
    return c.rails[k][r]


def lid_key(e):
    """A LID key of CACHE_LIST, "LID@F" (F: the local endpoint, so the rail,
    whose fabric heard it): (LID, F)."""
    lid, _, fabric = e["key"].partition("@")
    assert fabric, e
    return int(lid), int(fabric)


def wait_rails(c, timeout=10.0):
    try:
        wait_until(lambda: all(knows_every_rail(c, k) for k in c.nodes), timeout, interval=0.1,
                   what="every node knows every rail of every other")
    except AssertionError:
        raise AssertionError("rails missing: %s\n%s" % (
            {k: sorted(e["key"] for e in cache_list(c.sock(k))
                       if e.get("keytype") == KEY_NAME and e.get("origin") == ORIGIN_FABRIC)
             for k in c.nodes}, c.logs()))


def rails_cluster(path, nodes):
    c = Cluster(path, nodes, "--rails", RAILS, "--planes")
    c.up()   # tears down what it made if it fails
    try:
        assert all(len(c.rails[k]) == RAILS for k in c.nodes), c.rails
        wait_rails(c)
        c.wait_settled()
    except BaseException:
        c.down()
        raise
    return c


@pytest.fixture(scope="module")
def r4(tmp_path_factory):
    """2 nodes x 4 rails, separate planes (LID K on every rail); read-only."""
    c = rails_cluster(tmp_path_factory.mktemp("r4"), 2)
    try:
        yield c
    finally:
        c.down()


# --- ib_acme -------------------------------------------------------------------------

def acme_path(c, s, fmt, src, dst):
    """ib_acme from node @s: the path's fields, or None with the output."""
    r = acme(c.sock(s), "-f", fmt, "-s", src, "-d", dst)
    if r.returncode == 0 and "return status 0x0" in r.stdout:
        return path_fields(r.stdout), r.stdout
    return None, r.stdout + r.stderr


def assert_rail_path(c, s, d, r, fmt, src, dst):
    f, out = acme_path(c, s, fmt, src, dst)
    what = "node%d rail %d -> node%d (-s %s -d %s)" % (s, r, d, src, dst)
    assert f is not None, "%s failed:\n%s" % (what, out)
    got = dict(sgid=str(ipaddress.IPv6Address(f["sgid"])),
               dgid=str(ipaddress.IPv6Address(f["dgid"])),
               slid=int(f["slid"]), dlid=int(f["dlid"]), pkey=int(f["pkey"], 16))
    want = dict(sgid=rail(c, s, r)["gid"], dgid=rail(c, d, r)["gid"],
                slid=rail(c, s, r)["lid"], dlid=rail(c, d, r)["lid"], pkey=0xffff)
    assert got == want, "%s: not rail %d's path:\n%s" % (what, r, out)
    assert f["reversible"] == "1", out


# --- the emulated rails themselves -------------------------------------------------

def test_emulate_rails_layout(r4):
    """rails.tsv: node K has LID K on every plane, GID fe80::2:c903:R:K, an
    address of its own subnet on interface ibR; nodes.tsv stays rail 0's."""
    for k in r4.nodes:
        assert r4.nodes[k]["gid"] == rail(r4, k, 0)["gid"]
        assert r4.nodes[k]["ipv4"] == rail(r4, k, 0)["ipv4"]
        for r, rl in enumerate(r4.rails[k]):
            assert rl["rail"] == r and rl["lid"] == k and rl["alias"] == "node%d-ib%d" % (k, r)
            assert rl["gid"] == str(ipaddress.IPv6Address("fe80::2:c903:%x:%x" % (r, k)))
            out = run(["ip", "-n", rl["netns"], "-br", "addr", "show", "dev", rl["interface"]],
                      timeout=30).stdout
            assert rl["ipv4"] + "/" in out and rl["ipv6"] + "/" in out, out
    conf = r4.config(1)
    assert [l for l in conf.splitlines() if l.startswith("[endpoint")] == \
        ["[endpoint ib%d]" % r for r in range(RAILS)], conf


def test_emulate_link_and_loss_per_rail(tmp_path):
    """link --rail cuts one rail's switch port only, link without --rail every
    rail's; loss applies to every rail's veth. (No daemons needed.)"""
    c = Cluster(tmp_path / "lk", 2, "--rails", 2, "--no-start")
    c.up()
    try:
        with open(os.path.join(c.dir, "state.json")) as f:
            sw = json.load(f)["switch_ns"]
        c.link(2, "down", rail=1)
        assert run(["ip", "-n", sw, "link", "show", "p2r1"], timeout=30).stdout.count(",UP") == 0
        assert ",UP" in run(["ip", "-n", sw, "link", "show", "p2"], timeout=30).stdout
        c.link(2, "up", rail=1)
        c.link(1, "down")
        for p in ("p1", "p1r1"):
            assert ",UP" not in run(["ip", "-n", sw, "link", "show", p], timeout=30).stdout
        assert ",UP" in run(["ip", "-n", sw, "link", "show", "p2r1"], timeout=30).stdout
        assert emulate("link", "--dir", c.dir, "--node", 1, "--rail", 2, "up",
                       check=False).returncode != 0
        c.loss(10)
        for dev in ("ib0", "ib1"):
            out = run(["ip", "netns", "exec", c.netns(2), "tc", "qdisc", "show", "dev", dev],
                      timeout=30).stdout
            assert "netem" in out or "clsact" in out, (dev, out)
    finally:
        c.down()


def test_emulate_rails_refusals(tmp_path):
    for args in (["--rails", 9], ["--rails", 0], ["--rails", 2, "--shared-ns"]):
        r = emulate("up", "--nodes", 2, "--dir", tmp_path / "x", "--no-start", *args,
                    check=False)
        assert r.returncode != 0 and "--rails" in r.stderr, (args, r.stderr)
    assert not os.path.exists(tmp_path / "x" / "state.json") or \
        emulate("down", "--dir", tmp_path / "x").returncode == 0


# --- resolution, rail to rail ---------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("r", range(RAILS))
def test_rail_to_rail_by_name(r4, r):
    """From nodeS-ibR, the host name nodeD and the rail's own name nodeD-ibR
    both give rail R's path: SGID, DGID, SLID, DLID all rail R's."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        src = rail(r4, s, r)["alias"]
        assert_rail_path(r4, s, d, r, "n", src, r4.nodes[d]["name"])
        assert_rail_path(r4, s, d, r, "n", src, rail(r4, d, r)["alias"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fmt", ["ipv4", "ipv6"])
def test_rail_to_rail_by_address(r4, fmt):
    """By each rail's addresses: rail R's source and destination give rail R's path."""
    for r in range(RAILS):
        for s, d in itertools.permutations(sorted(r4.nodes), 2):
            assert_rail_path(r4, s, d, r, "i", rail(r4, s, r)[fmt], rail(r4, d, r)[fmt])


def test_without_source_first_rail(r4):
    """No source: the first local rail in config order that reaches the host (rail 0)."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        cl = Client(r4.sock(s))
        try:
            status, path = resolve(cl, r4.nodes[d]["name"])
        finally:
            cl.close()
        assert status == ST_SUCCESS, (s, d, status)
        assert (path["sgid"], path["dgid"]) == (rail(r4, s, 0)["gid"], rail(r4, d, 0)["gid"]), \
            path


def test_no_path_across_rails(r4):
    """A source on rail R asking for another rail's own name or address:
    EDESTADDR, never a path from one fabric to another. Each follows, on the
    same connection, a RESOLVE of it without a source (which rail q answers):
    what that one chose is not the next one's."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        assert_no_path_across(r4, s, d, RAILS, unsourced_first=True)


def assert_no_path_across(c, s, d, rails, unsourced_first=False):
    """On one connection to node @s, for each pair of its rails r != q: node @d's
    rail-q alias, IPv4 and IPv6 from the source of rail r: EDESTADDR, no path
    (@unsourced_first: each after a RESOLVE of it without a source)."""
    cl = Client(c.sock(s))
    try:
        for r, q in itertools.permutations(range(rails), 2):
            for key in ("alias", "ipv4", "ipv6"):
                src, dst = rail(c, s, r)[key], rail(c, d, q)[key]
                if unsourced_first:
                    assert resolve(cl, dst)[0] == ST_SUCCESS
                status, path = resolve(cl, dst, src)
                assert status == ST_EDESTADDR and path is None, \
                    "node%d rail %d -> %s of rail %d: status %d, path %s" % (
                        s, r, dst, q, status, path)
    finally:
        cl.close()


def test_path_query_by_gid(r4):
    """A path query (ib_acme -f g): rail R's SGID to rail R's DGID gives rail
    R's path; to another rail's DGID, EDESTADDR."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        for r, q in itertools.product(range(RAILS), repeat=2):
            src, dst = rail(r4, s, r)["gid"], rail(r4, d, q)["gid"]
            if r == q:
                assert_rail_path(r4, s, d, r, "g", src, dst)
            else:
                f, out = acme_path(r4, s, "g", src, dst)
                assert f is None and "Cannot assign requested address" in out, \
                    "node%d rail %d -> rail %d's GID: %s" % (s, r, q, out)


def test_path_query_by_gid_without_source(r4):
    """A path query with only a DGID (ib_acme -f g -d GID): the first local
    rail that reaches it, so rail R's path for rail R's GID."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        for r in range(RAILS):
            r_ = acme(r4.sock(s), "-f", "g", "-d", rail(r4, d, r)["gid"])
            assert "return status 0x0" in r_.stdout, \
                "node%d -> node%d's rail %d GID, no source:\n%s" % (s, d, r, r_.stdout)
            f = path_fields(r_.stdout)
            assert str(ipaddress.IPv6Address(f["sgid"])) == rail(r4, s, r)["gid"], r_.stdout
            assert str(ipaddress.IPv6Address(f["dgid"])) == rail(r4, d, r)["gid"], r_.stdout


def test_repeating_lids_are_no_conflict(r4):
    """LIDs repeat across planes (node K is LID K on all four): after every
    rail resolved every other node, no daemon counted a conflict, and each
    node's LID, on each fabric, still means that node."""
    for r in range(RAILS):
        for s, d in itertools.permutations(sorted(r4.nodes), 2):
            assert_rail_path(r4, s, d, r, "n", rail(r4, s, r)["alias"], r4.nodes[d]["name"])
    for k in r4.nodes:
        st = stats(r4.sock(k))
        assert st["fabric_rx_conflict"] == 0, (k, st, r4.logs())
        for e in cache_list(r4.sock(k)):
            if e.get("keytype") == KEY_LID and e.get("origin") == ORIGIN_FABRIC:
                lid, fabric = lid_key(e)
                assert e["names"][0] == "node%d" % lid, (k, e)
                assert e["gids"][0] == rail(r4, lid, fabric)["gid"], (k, e)


# --- NSS ------------------------------------------------------------------------------

def getent(c, k, *args):
    return run(["getent", "-s", "ib"] + list(args), env=client_env(socket_path=c.sock(k)),
               timeout=60)


def rows(r):
    return [line.split() for line in r.stdout.splitlines() if line.strip()]


def unique_addrs(r):
    out = []
    for row in rows(r):
        if row[0] not in out:
            out.append(row[0])
    return out


@pytest.mark.timeout(120)
def test_nss_host_name_gives_every_rail(r4, helpers):
    """getent hosts nodeD: every rail's IPv6 address, rail 0 first, under the
    host's name; IPv4 likewise (ahostsv4, and gethostbyname2(AF_INET)'s list
    in order) -- from the other node and from nodeD itself."""
    for s, d in itertools.product(sorted(r4.nodes), repeat=2):
        name = r4.nodes[d]["name"]
        what = "node%d asking for %s" % (s, name)
        v4 = [rl["ipv4"] for rl in r4.rails[d]]
        v6 = [rl["ipv6"] for rl in r4.rails[d]]
        r = getent(r4, s, "hosts", name)
        assert r.returncode == 0, (what, r.stderr)
        assert [row[0] for row in rows(r)] == v6, (what, r.stdout)
        assert all(row[1] == name for row in rows(r)), (what, r.stdout)
        r = getent(r4, s, "ahostsv4", name)
        assert r.returncode == 0, (what, r.stderr)
        assert unique_addrs(r) == v4, (what, r.stdout)
        res = run([helpers["nss_glibc"], "ib", "byname2", name, str(AF_INET)],
                  env=client_env(socket_path=r4.sock(s)), timeout=60)
        kv = parse_kv(res.stdout)
        assert kv.get("ret") == "0" and kv.get("name") == name, (what, res.stdout)
        assert kv["addrs"].split(",") == v4, (what, res.stdout)


def gai_ipv4(c, s, helpers, node, src=None):
    """ibres_getaddrinfo(@node) on node @s, family 0, with the hints' source
    @src: the return, then the (destination, source) IPv4 addresses of its
    IP entries in order, each checked to follow an AF_IB entry with a path
    from that source's rail to that destination's."""
    r = run([helpers["nss_libibres"], "gai", node, "7471", "-", "0"] + ([src] if src else []),
            env=client_env(socket_path=c.sock(s)), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    ret = int(parse_kv(r.stdout.split("entry ")[0])["ret"])
    ents, pairs = gai_entries(r.stdout), []
    for ib, ip in zip(ents[0::2], ents[1::2]):
        assert ib["family"] == "27" and ip["family"] == "2", r.stdout
        dst, src_ip = ip["dst"].split("/")[1], ip["src"].split("/")[1]
        pairs.append((dst, src_ip))
        d = next(rl for j in c.nodes for rl in c.rails[j] if rl["ipv4"] == dst)
        sr = next(rl for rl in c.rails[s] if rl["ipv4"] == src_ip)
        assert ib["paths"] and all("/dgid%s/sgid%s/" % (d["gid"], sr["gid"]) in p
                                   for p in ib["paths"]), r.stdout
    return ret, pairs


def test_getaddrinfo_every_rail(r4, helpers):
    """ibres_getaddrinfo(nodeD): a pair of entries (AF_IB, IPv4) per rail,
    rail 0 first, each from the source on that rail with the path between
    them; with a source on rail 1 in the hints, rail 1's pair alone; a
    rail's alias or address with a source on another rail: EADDRNOTAVAIL,
    never a pair across planes; a source that is no endpoint of ours: the first address,
    without a path, as before."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        name = r4.nodes[d]["name"]
        ret, pairs = gai_ipv4(r4, s, helpers, name)
        assert ret == 0 and pairs == [(rl["ipv4"], sl["ipv4"])
                                      for rl, sl in zip(r4.rails[d], r4.rails[s])], pairs
        ret, pairs = gai_ipv4(r4, s, helpers, name, rail(r4, s, 1)["ipv4"])
        assert ret == 0 and pairs == [(rail(r4, d, 1)["ipv4"], rail(r4, s, 1)["ipv4"])], pairs
        ret, pairs = gai_ipv4(r4, s, helpers, rail(r4, d, 2)["alias"], rail(r4, s, 1)["ipv4"])
        assert ret == -errno.EADDRNOTAVAIL and not pairs, (ret, pairs)
        # a rail's address, numeric, likewise (it gave the pair, no path)
        ret, pairs = gai_ipv4(r4, s, helpers, rail(r4, d, 2)["ipv4"], rail(r4, s, 1)["ipv4"])
        assert ret == -errno.EADDRNOTAVAIL and not pairs, (ret, pairs)
        # a source that is no endpoint of ours: the first address, as ever
        r = run([helpers["nss_libibres"], "gai", name, "7471", "-", "0", "127.0.0.1"],
                env=client_env(socket_path=r4.sock(s)), timeout=60)
        ents = gai_entries(r.stdout)
        assert r.stdout.startswith("ret=0\n") and len(ents) == 2, r.stdout
        assert ents[1]["dst"].split("/")[1] == rail(r4, d, 0)["ipv4"], r.stdout


def test_nss_af_ib_every_rail(r4, helpers):
    """gethostbyname2(nodeD, AF_IB): every rail's GID, rail 0 first; by a
    rail's alias, that rail's GID; gethostbyaddr of any rail's GID: nodeD."""
    for s, d in itertools.product(sorted(r4.nodes), repeat=2):
        env = client_env(socket_path=r4.sock(s))
        for key, want in [(r4.nodes[d]["name"], [rl["gid"] for rl in r4.rails[d]])] + \
                [(rl["alias"], [rl["gid"]]) for rl in r4.rails[d]]:
            res = run([helpers["nss_glibc"], "ib", "byname2", key, "27"], env=env, timeout=60)
            kv = parse_kv(res.stdout)
            assert kv.get("ret") == "0" and kv.get("af") == "27", (s, key, res.stdout)
            assert kv["addrs"].split(",") == want, (s, key, res.stdout)
        for rl in r4.rails[d]:
            res = run([helpers["nss_glibc"], "ib", "byaddr", rl["gid"], "27"], env=env,
                      timeout=60)
            kv = parse_kv(res.stdout)
            assert kv.get("ret") == "0" and kv.get("name") == r4.nodes[d]["name"], \
                (s, rl["gid"], res.stdout)


def test_nss_rail_alias_gives_that_rail(r4):
    """getent hosts node2-ib3: rail 3's address alone (canonical name node2)."""
    for s in sorted(r4.nodes):
        for r in range(RAILS):
            rl = rail(r4, 2, r)
            r6 = getent(r4, s, "hosts", rl["alias"])
            assert r6.returncode == 0, r6.stderr
            assert [row[:1] for row in rows(r6)] == [[rl["ipv6"]]], (s, r, r6.stdout)
            assert rows(r6)[0][1] == "node2" and rl["alias"] in rows(r6)[0][1:], r6.stdout
            r4v = getent(r4, s, "ahostsv4", rl["alias"])
            assert r4v.returncode == 0, r4v.stderr
            assert unique_addrs(r4v) == [rl["ipv4"]], (s, r, r4v.stdout)


def test_nss_reverse_any_rail(r4):
    """Reverse lookup of any rail's IPv4 or IPv6 address: the host's canonical name."""
    for s in sorted(r4.nodes):
        for d in sorted(r4.nodes):
            for rl in r4.rails[d]:
                for addr in (rl["ipv4"], rl["ipv6"]):
                    r = getent(r4, s, "hosts", addr)
                    assert r.returncode == 0, (s, addr, r.stderr)
                    assert rows(r)[0][:2] == [addr, r4.nodes[d]["name"]], (s, addr, r.stdout)


# --- forgeries on one rail ------------------------------------------------------------

EVIL_GID = "fe80::2:c903:1:99"
EVIL_V4 = "198.19.1.99"
EVIL_V6 = "2001:db8:0:1::99"
FORGER = 3     # the node whose namespace sends the forgeries, on its rail 1


@pytest.fixture(scope="module")
def f3(tmp_path_factory):
    """3 nodes x 4 rails, planes: node 3's namespace forges on rail 1."""
    c = rails_cluster(tmp_path_factory.mktemp("f3"), 3)
    try:
        yield c
    finally:
        c.down()


def forgery(kind, c):
    """A forged ANNOUNCE sent on rail 1; the keys it claims are node2's."""
    n2 = c.rails[2]
    g = group_items()
    evil = dict(gid=EVIL_GID, ipv4=[EVIL_V4], ipv6=[EVIL_V6], lid=0x99)
    if kind == "name":            # node2's name, another endpoint on rail 1
        return identity_items("node2", **evil) + g
    if kind == "name-lid":        # ... and node2's LID on this plane
        return identity_items("node2", **dict(evil, lid=n2[1]["lid"])) + g
    if kind == "rails-join":      # ... claiming to be one of node2's rails
        return identity_items("node2", **evil) + \
            rails_item([rl["gid"] for rl in n2] + [EVIL_GID]) + g
    if kind == "rails-copy":      # ... with node2's own rails list (which lacks it)
        return identity_items("node2", **evil) + rails_item([rl["gid"] for rl in n2]) + g
    if kind == "rail1-alias":     # node2-ib1, rail 1's own name
        return identity_items("node98", aliases=["node2-ib1"], **evil) + g
    if kind == "rail0-alias":     # node2-ib0, rail 0's own name, heard on rail 1
        return identity_items("node98", aliases=["node2-ib0"], **evil) + g
    if kind == "rail1-addr":
        return identity_items("node98", **dict(evil, ipv4=[n2[1]["ipv4"]])) + g
    if kind == "rail0-addr":
        return identity_items("node98", **dict(evil, ipv4=[n2[0]["ipv4"]])) + g
    if kind == "rail1-gid":
        return identity_items("node98", **dict(evil, gid=n2[1]["gid"])) + g
    if kind == "rail0-gid":
        return identity_items("node98", **dict(evil, gid=n2[0]["gid"])) + g
    if kind == "rail0-replay":    # node2's rail 0 announce, word for word, on rail 1,
        # where LID 2 is rail 1's: rail 0's endpoint may not appear on fabric 1
        r0 = n2[0]
        return identity_items("node2", r0["gid"], [r0["ipv4"]], [r0["ipv6"]], lid=r0["lid"],
                              aliases=[r0["alias"]]) + \
            rails_item([rl["gid"] for rl in n2]) + g
    if kind == "rail0-newlid":    # node2's rail 0 identity with a new LID, on rail 1:
        # a LID change of rail 0's endpoint that fabric 1 cannot have seen
        r0 = n2[0]
        return identity_items("node2", r0["gid"], [r0["ipv4"]], [r0["ipv6"]], lid=0x99,
                              aliases=[r0["alias"]]) + \
            rails_item([rl["gid"] for rl in n2]) + g
    if kind == "rail1-newpkey":   # a partition of node2's rail-1 port it does not have,
        # its GID and LID, node2's rails list: sent on rail 1's default partition
        r1 = n2[1]
        return identity_items("node2", r1["gid"], [EVIL_V4], [EVIL_V6], lid=r1["lid"],
                              pkey=0x8005) + rails_item([rl["gid"] for rl in n2]) + g
    raise ValueError(kind)


def assert_rails_intact(c):
    """Every node still maps every node's host name, rail aliases, rail
    addresses, GIDs and LIDs to the real endpoints, and holds nothing forged;
    the paths on rail 0 and rail 1 are the real ones."""
    for s, d in ((1, 2), (2, 1)):
        for r in (0, 1):
            assert_rail_path(c, s, d, r, "n", rail(c, s, r)["alias"], c.nodes[d]["name"])
            assert_rail_path(c, s, d, r, "i", rail(c, s, r)["ipv4"], rail(c, d, r)["ipv4"])
    for k in (1, 2):
        sock = c.sock(k)
        for j in c.nodes:
            name = c.nodes[j]["name"]
            status, rec = host(sock, name, cache_only=True)
            assert status == ST_SUCCESS and rec["names"][0] == name, (k, name, rec)
            assert EVIL_GID not in rec["gids"] and EVIL_V4 not in rec["ipv4"], (k, name, rec)
            for rl in c.rails[j]:
                for key, kw in ((rl["alias"], {}), (rl["ipv4"], {}), (rl["ipv6"], {}),
                                (rl["gid"], {"gid": True})):
                    status, rec = host(sock, key, cache_only=True, **kw)
                    assert status == ST_SUCCESS, "node%d lost %s (%s)" % (k, key, status)
                    assert rec["names"][0] == name and rec["gids"][0] == rl["gid"], \
                        "node%d: %s now means %s" % (k, key, rec)
        for e in cache_list(sock):
            assert EVIL_GID not in e["gids"], (k, e)
            assert "node98" not in e["names"], (k, e)
            assert not {EVIL_V4, EVIL_V6} & set(e["ipv4"] + e["ipv6"]), (k, e)
            if e.get("keytype") == KEY_LID and e.get("origin") == ORIGIN_FABRIC:
                lid, fabric = lid_key(e)   # planes: node K is LID K on every fabric
                assert lid in c.nodes and e["names"][0] == "node%d" % lid and \
                    e["gids"][0] == rail(c, lid, fabric)["gid"], \
                    "node%d: LID %d on fabric %d means %s" % (k, lid, fabric, e)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["name", "name-lid", "rails-join", "rails-copy",
                                  "rail1-alias", "rail0-alias", "rail1-addr", "rail0-addr",
                                  "rail1-gid", "rail0-gid", "rail0-replay", "rail1-newpkey",
                                  # last: when it poisons, nothing after it uses f3
                                  "rail0-newlid"])
def test_forged_endpoint_on_one_rail(f3, kind):
    """A forged endpoint sent on rail 1 claiming node2's name (or its LID on
    that plane, a place among its rails, a rail's alias, address or GID) is
    dropped and counted as a conflict by node1 and node2; it takes none of
    rail 0's or rail 1's keys. (A datagram carrying node2's own GID may be
    taken by node2 for its own looped-back multicast: fabric_rx_self.) One
    naming a partition of node2's port, heard on rail 1's default partition,
    is another partition than the one that hears it: fabric_rx_mismatch."""
    c = f3
    rl3 = rail(c, FORGER, 1)
    group = "239.255.73.3"   # rail 1's first group (test/fabric/README.md "Rails")
    before = {k: stats(c.sock(k)) for k in (1, 2)}
    send_datagrams(c.netns(FORGER), group, FABRIC_PORT,
                   [fabric_msg(FW_ANNOUNCE, forgery(kind, c))], src=rl3["ipv4"])
    allowed = {1: ("fabric_rx_conflict",), 2: ("fabric_rx_conflict",)}
    if kind in ("rail1-gid", "rail0-gid", "rail0-replay", "rail0-newlid"):
        allowed[2] = ("fabric_rx_conflict", "fabric_rx_self")
    if kind == "rail1-newpkey":
        allowed = {1: ("fabric_rx_mismatch",), 2: ("fabric_rx_mismatch", "fabric_rx_self")}
    seen = ("fabric_rx_conflict", "fabric_rx_self", "fabric_rx_mismatch", "fabric_rx")

    def counted():
        d = {k: {n: stats(c.sock(k))[n] - before[k][n] for n in seen} for k in (1, 2)}
        return d if all(sum(d[k][n] for n in allowed[k]) >= 1 for k in (1, 2)) else None
    try:
        wait_until(counted, 2.0, what="the forgery counted")
    except AssertionError:
        pass
    d = {k: {n: stats(c.sock(k))[n] - before[k][n] for n in seen} for k in (1, 2)}
    assert_rails_intact(c)
    for k in (1, 2):
        assert sum(d[k][n] for n in allowed[k]) == 1, \
            "node%d counted %s; expected one of %s\n%s" % (k, d[k], allowed[k], c.logs())


# --- configuration --------------------------------------------------------------------

def check_config(path):
    return run([IBRESD, "--check-config", "--config", str(path)], timeout=30)


def test_config_multi_rail_accepted(r4):
    """A node's four-rail config (one host name on every rail, one alias each) passes."""
    for k in r4.nodes:
        r = check_config(os.path.join(r4.dir, "node%d" % k, "ibresd.conf"))
        assert r.returncode == 0, r.stdout + r.stderr


def test_config_same_gid_and_pkey_refused(r4, tmp_path):
    """Two endpoints of one host (same first name) with the same GID and
    P_Key: refused, naming both endpoints."""
    conf = r4.config(1)
    gid0, gid1 = rail(r4, 1, 0)["gid"], rail(r4, 1, 1)["gid"]
    bad = conf.replace("gid = %s\n" % gid1, "gid = %s\n" % gid0)
    assert bad != conf
    p = tmp_path / "same-gid.conf"
    p.write_text(bad)
    r = check_config(p)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "same GID and P_Key" in out and "'ib0'" in out and "'ib1'" in out, out
    # another P_Key on the same GID is a second partition, not a duplicate
    ok = bad.replace("[endpoint ib1]\n", "[endpoint ib1]\n", 1)
    ok = re.sub(r"(\[endpoint ib1\](?:\n(?!\[).*)*?\npkey = )0xffff", r"\g<1>0x8001", ok)
    assert ok != bad
    p.write_text(ok)
    r = check_config(p)
    assert r.returncode == 0, r.stdout + r.stderr


# --- more shapes: the host name as source, one subnet, IPv6 groups, restarts --------

def test_host_name_as_source_is_the_first_rail(r4):
    """-s nodeS (the name every rail carries) to nodeD: rail 0's path, as
    ibacm's short host name names the first port."""
    for s, d in itertools.permutations(sorted(r4.nodes), 2):
        assert_rail_path(r4, s, d, 0, "n", r4.nodes[s]["name"], r4.nodes[d]["name"])
        assert_rail_path(r4, s, d, 0, "n", r4.nodes[s]["name"], rail(r4, d, 0)["alias"])




@pytest.mark.timeout(120)
def test_one_subnet_unique_lids(cluster_factory):
    """Without --planes (one subnet, LID K + 1000*R): the same rail-to-rail
    answers, each with its rail's LIDs."""
    c = cluster_factory(2, "--rails", 3)
    wait_rails(c)
    for k in c.nodes:
        assert [rl["lid"] for rl in c.rails[k]] == [k, k + 1000, k + 2000]
    for r in range(3):
        for s, d in itertools.permutations(sorted(c.nodes), 2):
            assert_rail_path(c, s, d, r, "n", rail(c, s, r)["alias"], c.nodes[d]["name"])
            assert_rail_path(c, s, d, r, "i", rail(c, s, r)["ipv4"], rail(c, d, r)["ipv4"])
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0


@pytest.mark.timeout(120)
def test_ipv6_groups_per_rail(cluster_factory):
    """--ipv6: each rail's groups are ff15::49XX of its own, asked on the fabric
    (announcements off): still rail to rail."""
    c = cluster_factory(2, "--rails", 3, "--planes", "--ipv6",
                        "--set", "resolve.announce_interval=0")
    c.wait_settled()
    for r in range(3):
        for s, d in itertools.permutations(sorted(c.nodes), 2):
            assert_rail_path(c, s, d, r, "n", rail(c, s, r)["alias"], rail(c, d, r)["alias"])
            assert_rail_path(c, s, d, r, "i", rail(c, s, r)["ipv6"], rail(c, d, r)["ipv6"])
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0


@pytest.mark.timeout(120)
def test_one_ipv6_group_on_every_rail(cluster_factory):
    """Every rail with the same IPv6 group (ff15::4901, as the man page's example
    gives it): the kernel hands an IPv6 multicast datagram to every socket that
    joined its group, on whichever interface, so rail 1's socket heard rail 0's
    peers, took them for its own, and answered rail 1's source with rail 0's
    port. Each rail's socket is bound to its interface: rail to rail only."""
    c = cluster_factory(2, "--rails", 2, "--planes", "--ipv6",
                        "--set", "endpoint.group=ff15::4901 mtu=2048 rate=10")
    wait_rails(c)
    c.wait_settled()
    for s, d in itertools.permutations(sorted(c.nodes), 2):
        for r in range(2):
            assert_rail_path(c, s, d, r, "n", rail(c, s, r)["alias"], rail(c, d, r)["alias"])
        assert_no_path_across(c, s, d, 2)
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0, c.logs()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", ["TERM", "KILL"])
def test_restarted_node_rejoins_on_every_rail(cluster_factory, sig):
    """A node restarted (after a GOODBYE, or killed without one) is its own
    host again on every rail: its rails join, no conflict, every rail resolves."""
    c = cluster_factory(2, "--rails", RAILS, "--planes")
    wait_rails(c)
    c.kill(2, sig)
    c.start(2)
    wait_rails(c)
    for r in range(RAILS):
        for s, d in itertools.permutations(sorted(c.nodes), 2):
            assert_rail_path(c, s, d, r, "n", rail(c, s, r)["alias"], c.nodes[d]["name"])
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0, c.logs()
    for s in c.nodes:
        r = getent(c, s, "ahostsv4", "node2")
        assert unique_addrs(r) == [rl["ipv4"] for rl in c.rails[2]], r.stdout


# --- eight rails: the most a node has --------------------------------------------------

AF_IB = 27


@pytest.fixture(scope="module")
def r8(tmp_path_factory):
    """2 nodes x 8 rails, planes; read-only."""
    c = Cluster(tmp_path_factory.mktemp("r8"), 2, "--rails", 8, "--planes")
    c.up()
    try:
        wait_rails(c)
        c.wait_settled()
        yield c
    finally:
        c.down()


@pytest.mark.timeout(120)
def test_eight_rails(r8):
    """8 rails: each resolves rail to rail; the host name gives all 8 IPv4 and
    IPv6 addresses in rail order; rail 7's alias and address give rail 7."""
    for r in range(8):
        for s, d in itertools.permutations(sorted(r8.nodes), 2):
            assert_rail_path(r8, s, d, r, "n", rail(r8, s, r)["alias"], r8.nodes[d]["name"])
    for s in sorted(r8.nodes):
        r = getent(r8, s, "hosts", "node2")
        assert [row[0] for row in rows(r)] == [rl["ipv6"] for rl in r8.rails[2]], r.stdout
        r = getent(r8, s, "ahostsv4", "node2")
        assert unique_addrs(r) == [rl["ipv4"] for rl in r8.rails[2]], r.stdout
        r7 = rail(r8, 2, 7)
        r = getent(r8, s, "hosts", r7["alias"])
        assert [row[:2] for row in rows(r)] == [[r7["ipv6"], "node2"]], r.stdout
        r = getent(r8, s, "hosts", r7["ipv4"])
        assert rows(r)[0][:2] == [r7["ipv4"], "node2"], r.stdout
    for k in r8.nodes:
        assert stats(r8.sock(k))["fabric_rx_conflict"] == 0


def test_eight_rails_af_ib_every_gid(r8, helpers):
    """gethostbyname2(node2, AF_IB): every rail's GID, rail 0 first."""
    res = run([helpers["nss_glibc"], "ib", "byname2", "node2", str(AF_IB)],
              env=client_env(socket_path=r8.sock(1)), timeout=60)
    kv = parse_kv(res.stdout)
    assert kv.get("ret") == "0", res.stdout
    assert kv["addrs"].split(",") == [rl["gid"] for rl in r8.rails[2]], res.stdout


def test_eight_rails_every_alias(r8):
    """getent hosts node2: the host name and every rail's alias."""
    r = getent(r8, 1, "hosts", "node2")
    assert rows(r)[0][1:] == ["node2"] + [rl["alias"] for rl in r8.rails[2]], r.stdout


@pytest.mark.timeout(180)
def test_eight_rails_boot_complete(cluster_factory):
    """Six nodes of eight rails (planes) boot at once: each fabric of each
    node needs K = 3 settled peers heard on it to vouch for it
    (doc/fabric-protocol.md, "Per fabric"), 40 peer endpoints in all. Every
    node counts its directory complete from its own range queries long
    before the first announce round (30 s): the peers it may ask are kept
    port by port (a list the first fabrics filled left the last ports with
    fewer than K), and a peer whose early digest claimed more than the node
    then held is no longer asked first once the node holds as much."""
    c = cluster_factory(6, "--rails", 8, "--planes")
    wait_rails(c, timeout=15.0)
    c.wait_settled(complete=0.0)
    # the first periodic announces go out 27 s after the start at the soonest
    left = c.started + 20.0 - time.monotonic()
    try:
        wait_until(lambda: all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes),
                   max(left, 1.0), what="every node counts its directory complete")
    except AssertionError as e:
        raise AssertionError("%s: %s\n%s" % (e, {k: stats(c.sock(k))["directory_complete"]
                                                 for k in c.nodes}, c.logs()))
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", [
    "evil-gid",
    "rail0-gid"])
def test_goodbye_on_another_rail(cluster_factory, kind):
    """A GOODBYE sent on rail 1 for node2's name from a GID that is not
    there (another GID, or node2's rail-0 GID, which fabric 1 never heard)
    removes nothing: every rail of node2 still resolves, rail 0 included."""
    c = cluster_factory(3, "--rails", 2, "--planes")
    wait_rails(c)
    c.wait_settled()
    n2 = c.rails[2]
    gid = EVIL_GID if kind == "evil-gid" else n2[0]["gid"]
    items = identity_items("node2", gid, lid=0x99 if kind == "evil-gid" else n2[0]["lid"],
                           aliases=[] if kind == "evil-gid" else [n2[0]["alias"]])
    before = {k: stats(c.sock(k)) for k in (1, 2)}
    send_datagrams(c.netns(FORGER), "239.255.73.3", FABRIC_PORT,
                   [fabric_msg(FW_GOODBYE, items)], src=rail(c, FORGER, 1)["ipv4"])
    wait_until(lambda: stats(c.sock(1))["fabric_rx"] > before[1]["fabric_rx"], 2.0,
               what="node1 received the GOODBYE")
    for r in (0, 1):
        status, rec = host(c.sock(1), n2[r]["alias"], cache_only=True)
        assert status == ST_SUCCESS and rec["gids"] == [n2[r]["gid"]], \
            "node1 lost node2's rail %d: %s %s" % (r, status, rec)
        assert_rail_path(c, 1, 2, r, "n", rail(c, 1, r)["alias"], "node2")
    assert stats(c.sock(1))["fabric_goodbyes_rx"] == before[1]["fabric_goodbyes_rx"]


@pytest.mark.timeout(150)
def test_missed_goodbye_named_on_every_rail(cluster_factory):
    """node4 misses node3's GOODBYEs on both rails (the switch drops what
    reaches either of its ports). Nodes 1 and 2 heard them, and their
    announces on each rail name node3: node4 keeps each of node3's two
    endpoints only until its next announce could come, on the rail that
    named it, and then forgets node3 on both rails; every other rail of
    every node stays."""
    c = cluster_factory(4, "--rails", 2, "--planes", "--set", "resolve.announce_interval=5s",
                        "--set", "resolve.addr_ttl=600s")
    wait_rails(c)
    c.wait_settled(complete=5.0)
    with cut_off(c, 4, rails=(0, 1)):
        c.kill(3, "TERM")
        time.sleep(0.3)
    for r in (0, 1):
        assert knows(c, 4, rail(c, 3, r)["alias"]), \
            "node4 heard node3's GOODBYE on rail %d: the test did not cut it off" % r
    wait_until(lambda: stats(c.sock(4))["fabric_gone_shortened"] == 2, 10.0,
               what="node4 hears node3 named on both rails")
    wait_until(lambda: not any(knows(c, 4, rail(c, 3, r)["alias"]) for r in (0, 1)), 25.0,
               what="node4 forgets node3 on both rails")
    assert not knows(c, 4, "node3")
    for k in (1, 2, 4):
        for j in (1, 2, 4):
            for r in (0, 1):
                assert knows(c, k, rail(c, j, r)["alias"]), (k, j, r)
    for k in (1, 2):
        assert stats(c.sock(k))["fabric_gone_sent"] >= 2
        assert stats(c.sock(k))["fabric_gone_shortened"] == 0


ST_ENOTCONN = 5             # IBRES_STATUS_ENOTCONN


def endpoint_states(c, k):
    """`ibresctl endpoints --json` of node @k: label -> state."""
    r = run([IBRESCTL, "--json", "endpoints"], env=dict(os.environ, IBRES_SOCKET=c.sock(k)),
            timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return {e["label"]: e["state"] for e in json.loads(r.stdout)["endpoints"]}


def reload_with(c, k, text):
    """Node @k's config replaced by @text and reloaded (SIGHUP), once it logged so."""
    done = c.log(k).count("configuration reloaded")
    with open(os.path.join(c.dir, "node%d" % k, "ibresd.conf"), "w") as f:
        f.write(text)
    c.kill(k, "HUP")
    wait_until(lambda: c.log(k).count("configuration reloaded") > done, 10,
               what="node%d reloaded" % k)


def knows(c, k, key):
    return host(c.sock(k), key, cache_only=True)[0] == ST_SUCCESS


@pytest.mark.timeout(120)
def test_host_known_elsewhere_is_asked_on_the_source_rail(cluster_factory):
    """Announcements off (no directory is ever known complete): node 1 learns
    node 2 from a lookup while node 2's rail 1 is down, so on rail 0 alone.
    Back up, a RESOLVE of node 2's name from node 1's rail-1 source asks rail
    1's fabric and gets rail 1's path (it was EDESTADDR at once, forever: a
    host known elsewhere was taken for one not on that fabric, as after a
    boot's lost announcements). While rail 1 is down, the ask ends in
    EDESTADDR and is not made again for negative_ttl. Rail 0's alias from
    rail 1 is EDESTADDR still."""
    c = cluster_factory(2, "--rails", 2, "--planes", "--set", "resolve.announce_interval=0")
    src0, src1 = rail(c, 1, 0)["ipv4"], rail(c, 1, 1)["ipv4"]
    c.link(2, "down", rail=1)
    wait_until(lambda: path_from(c, 1, src0, "node2")[0] == ST_SUCCESS, 20, interval=0.5,
               what="node1 learns node2 on rail 0")
    assert not knows(c, 1, rail(c, 2, 1)["alias"])
    # asked on rail 1, where nothing answers: EDESTADDR; not asked there
    # again within negative_ttl (2 s): EDESTADDR at once
    assert path_from(c, 1, src1, "node2")[0] == ST_EDESTADDR
    sent = stats(c.sock(1))["fabric_requests_sent"]
    assert path_from(c, 1, src1, "node2")[0] == ST_EDESTADDR
    assert stats(c.sock(1))["fabric_requests_sent"] == sent
    c.link(2, "up", rail=1)

    def rail1_path():
        status, path = path_from(c, 1, src1, "node2")
        return status == ST_SUCCESS and (path["sgid"], path["dgid"]) == (
            rail(c, 1, 1)["gid"], rail(c, 2, 1)["gid"])
    wait_until(rail1_path, 40, interval=0.5, what="node2's rail-1 path from node1's rail 1")
    status, path = path_from(c, 1, src1, rail(c, 2, 0)["alias"])
    assert status == ST_EDESTADDR and path is None, (status, path)


@pytest.mark.timeout(120)
def test_rail_down_and_back(cluster_factory):
    """Node 2's rail 1 loses its link. Node 2 says so on its other rails and
    node 1 drops that endpoint only: rail 1's name, address and GID no
    longer answer there, rails 0 and 2 do, and the host name lists two rails.
    Node 2 answers nothing on rail 1 (it forgot what it learned there): its
    source there gets ENOTCONN, no source takes rail 0. Back up, node 2
    announces itself, and both know rail 1 again."""
    c = cluster_factory(2, "--rails", 3, "--planes")
    wait_rails(c)
    c.wait_settled()
    n1r1, n2r1 = rail(c, 1, 1), rail(c, 2, 1)
    before = stats(c.sock(1))["fabric_goodbyes_rx"]
    c.link(2, "down", rail=1)
    wait_until(lambda: not knows(c, 1, n2r1["alias"]), 5,
               what="node1 drops node2's rail 1 when node2 says it is down")
    assert stats(c.sock(1))["fabric_goodbyes_rx"] > before
    for key in (n2r1["ipv4"], n2r1["ipv6"]):
        assert not knows(c, 1, key), key
    assert host(c.sock(1), n2r1["gid"], cache_only=True, gid=True)[0] != ST_SUCCESS
    for r in (0, 2):
        assert knows(c, 1, rail(c, 2, r)["alias"]), r
    status, rec = host(c.sock(1), "node2", cache_only=True)
    assert status == ST_SUCCESS and rec["ipv4"] == [rail(c, 2, 0)["ipv4"], rail(c, 2, 2)["ipv4"]]
    # node 2's own side: the rail is down, nothing learned on it is served
    wait_until(lambda: not knows(c, 2, n1r1["alias"]), 5, what="node2 forgets rail 1's peers")
    assert endpoint_states(c, 2) == {"ib0": "up", "ib1": "down", "ib2": "up"}
    cl = Client(c.sock(2))
    try:
        status, path = resolve(cl, "node1", n2r1["ipv4"])
        assert status == ST_ENOTCONN and path is None, (status, path)
        status, path = resolve(cl, "node1")
        assert status == ST_SUCCESS, status
        assert path["sgid"] == rail(c, 2, 0)["gid"], path
    finally:
        cl.close()
    # back up: announced, and answered
    c.link(2, "up", rail=1)
    wait_until(lambda: knows(c, 1, n2r1["alias"]) and knows(c, 2, n1r1["alias"]), 10,
               what="rail 1 known again on both nodes")
    f, out = acme_path(c, 2, "n", n2r1["alias"], "node1")
    assert f is not None and str(ipaddress.IPv6Address(f["dgid"])) == n1r1["gid"], out
    assert set(endpoint_states(c, 2).values()) == {"up"}


@pytest.mark.timeout(120)
def test_lost_rail_down_is_repeated(cluster_factory):
    """Node 3 misses node 2's RAIL_DOWN for rail 1 (the switch drops whatever
    reaches node 3 on rail 0, the rail that said it). Node 2 says it again with its
    next announcements (goodbye_repeats): node 3 drops node 2's rail 1 within a round,
    not at addr_ttl; node 1, which heard the first, counts no mismatch for the
    repeats."""
    c = cluster_factory(3, "--rails", 2, "--planes", "--set", "resolve.announce_interval=3s",
                        "--set", "resolve.addr_ttl=600s")
    wait_rails(c)
    c.wait_settled()
    n2r1 = rail(c, 2, 1)
    before = stats(c.sock(1))
    with cut_off(c, 3, rails=(0,)):
        c.link(2, "down", rail=1)
        wait_until(lambda: not knows(c, 1, n2r1["alias"]), 5,
                   what="node1 drops node2's rail 1 at the first RAIL_DOWN")
        time.sleep(0.3)
    assert knows(c, 3, n2r1["alias"]), "node3 heard the first RAIL_DOWN: nothing cut off"
    wait_until(lambda: not knows(c, 3, n2r1["alias"]), 10,
               what="node3 drops node2's rail 1 at a repeat")
    assert knows(c, 3, rail(c, 2, 0)["alias"])
    wait_until(lambda: stats(c.sock(2))["fabric_rail_downs_sent"] >= 3, 10,
               what="node2 repeats its RAIL_DOWN")
    assert stats(c.sock(1))["fabric_rx_mismatch"] == before["fabric_rx_mismatch"]
    c.link(2, "up", rail=1)
    wait_until(lambda: knows(c, 1, n2r1["alias"]) and knows(c, 3, n2r1["alias"]), 10,
               what="rail 1 known again")


@pytest.mark.timeout(120)
def test_reload_says_goodbye_only_for_a_renamed_endpoint(cluster_factory):
    """A reload that changes nothing says nothing to the peers, nor does one that
    only relabels an endpoint, not even before node 2's next datagram (node 2 asks
    the fabric for node 1 again, which a goodbye would precede); one
    that renames node 2's rail 1 alone (its own host name there) says goodbye on
    that rail under the old identity and announces the new one: node 1 drops
    nothing of rail 0 and knows rail 1 by its new name at once, with no conflict
    counted."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    c.wait_settled()
    before = stats(c.sock(1))
    conf = os.path.join(c.dir, "node2", "ibresd.conf")
    text = c.config(2)
    for k, changed in enumerate((text, text.replace("[endpoint ib1]", "[endpoint rail1]"))):
        with open(conf, "w") as f:
            f.write(changed)
        c.kill(2, "HUP")
        wait_until(lambda: c.log(2).count("configuration reloaded") >= k + 1, 10,
                   what="node2 reloaded")
        rx = stats(c.sock(1))["fabric_rx"]
        assert run([IBRESCTL, "-s", c.sock(2), "cache", "flush", "node1"]).returncode == 0
        assert host(c.sock(2), "node1")[0] == ST_SUCCESS
        wait_until(lambda: stats(c.sock(1))["fabric_rx"] >= rx + 2, 10,
                   what="node1 heard node2 ask for it on both rails")
        after = stats(c.sock(1))
        assert after["fabric_goodbyes_rx"] == before["fabric_goodbyes_rx"], (k, after)
        assert knows_every_rail(c, 1)
    head, _, tail = text.partition("[endpoint ib1]")
    renamed = head + "[endpoint ib1]" + tail.replace("name = node2\n", "name = spare2\n", 1)
    assert renamed != text
    with open(conf, "w") as f:
        f.write(renamed)
    c.kill(2, "HUP")
    wait_until(lambda: knows(c, 1, "spare2"), 10, what="node1 knows node2's rail 1 as spare2")
    wait_until(lambda: c.log(2).count("configuration reloaded") == 3, 10,
               what="node2's third reload logged")
    status, rec = host(c.sock(1), "spare2", cache_only=True)
    assert status == ST_SUCCESS and rec["gids"] == [rail(c, 2, 1)["gid"]], rec
    status, rec = host(c.sock(1), "node2", cache_only=True)
    assert status == ST_SUCCESS and rec["gids"] == [rail(c, 2, 0)["gid"]], rec
    after = stats(c.sock(1))
    assert after["fabric_goodbyes_rx"] == before["fabric_goodbyes_rx"] + 1, after
    assert after["fabric_rx_conflict"] == before["fabric_rx_conflict"], after


@pytest.mark.timeout(120)
def test_rename_while_the_port_is_down_says_goodbye_once_up(cluster_factory):
    """Node 2 has one rail: when its link goes down no other rail can tell
    node 1, which keeps node 2's record. A reload renames node 2 while the
    port is down (nothing can be sent); once it is up, the old identity says
    goodbye before the new one speaks, and node 1 knows the port as spare2
    at once, with no conflict, rather than refuse the new name (a claim on a
    GID another host owns) until the old record expires."""
    c = cluster_factory(2)
    c.wait_settled()
    assert knows(c, 1, "node2")
    before = stats(c.sock(1))
    c.link(2, "down", rail=0)
    wait_until(lambda: "is down" in c.log(2), 10, what="node2 saw its port go down")
    text = c.config(2)
    renamed = text.replace("name = node2\n", "name = spare2\n", 1)
    assert renamed != text
    reload_with(c, 2, renamed)
    assert knows(c, 1, "node2"), "node 1 still holds the old identity"
    c.link(2, "up", rail=0)
    wait_until(lambda: knows(c, 1, "spare2"), 10, what="node1 knows node2's port as spare2")
    assert not knows(c, 1, "node2")
    after = stats(c.sock(1))
    assert after["fabric_goodbyes_rx"] == before["fabric_goodbyes_rx"] + 1, after
    assert after["fabric_rx_conflict"] == before["fabric_rx_conflict"], after
    assert re.search(r"said goodbye as node2 \(\S+ P_Key 0xffff\) before it speaks as spare2",
                     c.log(2))


@pytest.mark.timeout(120)
def test_rename_with_announcements_off_says_goodbye_at_once(cluster_factory):
    """With announcements off nothing goes out after a reload by itself: node 2
    renamed by one still says goodbye under its old name at once, so node 1 drops
    it then, not when the record expires, and finds the new name by asking, with
    no conflict (node2b: a name the cluster's name_pattern node* admits, which
    node 1 asks the fabric for)."""
    c = cluster_factory(2, "--set", "resolve.announce_interval=0")
    c.wait_settled()
    wait_until(lambda: host(c.sock(1), "node2")[0] == ST_SUCCESS, 10,
               what="node1 knows node2")
    before = stats(c.sock(1))
    text = c.config(2)
    renamed = text.replace("name = node2\n", "name = node2b\n", 1)
    assert renamed != text
    reload_with(c, 2, renamed)
    wait_until(lambda: not knows(c, 1, "node2"), 10, what="node1 dropped node2 at the goodbye")
    status, rec = host(c.sock(1), "node2b")
    assert status == ST_SUCCESS and rec["gids"] == [rail(c, 2, 0)["gid"]], rec
    after = stats(c.sock(1))
    assert after["fabric_goodbyes_rx"] == before["fabric_goodbyes_rx"] + 1, after
    assert after["fabric_rx_conflict"] == before["fabric_rx_conflict"], after


@pytest.mark.timeout(120)
def test_reload_removing_an_endpoint_silences_its_port(cluster_factory):
    """A reload that removes node 2's rail 1 endpoint says goodbye for it, and its
    port (open until a restart) sends nothing after: node 1 drops rail 1, hears no
    announcement of it after the reload's (it would refuse one as a conflict), and
    asking the fabric for it gets no answer."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    c.wait_settled()
    text = c.config(2)
    head, sep, tail = text.partition("[endpoint ib1]")
    assert sep
    nxt = tail.find("\n[")
    removed = head + (tail[nxt + 1:] if nxt >= 0 else "")
    alias = rail(c, 2, 1)["alias"]
    assert knows(c, 1, alias)
    sent = stats(c.sock(2))["fabric_announces_sent"]
    conflicts = stats(c.sock(1))["fabric_rx_conflict"]
    reload_with(c, 2, removed)
    wait_until(lambda: not knows(c, 1, alias), 10, what="node1 dropped node2's rail 1")
    # the announcement at the reload and the one a moment later
    wait_until(lambda: stats(c.sock(2))["fabric_announces_sent"] >= sent + 2, 10,
               what="node2 announced twice after the reload")
    # node 1 asks the fabric for the removed alias, then (forgotten) for node 2 on
    # every rail: the removed endpoint's port hears both and answers neither
    assert host(c.sock(1), alias)[0] != ST_SUCCESS
    ignored = c.log(2).count("to the port of removed endpoint ib1: ignored")

    def asked_and_ignored():
        # forgotten, node 2 is asked for on every rail (unless an announce or
        # the fetch taught node 1 again in between: then once more)
        assert run([IBRESCTL, "-s", c.sock(1), "cache", "flush", "node2"]).returncode == 0
        assert host(c.sock(1), "node2")[0] == ST_SUCCESS
        return c.log(2).count("to the port of removed endpoint ib1: ignored") > ignored
    # rail 1's request reached the removed endpoint's port, which let it be (it
    # answered it under the removed identity)
    wait_until(asked_and_ignored, 20, interval=0.5,
               what="node2's removed port ignored node1's request")
    assert not knows(c, 1, alias)
    assert knows(c, 1, rail(c, 2, 0)["alias"])
    assert "gone at the reload: said goodbye" in c.log(2)
    # nor did it announce the removed identity, which node 1 would refuse as a
    # claim on node 2's name (its rails no longer include it)
    assert stats(c.sock(1))["fabric_rx_conflict"] == conflicts


def sections(text):
    """@text's lines before its first [endpoint], and each [endpoint] section."""
    parts = text.split("\n[endpoint ")
    return parts[0] + "\n", ["[endpoint " + p.rstrip("\n") + "\n" for p in parts[1:]]


@pytest.mark.timeout(120)
def test_reload_moving_an_endpoint_is_refused(cluster_factory):
    """A reload that would give an endpoint's place another port (the sections
    swapped, the first one removed, another interface) is refused with the
    endpoint's file:line, and the daemon keeps its running configuration: its
    endpoints, their labels and what node 1 knows of them. A reload that keeps
    every place's port (a relabel, the last endpoint removed) still applies."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    c.wait_settled()
    text = c.config(2)
    head, (ib0, ib1) = sections(text)
    assert ib0.startswith("[endpoint ib0]") and ib1.startswith("[endpoint ib1]")
    path = os.path.join(c.dir, "node2", "ibresd.conf")
    other = ib1.replace("interface = %s" % rail(c, 2, 1)["interface"], "interface = lo")
    assert other != ib1
    for bad in (head + ib1 + "\n" + ib0, head + ib1, head + ib0 + "\n" + other):
        refused = c.log(2).count("reload refused")
        reloaded = c.log(2).count("configuration reloaded")
        with open(path, "w") as f:
            f.write(bad)
        c.kill(2, "HUP")
        wait_until(lambda: c.log(2).count("reload refused") > refused, 10,
                   what="node2 refused the reload")
        line = [ln for ln in c.log(2).splitlines() if "reload refused" in ln][-1]
        assert "%s:" % path in line and "restart ibresd" in line, line
        assert c.log(2).count("configuration reloaded") == reloaded
        assert endpoint_states(c, 2) == {"ib0": "up", "ib1": "up"}
    for r in (0, 1):
        assert knows(c, 1, rail(c, 2, r)["alias"])
    # the running configuration still answers, and is still the one reloaded
    assert host(c.sock(2), rail(c, 1, 1)["alias"])[0] == ST_SUCCESS
    reload_with(c, 2, head + ib0 + "\n" + ib1.replace("[endpoint ib1]", "[endpoint rail1]"))
    assert endpoint_states(c, 2) == {"ib0": "up", "rail1": "up"}
    reload_with(c, 2, head + ib0)
    assert endpoint_states(c, 2) == {"ib0": "up"}
    # the removed place is still the port it was opened on: configured again
    # there, it is refused elsewhere, and taken back on it
    refused = c.log(2).count("reload refused")
    with open(path, "w") as f:
        f.write(head + ib0 + "\n" + other)
    c.kill(2, "HUP")
    wait_until(lambda: c.log(2).count("reload refused") > refused, 10,
               what="node2 refused the removed place on another port")
    reload_with(c, 2, head + ib0 + "\n" + ib1)
    assert endpoint_states(c, 2) == {"ib0": "up", "ib1": "up"}
    wait_rails(c)


def path_from(c, k, src, dest):
    """RESOLVE on node @k from @src to @dest: (status, path)."""
    cl = Client(c.sock(k))
    try:
        return resolve(cl, dest, src)
    finally:
        cl.close()


def reload_rail1(c, old, new):
    """Reload node 1 with its rail-1 section's line @old made @new."""
    head, (ib0, ib1) = sections(c.config(1))
    assert old in ib1, ib1
    reload_with(c, 1, head + ib0 + "\n" + ib1.replace(old, new))


@pytest.mark.timeout(120)
def test_reload_new_lid_drops_the_paths_from_it(cluster_factory):
    """A reload that gives node 1's rail 1 another LID (an ip endpoint's LID is
    the file's) drops the paths cached from that rail: the next RESOLVE from it
    carries the new SLID, not the old one for route_ttl (an hour). Rail 0's
    paths stay."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    src0, src1 = rail(c, 1, 0)["ipv4"], rail(c, 1, 1)["ipv4"]
    dst0, dst1 = rail(c, 2, 0)["ipv4"], rail(c, 2, 1)["ipv4"]
    old = rail(c, 1, 1)["lid"]
    status, path = path_from(c, 1, src1, dst1)
    assert status == ST_SUCCESS and path["slid"] == old, path
    assert path_from(c, 1, src0, dst0)[0] == ST_SUCCESS
    reload_rail1(c, "lid = %d\n" % old, "lid = %d\n" % (old + 500))
    status, path = path_from(c, 1, src1, dst1)
    assert status == ST_SUCCESS and path["slid"] == old + 500, path
    status, path = path_from(c, 1, src0, dst0)
    assert status == ST_SUCCESS and path["slid"] == rail(c, 1, 0)["lid"], path


@pytest.mark.timeout(120)
def test_reload_new_sl_drops_the_paths_from_it(cluster_factory):
    """A reload that gives node 1's rail 1 another SL (ibresd(8): everything else
    applies at once) drops the paths cached from that rail: the next RESOLVE from
    it carries SL 3, not the cached SL 0 for route_ttl (an hour). Rail 0's stay."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    src0, src1 = rail(c, 1, 0)["ipv4"], rail(c, 1, 1)["ipv4"]
    dst0, dst1 = rail(c, 2, 0)["ipv4"], rail(c, 2, 1)["ipv4"]
    for src, dst in ((src0, dst0), (src1, dst1)):
        status, path = path_from(c, 1, src, dst)
        assert status == ST_SUCCESS and path["sl"] == 0, path
    reload_rail1(c, "sl = 0\n", "sl = 3\n")
    status, path = path_from(c, 1, src1, dst1)
    assert status == ST_SUCCESS and path["sl"] == 3, path
    status, path = path_from(c, 1, src0, dst0)
    assert status == ST_SUCCESS and path["sl"] == 0, path


@pytest.mark.timeout(120)
def test_reload_new_pkey_forgets_the_old_partition(cluster_factory):
    """A reload that moves node 1's rail 1 to another partition (P_Key 0x8002;
    node 2's rail 1 stays in 0xffff) forgets what that rail heard in the old
    one: a RESOLVE from it to node 2's rail 1 finds no path, rather than a path
    with P_Key 0x8002 to a port that is not a member; rail 0 still resolves."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    src0, src1 = rail(c, 1, 0)["ipv4"], rail(c, 1, 1)["ipv4"]
    alias = rail(c, 2, 1)["alias"]
    status, path = path_from(c, 1, src1, alias)
    assert status == ST_SUCCESS and path["pkey"] == 0xffff, path
    reload_rail1(c, "pkey = 0xffff\n", "pkey = 0x8002\n")
    status, path = path_from(c, 1, src1, alias)
    assert status != ST_SUCCESS, path
    status, path = path_from(c, 1, src0, rail(c, 2, 0)["alias"])
    assert status == ST_SUCCESS and path["pkey"] == 0xffff, path


@pytest.mark.timeout(120)
def test_relabel_keeps_a_rail_down(cluster_factory):
    """A reload that only relabels an endpoint keeps its port's state: node 2's rail
    1, whose link is down, stays down under its new label (it would be taken for up
    and serve lookups until its link changed again), and comes back with its link."""
    c = cluster_factory(2, "--rails", 2)
    wait_rails(c)
    c.link(2, "down", rail=1)
    wait_until(lambda: endpoint_states(c, 2)["ib1"] == "down", 10, what="rail 1 down")
    reload_with(c, 2, c.config(2).replace("[endpoint ib1]", "[endpoint rail1]", 1))
    assert endpoint_states(c, 2) == {"ib0": "up", "rail1": "down"}
    c.link(2, "up", rail=1)
    wait_until(lambda: endpoint_states(c, 2)["rail1"] == "up", 10, what="rail 1 up again")
    wait_rails(c)


@pytest.mark.timeout(120)
def test_rail0_down_next_rail(cluster_factory, helpers):
    """Node 2's rail 0 (its first, preferred rail) loses its link. A lookup
    without a source, on node 2, now takes rail 1 to node 1, by name and by
    address; through NSS, node 1 lists node 2's rails 1 and 2 only (the
    shared directory no longer serves rail 0), rail 1 first, and node 2 no
    longer lists node 1's rail 0 (learned through its own rail 0 alone).
    Back up, both list every rail again."""
    c = cluster_factory(2, "--rails", 3, "--planes")
    wait_rails(c)
    c.wait_settled()
    c.link(2, "down", rail=0)
    wait_until(lambda: not knows(c, 1, rail(c, 2, 0)["alias"]) and
               not knows(c, 2, rail(c, 1, 0)["alias"]), 5,
               what="rail 0 of node 2 dropped on both nodes")
    cl = Client(c.sock(2))
    try:
        for dest in ("node1", rail(c, 1, 1)["ipv4"]):
            status, path = resolve(cl, dest)
            assert status == ST_SUCCESS, (dest, status)
            assert (path["sgid"], path["dgid"]) == (rail(c, 2, 1)["gid"],
                                                    rail(c, 1, 1)["gid"]), (dest, path)
    finally:
        cl.close()
    for k, d in ((1, 2), (2, 1)):
        want = [rail(c, d, r)["ipv4"] for r in (1, 2)]
        wait_until(lambda: unique_addrs(getent(c, k, "ahostsv4", "node%d" % d)) == want, 5,
                   what="node%d lists node%d's rails 1 and 2 through NSS" % (k, d))
    c.link(2, "up", rail=0)
    wait_rails(c)
    for k, d in ((1, 2), (2, 1)):
        want = [rail(c, d, r)["ipv4"] for r in range(3)]
        wait_until(lambda: unique_addrs(getent(c, k, "ahostsv4", "node%d" % d)) == want, 10,
                   what="node%d lists every rail of node%d again" % (k, d))


def test_preferred_rail_follows_local_config_order(cluster_factory):
    """The preferred rail of a remote host is the one heard on this node's
    first local endpoint in config order, not its lowest GID nor the
    remote's own order: node 1 with its endpoints listed ib2, ib0, ib1 lists
    node 2's rail 2 first (name and IPv4), then 0, then 1, and a lookup
    without a source takes rail 2; node 2 still lists node 1 rail 0 first."""
    c = cluster_factory(2, "--rails", 3, "--planes")
    wait_rails(c)
    conf = os.path.join(c.dir, "node1", "ibresd.conf")
    with open(conf) as f:
        head, *sections = f.read().split("\n[endpoint ")
    by = {sec.split("]", 1)[0]: sec for sec in sections}
    assert sorted(by) == ["ib0", "ib1", "ib2"], list(by)
    with open(conf, "w") as f:
        f.write(head + "".join("\n[endpoint " + by[label] for label in ("ib2", "ib0", "ib1")))
    c.kill(1, "TERM")
    c.start(1)
    wait_rails(c)
    want = [rail(c, 2, r)["ipv4"] for r in (2, 0, 1)]
    wait_until(lambda: unique_addrs(getent(c, 1, "ahostsv4", "node2")) == want, 10,
               what="node1 lists node2's rails in its own endpoints' order")
    status, rec = host(c.sock(1), "node2", cache_only=True)
    assert status == ST_SUCCESS and rec["ipv4"] == want, rec
    cl = Client(c.sock(1))
    try:
        status, path = resolve(cl, "node2")
    finally:
        cl.close()
    assert status == ST_SUCCESS and path["dgid"] == rail(c, 2, 2)["gid"], (status, path)
    assert unique_addrs(getent(c, 2, "ahostsv4", "node1")) == \
        [rail(c, 1, r)["ipv4"] for r in range(3)]


@pytest.fixture(scope="module")
def r4p2(tmp_path_factory):
    """2 nodes x 4 rails x 2 partitions, separate planes: 8 endpoints a node,
    the partitions of a rail sharing its GID and LID; read-only."""
    c = Cluster(tmp_path_factory.mktemp("r4p2"), 2, "--rails", RAILS, "--partitions", 2,
                "--planes")
    c.up()
    try:
        assert all(len(c.parts[k]) == RAILS for k in c.nodes), c.parts
        wait_until(lambda: all(knows(c, s, e["alias"]) for s in c.nodes for d in c.nodes
                               if s != d for e in c.parts[d] + c.rails[d]), 10, interval=0.1,
                   what="every node knows every endpoint of every other")
        c.wait_settled()
        yield c
    finally:
        c.down()


@pytest.mark.timeout(180)
def test_partitions_rail_to_rail(r4p2):
    """4 rails x 2 partitions: from each partition's own endpoint, the host
    name gives the path to the destination's endpoint of that rail and
    P_Key (the rail's GIDs and LIDs, the partition's P_Key); its addresses
    too; a partition's address from the rail's default partition gives
    EDESTADDR (another P_Key); the host name lists all 8 endpoints'
    addresses, rail 0's first; the shared GIDs and LIDs are no conflict."""
    c = r4p2
    for s, d in itertools.permutations(sorted(c.nodes), 2):
        for e in c.parts[s]:
            r = e["rail"]
            dst = next(x for x in c.parts[d] if x["rail"] == r)
            for dest in (c.nodes[d]["name"], dst["alias"]):
                f, out = acme_path(c, s, "n", e["alias"], dest)
                assert f is not None, out
                assert str(ipaddress.IPv6Address(f["sgid"])) == rail(c, s, r)["gid"], out
                assert str(ipaddress.IPv6Address(f["dgid"])) == rail(c, d, r)["gid"], out
                assert int(f["slid"]) == s and int(f["dlid"]) == d, out
                assert int(f["pkey"], 16) == e["pkey"], out
            f, out = acme_path(c, s, "i", e["ipv4"], dst["ipv4"])
            assert f is not None and int(f["pkey"], 16) == e["pkey"], out
            cl = Client(c.sock(s))
            try:
                status, path = resolve(cl, dst["ipv4"], rail(c, s, r)["ipv4"])
            finally:
                cl.close()
            assert status == ST_EDESTADDR and path is None, (s, r, status, path)
        status, rec = host(c.sock(s), c.nodes[d]["name"], cache_only=True)
        assert status == ST_SUCCESS
        want = sorted([x["ipv4"] for x in c.rails[d]] + [x["ipv4"] for x in c.parts[d]])
        assert sorted(rec["ipv4"]) == want, rec
        assert rec["ipv4"][0] == rail(c, d, 0)["ipv4"], rec
    for k in c.nodes:
        assert stats(c.sock(k))["fabric_rx_conflict"] == 0, k


# node 1's rail 0, both partitions: the host's name, each one's alias, and
# node1-r0, which the two share
R0_SHARED = [a for label, alias in (("ib0", "node1-ib0"), ("ib0.8001", "node1-ib0-8001"))
             for name in ("node1", alias, "node1-r0")
             for a in ("--node-set", "1:endpoint %s.name=%s" % (label, name))]


@pytest.mark.timeout(120)
def test_rail_alias_of_two_partitions(cluster_factory):
    """A rail's alias both its partitions carry (node1-r0 on ib0 and ib0.8001)
    names that rail: its two endpoints' addresses, from the socket and from the
    shared directory alike, never the other rail's (it gave the whole host)."""
    c = cluster_factory(2, "--rails", 2, "--partitions", 2, "--planes", *R0_SHARED)
    part0 = next(e for e in c.parts[1] if e["rail"] == 0)
    assert part0["alias"] == "node1-ib0-8001", part0
    want = sorted([rail(c, 1, 0)["ipv4"], part0["ipv4"]])
    wait_until(lambda: knows(c, 2, "node1-r0") and knows(c, 2, part0["alias"]), 10,
               interval=0.1, what="node2 knows node1's rail-0 alias")
    status, rec = host(c.sock(2), "node1-r0", cache_only=True)
    assert status == ST_SUCCESS and sorted(rec["ipv4"]) == want, rec
    r = getent(c, 2, "ahostsv4", "node1-r0")
    assert sorted(unique_addrs(r)) == want, r.stdout
    # the host's name is still every endpoint's
    status, rec = host(c.sock(2), "node1", cache_only=True)
    assert status == ST_SUCCESS and len(rec["ipv4"]) == 4, rec


@pytest.mark.timeout(180)
def test_rail_alias_of_two_partitions_of_eight_rails(cluster_factory):
    """The same on 8 rails x 2 partitions: 18 names, more than one record holds,
    so the host is written one record an endpoint. The shared rail alias gives
    rail 0's addresses (the endpoint it leads to), never another rail's (it gave
    the whole host); the host's name every rail's."""
    c = cluster_factory(2, "--rails", 8, "--partitions", 2, "--planes", *R0_SHARED)
    part0 = next(e for e in c.parts[1] if e["rail"] == 0)
    rail0 = {rail(c, 1, 0)["ipv4"], part0["ipv4"]}
    wait_until(lambda: knows(c, 2, "node1-r0") and knows(c, 2, "node1-ib7-8001"), 20,
               interval=0.1, what="node2 knows node1's aliases")
    status, rec = host(c.sock(2), "node1-r0", cache_only=True)
    assert status == ST_SUCCESS and rec["ipv4"] and set(rec["ipv4"]) <= rail0, rec
    r = getent(c, 2, "ahostsv4", "node1-r0")
    assert unique_addrs(r) and set(unique_addrs(r)) <= rail0, r.stdout
    status, rec = host(c.sock(2), "node1", cache_only=True)
    assert status == ST_SUCCESS and len(rec["ipv4"]) == 16, rec


ST_ESRCADDR = 7             # IBRES_STATUS_ESRCADDR (include/ibres_proto.h)


def path_by_record(c, s, sgid, dgid, pkey, before=b"", after=b"", dlid=0):
    """A RESOLVE of a PathRecord (ib_acme -f g, with a P_Key; or a DLID) on
    node @s, the entries @before and @after beside it: (status, path dict or
    None)."""
    from conftest import acm_hdr, ep_entry
    from fabric_util import OP_RESOLVE, PR, TYPE_PATH, parse_hdr, parse_path
    rec = PR.pack(0, ipaddress.IPv6Address(dgid).packed, ipaddress.IPv6Address(sgid).packed,
                  dlid, 0, 0, 0, 0x81, pkey, 0, 0, 0, 0, 0)
    body = before + ep_entry(0, TYPE_PATH, rec) + after
    cl = Client(c.sock(s))
    try:
        ans = cl.request(acm_hdr(OP_RESOLVE, 16 + len(body)) + body)
    finally:
        cl.close()
    h = parse_hdr(ans)
    return (h["status"], None) if h["status"] else (0, parse_path(ans[16:16 + 72]))


@pytest.mark.timeout(120)
def test_partitions_by_path_record(r4p2):
    """A PathRecord names its source by SGID and its partition by P_Key: the
    answer is the path from that partition's endpoint, in that P_Key, to the
    destination's endpoint of the rail and P_Key; P_Key 0 is the default
    partition; a P_Key neither node has is no source (ESRCADDR), and an SLID
    that every plane numbers the same names none either. Without SGID and SLID,
    the source is the first endpoint of the record's P_Key that reaches the
    DGID (before, any P_Key's)."""
    c = r4p2
    for s, d in itertools.permutations(sorted(c.nodes), 2):
        for r in range(RAILS):
            sgid, dgid = rail(c, s, r)["gid"], rail(c, d, r)["gid"]
            for pkey, want in [(0, 0xffff), (0xffff, 0xffff)] + \
                    [(e["pkey"], e["pkey"]) for e in c.parts[s] if e["rail"] == r]:
                status, path = path_by_record(c, s, sgid, dgid, pkey)
                assert status == 0, (s, r, hex(pkey), status)
                assert (path["sgid"], path["dgid"], path["pkey"]) == (sgid, dgid, want), path
            status, path = path_by_record(c, s, sgid, dgid, 0x7123)
            assert status == ST_ESRCADDR and path is None, (s, r, status)
            # no source: the first endpoint of the record's P_Key that
            # reaches the DGID; a P_Key no endpoint has is no source
            for e in [x for x in c.parts[s] if x["rail"] == r]:
                status, path = path_by_record(c, s, "::", dgid, e["pkey"])
                assert status == 0, (s, r, hex(e["pkey"]), status)
                assert (path["sgid"], path["dgid"], path["pkey"]) == (sgid, dgid, e["pkey"]), \
                    path
            status, path = path_by_record(c, s, "::", dgid, 0)
            assert status == 0 and (path["sgid"], path["dgid"]) == (sgid, dgid), path
            status, path = path_by_record(c, s, "::", dgid, 0x7123)
            assert status == ST_ESRCADDR and path is None, (s, r, status)
    f, out = acme_path(c, 1, "l", "1", "2")
    assert f is None, out


@pytest.mark.timeout(120)
def test_partitions_path_beside_an_address(r4p2):
    """A PATH entry with an address entry beside it, as librdmacm and libibres
    send one when source and destination are of different kinds: an IP SOURCE
    and a path to a GID is the path from that address's endpoint (its rail and
    P_Key), not from the first rail that reaches the GID; a path from a GID to
    an IP DEST is the path to that address's endpoint, not EDESTADDR. An IP
    SOURCE that is not ours: ESRCADDR."""
    from conftest import ep_entry
    from fabric_util import FLAG_DEST, FLAG_SOURCE, TYPE_IP
    zero = "::"

    def ip(flags, a):
        return ep_entry(flags, TYPE_IP, ipaddress.IPv4Address(a).packed)
    c = r4p2
    for s, d in itertools.permutations(sorted(c.nodes), 2):
        for e in c.parts[s]:
            r = e["rail"]
            sgid, dgid = rail(c, s, r)["gid"], rail(c, d, r)["gid"]
            dst = next(x for x in c.parts[d] if x["rail"] == r)
            status, path = path_by_record(c, s, zero, dgid, 0,
                                          before=ip(FLAG_SOURCE, e["ipv4"]))
            assert status == 0, (s, e["alias"], status)
            assert (path["sgid"], path["dgid"], path["pkey"]) == (sgid, dgid, e["pkey"]), path
            status, path = path_by_record(c, s, sgid, zero, e["pkey"],
                                          after=ip(FLAG_DEST, dst["ipv4"]))
            assert status == 0, (s, e["alias"], status)
            assert (path["sgid"], path["dgid"], path["pkey"]) == (sgid, dgid, e["pkey"]), path
        status, path = path_by_record(c, s, zero, rail(c, d, 0)["gid"], 0,
                                      before=ip(FLAG_SOURCE, rail(c, d, 0)["ipv4"]))
        assert status == ST_ESRCADDR and path is None, status


@pytest.mark.timeout(120)
def test_path_by_dlid_alone_on_a_rail_up(cluster_factory):
    """A PathRecord with a DLID alone (ib_acme -f l -d LID): a LID is its
    fabric's, so the path is from the first rail up whose fabric has it; with
    rail 0 down, rail 1's (before: rail 0's fabric was the only one asked)."""
    c = cluster_factory(2, "--rails", 2, "--planes")
    wait_rails(c)

    def by_dlid():
        return path_by_record(c, 1, "::", "::", 0, dlid=rail(c, 2, 0)["lid"])
    status, path = by_dlid()
    assert status == 0 and (path["sgid"], path["dgid"]) == (
        rail(c, 1, 0)["gid"], rail(c, 2, 0)["gid"]), (status, path)
    c.link(1, "down", rail=0)
    wait_until(lambda: by_dlid()[0] == 0 and by_dlid()[1]["sgid"] == rail(c, 1, 1)["gid"], 10,
               interval=0.2, what="the path by DLID from rail 1 once rail 0 is down")
    assert by_dlid()[1]["dgid"] == rail(c, 2, 1)["gid"]


FW_RAIL_DOWN = 5            # resolverd/fabric/fabric_wire.h


def gid_target(gid):
    """A TARGET item naming a GID (fabric_util's target_item names names and
    addresses)."""
    from fabric_util import FW_T_TARGET, tlv
    return tlv(FW_T_TARGET, tlv(5, ipaddress.IPv6Address(gid).packed))


@pytest.mark.timeout(120)
def test_replay_and_rail_down_from_another_host(cluster_factory):
    """Rails whose LIDs differ (no --planes): node 3, on rail 1, replays node
    2's rail-0 ANNOUNCE word for word, and sends a RAIL_DOWN that claims to
    come from node 2's rail 1 and names node 2's rail 0. Neither came from
    node 2's own address there, so node 1 takes neither: no path from rail 1
    to node 2's rail-0 address, rail 0 still known and resolved."""
    c = cluster_factory(3, "--rails", 2)
    wait_rails(c)
    c.wait_settled()
    n2 = c.rails[2]
    src = rail(c, FORGER, 1)["ipv4"]
    group = "239.255.73.3"   # rail 1's first group
    r0 = n2[0]
    replay = identity_items("node2", r0["gid"], [r0["ipv4"]], [r0["ipv6"]], lid=r0["lid"],
                            aliases=[r0["alias"]]) + rails_item([rl["gid"] for rl in n2]) + \
        group_items()
    r1 = n2[1]
    rail_down = identity_items("node2", r1["gid"], [r1["ipv4"]], [r1["ipv6"]], lid=r1["lid"],
                               aliases=[r1["alias"]]) + gid_target(r0["gid"])
    before = stats(c.sock(1))
    send_datagrams(c.netns(FORGER), group, FABRIC_PORT,
                   [fabric_msg(FW_ANNOUNCE, replay), fabric_msg(FW_RAIL_DOWN, rail_down)],
                   src=src)
    wait_until(lambda: stats(c.sock(1))["fabric_rx"] >= before["fabric_rx"] + 2, 5,
               what="node1 received both")
    after = stats(c.sock(1))
    assert after["fabric_rx_conflict"] == before["fabric_rx_conflict"] + 1, after
    assert after["fabric_rx_mismatch"] == before["fabric_rx_mismatch"] + 1, after
    assert after["fabric_goodbyes_rx"] == before["fabric_goodbyes_rx"]
    assert knows(c, 1, r0["alias"])
    cl = Client(c.sock(1))
    try:
        status, path = resolve(cl, r0["ipv4"], rail(c, 1, 1)["ipv4"])
        assert status == ST_EDESTADDR and path is None, (status, path)
        status, path = resolve(cl, r0["ipv4"], rail(c, 1, 0)["ipv4"])
        assert status == ST_SUCCESS and path["dgid"] == r0["gid"], (status, path)
    finally:
        cl.close()


def drop_from(c, k, r, src, on=True):
    """Node @k's rail @r stops (or, @on False, resumes) taking datagrams from
    rail row @src's addresses (None: from anyone): a tc filter on its
    interface's ingress (classic BPF over the IP header: cls_bpf is what the
    emulated fabric's loss uses too)."""
    dev = rail(c, k, r)["interface"]
    ns = ["ip", "netns", "exec", c.netns(k), "tc"]
    if not on:
        run(ns + ["qdisc", "del", "dev", dev, "clsact"], timeout=30)
        return
    assert run(ns + ["qdisc", "add", "dev", dev, "clsact"], timeout=30).returncode == 0
    if src is None:
        rules = [(10, "ip", "6 0 0 2"), (11, "ipv6", "6 0 0 2")]
    else:
        v4 = int(ipaddress.IPv4Address(src["ipv4"]))
        v6 = int.from_bytes(ipaddress.IPv6Address(src["ipv6"]).packed[12:], "big")
        # offsets from the Ethernet header (cls_bpf shows a program the
        # frame from its MAC header on, at ingress too): the source address
        rules = [(pref, proto, "4,32 0 0 %d,21 0 1 %d,6 0 0 2,6 0 0 0" % (off, word))
                 for pref, proto, off, word in ((10, "ip", 14 + 12, v4),
                                                (11, "ipv6", 14 + 20, v6))]
    for pref, proto, code in rules:
        if code.count(",") == 0:
            code = "1," + code
        r = run(ns + ["filter", "add", "dev", dev, "ingress", "protocol", proto, "pref",
                      str(pref), "bpf", "da", "bytecode", code], timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lost", ["node1", "everyone"])
def test_a_rail_lost_at_boot_is_fetched(cluster_factory, lost):
    """Node 3 restarts while node 1's datagrams on rail 1 (or everyone's) do
    not reach it: it learns every host on rail 0, so its whole directory has
    every host, but rail 1's fabric lacks node 1 (or all). Each fabric keeps
    a digest and a rule of its own (doc/fabric-protocol.md, DIGEST): node 3's
    rail-1 digest disagrees with node 2's there (or rail 1 heard no one while
    rail 0 heard peers: unvouched), so it never answers "not found" for
    node1-ib1, and once the datagrams pass again it learns every rail and
    counts itself complete long before the next announce round (30 s)."""
    c = cluster_factory(3, "--rails", 2, "--planes")
    wait_rails(c)
    c.wait_settled()
    c.kill(3)
    drop_from(c, 3, 1, rail(c, 1, 1) if lost == "node1" else None)
    try:
        c.start(3)
        c.started = time.monotonic()
        wait_until(lambda: knows(c, 3, rail(c, 1, 0)["alias"]) and
                   knows(c, 3, rail(c, 2, 0)["alias"]) and
                   (lost != "node1" or knows(c, 3, rail(c, 2, 1)["alias"])), 10.0,
                   what="node 3 learned what the filter lets through")
        c.wait_settled(complete=0.0)
        assert not knows(c, 3, rail(c, 1, 1)["alias"]), "the filter let node 1's rail 1 through"
        assert stats(c.sock(3))["directory_complete"] == 0, c.log(3)
    finally:
        drop_from(c, 3, 1, None, on=False)
    # asked now, it is found (on the fabric, or fetched already): never "not found"
    status, rec = host(c.sock(3), rail(c, 1, 1)["alias"], timeout=10.0)
    assert status == ST_SUCCESS and rec["gids"] == [rail(c, 1, 1)["gid"]], (status, c.log(3))
    wait_rails(c)
    # the peers of rail 1 (node 1 among them: its REPLY made it one) vouch
    wait_until(lambda: stats(c.sock(3))["directory_complete"] == 1, 15.0,
               what="node 3 counts its directory complete again")


@pytest.mark.timeout(120)
def test_cluster_key_with_partitions(cluster_factory, tmp_path):
    """With a cluster key, freshness counts each endpoint (port GID and
    P_Key) apart: 2 nodes x 2 rails x 2 partitions, a rail's partitions
    sharing its GID. None of their datagrams is taken for a replay, every
    endpoint of the other node is learned, and each is reached from the
    local endpoint of its rail and P_Key. (Read out of order, which these
    nodes do not do, the partitions' datagrams are test_fabric_auth.c's.)"""
    kf = tmp_path / "cluster.key"
    kf.write_bytes(b"0123456789abcdef-a-cluster-key-for-partitions\n")
    os.chmod(kf, 0o600)
    c = cluster_factory(2, "--rails", 2, "--partitions", 2, "--set",
                        "resolve.cluster_key_file=%s" % kf)
    wait_until(lambda: all(knows(c, s, e["alias"]) for s in c.nodes for d in c.nodes
                           if s != d for e in c.parts[d] + c.rails[d]), 10, interval=0.1,
               what="every node knows every endpoint of every other")
    c.wait_settled()
    for s, d in itertools.permutations(sorted(c.nodes), 2):
        for e in c.rails[s] + c.parts[s]:
            pkey = e.get("pkey", 0xffff)
            dst = next(x for x in c.rails[d] + c.parts[d]
                       if x["rail"] == e["rail"] and x.get("pkey", 0xffff) == pkey)
            f, out = acme_path(c, s, "n", e["alias"], dst["alias"])
            assert f is not None, (e["alias"], dst["alias"], out)
            assert int(f["pkey"], 16) == pkey, out
    for k in c.nodes:
        st = stats(c.sock(k))
        assert st["fabric_rx_replayed"] == 0 and st["fabric_rx_duplicate"] == 0, (k, st)
        assert st["fabric_rx_auth_failed"] == 0, (k, st)
