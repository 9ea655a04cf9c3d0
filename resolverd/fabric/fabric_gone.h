/* SPDX-License-Identifier: MIT */
/*
 * A GOODBYE repeated (doc/fabric-protocol.md, "A GOODBYE repeated").
 *
 * A GOODBYE is one multicast datagram. A node that missed it keeps the host
 * for addr_ttl, unless the peers' digests show it some rounds later
 * (fabric_departed.h); meanwhile every node that heard the GOODBYE sees a
 * digest of one host more, and stays incomplete.
 *
 * So our announces on a port name, in GONE items, the hosts whose GOODBYE
 * we heard there: each in goodbye_repeats periodic announces, at most
 * FW_GONE_MAX a datagram, the least often named first (then the latest),
 * for as long as the DEPARTED_MAX latest could each be named so often. A node that
 * holds a host so named, heard on the port that heard the name, keeps it
 * only until its next announce could come (DEPARTED_UNHEARD_ROUNDS of its
 * own rounds), if its daemon announces: a live host announces meanwhile and
 * gets its TTL back; one that left expires.
 *
 * Nothing is sent for a name heard, so a stale or forged one costs no
 * traffic; at worst a live host whose next announces are all lost is
 * forgotten until the one after. Only from a multicast announce sent from
 * its sender's own address, only in directory mode, where a host's silence
 * says it left, and not while our own receive path drops datagrams (the
 * silence may be ours).
 */
#ifndef IBRESD_FABRIC_GONE_H
#define IBRESD_FABRIC_GONE_H

#include <stdint.h>

#include "fabric/fabric_wire.h"

struct fabric_gone {
	/* names sent in our announces; names heard in peers'; endpoints whose
	 * expiry a name heard moved */
	uint64_t sent, heard, shortened;
	uint64_t drops, drops_ms; /* our receive path's drops, and when they last rose */
};

struct fabric_port;
struct transport_addr;

/* Our periodic ANNOUNCE @m on @p: the names to repeat there, as many as
 * the datagram has room for. */
void fabric_gone_put(struct fabric_port *p, struct fw_msg *m);
/* @m went out on @p: its names count as told there. */
void fabric_gone_told(struct fabric_port *p, const struct fw_msg *m);
/* Peer ANNOUNCE @m heard on @p from @from, its sender learned: the hosts
 * it names, held there, are kept only until their next announce could
 * come. */
void fabric_gone_heard(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from);

#endif
