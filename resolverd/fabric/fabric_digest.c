// SPDX-License-Identifier: MIT
/*
 * Is the directory complete? The rule (pure, see fabric_digest.h) and the
 * fabric's glue: the digest every ANNOUNCE carries, the tick that reads the
 * receive path's drop counters, the verdict told up, the counters.
 */
#include "fabric/fabric_digest.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/list.h"
#include "core/log.h"
#include "ibres_proto.h"
#include "tlv.h"

/* ---- the rule ----------------------------------------------------------------- */

void digest_rule_reset(struct digest_rule *r, uint64_t round_ms)
{
	uint64_t mismatches = r->mismatches, drops = r->drops;
	unsigned voices = r->voices;

	memset(r, 0, sizeof(*r));
	r->voices = voices; /* the peers did not change */
	r->round_ms = round_ms;
	r->mismatches = mismatches; /* counters count since start */
	r->drops = drops;
}

/* Do we hold at least what the claim says a peer holds? */
static bool claim_met(const struct digest_claim *c, const struct store_digest *own)
{
	if (!c->hosts)
		return true;
	if (own->hosts != c->hosts)
		return own->hosts > c->hosts;
	/* as many: the same ones, or (inexact) as many as the union had */
	return !c->exact || own->sum == c->sum;
}

