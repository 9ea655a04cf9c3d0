// SPDX-License-Identifier: MIT
/*
 * The directory digest (core/hoststore.c: count and sum of per-host terms,
 * kept on every change) and the completeness rule (fabric/fabric_digest.c,
 * driven here with a fake clock): doc/fabric-protocol.md, "When the
 * directory is complete".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>

#include "core/hoststore.h"
#include "fabric/fabric_digest.h"

/* ---- the store's digest ------------------------------------------------------------ */

/* Node @n's endpoint on rail @r: canonical name @name, GID fe80::@n:@r. */
static void ep(struct ibres_hostrec *h, const char *name, unsigned n, unsigned r)
{
	char gid[64];

	memset(h, 0, sizeof(*h));
	snprintf(h->names[h->n_names++], sizeof(h->names[0]), "%s", name);
	snprintf(gid, sizeof(gid), "fe80::%x:%x", n, r);
	assert_int_equal(inet_pton(AF_INET6, gid, h->gids[h->n_gids++]), 1);
	h->pkey = 0xffff;
	h->v4[h->n_v4++].s_addr = htonl(0xc6120000u + (n << 4) + r);
}

static void put(struct host_store *s, const struct ibres_hostrec *h, uint8_t origin, uint64_t rails)
{
	assert_int_equal(
		store_insert(s, h,
			     &(struct store_put){.origin = origin,
						 .heard_on = origin == IBRES_ORIGIN_STATIC ? 0 : 1,
						 .rails = rails,
						 .ttl_s = 60},
			     0, NULL),
		0);
	assert_int_equal(store_check(s), 0); /* it also sums the digest by a walk */
}

static void put_node(struct host_store *s, unsigned n, uint8_t origin)
{
	struct ibres_hostrec h;
	char name[16];

	snprintf(name, sizeof(name), "node%u", n);
	ep(&h, name, n, 0);
	put(s, &h, origin, 0);
}

static struct store_digest digest_of(const struct host_store *s)
{
	struct store_digest d;

	store_digest(s, &d);
	return d;
}

static uint64_t term(const char *name)
{
	struct host_key k;

	assert_int_equal(host_key_name(&k, name), 0);
	return host_digest_term(&k);
}

/* The same hosts in any order give the same digest; the sum is of the
 * canonical names' terms, ASCII case aside; a refresh changes nothing. */
static void test_order_and_terms(void **state)
{
	static const unsigned order_a[] = {1, 2, 3, 4, 5}, order_b[] = {4, 2, 5, 1, 3};
	struct host_store a, b;
	struct ibres_hostrec h;
	struct store_digest da, db;

	(void)state;
	assert_int_equal(store_init(&a, 64), 0);
	assert_int_equal(store_init(&b, 64), 0);
	da = digest_of(&a);
	assert_true(da.hosts == 0 && da.sum == 0);
	for (unsigned i = 0; i < 5; i++) {
		put_node(&a, order_a[i], IBRES_ORIGIN_FABRIC);
		put_node(&b, order_b[i], IBRES_ORIGIN_FABRIC);
	}
	da = digest_of(&a);
	db = digest_of(&b);
	assert_true(da.hosts == 5 && da.hosts == db.hosts && da.sum == db.sum);
	assert_true(da.sum ==
		    term("node1") + term("node2") + term("node3") + term("node4") + term("node5"));
	assert_true(term("Node3") == term("node3") && term("node3") != term("node4"));
	/* a refresh (another address) is the same host */
	ep(&h, "NODE3", 3, 0);
	h.v4[0].s_addr = htonl(0xc6129999u);
	put(&a, &h, IBRES_ORIGIN_FABRIC, 0);
	db = digest_of(&a);
	assert_true(db.hosts == da.hosts && db.sum == da.sum);
	store_fini(&a);
	store_fini(&b);
}

/* LOCAL and FABRIC hosts count, STATIC ones (this node's own file) do not;
 * every way out takes a host's term back. */
