/* SPDX-License-Identifier: MIT */
/*
 * Inside the host store (hoststore.h): its types and the helpers its files
 * share. Nothing outside core/hoststore*.c and core/host_record.c includes
 * this.
 *
 * A host is one allocation: a fixed header, then its GIDs (the first in 8
 * bytes when its prefix is one every port of a kind shares), IPv6 and IPv4
 * addresses, then its names (the canonical one whole, each other one as
 * what it adds to the canonical name's start). Key number i of a host is
 * counted in the order names, IPv4, IPv6, GIDs, LID, and an index slot is
 * one 64-bit word: the host's address, the key number, how far the slot is
 * from the key's home and 8 bits of the key's hash (8 bytes per key, half
 * of a pointer, a whole hash and the key number side by side), and the
 * key's bytes are compared against the record itself.
 */
#ifndef IBRESD_HOSTSTORE_IMPL_H
#define IBRESD_HOSTSTORE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/hoststore.h"

#define SLOTS_MIN 64u
/* An index slot, from the low bits up: a host record's address over
 * HOST_ALIGN (records are allocated so aligned, at an address below
 * 1 << HOST_ADDR_BITS: user space on every 64-bit Linux, unless a program
 * maps memory above on purpose; hs_pack() refuses a record it gets
 * elsewhere); the key's number in the record; the slot's distance from the
 * key's home (SLOT_DIST_FAR: that far or farther, the key is hashed again
 * to know), which Robin Hood order needs (insertion, deletion, and a
 * look-up's early stop); the top SLOT_HASH_BITS bits of the key's
 * 32-bit hash (the home is taken from the hash mixed again, hs_home(), so
 * that keys sharing a home rarely share these bits), which spare most key
 * comparisons. */
#define HOST_ALIGN     16u
#define HOST_ADDR_BITS 48u
#define SLOT_ADDR_BITS (HOST_ADDR_BITS - 4u) /* log2(HOST_ALIGN) */
#define SLOT_KIDX_BITS 7u
#ifndef SLOT_DIST_BITS /* a test build sets 1: any slot off its home is far */
#define SLOT_DIST_BITS 5u
#endif
#define SLOT_HASH_BITS	(64u - SLOT_ADDR_BITS - SLOT_KIDX_BITS - SLOT_DIST_BITS)
#define SLOT_KIDX_SHIFT SLOT_ADDR_BITS
#define SLOT_DIST_SHIFT (SLOT_KIDX_SHIFT + SLOT_KIDX_BITS)
#define SLOT_HASH_SHIFT (SLOT_DIST_SHIFT + SLOT_DIST_BITS)
#define SLOT_ADDR_MASK	((UINT64_C(1) << SLOT_ADDR_BITS) - 1)
#define SLOT_KIDX_MASK	((UINT64_C(1) << SLOT_KIDX_BITS) - 1)
#define SLOT_DIST_FAR	((1u << SLOT_DIST_BITS) - 1)
#ifndef IDENTS_MIN /* fuzzing builds use a few: every sweep walks them all */
#define IDENTS_MIN 64u
#endif
#ifndef NEG_BUCKETS
#define NEG_BUCKETS 4096u
#endif

/* A cached path (hoststore_route.c), chained in the store's route table. */
struct host_path {
	struct host_path *next;
	const struct host *owner; /* the endpoint record it leads to */
	int ep;
	uint64_t expires_ms;
	struct ibres_path_record path;
};

/* A record is allocated HOST_HEAD bytes and its data, not sizeof(struct
 * host): the header's end is not padded to 8 bytes, so that a record of an
 * endpoint with two names, a GID and two addresses fits one malloc size
 * class below what it would take padded. */
struct host {
	struct host *sib_next; /* the ring of one host's endpoints; NULL: alone */
	uint64_t expires_ms;
	uint64_t rails; /* its host's rails digest; 0: a host alone */
	uint32_t qpn;
	uint32_t cookie;   /* the observer's words (store_observe) */
	uint32_t cookie_all;
	uint32_t heard_on; /* local endpoints (bits) it was heard on; a LOCAL one's own */
	uint32_t seq;	   /* its last announce number heard (store_put.seq); 0: none */
	/* learned: the store's use clock at its last use (a counted look-up,
	 * or its learning), never 0; pinned: 0 (hoststore.c, eviction) */
	uint32_t used;
	uint16_t lid, pkey;
	uint8_t origin : 3;
	uint8_t gid0 : 2;      /* how GID 0 is kept (enum gid0_form) */
	uint8_t routed : 1;    /* the route table may hold paths to it (hoststore_route.c) */
	uint8_t announces : 1; /* heard from a daemon that announces (store_put.announces) */
	uint8_t unheard : 1;   /* learned, and not heard since store_mark_unheard() */
	uint8_t grp_mtu, grp_rate;
	uint8_t n_names, n_v4, n_v6, n_gids;
	uint8_t n_indexed; /* slots pointing here */
	uint8_t data[];	   /* gids, v6, v4, then names (h_names()) */
};
#define HOST_HEAD offsetof(struct host, data)
/* The oldest a learned endpoint's use stamp may be, in uses of the store
 * (store_sweep() brings older ones to it): so that the 32-bit use clock's
 * wrapping never makes an endpoint used long ago look recent. */
