// SPDX-License-Identifier: MIT
/*
 * Answering range queries (fabric_fetch.h): the count and sum of our hosts
 * in each part of the range asked, or their names, to the asker alone,
 * with our whole digest. At most RANGE_ANSWERS_PER_S a second: each answer
 * walks the store once.
 */
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/hoststore_range.h"

_Static_assert(FW_PARTS_MAX == RANGE_PARTS_MAX, "the wire's parts are the store's");

/* A token bucket: RANGE_ANSWERS_PER_S a second, as many at once. */
static bool budget(struct fabric_fetch *x, uint64_t now)
{
	if (now >= x->bucket_ms + 1000 / RANGE_ANSWERS_PER_S) {
		uint64_t add = (now - x->bucket_ms) / (1000 / RANGE_ANSWERS_PER_S);

		x->bucket = add >= RANGE_ANSWERS_PER_S - x->bucket ? RANGE_ANSWERS_PER_S
								   : x->bucket + (unsigned)add;
		x->bucket_ms = now;
	}
	if (!x->bucket)
		return false;
	x->bucket--;
	return true;
}

struct names_fill {
	struct fw_msg *m;
	size_t room; /* bytes of items left in the datagram */
};

static int add_name(void *arg, const char *name)
{
	struct names_fill *nf = arg;
	size_t need = 4 + strlen(name); /* an item's header and the name */

	if (need > nf->room || fw_hint_add(nf->m, name) < 0) {
		nf->m->range.flags |= FW_RANGE_MORE;
		return 1;
	}
	nf->room -= need;
	return 0;
}

void fabric_range_answer(struct fabric_port *p, const struct fw_msg *m,
			 const struct transport_addr *from)
{
	struct fabric *f = p->f;
	struct store_range r = {.lo = m->range.lo, .hi = m->range.hi, .parts = m->range.parts};
	struct fw_msg *a = &f->answer;

	if (!budget(&f->fx, now_ms())) {
		f->fx.refused++;
		return;
	}
	fabric_msg_init(p, a, FW_RANGE_ANSWER, m->tid);
	a->has_range = true;
	a->range = m->range;
	a->range.flags &= FW_RANGE_NAMES;
	fabric_digest_put(p, a, true);
	if (m->range.flags & FW_RANGE_NAMES) {
		/* what the rest takes, then as many names as fit (a stamp and
		 * an HMAC counted whether a key is set or not) */
		int base = fw_encode(a, NULL, 0, f->buf, sizeof(f->buf));
		struct names_fill nf = {.m = a};

		if (base < 0)
			return;
		if ((size_t)base + FW_HMAC_LEN + 12 < FW_MAX_LEN)
			nf.room = FW_MAX_LEN - (size_t)base - FW_HMAC_LEN - 12;
		r.parts = 1;
		store_range_names(f->store, &r, add_name, &nf);
	} else {
		struct store_digest d[RANGE_PARTS_MAX];

		store_range_digest(f->store, &r, d);
		for (unsigned i = 0; i < r.parts; i++) {
			a->sums[i].hosts =
				d[i].hosts > UINT32_MAX ? UINT32_MAX : (uint32_t)d[i].hosts;
			a->sums[i].sum = d[i].sum;
		}
		a->n_sums = r.parts;
	}
	if (fabric_port_send(p, a, from) == 0)
		f->fx.answered++;
}
