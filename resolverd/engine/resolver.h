/* SPDX-License-Identifier: MIT */
/* The resolver core: the endpoints' and the static hosts' place in the
 * store (the authoritative content), lookups on behalf of client requests,
 * the queries in flight (engine/pending.h: one retry timer each, on the
 * loop), the path records handed out, and a reload's order of things. It
 * never knows which transport (if any) carries fabric queries: it asks
 * fabric.h. */
#ifndef IBRESD_RESOLVER_H
#define IBRESD_RESOLVER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/endpoints.h"
#include "core/hosts_file.h"
#include "core/hoststore.h"
#include "core/jitter.h"
#include "core/loop.h"
#include "core/waiter.h"
#include "engine/pending.h"
#include "fabric/fabric.h"
#include "os/hostdir_pub.h"

struct netlink;
struct sa_client;

/* Counted by the resolver, shown by STATS as fabric_query_* (their
 * historic names). */
struct resolver_stats {
	uint64_t query_retries;
	uint64_t query_timeouts;
	uint64_t queries_joined;
};

/* What the resolver works with; the daemon owns every one of them. @cfg is
 * the daemon's running config, which resolver_reload() replaces. */
struct resolver_deps {
	struct ibres_config *cfg;
	struct loop *loop;
	struct host_store *store;
	struct endpoints *eps;
	struct netlink *nl; /* NULL: no kernel addresses */
};

/* A host's name asked on one rail's fabric (resolver_lookup_on_rail()) that
 * nothing there answered: not asked there again before negative_ttl. */
#define RAIL_MISSES_MAX 64u
struct rail_miss {
	uint64_t term; /* host_digest_term() of the name */
	unsigned port; /* the fabric's port (struct fabric_at) */
	uint64_t until_ms;
};

struct resolver {
	struct ibres_config *cfg;
	struct loop *loop;
	struct host_store *store;
	struct endpoints *eps;
	struct netlink *nl;
	struct sa_client *sa; /* resolver_attach(), once started */
	struct fabric *fabric;
	struct hostdir_pub *dir; /* the shared host directory, NULL: none */
	struct pending_table pending; /* what is being asked */
	struct resolver_stats stats;
	struct loop_timer sweep_timer;
	struct jitter_rng rng; /* query jitter */
	unsigned n_static_hosts;
	bool listening; /* to the endpoints' state (a rail down or back) */
	struct rail_miss rail_misses[RAIL_MISSES_MAX]; /* a ring, the oldest overwritten */
	unsigned rail_miss_next;
};

/* Fill the store (initialised here, bounded by cfg->cache_size) with the
 * endpoints of the config and the static @hosts (consumed: freed once in
 * the store). 0 or a negative errno (logged). */
int resolver_init(struct resolver *r, const struct resolver_deps *deps, struct cfg_hosts *hosts);
void resolver_fini(struct resolver *r);
/* What the fabric reports up goes to the resolver (fabric_deps.ev). */
struct fabric_events resolver_fabric_events(struct resolver *r);
/* The SA client and the fabric, once started (NULL when there is none). */
void resolver_attach(struct resolver *r, struct sa_client *sa, struct fabric *f);
/* Keep the shared host directory's scope (is a missing key known not to
 * exist? the name patterns) up to date (@dir NULL: none). */
void resolver_publish(struct resolver *r, struct hostdir_pub *dir);
/* Swap in a new configuration and static @hosts (consumed), keeping learned
 * hosts: each module sees (old, new) first, then the new one replaces the
 * daemon's. On error nothing changed. */
int resolver_reload(struct resolver *r, const struct ibres_config *cfg, struct cfg_hosts *hosts);

/* The longest a fabric query can take: every attempt's wait, with jitter. */
uint64_t resolver_bound_ms(const struct ibres_config *cfg);