#define USE_AGE_MAX (UINT32_C(1) << 31)

/* An identity slot (struct host_store.idents): 0 free, IDENT_GONE a record
 * removed (a look-up passes it), else a record's address with
 * IDENT_TAG_BITS of its identity's hash in the low bits its alignment leaves
 * free, which spare most comparisons. The word still points into the
 * record: a leak checker (LeakSanitizer) sees the record held, as it must,
 * since no other word of the store holds its address whole. */
#define IDENT_GONE     UINT64_C(1)
#define IDENT_FULL_NUM 3u /* slots not free, at most (hs_idents_reserve()) */
#define IDENT_FULL_DEN 4u
#define IDENT_TAG_MASK ((uint64_t)HOST_ALIGN - 1)

static inline struct host *ident_host(uint64_t w)
{
	return w > IDENT_GONE ? (struct host *)(uintptr_t)(w & ~IDENT_TAG_MASK) : NULL;
}

/* The record in identity slot @i, or NULL (free or gone). */
static inline struct host *hs_ident_at(const struct host_store *s, unsigned i)
{
	return ident_host(s->idents[i]);
}

/* Every endpoint record @h of @s, in identity-table order (@i its slot). The
 * body may remove @h, or any record: a removed one's slot is marked gone and
 * nothing moves. */
#define hs_foreach_record(s, i, h)                                                                 \
	for (unsigned i = 0; i <= (s)->ident_mask; i++)                                            \
		if (((h) = hs_ident_at((s), i)) != NULL)

struct store_slot {
	uint64_t w; /* address, key number, distance, hash bits; 0: empty */
};

struct store_neg {
	struct store_neg *next;          /* chain */
	struct store_neg *older, *newer; /* FIFO for the bound */
	uint64_t expires_ms;
	int status;
	uint32_t hash;
	uint8_t type, len;
	uint8_t data[];
};

_Static_assert(sizeof(struct store_slot) == 8, "an index slot is 8 bytes");
/* every key of a record has a number a slot can hold (the LID the last) */
_Static_assert(IBRES_HOST_NAMES_MAX + 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_GIDS_MAX + 1 <=
		       1u << SLOT_KIDX_BITS,
	       "a key's number fits in a slot");
_Static_assert(SLOT_HASH_BITS >= 8 && SLOT_HASH_BITS <= 32, "a slot keeps some of the hash");
_Static_assert(HOST_ALIGN == 1u << (HOST_ADDR_BITS - SLOT_ADDR_BITS), "addresses over HOST_ALIGN");

/* The key index rebuilt with @n_slots slots (room for every key). 0 or
 * -ENOMEM (the index unchanged). */
int hs_slots_resize(struct host_store *s, unsigned n_slots);

static inline uint64_t deadline(uint64_t now_ms, uint32_t ttl_s)
{
	uint64_t d = (uint64_t)ttl_s * 1000;

	if (!ttl_s || now_ms > UINT64_MAX - d)
		return UINT64_MAX;
	return now_ms + d;
}

static inline bool origin_pinned(uint8_t origin)
{
	return origin == IBRES_ORIGIN_LOCAL || origin == IBRES_ORIGIN_STATIC;
}

/* Lower is more authoritative: LOCAL (0) > STATIC (1) > FABRIC (2). */
static inline unsigned origin_rank(uint8_t origin)
{
	return origin;
}

/* How a record keeps its GID 0 (struct host.gid0): whole, or as its last 8
 * bytes when its first 8 are a prefix that every port of a kind has, and
 * which a multi-rail host's every rail has, planes included: IB's default
 * subnet prefix fe80::/64 (a RoCE port's link-local GID's too), and ::/64
 * (RoCE's IPv4-mapped GIDs). 8 bytes an endpoint. */
enum gid0_form {
	GID0_WHOLE,
	GID0_LINK_LOCAL,
	GID0_ZERO,
};

