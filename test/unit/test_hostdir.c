// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared host directory: the daemon's writer
 * (resolverd/os/hostdir_pub.c and hostdir_write.c, following a real host store) and the
 * readers' side (lib/hostdir.c over the image, lib/dirmap.c fetching the
 * sealed memfd over a socket for a handle). The concurrency test runs the
 * writer on this thread and 32 readers on theirs, through the library's own
 * fetching and mapping code, while hosts are refreshed, added, removed and
 * the directory grows (is replaced): no reader may ever see a record mixed
 * from two versions.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "core/clock.h"
#include "core/hoststore.h"
#include "core/loop.h"
#include "dir_image.h"
#include "hostdir_fixture.h"
#include "hostdir.h"
#include "ibres.h"
#include "msg.h"
#include "os/hostdir_pub.h"
#include "tlv.h"


static void test_every_key_type(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec want, got;
	size_t size;
	void *m;

	hdfx_put(f, 7, 1, IBRES_ORIGIN_STATIC, 0);
	hdfx_rec(&want, 7, 1);
	m = hdfx_map(f, &size);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h7", 2, &got), 0);
	assert_string_equal(got.names[1], "alias-7.Example");
	assert_int_equal(got.qpn, 1);
	assert_int_equal(got.lid, 8);
	assert_int_equal(got.ttl, HOSTREC_TTL_NEVER);
	assert_memory_equal(got.v6, want.v6, 16);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "ALIAS-7.example", 15, &got), 0);
	assert_string_equal(got.names[0], "h7");
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &want.v4[0], 4, &got), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV6, &want.v6[0], 16, &got), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, want.gids[0], 16, &got), 0);
	/* keys that cannot be: to the daemon */
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &want.v4[0], 3, &got), -EAGAIN);
	assert_int_equal(hdfx_look(m, size, IBRES_T_LID, "\0\1", 2, &got), -EAGAIN);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "a\0b", 3, &got), -EAGAIN);
	munmap(m, size);
}

/* Keys that shared a hash under every seed in format 3, which no new seed
 * could part: of two lengths whose first bytes differ as their lengths do
 * ("b1" and "c11": 2 ^ 'b' == 3 ^ 'c'; the length went into the first
 * word), and 16-byte keys that differ in the top bit of their first word
 * and in bits 63 and 32 of the second (2001:db8::1, 2001:db8:0:80::100:81:
 * a 64-bit product passes its top bit through). Now their hashes differ
 * under each of 2,000 seeds, as do those of keys made of the same bytes. */
static void test_hash_parts_lengths_under_every_seed(void **state)
{
	static const char *const pairs[][2] = {
		{ "b1", "c11" }, { "a", "ba" }, { "bbbb", "cbbbb" }, { "cn0001", "bn00001" },
		{ "a", "aaa" },	 { "aaaa", "aaaaaaaa" },
	};

	uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x01 }, b[16];

	(void)state;
	memcpy(b, a, sizeof(b));
	b[7] ^= 0x80;
	b[12] ^= 0x01;
	b[15] ^= 0x80;
	for (uint64_t s = 1; s <= 2000; s++) {
		uint64_t seed = s * 0x9e3779b97f4a7c15ull;

		assert_int_not_equal(ibdir_hash(seed, IBDIR_TAB_IPV6, a, 16),
				     ibdir_hash(seed, IBDIR_TAB_IPV6, b, 16));
		assert_int_not_equal(ibdir_hash(seed, IBDIR_TAB_GID, a, 16),
				     ibdir_hash(seed, IBDIR_TAB_GID, b, 16));
		for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
			assert_int_not_equal(ibdir_hash(seed, IBDIR_TAB_NAME, pairs[i][0],
							strlen(pairs[i][0])),
					     ibdir_hash(seed, IBDIR_TAB_NAME, pairs[i][1],
							strlen(pairs[i][1])));
	}
}

/* Names hash without regard to ASCII case, and nothing else is folded: for
 * every byte at every position of names up to 20 bytes, the hash equals the
 * small-letter name's exactly when the byte is a capital or already
 * unchanged; other tables never fold. */
static void test_hash_folds_ascii_case_only(void **state)
{
	uint8_t a[20], b[20];

	(void)state;
	for (size_t len = 1; len <= sizeof(a); len++) {
		for (size_t at = 0; at < len; at++) {
			for (unsigned c = 0; c < 256; c++) {
				int capital = c >= 'A' && c <= 'Z';

				memset(a, 'q', len);
				memset(b, 'q', len);
				a[at] = (uint8_t)c;
				b[at] = (uint8_t)(capital ? c + 32 : c);
				assert_int_equal(ibdir_hash(42, IBDIR_TAB_NAME, a, len),
						 ibdir_hash(42, IBDIR_TAB_NAME, b, len));
				b[at] = (uint8_t)(c ^ 0x20);
				assert_int_equal(ibdir_hash(42, IBDIR_TAB_NAME, a, len) ==
							 ibdir_hash(42, IBDIR_TAB_NAME, b, len),
						 capital || (c >= 'a' && c <= 'z'));
				if (capital)
					assert_int_not_equal(ibdir_hash(42, IBDIR_TAB_GID, a, len),
							     ibdir_hash(42, IBDIR_TAB_GID, b, len));
			}
		}
	}
	/* the seed, the table and the length are in it */
	assert_int_not_equal(ibdir_hash(1, IBDIR_TAB_NAME, "node1", 5),
			     ibdir_hash(2, IBDIR_TAB_NAME, "node1", 5));
	assert_int_not_equal(ibdir_hash(1, IBDIR_TAB_IPV4, "node", 4),
			     ibdir_hash(1, IBDIR_TAB_IPV6, "node", 4));
	assert_int_not_equal(ibdir_hash(1, IBDIR_TAB_NAME, "a\0", 2),
			     ibdir_hash(1, IBDIR_TAB_NAME, "a", 1));
}

/* What the NSS module packs from: the record's own bytes, viewed, in a copy
 * of the caller's size; a copy too small for the record is "too large", a
 * miss stays a miss whatever the copy. */
static void test_find_views_the_record(void **state)
{
	struct fx *f = *state;
	uint64_t big[IBDIR_REC_MAX / 8], small[4];
	struct ibres_hostrec want;
	struct ibdir_view v;
	struct ibdir_geom g;
	const uint8_t *p, *name;
	size_t size, l;
	void *m;

	hdfx_put(f, 7, 1, IBRES_ORIGIN_STATIC, 0);
	hdfx_rec(&want, 7, 1);
	m = hdfx_map(f, &size);
	assert_int_equal(ibdir_geom_read(m, size, &g), 0);
	assert_int_equal(ibdir_find(m, size, &g, now_ms(), IBRES_T_IPV4, &want.v4[0], 4, big,
				    sizeof(big), &v),
			 0);
	assert_int_equal(v.n_names, want.n_names);
	assert_int_equal(v.n_v4, want.n_v4);
	assert_int_equal(v.n_v6, want.n_v6);
	assert_int_equal(v.n_gids, want.n_gids);
	assert_int_equal(v.ttl, HOSTREC_TTL_NEVER);
	assert_int_equal(v.qpn, 1);
	assert_int_equal(v.lid, 8);
	assert_memory_equal(v.v4, &want.v4[0], 4u * want.n_v4);
	assert_memory_equal(v.v6, &want.v6[0], 16u * want.n_v6);
	assert_memory_equal(v.gids, want.gids[0], 16u * want.n_gids);
	/* the view points into the caller's copy, not into the image */
	assert_true((const uint8_t *)v.gids > (const uint8_t *)big &&
		    v.end <= (const uint8_t *)big + sizeof(big));
	p = v.names;
	for (unsigned i = 0; i < v.n_names; i++) {
		l = ibdir_view_next_name(&p, &name);
		assert_int_equal(l, strlen(want.names[i]));
		assert_memory_equal(name, want.names[i], l);
	}
	assert_ptr_equal(p, v.end);
	assert_true(ibdir_view_has_key(&v, IBDIR_TAB_NAME, "ALIAS-7.example", 15));
	assert_false(ibdir_view_has_key(&v, IBDIR_TAB_NAME, "h8", 2));
	/* a copy too small for it */
	assert_int_equal(
		ibdir_find(m, size, &g, now_ms(), IBRES_T_NAME, "h7", 2, small, sizeof(small), &v),
		-EMSGSIZE);
	assert_int_equal(ibdir_find(m, size, &g, now_ms(), IBRES_T_NAME, "h7", 2, small, 0, &v),
			 -EMSGSIZE);
	/* a miss does not depend on the copy */
	assert_int_equal(
		ibdir_find(m, size, &g, now_ms(), IBRES_T_NAME, "h8", 2, small, sizeof(small), &v),
		ibdir_find(m, size, &g, now_ms(), IBRES_T_NAME, "h8", 2, big, sizeof(big), &v));
	munmap(m, size);
}