static void test_origins_and_removal(void **state)
{
	struct host_store s;
	struct ibres_hostrec h;
	struct store_digest d0, d;
	struct host_key k;

	(void)state;
	assert_int_equal(store_init(&s, 2), 0);
	put_node(&s, 1, IBRES_ORIGIN_LOCAL);
	put_node(&s, 9, IBRES_ORIGIN_STATIC);
	d = digest_of(&s);
	assert_true(d.hosts == 1 && d.sum == term("node1"));
	d0 = d;
	/* a GOODBYE */
	put_node(&s, 2, IBRES_ORIGIN_FABRIC);
	ep(&h, "node2", 2, 0);
	assert_true(store_remove_endpoint(&s, h.gids[0], h.pkey) > 0);
	assert_int_equal(store_check(&s), 0);
	d = digest_of(&s);
	assert_true(d.hosts == d0.hosts && d.sum == d0.sum);
	/* eviction (max_hosts 2: the least recently used learned host goes) */
	put_node(&s, 2, IBRES_ORIGIN_FABRIC);
	put_node(&s, 3, IBRES_ORIGIN_FABRIC);
	put_node(&s, 4, IBRES_ORIGIN_FABRIC);
	d = digest_of(&s);
	assert_true(d.hosts == 3 && d.sum == term("node1") + term("node3") + term("node4"));
	/* a flush of one, then of every learned host */
	assert_int_equal(host_key_name(&k, "node3"), 0);
	assert_true(store_flush(&s, &k) > 0);
	d = digest_of(&s);
	assert_true(d.hosts == 2 && d.sum == term("node1") + term("node4"));
	store_flush(&s, NULL);
	d = digest_of(&s);
	assert_true(d.hosts == d0.hosts && d.sum == d0.sum);
	/* expiry */
	put_node(&s, 5, IBRES_ORIGIN_FABRIC);
	assert_int_equal(store_sweep(&s, 61 * 1000), 1);
	d = digest_of(&s);
	assert_true(d.hosts == d0.hosts && d.sum == d0.sum);
	assert_int_equal(store_check(&s), 0);
	store_fini(&s);
}

/* A host of several endpoints (one rails digest) counts once, until its
 * last endpoint goes. */
static void test_rails_count_once(void **state)
{
	struct host_store s;
	struct ibres_hostrec r0, r1, r2;
	struct store_digest d;

	(void)state;
	assert_int_equal(store_init(&s, 64), 0);
	ep(&r0, "gpu7", 7, 0);
	ep(&r1, "gpu7", 7, 1);
	ep(&r2, "gpu7", 7, 2);
	put(&s, &r0, IBRES_ORIGIN_FABRIC, 0x77);
	put(&s, &r1, IBRES_ORIGIN_FABRIC, 0x77);
	put(&s, &r2, IBRES_ORIGIN_FABRIC, 0x77);
	put_node(&s, 1, IBRES_ORIGIN_FABRIC);
	d = digest_of(&s);
	assert_true(d.hosts == 2 && d.sum == term("gpu7") + term("node1"));
	/* a refresh of one rail, then one rail's GOODBYE: still the host */
	put(&s, &r1, IBRES_ORIGIN_FABRIC, 0x77);
	assert_true(store_remove_endpoint(&s, r0.gids[0], r0.pkey) > 0);
	assert_true(store_remove_endpoint(&s, r2.gids[0], r2.pkey) > 0);
	assert_int_equal(store_check(&s), 0);
	d = digest_of(&s);
	assert_true(d.hosts == 2 && d.sum == term("gpu7") + term("node1"));
	/* its last one */
	assert_true(store_remove_endpoint(&s, r1.gids[0], r1.pkey) > 0);
	assert_int_equal(store_check(&s), 0);
	d = digest_of(&s);
	assert_true(d.hosts == 1 && d.sum == term("node1"));
	store_fini(&s);
}

