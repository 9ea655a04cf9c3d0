// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the host store: the input is a program of store
 * operations (insert, look-ups, negative answers, paths, sweep, flush,
 * removals, a new bound, time steps, walks) on a store of at most a few
 * learned hosts over a small universe of keys, so that hosts collide,
 * addresses move and the bound evicts all the time. After every operation
 * the learned hosts stay within the bound; after every few operations and
 * at the end store_check() must pass, every key of the index is listed by
 * its host and none is also a negative answer. An insert must fail with
 * -EINVAL exactly when the record breaks the contract (and then change
 * nothing); otherwise every key of the record is on the new host or on a
 * more authoritative one, and the new host's record is exactly the one
 * inserted. Any violation abort()s.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hoststore.h"

/* Build with -DFUZZ_HOSTSTORE_TRACE to print the operations of an input. */
#ifdef FUZZ_HOSTSTORE_TRACE
#define trace(...) fprintf(stderr, __VA_ARGS__)
#else
#define trace(...) ((void)0)
#endif

#define F_MAX_HOSTS 6
#define F_KEYS_MAX  512 /* keys a walk can meet: the universe is smaller */
#define CHECK_EVERY 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fstate {
	const uint8_t *p;
	size_t n;
	struct host_store s;
	uint64_t now;
	unsigned steps;
};

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_hoststore.c:%d: check failed: %s\n", __LINE__,       \
				#cond);                                                            \
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

/* A name of the small universe: mostly "nodeN" in some case, sometimes odd,
 * the longest there is, or empty (which an insert must refuse). */
static void make_name(uint8_t b, char *out, size_t len)
{
	unsigned idx = b & 15;

	if (idx == 15) {
		memset(out, 'A' + (b >> 4), IBRES_NAME_MAX);
		out[IBRES_NAME_MAX] = '\0';
	} else if (idx == 14) {
		snprintf(out, len, "\x01N\\ode\xff");
	} else if (idx == 13) {
		out[0] = '\0';
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
	} else if (idx < 8) {
		/* IB's default subnet prefix, ::/64 and another: GID 0 kept in 8
		 * bytes or whole (hoststore_impl.h) */
		out[0] = 0xfe;
		out[1] = 0x80;
		out[15] = (uint8_t)idx;
	} else if (idx >= 12) {
		out[0] = 0xfe;
		out[1] = 0xc0;
		out[15] = (uint8_t)idx;
	} else {
		out[15] = (uint8_t)idx;
	}
}

