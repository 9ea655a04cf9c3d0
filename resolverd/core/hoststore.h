/* SPDX-License-Identifier: MIT */
/*
 * The host store: what the daemon knows, and nothing it is doing. Facts only:
 * host records (every name, address, GID and the LID of a host, its origin,
 * TTL, the best multicast group shared with it, the paths to it), and a
 * bounded negative cache ("not found", "timed out" for a while). Queries in
 * flight live in the resolver's pending table (engine/pending.h), never here.
 *
 * Compact, for a 49,000-host directory: a host is one allocation holding its
 * variable-length names and addresses; every key of a host is one 8-byte
 * slot of an open-addressing index holding the host's address (the key's
 * bytes are read back from the record, not copied). Paths are allocated
 * only for the hosts that are talked to.
 *
 * Authority: LOCAL (this node's endpoints) > STATIC (the hosts file) >
 * FABRIC (learned). An endpoint record is identified by its first GID and
 * its P_Key (a port's partitions are endpoints of their own), or (no GID) its
 * first name, else its first IPv4, IPv6 address or its LID: at most one
 * record per identity exists, and a new record of a known identity replaces
 * it.
 * LOCAL and STATIC hosts never expire and are never evicted; learned hosts
 * are bounded (max_hosts, a host of several endpoints counting once, and
 * at most HOST_RAILS_MAX endpoints a host) and the least recently used host
 * makes room, every endpoint of it (its endpoint used last counts): exactly
 * so while the identity table is small (up to 768 endpoints, learned or
 * pinned), and beyond, the least recently used of the hosts of 16 endpoints
 * sampled (hoststore.c, evict_pick()).
 *
 * All times are CLOCK_MONOTONIC milliseconds passed in by the caller. A
 * struct host pointer is valid until the next call that changes the store.
 */
#ifndef IBRESD_HOSTSTORE_H
#define IBRESD_HOSTSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hostkey.h"
#include "hostrec.h"
#include "ibres_proto.h"

/* Largest max_hosts store_init accepts. */
#define STORE_HOSTS_LIMIT (1u << 22)
/* Negative answers remembered at most (oldest first out). */
#define STORE_NEGATIVE_MAX 16384u

struct host;
struct store_slot;
struct store_neg;
struct host_path;

/* hosts, keys, negatives: live counts (hosts: endpoint records; learned: the
 * learned hosts max_hosts bounds, a host of several endpoints once).
 * hits: look-ups answered (a host or a negative); misses: the others.
 * inserts: store_insert calls that changed something. evictions: learned
 * hosts dropped to make room. expirations: hosts and negatives whose time
 * was up. */
struct store_stats {
	uint64_t hosts, learned, keys, negatives, hits, misses, inserts, evictions, expirations;
};

/* One follower of the store's hosts (the shared host directory). @put: @h
 * is new, or holds a changed record, or lost a key to another host (put
 * after that one): a change makes a new struct host,
 * which takes over the old one's cookie (the old one is then gone with
 * cookie 0). @refresh: @h was heard again unchanged (the same struct, a
 * later expiry). @gone: @h is about to be freed. None may change the store;
 * all may read it. */
struct store_observer {
	void (*put)(void *arg, struct host *h);
	/* @h heard again as it was: only its expiry moved (NULL: put, with
	 * every other endpoint of its host, whose record's expiry moves too) */
	void (*refresh)(void *arg, struct host *h);
	void (*gone)(void *arg, struct host *h);
	void *arg;
};

/* The directory digest (doc/fabric-protocol.md, DIGEST): the hosts the
 * fabric speaks of, LOCAL and FABRIC ones (STATIC hosts are this node's own
 * file, which other nodes need not share), a host of several endpoints once,
 * and the sum (mod 2^64) of their host_digest_term()s: the same on every
 * node that holds the same hosts, whatever the order they came in. Kept on
 * every insert and removal, O(1) each. */
struct store_digest {
	uint64_t hosts;
	uint64_t sum;
};

/* Local fabrics a digest of their own is kept for: a local endpoint's index
 * (the bits of heard_on). */
