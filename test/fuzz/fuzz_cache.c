// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the resolver cache: the input is a program of cache
 * operations (insert, lookup, get_or_create, negative, route, waiters,
 * sweep, flush, remove, time steps) on a cache of 32 entries over a small
 * universe of keys, so that hosts collide, addresses move and the cache is
 * always full. After every operation cache_check() must pass; waiters must
 * be completed exactly once (never after a cancel), with the entry they
 * wait on; an insert must leave every key of the record on the new host
 * (or on a more authoritative one). Waiter callbacks look keys up, to
 * exercise re-entrancy. Any violation abort()s.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"

/* Build with -DFUZZ_CACHE_TRACE to print the operations of an input. */
#ifdef FUZZ_CACHE_TRACE
#define trace(...) fprintf(stderr, __VA_ARGS__)

static void trace_key(const struct cache_key *k)
{
	char buf[CACHE_KEY_STR_MAX];

	trace("  key %s\n", cache_key_str(k, buf, sizeof(buf)));
}

static void trace_record(const struct ibres_hostrec *h, uint8_t origin, uint32_t ttl, int ret)
{
	struct cache_key k;
	unsigned i;

	trace("insert origin %u ttl %u -> %d\n", origin, ttl, ret);
	for (i = 0; i < h->n_names; i++)
		if (!cache_key_name(&k, h->names[i]))
			trace_key(&k);
	for (i = 0; i < h->n_v4; i++)
		if (!cache_key_addr(&k, IBRES_KEY_IPV4, &h->v4[i]))
			trace_key(&k);
	for (i = 0; i < h->n_v6; i++)
		if (!cache_key_addr(&k, IBRES_KEY_IPV6, &h->v6[i]))
			trace_key(&k);
	for (i = 0; i < h->n_gids; i++)
		if (!cache_key_addr(&k, IBRES_KEY_GID, h->gids[i]))
			trace_key(&k);
	if (h->lid && !cache_key_lid(&k, h->lid))
		trace_key(&k);
}
#else
#define trace(...)			  ((void)0)
#define trace_record(h, origin, ttl, ret) ((void)0)
#endif

#define F_MAX_ENTRIES 32
#define F_WAITERS     16
#define F_DEPTH	      3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fwaiter {
	struct cache_waiter w;
	bool pending;
	struct cache_key key;
	struct cache_key lookup; /* what the callback looks up */
	bool do_lookup;
};

struct fstate {
	const uint8_t *p;
	size_t n;
	struct cache c;
	uint64_t now;
	struct fwaiter w[F_WAITERS];
	unsigned depth;
	bool in_fini;
};

static struct fstate *F;

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_cache.c:%d: check failed: %s\n", __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static uint8_t take(struct fstate *s)
{
	if (!s->n)
		return 0;
	s->n--;
	return *s->p++;
}

static bool key_eq(const struct cache_key *a, const struct cache_key *b)
{
	return a->type == b->type && a->len == b->len && !memcmp(a->data, b->data, a->len);
}

/* A name of the small universe: mostly "nodeN" in some case, sometimes odd. */
static void make_name(uint8_t b, char *out, size_t len)
{
	unsigned idx = b & 15;

	if (idx == 15) {
		memset(out, 'A' + (b >> 4), CACHE_KEY_MAX);
		out[CACHE_KEY_MAX] = '\0';
	} else if (idx == 14) {
		snprintf(out, len, "\x01N\\ode\xff");
	} else {
		snprintf(out, len, (b & 0x10) ? "NoDe%u" : "node%u", idx);
	}
}

static void make_addr(uint8_t type, unsigned idx, uint8_t out[16])
{
	memset(out, 0, 16);
	if (type == IBRES_KEY_IPV4) {
		out[0] = 198;
		out[1] = 18;
		out[3] = (uint8_t)idx;
	} else if (type == IBRES_KEY_IPV6) {
		out[0] = 0x20;
		out[1] = 0x01;
		out[15] = (uint8_t)idx;
	} else {
		out[0] = 0xfe;
		out[1] = 0x80;
		out[15] = (uint8_t)idx;
	}
}

