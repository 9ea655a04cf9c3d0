// SPDX-License-Identifier: MIT
/*
 * Answering range queries (fabric_fetch.h): the count and sum of our hosts
 * in each part of the range asked, or their names, to the asker alone,
 * with our whole digest, from a sorted copy of the directory's terms
 * (core/term_index.h) rebuilt at most every RANGE_INDEX_FRESH_MS while the
 * store changes. At most RANGE_ANSWERS_PER_S a second.
 */
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_impl.h"

#include <string.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/hostkey.h"
#include "core/hoststore_range.h"
#include "core/term_index.h"

_Static_assert(FW_PARTS_MAX == RANGE_PARTS_MAX, "the wire's parts are the store's");

/* A token bucket: @per_s a second, as many at once. */
static bool budget(struct range_bucket *b, unsigned per_s, uint64_t now)
{
	uint64_t add = now > b->ms ? (now - b->ms) * per_s / 1000 : 0;

	if (add) {
		b->tokens = add >= per_s - b->tokens ? per_s : b->tokens + (unsigned)add;
		b->ms = now;
	}
	if (!b->tokens)
		return false;
	b->tokens--;
	return true;
}

/* Where @name's host is reached from the asker's port @p, as seen from
 * @from (the asker's address: the same family): FW_WHERE_NONE when not
 * learned there (ourselves, gone since the index was built). */
static void where_of(struct fabric_port *p, const char *name, const struct transport_addr *from,
		     uint64_t now, struct fw_where *w)
{
	struct ibres_hostrec rec;
	struct host_key k;
	struct host *h;

	memset(w, 0, sizeof(*w));
	if (host_key_name(&k, name) < 0)
		return;
	h = store_lookup(p->f->store, &k, now, false);
	for (struct host *e = h; e; e = host_next_endpoint(h, e)) {
		if (host_origin(e) != IBRES_ORIGIN_FABRIC ||
		    !(host_heard_on(e) >> p->ep->index & 1) || host_expires_ms(e) <= now)
			continue;
		host_record(e, &rec, now);
		if (from->len && from->ss.ss_family == AF_INET && rec.n_v4) {
			w->kind = FW_WHERE_IPV4;
			memcpy(w->addr, &rec.v4[0], 4);
		} else if (from->len && from->ss.ss_family == AF_INET6 && rec.n_v6) {
			w->kind = FW_WHERE_IPV6;
			memcpy(w->addr, &rec.v6[0], 16);
		} else if (!from->len && rec.n_gids && rec.lid) { /* RoCE: no LID, no use */
			w->kind = FW_WHERE_IB;
			w->lid = rec.lid;
			w->qpn = rec.qpn;
			memcpy(w->addr, rec.gids[0], 16);
		}
		return;
	}
}

/* The names of the index in lo..hi from lo on, as many as fit @room bytes
 * of items; MORE when some did not. */
static void put_names(struct fabric_port *p, const struct term_index *ti, struct fw_msg *a,
		      size_t room, const struct transport_addr *from)
{
	bool where = a->range.flags & FW_RANGE_WHERE;
	uint64_t now = now_ms();

	for (size_t i = term_index_lower(ti, a->range.lo);
	     i < ti->n && ti->e[i].term <= a->range.hi; i++) {
		const char *name = term_index_name(ti, i);
		struct fw_where w = {0};
		size_t need;

		if (where)
			where_of(p, name, from, now, &w);
		need = 4 + fw_where_len(&w) + strlen(name); /* an item's header, the rest */
		if (need > room || fw_hint_add_at(a, name, &w) < 0) {
			a->range.flags |= FW_RANGE_MORE;
			return;
		}
		room -= need;
	}
}

const struct term_index *fabric_terms(struct fabric *f, struct fabric_port *p, uint64_t now)
{
	struct term_index *ti = p ? &p->terms : &f->fx.index;
	int fabric = fabric_scope(p, true);
	struct store_digest d;

	if (p)
		p->terms_used_ms = now;
	else
		f->fx.index_used_ms = now;
	if (ti->built_ms) {
		store_fabric_digest(f->store, fabric, &d);
		if ((d.hosts == ti->of.hosts && d.sum == ti->of.sum) ||
		    now < ti->built_ms + RANGE_INDEX_FRESH_MS)
			return ti;
	}
	if (term_index_build(ti, f->store, fabric, now) < 0)
		return NULL;
	f->fx.index_builds++;
	return ti;
}

void fabric_range_idle(struct fabric *f, uint64_t now)
{
	if (f->fx.index.built_ms && now >= f->fx.index_used_ms + RANGE_INDEX_IDLE_MS)
		term_index_free(&f->fx.index);
	for (unsigned i = 0; i < f->n_ports; i++)
		if (f->ports[i].terms.built_ms &&
		    now >= f->ports[i].terms_used_ms + RANGE_INDEX_IDLE_MS)
			term_index_free(&f->ports[i].terms);
}

void fabric_range_answer(struct fabric_port *p, const struct fw_msg *m,
			 const struct transport_addr *from, bool asker_new)
{
	struct fabric *f = p->f;
	struct store_range r = {.lo = m->range.lo, .hi = m->range.hi, .parts = m->range.parts};
	struct fw_msg *a = &f->answer;
	uint64_t now = now_ms();
	const struct term_index *ti;

	bool busy = !budget(&f->fx.answer_budget, RANGE_ANSWERS_PER_S, now);

	/* over the limit: our word alone (a digest costs nothing), or, past
	 * that one too, silence */
	if (busy)
		f->fx.refused++;
	if (busy && !budget(&f->fx.busy_budget, RANGE_BUSY_PER_S, now))
		return;
	/* what this fabric heard, or (a daemon before per-fabric digests
	 * asking) the whole directory */
	ti = busy ? NULL : fabric_terms(f, m->range.flags & FW_RANGE_FABRIC ? p : NULL, now);
	if (!busy && !ti)
		return;
	fabric_msg_init(p, a, FW_RANGE_ANSWER, m->tid);
	a->has_range = true;
	a->range = m->range;
	a->range.flags &= FW_RANGE_NAMES | FW_RANGE_FABRIC |
			  (m->range.flags & FW_RANGE_NAMES ? FW_RANGE_WHERE : 0);
	if (asker_new)
		a->range.flags |= FW_RANGE_ASKER_NEW;
	/* the digest of what the sums count */
	fabric_digest_put(p, a, true, !(m->range.flags & FW_RANGE_FABRIC));
	if (busy) {
		a->range.flags |= FW_RANGE_BUSY;
		if (fabric_port_send(p, a, from) == 0)
			f->fx.busy_sent++;
		return;
	}
	if (m->range.flags & FW_RANGE_NAMES) {
		/* what the rest takes, then as many names as fit (a stamp and
		 * an HMAC counted whether a key is set or not) */
		int base = fw_encode(a, NULL, 0, f->buf, sizeof(f->buf));

		if (base < 0 || (size_t)base + FW_HMAC_LEN + 12 >= FW_MAX_LEN)
			return;
		put_names(p, ti, a, FW_MAX_LEN - (size_t)base - FW_HMAC_LEN - 12, from);
	} else {
		struct store_digest d[RANGE_PARTS_MAX];

		term_index_digest(ti, &r, d);
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