uint64_t digest_sender(const uint8_t gid[16])
{
	uint64_t h = 1469598103934665603ULL;

	for (unsigned i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 1099511628211ULL;
	return h ? h : 1;
}

/* @sender's agreement, once per peer: K answers of one peer (a fetch pages
 * through it) are one peer's word. */
static void agreed(struct digest_rule *r, uint64_t sender)
{
	for (unsigned i = 0; i < r->agree && i < DIGEST_AGREE_K; i++)
		if (r->agreed_by[i] == sender)
			return;
	if (r->agree < DIGEST_AGREE_K)
		r->agreed_by[r->agree] = sender;
	r->agree++;
}

bool digest_rule_disturbed(const struct digest_rule *r, uint64_t now)
{
	return r->disturbed_ms && now - r->disturbed_ms < DIGEST_HOLD_MS;
}

bool digest_rule_heard(struct digest_rule *r, const struct store_digest *own,
		       const struct fw_digest *theirs, uint64_t sender, uint64_t now)
{
	/* a peer that lost datagrams (or heard a digest other than its own)
	 * within its hold may lack what we lack, lost with the same
	 * datagrams: at a lossy boot the peers that missed one sender agree
	 * with each other. Its word vouches for nothing; its claim stands */
	bool quiet = !(theirs->flags & FW_DIGEST_DISTURBED);

	if (r->alone) {
		/* counted alone at the burst's check, and a peer speaks: our
		 * NEWCOMERs and its answers were all lost (a lossy boot), or
		 * it came later. Nobody vouched for what we hold: ask */
		r->alone = false;
		r->unvouched = true;
		r->unvouched_ms = now;
		r->agree = 0;
		r->vouch_from_ms = now + DIGEST_HOLD_MS;
		/* and our word vouches for nobody either, starting with our
		 * answer to the NEWCOMER that told us (DISTURBED) */
		r->disturbed_ms = now;
	}
	r->heard++;
	/* only what a peer held once its own start-up was over can vouch at
	 * the end of ours: a NEWCOMER's digest says what its sender had heard
	 * when it booted, and peers that missed the same host agree */
	if (quiet && (theirs->flags & (FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE))) {
		unsigned i = r->late++ % DIGEST_RECENT;

		r->recent[i].hosts = theirs->hosts;
		r->recent[i].sum = theirs->sum;
		r->recent[i].sender = sender;
	}
	/* fewer hosts: the sender lags (or we hold one that left): its own
	 * digests tell it, ours tell nothing to us */
	if (theirs->hosts < own->hosts)
		return false;
	if (theirs->hosts == own->hosts && theirs->sum == own->sum) {
		/* only a settled sender that counts itself complete vouches,
		 * and not in the hold after an unvouched burst */
		if (quiet && (theirs->flags & FW_DIGEST_SETTLED) && now >= r->vouch_from_ms)
			agreed(r, sender);
		return false;
	}
	/* more hosts, or as many but others: it holds one we lack */
	r->mismatches++;
	r->disturbed_ms = now;
	digest_rule_claim(r, theirs, sender, false, now);
	return true;
}

void digest_rule_claim(struct digest_rule *r, const struct fw_digest *theirs, uint64_t sender,
		       bool quiet, uint64_t now)
{
	struct digest_claim *c = &r->claim;
	bool again = false;

	r->agree = 0;
	r->claimed_ms = now;
	if (theirs->hosts > c->hosts) {
		*c = (struct digest_claim){.hosts = theirs->hosts,
					   .sum = theirs->sum,
					   .exact = true,
					   .fabric = theirs->flags & FW_DIGEST_FABRIC,
					   .quiet = quiet};
	} else if (theirs->hosts == c->hosts && c->exact && theirs->sum != c->sum) {
		/* two different directories of n hosts: their union has more */
		c->hosts++;
		c->exact = false;
		c->quiet &= quiet;
		return;
	} else if (theirs->hosts != c->hosts || theirs->sum != c->sum) {
		return; /* less than the claim standing */
	}
	c->quiet &= quiet;
	for (unsigned i = 0; i < c->n_by && i < DIGEST_CLAIM_BY; i++)
		again |= c->by[i] == sender;
	if (again)
		return;
	if (c->n_by < DIGEST_CLAIM_BY)
		c->by[c->n_by] = sender;
	if (c->n_by <= DIGEST_CLAIM_BY)
		c->n_by++;
}

void digest_rule_drop(struct digest_rule *r, uint64_t now)
{
	r->drops++;
	r->dropped = true;
	r->disturbed_ms = now;
	r->agree = 0;
}

/* Settled digests that must agree, from as many peers: K, at most the
 * peers known, and at most the peers that can be asked (voices). */
static unsigned agree_k(const struct digest_rule *r, const struct store_digest *own)
{
	uint64_t peers = own->hosts ? own->hosts - 1 : 0;
	unsigned k = peers < DIGEST_AGREE_K ? (unsigned)peers : DIGEST_AGREE_K;

	k = r->voices && r->voices < k ? r->voices : k;
	return k < r->min_k ? r->min_k : k;
}

bool digest_rule_burst_end(struct digest_rule *r, const struct store_digest *own, uint64_t now)
{
	unsigned n = r->late < DIGEST_RECENT ? r->late : DIGEST_RECENT, same = 0;

	/* what settled peers said while the directory filled, against what it
	 * holds now (a node rejoining a settled cluster hears them) */
	for (unsigned i = 0; i < n; i++) {
		bool again = false;

		for (unsigned j = 0; j < i; j++)
			again |= r->recent[j].sender == r->recent[i].sender &&
				 r->recent[j].hosts == own->hosts && r->recent[j].sum == own->sum;
		/* one peer's digests, however many, are one voice */
		same += !again && r->recent[i].hosts == own->hosts && r->recent[i].sum == own->sum;
	}
	/* no digest heard: peers before the digest, today's rule */
	if (!r->heard || same >= agree_k(r, own) || r->agree >= agree_k(r, own))
		return false;
	r->unvouched = true;
	r->unvouched_ms = now;
	/* K agreements heard from DIGEST_HOLD_MS on: peers that lost the same
	 * announcements as we did (a sender's loss is every receiver's) agree
	 * on a directory lacking their senders, until those, unheard, ask
	 * peers and announce again; a while later the peers asked know more */
	r->agree = 0;
	r->vouch_from_ms = now + DIGEST_HOLD_MS;
	return true;
}

bool digest_rule_eval(struct digest_rule *r, const struct store_digest *own, uint64_t now)
{
	unsigned k = agree_k(r, own);
	/* since the last disagreement, drop, or claim (a quiet one too) */
	uint64_t since = now - (r->claimed_ms > r->disturbed_ms ? r->claimed_ms : r->disturbed_ms);

	if (claim_met(&r->claim, own))
		r->claim.hosts = 0; /* we learned what it held */
	if (r->unvouched && (r->agree >= k || now >= r->unvouched_ms + r->round_ms))
		r->unvouched = false;
	if (!r->claim.hosts && !r->dropped)
		return r->incomplete = r->unvouched;
	/* overruled: settled peers heard since hold what we hold, or a whole
	 * announce round passed (every live peer announced once) without a
	 * disagreement or a drop (a peer that missed a GOODBYE we heard does
	 * not disagree: fabric_departed.h) */
	if ((since >= DIGEST_HOLD_MS && r->agree >= k) || since >= r->round_ms) {
		r->claim.hosts = 0;
		r->dropped = false;
		return r->incomplete = r->unvouched;
	}
	return r->incomplete = true;
}

/* ---- the fabric's side ----------------------------------------------------------- */

/* One announce interval and its jitter, and a tick for the counters. */
static uint64_t round_ms(const struct fabric *f)
{
	return (uint64_t)f->cfg->announce_interval_s * 1100 + DIGEST_TICK_MS;
}

void fabric_rx_sum(const struct fabric *f, struct transport_rx_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; f && i < f->n_ports; i++) {
		const struct fabric_port *p = &f->ports[i];
		struct transport_rx_stats s;
		bool seen = false;

		if (!p->t.priv || !p->t.ops->rx_stats)
			continue;
		p->t.ops->rx_stats((struct transport *)&p->t, &s);
		sum->queue_empty += s.queue_empty;
		sum->slots += s.slots;
		sum->sock_drops += s.sock_drops;
		/* a port's out_of_buffer counter once however many endpoints
		 * (P_Keys) share the port */
		for (unsigned j = 0; j < i && s.hw_counted; j++)
			seen |= f->ports[j].t.priv && f->ports[j].t.ops->rx_stats &&
				!strcmp(f->ports[j].opened.device, p->opened.device) &&
				f->ports[j].opened.port_num == p->opened.port_num;
		if (s.hw_counted && !seen)
			sum->hw_out_of_buffer += s.hw_out_of_buffer;
	}
}

