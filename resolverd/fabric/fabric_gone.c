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

/* The entry of @d to name next on port @port: heard saying goodbye within
 * @window, named there fewer than @repeats times, not @taken yet; the least
 * often named, then the latest (a rack switched off: every host in turn, not
 * the same FW_GONE_MAX every time). -1: none. */
static int next_to_name(const struct fabric_departed *d, unsigned port, uint64_t now,
			uint64_t window, unsigned repeats, uint64_t taken)
{
	int best = -1;

	for (unsigned i = 0; i < d->n; i++) {
		const struct departed *e = &d->e[i], *b = best < 0 ? NULL : &d->e[best];

		if ((taken >> i & 1) || !e->said_ms || now >= e->until_ms ||
		    now - e->said_ms >= window || !(e->ports >> port & 1) ||
		    e->told[port] >= repeats)
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
	const struct fabric_departed *d = &f->departed;
	unsigned port = (unsigned)(p - f->ports), repeats = f->cfg->goodbye_repeats;
	/* long enough to name every entry the table holds that often, and no
	 * longer: a port that comes back up later names no stale host */
	uint64_t window = ((uint64_t)repeats * DEPARTED_MAX / FW_GONE_MAX + 1) * p->rule.round_ms;
	uint64_t now = now_ms(), taken = 0;
	char name[IBRES_NAME_MAX + 1];
	uint8_t buf[FW_MAX_LEN];
	int i, len;

	_Static_assert(DEPARTED_MAX <= 64, "a set of entries is 64 bits");
	if (!repeats || next_to_name(d, port, now, window, repeats, 0) < 0)
		return;
	/* the names go where the datagram has room, its stamp and HMAC
	 * included (fabric_port_send() adds them): an identity that fills it
	 * names none, and counts none */
	len = fw_encode(m, NULL, 0, buf, sizeof(buf));
	if (len < 0)
		return;
	len += 4 + 8 + FW_HMAC_LEN; /* the STAMP item, the trailer */
	while (m->n_gone < FW_GONE_MAX &&
	       (i = next_to_name(d, port, now, window, repeats, taken)) >= 0) {
		const struct host_key *k = &d->e[i].name;

		taken |= UINT64_C(1) << i;
		if (len + 4 + k->len > FW_MAX_LEN)
			continue; /* a shorter one may fit */
		memcpy(name, k->data, k->len);
		name[k->len] = '\0';
		if (fw_gone_add(m, name) < 0)
			continue;
		len += 4 + k->len;
	}
}

void fabric_gone_told(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct fabric_departed *d = &f->departed;
	unsigned port = (unsigned)(p - f->ports);
	const char *name = m->gone;

	for (unsigned i = 0; i < m->n_gone; i++, name += strlen(name) + 1) {
		size_t len = strlen(name);

		for (unsigned j = 0; j < d->n; j++)
			if (d->e[j].name.len == len && !memcmp(d->e[j].name.data, name, len) &&
			    d->e[j].told[port] < UINT8_MAX)
				d->e[j].told[port]++;
	}
	f->gone.sent += m->n_gone;
}

/* Did our receive path drop datagrams within the last round (or was that
 * first seen now)? Then the silence of a host named may be ours. */
static bool dropping(struct fabric *f, uint64_t now, uint64_t round)
{
	struct fabric_gone *g = &f->gone;

	if (f->dg.drops_seen != g->drops) {
		g->drops = f->dg.drops_seen;
		g->drops_ms = now ? now : 1;
	}
	return g->drops_ms && now - g->drops_ms < round;
}

void fabric_gone_heard(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from)
{
	struct fabric *f = p->f;
	uint64_t now = now_ms(), round = p->rule.round_ms;
	/* as the digests' rule keeps a host found silent: until its next
	 * announce could come, in our rounds (every node should announce at
	 * the same interval) */
	uint64_t until = now + DEPARTED_UNHEARD_ROUNDS * round;
	const char *name = m->gone;
	unsigned n = 0;

	if (!m->n_gone)
		return;
	f->gone.heard += m->n_gone;
	/* a periodic multicast announce from the sender's own address (not a
	 * copy from elsewhere); only where announces refresh every entry in
	 * time does a host's silence say it left; not while we drop */
	if ((m->has_digest && (m->digest.flags & FW_DIGEST_UNICAST)) ||
	    !fabric_sent_by(from, &m->sender) || !fabric_directory_mode(f) ||
	    dropping(f, now, round))
		return;
	for (unsigned i = 0; i < m->n_gone; i++, name += strlen(name) + 1) {
		struct host_key k;

		if (host_key_name(&k, name) == 0)
			n += store_shorten_host(f->store, &k, fabric_scope(p, true), until);
	}
	f->gone.shortened += n;
	if (n)
		log_debug("fabric: %s named %u hosts that said goodbye: %u endpoints on %s kept "
			  "only until their next announce",
			  m->sender.names[0], m->n_gone, n, p->ep->cfg.label);
}
