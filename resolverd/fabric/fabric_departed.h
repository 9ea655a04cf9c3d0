/* SPDX-License-Identifier: MIT */
/*
 * Hosts heard saying GOODBYE, remembered for the peers that missed it.
 *
 * A peer that missed a host's GOODBYE (a lost multicast) still holds it
 * until addr_ttl, and every digest it sends holds one host more than ours.
 * Taken as a claim, that keeps every node that heard the GOODBYE asking it
 * and, each time the host does not answer, counting a loss: all of them
 * then say DISTURBED, none vouches for another, and the whole cluster is
 * incomplete for as long as the peer keeps the host (an hour by default).
 *
 * So a digest that holds exactly ours plus hosts we heard leave (one of
 * them, or every one remembered on that fabric) is explained, not a claim.
 * It is believed only while a query to the host went unanswered lately
 * (DEPARTED_FRESH_MS at first, backing off to an announce round): otherwise the host is
 * asked once, where it said goodbye from, and the fabric counts incomplete
 * until it answers (back: learned) or the query ends unanswered (gone: a
 * fact, not a loss). A host that came back while we missed its announces
 * is so learned from the first digest that holds it, as a claim would.
 */
#ifndef IBRESD_FABRIC_DEPARTED_H
#define IBRESD_FABRIC_DEPARTED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hostkey.h"
#include "core/hoststore.h"
#include "fabric/fabric.h"
#include "fabric/fabric_wire.h"

/* Hosts remembered; the oldest is forgotten first. */
#define DEPARTED_MAX 64
/* An unanswered query (or the GOODBYE) vouches for a host's absence this
 * long at first (at least negative_ttl: until then the resolver does not ask
 * the name again), twice as long after each query it left unanswered, at
 * most an announce round (its next announce would have come). */
#define DEPARTED_FRESH_MS 10000
/* A query to a departed host is waited for at most this long. */
#define DEPARTED_ASK_MS 3000

struct departed {
	struct host_key name; /* its canonical name */
	struct fabric_at at;  /* where its GOODBYE came from */
	uint64_t term;	      /* host_digest_term(name) */
	uint64_t until_ms;    /* forgotten then (addr_ttl after the GOODBYE) */
	uint64_t gone_ms;     /* a query to it went unanswered then; 0: not since */
	uint64_t fresh_ms;    /* how long that holds */
	uint64_t asked_until; /* a query to it is waited for until then */
	uint32_t ports;	      /* the ports whose fabric's digest it left (bits) */
	bool whole;	      /* it left the whole directory's digest */
};

struct fabric_departed {
	struct departed e[DEPARTED_MAX];
	unsigned n;	    /* entries used */
	unsigned next;	    /* the one overwritten when full */
	uint64_t explained; /* digests explained by them */
	uint64_t confirmed; /* queries to them that went unanswered */
};

struct fabric;
struct fabric_port;
struct tlv_writer;

/* What the digests held before a GOODBYE's removal (its host counts). */
struct departed_mark {
	uint64_t whole;
	uint64_t port[CFG_MAX_ENDPOINTS];
};

/* Before and after the store removes what a GOODBYE heard on @p says left:
 * the digests it left (one host fewer) remember its sender's host. */
void fabric_departed_before(const struct fabric *f, struct departed_mark *mk);
void fabric_departed_after(struct fabric_port *p, const struct fw_msg *m,
			   const struct departed_mark *mk);

enum departed_verdict {
	DEPARTED_NO,	 /* not explained: a digest as any other */
	DEPARTED_GONE,	 /* explained by hosts known gone: ignore it */
	DEPARTED_ASKING, /* explained, and those hosts are asked: incomplete until *until */
};

/* Is peer digest @d, heard on @p (compared with @own), ours plus hosts that
 * said goodbye? Asks those not known gone lately (the resolver's hint). */
enum departed_verdict fabric_departed_explains(struct fabric_port *p, const struct fw_digest *d,
					       const struct store_digest *own, uint64_t *until);
/* A hint's query for @k on @p went unanswered: true when @k said goodbye
 * (its absence confirmed: no loss); *@until is then when the last query
 * still waited for ends (0: none). */
bool fabric_departed_unanswered(struct fabric_port *p, const struct host_key *k, uint64_t *until);
/* STATS rows: fabric_departed_explained, fabric_departed_confirmed. */
void fabric_departed_stats(const struct fabric *f, struct tlv_writer *w);

#endif
