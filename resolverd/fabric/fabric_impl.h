/* SPDX-License-Identifier: MIT */
/* Inside the fabric protocol core: its state, shared by fabric.c (the
 * protocol) and fabric_reload.c (what a reload may not change). */
#ifndef IBRESD_FABRIC_IMPL_H
#define IBRESD_FABRIC_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/endpoints.h"
#include "core/jitter.h"
#include "core/loop.h"
#include "fabric/fabric.h"
#include "fabric/fabric_auth.h"
#include "fabric/fabric_departed.h"
#include "fabric/fabric_digest.h"
#include "fabric/fabric_gone.h"
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_wire.h"
#include "fabric/transport.h"

/* The identity peers hold of an endpoint: the one its last datagram carried
 * (fabric_tx.c). */
struct said_identity {
	bool any;		       /* none before the first datagram, nor after a GOODBYE */
	char name[IBRES_NAME_MAX + 1]; /* the canonical name ("" none) */
	uint8_t gid[16];	       /* the port GID (zero: none) */
	uint16_t pkey;
};

struct fabric_port {
	struct fabric *f;
	struct endpoint *ep; /* its live identity */
	/* the endpoint's transport settings as opened: the transport and the
	 * protocol read these, never the config a reload replaces */
	struct cfg_endpoint opened;
	struct transport t;
	bool open;
	bool told_too_long; /* a datagram that did not fit was logged */
	struct said_identity said;
	uint32_t announce_seq; /* multicast announces sent (the DIGEST item's number) */
	uint64_t mcast_announced_ms; /* when the last one went out (0: none yet) */
	/* is what this fabric heard complete (fabric_digest.c)? */
	struct digest_rule rule;
	/* the sorted copy of the terms of the hosts heard here (fabric_range.c) */
	struct term_index terms;
	uint64_t terms_used_ms;
	/* no new fetch session asks this fabric before (fabric_fetch.c) */
	uint64_t fetch_free_ms;
	/* the source of the datagram being handled (set by on_datagram for the
	 * length of the call): who really sent it, whatever it says */
	const struct transport_addr *rx_from;
};

struct fabric_counters {
	uint64_t tx_mcast, tx_ucast, tx_errors, rx, rx_self, rx_malformed, rx_bad_version,
		rx_auth_failed, rx_auth_second_key, rx_stale, rx_replayed, rx_duplicate, rx_unsolicited, rx_mismatch, rx_conflict, overheard,
		requests_sent, requests_unicast, replies_sent, announces_sent, goodbyes_rx,
		newcomer_repeats, rail_downs_sent;
};

/* Newcomers answered lately, by GID and P_Key hash: a whole cluster can
 * boot at once (1,024 slots answered a 48k storm's peers 2.7 times each; a
 * collision only costs one more answer). At least 16,384 slots of 40 bytes,
 * and one for every two endpoints of a full cache (cache_size hosts times
 * this node's endpoints), at most 262,144 (10 MiB). */
#ifdef NEWCOMER_SLOTS /* fuzzing builds: a few, to reach their collisions */
#define NEWCOMER_SIZED 0
#else
#define NEWCOMER_SLOTS 16384
#define NEWCOMER_SIZED 1
#endif
#define NEWCOMER_SLOTS_MAX (1u << 18)


struct newcomer_slot {
	uint8_t gid[16];
	uint16_t pkey; /* an endpoint is a port GID and a partition */
	uint64_t burst;
	uint64_t until_ms;
};

/* Is the directory complete (fabric_digest.c)? */
struct fabric_digest {
	struct loop_timer tick;	     /* reads the drop counters */
	uint64_t drops_seen;	     /* their sum at the last tick */
	uint64_t incomplete_queries; /* misses asked because of it */
	uint64_t gaps;		     /* announces of a peer missed (its numbers jumped) */
	uint64_t burst_sent_ms; /* when its last NEWCOMER announce went */
	bool burst_sent, burst_checked;
	bool burst_pending;	  /* a burst whose check is still to come: incomplete */
	bool told;		  /* the verdict the resolver last heard of */
	uint64_t unvouched;	  /* bursts that ended unvouched (fabric_digest.h) */
};

struct fabric {
	const struct ibres_config *cfg; /* the running one (a reload replaces its content) */
	struct loop *loop;
	struct endpoints *eps;
	struct host_store *store;
	struct sa_client *sa;
	struct newcomer_slot *newcomers;
	struct ibres_hostrec scratch; /* a known endpoint's record, compared */
	unsigned newcomer_mask;
	struct fabric_port ports[CFG_MAX_ENDPOINTS];
	unsigned n_ports;
	struct loop_timer announce_timer;
	struct loop_timer reannounce_timer;
	struct loop_timer goodbye_timer; /* goodbyes owed, tried again (fabric_tx.c) */
	uint32_t goodbye_retry_ms;	 /* its last wait */
	unsigned startup_announces_left;
	uint64_t burst_overheard; /* c.overheard when the burst began: heard anyone since? */
	uint64_t burst_began_ms;  /* since then we keep what we hear (NEWCOMER's UP) */
	uint64_t newcomer_sent_ms; /* the burst's last NEWCOMER announce */
	unsigned newcomer_repeats_left; /* NEWCOMER announces the burst may still repeat */
	uint64_t burst; /* names this start-up's (or resync's) NEWCOMER announces */
	uint64_t settled_ms;
	uint64_t cut_off_since_ms; /* fabric_cut_off_since() */
	struct jitter_rng rng;
	struct fabric_keys keys; /* n = 0: no cluster key */
	struct freshness fresh;  /* with a key */
	uint64_t stale_logged_ms;
	struct fabric_counters c;
	struct fabric_digest dg;
	struct fabric_departed departed; /* hosts that said goodbye (fabric_departed.h) */
	/* RAIL_DOWN repeats still due, per local endpoint (fabric_announce.c) */
	uint8_t rail_down_left[CFG_MAX_ENDPOINTS];
	struct fabric_gone gone;	 /* their GOODBYEs repeated (fabric_gone.h) */
	struct fabric_fetch fx;
	struct fw_msg answer; /* a range query's answer, built (fabric_range.c) */
	struct fabric_events ev;
	uint8_t buf[FW_MAX_LEN];
};

