// SPDX-License-Identifier: MIT
/*
 * The host store's removals (hoststore.h): an endpoint, a port's GID, what a
 * local port heard, an origin, a flush, the sweep of expired hosts. The
 * indexes are hoststore_index.c, the hosts themselves hoststore.c.
 */
#include "core/hoststore_impl.h"

#include <stdlib.h>
#include <string.h>

unsigned store_remove_endpoint(struct host_store *s, const uint8_t gid[16], uint16_t pkey)
{
	struct host_key k;
	struct host *h;

	hs_gid_ident(gid, pkey, &k);
	h = hs_ident_find(s, &k);
	if (!h || origin_pinned(h->origin))
		return 0;
	return hs_host_remove(s, h);
}

static bool in_scope(const struct host *e, int fabric)
{
	return e->origin == IBRES_ORIGIN_FABRIC &&
	       (fabric == STORE_ALL_FABRICS || e->heard_on >> fabric & 1);
}

void store_mark_unheard(struct host_store *s)
{
	struct host *e;

	/* only an endpoint of a daemon that announces is expected to be heard
	 * again within a round (one heard only in its unicast answer to our
	 * NEWCOMER is: its announces come) */
	hs_foreach_record (s, i, e)
		e->unheard = e->origin == IBRES_ORIGIN_FABRIC && e->announces;
}

unsigned store_count_unheard(const struct host_store *s, int fabric, unsigned *endpoints)
{
	const struct host *e;
	unsigned n = 0;

	*endpoints = 0;
	hs_foreach_record (s, i, e) {
		if (!in_scope(e, fabric))
			continue;
		++*endpoints;
		n += e->unheard;
	}
	return n;
}

unsigned store_shorten_unheard(struct host_store *s, int fabric, uint64_t until_ms)
{
	struct host *e;
	unsigned n = 0;

	hs_foreach_record (s, i, e) {
		bool moved = false;

		if (!e->unheard)
			continue;
		/* its host's endpoints at once: the observer is told
		 * once a host, and writes it whole */
		for (struct host *o = e; o; o = host_next_endpoint(e, o)) {
			if (!o->unheard)
				continue;
			o->unheard = 0;
			if (!in_scope(o, fabric) || o->expires_ms <= until_ms)
				continue;
			o->expires_ms = until_ms;
			moved = true;
			n++;
		}
		if (moved)
			hs_expiry_moved(s, e);
	}
	return n;
}

unsigned store_shorten_host(struct host_store *s, const struct host_key *name, int fabric,
			    uint64_t until_ms)
{
	long at = name->type == IBRES_KEY_NAME ? hs_slot_find(s, name, hs_hash(s, name)) : -1;
	struct host *h = at < 0 ? NULL : hs_at(s, at);
	unsigned n = 0;

	/* the key leads to one endpoint of the host; key 0 is its canonical
	 * name (an alias names a rail, or another host's) */
	if (!h || !hs_key_is(h, 0, name))
		return 0;
	for (struct host *o = h; o; o = host_next_endpoint(h, o)) {
		if (!in_scope(o, fabric) || !o->announces || o->expires_ms <= until_ms)
			continue;
		o->expires_ms = until_ms;
		n++;
	}
	if (n)
		hs_expiry_moved(s, h);
	return n;
}

unsigned store_remove_gid(struct host_store *s, const uint8_t gid[16])
{
	struct host_key k;
	uint8_t buf[16];
	unsigned n = 0;

	/* a port's partitions share their identity's home (hs_ident_home()),
	 * and removing one marks its slot gone: the run stays as it was */
	hs_gid_ident(gid, 0, &k);
	for (unsigned i = hs_ident_home(s, &k); s->idents[i]; i = (i + 1) & s->ident_mask) {
		struct host *h = hs_ident_at(s, i);

		if (!h || !h->n_gids || memcmp(h_gid(h, 0, buf), gid, 16) ||
		    origin_pinned(h->origin))
			continue;
		n += hs_host_remove(s, h);
	}
	return n;
}

/* @h is heard on @on from now on: its LID key moves to the fabric that gives. */
static void set_heard_on(struct host_store *s, struct host *h, uint32_t on)
{
	unsigned lid_kidx = h_nkeys(h) - 1; /* the LID is the last key */
	struct host_key k;
	uint32_t hash;
	long at;

	hs_fabric_count(s, h, h->heard_on, on);
	if (!h->lid || fabric_of_bits(on) == h_fabric(h)) {
		h->heard_on = on;
		return;
	}
	hs_key(h, lid_kidx, &k);
	at = hs_slot_find(s, &k, hs_hash(s, &k));
	h->heard_on = on;
	if (at < 0 || hs_at(s, at) != h)
		return; /* its LID was another's: it still is */
	hs_slot_del(s, (unsigned)at);
	hs_key(h, lid_kidx, &k);
	hash = hs_hash(s, &k);
	if (hs_slot_find(s, &k, hash) >= 0)
		return; /* taken on that fabric: the first there keeps it */
	/* one slot freed, one taken: no growth */
	hs_slot_put(s, s->slots, s->n_slots, slot_make(h, lid_kidx, hash, 0), hash);
	h->n_indexed++;
	s->n_keys++;
}