/* One key from one byte; sometimes a malformed one. */
static void make_key(uint8_t b, struct cache_key *k)
{
	char name[CACHE_KEY_MAX + 1];
	uint8_t addr[16];
	unsigned idx = (b / 5) % 16;

	switch (b % 5) {
	case 0:
		make_name((uint8_t)(b / 5), name, sizeof(name));
		check(cache_key_name(k, name) == 0);
		break;
	case 1:
		make_addr(IBRES_KEY_IPV4, idx, addr);
		check(cache_key_addr(k, IBRES_KEY_IPV4, addr) == 0);
		break;
	case 2:
		make_addr(IBRES_KEY_IPV6, idx, addr);
		check(cache_key_addr(k, IBRES_KEY_IPV6, addr) == 0);
		break;
	case 3:
		make_addr(IBRES_KEY_GID, idx, addr);
		check(cache_key_addr(k, IBRES_KEY_GID, addr) == 0);
		break;
	default:
		if (idx == 0) { /* malformed: the cache must reject it */
			memset(k, 0, sizeof(*k));
			k->type = (uint8_t)(b & 1 ? 9 : IBRES_KEY_IPV4);
			k->len = (uint8_t)(b & 1 ? 3 : 0);
		} else {
			check(cache_key_lid(k, (uint16_t)idx) == 0);
		}
		break;
	}
}

static void make_record(struct fstate *s, struct ibres_hostrec *h)
{
	uint8_t b = take(s);
	unsigned i;

	memset(h, 0, sizeof(*h));
	h->n_names = b & 3;
	h->n_v4 = (b >> 2) & 3;
	h->n_v6 = (b >> 4) & 1;
	h->n_gids = (b >> 5) & 3;
	for (i = 0; i < h->n_names; i++)
		make_name(take(s), h->names[i], sizeof(h->names[i]));
	for (i = 0; i < h->n_v4; i++)
		make_addr(IBRES_KEY_IPV4, take(s) & 15, (uint8_t *)&h->v4[i]);
	for (i = 0; i < h->n_v6; i++)
		make_addr(IBRES_KEY_IPV6, take(s) & 15, h->v6[i].s6_addr);
	for (i = 0; i < h->n_gids; i++)
		make_addr(IBRES_KEY_GID, take(s) & 15, h->gids[i]);
	if (b & 0x80)
		h->lid = (uint16_t)(take(s) & 15);
	h->qpn = 0x48;
}

static void waiter_done(struct cache_waiter *w, struct cache_entry *e, int status)
{
	struct fwaiter *fw = (struct fwaiter *)w;

	check(fw->pending);
	check(key_eq(&fw->key, &e->key));
	check(status <= 0);
	if (F->in_fini)
		check(status == -ECANCELED);
	fw->pending = false;
	if (fw->do_lookup && F->depth < F_DEPTH) {
		F->depth++;
		cache_lookup(&F->c, &fw->lookup, F->now);
		F->depth--;
	}
}

struct find_arg {
	const struct cache_key *k;
	struct cache_entry *e;
};

static int find_cb(struct cache_entry *e, void *arg)
{
	struct find_arg *a = arg;

	if (!key_eq(&e->key, a->k))
		return 0;
	a->e = e;
	return 1;
}

/* Find without side effects (no LRU update, no expiry). */
static struct cache_entry *find(struct fstate *s, const struct cache_key *k)
{
	struct find_arg a = {k, NULL};

	cache_foreach(&s->c, find_cb, &a);
	return a.e;
}

static int find_host_cb(struct cache_entry *e, void *arg)
{
	struct find_arg *a = arg;

	if (!e->host || !key_eq(&e->host->ident, a->k))
		return 0;
	a->e = e;
	return 1;
}

/* The live host of an identity, wherever its entries are. */
static struct cache_host *find_host(struct fstate *s, const struct cache_key *ident)
{
	struct find_arg a = {ident, NULL};

