/* SPDX-License-Identifier: MIT */
/*
 * Inside the shared directory's code (lib/hostdir*.c): what its files share
 * and nothing outside them includes (named apart from the daemon's
 * os/hostdir_impl.h, since lib/ is on every include path).
 */
#ifndef IBRES_IBDIR_IMPL_H
#define IBRES_IBDIR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hostdir.h"

/* Are the header's four counts within their arrays (names, IPv4, IPv6,
 * GIDs)? All four at once: a byte over its limit, once the limit's distance
 * to 0x7f is added, has its top bit set (no carry leaves a byte below 0x80:
 * 0x7f + 0x7f < 0x100), and so has a byte over 0x7f. */
IBRES_HOT static inline __attribute__((always_inline)) bool counts_ok(const struct ibdir_rec *hdr)
{
	_Static_assert(IBRES_HOST_NAMES_MAX < 0x80 && IBRES_HOST_ADDRS_MAX < 0x80 &&
			       IBRES_HOST_GIDS_MAX < 0x80,
		       "the limits of the counts' check");
	_Static_assert(offsetof(struct ibdir_rec, n_gids) ==
			       offsetof(struct ibdir_rec, n_names) + 3,
		       "counts side by side, n_names first");
	static const uint8_t to_7f[4] = {0x7f - IBRES_HOST_NAMES_MAX, 0x7f - IBRES_HOST_ADDRS_MAX,
					 0x7f - IBRES_HOST_ADDRS_MAX, 0x7f - IBRES_HOST_GIDS_MAX};
	uint32_t counts, add;

	memcpy(&counts, (const uint8_t *)hdr + offsetof(struct ibdir_rec, n_names), 4);
	memcpy(&add, to_7f, 4); /* in the counts' byte order */
	return !(((counts + add) | counts) & 0x80808080u);
}

/* Move @n bytes from @from down to @to (never after it), a word at a time
 * while a word is left: each word is loaded before its store, and a store
 * reaches no byte not loaded yet since @to <= @from. */
static inline __attribute__((always_inline)) void move_down(uint8_t *to, const uint8_t *from,
							    size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, from + i, 8);
		memcpy(to + i, &w, 8);
	}
	for (; i < n; i++)
		to[i] = from[i];
}

/* The view of the copy @rec (@len bytes) that a look-up by the key
 * @key/@klen of table @tab gives: checked, the key found, the view cut to
 * the key's endpoints. 0, 1 when the record does not list the key, or
 * -EBADMSG (hostdir_rec.c). */
int ibdir_view_for_key(uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen,
		       struct ibdir_view *v);

#endif
