"""Fetching what a peer holds (issue 22; doc/fabric-protocol.md, "Fetching
what a peer holds").

16 emulated nodes boot while 60% of the datagrams each node sends are lost,
with the product defaults for announce_interval (60 s) and addr_ttl (1 h):
some nodes miss some peers, and the next periodic announce is a minute
away. Once the loss is lifted, each incomplete node asks a peer, by range
queries, for the names it lacks and asks each on the fabric. Every node
must know every peer and count its directory complete within FETCH_BOUND,
well before the next periodic announce, and at no moment meanwhile may a
node count itself complete while it lacks a live peer (it would answer that
peer "not found"). Knowledge is read from the cache only, so that the test's
own look-ups teach nothing; the real look-ups (socket and NSS) come last.

test_forged_claim_overruled_by_peers: a forged digest that claims hosts
nobody has makes a node incomplete; its peers' answers to its range queries
vouch for its directory and it is complete again, with no announce round.

test_missed_goodbye_is_no_claim: one node misses a peer's GOODBYE and keeps
it; its digests hold one host more than every other node's. The nodes that
heard the GOODBYE take that for a quiet claim: they ask a peer where the host
is and ask it there, and its silence is no loss and meets the claim; they
count no loss, say DISTURBED for nothing, and are complete again. The node that missed it hears settled digests of one host
fewer and keeps the host only until its next announce could come: it
forgets it within two announce rounds, not addr_ttl (doc/fabric-protocol.md,
"A host that said goodbye"). The nodes repeat no GOODBYE there
(goodbye_repeats 0), nor in test_missed_goodbyes_are_forgotten (a rack).

test_repeated_goodbye_is_heard: the same missed GOODBYE, repeated by the
nodes that heard it (goodbye_repeats 2, the default): the node that missed
it keeps the host only until its next announce could come, and forgets it
sooner (doc/fabric-protocol.md, "A GOODBYE repeated").
"""
import itertools
import os
import struct
import time

import pytest

from conftest import needs_root, run
from fabric_util import (FABRIC_PORT, FW_ANNOUNCE, ST_ENODATA, ST_SUCCESS,
                         cluster_factory, cut_off, fabric_msg, group_items, host,  # noqa: F401 (fixture)
                         identity_items, send_datagrams, stamp_item, stats, tlv, wait_until)
from nss_helpers import NSS_MODULE, client_env, helpers, parse_kv  # noqa: F401 (fixture)
from test_lossy_boot import GROUP4, digest_item

pytestmark = needs_root

NODES = 16
LOSS = 60
SETTLE = 1.0
BOOTS = 3
FETCH_BOUND = 20.0   # seconds after the loss is lifted; the next announce is ~60 s away
PRODUCT = ("--set", "resolve.announce_interval=60s", "--set", "resolve.addr_ttl=1h")


def knowledge(c):
    """{k: (complete, peers k lacks)}, each node's verdict read before its cache."""
    out = {}
    for k in c.nodes:
        complete = stats(c.sock(k))["directory_complete"]
        lacks = [d for d in c.nodes if d != k and
                 host(c.sock(k), c.nodes[d]["name"], cache_only=True)[0] != ST_SUCCESS]
        out[k] = (complete, lacks)
    return out


def claim_more(c, k, key=None):
    """A forged peer node99, announcing from node @k's namespace a settled
    digest of 40 hosts (a claim nobody meets; it answers no range query);
    signed and stamped with @key. Sent again from the next node's namespace:
    a node does not hear what its own namespace sends, and every node must
    hold node99, or their digests differ and none vouches for another (K
    peers must agree, each once)."""
    for n in (k, k % len(c.nodes) + 1):
        ident = identity_items("node99", "fe80::2:c903:0:99", ["198.18.0.99"], lid=99) + \
            group_items() + (stamp_item() if key else b"")
        send_datagrams(c.netns(n), GROUP4, FABRIC_PORT,
                       [fabric_msg(FW_ANNOUNCE, ident + digest_item(40, 12345, 1, 1), key=key)],
                       src=c.nodes[n]["ipv4"])


