/* SPDX-License-Identifier: MIT */
/*
 * A sorted copy of the directory's digest terms (doc/fabric-protocol.md,
 * "Fetching what a peer holds"): every host the digest counts, its term and
 * its canonical name, in ascending term, with running sums. A range's count
 * and sum are then two binary searches, and a range's names come in term
 * order from any term on, so that a peer can page through a whole
 * directory. A copy, not an index kept by the store: inserts and removals
 * stay O(1), and a copy a little behind the store gives hints, never
 * answers (its user rebuilds it when the store changed and it is old).
 */
#ifndef IBRESD_TERM_INDEX_H
#define IBRESD_TERM_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/hoststore_range.h"

struct term_entry {
	uint64_t term;
	uint32_t name; /* offset of its NUL-terminated name in names */
};

struct term_index {
	struct term_entry *e; /* n, ascending term */
	uint64_t *below;      /* n + 1: below[i], the sum of the terms of e[0..i-1] */
	char *names;
	size_t n, names_len;
	struct store_digest of; /* the digest of its fabric when built */
	int fabric;		/* the local fabric it copies, or STORE_ALL_FABRICS */
	uint64_t built_ms;	/* 0: never built */
};

/* (Re)build @ti from @s at @now, of the hosts the digest of @fabric counts
 * (store_fabric_digest()): 0, or -ENOMEM (@ti is then empty). */
int term_index_build(struct term_index *ti, const struct host_store *s, int fabric, uint64_t now);
void term_index_free(struct term_index *ti);
/* The first entry whose term is at least @term (n: none). */
size_t term_index_lower(const struct term_index *ti, uint64_t term);
/* The digest of each part of @r (@out: r->parts entries), as
 * store_range_digest() would give it for the hosts of @ti. */
void term_index_digest(const struct term_index *ti, const struct store_range *r,
		       struct store_digest *out);
/* Entry @i's name. */
static inline const char *term_index_name(const struct term_index *ti, size_t i)
{
	return ti->names + ti->e[i].name;
}

#endif
