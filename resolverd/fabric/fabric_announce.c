// SPDX-License-Identifier: MIT
/*
 * This node's own announcements (doc/fabric-protocol.md, ANNOUNCE): the
 * start-up (or resync) burst of one NEWCOMER announce, again only while
 * nobody was heard or when the peers asked had mostly not heard of us; the
 * periodic ones; the unicast answer to a newcomer that could not have
 * heard ours; the last one, when a reload turns them off. At a
 * whole-cluster boot each node so hears each peer once.
 */
#include "fabric/fabric_impl.h"

#include <errno.h>
#include <string.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/jitter.h"
#include "core/list.h"
#include "core/log.h"
#include "fabric/fabric_digest.h"
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_wire.h"

/* NEWCOMER announces of a burst at start-up: one, and up to two more
 * while nobody was heard at all. */
#define STARTUP_ANNOUNCES 3
/* Between a burst's NEWCOMER announces sent on evidence (NEWCOMER_REPEATS
 * of them at most, fabric_fetch.h). */
#define NEWCOMER_AGAIN_MS 500
/* A first NEWCOMER no port could send is tried again this much later. */
#define FIRST_RETRY_MS 100

unsigned fabric_announce_all(struct fabric *f, uint16_t flags, uint8_t type, uint64_t tid)
{
	unsigned sent = 0;
	struct fw_msg m;

	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];

		if (!fabric_port_up(p))
			continue;
		fabric_msg_init(p, &m, type, tid);
		m.flags |= flags;
		if (type == FW_ANNOUNCE)
			fabric_digest_put(p, &m, false, false);
		/* not a burst's (its repeats come within a second, while
		 * losses are still likely): the periodic ones and the last */
		if (type == FW_ANNOUNCE && !(flags & FW_FLAG_NEWCOMER))
			fabric_gone_put(p, &m);
		if (flags & FW_FLAG_NEWCOMER) {
			/* since when we keep what this port hears: the burst's
			 * start, or later the port's joining the group (IB: the
			 * SA join). Peers that announced since need not answer
			 * (heard_us()); not listening yet, UP 0: all answer */
			uint64_t since = p->t.mcast_since_ms, now = now_ms(), up = 0;

			if (since && since < f->burst_began_ms)
				since = f->burst_began_ms;
			if (since && since <= now)
				up = now - since;
			m.has_up = true;
			m.up_ms = up > UINT32_MAX ? UINT32_MAX : (uint32_t)up;
			f->newcomer_sent_ms = now;
		}
		if (fabric_port_send(p, &m, NULL) == 0) {
			sent++;
			fabric_gone_told(p, &m);
			if (type == FW_ANNOUNCE)
				f->c.announces_sent++;
			if (flags & FW_FLAG_NEWCOMER)
				log_debug("fabric: NEWCOMER announce on %s (up %u ms)", p->ep->cfg.label,
					  m.up_ms);
		}
	}
	return sent;
}

void fabric_burst_begin(struct fabric *f)
{
	f->startup_announces_left = STARTUP_ANNOUNCES;
	f->newcomer_repeats_left = NEWCOMER_REPEATS;
	f->burst_overheard = f->c.overheard;
	f->burst_began_ms = now_ms();
	fabric_fetch_burst(f);
	f->burst = (uint64_t)jitter_next(&f->rng) << 32 | jitter_next(&f->rng);
	/* random start-up delay: a rebooting rack must not announce at once */
	loop_timer_arm(f->loop, &f->announce_timer, now_ms() + jitter_next(&f->rng) % 100);
}

/* RAIL_DOWN for @ep on every other port that is up. */
static void rail_down_send(struct fabric *f, const struct endpoint *ep)
{
	struct fw_msg m;

	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];

		if (!fabric_port_up(p) || p->ep == ep || !ep->cfg.id.n_gids)
			continue;
		fabric_msg_init(p, &m, FW_RAIL_DOWN, 0);
		m.has_target = true;
		host_key_addr(&m.target, IBRES_KEY_GID, ep->cfg.id.gids[0]);
		if (fabric_port_send(p, &m, NULL) == 0)
			f->c.rail_downs_sent++;
	}
}

void fabric_rail_down_say(struct fabric *f, const struct endpoint *ep)
{
	rail_down_send(f, ep);
	f->rail_down_left[ep->index] = (uint8_t)(f->cfg->goodbye_repeats < UINT8_MAX
							 ? f->cfg->goodbye_repeats
							 : UINT8_MAX);
}

/* With a periodic announcement: the repeats due of rails still down. */
static void rail_down_repeat(struct fabric *f)
{
	for (unsigned i = 0; i < f->eps->n && i < CFG_MAX_ENDPOINTS; i++) {
		const struct endpoint *ep = &f->eps->ep[i];

		if (!f->rail_down_left[i])
			continue;
		if (!ep->down) {
			f->rail_down_left[i] = 0; /* up again: it announced itself */
			continue;
		}
		f->rail_down_left[i]--;
		rail_down_send(f, ep);
	}
}