@pytest.mark.timeout(240)
def test_lossy_boot_fetch_completes(cluster_factory):
    for attempt in range(BOOTS):
        c = cluster_factory(NODES, "--loss", LOSS, *PRODUCT, name="fetch%d" % attempt)
        c.wait_settled(SETTLE)
        # what the nodes lack before the loss is lifted (after it, the
        # fetch may fill it before the test has read every node)
        first = knowledge(c)
        missing = sum(len(lacks) for _, lacks in first.values())
        c.loss(0)
        lifted = time.monotonic()
        if missing:
            break
        c.down()
    assert missing, "no node missed a peer in %d boots: raise LOSS" % BOOTS
    assert time.monotonic() - c.started < 50, "the boot took too long to prove anything"
    false_complete = [(k, lacks) for k, (complete, lacks) in first.items() if complete and lacks]
    seen = knowledge(c)
    while True:
        false_complete += [(k, lacks) for k, (complete, lacks) in seen.items()
                           if complete and lacks]
        if all(complete and not lacks for complete, lacks in seen.values()):
            break
        assert time.monotonic() - lifted < FETCH_BOUND, (
            "not complete %.0f s after the loss was lifted: %s\n%s" % (
                FETCH_BOUND, {k: v for k, v in seen.items() if not v[0] or v[1]}, c.logs()))
        time.sleep(0.2)
        seen = knowledge(c)
    took = time.monotonic() - lifted
    totals = {name: sum(stats(c.sock(k)).get(name, 0) for k in c.nodes)
              for name in ("fabric_fetch_sessions", "fabric_fetch_queries",
                           "fabric_fetch_hints", "fabric_range_answered",
                           "fabric_range_refused", "fabric_incomplete_queries",
                           "fabric_bursts_unvouched", "fabric_newcomer_repeats")}
    print("peers missing when the loss was lifted: %d; every node complete and knowing "
          "every peer after %.1f s; %s" % (missing, took, totals))
    assert not false_complete, "complete while lacking live peers: %s\n%s" % (
        false_complete[:10], c.logs())
    # the directories were filled by the fetch, not by the test: by the names
    # peers' answers gave (hints), or by the NEWCOMER repeats of nodes whose
    # answers said their announce was not heard (the fetch's answers drive
    # both; a boot whose losses were all of the second kind asks no hint)
    assert totals["fabric_fetch_sessions"] > 0, totals
    assert totals["fabric_fetch_hints"] + totals["fabric_newcomer_repeats"] > 0, totals
    assert time.monotonic() - c.started < 54, "the next periodic announce may have helped"
    # and every look-up of a live host answers, through the socket and NSS
    for i, (s, d) in enumerate(itertools.permutations(sorted(c.nodes), 2)):
        if i % 2:
            assert host(c.sock(s), c.nodes[d]["name"], timeout=10.0)[0] == ST_SUCCESS
        else:
            r = run(["getent", "-s", "hosts:ib", "hosts", c.nodes[d]["name"]],
                    env=client_env(socket_path=c.sock(s)), timeout=30)
            assert r.returncode == 0, (s, d, r.returncode)
    # complete: a name nobody has is answered at once
    t0 = time.monotonic()
    assert host(c.sock(1), "node98")[0] == ST_ENODATA
    assert time.monotonic() - t0 < 0.5


def test_forged_claim_overruled_by_peers(cluster_factory):
    c = cluster_factory(4)
    c.wait_settled(SETTLE)
    wait_until(lambda: all(v[0] and not v[1] for v in knowledge(c).values()), 5.0,
               what="every directory complete")
    before = stats(c.sock(1))
    claim_more(c, 3)
    wait_until(lambda: stats(c.sock(1))["directory_complete"] == 0, 3.0,
               what="node1 incomplete after a digest with more hosts")
    # its fetch asks the real peers: their answers agree with it (the
    # forged peer answers no range query), and it is complete again long
    # before an announce round (66 s) would overrule the claim
    wait_until(lambda: stats(c.sock(1))["directory_complete"] == 1, 10.0,
               what="node1 complete again, its peers vouching")
    after = stats(c.sock(1))
    assert after["fabric_fetch_sessions"] > before["fabric_fetch_sessions"]
    assert after["fabric_fetch_answers"] >= before["fabric_fetch_answers"] + 3
    answered = sum(stats(c.sock(k))["fabric_range_answered"] for k in (2, 3, 4))
    assert answered >= 3
    assert after["fabric_fetch_hints"] == before["fabric_fetch_hints"]   # nothing to fetch