#define STORE_FABRICS 32
/* Ranges and names over the whole directory, not one fabric's part. */
#define STORE_ALL_FABRICS (-1)

struct host_store {
	struct store_slot *slots; /* key index: open addressing, linear probing */
	unsigned n_slots; /* any number (hs_home()) */
	unsigned n_keys;
	/* the most keys seen by store_sweep() and when; the index was made
	 * compact since it last grew (hoststore_remove.c) */
	unsigned keys_high;
	uint64_t keys_high_ms;
	bool index_compact;
	/* endpoint records by identity: open addressing, linear probing, a
	 * removed one's slot marked gone (hoststore_index.c) */
	uint64_t *idents;
	unsigned ident_mask;
	unsigned ident_used;		  /* slots not free: records and gone ones */
	/* counts uses of learned hosts (a record keeps the count at its last);
	 * where the last sampling eviction stopped in the identity table */
	uint32_t use_clock;
	unsigned evict_at;
	unsigned max_hosts;
	struct store_neg **negs; /* negative answers, chained */
	unsigned neg_mask;
	struct store_neg *neg_oldest, *neg_newest;
	struct store_stats stats;
	/* what store_bytes() adds up, kept on every change (store_check()
	 * walks and compares): linked hosts' records, route objects, negative
	 * entries */
	size_t rec_bytes, neg_bytes;
	unsigned long n_paths;
	struct host_path **routes; /* paths by the record they lead to; NULL until one */
	unsigned route_mask;
	struct store_digest digest;
	/* the same per local fabric: the hosts with an endpoint heard there
	 * (this node's own: its endpoint there), each once */
	struct store_digest fabric_digest[STORE_FABRICS];
	struct key_hasher kh;
	struct store_observer ob;
};

/* 0, -EINVAL (max_hosts 0 or above STORE_HOSTS_LIMIT) or -ENOMEM. */
int store_init(struct host_store *s, unsigned max_hosts);
/* Frees everything. Safe on a zeroed or already finalised store. */
void store_fini(struct host_store *s);
/* A new bound for learned hosts; the least recently used go if over it. */
void store_set_max_hosts(struct host_store *s, unsigned max_hosts);

/* The directory digest of what the store holds now. */
void store_digest(const struct host_store *s, struct store_digest *out);
/* The digest of what local fabric @fabric (an endpoint's index) heard: the
 * hosts with an endpoint heard there, each once, as every node on that
 * fabric holds them whichever other rails each has. @fabric
 * STORE_ALL_FABRICS: store_digest(). Out of range: empty. */
void store_fabric_digest(const struct host_store *s, int fabric, struct store_digest *out);

/* Follow the hosts from now on (@o NULL: stop). */
void store_observe(struct host_store *s, const struct store_observer *o);
/* The observer's words of @h, 0 until it sets them: one for @h's own record,
 * one for its host's (@all: host_record_all). */
uint32_t host_cookie(const struct host *h, bool all);
void host_set_cookie(struct host *h, bool all, uint32_t cookie);
/* The host the index gives @k to, expired or not, without counting: for
 * the observer, which must not change the store. NULL when none. */
const struct host *store_holder(const struct host_store *s, const struct host_key *k);
/* Call @cb for every host once (it must not change the store). */
void store_foreach_host(struct host_store *s, void (*cb)(void *arg, struct host *h), void *arg);

/* The host holding @k, or NULL. A LID on fabric f also finds an endpoint
 * keyed on another fabric that f heard too, or a static one's (HOST_FABRIC_NONE).
 * An expired host is absent (and removed). With
 * @count, a client asked: hits and misses are counted and the host becomes
 * the most recently used (a refresh by the fabric keeps its place); the
 * daemon's own bookkeeping passes false. */
struct host *store_lookup(struct host_store *s, const struct host_key *k, uint64_t now_ms,
			  bool count);

/* A negative answer for @k: -ENODATA, -ETIMEDOUT..., or 0 when there is none
 * (expired ones are removed). With @count, a negative answer counts a hit. */
