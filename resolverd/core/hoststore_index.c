// SPDX-License-Identifier: MIT
/*
 * The host store's two indexes (hoststore_impl.h has their layout): the key
 * index, open addressing with linear probing in Robin Hood order and
 * backward-shift deletion (no tombstones), kept under 7/8 full; and the
 * identity index, one slot per endpoint record, which also holds every
 * record the store has.
 */
#include "core/hoststore_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the key index ------------------------------------------------------ */

/* The hash of the key in @sl (a slot keeps too few of its bits). */
static uint32_t slot_rehash(const struct host_store *s, struct store_slot sl)
{
	struct host_key k;

	hs_key(slot_host(sl), slot_kidx(sl), &k);
	return hs_hash(s, &k);
}

/* How far slot @i of @slots (@n of them, taken) is from its key's home: a
 * far one's key is hashed again. */
static unsigned slot_dist_at(const struct host_store *s, const struct store_slot *slots, unsigned n,
			     unsigned i)
{
	unsigned dist = slot_dist(slots[i]);

	if (dist < SLOT_DIST_FAR)
		return dist;
	return hs_dist(i, hs_home(slot_rehash(s, slots[i]), n), n);
}

/* Robin Hood insertion: a key passes the slots whose keys are as far from
 * their homes or farther, and takes the first nearer one's place, which
 * goes on the same way. Along a probe run the homes never go back, so a
 * look-up stops at the first slot nearer its home than its key would be
 * (hs_slot_find()). */
void hs_slot_put(const struct host_store *s, struct store_slot *slots, unsigned n,
		 struct store_slot sl, uint32_t hash)
{
	unsigned i = hs_home(hash, n), d = 0;

	for (;; i = hs_next(i, n), d++) {
		unsigned rd;

		if (!slots[i].w) {
			slots[i] = slot_with_dist(sl, d);
			return;
		}
		rd = slot_dist_at(s, slots, n, i);
		if (rd < d) {
			struct store_slot there = slots[i];

			slots[i] = slot_with_dist(sl, d);
			sl = there;
			d = rd;
		}
	}
}

/* Backward-shift deletion: the slots after it move one back, up to an empty
 * one or one at its key's home (Robin Hood order stays). */
void hs_slot_del(struct host_store *s, unsigned i)
{
	unsigned n = s->n_slots;

	hs_at(s, i)->n_indexed--;
	s->n_keys--;
	for (unsigned j = hs_next(i, n); s->slots[j].w; i = j, j = hs_next(j, n)) {
		unsigned d = slot_dist_at(s, s->slots, n, j);

		if (!d)
			break;
		s->slots[i] = slot_with_dist(s->slots[j], d - 1);
	}
	s->slots[i].w = 0;
}

/* Room for @more keys: the index at most INDEX_FULL_NUM/DEN full, grown
 * half as large again (to 7/12 full; what its keys need, not the power of
 * two above): every growth hashes every key again, reading its host, and a
 * smaller step would do that more often than it saves (a quarter: learning
 * 48,000 eight-rail hosts took a fifth longer, bench/RESULTS.md). In Robin
 * Hood order a look-up takes (1 + 1 / (1 - load)) / 2 slots on average,
 * found or not (1.7 at 7/12, 4.5 at 7/8). */
#define INDEX_FULL_NUM 7u
#define INDEX_FULL_DEN 8u
int hs_slots_reserve(struct host_store *s, unsigned more)
{
	uint64_t want = (uint64_t)s->n_keys + more, cap = s->n_slots, ncap;

	if (want * INDEX_FULL_DEN <= cap * INDEX_FULL_NUM)
		return 0;
	ncap = want * 12 / 7 + 1;
	if (ncap < cap + cap / 2)
		ncap = cap + cap / 2;
	if (ncap > UINT32_MAX)
		return -ENOMEM;
	s->index_compact = false;
	return hs_slots_resize(s, (unsigned)ncap);
}

int hs_slots_resize(struct host_store *s, unsigned ncap)
{
	struct store_slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	/* a slot keeps too few bits of its hash for a home in a table of
	 * another size: every key is read from its host and hashed again */
	for (unsigned i = 0; i < s->n_slots; i++)
		if (s->slots[i].w)
			hs_slot_put(s, ns, ncap, s->slots[i], slot_rehash(s, s->slots[i]));
	free(s->slots);
	s->slots = ns;
	s->n_slots = ncap;
	return 0;
}

