/* SPDX-License-Identifier: MIT */
/* The resolver core: local endpoints, the cache's authoritative content
 * (local and static hosts), lookups on behalf of client requests, and the
 * path records handed out. It never knows which transport (if any) carries
 * fabric queries: it asks fabric.h. */
#ifndef IBRESD_RESOLVER_H
#define IBRESD_RESOLVER_H

#include "daemon.h"
#include "frontend/server.h"

/* Take endpoints from d->cfg and fill the cache with them and the static hosts. */
int resolver_init(struct ibresd *d);
void resolver_fini(struct ibresd *d);
/* Swap in a new configuration, keeping learned cache entries. */
int resolver_reload(struct ibresd *d, struct ibres_config *cfg, struct cfg_hosts *hosts);

/* The local endpoint that owns @k (name, address, GID or LID), or NULL. */
struct endpoint *endpoint_by_key(struct ibresd *d, const struct cache_key *k);
/* The endpoint to use towards a destination of key type @type when the
 * client named no source: the first with an address of that family. */
struct endpoint *endpoint_for_dest(struct ibresd *d, const struct cache_key *dst);

/* Outcome of resolver_lookup. */
enum lookup_result {
	LOOKUP_FOUND,    /* *e is RESOLVED or ROUTED */
	LOOKUP_NOTFOUND, /* authoritative: no such host (or NODELAY miss) */
	LOOKUP_WAIT,     /* the request waits on a fabric query; answered later */
	LOOKUP_ERROR,    /* cache full or query failed: answer ENOMEM */
	LOOKUP_TIMEDOUT, /* the fabric did not answer lately (negative_ttl): ETIMEDOUT */
};

/* Find @k. On LOOKUP_WAIT, @w (its done callback set by the caller) waits on
 * the entry. With @nodelay, never wait: a miss answers NOTFOUND now and a
 * fabric query, if allowed, still runs in the background. */
enum lookup_result resolver_lookup(struct ibresd *d, struct cache_waiter *w,
				   const struct cache_key *k, bool nodelay,
				   struct cache_entry **e);

/* The path from @ep to the host of @e, cached on the entry. Sets *cached
 * when it came from the cache. */
const struct ibres_path_record *resolver_route(struct ibresd *d, struct endpoint *ep,
					       struct cache_entry *e, bool *cached);

/* Route protocol sa: is the route from @ep to @e's host there? LOOKUP_FOUND:
 * call resolver_route() (also for every case the SA does not serve: route
 * protocol mcast, a local destination, an endpoint without an SA port).
 * LOOKUP_WAIT: @w waits on @e until the SA's answer (or failure) settles it
 * (sa.h). LOOKUP_ERROR: the query could not start; *err says why
 * (-ENOTCONN: no SM or port down). */
enum lookup_result resolver_route_wait(struct ibresd *d, struct cache_waiter *w,
				       struct endpoint *ep, struct cache_entry *e, int *err);

/* @ep's identity changed (port data: LID, GID, P_Key): refresh the local
 * records in the cache and forget the routes from it. */
void resolver_local_changed(struct ibresd *d, struct endpoint *ep, bool gid_changed);

/* Periodic cache expiry. */
void resolver_sweep(struct loop_timer *t);

#endif
