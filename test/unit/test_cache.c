// SPDX-License-Identifier: MIT
/* Unit tests of the resolver cache (resolverd/core/cache.c). All times are explicit. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/cache.h"

/* ---- helpers ------------------------------------------------------------ */

static void rec_init(struct ibres_hostrec *h, const char *name)
{
	memset(h, 0, sizeof(*h));
	if (name)
		snprintf(h->names[h->n_names++], sizeof(h->names[0]), "%s", name);
}

static void rec_name(struct ibres_hostrec *h, const char *name)
{
	snprintf(h->names[h->n_names++], sizeof(h->names[0]), "%s", name);
}

static void rec_v4(struct ibres_hostrec *h, const char *a)
{
	assert_int_equal(inet_pton(AF_INET, a, &h->v4[h->n_v4++]), 1);
}

static void rec_v6(struct ibres_hostrec *h, const char *a)
{
	assert_int_equal(inet_pton(AF_INET6, a, &h->v6[h->n_v6++]), 1);
}

static void rec_gid(struct ibres_hostrec *h, const char *a)
{
	assert_int_equal(inet_pton(AF_INET6, a, h->gids[h->n_gids++]), 1);
}

static struct cache_key kname(const char *n)
{
	struct cache_key k;

	assert_int_equal(cache_key_name(&k, n), 0);
	return k;
}

static struct cache_key kaddr(uint8_t type, const char *a)
{
	uint8_t buf[16];
	struct cache_key k;

	assert_int_equal(inet_pton(type == IBRES_KEY_IPV4 ? AF_INET : AF_INET6, a, buf), 1);
	assert_int_equal(cache_key_addr(&k, type, buf), 0);
	return k;
}

static struct cache_key klid(uint16_t lid)
{
	struct cache_key k;

	assert_int_equal(cache_key_lid(&k, lid), 0);
	return k;
}

static struct cache_entry *lk(struct cache *c, struct cache_key k, uint64_t now)
{
	return cache_lookup(c, &k, now);
}

static struct cache_entry *lk_name(struct cache *c, const char *n, uint64_t now)
{
	return lk(c, kname(n), now);
}

static struct cache_entry *lk_v4(struct cache *c, const char *a, uint64_t now)
{
	return lk(c, kaddr(IBRES_KEY_IPV4, a), now);
}

static struct cache_entry *lk_gid(struct cache *c, const char *a, uint64_t now)
{
	return lk(c, kaddr(IBRES_KEY_GID, a), now);
}

static struct cache_entry *goc(struct cache *c, const char *n, uint64_t now)
{
	struct cache_key k = kname(n);

	return cache_get_or_create(c, &k, now);
}

static void check(struct cache *c)
{
	assert_int_equal(cache_check(c), 0);
}

/* A simple host: name, one IPv4 address, one GID, no LID. */
static int insert_simple(struct cache *c, const char *name, const char *v4, const char *gid,
			 uint8_t origin, uint32_t ttl, uint64_t now)
{
	struct ibres_hostrec h;

	rec_init(&h, name);
	if (v4)
		rec_v4(&h, v4);
	if (gid)
		rec_gid(&h, gid);
	return cache_insert_host(c, &h, origin, ttl, now);
}

struct tw {
	struct cache_waiter w;
	int calls;
	int status;
	uint8_t state;
	bool had_host;
	struct cache_entry *e; /* compare only: may be freed after the call */
	/* optional re-entrant work in the callback */
	struct cache *c;
	struct cache_key lookup;
	bool do_lookup;
	uint64_t now;
	struct tw *cancel;
	struct cache_entry *found;
};

static void tw_done(struct cache_waiter *w, struct cache_entry *e, int status)
{
	struct tw *t = container_of(w, struct tw, w);

	t->calls++;
	t->status = status;
	t->state = e->state;
	t->had_host = e->host != NULL;
	t->e = e;
	if (t->cancel)
		cache_cancel_waiter(&t->cancel->w);
	if (t->do_lookup)
		t->found = cache_lookup(t->c, &t->lookup, t->now);
}

static void tw_init(struct tw *t)
{
	memset(t, 0, sizeof(*t));
	t->w.done = tw_done;
}

static struct ibres_path_record path_with_dlid(uint16_t dlid)
{
	struct ibres_path_record p;

	memset(&p, 0, sizeof(p));
	p.dlid = htons(dlid);
	return p;
}

/* ---- keys ------------------------------------------------------------------ */

static void test_key_name(void **state)
{
	struct cache_key k;
	char longname[300];

	(void)state;
	assert_int_equal(cache_key_name(&k, "Node1.Cluster"), 0);
	assert_int_equal(k.type, IBRES_KEY_NAME);
	assert_int_equal(k.len, 13);
	assert_memory_equal(k.data, "node1.cluster", 13);
	assert_int_equal(cache_key_name(&k, ""), -EINVAL);
	assert_int_equal(cache_key_name(&k, NULL), -EINVAL);
	memset(longname, 'A', sizeof(longname));
	longname[255] = '\0';
	assert_int_equal(cache_key_name(&k, longname), 0);
	assert_int_equal(k.len, 255);
	assert_int_equal(k.data[254], 'a');
	longname[255] = 'A';
	longname[256] = '\0';
	assert_int_equal(cache_key_name(&k, longname), -EINVAL);
	/* non-ASCII bytes are kept as they are */
	assert_int_equal(cache_key_name(&k, "\xc3\x89X"), 0);
	assert_memory_equal(k.data, "\xc3\x89x", 3);
}

static void test_key_addr_lid(void **state)
{
	uint8_t a[16] = {0xfe, 0x80, [15] = 1};
	struct cache_key k;

	(void)state;
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_IPV4, a), 0);
	assert_int_equal(k.type, IBRES_KEY_IPV4);
	assert_int_equal(k.len, 4);
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_IPV6, a), 0);
	assert_int_equal(k.len, 16);
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_GID, a), 0);
	assert_int_equal(k.type, IBRES_KEY_GID);
	assert_int_equal(k.len, 16);
	assert_memory_equal(k.data, a, 16);
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_NAME, a), -EINVAL);
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_LID, a), -EINVAL);
	assert_int_equal(cache_key_addr(&k, 99, a), -EINVAL);
	assert_int_equal(cache_key_addr(&k, IBRES_KEY_IPV4, NULL), -EINVAL);
	assert_int_equal(cache_key_lid(&k, 0x1234), 0);
	assert_int_equal(k.type, IBRES_KEY_LID);
	assert_int_equal(k.len, 2);
	assert_int_equal(k.data[0], 0x12);
	assert_int_equal(k.data[1], 0x34);
	assert_int_equal(cache_key_lid(&k, 0), -EINVAL);
}

static void test_key_str(void **state)
{
	char buf[CACHE_KEY_STR_MAX], small[8];
	struct cache_key k;
	char longname[256];

	(void)state;
	k = kname("Node1");
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "name:node1");
	k = kaddr(IBRES_KEY_IPV4, "198.18.0.1");
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "ipv4:198.18.0.1");
	k = kaddr(IBRES_KEY_IPV6, "2001:db8::1");
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "ipv6:2001:db8::1");
	k = kaddr(IBRES_KEY_GID, "fe80::2:c903:0:1");
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "gid:fe80::2:c903:0:1");
	k = klid(5);
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "lid:5");
	k = klid(0xc001);
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "lid:49153");
	/* escaping */
	k = kname("a b\\c\x01\xff");
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "name:a\\x20b\\x5cc\\x01\\xff");
	/* truncation always terminates */
	k = kname("node1234567");
	assert_string_equal(cache_key_str(&k, small, sizeof(small)), "name:no");
	k = kname("\x01\x02\x03");
	assert_string_equal(cache_key_str(&k, small, sizeof(small)), "name:\\x");
	k = kaddr(IBRES_KEY_IPV4, "198.18.0.1");
	assert_string_equal(cache_key_str(&k, small, sizeof(small)), "ipv4:19");
	assert_ptr_equal(cache_key_str(&k, small, 0), small);
	/* malformed keys */
	memset(&k, 0, sizeof(k));
	k.type = 9;
	k.len = 2;
	k.data[0] = 0xab;
	k.data[1] = 0x01;
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "key9:ab01");
	k.type = IBRES_KEY_IPV4;
	assert_string_equal(cache_key_str(&k, buf, sizeof(buf)), "key2:ab01");
	/* the worst case fits CACHE_KEY_STR_MAX */
	memset(longname, 0x01, 255);
	longname[255] = '\0';
	k = kname(longname);
	cache_key_str(&k, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 5 + 4 * 255);
}

/* ---- init / fini ------------------------------------------------------------ */

static void test_init_fini(void **state)
{
	struct cache c, d;

	(void)state;
	assert_int_equal(cache_init(&c, 0), -EINVAL);
	assert_int_equal(cache_init(&c, CACHE_ENTRIES_LIMIT + 1), -EINVAL);
	assert_int_equal(cache_init(&c, 1), 0);
	assert_true(c.n_buckets >= 1 && !(c.n_buckets & (c.n_buckets - 1)));
	check(&c);
	cache_fini(&c);
	cache_fini(&c); /* twice is harmless */
	memset(&d, 0, sizeof(d));
	cache_fini(&d); /* zeroed is harmless */

	assert_int_equal(cache_init(&c, 1000), 0);
	assert_true(c.n_buckets >= 500);
	assert_int_equal(c.n_buckets & (c.n_buckets - 1), 0);
	assert_int_equal(c.max_entries, 1000);
	assert_int_equal(c.n_entries, 0);
	assert_null(c.on_remove);
	/* every cache has its own hash key */
	assert_int_equal(cache_init(&d, 1000), 0);
	assert_true(c.seed[0] != d.seed[0] || c.seed[1] != d.seed[1]);
	cache_fini(&d);
	cache_fini(&c);
}

/* ---- insert and lookup ---------------------------------------------------------- */

