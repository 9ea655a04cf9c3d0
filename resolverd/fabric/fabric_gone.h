/* SPDX-License-Identifier: MIT */
/*
 * A GOODBYE repeated, and the hosts it names asked (doc/fabric-protocol.md,
 * GONE).
 *
 * A GOODBYE is one multicast datagram. A node that missed it keeps the host
 * for addr_ttl, unless the peers' digests show it, a few announce rounds
 * later (fabric_departed.h); meanwhile every node that heard it sees a
 * digest of one host more, and stays incomplete.
 *
 * So every ANNOUNCE repeats, for goodbye_repeats announce rounds, the
 * canonical names of the hosts whose GOODBYE its sender heard on that port
 * (GONE items, at most FW_GONE_MAX, the latest first). A node that holds
 * such a host where it heard the ANNOUNCE asks the host there, by unicast,
 * as a hint is asked (a probe: fabric_at.probe). News of the host ends the
 * probe and keeps it; unanswered every attempt, its endpoints heard at that
 * address are forgotten, as if its GOODBYE had been heard.
 *
 * The peer's word is only a reason to ask: a live host answers, so a stale
 * or forged GONE costs a unicast question and never a live host. Bounded:
 * a name is asked once a round, and a port starts GONE_PROBES_ROUND probes
 * a round at most.
 */
#ifndef IBRESD_FABRIC_GONE_H
#define IBRESD_FABRIC_GONE_H

#include <stdint.h>

#include "core/config.h"
#include "core/hostkey.h"
#include "fabric/fabric.h"
#include "fabric/fabric_wire.h"

/* Probes a port starts in an announce round, at most. */
#define GONE_PROBES_ROUND 8
/* Names asked lately, remembered (a name is asked once a round). */
#define GONE_ASKED_MAX 16

struct fabric_gone {
	struct {
		uint64_t term; /* host_digest_term() of its name */
		uint64_t ms;   /* when it was asked */
	} asked[GONE_ASKED_MAX];
	struct {
		uint64_t since_ms; /* the start of the port's current round of probes */
		unsigned n;	   /* probes started since */
	} port[CFG_MAX_ENDPOINTS];
	/* names put in our announces; heard in peers'; probes started; names
	 * not asked (over the bound, or asked lately); endpoints forgotten
	 * unanswered */
	uint64_t sent, heard, probes, skipped, forgotten;
};

struct fabric_port;
struct transport_addr;

/* Our ANNOUNCE @m on @p: the GONE names to repeat there. */
void fabric_gone_put(struct fabric_port *p, struct fw_msg *m);
/* Peer ANNOUNCE @m, from @from on @p, its sender learned: the hosts it
 * names that we hold there are asked there. */
void fabric_gone_heard(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from);

#endif
