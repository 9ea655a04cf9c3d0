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
#include "core/list.h"

#define CACHE_KEY_MAX IBRES_NAME_MAX
/* Keys of one host record: every name, IPv4, IPv6 and GID, and the LID. */
#define CACHE_HOST_KEYS_MAX                                                                        \
	(IBRES_HOST_NAMES_MAX + 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_GIDS_MAX + 1)
/* Largest max_entries cache_init accepts. */
#define CACHE_ENTRIES_LIMIT (1u << 24)
/* A buffer this big always holds cache_key_str() untruncated (a name with
 * every byte escaped as \xNN, plus the type prefix). */
#define CACHE_KEY_STR_MAX (8 + 4 * CACHE_KEY_MAX)

struct cache_key {
	uint8_t type; /* enum ibres_key_type */
	uint8_t len;
	uint8_t data[CACHE_KEY_MAX];
};

/* A host record shared by all the entries of its keys. refs counts the
 * entries pointing at it; the record is freed with its last entry. Every
 * entry that points at a host has a key that the host's record lists.
 *
 * A host is identified by gids[0], or (no GID) by its first name, else its
 * first IPv4, IPv6 address or its LID: at most one cache_host per identity
 * exists, and a new record of a known identity replaces the old one in place.
 */
struct cache_host {
	unsigned refs;
	struct ibres_hostrec rec;
	uint8_t origin;      /* enum ibres_origin */
	uint64_t expires_ms; /* UINT64_MAX = never */
	/* The multicast group both ends share, best first (set by the fabric
	 * after insertion; 0 = unknown: paths use the lowest group). */
	uint8_t grp_mtu, grp_rate;
	/* internal */
	struct cache_key ident;   /* the identity key, see above */
	struct cache_host *hnext; /* identity hash chain */
};

struct cache_entry;

/* A client request (or any other party) waiting for an entry to settle. */
struct cache_waiter {
	struct list_node node;
	/* status: 0 resolved, or a negative errno (-ENODATA, -ETIMEDOUT, -ENOMEM...).
	 * The entry is valid during the call only. Called at most once.
	 *
	 * The waiter is already unlinked when done() runs, so it may free @w.
	 * done() may call cache_lookup(), cache_add_waiter() (on another entry)
	 * and cache_cancel_waiter(); it must not insert, remove, flush, sweep or
	 * otherwise modify the cache. Statuses the cache itself uses: 0 (host
	 * inserted), -ETIMEDOUT (entry expired), -ECANCELED (flush, fini,
	 * cache_remove_origin), -ENODATA (the key left its host: stale key of a
	 * refreshed record, cache_remove_host_by_gid). When the entry is being
	 * removed, it is already out of the cache (lookups do not find it), its
	 * host is NULL, its other fields are as they were, and it is freed right
	 * after the callbacks. */
	void (*done)(struct cache_waiter *w, struct cache_entry *e, int status);
};

/*
 * An entry is "pinned" while its host is LOCAL or STATIC: it never expires
 * and is never evicted. Eviction takes the least recently used entry that is
 * not pinned, has no waiters and is not QUERYING (the resolver core owns
 * QUERYING entries). An INIT entry without waiters is evictable: move it to
 * QUERYING or give it a waiter before the next call that may insert.
 *
 * The cache sets tid, attempts and next_try_ms to 0 when it creates an entry
 * and never touches them afterwards.
 */
struct cache_entry {
	struct cache_key key;
	uint8_t state;       /* enum ibres_entry_state */
	int neg_status;      /* NEGATIVE: why (-ENODATA, -ETIMEDOUT...) */
	struct cache_host *host; /* RESOLVED/ROUTED; NULL otherwise */
	uint64_t expires_ms; /* NEGATIVE and learned entries; UINT64_MAX = never */
	uint64_t used_ms;    /* last lookup, for LRU */
	/* ROUTED: the path from local endpoint @route_ep to this host
	 * (zeroed, route_ep -1 and route_expires_ms 0 when there is no route) */
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
	unsigned busy; /* waiters being completed: a lookup must not free it */
};

/* entries, hosts: live counts. hits: lookups that returned an answer
 * (RESOLVED, ROUTED or NEGATIVE); misses: every other lookup (absent, expired,
 * INIT, QUERYING). inserts: cache_insert_host calls that changed the cache.
 * evictions: entries removed to make room. expirations: entries removed
 * because their time was up (by lookup, get_or_create or sweep). */
