/* SPDX-License-Identifier: MIT */
/* The fabric protocol as the resolver core sees it: whether a key may be
 * asked on the fabric, and starting a query for a cache entry. */
#ifndef IBRESD_FABRIC_H
#define IBRESD_FABRIC_H

#include <stdbool.h>

#include "core/cache.h"

struct ibresd;

/* Start the fabric protocol on every endpoint that has a transport; leaves
 * d->fabric NULL when none has. 0 or a negative errno. */
int fabric_start(struct ibresd *d);
/* Say GOODBYE and close the transports. */
void fabric_stop(struct ibresd *d);

/* The cache lost entries (an admin flush): relearn the directory as at
 * start-up before answering "not found" from it again. */
void fabric_resync(struct ibresd *d);

/* Our identity changed (addresses): announce it now instead of at the next
 * period. Nothing when announcements are off. */
void fabric_announce_now(struct ibresd *d);

/* @ep's port data changed its identity (LID, GID, P_Key; ib/port.c): a GOODBYE
 * for the @old identity when the GID changed, then an announcement now. */
struct endpoint;
struct ibres_hostrec;
void fabric_identity_changed(struct ibresd *d, const struct endpoint *ep,
			     const struct ibres_hostrec *old);

/* May @k be sent to the fabric? False without a transport, for names
 * outside the cluster name patterns, and (authoritative "not found") for
 * cluster names once the settle time has passed without an announcement. */
bool fabric_may_query(struct ibresd *d, const struct cache_key *k);

/* Send (or join) the query for @e: state QUERYING, retries and the final
 * answer (cache_insert_host or cache_set_negative) are the fabric's job.
 * 0 or a negative errno. */
int fabric_query(struct ibresd *d, struct cache_entry *e);

/* The longest a fabric query can take: every attempt's wait, with jitter. */
struct ibres_config;
uint64_t fabric_bound_ms(const struct ibres_config *cfg);

/* The path parameters towards @h from @ep: the group both joined (the
 * lowest when unknown), capped by the endpoint's own MTU and rate. */
struct endpoint;
struct path_params;
void fabric_path_params(struct ibresd *d, const struct endpoint *ep, const struct cache_host *h,
			struct path_params *pp);

/* Append the fabric's named counters (NAME, COUNTER pairs) to a STATS answer. */
struct tlv_writer;
void fabric_stats(struct ibresd *d, struct tlv_writer *w);

#endif
