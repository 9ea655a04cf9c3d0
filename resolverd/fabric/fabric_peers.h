/* SPDX-License-Identifier: MIT */
/*
 * The peers a fetch may ask, inside the fabric layer (fabric_peers.c, for
 * fabric_fetch.c). The list is struct fabric_fetch's peers[], shared out
 * port by port; fabric_fetch_peer(), _asker() and _replier()
 * (fabric_fetch.h) fill it.
 */
#ifndef IBRESD_FABRIC_PEERS_H
#define IBRESD_FABRIC_PEERS_H

#include <stdbool.h>
#include <stdint.h>

struct fabric;
struct fetch_peer;

/* Is @c the slot of the peer of port GID @gid? */
bool fetch_slot_is(const struct fetch_peer *c, const uint8_t gid[16]);
/* The slot of the peer of port GID @gid on port @port, or NULL. */
struct fetch_peer *fetch_find_peer(struct fabric *f, unsigned port, const uint8_t gid[16]);
/* The peer of port GID @gid answers range queries: one of the first
 * DIGEST_AGREE_K voices, remembered for the daemon's life. */
void fetch_count_voice(struct fabric *f, const uint8_t gid[16]);
/* Gone, or an older daemon: forgotten on every port that heard it. */
void fetch_forget_peer(struct fabric *f, const uint8_t gid[16]);
/* Does a peer whose digest claimed more than its fabric holds wait to be
 * asked (through a port that is up)? A peer of a port that is closed or
 * down is never picked. */
bool fetch_claim_waits(struct fabric *f);
/* Into f->fx.peer: the peer of a new session (@later set: each fabric waits
 * out its gap, the soonest time one is free in *@later when none may be
 * asked yet; @claims_only: a peer whose digest claimed more than we hold,
 * or none), or the next one of a session whose peer did not answer
 * (@avoid: that one; @later NULL). False when none is known, or none may be
 * asked before *@later (not UINT64_MAX). */
bool fetch_pick_peer(struct fabric *f, const uint8_t *avoid, uint64_t *later, bool claims_only);

#endif