static void test_insert_all_keys(void **state)
{
	const char *gids[] = {"fe80::1", "fe80::1:1"};
	struct ibres_hostrec h;
	struct cache_entry *e;
	struct cache_host *host;
	struct cache_key keys[8];
	struct cache c;
	unsigned i;

	(void)state;
	assert_int_equal(cache_init(&c, 64), 0);
	rec_init(&h, "Node1");
	rec_name(&h, "node1-ib");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.1.1");
	rec_v6(&h, "2001:db8::1");
	rec_gid(&h, gids[0]);
	rec_gid(&h, gids[1]);
	h.lid = 7;
	h.qpn = 0x48;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 1000), 0);
	check(&c);
	assert_int_equal(c.n_entries, 8);
	assert_int_equal(c.stats.entries, 8);
	assert_int_equal(c.stats.hosts, 1);
	assert_int_equal(c.stats.inserts, 1);

	keys[0] = kname("node1");
	keys[1] = kname("NODE1-IB");
	keys[2] = kaddr(IBRES_KEY_IPV4, "198.18.0.1");
	keys[3] = kaddr(IBRES_KEY_IPV4, "198.18.1.1");
	keys[4] = kaddr(IBRES_KEY_IPV6, "2001:db8::1");
	keys[5] = kaddr(IBRES_KEY_GID, gids[0]);
	keys[6] = kaddr(IBRES_KEY_GID, gids[1]);
	keys[7] = klid(7);
	e = cache_lookup(&c, &keys[0], 1001);
	assert_non_null(e);
	host = e->host;
	assert_non_null(host);
	assert_int_equal(host->refs, 8);
	assert_int_equal(host->origin, IBRES_ORIGIN_FABRIC);
	assert_int_equal(host->expires_ms, 61000);
	assert_int_equal(host->rec.qpn, 0x48);
	for (i = 0; i < 8; i++) {
		e = cache_lookup(&c, &keys[i], 1002);
		assert_non_null(e);
		assert_ptr_equal(e->host, host);
		assert_int_equal(e->state, IBRES_STATE_RESOLVED);
		assert_int_equal(e->expires_ms, 61000);
		assert_int_equal(e->used_ms, 1002);
		assert_int_equal(e->route_ep, -1);
	}
	assert_int_equal(c.stats.hits, 9);
	assert_null(lk_name(&c, "node2", 1003));
	assert_null(lk(&c, klid(8), 1003));
	assert_int_equal(c.stats.misses, 2);
	/* a malformed key is a miss, not a crash */
	keys[0].len = 0;
	assert_null(cache_lookup(&c, &keys[0], 1003));
	assert_int_equal(c.stats.misses, 3);
	cache_fini(&c);
}

static void test_insert_invalid(void **state)
{
	struct ibres_hostrec h;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	rec_init(&h, NULL);
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	h.lid = 3; /* a LID alone is enough */
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(c.n_entries, 1);
	assert_non_null(lk(&c, klid(3), 1));
	rec_init(&h, "");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	rec_init(&h, "a");
	memset(h.names[0], 'x', sizeof(h.names[0])); /* unterminated */
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	rec_init(&h, "a");
	h.n_v4 = IBRES_HOST_ADDRS_MAX + 1;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	rec_init(&h, "a");
	h.n_names = IBRES_HOST_NAMES_MAX + 1;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	rec_init(&h, "a");
	h.n_gids = IBRES_HOST_GIDS_MAX + 1;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), -EINVAL);
	rec_init(&h, "a");
	assert_int_equal(cache_insert_host(&c, &h, 3, 60, 0), -EINVAL);
	assert_int_equal(c.n_entries, 1);
	check(&c);
	cache_fini(&c);
}

static void test_duplicate_keys_in_record(void **state)
{
	struct ibres_hostrec h;
	struct cache_entry *e;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	rec_init(&h, "Node1");
	rec_name(&h, "node1");
	rec_name(&h, "NODE1");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.0.1");
	rec_gid(&h, "fe80::1");
	rec_gid(&h, "fe80::1");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	check(&c);
	assert_int_equal(c.n_entries, 3);
	e = lk_name(&c, "node1", 1);
	assert_non_null(e);
	assert_int_equal(e->host->refs, 3);
	/* the same record again changes nothing */
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(c.n_entries, 3);
	assert_int_equal(e->host->refs, 3);
	check(&c);
	cache_fini(&c);
}

static void test_refresh_same_host(void **state)
{
	struct cache_entry *e, *f;
	struct cache_host *host;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 10, 1000), 0);
	e = lk_name(&c, "a", 1000);
	host = e->host;
	assert_int_equal(e->expires_ms, 11000);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 10, 5000), 0);
	/* refreshed in place: same entry, same host record, new expiry */
	f = lk_name(&c, "a", 5000);
	assert_ptr_equal(f, e);
	assert_ptr_equal(f->host, host);
	assert_int_equal(f->expires_ms, 15000);
	assert_int_equal(host->expires_ms, 15000);
	assert_int_equal(host->refs, 3);
	assert_int_equal(c.stats.hosts, 1);
	assert_int_equal(c.stats.inserts, 2);
	assert_non_null(lk_name(&c, "a", 14999));
	assert_null(lk_name(&c, "a", 15000));
	check(&c);
	cache_fini(&c);
}

/* ---- expiry -------------------------------------------------------------------- */

static void test_ttl_expiry_lookup(void **state)
{
	struct cache_entry *e;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 10, 1000), 0);
	e = lk_name(&c, "a", 10999);
	assert_non_null(e);
	assert_int_equal(e->expires_ms, 11000);
	assert_null(lk_name(&c, "a", 11000));
	assert_int_equal(c.stats.expirations, 1);
	assert_int_equal(c.n_entries, 2);
	assert_int_equal(c.stats.hosts, 1);
	check(&c);
	assert_null(lk_v4(&c, "198.18.0.1", 20000));
	assert_null(lk_gid(&c, "fe80::a", 20000));
	assert_int_equal(c.stats.expirations, 3);
	assert_int_equal(c.n_entries, 0);
	assert_int_equal(c.stats.hosts, 0); /* freed with the last entry */
	check(&c);
	cache_fini(&c);
}

static void test_ttl_expiry_sweep(void **state)
{
	struct cache_entry *q, *q2;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(insert_simple(&c, "a", "198.18.0.1", NULL, IBRES_ORIGIN_FABRIC, 10, 0), 0);
	assert_int_equal(insert_simple(&c, "b", "198.18.0.2", NULL, IBRES_ORIGIN_FABRIC, 20, 0), 0);
	assert_int_equal(insert_simple(&c, "c", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 0), 0);
	assert_int_equal(insert_simple(&c, "l", NULL, NULL, IBRES_ORIGIN_LOCAL, 5, 0), 0);
	assert_int_equal(insert_simple(&c, "s", NULL, NULL, IBRES_ORIGIN_STATIC, 5, 0), 0);
	q = goc(&c, "q", 0);
	q->state = IBRES_STATE_QUERYING;
	q2 = goc(&c, "q2", 0);
	q2->state = IBRES_STATE_QUERYING;
	q2->expires_ms = 15000; /* the resolver core's own deadline */
	assert_int_equal(c.n_entries, 9);
	assert_int_equal(cache_sweep(&c, 9999), 0);
	assert_int_equal(cache_sweep(&c, 10000), 2);
	assert_int_equal(c.n_entries, 7);
	assert_null(lk_name(&c, "a", 10000));
	assert_int_equal(cache_sweep(&c, 15000), 1); /* q2 */
	assert_int_equal(cache_sweep(&c, 20000), 2);
	assert_int_equal(cache_sweep(&c, UINT64_MAX - 1), 0);
	assert_int_equal(c.stats.expirations, 5);
	/* ttl 0 fabric, pinned hosts and the open query are left */
	assert_int_equal(c.n_entries, 4);
	assert_non_null(lk_name(&c, "c", UINT64_MAX - 1));
	assert_non_null(lk_name(&c, "l", UINT64_MAX - 1));
	assert_non_null(lk_name(&c, "s", UINT64_MAX - 1));
	assert_ptr_equal(lk_name(&c, "q", UINT64_MAX - 1), q);
	assert_int_equal(c.stats.hosts, 3);
	check(&c);
	cache_fini(&c);
}

static void test_pinned_never_expire(void **state)
{
	struct cache_entry *e;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	assert_int_equal(insert_simple(&c, "l", "198.18.0.1", NULL, IBRES_ORIGIN_LOCAL, 1, 0), 0);
	assert_int_equal(insert_simple(&c, "s", "198.18.0.2", NULL, IBRES_ORIGIN_STATIC, 1, 0), 0);
	e = lk_name(&c, "l", 0);
	assert_int_equal(e->expires_ms, UINT64_MAX);
	assert_int_equal(e->host->expires_ms, UINT64_MAX);
	assert_true(cache_entry_pinned(e));
	assert_int_equal(cache_sweep(&c, UINT64_MAX - 1), 0);
	assert_non_null(lk_v4(&c, "198.18.0.2", UINT64_MAX - 1));
	assert_int_equal(c.n_entries, 4);
	/* ttl overflow saturates to "never" */
	assert_int_equal(
		insert_simple(&c, "f", NULL, NULL, IBRES_ORIGIN_FABRIC, 10, UINT64_MAX - 5), 0);
	assert_int_equal(lk_name(&c, "f", UINT64_MAX - 5)->expires_ms, UINT64_MAX);
	check(&c);
	cache_fini(&c);
}

/* ---- states ---------------------------------------------------------------------- */

static void test_state_transitions(void **state)
{
	struct ibres_path_record p = path_with_dlid(9);
	struct cache_entry *e, *g;
	struct tw t1, t2;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	/* INIT */
	e = goc(&c, "node2", 100);
	assert_non_null(e);
	assert_int_equal(e->state, IBRES_STATE_INIT);
	assert_null(e->host);
	assert_int_equal(e->expires_ms, UINT64_MAX);
	assert_int_equal(e->tid, 0);
	assert_int_equal(e->attempts, 0);
	assert_int_equal(e->route_ep, -1);
	assert_ptr_equal(goc(&c, "NODE2", 101), e);
	/* a route on an unresolved entry is ignored */
	cache_set_route(e, 1, &p, 10, 100);
	assert_int_equal(e->state, IBRES_STATE_INIT);
	/* lookup of INIT/QUERYING: found, but a miss */
	assert_ptr_equal(lk_name(&c, "node2", 102), e);
	assert_int_equal(c.stats.misses, 1);
	/* INIT -> QUERYING (the resolver core) -> RESOLVED */
	e->state = IBRES_STATE_QUERYING;
	e->tid = 77;
	e->attempts = 2;
	tw_init(&t1);
	tw_init(&t2);
	cache_add_waiter(e, &t1.w);
	cache_add_waiter(e, &t2.w);
	assert_ptr_equal(lk_name(&c, "node2", 103), e);
	assert_int_equal(c.stats.misses, 2);
	assert_int_equal(
		insert_simple(&c, "node2", "198.18.0.2", "fe80::2", IBRES_ORIGIN_FABRIC, 60, 200),
		0);
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, 0);
	assert_int_equal(t1.state, IBRES_STATE_RESOLVED);
	assert_ptr_equal(t1.e, e);
	assert_int_equal(t2.calls, 1);
	assert_int_equal(t2.status, 0);
	assert_true(list_empty(&e->waiters));
	assert_int_equal(e->state, IBRES_STATE_RESOLVED);
	assert_int_equal(e->tid, 77); /* resolver bookkeeping left alone */
	assert_int_equal(e->attempts, 2);
	assert_non_null(e->host);
	assert_int_equal(e->expires_ms, 60200);
	/* RESOLVED -> ROUTED */
	cache_set_route(e, 3, &p, 5, 300);
	assert_int_equal(e->state, IBRES_STATE_ROUTED);
	assert_int_equal(e->route_ep, 3);
	assert_int_equal(e->route_expires_ms, 5300);
	assert_int_equal(ntohs(e->route.dlid), 9);
	assert_ptr_equal(lk_name(&c, "node2", 5299), e);
	assert_int_equal(e->state, IBRES_STATE_ROUTED);
	/* ROUTED -> RESOLVED when the route expires */
	assert_ptr_equal(lk_name(&c, "node2", 5300), e);
	assert_int_equal(e->state, IBRES_STATE_RESOLVED);
	assert_int_equal(e->route_ep, -1);
	assert_int_equal(e->route_expires_ms, 0);
	/* RESOLVED -> NEGATIVE: the host reference goes */
	g = lk_gid(&c, "fe80::2", 5301);
	assert_int_equal(g->host->refs, 3);
	tw_init(&t1);
	cache_add_waiter(e, &t1.w);
	cache_set_negative(&c, e, 30, -ENODATA, 6000);
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, -ENODATA);
	assert_int_equal(t1.state, IBRES_STATE_NEGATIVE);
	assert_int_equal(e->state, IBRES_STATE_NEGATIVE);
	assert_null(e->host);
	assert_int_equal(e->expires_ms, 36000);
	assert_int_equal(g->host->refs, 2);
	check(&c);
	/* NEGATIVE lookups are hits */
	assert_int_equal(c.stats.hits, 3);
	assert_ptr_equal(lk_name(&c, "node2", 35999), e);
	assert_int_equal(c.stats.hits, 4);
	/* NEGATIVE -> RESOLVED by a new record */
	assert_int_equal(
		insert_simple(&c, "node2", "198.18.0.2", "fe80::2", IBRES_ORIGIN_FABRIC, 60, 7000),
		0);
	assert_int_equal(e->state, IBRES_STATE_RESOLVED);
	assert_ptr_equal(e->host, g->host);
	assert_int_equal(e->host->refs, 3);
	/* NEGATIVE expires away */
	cache_set_negative(&c, e, 1, -ENODATA, 8000);
	assert_null(lk_name(&c, "node2", 9000));
	assert_null(goc(&c, "node2", 9000)->host); /* a new INIT entry */
	check(&c);
	cache_fini(&c);
}