	cache_foreach(&s->c, find_host_cb, &a);
	return a.e ? a.e->host : NULL;
}

static unsigned record_keys(const struct ibres_hostrec *h, struct cache_key *keys)
{
	unsigned i, n = 0;

	for (i = 0; i < h->n_names; i++)
		if (!cache_key_name(&keys[n], h->names[i]))
			n++;
	for (i = 0; i < h->n_v4; i++)
		n += !cache_key_addr(&keys[n], IBRES_KEY_IPV4, &h->v4[i]);
	for (i = 0; i < h->n_v6; i++)
		n += !cache_key_addr(&keys[n], IBRES_KEY_IPV6, &h->v6[i]);
	for (i = 0; i < h->n_gids; i++)
		n += !cache_key_addr(&keys[n], IBRES_KEY_GID, h->gids[i]);
	if (h->lid)
		n += !cache_key_lid(&keys[n], h->lid);
	return n;
}

static bool rec_equal(const struct ibres_hostrec *a, const struct ibres_hostrec *b)
{
	return a->n_names == b->n_names && a->n_v4 == b->n_v4 && a->n_v6 == b->n_v6 &&
	       a->n_gids == b->n_gids && !memcmp(a->names, b->names, sizeof(a->names)) &&
	       !memcmp(a->v4, b->v4, sizeof(a->v4)) && !memcmp(a->v6, b->v6, sizeof(a->v6)) &&
	       !memcmp(a->gids, b->gids, sizeof(a->gids)) && a->lid == b->lid && a->qpn == b->qpn &&
	       a->pkey == b->pkey && a->ttl == b->ttl;
}

/* After a successful insert: every key is on the record's host, or on a
 * more authoritative one (or the whole insert was ignored for that reason). */
static void check_inserted(struct fstate *s, const struct ibres_hostrec *h, uint8_t origin)
{
	struct cache_key keys[CACHE_HOST_KEYS_MAX], ident;
	struct cache_host *host = NULL;
	struct cache_entry *e;
	unsigned i, n = record_keys(h, keys);

	if (h->n_gids)
		check(cache_key_addr(&ident, IBRES_KEY_GID, h->gids[0]) == 0);
	else
		ident = keys[0];
	host = find_host(s, &ident);
	if (host && host->origin < origin)
		return; /* ignored: a more authoritative record of the host */
	if (host)
		check(rec_equal(&host->rec, h) && host->origin == origin);
	for (i = 0; i < n; i++) {
		e = find(s, &keys[i]);
		check(e && e->host);
		check(e->host == host || e->host->origin < origin);
		check(e->state == IBRES_STATE_RESOLVED || e->state == IBRES_STATE_ROUTED);
	}
}

static struct fwaiter *free_waiter(struct fstate *s, uint8_t b)
{
	struct fwaiter *w = &s->w[b % F_WAITERS];

	return w->pending ? NULL : w;
}

static void add_waiter(struct fstate *s, struct cache_entry *e, uint8_t b)
{
	struct fwaiter *w = free_waiter(s, b);

	if (!e || !w)
		return;
	memset(w, 0, sizeof(*w));
	w->w.done = waiter_done;
	w->pending = true;
	w->key = e->key;
	w->do_lookup = b & 0x10;
	make_key(take(s), &w->lookup);
	cache_add_waiter(e, &w->w);
}