/* A host of several rails: its name leads to a record of every rail's
 * addresses (the first heard first); a rail's own name and addresses to that
 * rail's; a rail that goes takes its addresses out of the host's record. */
static void test_rails(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec got;
	uint32_t a0 = htonl(0x0a000005u), a1 = htonl(0x0a010005u), a2 = htonl(0x0a020005u);
	uint8_t gid1[16] = { 0xfe, 0x80, [13] = 5, [15] = 1 };
	size_t size;
	void *m;

	hdfx_put_rail(f, 5, 1, 60);
	hdfx_put_rail(f, 5, 0, 60);
	hdfx_put_rail(f, 5, 2, 60);
	loop_run_due(&f->loop);
	m = hdfx_map(f, &size);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h5", 2, &got), 0);
	assert_int_equal(got.n_v4, 3);
	assert_int_equal(got.v4[0].s_addr, a0);
	assert_int_equal(got.v4[1].s_addr, a1);
	assert_int_equal(got.v4[2].s_addr, a2);
	assert_int_equal(got.n_gids, 3);
	assert_int_equal(got.n_names, 4); /* h5, h5-ib0, h5-ib1, h5-ib2 */
	assert_string_equal(got.names[0], "h5");
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h5-ib1", 6, &got), 0);
	assert_int_equal(got.n_v4, 1);
	assert_int_equal(got.v4[0].s_addr, a1);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a2, 4, &got), 0);
	assert_string_equal(got.names[0], "h5");
	assert_int_equal(got.n_v4, 1);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, gid1, 16, &got), 0);
	assert_string_equal(got.names[1], "h5-ib1");
	/* rail 1 says goodbye */
	assert_true(store_remove_gid(&f->store, gid1) > 0);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h5", 2, &got), 0);
	assert_int_equal(got.n_v4, 2);
	assert_int_equal(got.v4[0].s_addr, a0);
	assert_int_equal(got.v4[1].s_addr, a2);
	assert_int_not_equal(hdfx_look(m, size, IBRES_T_NAME, "h5-ib1", 6, &got), 0);
	assert_int_not_equal(hdfx_look(m, size, IBRES_T_IPV4, &a1, 4, &got), 0);
	munmap(m, size);
}

/* A rail of a host of several heard again as it is moves the expiry of
 * the host's one record (its soonest endpoint's) in place, and writes
 * nothing else: no slot changes (table_seq stays), no record moves. */
static void test_rail_heard_again_moves_the_host_expiry(void **state)
{
	struct fx *f = *state;
	const struct ibdir_header *hd;
	struct ibres_hostrec got;
	struct hostdir_stats st;
	uint32_t table_seq;
	size_t size;
	void *m;

	for (unsigned rail = 0; rail < 3; rail++)
		hdfx_put_rail(f, 6, rail, 60);
	loop_run_due(&f->loop);
	m = hdfx_map(f, &size);
	hd = m;
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 1);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h6", 2, &got), 0);
	assert_in_range(got.ttl, 50, 60);
	table_seq = __atomic_load_n(&hd->table_seq, __ATOMIC_ACQUIRE);

	/* two rails of three: the host still expires with the third */
	hdfx_put_rail(f, 6, 0, 300);
	hdfx_put_rail(f, 6, 2, 300);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h6", 2, &got), 0);
	assert_in_range(got.ttl, 50, 60);
	hdfx_put_rail(f, 6, 1, 300);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h6", 2, &got), 0);
	assert_in_range(got.ttl, 290, 300);
	assert_int_equal(got.n_v4, 3);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h6-ib2", 6, &got), 0);
	assert_in_range(got.ttl, 290, 300);
	assert_int_equal(__atomic_load_n(&hd->table_seq, __ATOMIC_ACQUIRE), table_seq);
	/* a shorter TTL brings it nearer */
	hdfx_put_rail(f, 6, 1, 30);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h6", 2, &got), 0);
	assert_in_range(got.ttl, 20, 30);
	assert_int_equal(__atomic_load_n(&hd->table_seq, __ATOMIC_ACQUIRE), table_seq);
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 1);
	assert_int_equal(st.rebuilds, 1);
	munmap(m, size);
}

/* @r into the store as the endpoint of a host of several (rails digest
 * 0x55) heard on local endpoint @ep, and the publisher's turn. */
static void put_endpoint(struct fx *f, const struct ibres_hostrec *r, unsigned ep)
{
	assert_int_equal(store_insert(&f->store, r,
				      &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC,
							   .heard_on = 1u << ep,
							   .rails = 0x55,
							   .ttl_s = 60 },
				      now_ms(), NULL),
			 0);
	assert_int_equal(store_check(&f->store), 0);
	loop_run_due(&f->loop);
}

/* Every key of host h7's rails 0..@rails - 1 (and rail 4's extra names when
 * @extra) leads to a record of that rail, and its name to every rail. */
static void h7_all_found(const void *m, size_t size, unsigned rails, bool extra)
{
	struct ibres_hostrec got;
	char name[32];

	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h7", 2, &got), 0);
	assert_int_equal(got.n_v4, rails);
	for (unsigned rail = 0; rail < rails; rail++) {
		uint32_t a = htonl(0x0a000007u | rail << 16);

		snprintf(name, sizeof(name), "h7-ib%u", rail);
		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, name, strlen(name), &got), 0);
		assert_int_equal(got.n_v4, 1);
		assert_int_equal(got.v4[0].s_addr, a);
		assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a, 4, &got), 0);
		assert_string_equal(got.names[0], "h7");
		assert_string_equal(got.names[1], name);
	}
	for (unsigned i = 0; extra && i < 14; i++) {
		snprintf(name, sizeof(name), "h7-x%u", i);
		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, name, strlen(name), &got), 0);
		assert_int_equal(got.n_v4, 1);
	}
}

/* A host of several rails is one record while one holds it whole; a rail
 * with more names than a record has room for makes it a record a rail again
 * (and one for the names they share), and without that rail it is one
 * record again. No key goes missing on the way (a miss is authoritative). */
