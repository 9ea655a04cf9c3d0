// SPDX-License-Identifier: MIT
/*
 * Asking a peer for what we lack (fabric_fetch.h): sessions of range
 * queries to one peer at a time, while the directory is incomplete after
 * the settle time; the peers to ask are fabric_peers.c's.
 */
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_impl.h"
#include "fabric/fabric_peers.h"

#include <inttypes.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/hostkey.h"
#include "core/list.h"
#include "core/hoststore_range.h"
#include "core/log.h"
#include "hostrec.h"
#include "tlv.h"

static const struct fw_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};

/* Is there anything to fetch? Only where the store is the whole directory
 * (announcements refresh every entry in time) and the directory counts
 * itself incomplete once its start-up burst was checked (before that, the
 * burst fills it), or peers' answers must tell whether we were heard. */
static bool wanted(const struct fabric *f)
{
	return fabric_directory_mode(f) && f->dg.burst_checked && now_ms() >= f->settled_ms &&
	       (fabric_digest_incomplete(f) || f->fx.doubt);
}

/* A query's tid: random, its low bits left for the try (FETCH_TRY_MASK). */
static uint64_t query_tid(struct fabric *f)
{
	return ((uint64_t)jitter_next(&f->rng) << 32 | jitter_next(&f->rng)) & ~FETCH_TRY_MASK;
}

static void send_query(struct fabric *f)
{
	struct fabric_fetch *x = &f->fx;
	struct fabric_port *p = &f->ports[x->peer.port];
	unsigned wait = x->rtt_ms ? 4 * x->rtt_ms : FETCH_WAIT_MS;
	struct fw_msg m;

	if (wait < FETCH_WAIT_MIN_MS)
		wait = FETCH_WAIT_MIN_MS;
	wait <<= x->tries < 4 ? x->tries : 4; /* each try waits twice the last */
	if (wait > FETCH_WAIT_MS)
		wait = FETCH_WAIT_MS;
	x->waiting = true;
	_Static_assert(CFG_MAX_ENDPOINTS <= 32, "a port is a bit of ports_asked");
	x->ports_asked |= 1u << x->peer.port;
	if (!x->tries++)
		x->sent_ms = now_ms();
	loop_timer_arm(f->loop, &x->timer, now_ms() + wait);
	if (!fabric_port_up(p))
		return; /* the timer ends the session */
	_Static_assert(FETCH_TRIES - 1 <= FETCH_TRY_MASK, "a try's number fits the tid's low bits");
	fabric_msg_init(p, &m, FW_RANGE_QUERY, x->tid | (x->tries - 1));
	m.has_range = true;
	m.range = x->asked;
	if (x->peer.fabric)
		m.range.flags |= FW_RANGE_FABRIC; /* what it heard on this fabric */
	if (fabric_port_send(p, &m, &x->peer.addr) == 0)
		x->queries_sent++;
}

/* The next range waiting, or the end of the session. */
static void next_query(struct fabric *f)
{
	struct fabric_fetch *x = &f->fx;

	x->waiting = false;
	if (!x->n_todo || x->queries >= FETCH_QUERIES_MAX || x->pages >= FETCH_PAGES_MAX) {
		/* a session that found nothing to fetch after a burst asked for
		 * a voice: the next peer's comes at once, K of them (after a
		 * whole-cluster boot every node asks K peers at its settle time) */
		bool vouch = x->queries == 1 && !x->pages && !x->n_todo && x->quick;
		uint64_t now = now_ms(), hold = fabric_digest_hold_end(f);

		x->active = false;
		x->n_todo = 0;
		if (vouch && now < hold) {
			/* no answer vouches before the hold after an unvouched
			 * burst ends: the quick sessions wait for it */
			loop_timer_arm(f->loop, &x->timer, hold);
			return;
		}
		x->quick -= vouch;
		for (unsigned i = 0; i < f->n_ports; i++)
			if (x->ports_asked >> i & 1)
				f->ports[i].fetch_free_ms =
					now + (vouch ? FETCH_VOUCH_GAP_MS : FETCH_GAP_MS);
		/* another fabric's peer may be asked sooner (fetch_pick_peer()) */
		loop_timer_arm(f->loop, &x->timer, now + FETCH_VOUCH_GAP_MS);
		return;
	}
	x->asked = x->todo[--x->n_todo];
	/* pages are cheap to answer from a sorted copy; a daemon before it
	 * walks its store for each: its names count as queries */
	if ((x->asked.flags & FW_RANGE_NAMES) && !x->peer.old)
		x->pages++;
	else
		x->queries++;
	x->tries = 0;
	x->tid = query_tid(f);
	send_query(f);
}