/* One key from one byte; sometimes a malformed one. */
static void make_key(uint8_t b, struct host_key *k)
{
	char name[IBRES_NAME_MAX + 1];
	uint8_t addr[16];
	unsigned idx = (b / 5) % 16;

	switch (b % 5) {
	case 0:
		make_name((uint8_t)(b / 5), name, sizeof(name));
		if (host_key_name(k, name)) { /* the empty name: malformed */
			memset(k, 0, sizeof(*k));
			k->type = IBRES_KEY_NAME;
		}
		break;
	case 1:
		make_addr(IBRES_KEY_IPV4, idx, addr);
		check(host_key_addr(k, IBRES_KEY_IPV4, addr) == 0);
		break;
	case 2:
		make_addr(IBRES_KEY_IPV6, idx, addr);
		check(host_key_addr(k, IBRES_KEY_IPV6, addr) == 0);
		break;
	case 3:
		make_addr(IBRES_KEY_GID, idx, addr);
		check(host_key_addr(k, IBRES_KEY_GID, addr) == 0);
		break;
	default:
		if (idx == 0) { /* malformed: the store must reject it */
			memset(k, 0, sizeof(*k));
			k->type = (uint8_t)(b & 1 ? 9 : IBRES_KEY_IPV4);
			k->len = (uint8_t)(b & 1 ? 3 : 0);
		} else {
			check(host_key_lid(k, (uint16_t)idx, HOST_FABRIC_NONE) == 0);
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
	h->pkey = 0xffff;
}

/* What store_insert must accept, from the contract in hoststore.h. */
static bool record_valid(const struct ibres_hostrec *h, uint8_t origin)
{
	unsigned i;

	if (origin > IBRES_ORIGIN_FABRIC || h->n_names > IBRES_HOST_NAMES_MAX ||
	    h->n_v4 > IBRES_HOST_ADDRS_MAX || h->n_v6 > IBRES_HOST_ADDRS_MAX ||
	    h->n_gids > IBRES_HOST_GIDS_MAX)
		return false;
	for (i = 0; i < h->n_names; i++) {
		size_t len = strnlen(h->names[i], sizeof(h->names[i]));

		if (len == 0 || len > IBRES_NAME_MAX)
			return false;
	}
	return h->n_names + h->n_v4 + h->n_v6 + h->n_gids + (h->lid ? 1 : 0) > 0;
}

static uint8_t fabric_of(uint32_t heard_on)
{
	return heard_on ? (uint8_t)__builtin_ctz(heard_on) : HOST_FABRIC_NONE;
}

/* Is @e one of @h's host's endpoints? */
static bool same_host(const struct host *h, const struct host *e)
{
	for (const struct host *x = h; x; x = host_next_endpoint(h, x))
		if (x == e)
			return true;
	return false;
}

static unsigned record_keys(const struct ibres_hostrec *h, uint8_t fabric, struct host_key *keys)
{
	unsigned i, n = 0;

	for (i = 0; i < h->n_names; i++)
		check(host_key_name(&keys[n++], h->names[i]) == 0);
	for (i = 0; i < h->n_v4; i++)
		check(host_key_addr(&keys[n++], IBRES_KEY_IPV4, &h->v4[i]) == 0);
	for (i = 0; i < h->n_v6; i++)
		check(host_key_addr(&keys[n++], IBRES_KEY_IPV6, &h->v6[i]) == 0);
	for (i = 0; i < h->n_gids; i++)
		check(host_key_addr(&keys[n++], IBRES_KEY_GID, h->gids[i]) == 0);
	if (h->lid)
		check(host_key_lid(&keys[n++], h->lid, fabric) == 0);
	return n;
}

/* gids[0], else the first name, IPv4, IPv6 address, else the LID. */
/* A record's identity as the store keeps it (hoststore.h): its first GID
 * and its P_Key (a port's partitions are endpoints of their own), else its
 * first name, IPv4, IPv6 address or LID. */
static void record_ident(const struct ibres_hostrec *h, struct host_key *k)
{
	if (h->n_gids) {
		check(host_key_addr(k, IBRES_KEY_GID, h->gids[0]) == 0);
		k->data[16] = (uint8_t)(h->pkey >> 8);
		k->data[17] = (uint8_t)h->pkey;
		k->len = 18;
	} else if (h->n_names)
		check(host_key_name(k, h->names[0]) == 0);
	else if (h->n_v4)
		check(host_key_addr(k, IBRES_KEY_IPV4, &h->v4[0]) == 0);
	else if (h->n_v6)
		check(host_key_addr(k, IBRES_KEY_IPV6, &h->v6[0]) == 0);
	else
		check(host_key_lid(k, h->lid, HOST_FABRIC_NONE) == 0);
}

static void host_ident(const struct host *h, struct host_key *k)
{
	static struct ibres_hostrec r;

	host_record(h, &r, 0);
	record_ident(&r, k);
}

/* The expanded record of @h is @want, but for the ttl. */
static bool record_same(const struct host *h, const struct ibres_hostrec *want, uint64_t now)
{
	static struct ibres_hostrec r, w;
	unsigned i;

	memset(&r, 0xa5, sizeof(r));
	host_record(h, &r, now);
	w = *want;
	w.ttl = r.ttl;
	if (r.n_names != w.n_names)
		return false;
	for (i = 0; i < r.n_names; i++)
		if (strcmp(r.names[i], w.names[i]))
			return false;
	return !memcmp(&r.n_names, &w.n_names, sizeof(r) - offsetof(struct ibres_hostrec, n_names));
}

/* ---- walks: finding things without changing the store -------------------- */

struct walk {
	unsigned n;
	struct host_key keys[F_KEYS_MAX];
	const struct host *hosts[F_KEYS_MAX]; /* NULL: a negative answer */
};

static int walk_cb(const struct host_key *k, const struct host *h, int neg_status,
		   uint64_t expires_ms, void *arg)
{
	struct walk *w = arg;

	check(w->n < F_KEYS_MAX);
	check(host_key_valid(k));
	if (h) {
		check(neg_status == 0 && expires_ms == host_expires_ms(h));
		check(host_has_key(h, k));
	} else {
		check(neg_status < 0);
	}
	w->keys[w->n] = *k;
	w->hosts[w->n] = h;
	w->n++;
	return 0;
}

static struct walk W;

static void walk(struct fstate *s)
{
	W.n = 0;
	store_foreach(&s->s, 0, walk_cb, &W);
}

/* The host holding @k, or NULL; *@neg: whether @k is a negative answer. */
static const struct host *find(const struct host_key *k, bool *neg)
{
	const struct host *found = NULL;
	unsigned i;

	if (neg)
		*neg = false;
	for (i = 0; i < W.n; i++) {
		if (!host_key_eq(&W.keys[i], k))
			continue;
		if (W.hosts[i])
			found = W.hosts[i];
		else if (neg)
			*neg = true;
	}
	return found;
}

struct ident_find {
	const struct host_key *id;
	const struct host *found;
};

static void ident_cb(void *arg, struct host *h)
{
	struct ident_find *f = arg;
	struct host_key k;

	host_ident(h, &k);
	if (host_key_eq(&k, f->id))
		f->found = h;
}

/* The host of identity @id, or NULL: every host, including an endpoint of a
 * host that holds no key (it shares them all, and a host of higher
 * authority kept them when its siblings went: hoststore_check.c allows it,
 * invisible until refreshed, replaced or expired). */
static const struct host *find_ident(struct fstate *s, const struct host_key *id)
{
	struct ident_find f = { .id = id, .found = NULL };

	store_foreach_host(&s->s, ident_cb, &f);
	return f.found;
}

/* Invariants: the counts after every operation; the walk's and
 * store_check()'s (which also finds a key indexed twice) after every
 * CHECK_EVERY-th operation and at the end. A broken index stays broken, so
 * a later check still sees it, and walking after every operation took most
 * of the time. (An operation whose own checks need the walk walks.) */
static void check_store(struct fstate *s)
{
	unsigned i, j, hosts_keys = 0, negs = 0;

	check(s->s.stats.learned <= s->s.max_hosts);
	check(s->s.stats.keys == s->s.n_keys);
	if (++s->steps % CHECK_EVERY && s->n)
		return;
	check(store_check(&s->s) == 0);
	walk(s);
	for (i = 0; i < W.n; i++) {
		if (W.hosts[i]) {
			hosts_keys++;
			continue;
		}
		negs++;
		for (j = 0; j < W.n; j++) /* a negative answer is no other key */
			check(j == i || !host_key_eq(&W.keys[i], &W.keys[j]));
	}
	check(hosts_keys == s->s.n_keys && negs == s->s.stats.negatives);
	check(s->s.stats.negatives <= STORE_NEGATIVE_MAX);
}

static void op_insert(struct fstate *s)
{
	uint8_t o = take(s), t = take(s), g = take(s);
	uint8_t origin = o & 3; /* 3: invalid */
	uint32_t ttl = t % 8;
	struct host_key keys[HOST_KEYS_MAX], id;
	static struct ibres_hostrec h;
	struct store_stats before = s->s.stats;
	const struct host *held;
	struct host *out = NULL;
	unsigned i, n;
	bool valid;
	int ret;

	make_record(s, &h);
	if ((o & 0x40) && h.n_names)
		memset(h.names[h.n_names - 1], 'x', sizeof(h.names[0])); /* unterminated */
	if (o & 0x20)
		h.n_v4 = IBRES_HOST_ADDRS_MAX + 1;
	valid = record_valid(&h, origin);
	/* heard on none, or on local endpoints 0 and 2 (one subnet) or either */
	uint32_t heard_on = (uint32_t)(o >> 2) & 5;
	/* a host alone, or one of two hosts of several endpoints */
	uint64_t rails = (o >> 4) & 1 ? 1 + (o >> 7) : 0;

	ret = store_insert(&s->s, &h,
			   &(struct store_put){.origin = origin,
					       .heard_on = heard_on,
					       .rails = rails,
					       .ttl_s = ttl,
					       .grp_mtu = g & 7,
					       .grp_rate = g >> 3,
					       .announces = t >> 7,
					       .says = t >> 6 & 1},
			   s->now, &out);
	trace("insert origin %u ttl %u grp %u -> %d (%s)\n", origin, ttl, g & 7, ret,
	      out ? "host" : "none");
	if (!valid) {
		check(ret == -EINVAL && !out);
		check(!memcmp(&before, &s->s.stats, sizeof(before)));
		return;
	}
	check(ret == 0);
	walk(s);
	n = record_keys(&h, out ? fabric_of(host_heard_on(out)) : fabric_of(heard_on), keys);
	record_ident(&h, &id);
	if (!out) {
		/* ignored: a more authoritative host of this identity, or every
		 * key is held by more authoritative hosts */
		held = find_ident(s, &id);
		if (held && host_origin(held) < origin)
			return;
		for (i = 0; i < n; i++) {
			held = find(&keys[i], NULL);
			check(held && (host_origin(held) < origin || keys[i].type == IBRES_KEY_NAME ||
				       keys[i].type == IBRES_KEY_GID || keys[i].type == IBRES_KEY_LID));
		}
		return;
	}
	check(find_ident(s, &id) == out);
	check(host_origin(out) == origin);
	check(record_same(out, &h, s->now));
	if (g & 7) {
		uint8_t mtu, rate;

		host_group(out, &mtu, &rate);
		check(mtu == (g & 7) && rate == (g >> 3));
	}
	for (i = 0; i < n; i++) {
		bool neg;

		held = find(&keys[i], &neg);
		check(held && !neg);
		/* or a name another endpoint of its host leads to */
		check(held == out || host_origin(held) < origin ||
		      ((keys[i].type == IBRES_KEY_NAME || keys[i].type == IBRES_KEY_GID ||
			keys[i].type == IBRES_KEY_LID) &&
		       same_host(out, held)));
	}
}

static void op_lookup(struct fstate *s, bool count)
{
	struct host_key k;
	struct host *h;

	make_key(take(s), &k);
	h = store_lookup(&s->s, &k, s->now, count);
	trace("lookup count %d -> %s\n", count, h ? "host" : "none");
	if (h) {
		check(host_key_valid(&k));
		check(host_has_key(h, &k));
		check(host_expires_ms(h) > s->now);
	}
}

static void op_negative(struct fstate *s)
{
	uint8_t b = take(s);
	struct host_key k;
	const struct host *held;
	int ret;
	bool neg;

	make_key(take(s), &k);
	walk(s);
	held = find(&k, &neg);
	if (b & 1) {
		int status = b & 2 ? -ENODATA : b & 4 ? -ETIMEDOUT : (int)(b >> 4);
		uint32_t ttl = (b >> 3) % 5;

		ret = store_set_negative(&s->s, &k, ttl, status, s->now);
		trace("set_negative ttl %u status %d -> %d\n", ttl, status, ret);
		check(ret == (host_key_valid(&k) ? 0 : -EINVAL));
		if (ret == 0 && ttl && !held) {
			ret = store_negative(&s->s, &k, s->now, false);
			check(ret == (status < 0 ? status : -ENODATA));
		}
		if (held) /* a key a host holds is never negative */
			check(store_negative(&s->s, &k, s->now, false) == 0);
	} else {
		ret = store_negative(&s->s, &k, s->now, b & 2);
		trace("negative -> %d\n", ret);
		check(ret <= 0);
		if (ret < 0)
			check(neg && !held);
		if (!neg)
			check(ret == 0);
	}
}

static void op_route(struct fstate *s)
{
	uint8_t b = take(s);
	struct ibres_path_record p;
	const struct ibres_path_record *got;
	struct host_key k;
	struct host *h;
	int ep = b & 3;

	make_key(take(s), &k);
	h = store_lookup(&s->s, &k, s->now, false);
	if (!h)
		return;
	if (b & 0x80) {
		for (ep = 0; ep < 4; ep++) {
			got = host_route(&s->s, h, ep, s->now);
			check(!got || got->reserved[0] == (uint8_t)ep);
		}
		return;
	}
	memset(&p, b, sizeof(p));
	p.reserved[0] = (uint8_t)ep;
	check(store_set_route(&s->s, h, ep, &p, (b >> 2) % 5, s->now) == 0);
	trace("route ep %d ttl %u\n", ep, (b >> 2) % 5);
	got = host_route(&s->s, h, ep, s->now);
	check(got && !memcmp(got, &p, sizeof(p)));
}

struct stop_arg {
	unsigned calls, stop;
};

static int stop_cb(const struct host_key *k, const struct host *h, int neg_status,
		   uint64_t expires_ms, void *arg)
{
	struct stop_arg *a = arg;

	(void)k;
	(void)h;
	(void)neg_status;
	(void)expires_ms;
	return ++a->calls == a->stop;
}

/* A walk that stops early, and the read-only accessors on what it meets. */
static void op_walk(struct fstate *s)
{
	char buf[HOST_KEY_STR_MAX], small[9], name[IBRES_NAME_MAX + 1];
	struct stop_arg a = {0, take(s) % 8};
	static struct ibres_hostrec r;
	uint8_t mtu, rate;
	unsigned i;

	unsigned at = store_foreach(&s->s, 0, stop_cb, &a);
	struct stop_arg rest = {0, 0};

	walk(s);
	check(a.stop ? a.calls == (a.stop < W.n ? a.stop : W.n) : a.calls == W.n);
	/* a walk from where it stopped visits that key and the rest */
	store_foreach(&s->s, at, stop_cb, &rest);
	check(rest.calls == (a.stop && a.stop <= W.n ? W.n - a.stop + 1 : 0));
	check(store_bytes(&s->s) > 0);
	for (i = 0; i < W.n; i++) {
		host_key_str(&W.keys[i], buf, sizeof(buf));
		check(strlen(buf) < sizeof(buf));
		host_key_str(&W.keys[i], small, sizeof(small));
		check(strlen(small) < sizeof(small) && !strncmp(small, buf, strlen(small)));
		if (!W.hosts[i])
			continue;
		host_record(W.hosts[i], &r, s->now);
		host_name(W.hosts[i], name);
		check(r.n_names ? !strcmp(name, r.names[0]) : !name[0]);
		check(host_lid(W.hosts[i]) == r.lid);
		check(r.n_gids ? !memcmp(host_gid(W.hosts[i], (uint8_t[16]){0}), r.gids[0], 16)
			       : !memcmp(host_gid(W.hosts[i], (uint8_t[16]){0}), (uint8_t[16]){0},
					 16));
		host_group(W.hosts[i], &mtu, &rate);
	}
}

static void step(struct fstate *s)
{
	uint8_t op = take(s), b;
	struct host_key k;
	uint8_t gid[16];

	s->now += op >> 4;
	trace("op %u now %llu hosts %llu keys %u\n", op % 16, (unsigned long long)s->now,
	      (unsigned long long)s->s.stats.hosts, s->s.n_keys);
	switch (op % 16) {
	case 0:
	case 1:
		op_insert(s);
		break;
	case 2:
		op_lookup(s, true);
		break;
	case 3:
		op_lookup(s, false);
		break;
	case 4:
		op_negative(s);
		break;
	case 5:
		op_route(s);
		break;
	case 6:
		b = take(s);
		make_addr(IBRES_KEY_GID, b & 15, gid);
		store_drop_routes(&s->s, (int)((b >> 4) % 5) - 1, b & 0x80 ? NULL : gid);
		break;
	case 7:
		store_sweep(&s->s, s->now);
		break;
	case 8:
		make_key(take(s), &k);
		store_flush(&s->s, &k);
		walk(s);
		if (host_key_valid(&k)) {
			bool neg;
			const struct host *h = find(&k, &neg);

			check(!neg && (!h || host_origin(h) != IBRES_ORIGIN_FABRIC));
		}
		break;
	case 9:
		if (take(s) & 1) {
			unsigned i;

			store_flush(&s->s, NULL);
			check(s->s.stats.learned == 0 && s->s.stats.negatives == 0);
			walk(s);
			for (i = 0; i < W.n; i++)
				check(W.hosts[i] && host_origin(W.hosts[i]) != IBRES_ORIGIN_FABRIC);
		}
		break;
	case 10:
		make_addr(IBRES_KEY_GID, take(s) & 15, gid);
		store_remove_gid(&s->s, gid);
		break;
	case 11:
		b = take(s) % 4;
		store_remove_origin(&s->s, b);
		walk(s);
		for (unsigned i = 0; i < W.n; i++)
			check(!W.hosts[i] || host_origin(W.hosts[i]) != b);
		break;
	case 12:
		b = take(s) % 10; /* 0: ignored */
		store_set_max_hosts(&s->s, b);
		check(s->s.max_hosts == (b ? b : s->s.max_hosts));
		break;
	case 13:
		b = take(s);
		s->now += b == 255 ? 1000000 : (uint64_t)b * 37;
		break;
	case 14:
		/* the missed GOODBYEs' mark, and the check that follows */
		b = take(s);
		if (b & 1) {
			store_mark_unheard(&s->s);
		} else {
			unsigned eps;

			store_shorten_unheard(&s->s, (int)((b >> 1) % 5) - 1,
					      s->now + (uint64_t)(b >> 4) * 37);
			check(store_count_unheard(&s->s, STORE_ALL_FABRICS, &eps) == 0);
		}
		break;
	default:
		op_walk(s);
		break;
	}
	check_store(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fstate state;
	struct fstate *s = &state;

	memset(s, 0, sizeof(*s));
	s->p = data;
	s->n = size;
	s->now = 1000;
	if (store_init(&s->s, F_MAX_HOSTS))
		abort();
	while (s->n)
		step(s);
	store_fini(&s->s);
	return 0;
}
