/* SPDX-License-Identifier: MIT */
/*
 * The local endpoints and the one owner of their identity. An endpoint is
 * one (device, port, P_Key) on IB, or one configured endpoint on the ip
 * transport; its identity is a host record (names, addresses, GIDs, LID,
 * QPN, P_Key). Port discovery (ib/), netlink (os/) and the transports
 * (fabric/) report a new identity here and never write it themselves; this
 * module puts it in the host store (dropping what became wrong: stale keys,
 * paths from the endpoint) and tells the listeners that registered (the
 * fabric announces, says GOODBYE for a GID that went).
 */
#ifndef IBRESD_ENDPOINTS_H
#define IBRESD_ENDPOINTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/hostkey.h"
#include "core/hoststore.h"
#include "ibres_proto.h"

struct endpoint {
	unsigned index; /* 0-based; ibacm clients count from 1 */
	bool down;      /* its port or link is not up: it is no rail now */
	struct cfg_endpoint cfg; /* cfg.id is the live identity (this module's) */
	uint64_t counters[IBRES_CNTR_MAX];
};

/* What an identity change touched. */
enum endpoint_change {
	EP_CHANGE_ADDRS = 1u << 0, /* IPv4 or IPv6 addresses */
	EP_CHANGE_PORT = 1u << 1,  /* LID or P_Key */
	EP_CHANGE_GID = 1u << 2,   /* a new port GID: a new identity */
	EP_CHANGE_QPN = 1u << 3,   /* the UD QP peers reach it at */
	EP_CHANGE_STATE = 1u << 4, /* it went down, or came back up (ep->down) */
};

/* @old: the identity before; @changes: enum endpoint_change bits. */
typedef void (*endpoint_listener_fn)(void *arg, const struct endpoint *ep,
				     const struct ibres_hostrec *old, unsigned changes);

#define ENDPOINT_LISTENERS_MAX 4

struct endpoints {
	struct endpoint ep[CFG_MAX_ENDPOINTS];
	unsigned n;
	struct host_store *store;
	struct {
		endpoint_listener_fn fn;
		void *arg;
	} listeners[ENDPOINT_LISTENERS_MAX];
	unsigned n_listeners;
};

/* Start with no endpoint; identities go into @store. */
void endpoints_init(struct endpoints *e, struct host_store *store);
/* Call @fn after every identity change. 0, or -ENOSPC (too many listeners). */
int endpoints_listen(struct endpoints *e, endpoint_listener_fn fn, void *arg);
/* Forget @fn (a listener going away). */
void endpoints_unlisten(struct endpoints *e, endpoint_listener_fn fn, void *arg);

/* Take the endpoints of @cfg (start, reload), bound by their place in it:
 * a place keeps its state and counters (the port it was opened on is its
 * port until a restart, whatever its label); what one the reload removed
 * heard is forgotten.
 * Identities come from the config as they are; put them in the store with
 * endpoints_publish() once port and kernel data are in. */
void endpoints_load(struct endpoints *e, const struct ibres_config *cfg);

/* What of an endpoint's identity the paths from it and the peers it heard
 * depend on. */
struct endpoint_port_id {
	uint8_t gid[16]; /* its port GID (zeros: none) */
	uint16_t lid, pkey;
};
/* That part of identity @id. */
void endpoint_port_id(const struct ibres_hostrec *id, struct endpoint_port_id *out);
/* A reload gave each place its identity again (port and kernel data put
 * back): @was[i] the one place i had before, for the first @n places. As
 * for endpoint_update(): the paths from a place whose GID, LID or P_Key
 * changed go, and what a place whose P_Key changed heard (peers of the old
 * partition). */
void endpoints_reloaded(struct endpoints *e, const struct endpoint_port_id *was, unsigned n);
/* Put every endpoint's identity into the store (LOCAL, never expires). 0 or
 * the first error (logged by the caller). */
int endpoints_publish(struct endpoints *e, unsigned *failed_ep);

/* @ep's identity is now @id: the only way to change it once published. The
 * store is refreshed (a new GID is a new identity: the old record goes
 * first), paths from @ep are dropped when its LID, GID or P_Key changed,
 * the endpoints it heard when its P_Key changed, and the listeners hear
 * what changed. Nothing happens when nothing changed.
 * Returns the changes (enum endpoint_change), or a negative errno when the
 * store refused the record (the endpoint keeps the new identity; the
 * listeners are still told). */
int endpoint_update(struct endpoints *e, struct endpoint *ep, const struct ibres_hostrec *id);

/* @ep's port or link went down (@down) or came back up: the only way to
 * change ep->down. Going down, the endpoints learned through it only are
 * forgotten (store_forget_fabric) with the paths from it, so nothing is
 * answered on that rail from the cache; the listeners hear EP_CHANGE_STATE
 * (the fabric sends RAIL_DOWN for its port's GID on the other rails, and
 * announces it when it is back). Nothing happens when the state is unchanged. */
void endpoint_set_down(struct endpoints *e, struct endpoint *ep, bool down);

/* The endpoint that owns @k (name, address, GID or LID), or NULL. */
struct endpoint *endpoint_by_key(struct endpoints *e, const struct host_key *k);
/* The endpoint to use towards a destination of key type @dst->type when the
 * client named no source: the first with an address of that family. */
struct endpoint *endpoint_for_dest(struct endpoints *e, const struct host_key *dst);
/* The GIDs of every endpoint of @ep's host (the endpoints of its first
 * name), ascending and distinct, into @gids. Returns how many; 0 when @ep is
 * a host alone (no other endpoint shares its first name). */
unsigned endpoint_rails(const struct endpoints *e, const struct endpoint *ep,
			uint8_t gids[HOST_RAILS_MAX][16]);
/* Is @gid one of our endpoints' port GIDs (our own datagram came back)? */
bool endpoints_own_gid(const struct endpoints *e, const uint8_t gid[16]);

#endif