/* The 8 leading bytes form @f stands for (not GID0_WHOLE). */
static inline const uint8_t *gid0_prefix(unsigned f)
{
	static const uint8_t prefixes[][8] = {
		[GID0_LINK_LOCAL] = {0xfe, 0x80},
		[GID0_ZERO] = {0},
	};

	return prefixes[f];
}

/* How GID @gid would be kept as a record's GID 0. */
static inline enum gid0_form gid0_form_of(const uint8_t gid[16])
{
	if (!memcmp(gid, gid0_prefix(GID0_LINK_LOCAL), 8))
		return GID0_LINK_LOCAL;
	if (!memcmp(gid, gid0_prefix(GID0_ZERO), 8))
		return GID0_ZERO;
	return GID0_WHOLE;
}

/* The bytes the GIDs of @h take. */
static inline unsigned h_gids_len(const struct host *h)
{
	return 16u * h->n_gids - (h->gid0 != GID0_WHOLE ? 8u : 0u);
}

/* GID @i of @h: in the record, or made whole in @buf. */
static inline const uint8_t *h_gid(const struct host *h, unsigned i, uint8_t buf[16])
{
	if (h->gid0 == GID0_WHOLE)
		return h->data + 16 * i;
	if (i)
		return h->data + 16 * i - 8;
	memcpy(buf, gid0_prefix(h->gid0), 8);
	memcpy(buf + 8, h->data, 8);
	return buf;
}

static inline const uint8_t *h_v6(const struct host *h, unsigned i)
{
	return h->data + h_gids_len(h) + 16 * i;
}

static inline const uint8_t *h_v4(const struct host *h, unsigned i)
{
	return h->data + h_gids_len(h) + 16 * h->n_v6 + 4 * i;
}

/* The names: the canonical one (name 0) as (length, bytes); each other one
 * as (length, bytes it shares with the start of name 0, the rest), so that a
 * rail's alias (node1-ib3) costs what it adds to the host's name, whatever
 * the name's length. */
static inline const uint8_t *h_names(const struct host *h)
{
	return h->data + h_gids_len(h) + 16 * h->n_v6 + 4 * h->n_v4;
}

/* The canonical name (name 0) as (pointer, length). */
static inline const uint8_t *h_name0(const struct host *h, unsigned *len)
{
	const uint8_t *p = h_names(h);

	*len = *p;
	return p + 1;
}

/* Name @i: its first @pre bytes are name 0's, the other @len - @pre are
 * at @rest. */
struct h_name_ref {
	const uint8_t *head, *rest;
	unsigned len, pre;
};

static inline void h_name_at(const struct host *h, unsigned i, struct h_name_ref *n)
{
	const uint8_t *p = h_names(h);

	n->head = p + 1;
	n->len = *p;
	n->pre = 0;
	n->rest = p + 1;
	for (p += 1 + *p; i--; p += 2 + p[0] - p[1]) {
		n->len = p[0];
		n->pre = p[1];
		n->rest = p + 2;
	}
}

/* Byte @j of name @n. */
static inline uint8_t h_name_byte(const struct h_name_ref *n, unsigned j)
{
	return j < n->pre ? n->head[j] : n->rest[j - n->pre];
}

/* The fabric its LID is unique in: the first local endpoint that hears it
 * (one subnet: every port hears every endpoint, and the first is the same
 * for all; planes: the one port on that plane). */
static inline uint8_t fabric_of_bits(uint32_t heard_on)
{
	return heard_on ? (uint8_t)__builtin_ctz(heard_on) : HOST_FABRIC_NONE;
}

static inline uint8_t h_fabric(const struct host *h)
{
	return fabric_of_bits(h->heard_on);
}

static inline unsigned h_nkeys(const struct host *h)
{
	return h->n_names + h->n_v4 + h->n_v6 + h->n_gids + (h->lid ? 1 : 0);
}

/* host_record.c: the compact record */
void hs_key(const struct host *h, unsigned i, struct host_key *k);
bool hs_key_is(const struct host *h, unsigned i, const struct host_key *k);
void hs_ident(const struct host *h, struct host_key *k);
void hs_rec_ident(const struct ibres_hostrec *r, struct host_key *k);
/* The identity of the endpoint of port GID @gid and P_Key @pkey. */
void hs_gid_ident(const uint8_t gid[16], uint16_t pkey, struct host_key *k);
int hs_rec_validate(const struct ibres_hostrec *r);
struct host *hs_pack(const struct ibres_hostrec *r, uint8_t origin, uint32_t heard_on);
/* Does @h hold exactly what @r says (what hs_pack would make of it)? */
bool hs_same_rec(const struct host *h, const struct ibres_hostrec *r);
/* Do @a and @b have the same canonical name (ASCII case aside)? */
bool hs_same_canonical(const struct host *a, const struct host *b);
/* Is @name (a record's) @h's canonical name, ASCII case aside? */
bool hs_canonical_is(const struct host *h, const char *name);
/* hoststore_route.c: paths. @h's paths are freed (it goes); they are
 * @to's now (@from replaced by a record of the same LID); those due by
 * @now_ms are freed; all of them are (the store ends); their bytes; does
 * every one lead to a record @held says the store holds? */