/* A new session; @claims_only: with a peer whose digest claimed more than we
 * hold alone (in the hold, when no other answer could vouch). */
static void session_start(struct fabric *f, bool claims_only)
{
	struct fabric_fetch *x = &f->fx;
	uint64_t later;

	if (!fetch_pick_peer(f, NULL, &later, claims_only)) {
		loop_timer_arm(f->loop, &x->timer,
			       later != UINT64_MAX ? later : now_ms() + FETCH_IDLE_MS);
		return;
	}
	x->active = true;
	x->ports_asked = 0;
	x->sessions++;
	x->queries = x->pages = x->hints = x->switches = 0;
	x->rtt_ms = 0;
	x->todo[0] = whole;
	x->n_todo = 1;
	next_query(f);
}

/* The peer asked cannot answer the query (silent, or BUSY): the same range
 * goes to the next peer, keeping what the session found so far, or the
 * session ends. */
static void move_on(struct fabric *f)
{
	struct fabric_fetch *x = &f->fx;

	if (x->switches < FETCH_SWITCHES && fetch_pick_peer(f, x->peer.gid, NULL, false)) {
		x->switches++;
		x->tries = 0;
		x->rtt_ms = 0; /* another peer */
		x->tid = query_tid(f);
		send_query(f);
		return;
	}
	x->n_todo = 0;
	next_query(f);
}

static void on_timer(struct loop_timer *t)
{
	struct fabric *f = container_of(t, struct fabric, fx.timer);
	struct fabric_fetch *x = &f->fx;
	struct fetch_peer *c;
	uint64_t hold;
	bool in_hold;

	if (x->active && x->waiting) {
		if (x->tries < FETCH_TRIES) {
			send_query(f);
			return;
		}
		/* it does not answer (gone, an older daemon, a lossy path):
		 * forgotten after FETCH_STRIKES such queries in a row, as on
		 * a lossy fabric many are lost */
		x->timeouts++;
		c = fetch_find_peer(f, x->peer.port, x->peer.gid);
		/* one that answers range queries (over its limit it says
		 * BUSY): a loss, or it is gone; either way its word is
		 * missing, and the peers that do answer must not vouch at once */
		if (c && c->proven) {
			x->losses++;
			fabric_digest_lost(&f->ports[x->peer.port]);
			fabric_digest_update(f); /* no datagram will */
		}
		if (c && ++c->strikes >= FETCH_STRIKES)
			fetch_forget_peer(f, c->gid);
		move_on(f);
		return;
	}
	fabric_range_idle(f, now_ms());
	if (!wanted(f)) {
		loop_timer_arm(f->loop, t, now_ms() + FETCH_IDLE_MS);
		return;
	}
	hold = fabric_digest_hold_end(f);
	in_hold = x->quick && now_ms() < hold;
	if (in_hold && !fetch_claim_waits(f)) {
		/* only voices to ask for, and none counts before the hold ends */
		loop_timer_arm(f->loop, t, hold);
		return;
	}
	session_start(f, in_hold);
}

static void push(struct fabric_fetch *x, const struct store_range *r, bool names)
{
	if (x->n_todo == FETCH_TODO_MAX)
		return; /* a later session finds it again */
	x->todo[x->n_todo++] = (struct fw_range){
		.lo = r->lo,
		.hi = r->hi,
		.parts = names || r->lo == r->hi ? 1 : FW_PARTS_MAX,
		.flags = names || r->lo == r->hi ? FW_RANGE_NAMES | FW_RANGE_WHERE : 0,
	};
}