unsigned store_forget_fabric(struct host_store *s, unsigned ep)
{
	uint32_t bit = ep < 32 ? 1u << ep : 0;
	unsigned n = 0;
	struct host *h;

	hs_foreach_record (s, i, h) {
		if (h->origin != IBRES_ORIGIN_FABRIC || !(h->heard_on & bit))
			continue;
		set_heard_on(s, h, h->heard_on & ~bit);
		if (!h->heard_on || !h->n_indexed) {
			hs_host_remove(s, h);
			n++;
			continue;
		}
		if (s->ob.put)
			s->ob.put(s->ob.arg, h);
		hs_ring_changed(s, h, h);
	}
	s->stats.keys = s->n_keys;
	return n;
}

/* Remove the hosts @pred selects. */
static unsigned remove_hosts(struct host_store *s, bool (*pred)(const struct host *h, void *arg),
			     void *arg)
{
	unsigned n = 0;
	struct host *h;

	hs_foreach_record (s, i, h)
		if (pred(h, arg))
			n += hs_host_remove(s, h);
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
			hs_neg_remove_oldest(s);
		return n;
	}
	if (!host_key_valid(k))
		return 0;
	struct store_neg **pp = hs_neg_find(s, k, hs_hash(s, k));

	if (pp) {
		hs_neg_remove(s, pp);
		return 1;
	}
	long at = hs_slot_find(s, k, hs_hash(s, k));

	if (at < 0 || origin_pinned(hs_at(s, at)->origin))
		return 0;
	/* the whole host: every endpoint of it */
	struct host *h = hs_at(s, at);

	n = 0;
	while (h->sib_next)
		n += hs_host_remove(s, h->sib_next);
	return n + hs_host_remove(s, h);
}

static bool pred_expired(const struct host *h, void *arg)
{
	return h->expires_ms <= *(const uint64_t *)arg;
}

/* The key index 4/5 full, once the store stopped growing (store_sweep()):
 * grown at 7/8 to 7/12 (hs_slots_reserve()), it is 58-88 % full, and a
 * settled store keeps whatever room its last growth left. Only when that
 * saves an eighth of it: each key is hashed again, reading its host. */
static void compact_index(struct host_store *s, uint64_t now_ms)
{
	uint64_t want = (uint64_t)s->n_keys * 5 / 4 + 1;

	if (s->n_keys > s->keys_high || !s->keys_high_ms) {
		s->keys_high = s->n_keys;
		s->keys_high_ms = now_ms ? now_ms : 1;
		return;
	}
	if (s->index_compact || now_ms < s->keys_high_ms ||
	    now_ms - s->keys_high_ms < STORE_COMPACT_AFTER_MS)
		return;
	s->index_compact = true; /* until it grows again */
	if (want < SLOTS_MIN)
		want = SLOTS_MIN;
	if (want * 8 <= (uint64_t)s->n_slots * 7)
		hs_slots_resize(s, (unsigned)want); /* -ENOMEM: it stays as it is */
}

unsigned store_sweep(struct host_store *s, uint64_t now_ms)
{
	unsigned n = 0;
	struct host *h;

	hs_foreach_record (s, i, h) {
		if (pred_expired(h, &now_ms)) {
			hs_host_remove(s, h);
			s->stats.expirations++;
			n++;
		} else if (h->used && s->use_clock - h->used > USE_AGE_MAX) {
			h->used = s->use_clock - USE_AGE_MAX;
			h->used += !h->used; /* 0 is a pinned endpoint's */
		}
	}
	hs_routes_expire(s, now_ms);
	for (struct store_neg *ng = s->neg_oldest, *next; ng; ng = next) {
		next = ng->newer;
		if (ng->expires_ms <= now_ms) {
			struct host_key k = {.type = ng->type, .len = ng->len};

			memcpy(k.data, ng->data, ng->len);
			hs_neg_remove(s, hs_neg_find(s, &k, ng->hash));
			s->stats.expirations++;
			n++;
		}
	}
	compact_index(s, now_ms);
	return n;
}