static uint64_t rx_drops(const struct fabric *f)
{
	struct transport_rx_stats s;

	fabric_rx_sum(f, &s);
	return s.queue_empty + s.hw_out_of_buffer + s.sock_drops;
}

/* What a peer's digest heard on @p compares with: what this node heard on
 * that fabric (@fabric: the peer's digest is of its fabric too), or the
 * whole directory (a daemon before per-fabric digests). */
static void own_digest(const struct fabric_port *p, bool fabric, struct store_digest *own)
{
	store_fabric_digest(p->f->store, fabric_scope(p, fabric), own);
}

void fabric_digest_update(struct fabric *f)
{
	struct store_digest own;
	bool was = f->dg.told;
	uint64_t now = now_ms();

	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];

		p->rule.round_ms = round_ms(f); /* a reload may change the interval */
		own_digest(p, true, &own);
		digest_rule_eval(&p->rule, &own, now);
	}
	if (fabric_digest_incomplete(f) == was)
		return;
	f->dg.told = !was;
	store_digest(f->store, &own);
	log_info("fabric: the directory (%llu hosts) is %s", (unsigned long long)own.hosts,
		 was ? "complete: peers agree"
		     : "incomplete: a peer holds more, or "
		       "datagrams were lost; misses are asked on the fabric");
	if (f->ev.scope_changed)
		f->ev.scope_changed(f->ev.arg);
}

void fabric_digest_burst_sent(struct fabric *f)
{
	f->dg.burst_sent_ms = now_ms();
	f->dg.burst_sent = true;
	/* the check decides before the directory counts complete: on time */
	loop_timer_arm(f->loop, &f->dg.tick,
		       f->settled_ms > f->dg.burst_sent_ms + DIGEST_ANSWER_MS
			       ? f->settled_ms
			       : f->dg.burst_sent_ms + DIGEST_ANSWER_MS);
}

/* Once the burst settled: a claim still unmet is a loss; nothing against us
 * and no settled peer vouching: ask them. (Answers to our NEWCOMER are not
 * counted: a peer whose announce we heard after our start answers none, as
 * that announce reached us; only those that announced before do.) */
