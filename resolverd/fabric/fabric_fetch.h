/* SPDX-License-Identifier: MIT */
/*
 * Fetching what a peer holds and we lack (doc/fabric-protocol.md, "Fetching
 * what a peer holds"). While the directory is incomplete after the settle
 * time, one peer that answers range queries is asked, by unicast, for the
 * count and sum of its hosts whose digest term falls in a range, in 16
 * parts; parts that differ from ours are asked again, split, and once a
 * part holds few hosts (or we lack many of them), for their names, paged
 * in term order with where each host is reached. Each name we lack is
 * handed up (fabric_events.hint) and asked of that host alone with a
 * unicast REQUEST, so that the host answers for itself: a peer's word is
 * only a hint. Each answer also carries the peer's whole digest, which the
 * completeness rule hears, and says whether our query was the first it
 * heard of us (fabric.c announces us again when most peers say so).
 *
 * fabric_range.c answers such queries (rate-limited, from a sorted copy of
 * the terms); fabric_fetch.c asks them. One query outstanding at a time,
 * one peer a session, every bound below explicit.
 */
#ifndef IBRESD_FABRIC_FETCH_H
#define IBRESD_FABRIC_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/loop.h"
#include "core/term_index.h"
#include "fabric/fabric_digest.h"
#include "fabric/fabric_wire.h"
#include "fabric/transport.h"

/* Peers heard to answer range queries (their DIGEST says so), remembered,
 * each port apart: a fabric is vouched for by K peers heard on it
 * (DIGEST_AGREE_K), whichever fabrics filled the list first. A port has
 * FETCH_PEERS shared out among the ports, at most FETCH_PORT_PEERS_MAX (a
 * node of one or two rails, as many as before) and at least
 * FETCH_PORT_PEERS_MIN: K voices and one to spare. */
#define FETCH_PORT_PEERS_MAX 16
#define FETCH_PORT_PEERS_MIN (DIGEST_AGREE_K + 1)
#define FETCH_PEERS	     128
_Static_assert(FETCH_PEERS >= FETCH_PORT_PEERS_MAX, "one port may have its most");
/* How long an answer is waited for, and how often a query is sent before
 * the session gives that peer up. Once the peer answered, the wait is four
 * times its shortest round trip, within FETCH_WAIT_MIN_MS..FETCH_WAIT_MS,
 * doubled at each try: a session of a thousand pages on a lossy fabric
 * must not wait 300 ms for each answer lost. */
#define FETCH_WAIT_MS	  300
#define FETCH_WAIT_MIN_MS 25
#define FETCH_TRIES	  3
/* A query's tries differ in the low bits of its tid, which the answer
 * echoes: an answer to a later try, the earlier ones unanswered, shows a
 * datagram lost (answers come in the order asked). */
#define FETCH_TRY_MASK 3ULL
/* Queries in a row a peer may leave unanswered before it is forgotten;
 * how often a session moves its query on to another peer. */
#define FETCH_STRIKES  3
#define FETCH_SWITCHES 4
/* Repeats of a burst's NEWCOMER announce, at most: those at start-up
 * (fabric_announce.c), and those sent on evidence, peers' answers that had
 * heard no multicast announce of ours. A lossy fabric loses a repeat as it
 * lost the first, so each is sent only when an answer to a query asked
 * after the last says it did not get out (at most two a second). */
#define NEWCOMER_REPEATS 16
/* Between two sessions asking one fabric (a port's: the sessions of a node
 * of several planes take the fabrics in turn, each fabric's gap its own);
 * and how often an idle fetch looks again. */
#define FETCH_GAP_MS  200
/* ... after a session that only vouched, the first DIGEST_AGREE_K a port of a burst */
#define FETCH_VOUCH_GAP_MS 20
#define FETCH_IDLE_MS 500
/* A session asks at most this many queries for sums and pages of names,
 * and hands up at most this many names; ranges waiting to be asked, at
 * most (a depth-first descent of 16 parts a level keeps at most 16 a
 * level waiting). A page holds about 50 names (IPv4): 2,048 list 100,000 hosts. */
#define FETCH_QUERIES_MAX 64
#define FETCH_PAGES_MAX	  2048
#define FETCH_HINTS_MAX	  4096
#define FETCH_TODO_MAX	  256
/* A part the peer holds this few hosts in is asked for their names; so is
 * a part where we lack at least one in FETCH_DENSE of the peer's. */
#define FETCH_NAMES_AT 16
#define FETCH_DENSE    32
/* Range queries answered, at most, a second (a burst of as many): each is
 * two binary searches a part, or a page of names, from the sorted copy of
 * the terms; the copy is rebuilt (a walk of the store and a sort) at most
 * every RANGE_INDEX_FRESH_MS while the store changes, and freed once no
 * query came for RANGE_INDEX_IDLE_MS. */
#define RANGE_ANSWERS_PER_S  1000
/* ... and over it, answers with the DIGEST alone (FW_RANGE_BUSY) a second:
 * a peer's word costs the answerer nothing, and a query met with silence
 * would cost the asker three tries */
#define RANGE_BUSY_PER_S 40000
#define RANGE_INDEX_FRESH_MS 1000
#define RANGE_INDEX_IDLE_MS  10000