static void test_negative(void **state)
{
	struct cache_entry *e;
	struct tw t;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	e = goc(&c, "nx", 100);
	e->state = IBRES_STATE_QUERYING;
	tw_init(&t);
	cache_add_waiter(e, &t.w);
	/* ttl 0: kept, due now; the caller's pointer stays valid */
	cache_set_negative(&c, e, 0, -ETIMEDOUT, 100);
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.status, -ETIMEDOUT);
	assert_int_equal(e->state, IBRES_STATE_NEGATIVE);
	assert_int_equal(e->expires_ms, 100);
	assert_int_equal(c.n_entries, 1);
	assert_null(lk_name(&c, "nx", 100));
	assert_int_equal(c.n_entries, 0);
	/* a non-negative status becomes -ENODATA */
	e = goc(&c, "nx", 200);
	tw_init(&t);
	cache_add_waiter(e, &t.w);
	cache_set_negative(&c, e, 5, 0, 200);
	assert_int_equal(t.status, -ENODATA);
	assert_int_equal(e->expires_ms, 5200);
	assert_int_equal(cache_sweep(&c, 5199), 0);
	assert_int_equal(cache_sweep(&c, 5200), 1);
	assert_int_equal(c.n_entries, 0);
	/* a negative entry of a pinned key becomes evictable */
	assert_int_equal(insert_simple(&c, "s", NULL, NULL, IBRES_ORIGIN_STATIC, 0, 300), 0);
	e = lk_name(&c, "s", 300);
	assert_true(cache_entry_pinned(e));
	cache_set_negative(&c, e, 10, -ENODATA, 300);
	assert_false(cache_entry_pinned(e));
	assert_int_equal(c.stats.hosts, 0);
	check(&c);
	cache_fini(&c);
}

/* ---- routes ------------------------------------------------------------------------ */

static void test_drop_routes(void **state)
{
	struct ibres_path_record p = path_with_dlid(4), q = path_with_dlid(5);
	struct ibres_hostrec h, g;
	struct cache_entry *a, *ip, *b;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	rec_init(&h, "a");
	rec_v4(&h, "198.18.0.1");
	rec_gid(&h, "fe80::a");
	rec_init(&g, "b");
	rec_gid(&g, "fe80::b");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 100, 0), 0);
	assert_int_equal(cache_insert_host(&c, &g, IBRES_ORIGIN_STATIC, 0, 0), 0);
	a = lk_name(&c, "a", 0);
	ip = lk_v4(&c, "198.18.0.1", 0);
	b = lk_name(&c, "b", 0);
	memcpy(p.dgid, h.gids[0], 16);
	memcpy(q.dgid, g.gids[0], 16);
	cache_set_route(a, 0, &p, 10, 0);
	cache_set_route(ip, 1, &p, 10, 0);
	cache_set_route(b, 0, &q, 10, 0);
	/* by endpoint */
	assert_int_equal(cache_drop_routes(&c, 1, NULL), 1);
	assert_int_equal(ip->state, IBRES_STATE_RESOLVED);
	assert_int_equal(ip->route_ep, -1);
	assert_int_equal(a->state, IBRES_STATE_ROUTED);
	/* by destination */
	assert_int_equal(cache_drop_routes(&c, -1, g.gids[0]), 1);
	assert_int_equal(b->state, IBRES_STATE_RESOLVED);
	assert_int_equal(a->state, IBRES_STATE_ROUTED);
	assert_int_equal(cache_drop_routes(&c, 0, h.gids[0]), 1);
	assert_int_equal(a->state, IBRES_STATE_RESOLVED);
	assert_int_equal(cache_drop_routes(&c, -1, NULL), 0);
	/* entries and hosts stay */
	assert_int_equal(c.stats.hosts, 2);
	assert_int_equal(cache_check(&c), 0);
	assert_int_equal(cache_drop_routes(NULL, -1, NULL), 0);
	cache_fini(&c);
}

static void test_routes(void **state)
{
	struct ibres_path_record p = path_with_dlid(4);
	struct ibres_hostrec h;
	struct cache_entry *a, *ip;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	rec_init(&h, "a");
	rec_v4(&h, "198.18.0.1");
	rec_gid(&h, "fe80::a");
	h.lid = 4;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 100, 0), 0);
	a = lk_name(&c, "a", 0);
	ip = lk_v4(&c, "198.18.0.1", 0);
	cache_set_route(a, 0, &p, 10, 0);
	cache_set_route(ip, 0, &p, 0, 0); /* never expires */
	assert_int_equal(ip->route_expires_ms, UINT64_MAX);
	/* replacing a route */
	cache_set_route(a, 2, &p, 20, 0);
	assert_int_equal(a->route_ep, 2);
	assert_int_equal(a->route_expires_ms, 20000);
	/* a refresh of the same host keeps unexpired routes */
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 100, 1000), 0);
	assert_int_equal(a->state, IBRES_STATE_ROUTED);
	assert_int_equal(a->route_ep, 2);
	assert_int_equal(ip->state, IBRES_STATE_ROUTED);
	/* the sweep downgrades expired routes without removing entries */
	assert_int_equal(cache_sweep(&c, 20000), 0);
	assert_int_equal(a->state, IBRES_STATE_RESOLVED);
	assert_int_equal(a->route_ep, -1);
	assert_int_equal(ip->state, IBRES_STATE_ROUTED);
	/* an expired route is not kept by a refresh */
	cache_set_route(a, 1, &p, 1, 20000);
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 100, 21000), 0);
	assert_int_equal(a->state, IBRES_STATE_RESOLVED);
	/* a new LID invalidates routes */
	cache_set_route(a, 1, &p, 50, 21000);
	h.lid = 5;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 100, 22000), 0);
	assert_int_equal(a->state, IBRES_STATE_RESOLVED);
	assert_int_equal(ip->state, IBRES_STATE_RESOLVED);
	assert_null(lk(&c, klid(4), 22000)); /* stale LID key went */
	assert_non_null(lk(&c, klid(5), 22000));
	check(&c);
	cache_fini(&c);
}

/* ---- addresses that move, aliases that go ------------------------------------------- */

static void test_address_moved(void **state)
{
	struct ibres_hostrec h;
	struct cache_entry *e;
	struct cache_host *ha, *hb;
	struct ibres_path_record p = path_with_dlid(1);
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(
		insert_simple(&c, "b", "198.18.0.2", "fe80::b", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	e = lk_v4(&c, "198.18.0.1", 0);
	ha = e->host;
	cache_set_route(e, 0, &p, 0, 0);
	hb = lk_name(&c, "b", 0)->host;
	assert_int_equal(ha->refs, 3);
	/* b now has a's address too */
	rec_init(&h, "b");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.0.2");
	rec_gid(&h, "fe80::b");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 10), 0);
	check(&c);
	assert_ptr_equal(lk_v4(&c, "198.18.0.1", 10), e);
	assert_ptr_equal(e->host, hb);
	assert_int_equal(e->state, IBRES_STATE_RESOLVED); /* a's route does not go to b */
	assert_ptr_equal(lk_name(&c, "a", 10)->host, ha);
	assert_ptr_equal(lk_gid(&c, "fe80::a", 10)->host, ha);
	assert_int_equal(ha->refs, 2);
	assert_int_equal(hb->refs, 4);
	assert_int_equal(c.stats.hosts, 2);
	/* a goes away: the moved address stays with b */
	assert_int_equal(cache_remove_host_by_gid(&c, ha->rec.gids[0]), 2);
	assert_int_equal(c.stats.hosts, 1);
	assert_ptr_equal(lk_v4(&c, "198.18.0.1", 20)->host, hb);
	/* a comes back with the address: it moves back, b keeps the rest */
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 30), 0);
	ha = lk_name(&c, "a", 30)->host;
	assert_ptr_equal(lk_v4(&c, "198.18.0.1", 30)->host, ha);
	assert_int_equal(hb->refs, 3);
	check(&c);
	cache_fini(&c);
}

static void test_alias_dropped(void **state)
{
	struct ibres_hostrec h;
	struct cache_entry *e;
	struct tw t;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	rec_init(&h, "a");
	rec_name(&h, "a-alias");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.0.11");
	rec_gid(&h, "fe80::a");
	h.lid = 10;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(c.n_entries, 6);
	e = lk_name(&c, "a-alias", 0);
	tw_init(&t);
	cache_add_waiter(e, &t.w); /* someone waits on the alias (unusual, but legal) */
	/* the host drops an alias and an address, and renames itself */
	rec_init(&h, "a2");
	rec_v4(&h, "198.18.0.1");
	rec_gid(&h, "fe80::a");
	h.lid = 10;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 10), 0);
	check(&c);
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.status, -ENODATA);
	assert_int_equal(c.n_entries, 4);
	assert_null(lk_name(&c, "a-alias", 10));
	assert_null(lk_name(&c, "a", 10));
	assert_null(lk_v4(&c, "198.18.0.11", 10));
	e = lk_name(&c, "a2", 10);
	assert_non_null(e);
	assert_int_equal(e->host->refs, 4);
	assert_int_equal(c.stats.hosts, 1);
	assert_int_equal(c.stats.expirations, 0);
	cache_fini(&c);
}

