/* SPDX-License-Identifier: MIT */
/*
 * Is the directory complete? (doc/fabric-protocol.md, "When the directory is
 * complete".) Every ANNOUNCE carries its sender's directory digest (host
 * count and sum of per-host terms, core/hoststore.h); comparing what peers
 * hold with what the store holds, and watching the receive path's drop
 * counters, tells whether a key the store lacks may be answered "not found".
 *
 * The rule itself is pure (struct digest_rule, a clock passed in) so that
 * the unit tests drive it; fabric_digest.c also holds the fabric's glue: the
 * digest an ANNOUNCE carries, the 1 s tick that reads the drop counters,
 * and the counters for STATS.
 */
#ifndef IBRESD_FABRIC_DIGEST_H
#define IBRESD_FABRIC_DIGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "fabric/fabric_wire.h"

/* Settled digests that must agree with ours, in a row, to overrule a
 * disagreement or a drop (fewer when the directory knows fewer peers). */
#define DIGEST_AGREE_K 3
/* ... and no new disagreement or drop for this long: at most one return to
 * "complete" a second, whatever a storm does. */
#define DIGEST_HOLD_MS 1000
/* How long after the last NEWCOMER announce of a burst its answers are
 * waited for (they come at once), when the settle time is shorter. */
#define DIGEST_ANSWER_MS 500
/* Digests remembered from a burst, to compare with the directory at its end. */
#define DIGEST_RECENT 8
/* How often the receive path's drop counters are read. */
#define DIGEST_TICK_MS 1000

/* What a peer's digest showed that we lack: the largest directory heard of
 * (count and sum); inexact when two of that size differed, so that only a
 * larger one of ours satisfies it. hosts 0: no claim. */
#define DIGEST_CLAIM_BY 4
struct digest_claim {
	uint64_t hosts;
	uint64_t sum;
	bool exact;
	bool fabric; /* of a fabric's digest (FW_DIGEST_FABRIC), or the whole's */
	bool quiet;  /* only quiet claims made it (digest_rule_claim()) */
	/* the peers that claimed exactly it; more than DIGEST_CLAIM_BY: n_by
	 * DIGEST_CLAIM_BY + 1 */
	uint64_t by[DIGEST_CLAIM_BY];
	unsigned n_by;
};

struct digest_rule {
	struct digest_claim claim;
	uint64_t disturbed_ms; /* last disagreement or drop (0: none since the reset) */
	uint64_t claimed_ms;   /* last claim, a quiet one too (digest_rule_claim()) */
	uint64_t round_ms;     /* a quiet round: every live peer announced once since */
	unsigned agree;	       /* settled digests that matched ours, in a row, since then */
	uint64_t agreed_by[DIGEST_AGREE_K]; /* from whom (agree of them): one peer is one voice */
	/* peers ever heard to answer range queries, when fewer than K (0: not
	 * limited): a cluster mostly of daemons before them */
	unsigned voices;
	bool dropped;	       /* the receive path dropped datagrams since then */
	bool incomplete;       /* the verdict of the last digest_rule_eval() */
	/* a burst ended with nothing against us, but peers that send digests
	 * heard and fewer than K of the last ones equal to ours: until K
	 * settled ones agree (or a round passes since @unvouched_ms), absence
	 * of news is no proof */
	bool unvouched;
	uint64_t unvouched_ms;
	uint64_t vouch_from_ms; /* agreements count from then on (the hold) */
	/* at least this many must agree (a fabric that heard no one at a boot
	 * where others did: it knows of no peer there, yet may have some) */
	unsigned min_k;
	/* the burst's check found no peer on this fabric (burst_check()):
	 * complete, alone, until a peer's digest is heard (then unvouched) */
	bool alone;
	/* the last digests heard from peers past their own start-up */
	struct {
		uint64_t hosts, sum, sender;
	} recent[DIGEST_RECENT];
	unsigned heard, late; /* digests heard since the reset; of them, such */
	uint64_t mismatches, drops;
};

/* A fresh rule (start-up, resync): nothing heard, nothing dropped.
 * @round_ms: one announce interval and its jitter. */
void digest_rule_reset(struct digest_rule *r, uint64_t round_ms);
/* A peer's digest @theirs was heard at @now, after its sender was learned;
 * @sender names the peer (nonzero; each peer agrees once). Returns true
 * when it disagreed (it holds what we lack). */
bool digest_rule_heard(struct digest_rule *r, const struct store_digest *own,
		       const struct fw_digest *theirs, uint64_t sender, uint64_t now);
/* The @sender argument for a peer of port GID @gid. */
uint64_t digest_sender(const uint8_t gid[16]);
/* Peer @sender's digest @theirs, heard at @now, holds more than ours: a
 * claim (the agreements so far are void). @quiet: it holds more only of
 * hosts that said goodbye (fabric_departed.h), which is no disagreement:
 * no DISTURBED, no drop for it. */