static void burst_check(struct fabric *f, uint64_t now)
{
	struct fabric_digest *d = &f->dg;
	bool unvouched = false, heard = false;

	/* answers come at once; a settle time of 0 still gives them a while */
	if (!d->burst_sent || d->burst_checked || now < f->settled_ms ||
	    now < d->burst_sent_ms + DIGEST_ANSWER_MS)
		return;
	d->burst_checked = true;
	d->burst_pending = false;
	for (unsigned i = 0; i < f->n_ports; i++)
		heard |= fabric_port_up(&f->ports[i]) && f->ports[i].rule.heard;
	/* each fabric alone: a rail's announces may be lost while another's
	 * came, and then that rail's endpoints are what we lack */
	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];
		struct store_digest own;

		if (!fabric_port_up(p))
			continue;
		/* a peer held hosts we still lack once the burst is over:
		 * what it heard of them, we lost */
		own_digest(p, true, &own);
		/* no peer here at all: complete alone (K = 0) once nothing
		 * else holds, until a peer speaks (digest_rule_heard()) */
		p->rule.alone = own.hosts <= 1;
		digest_rule_eval(&p->rule, &own, now);
		/* (a quiet claim is of hosts that said goodbye: no loss) */
		if (p->rule.claim.hosts && !p->rule.claim.quiet) {
			digest_rule_drop(&p->rule, now);
			log_info("fabric: start-up over, a peer on %s holds %llu hosts, we %llu: "
				 "datagrams were lost",
				 p->ep->cfg.label, (unsigned long long)p->rule.claim.hosts,
				 (unsigned long long)own.hosts);
		}
		/* nothing against us; unless settled peers vouched, ask them
		 * (fabric_fetch.c): a node that missed most of a whole-cluster
		 * boot hears no claim until the next announce round */
		if (heard && !p->rule.heard && !p->rule.dropped) {
			/* others heard peers, this fabric none: all of them
			 * lost, or truly nobody here; a settled peer's word (or
			 * a quiet round) tells */
			p->rule.min_k = 1;
			p->rule.unvouched = true;
			p->rule.unvouched_ms = now;
		} else if (p->rule.dropped || !digest_rule_burst_end(&p->rule, &own, now)) {
			continue;
		}
		unvouched = true;
		log_info("fabric: start-up over, %llu hosts on %s, no settled peer vouched yet: "
			 "asking peers",
			 (unsigned long long)own.hosts, p->ep->cfg.label);
	}
	d->unvouched += unvouched;
}

static void on_tick(struct loop_timer *t)
{
	struct fabric *f = container_of(t, struct fabric, dg.tick);
	uint64_t drops = rx_drops(f), now = now_ms();

	/* the counters are the node's: every fabric may have lost them */
	for (unsigned i = 0; drops > f->dg.drops_seen && i < f->n_ports; i++)
		digest_rule_drop(&f->ports[i].rule, now);
	f->dg.drops_seen = drops;
	burst_check(f, now);
	fabric_digest_update(f);
	loop_timer_arm(f->loop, t, now_ms() + DIGEST_TICK_MS);
}

/* A burst (start-up, resync) begins: incomplete until its check. */
static void burst_begin(struct fabric *f)
{
	f->dg.burst_sent = f->dg.burst_checked = false;
	f->dg.burst_sent_ms = 0;
	f->dg.burst_pending = f->cfg->announce_interval_s > 0;
	f->dg.told = fabric_digest_incomplete(f); /* the caller publishes the scope */
}

static void rules_reset(struct fabric *f)
{
	for (unsigned i = 0; i < f->n_ports; i++)
		digest_rule_reset(&f->ports[i].rule, round_ms(f));
}

void fabric_digest_start(struct fabric *f)
{
	rules_reset(f);
	burst_begin(f);
	f->dg.drops_seen = rx_drops(f);
	f->dg.tick.cb = on_tick;
	loop_timer_arm(f->loop, &f->dg.tick, now_ms() + DIGEST_TICK_MS);
}

void fabric_digest_stop(struct fabric *f)
{
	loop_timer_cancel(f->loop, &f->dg.tick);
}

void fabric_digest_reset(struct fabric *f)
{
	/* the caller (a resync, asked by the resolver) publishes the scope
	 * itself: no event back to it from here */
	rules_reset(f);
	burst_begin(f);
}

bool digest_seq_gap(uint32_t prev, const struct fw_digest *d)
{
	/* Only multicast announces, which reach us in the order sent, are
	 * compared with the last one heard. A unicast answer repeats its
	 * sender's last multicast number, but comes on another socket (or
	 * queue) and may be read before that multicast announce, which is
	 * still waiting behind a storm's backlog: no gap. */
	return prev && !(d->flags & FW_DIGEST_UNICAST) && d->seq > prev + 1;
}