static void test_a_host_one_record_cannot_hold(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec r;
	struct hostdir_stats st;
	size_t size;
	void *m;

	for (unsigned rail = 0; rail < 4; rail++)
		hdfx_put_rail(f, 7, rail, 60);
	loop_run_due(&f->loop);
	m = hdfx_map(f, &size);
	hostdir_set_scope(f->pub, now_ms(), NULL, 0, 0);
	h7_all_found(m, size, 4, false);
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 1);

	/* rail 4: h7, h7-ib4 and 14 names more: 20 names in all */
	memset(&r, 0, sizeof(r));
	strcpy(r.names[0], "h7");
	strcpy(r.names[1], "h7-ib4");
	for (unsigned i = 0; i < 14; i++)
		snprintf(r.names[2 + i], sizeof(r.names[0]), "h7-x%u", i);
	r.n_names = 16;
	r.v4[0].s_addr = htonl(0x0a040007u);
	r.n_v4 = 1;
	r.gids[0][0] = 0xfe;
	r.gids[0][1] = 0x80;
	r.gids[0][13] = 7;
	r.gids[0][15] = 4;
	r.n_gids = 1;
	r.lid = 7;
	r.pkey = 0xffff;
	put_endpoint(f, &r, 4);
	h7_all_found(m, size, 5, true);
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 6); /* one a rail, one for the shared name */
	/* a rail heard again: its own record takes its expiry, the shared
	 * names' record keeps the host's soonest */
	hdfx_put_rail(f, 7, 0, 300);
	loop_run_due(&f->loop);
	h7_all_found(m, size, 5, true);
	{
		struct ibres_hostrec got;

		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h7-ib0", 6, &got), 0);
		assert_in_range(got.ttl, 290, 300);
		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h7", 2, &got), 0);
		assert_in_range(got.ttl, 50, 60);
	}
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 6);

	assert_true(store_remove_gid(&f->store, r.gids[0]) > 0);
	loop_run_due(&f->loop);
	h7_all_found(m, size, 4, false);
	hostdir_stats(f->pub, &st);
	assert_int_equal(st.records, 1);
	munmap(m, size);
}

/* A port of two partitions (two endpoints of one host sharing its GID), and
 * the host's second port. */
static void put_part(struct fx *f, uint16_t pkey, unsigned ep, uint8_t port)
{
	struct ibres_hostrec r;

	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "h5");
	snprintf(r.names[1], sizeof(r.names[1]), "h5-%u-%04x", port, pkey);
	r.n_names = 2;
	r.v4[0].s_addr = htonl(0x0a000005u | (uint32_t)ep << 16);
	r.n_v4 = 1;
	r.gids[0][0] = 0xfe;
	r.gids[0][1] = 0x80;
	r.gids[0][13] = 5;
	r.gids[0][15] = port;
	r.n_gids = 1;
	r.lid = 1;
	r.pkey = pkey;
	put_endpoint(f, &r, ep);
}

/* The GID of a port of two partitions stays in the directory whichever of
 * them announces itself again (review: it went, and NSS said NOTFOUND). */
static void test_partition_gid_after_refresh(void **state)
{
	struct fx *f = *state;
	const uint8_t gid[16] = { 0xfe, 0x80, [13] = 5, [15] = 7 };
	struct ibres_hostrec got;
	size_t size;
	void *m;

	put_part(f, 0xffff, 0, 7);
	put_part(f, 0x8001, 1, 7);
	put_part(f, 0xffff, 2, 9);
	m = hdfx_map(f, &size);
	hostdir_set_scope(f->pub, now_ms(), NULL, 0, 0); /* a miss is authoritative */
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, gid, 16, &got), 0);
	put_part(f, 0xffff, 0, 7);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, gid, 16, &got), 0);
	put_part(f, 0x8001, 1, 7);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, gid, 16, &got), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h5-7-8001", 9, &got), 0);
	assert_int_equal(got.pkey, 0x8001);
	munmap(m, size);
}

static void test_scope_of_a_miss(void **state)
{
	struct fx *f = *state;
	char pats[2][128] = { "h*", "node[0-9]*" };
	struct ibres_hostrec got;
	size_t size;
	void *m;

	hdfx_put(f, 1, 1, IBRES_ORIGIN_FABRIC, 60);
	loop_run_due(&f->loop); /* the loop turn that ends the write section */
	m = hdfx_map(f, &size);
	hostdir_set_scope(f->pub, UINT64_MAX, pats[0], sizeof(pats[0]), 2);
	/* a cluster name not there, while the fabric may know it: the daemon */
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2", 2, &got), -EAGAIN);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "NODE12", 6, &got), -EAGAIN);
	/* a name outside the patterns: not the cluster's, whatever the fabric */
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "www.example.com", 15, &got), -ENODATA);
	/* settled at a known time: from then on, absent means absent */
	hostdir_set_scope(f->pub, now_ms() + 60000, pats[0], sizeof(pats[0]), 2);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2", 2, &got), -EAGAIN);
	hostdir_set_scope(f->pub, now_ms(), pats[0], sizeof(pats[0]), 2);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2", 2, &got), -ENODATA);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, "\x0a\0\0\x09", 4, &got), -ENODATA);
	/* no patterns: every name is a cluster name */
	hostdir_set_scope(f->pub, UINT64_MAX, NULL, 0, 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "www.example.com", 15, &got), -EAGAIN);
	munmap(m, size);
}

static void test_refresh_move_remove_expire(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, got;
	struct host *h;
	uint32_t cookie;
	size_t size;
	void *m, *later;

	hdfx_put(f, 1, 1, IBRES_ORIGIN_FABRIC, 60);
	m = hdfx_map(f, &size);
	hdfx_rec(&a, 1, 1);
	h = (struct host *)store_lookup(&f->store, &(struct host_key){ .type = IBRES_KEY_NAME,
								      .len = 2, .data = "h1" },
					now_ms(), false);
	assert_non_null(h);
	cookie = host_cookie(h, false);
	assert_true(cookie >= IBDIR_HEADER_SPACE);
	/* a refresh of the same size is written in place */
	hdfx_put(f, 1, 2, IBRES_ORIGIN_FABRIC, 120);
	h = (struct host *)store_lookup(&f->store, &(struct host_key){ .type = IBRES_KEY_NAME,
								      .len = 2, .data = "h1" },
					now_ms(), false);
	assert_int_equal(host_cookie(h, false), cookie);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	assert_int_equal(got.qpn, 2);
	assert_in_range(got.ttl, 119, 120);
	/* heard again as it is: the same host, its expiry moved in place */
	hdfx_put(f, 1, 2, IBRES_ORIGIN_FABRIC, 300);
	assert_ptr_equal(store_lookup(&f->store, &(struct host_key){ .type = IBRES_KEY_NAME,
								   .len = 2, .data = "h1" },
				      now_ms(), false),
			 h);
	assert_int_equal(host_cookie(h, false), cookie);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	assert_int_equal(got.qpn, 2);
	assert_in_range(got.ttl, 299, 300);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, a.gids[0], 16, &got), 0);
	assert_in_range(got.ttl, 299, 300);
	/* an address that moved to another host answers with that host */
	hdfx_rec(&a, 2, 1);
	a.v4[0].s_addr = htonl(0x0a000001u);
	assert_int_equal(store_insert(&f->store, &a, &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 60 }, now_ms(), NULL),
			 0);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a.v4[0], 4, &got), 0);
	assert_string_equal(got.names[0], "h2");
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	/* GOODBYE: gone from the file */
	hostdir_set_scope(f->pub, 0, NULL, 0, 0);
	hdfx_rec(&a, 1, 1);
	assert_true(store_remove_gid(&f->store, a.gids[0]) > 0);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), -ENODATA);
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, a.gids[0], 16, &got), -ENODATA);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2", 2, &got), 0);
	/* an expired record is the daemon's to judge (in a copy whose heartbeat
	 * is as fresh then as it is now) */
	later = malloc(size);
	assert_non_null(later);
	memcpy(later, m, size);
	((struct ibdir_header *)later)->heartbeat_ms = now_ms() + 61000;
	assert_int_equal(ibdir_lookup(later, size, now_ms() + 61000, IBRES_T_NAME, "h2", 2, &got),
			 -EAGAIN);
	free(later);
	munmap(m, size);
}

static void test_growth_replaces_the_generation(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec got;
	size_t size, size2;
	void *m, *m2;
	char name[16];

	m = hdfx_map(f, &size);
	for (unsigned i = 0; i < 3000; i++) {
		hdfx_put(f, i, 1, IBRES_ORIGIN_FABRIC, 600);
		loop_run_due(&f->loop);
	}
	/* full, and hosts still coming: no new file yet; the full one says
	 * it is incomplete (a miss there is no answer) and still answers what
	 * it holds */
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2999", 5, &got), -EAGAIN);
	/* quiet: the new file, once */
	usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), -ESTALE);
	m2 = hdfx_map(f, &size2);
	assert_true(size2 > size);
	for (unsigned i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "h%u", i);
		assert_int_equal(hdfx_look(m2, size2, IBRES_T_NAME, name, strlen(name), &got), 0);
		assert_string_equal(got.names[0], name);
	}
	munmap(m, size);
	munmap(m2, size2);
}