/* The old record's GID entry was evicted: the identity index still finds it. */
static void test_stale_after_identity_evicted(void **state)
{
	struct cache_entry *e;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 4), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	/* use the name and address so that the GID is least recently used */
	assert_non_null(lk_name(&c, "a", 1));
	assert_non_null(lk_v4(&c, "198.18.0.1", 1));
	assert_int_equal(insert_simple(&c, "x", "198.18.0.9", NULL, IBRES_ORIGIN_FABRIC, 60, 2), 0);
	assert_null(lk_gid(&c, "fe80::a", 2)); /* evicted */
	assert_int_equal(c.stats.evictions, 1);
	e = lk_name(&c, "a", 3);
	assert_int_equal(e->host->refs, 2);
	/* a's new record has another name */
	assert_int_equal(
		insert_simple(&c, "a-new", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 4), 0);
	check(&c);
	assert_null(lk_name(&c, "a", 4));
	assert_non_null(lk_name(&c, "a-new", 4));
	assert_int_equal(c.stats.hosts, 2);
	cache_fini(&c);
}

/* ---- authority ------------------------------------------------------------------------ */

static void test_authority(void **state)
{
	struct cache_entry *e;
	struct cache_host *local, *stat;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(insert_simple(&c, "me", "198.18.0.1", "fe80::1", IBRES_ORIGIN_LOCAL, 0, 0),
			 0);
	local = lk_name(&c, "me", 0)->host;
	/* overhearing our own announcement changes nothing */
	assert_int_equal(
		insert_simple(&c, "me-old", "198.18.0.1", "fe80::1", IBRES_ORIGIN_FABRIC, 60, 1),
		0);
	assert_null(lk_name(&c, "me-old", 1));
	assert_ptr_equal(lk_name(&c, "me", 1)->host, local);
	assert_int_equal(local->origin, IBRES_ORIGIN_LOCAL);
	assert_int_equal(c.stats.inserts, 1);
	/* a static record of our own identity neither */
	assert_int_equal(insert_simple(&c, "me", NULL, "fe80::1", IBRES_ORIGIN_STATIC, 0, 1), 0);
	assert_int_equal(local->refs, 3);
	/* another fabric host cannot take our address; it gets its other keys */
	assert_int_equal(
		insert_simple(&c, "evil", "198.18.0.1", "fe80::e", IBRES_ORIGIN_FABRIC, 60, 2), 0);
	assert_ptr_equal(lk_v4(&c, "198.18.0.1", 2)->host, local);
	e = lk_name(&c, "evil", 2);
	assert_non_null(e);
	assert_int_equal(e->host->refs, 2);
	/* a fabric host that becomes static is pinned from then on */
	assert_int_equal(
		insert_simple(&c, "s", "198.18.0.5", "fe80::5", IBRES_ORIGIN_FABRIC, 60, 3), 0);
	e = lk_name(&c, "s", 3);
	assert_false(cache_entry_pinned(e));
	assert_int_equal(
		insert_simple(&c, "s", "198.18.0.5", "fe80::5", IBRES_ORIGIN_STATIC, 60, 4), 0);
	assert_true(cache_entry_pinned(e));
	assert_int_equal(e->expires_ms, UINT64_MAX);
	stat = e->host;
	assert_int_equal(stat->origin, IBRES_ORIGIN_STATIC);
	check(&c);
	/* and static keys cannot be taken by fabric hosts */
	assert_int_equal(
		insert_simple(&c, "t", "198.18.0.5", "fe80::6", IBRES_ORIGIN_FABRIC, 60, 5), 0);
	assert_ptr_equal(lk_v4(&c, "198.18.0.5", 5)->host, stat);
	/* but another static host can (the last line of the hosts file wins) */
	assert_int_equal(insert_simple(&c, "u", "198.18.0.5", "fe80::7", IBRES_ORIGIN_STATIC, 0, 6),
			 0);
	assert_string_equal(lk_v4(&c, "198.18.0.5", 6)->host->rec.names[0], "u");
	/* a fabric insert where every key is taken leaves nothing behind */
	assert_int_equal(insert_simple(&c, "me", "198.18.0.1", NULL, IBRES_ORIGIN_FABRIC, 60, 7),
			 0);
	check(&c);
	cache_fini(&c);
}

/* ---- capacity ---------------------------------------------------------------------------- */

/* cache_peek finds like cache_lookup but leaves stats and LRU order alone. */
static void test_peek_counts_nothing(void **state)
{
	struct cache_key k;
	struct cache c;
	char n[8];
	int i;

	(void)state;
	assert_int_equal(cache_init(&c, 4), 0);
	for (i = 0; i < 4; i++) {
		snprintf(n, sizeof(n), "h%d", i);
		assert_int_equal(insert_simple(&c, n, NULL, NULL, IBRES_ORIGIN_FABRIC, 60, 10 * i),
				 0);
	}
	assert_int_equal(cache_key_name(&k, "h0"), 0);
	assert_non_null(cache_peek(&c, &k, 100));
	assert_int_equal(cache_key_name(&k, "nothere"), 0);
	assert_null(cache_peek(&c, &k, 100));
	assert_int_equal(c.stats.hits, 0);
	assert_int_equal(c.stats.misses, 0);
	/* h0 was only peeked at: it is still the oldest, and goes first */
	assert_int_equal(insert_simple(&c, "h4", NULL, NULL, IBRES_ORIGIN_FABRIC, 60, 102), 0);
	assert_null(lk_name(&c, "h0", 103));
	assert_non_null(lk_name(&c, "h1", 103));
	/* expiry still applies */
	assert_int_equal(cache_key_name(&k, "h1"), 0);
	assert_null(cache_peek(&c, &k, 10 + 60 * 1000));
	check(&c);
	cache_fini(&c);
}

static void test_lru_eviction_order(void **state)
{
	struct cache c;
	char n[8];
	int i;

	(void)state;
	assert_int_equal(cache_init(&c, 4), 0);
	for (i = 0; i < 4; i++) {
		snprintf(n, sizeof(n), "h%d", i);
		assert_int_equal(insert_simple(&c, n, NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 10 * i),
				 0);
	}
	/* use h0 and h2: LRU order is now h1, h3, h0, h2 */
	assert_non_null(lk_name(&c, "h0", 100));
	assert_non_null(lk_name(&c, "h2", 101));
	assert_int_equal(insert_simple(&c, "h4", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 102), 0);
	assert_null(lk_name(&c, "h1", 103));
	assert_int_equal(insert_simple(&c, "h5", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 104), 0);
	assert_null(lk_name(&c, "h3", 105));
	assert_int_equal(c.stats.evictions, 2);
	assert_int_equal(c.n_entries, 4);
	/* get_or_create evicts too: h0 is oldest now */
	assert_non_null(goc(&c, "h6", 106));
	assert_null(lk_name(&c, "h0", 107));
	assert_non_null(lk_name(&c, "h2", 107));
	assert_non_null(lk_name(&c, "h4", 107));
	assert_non_null(lk_name(&c, "h5", 107));
	assert_int_equal(c.stats.evictions, 3);
	/* a host needing two slots evicts the two oldest (h6 INIT, then h2) */
	assert_int_equal(insert_simple(&c, "h7", "198.18.0.7", NULL, IBRES_ORIGIN_FABRIC, 0, 108),
			 0);
	assert_int_equal(c.stats.evictions, 5);
	assert_null(lk_name(&c, "h6", 109));
	assert_null(lk_name(&c, "h2", 109));
	assert_int_equal(c.stats.hosts, 3);
	assert_int_equal(c.n_entries, 4);
	check(&c);
	cache_fini(&c);
}

static void test_eviction_skips_busy(void **state)
{
	struct cache_entry *q, *w;
	struct tw t;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 4), 0);
	q = goc(&c, "q", 0);
	q->state = IBRES_STATE_QUERYING; /* no waiters, but the resolver owns it */
	w = goc(&c, "w", 1);
	tw_init(&t);
	cache_add_waiter(w, &t.w);
	assert_int_equal(insert_simple(&c, "s", NULL, NULL, IBRES_ORIGIN_STATIC, 0, 2), 0);
	assert_int_equal(insert_simple(&c, "f", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 3), 0);
	assert_int_equal(insert_simple(&c, "g", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 4), 0);
	assert_null(lk_name(&c, "f", 5)); /* the only candidate */
	assert_int_equal(c.stats.evictions, 1);
	/* the waiter leaves: w becomes the oldest evictable entry */
	cache_cancel_waiter(&t.w);
	cache_cancel_waiter(&t.w); /* twice is harmless */
	assert_int_equal(insert_simple(&c, "h", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 6), 0);
	assert_int_equal(c.stats.evictions, 2);
	assert_ptr_equal(lk_name(&c, "q", 7), q);
	assert_null(lk_name(&c, "w", 7));
	assert_non_null(lk_name(&c, "g", 7));
	assert_non_null(lk_name(&c, "h", 7));
	assert_int_equal(t.calls, 0);
	check(&c);
	cache_fini(&c);
}

