// SPDX-License-Identifier: MIT
/*
 * The resolver cache (see cache.h for the contract).
 *
 * Entries live in a hash table of singly linked chains keyed by SipHash-2-4
 * of (type, len, data) under a per-cache random key, so that names chosen by
 * a hostile peer cannot force long chains. Host records live in a second
 * table of the same size, keyed by their identity (gids[0], else the first
 * name/address/LID). Entries that are not pinned sit on an LRU list ordered
 * by last use.
 *
 * Removal is always two-phase: entries are first unlinked from every index
 * onto a private "grave" list (so that callbacks never see a half-removed
 * entry and may look other keys up), then their waiters are completed and
 * they are freed.
 */
#include "core/cache.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---------------------------------------------------- */

static void list_move_all(struct list_node *from, struct list_node *to)
{
	list_init(to);
	if (list_empty(from))
		return;
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	list_init(from);
}

static bool list_linked(const struct list_node *n)
{
	return n->next != n;
}

static uint64_t deadline(uint64_t now_ms, uint32_t ttl_s)
{
	uint64_t d = (uint64_t)ttl_s * 1000;

	if (!ttl_s || now_ms > UINT64_MAX - d)
		return UINT64_MAX;
	return now_ms + d;
}

static char ascii_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
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

/* ---- SipHash-2-4 -------------------------------------------------------- */

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

/* A macro on the caller's locals: as a function taking pointers it was not
 * inlined, and hashing is on every cache look-up. */
