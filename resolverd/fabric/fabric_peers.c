// SPDX-License-Identifier: MIT
/*
 * The peers a fetch may ask (fabric_peers.h): kept port by port, a voice
 * each that answers range queries, and the choice of the next one to ask.
 */
#include "fabric/fabric_peers.h"
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/endpoints.h"

/* The slots of port @port, *@n of them (FETCH_PEERS shared out). */
static struct fetch_peer *port_slots(struct fabric *f, unsigned port, unsigned *n)
{
	unsigned q = f->n_ports ? FETCH_PEERS / f->n_ports : FETCH_PEERS;

	if (q > FETCH_PORT_PEERS_MAX)
		q = FETCH_PORT_PEERS_MAX;
	_Static_assert(FETCH_PEERS / CFG_MAX_ENDPOINTS >= FETCH_PORT_PEERS_MIN,
		       "every port has room for K voices and a spare");
	*n = q;
	return &f->fx.peers[port * q];
}

/* Is @c the slot of the peer of port GID @gid? */
bool fetch_slot_is(const struct fetch_peer *c, const uint8_t gid[16])
{
	return c->used && !memcmp(c->gid, gid, 16);
}

/* A peer's slot on port @port (one at most: remember_peer() keeps a slot a
 * peer and port). */
struct fetch_peer *fetch_find_peer(struct fabric *f, unsigned port, const uint8_t gid[16])
{
	unsigned n;
	struct fetch_peer *c = port_slots(f, port, &n);

	for (unsigned i = 0; i < n; i++)
		if (fetch_slot_is(&c[i], gid))
			return &c[i];
	return NULL;
}

/* A peer that answers range queries was heard: it can vouch. The first
 * DIGEST_AGREE_K distinct ones are remembered for the daemon's life (a peer
 * forgotten by the fetch list, a lossy path, still counts): fewer, and K is
 * as many (a cluster mostly of daemons before range queries). */
void fetch_count_voice(struct fabric *f, const uint8_t gid[16])
{
	struct fabric_fetch *x = &f->fx;

	for (unsigned i = 0; i < x->n_voices; i++)
		if (!memcmp(x->voices[i], gid, 16))
			return;
	if (x->n_voices == DIGEST_AGREE_K)
		return;
	memcpy(x->voices[x->n_voices++], gid, 16);
	fabric_digest_voices(f, x->n_voices < DIGEST_AGREE_K ? x->n_voices : 0);
}

/* A peer restarted with a daemon before range queries: no voice now. */
static void drop_voice(struct fabric *f, const uint8_t gid[16])
{
	struct fabric_fetch *x = &f->fx;

	for (unsigned i = 0; i < x->n_voices; i++)
		if (!memcmp(x->voices[i], gid, 16)) {
			memmove(x->voices[i], x->voices[i + 1],
				(size_t)(x->n_voices - i - 1) * sizeof(x->voices[0]));
			x->n_voices--;
			fabric_digest_voices(f, x->n_voices);
			return;
		}
}

/* Gone, or an older daemon: forgotten on every port that heard it. */
void fetch_forget_peer(struct fabric *f, const uint8_t gid[16])
{
	for (unsigned i = 0; i < FETCH_PEERS; i++)
		if (fetch_slot_is(&f->fx.peers[i], gid))
			f->fx.peers[i].used = false;
}

/* A peer that answers range queries was heard from @from on @p: its slot
 * among @p's (kept, or a free one, or the next in the round's) and a clean
 * record. Returns the slot. */
static struct fetch_peer *remember_peer(struct fabric_port *p, const uint8_t gid[16],
					const struct transport_addr *from, bool claim, bool fabric,
					bool voice)
{
	unsigned port = (unsigned)(p - p->f->ports), n;
	struct fetch_peer *slots = port_slots(p->f, port, &n);
	struct fetch_peer *slot = fetch_find_peer(p->f, port, gid);

	for (unsigned i = 0; i < n && !slot; i++)
		if (!slots[i].used)
			slot = &slots[i];
	if (!slot) /* full: the next in the round takes the newcomer's place */
		slot = &slots[p->f->fx.next_peer % n];
	if (!fetch_slot_is(slot, gid))
		slot->claimed = slot->answered = slot->old = slot->fabric = slot->proven =
			false; /* a new peer's */
	slot->addr = *from;
	memcpy(slot->gid, gid, 16);
	slot->port = port;
	slot->claimed |= claim;
	slot->fabric |= fabric;
	slot->strikes = 0; /* heard: alive, whatever sessions were lost */
	slot->used = true;
	slot->proven |= voice;
	if (voice)
		fetch_count_voice(p->f, gid);
	return slot;
}

void fabric_fetch_peer(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from)
{
	struct store_digest own;
	struct fetch_peer *c;
	bool claim;

	if (!m->has_digest || !(m->digest.flags & FW_DIGEST_RANGES) || !from) {
		/* restarted with an older daemon (a rolling upgrade, or back):
		 * it would count our queries malformed */
		fetch_forget_peer(p->f, m->sender.gids[0]);
		if (!m->has_digest || !(m->digest.flags & FW_DIGEST_RANGES))
			drop_voice(p->f, m->sender.gids[0]);
		return;
	}
	store_fabric_digest(p->f->store, fabric_scope(p, m->digest.flags & FW_DIGEST_FABRIC), &own);
	claim = m->digest.hosts > own.hosts ||
		(m->digest.hosts == own.hosts && m->digest.sum != own.sum);
	c = remember_peer(p, m->sender.gids[0], from, claim, m->digest.flags & FW_DIGEST_FABRIC,
			  true);
	if (claim) {
		c->claim_hosts = m->digest.hosts;
		c->claim_sum = m->digest.sum;
	}
}