int store_negative(struct host_store *s, const struct host_key *k, uint64_t now_ms, bool count);
/* Remember that @k has no host (@status < 0, else -ENODATA) for @ttl_s,
 * replacing an earlier answer; 0 s remembers nothing (and forgets the
 * earlier one). A key a host holds is never negative. 0 or -ENOMEM. */
int store_set_negative(struct host_store *s, const struct host_key *k, uint32_t ttl_s,
		       int status, uint64_t now_ms);

/* Insert or refresh an endpoint record: one key per name, IPv4, IPv6, GID
 * and LID (LID only if nonzero; keyed on the fabric of the first local
 * endpoint in @heard_on, see host_key_lid()). ttl_s 0 (and LOCAL or STATIC)
 * never expires.
 * - A host is a set of endpoints: a record whose canonical name leads to a
 *   record of the same origin, canonical name and rails digest (nonzero: the
 *   digest of the GIDs of all the host's endpoints, which every endpoint
 *   announces and whose list names it) joins that one's host, while it has
 *   fewer than HOST_RAILS_MAX; the host's endpoints share their names' keys
 *   (and a port's partitions its GID and LID: the key leads to one of them,
 *   host_next_endpoint() to the others), and a key one of them lists passes
 *   to another when it goes. The observer hears put() for every endpoint of
 *   the host whenever the set changes.
 * - @how->heard_on: the local endpoints (bits) the record was heard on; a
 *   learned endpoint refreshed keeps the bits it had.
 * - A key that another host holds moves to this one (an address that moved),
 *   unless that host is of higher authority (the key is skipped).
 * - An insert for an identity a higher-authority host holds changes nothing
 *   and returns 0: overhearing our own announcement does not unpin us.
 * - A refresh of the same identity replaces the record; keys it no longer
 *   lists are dropped; paths survive when the LID and the best common group
 *   did not change; the group survives unless @grp_mtu is set.
 * - Negative answers for its keys are forgotten.
 * - A learned host over max_hosts makes the least recently used one go.
 * - All or nothing: on -ENOMEM or -EINVAL (no key, an empty or unterminated
 *   name, a count over its IBRES_HOST_*_MAX, an unknown origin) the store is
 *   exactly as before.
 * @grp_mtu/@grp_rate: the multicast group both ends share (0: keep / unknown).
 * *@out (may be NULL): the host, or NULL when the insert was ignored. */
struct store_put {
	uint8_t origin;
	uint32_t heard_on; /* local endpoints (bits) it was heard on; a LOCAL one's own */
	uint64_t rails;    /* rails_digest() of its host's endpoints; 0: a host alone */
	uint32_t ttl_s;
	uint8_t grp_mtu, grp_rate;
	/* the sender's announce number (fabric DIGEST item); 0: none said, a
	 * refresh keeps the one it had */
	uint32_t seq;
	/* the sender announces periodically: said by its datagram (@says),
	 * or, from a daemon before that, by an ANNOUNCE with its digest
	 * (false without @says says nothing) */
	bool announces;
	/* the datagram says whether its sender announces (@announces), as
	 * every datagram of a daemon since the fabric's SAYS_ANNOUNCES flag
	 * does: taken for its whole host each time */
	bool says;
};
int store_insert(struct host_store *s, const struct ibres_hostrec *h, const struct store_put *how,
		 uint64_t now_ms, struct host **out);
/* The learned endpoint of @h's identity, heard again exactly as stored
 * (already heard where @how says, every key leading to it or, a name, GID
 * or LID its host's endpoints share, to another endpoint of its host): its
 * expiry and announce number move, nothing else. Returns true when it did;
 * false: use store_insert(). No key of such a record can conflict with
 * another host's (each leads to its own host), which spares a boot storm's
 * repeats and every periodic announce every check.
 * *@seq_before (may be NULL): the announce number that host had, if it was
 * learned from the fabric under @h's canonical name and heard where @how
 * says, whether refreshed or not; else 0. */
bool store_refresh(struct host_store *s, const struct ibres_hostrec *h, const struct store_put *how,
		   uint64_t now_ms, uint32_t *seq_before);

/* Remove the endpoint of port GID @gid and P_Key @pkey (its GOODBYE) unless
 * LOCAL/STATIC. Returns the keys removed. */
