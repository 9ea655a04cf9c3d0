// SPDX-License-Identifier: MIT
/*
 * A GOODBYE repeated in our announces, and the hosts peers' announces name
 * kept only until their next announce (fabric_gone.h).
 */
#include "fabric/fabric_gone.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "fabric/fabric_departed.h"

/* The entry of @d to name next on port @port: heard saying goodbye, named
 * there fewer than @repeats times, not @taken yet; the least often named,
 * then the latest (a rack switched off: every host in turn, not the same
 * FW_GONE_MAX every time). -1: none. */
static int next_to_name(const struct fabric_departed *d, unsigned port, uint64_t now,
			unsigned repeats, uint64_t taken)
{
	int best = -1;

	for (unsigned i = 0; i < d->n; i++) {
		const struct departed *e = &d->e[i], *b = best < 0 ? NULL : &d->e[best];

		if ((taken >> i & 1) || !e->said_ms || now >= e->until_ms ||
		    !(e->ports >> port & 1) || e->told[port] >= repeats)
			continue;
		if (!b || e->told[port] < b->told[port] ||
		    (e->told[port] == b->told[port] && e->said_ms > b->said_ms))
			best = (int)i;
	}
	return best;
}

void fabric_gone_put(struct fabric_port *p, struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct fabric_departed *d = &f->departed;
	unsigned port = (unsigned)(p - f->ports), repeats = f->cfg->goodbye_repeats;
	char name[IBRES_NAME_MAX + 1];
	uint64_t now = now_ms(), taken = 0;
	int i;

	_Static_assert(DEPARTED_MAX <= 64, "a set of entries is 64 bits");
	while (m->n_gone < FW_GONE_MAX && (i = next_to_name(d, port, now, repeats, taken)) >= 0) {
		const struct host_key *k = &d->e[i].name;

		taken |= UINT64_C(1) << i;
		memcpy(name, k->data, k->len);
		name[k->len] = '\0';
		if (fw_gone_add(m, name) < 0)
			break; /* FW_GONE_BYTES */
		d->e[i].told[port]++;
		f->gone.sent++;
	}
}

void fabric_gone_heard(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	/* as the digests' rule keeps a host found silent: until its next
	 * announce could come, in our rounds (every node should announce at
	 * the same interval) */
	uint64_t until = now_ms() + DEPARTED_UNHEARD_ROUNDS * p->rule.round_ms;
	const char *name = m->gone;

	f->gone.heard += m->n_gone;
	/* a host's silence says it left only where announces refresh every
	 * entry in time */
	if (!fabric_directory_mode(f))
		return;
	for (unsigned i = 0; i < m->n_gone; i++, name += strlen(name) + 1) {
		struct host_key k;
		unsigned n;

		if (host_key_name(&k, name) < 0)
			continue;
		n = store_shorten_host(f->store, &k, fabric_scope(p, true), until);
		if (!n)
			continue;
		f->gone.shortened += n;
		log_info("fabric: %s heard %s say goodbye: kept only until its next announce "
			 "(%u endpoints on %s)",
			 m->sender.names[0], name, n, p->ep->cfg.label);
	}
}