static void put_on(struct host_store *s, const struct ibres_hostrec *h, uint32_t heard_on,
		   uint64_t rails)
{
	assert_int_equal(store_insert(s, h,
				      &(struct store_put){.origin = IBRES_ORIGIN_FABRIC,
							  .heard_on = heard_on,
							  .rails = rails,
							  .ttl_s = 60},
				      0, NULL),
			 0);
	assert_int_equal(store_check(s), 0); /* it also sums each fabric's digest by a walk */
}

static struct store_digest fabric_of(const struct host_store *s, int fabric)
{
	struct store_digest d;

	store_fabric_digest(s, fabric, &d);
	return d;
}

/* Each local fabric counts the hosts with an endpoint heard there, once
 * however many of its endpoints (or fabrics that heard one) there are: a
 * rail whose announce was lost lacks that host on that fabric alone. */
static void test_fabric_digests(void **state)
{
	struct host_store s;
	struct ibres_hostrec a0, a1, b0, b1, c0;
	struct store_digest d;

	(void)state;
	assert_int_equal(store_init(&s, 64), 0);
	ep(&a0, "gpu1", 1, 0);
	ep(&a1, "gpu1", 1, 1);
	ep(&b0, "gpu2", 2, 0);
	ep(&b1, "gpu2", 2, 1);
	ep(&c0, "gpu3", 3, 0);
	put_on(&s, &a0, 1u << 0, 0x11);
	put_on(&s, &b0, 1u << 0, 0x22);
	put_on(&s, &b1, 1u << 1, 0x22);
	put_on(&s, &c0, 1u << 0, 0);
	/* gpu1's rail-1 announce was lost: the whole directory has it */
	d = digest_of(&s);
	assert_true(d.hosts == 3);
	d = fabric_of(&s, 0);
	assert_true(d.hosts == 3 && d.sum == term("gpu1") + term("gpu2") + term("gpu3"));
	d = fabric_of(&s, 1);
	assert_true(d.hosts == 1 && d.sum == term("gpu2"));
	d = fabric_of(&s, STORE_ALL_FABRICS);
	assert_true(d.hosts == 3);
	d = fabric_of(&s, 40); /* no such fabric: empty */
	assert_true(d.hosts == 0 && d.sum == 0);
	/* it comes: rail 1 has it too */
	put_on(&s, &a1, 1u << 1, 0x11);
	d = fabric_of(&s, 1);
	assert_true(d.hosts == 2 && d.sum == term("gpu1") + term("gpu2"));
	/* one endpoint heard on both fabrics (rails of one subnet): each
	 * fabric counts its host once */
	put_on(&s, &c0, (1u << 0) | (1u << 1), 0);
	d = fabric_of(&s, 1);
	assert_true(d.hosts == 3);
	d = fabric_of(&s, 0);
	assert_true(d.hosts == 3);
	/* fabric 1 goes (its port closed): only what was heard there alone */
	assert_true(store_forget_fabric(&s, 1) > 0);
	assert_int_equal(store_check(&s), 0);
	d = fabric_of(&s, 1);
	assert_true(d.hosts == 0 && d.sum == 0);
	d = fabric_of(&s, 0);
	assert_true(d.hosts == 3 && d.sum == term("gpu1") + term("gpu2") + term("gpu3"));
	/* a GOODBYE of gpu2's rail 0: its last endpoint, gone everywhere */
	assert_true(store_remove_endpoint(&s, b0.gids[0], b0.pkey) > 0);
	assert_int_equal(store_check(&s), 0);
	d = fabric_of(&s, 0);
	assert_true(d.hosts == 2 && d.sum == term("gpu1") + term("gpu3"));
	store_fini(&s);
}

/* ---- the completeness rule, with a fake clock ------------------------------------------ */

#define ROUND_MS 67000

static struct store_digest own(uint64_t hosts, uint64_t sum)
{
	return (struct store_digest){.hosts = hosts, .sum = sum};
}

static struct fw_digest theirs(uint32_t hosts, uint64_t sum, bool settled)
{
	return (struct fw_digest){
		.hosts = hosts, .sum = sum, .flags = settled ? FW_DIGEST_SETTLED : 0};
}