struct cache_stats {
	uint64_t entries, hosts, hits, misses, inserts, evictions, expirations;
};

struct cache {
	struct cache_entry **buckets;
	unsigned n_buckets;
	unsigned n_entries;
	unsigned max_entries;
	struct list_node lru; /* head = least recently used; pinned entries are not on it */
	struct cache_stats stats;
	/* Optional, NULL after cache_init: called for every entry just before it
	 * is freed (its waiters already completed), so that the resolver core
	 * can forget a pending query that points at it. Must not modify the
	 * cache. */
	void (*on_remove)(struct cache_entry *e, void *arg);
	void *on_remove_arg;
	/* internal */
	struct cache_host **hbuckets; /* hosts by identity, n_buckets chains */
	uint64_t seed[2];             /* SipHash key, from getrandom() */
};

/* Build a key; names are lower-cased (ASCII). -EINVAL for an empty or too
 * long key, an unknown address type, or LID 0. LIDs are stored big-endian. */
int cache_key_name(struct cache_key *k, const char *name);
int cache_key_addr(struct cache_key *k, uint8_t type, const void *addr); /* IPV4/IPV6/GID */
int cache_key_lid(struct cache_key *k, uint16_t lid);
/* "name:node1", "ipv4:198.18.0.1", "ipv6:2001:db8::1", "gid:fe80::1", "lid:5"
 * into buf (always NUL-terminated when len > 0, truncated if too small; see
 * CACHE_KEY_STR_MAX). Name bytes outside printable ASCII and '\' appear as
 * \xNN. A malformed key prints as "key<type>:<hex bytes>". Returns buf. */
const char *cache_key_str(const struct cache_key *k, char *buf, size_t len);

/* 0, -EINVAL (max_entries 0 or above CACHE_ENTRIES_LIMIT) or -ENOMEM.
 * Allocates a power-of-two bucket array of at least max_entries / 2. */
int cache_init(struct cache *c, unsigned max_entries);
/* Frees everything; waiters are completed with -ECANCELED first. Safe on a
 * zeroed or already finalised struct cache. */
void cache_fini(struct cache *c);

/* Find an entry. Expired entries are treated as absent (and removed, their
 * waiters completed with -ETIMEDOUT). An expired route drops the entry from
 * ROUTED back to RESOLVED. Updates LRU and hit/miss counters. From inside a
 * waiter callback, an expired entry whose waiters are being completed is
 * reported absent but left in place (the next lookup or sweep removes it). */
struct cache_entry *cache_lookup(struct cache *c, const struct cache_key *k, uint64_t now_ms);

/* The same for the daemon's own bookkeeping (identity checks, query
 * timers): expiry applies, but no hit/miss is counted and the LRU order is
 * left alone, so internal look-ups neither skew the statistics nor keep an
 * entry alive. */
struct cache_entry *cache_peek(struct cache *c, const struct cache_key *k, uint64_t now_ms);

/* Find or create an entry in state INIT (for a fabric query to hang off).
 * An existing entry is returned in whatever state it is (an expired one is
 * removed and replaced). A new entry has no host and never expires until the
 * resolver core sets something. Does not count hits or misses.
 * NULL with errno ENOSPC if the cache is full of pinned/waited entries,
 * EINVAL for a malformed key, ENOMEM. */
struct cache_entry *cache_get_or_create(struct cache *c, const struct cache_key *k,
					uint64_t now_ms);

/* Insert or refresh a host: one entry per name, IPv4, IPv6, GID and LID
 * (LID only if nonzero), all in state RESOLVED sharing one cache_host.
 * ttl_s == 0 means never expires (LOCAL/STATIC). An existing entry for one
 * of the keys is re-pointed to the new host (an address that moved); entries
 * of an older record of the same host that the new record no longer has are
 * removed. Entries that were QUERYING complete their waiters with status 0.
 * 0 or -ENOSPC.
 *
 * Details:
 * - LOCAL and STATIC hosts never expire, whatever ttl_s says.
 * - Authority: LOCAL > STATIC > FABRIC. An insert never takes a key from a
 *   host of higher authority (that key is skipped), and an insert for an
 *   identity that a higher-authority host already holds is ignored (returns
 *   0 and changes nothing): overhearing our own announcement, or a fabric
 *   record of a host in the hosts file, does not unpin it.
 * - A refresh of the same host (same identity) keeps an unexpired route if
 *   the LID did not change; an entry taken from another host loses its route.
 * - All or nothing: capacity and memory are checked before anything changes,
 *   so on -ENOSPC, -ENOMEM or -EINVAL (a record with no key, an empty or
 *   unterminated name, a count over its IBRES_HOST_*_MAX, an unknown origin)
 *   the cache is exactly as before.
 * - Waiters are completed after every entry is updated and stale entries
 *   are unlinked: waiters of the host's entries with 0, waiters of removed
 *   stale entries with -ENODATA. */