/* While a full file waits for its replacement, a host that takes another's
 * address is held back, and the address must not lead readers to the host
 * that lost it (its record still lists it): they ask the daemon instead. */
static void test_held_back_key_moved(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, got;
	size_t size;
	void *m;

	m = hdfx_map(f, &size);
	for (unsigned i = 0; i < 3000; i++) {
		hdfx_put(f, i, 1, IBRES_ORIGIN_FABRIC, 600);
		loop_run_due(&f->loop);
	}
	hdfx_rec(&a, 1, 1);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a.v4[0], 4, &got), 0);
	assert_string_equal(got.names[0], "h1");
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2999", 5, &got), -EAGAIN); /* held back */
	/* h5000 takes h1's address (its GID, name and the rest its own) */
	hdfx_rec(&a, 5000, 1);
	a.v4[0].s_addr = htonl(0x0a000001u);
	assert_int_equal(store_insert(&f->store, &a,
				      &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 600 },
				      now_ms(), NULL),
			 0);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a.v4[0], 4, &got), -EAGAIN);
	/* h1 changed too (it lost a key): held back as well, asked of the daemon */
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), -EAGAIN);
	/* the replacement: the address is h5000's */
	usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
	loop_run_due(&f->loop);
	munmap(m, size);
	m = hdfx_map(f, &size);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a.v4[0], 4, &got), 0);
	assert_string_equal(got.names[0], "h5000");
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	munmap(m, size);
}

/* The same with a host of several rails: a new host takes each rail's
 * address in turn while a new file is due (the takers are held back). The
 * rail that lost its address has no block of its own: the host's one record,
 * which lists the address, must not answer for it (review: it did, until
 * the next file, when the rail was not the one writing the host). */
static void test_held_back_key_moved_from_a_rail(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, got;
	size_t size;
	void *m;

	m = hdfx_map(f, &size);
	for (unsigned rail = 0; rail < 4; rail++)
		hdfx_put_rail(f, 20, rail, 600);
	loop_run_due(&f->loop);
	for (unsigned i = 2; i < 3000; i++) {
		if (i == 20)
			continue; /* h20's rail 0 address */
		hdfx_put(f, i, 1, IBRES_ORIGIN_FABRIC, 600);
		loop_run_due(&f->loop);
	}
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h2999", 5, &got), -EAGAIN); /* due */
	for (unsigned rail = 0; rail < 4; rail++) {
		uint32_t x = htonl(0x0a000014u | rail << 16);

		hdfx_rec(&a, 5000 + rail, 1);
		a.v4[0].s_addr = x;
		assert_int_equal(store_insert(&f->store, &a,
					      &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC,
								   .ttl_s = 600 },
					      now_ms(), NULL),
				 0);
		assert_int_equal(store_check(&f->store), 0);
		loop_run_due(&f->loop);
		memset(&got, 0, sizeof(got));
		assert_int_not_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got), 0);
		assert_string_not_equal(got.names[0], "h20");
	}
	/* the replacement: each address is its taker's */
	usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
	loop_run_due(&f->loop);
	munmap(m, size);
	m = hdfx_map(f, &size);
	for (unsigned rail = 0; rail < 4; rail++) {
		uint32_t x = htonl(0x0a000014u | rail << 16);
		char name[16];

		snprintf(name, sizeof(name), "h%u", 5000 + rail);
		assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got), 0);
		assert_string_equal(got.names[0], name);
	}
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h20", 3, &got), 0);
	munmap(m, size);
}

/* A new host takes a key of the least recently used one, the store is full,
 * and that one is evicted: the observer hears of it before it goes (review:
 * it was told of the key it lost after it had been freed; ASan in the
 * SANITIZE build). */
static void test_key_taken_from_the_host_evicted(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, got;
	size_t size;
	void *m;

	store_set_max_hosts(&f->store, 16);
	for (unsigned i = 1; i <= 16; i++)
		hdfx_put(f, i, 1, IBRES_ORIGIN_FABRIC, 600);
	loop_run_due(&f->loop);
	hdfx_rec(&a, 100, 1);
	a.v4[0].s_addr = htonl(0x0a000001u); /* h1's, the oldest */
	assert_int_equal(store_insert(&f->store, &a,
				      &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 600 },
				      now_ms(), NULL),
			 0);
	assert_int_equal(store_check(&f->store), 0);
	loop_run_due(&f->loop);
	m = hdfx_map(f, &size);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a.v4[0], 4, &got), 0);
	assert_string_equal(got.names[0], "h100");
	assert_int_not_equal(hdfx_look(m, size, IBRES_T_NAME, "h1", 2, &got), 0);
	munmap(m, size);
}

static void test_stop_closes(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec got;
	size_t size;
	void *m;

	hdfx_put(f, 3, 1, IBRES_ORIGIN_STATIC, 0);
	m = hdfx_map(f, &size);
	hostdir_stop(f->pub);
	f->pub = NULL;
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h3", 2, &got), -ESTALE);
	munmap(m, size);
}

/* Damage a copy of a real file in every way the header and tables allow;
 * the reader must refuse, never crash, never invent a host. */
static void test_damaged_images(void **state)
{
	struct fx *f = *state;
	struct ibdir_header *hd;
	struct ibres_hostrec got;
	size_t size;
	uint8_t *m, *c;
	unsigned seed = 1;

	for (unsigned i = 0; i < 40; i++)
		hdfx_put(f, i, 1, IBRES_ORIGIN_STATIC, 0);
	loop_run_due(&f->loop);
	m = hdfx_map(f, &size);
	c = malloc(size);
	assert_non_null(c);
	hd = (struct ibdir_header *)c;
#define RESET() memcpy(c, m, size)
	RESET();
	assert_int_equal(ibdir_header_check(c, size), 0);
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), 0);
	/* truncated */
	assert_int_equal(ibdir_header_check(c, size / 2), -EBADMSG);
	assert_int_not_equal(ibdir_lookup(c, size / 2, now_ms(), IBRES_T_NAME, "h5", 2, &got), 0);
	assert_int_equal(ibdir_lookup(c, 100, now_ms(), IBRES_T_NAME, "h5", 2, &got), -EBADMSG);
	/* wrong magic, version */
	hd->version = 99;
	assert_int_equal(ibdir_header_check(c, size), -EBADMSG);
	RESET();
	hd->magic[0] = 'X';
	assert_int_equal(ibdir_header_check(c, size), -EBADMSG);
	/* tables and record area outside the file, or without a slot */
	RESET();
	hd->tables[IBDIR_TAB_NAME].off = (uint32_t)size - 8;
	assert_int_equal(ibdir_header_check(c, size), -EBADMSG);
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -EBADMSG);
	RESET();
	hd->tables[IBDIR_TAB_GID].n_slots = 0;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_GID, c, 16, &got), -EBADMSG);
	RESET();
	hd->tables[IBDIR_TAB_NAME].n_slots = 0x80000000u;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -EBADMSG);
	RESET();
	hd->rec_size = 0xfffffff0u;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -EBADMSG);
	/* every slot pointing at the same odd place, or past the end */
	for (uint32_t bad = 0; bad < 3; bad++) {
		uint64_t *slots;

		RESET();
		slots = (uint64_t *)(c + hd->tables[IBDIR_TAB_NAME].off);
		for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_NAME].n_slots; i++)
			if ((uint32_t)slots[i] > 1)
				slots[i] = (slots[i] & ~0xffffffffull) |
					   (bad == 0 ? 7 : bad == 1 ? (uint32_t)size - 8 : 0xfffffff8u);
		assert_int_not_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got),
				     0);
	}
	/* not live, or a heartbeat too old or from another clock */
	RESET();
	hd->state = IBDIR_REPLACED;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -ESTALE);
	RESET();
	/* (its daemon stopped or died: readers ask for the directory again) */
	hd->heartbeat_ms = now_ms() - 60000;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -ESTALE);
	hd->heartbeat_ms = now_ms() + 60000;
	assert_int_equal(ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, "h5", 2, &got), -ESTALE);
	/* random damage anywhere: whatever comes back is a well-formed record */
	for (unsigned round = 0; round < 20000; round++) {
		char name[16];
		int ret;

		RESET();
		hd->heartbeat_ms = now_ms();
		for (unsigned k = 0; k < 1 + round % 8; k++) {
			seed = seed * 1103515245u + 12345u;
			c[IBDIR_HEADER_SPACE / 2 + (seed >> 4) % (size - IBDIR_HEADER_SPACE / 2)] ^=
				(uint8_t)(seed >> 24 | 1);
		}
		snprintf(name, sizeof(name), "h%u", round % 40);
		ret = ibdir_lookup(c, size, now_ms(), IBRES_T_NAME, name, strlen(name), &got);
		if (ret == 0) {
			assert_true(got.n_names >= 1 && got.n_names <= IBRES_HOST_NAMES_MAX);
			assert_true(hostrec_has_key(&got, IBRES_KEY_NAME, name, strlen(name)));
		}
	}