def range_query(c, k, tid, key=None):
    """A RANGE_QUERY (whole space, 16 parts) from node @k's namespace as a
    node55 nobody runs, to node 2's unicast socket, signed and stamped with
    @key."""
    n = c.nodes[k]
    items = identity_items("node55", "fe80::2:c903:0:55", ["198.18.0.55"], lid=55) + \
        group_items()
    items += tlv(0x107, struct.pack(">QQBB2x", 0, (1 << 64) - 1, 16, 0))
    if key:
        items += stamp_item()
    send_datagrams(c.netns(k), c.nodes[2]["ipv4"], FABRIC_PORT,
                   [fabric_msg(6, items, tid=tid, key=key)], src=n["ipv4"],
                   sport=FABRIC_PORT + 1)


def test_fetch_with_cluster_key(cluster_factory, tmp_path):
    """With cluster_key_file the range queries and answers are signed and
    stamped like every datagram: the fetch works, and a query without the
    HMAC, or with a wrong one, is dropped and counted, never answered."""
    key = b"0123456789abcdef-emulated-cluster-key"
    kf = tmp_path / "cluster.key"
    kf.write_bytes(key + b"\n")
    os.chmod(kf, 0o600)
    c = cluster_factory(4, "--set", "resolve.cluster_key_file=%s" % kf)
    c.wait_settled(SETTLE)
    wait_until(lambda: all(v[0] and not v[1] for v in knowledge(c).values()), 5.0,
               what="every directory complete")
    before = stats(c.sock(1))
    claim_more(c, 3, key=key)
    wait_until(lambda: stats(c.sock(1))["directory_complete"] == 0, 3.0,
               what="node1 incomplete after a signed digest with more hosts")
    wait_until(lambda: stats(c.sock(1))["directory_complete"] == 1, 10.0,
               what="node1 complete again, its peers vouching")
    after = stats(c.sock(1))
    assert after["fabric_fetch_answers"] >= before["fabric_fetch_answers"] + 3
    assert after["fabric_rx_auth_failed"] == before["fabric_rx_auth_failed"]
    # unsigned, or signed with another key: dropped before anything of it is used
    # (every node heard the claim: once all are complete, none fetches)
    wait_until(lambda: all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes),
               10.0, what="every node complete again")
    two = stats(c.sock(2))
    range_query(c, 3, 0x51)
    range_query(c, 3, 0x52, key=b"another key, 16+ bytes long")
    wait_until(lambda: stats(c.sock(2))["fabric_rx_auth_failed"] ==
               two["fabric_rx_auth_failed"] + 2, 3.0, what="both refused")
    # and a signed one is answered
    assert stats(c.sock(2))["fabric_range_answered"] == two["fabric_range_answered"]
    range_query(c, 3, 0x53, key=key)
    wait_until(lambda: stats(c.sock(2))["fabric_range_answered"] >
               two["fabric_range_answered"], 3.0, what="the signed query answered")