void hs_routes_drop(struct host_store *s, struct host *h);
void hs_routes_move(struct host_store *s, struct host *from, struct host *to);
void hs_routes_expire(struct host_store *s, uint64_t now_ms);
void hs_routes_fini(struct host_store *s);
size_t hs_routes_bytes(const struct host_store *s);
int hs_routes_check(const struct host_store *s,
		    bool (*held)(const struct host_store *s, const struct host *h));
/* The bytes of @h's struct and record, its routes aside. */
size_t hs_rec_bytes(const struct host *h);

/* The key of a host or a negative answer, hashed. */
static inline uint32_t hs_hash(const struct host_store *s, const struct host_key *k)
{
	return (uint32_t)host_key_hash(&s->kh, k);
}

/* The home slot of a key of hash @hash in an index of @n slots: the hash,
 * mixed by an odd multiplier so that the home does not follow the top bits a
 * slot keeps (slot_hash_is()), scaled to [0, @n) by a multiply. Any @n will
 * do: the index is sized for its keys, not to a power of two. */
static inline unsigned hs_home(uint32_t hash, unsigned n)
{
	return (unsigned)(((uint64_t)(uint32_t)(hash * 0x9e3779b1u) * n) >> 32);
}

/* The slot after @i in an index of @n slots. */
static inline unsigned hs_next(unsigned i, unsigned n)
{
	return i + 1 < n ? i + 1 : 0;
}

/* How far slot @i lies past @home in an index of @n slots. */
static inline unsigned hs_dist(unsigned i, unsigned home, unsigned n)
{
	return i >= home ? i - home : i + n - home;
}

/* The slot for key @kidx of @h, whose hash is @hash, @dist slots from home. */
static inline struct store_slot slot_make(const struct host *h, unsigned kidx, uint32_t hash,
					  unsigned dist)
{
	uint64_t w = (uint64_t)(uintptr_t)h / HOST_ALIGN | (uint64_t)kidx << SLOT_KIDX_SHIFT |
		     (uint64_t)(dist < SLOT_DIST_FAR ? dist : SLOT_DIST_FAR) << SLOT_DIST_SHIFT |
		     (uint64_t)(hash >> (32 - SLOT_HASH_BITS)) << SLOT_HASH_SHIFT;

	return (struct store_slot){ .w = w };
}

static inline struct host *slot_host(struct store_slot sl)
{
	return (struct host *)(uintptr_t)((sl.w & SLOT_ADDR_MASK) * HOST_ALIGN);
}

static inline unsigned slot_kidx(struct store_slot sl)
{
	return (unsigned)(sl.w >> SLOT_KIDX_SHIFT & SLOT_KIDX_MASK);
}

static inline unsigned slot_dist(struct store_slot sl)
{
	return (unsigned)(sl.w >> SLOT_DIST_SHIFT) & SLOT_DIST_FAR;
}

/* @sl, @dist slots from its key's home. */
static inline struct store_slot slot_with_dist(struct store_slot sl, unsigned dist)
{
	sl.w &= ~((uint64_t)SLOT_DIST_FAR << SLOT_DIST_SHIFT);
	sl.w |= (uint64_t)(dist < SLOT_DIST_FAR ? dist : SLOT_DIST_FAR) << SLOT_DIST_SHIFT;
	return sl;
}

/* Are the hash bits @sl keeps those of @hash? */
static inline bool slot_hash_is(struct store_slot sl, uint32_t hash)
{
	return sl.w >> SLOT_HASH_SHIFT == hash >> (32 - SLOT_HASH_BITS);
}

/* The host of the (taken) slot @at. */
static inline struct host *hs_at(const struct host_store *s, long at)
{
	return slot_host(s->slots[at]);
}

