"""The consumers (libnss_ib through glibc and getent, libibres, ibresctl)
against real ibresd daemons of an emulated cluster (test/fabric/emulate):
every node resolves every other node's names, addresses and GIDs as
nodes.tsv lists them, with finite TTLs for fabric-learned hosts; unknown and
foreign names are NOTFOUND at once without fabric traffic; a node that does
not answer on the fabric is TRYAGAIN within the documented bound; 64
concurrent lookups of one uncached name share one fabric REQUEST; GOODBYE and
cache flushes behave as doc/fabric-protocol.md says.

Clusters: `c4` (4 nodes, announcements on: the directory mode) and `quiet`
(4 nodes, announcements off: every miss is asked on the fabric) are made once
for the module; the tests that kill nodes or depend on flush timing get a
cluster of their own. Every cluster is torn down by its fixture; every wait
is bounded. Tests assert behaviour; the only time bounds are "at once" (the
client's own timeout is set below the fabric bound, so an answer that waited
on the fabric shows up as TRYAGAIN, not as a slow NOTFOUND) and the
documented fabric bound.

Note on getent(1): glibc's getent exits 2 whenever the lookup fails, for
HOST_NOT_FOUND and TRY_AGAIN alike (checked on Debian 12, glibc 2.36), so
the status that NSS callers see is asserted through the C helpers
(nss_call: the module's nss_status; nss_glibc: gethostbyname2_r's return
value and h_errno)."""
import errno
import json
import math
import os
import signal
import subprocess
import time

import pytest

from conftest import IBRESCTL, needs_root, run
from fabric_util import (ORIGIN_FABRIC, ST_ENODATA, ST_SUCCESS, Cluster, cache_flush,
                         cache_list, host, stats, wait_until)
from nss_helpers import NSS_MODULE, client_env, gai_entries, helpers, parse_kv  # noqa: F401

pytestmark = needs_root

AF_INET, AF_INET6, AF_IB = 2, 10, 27
NETDB_SUCCESS, HOST_NOT_FOUND, TRY_AGAIN = 0, 1, 2
INT32_MAX = 2**31 - 1
RDMA_PS_TCP = 0x0106

# emulate's [resolve] defaults (test/fabric/README.md)
TIMEOUT_MS, RETRIES, ADDR_TTL, SETTLE = 200, 3, 60, 1.0
# Client bound for lookups that must be answered "at once": well below the
# time a fabric query takes to fail (about 1.4 s with the defaults).
AT_ONCE_MS = 1000
KEY_NAME = 1


def fabric_bound():
    """doc/fabric-protocol.md: attempt k waits timeout*(1+k/2) +-10%, then an
    answer within 0.5 s; plus 1 s of slack for process start-up on a loaded
    machine."""
    waits = sum(TIMEOUT_MS / 1000.0 * (1 + k / 2.0) * 1.1 for k in range(RETRIES + 1))
    return waits + 0.5 + 1.0


# --- clusters ------------------------------------------------------------------------

def fabric_names(c, k):
    """Names node @k holds as fabric-learned entries."""
    return {e["key"] for e in cache_list(c.sock(k))
            if e.get("keytype") == KEY_NAME and e.get("origin") == ORIGIN_FABRIC}


def wait_directory(c, nodes=None, timeout=8.0):
    """Until every node in @nodes holds every other one (from announcements)."""
    nodes = sorted(nodes or c.nodes)

    def complete():
        return all(fabric_names(c, k) >= {c.nodes[j]["name"] for j in nodes if j != k}
                   for k in nodes)
    try:
        wait_until(complete, timeout, interval=0.1, what="every node knows every other")
    except AssertionError:
        raise AssertionError("directory incomplete: %s\n%s" % (
            {k: sorted(fabric_names(c, k)) for k in nodes}, c.logs()))


def make_cluster(path, *args, nodes=4):
    c = Cluster(path, nodes, *args)
    c.up()   # tears down what it made if it fails
    return c


@pytest.fixture(scope="module")
def c4(tmp_path_factory):
    """4 nodes, announcements on (emulate's defaults), settled: the cluster
    directory is complete and authoritative."""
    c = make_cluster(tmp_path_factory.mktemp("nf-c4"))
    try:
        wait_directory(c)
        c.wait_settled(SETTLE)
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    """4 nodes, announcements off: nothing is known until asked. A timed-out
    query stays negative for 10 s (long enough to look at it twice)."""
    c = make_cluster(tmp_path_factory.mktemp("nf-quiet"),
                     "--set", "resolve.announce_interval=0",
                     "--set", "resolve.negative_ttl=10s")
    try:
        c.wait_settled(SETTLE)
        yield c
    finally:
        c.down()


