// SPDX-License-Identifier: MIT
/*
 * The host store (see hoststore.h for the contract).
 *
 * A host is one allocation: a fixed header, then its GIDs, IPv6 and IPv4
 * addresses, then its names as (length, bytes). Key number i of a host is
 * counted in the order names, IPv4, IPv6, GIDs, LID, and an index slot holds
 * (host, key number, 32 bits of the key's hash): 16 bytes per key, and the
 * key's bytes are compared against the record itself. The index is open
 * addressing with linear probing and backward-shift deletion (no tombstones),
 * kept under 3/4 full.
 */
#include "core/hoststore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_MIN 64u
#define IDENTS_MIN 64u
#define NEG_BUCKETS 4096u

struct host_path {
	struct host_path *next;
	int ep;
	uint64_t expires_ms;
	struct ibres_path_record path;
};

struct host {
	struct host *lru_prev, *lru_next; /* learned hosts only */
	struct host *id_next;             /* identity chain */
	struct host_path *paths;
	uint64_t expires_ms;
	uint32_t qpn;
	uint16_t lid, pkey;
	uint8_t origin, grp_mtu, grp_rate;
	uint8_t n_names, n_v4, n_v6, n_gids;
	uint8_t n_indexed; /* slots pointing here */
	uint8_t data[];    /* gids, v6, v4, then names as (len, bytes) */
};

struct store_slot {
	struct host *h; /* NULL: empty */
	uint32_t hash;
	uint8_t kidx;
};

struct store_neg {
	struct store_neg *next;          /* chain */
	struct store_neg *older, *newer; /* FIFO for the bound */
	uint64_t expires_ms;
	int status;
	uint32_t hash;
	uint8_t type, len;
	uint8_t data[];
};

_Static_assert(sizeof(struct store_slot) == 16, "an index slot is 16 bytes");

static uint64_t deadline(uint64_t now_ms, uint32_t ttl_s)
{
	uint64_t d = (uint64_t)ttl_s * 1000;

	if (!ttl_s || now_ms > UINT64_MAX - d)
		return UINT64_MAX;
	return now_ms + d;
}

static bool origin_pinned(uint8_t origin)
{
	return origin == IBRES_ORIGIN_LOCAL || origin == IBRES_ORIGIN_STATIC;
}

/* Lower is more authoritative: LOCAL (0) > STATIC (1) > FABRIC (2). */
static unsigned origin_rank(uint8_t origin)
{
	return origin;
}