/* Outcome of resolver_lookup. */
enum lookup_result {
	LOOKUP_FOUND,    /* *h is the host */
	LOOKUP_NOTFOUND, /* authoritative: no such host (or NODELAY miss) */
	LOOKUP_WAIT,     /* the request waits on a fabric query; answered later */
	LOOKUP_ERROR,    /* too many queries or query failed: answer ENOMEM */
	LOOKUP_TIMEDOUT, /* the fabric did not answer lately (negative_ttl): ETIMEDOUT */
};

/* Find @k. On LOOKUP_WAIT, @w (its done callback set by the caller) waits on
 * the query in flight. With @nodelay, never wait: a miss answers NOTFOUND
 * now and a fabric query, if allowed, still runs in the background. */
enum lookup_result resolver_lookup(struct resolver *r, struct lookup_waiter *w,
				   const struct host_key *k, bool nodelay, struct host **h);

/* Answers stay on the caller's rail: a remote endpoint is reachable through
 * the local endpoints that heard it (planes share fe80::, LIDs repeat), a
 * static host (heard on none) through any, one of ours through itself; an
 * endpoint that is down (endpoint_set_down) reaches nothing.
 * @h is what key @k led to. The endpoint of its host that @ep reaches, or
 * NULL: of the host's endpoints that list @k (every one for a name of the
 * whole host, every partition for a port's GID), the first that @ep
 * reaches; else @h itself (an address, LID or a rail's own name names one
 * endpoint). */
struct host *resolver_on_rail(const struct host *h, const struct host_key *k,
			      const struct endpoint *ep);
/* Without a source: the first local endpoint, in config order, of the
 * partition of @pkey (0: any) that reaches @h (as resolver_on_rail), and the
 * endpoint of @h's host it reaches in *@dst. NULL when none does. */
struct endpoint *resolver_pick_rail(struct resolver *r, struct host *h, const struct host_key *k,
				    uint16_t pkey, struct host **dst);
/* The host @h, found by @k, has no endpoint @ep reaches: while the
 * directory may lack one (not authoritative), ask @ep's fabric alone for
 * the host's name @k (a rail's alias names another rail: not asked), and
 * LOOKUP_WAIT with @w queued until an endpoint is heard there or the
 * query's bound; else LOOKUP_NOTFOUND (or LOOKUP_ERROR). A name asked there
 * lately that nothing answered is not asked again (negative_ttl). *@asked:
 * the wait is for that ask (false: for another query of the name in flight,
 * whose end is worth a look before asking). */
enum lookup_result resolver_lookup_on_rail(struct resolver *r, struct lookup_waiter *w,
					   const struct host *h, const struct host_key *k,
					   const struct endpoint *ep, bool *asked);
/* Without a source, a destination by LID alone (LIDs are a fabric's): the
 * first local endpoint, in config order, of the partition of @pkey (0: any),
 * up, whose fabric has a host of LID @lid; NULL when none has. */
struct endpoint *resolver_lid_rail(struct resolver *r, uint16_t lid, uint16_t pkey);

/* The path from @ep to @h, cached with the host, into @out. Sets *cached
 * when it came from the store. Returns @out. */
const struct ibres_path_record *resolver_route(struct resolver *r, struct endpoint *ep,
					       struct host *h, struct ibres_path_record *out,
					       bool *cached);

/* Route protocol sa: is the route from @ep to @h there? LOOKUP_FOUND:
 * call resolver_route() (also for every case the SA does not serve: route
 * protocol mcast, a local destination, an endpoint without an SA port).
 * LOOKUP_WAIT: @w waits until the SA's answer (or failure) settles it
 * (sa.h). LOOKUP_ERROR: the query could not start; *err says why
 * (-ENOTCONN: no SM or port down). */
enum lookup_result resolver_route_wait(struct resolver *r, struct lookup_waiter *w,
				       struct endpoint *ep, struct host *h, int *err);

/* An admin flush: learned hosts and negative answers (@k NULL) or the host
 * or negative answer of @k, and the queries in flight for them (their
 * waiters hear -ECANCELED); then the fabric resyncs (fabric_resync).
 * Returns what went. */
unsigned resolver_flush(struct resolver *r, const struct host_key *k);

#endif