#undef RESET
	free(c);
	munmap(m, size);
}

/* ---- 32 readers and a busy writer ------------------------------------------------- */

#define HOSTS	 200
#define READERS	 32
#define WRITES	 20000
#define GROWTH	 150 /* hosts added every 2,000 writes */

struct reader {
	pthread_t t;
	struct ibres *h;
	volatile int *stop;
	volatile unsigned long asked; /* the writer starts once every reader asked */
	unsigned long hits, fallbacks, bad;
	unsigned seed;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct ibres_hostrec got;

	while (!*r->stop) {
		unsigned i, gen, key_i;
		char name[16];
		int ret;

		r->seed = r->seed * 1103515245u + 12345u;
		i = (r->seed >> 8) % (HOSTS * 2); /* half of them come and go */
		snprintf(name, sizeof(name), "h%u", i);
		ret = ibc_dir_query(r->h, IBRES_T_NAME, name, strlen(name), &got);
		r->asked++;
		if (ret) {
			r->fallbacks++;
			continue;
		}
		r->hits++;
		memcpy(&key_i, &got.v6[0].s6_addr[8], 4);
		memcpy(&gen, &got.v6[0].s6_addr[12], 4);
		if (strcmp(got.names[0], name) || key_i != i || gen != got.qpn || got.n_v6 != 1 ||
		    got.n_names != 2)
			r->bad++;
	}
	return NULL;
}

/* The daemon's side of IBRES_OP_DIRECTORY, in a child process (a reader
 * refuses a socket its own process serves): it passes the last descriptor
 * the parent sent it over @feed to every reader that asks on @path. */
static void serve_directory(int feed, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ls = socket(AF_UNIX, SOCK_STREAM, 0), cur = -1;
	uint64_t size = 0;

	strcpy(sa.sun_path, path);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 64))
		_exit(1);
	write(feed, "r", 1); /* ready */
	for (;;) {
		struct pollfd p[2] = { { .fd = feed, .events = POLLIN }, { .fd = ls, .events = POLLIN } };
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
				     .msg_controllen = sizeof(ctl) };
		uint8_t msg[IBRES_HDR_LEN + 12];
		struct cmsghdr *c;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents) {
			iov = (struct iovec){ &size, sizeof(size) };
			if (recvmsg(feed, &mh, 0) <= 0)
				_exit(0);
			c = CMSG_FIRSTHDR(&mh);
			if (c && c->cmsg_type == SCM_RIGHTS) {
				if (cur >= 0)
					close(cur);
				memcpy(&cur, CMSG_DATA(c), sizeof(int));
			}
			continue;
		}
		int cl = accept(ls, NULL, NULL);
		struct ibres_hdr *h = (struct ibres_hdr *)msg;
		struct tlv_writer w;

		if (cl < 0)
			continue;
		if (read(cl, msg, IBRES_HDR_LEN) == IBRES_HDR_LEN && cur >= 0) {
			h->opcode |= IBRES_OP_ACK;
			h->status = 0;
			tlv_writer_init(&w, msg + IBRES_HDR_LEN, sizeof(msg) - IBRES_HDR_LEN);
			tlv_put_u64(&w, IBRES_T_COUNT, size);
			ibres_msg_set_length(h, (uint16_t)(IBRES_HDR_LEN + w.len));
			iov = (struct iovec){ msg, IBRES_HDR_LEN + w.len };
			mh.msg_controllen = sizeof(ctl);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &cur, sizeof(int));
			sendmsg(cl, &mh, MSG_NOSIGNAL);
		}
		close(cl);
	}
}

/* Hand the server the generation published now, if it changed. */
static void feed_directory(struct fx *f, int feed, uint64_t *fed)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct hostdir_stats st;
	uint64_t size;
	struct iovec iov = { &size, sizeof(size) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int fd;

	hostdir_stats(f->pub, &st);
	fd = hostdir_fd(f->pub, &size);
	if (fd < 0 || st.rebuilds == *fed)
		return;
	*fed = st.rebuilds;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	assert_true(sendmsg(feed, &mh, 0) > 0);
}

static void test_32_readers_and_a_busy_writer(void **state)
{
	struct fx *f = *state;
	struct reader rd[READERS];
	volatile int stop = 0;
	unsigned long hits = 0, bad = 0;
	struct ibres *h;
	unsigned seed = 7, fed_hosts = 0;
	uint64_t fed = 0;
	int feed[2], status;
	pid_t server;
	char ready;

	for (unsigned i = 0; i < HOSTS; i++)
		hdfx_put(f, i, 0, IBRES_ORIGIN_FABRIC, 600);
	loop_run_due(&f->loop);
	/* readers get the directory over the socket, as clients do */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, feed), 0);
	server = fork();
	assert_true(server >= 0);
	if (!server) {
		close(feed[0]);
		serve_directory(feed[1], f->sock);
	}
	close(feed[1]);
	assert_int_equal(read(feed[0], &ready, 1), 1);
	feed_directory(f, feed[0], &fed);
	assert_int_equal(ibres_open(&h, f->sock, 1000), 0);
	for (unsigned i = 0; i < READERS; i++) {
		rd[i] = (struct reader){ .h = h, .stop = &stop, .seed = i * 77 + 1 };
		assert_int_equal(pthread_create(&rd[i].t, NULL, reader_main, &rd[i]), 0);
	}
	/* on a loaded machine the writer could be done before a reader ran */
	for (unsigned i = 0, waited = 0; i < READERS && waited < 20000; i++)
		while (!rd[i].asked && waited++ < 20000)
			usleep(1000);
	for (unsigned w = 1; w <= WRITES; w++) {
		struct ibres_hostrec r;
		unsigned i;

		seed = seed * 1103515245u + 12345u;
		i = (seed >> 8) % (HOSTS * 2);
		if (i >= HOSTS && (seed & 1)) {
			/* a host that leaves (GOODBYE) */
			hdfx_rec(&r, i, 0);
			store_remove_gid(&f->store, r.gids[0]);
		} else {
			/* refreshed, or (with a longer alias: it no longer fits) moved */
			hdfx_rec(&r, i, w);
			if (seed & 2)
				snprintf(r.names[1], sizeof(r.names[1]), "a-much-longer-alias-%u-%u",
					 i, w % 1000);
			assert_int_equal(store_insert(&f->store, &r, &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 600 }, now_ms(), NULL),
					 0);
		}
		/* a loop turn every few changes: sections end, generations get replaced */
		if (w % 16 == 0)
			loop_run_due(&f->loop);
		feed_directory(f, feed[0], &fed);
		if (w % 2000 == 0) {
			/* more hosts than the tables were made for, at last (a
			 * deletion leaves no slot taken: churn alone never fills
			 * a table), then a quiet moment: heartbeats and the
			 * replacement due, as the daemon's timers make them */
			for (unsigned k = 0; k < GROWTH; k++) {
				hdfx_rec(&r, HOSTS * 2 + fed_hosts++, 0);
				assert_int_equal(store_insert(&f->store, &r, &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 600 }, now_ms(), NULL),
						 0);
			}
			usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
			loop_run_due(&f->loop);
		}
	}
	stop = 1;
	for (unsigned i = 0; i < READERS; i++) {
		pthread_join(rd[i].t, NULL);
		hits += rd[i].hits;
		bad += rd[i].bad;
	}
	ibres_close(h);
	close(feed[0]);
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	struct hostdir_stats st;

	hostdir_stats(f->pub, &st);
	print_message("readers: %lu hits, %lu mixed; writer: %u changes, %llu generations\n", hits, bad,
		      WRITES, (unsigned long long)st.rebuilds);
	assert_int_equal(bad, 0);
	assert_true(hits > 0);
	assert_true(st.rebuilds >= 2); /* replaced while they read */
}