void digest_rule_claim(struct digest_rule *r, const struct fw_digest *theirs, uint64_t sender,
		       bool quiet, uint64_t now);
/* The receive path dropped datagrams (a queue overrun) at @now. */
void digest_rule_drop(struct digest_rule *r, uint64_t now);
/* A start-up burst was checked at @now with nothing against us: when
 * digests were heard (peers that send them) but fewer than K of the last
 * DIGEST_RECENT from peers past their own start-up (SETTLED or
 * PAST_SETTLE, and not DISTURBED) equal @own, count the directory unvouched (incomplete until
 * K settled ones agree, or a round passed). Returns true when it did. A
 * directory of no peer (@own holds us alone) is complete; the check marks
 * it @alone, and the first peer's digest heard later makes it unvouched. */
bool digest_rule_burst_end(struct digest_rule *r, const struct store_digest *own, uint64_t now);
/* Did @r see a loss or a disagreeing digest less than DIGEST_HOLD_MS
 * before @now? Our digests then say so (FW_DIGEST_DISTURBED). */
bool digest_rule_disturbed(const struct digest_rule *r, uint64_t now);
/* Decide, at @now with the store's digest @own: is a key the store lacks
 * possibly a live host? Sets and returns r->incomplete. The settle time is
 * the caller's. */
bool digest_rule_eval(struct digest_rule *r, const struct store_digest *own, uint64_t now);

struct fabric;
struct tlv_writer;

/* The fabric's side (fabric.c calls these). */
void fabric_digest_start(struct fabric *f);
void fabric_digest_stop(struct fabric *f);
/* The directory is relearned from scratch (a resync). */
void fabric_digest_reset(struct fabric *f);
/* Did we miss multicast announces of a peer whose last multicast number
 * heard was @prev (0: none) before @d? A lower number is a restart, not a
 * gap; a unicast answer is never one (it may overtake its multicast). */
bool digest_seq_gap(uint32_t prev, const struct fw_digest *d);

struct fabric_port;

/* Our digest, into an ANNOUNCE (or RANGE_ANSWER) from @p: multicast
 * (@unicast false: the next number) or an answer to one node (the last
 * number again); of what @p's fabric heard (FW_DIGEST_FABRIC), or of the
 * whole directory (@whole: an answer to a daemon before per-fabric ones). */
void fabric_digest_put(struct fabric_port *p, struct fw_msg *m, bool unicast, bool whole);
/* The last NEWCOMER announce of a burst went out. */
void fabric_digest_burst_sent(struct fabric *f);
/* An ANNOUNCE heard on @p from a peer whose sender was learned; @prev_seq:
 * the number of its last announce heard here before it (0: none). Each
 * fabric (port) has a rule of its own: what a peer heard on it compares
 * with what we heard there. */
void fabric_digest_heard(struct fabric_port *p, const struct fw_msg *m, uint32_t prev_seq);
/* A RANGE_ANSWER's digest on @p (fabric_fetch.c): what the answering peer
 * holds, heard like an announce's; past its settle time it vouches. */
void fabric_digest_answer(struct fabric_port *p, const struct fw_msg *m);
/* Anything may have changed (a datagram handled): decide again, and tell
 * the resolver when the verdict moved. */
void fabric_digest_update(struct fabric *f);
/* A host that said goodbye left a query unanswered (fabric_departed.h): a
 * claim it explains, of peers whose word on it was so confirmed, is met. */
void fabric_digest_departed(struct fabric *f);
/* A datagram to or from a peer on @p was lost (a range query's later try
 * answered, fabric_fetch.c): a loss, as the drop counters' are. */
void fabric_digest_lost(struct fabric_port *p);
/* @n distinct peers were heard to answer range queries, fewer than K (0:
 * not fewer; fabric_fetch.c): K is at most as many. */
void fabric_digest_voices(struct fabric *f, unsigned n);
/* The directory may lack a live host (the settle time aside): some
 * fabric's rule says so, no rail is up in its group, or the start-up burst
 * is not checked yet. */
bool fabric_digest_incomplete(const struct fabric *f);
/* Port @p's fabric may lack a live host's endpoint (its rule alone). */
bool fabric_port_incomplete(const struct fabric_port *p);
/* Until when (CLOCK_MONOTONIC ms) an incomplete fabric takes no agreement:
 * the hold after an unvouched burst; 0 when none holds. */
uint64_t fabric_digest_hold_end(const struct fabric *f);
/* STATS rows: directory_complete (@complete: the caller knows, from the
 * settle time and this module's rule), fabric_digest_mismatches,
 * fabric_rx_drops_detected, fabric_rx_gaps,
 * fabric_bursts_unvouched, fabric_incomplete_queries, and the departed
 * hosts' (fabric_departed.h): fabric_departed_explained, _confirmed,
 * _shortened. */
void fabric_digest_stats(const struct fabric *f, bool complete, struct tlv_writer *w);

#endif