/* The peer's sums for the parts of what we asked: parts that differ from
 * ours are asked again, split, or for their names once small, or once we
 * lack at least one of FETCH_DENSE of them (paging through their names,
 * about 50 a datagram, then costs less than splitting further: after a
 * lossy boot most parts lack a few). */
static void take_sums(struct fabric *f, const struct fw_msg *m)
{
	struct fabric_fetch *x = &f->fx;
	struct store_range asked = {.lo = x->asked.lo, .hi = x->asked.hi, .parts = x->asked.parts};
	/* the sums of what the peer heard on this fabric (it kept the flag) */
	bool fabric = m->range.flags & FW_RANGE_FABRIC;
	struct fabric_port *p = &f->ports[x->peer.port];
	const struct term_index *ti = fabric_terms(f, fabric ? p : NULL, now_ms());
	struct store_digest own[RANGE_PARTS_MAX];

	if (ti)
		term_index_digest(ti, &asked, own);
	else
		store_range_digest(f->store, &asked, fabric_scope(p, fabric), own);
	for (unsigned i = 0; i < asked.parts; i++) {
		struct store_range sub;

		if (!m->sums[i].hosts ||
		    (m->sums[i].hosts == own[i].hosts && m->sums[i].sum == own[i].sum) ||
		    !store_range_sub(&asked, i, &sub))
			continue;
		push(x, &sub,
		     m->sums[i].hosts <= FETCH_NAMES_AT ||
			     (!x->peer.old && m->sums[i].hosts > own[i].hosts &&
			      (m->sums[i].hosts - own[i].hosts) * FETCH_DENSE >= m->sums[i].hosts));
	}
}

/* Could @w be a host's own unicast address? Not a group, broadcast,
 * unspecified or loopback address, not a multicast LID or QP 0 or 1: a
 * peer's hint must not turn our REQUESTs into traffic for everyone. */
static bool unicast_where(const struct fw_where *w)
{
	static const uint8_t zero[16];

	switch (w->kind) {
	case FW_WHERE_IPV4:
		return w->addr[0] != 0 && w->addr[0] != 127 && w->addr[0] < 224;
	case FW_WHERE_IPV6:
		return w->addr[0] != 0xff && memcmp(w->addr, zero, 15) != 0;
	case FW_WHERE_IB:
		return w->lid && w->lid < 0xc000 && w->qpn > 1;
	default:
		return false;
	}
}

/* Where hint @w's host is reached, on the port and in the form of the
 * peer's own address (the same subnet: port number, scope): false when it
 * does not fit that port's transport, or is no host's. */
static bool hint_at(const struct fetch_peer *peer, const struct fw_where *w, struct fabric_at *at)
{
	memset(at, 0, sizeof(*at));
	at->port = peer->port;
	at->addr = peer->addr;
	if (!unicast_where(w))
		return false;
	if (w->kind == FW_WHERE_IPV4 && at->addr.len && at->addr.ss.ss_family == AF_INET) {
		memcpy(&((struct sockaddr_in *)&at->addr.ss)->sin_addr, w->addr, 4);
		return true;
	}
	if (w->kind == FW_WHERE_IPV6 && at->addr.len && at->addr.ss.ss_family == AF_INET6) {
		memcpy(&((struct sockaddr_in6 *)&at->addr.ss)->sin6_addr, w->addr, 16);
		return true;
	}
	if (w->kind == FW_WHERE_IB && !at->addr.len) {
		at->addr.lid = w->lid;
		at->addr.qpn = w->qpn;
		memcpy(at->addr.gid, w->addr, 16);
		return true;
	}
	return false;
}

/* Do we hold the host named @k, on @p's fabric when @p (a peer that counts
 * per fabric: a host heard on another rail only lacks this one)? */
