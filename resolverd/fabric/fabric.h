/* SPDX-License-Identifier: MIT */
/* The fabric protocol as the resolver core sees it: whether a key may be
 * asked on the fabric, and starting a query for a cache entry. */
#ifndef IBRESD_FABRIC_H
#define IBRESD_FABRIC_H

#include <stdbool.h>

#include "core/hostkey.h"
#include "hostrec.h"

struct ibresd;

/* What the protocol core reports up (registered by the resolver, which owns
 * the queries in flight; see engine/pending.h). */
struct fabric_events {
	/* A peer's record went into the host store (overheard or answered). */
	void (*learned)(void *arg, const struct ibres_hostrec *h);
	/* The key of the query in flight with transaction id @tid: 0, or
	 * -ENOENT when none is (the answer is unsolicited and dropped). */
	int (*query_key)(void *arg, uint64_t tid, struct host_key *k);
	void *arg;
};

/* Start the fabric protocol on every endpoint that has a transport; leaves
 * d->fabric NULL when none has. 0 or a negative errno. */
int fabric_start(struct ibresd *d);
/* Say GOODBYE and close the transports. */
void fabric_stop(struct ibresd *d);

/* A reload: @old is the running config, @new the one about to replace it.
 * The transports keep the settings they were opened with (an endpoint's
 * transport, interface, UDP port, groups, device and port, and the cluster
 * key): a change of those is logged as needing a restart. */
struct ibres_config;
void fabric_reload(struct ibresd *d, const struct ibres_config *old,
		   const struct ibres_config *new);

/* The cache lost entries (an admin flush): relearn the directory as at
 * start-up before answering "not found" from it again. */
void fabric_resync(struct ibresd *d);


/* A reload copied @ep's config over it: put back what its transport gave
 * it (the ib transport's UD QP number, which peers must reach). */
struct endpoint;
void fabric_apply_endpoint(struct ibresd *d, struct endpoint *ep);

/* May @k be sent to the fabric? False without a transport, for names
 * outside the cluster name patterns, and (authoritative "not found") for
 * cluster names once the settle time has passed without an announcement. */
bool fabric_may_query(struct ibresd *d, const struct host_key *k);

/* Send one REQUEST for @k with transaction id @tid on every open port (one
 * attempt; the resolver's pending table retries). 0, or a negative errno
 * when no port could send. */
int fabric_send_request(struct ibresd *d, const struct host_key *k, uint64_t tid);

/* The path parameters towards @h from @ep: the group both joined (the
 * lowest when unknown), capped by the endpoint's own MTU and rate. */
struct endpoint;
struct path_params;
struct host;
void fabric_path_params(struct ibresd *d, const struct endpoint *ep, const struct host *h,
			struct path_params *pp);

/* Append the fabric's named counters (NAME, COUNTER pairs) to a STATS answer. */
struct tlv_writer;
void fabric_stats(struct ibresd *d, struct tlv_writer *w);

#endif
