// SPDX-License-Identifier: MIT
/* Range digests of the host store (hoststore_range.h): one walk of the
 * identity index, each host once (the lowest-addressed endpoint of a ring,
 * of those heard on the fabric asked about, speaks for its host), its term
 * computed as the whole digest's is. */
#include "core/hoststore_range.h"

#include <string.h>

#include "core/hoststore_impl.h"

bool store_range_valid(const struct store_range *r)
{
	return r->lo <= r->hi && r->parts >= 1 && r->parts <= RANGE_PARTS_MAX;
}

/* The width of a part; 0 stands for 2^64 (one part, the whole space). */
static uint64_t part_width(const struct store_range *r)
{
	return (r->hi - r->lo) / r->parts + 1;
}

int store_range_part(const struct store_range *r, uint64_t term)
{
	uint64_t i;

	if (!store_range_valid(r) || term < r->lo || term > r->hi)
		return -1;
	if (r->parts == 1)
		return 0; /* and no division: the width may be 2^64 */
	i = (term - r->lo) / part_width(r);
	return i >= r->parts ? (int)r->parts - 1 : (int)i;
}

bool store_range_sub(const struct store_range *r, unsigned i, struct store_range *out)
{
	uint64_t w = part_width(r), off;

	if (!store_range_valid(r) || i >= r->parts)
		return false;
	/* no overflow: i is 0 for one part (w may stand for 2^64), else
	 * i < 16 and i * w <= hi - lo + w */
	off = (uint64_t)i * w;
	if (off > r->hi - r->lo)
		return false; /* past hi: empty */
	out->lo = r->lo + off;
	if (i == r->parts - 1 || r->hi - out->lo < w)
		out->hi = r->hi;
	else
		out->hi = out->lo + w - 1;
	out->parts = 1;
	return true;
}

void store_range_digest(const struct host_store *s, const struct store_range *r, int fabric,
			struct store_digest *out)
{
	const struct host *h;

	memset(out, 0, sizeof(*out) * r->parts);
	hs_foreach_record (s, i, h) {
		uint64_t t;
		int p;

		if (!hs_speaks(h, fabric))
			continue;
		t = hs_digest_term(h);
		p = store_range_part(r, t);
		if (p < 0)
			continue;
		out[p].hosts++;
		out[p].sum += t;
	}
}

unsigned store_range_names(const struct host_store *s, const struct store_range *r, int fabric,
			   int (*cb)(void *arg, const char *name), void *arg)
{
	const struct host *h;
	unsigned n = 0;

	hs_foreach_record (s, i, h) {
		char name[HOST_KEY_MAX + 1];
		struct host_key k;

		if (!hs_speaks(h, fabric) || store_range_part(r, hs_digest_term(h)) < 0)
			continue;
		hs_key(h, 0, &k);
		memcpy(name, k.data, k.len);
		name[k.len] = '\0';
		n++;
		if (cb(arg, name))
			return n;
	}
	return n;
}