static void step(struct fstate *s)
{
	struct ibres_path_record p;
	struct ibres_hostrec h;
	struct cache_entry *e;
	struct cache_key k;
	uint8_t op = take(s), b;
	int ret;

	s->now += op >> 4;
	trace("op %u now %llu entries %u\n", op % 15, (unsigned long long)s->now, s->c.n_entries);
	switch (op % 15) {
	case 0: {
		uint8_t origin = take(s) % 4; /* 3: invalid */
		uint32_t ttl = take(s) % 8;

		make_record(s, &h);
		ret = cache_insert_host(&s->c, &h, origin, ttl, s->now);
		trace_record(&h, origin, ttl, ret);
		check(ret == 0 || ret == -ENOSPC || ret == -EINVAL);
		if (ret == 0)
			check_inserted(s, &h, origin);
		if (ret == -EINVAL)
			check(origin > IBRES_ORIGIN_FABRIC ||
			      !(h.n_names + h.n_v4 + h.n_v6 + h.n_gids + !!h.lid));
		break;
	}
	case 1:
		make_key(take(s), &k);
		e = cache_lookup(&s->c, &k, s->now);
		if (e)
			check(key_eq(&e->key, &k) && e->expires_ms > s->now);
		break;
	case 2:
		make_key(take(s), &k);
		b = take(s);
		errno = 0;
		e = cache_get_or_create(&s->c, &k, s->now);
		if (!e) {
			check(errno == ENOSPC || errno == EINVAL);
			break;
		}
		check(key_eq(&e->key, &k));
		if (e->state == IBRES_STATE_INIT && (b & 1))
			e->state = IBRES_STATE_QUERYING;
		if (e->state == IBRES_STATE_QUERYING && (b & 2))
			e->expires_ms = s->now + (b >> 2) * 50;
		if (b & 0x80)
			add_waiter(s, e, take(s));
		break;
	case 3:
		make_key(take(s), &k);
		b = take(s);
		e = cache_lookup(&s->c, &k, s->now);
		if (e) {
			cache_set_negative(&s->c, e, b % 4, (b & 4) ? -ENODATA : -ETIMEDOUT,
					   s->now);
			check(e->state == IBRES_STATE_NEGATIVE && !e->host);
		}
		break;
	case 4:
		make_key(take(s), &k);
		b = take(s);
		e = cache_lookup(&s->c, &k, s->now);
		if (e) {
			memset(&p, b, sizeof(p));
			cache_set_route(e, b & 3, &p, b % 5, s->now);
		}
		break;
	case 5:
		make_key(take(s), &k);
		b = take(s);
		add_waiter(s, cache_lookup(&s->c, &k, s->now), b);
		break;
	case 6: {
		struct fwaiter *w = &s->w[take(s) % F_WAITERS];

		if (w->pending) {
			cache_cancel_waiter(&w->w);
			w->pending = false;
		}
		break;
	}
	case 7:
		cache_sweep(&s->c, s->now);
		break;
	case 8:
		make_key(take(s), &k);
		cache_flush(&s->c, &k);
		break;
	case 9:
		if (take(s) & 1)
			cache_flush(&s->c, NULL);
		break;
	case 10: {
		uint8_t gid[16];

		make_addr(IBRES_KEY_GID, take(s) & 15, gid);
		cache_remove_host_by_gid(&s->c, gid);
		break;
	}
	case 11:
		cache_remove_origin(&s->c, take(s) % 3);
		break;
	case 12:
		s->now += (uint64_t)take(s) * 37;
		break;
	case 13:
		make_key(take(s), &k);
		b = take(s);
		e = cache_lookup(&s->c, &k, s->now);
		if (e)
			cache_complete(e, -(int)(b % 64));
		break;
	default: {
		char buf[CACHE_KEY_STR_MAX], small[9];

		make_key(take(s), &k);
		cache_key_str(&k, buf, sizeof(buf));
		check(strlen(buf) < sizeof(buf));
		cache_key_str(&k, small, sizeof(small));
		check(strlen(small) < sizeof(small) && !strncmp(small, buf, strlen(small)));
		break;
	}
	}
	check(cache_check(&s->c) == 0);
	check(s->c.n_entries <= F_MAX_ENTRIES);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fstate state;
	struct fstate *s = &state;
	unsigned i;

	memset(s, 0, sizeof(*s));
	F = s;
	s->p = data;
	s->n = size;
	s->now = 1000;
	if (cache_init(&s->c, F_MAX_ENTRIES))
		abort();
	while (s->n)
		step(s);
	s->in_fini = true;
	cache_fini(&s->c);
	for (i = 0; i < F_WAITERS; i++)
		check(!s->w[i].pending);
	return 0;
}