int cache_insert_host(struct cache *c, const struct ibres_hostrec *h, uint8_t origin,
		      uint32_t ttl_s, uint64_t now_ms);

/* Remove every entry that points at a host with this GID (GOODBYE). Returns count.
 * LOCAL and STATIC hosts are kept (returns 0). Waiters complete with -ENODATA. */
unsigned cache_remove_host_by_gid(struct cache *c, const uint8_t gid[16]);

/* Remove every entry whose host has @origin, pinned or not (e.g. the STATIC
 * hosts before a hosts file reload). Waiters complete with -ECANCELED.
 * Returns entries removed. */
unsigned cache_remove_origin(struct cache *c, uint8_t origin);

/* Mark an entry NEGATIVE for ttl_s; waiters complete with @status (<0; a
 * status >= 0 is taken as -ENODATA). The host reference and any route are
 * dropped. ttl_s 0 keeps the entry with expires_ms = now_ms, so the next
 * lookup or sweep removes it (@e stays valid for the caller until then). */
void cache_set_negative(struct cache *c, struct cache_entry *e, uint32_t ttl_s, int status,
			uint64_t now_ms);

/* Complete and remove every waiter of @e with @status. Waiters added to @e
 * by the callbacks are not completed by this call. */
void cache_complete(struct cache_entry *e, int status);

void cache_add_waiter(struct cache_entry *e, struct cache_waiter *w);
/* Unlink a waiter that gave up (client went away); no callback. Harmless on
 * a waiter that was already completed or cancelled. */
void cache_cancel_waiter(struct cache_waiter *w);

/* Store a route on a RESOLVED entry (-> ROUTED). ttl_s 0 = never expires.
 * A ROUTED entry gets the new route; other states are left alone. */
void cache_set_route(struct cache_entry *e, int ep, const struct ibres_path_record *p,
		     uint32_t ttl_s, uint64_t now_ms);

/* Forget the routes from local endpoint @ep (any endpoint when @ep < 0) to
 * destination GID @gid (any destination when NULL): ROUTED entries go back
 * to RESOLVED (an endpoint's LID or GID changed, a destination left the
 * subnet). Returns how many. */
unsigned cache_drop_routes(struct cache *c, int ep, const uint8_t *gid);

/* Expire what is due: entries and routes past their time. Returns entries
 * removed (waiters complete with -ETIMEDOUT). A QUERYING entry is removed
 * only if its own expires_ms is due. O(buckets + entries). */
unsigned cache_sweep(struct cache *c, uint64_t now_ms);

/* Remove entries that are not LOCAL/STATIC (k == NULL), or the one entry for
 * @k (and every other key of its host). Waiters complete with -ECANCELED.
 * Returns entries removed. Flushing a key of a LOCAL or STATIC host removes
 * nothing and returns 0. */
unsigned cache_flush(struct cache *c, const struct cache_key *k);

/* Visit entries in a stable order (bucket order); stop when cb returns nonzero.
 * The callback must not modify the cache. */
void cache_foreach(struct cache *c, int (*cb)(struct cache_entry *e, void *arg), void *arg);

/* True for entries of LOCAL and STATIC hosts (never expire, never evicted). */
static inline bool cache_entry_pinned(const struct cache_entry *e)
{
	return e->host &&
	       (e->host->origin == IBRES_ORIGIN_LOCAL || e->host->origin == IBRES_ORIGIN_STATIC);
}

/* Check every internal invariant (hash placement, unique keys, counts,
 * host reference counts and identity index, LRU membership). For tests and
 * fuzzing; O(buckets + entries). 0 or -EUCLEAN. */
int cache_check(struct cache *c);

#endif