static bool held(struct fabric *f, const struct host_key *k, const struct fabric_port *p)
{
	const struct host *h = store_holder(f->store, k);

	/* a static host (the hosts file's) is never asked on the fabric */
	if (!h || !p || host_origin(h) == IBRES_ORIGIN_STATIC)
		return h != NULL;
	for (const struct host *e = h; e; e = host_next_endpoint(h, e))
		if ((host_heard_on(e) >> p->ep->index & 1) && host_expires_ms(e) > now_ms())
			return true; /* (one past its time, not swept yet, is none) */
	return false;
}

void fabric_hint_unanswered(struct fabric *f, const struct host_key *k, const struct fabric_at *at)
{
	if (!f || at->port >= f->n_ports)
		return;
	/* it said goodbye: the peer that named it missed that */
	if (fabric_departed_unanswered(&f->ports[at->port], k, at->named_by)) {
		fabric_digest_departed(f);
		return;
	}
	/* a peer said the host lives and we could not reach it: a loss, or
	 * the host left; the peers that lack it too must not vouch at once */
	f->fx.hints_unanswered++;
	fabric_digest_lost(&f->ports[at->port]);
}

bool fabric_holds_at(struct fabric *f, const struct host_key *k, const struct fabric_at *at)
{
	if (!f)
		return false;
	return held(f, k, at->port < f->n_ports ? &f->ports[at->port] : NULL);
}

/* The names the peer holds in what we asked: those we lack go up to be
 * asked on the fabric, each host answering for itself (where the peer
 * said it is reached: it alone receives the question). Names in term order
 * (FW_RANGE_WHERE kept) continue after the last one; others are split. */
static void take_names(struct fabric *f, const struct fw_msg *m)
{
	struct fabric_fetch *x = &f->fx;
	bool sorted = m->range.flags & FW_RANGE_WHERE;
	/* the names of what the peer heard on this fabric (it kept the flag) */
	struct fabric_port *p = m->range.flags & FW_RANGE_FABRIC ? &f->ports[x->peer.port] : NULL;
	const char *name = m->hints;
	uint64_t last = 0;
	bool any = false;

	for (unsigned i = 0; i < m->n_hints; i++, name += strlen(name) + 1) {
		bool have_at = false;
		struct fabric_at at;
		struct host_key k;
		uint64_t t;

		/* a peer's word: only a name of ours to ask, and not one held */
		if (host_key_name(&k, name) < 0)
			continue;
		t = host_digest_term(&k);
		if (t >= x->asked.lo && t <= x->asked.hi && (!any || t > last)) {
			last = t;
			any = true;
		}
		if (!hostrec_name_in_patterns(name, f->cfg->patterns[0],
					      sizeof(f->cfg->patterns[0]), f->cfg->n_patterns) ||
		    held(f, &k, p))
			continue;
		if (x->hints == FETCH_HINTS_MAX)
			continue; /* a later session finds it again */
		if (i < FW_WHERE_MAX && hint_at(&x->peer, &m->where[i], &at)) {
			have_at = true;
		} else if (!strcasecmp(name, m->sender.names[0])) {
			/* the peer itself (it names no address of its own):
			 * where its answer came from */
			at = (struct fabric_at){.port = x->peer.port, .addr = x->peer.addr};
			have_at = true;
		} else if (p && held(f, &k, NULL)) {
			/* held on another rail, and nowhere to ask it on this
			 * one: its next announce here brings it */
			continue;
		}
		at.named_by = digest_sender(x->peer.gid);
		x->hints++;
		x->hints_asked++;
		log_debug("fabric: %s is held by a peer and not here: asked", name);
		if (f->ev.hint)
			f->ev.hint(f->ev.arg, &k, have_at ? &at : NULL);
	}
	if (!sorted) {
		/* a daemon before pages: no dense listing of it from now on */
		struct fetch_peer *c = fetch_find_peer(f, x->peer.port, x->peer.gid);

		x->peer.old = true;
		if (c)
			c->old = true;
	}
	if (!(m->range.flags & FW_RANGE_MORE))
		return;
	if (sorted) {
		/* the next page: after the last name, which must move on */
		if (any && last < x->asked.hi && x->n_todo < FETCH_TODO_MAX)
			x->todo[x->n_todo++] = (struct fw_range){
				.lo = last + 1,
				.hi = x->asked.hi,
				.parts = 1,
				.flags = FW_RANGE_NAMES | FW_RANGE_WHERE,
			};
		return;
	}
	/* more than one datagram holds: split it, unless it cannot be */
	if (x->asked.lo < x->asked.hi) {
		struct store_range r = {
			.lo = x->asked.lo, .hi = x->asked.hi, .parts = FW_PARTS_MAX};
		struct store_range sub;

		for (unsigned i = 0; i < FW_PARTS_MAX; i++)
			if (store_range_sub(&r, i, &sub))
				push(x, &sub, true);
	}
}