/* ---- Robin Hood order ------------------------------------------------------------- */

/* Every table of image @m in Robin Hood order (lib/hostdir.h): no deleted
 * slot, and a slot off its key's home only after a taken slot at most one
 * nearer its own. Returns the slots taken. */
static unsigned check_order(const uint8_t *m)
{
	const struct ibdir_header *hd = (const void *)m;
	unsigned taken = 0;

	assert_true(hd->flags & IBDIR_ORDERED);
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		const uint64_t *slots = (const void *)(m + hd->tables[t].off);
		uint32_t n = hd->tables[t].n_slots;

		for (uint32_t j = 0; j < n; j++) {
			uint32_t prev = j ? j - 1 : n - 1, d;

			if ((uint32_t)slots[j] == IBDIR_SLOT_EMPTY)
				continue;
			assert_int_not_equal((uint32_t)slots[j], IBDIR_SLOT_DELETED);
			taken++;
			d = ibdir_dist(slots[j], j, n);
			if (!d)
				continue;
			assert_int_not_equal((uint32_t)slots[prev], IBDIR_SLOT_EMPTY);
			assert_true(ibdir_dist(slots[prev], prev, n) + 1 >= d);
		}
	}
	return taken;
}

/* Look key @key up in @m as a reader that knows IBDIR_ORDERED does, and as
 * one that probes to an empty slot: both give @want. A miss of the latter
 * probes on where the former stops, and may meet a run longer than
 * IBDIR_PROBES_MAX at 7/8 taken or a slot that says ask (its record lists
 * two keys of one hash), as the generation's random seed falls: it asks
 * the daemon then (-EAGAIN), never a wrong answer. */
static void look_both(const void *m, size_t size, uint16_t type, const void *key, size_t len,
		      int want)
{
	uint64_t buf[IBDIR_REC_MAX / 8];
	struct ibdir_geom g;
	struct ibdir_view v;
	int got;

	assert_int_equal(ibdir_geom_read(m, size, &g), 0);
	assert_int_equal(ibdir_find(m, size, &g, now_ms(), type, key, len, buf, sizeof(buf), &v),
			 want);
	g.flags &= ~IBDIR_ORDERED;
	got = ibdir_find(m, size, &g, now_ms(), type, key, len, buf, sizeof(buf), &v);
	if (want == -ENODATA && got == -EAGAIN)
		return;
	assert_int_equal(got, want);
}

/* Hosts come, leave and move their records (some outgrow their blocks)
 * while the tables are most of the way to full: the tables stay in order,
 * no deleted slot is left (a deletion moves the run after it back), and
 * every host is found, every host gone is not, by either kind of reader. */
static void test_tables_stay_in_robin_hood_order(void **state)
{
	enum { N = 1200, ROUNDS = 6 };
	struct fx *f = *state;
	bool live[N] = { false };
	struct ibres_hostrec r;
	unsigned seed = 11, taken = 0;
	size_t size;
	void *m;

	hostdir_set_scope(f->pub, 0, NULL, 0, 0); /* a miss is authoritative */
	for (unsigned i = 0; i < N; i++)
		if (i % 3) {
			hdfx_put(f, i, 0, IBRES_ORIGIN_FABRIC, 600);
			live[i] = true;
		}
	loop_run_due(&f->loop);
	usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
	loop_run_due(&f->loop);
	for (unsigned round = 0; round < ROUNDS; round++) {
		for (unsigned w = 0; w < N; w++) {
			unsigned i;

			seed = seed * 1103515245u + 12345u;
			i = (seed >> 8) % N;
			hdfx_rec(&r, i, round + 1);
			if (live[i] && (seed & 1)) {
				store_remove_gid(&f->store, r.gids[0]);
				live[i] = false;
				continue;
			}
			if (seed & 2)
				snprintf(r.names[1], sizeof(r.names[1]), "h%u-a-longer-alias", i);
			assert_int_equal(store_insert(&f->store, &r, &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 600 }, now_ms(), NULL),
					 0);
			live[i] = true;
		}
		/* a generation due (a table 7/8 taken) is made once it is quiet */
		loop_run_due(&f->loop);
		usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
		loop_run_due(&f->loop);
		m = hdfx_map(f, &size);
		taken = check_order(m);
		for (unsigned i = 0; i < N; i++) {
			hdfx_rec(&r, i, round + 1);
			look_both(m, size, IBRES_T_IPV4, &r.v4[0], 4, live[i] ? 0 : -ENODATA);
			look_both(m, size, IBRES_T_GID, r.gids[0], 16, live[i] ? 0 : -ENODATA);
			look_both(m, size, IBRES_T_NAME, r.names[0], strlen(r.names[0]),
				  live[i] ? 0 : -ENODATA);
		}
		munmap(m, size);
	}
	/* the slots taken are the keys there are: none left behind */
	{
		unsigned keys = 0;

		for (unsigned i = 0; i < N; i++)
			keys += live[i] ? 5 : 0; /* two names, IPv4, IPv6, GID */
		assert_int_equal(taken, keys);
	}
}

/* ---- records the writer never makes (issue 21) ------------------------------------ */

/* A record as the writer encodes it (seq even, cap its rounded size). */
static size_t enc_rec(const struct ibres_hostrec *r, uint8_t *out)
{
	size_t len = ibdir_rec_encode(r, IBDIR_NEVER, out);
	struct ibdir_rec hdr;

	memcpy(&hdr, out, sizeof(hdr));
	hdr.seq = 2;
	hdr.cap = (uint32_t)((len + 7) & ~(size_t)7);
	memcpy(out, &hdr, sizeof(hdr));
	return len;
}

static void set_hdr_u8(uint8_t *rec, size_t at, uint8_t v)
{
	rec[at] = v;
}

/* Every shape the writer never makes is refused by the decoder: no name
 * (nss/pack.c then wrote aliases[n_names - 1], 32 GiB away), counts past
 * their arrays, lengths that do not add up, names no host has. */
