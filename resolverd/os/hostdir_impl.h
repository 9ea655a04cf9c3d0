/* SPDX-License-Identifier: MIT */
/*
 * The shared host directory's writer (hostdir_pub.h; the format is
 * lib/hostdir.h). An endpoint's record is one block of the record area; its
 * struct host keeps the block's offset as the store's observer cookie. A
 * host of several endpoints (rails, partitions) is one block, written by its
 * speaker (hostdir_is_speaker()) as its second cookie: every key of every
 * endpoint leads there, and the record's endpoint sets tell a reader which
 * endpoint's a key is (VIEW_HOST). Its other endpoints have no block: a
 * change to any endpoint puts every endpoint of the host to the observer
 * (hs_ring_changed()), its speaker among them, which writes the host again.
 * Only a host one record cannot hold whole (more names or addresses than a
 * record has room for) is written as before: a block for each endpoint (its
 * own keys), and one for the names they share, listing every endpoint's
 * addresses (VIEW_SHARED), in the block of the endpoint that holds those.
 *
 * In place: a refreshed record that fits its block is rewritten between two
 * increments of the block's seq; one that does not gets a new block, its
 * slots move to it, and the old block is freed. Slots are changed with
 * table_seq odd, from the first change of a loop turn until the next turn
 * (a zero-delay timer), so a store operation made of several events (a key
 * moving from one host to another) is one change to a reader that misses.
 *
 * A new generation: at start-up, when the record area is full or 7/8 of a
 * table taken, and to retry after a failure. It is a memfd, never a file
 * in a folder someone else could reach: its space is
 * reserved with posix_fallocate (no memory fails here, never with SIGBUS in
 * a reader), it is mapped for writing here and then sealed against
 * shrinking, growing, any other writer and more seals, written in full, and
 * only then handed out (frontend/directory.c passes the descriptor over the
 * socket) while the old one is marked IBDIR_REPLACED. Readers check the
 * seals before they map it, so nobody, the daemon's own account included,
 * can truncate a mapping under a reader or write into it through the
 * descriptor it was given.
 *
 * Freed blocks are written again (bins of freed blocks by size). These rules
 * keep a reader from ever taking one host's record for another's key:
 * - a slot is deleted by its hash and the block it points at, never by what
 *   the block lists now, and a block rewritten in place loses the slots of
 *   the keys it drops before its bytes change: no slot outlives its key;
 * - every slot leading to a block is changed before the block is freed, and
 *   a block written again moves its seq before any slot leads to it anew:
 *   a reader loads its slot and the block's seq again after the copy
 *   (lib/hostdir.c, probe()) and probes again if either moved;
 * - a key of a record that shares its hash with another key the record
 *   lists but does not hold has its slot marked IBDIR_SLOT_ASK
 *   (hash_keys()): a reader could not tell which of the two the slot
 *   was set for, and asks the daemon. The mark is set before the bytes of a
 *   block rewritten in place change. Keys a record holds that share a hash
 *   share one slot: a key that leaves the block takes it, and the keys that
 *   stay set it again in the same section.
 *
 * Two files: hostdir_write.c writes records and slots into the generation
 * published now and follows the store (its observer callbacks);
 * hostdir_pub.c makes generations, runs the timers and is hostdir_pub.h.
 * Calls go from hostdir_pub.c to hostdir_write.c only; hostdir_write.c only
 * flags that a new generation is due.
 */
#ifndef IBRESD_HOSTDIR_IMPL_H
#define IBRESD_HOSTDIR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/jitter.h"
#include "core/loop.h"
#include "hostdir.h"
#include "hostrec.h"
#include "os/hostdir_pub.h"

#define REC_KEYS_MAX (IBRES_HOST_NAMES_MAX + 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_GIDS_MAX)

/* Freed blocks of up to FREE_BIN_BYTES are kept to be written again, one
 * stack of offsets per block size (a multiple of 8): a multi-rail host's
 * record outgrows its block with every rail learned, and before blocks were
 * reused those left behind cost an eight-rail host about 420 bytes of a
 * directory grown as it learned (bench/RESULTS.md). */
#define FREE_BIN_BYTES 1024u
#define FREE_BINS      (FREE_BIN_BYTES / 8 + 1)

struct free_bin {
	uint32_t *off;
	uint32_t n, cap;
};

struct dkey {
	uint8_t tab, len;
	const void *data;
};

/* Heartbeats without growth after which the publisher compacts the file
 * (hostdir_pub.c, hostdir_compact()). */
#define HOSTDIR_COMPACT_BEATS 60u

/* What a record written for an endpoint shows: its own keys; its host's
 * shared names (the record of every endpoint's addresses); or, for a host
 * whose endpoints one record holds whole, every key of the host (its
 * endpoint sets say which endpoint each came from). */