#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = ROTL64(v1, 13);                                                               \
		v1 ^= v0;                                                                          \
		v0 = ROTL64(v0, 32);                                                               \
		v2 += v3;                                                                          \
		v3 = ROTL64(v3, 16);                                                               \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = ROTL64(v3, 21);                                                               \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = ROTL64(v1, 17);                                                               \
		v1 ^= v2;                                                                          \
		v2 = ROTL64(v2, 32);                                                               \
	} while (0)

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint64_t siphash24(const uint64_t key[2], const uint8_t *msg, size_t len)
{
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL;
	uint64_t v1 = key[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL;
	uint64_t v3 = key[1] ^ 0x7465646279746573ULL;
	size_t left = len & 7, i;
	const uint8_t *end = msg + (len - left);
	uint64_t m, b = (uint64_t)len << 56;

	for (; msg != end; msg += 8) {
		m = load_le64(msg);
		v3 ^= m;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (i = 0; i < left; i++)
		b |= (uint64_t)msg[i] << (8 * i);
	v3 ^= b;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void cache_seed(struct cache *c)
{
	struct timespec mono = {0}, real = {0};
	uint64_t x;

	/* GRND_NONBLOCK: never stall start-up on an early-boot entropy pool */
	if (getrandom(c->seed, sizeof(c->seed), GRND_NONBLOCK) == (ssize_t)sizeof(c->seed))
		return;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	x = (uint64_t)mono.tv_sec * 1000000000ULL + (uint64_t)mono.tv_nsec;
	x ^= ((uint64_t)real.tv_sec << 30) ^ (uint64_t)real.tv_nsec;
	x ^= (uint64_t)getpid() << 40;
	x ^= (uint64_t)(uintptr_t)c;
	c->seed[0] = splitmix64(&x);
	c->seed[1] = splitmix64(&x);
}

/* ---- keys ---------------------------------------------------------------- */

static unsigned key_type_len(uint8_t type)
{
	switch (type) {
	case IBRES_KEY_IPV4:
		return 4;
	case IBRES_KEY_IPV6:
	case IBRES_KEY_GID:
		return 16;
	case IBRES_KEY_LID:
		return 2;
	default:
		return 0;
	}
}

_Static_assert(CACHE_KEY_MAX == UINT8_MAX, "struct cache_key.len must cover every name length");

static bool key_valid(const struct cache_key *k)
{
	if (!k)
		return false;
	if (k->type == IBRES_KEY_NAME)
		return k->len > 0; /* and <= CACHE_KEY_MAX: see the assertion below */
	return k->len && k->len == key_type_len(k->type);
}

static bool key_eq(const struct cache_key *a, const struct cache_key *b)
{
	return a->type == b->type && a->len == b->len && !memcmp(a->data, b->data, a->len);
}

static void key_copy(struct cache_key *dst, const struct cache_key *src)
{
	dst->type = src->type;
	dst->len = src->len;
	memcpy(dst->data, src->data, src->len);
}

static uint64_t key_hash(const struct cache *c, const struct cache_key *k)
{
	uint8_t msg[2 + CACHE_KEY_MAX];

	msg[0] = k->type;
	msg[1] = k->len;
	memcpy(msg + 2, k->data, k->len);
	return siphash24(c->seed, msg, 2 + (size_t)k->len);
}

static unsigned key_bucket(const struct cache *c, const struct cache_key *k)
{
	return (unsigned)(key_hash(c, k) & (c->n_buckets - 1));
}

int cache_key_name(struct cache_key *k, const char *name)
{
	size_t len, i;

	if (!k || !name)
		return -EINVAL;
	len = strnlen(name, CACHE_KEY_MAX + 1);
	if (len == 0 || len > CACHE_KEY_MAX)
		return -EINVAL;
	k->type = IBRES_KEY_NAME;
	k->len = (uint8_t)len;
	for (i = 0; i < len; i++)
		k->data[i] = (uint8_t)ascii_lower(name[i]);
	return 0;
}

int cache_key_addr(struct cache_key *k, uint8_t type, const void *addr)
{
	unsigned len = key_type_len(type);

	if (!k || !addr || !len || type == IBRES_KEY_LID)
		return -EINVAL;
	k->type = type;
	k->len = (uint8_t)len;
	memcpy(k->data, addr, len);
	return 0;
}

int cache_key_lid(struct cache_key *k, uint16_t lid)
{
	if (!k || !lid)
		return -EINVAL;
	k->type = IBRES_KEY_LID;
	k->len = 2;
	k->data[0] = (uint8_t)(lid >> 8);
	k->data[1] = (uint8_t)lid;
	return 0;
}

static void key_str_hex(const struct cache_key *k, char *buf, size_t len)
{
	size_t off;
	unsigned i;
	int n;

	n = snprintf(buf, len, "key%u:", k->type);
	off = n < 0 ? 0 : (size_t)n;
	for (i = 0; i < k->len && off < len; i++) {
		n = snprintf(buf + off, len - off, "%02x", k->data[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

static void key_str_name(const struct cache_key *k, char *buf, size_t len)
{
	size_t off = 0;
	unsigned i;
	int n;

	n = snprintf(buf, len, "name:");
	off = n < 0 ? 0 : (size_t)n;
	for (i = 0; i < k->len && off + 1 < len; i++) {
		uint8_t ch = k->data[i];

		if (ch > 0x20 && ch < 0x7f && ch != '\\') {
			buf[off++] = (char)ch;
			buf[off] = '\0';
			continue;
		}
		n = snprintf(buf + off, len - off, "\\x%02x", ch);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

const char *cache_key_str(const struct cache_key *k, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	if (!buf || !len)
		return buf;
	buf[0] = '\0';
	if (!k)
		return buf;
	if (!key_valid(k)) {
		key_str_hex(k, buf, len);
		return buf;
	}
	switch (k->type) {
	case IBRES_KEY_NAME:
		key_str_name(k, buf, len);
		break;
	case IBRES_KEY_IPV4:
		inet_ntop(AF_INET, k->data, addr, sizeof(addr));
		snprintf(buf, len, "ipv4:%s", addr);
		break;
	case IBRES_KEY_IPV6:
		inet_ntop(AF_INET6, k->data, addr, sizeof(addr));
		snprintf(buf, len, "ipv6:%s", addr);
		break;
	case IBRES_KEY_GID:
		inet_ntop(AF_INET6, k->data, addr, sizeof(addr));
		snprintf(buf, len, "gid:%s", addr);
		break;
	case IBRES_KEY_LID:
		snprintf(buf, len, "lid:%u", (unsigned)k->data[0] << 8 | k->data[1]);
		break;
	}
	return buf;
}

/* ---- host records: keys, validation, identity -------------------------- */

static unsigned rec_nkeys(const struct ibres_hostrec *h)
{
	return h->n_names + h->n_v4 + h->n_v6 + h->n_gids + (h->lid ? 1 : 0);
}

/* Key @i of a record, in the order names, IPv4, IPv6, GIDs, LID. */
static int rec_key(const struct ibres_hostrec *h, unsigned i, struct cache_key *k)
{
	if (i < h->n_names)
		return cache_key_name(k, h->names[i]);
	i -= h->n_names;
	if (i < h->n_v4)
		return cache_key_addr(k, IBRES_KEY_IPV4, &h->v4[i]);
	i -= h->n_v4;
	if (i < h->n_v6)
		return cache_key_addr(k, IBRES_KEY_IPV6, &h->v6[i]);
	i -= h->n_v6;
	if (i < h->n_gids)
		return cache_key_addr(k, IBRES_KEY_GID, h->gids[i]);
	i -= h->n_gids;
	if (i == 0 && h->lid)
		return cache_key_lid(k, h->lid);
	return -EINVAL;
}

static bool name_matches(const char *name, const struct cache_key *k)
{
	unsigned i;

	for (i = 0; i < k->len; i++)
		if (!name[i] || (uint8_t)ascii_lower(name[i]) != k->data[i])
			return false;
	return name[i] == '\0';
}

/* Does the (validated) record list @k? */
static bool rec_has_key(const struct ibres_hostrec *h, const struct cache_key *k)
{
	unsigned i;

	switch (k->type) {
	case IBRES_KEY_NAME:
		for (i = 0; i < h->n_names; i++)
			if (name_matches(h->names[i], k))
				return true;
		return false;
	case IBRES_KEY_IPV4:
		for (i = 0; i < h->n_v4; i++)
			if (k->len == 4 && !memcmp(&h->v4[i], k->data, 4))
				return true;
		return false;
	case IBRES_KEY_IPV6:
		for (i = 0; i < h->n_v6; i++)
			if (k->len == 16 && !memcmp(&h->v6[i], k->data, 16))
				return true;
		return false;
	case IBRES_KEY_GID:
		for (i = 0; i < h->n_gids; i++)
			if (k->len == 16 && !memcmp(h->gids[i], k->data, 16))
				return true;
		return false;
	case IBRES_KEY_LID:
		return h->lid && k->len == 2 && k->data[0] == (uint8_t)(h->lid >> 8) &&
		       k->data[1] == (uint8_t)h->lid;
	default:
		return false;
	}
}

static int rec_validate(const struct ibres_hostrec *h)
{
	unsigned i;

	if (h->n_names > IBRES_HOST_NAMES_MAX || h->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    h->n_v6 > IBRES_HOST_ADDRS_MAX || h->n_gids > IBRES_HOST_GIDS_MAX)
		return -EINVAL;
	for (i = 0; i < h->n_names; i++) {
		size_t len = strnlen(h->names[i], sizeof(h->names[i]));

		if (len == 0 || len > CACHE_KEY_MAX)
			return -EINVAL;
	}
	return rec_nkeys(h) ? 0 : -EINVAL;
}

static void rec_ident(const struct ibres_hostrec *h, struct cache_key *k)
{
	if (h->n_gids)
		cache_key_addr(k, IBRES_KEY_GID, h->gids[0]);
	else
		rec_key(h, 0, k);
}

/* ---- entries and hosts: indexes ----------------------------------------- */

/* @hash is key_hash(c, k), for callers that look one key up repeatedly. */
static struct cache_entry *entry_find_hashed(struct cache *c, const struct cache_key *k,
					     uint64_t hash)
{
	struct cache_entry *e;

	for (e = c->buckets[hash & (c->n_buckets - 1)]; e; e = e->hnext)
		if (key_eq(&e->key, k))
			return e;
	return NULL;
}

static struct cache_entry *entry_find(struct cache *c, const struct cache_key *k)
{
	return entry_find_hashed(c, k, key_hash(c, k));
}

static void entry_unlink_hash(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **pp = &c->buckets[key_bucket(c, &e->key)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	e->hnext = NULL;
}

static struct cache_host *host_find(struct cache *c, const struct cache_key *ident)
{
	struct cache_host *h;

	for (h = c->hbuckets[key_bucket(c, ident)]; h; h = h->hnext)
		if (key_eq(&h->ident, ident))
			return h;
	return NULL;
}

static void host_link(struct cache *c, struct cache_host *h)
{
	unsigned b = key_bucket(c, &h->ident);

	h->hnext = c->hbuckets[b];
	c->hbuckets[b] = h;
	c->stats.hosts++;
}

static void host_unlink(struct cache *c, struct cache_host *h)
{
	struct cache_host **pp = &c->hbuckets[key_bucket(c, &h->ident)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == h) {
			*pp = h->hnext;
			c->stats.hosts--;
			break;
		}
	}
	h->hnext = NULL;
}

static void host_get(struct cache_host *h)
{
	h->refs++;
}

static void host_put(struct cache *c, struct cache_host *h)
{
	if (--h->refs)
		return;
	host_unlink(c, h);
	free(h);
}

static void route_clear(struct cache_entry *e)
{
	memset(&e->route, 0, sizeof(e->route));
	e->route_ep = -1;
	e->route_expires_ms = 0;
}

/* Pinned entries stay off the LRU list; the others stay on it. A newly
 * listed entry goes to the tail. */
static void entry_lru_update(struct cache *c, struct cache_entry *e)
{
	bool on = list_linked(&e->lru);

	if (cache_entry_pinned(e)) {
		if (on)
			list_del(&e->lru);
	} else if (!on) {
		list_add_tail(&c->lru, &e->lru);
	}
}

static void entry_touch(struct cache *c, struct cache_entry *e, uint64_t now_ms)
{
	e->used_ms = now_ms;
	if (list_linked(&e->lru)) {
		list_del(&e->lru);
		list_add_tail(&c->lru, &e->lru);
	}
}

static void entry_set_host(struct cache *c, struct cache_entry *e, struct cache_host *h)
{
	if (e->host == h)
		return;
	if (h)
		host_get(h);
	if (e->host)
		host_put(c, e->host);
	e->host = h;
}

static void entry_init(struct cache *c, struct cache_entry *e, const struct cache_key *k,
		       uint64_t now_ms)
{
	unsigned b;

	memset(e, 0, sizeof(*e));
	key_copy(&e->key, k);
	e->state = IBRES_STATE_INIT;
	e->expires_ms = UINT64_MAX;
	e->used_ms = now_ms;
	route_clear(e);
	list_init(&e->waiters);
	list_init(&e->lru);
	b = key_bucket(c, k);
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	list_add_tail(&c->lru, &e->lru);
	c->n_entries++;
	c->stats.entries = c->n_entries;
}

static bool entry_expired(const struct cache_entry *e, uint64_t now_ms)
{
	return e->expires_ms <= now_ms;
}

static void entry_route_check(struct cache_entry *e, uint64_t now_ms)
{
	if (e->state == IBRES_STATE_ROUTED && e->route_expires_ms <= now_ms) {
		e->state = IBRES_STATE_RESOLVED;
		route_clear(e);
	}
}

static bool entry_evictable(const struct cache_entry *e)
{
	return !cache_entry_pinned(e) && list_empty(&e->waiters) &&
	       e->state != IBRES_STATE_QUERYING;
}

/* Phase one of removal: unlink @e from every index and drop its host
 * reference (callbacks see host NULL, the rest as it was); it goes onto
 * @grave. */
static void entry_detach(struct cache *c, struct cache_entry *e, struct list_node *grave)
{
	entry_unlink_hash(c, e);
	list_del(&e->lru);
	c->n_entries--;
	c->stats.entries = c->n_entries;
	entry_set_host(c, e, NULL);
	list_add_tail(grave, &e->lru);
}

/* Phase two: complete the waiters of every entry on @grave and free it. */
static void grave_finish(struct cache *c, struct list_node *grave, int status)
{
	struct cache_entry *e;

	while (!list_empty(grave)) {
		e = list_entry(grave->next, struct cache_entry, lru);
		list_del(&e->lru);
		/* loop: a callback may (wrongly) re-add a waiter to a dying entry */
		while (!list_empty(&e->waiters))
			cache_complete(e, status);
		if (c->on_remove)
			c->on_remove(e, c->on_remove_arg);
		free(e);
	}
}

static void entry_remove(struct cache *c, struct cache_entry *e, int status)
{
	struct list_node grave;

	list_init(&grave);
	entry_detach(c, e, &grave);
	grave_finish(c, &grave, status);
}

static void entry_expire(struct cache *c, struct cache_entry *e)
{
	c->stats.expirations++;
	entry_remove(c, e, -ETIMEDOUT);
}

/* Detach every entry of host @h (found through its record's keys; see the
 * invariant in cache.h) onto @grave. Returns how many. */
static unsigned host_detach_entries(struct cache *c, struct cache_host *h, struct list_node *grave)
{
	struct cache_key k;
	struct cache_entry *e;
	unsigned i, n = 0, nkeys = rec_nkeys(&h->rec);

	host_get(h); /* keep h->rec readable while its entries go */
	for (i = 0; i < nkeys; i++) {
		if (rec_key(&h->rec, i, &k))
			continue;
		e = entry_find(c, &k);
		if (e && e->host == h) {
			entry_detach(c, e, grave);
			n++;
		}
	}
	host_put(c, h);
	return n;
}

/* ---- init / fini -------------------------------------------------------- */

int cache_init(struct cache *c, unsigned max_entries)
{
	unsigned n = 8;

	if (!c || !max_entries || max_entries > CACHE_ENTRIES_LIMIT)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	while (n < max_entries / 2)
		n <<= 1;
	c->buckets = calloc(n, sizeof(*c->buckets));
	if (!c->buckets)
		goto err;
	c->hbuckets = calloc(n, sizeof(*c->hbuckets));
	if (!c->hbuckets)
		goto err_buckets;
	c->n_buckets = n;
	c->max_entries = max_entries;
	list_init(&c->lru);
	cache_seed(c);
	return 0;

err_buckets:
	free(c->buckets);
	c->buckets = NULL;
err:
	return -ENOMEM;
}

/* Detach every entry for which @pred (NULL: all) holds; returns how many. */
static unsigned detach_matching(struct cache *c, bool (*pred)(struct cache_entry *e, void *arg),
				void *arg, struct list_node *grave)
{
	struct cache_entry *e, *next;
	unsigned i, n = 0;

	for (i = 0; i < c->n_buckets; i++) {
		for (e = c->buckets[i]; e; e = next) {
			next = e->hnext;
			if (pred && !pred(e, arg))
				continue;
			entry_detach(c, e, grave);
			n++;
		}
	}
	return n;
}

void cache_fini(struct cache *c)
{
	struct list_node grave;

	if (!c || !c->buckets)
		return;
	list_init(&grave);
	detach_matching(c, NULL, NULL, &grave);
	grave_finish(c, &grave, -ECANCELED);
	/* every host went with its last entry */
	free(c->buckets);
	free(c->hbuckets);
	memset(c, 0, sizeof(*c));
}

/* ---- lookup --------------------------------------------------------------- */

/* Find @k, dropping it if expired; a lookup on a client's behalf (@use)
 * also counts and refreshes its LRU position. */
static struct cache_entry *lookup(struct cache *c, const struct cache_key *k, uint64_t now_ms,
				  bool use)
{
	struct cache_entry *e;

	if (!key_valid(k)) {
		c->stats.misses += use;
		return NULL;
	}
	e = entry_find(c, k);
	if (e && entry_expired(e, now_ms)) {
		if (!e->busy)
			entry_expire(c, e);
		e = NULL;
	}
	if (!e) {
		c->stats.misses += use;
		return NULL;
	}
	entry_route_check(e, now_ms);
	if (!use)
		return e;
	entry_touch(c, e, now_ms);
	if (e->state == IBRES_STATE_RESOLVED || e->state == IBRES_STATE_ROUTED ||
	    e->state == IBRES_STATE_NEGATIVE)
		c->stats.hits++;
	else
		c->stats.misses++;
	return e;
}

struct cache_entry *cache_lookup(struct cache *c, const struct cache_key *k, uint64_t now_ms)
{
	return lookup(c, k, now_ms, true);
}

struct cache_entry *cache_peek(struct cache *c, const struct cache_key *k, uint64_t now_ms)
{
	return lookup(c, k, now_ms, false);
}

static struct cache_entry *lru_first_evictable(struct cache *c)
{
	struct list_node *n;

	for (n = c->lru.next; n != &c->lru; n = n->next) {
		struct cache_entry *e = list_entry(n, struct cache_entry, lru);

		if (entry_evictable(e))
			return e;
	}
	return NULL;
}

static void entry_evict(struct cache *c, struct cache_entry *e, struct list_node *grave)
{
	c->stats.evictions++;
	entry_detach(c, e, grave);
}

struct cache_entry *cache_get_or_create(struct cache *c, const struct cache_key *k, uint64_t now_ms)
{
	struct cache_entry *e, *victim = NULL;
	struct list_node grave;

	if (!key_valid(k)) {
		errno = EINVAL;
		return NULL;
	}
	e = entry_find(c, k);
	if (e && entry_expired(e, now_ms) && !e->busy) {
		entry_expire(c, e);
		e = NULL;
	}
	if (e) {
		entry_route_check(e, now_ms);
		entry_touch(c, e, now_ms);
		return e;
	}
	if (c->n_entries >= c->max_entries) {
		victim = lru_first_evictable(c);
		if (!victim) {
			errno = ENOSPC;
			return NULL;
		}
	}
	e = malloc(sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	if (victim) {
		list_init(&grave);
		entry_evict(c, victim, &grave);
		grave_finish(c, &grave, -ECANCELED); /* no waiters: no callbacks */
	}
	entry_init(c, e, k, now_ms);
	return e;
}

/* ---- insert ---------------------------------------------------------------- */

static bool key_in(const struct cache_key *keys, unsigned n, const struct cache_key *k)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (key_eq(&keys[i], k))
			return true;
	return false;
}

static bool ptr_in(struct cache_entry *const *arr, unsigned n, const struct cache_entry *e)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (arr[i] == e)
			return true;
	return false;
}

/* State of one cache_insert_host call. */
struct insert_ctx {
	struct cache_key keys[CACHE_HOST_KEYS_MAX]; /* the new record's keys, deduplicated */
	uint64_t hash[CACHE_HOST_KEYS_MAX];         /* key_hash() of each, computed once */
	unsigned n_keys;
	struct cache_entry *stale[CACHE_HOST_KEYS_MAX]; /* old entries of the host to drop */
	unsigned n_stale;
	struct cache_entry *victims[CACHE_HOST_KEYS_MAX]; /* LRU entries to evict */
	unsigned n_victims;
	struct cache_entry *spare; /* preallocated entries, chained by hnext */
};

static int insert_collect_keys(struct cache *c, struct insert_ctx *x,
			       const struct ibres_hostrec *h)
{
	unsigned i, nkeys = rec_nkeys(h);
	int ret;

	x->n_keys = 0;
	for (i = 0; i < nkeys; i++) {
		ret = rec_key(h, i, &x->keys[x->n_keys]);
		if (ret)
			return ret;
		if (!key_in(x->keys, x->n_keys, &x->keys[x->n_keys])) {
			x->hash[x->n_keys] = key_hash(c, &x->keys[x->n_keys]);
			x->n_keys++;
		}
	}
	return 0;
}

/* Entries of the old record of @old whose key the new record lacks. */
static void insert_collect_stale(struct cache *c, struct insert_ctx *x, struct cache_host *old)
{
	unsigned i, nkeys = rec_nkeys(&old->rec);
	struct cache_entry *e;
	struct cache_key k;

	x->n_stale = 0;
	for (i = 0; i < nkeys; i++) {
		if (rec_key(&old->rec, i, &k) || key_in(x->keys, x->n_keys, &k))
			continue;
		e = entry_find(c, &k);
		if (e && e->host == old && !ptr_in(x->stale, x->n_stale, e))
			x->stale[x->n_stale++] = e;
	}
}

/* Find @need victims that are neither keys of the new record nor entries of
 * the host being inserted. false if there are not enough. */
static bool insert_collect_victims(struct cache *c, struct insert_ctx *x, struct cache_host *nh,
				   unsigned need)
{
	struct list_node *n;

	x->n_victims = 0;
	for (n = c->lru.next; n != &c->lru && x->n_victims < need; n = n->next) {
		struct cache_entry *e = list_entry(n, struct cache_entry, lru);

		if (entry_evictable(e) && (!nh || e->host != nh) &&
		    !key_in(x->keys, x->n_keys, &e->key))
			x->victims[x->n_victims++] = e;
	}
	return x->n_victims == need;
}

static void insert_free_spares(struct insert_ctx *x)
{
	struct cache_entry *e;

	while ((e = x->spare)) {
		x->spare = e->hnext;
		free(e);
	}
}

/* Would the insert skip this key (held by a more authoritative host)? */
static bool key_held_above(const struct cache_entry *e, const struct cache_host *nh, uint8_t origin)
{
	return e && e->host && e->host != nh && origin_rank(e->host->origin) < origin_rank(origin);
}

int cache_insert_host(struct cache *c, const struct ibres_hostrec *h, uint8_t origin,
		      uint32_t ttl_s, uint64_t now_ms)
{
	struct insert_ctx *x;
	struct cache_host *nh, *old;
	struct cache_entry *e;
	struct list_node grave;
	struct cache_key ident;
	unsigned i, missing = 0, applied = 0;
	uint64_t expires, need;
	uint16_t old_lid = 0;
	bool reused;
	int ret;

	if (!c || !h || origin > IBRES_ORIGIN_FABRIC)
		return -EINVAL;
	ret = rec_validate(h);
	if (ret)
		return ret;
	rec_ident(h, &ident);
	old = host_find(c, &ident);
	if (old && origin_rank(old->origin) < origin_rank(origin))
		return 0; /* a more authoritative record of this host wins */

	/* not zeroed: 8 KiB, and every array is filled before it is read */
	x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->n_stale = x->n_victims = 0;
	x->spare = NULL;
	ret = insert_collect_keys(c, x, h);
	if (ret)
		goto out;

	reused = old != NULL;
	if (reused) {
		nh = old;
		old_lid = old->rec.lid;
		insert_collect_stale(c, x, old);
	} else {
		nh = calloc(1, sizeof(*nh));
		if (!nh) {
			ret = -ENOMEM;
			goto out;
		}
		key_copy(&nh->ident, &ident);
	}

	/* Capacity, checked before anything changes. */
	for (i = 0; i < x->n_keys; i++)
		if (!entry_find_hashed(c, &x->keys[i], x->hash[i]))
			missing++;
	need = (uint64_t)c->n_entries - x->n_stale + missing;
	need = need > c->max_entries ? need - c->max_entries : 0;
	if (need && !insert_collect_victims(c, x, nh, (unsigned)need)) {
		ret = -ENOSPC;
		goto out_host;
	}
	for (i = 0; i < missing; i++) {
		e = malloc(sizeof(*e));
		if (!e) {
			ret = -ENOMEM;
			goto out_host;
		}
		e->hnext = x->spare;
		x->spare = e;
	}

	/* Nothing fails from here on. The temporary reference keeps @nh alive
	 * while its old entries go and until its waiters were called. */
	host_get(nh);
	if (!reused)
		host_link(c, nh);
	list_init(&grave);
	for (i = 0; i < x->n_victims; i++)
		entry_evict(c, x->victims[i], &grave);
	for (i = 0; i < x->n_stale; i++)
		entry_detach(c, x->stale[i], &grave);

	nh->rec = *h;
	nh->origin = origin;
	expires = origin_pinned(origin) ? UINT64_MAX : deadline(now_ms, ttl_s);
	nh->expires_ms = expires;

	for (i = 0; i < x->n_keys; i++) {
		bool keep_route;

		e = entry_find_hashed(c, &x->keys[i], x->hash[i]);
		if (key_held_above(e, nh, origin))
			continue;
		if (!e) {
			e = x->spare;
			x->spare = e->hnext;
			entry_init(c, e, &x->keys[i], now_ms);
		}
		keep_route = e->host == nh && e->state == IBRES_STATE_ROUTED &&
			     e->route_expires_ms > now_ms && old_lid == h->lid;
		if (!keep_route) {
			route_clear(e);
			e->state = IBRES_STATE_RESOLVED;
		}
		entry_set_host(c, e, nh);
		e->expires_ms = expires;
		entry_lru_update(c, e);
		applied++;
	}
	if (applied || x->n_stale)
		c->stats.inserts++;

	/* Everything is in place: now the callbacks. They may look keys up,
	 * which can expire entries, so every entry is found afresh. */
	for (i = 0; i < x->n_keys; i++) {
		e = entry_find_hashed(c, &x->keys[i], x->hash[i]);
		if (e && e->host == nh && !list_empty(&e->waiters))
			cache_complete(e, 0);
	}
	grave_finish(c, &grave, -ENODATA);
	host_put(c, nh);
	ret = 0;
	goto out;

out_host:
	if (!reused)
		free(nh);
out:
	insert_free_spares(x);
	free(x);
	return ret;
}

/* ---- removal ---------------------------------------------------------------- */

unsigned cache_remove_host_by_gid(struct cache *c, const uint8_t gid[16])
{
	struct cache_host *h;
	struct list_node grave;
	struct cache_key k;
	unsigned n;

	if (!c || !gid || cache_key_addr(&k, IBRES_KEY_GID, gid))
		return 0;
	h = host_find(c, &k);
	if (!h || origin_pinned(h->origin))
		return 0;
	list_init(&grave);
	n = host_detach_entries(c, h, &grave);
	grave_finish(c, &grave, -ENODATA);
	return n;
}

static bool pred_origin(struct cache_entry *e, void *arg)
{
	return e->host && e->host->origin == *(const uint8_t *)arg;
}

unsigned cache_remove_origin(struct cache *c, uint8_t origin)
{
	struct list_node grave;
	unsigned n;

	if (!c)
		return 0;
	list_init(&grave);
	n = detach_matching(c, pred_origin, &origin, &grave);
	grave_finish(c, &grave, -ECANCELED);
	return n;
}

void cache_set_negative(struct cache *c, struct cache_entry *e, uint32_t ttl_s, int status,
			uint64_t now_ms)
{
	if (!c || !e)
		return;
	if (status >= 0)
		status = -ENODATA;
	entry_set_host(c, e, NULL);
	route_clear(e);
	e->state = IBRES_STATE_NEGATIVE;
	e->neg_status = status;
	e->expires_ms = ttl_s ? deadline(now_ms, ttl_s) : now_ms;
	entry_lru_update(c, e);
	cache_complete(e, status);
}

/* ---- waiters ---------------------------------------------------------------- */

void cache_complete(struct cache_entry *e, int status)
{
	struct list_node todo;
	struct cache_waiter *w;

	/* Take the list first: callbacks may cancel other waiters of @e. While
	 * busy, lookups from the callbacks do not free @e under our feet. */
	list_move_all(&e->waiters, &todo);
	e->busy++;
	while (!list_empty(&todo)) {
		w = list_entry(todo.next, struct cache_waiter, node);
		list_del(&w->node);
		if (w->done)
			w->done(w, e, status);
	}
	e->busy--;
}

void cache_add_waiter(struct cache_entry *e, struct cache_waiter *w)
{
	list_add_tail(&e->waiters, &w->node);
}

void cache_cancel_waiter(struct cache_waiter *w)
{
	if (w && w->node.next)
		list_del(&w->node);
}

void cache_set_route(struct cache_entry *e, int ep, const struct ibres_path_record *p,
		     uint32_t ttl_s, uint64_t now_ms)
{
	if (!e || !p || (e->state != IBRES_STATE_RESOLVED && e->state != IBRES_STATE_ROUTED))
		return;
	e->route = *p;
	e->route_ep = ep;
	e->route_expires_ms = deadline(now_ms, ttl_s);
	e->state = IBRES_STATE_ROUTED;
}

/* ---- sweep / flush / foreach ------------------------------------------------ */

static bool pred_sweep(struct cache_entry *e, void *arg)
{
	uint64_t now_ms = *(const uint64_t *)arg;

	if (entry_expired(e, now_ms))
		return true;
	entry_route_check(e, now_ms);
	return false;
}

unsigned cache_sweep(struct cache *c, uint64_t now_ms)
{
	struct list_node grave;
	unsigned n;

	if (!c || !c->buckets)
		return 0;
	list_init(&grave);
	n = detach_matching(c, pred_sweep, &now_ms, &grave);
	c->stats.expirations += n;
	grave_finish(c, &grave, -ETIMEDOUT);
	return n;
}

static bool pred_unpinned(struct cache_entry *e, void *arg)
{
	(void)arg;
	return !cache_entry_pinned(e);
}

unsigned cache_flush(struct cache *c, const struct cache_key *k)
{
	struct list_node grave;
	struct cache_entry *e;
	unsigned n;

	if (!c || !c->buckets)
		return 0;
	list_init(&grave);
	if (!k) {
		n = detach_matching(c, pred_unpinned, NULL, &grave);
	} else {
		if (!key_valid(k))
			return 0;
		e = entry_find(c, k);
		if (!e || cache_entry_pinned(e))
			return 0;
		if (e->host) {
			n = host_detach_entries(c, e->host, &grave);
		} else {
			entry_detach(c, e, &grave);
			n = 1;
		}
	}
	grave_finish(c, &grave, -ECANCELED);
	return n;
}

unsigned cache_drop_routes(struct cache *c, int ep, const uint8_t *gid)
{
	struct cache_entry *e;
	unsigned i, n = 0;

	if (!c || !c->buckets)
		return 0;
	for (i = 0; i < c->n_buckets; i++)
		for (e = c->buckets[i]; e; e = e->hnext) {
			if (e->state != IBRES_STATE_ROUTED || (ep >= 0 && e->route_ep != ep) ||
			    (gid && memcmp(e->route.dgid, gid, 16)))
				continue;
			route_clear(e);
			e->state = IBRES_STATE_RESOLVED;
			n++;
		}
	return n;
}

void cache_foreach(struct cache *c, int (*cb)(struct cache_entry *e, void *arg), void *arg)
{
	struct cache_entry *e;
	unsigned i;

	if (!c || !c->buckets)
		return;
	for (i = 0; i < c->n_buckets; i++)
		for (e = c->buckets[i]; e; e = e->hnext)
			if (cb(e, arg))
				return;
}

/* ---- consistency check -------------------------------------------------------- */

static int check_host(struct cache *c, struct cache_host *h, unsigned bucket)
{
	struct cache_key k, seen[CACHE_HOST_KEYS_MAX];
	struct cache_entry *e;
	unsigned i, n_seen = 0, refs = 0, nkeys;

	if (key_bucket(c, &h->ident) != bucket || host_find(c, &h->ident) != h || !h->refs)
		return -EUCLEAN;
	if (rec_validate(&h->rec) || h->origin > IBRES_ORIGIN_FABRIC)
		return -EUCLEAN;
	rec_ident(&h->rec, &k);
	if (!key_eq(&k, &h->ident))
		return -EUCLEAN;
	nkeys = rec_nkeys(&h->rec);
	for (i = 0; i < nkeys; i++) {
		if (rec_key(&h->rec, i, &k))
			return -EUCLEAN;
		if (key_in(seen, n_seen, &k))
			continue;
		key_copy(&seen[n_seen++], &k);
		e = entry_find(c, &k);
		if (e && e->host == h)
			refs++;
	}
	return refs == h->refs ? 0 : -EUCLEAN;
}

int cache_check(struct cache *c)
{
	struct cache_entry *e;
	struct cache_host *h;
	struct list_node *n;
	unsigned i, count = 0, pinned = 0, on_lru = 0, hosts = 0;

	if (!c || !c->buckets || !c->hbuckets || !c->n_buckets ||
	    (c->n_buckets & (c->n_buckets - 1)))
		return -EUCLEAN;
	for (i = 0; i < c->n_buckets; i++) {
		for (e = c->buckets[i]; e; e = e->hnext) {
			if (++count > c->max_entries || !key_valid(&e->key) ||
			    key_bucket(c, &e->key) != i || entry_find(c, &e->key) != e)
				return -EUCLEAN;
			if (e->state > IBRES_STATE_NEGATIVE)
				return -EUCLEAN;
			if ((e->state == IBRES_STATE_RESOLVED || e->state == IBRES_STATE_ROUTED) !=
			    (e->host != NULL))
				return -EUCLEAN;
			if (e->host && (host_find(c, &e->host->ident) != e->host ||
					!rec_has_key(&e->host->rec, &e->key)))
				return -EUCLEAN;
			if (e->state != IBRES_STATE_ROUTED && e->route_ep != -1)
				return -EUCLEAN;
			if (cache_entry_pinned(e)) {
				pinned++;
				if (list_linked(&e->lru) || e->expires_ms != UINT64_MAX)
					return -EUCLEAN;
			} else if (!list_linked(&e->lru)) {
				return -EUCLEAN;
			}
		}
	}
	if (count != c->n_entries || c->stats.entries != c->n_entries)
		return -EUCLEAN;
	for (n = c->lru.next; n != &c->lru; n = n->next) {
		if (n->next->prev != n || ++on_lru > count)
			return -EUCLEAN;
		e = list_entry(n, struct cache_entry, lru);
		if (cache_entry_pinned(e) || entry_find(c, &e->key) != e)
			return -EUCLEAN;
	}
	if (on_lru != count - pinned)
		return -EUCLEAN;
	for (i = 0; i < c->n_buckets; i++) {
		for (h = c->hbuckets[i]; h; h = h->hnext) {
			if (++hosts > count || check_host(c, h, i))
				return -EUCLEAN;
		}
	}
	return hosts == c->stats.hosts ? 0 : -EUCLEAN;
}