static bool heard(struct digest_rule *r, struct store_digest o, struct fw_digest t, uint64_t now)
{
	static uint64_t sender;

	/* each digest from another peer; test_rule_one_peer_one_voice sends
	 * several from one */
	return digest_rule_heard(r, &o, &t, ++sender, now);
}

static bool eval(struct digest_rule *r, struct store_digest o, uint64_t now)
{
	return digest_rule_eval(r, &o, now);
}

/* Nothing heard: complete (as before the digest: old peers send none). A
 * peer that lags (fewer hosts) says nothing of us. A peer with more makes us
 * incomplete until we hold what it held. */
static void test_rule_claims(void **state)
{
	struct digest_rule r = {0};
	uint64_t t = 1000;

	(void)state;
	digest_rule_reset(&r, ROUND_MS);
	assert_false(eval(&r, own(10, 100), t));
	assert_false(heard(&r, own(10, 100), theirs(9, 90, true), t));
	assert_false(eval(&r, own(10, 100), t));
	/* more: incomplete, until we learn it */
	assert_true(heard(&r, own(10, 100), theirs(11, 111, false), t));
	assert_true(eval(&r, own(10, 100), t));
	assert_true(eval(&r, own(10, 100), t + 5000));
	assert_false(eval(&r, own(11, 111), t + 5000));
	assert_int_equal(r.mismatches, 1);
	/* as many, but others: its one we lack */
	assert_true(heard(&r, own(11, 111), theirs(11, 112, false), t));
	assert_true(eval(&r, own(11, 111), t));
	assert_false(eval(&r, own(11, 112), t)); /* now we hold what it did */
	/* two different directories of 12: their union has 13 */
	assert_true(heard(&r, own(11, 112), theirs(12, 120, false), t));
	assert_true(heard(&r, own(11, 112), theirs(12, 121, false), t));
	assert_true(eval(&r, own(12, 120), t));
	assert_true(eval(&r, own(12, 121), t));
	assert_false(eval(&r, own(13, 133), t));
}

/* A drop (or a gap, or unanswered NEWCOMERs) makes us incomplete until K
 * settled digests agree with ours after it and the hold passed, or a quiet
 * round passed. Unsettled agreement vouches for nothing; a disagreement
 * starts the count again. */
static void test_rule_drops(void **state)
{
	struct digest_rule r = {0};
	uint64_t t = 1000;

	(void)state;
	digest_rule_reset(&r, ROUND_MS);
	digest_rule_drop(&r, t);
	assert_true(eval(&r, own(10, 100), t));
	for (unsigned i = 0; i < 5; i++)
		assert_false(heard(&r, own(10, 100), theirs(10, 100, false), t + 10));
	assert_true(eval(&r, own(10, 100), t + 2000));
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++) {
		assert_true(eval(&r, own(10, 100), t + 20));
		assert_false(heard(&r, own(10, 100), theirs(10, 100, true), t + 20));
	}
	/* K agree, but within the hold */
	assert_true(eval(&r, own(10, 100), t + DIGEST_HOLD_MS - 1));
	assert_false(eval(&r, own(10, 100), t + DIGEST_HOLD_MS));
	assert_int_equal(r.drops, 1);

	/* a disagreement in between starts the count again */
	t = 100000;
	digest_rule_drop(&r, t);
	heard(&r, own(10, 100), theirs(10, 100, true), t + 1);
	heard(&r, own(10, 100), theirs(10, 100, true), t + 2);
	assert_true(heard(&r, own(10, 100), theirs(10, 101, true), t + 3));
	heard(&r, own(10, 100), theirs(10, 100, true), t + 4);
	assert_true(eval(&r, own(10, 100), t + 3 + DIGEST_HOLD_MS));
	heard(&r, own(10, 100), theirs(10, 100, true), t + 5);
	heard(&r, own(10, 100), theirs(10, 100, true), t + 6);
	assert_true(eval(&r, own(10, 100), t + 2 + DIGEST_HOLD_MS));
	assert_false(eval(&r, own(10, 100), t + 3 + DIGEST_HOLD_MS));
	/* nothing heard after a drop: a quiet round */
	t = 300000;
	digest_rule_drop(&r, t);
	assert_true(eval(&r, own(10, 100), t + ROUND_MS - 1));
	assert_false(eval(&r, own(10, 100), t + ROUND_MS));
}