static void test_enospc(void **state)
{
	struct ibres_hostrec h;
	struct cache_entry *q, *e;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 5), 0);
	rec_init(&h, "s");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.0.2");
	rec_gid(&h, "fe80::1");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_STATIC, 0, 0), 0);
	q = goc(&c, "q", 0);
	assert_non_null(q);
	q->state = IBRES_STATE_QUERYING;
	/* all pinned or in flight */
	assert_int_equal(insert_simple(&c, "f", NULL, NULL, IBRES_ORIGIN_FABRIC, 60, 1), -ENOSPC);
	errno = 0;
	assert_null(goc(&c, "x", 1));
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(c.n_entries, 5);
	assert_int_equal(c.stats.evictions, 0);
	assert_int_equal(c.stats.hosts, 1);
	check(&c);
	/* a pinned refresh that needs a slot fails too, and changes nothing */
	rec_name(&h, "s-alias");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_STATIC, 0, 2), -ENOSPC);
	assert_null(lk_name(&c, "s-alias", 2));
	assert_int_equal(lk_name(&c, "s", 2)->host->rec.n_names, 1);
	/* ...but one that also drops a key fits */
	h.n_v4 = 1;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_STATIC, 0, 3), 0);
	assert_non_null(lk_name(&c, "s-alias", 3));
	assert_null(lk_v4(&c, "198.18.0.2", 3));
	check(&c);
	cache_fini(&c);

	/* all or nothing: a host with more keys than there is room for */
	assert_int_equal(cache_init(&c, 4), 0);
	assert_int_equal(insert_simple(&c, "a", "198.18.0.1", NULL, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(insert_simple(&c, "l", NULL, NULL, IBRES_ORIGIN_LOCAL, 0, 0), 0);
	e = goc(&c, "q", 0);
	e->state = IBRES_STATE_QUERYING;
	rec_init(&h, "big");
	rec_v4(&h, "198.18.0.3");
	rec_gid(&h, "fe80::3");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 1), -ENOSPC);
	assert_int_equal(c.n_entries, 4);
	assert_non_null(lk_name(&c, "a", 1));
	assert_non_null(lk_v4(&c, "198.18.0.1", 1));
	assert_null(lk_name(&c, "big", 1));
	assert_int_equal(c.stats.evictions, 0);
	assert_int_equal(c.stats.hosts, 2);
	check(&c);
	/* the host's own keys are not victims: a refresh that grows past the
	 * capacity fails rather than evicting itself */
	rec_init(&h, "a");
	rec_v4(&h, "198.18.0.1");
	rec_v4(&h, "198.18.0.2");
	rec_v4(&h, "198.18.0.3");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 2), -ENOSPC);
	/* a host bigger than the whole cache */
	rec_init(&h, "huge");
	rec_v4(&h, "198.18.0.4");
	rec_v4(&h, "198.18.0.5");
	rec_v4(&h, "198.18.0.6");
	rec_v4(&h, "198.18.0.7");
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 2), -ENOSPC);
	assert_int_equal(c.n_entries, 4);
	check(&c);
	cache_fini(&c);
}

/* ---- waiters ------------------------------------------------------------------------------- */

static void test_waiters_expiry(void **state)
{
	struct cache_entry *e;
	struct tw t1, t2;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	/* expiry by lookup */
	e = goc(&c, "a", 0);
	e->state = IBRES_STATE_QUERYING;
	e->expires_ms = 500;
	tw_init(&t1);
	cache_add_waiter(e, &t1.w);
	assert_null(lk_name(&c, "a", 500));
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, -ETIMEDOUT);
	assert_int_equal(c.n_entries, 0);
	/* expiry by sweep */
	e = goc(&c, "b", 0);
	e->state = IBRES_STATE_QUERYING;
	e->expires_ms = 600;
	tw_init(&t1);
	tw_init(&t2);
	cache_add_waiter(e, &t1.w);
	cache_add_waiter(e, &t2.w);
	assert_int_equal(cache_sweep(&c, 599), 0);
	assert_int_equal(t1.calls, 0);
	assert_int_equal(cache_sweep(&c, 600), 1);
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t2.calls, 1);
	assert_int_equal(t2.status, -ETIMEDOUT);
	assert_false(t2.had_host);
	/* expiry by get_or_create: a fresh entry replaces the old one */
	e = goc(&c, "c", 0);
	cache_set_negative(&c, e, 1, -ENODATA, 0);
	tw_init(&t1);
	cache_add_waiter(e, &t1.w);
	e = goc(&c, "c", 1000);
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, -ETIMEDOUT);
	assert_int_equal(e->state, IBRES_STATE_INIT);
	assert_int_equal(c.stats.expirations, 3);
	check(&c);
	cache_fini(&c);
}

static void test_waiters_flush_fini_cancel(void **state)
{
	struct cache_entry *a, *b;
	struct tw t1, t2, t3, t4;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	a = goc(&c, "a", 0);
	a->state = IBRES_STATE_QUERYING;
	b = goc(&c, "b", 0);
	b->state = IBRES_STATE_QUERYING;
	tw_init(&t1);
	tw_init(&t2);
	tw_init(&t3);
	tw_init(&t4);
	cache_add_waiter(a, &t1.w);
	cache_add_waiter(a, &t2.w);
	cache_add_waiter(b, &t3.w);
	cache_add_waiter(b, &t4.w);
	cache_cancel_waiter(&t2.w);
	{
		struct cache_key k = kname("a");

		assert_int_equal(cache_flush(&c, &k), 1);
	}
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, -ECANCELED);
	assert_int_equal(t2.calls, 0);
	assert_int_equal(t3.calls, 0);
	/* a callback that cancels a later waiter of the same entry */
	t3.cancel = &t4;
	cache_fini(&c);
	assert_int_equal(t3.calls, 1);
	assert_int_equal(t3.status, -ECANCELED);
	assert_int_equal(t4.calls, 0);
	cache_cancel_waiter(&t4.w);

	/* cache_complete on its own */
	assert_int_equal(cache_init(&c, 16), 0);
	a = goc(&c, "a", 0);
	tw_init(&t1);
	cache_add_waiter(a, &t1.w);
	cache_complete(a, -ENOMEM);
	cache_complete(a, -ENOMEM);
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t1.status, -ENOMEM);
	assert_int_equal(c.n_entries, 1);
	cache_fini(&c);
}

/* Callbacks may look keys up, including the entry being completed. */
static void test_waiters_reentrant(void **state)
{
	struct cache_entry *e;
	struct tw t1, t2;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 16), 0);
	/* negative with ttl 0: the entry is due, but not freed under the caller */
	e = goc(&c, "a", 100);
	tw_init(&t1);
	tw_init(&t2);
	t1.c = &c;
	t1.lookup = kname("a");
	t1.do_lookup = true;
	t1.now = 100;
	cache_add_waiter(e, &t1.w);
	cache_add_waiter(e, &t2.w);
	cache_set_negative(&c, e, 0, -ENODATA, 100);
	assert_null(t1.found);
	assert_int_equal(t2.calls, 1);
	assert_ptr_equal(t2.e, e);
	assert_int_equal(e->state, IBRES_STATE_NEGATIVE);
	assert_int_equal(c.n_entries, 1);
	check(&c);
	assert_null(lk_name(&c, "a", 100));
	assert_int_equal(c.n_entries, 0);

	/* insert: the callback sees every key of the host */
	e = goc(&c, "b", 200);
	e->state = IBRES_STATE_QUERYING;
	tw_init(&t1);
	t1.c = &c;
	t1.lookup = kaddr(IBRES_KEY_GID, "fe80::b");
	t1.do_lookup = true;
	t1.now = 200;
	cache_add_waiter(e, &t1.w);
	assert_int_equal(
		insert_simple(&c, "b", "198.18.0.2", "fe80::b", IBRES_ORIGIN_FABRIC, 60, 200), 0);
	assert_int_equal(t1.calls, 1);
	assert_non_null(t1.found);
	assert_ptr_equal(t1.found->host, e->host);

	/* a callback (late clock) expires other entries of the host */
	e = lk_name(&c, "b", 200);
	cache_set_negative(&c, e, 60, -ENODATA, 200);
	assert_int_equal(insert_simple(&c, "c", "198.18.0.3", NULL, IBRES_ORIGIN_FABRIC, 1, 300),
			 0);
	e = goc(&c, "c2", 300);
	e->state = IBRES_STATE_QUERYING;
	tw_init(&t1);
	cache_add_waiter(e, &t1.w);
	tw_init(&t2);
	t2.c = &c;
	t2.lookup = kaddr(IBRES_KEY_IPV4, "198.18.0.3");
	t2.do_lookup = true;
	t2.now = 5000;
	cache_add_waiter(lk_name(&c, "c", 300), &t2.w);
	{
		struct ibres_hostrec h;

		rec_init(&h, "c");
		rec_name(&h, "c2");
		rec_v4(&h, "198.18.0.3");
		assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 1, 400), 0);
	}
	assert_int_equal(t1.calls, 1);
	assert_int_equal(t2.calls, 1);
	assert_null(t2.found);
	check(&c);
	cache_fini(&c);
}

/* ---- flush / remove ---------------------------------------------------------------------------
 */