/* Did a reload remove @p's endpoint (the last places of the file)? Its
 * port stays open, silent, until a restart. */
static inline bool fabric_port_removed(const struct fabric_port *p)
{
	return p->ep->index >= p->f->eps->n;
}

/* Is @p a rail now: open, its port and link up, its endpoint still
 * configured? Nothing goes out through one that is not, and what it heard
 * neither vouches nor waits. */
static inline bool fabric_port_up(const struct fabric_port *p)
{
	return p->open && !p->ep->down && !fabric_port_removed(p);
}

/* fabric_tx.c: a message from @p (its identity, groups, rails) of @type
 * with transaction id @tid; sent unicast to @to, or (NULL) multicast on
 * the lowest group, stamped and signed when a key is set. 0 or a negative
 * errno (counted: fabric_tx_errors). */
void fabric_msg_init(struct fabric_port *p, struct fw_msg *m, uint8_t type, uint64_t tid);
int fabric_port_send(struct fabric_port *p, const struct fw_msg *m,
		     const struct transport_addr *to);

/* fabric_learn.c: the best of @p's groups the peer also joined (-1: none);
 * did @h send the datagram from @from (its address, LID or GID)? */
int fabric_best_group(const struct fabric_port *p, const struct fw_group *theirs, unsigned n);
bool fabric_sent_by(const struct transport_addr *from, const struct ibres_hostrec *h);
/* May the sender's identity be cached? 0, or -EEXIST (counted) when it
 * claims what another live host owns. */
int fabric_learn_check(struct fabric_port *p, const struct fw_msg *m);
/* Store a sender that passed the check (a group index or -1), and tell the
 * resolver. */
int fabric_learn_store(struct fabric_port *p, const struct fw_msg *m, int group);
/* Both, or a refresh in place of a sender heard again as stored;
 * *@prev_seq (may be NULL): its announce number heard here before (0: none). */
int fabric_learn(struct fabric_port *p, const struct fw_msg *m, int group, uint32_t *prev_seq);

/* What a digest, a range or its terms count: the hosts heard on @p's fabric
 * (@fabric: a FABRIC flag was set) or the whole directory (a daemon before
 * per-fabric digests, or no port). */
static inline int fabric_scope(const struct fabric_port *p, bool fabric)
{
	return p && fabric ? (int)p->ep->index : STORE_ALL_FABRICS;
}

/* Are announcements on (announce_interval not 0)? */
static inline bool fabric_announcing(const struct fabric *f)
{
	return f->cfg->announce_interval_s > 0;
}

/* The store is the whole cluster directory only while announcements refresh
 * every entry well before it expires; otherwise a miss may be a live node
 * whose entry just ran out, and must be asked. */
static inline bool fabric_directory_mode(const struct fabric *f)
{
	const struct ibres_config *cfg = f->cfg;

	return fabric_announcing(f) && (uint64_t)cfg->announce_interval_s * 2 <= cfg->addr_ttl_s;
}

/* fabric_announce.c, this node's own announcements: @type (ANNOUNCE with
 * our digest, GOODBYE) with @flags on every port up, a NEWCOMER with UP
 * (the ports it went out on: how many). A burst (start-up, resync) begins:
 * its one NEWCOMER announce within 100 ms. The announce timer. Most peers
 * asked had not heard of us: the NEWCOMER again (0: sent; -EAGAIN: too soon
 * after the last, ask again later; -ENOSPC: the burst's repeats are spent,
 * or announcing is off). A NEWCOMER heard on @p from @from:
 * answered by unicast unless it could hear ours. */
unsigned fabric_announce_all(struct fabric *f, uint16_t flags, uint8_t type, uint64_t tid);
void fabric_burst_begin(struct fabric *f);
void fabric_on_announce_timer(struct loop_timer *t);
/* fabric_tx.c: goodbyes owed tried again (fabric_say_goodbyes) */
void fabric_on_goodbye_timer(struct loop_timer *t);
int fabric_newcomer_again(struct fabric *f);
void fabric_answer_newcomer(struct fabric_port *p, const struct fw_msg *m,
			    const struct transport_addr *from);
/* Local endpoint @ep went down: each of the node's other rails that is up
 * says so (RAIL_DOWN naming its GID) now, and again with the next
 * goodbye_repeats periodic announcements while it stays down (a peer that
 * lost the first would serve the dead rail until addr_ttl). */
void fabric_rail_down_say(struct fabric *f, const struct endpoint *ep);

/* The transports' receive paths, summed (fabric_digest.c). */
void fabric_rx_sum(const struct fabric *f, struct transport_rx_stats *sum);

#endif
