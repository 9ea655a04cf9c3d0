// SPDX-License-Identifier: MIT
/*
 * Hosts heard saying GOODBYE, and the digests of peers that missed it
 * (fabric_departed.h).
 */
#include "fabric/fabric_departed.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "ibres_proto.h"
#include "tlv.h"

static unsigned port_index(const struct fabric_port *p)
{
	return (unsigned)(p - p->f->ports);
}

/* How long the GOODBYE vouches for a host's absence: see DEPARTED_FRESH_MS. */
static uint64_t fresh_first(const struct fabric *f)
{
	uint64_t neg = (uint64_t)f->cfg->negative_ttl_s * 1000;

	return neg > DEPARTED_FRESH_MS ? neg : DEPARTED_FRESH_MS;
}

static struct departed *find(struct fabric_departed *d, uint64_t term, uint64_t now)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->e[i].term == term && now < d->e[i].until_ms)
			return &d->e[i];
	return NULL;
}

void fabric_departed_before(const struct fabric *f, struct departed_mark *mk)
{
	struct store_digest dg;

	store_digest(f->store, &dg);
	mk->whole = dg.hosts;
	for (unsigned i = 0; i < f->n_ports; i++) {
		store_fabric_digest(f->store, (int)f->ports[i].ep->index, &dg);
		mk->port[i] = dg.hosts;
	}
}

void fabric_departed_after(struct fabric_port *p, const struct fw_msg *m,
			   const struct departed_mark *mk)
{
	struct fabric *f = p->f;
	struct fabric_departed *d = &f->departed;
	uint64_t now = now_ms();
	struct store_digest dg;
	struct departed *e;
	struct host_key k;
	uint32_t ports = 0;
	bool whole;

	if (host_key_name(&k, m->sender.names[0]) < 0)
		return;
	store_digest(f->store, &dg);
	whole = dg.hosts + 1 == mk->whole;
	for (unsigned i = 0; i < f->n_ports; i++) {
		store_fabric_digest(f->store, (int)f->ports[i].ep->index, &dg);
		if (dg.hosts + 1 == mk->port[i])
			ports |= 1u << i;
	}
	if (!whole && !ports)
		return; /* another endpoint of its host is still heard everywhere */
	e = find(d, host_digest_term(&k), now);
	if (!e) {
		if (d->n < DEPARTED_MAX) {
			e = &d->e[d->n++];
		} else {
			e = &d->e[d->next];
			d->next = (d->next + 1) % DEPARTED_MAX;
		}
		*e = (struct departed){.name = k, .term = host_digest_term(&k)};
	}
	e->at = (struct fabric_at){.port = port_index(p), .addr = *p->rx_from};
	e->until_ms = now + (uint64_t)f->cfg->addr_ttl_s * 1000;
	e->ports |= ports;
	e->whole |= whole;
	/* it said so itself: gone, as an unanswered query would tell */
	e->gone_ms = now;
	e->fresh_ms = fresh_first(f);
	e->asked_until = 0;
}

static bool in_scope(const struct departed *e, unsigned port, bool fabric, uint64_t now)
{
	return now < e->until_ms && (fabric ? e->ports >> port & 1 : e->whole);
}

/* Which remembered hosts make @own into @d: one of them, or all of those
 * in scope. 0: none do. */
static uint64_t explaining(const struct fabric_departed *dp, unsigned port, bool fabric,
			   const struct store_digest *own, const struct fw_digest *d, uint64_t now)
{
	uint64_t extra = d->hosts - own->hosts, all = 0, sum = own->sum, n = 0;

	if (d->hosts <= own->hosts)
		return 0;
	for (unsigned i = 0; i < dp->n; i++) {
		if (!in_scope(&dp->e[i], port, fabric, now))
			continue;
		if (extra == 1 && own->sum + dp->e[i].term == d->sum)
			return UINT64_C(1) << i;
		all |= UINT64_C(1) << i;
		sum += dp->e[i].term;
		n++;
	}
	return n == extra && sum == d->sum ? all : 0;
}

enum departed_verdict fabric_departed_explains(struct fabric_port *p, const struct fw_digest *d,
					       const struct store_digest *own, uint64_t *until)
{
	struct fabric *f = p->f;
	struct fabric_departed *dp = &f->departed;
	uint64_t now = now_ms();
	uint64_t which = explaining(dp, port_index(p), d->flags & FW_DIGEST_FABRIC, own, d, now);
	enum departed_verdict v = DEPARTED_GONE;

	_Static_assert(DEPARTED_MAX <= 64, "a set of them is 64 bits");
	if (!which)
		return DEPARTED_NO;
	dp->explained++;
	*until = 0;
	for (unsigned i = 0; i < dp->n; i++) {
		struct departed *e = &dp->e[i];

		if (!(which >> i & 1) || (e->gone_ms && now - e->gone_ms < e->fresh_ms))
			continue;
		/* not confirmed lately: back, and we missed its announces? Ask
		 * it where it said goodbye from; the fabric waits for that */
		if (now >= e->asked_until) {
			e->gone_ms = 0;
			e->asked_until = now + DEPARTED_ASK_MS;
			log_debug("fabric: a peer holds %.*s, which said goodbye: asked",
				  e->name.len, (const char *)e->name.data);
			if (f->ev.hint)
				f->ev.hint(f->ev.arg, &e->name, &e->at);
		}
		if (e->asked_until > *until)
			*until = e->asked_until;
		v = DEPARTED_ASKING;
	}
	return v;
}

bool fabric_departed_unanswered(struct fabric_port *p, const struct host_key *k, uint64_t *until)
{
	struct fabric_departed *dp = &p->f->departed;
	uint64_t now = now_ms(), round;
	struct departed *e = k->type == IBRES_KEY_NAME ? find(dp, host_digest_term(k), now) : NULL;

	if (!e || e->name.len != k->len || memcmp(e->name.data, k->data, k->len))
		return false;
	dp->confirmed++;
	e->gone_ms = now;
	e->asked_until = 0;
	/* asked again later each time: a peer that missed the GOODBYE may keep
	 * the host for addr_ttl, and every node hears its digests */
	round = (uint64_t)p->f->cfg->announce_interval_s * 1000;
	e->fresh_ms *= 2;
	if (e->fresh_ms > round)
		e->fresh_ms = round > fresh_first(p->f) ? round : fresh_first(p->f);
	*until = 0;
	for (unsigned i = 0; i < dp->n; i++)
		if (dp->e[i].asked_until > now && dp->e[i].asked_until > *until)
			*until = dp->e[i].asked_until;
	return true;
}

void fabric_departed_stats(const struct fabric *f, struct tlv_writer *w)
{
	tlv_put_str(w, IBRES_T_NAME, "fabric_departed_explained");
	tlv_put_u64(w, IBRES_T_COUNTER, f ? f->departed.explained : 0);
	tlv_put_str(w, IBRES_T_NAME, "fabric_departed_confirmed");
	tlv_put_u64(w, IBRES_T_COUNTER, f ? f->departed.confirmed : 0);
}