void fabric_digest_put(struct fabric_port *p, struct fw_msg *m, bool unicast, bool whole)
{
	struct fabric *f = p->f;
	struct store_digest own;

	if (!unicast)
		p->announce_seq++;
	own_digest(p, !whole, &own);
	m->has_digest = true;
	m->digest.seq = p->announce_seq;
	m->digest.hosts = own.hosts > UINT32_MAX ? UINT32_MAX : (uint32_t)own.hosts;
	m->digest.sum = own.sum;
	/* fabric_range.c answers; what this fabric heard */
	m->digest.flags = FW_DIGEST_RANGES | (whole ? 0 : FW_DIGEST_FABRIC);
	if (now_ms() >= f->settled_ms && !f->dg.burst_pending)
		m->digest.flags |= FW_DIGEST_PAST_SETTLE;
	if (now_ms() >= f->settled_ms && !f->dg.burst_pending && !p->rule.incomplete)
		m->digest.flags |= FW_DIGEST_SETTLED;
	if (digest_rule_disturbed(&p->rule, now_ms()))
		m->digest.flags |= FW_DIGEST_DISTURBED;
	if (unicast)
		m->digest.flags |= FW_DIGEST_UNICAST;
}

/* Peer digest @d heard on @p, and what it compares with (@own). One of a
 * daemon before per-fabric digests counts the whole directory: compared
 * with ours, and vouching for this fabric only when this fabric heard the
 * whole directory (a node of several rails may lack a host on one). */
static struct fw_digest comparable(const struct fabric_port *p, const struct fw_digest *d,
				   struct store_digest *own)
{
	struct fw_digest c = *d;
	struct store_digest here;

	own_digest(p, d->flags & FW_DIGEST_FABRIC, own);
	if (d->flags & FW_DIGEST_FABRIC)
		return c;
	own_digest(p, true, &here);
	if (here.hosts != own->hosts || here.sum != own->sum)
		c.flags &= (uint8_t) ~(FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	return c;
}

/* Is peer digest @d ours plus hosts that said goodbye (a peer that missed
 * it, fabric_departed.h)? Then it is no news while their absence is
 * confirmed, else a quiet claim. */
static bool departed_explain(struct fabric_port *p, const struct fw_digest *d,
			     const struct store_digest *own, const struct fw_msg *m,
			     uint64_t sender)
{
	switch (fabric_departed_explains(p, d, own, sender)) {
	case DEPARTED_NO:
		return false;
	case DEPARTED_QUIET:
		if (!p->rule.claim.hosts)
			log_debug("fabric: %s holds %u hosts on %s, we %llu, the others said "
				  "goodbye: asked where they are",
				  m->sender.names[0], d->hosts, p->ep->cfg.label,
				  (unsigned long long)own->hosts);
		digest_rule_claim(&p->rule, d, sender, true, now_ms());
		break;
	case DEPARTED_GONE:
		break;
	}
	return true;
}

void fabric_digest_departed(struct fabric *f)
{
	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];
		struct digest_claim *c = &p->rule.claim;
		/* the claim's digest, compared as it was heard */
		struct fw_digest d = {.hosts = (uint32_t)c->hosts,
				      .sum = c->sum,
				      .flags = c->fabric ? FW_DIGEST_FABRIC : 0};
		struct store_digest own;
		bool gone = c->hosts && c->exact && c->n_by && c->n_by <= DIGEST_CLAIM_BY;

		own_digest(p, c->fabric, &own);
		/* met only when each peer that made it named the host where
		 * it did not answer: another may know where it is now */
		for (unsigned j = 0; gone && j < c->n_by; j++)
			gone = fabric_departed_gone(p, &d, &own, c->by[j]);
		if (gone)
			c->hosts = 0;
	}
	fabric_digest_update(f);
}

void fabric_digest_heard(struct fabric_port *p, const struct fw_msg *m, uint32_t prev_seq)
{
	uint64_t sender = digest_sender(m->sender.gids[0]);
	struct fabric *f = p->f;
	struct store_digest own;
	struct fw_digest d;

	if (!m->has_digest)
		return; /* a daemon before the digest */
	if (digest_seq_gap(prev_seq, &m->digest)) {
		/* what we missed of it, we may have missed of others: a drop
		 * the counters could not see (the network's, a switch's) */
		f->dg.gaps++;
		digest_rule_drop(&p->rule, now_ms());
		log_debug("fabric: announces %u..%u of %s were not heard", prev_seq + 1,
			  m->digest.seq - 1, m->sender.names[0]);
	}
	d = comparable(p, &m->digest, &own);
	if (now_ms() >= f->settled_ms)
		fabric_departed_fewer(p, &d, &own, m->sender.names[0]);
	if (departed_explain(p, &d, &own, m, sender) ||
	    !digest_rule_heard(&p->rule, &own, &d, sender, now_ms()))
		return;
	log_debug("fabric: %s holds %u hosts on %s, we %llu (or others): directory incomplete",
		  m->sender.names[0], m->digest.hosts, p->ep->cfg.label,
		  (unsigned long long)own.hosts);
	/* settled, we should hold what every peer holds: we missed its news */
	if (now_ms() >= f->settled_ms)
		digest_rule_drop(&p->rule, now_ms());
}

