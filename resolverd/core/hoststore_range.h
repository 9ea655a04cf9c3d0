/* SPDX-License-Identifier: MIT */
/*
 * The directory digest of part of the directory (doc/fabric-protocol.md,
 * "Fetching what a peer holds"): the hosts whose digest term lies in a range
 * of the 64-bit term space, split into equal parts, and their names. The
 * store keeps the whole digest only; a range is computed on demand by one
 * walk of the store (bench/RESULTS.md has its cost at 48,000 hosts), so
 * that inserts and removals stay O(1) and nothing grows with the store.
 */
#ifndef IBRESD_HOSTSTORE_RANGE_H
#define IBRESD_HOSTSTORE_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hoststore.h"

/* A range query splits its range into at most this many parts. */
#define RANGE_PARTS_MAX 16

/* Terms lo..hi (inclusive) in @parts (1..RANGE_PARTS_MAX) equal parts: part
 * i holds lo + i*w .. lo + (i+1)*w - 1, w = (hi - lo) / parts + 1, the last
 * one up to hi; parts past hi are empty. */
struct store_range {
	uint64_t lo, hi;
	unsigned parts;
};

/* Is @r well formed (lo <= hi, 1..RANGE_PARTS_MAX parts)? */
bool store_range_valid(const struct store_range *r);
/* The part of @r @term lies in, or -1 when outside it. */
int store_range_part(const struct store_range *r, uint64_t term);
/* Part @i of @r as a range of one part; false when it is empty. */
bool store_range_sub(const struct store_range *r, unsigned i, struct store_range *out);

/* The digest (hosts, sum) of each part of @r (@out: r->parts entries), over
 * the hosts the digest of @fabric counts (store_fabric_digest(); the whole
 * directory: STORE_ALL_FABRICS), each once. */
void store_range_digest(const struct host_store *s, const struct store_range *r, int fabric,
			struct store_digest *out);
/* Call @cb with the canonical name (lower case, NUL-terminated) of every
 * host of range @r's whole span that the digest of @fabric counts, until it
 * returns nonzero. Returns how many were visited. */
unsigned store_range_names(const struct host_store *s, const struct store_range *r, int fabric,
			   int (*cb)(void *arg, const char *name), void *arg);

#endif