enum dview { VIEW_OWN, VIEW_SHARED, VIEW_HOST };

struct hostdir_pub {
	struct loop *loop;
	struct host_store *store;
	uint8_t *map; /* the generation published now, read-write; NULL: none */
	size_t size;
	int fd;			     /* its sealed memfd (what readers are given); -1: none */
	uint32_t rec_next, rec_end;  /* free space of the record area */
	uint64_t rec_built;	     /* bytes of records written when the file was made */
	uint64_t left_behind;	     /* bytes of blocks freed since, not taken again */
	struct free_bin bins[FREE_BINS]; /* freed blocks of this generation, by size / 8 */
	uint32_t used[IBDIR_TABLES]; /* slots not empty */
	bool in_section;	     /* table_seq is odd */
	bool rebuild;		     /* a new file is needed */
	uint64_t due_ms;	     /* when it became so */
	uint64_t changed_ms;	     /* the store's last change */
	bool incomplete;	     /* a host is missing from the file: not authoritative */
	/* growth: blocks taken from the free space and slots taken, counted;
	 * the count at the last heartbeat, heartbeats since it last moved;
	 * the generation now was made compact (or would not shrink by it) */
	uint64_t grown, grown_seen;
	unsigned steady_beats;
	bool compact;
	bool logged;		     /* a failure was logged; quiet until a success */
	unsigned retry_in;
	uint64_t auth_from; /* as the resolver said; IBDIR_NEVER while incomplete */
	char patterns[IBDIR_PATTERNS_MAX][IBDIR_PATTERN_LEN];
	unsigned n_patterns;
	struct jitter_rng rng;
	struct loop_timer beat, end_section, later;
	struct hostdir_stats stats;
	uint8_t plain[IBDIR_REC_MAX]; /* a record encoded, before it is packed */
	uint8_t enc[IBDIR_REC_MAX];   /* and packed: what is written */
	/* records expanded: the one written, the one it replaces, the one being
	 * dropped; the endpoint sets of the one written (VIEW_HOST) */
	struct ibres_hostrec cur, prev, gone;
	struct hostrec_eps eps;
	uint64_t whole_expires; /* of p->cur, as hostdir_host_whole() left it */
};

static inline struct ibdir_header *hd_of(const struct hostdir_pub *p)
{
	return (struct ibdir_header *)p->map;
}

/* hostdir_write.c */

/* p->cur as the file holds it (with the endpoint sets @eps, or none), into
 * p->enc: packed when ibdir_rec_pack()'s rule says so. Returns its length. */
size_t hostdir_encode(struct hostdir_pub *p, const struct hostrec_eps *eps, uint64_t expires_ms);
/* The keys of record @r, into @k (REC_KEYS_MAX); returns how many. */
unsigned hostdir_rec_keys(const struct ibres_hostrec *r, struct dkey *k);
/* Does the store give @k to @h (VIEW_HOST: to an endpoint of its host), and
 * is it a key of @h's view? */
bool hostdir_holds(const struct hostdir_pub *p, const struct host *h, const struct dkey *k,
		   enum dview view);
/* Is @h the endpoint of its host that writes the host's one record (the
 * lowest by address, so that it stays while the endpoints do)? */
bool hostdir_is_speaker(const struct host *h);
/* Does one record hold @h's host whole (every endpoint's names and addresses,
 * at least one name)? Leaves that record in p->cur and p->eps, its expiry in
 * p->whole_expires. */
bool hostdir_host_whole(struct hostdir_pub *p, const struct host *h);
/* Forget the freed blocks (a new generation: they were the old one's). */
void hostdir_bins_clear(struct hostdir_pub *p);
/* ... and free their memory (the publisher stops). */
void hostdir_bins_free(struct hostdir_pub *p);
/* A new generation is due (the timers make it once the store is quiet). */
void hostdir_want_rebuild(struct hostdir_pub *p);
/* The slots' changes of this loop turn are over (table_seq even again). */
void hostdir_section_end(struct hostdir_pub *p);
/* The header's scope (authoritative from, name patterns) as @p has it. */
void hostdir_scope_write(struct hostdir_pub *p);
/* The store's observer (store_observe()): @arg is the hostdir_pub. */
void hostdir_on_put(void *arg, struct host *h);
void hostdir_on_refresh(void *arg, struct host *h);
void hostdir_on_gone(void *arg, struct host *h);
/* @h into a new generation, every host of the store in turn: as
 * hostdir_on_put() writes it, but a host of several endpoints when its
 * speaker comes (its other endpoints do nothing), so that the record of a
 * host one record holds is made once, not once for each endpoint. */
void hostdir_put_new(struct hostdir_pub *p, struct host *h);

#endif