void fabric_digest_answer(struct fabric_port *p, const struct fw_msg *m)
{
	uint64_t sender = digest_sender(m->sender.gids[0]), now = now_ms();
	struct fw_digest d = m->digest;
	struct store_digest own;

	/* a peer past its settle time, answering us alone: what it holds
	 * now. Equal to ours, it vouches as a settled announce does, though
	 * it may count itself incomplete: after a storm every node does, and
	 * none would vouch for another until a whole announce round passed.
	 * A host all of them lack lost datagrams itself, so it asks a peer
	 * too and is learned from its query; and a peer that lost datagrams
	 * within its hold says so (DISTURBED): digest_rule_heard() takes no
	 * word of it. */
	if (d.flags & FW_DIGEST_PAST_SETTLE)
		d.flags |= FW_DIGEST_SETTLED;
	d = comparable(p, &d, &own);
	if (departed_explain(p, &d, &own, m, sender) ||
	    !digest_rule_heard(&p->rule, &own, &d, sender, now))
		return;
	log_debug("fabric: %s holds %u hosts on %s, we %llu (or others): directory incomplete",
		  m->sender.names[0], d.hosts, p->ep->cfg.label, (unsigned long long)own.hosts);
	if (now >= p->f->settled_ms)
		digest_rule_drop(&p->rule, now);
}

void fabric_digest_lost(struct fabric_port *p)
{
	digest_rule_drop(&p->rule, now_ms());
}

void fabric_digest_voices(struct fabric *f, unsigned n)
{
	for (unsigned i = 0; i < f->n_ports; i++)
		f->ports[i].rule.voices = n;
}

bool fabric_port_incomplete(const struct fabric_port *p)
{
	return fabric_port_up(p) && p->rule.incomplete;
}

uint64_t fabric_digest_hold_end(const struct fabric *f)
{
	uint64_t end = 0;

	for (unsigned i = 0; i < f->n_ports; i++)
		if (fabric_port_incomplete(&f->ports[i]) && f->ports[i].rule.vouch_from_ms > end)
			end = f->ports[i].rule.vouch_from_ms;
	return end;
}

bool fabric_digest_incomplete(const struct fabric *f)
{
	bool hears = false;

	for (unsigned i = 0; i < f->n_ports; i++) {
		const struct fabric_port *p = &f->ports[i];

		if (fabric_port_incomplete(p))
			return true;
		hears |= fabric_port_up(p) && p->t.mcast_since_ms;
	}
	/* no rail up and in its group (every link down, or IB's join not
	 * through yet): the node hears nobody, and what it forgot or never
	 * heard is no proof that a host does not exist */
	return (f->n_ports && !hears) || f->dg.burst_pending;
}

void fabric_digest_stats(const struct fabric *f, bool complete, struct tlv_writer *w)
{
	uint64_t mismatches = 0, drops = 0;

	/* a drop the counters show reaches every fabric's rule: counted once */
	for (unsigned i = 0; f && i < f->n_ports; i++) {
		mismatches += f->ports[i].rule.mismatches;
		if (f->ports[i].rule.drops > drops)
			drops = f->ports[i].rule.drops;
	}
	const struct {
		const char *name;
		uint64_t value;
	} rows[] = {
		{"directory_complete", complete},
		{"fabric_digest_mismatches", mismatches},
		{"fabric_rx_drops_detected", drops},
		{"fabric_rx_gaps", f ? f->dg.gaps : 0},
		{"fabric_bursts_unvouched", f ? f->dg.unvouched : 0},
		{"fabric_incomplete_queries", f ? f->dg.incomplete_queries : 0},
		{"fabric_departed_explained", f ? f->departed.explained : 0},
		{"fabric_departed_confirmed", f ? f->departed.confirmed : 0},
		{"fabric_departed_shortened", f ? f->departed.shortened : 0},
		{"fabric_gone_sent", f ? f->gone.sent : 0},
		{"fabric_gone_heard", f ? f->gone.heard : 0},
		{"fabric_gone_shortened", f ? f->gone.shortened : 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rows[i].value);
	}
}
