// SPDX-License-Identifier: MIT
/* Walking the host store, its size, and its invariants (for tests and
 * fuzzing). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hoststore_impl.h"

/* ---- walking, accounting, checking ---------------------------------------- */

unsigned store_foreach(struct host_store *s, unsigned from, store_visit_fn cb, void *arg)
{
	unsigned at = s->n_slots;
	struct host_key k;

	for (unsigned i = from; i < s->n_slots; i++) {
		struct store_slot sl = s->slots[i];
		const struct host *h = slot_host(sl);

		if (!sl.w)
			continue;
		hs_key(h, slot_kidx(sl), &k);
		if (cb(&k, h, 0, h->expires_ms, arg))
			return i;
	}
	for (const struct store_neg *n = s->neg_oldest; n; n = n->newer, at++) {
		if (at < from)
			continue;
		k.type = n->type;
		k.len = n->len;
		memcpy(k.data, n->data, n->len);
		if (cb(&k, NULL, n->status, n->expires_ms, arg))
			return at;
	}
	return at;
}


size_t store_index_bytes(const struct host_store *s)
{
	return (size_t)s->n_slots * sizeof(struct store_slot);
}

size_t store_bytes(const struct host_store *s)
{
	/* kept on every change: STATS and the metrics scrape ask often, and
	 * a walk of 48,000 hosts each time showed in a boot storm's profile */
	return store_index_bytes(s) + (s->ident_mask + 1) * sizeof(*s->idents) +
	       (s->neg_mask + 1) * sizeof(struct store_neg *) + s->rec_bytes + hs_routes_bytes(s) +
	       s->neg_bytes;
}

/* Is @h a record of @s (found by its identity)? */
static bool record_held(const struct host_store *s, const struct host *h)
{
	struct host_key id;

	hs_ident(h, &id);
	return hs_ident_find(s, &id) == h;
}

/* What store_bytes() keeps, walked: does it agree? */
static int check_bytes(const struct host_store *s)
{
	size_t recs = 0, negs = 0;
	const struct host *h;

	hs_foreach_record (s, i, h)
		recs += hs_rec_bytes(h);
	for (const struct store_neg *ng = s->neg_oldest; ng; ng = ng->newer)
		negs += sizeof(*ng) + ng->len;
	if (recs != s->rec_bytes || negs != s->neg_bytes)
		return -EUCLEAN;
	return hs_routes_check(s, record_held);
}

/* The distance from home of the key in the taken slot @i, hashed again. */
static unsigned true_dist(const struct host_store *s, unsigned i)
{
	struct host_key k;

	hs_key(slot_host(s->slots[i]), slot_kidx(s->slots[i]), &k);
	return hs_dist(i, hs_home(hs_hash(s, &k), s->n_slots), s->n_slots);
}

static int check_slots(struct host_store *s)
{
	struct host_key k;
	unsigned keys = 0;

	for (unsigned i = 0; i < s->n_slots; i++) {
		struct store_slot sl = s->slots[i];
		const struct host *h = slot_host(sl);
		unsigned dist;
		uint32_t hash;

		if (!sl.w)
			continue;
		keys++;
		if (!h || slot_kidx(sl) >= h_nkeys(h))
			return -EUCLEAN;
		hs_key(h, slot_kidx(sl), &k);
		hash = hs_hash(s, &k);
		dist = hs_dist(i, hs_home(hash, s->n_slots), s->n_slots);
		/* its hash bits, and its distance from home */
		if (!host_key_valid(&k) || slot_make(h, slot_kidx(sl), hash, dist).w != sl.w)
			return -EUCLEAN;
		/* reachable from its home without a gap, and the only slot of its key */
		if (hs_slot_find(s, &k, hash) != (long)i)
			return -EUCLEAN;
	}
	if (keys != s->n_keys)
		return -EUCLEAN;
	/* Robin Hood order (every slot checked above): a slot off its home
	 * follows a taken one at most one nearer its own */
	for (unsigned i = 0; i < s->n_slots; i++) {
		unsigned prev = i ? i - 1 : s->n_slots - 1, dist;

		if (!s->slots[i].w || !(dist = true_dist(s, i)))
			continue;
		if (!s->slots[prev].w || true_dist(s, prev) + 1 < dist)
			return -EUCLEAN;
	}
	return 0;
}