/* K is at most the peers known: a node of two needs one. A claim that no
 * peer repeats (a peer that missed a GOODBYE holds one more host) is
 * overruled by K agreeing settled peers, or by a quiet round. */
static void test_rule_small_and_stale(void **state)
{
	struct digest_rule r = {0};
	uint64_t t = 1000;

	(void)state;
	digest_rule_reset(&r, ROUND_MS);
	digest_rule_drop(&r, t);
	assert_false(heard(&r, own(2, 20), theirs(2, 20, true), t + 1));
	assert_false(eval(&r, own(2, 20), t + DIGEST_HOLD_MS));
	/* alone: nobody to agree, only the hold */
	digest_rule_drop(&r, t);
	assert_true(eval(&r, own(1, 10), t + DIGEST_HOLD_MS - 1));
	assert_false(eval(&r, own(1, 10), t + DIGEST_HOLD_MS));
	/* a stale peer's claim */
	t = 50000;
	assert_true(heard(&r, own(10, 100), theirs(11, 111, true), t));
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
		heard(&r, own(10, 100), theirs(10, 100, true), t + 1 + i);
	assert_true(eval(&r, own(10, 100), t + 100));
	assert_false(eval(&r, own(10, 100), t + DIGEST_HOLD_MS));
	assert_int_equal(r.claim.hosts, 0);
	t = 90000;
	assert_true(heard(&r, own(10, 100), theirs(11, 111, true), t));
	assert_true(eval(&r, own(10, 100), t + ROUND_MS - 1));
	assert_false(eval(&r, own(10, 100), t + ROUND_MS));
	/* a reset forgets the claims, keeps the counters */
	assert_true(heard(&r, own(10, 100), theirs(11, 111, true), t));
	digest_rule_reset(&r, ROUND_MS);
	assert_false(eval(&r, own(10, 100), t));
	assert_int_equal(r.mismatches, 3);
}

/* A burst that ended with nothing against us is vouched for when K of the
 * last digests heard equal what the directory holds at its end (or K settled
 * ones agreed); else (digests were heard, so peers send them) it stays
 * incomplete until K settled ones agree or a round passes. With no digest
 * heard at all (peers before the digest) today's rule holds. */