struct fetch_peer {
	struct transport_addr addr; /* where its datagrams came from */
	uint8_t gid[16];	    /* its port GID: the answer must come from it */
	unsigned port;		    /* our port that heard it */
	unsigned strikes;	    /* queries it left unanswered since last heard */
	bool claimed;		    /* its digest held hosts we lacked: ask it first */
	uint32_t claim_hosts;	    /* ... that digest's, while claimed */
	uint64_t claim_sum;
	/* it answers range queries (its digest says so, it asked one, or it
	 * answered one): its silence is a loss. Not so a host learned from its
	 * REPLY alone, which may be a daemon before range queries */
	bool proven;
	bool answered;		    /* it answered us since the burst began */
	bool old;		    /* its names came without WHERE: a daemon before it,
				     * whose every answer walks its store */
	bool fabric;		    /* its digests are of what it heard on this fabric */
	bool used;
};

struct fabric_fetch {
	struct loop_timer timer;
	struct fetch_peer peers[FETCH_PEERS];
	unsigned next_peer; /* round robin: settled peers vouch one after another */
	/* the session */
	bool active, waiting;
	struct fetch_peer peer;
	uint32_t ports_asked; /* ports whose peers it asked: their fabrics' gaps follow it */
	struct fw_range todo[FETCH_TODO_MAX], asked;
	unsigned n_todo, tries, queries, pages, hints, switches;
	uint64_t tid;
	uint64_t sent_ms;  /* the query's first attempt */
	unsigned rtt_ms;   /* the peer's shortest round trip (0: none yet) */
	/* the answering side's budget, and its sorted copy of the terms */
	struct range_bucket {
		uint64_t ms;
		unsigned tokens;
	} answer_budget, busy_budget;
	struct term_index index;
	uint64_t index_used_ms, index_builds;
	/* counters (STATS) */
	uint64_t sessions, queries_sent, answers, timeouts, hints_asked;
	/* peers that answered first since the burst began, and of them those
	 * that had heard no multicast announce of ours; most of them: our
	 * NEWCOMER announce did not get out, and fabric.c sends it again
	 * (@unheard). Then the node is in @doubt, and keeps asking peers,
	 * until an answer to a query asked after the last repeat (since
	 * @repeat_ms) says it got out */
	unsigned burst_first, burst_unheard;
	bool doubt;
	uint64_t repeat_ms;
	unsigned quick; /* sessions of the burst that may follow at FETCH_VOUCH_GAP_MS */
	/* distinct peers heard to answer range queries, the first few */
	uint8_t voices[DIGEST_AGREE_K][16];
	unsigned n_voices;
	bool unheard;
	uint64_t answered, refused, busy_sent, busy_heard, losses, hints_unanswered;
};

struct fabric;
struct fabric_port;
struct fw_msg;
struct tlv_writer;

void fabric_fetch_start(struct fabric *f);
void fabric_fetch_stop(struct fabric *f);
/* An ANNOUNCE from a peer was learned on @p (from @from): remember it when
 * it answers range queries, first in line when its digest holds hosts we
 * lack. */
void fabric_fetch_peer(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from);
/* A RANGE_QUERY from a peer was learned on @p (from @from): it answers
 * range queries too, so remember it (it refills a list that lossy sessions
 * emptied). */
void fabric_fetch_asker(struct fabric_port *p, const struct fw_msg *m,
			const struct transport_addr *from);
/* A REPLY from a peer was learned on @p (from @from): a peer on that fabric
 * to ask too, kept once it answers (a host whose announces this fabric
 * missed is known there only so). */
void fabric_fetch_replier(struct fabric_port *p, const struct fw_msg *m,
			  const struct transport_addr *from);
/* The NEWCOMER repeat that @unheard asked for went out (@sent), or none
 * can (the burst's repeats are spent, announcing is off). */
void fabric_fetch_newcomer_sent(struct fabric *f, bool sent);
/* A burst (start-up, resync) began: who heard of us is asked anew. */
void fabric_fetch_burst(struct fabric *f);
/* A RANGE_ANSWER arrived on @p. */
void fabric_fetch_answer(struct fabric_port *p, const struct fw_msg *m);
/* A RANGE_QUERY arrived on @p from @from (fabric_range.c): answer it when
 * the budget allows (over it, the DIGEST alone, FW_RANGE_BUSY); @asker_new:
 * no multicast announce of the asker was heard on @p (the answer says so:
 * its NEWCOMER did not reach us). */
void fabric_range_answer(struct fabric_port *p, const struct fw_msg *m,
			 const struct transport_addr *from, bool asker_new);
/* The sorted copy of the digest terms of the hosts heard on @p's fabric
 * (NULL: of the whole directory; core/term_index.h), made
 * again when the store changed and the copy is RANGE_INDEX_FRESH_MS old:
 * NULL when it cannot be made (out of memory). Up to that old, so what it
 * says is a hint: it answers range queries, and a session compares a
 * peer's sums with it (a copy behind the store lacks hosts learned since,
 * which costs a query more, never one less). */
const struct term_index *fabric_terms(struct fabric *f, struct fabric_port *p, uint64_t now);
/* Free the copies of the terms when unused a while. */
void fabric_range_idle(struct fabric *f, uint64_t now);
/* STATS rows: fabric_fetch_sessions, fabric_fetch_queries, fabric_fetch_answers,
 * fabric_fetch_busy, fabric_fetch_timeouts, fabric_fetch_losses, fabric_hints_unanswered,
 * fabric_fetch_hints, fabric_range_answered, fabric_range_refused, fabric_range_busy,
 * fabric_range_index_builds. */
void fabric_fetch_stats(const struct fabric *f, struct tlv_writer *w);

#endif