/* A ring closes within the store's hosts, and its members share origin,
 * canonical name and whether their daemon announces. */
static int check_ring(const struct host_store *s, const struct host *h)
{
	uint64_t n = 0;

	if (!h->sib_next)
		return 0;
	for (const struct host *e = h->sib_next; e != h; e = e->sib_next)
		if (!e || ++n >= s->stats.hosts || e->origin != h->origin || !h->rails ||
		    e->rails != h->rails || e->announces != h->announces ||
		    !hs_same_canonical(e, h))
			return -EUCLEAN;
	return n ? 0 : -EUCLEAN;
}

/* Is @h the member of its ring at the lowest address (the one that counts it)? */
static bool ring_first(const struct host *h)
{
	for (const struct host *e = h->sib_next; e != h; e = e->sib_next)
		if (e < h)
			return false;
	return true;
}

static int check_hosts(struct host_store *s)
{
	uint64_t hosts = 0, learned = 0;
	struct store_digest digest = {0, 0}, fabrics[STORE_FABRICS];
	struct host_key k;
	unsigned used = 0;
	struct host *h;

	memset(fabrics, 0, sizeof(fabrics));
	for (unsigned i = 0; i <= s->ident_mask; i++) {
		used += s->idents[i] != 0;
		/* no gone slot right before a free one (hs_ident_unlink()) */
		if (s->idents[i] == IDENT_GONE && !s->idents[(i + 1) & s->ident_mask])
			return -EUCLEAN;
	}
	if (used != s->ident_used ||
	    (uint64_t)used * IDENT_FULL_DEN > ((uint64_t)s->ident_mask + 1) * IDENT_FULL_NUM)
		return -EUCLEAN;
	hs_foreach_record (s, i, h) {
		unsigned slots = 0, nk = h_nkeys(h);

		hosts++;
		if (hs_digest_counts(h) && (!h->sib_next || ring_first(h))) {
			digest.hosts++;
			digest.sum += hs_digest_term(h);
		}
		for (int f = 0; f < STORE_FABRICS; f++)
			if (hs_speaks(h, f)) {
				fabrics[f].hosts++;
				fabrics[f].sum += hs_digest_term(h);
			}
		/* a learned endpoint has a use stamp, a pinned one none */
		if (origin_pinned(h->origin) == (h->used != 0))
			return -EUCLEAN;
		/* a host of several endpoints counts once */
		if (!origin_pinned(h->origin))
			learned += !h->sib_next || ring_first(h);
		/* an endpoint of a host may share every key it has, and
		 * keep none when the others go while a host of higher
		 * authority holds them: invisible until it is refreshed,
		 * replaced or expires */
		if (!record_held(s, h) || !nk)
			return -EUCLEAN;
		for (unsigned j = 0; j < nk; j++) {
			long at;

			hs_key(h, j, &k);
			at = hs_slot_find(s, &k, hs_hash(s, &k));
			if (at >= 0 && hs_at(s, at) == h && slot_kidx(s->slots[at]) == j)
				slots++;
		}
		/* only learned endpoints of announcing daemons are
		 * marked unheard */
		if (slots != h->n_indexed || check_ring(s, h) ||
		    (h->unheard && (h->origin != IBRES_ORIGIN_FABRIC || !h->announces)))
			return -EUCLEAN;
	}
	if (hosts != s->stats.hosts || learned != s->stats.learned ||
	    digest.hosts != s->digest.hosts || digest.sum != s->digest.sum ||
	    memcmp(fabrics, s->fabric_digest, sizeof(fabrics)))
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
	ret = check_bytes(s);
	if (ret)
		return ret;
	for (const struct store_neg *n = s->neg_oldest; n; n = n->newer) {
		struct host_key k = { .type = n->type, .len = n->len };

		memcpy(k.data, n->data, n->len);
		if (hs_neg_find(s, &k, n->hash) == NULL || ++negs > s->stats.negatives)
			return -EUCLEAN;
	}
	return negs == s->stats.negatives ? 0 : -EUCLEAN;
}