static void test_rule_burst_unvouched(void **state)
{
	struct digest_rule r = {0};
	uint64_t t = 1000;

	(void)state;
	/* nothing heard: complete at once */
	digest_rule_reset(&r, ROUND_MS);
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){10, 100}, t));
	assert_false(eval(&r, own(10, 100), t));
	/* answers heard, all claims while the directory filled: unvouched */
	digest_rule_reset(&r, ROUND_MS);
	assert_true(heard(&r, own(5, 50), theirs(10, 100, true), t));
	assert_true(eval(&r, own(5, 50), t));
	assert_true(digest_rule_burst_end(&r, &(struct store_digest){10, 100}, t + 10));
	assert_true(eval(&r, own(10, 100), t + 10));
	/* unsettled agreement vouches for nothing; settled ones in the hold
	 * after the burst neither (peers that lost the same senders agree);
	 * K settled ones after it do */
	heard(&r, own(10, 100), theirs(10, 100, false), t + 20);
	assert_true(eval(&r, own(10, 100), t + 20));
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
		heard(&r, own(10, 100), theirs(10, 100, true), t + 30);
	assert_true(eval(&r, own(10, 100), t + 30));
	t += DIGEST_HOLD_MS;
	for (unsigned i = 0; i < DIGEST_AGREE_K - 1; i++)
		heard(&r, own(10, 100), theirs(10, 100, true), t + 30);
	assert_true(eval(&r, own(10, 100), t + 30));
	heard(&r, own(10, 100), theirs(10, 100, true), t + 40);
	assert_false(eval(&r, own(10, 100), t + 40));
	assert_false(r.unvouched);
	/* K agreed during the burst already: vouched */
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
		heard(&r, own(10, 100), theirs(10, 100, true), t);
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){10, 100}, t));
	assert_false(eval(&r, own(10, 100), t));
	/* nobody vouches: a quiet round ends it */
	digest_rule_reset(&r, ROUND_MS);
	heard(&r, own(10, 100), theirs(10, 100, false), t);
	assert_true(digest_rule_burst_end(&r, &(struct store_digest){10, 100}, t));
	assert_true(eval(&r, own(10, 100), t + ROUND_MS - 1));
	assert_false(eval(&r, own(10, 100), t + ROUND_MS));
	/* rejoining a settled cluster of 3: the first answer claimed (it came
	 * before we learned the other peer), the second agreed; both equal
	 * what we hold at the end: vouched */
	digest_rule_reset(&r, ROUND_MS);
	assert_true(heard(&r, own(2, 20), theirs(3, 30, true), t));
	assert_false(heard(&r, own(3, 30), theirs(3, 30, true), t + 1));
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){3, 30}, t + 2));
	assert_false(eval(&r, own(3, 30), t + 2));
	/* a node that missed most of a lossy boot: peers said more */
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < 4; i++)
		heard(&r, own(9, 90), theirs(7 + i, 70 + i, false), t);
	assert_true(digest_rule_burst_end(&r, &(struct store_digest){9, 90}, t));
	assert_true(eval(&r, own(9, 90), t));
	/* a whole-cluster boot: peers' NEWCOMER digests (sent as they booted)
	 * equal to ours vouch for nothing (they may all lack the same host) */
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < DIGEST_RECENT; i++)
		heard(&r, own(9, 90), theirs(9, 90, false), t);
	assert_true(digest_rule_burst_end(&r, &(struct store_digest){9, 90}, t));
	assert_true(eval(&r, own(9, 90), t));
	/* ... a peer's answer past its own start-up does */
	{
		struct fw_digest d = {.hosts = 9, .sum = 90, .flags = FW_DIGEST_PAST_SETTLE};

		digest_rule_reset(&r, ROUND_MS);
		for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
			digest_rule_heard(&r, &(struct store_digest){9, 90}, &d, 100 + i, t);
		assert_false(digest_rule_burst_end(&r, &(struct store_digest){9, 90}, t));
	}
	/* a node alone (K = 0) is vouched for by nobody and needs nobody */
	digest_rule_reset(&r, ROUND_MS);
	heard(&r, own(1, 10), theirs(1, 10, false), t);
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){1, 10}, t));
	assert_false(eval(&r, own(1, 10), t));
	/* ... until a peer speaks: its NEWCOMERs and their answers were lost,
	 * or it came later; nobody vouched for what it holds. Unvouched (and
	 * our own digests DISTURBED for a hold): a settled, quiet peer
	 * agreeing after the hold ends it (or a round). burst_check() marks
	 * a fabric with no peer at its check */
	r.alone = true;
	assert_false(digest_rule_disturbed(&r, t + 100));
	assert_false(heard(&r, own(2, 30), theirs(1, 20, false), t + 100));
	assert_true(digest_rule_disturbed(&r, t + 100));
	assert_true(eval(&r, own(2, 30), t + 100));
	assert_false(heard(&r, own(2, 30), theirs(2, 30, true), t + 100 + DIGEST_HOLD_MS - 1));
	assert_true(eval(&r, own(2, 30), t + 100 + DIGEST_HOLD_MS));
	assert_false(heard(&r, own(2, 30), theirs(2, 30, true), t + 100 + DIGEST_HOLD_MS));
	assert_false(eval(&r, own(2, 30), t + 100 + DIGEST_HOLD_MS));
	assert_true(heard(&r, own(2, 30), theirs(9, 90, true), t + 300 + DIGEST_HOLD_MS));
	assert_true(eval(&r, own(2, 30), t + 300 + DIGEST_HOLD_MS)); /* a claim, as ever */
	/* a round after an unvouched start, nobody agreeing: complete again */
	digest_rule_reset(&r, ROUND_MS);
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){1, 10}, t));
	r.alone = true;
	heard(&r, own(2, 30), theirs(1, 20, false), t + 10);
	assert_true(eval(&r, own(2, 30), t + 10 + ROUND_MS - 1));
	assert_false(eval(&r, own(2, 30), t + 10 + ROUND_MS));
	/* a directory that held peers at the check is not alone (a reset
	 * forgets it) */
	digest_rule_reset(&r, ROUND_MS);
	assert_false(digest_rule_burst_end(&r, &(struct store_digest){3, 30}, t));
	assert_false(heard(&r, own(3, 30), theirs(3, 30, false), t + 10));
	assert_false(eval(&r, own(3, 30), t + 10));
	/* a fabric that heard no one while another heard peers (fabric.c
	 * sets min_k 1 and unvouched): incomplete though alone, until a
	 * settled peer there agrees or a round passes; a reset forgets it */
	digest_rule_reset(&r, ROUND_MS);
	r.min_k = 1;
	r.unvouched = true;
	r.unvouched_ms = t;
	assert_true(eval(&r, own(1, 10), t));
	assert_true(eval(&r, own(1, 10), t + ROUND_MS - 1));
	heard(&r, own(2, 30), theirs(2, 30, true), t + 5);
	assert_false(eval(&r, own(2, 30), t + 5));
	r.unvouched = true;
	r.unvouched_ms = t;
	r.agree = 0;
	assert_false(eval(&r, own(1, 10), t + ROUND_MS));
	digest_rule_reset(&r, ROUND_MS);
	assert_int_equal(r.min_k, 0);
}

