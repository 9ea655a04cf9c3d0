/* SPDX-License-Identifier: MIT */
/*
 * The resolver cache. Entries are keyed by (key type, key bytes): a host name
 * (lower-cased), an IPv4 or IPv6 address, a GID or a LID. Every key of one
 * host points to one shared, reference-counted host record, so learning a
 * host once makes it findable by all its names and addresses.
 *
 * States: INIT -> QUERYING (a fabric request is out; client requests wait on
 * the entry) -> RESOLVED (host known) -> ROUTED (a path record is cached too);
 * NEGATIVE ("not found", kept for the negative TTL). LOCAL and STATIC hosts
 * never expire and are never evicted. The size is bounded: inserting into a
 * full cache evicts the least recently used entry that has no waiters, or
 * fails with -ENOSPC if every entry is pinned or waited on.
 *
 * All times are CLOCK_MONOTONIC milliseconds passed in by the caller, so the
 * cache is deterministic under test.
 */
#ifndef IBRESD_CACHE_H
#define IBRESD_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "hostrec.h"
#include "ibres_proto.h"
#include "list.h"

#define CACHE_KEY_MAX IBRES_NAME_MAX

struct cache_key {
	uint8_t type; /* enum ibres_key_type */
	uint8_t len;
	uint8_t data[CACHE_KEY_MAX];
};

/* A host record shared by all the entries of its keys. */
struct cache_host {
	unsigned refs;
	struct ibres_hostrec rec;
	uint8_t origin;      /* enum ibres_origin */
	uint64_t expires_ms; /* UINT64_MAX = never */
};

struct cache_entry;

/* A client request (or any other party) waiting for an entry to settle. */
struct cache_waiter {
	struct list_node node;
	/* status: 0 resolved, or a negative errno (-ENODATA, -ETIMEDOUT, -ENOMEM...).
	 * The entry is valid during the call only. Called at most once. */
	void (*done)(struct cache_waiter *w, struct cache_entry *e, int status);
};

struct cache_entry {
	struct cache_key key;
	uint8_t state;       /* enum ibres_entry_state */
	struct cache_host *host; /* RESOLVED/ROUTED; NULL otherwise */
	uint64_t expires_ms; /* NEGATIVE and learned entries; UINT64_MAX = never */
	uint64_t used_ms;    /* last lookup, for LRU */
	/* ROUTED: the path from local endpoint @route_ep to this host */
	struct ibres_path_record route;
	int route_ep;
	uint64_t route_expires_ms;
	/* QUERYING: fabric request bookkeeping owned by the resolver core */
	uint64_t tid;
	unsigned attempts;
	uint64_t next_try_ms;
	struct list_node waiters;
	/* internal */
	struct cache_entry *hnext; /* hash chain */
	struct list_node lru;
};

struct cache_stats {
	uint64_t entries, hosts, hits, misses, inserts, evictions, expirations;
};

struct cache {
	struct cache_entry **buckets;
	unsigned n_buckets;
	unsigned n_entries;
	unsigned max_entries;
	struct list_node lru; /* head = least recently used */
	struct cache_stats stats;
};

/* Build a key; names are lower-cased. -EINVAL for an empty or too long key. */
int cache_key_name(struct cache_key *k, const char *name);
int cache_key_addr(struct cache_key *k, uint8_t type, const void *addr); /* IPV4/IPV6/GID */
int cache_key_lid(struct cache_key *k, uint16_t lid);
/* "name:node1", "ipv4:198.18.0.1", "gid:fe80::1", "lid:5" into buf. */
const char *cache_key_str(const struct cache_key *k, char *buf, size_t len);

int cache_init(struct cache *c, unsigned max_entries);
/* Frees everything; waiters are completed with -ECANCELED first. */
void cache_fini(struct cache *c);

/* Find an entry. Expired entries are treated as absent (and removed, their
 * waiters completed with -ETIMEDOUT). Updates LRU and hit/miss counters. */
struct cache_entry *cache_lookup(struct cache *c, const struct cache_key *k, uint64_t now_ms);

/* Find or create an entry in state INIT (for a fabric query to hang off).
 * NULL with errno ENOSPC if the cache is full of pinned/waited entries. */
struct cache_entry *cache_get_or_create(struct cache *c, const struct cache_key *k,
					uint64_t now_ms);

/* Insert or refresh a host: one entry per name, IPv4, IPv6, GID and LID
 * (LID only if nonzero), all in state RESOLVED sharing one cache_host.
 * ttl_s == 0 means never expires (LOCAL/STATIC). An existing entry for one
 * of the keys is re-pointed to the new host (an address that moved); entries
 * of an older record of the same host that the new record no longer has are
 * removed. Entries that were QUERYING complete their waiters with status 0.
 * 0 or -ENOSPC. */
int cache_insert_host(struct cache *c, const struct ibres_hostrec *h, uint8_t origin,
		      uint32_t ttl_s, uint64_t now_ms);

/* Remove every entry that points at a host with this GID (GOODBYE). Returns count. */
unsigned cache_remove_host_by_gid(struct cache *c, const uint8_t gid[16]);

/* Mark an entry NEGATIVE for ttl_s; waiters complete with @status (<0). */
void cache_set_negative(struct cache *c, struct cache_entry *e, uint32_t ttl_s, int status,
			uint64_t now_ms);

/* Complete and remove every waiter of @e with @status. */
void cache_complete(struct cache_entry *e, int status);

void cache_add_waiter(struct cache_entry *e, struct cache_waiter *w);
/* Unlink a waiter that gave up (client went away); no callback. */
void cache_cancel_waiter(struct cache_waiter *w);

/* Store a route on a RESOLVED entry (-> ROUTED). ttl_s 0 = never expires. */
void cache_set_route(struct cache_entry *e, int ep, const struct ibres_path_record *p,
		     uint32_t ttl_s, uint64_t now_ms);

/* Expire what is due: entries and routes past their time. Returns entries removed. */
unsigned cache_sweep(struct cache *c, uint64_t now_ms);

/* Remove entries that are not LOCAL/STATIC (k == NULL), or the one entry for
 * @k (and every other key of its host). Waiters complete with -ECANCELED.
 * Returns entries removed. */
unsigned cache_flush(struct cache *c, const struct cache_key *k);

/* Visit entries in a stable order (bucket order); stop when cb returns nonzero.
 * The callback must not modify the cache. */
void cache_foreach(struct cache *c, int (*cb)(struct cache_entry *e, void *arg), void *arg);

#endif