@pytest.mark.timeout(150)
def test_missed_goodbye_is_no_claim(cluster_factory):
    nodes, left, missed = 5, 5, 4
    others = [k for k in range(1, nodes + 1) if k not in (left, missed)]
    # addr_ttl far longer than the test, and no node repeats the GOODBYEs
    # it heard (test_repeated_goodbye_is_heard): forgotten only by the rule
    c = cluster_factory(nodes, "--set", "resolve.announce_interval=5s",
                        "--set", "resolve.addr_ttl=600s", "--set", "resolve.goodbye_repeats=0")
    c.wait_settled(complete=5.0)
    assert all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes)
    with cut_off(c, missed):
        c.kill(left, "TERM")
        time.sleep(0.3)
    name = c.nodes[left]["name"]
    assert host(c.sock(missed), name, cache_only=True)[0] == ST_SUCCESS, \
        "node%d heard the GOODBYE: the test did not cut it off" % missed
    for k in others:
        assert host(c.sock(k), name, cache_only=True)[0] == ST_ENODATA
    before = {k: stats(c.sock(k)) for k in others}
    t0 = time.monotonic()
    # node4 announces every 5 s (a digest of one host more each time) and
    # hears the others' (one fewer, agreeing): it marks every host, keeps
    # those it has not heard two rounds later (1.1 x 5 s + 1 s each) two
    # rounds more, not addr_ttl
    wait_until(lambda: host(c.sock(missed), name, cache_only=True)[0] == ST_ENODATA, 55.0,
               what="node%d forgets node%d" % (missed, left))
    # node5 alone: the live hosts were heard (nothing is lost here)
    assert stats(c.sock(missed))["fabric_departed_shortened"] == 1
    time.sleep(6)   # one more announce of node4's, now of the others' size
    for k in others:
        wait_until(lambda: stats(c.sock(k))["directory_complete"] == 1, 5.0,
                   what="node%d complete" % k)
        after = stats(c.sock(k))
        window = time.monotonic() - t0
        moved = {n: after[n] - before[k][n] for n in (
            "fabric_departed_explained", "fabric_departed_confirmed", "fabric_fetch_sessions",
            "fabric_fetch_losses", "fabric_hints_unanswered", "fabric_digest_mismatches")}
        assert moved["fabric_departed_explained"] >= 1, (k, moved)
        # asked where node5 is, and node5 there: no answer, which is no loss,
        # and that peer's word is stale for 10 s (before: four sessions a
        # second, and a loss each); two sessions each time at most, and two
        # more at the window's edges (a busy machine here saw 10 in 37.8 s)
        assert moved["fabric_departed_confirmed"] >= 1, (k, moved)
        assert moved["fabric_fetch_sessions"] <= 4 + 2 * window / 10, (k, window, moved)
        assert moved["fabric_fetch_losses"] == 0, (k, moved)
        assert moved["fabric_hints_unanswered"] == 0, (k, moved)
        assert moved["fabric_digest_mismatches"] == 0, (k, moved)
        assert host(c.sock(k), name, cache_only=True)[0] == ST_ENODATA
    # it comes back: learned, by the nodes that held it gone too
    c.start(left)
    for k in c.nodes:
        if k != left:
            wait_until(lambda: host(c.sock(k), name, cache_only=True)[0] == ST_SUCCESS, 10.0,
                       what="node%d learns node%d again" % (k, left))


@pytest.mark.timeout(120)
def test_repeated_goodbye_is_heard(cluster_factory):
    """node4 misses node5's GOODBYE (the switch drops what reaches it). The
    others heard it, and their next two announces name node5 (GONE): node4
    keeps node5 only until its next announce could come (two rounds, 13 s)
    and then forgets it, without waiting for the peers' digests to agree (a
    mark, then two rounds, then two more). The live hosts stay, and every
    node is complete again."""
    nodes, left, missed = 5, 5, 4
    others = [k for k in range(1, nodes + 1) if k not in (left, missed)]
    c = cluster_factory(nodes, "--set", "resolve.announce_interval=5s",
                        "--set", "resolve.addr_ttl=600s")
    c.wait_settled(complete=5.0)
    assert all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes)
    with cut_off(c, missed):
        c.kill(left, "TERM")
        time.sleep(0.3)
    t0 = time.monotonic()
    name = c.nodes[left]["name"]
    assert host(c.sock(missed), name, cache_only=True)[0] == ST_SUCCESS, \
        "node%d heard the GOODBYE: the test did not cut it off" % missed
    # the next announce of any of the three (5.5 s at most) names node5
    wait_until(lambda: stats(c.sock(missed))["fabric_gone_shortened"] == 1, 10.0,
               what="node%d hears node%d named" % (missed, left))
    assert host(c.sock(missed), name, cache_only=True)[0] == ST_SUCCESS
    # two rounds (5 s x 1.1 and the 1 s tick each) and the sweep
    wait_until(lambda: host(c.sock(missed), name, cache_only=True)[0] == ST_ENODATA, 25.0,
               what="node%d forgets node%d" % (missed, left))
    took = time.monotonic() - t0
    assert sum(stats(c.sock(k))["fabric_gone_sent"] for k in others) >= 2
    for k in others + [missed]:
        wait_until(lambda: stats(c.sock(k))["directory_complete"] == 1, 15.0,
                   what="node%d complete (node5 forgotten after %.1f s)" % (k, took))
        for j in others + [missed]:
            assert host(c.sock(k), c.nodes[j]["name"], cache_only=True)[0] == ST_SUCCESS
    # the others' live hosts were named by nobody, and kept their TTL
    for k in others:
        assert stats(c.sock(k))["fabric_gone_shortened"] == 0