static void test_flush(void **state)
{
	struct cache_key k;
	struct cache_entry *n;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(
		insert_simple(&c, "b", "198.18.0.2", "fe80::b", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(insert_simple(&c, "s", "198.18.0.3", "fe80::3", IBRES_ORIGIN_STATIC, 0, 0),
			 0);
	assert_int_equal(insert_simple(&c, "l", "198.18.0.4", "fe80::4", IBRES_ORIGIN_LOCAL, 0, 0),
			 0);
	n = goc(&c, "neg", 0);
	cache_set_negative(&c, n, 30, -ENODATA, 0);
	assert_int_equal(c.n_entries, 13);
	/* one key takes its whole host */
	k = kaddr(IBRES_KEY_IPV4, "198.18.0.1");
	assert_int_equal(cache_flush(&c, &k), 3);
	assert_null(lk_name(&c, "a", 1));
	assert_null(lk_gid(&c, "fe80::a", 1));
	assert_non_null(lk_name(&c, "b", 1));
	/* pinned keys are not flushed */
	k = kname("s");
	assert_int_equal(cache_flush(&c, &k), 0);
	k = kaddr(IBRES_KEY_GID, "fe80::4");
	assert_int_equal(cache_flush(&c, &k), 0);
	/* unknown and malformed keys */
	k = kname("nothere");
	assert_int_equal(cache_flush(&c, &k), 0);
	k.len = 0;
	assert_int_equal(cache_flush(&c, &k), 0);
	/* a negative entry alone */
	k = kname("neg");
	assert_int_equal(cache_flush(&c, &k), 1);
	assert_int_equal(c.n_entries, 9);
	/* everything not pinned */
	goc(&c, "init", 2);
	assert_int_equal(cache_flush(&c, NULL), 4);
	assert_int_equal(c.n_entries, 6);
	assert_int_equal(c.stats.hosts, 2);
	assert_non_null(lk_name(&c, "s", 3));
	assert_non_null(lk_name(&c, "l", 3));
	check(&c);
	cache_fini(&c);
}

static void test_remove_host_by_gid(void **state)
{
	uint8_t gid[16];
	struct ibres_hostrec h;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	rec_init(&h, "a");
	rec_name(&h, "a-ib");
	rec_v4(&h, "198.18.0.1");
	rec_gid(&h, "fe80::a");
	rec_gid(&h, "fe80::a:2");
	h.lid = 3;
	assert_int_equal(cache_insert_host(&c, &h, IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(insert_simple(&c, "s", NULL, "fe80::5", IBRES_ORIGIN_STATIC, 0, 0), 0);
	assert_int_equal(insert_simple(&c, "b", NULL, "fe80::b", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(c.n_entries, 10);
	/* only gids[0] identifies a host */
	memcpy(gid, h.gids[1], 16);
	assert_int_equal(cache_remove_host_by_gid(&c, gid), 0);
	memcpy(gid, h.gids[0], 16);
	assert_int_equal(cache_remove_host_by_gid(&c, gid), 6);
	assert_int_equal(cache_remove_host_by_gid(&c, gid), 0);
	assert_int_equal(c.n_entries, 4);
	/* pinned hosts stay */
	assert_int_equal(inet_pton(AF_INET6, "fe80::5", gid), 1);
	assert_int_equal(cache_remove_host_by_gid(&c, gid), 0);
	assert_int_equal(c.stats.hosts, 2);
	check(&c);
	cache_fini(&c);
}

static void test_remove_origin(void **state)
{
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(insert_simple(&c, "a", "198.18.0.1", NULL, IBRES_ORIGIN_STATIC, 0, 0), 0);
	assert_int_equal(insert_simple(&c, "b", "198.18.0.2", NULL, IBRES_ORIGIN_STATIC, 0, 0), 0);
	assert_int_equal(insert_simple(&c, "l", "198.18.0.3", NULL, IBRES_ORIGIN_LOCAL, 0, 0), 0);
	assert_int_equal(insert_simple(&c, "f", "198.18.0.4", NULL, IBRES_ORIGIN_FABRIC, 0, 0), 0);
	goc(&c, "q", 0);
	assert_int_equal(cache_remove_origin(&c, IBRES_ORIGIN_STATIC), 4);
	assert_int_equal(c.n_entries, 5);
	assert_int_equal(cache_remove_origin(&c, IBRES_ORIGIN_FABRIC), 2);
	assert_int_equal(cache_remove_origin(&c, IBRES_ORIGIN_LOCAL), 2);
	assert_int_equal(c.n_entries, 1);
	assert_int_equal(c.stats.hosts, 0);
	check(&c);
	cache_fini(&c);
}

static int count_cb(struct cache_entry *e, void *arg)
{
	unsigned *n = arg;

	(void)e;
	return ++*n == 3;
}

static unsigned removed_count;

static void on_remove_cb(struct cache_entry *e, void *arg)
{
	assert_ptr_equal(arg, &removed_count);
	assert_true(list_empty(&e->waiters));
	removed_count++;
}

static void test_foreach_and_hook(void **state)
{
	struct cache c;
	unsigned n = 0;

	(void)state;
	assert_int_equal(cache_init(&c, 32), 0);
	assert_int_equal(insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 1, 0),
			 0);
	assert_int_equal(
		insert_simple(&c, "b", "198.18.0.2", "fe80::b", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	cache_foreach(&c, count_cb, &n);
	assert_int_equal(n, 3); /* stopped */
	c.on_remove = on_remove_cb;
	c.on_remove_arg = &removed_count;
	assert_int_equal(cache_sweep(&c, 1000), 3);
	assert_int_equal(removed_count, 3);
	cache_fini(&c);
	assert_int_equal(removed_count, 6);
}

static void test_check_detects_corruption(void **state)
{
	struct cache_entry *e, *f;
	struct cache_key k;
	struct cache c;

	(void)state;
	assert_int_equal(cache_init(&c, 8), 0);
	assert_int_equal(
		insert_simple(&c, "a", "198.18.0.1", "fe80::a", IBRES_ORIGIN_FABRIC, 60, 0), 0);
	assert_int_equal(insert_simple(&c, "s", NULL, NULL, IBRES_ORIGIN_STATIC, 0, 0), 0);
	e = lk_name(&c, "a", 0);
	f = lk_name(&c, "s", 0);
	check(&c);
	e->host->refs++;
	assert_int_equal(cache_check(&c), -EUCLEAN);
	e->host->refs--;
	c.n_entries++;
	assert_int_equal(cache_check(&c), -EUCLEAN);
	c.n_entries--;
	c.stats.hosts++;
	assert_int_equal(cache_check(&c), -EUCLEAN);
	c.stats.hosts--;
	e->state = IBRES_STATE_NEGATIVE; /* with a host */
	assert_int_equal(cache_check(&c), -EUCLEAN);
	e->state = IBRES_STATE_RESOLVED;
	e->key.data[0] = 'b'; /* in the wrong bucket, and not in its host's record */
	assert_int_equal(cache_check(&c), -EUCLEAN);
	e->key.data[0] = 'a';
	f->expires_ms = 5; /* pinned entries never expire */
	assert_int_equal(cache_check(&c), -EUCLEAN);
	f->expires_ms = UINT64_MAX;
	list_add_tail(&c.lru, &f->lru); /* pinned entries are not on the LRU list */
	assert_int_equal(cache_check(&c), -EUCLEAN);
	list_del(&f->lru);
	check(&c);
	/* get_or_create rejects malformed keys */
	k = kname("x");
	k.len = 0;
	errno = 0;
	assert_null(cache_get_or_create(&c, &k, 0));
	assert_int_equal(errno, EINVAL);
	cache_fini(&c);
}

/* Hostile names: chains stay short (the seed is random, so names cannot be
 * chosen for it in advance). */
static int chain_cb(struct cache_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	return 0;
}

static void test_many_entries(void **state)
{
	struct cache c;
	struct cache_entry *e;
	unsigned i, longest = 0;
	char n[32];

	(void)state;
	assert_int_equal(cache_init(&c, 20000), 0);
	for (i = 0; i < 20000; i++) {
		snprintf(n, sizeof(n), "node%05u", i);
		assert_int_equal(insert_simple(&c, n, NULL, NULL, IBRES_ORIGIN_FABRIC, 0, i), 0);
	}
	assert_int_equal(c.n_entries, 20000);
	for (i = 0; i < c.n_buckets; i++) {
		unsigned len = 0;

		for (e = c.buckets[i]; e; e = e->hnext)
			len++;
		if (len > longest)
			longest = len;
	}
	assert_true(longest < 16);
	cache_foreach(&c, chain_cb, NULL);
	/* one more evicts node00000 */
	assert_int_equal(insert_simple(&c, "extra", NULL, NULL, IBRES_ORIGIN_FABRIC, 0, 30000), 0);
	assert_null(lk_name(&c, "node00000", 30001));
	assert_non_null(lk_name(&c, "node00001", 30001));
	check(&c);
	cache_fini(&c);
}

/* ---- randomized test against a reference model ----------------------------------------- */

/*
 * The model keeps, per key of a small universe, what the cache should hold
 * (present, state, host identity, expiry, route, LRU sequence) and, per
 * identity, the current host record. After every operation the cache must
 * match it exactly: entries, hosts, LRU order, statistics, and which waiters
 * were completed with which status. The universe is small so that hosts
 * share names and addresses, records shrink, identities return, and a small
 * cache evicts all the time.
 */
enum { M_NAMES = 16, M_V4 = 8, M_V6 = 4, M_GIDS = 8, M_LIDS = 6, M_WAITERS = 48 };
#define M_V4_0	(M_NAMES)
#define M_V6_0	(M_V4_0 + M_V4)
#define M_GID_0 (M_V6_0 + M_V6)
#define M_LID_0 (M_GID_0 + M_GIDS)
#define M_KEYS	(M_LID_0 + M_LIDS)

struct mkey {
	bool present;
	uint8_t state;
	int host; /* identity key index, or -1 */
	uint64_t expires, route_exp, seq;
	int route_ep;
};

struct mwaiter {
	struct cache_waiter w;
	bool active;   /* handed to the cache, not yet checked off */
	int key;       /* waiting on this key */
	bool exp_done; /* the model completed it... */
	int exp_status;
	int got_calls; /* ...and the cache did this */
	int got_status;
	int got_key;
};

struct model {
	struct cache c;
	struct cache_key ukeys[M_KEYS];
	struct mkey k[M_KEYS];
	struct ibres_hostrec hrec[M_KEYS];
	uint8_t horigin[M_KEYS];
	struct mwaiter w[M_WAITERS];
	uint64_t seq, now, rng;
	unsigned max, pinned_pct;
	struct cache_stats st;
	unsigned enospc;
};

static struct model *cur_model;

static uint64_t m_rand(struct model *m)
{
	/* xorshift64* */
	m->rng ^= m->rng >> 12;
	m->rng ^= m->rng << 25;
	m->rng ^= m->rng >> 27;
	return m->rng * 0x2545f4914f6cdd1dULL;
}

static unsigned m_rnd(struct model *m, unsigned n)
{
	return (unsigned)(m_rand(m) % n);
}

static int m_key_index(struct model *m, const struct cache_key *k)
{
	int i;

	for (i = 0; i < M_KEYS; i++)
		if (m->ukeys[i].type == k->type && m->ukeys[i].len == k->len &&
		    !memcmp(m->ukeys[i].data, k->data, k->len))
			return i;
	fail_msg("key outside the universe");
	return -1;
}

static void m_addr(int i, uint8_t out[16])
{
	memset(out, 0, 16);
	out[0] = 0xfe;
	out[1] = 0x80;
	out[15] = (uint8_t)(i + 1);
}

static void m_build_universe(struct model *m)
{
	uint8_t a[16];
	char n[16];
	int i;

	for (i = 0; i < M_NAMES; i++) {
		snprintf(n, sizeof(n), "host%d", i);
		m->ukeys[i] = kname(n);
	}
	for (i = 0; i < M_V4; i++) {
		uint8_t v4[4] = {198, 18, 0, (uint8_t)(i + 1)};

		assert_int_equal(cache_key_addr(&m->ukeys[M_V4_0 + i], IBRES_KEY_IPV4, v4), 0);
	}
	for (i = 0; i < M_V6; i++) {
		m_addr(i, a);
		a[0] = 0x20;
		a[1] = 0x01;
		assert_int_equal(cache_key_addr(&m->ukeys[M_V6_0 + i], IBRES_KEY_IPV6, a), 0);
	}
	for (i = 0; i < M_GIDS; i++) {
		m_addr(i, a);
		assert_int_equal(cache_key_addr(&m->ukeys[M_GID_0 + i], IBRES_KEY_GID, a), 0);
	}
	for (i = 0; i < M_LIDS; i++)
		m->ukeys[M_LID_0 + i] = klid((uint16_t)(i + 1));
}

static void m_waiter_done(struct cache_waiter *w, struct cache_entry *e, int status)
{
	struct mwaiter *mw = container_of(w, struct mwaiter, w);

	mw->got_calls++;
	mw->got_status = status;
	mw->got_key = m_key_index(cur_model, &e->key);
}

static bool m_pinned_origin(uint8_t o)
{
	return o == IBRES_ORIGIN_LOCAL || o == IBRES_ORIGIN_STATIC;
}

static bool m_pinned(struct model *m, int j)
{
	return m->k[j].present && m->k[j].host >= 0 && m_pinned_origin(m->horigin[m->k[j].host]);
}

static bool m_live(struct model *m, int id)
{
	int j;

	for (j = 0; j < M_KEYS; j++)
		if (m->k[j].present && m->k[j].host == id)
			return true;
	return false;
}

static bool m_has_waiters(struct model *m, int j)
{
	int i;

	for (i = 0; i < M_WAITERS; i++)
		if (m->w[i].active && !m->w[i].exp_done && m->w[i].key == j)
			return true;
	return false;
}

static unsigned m_count(struct model *m)
{
	unsigned n = 0;
	int j;

	for (j = 0; j < M_KEYS; j++)
		n += m->k[j].present;
	return n;
}

static void m_complete(struct model *m, int j, int status)
{
	int i;

	for (i = 0; i < M_WAITERS; i++) {
		if (m->w[i].active && !m->w[i].exp_done && m->w[i].key == j) {
			m->w[i].exp_done = true;
			m->w[i].exp_status = status;
		}
	}
}

static void m_remove(struct model *m, int j, int status)
{
	m->k[j].present = false;
	m_complete(m, j, status);
}

static void m_route_clear(struct mkey *k)
{
	k->route_ep = -1;
	k->route_exp = 0;
}

static void m_create(struct model *m, int j)
{
	struct mkey *k = &m->k[j];

	k->present = true;
	k->state = IBRES_STATE_INIT;
	k->host = -1;
	k->expires = UINT64_MAX;
	m_route_clear(k);
	k->seq = ++m->seq;
}

static void m_route_check(struct model *m, int j)
{
	struct mkey *k = &m->k[j];

	if (k->state == IBRES_STATE_ROUTED && k->route_exp <= m->now) {
		k->state = IBRES_STATE_RESOLVED;
		m_route_clear(k);
	}
}

static void m_touch(struct model *m, int j)
{
	if (!m_pinned(m, j))
		m->k[j].seq = ++m->seq;
}

static bool m_evictable(struct model *m, int j)
{
	return m->k[j].present && !m_pinned(m, j) && !m_has_waiters(m, j) &&
	       m->k[j].state != IBRES_STATE_QUERYING;
}

/* Least recently used evictable key, not in excl[], not of host @not_host. */
static int m_victim(struct model *m, const bool *excl, int not_host)
{
	int j, best = -1;

	for (j = 0; j < M_KEYS; j++) {
		if (!m_evictable(m, j) || (excl && excl[j]) ||
		    (not_host >= 0 && m->k[j].host == not_host))
			continue;
		if (best < 0 || m->k[j].seq < m->k[best].seq)
			best = j;
	}
	return best;
}

static uint64_t m_deadline(struct model *m, uint32_t ttl)
{
	return ttl ? m->now + (uint64_t)ttl * 1000 : UINT64_MAX;
}

static bool m_lookup(struct model *m, int j)
{
	struct mkey *k = &m->k[j];

	if (k->present && k->expires <= m->now) {
		m_remove(m, j, -ETIMEDOUT);
		m->st.expirations++;
	}
	if (!k->present) {
		m->st.misses++;
		return false;
	}
	m_route_check(m, j);
	m_touch(m, j);
	if (k->state == IBRES_STATE_RESOLVED || k->state == IBRES_STATE_ROUTED ||
	    k->state == IBRES_STATE_NEGATIVE)
		m->st.hits++;
	else
		m->st.misses++;
	return true;
}

static int m_goc(struct model *m, int j)
{
	struct mkey *k = &m->k[j];
	int v;

	if (k->present && k->expires <= m->now) {
		m_remove(m, j, -ETIMEDOUT);
		m->st.expirations++;
	}
	if (k->present) {
		m_route_check(m, j);
		m_touch(m, j);
		return 0;
	}
	if (m_count(m) >= m->max) {
		v = m_victim(m, NULL, -1);
		if (v < 0)
			return -ENOSPC;
		m_remove(m, v, -ECANCELED);
		m->st.evictions++;
	}
	m_create(m, j);
	return 0;
}

static int m_insert(struct model *m, const struct ibres_hostrec *h, uint8_t origin, uint32_t ttl)
{
	int keys[CACHE_HOST_KEYS_MAX], victims[CACHE_HOST_KEYS_MAX];
	bool in_k[M_KEYS] = {false}, was_pinned[M_KEYS] = {false};
	unsigned i, n_k = 0, n = 0, missing = 0, applied = 0, n_stale = 0;
	int j, id, need, n_victims = 0;
	uint16_t old_lid = 0;
	struct cache_key key;
	uint64_t expires;
	bool live;

	for (i = 0; i < h->n_names; i++) {
		assert_int_equal(cache_key_name(&key, h->names[i]), 0);
		keys[n++] = m_key_index(m, &key);
	}
	for (i = 0; i < h->n_v4; i++) {
		assert_int_equal(cache_key_addr(&key, IBRES_KEY_IPV4, &h->v4[i]), 0);
		keys[n++] = m_key_index(m, &key);
	}
	for (i = 0; i < h->n_v6; i++) {
		assert_int_equal(cache_key_addr(&key, IBRES_KEY_IPV6, &h->v6[i]), 0);
		keys[n++] = m_key_index(m, &key);
	}
	for (i = 0; i < h->n_gids; i++) {
		assert_int_equal(cache_key_addr(&key, IBRES_KEY_GID, h->gids[i]), 0);
		keys[n++] = m_key_index(m, &key);
	}
	if (h->lid)
		keys[n++] = M_LID_0 + h->lid - 1;
	for (i = 0; i < n; i++) {
		if (!in_k[keys[i]]) {
			in_k[keys[i]] = true;
			keys[n_k++] = keys[i];
		}
	}
	if (h->n_gids) {
		assert_int_equal(cache_key_addr(&key, IBRES_KEY_GID, h->gids[0]), 0);
		id = m_key_index(m, &key);
	} else {
		id = keys[0];
	}
	live = m_live(m, id);
	if (live && m->horigin[id] < origin)
		return 0;
	if (live)
		old_lid = m->hrec[id].lid;

	for (j = 0; j < M_KEYS; j++) {
		if (m->k[j].present && m->k[j].host == id && !in_k[j])
			n_stale++;
		if (!m->k[j].present && in_k[j])
			missing++;
		was_pinned[j] = m_pinned(m, j);
	}
	need = (int)m_count(m) - (int)n_stale + (int)missing - (int)m->max;
	if (need > 0) {
		bool excl[M_KEYS];

		memcpy(excl, in_k, sizeof(excl));
		for (; n_victims < need; n_victims++) {
			victims[n_victims] = m_victim(m, excl, id);
			if (victims[n_victims] < 0)
				return -ENOSPC;
			excl[victims[n_victims]] = true;
		}
	}
	for (i = 0; i < (unsigned)n_victims; i++) {
		m_remove(m, victims[i], -ECANCELED);
		m->st.evictions++;
	}
	for (j = 0; j < M_KEYS; j++)
		if (m->k[j].present && m->k[j].host == id && !in_k[j])
			m_remove(m, j, -ENODATA);

	expires = m_pinned_origin(origin) ? UINT64_MAX : m_deadline(m, ttl);
	for (i = 0; i < n_k; i++) {
		struct mkey *k = &m->k[keys[i]];
		bool was_linked, keep;

		if (k->present && k->host >= 0 && k->host != id && m->horigin[k->host] < origin)
			continue;
		if (!k->present) {
			m_create(m, keys[i]);
			was_linked = true;
		} else {
			was_linked = !was_pinned[keys[i]];
		}
		keep = k->host == id && k->state == IBRES_STATE_ROUTED && k->route_exp > m->now &&
		       old_lid == h->lid;
		if (!keep) {
			k->state = IBRES_STATE_RESOLVED;
			m_route_clear(k);
		}
		k->host = id;
		k->expires = expires;
		if (!m_pinned_origin(origin) && !was_linked)
			k->seq = ++m->seq;
		applied++;
	}
	m->hrec[id] = *h;
	m->horigin[id] = origin;
	for (i = 0; i < n_k; i++)
		if (m->k[keys[i]].present && m->k[keys[i]].host == id)
			m_complete(m, keys[i], 0);
	if (applied || n_stale)
		m->st.inserts++;
	return 0;
}

static void m_set_negative(struct model *m, int j, uint32_t ttl, int status)
{
	struct mkey *k = &m->k[j];
	bool was_pinned = m_pinned(m, j);

	k->host = -1;
	m_route_clear(k);
	k->state = IBRES_STATE_NEGATIVE;
	k->expires = ttl ? m->now + (uint64_t)ttl * 1000 : m->now;
	if (was_pinned)
		k->seq = ++m->seq;
	m_complete(m, j, status < 0 ? status : -ENODATA);
}

static unsigned m_remove_if(struct model *m, int host, bool unpinned_only, int origin, int status)
{
	unsigned n = 0;
	int j;

	for (j = 0; j < M_KEYS; j++) {
		struct mkey *k = &m->k[j];

		if (!k->present)
			continue;
		if (host >= 0 && k->host != host)
			continue;
		if (unpinned_only && m_pinned(m, j))
			continue;
		if (origin >= 0 && (k->host < 0 || m->horigin[k->host] != origin))
			continue;
		m_remove(m, j, status);
		n++;
	}
	return n;
}

struct m_walk {
	struct model *m;
	unsigned seen;
};

static int m_compare_entry(struct cache_entry *e, void *arg)
{
	struct m_walk *wk = arg;
	struct model *m = wk->m;
	int j = m_key_index(m, &e->key);
	struct mkey *k = &m->k[j];

	assert_true(k->present);
	assert_int_equal(e->state, k->state);
	if (k->host < 0) {
		assert_null(e->host);
	} else {
		assert_non_null(e->host);
		assert_int_equal(m_key_index(m, &e->host->ident), k->host);
		assert_int_equal(e->host->origin, m->horigin[k->host]);
	}
	assert_int_equal(e->expires_ms, k->expires);
	assert_int_equal(e->route_ep, k->route_ep);
	assert_int_equal(e->route_expires_ms, k->route_exp);
	wk->seen++;
	return 0;
}

static void m_compare(struct model *m)
{
	struct m_walk wk = {m, 0};
	struct list_node *n;
	uint64_t last = 0;
	unsigned unpinned = 0, hosts = 0, i;
	int j;

	assert_int_equal(cache_check(&m->c), 0);
	cache_foreach(&m->c, m_compare_entry, &wk);
	assert_int_equal(wk.seen, m_count(m));
	for (j = 0; j < M_KEYS; j++) {
		unpinned += m->k[j].present && !m_pinned(m, j);
		hosts += m_live(m, j);
	}
	i = 0;
	for (n = m->c.lru.next; n != &m->c.lru; n = n->next) {
		struct cache_entry *e = list_entry(n, struct cache_entry, lru);
		uint64_t seq = m->k[m_key_index(m, &e->key)].seq;

		assert_true(seq > last);
		last = seq;
		i++;
	}
	assert_int_equal(i, unpinned);
	m->st.entries = m_count(m);
	m->st.hosts = hosts;
	assert_int_equal(m->c.stats.entries, m->st.entries);
	assert_int_equal(m->c.stats.hosts, m->st.hosts);
	assert_int_equal(m->c.stats.hits, m->st.hits);
	assert_int_equal(m->c.stats.misses, m->st.misses);
	assert_int_equal(m->c.stats.inserts, m->st.inserts);
	assert_int_equal(m->c.stats.evictions, m->st.evictions);
	assert_int_equal(m->c.stats.expirations, m->st.expirations);
	for (i = 0; i < M_WAITERS; i++) {
		struct mwaiter *w = &m->w[i];

		if (!w->active) {
			assert_int_equal(w->got_calls, 0);
			continue;
		}
		if (!w->exp_done) {
			assert_int_equal(w->got_calls, 0);
			continue;
		}
		assert_int_equal(w->got_calls, 1);
		assert_int_equal(w->got_status, w->exp_status);
		assert_int_equal(w->got_key, w->key);
		memset(w, 0, sizeof(*w));
	}
}

static void m_random_record(struct model *m, struct ibres_hostrec *h)
{
	bool has_gid = m_rnd(m, 100) < 85;
	unsigned i, n;

	rec_init(h, NULL);
	n = has_gid ? m_rnd(m, 4) : 1 + m_rnd(m, 3);
	for (i = 0; i < n; i++) {
		unsigned idx = m_rnd(m, M_NAMES);

		snprintf(h->names[h->n_names++], sizeof(h->names[0]),
			 m_rnd(m, 4) ? "host%u" : "HoSt%u", idx);
	}
	n = m_rnd(m, 3);
	for (i = 0; i < n; i++) {
		uint8_t v4[4] = {198, 18, 0, (uint8_t)(1 + m_rnd(m, M_V4))};

		memcpy(&h->v4[h->n_v4++], v4, 4);
	}
	if (m_rnd(m, 2)) {
		uint8_t a[16];

		m_addr((int)m_rnd(m, M_V6), a);
		a[0] = 0x20;
		a[1] = 0x01;
		memcpy(&h->v6[h->n_v6++], a, 16);
	}
	if (has_gid) {
		n = m_rnd(m, 4) ? 1 : 2;
		for (i = 0; i < n; i++)
			m_addr((int)m_rnd(m, M_GIDS), h->gids[h->n_gids++]);
	}
	if (m_rnd(m, 2))
		h->lid = (uint16_t)(1 + m_rnd(m, M_LIDS));
}

/* Look a random key up in both; the entry or NULL. */
static struct cache_entry *m_op_lookup(struct model *m, int *jp)
{
	int j = (int)m_rnd(m, M_KEYS);
	struct cache_entry *e = cache_lookup(&m->c, &m->ukeys[j], m->now);
	bool found = m_lookup(m, j);

	assert_int_equal(e != NULL, found);
	*jp = j;
	return e;
}

static void m_step(struct model *m)
{
	struct ibres_path_record p = path_with_dlid(1);
	struct cache_entry *e;
	struct ibres_hostrec h;
	unsigned r = m_rnd(m, 100), i;
	uint32_t ttl;
	int j, ret;

	m->now += m_rnd(m, 50);
	if (r < 30) {
		uint8_t origin;

		m_random_record(m, &h);
		i = m_rnd(m, 100);
		origin = i < m->pinned_pct / 3 ? IBRES_ORIGIN_LOCAL
			 : i < m->pinned_pct   ? IBRES_ORIGIN_STATIC
					       : IBRES_ORIGIN_FABRIC;
		ttl = m_rnd(m, 10) ? 1 + m_rnd(m, 5) : 0;
		ret = m_insert(m, &h, origin, ttl);
		assert_int_equal(cache_insert_host(&m->c, &h, origin, ttl, m->now), ret);
		m->enospc += ret == -ENOSPC;
	} else if (r < 50) {
		m_op_lookup(m, &j);
	} else if (r < 58) {
		j = (int)m_rnd(m, M_KEYS);
		ret = m_goc(m, j);
		errno = 0;
		e = cache_get_or_create(&m->c, &m->ukeys[j], m->now);
		if (ret) {
			assert_null(e);
			assert_int_equal(errno, -ret);
			m->enospc++;
		} else {
			assert_non_null(e);
			if (e->state == IBRES_STATE_INIT && m_rnd(m, 2)) {
				e->state = m->k[j].state = IBRES_STATE_QUERYING;
				if (!m_rnd(m, 5))
					e->expires_ms = m->k[j].expires = m->now + m_rnd(m, 3000);
			}
		}
	} else if (r < 63) {
		e = m_op_lookup(m, &j);
		if (e) {
			int status = m_rnd(m, 4) ? -ENODATA : (int)m_rnd(m, 2);

			ttl = m_rnd(m, 4) ? m_rnd(m, 4) : 0;
			m_set_negative(m, j, ttl, status);
			cache_set_negative(&m->c, e, ttl, status, m->now);
		}
	} else if (r < 70) {
		e = m_op_lookup(m, &j);
		if (e) {
			int ep = (int)m_rnd(m, 4);

			ttl = m_rnd(m, 5);
			if (m->k[j].state == IBRES_STATE_RESOLVED ||
			    m->k[j].state == IBRES_STATE_ROUTED) {
				m->k[j].state = IBRES_STATE_ROUTED;
				m->k[j].route_ep = ep;
				m->k[j].route_exp = m_deadline(m, ttl);
			}
			cache_set_route(e, ep, &p, ttl, m->now);
		}
	} else if (r < 79) {
		e = m_op_lookup(m, &j);
		i = m_rnd(m, M_WAITERS);
		if (e && !m->w[i].active) {
			struct mwaiter *w = &m->w[i];

			memset(w, 0, sizeof(*w));
			w->w.done = m_waiter_done;
			w->active = true;
			w->key = j;
			cache_add_waiter(e, &w->w);
		}
	} else if (r < 82) {
		i = m_rnd(m, M_WAITERS);
		if (m->w[i].active && !m->w[i].exp_done) {
			cache_cancel_waiter(&m->w[i].w);
			memset(&m->w[i], 0, sizeof(m->w[i]));
		}
	} else if (r < 85) {
		unsigned n = 0;

		for (j = 0; j < M_KEYS; j++) {
			if (!m->k[j].present)
				continue;
			if (m->k[j].expires <= m->now) {
				m_remove(m, j, -ETIMEDOUT);
				n++;
			} else {
				m_route_check(m, j);
			}
		}
		m->st.expirations += n;
		assert_int_equal(cache_sweep(&m->c, m->now), n);
	} else if (r < 88) {
		unsigned n = 0;

		j = (int)m_rnd(m, M_KEYS);
		if (m->k[j].present && !m_pinned(m, j)) {
			if (m->k[j].host >= 0) {
				n = m_remove_if(m, m->k[j].host, false, -1, -ECANCELED);
			} else {
				m_remove(m, j, -ECANCELED);
				n = 1;
			}
		}
		assert_int_equal(cache_flush(&m->c, &m->ukeys[j]), n);
	} else if (r < 89) {
		if (!m_rnd(m, 4))
			assert_int_equal(cache_flush(&m->c, NULL),
					 m_remove_if(m, -1, true, -1, -ECANCELED));
	} else if (r < 92) {
		uint8_t gid[16];
		unsigned n = 0;
		int g = (int)m_rnd(m, M_GIDS);

		j = M_GID_0 + g;
		if (m_live(m, j) && !m_pinned_origin(m->horigin[j]))
			n = m_remove_if(m, j, false, -1, -ENODATA);
		m_addr(g, gid);
		assert_int_equal(cache_remove_host_by_gid(&m->c, gid), n);
	} else if (r < 93) {
		uint8_t origin = (uint8_t)m_rnd(m, 3);

		assert_int_equal(cache_remove_origin(&m->c, origin),
				 m_remove_if(m, -1, false, origin, -ECANCELED));
	} else {
		m->now += m_rnd(m, 3000);
	}
	m_compare(m);
}

static void m_run(unsigned max, unsigned pinned_pct, uint64_t seed, unsigned ops)
{
	struct model *m = calloc(1, sizeof(*m));
	unsigned i;

	assert_non_null(m);
	cur_model = m;
	m->max = max;
	m->pinned_pct = pinned_pct;
	m->rng = seed;
	m->now = 1000;
	m_build_universe(m);
	assert_int_equal(cache_init(&m->c, max), 0);
	for (i = 0; i < ops; i++)
		m_step(m);
	/* fini completes every waiter still waiting */
	for (i = 0; i < M_WAITERS; i++)
		if (m->w[i].active && !m->w[i].exp_done) {
			m->w[i].exp_done = true;
			m->w[i].exp_status = -ECANCELED;
		}
	cache_fini(&m->c);
	for (i = 0; i < M_WAITERS; i++) {
		if (!m->w[i].active)
			continue;
		assert_int_equal(m->w[i].got_calls, 1);
		assert_int_equal(m->w[i].got_status, -ECANCELED);
	}
	if (max < M_KEYS) {
		/* the run did exercise eviction and a full cache */
		assert_true(m->st.evictions > ops / 100);
		assert_true(m->enospc > 0);
	} else {
		assert_int_equal(m->st.evictions, 0);
	}
	assert_true(m->st.expirations > ops / 100);
	assert_true(m->st.inserts > ops / 10);
	free(m);
	cur_model = NULL;
}

static void test_random_model_roomy(void **state)
{
	(void)state;
	m_run(64, 8, 0x9e3779b97f4a7c15ULL, 100000);
}

static void test_random_model_small(void **state)
{
	(void)state;
	m_run(12, 4, 0x2545f4914f6cdd1dULL, 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_name),
		cmocka_unit_test(test_key_addr_lid),
		cmocka_unit_test(test_key_str),
		cmocka_unit_test(test_init_fini),
		cmocka_unit_test(test_insert_all_keys),
		cmocka_unit_test(test_insert_invalid),
		cmocka_unit_test(test_duplicate_keys_in_record),
		cmocka_unit_test(test_refresh_same_host),
		cmocka_unit_test(test_ttl_expiry_lookup),
		cmocka_unit_test(test_ttl_expiry_sweep),
		cmocka_unit_test(test_pinned_never_expire),
		cmocka_unit_test(test_state_transitions),
		cmocka_unit_test(test_negative),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_drop_routes),
		cmocka_unit_test(test_address_moved),
		cmocka_unit_test(test_alias_dropped),
		cmocka_unit_test(test_stale_after_identity_evicted),
		cmocka_unit_test(test_authority),
		cmocka_unit_test(test_lru_eviction_order),
		cmocka_unit_test(test_peek_counts_nothing),
		cmocka_unit_test(test_eviction_skips_busy),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_waiters_expiry),
		cmocka_unit_test(test_waiters_flush_fini_cancel),
		cmocka_unit_test(test_waiters_reentrant),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_remove_host_by_gid),
		cmocka_unit_test(test_remove_origin),
		cmocka_unit_test(test_foreach_and_hook),
		cmocka_unit_test(test_check_detects_corruption),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_random_model_roomy),
		cmocka_unit_test(test_random_model_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