/* ---- hosts: identity index, use order ------------------------------------ */

/* The identity's hash: a GID identity hashes without its P_Key, so that a
 * port's partitions share a home and store_remove_gid() finds them all in
 * one run. */
static uint64_t ident_hash(const struct host_store *s, const struct host_key *k)
{
	struct host_key gid;

	if (k->type == IBRES_KEY_GID && k->len == 18) {
		gid = *k;
		gid.len = 16;
		k = &gid;
	}
	return host_key_hash(&s->kh, k);
}

/* The home slot of an identity of hash @hash in a table of @mask + 1. */
static unsigned ident_home_of(uint64_t hash, unsigned mask)
{
	return (unsigned)(hash >> 32) & mask;
}

unsigned hs_ident_home(const struct host_store *s, const struct host_key *k)
{
	return ident_home_of(ident_hash(s, k), s->ident_mask);
}

static uint64_t ident_word(const struct host *h, uint64_t hash)
{
	return (uint64_t)(uintptr_t)h | (hash & IDENT_TAG_MASK);
}

struct host *hs_ident_find(const struct host_store *s, const struct host_key *id)
{
	uint64_t hash = ident_hash(s, id), w;
	struct host_key k;

	for (unsigned i = ident_home_of(hash, s->ident_mask); (w = s->idents[i]);
	     i = (i + 1) & s->ident_mask) {
		struct host *h = ident_host(w);

		if (!h || (w & IDENT_TAG_MASK) != (hash & IDENT_TAG_MASK))
			continue;
		hs_ident(h, &k);
		if (host_key_eq(&k, id))
			return h;
	}
	return NULL;
}

/* Into the first free or gone slot from its home; 1 when it took a free one. */
static unsigned ident_put(uint64_t *idents, unsigned mask, uint64_t w, uint64_t hash)
{
	unsigned i = ident_home_of(hash, mask);
	bool was_free;

	while (idents[i] > IDENT_GONE)
		i = (i + 1) & mask;
	was_free = !idents[i];
	idents[i] = w;
	return was_free;
}

/* Room for one more endpoint: at most IDENT_FULL_NUM/DEN of the slots taken,
 * gone ones counted (a look-up passes them); a table whose endpoints would
 * fill half of it doubles, else it is written again without them. */
int hs_idents_reserve(struct host_store *s)
{
	uint64_t cap = (uint64_t)s->ident_mask + 1, ncap = cap;
	uint64_t *nt;
	unsigned used = 0;

	if (((uint64_t)s->ident_used + 1) * IDENT_FULL_DEN <= cap * IDENT_FULL_NUM)
		return 0;
	while ((s->stats.hosts + 1) * 2 > ncap)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		return -ENOMEM;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (unsigned i = 0; i < cap; i++) {
		struct host *h = ident_host(s->idents[i]);
		struct host_key k;
		uint64_t hash;

		if (!h)
			continue;
		hs_ident(h, &k);
		hash = ident_hash(s, &k);
		used += ident_put(nt, (unsigned)ncap - 1, ident_word(h, hash), hash);
	}
	free(s->idents);
	s->idents = nt;
	s->ident_mask = (unsigned)ncap - 1;
	s->ident_used = used;
	return 0;
}

void hs_ident_link(struct host_store *s, struct host *h)
{
	struct host_key k;
	uint64_t hash;

	hs_ident(h, &k);
	hash = ident_hash(s, &k);
	s->ident_used += ident_put(s->idents, s->ident_mask, ident_word(h, hash), hash);
	s->rec_bytes += hs_rec_bytes(h);
}

/* @h's slot is marked gone: nothing moves, so that a walk of the table may
 * remove what it walks. No gone slot is left right before a free one (a
 * look-up would pass it for nothing): those before it are freed too. */
void hs_ident_unlink(struct host_store *s, struct host *h)
{
	struct host_key k;
	unsigned i;

	hs_ident(h, &k);
	for (i = hs_ident_home(s, &k); s->idents[i]; i = (i + 1) & s->ident_mask)
		if (ident_host(s->idents[i]) == h)
			break;
	if (!s->idents[i])
		return;
	s->idents[i] = IDENT_GONE;
	s->rec_bytes -= hs_rec_bytes(h);
	if (s->idents[(i + 1) & s->ident_mask])
		return;
	for (; s->idents[i] == IDENT_GONE; i = (i - 1) & s->ident_mask) {
		s->idents[i] = 0;
		s->ident_used--;
	}
}
