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
 * - while a query to each of them went unanswered lately (a hint's, asked
 *   where a peer said the host is), it is no claim at all;
 * - otherwise it is a quiet claim: the fetch asks a peer where the host is
 *   and asks the host there (it came back: learned, as any claim teaches),
 *   but our digests do not say DISTURBED for it, and a query it leaves
 *   unanswered is no loss: it confirms the absence, and meets the claim.
 * The GOODBYE itself confirms nothing: a restart is a GOODBYE and then a
 * NEWCOMER, which a node may miss.
 *
 * The peer that missed the GOODBYE hears K settled, quiet peers' digests
 * holding one host fewer than its own, that same one each time: it keeps
 * that host only until its next announce could come (two rounds), not for
 * addr_ttl.
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

struct departed {
	struct host_key name; /* its canonical name */
	uint64_t term;	      /* host_digest_term(name) */
	uint64_t until_ms;    /* forgotten then (addr_ttl after the GOODBYE) */
	uint64_t gone_ms;     /* a query to it went unanswered then; 0: not yet */
	uint64_t fresh_ms;    /* how long that confirms its absence */
	uint32_t ports;	      /* the ports whose fabric's digest it left (bits) */
	bool whole;	      /* it left the whole directory's digest */
};

/* The host K peers lacked on one port (fabric_departed_lacked()). */
struct departed_lack {
	uint64_t term;
	uint64_t senders[DIGEST_AGREE_K];
	unsigned n;
};

struct fabric_departed {
	struct departed e[DEPARTED_MAX];
	unsigned n; /* entries used */
	struct departed_lack lack[CFG_MAX_ENDPOINTS];
	uint64_t explained; /* peers' digests explained by them */
	uint64_t confirmed; /* queries to them that went unanswered */
	uint64_t shortened; /* hosts K peers lacked, kept until their next announce */
};

struct fabric;
struct fabric_port;
struct tlv_writer;

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
	DEPARTED_GONE,	/* explained by hosts whose absence is confirmed: no news */
	DEPARTED_QUIET, /* explained by others too: a claim, but no disturbance */
};

/* Is peer digest @d, heard on @p (compared with @own), ours plus hosts that
 * said goodbye? */
enum departed_verdict fabric_departed_explains(struct fabric_port *p, const struct fw_digest *d,
					       const struct store_digest *own);
/* A hint's query for @k, asked through @p, went unanswered: true when @k
 * said goodbye (its absence confirmed: no loss). */
bool fabric_departed_unanswered(struct fabric_port *p, const struct host_key *k);
/* Peer digest @d (from @sender), heard on @p and compared with @own while
 * we count @p's fabric complete and lost nothing lately (the caller's to
 * check), holds one host fewer. When K distinct peers that say the same of
 * themselves lack the same host, that host is kept only until its next
 * announce could come: they heard it say goodbye, which we missed (a live
 * host's next announce refreshes it). */
void fabric_departed_lacked(struct fabric_port *p, const struct fw_digest *d,
			    const struct store_digest *own, uint64_t sender);
/* STATS rows: fabric_departed_explained, _confirmed, _shortened. */
void fabric_departed_stats(const struct fabric *f, struct tlv_writer *w);

#endif
