/* SPDX-License-Identifier: MIT */
/*
 * Hosts heard saying GOODBYE, and the peers that missed it.
 *
 * A peer that missed a host's GOODBYE (a lost multicast) still holds it,
 * and every digest it sends holds one host more than ours. Taken as any
 * other claim, that kept every node that heard the GOODBYE fetching, asking
 * the host, counting each unanswered query as a loss and saying DISTURBED:
 * none vouched for another, and the whole cluster stayed incomplete for as
 * long as the peer kept the host (addr_ttl, an hour by default).
 *
 * So a digest that holds exactly ours plus hosts we heard leave (one of
 * them, or every one remembered on that fabric) is explained:
 * - while a query to each of them, where its sender said it is, went
 *   unanswered lately, it is no claim at all (that sender's word is stale);
 * - otherwise it is a quiet claim: the fetch asks a peer where the host is
 *   and asks the host there (it came back: learned, as any claim teaches),
 *   but our digests do not say DISTURBED for it, and a query it leaves
 *   unanswered is no loss: the peer's word is stale, and a claim made only
 *   by peers whose word is stale is met. Another peer may know where the
 *   host is now (a restart on IB has a new QPN).
 * The GOODBYE itself confirms nothing: a restart is a GOODBYE and then a
 * NEWCOMER, which a node may miss.
 *
 * The peer that missed GOODBYEs (one or many: a rack switched off on a
 * lossy fabric) hears K distinct peers past their start-up send the same
 * digest, of fewer hosts than its own. It marks every learned endpoint of
 * a daemon that announces (its datagrams say so; an older daemon's
 * ANNOUNCE with its digest did); at the next such agreement DEPARTED_UNHEARD_ROUNDS
 * announce rounds or more later, those it has not heard since are kept
 * only until their next announce could come (as many rounds more), not for
 * addr_ttl; unless its own receive path dropped more than 1 % of the
 * announces due meanwhile, or far more are unheard than the peers lack.
 * Which hosts the peers lack, their digests cannot tell when more than
 * one; that the hosts which left are silent, and the live ones announce,
 * can. Nor are the peers asked to be complete or quiet: a peer's digests
 * that no one explains keep every node that hears them incomplete and
 * DISTURBED, until the peer forgets.
 */
#ifndef IBRESD_FABRIC_DEPARTED_H
#define IBRESD_FABRIC_DEPARTED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/hostkey.h"
#include "core/hoststore.h"
#include "fabric/fabric_digest.h"
#include "fabric/fabric_wire.h"

/* Hosts remembered; a full table forgets the one that expires first. */
#define DEPARTED_MAX 64
/* How long an unanswered query confirms a host's absence at first (at
 * least negative_ttl: until then the resolver does not ask the name
 * again); twice as long after each further one, at most an announce round. */
#define DEPARTED_FRESH_MS 10000

/* Rounds an endpoint marked unheard must stay so to be found silent (a
 * live host announces at least once a round: as many announces lost), and
 * rounds it is kept then (as many more). */
#define DEPARTED_UNHEARD_ROUNDS 2

/* Peers whose word on one departed host was found stale, remembered. */
#define DEPARTED_BY 8

struct departed {
	struct host_key name; /* its canonical name */
	uint64_t term;	      /* host_digest_term(name) */
	uint64_t until_ms;    /* forgotten then (addr_ttl after the GOODBYE) */
	uint64_t said_ms;     /* its last GOODBYE heard (fabric_gone.h) */
	/* our announces on each port that named it since (fabric_gone.h) */
	uint8_t told[CFG_MAX_ENDPOINTS];
	uint64_t fresh_ms;    /* how long an unanswered query confirms its absence */
	/* the peers that named it where a query went unanswered, and when */
	struct {
		uint64_t sender, ms;
	} gone[DEPARTED_BY];
	uint32_t ports; /* the ports whose fabric's digest it left (bits) */
	bool whole;	/* it left the whole directory's digest */
};

/* Digests of fewer hosts than ours that peers agree on, each value with
 * the distinct peers (their names' terms) that sent it within a round. */
#define DEPARTED_FEWER_VALUES 4

struct departed_fewer {
	uint64_t hosts, sum;
	uint64_t first_ms; /* when the first of them was heard */
	uint64_t senders[DIGEST_AGREE_K];
	unsigned n;
};

struct fabric_departed {
	struct departed e[DEPARTED_MAX];
	unsigned n; /* entries used */
	struct departed_fewer fewer[CFG_MAX_ENDPOINTS][DEPARTED_FEWER_VALUES];
	uint64_t marked_ms;	/* when the store marked every endpoint unheard */
	uint64_t drops_at_mark; /* our receive path's drops then */
	bool marked;
	uint64_t explained; /* peers' digests explained by them */
	uint64_t confirmed; /* queries to them that went unanswered */
	uint64_t shortened; /* unheard endpoints kept only until their next announce */
};

struct fabric;
struct fabric_port;

/* What the digests held before a GOODBYE's removal (their host counts). */
struct departed_mark {
	uint64_t whole;
	uint64_t port[CFG_MAX_ENDPOINTS];
};

/* Before and after the store removes what a GOODBYE heard on @p says left:
 * the digests it left (one host fewer) remember its sender's host. */
void fabric_departed_before(const struct fabric *f, struct departed_mark *mk);
void fabric_departed_after(struct fabric_port *p, const struct fw_msg *m,
			   const struct departed_mark *mk);
/* The host named @name was learned again: forgotten here. */
void fabric_departed_back(struct fabric *f, const char *name);

enum departed_verdict {
	DEPARTED_NO,	/* not explained: a digest as any other */
	DEPARTED_GONE,	/* explained, and the sender's word on them found stale: no news */
	DEPARTED_QUIET, /* explained, not so found: a claim, but no disturbance */
};

/* Is peer @sender's digest @d, heard on @p (compared with @own), ours plus
 * hosts that said goodbye? GONE when, for each of them, a query where
 * @sender said it is went unanswered lately. */
enum departed_verdict fabric_departed_explains(struct fabric_port *p, const struct fw_digest *d,
					       const struct store_digest *own, uint64_t sender);
/* The same question, not counted: is it GONE? */
bool fabric_departed_gone(struct fabric_port *p, const struct fw_digest *d,
			  const struct store_digest *own, uint64_t sender);
/* A hint's query for @k, asked through @p where peer @named_by said it is,
 * went unanswered: true when @k said goodbye on @p's fabric (that peer's
 * word on it is stale; no loss). */
bool fabric_departed_unanswered(struct fabric_port *p, const struct host_key *k, uint64_t named_by);
/* Peer digest @d, from the host named @sender, heard on @p and compared
 * with @own, holds fewer hosts. When K distinct peers past their start-up
 * sent that same digest within a round: the first time, every learned
 * endpoint of a daemon that announces is marked; DEPARTED_UNHEARD_ROUNDS or more
 * after the mark, the endpoints of @d's scope not heard since it are kept
 * only until their next announce could come (as many rounds), and every
 * endpoint is marked again. */
void fabric_departed_fewer(struct fabric_port *p, const struct fw_digest *d,
			   const struct store_digest *own, const char *sender);

#endif