void fabric_fetch_asker(struct fabric_port *p, const struct fw_msg *m,
			const struct transport_addr *from)
{
	/* it asks, so it answers too: after a whole-cluster boot no announce
	 * comes for a round, and incomplete peers' queries are what refill
	 * the list that lossy sessions emptied */
	if (from)
		remember_peer(p, m->sender.gids[0], from, false, m->range.flags & FW_RANGE_FABRIC,
			      true);
}

void fabric_fetch_replier(struct fabric_port *p, const struct fw_msg *m,
			  const struct transport_addr *from)
{
	/* a host whose announces this fabric missed is a peer here all the
	 * same: without it, too few peers of this fabric may be left to
	 * vouch for it. Not a voice before it answers a range query (a
	 * daemon before them answers none, and the queries it leaves
	 * unanswered forget it) */
	unsigned port = (unsigned)(p - p->f->ports), n;
	struct fetch_peer *slots = port_slots(p->f, port, &n);

	if (!from || fetch_find_peer(p->f, port, m->sender.gids[0]))
		return;
	/* a free slot only: peers known to answer keep theirs */
	for (unsigned i = 0; i < n; i++)
		if (!slots[i].used) {
			/* asked about this fabric until its answer says it
			 * does not count per fabric */
			remember_peer(p, m->sender.gids[0], from, false, true, false);
			return;
		}
}

/* Does what @c's port heard hold what @c's digest claimed (as many hosts and
 * the same, or more)? Then the claim is no reason to ask it first: after a
 * whole-cluster boot every early digest claimed more than we held then, and
 * asking them in the list's order would leave the fabrics of the last ports
 * unasked for as many sessions. */
static bool claim_met(struct fabric *f, const struct fetch_peer *c)
{
	struct store_digest own;

	store_fabric_digest(f->store, fabric_scope(&f->ports[c->port], c->fabric), &own);
	return own.hosts > c->claim_hosts ||
	       (own.hosts == c->claim_hosts && own.sum == c->claim_sum);
}

/* Place @j of the round robin, which takes the ports in turn (one port's
 * peers after another would spend a burst's quick sessions on a port that
 * stays incomplete): the (@j / ports)-th slot of port @j % ports, or NULL
 * past that port's slots. One port: its slots in order. */
static struct fetch_peer *turn_slot(struct fabric *f, unsigned j)
{
	unsigned ports = f->n_ports ? f->n_ports : 1, n;
	struct fetch_peer *slots = port_slots(f, j % ports, &n);

	return j / ports < n ? &slots[j / ports] : NULL;
}

/* Does a peer whose digest claimed more than its fabric holds wait to be
 * asked (through a port that is up)? */
bool fetch_claim_waits(struct fabric *f)
{
	for (unsigned i = 0; i < FETCH_PEERS; i++)
		if (f->fx.peers[i].used && f->fx.peers[i].claimed &&
		    fabric_port_up(&f->ports[f->fx.peers[i].port]) &&
		    !claim_met(f, &f->fx.peers[i]))
			return true;
	return false;
}

/* May a new session ask the fabric of port @port at @now? Each fabric is
 * asked by one session a FETCH_GAP_MS at most (FETCH_VOUCH_GAP_MS after one
 * that only vouched), and the fabrics of several planes take turns without
 * waiting for each other's gaps. @later (NULL: a session going on, which
 * waits for none) takes the soonest time a port refused is free. */
static bool port_free(const struct fabric *f, unsigned port, uint64_t now, uint64_t *later)
{
	uint64_t t = f->ports[port].fetch_free_ms;

	if (!later || now >= t)
		return true;
	if (t < *later)
		*later = t;
	return false;
}

/* The peer of the next session (@later set), or the next one of a session
 * whose peer did not answer (@avoid: that one, @later NULL): one whose
 * digest claimed more than we hold, else (unless @claims_only) the next in
 * turn (so that answers vouching for us come from different peers), on a
 * fabric that counts itself incomplete if any. False when none is known,
 * or (*@later not UINT64_MAX) none may be asked before *@later. */
bool fetch_pick_peer(struct fabric *f, const uint8_t *avoid, uint64_t *later, bool claims_only)
{
	struct fabric_fetch *x = &f->fx;
	uint64_t now = now_ms();

	if (later)
		*later = UINT64_MAX;
	for (unsigned i = 0; i < FETCH_PEERS; i++) {
		struct fetch_peer *c = &x->peers[i];

		if (c->used && c->claimed && claim_met(f, c))
			c->claimed = false;
		/* until it answers: what we lack, it alone is known to hold */
		if (c->used && c->claimed && (!avoid || memcmp(c->gid, avoid, 16)) &&
		    fabric_port_up(&f->ports[c->port]) && port_free(f, c->port, now, later)) {
			x->peer = *c;
			return true;
		}
	}
	for (unsigned pass = 0; pass < 2 && !claims_only; pass++) {
		for (unsigned n = 0; n < FETCH_PEERS; n++) {
			struct fetch_peer *c = turn_slot(f, (x->next_peer + n) % FETCH_PEERS);

			if (!c || !c->used || (avoid && !memcmp(c->gid, avoid, 16)) ||
			    (!pass && !fabric_port_incomplete(&f->ports[c->port])) ||
			    !fabric_port_up(&f->ports[c->port]) ||
			    !port_free(f, c->port, now, later))
				continue;
			x->next_peer += n + 1;
			x->peer = *c;
			return true;
		}
		/* a peer passed over for its fabric's gap (a claimed one, or
		 * an incomplete fabric's) is waited for: no complete fabric's
		 * peer is asked before it */
		if (later && *later != UINT64_MAX)
			return false;
	}
	return false;
}