@pytest.mark.timeout(180)
def test_missed_goodbyes_are_forgotten(cluster_factory, helpers):
    """A rack switched off on a lossy fabric: node4 misses the GOODBYEs of
    node3 and node5 but heard node6's, so the others' digests (two hosts
    fewer) are neither ours less one departed host nor less all of them.
    When peers past their start-up agree on a digest of fewer hosts, node4
    marks every host, and two rounds later keeps those it has not heard
    since only two rounds more: both are forgotten within a few rounds, not
    after addr_ttl, and the others, whom its digests kept incomplete, are
    complete again. The live hosts are kept. The shared directory is told
    the shorter expiry at once."""
    nodes, missed, gone = 6, 4, (3, 5)
    others = (1, 2)
    # addr_ttl far longer than the test, and no node repeats the GOODBYEs
    # it heard (test_repeated_goodbye_is_heard): forgotten only by the rule
    c = cluster_factory(nodes, "--set", "resolve.announce_interval=5s",
                        "--set", "resolve.addr_ttl=600s", "--set", "resolve.goodbye_repeats=0")
    c.wait_settled(complete=5.0)
    assert all(stats(c.sock(k))["directory_complete"] == 1 for k in c.nodes)
    c.kill(6, "TERM")
    time.sleep(0.5)
    with cut_off(c, missed):
        for k in gone:
            c.kill(k, "TERM")
        time.sleep(0.3)
    names = [c.nodes[k]["name"] for k in gone]
    for name in names:
        assert host(c.sock(missed), name, cache_only=True)[0] == ST_SUCCESS, \
            "node%d heard a GOODBYE: the test did not cut it off" % missed
        for k in others:
            assert host(c.sock(k), name, cache_only=True)[0] == ST_ENODATA

    def waiting(pred, what, timeout):
        try:
            wait_until(pred, timeout, interval=0.2, what="node%d %s" % (missed, what))
        except AssertionError as e:
            st = stats(c.sock(missed))
            raise AssertionError("%s\n%s\n%s" % (
                e, {k: v for k, v in st.items() if "departed" in k or "drop" in k}, c.logs()))

    # the mark at the first agreement (a round), the check two rounds later
    # or at the agreement after (6.5 s each), the shortened expiry two more
    waiting(lambda: stats(c.sock(missed))["fabric_departed_shortened"] > 0, "shortens", 40.0)
    # the NSS module's answer from the shared directory (the daemon asked
    # nothing: host_lookups unmoved across the call) counts down from two
    # rounds (5 s x 1.1 and the 1 s tick each: 13 s), not from addr_ttl.
    # Both names are polled together until each was seen so: a mark made
    # less than a round before the GOODBYEs shortens a host that announced
    # after it at the next check (two or three rounds, 13-19.5 s, later),
    # when the other may be gone already.
    # Gone before it was seen short (a poll every 0.2 s against 13 s), the
    # directory was told only the removal
    short = set()

    def both_short():
        for name in names:
            if name in short:
                continue
            before = stats(c.sock(missed))["host_lookups"]
            r = run([helpers["nss_call"], NSS_MODULE, "byname4", name, "0"],
                    env=client_env(socket_path=c.sock(missed)), timeout=60)
            asked = stats(c.sock(missed))["host_lookups"] - before
            kv = parse_kv(r.stdout)
            assert kv.get("status") == "SUCCESS", (name, "gone before seen short", r.stdout)
            if not asked and 0 < int(kv["ttl"]) <= 13:
                short.add(name)
        return len(short) == len(names)
    waiting(both_short, "tells the directory the short TTLs", 30.0)
    waiting(lambda: all(host(c.sock(missed), name, cache_only=True)[0] == ST_ENODATA
                        for name in names), "forgets %s" % " and ".join(names), 30.0)
    assert stats(c.sock(missed))["fabric_departed_shortened"] == 2
    time.sleep(6)   # one more announce of node4's, now of the others' size
    for k in others + (missed,):
        wait_until(lambda: stats(c.sock(k))["directory_complete"] == 1, 10.0,
                   what="node%d complete" % k)
        # the live hosts kept (each announced within a round)
        for j in others + (missed,):
            assert host(c.sock(k), c.nodes[j]["name"], cache_only=True)[0] == ST_SUCCESS