static void test_decoder_refuses_what_the_writer_never_makes(void **state)
{
	static const char *const bad_names[] = { "a_b", "-a", "a-", "a..b", "1.2.3.4", "a b",
						 "a\x80", "a\n" };
	uint8_t enc[IBDIR_REC_MAX], buf[IBDIR_REC_MAX];
	struct ibres_hostrec r, out;
	struct ibdir_rec hdr;
	size_t len;

	(void)state;
	hdfx_rec(&r, 7, 1);
	len = enc_rec(&r, enc);
	assert_int_equal(ibdir_rec_decode(enc, len, &out), 0);
	assert_int_equal(hostrec_check(&out), 0);

	/* no name: an address and a GID alone, as ibdir_rec_encode writes them */
	r.n_names = 0;
	len = enc_rec(&r, buf);
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	assert_int_equal(ibdir_rec_has_key(buf, len, IBDIR_TAB_IPV4, &r.v4[0], 4), 1);
	hdfx_rec(&r, 7, 1);
	len = enc_rec(&r, enc);

	/* each count past its array, the bytes otherwise as written */
	for (unsigned k = 0; k < 4; k++) {
		static const size_t at[4] = {
			offsetof(struct ibdir_rec, n_names), offsetof(struct ibdir_rec, n_v4),
			offsetof(struct ibdir_rec, n_v6), offsetof(struct ibdir_rec, n_gids) };
		static const uint8_t over[4] = { IBRES_HOST_NAMES_MAX + 1, IBRES_HOST_ADDRS_MAX + 1,
						 IBRES_HOST_ADDRS_MAX + 1, IBRES_HOST_GIDS_MAX + 1 };

		memcpy(buf, enc, len);
		set_hdr_u8(buf, at[k], over[k]);
		assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
		set_hdr_u8(buf, at[k], 255);
		assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	}
	/* data_len past the copy, short of the data, a flag no reader knows,
	 * endpoint sets the data has no room for (of 1 endpoint), 0 or 33
	 * endpoints */
	memcpy(buf, enc, len);
	memcpy(&hdr, buf, sizeof(hdr));
	hdr.data_len++;
	memcpy(buf, &hdr, sizeof(hdr));
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	hdr.data_len = 0;
	memcpy(buf, &hdr, sizeof(hdr));
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	memcpy(buf, enc, len);
	memcpy(&hdr, buf, sizeof(hdr));
	hdr.flags = IBDIR_REC_EPS << 1;
	memcpy(buf, &hdr, sizeof(hdr));
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	hdr.flags = IBDIR_REC_EPS | 1u << IBDIR_REC_N_EP_SHIFT;
	memcpy(buf, &hdr, sizeof(hdr));
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	{
		struct hostrec_eps e = { .n_ep = 1 };
		uint8_t eb[IBDIR_REC_MAX];
		size_t elen;

		for (unsigned i = 0; i < IBRES_HOST_NAMES_MAX; i++)
			e.names[i] = 1;
		for (unsigned i = 0; i < IBRES_HOST_ADDRS_MAX; i++)
			e.gids[i] = e.v4[i] = e.v6[i] = 1;
		hdfx_rec(&r, 7, 1);
		elen = ibdir_rec_encode_eps(&r, &e, IBDIR_NEVER, eb);
		assert_int_equal(ibdir_rec_decode(eb, elen, &out), 0);
		for (unsigned n_ep = 0; n_ep <= 33; n_ep += 33) {
			memcpy(&hdr, eb, sizeof(hdr));
			hdr.flags = (uint16_t)(IBDIR_REC_EPS | n_ep << IBDIR_REC_N_EP_SHIFT);
			hdr.data_len = (uint16_t)(hdr.data_len - 8 + 8 * n_ep);
			memcpy(eb, &hdr, sizeof(hdr));
			assert_int_equal(ibdir_rec_decode(eb, sizeof(eb), &out), -EBADMSG);
		}
	}
	/* a copy shorter than its header */
	assert_int_equal(ibdir_rec_decode(enc, sizeof(hdr) - 1, &out), -EBADMSG);

	/* names no host has: the daemon holds only what hostrec_name_ok() takes */
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		hdfx_rec(&r, 7, 1);
		strcpy(r.names[1], bad_names[i]);
		len = enc_rec(&r, buf);
		assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	}
	/* an empty name, a name with a NUL in its length */
	hdfx_rec(&r, 7, 1);
	len = enc_rec(&r, buf);
	memcpy(&hdr, buf, sizeof(hdr));
	{
		uint8_t *name1 = buf + sizeof(hdr) + 16u * r.n_gids + 16u * r.n_v6 + 4u * r.n_v4 +
				 1 + strlen(r.names[0]);

		name1[2] = '\0';
		assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
	}
	r.names[1][0] = '\0';
	r.n_names = 2;
	len = enc_rec(&r, buf);
	assert_int_equal(ibdir_rec_decode(buf, len, &out), -EBADMSG);
}

/* Hand-made images (no writer, test/unit/dir_image.c): four tables of 32
 * slots, 8 KiB of records. */
#define IMG_SLOTS 32u
#define IMG_AREA  8192u

/* Format 3: a table of any number of slots, probes wrapping from its last
 * slot to its first. Tables of 5, 7 and 13 slots hold 2, 3 and 6 hosts (each
 * 2 names, an IPv4, an IPv6 and a GID): every key is found, a name no host
 * has is "no such host", and a name table with every slot taken still ends
 * its probe. */
static void test_tables_of_any_size(void **state)
{
	static const uint32_t sizes[][2] = { { 5, 2 }, { 7, 3 }, { 13, 6 } };
	struct ibres_hostrec r, got;
	uint64_t now = 1000000;

	(void)state;
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct dir_image m;

		dir_image_init(&m, sizes[s][0], IMG_AREA, now);
		for (unsigned i = 1; i <= sizes[s][1]; i++) {
			hdfx_rec(&r, i, 1);
			dir_image_put(&m, &r, 0);
		}
		for (unsigned i = 1; i <= sizes[s][1]; i++) {
			hdfx_rec(&r, i, 1);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, r.names[0],
						      strlen(r.names[0]), &got), 0);
			assert_string_equal(got.names[0], r.names[0]);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, r.names[1],
						      strlen(r.names[1]), &got), 0);
			assert_string_equal(got.names[0], r.names[0]);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV4, &r.v4[0], 4,
						      &got), 0);
			assert_int_equal(got.lid, r.lid);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV6, &r.v6[0], 16,
						      &got), 0);
			assert_int_equal(got.lid, r.lid);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_GID, r.gids[0], 16,
						      &got), 0);
			assert_int_equal(got.lid, r.lid);
		}
		assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "nobody", 6, &got),
				 -ENODATA);
		/* a host of one name in the last free name slot: a probe for a
		 * name no host has visits every slot and gives up (asks the
		 * daemon) rather than going round for ever */
		if (s == 0) {
			hdfx_rec(&r, 9, 1);
			r.n_names = 1;
			dir_image_put(&m, &r, 0);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "h9", 2, &got),
					 0);
			assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "nobody", 6,
						      &got),
					 -EAGAIN);
		}
		dir_image_free(&m);
	}
}

/* The finding of issue 21 through the reader: a record without a name,
 * looked up by its address or GID, is -EBADMSG (the client asks the daemon),
 * never a record with n_names 0; its neighbour still answers. */
static void test_lookup_of_a_record_without_a_name(void **state)
{
	struct dir_image m;
	struct ibres_hostrec good, bad, got;
	uint64_t now = 1000000;

	(void)state;
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	hdfx_rec(&good, 1, 1);
	dir_image_put(&m, &good, 0);
	hdfx_rec(&bad, 2, 1);
	bad.n_names = 0;
	dir_image_put(&m, &bad, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV4, &bad.v4[0], 4, &got),
			 -EBADMSG);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV6, &bad.v6[0], 16, &got),
			 -EBADMSG);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_GID, bad.gids[0], 16, &got),
			 -EBADMSG);
	memset(&got, 0, sizeof(got));
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV4, &good.v4[0], 4, &got),
			 0);
	assert_int_equal(hostrec_check(&got), 0);
	assert_string_equal(got.names[0], good.names[0]);
	assert_int_equal(got.n_names, good.n_names);
	/* a name no host has: refused too */
	dir_image_free(&m);
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	hdfx_rec(&bad, 3, 1);
	strcpy(bad.names[1], "under_score");
	dir_image_put(&m, &bad, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, bad.names[0],
				      strlen(bad.names[0]), &got),
			 -EBADMSG);
	/* a damaged record no longer holds the key its slot was made for: not
	 * a collision to probe past into an authoritative "no such host" */
	dir_image_free(&m);
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	hdfx_rec(&good, 4, 1);
	dir_image_put(&m, &good, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "h4", 2, &got), 0);
	{
		struct ibdir_header *hd = (void *)m.b;
		uint8_t *name0 = m.b + hd->rec_off + sizeof(struct ibdir_rec) + 16u * good.n_gids +
				 16u * good.n_v6 + 4u * good.n_v4;

		assert_int_equal(name0[0], 2);
		name0[2] = '_'; /* "h_" */
	}
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "h4", 2, &got),
			 -EBADMSG);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "nothere", 7, &got),
			 -ENODATA);
	dir_image_free(&m);
}

