// SPDX-License-Identifier: MIT
/*
 * A GOODBYE repeated in our announces, and the hosts peers' announces name
 * asked where we hold them (fabric_gone.h).
 */
#include "fabric/fabric_gone.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "fabric/fabric_departed.h"
#include "fabric/fabric_digest.h"

/* The entry of @d to repeat next on port @port: heard saying goodbye within
 * @window, not taken yet (@taken), the latest first; -1: none. */
static int next_to_repeat(const struct fabric_departed *d, unsigned port, uint64_t now,
			  uint64_t window, uint64_t taken)
{
	int best = -1;

	for (unsigned i = 0; i < d->n; i++) {
		const struct departed *e = &d->e[i];

		if ((taken >> i & 1) || !e->said_ms || now >= e->until_ms ||
		    now - e->said_ms >= window || !(e->ports >> port & 1))
			continue;
		if (best < 0 || e->said_ms > d->e[best].said_ms)
			best = (int)i;
	}
	return best;
}

void fabric_gone_put(struct fabric_port *p, struct fw_msg *m)
{
	struct fabric *f = p->f;
	const struct fabric_departed *d = &f->departed;
	uint64_t now = now_ms(), window = f->cfg->goodbye_repeats * p->rule.round_ms, taken = 0;
	unsigned port = (unsigned)(p - f->ports);
	char name[IBRES_NAME_MAX + 1];
	int i;

	_Static_assert(DEPARTED_MAX <= 64, "a set of entries is 64 bits");
	while ((i = next_to_repeat(d, port, now, window, taken)) >= 0) {
		const struct host_key *k = &d->e[i].name;

		taken |= UINT64_C(1) << i;
		memcpy(name, k->data, k->len);
		name[k->len] = '\0';
		if (fw_gone_add(m, name) < 0)
			break; /* FW_GONE_MAX, or its bytes */
		f->gone.sent++;
	}
}

/* Was the name of term @term asked lately (within @round)? If not, it is
 * remembered as asked now, in place of the oldest. */
static bool asked_lately(struct fabric_gone *g, uint64_t term, uint64_t now, uint64_t round)
{
	unsigned use = 0;

	for (unsigned i = 0; i < GONE_ASKED_MAX; i++) {
		if (g->asked[i].ms && g->asked[i].term == term && now - g->asked[i].ms < round)
			return true;
		if (g->asked[i].ms < g->asked[use].ms)
			use = i;
	}
	g->asked[use].term = term;
	g->asked[use].ms = now ? now : 1;
	return false;
}

/* May port @port start another probe in this round? */
static bool port_may_probe(struct fabric_gone *g, unsigned port, uint64_t now, uint64_t round)
{
	if (!g->port[port].since_ms || now - g->port[port].since_ms >= round) {
		g->port[port].since_ms = now ? now : 1;
		g->port[port].n = 0;
	}
	if (g->port[port].n >= GONE_PROBES_ROUND)
		return false;
	g->port[port].n++;
	return true;
}

void fabric_gone_heard(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from)
{
	struct fabric *f = p->f;
	struct fabric_gone *g = &f->gone;
	uint64_t now = now_ms(), round = p->rule.round_ms;
	unsigned port = (unsigned)(p - f->ports);
	const char *name = m->gone;

	for (unsigned i = 0; i < m->n_gone; i++, name += strlen(name) + 1) {
		struct fabric_at at;
		struct fw_where w;
		struct host_key k;

		g->heard++;
		if (!f->ev.hint || host_key_name(&k, name) < 0)
			continue;
		/* held here, at an address we can ask (not ourselves) */
		fabric_where_of(p, name, from, now, &w);
		if (w.kind == FW_WHERE_NONE || !fabric_at_where(port, from, &w, &at))
			continue;
		if (asked_lately(g, host_digest_term(&k), now, round) ||
		    !port_may_probe(g, port, now, round)) {
			g->skipped++;
			continue;
		}
		at.named_by = digest_sender(m->sender.gids[0]);
		at.probe = true;
		g->probes++;
		log_debug("fabric: %s heard %s say goodbye: asked where we hold it on %s",
			  m->sender.names[0], name, p->ep->cfg.label);
		f->ev.hint(f->ev.arg, &k, &at);
	}
}

/* Is endpoint @e reached at @at's address on @p? */
static bool endpoint_at(const struct fabric_port *p, const struct host *e,
			const struct fabric_at *at, uint64_t now)
{
	struct fabric_at here;
	struct fw_where w;

	return fabric_where_endpoint(p, e, &at->addr, now, &w) && w.kind != FW_WHERE_NONE &&
	       fabric_at_where(at->port, &at->addr, &w, &here) &&
	       !memcmp(&here.addr, &at->addr, sizeof(here.addr));
}

void fabric_probe_unanswered(struct fabric *f, const struct host_key *k, const struct fabric_at *at)
{
	struct {
		uint8_t gid[16];
		uint16_t pkey;
	} gone[HOST_RAILS_MAX];
	char name[IBRES_NAME_MAX + 1];
	struct fabric_port *p;
	unsigned n = 0;
	uint64_t now = now_ms();
	struct host *h;

	if (!f || at->port >= f->n_ports || k->type != IBRES_KEY_NAME)
		return;
	p = &f->ports[at->port];
	memcpy(name, k->data, k->len);
	name[k->len] = '\0';
	/* its endpoints still reached there (news of it ended the probe; a
	 * host learned since at another address is another's word) */
	h = store_lookup(f->store, k, now, false);
	for (struct host *e = h; e && n < HOST_RAILS_MAX; e = host_next_endpoint(h, e)) {
		if (!endpoint_at(p, e, at, now))
			continue;
		memcpy(gone[n].gid, host_gid(e), 16);
		gone[n].pkey = host_pkey(e);
		n++;
	}
	for (unsigned i = 0; i < n; i++)
		fabric_departed_forget(p, gone[i].gid, gone[i].pkey, name, false);
	f->gone.forgotten += n;
	if (n)
		log_info("fabric: %s, which a peer heard say goodbye, did not answer on %s: "
			 "forgotten there",
			 name, p->ep->cfg.label);
}