/* Did our NEWCOMER reach the peers? Each answer says whether its peer
 * heard a multicast announce of ours (@unheard: not). Most of the peers
 * that answered first since the burst began had not (at least two): not
 * the few a lossy fabric drops (their own fetch finds us), but our NEWCOMER
 * lost on its way out, for every peer (a sender's loss is every receiver's):
 * fabric.c sends it again. The peers that lost it agree with each other on
 * a directory lacking us, so from then on the node is in doubt and keeps
 * asking peers: an answer to a query asked after the last repeat that had
 * not heard it either asks for one more (at most every NEWCOMER_AGAIN_MS,
 * NEWCOMER_REPEATS a burst); one that had ends the doubt (every peer got
 * it; a peer that dropped it counts that as its own loss). */
static void heard_of_us(struct fabric *f, struct fetch_peer *c, bool unheard)
{
	struct fabric_fetch *x = &f->fx;

	if (x->doubt) {
		if (x->sent_ms <= x->repeat_ms)
			return; /* asked before the last repeat went out (or in its
				 * millisecond: the answer handled before it may
				 * have sent the next query) */
		x->unheard = unheard;
		x->doubt = unheard;
		return;
	}
	if (!c)
		return;
	/* one peer, one voice: its port GID may be heard on several ports
	 * (partitions of one port) */
	for (unsigned i = 0; i < FETCH_PEERS; i++)
		if (fetch_slot_is(&x->peers[i], c->gid) && x->peers[i].answered)
			return;
	for (unsigned i = 0; i < FETCH_PEERS; i++)
		if (fetch_slot_is(&x->peers[i], c->gid))
			x->peers[i].answered = true;
	x->burst_first++;
	x->burst_unheard += unheard;
	if (x->burst_unheard >= 2 && 2 * x->burst_unheard > x->burst_first)
		x->unheard = x->doubt = true;
}