/* A look-up of a host of several endpoints in one record keeps what the
 * key's endpoints hold: the host's name gives all, a partition's alias its
 * address, the port's GID and its P_Key, an address its endpoint's names; a
 * port GID two partitions share gives both. */
static void test_one_record_of_several_endpoints(void **state)
{
	struct dir_image m;
	struct ibres_hostrec r, got;
	struct hostrec_eps e;
	uint64_t now = 1000000;
	uint32_t a0 = htonl(0xc6120101u), a0p = htonl(0xc6120201u), a1 = htonl(0xc6120102u);

	(void)state;
	dir_image_multirail(&r, &e);
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	dir_image_put_eps(&m, &r, &e, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "MR1", 3, &got), 0);
	assert_int_equal(got.n_names, 4);
	assert_int_equal(got.n_v4, 3);
	assert_int_equal(got.n_v6, 1);
	assert_int_equal(got.n_gids, 2);
	assert_int_equal(got.pkey, 0xffff);
	assert_int_equal(hostrec_check(&got), 0);

	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "mr1-ib0-8001", 12, &got), 0);
	assert_int_equal(got.n_names, 2);
	assert_string_equal(got.names[0], "mr1");
	assert_string_equal(got.names[1], "mr1-ib0-8001");
	assert_int_equal(got.n_v4, 1);
	assert_int_equal(got.v4[0].s_addr, a0p);
	assert_int_equal(got.n_v6, 0);
	assert_int_equal(got.n_gids, 1);
	assert_memory_equal(got.gids[0], r.gids[0], 16);
	assert_int_equal(got.pkey, 0x8001);
	assert_int_equal(got.lid, 10);

	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV4, &a1, 4, &got), 0);
	assert_int_equal(got.n_names, 2);
	assert_string_equal(got.names[1], "mr1-ib1");
	assert_int_equal(got.n_v4, 1);
	assert_int_equal(got.n_gids, 1);
	assert_memory_equal(got.gids[0], r.gids[1], 16);
	assert_int_equal(got.lid, 20);

	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_GID, r.gids[0], 16, &got), 0);
	assert_int_equal(got.n_names, 3);
	assert_int_equal(got.n_v4, 2);
	assert_int_equal(got.v4[0].s_addr, a0);
	assert_int_equal(got.v4[1].s_addr, a0p);
	assert_int_equal(got.n_v6, 1);
	assert_int_equal(got.pkey, 0xffff);
	dir_image_free(&m);

	/* a rail's alias its two partitions have: theirs, not the other
	 * rail's (it once gave the whole host) */
	e.names[1] = 3;
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	dir_image_put_eps(&m, &r, &e, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "mr1-ib0", 7, &got), 0);
	assert_int_equal(got.n_names, 3);
	assert_int_equal(got.n_v4, 2);
	assert_int_equal(got.v4[0].s_addr, a0);
	assert_int_equal(got.v4[1].s_addr, a0p);
	assert_int_equal(got.n_gids, 1);
	dir_image_free(&m);
	e.names[1] = 1;

	/* sets the writer never makes: a key of no endpoint, one past the
	 * record's endpoints */
	e.names[3] = 0;
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	dir_image_put_eps(&m, &r, &e, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "mr1-ib1", 7, &got),
			 -EBADMSG);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_NAME, "mr1", 3, &got), 0);
	dir_image_free(&m);
	e.names[3] = 4;
	e.v4[2] = 8;
	dir_image_init(&m, IMG_SLOTS, IMG_AREA, now);
	dir_image_put_eps(&m, &r, &e, 0);
	assert_int_equal(ibdir_lookup(m.b, m.size, now, IBRES_T_IPV4, &a1, 4, &got), -EBADMSG);
	dir_image_free(&m);
}

/* A new generation sizes each table for the keys the writer gives a slot.
 * Counting every key a record lists is the quick way, taken when the
 * store's own count says the host holds as many: here 2,000 fabric
 * endpoints each list a name and a GID their static host (of P_Key 0xffff)
 * holds, and hold only their IPv4 address and LID, so each key is asked of
 * the store. Counted anyway, the name and GID tables would be twice the
 * size. */
static void test_sizing_leaves_out_keys_held_elsewhere(void **state)
{
	const unsigned n = 2000;
	struct fx *f = *state;
	const struct ibdir_header *hd;
	struct ibres_hostrec r, got;
	size_t size;
	uint8_t *m;

	for (unsigned i = 1; i <= n; i++) {
		memset(&r, 0, sizeof(r));
		snprintf(r.names[0], sizeof(r.names[0]), "s%u", i);
		r.n_names = 1;
		r.gids[0][0] = 0xfe;
		r.gids[0][1] = 0x80;
		memcpy(&r.gids[0][12], &i, 4);
		r.n_gids = 1;
		r.pkey = 0xffff;
		hdfx_insert(f, &r, IBRES_ORIGIN_STATIC, 0);
		r.pkey = 0x8001; /* the same port in another partition */
		r.lid = (uint16_t)i;
		r.v4[0].s_addr = htonl(0x0a000000u | i);
		r.n_v4 = 1;
		hdfx_insert(f, &r, IBRES_ORIGIN_FABRIC, 600);
	}
	assert_int_equal(store_check(&f->store), 0);
	hostdir_stop(f->pub);
	assert_int_equal(hostdir_start(&f->pub, &f->loop, &f->store), 0);
	m = hdfx_map(f, &size);
	hd = (const void *)m;
	/* sized for n names and n GIDs (10/7 as many slots), not 2n */
	assert_true(hd->tables[IBDIR_TAB_NAME].n_slots < n * 3 / 2);
	assert_true(hd->tables[IBDIR_TAB_GID].n_slots < n * 3 / 2);
	assert_true(hd->tables[IBDIR_TAB_IPV4].n_slots < n * 3 / 2);
	/* and every key is found where the store has it */
	r.v4[0].s_addr = htonl(0x0a000000u | n);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &r.v4[0], 4, &got), 0);
	assert_int_equal(got.pkey, 0x8001);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, r.names[0], strlen(r.names[0]), &got), 0);
	assert_int_equal(got.pkey, 0xffff);
	munmap(m, size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_record_of_several_endpoints),
		cmocka_unit_test_setup_teardown(test_every_key_type, hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_find_views_the_record, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test(test_hash_folds_ascii_case_only),
		cmocka_unit_test(test_hash_parts_lengths_under_every_seed),
		cmocka_unit_test_setup_teardown(test_scope_of_a_miss, hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_rails, hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_rail_heard_again_moves_the_host_expiry,
						hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_a_host_one_record_cannot_hold, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_partition_gid_after_refresh, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_refresh_move_remove_expire, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_growth_replaces_the_generation, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_held_back_key_moved, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_held_back_key_moved_from_a_rail, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_key_taken_from_the_host_evicted, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_stop_closes, hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_images, hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_32_readers_and_a_busy_writer, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test(test_decoder_refuses_what_the_writer_never_makes),
		cmocka_unit_test(test_tables_of_any_size),
		cmocka_unit_test_setup_teardown(test_tables_stay_in_robin_hood_order, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test(test_lookup_of_a_record_without_a_name),
		cmocka_unit_test_setup_teardown(test_sizing_leaves_out_keys_held_elsewhere,
						hdfx_setup, hdfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