/* Slot @at leads to key @kidx of @h from now on (a key that moved). */
static inline void hs_at_set(struct host_store *s, long at, const struct host *h, unsigned kidx)
{
	uint64_t keep = s->slots[at].w >> SLOT_DIST_SHIFT << SLOT_DIST_SHIFT;

	s->slots[at].w =
		(uint64_t)(uintptr_t)h / HOST_ALIGN | (uint64_t)kidx << SLOT_KIDX_SHIFT | keep;
}

/* The slot holding @k, or -1. In Robin Hood order (hs_slot_put()) a slot
 * nearer its key's home than @k would be ends the search; a far one's
 * distance is not known without hashing again, and the search goes on. */
static inline long hs_slot_find(const struct host_store *s, const struct host_key *k, uint32_t hash)
{
	unsigned i = hs_home(hash, s->n_slots);

	for (unsigned d = 0; d < s->n_slots; d++, i = hs_next(i, s->n_slots)) {
		struct store_slot sl = s->slots[i];

		if (!sl.w || slot_dist(sl) < (d < SLOT_DIST_FAR ? d : SLOT_DIST_FAR))
			return -1;
		if (slot_hash_is(sl, hash) && hs_key_is(slot_host(sl), slot_kidx(sl), k))
			return (long)i;
	}
	return -1;
}

/* Does @h's host count in the directory digest (and with what term)? */
static inline bool hs_digest_counts(const struct host *h)
{
	return h->origin != IBRES_ORIGIN_STATIC && h->n_names;
}

/* Does @h speak for its host in the digest of @fabric (STORE_ALL_FABRICS:
 * the whole one)? Counted, heard there, and the first such of its ring by
 * address (a ring has at most HOST_RAILS_MAX endpoints). */
static inline bool hs_speaks(const struct host *h, int fabric)
{
	uint32_t bit = fabric < 0 ? UINT32_MAX : 1u << fabric;

	if (!hs_digest_counts(h) || (fabric >= 0 && !(h->heard_on & bit)))
		return false;
	for (const struct host *e = h->sib_next; e && e != h; e = e->sib_next)
		if (e < h && hs_digest_counts(e) && (fabric < 0 || (e->heard_on & bit)))
			return false;
	return true;
}

/* host_record.c: the digest term of @h's host (its canonical name's), and
 * the digest following a host that came (@sign 1) or went (-1). */
uint64_t hs_digest_term(const struct host *h);
void hs_digest_count(struct host_store *s, const struct host *h, int sign);
/* Endpoint @h (linked in its ring) is heard on @now instead of @was (0: it
 * comes, or goes): the fabrics' digests follow, for the fabrics no other
 * endpoint of its host is heard on. */
void hs_fabric_count(struct host_store *s, const struct host *h, uint32_t was, uint32_t now);

/* hoststore_index.c: the indexes */
struct host *hs_ident_find(const struct host_store *s, const struct host_key *id);
/* The identity table's home slot of @k (a GID's P_Key aside: a port's
 * partitions share it, and are found in the run that starts there). */
unsigned hs_ident_home(const struct host_store *s, const struct host_key *k);
/* Room in the key index for @more keys, and in the identity table for one
 * more record: 0 or -ENOMEM (the table as it was). */
int hs_slots_reserve(struct host_store *s, unsigned more);
int hs_idents_reserve(struct host_store *s);
/* @h into the identity table (room reserved), and out of it; its bytes
 * counted, and no longer. */
void hs_ident_link(struct host_store *s, struct host *h);
void hs_ident_unlink(struct host_store *s, struct host *h);
/* Slot @sl of a key of hash @hash into @slots (@n of them, one free at
 * least), in Robin Hood order (@s hashes the keys of far slots again). */
void hs_slot_put(const struct host_store *s, struct store_slot *slots, unsigned n,
		 struct store_slot sl, uint32_t hash);
/* Slot @i emptied (backward shift), its host's count down. */
void hs_slot_del(struct host_store *s, unsigned i);
/* hoststore.c: every slot of @h, @h unlinked and freed; returns the slots
 * removed. */
unsigned hs_host_remove(struct host_store *s, struct host *h);
/* Every endpoint of @member's host but @skip put to the observer. */
void hs_ring_changed(struct host_store *s, struct host *member, const struct host *skip);
/* @h's expiry moved, nothing else: the observer is told. */
void hs_expiry_moved(struct host_store *s, struct host *h);

/* hoststore_neg.c: negative answers */
struct store_neg **hs_neg_find(struct host_store *s, const struct host_key *k, uint32_t hash);
void hs_neg_remove(struct host_store *s, struct store_neg **pp);
void hs_neg_forget(struct host_store *s, const struct host_key *k);
void hs_neg_remove_oldest(struct host_store *s);

#endif