/* K agreeing digests are K peers: one peer's answers (a fetch pages through
 * it) count once, to overrule a loss and to vouch at the end of a burst. */
static void test_rule_one_peer_one_voice(void **state)
{
	struct fw_digest d = {.hosts = 7, .sum = 70, .flags = FW_DIGEST_SETTLED};
	struct store_digest o = {7, 70};
	struct digest_rule r = {0};
	uint64_t t = 5000;

	(void)state;
	digest_rule_reset(&r, ROUND_MS);
	digest_rule_drop(&r, t);
	for (unsigned i = 0; i < 5; i++)
		digest_rule_heard(&r, &o, &d, 42, t + 1);
	assert_true(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 1));
	digest_rule_heard(&r, &o, &d, 43, t + 2);
	assert_true(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 1));
	digest_rule_heard(&r, &o, &d, 44, t + 3);
	assert_false(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 1));
	/* a node that ever heard one peer answer range queries (the rest older
	 * daemons): that one is enough */
	digest_rule_reset(&r, ROUND_MS);
	r.voices = 1;
	digest_rule_drop(&r, t);
	digest_rule_heard(&r, &o, &d, 42, t + 1);
	assert_false(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 1));
	r.voices = 0; /* not limited */
	/* at the end of a burst */
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < DIGEST_RECENT; i++)
		digest_rule_heard(&r, &o, &d, 42 + (i == 7), t);
	assert_true(digest_rule_burst_end(&r, &o, t));
}

/* A peer that lost datagrams, or heard a digest other than its own, less than
 * its hold ago says so (FW_DIGEST_DISTURBED): its equal digest vouches for
 * nothing, neither to overrule a loss nor at the end of a burst, as it may
 * lack what we lack (at a lossy boot, the peers that missed one sender's
 * NEWCOMER agree with each other); its claim of more still counts. */