static unsigned pow2_at_least(unsigned n, unsigned min)
{
	unsigned p = min;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

/* ---- the compact record ------------------------------------------------ */

static const uint8_t *h_gid(const struct host *h, unsigned i)
{
	return h->data + 16 * i;
}

static const uint8_t *h_v6(const struct host *h, unsigned i)
{
	return h->data + 16 * (h->n_gids + i);
}

static const uint8_t *h_v4(const struct host *h, unsigned i)
{
	return h->data + 16 * (h->n_gids + h->n_v6) + 4 * i;
}

/* Name @i as (pointer, length). */
static const uint8_t *h_name(const struct host *h, unsigned i, unsigned *len)
{
	const uint8_t *p = h->data + 16 * (h->n_gids + h->n_v6) + 4 * h->n_v4;

	while (i--)
		p += 1 + *p;
	*len = *p;
	return p + 1;
}

static unsigned h_nkeys(const struct host *h)
{
	return h->n_names + h->n_v4 + h->n_v6 + h->n_gids + (h->lid ? 1 : 0);
}

/* Key @i of @h into @k. */
static void h_key(const struct host *h, unsigned i, struct host_key *k)
{
	const uint8_t *p;
	unsigned len;

	if (i < h->n_names) {
		p = h_name(h, i, &len);
		k->type = IBRES_KEY_NAME;
		k->len = (uint8_t)len;
		for (unsigned j = 0; j < len; j++)
			k->data[j] = p[j] >= 'A' && p[j] <= 'Z' ? (uint8_t)(p[j] - 'A' + 'a') : p[j];
		return;
	}
	i -= h->n_names;
	if (i < h->n_v4) {
		host_key_addr(k, IBRES_KEY_IPV4, h_v4(h, i));
		return;
	}
	i -= h->n_v4;
	if (i < h->n_v6) {
		host_key_addr(k, IBRES_KEY_IPV6, h_v6(h, i));
		return;
	}
	i -= h->n_v6;
	if (i < h->n_gids) {
		host_key_addr(k, IBRES_KEY_GID, h_gid(h, i));
		return;
	}
	host_key_lid(k, h->lid);
}

/* Is key @i of @h equal to @k? Without building the key. */
static bool h_key_is(const struct host *h, unsigned i, const struct host_key *k)
{
	const uint8_t *p;
	unsigned len;

	if (i < h->n_names) {
		if (k->type != IBRES_KEY_NAME)
			return false;
		p = h_name(h, i, &len);
		if (len != k->len)
			return false;
		for (unsigned j = 0; j < len; j++) {
			uint8_t c = p[j] >= 'A' && p[j] <= 'Z' ? (uint8_t)(p[j] - 'A' + 'a') : p[j];

			if (c != k->data[j])
				return false;
		}
		return true;
	}
	i -= h->n_names;
	if (i < h->n_v4)
		return k->type == IBRES_KEY_IPV4 && !memcmp(h_v4(h, i), k->data, 4);
	i -= h->n_v4;
	if (i < h->n_v6)
		return k->type == IBRES_KEY_IPV6 && !memcmp(h_v6(h, i), k->data, 16);
	i -= h->n_v6;
	if (i < h->n_gids)
		return k->type == IBRES_KEY_GID && !memcmp(h_gid(h, i), k->data, 16);
	return k->type == IBRES_KEY_LID && h->lid && k->data[0] == (uint8_t)(h->lid >> 8) &&
	       k->data[1] == (uint8_t)h->lid;
}

/* The identity key: the first GID, else key 0. */
static void h_ident(const struct host *h, struct host_key *k)
{
	if (h->n_gids)
		host_key_addr(k, IBRES_KEY_GID, h_gid(h, 0));
	else
		h_key(h, 0, k);
}

static void rec_ident(const struct ibres_hostrec *r, struct host_key *k)
{
	if (r->n_gids)
		host_key_addr(k, IBRES_KEY_GID, r->gids[0]);
	else if (r->n_names)
		host_key_name(k, r->names[0]);
	else if (r->n_v4)
		host_key_addr(k, IBRES_KEY_IPV4, &r->v4[0]);
	else if (r->n_v6)
		host_key_addr(k, IBRES_KEY_IPV6, &r->v6[0]);
	else
		host_key_lid(k, r->lid);
}

static int rec_validate(const struct ibres_hostrec *r)
{
	if (r->n_names > IBRES_HOST_NAMES_MAX || r->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    r->n_v6 > IBRES_HOST_ADDRS_MAX || r->n_gids > IBRES_HOST_GIDS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < r->n_names; i++) {
		size_t len = strnlen(r->names[i], sizeof(r->names[i]));

		if (len == 0 || len > HOST_KEY_MAX)
			return -EINVAL;
	}
	return r->n_names + r->n_v4 + r->n_v6 + r->n_gids + (r->lid ? 1 : 0) ? 0 : -EINVAL;
}

static struct host *host_pack(const struct ibres_hostrec *r, uint8_t origin)
{
	size_t size = sizeof(struct host) + 16 * (r->n_gids + r->n_v6) + 4 * r->n_v4;
	struct host *h;
	uint8_t *p;

	for (unsigned i = 0; i < r->n_names; i++)
		size += 1 + strlen(r->names[i]);
	h = calloc(1, size);
	if (!h)
		return NULL;
	h->qpn = r->qpn;
	h->lid = r->lid;
	h->pkey = r->pkey;
	h->origin = origin;
	h->n_names = (uint8_t)r->n_names;
	h->n_v4 = (uint8_t)r->n_v4;
	h->n_v6 = (uint8_t)r->n_v6;
	h->n_gids = (uint8_t)r->n_gids;
	p = h->data;
	for (unsigned i = 0; i < r->n_gids; i++, p += 16)
		memcpy(p, r->gids[i], 16);
	for (unsigned i = 0; i < r->n_v6; i++, p += 16)
		memcpy(p, &r->v6[i], 16);
	for (unsigned i = 0; i < r->n_v4; i++, p += 4)
		memcpy(p, &r->v4[i], 4);
	for (unsigned i = 0; i < r->n_names; i++) {
		size_t len = strlen(r->names[i]);

		*p++ = (uint8_t)len;
		memcpy(p, r->names[i], len);
		p += len;
	}
	return h;
}

static void paths_free(struct host_path *p)
{
	while (p) {
		struct host_path *next = p->next;

		free(p);
		p = next;
	}
}

/* ---- the key index ------------------------------------------------------ */

/* The slot holding @k, or -1. */
static long slot_find(const struct host_store *s, const struct host_key *k, uint32_t hash)
{
	unsigned i = hash & s->slot_mask;

	for (unsigned n = 0; n <= s->slot_mask; n++, i = (i + 1) & s->slot_mask) {
		const struct store_slot *sl = &s->slots[i];

		if (!sl->h)
			return -1;
		if (sl->hash == hash && h_key_is(sl->h, sl->kidx, k))
			return (long)i;
	}
	return -1;
}

static void slot_put(struct store_slot *slots, unsigned mask, struct host *h, uint8_t kidx,
		     uint32_t hash)
{
	unsigned i = hash & mask;

	while (slots[i].h)
		i = (i + 1) & mask;
	slots[i] = (struct store_slot){ .h = h, .hash = hash, .kidx = kidx };
}

/* Backward-shift deletion: later members of the probe run move up. */
static void slot_del(struct host_store *s, unsigned i)
{
	unsigned j = i, mask = s->slot_mask;

	s->slots[i].h->n_indexed--;
	s->n_keys--;
	for (;;) {
		unsigned home;

		j = (j + 1) & mask;
		if (!s->slots[j].h)
			break;
		home = s->slots[j].hash & mask;
		/* does home lie cyclically in (i, j]? then it stays */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i].h = NULL;
}

static int slots_reserve(struct host_store *s, unsigned more)
{
	unsigned want = s->n_keys + more, cap = s->slot_mask + 1, ncap;
	struct store_slot *ns;

	if ((uint64_t)want * 4 <= (uint64_t)cap * 3)
		return 0;
	ncap = pow2_at_least(want + want / 3 + 1, cap * 2);
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (unsigned i = 0; i < cap; i++)
		if (s->slots[i].h)
			slot_put(ns, ncap - 1, s->slots[i].h, s->slots[i].kidx, s->slots[i].hash);
	free(s->slots);
	s->slots = ns;
	s->slot_mask = ncap - 1;
	return 0;
}

/* ---- hosts: identity index, LRU ---------------------------------------- */

static uint32_t key_hash32(const struct host_store *s, const struct host_key *k)
{
	return (uint32_t)host_key_hash(&s->kh, k);
}

static unsigned ident_bucket(const struct host_store *s, const struct host_key *k,
			     unsigned mask)
{
	return (unsigned)(host_key_hash(&s->kh, k) >> 32) & mask;
}

static struct host *ident_find(const struct host_store *s, const struct host_key *id)
{
	struct host_key k;

	for (struct host *h = s->idents[ident_bucket(s, id, s->ident_mask)]; h; h = h->id_next) {
		h_ident(h, &k);
		if (host_key_eq(&k, id))
			return h;
	}
	return NULL;
}

static int idents_reserve(struct host_store *s)
{
	unsigned cap = s->ident_mask + 1, ncap;
	struct host **nb;

	if (s->stats.hosts + 1 <= cap)
		return 0;
	ncap = cap * 2;
	nb = calloc(ncap, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (unsigned i = 0; i < cap; i++) {
		struct host *h = s->idents[i], *next;

		for (; h; h = next) {
			struct host_key k;
			unsigned b;

			next = h->id_next;
			h_ident(h, &k);
			b = ident_bucket(s, &k, ncap - 1);
			h->id_next = nb[b];
			nb[b] = h;
		}
	}
	free(s->idents);
	s->idents = nb;
	s->ident_mask = ncap - 1;
	return 0;
}

static void ident_link(struct host_store *s, struct host *h)
{
	struct host_key k;
	unsigned b;

	h_ident(h, &k);
	b = ident_bucket(s, &k, s->ident_mask);
	h->id_next = s->idents[b];
	s->idents[b] = h;
}

static void ident_unlink(struct host_store *s, struct host *h)
{
	struct host_key k;
	struct host **pp;

	h_ident(h, &k);
	for (pp = &s->idents[ident_bucket(s, &k, s->ident_mask)]; *pp; pp = &(*pp)->id_next)
		if (*pp == h) {
			*pp = h->id_next;
			return;
		}
}

static void lru_unlink(struct host_store *s, struct host *h)
{
	if (h->lru_prev)
		h->lru_prev->lru_next = h->lru_next;
	else
		s->lru_head = h->lru_next;
	if (h->lru_next)
		h->lru_next->lru_prev = h->lru_prev;
	else
		s->lru_tail = h->lru_prev;
	h->lru_prev = h->lru_next = NULL;
}

static void lru_append(struct host_store *s, struct host *h)
{
	h->lru_next = NULL;
	h->lru_prev = s->lru_tail;
	if (s->lru_tail)
		s->lru_tail->lru_next = h;
	else
		s->lru_head = h;
	s->lru_tail = h;
}

/* Remove every slot of @h, unlink it and free it. Returns the slots removed. */
static unsigned host_remove(struct host_store *s, struct host *h)
{
	unsigned n = 0, nk = h_nkeys(h);
	struct host_key k;

	for (unsigned i = 0; i < nk && h->n_indexed; i++) {
		long at;

		h_key(h, i, &k);
		at = slot_find(s, &k, key_hash32(s, &k));
		if (at >= 0 && s->slots[at].h == h) {
			slot_del(s, (unsigned)at);
			n++;
		}
	}
	ident_unlink(s, h);
	if (!origin_pinned(h->origin)) {
		lru_unlink(s, h);
		s->stats.learned--;
	}
	s->stats.hosts--;
	s->stats.keys = s->n_keys;
	paths_free(h->paths);
	free(h);
	return n;
}

/* ---- negative answers --------------------------------------------------- */

static struct store_neg **neg_find(struct host_store *s, const struct host_key *k, uint32_t hash)
{
	struct store_neg **pp;

	for (pp = &s->negs[hash & s->neg_mask]; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == hash && (*pp)->type == k->type && (*pp)->len == k->len &&
		    !memcmp((*pp)->data, k->data, k->len))
			return pp;
	return NULL;
}

static void neg_remove(struct host_store *s, struct store_neg **pp)
{
	struct store_neg *n = *pp;

	*pp = n->next;
	if (n->older)
		n->older->newer = n->newer;
	else
		s->neg_oldest = n->newer;
	if (n->newer)
		n->newer->older = n->older;
	else
		s->neg_newest = n->older;
	s->stats.negatives--;
	free(n);
}

static void neg_forget(struct host_store *s, const struct host_key *k)
{
	struct store_neg **pp;

	if (!s->stats.negatives)
		return;
	pp = neg_find(s, k, key_hash32(s, k));
	if (pp)
		neg_remove(s, pp);
}

static void neg_remove_oldest(struct host_store *s)
{
	struct store_neg *n = s->neg_oldest;
	struct host_key k;

	k.type = n->type;
	k.len = n->len;
	memcpy(k.data, n->data, n->len);
	neg_remove(s, neg_find(s, &k, n->hash));
}

int store_negative(struct host_store *s, const struct host_key *k, uint64_t now_ms, bool count)
{
	struct store_neg **pp;

	if (!s->stats.negatives || !host_key_valid(k))
		return 0;
	pp = neg_find(s, k, key_hash32(s, k));
	if (!pp)
		return 0;
	if ((*pp)->expires_ms <= now_ms) {
		neg_remove(s, pp);
		s->stats.expirations++;
		return 0;
	}
	if (count)
		s->stats.hits++;
	return (*pp)->status;
}

int store_set_negative(struct host_store *s, const struct host_key *k, uint32_t ttl_s,
		       int status, uint64_t now_ms)
{
	uint32_t hash;
	struct store_neg **pp, *n;

	if (!host_key_valid(k))
		return -EINVAL;
	hash = key_hash32(s, k);
	pp = neg_find(s, k, hash);
	if (pp)
		neg_remove(s, pp); /* the new answer replaces it, or (0 s) none is left */
	if (!ttl_s || slot_find(s, k, hash) >= 0)
		return 0;
	n = malloc(sizeof(*n) + k->len);
	if (!n)
		return -ENOMEM;
	if (s->stats.negatives >= STORE_NEGATIVE_MAX)
		neg_remove_oldest(s);
	n->expires_ms = deadline(now_ms, ttl_s);
	n->status = status < 0 ? status : -ENODATA;
	n->hash = hash;
	n->type = k->type;
	n->len = k->len;
	memcpy(n->data, k->data, k->len);
	n->next = s->negs[hash & s->neg_mask];
	s->negs[hash & s->neg_mask] = n;
	n->newer = NULL;
	n->older = s->neg_newest;
	if (s->neg_newest)
		s->neg_newest->newer = n;
	else
		s->neg_oldest = n;
	s->neg_newest = n;
	s->stats.negatives++;
	return 0;
}

/* ---- life cycle ---------------------------------------------------------- */

int store_init(struct host_store *s, unsigned max_hosts)
{
	memset(s, 0, sizeof(*s));
	if (!max_hosts || max_hosts > STORE_HOSTS_LIMIT)
		return -EINVAL;
	s->max_hosts = max_hosts;
	key_hasher_init(&s->kh);
	s->slots = calloc(SLOTS_MIN, sizeof(*s->slots));
	s->idents = calloc(IDENTS_MIN, sizeof(*s->idents));
	s->negs = calloc(NEG_BUCKETS, sizeof(*s->negs));
	if (!s->slots || !s->idents || !s->negs) {
		store_fini(s);
		return -ENOMEM;
	}
	s->slot_mask = SLOTS_MIN - 1;
	s->ident_mask = IDENTS_MIN - 1;
	s->neg_mask = NEG_BUCKETS - 1;
	return 0;
}

void store_fini(struct host_store *s)
{
	if (s->idents)
		for (unsigned i = 0; i <= s->ident_mask; i++) {
			struct host *h = s->idents[i], *next;

			for (; h; h = next) {
				next = h->id_next;
				paths_free(h->paths);
				free(h);
			}
		}
	while (s->neg_oldest) {
		struct store_neg *n = s->neg_oldest;

		s->neg_oldest = n->newer;
		free(n);
	}
	free(s->slots);
	free(s->idents);
	free(s->negs);
	memset(s, 0, sizeof(*s));
}

static void evict_over_bound(struct host_store *s, const struct host *keep)
{
	while (s->stats.learned > s->max_hosts && s->lru_head) {
		struct host *victim = s->lru_head;

		if (victim == keep) {
			if (!victim->lru_next)
				return;
			victim = victim->lru_next;
		}
		host_remove(s, victim);
		s->stats.evictions++;
	}
}

void store_set_max_hosts(struct host_store *s, unsigned max_hosts)
{
	if (!max_hosts || max_hosts > STORE_HOSTS_LIMIT)
		return;
	s->max_hosts = max_hosts;
	evict_over_bound(s, NULL);
}

/* ---- look-ups ------------------------------------------------------------ */

struct host *store_lookup(struct host_store *s, const struct host_key *k, uint64_t now_ms,
			  bool count)
{
	struct host *h;
	long at;

	if (!host_key_valid(k)) {
		if (count)
			s->stats.misses++;
		return NULL;
	}
	at = slot_find(s, k, key_hash32(s, k));
	if (at < 0) {
		if (count)
			s->stats.misses++;
		return NULL;
	}
	h = s->slots[at].h;
	if (h->expires_ms <= now_ms) {
		host_remove(s, h);
		s->stats.expirations++;
		if (count)
			s->stats.misses++;
		return NULL;
	}
	if (count) {
		s->stats.hits++;
		if (!origin_pinned(h->origin) && h != s->lru_tail) {
			lru_unlink(s, h);
			lru_append(s, h);
		}
	}
	return h;
}

/* ---- insertion ------------------------------------------------------------ */

int store_insert(struct host_store *s, const struct ibres_hostrec *r, uint8_t origin,
		 uint32_t ttl_s, uint8_t grp_mtu, uint8_t grp_rate, uint64_t now_ms,
		 struct host **out)
{
	struct host *nh, *old;
	struct host_key id, k;
	unsigned nk, changed = 0;
	bool placed = false;
	int ret;

	if (out)
		*out = NULL;
	if (!s || !r || origin > IBRES_ORIGIN_FABRIC)
		return -EINVAL;
	ret = rec_validate(r);
	if (ret)
		return ret;
	rec_ident(r, &id);
	old = ident_find(s, &id);
	if (old && origin_rank(old->origin) < origin_rank(origin))
		return 0; /* a more authoritative record of this host wins */

	/* Everything that can fail, before anything changes. */
	nh = host_pack(r, origin);
	if (!nh)
		return -ENOMEM;
	nk = h_nkeys(nh);
	if (slots_reserve(s, nk) < 0 || idents_reserve(s) < 0) {
		free(nh);
		return -ENOMEM;
	}

	nh->expires_ms = origin_pinned(origin) ? UINT64_MAX : deadline(now_ms, ttl_s);
	if (old) {
		nh->grp_mtu = old->grp_mtu;
		nh->grp_rate = old->grp_rate;
		if (old->lid == nh->lid) {
			nh->paths = old->paths; /* paths carry the LID: still right */
			old->paths = NULL;
		}
		if (!origin_pinned(origin) && !origin_pinned(old->origin)) {
			/* a refresh is not a use: the host keeps its place in the LRU order */
			nh->lru_prev = old;
			nh->lru_next = old->lru_next;
			if (old->lru_next)
				old->lru_next->lru_prev = nh;
			else
				s->lru_tail = nh;
			old->lru_next = nh;
			placed = true;
		}
		changed += host_remove(s, old);
	}
	if (grp_mtu) {
		nh->grp_mtu = grp_mtu;
		nh->grp_rate = grp_rate;
	}
	for (unsigned i = 0; i < nk; i++) {
		uint32_t hash;
		long at;

		h_key(nh, i, &k);
		hash = key_hash32(s, &k);
		at = slot_find(s, &k, hash);
		if (at >= 0) {
			struct host *holder = s->slots[at].h;

			if (holder == nh)
				continue; /* the record lists this key twice */
			if (origin_rank(holder->origin) < origin_rank(origin))
				continue; /* held by a more authoritative host */
			/* a key that moved: it is this host's now */
			holder->n_indexed--;
			s->slots[at].h = nh;
			s->slots[at].kidx = (uint8_t)i;
			nh->n_indexed++;
			if (!holder->n_indexed)
				host_remove(s, holder);
		} else {
			slot_put(s->slots, s->slot_mask, nh, (uint8_t)i, hash);
			nh->n_indexed++;
			s->n_keys++;
		}
		neg_forget(s, &k);
		changed++;
	}
	if (!nh->n_indexed) {
		/* every key is held above: nothing of it is visible */
		if (placed)
			lru_unlink(s, nh);
		paths_free(nh->paths);
		free(nh);
		if (changed)
			s->stats.inserts++;
		return 0;
	}
	ident_link(s, nh);
	s->stats.hosts++;
	if (!origin_pinned(origin)) {
		if (!placed)
			lru_append(s, nh);
		s->stats.learned++;
		evict_over_bound(s, nh);
	}
	s->stats.inserts++;
	s->stats.keys = s->n_keys;
	if (out)
		*out = nh;
	return 0;
}

/* ---- removal ------------------------------------------------------------- */

unsigned store_remove_gid(struct host_store *s, const uint8_t gid[16])
{
	struct host_key k;
	struct host *h;

	host_key_addr(&k, IBRES_KEY_GID, gid);
	h = ident_find(s, &k);
	if (!h || origin_pinned(h->origin))
		return 0;
	return host_remove(s, h);
}

/* Remove the hosts @pred selects. */
static unsigned remove_hosts(struct host_store *s, bool (*pred)(const struct host *h, void *arg),
			     void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i <= s->ident_mask; i++) {
		struct host *h = s->idents[i], *next;

		for (; h; h = next) {
			next = h->id_next;
			if (pred(h, arg))
				n += host_remove(s, h);
		}
	}
	return n;
}

static bool pred_origin(const struct host *h, void *arg)
{
	return h->origin == *(const uint8_t *)arg;
}

unsigned store_remove_origin(struct host_store *s, uint8_t origin)
{
	return remove_hosts(s, pred_origin, &origin);
}

static bool pred_learned(const struct host *h, void *arg)
{
	(void)arg;
	return !origin_pinned(h->origin);
}

unsigned store_flush(struct host_store *s, const struct host_key *k)
{
	unsigned n;

	if (!k) {
		n = remove_hosts(s, pred_learned, NULL) + s->stats.negatives;
		while (s->neg_oldest)
			neg_remove_oldest(s);
		return n;
	}
	if (!host_key_valid(k))
		return 0;
	struct store_neg **pp = neg_find(s, k, key_hash32(s, k));

	if (pp) {
		neg_remove(s, pp);
		return 1;
	}
	long at = slot_find(s, k, key_hash32(s, k));

	if (at < 0 || origin_pinned(s->slots[at].h->origin))
		return 0;
	return host_remove(s, s->slots[at].h);
}

static bool pred_expired(const struct host *h, void *arg)
{
	return h->expires_ms <= *(const uint64_t *)arg;
}

unsigned store_sweep(struct host_store *s, uint64_t now_ms)
{
	unsigned n = 0;

	for (unsigned i = 0; i <= s->ident_mask; i++) {
		struct host *h = s->idents[i], *next;

		for (; h; h = next) {
			next = h->id_next;
			if (pred_expired(h, &now_ms)) {
				host_remove(s, h);
				s->stats.expirations++;
				n++;
				continue;
			}
			for (struct host_path **pp = &h->paths; *pp;) {
				struct host_path *p = *pp;

				if (p->expires_ms <= now_ms) {
					*pp = p->next;
					free(p);
				} else {
					pp = &p->next;
				}
			}
		}
	}
	for (struct store_neg *ng = s->neg_oldest, *next; ng; ng = next) {
		next = ng->newer;
		if (ng->expires_ms <= now_ms) {
			struct host_key k = { .type = ng->type, .len = ng->len };

			memcpy(k.data, ng->data, ng->len);
			neg_remove(s, neg_find(s, &k, ng->hash));
			s->stats.expirations++;
			n++;
		}
	}
	return n;
}

/* ---- the record, paths ----------------------------------------------------- */

/* host_record() zeroes what follows the names; each name is written with its NUL. */
_Static_assert(offsetof(struct ibres_hostrec, n_names) ==
		       sizeof(((struct ibres_hostrec *)0)->names),
	       "the names come first in struct ibres_hostrec");

void host_record(const struct host *h, struct ibres_hostrec *r, uint64_t now_ms)
{
	memset(&r->n_names, 0, sizeof(*r) - offsetof(struct ibres_hostrec, n_names));
	r->n_names = h->n_names;
	for (unsigned i = 0; i < h->n_names; i++) {
		unsigned len;
		const uint8_t *p = h_name(h, i, &len);

		memcpy(r->names[i], p, len);
		r->names[i][len] = '\0';
	}
	r->n_v4 = h->n_v4;
	for (unsigned i = 0; i < h->n_v4; i++)
		memcpy(&r->v4[i], h_v4(h, i), 4);
	r->n_v6 = h->n_v6;
	for (unsigned i = 0; i < h->n_v6; i++)
		memcpy(&r->v6[i], h_v6(h, i), 16);
	r->n_gids = h->n_gids;
	for (unsigned i = 0; i < h->n_gids; i++)
		memcpy(r->gids[i], h_gid(h, i), 16);
	r->lid = h->lid;
	r->qpn = h->qpn;
	r->pkey = h->pkey;
	if (h->expires_ms == UINT64_MAX)
		r->ttl = 0;
	else
		r->ttl = h->expires_ms > now_ms ? (uint32_t)((h->expires_ms - now_ms + 999) / 1000) : 0;
}

uint8_t host_origin(const struct host *h)
{
	return h->origin;
}

uint64_t host_expires_ms(const struct host *h)
{
	return h->expires_ms;
}

uint16_t host_lid(const struct host *h)
{
	return h->lid;
}

const uint8_t *host_gid(const struct host *h)
{
	static const uint8_t zero[16];

	return h->n_gids ? h_gid(h, 0) : zero;
}

const char *host_name(const struct host *h, char *buf)
{
	unsigned len = 0;
	const uint8_t *p = h->n_names ? h_name(h, 0, &len) : NULL;

	if (len)
		memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

void host_group(const struct host *h, uint8_t *mtu, uint8_t *rate)
{
	*mtu = h->grp_mtu;
	*rate = h->grp_rate;
}

bool host_has_key(const struct host *h, const struct host_key *k)
{
	unsigned nk = h_nkeys(h);

	for (unsigned i = 0; i < nk; i++)
		if (h_key_is(h, i, k))
			return true;
	return false;
}

const struct ibres_path_record *host_route(const struct host *h, int ep, uint64_t now_ms)
{
	for (const struct host_path *p = h->paths; p; p = p->next)
		if (p->ep == ep)
			return p->expires_ms > now_ms ? &p->path : NULL;
	return NULL;
}

int store_set_route(struct host_store *s, struct host *h, int ep,
		    const struct ibres_path_record *path, uint32_t ttl_s, uint64_t now_ms)
{
	struct host_path *p;

	(void)s;
	for (p = h->paths; p; p = p->next)
		if (p->ep == ep)
			break;
	if (!p) {
		p = malloc(sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->ep = ep;
		p->next = h->paths;
		h->paths = p;
	}
	p->path = *path;
	p->expires_ms = deadline(now_ms, ttl_s);
	return 0;
}

unsigned store_drop_routes(struct host_store *s, int ep, const uint8_t *gid)
{
	unsigned n = 0;

	for (unsigned i = 0; i <= s->ident_mask; i++)
		for (struct host *h = s->idents[i]; h; h = h->id_next) {
			if (gid && (!h->n_gids || memcmp(h_gid(h, 0), gid, 16)))
				continue;
			for (struct host_path **pp = &h->paths; *pp;) {
				struct host_path *p = *pp;

				if (ep < 0 || p->ep == ep) {
					*pp = p->next;
					free(p);
					n++;
				} else {
					pp = &p->next;
				}
			}
		}
	return n;
}

/* ---- walking, accounting, checking ---------------------------------------- */

void store_foreach(struct host_store *s, store_visit_fn cb, void *arg)
{
	struct host_key k;

	for (unsigned i = 0; i <= s->slot_mask; i++) {
		const struct store_slot *sl = &s->slots[i];

		if (!sl->h)
			continue;
		h_key(sl->h, sl->kidx, &k);
		if (cb(&k, sl->h, 0, sl->h->expires_ms, arg))
			return;
	}
	for (const struct store_neg *n = s->neg_oldest; n; n = n->newer) {
		k.type = n->type;
		k.len = n->len;
		memcpy(k.data, n->data, n->len);
		if (cb(&k, NULL, n->status, n->expires_ms, arg))
			return;
	}
}

static size_t host_size(const struct host *h)
{
	size_t size = sizeof(*h) + 16 * (h->n_gids + h->n_v6) + 4 * h->n_v4;
	unsigned len;

	for (unsigned i = 0; i < h->n_names; i++) {
		h_name(h, i, &len);
		size += 1 + len;
	}
	for (const struct host_path *p = h->paths; p; p = p->next)
		size += sizeof(*p);
	return size;
}

size_t store_bytes(const struct host_store *s)
{
	size_t n = (s->slot_mask + 1) * sizeof(struct store_slot) +
		   (s->ident_mask + 1) * sizeof(struct host *) +
		   (s->neg_mask + 1) * sizeof(struct store_neg *);

	for (unsigned i = 0; i <= s->ident_mask; i++)
		for (const struct host *h = s->idents[i]; h; h = h->id_next)
			n += host_size(h);
	for (const struct store_neg *ng = s->neg_oldest; ng; ng = ng->newer)
		n += sizeof(*ng) + ng->len;
	return n;
}

static int check_slots(struct host_store *s)
{
	struct host_key k;
	unsigned keys = 0;

	for (unsigned i = 0; i <= s->slot_mask; i++) {
		const struct store_slot *sl = &s->slots[i];

		if (!sl->h)
			continue;
		keys++;
		if (sl->kidx >= h_nkeys(sl->h))
			return -EUCLEAN;
		h_key(sl->h, sl->kidx, &k);
		if (!host_key_valid(&k) || key_hash32(s, &k) != sl->hash)
			return -EUCLEAN;
		/* reachable from its home without a gap, and the only slot of its key */
		if (slot_find(s, &k, sl->hash) != (long)i)
			return -EUCLEAN;
	}
	return keys == s->n_keys ? 0 : -EUCLEAN;
}

static int check_hosts(struct host_store *s)
{
	uint64_t hosts = 0, learned = 0, lru = 0;
	struct host_key id, k;

	for (unsigned i = 0; i <= s->ident_mask; i++)
		for (struct host *h = s->idents[i]; h; h = h->id_next) {
			unsigned slots = 0, nk = h_nkeys(h);

			hosts++;
			if (!origin_pinned(h->origin))
				learned++;
			h_ident(h, &id);
			if (ident_find(s, &id) != h || !h->n_indexed || !nk)
				return -EUCLEAN;
			for (unsigned j = 0; j < nk; j++) {
				long at;

				h_key(h, j, &k);
				at = slot_find(s, &k, key_hash32(s, &k));
				if (at >= 0 && s->slots[at].h == h && s->slots[at].kidx == j)
					slots++;
			}
			if (slots != h->n_indexed)
				return -EUCLEAN;
		}
	for (struct host *h = s->lru_head; h; h = h->lru_next) {
		if (origin_pinned(h->origin) || (h->lru_next && h->lru_next->lru_prev != h))
			return -EUCLEAN;
		if (++lru > learned)
			return -EUCLEAN;
	}
	if (hosts != s->stats.hosts || learned != s->stats.learned || lru != learned)
		return -EUCLEAN;
	return 0;
}

int store_check(struct host_store *s)
{
	uint64_t negs = 0;
	int ret = check_slots(s);

	if (ret)
		return ret;
	ret = check_hosts(s);
	if (ret)
		return ret;
	for (const struct store_neg *n = s->neg_oldest; n; n = n->newer) {
		struct host_key k = { .type = n->type, .len = n->len };

		memcpy(k.data, n->data, n->len);
		if (neg_find(s, &k, n->hash) == NULL || ++negs > s->stats.negatives)
			return -EUCLEAN;
	}
	return negs == s->stats.negatives ? 0 : -EUCLEAN;
}