unsigned store_remove_endpoint(struct host_store *s, const uint8_t gid[16], uint16_t pkey);
/* Mark every learned endpoint of a daemon that announces (store_put.announces)
 * as unheard; hearing it again (a put) clears the mark, and a put saying its
 * daemon no longer announces clears every mark of its host. Peers lack hosts we
 * hold: those that left, whose GOODBYE we missed, stay silent, and a live
 * host announces. */
void store_mark_unheard(struct host_store *s);
/* Of the learned endpoints heard on local fabric @fabric (STORE_ALL_FABRICS:
 * all), how many are still marked; their number in @endpoints. */
unsigned store_count_unheard(const struct host_store *s, int fabric, unsigned *endpoints);
/* Those of them still marked expire at @until_ms at the latest (the
 * observer is told once a host), and every mark is cleared. Returns the
 * endpoints whose expiry moved. */
unsigned store_shorten_unheard(struct host_store *s, int fabric, uint64_t until_ms);
/* The learned endpoints heard on local fabric @fabric of the host whose
 * canonical name is @name, of a daemon that announces, expire at @until_ms
 * at the latest (the observer is told once): a peer heard it say goodbye,
 * and a live host's next announce gives it its TTL again. An alias, or a
 * host of a daemon that does not announce, changes nothing. Returns the
 * endpoints whose expiry moved. */
unsigned store_shorten_host(struct host_store *s, const struct host_key *name, int fabric,
			    uint64_t until_ms);
/* Remove every endpoint with port GID @gid, every partition of the port
 * (it left the subnet), unless LOCAL/STATIC. Returns the keys removed. */
unsigned store_remove_gid(struct host_store *s, const uint8_t gid[16]);
/* Local endpoint @ep went down: no learned endpoint is reachable through
 * it any more. Each forgets it heard anything there; one heard there only
 * goes (the observer hears of it as of any other). Returns the endpoints
 * that went. */
unsigned store_forget_fabric(struct host_store *s, unsigned ep);
/* Remove every host of @origin (the STATIC hosts before a reload). Returns keys removed. */
unsigned store_remove_origin(struct host_store *s, uint8_t origin);
/* Remove learned hosts and negative answers (@k NULL), or the host holding
 * @k (every endpoint and key of it) or the negative answer for @k. A LOCAL or STATIC host
 * stays. Returns keys (and negative answers) removed. */
unsigned store_flush(struct host_store *s, const struct host_key *k);
/* Expire what is due: hosts, negatives and paths. Returns hosts and
 * negatives removed. O(hosts + negatives). Once the store had no more keys
 * than before for STORE_COMPACT_AFTER_MS, its key index is rebuilt 4/5
 * full, if that makes it an eighth smaller (it grows again as it must):
 * room to grow is for a store that grows. */
#define STORE_COMPACT_AFTER_MS 60000u
unsigned store_sweep(struct host_store *s, uint64_t now_ms);

/* The record of @h, expanded (ttl: the seconds left, 0 for never). */
void host_record(const struct host *h, struct ibres_hostrec *out, uint64_t now_ms);
uint8_t host_origin(const struct host *h);
/* The next endpoint of @h's host after @e (start with @e = @h), or NULL once
 * every one was seen: for (e = h; e; e = host_next_endpoint(h, e)). */
struct host *host_next_endpoint(const struct host *h, const struct host *e);
/* How many endpoints @h's host has (at most HOST_RAILS_MAX joined). */
unsigned host_endpoint_count(const struct host *h);
/* The local endpoints (bits, by index) @h was heard on; a LOCAL one's own. */
uint32_t host_heard_on(const struct host *h);
/* The rails digest it was stored with (0: a host alone). */
uint64_t host_rails(const struct host *h);
/* How many keys of the store lead to @h (its LID's among them): each one of
 * the keys its record lists, so at most their number and its LID. */
unsigned host_keys_held(const struct host *h);
/* Does another endpoint of @h's host list @k too (a name of the whole host,
 * not of one rail)? */