void fabric_fetch_answer(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct fabric_fetch *x = &f->fx;
	struct fetch_peer *c;
	bool busy = m->range.flags & FW_RANGE_BUSY;

	/* the answer to the query outstanding, from the peer asked, about
	 * what was asked (over its limit, its digest alone): anything else is
	 * dropped */
	if (!x->active || !x->waiting || (m->tid & ~FETCH_TRY_MASK) != x->tid ||
	    memcmp(m->sender.gids[0], x->peer.gid, 16) || m->range.lo != x->asked.lo ||
	    m->range.hi != x->asked.hi || m->range.parts != x->asked.parts ||
	    (m->range.flags & FW_RANGE_NAMES) != (x->asked.flags & FW_RANGE_NAMES) ||
	    (!(x->asked.flags & FW_RANGE_NAMES) && !m->n_sums && !busy)) {
		f->c.rx_unsolicited++;
		return;
	}
	x->answers++;
	if (m->tid & FETCH_TRY_MASK) {
		/* a later try answered, the first not (answers come in the
		 * order asked): a query or an answer was lost on the way, a
		 * loss no counter of ours sees. What we lost of this peer's,
		 * announces too may have lost: no vouching for a while */
		x->losses++;
		fabric_digest_lost(p);
	} else {
		/* the shortest round trip (an answer to a first try; a later
		 * try's tid differs): a busy moment of ours (a burst of
		 * REPLYs, a directory generation) must not make every later
		 * lost answer cost 300 ms; a wait that was too short costs a
		 * duplicate */
		unsigned rtt = (unsigned)(now_ms() - x->sent_ms) + 1;

		if (!x->rtt_ms || rtt < x->rtt_ms)
			x->rtt_ms = rtt;
	}
	c = fetch_find_peer(f, x->peer.port, x->peer.gid);
	if (c) {
		c->strikes = 0;
		c->proven = true;
		if (!busy)
			c->claimed = false; /* asked: what it holds, the session finds */
		/* asked about this fabric, it kept the flag if it counts per
		 * fabric (a daemon before it clears it) */
		if (x->peer.fabric)
			c->fabric = m->range.flags & FW_RANGE_FABRIC;
	}
	fetch_count_voice(f, x->peer.gid);
	fabric_digest_answer(p, m);
	heard_of_us(f, c, m->range.flags & FW_RANGE_ASKER_NEW);
	if (busy) {
		x->busy_heard++;
		move_on(f); /* its word heard, its sums or names not given */
		return;
	}
	if (x->asked.flags & FW_RANGE_NAMES)
		take_names(f, m);
	else
		take_sums(f, m);
	next_query(f);
}

void fabric_fetch_newcomer_sent(struct fabric *f, bool sent)
{
	struct fabric_fetch *x = &f->fx;

	x->unheard = false;
	if (!sent) {
		x->doubt = false; /* no repeat can follow: nothing to learn */
		return;
	}
	/* the answers to queries asked from now on tell; after the doubt,
	 * first answers count anew */
	x->repeat_ms = now_ms();
	x->burst_first = x->burst_unheard = 0;
}

void fabric_fetch_burst(struct fabric *f)
{
	for (unsigned i = 0; i < FETCH_PEERS; i++)
		f->fx.peers[i].answered = false;
	f->fx.burst_first = f->fx.burst_unheard = 0;
	f->fx.unheard = f->fx.doubt = false;
	/* K voices for each fabric: a node of eight rails asks 24 peers at
	 * its settle time, not 3 and then one every FETCH_GAP_MS */
	f->fx.quick = DIGEST_AGREE_K * (f->n_ports ? f->n_ports : 1);
}

void fabric_fetch_start(struct fabric *f)
{
	f->fx.timer.cb = on_timer;
	loop_timer_arm(f->loop, &f->fx.timer, now_ms() + FETCH_IDLE_MS);
}

void fabric_fetch_stop(struct fabric *f)
{
	loop_timer_cancel(f->loop, &f->fx.timer);
	term_index_free(&f->fx.index);
	for (unsigned i = 0; i < f->n_ports; i++)
		term_index_free(&f->ports[i].terms);
}

void fabric_fetch_stats(const struct fabric *f, struct tlv_writer *w)
{
	const struct fabric_fetch *x = f ? &f->fx : NULL;
	const struct {
		const char *name;
		uint64_t value;
	} rows[] = {
		{"fabric_fetch_sessions", x ? x->sessions : 0},
		{"fabric_fetch_queries", x ? x->queries_sent : 0},
		{"fabric_fetch_answers", x ? x->answers : 0},
		{"fabric_fetch_busy", x ? x->busy_heard : 0},
		{"fabric_fetch_timeouts", x ? x->timeouts : 0},
		{"fabric_fetch_losses", x ? x->losses : 0},
		{"fabric_hints_unanswered", x ? x->hints_unanswered : 0},
		{"fabric_fetch_hints", x ? x->hints_asked : 0},
		{"fabric_range_answered", x ? x->answered : 0},
		{"fabric_range_refused", x ? x->refused : 0},
		{"fabric_range_busy", x ? x->busy_sent : 0},
		{"fabric_range_index_builds", x ? x->index_builds : 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rows[i].value);
	}
}