void fabric_on_announce_timer(struct loop_timer *t)
{
	struct fabric *f = container_of(t, struct fabric, announce_timer);
	uint64_t next;

	/* a reload turned announcements off: a period of 0 would re-arm the
	 * timer at once, forever (a multicast storm) */
	if (!fabric_announcing(f))
		return;
	if (f->startup_announces_left) {
		/* one NEWCOMER announce: every peer up hears it or answers it.
		 * Again only while nobody was heard at all (the first node up,
		 * or ours lost), or when the peers asked later had mostly not
		 * heard of us (fabric_newcomer_again()): a repeat costs every
		 * node a datagram, and what a node missed the fetch finds */
		bool first = f->startup_announces_left == STARTUP_ANNOUNCES;

		if (first || (f->c.overheard == f->burst_overheard && f->newcomer_repeats_left)) {
			/* a first that no port could send (IB: not joined yet)
			 * is tried again, within the settle time */
			if (!fabric_announce_all(f, FW_FLAG_NEWCOMER, FW_ANNOUNCE, f->burst) &&
			    first && now_ms() < f->settled_ms) {
				loop_timer_arm(f->loop, t, now_ms() + FIRST_RETRY_MS);
				return;
			}
			f->startup_announces_left--;
			if (!first)
				f->newcomer_repeats_left--;
			fabric_digest_burst_sent(f);
		} else {
			f->startup_announces_left = 0;
		}
		/* spread the start-up announcements over the settle time */
		next = f->cfg->settle_ms / (STARTUP_ANNOUNCES + 1);
		if (next < 50)
			next = 50;
		if (!f->startup_announces_left)
			next = (uint64_t)f->cfg->announce_interval_s * 1000;
	} else {
		fabric_announce_all(f, 0, FW_ANNOUNCE, 0);
		rail_down_repeat(f);
		next = (uint64_t)f->cfg->announce_interval_s * 1000;
	}
	loop_timer_arm(f->loop, t, now_ms() + jitter_apply(&f->rng, next));
}

void fabric_announce_stopped(struct fabric *f)
{
	/* the timer stops by itself (fabric_on_announce_timer()) */
	if (f && !fabric_announcing(f))
		fabric_announce_all(f, 0, FW_ANNOUNCE, 0);
}

int fabric_newcomer_again(struct fabric *f)
{
	uint64_t now = now_ms();

	if (!fabric_announcing(f) || !f->newcomer_repeats_left)
		return -ENOSPC; /* nothing to wait for */
	if (now < f->newcomer_sent_ms + NEWCOMER_AGAIN_MS)
		return -EAGAIN; /* later: the evidence stays */
	f->newcomer_repeats_left--;
	f->c.newcomer_repeats++;
	fabric_announce_all(f, FW_FLAG_NEWCOMER, FW_ANNOUNCE, f->burst);
	return 0;
}

/* The first NEWCOMER announce of a burst (start-up or resync: the tid names
 * the burst) from this sender? */
static bool newcomer_first(struct fabric *f, const struct ibres_hostrec *h, uint64_t burst)
{
	uint64_t hash = 1469598103934665603ULL, now = now_ms();
	struct newcomer_slot *slot;

	for (unsigned i = 0; i < 16; i++)
		hash = (hash ^ h->gids[0][i]) * 1099511628211ULL;
	hash = (hash ^ h->pkey) * 1099511628211ULL;
	slot = &f->newcomers[hash & f->newcomer_mask];
	if (!memcmp(slot->gid, h->gids[0], 16) && slot->pkey == h->pkey && slot->burst == burst &&
	    now < slot->until_ms)
		return false;
	memcpy(slot->gid, h->gids[0], 16);
	slot->pkey = h->pkey;
	slot->burst = burst;
	slot->until_ms = now + f->cfg->settle_ms + 1000;
	return true;
}

/* Did NEWCOMER @m's sender hear who we are from us already? Not before our
 * own first multicast announce (it comes, and the newcomer is up to hear
 * it); yes when our last one went out while it was listening, which its UP
 * says (a daemon before UP: answered). Strictly after the millisecond its
 * listening began: times are whole milliseconds, and an announce of that
 * same millisecond may have gone out before it joined the group (a boot of
 * nodes started at once lost one that way, about one run in ten). */
static bool heard_us(const struct fabric_port *p, const struct fw_msg *m)
{
	uint64_t now = now_ms();

	if (!p->announce_seq)
		return true;
	return m->has_up && m->up_ms <= now && p->mcast_announced_ms &&
	       p->mcast_announced_ms > now - m->up_ms;
}

void fabric_answer_newcomer(struct fabric_port *p, const struct fw_msg *m,
			    const struct transport_addr *from)
{
	struct fabric *f = p->f;
	struct fw_msg r;
	bool heard;

	/* a newcomer learns the directory from everyone's unicast answer; one
	 * answer per newcomer and settle period, not one per announcement */
	if (!fabric_announcing(f))
		return;
	heard = heard_us(p, m);
	if (heard || !newcomer_first(f, &m->sender, m->tid)) {
		log_debug("fabric: NEWCOMER %s on %s (up %u ms): not answered, %s",
			  m->sender.names[0], p->ep->cfg.label, m->up_ms,
			  heard ? "it heard our announce" : "answered already");
		return;
	}
	log_debug("fabric: NEWCOMER %s on %s (up %u ms): answered", m->sender.names[0],
		  p->ep->cfg.label, m->up_ms);
	fabric_msg_init(p, &r, FW_ANNOUNCE, 0);
	fabric_digest_put(p, &r, true, false);
	if (fabric_port_send(p, &r, from) == 0)
		f->c.announces_sent++;
}