bool host_key_shared(const struct host *h, const struct host_key *k);
/* Does every endpoint of @h's host list key @k (the host's name, not a
 * name some of its rails or partitions share)? */
bool host_key_everyones(const struct host *h, const struct host_key *k);
/* The record of @h's whole host: its endpoints in order of the local
 * endpoint that heard them first (the preferred rail first; ours in config
 * order; then by port GID and P_Key, whichever endpoint @h is), names and
 * addresses of each after the ones before, without
 * repeats, as many as the record holds; LID, QPN and P_Key of the first; the
 * TTL of the soonest to expire. An endpoint other than @h past @now_ms (not
 * swept yet) is left out (@now_ms 0: none is). Returns the soonest expiry of
 * those it holds (UINT64_MAX: never). */
uint64_t host_record_all(const struct host *h, struct ibres_hostrec *out, uint64_t now_ms);
/* host_record_all(), and which endpoints (bit e: the e-th of the record's
 * order) each name and address came from into @eps; *@whole false when the
 * record could not hold every endpoint's names and addresses (more than it
 * has room for, or more than 32 endpoints). */
uint64_t host_record_eps(const struct host *h, struct ibres_hostrec *out, struct hostrec_eps *eps,
			 bool *whole, uint64_t now_ms);
uint64_t host_expires_ms(const struct host *h); /* UINT64_MAX: never */
/* The soonest expiry of @h's host's endpoints (@h's own when alone): the
 * expiry of the host's record (host_record_all()). */
uint64_t host_soonest_expires_ms(const struct host *h);
uint16_t host_lid(const struct host *h);
uint16_t host_pkey(const struct host *h);
/* The first GID (16 zero bytes when the host has none) into @buf, which
 * it returns (the record may keep it in part). */
const uint8_t *host_gid(const struct host *h, uint8_t buf[16]);
/* The canonical name into @buf (IBRES_NAME_MAX + 1 bytes); "" when none. */
const char *host_name(const struct host *h, char *buf);
/* The best multicast group both ends joined (0 = unknown). */
void host_group(const struct host *h, uint8_t *mtu, uint8_t *rate);
/* Does @h's record list @k (a key may have moved to another host)? */
bool host_has_key(const struct host *h, const struct host_key *k);

/* The cached path from local endpoint @ep to @h, or NULL (none, expired). */
const struct ibres_path_record *host_route(const struct host_store *s, const struct host *h, int ep,
					   uint64_t now_ms);
/* Cache a path from @ep to @h for @ttl_s (0 = never expires). 0 or -ENOMEM. */
int store_set_route(struct host_store *s, struct host *h, int ep,
		    const struct ibres_path_record *p, uint32_t ttl_s, uint64_t now_ms);
/* Forget the paths from @ep (any when < 0) to the host with first GID @gid
 * (any when NULL): an endpoint's LID or GID changed, or a destination left.
 * Returns how many. */
unsigned store_drop_routes(struct host_store *s, int ep, const uint8_t *gid);

/* Visit every key in a stable order (index order, then negative answers)
 * from position @from (0: the first; a position this returned: where it
 * stopped): @h is the host (NULL for a negative answer, whose status is
 * @neg_status and expiry @expires_ms). Stop when @cb returns nonzero, and
 * return the position of that key; else the position past the last, which
 * a walk from there visits nothing at. A position is the key's slot (then
 * the negative answers', past every slot): a page of a listing costs its
 * page, not the keys before it. @cb must not change the store. */
typedef int (*store_visit_fn)(const struct host_key *k, const struct host *h, int neg_status,
			      uint64_t expires_ms, void *arg);
unsigned store_foreach(struct host_store *s, unsigned from, store_visit_fn cb, void *arg);

/* Heap bytes the store holds (index, hosts, paths, negatives). */
size_t store_bytes(const struct host_store *s);
/* The part of it that is the key index. */
size_t store_index_bytes(const struct host_store *s);

/* Check every invariant (index placement, unique keys, every slot's key
 * listed by its host, identity index, counts, use stamps). For tests and
 * fuzzing.
 * 0 or -EUCLEAN. */
int store_check(struct host_store *s);

#endif
