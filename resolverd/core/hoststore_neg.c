// SPDX-License-Identifier: MIT
/* The host store's negative answers: a chained table of keys with their
 * status and expiry, bounded at STORE_NEGATIVE_MAX, oldest out first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hoststore_impl.h"

/* ---- negative answers --------------------------------------------------- */

struct store_neg **hs_neg_find(struct host_store *s, const struct host_key *k, uint32_t hash)
{
	struct store_neg **pp;

	for (pp = &s->negs[hash & s->neg_mask]; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == hash && (*pp)->type == k->type && (*pp)->len == k->len &&
		    !memcmp((*pp)->data, k->data, k->len))
			return pp;
	return NULL;
}

void hs_neg_remove(struct host_store *s, struct store_neg **pp)
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
	s->neg_bytes -= sizeof(*n) + n->len;
	free(n);
}

void hs_neg_forget(struct host_store *s, const struct host_key *k)
{
	struct store_neg **pp;

	if (!s->stats.negatives)
		return;
	pp = hs_neg_find(s, k, hs_hash(s, k));
	if (pp)
		hs_neg_remove(s, pp);
}

void hs_neg_remove_oldest(struct host_store *s)
{
	struct store_neg *n = s->neg_oldest;
	struct host_key k;

	k.type = n->type;
	k.len = n->len;
	memcpy(k.data, n->data, n->len);
	hs_neg_remove(s, hs_neg_find(s, &k, n->hash));
}

int store_negative(struct host_store *s, const struct host_key *k, uint64_t now_ms, bool count)
{
	struct store_neg **pp;

	if (!s->stats.negatives || !host_key_valid(k))
		return 0;
	pp = hs_neg_find(s, k, hs_hash(s, k));
	if (!pp)
		return 0;
	if ((*pp)->expires_ms <= now_ms) {
		hs_neg_remove(s, pp);
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
	hash = hs_hash(s, k);
	pp = hs_neg_find(s, k, hash);
	if (pp)
		hs_neg_remove(s, pp); /* the new answer replaces it, or (0 s) none is left */
	if (!ttl_s || hs_slot_find(s, k, hash) >= 0)
		return 0;
	n = malloc(sizeof(*n) + k->len);
	if (!n)
		return -ENOMEM;
	if (s->stats.negatives >= STORE_NEGATIVE_MAX)
		hs_neg_remove_oldest(s);
	n->expires_ms = deadline(now_ms, ttl_s);
	n->status = status < 0 ? status : -ENODATA;
	n->hash = hash;
	n->type = k->type;
	n->len = k->len;
	memcpy(n->data, k->data, k->len);
	s->neg_bytes += sizeof(*n) + n->len;
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

