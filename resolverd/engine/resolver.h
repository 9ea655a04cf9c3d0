/* SPDX-License-Identifier: MIT */
/* The resolver core: local endpoints, the store's authoritative content
 * (local and static hosts), lookups on behalf of client requests, the
 * queries in flight (engine/pending.h: one retry timer each, on the loop),
 * and the path records handed out. It never knows which transport (if any)
 * carries fabric queries: it asks fabric.h. */
#ifndef IBRESD_RESOLVER_H
#define IBRESD_RESOLVER_H

#include "daemon.h"
#include "core/waiter.h"

/* Take endpoints from d->cfg and fill the store with them and the static
 * hosts; register what the fabric reports up (d->fabric_ev). */
int resolver_init(struct ibresd *d);
void resolver_fini(struct ibresd *d);
/* Swap in a new configuration, keeping learned hosts. */
int resolver_reload(struct ibresd *d, struct ibres_config *cfg, struct cfg_hosts *hosts);


/* The longest a fabric query can take: every attempt's wait, with jitter. */
uint64_t resolver_bound_ms(const struct ibres_config *cfg);

/* Outcome of resolver_lookup. */
enum lookup_result {
	LOOKUP_FOUND,    /* *h is the host */
	LOOKUP_NOTFOUND, /* authoritative: no such host (or NODELAY miss) */
	LOOKUP_WAIT,     /* the request waits on a fabric query; answered later */
	LOOKUP_ERROR,    /* cache full or query failed: answer ENOMEM */
	LOOKUP_TIMEDOUT, /* the fabric did not answer lately (negative_ttl): ETIMEDOUT */
};

/* Find @k. On LOOKUP_WAIT, @w (its done callback set by the caller) waits on
 * the query in flight. With @nodelay, never wait: a miss answers NOTFOUND
 * now and a fabric query, if allowed, still runs in the background. */
enum lookup_result resolver_lookup(struct ibresd *d, struct lookup_waiter *w,
				   const struct host_key *k, bool nodelay, struct host **h);

/* The path from @ep to @h, cached with the host. Sets *cached when it came
 * from the store. Into @out (NULL only when no memory was left to cache it
 * and building failed: never, today). */
const struct ibres_path_record *resolver_route(struct ibresd *d, struct endpoint *ep,
					       struct host *h, struct ibres_path_record *out,
					       bool *cached);

/* Route protocol sa: is the route from @ep to @h there? LOOKUP_FOUND:
 * call resolver_route() (also for every case the SA does not serve: route
 * protocol mcast, a local destination, an endpoint without an SA port).
 * LOOKUP_WAIT: @w waits until the SA's answer (or failure) settles it
 * (sa.h). LOOKUP_ERROR: the query could not start; *err says why
 * (-ENOTCONN: no SM or port down). */
enum lookup_result resolver_route_wait(struct ibresd *d, struct lookup_waiter *w,
				       struct endpoint *ep, struct host *h, int *err);

/* An admin flush: learned hosts and negative answers (@k NULL) or the host
 * or negative answer of @k, and the queries in flight for them (their
 * waiters hear -ECANCELED). Returns what went. */
unsigned resolver_flush(struct ibresd *d, const struct host_key *k);

/* Periodic expiry of the store. */
void resolver_sweep(struct loop_timer *t);

#endif