static void test_rule_disturbed_peer_vouches_for_nothing(void **state)
{
	struct fw_digest d = {.hosts = 7, .sum = 70, .flags = FW_DIGEST_SETTLED};
	struct fw_digest busy = {
		.hosts = 7,
		.sum = 70,
		.flags = FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE | FW_DIGEST_DISTURBED,
	};
	struct store_digest o = {7, 70};
	struct digest_rule r = {0}, peer = {0};
	uint64_t t = 5000;

	(void)state;
	/* the sender's side: disturbed for its hold after a drop or a claim */
	digest_rule_reset(&peer, ROUND_MS);
	assert_false(digest_rule_disturbed(&peer, t));
	digest_rule_drop(&peer, t);
	assert_true(digest_rule_disturbed(&peer, t));
	assert_true(digest_rule_disturbed(&peer, t + DIGEST_HOLD_MS - 1));
	assert_false(digest_rule_disturbed(&peer, t + DIGEST_HOLD_MS));
	assert_true(digest_rule_heard(&peer, &o, &(struct fw_digest){.hosts = 8, .sum = 80}, 9,
				      t + 2 * DIGEST_HOLD_MS));
	assert_true(digest_rule_disturbed(&peer, t + 2 * DIGEST_HOLD_MS));

	/* a loss overruled only by quiet peers */
	digest_rule_reset(&r, ROUND_MS);
	digest_rule_drop(&r, t);
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
		assert_false(digest_rule_heard(&r, &o, &busy, 42 + i, t + 1));
	assert_true(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 1));
	for (unsigned i = 0; i < DIGEST_AGREE_K; i++)
		digest_rule_heard(&r, &o, &d, 42 + i, t + 2);
	assert_false(digest_rule_eval(&r, &o, t + DIGEST_HOLD_MS + 2));
	/* at the end of a burst: disturbed digests are not among the last ones */
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < DIGEST_RECENT; i++)
		digest_rule_heard(&r, &o, &busy, 42 + i, t);
	assert_true(digest_rule_burst_end(&r, &o, t));
	digest_rule_reset(&r, ROUND_MS);
	for (unsigned i = 0; i < DIGEST_RECENT; i++)
		digest_rule_heard(&r, &o, &d, 42 + i, t);
	assert_false(digest_rule_burst_end(&r, &o, t));
	/* its claim stands */
	busy.hosts = 8;
	busy.sum = 80;
	assert_true(digest_rule_heard(&r, &o, &busy, 50, t));
	assert_true(digest_rule_eval(&r, &o, t));
}

/* Announce numbers: a jump past the next is a multicast announce missed; a
 * lower number is a restart; a unicast answer (it repeats its sender's last
 * multicast number) is never a gap, however far ahead: it may be read before
 * multicast announces still queued on the other socket. */
static void test_seq_gap(void **state)
{
	struct fw_digest d = {.seq = 4};

	(void)state;
	assert_false(digest_seq_gap(0, &d)); /* first contact: nothing known */
	assert_false(digest_seq_gap(3, &d));
	assert_true(digest_seq_gap(2, &d));
	d.seq = 1;
	assert_false(digest_seq_gap(7, &d)); /* restarted */
	d = (struct fw_digest){.seq = 3, .flags = FW_DIGEST_UNICAST};
	assert_false(digest_seq_gap(3, &d));
	d.seq = 4;
	assert_false(digest_seq_gap(3, &d)); /* its multicast 4 is still queued */
	d.seq = 9;
	assert_false(digest_seq_gap(3, &d));
	d.flags = 0;
	assert_true(digest_seq_gap(3, &d)); /* the same number by multicast */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_terms),
		cmocka_unit_test(test_origins_and_removal),
		cmocka_unit_test(test_rails_count_once),
		cmocka_unit_test(test_fabric_digests),
		cmocka_unit_test(test_rule_claims),
		cmocka_unit_test(test_rule_drops),
		cmocka_unit_test(test_rule_small_and_stale),
		cmocka_unit_test(test_rule_burst_unvouched),
		cmocka_unit_test(test_rule_one_peer_one_voice),
		cmocka_unit_test(test_rule_disturbed_peer_vouches_for_nothing),
		cmocka_unit_test(test_seq_gap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