@pytest.fixture
def own_cluster(tmp_path):
    """A cluster for one test (node kills, flush timing); always torn down."""
    made = []

    def make(*args, nodes=4):
        c = make_cluster(tmp_path / ("c%d" % len(made)), *args, nodes=nodes)
        made.append(c)
        return c

    yield make
    for c in made:
        c.down()


# --- the consumers -------------------------------------------------------------------

def env_of(c, k, **extra):
    """The environment of a client of node @k's daemon."""
    return client_env(socket_path=c.sock(k), **extra)


def getent(c, k, *args, **extra):
    return run(["getent"] + list(args), env=env_of(c, k, **extra), timeout=60)


def nss_call(helpers, c, k, entry, key, af, **extra):
    """One libnss_ib entry point called directly (4096-byte buffer) -> dict."""
    r = run([helpers["nss_call"], NSS_MODULE, entry, key, str(af)], env=env_of(c, k, **extra),
            timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    kv = parse_kv(r.stdout)
    assert "error" not in kv, r.stdout
    return kv


def glibc(helpers, c, k, mode, key, af, **extra):
    """gethostbyname2_r / gethostbyaddr_r through glibc with hosts: ib -> dict."""
    r = run([helpers["nss_glibc"], "ib", mode, key, str(af)], env=env_of(c, k, **extra),
            timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return parse_kv(r.stdout)


def ctl_json(c, k, *args):
    r = run([IBRESCTL, "--json"] + list(args), env=env_of(c, k), timeout=60)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return json.loads(r.stdout)


def libibres(helpers, c, k, *args):
    r = run([helpers["nss_libibres"]] + [str(a) for a in args], env=env_of(c, k), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def lines_of(r):
    return [line.split() for line in r.stdout.splitlines() if line.strip()]


def path_text(src, dst):
    """nss_libibres's rendering of the path from @src to @dst (nodes.tsv
    rows): emulate's nodes all join 4096-byte/100 Gb/s, the best group."""
    return "flags0x2b/dgid%s/sgid%s/dlid%d/slid%d/pkey0xffff/mtu5/rate16" % (
        dst["gid"], src["gid"], dst["lid"], src["lid"])


def pairs(c, distinct=True):
    return [(s, d) for s in sorted(c.nodes) for d in sorted(c.nodes) if s != d or not distinct]


def no_lookup_traffic(before, after):
    """What a lookup answered from the cache must not have caused: no
    REQUEST, no unicast, no multicast other than a periodic announcement
    that may fall in the interval."""
    return {
        "requests_sent": after["fabric_requests_sent"] - before["fabric_requests_sent"],
        "tx_ucast": after["fabric_tx_ucast"] - before["fabric_tx_ucast"],
        "mcast_not_announce": (after["fabric_tx_mcast"] - before["fabric_tx_mcast"]) -
                              (after["fabric_announces_sent"] - before["fabric_announces_sent"]),
        "outstanding": after["fabric_queries_outstanding"],
    }


NO_TRAFFIC = {"requests_sent": 0, "tx_ucast": 0, "mcast_not_announce": 0, "outstanding": 0}


def signal_daemon(c, k, sig):
    """Send @sig to node @k's ibresd (its pid file; checked to be ibresd)."""
    pid = c.pid(k)
    with open("/proc/%d/comm" % pid) as f:
        assert f.read().strip() == "ibresd", "pid %d of node%d is not ibresd" % (pid, k)
    os.kill(pid, sig)


# --- getent, every node from every node -------------------------------------------

@pytest.mark.parametrize("src", [1, 2, 3, 4])
def test_getent_every_node(c4, src):
    """From node @src: hosts, ahosts, ahostsv4, ahostsv6 and reverse lookups
    by IPv4 and IPv6 of every node give exactly nodes.tsv's names and
    addresses (the node itself included)."""
    for k, node in sorted(c4.nodes.items()):
        name, v4, v6 = node["name"], node["ipv4"], node["ipv6"]
        what = "node%d asking for %s" % (src, name)

        r = getent(c4, src, "-s", "hosts:ib", "hosts", name)
        assert r.returncode == 0, (what, r.stderr)
        assert lines_of(r) == [[v6, name]], (what, r.stdout)   # getent asks AF_INET6 first

        r = getent(c4, src, "-s", "ib", "ahosts", name)
        assert r.returncode == 0, (what, r.stderr)
        rows = lines_of(r)
        assert {row[0] for row in rows} == {v4, v6}, (what, r.stdout)
        assert sorted(row[1] for row in rows) == sorted(["STREAM", "DGRAM", "RAW"] * 2), \
            (what, r.stdout)
        assert rows[0][2:] == [name] and all(len(row) == 2 for row in rows[1:]), \
            (what, r.stdout)

        for db, addr in (("ahostsv4", v4), ("ahostsv6", v6)):
            r = getent(c4, src, "-s", "ib", db, name)
            assert r.returncode == 0, (what, db, r.stderr)
            rows = lines_of(r)
            assert {row[0] for row in rows} == {addr}, (what, db, r.stdout)
            assert rows[0][2:] == [name], (what, db, r.stdout)

        for addr in (v4, v6):
            r = getent(c4, src, "-s", "hosts:ib", "hosts", addr)
            assert r.returncode == 0, (what, addr, r.stderr)
            assert lines_of(r) == [[addr, name]], (what, addr, r.stdout)


# --- AF_IB through glibc, from another node ------------------------------------------

def test_af_ib_forward_and_reverse_across_nodes(c4, helpers):
    """gethostbyname2_r(nodeK, AF_IB) from another node gives nodeK's GID
    (h_addrtype 27, h_length 16); gethostbyaddr_r(that GID, 16, AF_IB) gives
    nodeK back."""
    for s, d in pairs(c4):
        node = c4.nodes[d]
        kv = glibc(helpers, c4, s, "byname2", node["name"], AF_IB)
        assert kv["ret"] == "0" and kv["h_errno"] == str(NETDB_SUCCESS), (s, d, kv)
        assert (kv["name"], kv["af"], kv["length"], kv["addrs"]) == \
            (node["name"], str(AF_IB), "16", node["gid"]), (s, d, kv)
        kv = glibc(helpers, c4, s, "byaddr", node["gid"], AF_IB)
        assert kv["ret"] == "0" and kv["h_errno"] == str(NETDB_SUCCESS), (s, d, kv)
        assert (kv["name"], kv["af"], kv["length"], kv["addrs"]) == \
            (node["name"], str(AF_IB), "16", node["gid"]), (s, d, kv)


# --- TTL -----------------------------------------------------------------------------

def test_ttl_finite_for_fabric_learned_hosts(c4, helpers):
    """The TTL reported for a fabric-learned host (gethostbyname3_r/4_r and
    gethostbyaddr2_r ttl out-parameters, ibresctl host --json) is finite:
    at most addr_ttl. The local host never expires (INT32_MAX / 0xffffffff)."""
    src = 1
    for d in (2, 3, 4):
        node = c4.nodes[d]
        assert node["name"] in fabric_names(c4, src)
        for entry, key, af in (("byname4", node["name"], 0),
                               ("byname3", node["name"], AF_INET),
                               ("byname3", node["name"], AF_IB),
                               ("byaddr2", node["ipv6"], AF_INET6),
                               ("byaddr2", node["gid"], AF_IB)):
            kv = nss_call(helpers, c4, src, entry, key, af)
            assert kv["status"] == "SUCCESS" and kv["name"] == node["name"], (entry, kv)
            assert 0 < int(kv["ttl"]) <= ADDR_TTL, (entry, key, kv)
        h = ctl_json(c4, src, "host", node["name"])
        assert h["name"] == node["name"] and 0 < h["ttl"] <= ADDR_TTL, h
    me = c4.nodes[src]
    kv = nss_call(helpers, c4, src, "byname4", me["name"], 0)
    assert kv["status"] == "SUCCESS" and int(kv["ttl"]) == INT32_MAX, kv
    assert ctl_json(c4, src, "host", me["name"])["ttl"] == 0xffffffff


# --- ibresctl resolve and ibres_getaddrinfo to a remote node --------------------------

def test_ibresctl_resolve_remote(c4):
    """ibresctl resolve from node S to node D (by name, IPv4, IPv6, GID, and
    with an explicit source): one path from S's GID/LID to D's, and the
    source the daemon chose is reported in the destination's form."""
    for s, d in pairs(c4):
        src, dst = c4.nodes[s], c4.nodes[d]
        for dest, source in ((dst["name"], src["name"]), (dst["ipv4"], src["ipv4"]),
                             (dst["ipv6"], src["ipv6"]), ("gid:" + dst["gid"], None)):
            out = ctl_json(c4, s, "resolve", dest)
            assert out.get("source") == source, (s, d, dest, out)
            (p,) = out["paths"]
            got = {f: p[f] for f in ("dgid", "sgid", "dlid", "slid", "pkey")}
            assert got == dict(dgid=dst["gid"], sgid=src["gid"], dlid=dst["lid"],
                               slid=src["lid"], pkey=0xffff), (s, d, dest, p)
            assert p["dgid"] != p["sgid"] and p["dlid"] != p["slid"]
            assert p["flags"] == 0x2b and p["mtu_bytes"] == 4096 and p["rate_gbps"] == "100"
        out = ctl_json(c4, s, "resolve", src["ipv4"], dst["name"])
        assert "source" not in out, out   # given, so not reported
        assert out["paths"][0]["sgid"] == src["gid"] and out["paths"][0]["dgid"] == dst["gid"]


def test_getaddrinfo_remote(c4, helpers):
    """ibres_getaddrinfo(nodeD) from node S: first an AF_IB entry whose
    sockaddr_ib carries D's GID and P_Key (and the service id), whose source
    is S's GID, and whose ai_route holds exactly one 72-byte ibv_path_data
    from S to D; then the IP entry, whose source address is the one the
    daemon chose (S's address of that family). ibres_resolve_path agrees."""
    sid = (RDMA_PS_TCP << 16) + 7471
    for s, d in pairs(c4):
        src, dst = c4.nodes[s], c4.nodes[d]
        for family, ip_dst, ip_src in ((0, "inet/%s/7471/len16" % dst["ipv4"],
                                        "inet/%s/0/len16" % src["ipv4"]),
                                       (AF_INET6, "inet6/%s/7471/len28" % dst["ipv6"],
                                        "inet6/%s/0/len28" % src["ipv6"])):
            out = libibres(helpers, c4, s, "gai", dst["name"], "7471", "-", family)
            assert parse_kv(out)["ret"] == "0", (s, d, out)
            ents = gai_entries(out)
            assert [int(e["family"]) for e in ents] == \
                [AF_IB, AF_INET if family == 0 else AF_INET6], (s, d, out)
            ib, ip = ents
            assert ib["dst"] == "ib/%s/pkey0xffff/sid0x%016x/mask0x%016x/len48" % (
                dst["gid"], sid, 2**64 - 1), (s, d, out)
            assert ib["src"].startswith("ib/%s/pkey0xffff/" % src["gid"]), (s, d, out)
            assert ib["route_len"] == "72" and ib["paths"] == [path_text(src, dst)], \
                (s, d, out)
            assert ib["canon"] == dst["name"]
            assert ip["dst"] == ip_dst and ip["src"] == ip_src, (s, d, out)
            assert ip["route_len"] == "72" and ip["paths"] == [path_text(src, dst)]
        for dest in (dst["ipv4"], dst["ipv6"], "gid:" + dst["gid"]):
            out = libibres(helpers, c4, s, "path", dest)
            kv = parse_kv(out)
            assert kv["ret"] == "0" and kv["count"] == "1", (s, d, out)
            assert kv["path"] == path_text(src, dst), (s, d, dest, out)


def test_directory_and_socket_agree_on_learned_hosts(c4, helpers):
    """Every entry point, family and buffer size, for every other node's
    keys as each node learned them: the shared directory's answer equals
    the daemon's (TTLs, counted down, may differ by the second they were
    read apart), and the answers from the file cost the daemon nothing."""
    for s in (1, 3):
        asks = []
        for d, dst in c4.nodes.items():
            if d == s:
                continue
            asks += [("byname3", dst["name"], AF_INET), ("byname3", dst["name"].upper(), AF_INET6),
                     ("byname3", dst["name"], AF_IB), ("byname4", dst["name"], 0),
                     ("byaddr2", dst["ipv4"], AF_INET), ("byaddr2", dst["ipv6"], AF_INET6),
                     ("byaddr2", dst["gid"], AF_IB)]
        # each key from the file then from the daemon, one right after the
        # other: a learned host's TTL counts down, so the two may differ by
        # the seconds they were read apart (the ASan build is slow enough
        # for all the file's answers together to take seconds)
        for entry, key, af in asks:
            kvs = []
            t0 = time.monotonic()
            for directory in ("on", "off"):
                before = stats(c4.sock(s))["host_lookups"]
                env = env_of(c4, s, **({} if directory == "on" else {"IBRES_DIRECTORY": "off"}))
                r = run([helpers["nss_call"], "--sweep", NSS_MODULE, entry, key, str(af)],
                        env=env, timeout=60)
                kv = parse_kv(r.stdout)
                assert kv["status"] == "SUCCESS", (s, entry, key, r.stdout)
                asked = stats(c4.sock(s))["host_lookups"] - before
                assert (asked == 0) == (directory == "on"), (directory, entry, key, asked)
                kvs.append(kv)
            on, off = kvs
            ask = (entry, key, af)
            apart = math.ceil(time.monotonic() - t0)  # the most they were read apart
            assert abs(int(on.pop("ttl")) - int(off.pop("ttl"))) <= 1 + apart, (ask, on, off)
            assert on == off, (s, ask, on, off)


# --- names that are not there ----------------------------------------------------------

@pytest.mark.parametrize("directory", ["on", "off"])
def test_unknown_cluster_name_notfound_at_once(c4, helpers, directory):
    """After the settle time a cluster name (or address, or GID) nobody
    announced is NOTFOUND (h_errno HOST_NOT_FOUND) at once, with no fabric
    query: from the shared directory without asking the daemon, or (with
    IBRES_DIRECTORY=off) from the daemon's store."""
    for s in (2, 3):
        before = stats(c4.sock(s))
        quick = dict(IBRES_TIMEOUT_MS=AT_ONCE_MS)
        if directory == "off":
            quick["IBRES_DIRECTORY"] = "off"
        for entry, key, af in (("byname2", "node99", AF_INET), ("byname2", "node99", AF_IB),
                               ("byname4", "node99", 0), ("byaddr", "198.18.0.99", AF_INET),
                               ("byaddr", "2001:db8::99", AF_INET6),
                               ("byaddr", "fe80::2:c903:0:99", AF_IB)):
            kv = nss_call(helpers, c4, s, entry, key, af, **quick)
            assert (kv["status"], kv["h_errno"], kv["errno"]) == \
                ("NOTFOUND", str(HOST_NOT_FOUND), str(errno.ENOENT)), (s, entry, key, kv)
        kv = glibc(helpers, c4, s, "byname2", "node99", AF_INET, **quick)
        assert kv["h_errno"] == str(HOST_NOT_FOUND) and kv["found"] == "0", kv
        for args in (("hosts", "node99"), ("ahosts", "node99"), ("hosts", "198.18.0.99")):
            r = getent(c4, s, "-s", "hosts:ib", *args, **quick)
            assert r.returncode == 2 and r.stdout == "", (s, args, r.stdout, r.stderr)
        after = stats(c4.sock(s))
        assert no_lookup_traffic(before, after) == NO_TRAFFIC, (s, before, after)
        if directory == "off":
            assert after["host_notfound"] > before["host_notfound"]
        else:
            # the daemon was not even asked
            assert after["host_lookups"] == before["host_lookups"], (before, after)


def test_foreign_name_no_fabric_traffic(c4, helpers):
    """A name outside name_pattern (node*) is NOTFOUND at once and never
    reaches the fabric: no node sends anything but periodic announcements
    meanwhile (no REQUEST, REPLY or unicast, no query retried), so `hosts: ib dns` costs the DNS path nothing but one
    round trip to the local daemon; the next module answers."""
    everyone = {k: stats(c4.sock(k)) for k in c4.nodes}
    quick = dict(IBRES_TIMEOUT_MS=AT_ONCE_MS)
    for name in ("www.example.org", "localhost", "gpu1.cluster.example"):
        for entry, af in (("byname2", AF_INET), ("byname2", AF_INET6), ("byname4", 0)):
            kv = nss_call(helpers, c4, 1, entry, name, af, **quick)
            assert (kv["status"], kv["h_errno"]) == ("NOTFOUND", str(HOST_NOT_FOUND)), \
                (name, entry, kv)
        r = getent(c4, 1, "-s", "ib", "ahosts", name, **quick)
        assert r.returncode == 2 and r.stdout == "", (name, r.stdout, r.stderr)
    # ib first, then files: localhost comes from /etc/hosts
    r = getent(c4, 1, "-s", "hosts:ib files", "hosts", "localhost", **quick)
    assert r.returncode == 0 and "localhost" in r.stdout.split()[1:], (r.stdout, r.stderr)
    for k in c4.nodes:
        after = stats(c4.sock(k))
        assert no_lookup_traffic(everyone[k], after) == NO_TRAFFIC, (k, everyone[k], after)
        for n in ("fabric_replies_sent", "fabric_query_timeouts", "fabric_query_retries"):
            assert after[n] == everyone[k][n], (k, n)


# --- a cache flush: the daemon resyncs -------------------------------------------------

def test_cache_flush_resyncs_within_settle_time(c4):
    """`ibresctl cache flush` empties node1's learned directory; the daemon
    then announces itself as a newcomer again and everyone answers: live
    nodes resolve right after the flush (asked on the fabric meanwhile) and,
    once the settle time has passed, from the rebuilt directory, which is
    authoritative again."""
    # Out of the start-up window: peers answer one newcomer burst per
    # settle_time + 1 s (see test_second_flush_resyncs for the flush inside it).
    left = c4.started + SETTLE + 2.5 - time.monotonic()
    if left > 0:
        time.sleep(left)
    s = 1
    r = run([IBRESCTL, "--json", "cache", "flush"], env=env_of(c4, s), timeout=60)
    assert r.returncode == 0, r.stderr
    flushed_at = time.monotonic()
    assert json.loads(r.stdout)["flushed"] > 0
    peers = [d for d in sorted(c4.nodes) if d != s]
    for d in peers:
        r = getent(c4, s, "-s", "hosts:ib", "hosts", c4.nodes[d]["name"])
        assert r.returncode == 0, (d, r.stderr, c4.log(s)[-3000:])
        assert lines_of(r) == [[c4.nodes[d]["ipv6"], c4.nodes[d]["name"]]]
    # Settle time over (with a margin): the directory holds every live node.
    left = flushed_at + SETTLE + 0.5 - time.monotonic()
    if left > 0:
        time.sleep(left)
    missing = [d for d in peers
               if host(c4.sock(s), c4.nodes[d]["name"], cache_only=True)[0] != ST_SUCCESS]
    assert not missing, "not back in node%d's directory after the settle time: %s" % (
        s, missing)
    before = stats(c4.sock(s))
    for d in peers:
        node = c4.nodes[d]
        for key in (node["name"], node["ipv4"], node["ipv6"]):
            r = getent(c4, s, "-s", "hosts:ib", "hosts", key)
            assert r.returncode == 0 and r.stdout.split()[-1] == node["name"], (key, r.stdout)
    r = getent(c4, s, "-s", "hosts:ib", "hosts", "node99", IBRES_TIMEOUT_MS=AT_ONCE_MS)
    assert r.returncode == 2
    assert no_lookup_traffic(before, stats(c4.sock(s))) == NO_TRAFFIC


def test_second_flush_resyncs(own_cluster):
    """Two flushes a moment apart (an administrator retrying): live nodes must
    still be in the directory once the settle time has passed."""
    c = own_cluster()
    wait_directory(c)
    left = c.started + SETTLE + 2.5 - time.monotonic()
    if left > 0:
        time.sleep(left)
    peers = {c.nodes[d]["name"] for d in (2, 3, 4)}
    assert cache_flush(c.sock(1)) > 0
    first = time.monotonic()
    # the first resync works: node1 hears every peer's answer at once
    wait_until(lambda: fabric_names(c, 1) >= peers, SETTLE + 1.0, interval=0.02,
               what="node1 relearns its peers after the first flush")
    time.sleep(0.2)
    assert cache_flush(c.sock(1)) > 0
    if time.monotonic() - first > 1.0:
        pytest.skip("too loaded to flush twice within one second")
    time.sleep(SETTLE + 0.5)
    for d in (2, 3, 4):
        name = c.nodes[d]["name"]
        r = getent(c, 1, "-s", "hosts:ib", "hosts", name)
        assert r.returncode == 0, "live %s NOTFOUND on node1 after a second flush" % name


# --- a node that left -------------------------------------------------------------------

def test_notfound_after_goodbye(own_cluster, helpers):
    """SIGTERM: node3 says GOODBYE; every other node forgets it and answers
    NOTFOUND at once (name, addresses, GID) without asking the fabric, and
    still resolves the others."""
    c = own_cluster()
    wait_directory(c)
    c.wait_settled(SETTLE)
    gone = c.nodes[3]
    c.kill(3, "TERM")
    others = (1, 2, 4)
    for k in others:
        wait_until(lambda: host(c.sock(k), gone["name"], cache_only=True)[0] == ST_ENODATA,
                   5.0, interval=0.1, what="node%d forgets node3" % k)
    quick = dict(IBRES_TIMEOUT_MS=AT_ONCE_MS)
    for k in others:
        before = stats(c.sock(k))
        assert before["fabric_goodbyes_rx"] >= 1, before
        for entry, key, af in (("byname2", gone["name"], AF_INET),
                               ("byname2", gone["name"], AF_IB), ("byname4", gone["name"], 0),
                               ("byaddr", gone["ipv4"], AF_INET),
                               ("byaddr", gone["ipv6"], AF_INET6),
                               ("byaddr", gone["gid"], AF_IB)):
            kv = nss_call(helpers, c, k, entry, key, af, **quick)
            assert (kv["status"], kv["h_errno"]) == ("NOTFOUND", str(HOST_NOT_FOUND)), \
                (k, entry, key, kv)
        for key in (gone["name"], gone["ipv4"]):
            r = getent(c, k, "-s", "hosts:ib", "hosts", key, **quick)
            assert r.returncode == 2 and r.stdout == "", (k, key, r.stdout)
        for d in others:
            r = getent(c, k, "-s", "hosts:ib", "hosts", c.nodes[d]["name"])
            assert r.returncode == 0 and r.stdout.split() == [c.nodes[d]["ipv6"],
                                                              c.nodes[d]["name"]]
        assert no_lookup_traffic(before, stats(c.sock(k))) == NO_TRAFFIC, k


# --- a node that does not answer on the fabric --------------------------------------------

@pytest.fixture
def cut_off(quiet):
    """node4 of the quiet cluster unplugged; plugged back afterwards and
    node1's cache cleared of what the test left."""
    quiet.link(4, "down")
    try:
        cache_flush(quiet.sock(1))
        yield quiet
    finally:
        quiet.link(4, "up")
        cache_flush(quiet.sock(1))


def timed(fn, *args, **kw):
    t0 = time.monotonic()
    out = fn(*args, **kw)
    return out, time.monotonic() - t0


def test_timed_out_node_is_tryagain(cut_off, helpers):
    """Announcements off, node4's link cut: a lookup from node1 waits on the
    fabric and fails with NSS_STATUS_TRYAGAIN (h_errno TRY_AGAIN, errno
    ETIMEDOUT; gethostbyname2_r returns EAGAIN) within the documented bound,
    not NOTFOUND. getent exits 2, as for any failed lookup."""
    c, gone = cut_off, cut_off.nodes[4]
    timeouts = stats(c.sock(1))["fabric_query_timeouts"]
    probes = [("byname2", gone["name"], AF_INET), ("byname4", gone["name"], 0),
              ("byaddr", gone["ipv4"], AF_INET)]
    for entry, key, af in probes:
        cache_flush(c.sock(1))
        kv, dt = timed(nss_call, helpers, c, 1, entry, key, af)
        assert (kv["status"], kv["h_errno"], kv["errno"]) == \
            ("TRYAGAIN", str(TRY_AGAIN), str(errno.ETIMEDOUT)), (entry, key, kv)
        assert dt <= fabric_bound(), "%s %s took %.2fs" % (entry, key, dt)
    cache_flush(c.sock(1))
    kv, dt = timed(glibc, helpers, c, 1, "byname2", gone["name"], AF_INET)
    assert (kv["ret"], kv["h_errno"], kv["found"]) == \
        (str(errno.EAGAIN), str(TRY_AGAIN), "0"), kv
    assert dt <= fabric_bound()
    cache_flush(c.sock(1))
    r, dt = timed(getent, c, 1, "-s", "hosts:ib", "hosts", gone["name"])
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert dt <= fabric_bound() + 1.0   # AF_INET6 waits; AF_INET hits the negative entry
    after = stats(c.sock(1))
    assert after["fabric_query_timeouts"] - timeouts >= len(probes) + 2, after
    # The others are unaffected.
    for d in (2, 3):
        r = getent(c, 1, "-s", "hosts:ib", "hosts", c.nodes[d]["name"])
        assert r.returncode == 0 and r.stdout.split() == [c.nodes[d]["ipv6"],
                                                          c.nodes[d]["name"]]


def test_timed_out_node_stays_tryagain(cut_off, helpers):
    """A second lookup of the unreachable node (inside negative_ttl) must
    still say "try again", not "no such host"."""
    c, gone = cut_off, cut_off.nodes[4]
    kv = nss_call(helpers, c, 1, "byname2", gone["name"], AF_INET)
    assert kv["status"] == "TRYAGAIN", kv
    kv = nss_call(helpers, c, 1, "byname2", gone["name"], AF_INET)
    assert (kv["status"], kv["h_errno"]) == ("TRYAGAIN", str(TRY_AGAIN)), kv


# --- 64 threads, one uncached name ------------------------------------------------------

def burst(c, helpers, src, dst, threads=64):
    """@threads lookups of node @dst from node @src at once, none of them
    cached: @dst's daemon is stopped (SIGSTOP) until every lookup has reached
    @src's daemon, so they all wait on the same fabric query; then it runs
    on and answers. Returns (helper output, stats before, stats after,
    lookups that were waiting together)."""
    cache_flush(c.sock(src))
    node = c.nodes[dst]
    assert host(c.sock(src), node["name"], cache_only=True)[0] == ST_ENODATA
    before = stats(c.sock(src))

    def arrived():
        n = stats(c.sock(src))["host_lookups"] - before["host_lookups"]
        return n if n >= threads else None

    signal_daemon(c, dst, signal.SIGSTOP)
    try:
        p = subprocess.Popen([helpers["nss_glibc"], "ib", "threads", str(threads), "1",
                              node["name"], node["ipv4"]], env=env_of(c, src),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # at most 1 s: well inside the fabric bound, so nothing times out
            waiting = wait_until(arrived, 1.0, interval=0.01, what="every lookup arrived")
        except AssertionError:
            waiting = stats(c.sock(src))["host_lookups"] - before["host_lookups"]
    finally:
        signal_daemon(c, dst, signal.SIGCONT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, out + err
    return parse_kv(out), before, stats(c.sock(src)), waiting


def test_64_threads_one_fabric_request(quiet, helpers):
    """64 threads look up one name that no cache holds (announcements off),
    all at once: every answer is right and the daemon sent one REQUEST for
    them all (a few more only if the target was stopped past a retry
    timeout), not one per thread."""
    kv, before, after, waiting = burst(quiet, helpers, 1, 3)
    assert kv["lookups"] == "64" and kv["wrong"] == "0" and kv["failed"] == "0", kv
    assert waiting >= 2, "the lookups did not overlap (%d waiting together)" % waiting
    sent = after["fabric_requests_sent"] - before["fabric_requests_sent"]
    retries = after["fabric_query_retries"] - before["fabric_query_retries"]
    assert sent == 1 + retries, (before, after)
    assert 1 <= sent <= 1 + RETRIES, "%d REQUESTs for one name" % sent
    assert after["host_lookups"] - before["host_lookups"] == 64
    assert after["fabric_query_timeouts"] == before["fabric_query_timeouts"]
    assert after["fabric_queries_outstanding"] == 0
    rec = host(quiet.sock(1), "node3", cache_only=True)
    assert rec[0] == ST_SUCCESS and rec[1]["gids"] == [quiet.nodes[3]["gid"]]


def test_64_threads_joined_counted(quiet, helpers):
    """The lookups that shared the REQUEST are counted as joined."""
    kv, before, after, waiting = burst(quiet, helpers, 1, 2)
    assert kv["wrong"] == "0" and kv["failed"] == "0", kv
    assert waiting >= 2
    joined = after["fabric_queries_joined"] - before["fabric_queries_joined"]
    assert 0 < joined <= 63, (waiting, before, after)
