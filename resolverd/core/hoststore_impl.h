/* SPDX-License-Identifier: MIT */
/*
 * Inside the host store (hoststore.h): its types and the helpers its files
 * share. Nothing outside core/hoststore*.c and core/host_record.c includes
 * this.
 *
 * A host is one allocation: a fixed header, then its GIDs, IPv6 and IPv4
 * addresses, then its names as (length, bytes). Key number i of a host is
 * counted in the order names, IPv4, IPv6, GIDs, LID, and an index slot holds
 * (host, key number, 32 bits of the key's hash): 16 bytes per key, and the
 * key's bytes are compared against the record itself.
 */
#ifndef IBRESD_HOSTSTORE_IMPL_H
#define IBRESD_HOSTSTORE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hoststore.h"

#define SLOTS_MIN 64u
#ifndef IDENTS_MIN /* fuzzing builds use a few: every sweep walks them all */
#define IDENTS_MIN 64u
#endif
#ifndef NEG_BUCKETS
#define NEG_BUCKETS 4096u
#endif

struct host_path {
	struct host_path *next;
	int ep;
	uint64_t expires_ms;
	struct ibres_path_record path;
};

struct host {
	struct host *lru_prev, *lru_next; /* learned hosts only */
	struct host *id_next;             /* identity chain */
	struct host *sib_next; /* the ring of one host's endpoints; NULL: alone */
	struct host_path *paths;
	uint64_t expires_ms;
	uint64_t rails; /* its host's rails digest; 0: a host alone */
	uint32_t qpn;
	uint32_t cookie;   /* the observer's words (store_observe) */
	uint32_t cookie_all;
	uint32_t heard_on; /* local endpoints (bits) it was heard on; a LOCAL one's own */
	uint32_t seq;	   /* its last announce number heard (store_put.seq); 0: none */
	uint16_t lid, pkey;
	uint8_t origin, grp_mtu, grp_rate;
	uint8_t n_names, n_v4, n_v6, n_gids;
	uint8_t n_indexed; /* slots pointing here */
	uint8_t data[];    /* gids, v6, v4, then names as (len, bytes) */
};

struct store_slot {
	struct host *h; /* NULL: empty */
	uint32_t hash;
	uint8_t kidx;
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

_Static_assert(sizeof(struct store_slot) == 16, "an index slot is 16 bytes");

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

static inline unsigned pow2_at_least(unsigned n, unsigned min)
{
	unsigned p = min;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

static inline const uint8_t *h_gid(const struct host *h, unsigned i)
{
	return h->data + 16 * i;
}

static inline const uint8_t *h_v6(const struct host *h, unsigned i)
{
	return h->data + 16 * (h->n_gids + i);
}

static inline const uint8_t *h_v4(const struct host *h, unsigned i)
{
	return h->data + 16 * (h->n_gids + h->n_v6) + 4 * i;
}

/* Name @i as (pointer, length). */
static inline const uint8_t *h_name(const struct host *h, unsigned i, unsigned *len)
{
	const uint8_t *p = h->data + 16 * (h->n_gids + h->n_v6) + 4 * h->n_v4;

	while (i--)
		p += 1 + *p;
	*len = *p;
	return p + 1;
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
/* Do @a and @b have the same canonical name (ASCII case aside)? */
bool hs_same_canonical(const struct host *a, const struct host *b);
void hs_paths_free(struct host_path *p);

/* The key of a host or a negative answer, hashed. */
static inline uint32_t hs_hash(const struct host_store *s, const struct host_key *k)
{
	return (uint32_t)host_key_hash(&s->kh, k);
}

/* The slot holding @k, or -1. */
static inline long hs_slot_find(const struct host_store *s, const struct host_key *k, uint32_t hash)
{
	unsigned i = hash & s->slot_mask;

	for (unsigned n = 0; n <= s->slot_mask; n++, i = (i + 1) & s->slot_mask) {
		const struct store_slot *sl = &s->slots[i];

		if (!sl->h)
			return -1;
		if (sl->hash == hash && hs_key_is(sl->h, sl->kidx, k))
			return (long)i;
	}
	return -1;
}

/* Does @h's host count in the directory digest (and with what term)? */
static inline bool hs_digest_counts(const struct host *h)
{
	return h->origin != IBRES_ORIGIN_STATIC && h->n_names;
}

/* host_record.c: the digest term of @h's host (its canonical name's), and
 * the digest following a host that came (@sign 1) or went (-1). */
uint64_t hs_digest_term(const struct host *h);
void hs_digest_count(struct host_store *s, const struct host *h, int sign);

/* hoststore.c: the indexes */
struct host *hs_ident_find(const struct host_store *s, const struct host_key *id);
unsigned hs_host_remove(struct host_store *s, struct host *h);

/* hoststore_neg.c: negative answers */
struct store_neg **hs_neg_find(struct host_store *s, const struct host_key *k, uint32_t hash);
void hs_neg_remove(struct host_store *s, struct store_neg **pp);
void hs_neg_forget(struct host_store *s, const struct host_key *k);
void hs_neg_remove_oldest(struct host_store *s);

#endif
