/* SPDX-License-Identifier: MIT */
/*
 * The shared host directory: the image ibresd publishes its host store in (a
 * sealed memfd, passed to readers over the daemon's socket) and every client
 * process maps read-only, so that a cached name, address or GID, and a name
 * that is not the cluster's, is answered with no system call. This header is
 * the image's format and the one copy of its rules (hashing, record layout,
 * validity) for the writer in the daemon (resolverd/os/hostdir_write.c) and
 * the readers (lib/dirmap.c).
 *
 * Layout, all integers in host byte order, every offset from the file's start:
 *
 *   header (struct ibdir_header, in the first IBDIR_HEADER_SPACE bytes)
 *   4 tables (name, IPv4, IPv6, GID): n_slots 64-bit slots each, any number
 *     (format 3: so that a table is sized for its keys, not rounded up to a
 *     power of two); a slot is (32-bit hash << 32 | record offset), offset 0
 *     empty, 1 a deleted key (probing goes on; only in a file without
 *     IBDIR_ORDERED), IBDIR_SLOT_ASK set in it: ask the daemon for a key of
 *     that hash (a reader of format 5 from before the bit takes it for a
 *     damaged slot, and so asks the daemon too); linear probing from the
 *     key's home slot, ibdir_home().
 *     With IBDIR_ORDERED in the header's flags the slots are in Robin Hood
 *     order: along a run of slots the keys' homes never go back (a key is
 *     never farther from its home than the key before it, plus one), so a
 *     probe may stop at the first slot nearer its home than the key looked
 *     for would be; and no slot is deleted (a deletion moves the run after
 *     it one back). A reader that does not know the flag probes to an empty
 *     slot and finds the same.
 *   the record area: 8-byte aligned blocks, struct ibdir_rec then its data:
 *     GIDs (16 bytes each), IPv6 (16), IPv4 (4), then names as (length byte,
 *     bytes); with IBDIR_REC_EPS then an endpoint set (struct hostrec_eps:
 *     bit e, the e-th endpoint; 1, 2 or 4 bytes, least significant first,
 *     for up to 8, 16 or 32 endpoints) for each name, then each GID, IPv6
 *     and IPv4 address, in that order, then each endpoint's QPN (32 bits),
 *     LID and P_Key (16 bits each), as many as flags' IBDIR_REC_N_EP bits
 *     say (1..32). Keys are read back from the record: a slot only points.
 *     With IBDIR_REC_PACKED in its flags, the GIDs, IPv6 addresses and names
 *     are front-coded: each after the first of its kind gives how many
 *     leading bytes it shares with the one before it and then only the
 *     rest (a GID or IPv6 address: a byte 0..16, then 16 minus that many
 *     bytes; a name: its length byte, the shared byte, the rest). With
 *     IBDIR_REC_PACKED_ENDS too, a GID or IPv6 address after the first
 *     gives the bytes it shares with the one before at its start (s) and
 *     at its end (t) in one byte, s << 4 | t (0..15 each, s + t <= 16),
 *     then the 16 - s - t between: a host's rails are often subnets that
 *     differ in the middle of the address (2001:db8:0:RAIL::HOST) and
 *     ports whose GUIDs differ in the middle. The rails of a host share
 *     their GIDs' subnet prefix and often more, and its rail aliases the
 *     host's name: an eight-rail host's record is less than two thirds
 *     as long. A reader unpacks a copy (ibdir_find) before it looks at it;
 *     a record that packing would make less than an eighth smaller is
 *     written plain (ibdir_rec_pack).
 *
 * A host of several endpoints (rails, partitions) is one record with
 * IBDIR_REC_EPS, which every key of every endpoint leads to: a reader that
 * came by a key keeps what the endpoints of that key hold (a rail's alias or
 * address: that rail's addresses and names; the host's name, which every
 * endpoint has: all of them), as each endpoint's own record would say.
 *
 * Concurrency without locks: the writer changes a record only between two
 * increments of its seq (odd while it writes); a reader copies the record
 * and keeps the copy only if seq was even and unchanged. A freed block may
 * be written again for another record, but only after every slot leading to
 * it was changed: a reader keeps its copy only if, loaded again after the
 * copy, the slot it followed says the same and the block's seq has not
 * moved (the slot may lead there again once the block is taken again).
 * Slots are written whole, with table_seq odd around every change, so a
 * reader that found nothing can tell whether the tables moved under it (in
 * Robin Hood order a key's insertion or deletion moves other keys' slots
 * too, each copied before its old place is written: a hit is checked against
 * its record as ever, and a miss meanwhile is not believed). An
 * image never shrinks and is never truncated (its memfd is sealed): growth
 * or a reset is a new generation, and the old one's state then says
 * IBDIR_REPLACED.
 *
 * Time: CLOCK_MONOTONIC milliseconds (the daemon's clock; readers use the
 * coarse variant, served from the vDSO). heartbeat_ms is rewritten every
 * second: a reader trusts the file only while it is at most
 * IBDIR_HEARTBEAT_STALE_MS old, so a dead or stopped daemon's file is not
 * used past that.
 */
#ifndef IBRES_HOSTDIR_H
#define IBRES_HOSTDIR_H

#include <stddef.h>
#include <stdint.h>

#include "hostrec.h"

#define IBDIR_MAGIC		 "IBRESDIR"
/* Format 2: the hash takes 8 bytes a step; 3: tables of any size; 4: a
 * word mixed by a folded 128-bit product, the length after the bytes; 5: a
 * host's endpoints in one record. Within format 5, packed records
 * (IBDIR_REC_PACKED, then IBDIR_REC_PACKED_ENDS) came later, as
 * IBDIR_SLOT_ASK did: a reader from before takes one for damage and asks
 * the daemon, and reads every plain record as it did. */
#define IBDIR_VERSION		 5u
#define IBDIR_HEADER_SPACE	 4096u
#define IBDIR_FILE_MAX		 (1u << 30) /* bytes; readers map no more */
#define IBDIR_SLOTS_MAX		 (1u << 24) /* per table */
#define IBDIR_PATTERNS_MAX	 16u
#define IBDIR_PATTERN_LEN	 128u /* bytes, NUL included */
#define IBDIR_HEARTBEAT_MS	 1000u
#define IBDIR_HEARTBEAT_STALE_MS 5000u
#define IBDIR_PROBES_MAX	 256u /* a reader gives up (asks the daemon) after these */
#define IBDIR_NEVER		 UINT64_MAX

/* Slot offsets with a meaning of their own. */
#define IBDIR_SLOT_EMPTY   0u
#define IBDIR_SLOT_DELETED 1u
/* A bit of a slot's offset (records are 8-byte aligned): the record holds a
 * key of this hash, and lists another key of the same hash in the same table
 * that it does not hold (another host's, or another record's of its own
 * host). A reader that comes by such a slot cannot tell which of the two its
 * key is, and asks the daemon; the record is at the offset without the bit. */
#define IBDIR_SLOT_ASK 2u

enum ibdir_table_id {
	IBDIR_TAB_NAME,
	IBDIR_TAB_IPV4,
	IBDIR_TAB_IPV6,
	IBDIR_TAB_GID,
	IBDIR_TABLES
};

enum ibdir_state {
	IBDIR_BUILDING = 0, /* not published yet */
	IBDIR_LIVE = 1,
	IBDIR_REPLACED = 2, /* a newer generation is published: fetch it */
	IBDIR_CLOSED = 3,   /* the daemon stopped */
};

/* The header's flags; a reader ignores the ones it does not know. */
#define IBDIR_ORDERED 1u /* the tables are in Robin Hood order (above) */

struct ibdir_table {
	uint32_t off;
	uint32_t n_slots;
};

struct ibdir_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size; /* sizeof(struct ibdir_header) */
	uint64_t file_size;
	uint64_t seed; /* of the hash: random per file */
	uint32_t state; /* enum ibdir_state */
	uint32_t flags;
	uint64_t heartbeat_ms;
	/* from this time on (under scope_seq), a key absent from the file does
	 * not exist: 0 always, IBDIR_NEVER not (yet): the daemon's fabric
	 * settles at a known time, and readers need not wait to hear of it */
	uint64_t authoritative_from_ms;
	uint32_t table_seq; /* odd while slots change */
	uint32_t scope_seq; /* odd while flags or patterns change */
	struct ibdir_table tables[IBDIR_TABLES];
	uint32_t rec_off, rec_size; /* the record area */
	uint32_t n_patterns;	    /* 0: every name may be a cluster name */
	uint32_t reserved;
	char patterns[IBDIR_PATTERNS_MAX][IBDIR_PATTERN_LEN]; /* fnmatch(3), case-insensitive */
};

struct ibdir_rec {
	uint32_t seq;	     /* odd while being written */
	uint32_t cap;	     /* bytes of the block, header included, a multiple of 8 */
	uint64_t expires_ms; /* IBDIR_NEVER: never; 0: a free block */
	uint32_t qpn;
	uint16_t lid, pkey;
	uint8_t n_names, n_v4, n_v6, n_gids;
	uint16_t data_len;
	uint16_t flags; /* IBDIR_REC_*; a reader refuses others */
};

/* The record lists each name's and address's endpoints after its names,
 * and the endpoints' QPN, LID and P_Key, IBDIR_REC_N_EP of them. */
#define IBDIR_REC_EPS	     1u
/* Front-coded (the layout above); a view (struct ibdir_view) is always
 * over a record unpacked, without it. */
#define IBDIR_REC_PACKED      2u
/* With IBDIR_REC_PACKED: a GID's or IPv6 address's shared bytes are counted
 * at both ends (the layout above). The writer sets both; a reader from
 * before this flag refuses such a record and asks the daemon, and this one
 * still reads records packed without it (a daemon from before). */
#define IBDIR_REC_PACKED_ENDS 4u
#define IBDIR_REC_N_EP_SHIFT 8u
#define IBDIR_REC_N_EP(flags) ((unsigned)(flags) >> IBDIR_REC_N_EP_SHIFT)

/* The largest record: every count at its maximum, every name 255 bytes,
 * the endpoint sets. */
#define IBDIR_DATA_MAX                                                                             \
	(16u * IBRES_HOST_GIDS_MAX + 16u * IBRES_HOST_ADDRS_MAX + 4u * IBRES_HOST_ADDRS_MAX +     \
	 (1u + IBRES_NAME_MAX) * IBRES_HOST_NAMES_MAX +                                            \
	 4u * (IBRES_HOST_NAMES_MAX + IBRES_HOST_GIDS_MAX + 2u * IBRES_HOST_ADDRS_MAX) +          \
	 8u * HOSTREC_EPS_MAX)
/* Unpacking a copy in place (ibdir_find) needs up to a byte more room than
 * the unpacked record for each front-coded item that did not share a byte
 * (at most 77 of them), and the copy's rounding to 8: with this much more,
 * IBDIR_REC_MAX bytes suffice for any record whose counts are in bounds and
 * whose data unpacks to IBDIR_DATA_MAX bytes at most (others are refused),
 * whatever the writer's packing rule. */
#define IBDIR_UNPACK_SLACK (IBRES_HOST_NAMES_MAX + IBRES_HOST_GIDS_MAX + IBRES_HOST_ADDRS_MAX + 8u)
#define IBDIR_REC_MAX                                                                              \
	(((sizeof(struct ibdir_rec) + IBDIR_DATA_MAX + IBDIR_UNPACK_SLACK) + 7u) & ~7u)

_Static_assert(sizeof(struct ibdir_header) <= IBDIR_HEADER_SPACE, "header fits its page");
_Static_assert(sizeof(struct ibdir_rec) == 32, "record header is 32 bytes");

/* The home slot of a key of hash @hash in a table of @n slots: the hash
 * scaled to [0, @n) by a multiply (Lemire's reduction), which needs no power
 * of two and no division. */
static inline uint32_t ibdir_home(uint32_t hash, uint32_t n)
{
	return (uint32_t)(((uint64_t)hash * n) >> 32);
}

/* How far slot @i of a table of @n slots, holding @slot, is from the home of
 * its key (the probes it takes to get there). */
static inline uint32_t ibdir_dist(uint64_t slot, uint32_t i, uint32_t n)
{
	uint32_t home = ibdir_home((uint32_t)(slot >> 32), n);

	return i >= home ? i - home : i + n - home;
}

/* The slot probed after slot @i in a table of @n slots. */
static inline uint32_t ibdir_next(uint32_t i, uint32_t n)
{
	return i + 1 < n ? i + 1 : 0;
}

/* The table of a key item type (IBRES_T_NAME, _IPV4, _IPV6, _GID), or -1. */
int ibdir_table_of(uint16_t type);

/* The key type (IBRES_KEY_*) of the keys table @tab holds. */
uint8_t ibdir_key_type(unsigned tab);

/* The hash of a key in table @tab (names without regard to ASCII case). */
uint32_t ibdir_hash(uint64_t seed, unsigned tab, const void *key, size_t len);

/* The bytes ibdir_rec_encode() of @r uses, rounded up to 8 (at most
 * IBDIR_REC_MAX). */
size_t ibdir_rec_size(const struct ibres_hostrec *r);

/* Serialise @r into @out (IBDIR_REC_MAX bytes): the record header without
 * seq and cap, and its data. Returns the bytes used (header included). */
size_t ibdir_rec_encode(const struct ibres_hostrec *r, uint64_t expires_ms, uint8_t *out);

/* The same with the endpoint sets @eps of @r's names and addresses
 * (IBDIR_REC_EPS; NULL: none, as ibdir_rec_encode()). */
size_t ibdir_rec_encode_eps(const struct ibres_hostrec *r, const struct hostrec_eps *eps,
			    uint64_t expires_ms, uint8_t *out);

/* Pack the record @rec of @len bytes (header included) that
 * ibdir_rec_encode_eps() made into @out (IBDIR_REC_MAX bytes): front-coded,
 * IBDIR_REC_PACKED set, when that makes its block (8-byte units) an eighth
 * smaller or more, else copied as it is (a few bytes are not worth what
 * unpacking adds to a hit). Returns the bytes used. What the daemon writes
 * into its file. */
size_t ibdir_rec_pack(const uint8_t *rec, size_t len, uint8_t *out);

/* The record of @len bytes (header included) at @buf + @at, packed or not,
 * unpacked to @buf's start, in place: @buf has @cap bytes, and no more than
 * the record's room is read or written. 0 with its unpacked length in
 * *@out_len; -EMSGSIZE when @cap is too small (IBDIR_REC_MAX always
 * suffices), -EBADMSG when its front coding does not add up. The unpacked
 * record is otherwise unchecked: views check it. */
int ibdir_rec_unpack(uint8_t *buf, size_t cap, size_t at, size_t len, size_t *out_len);

/*
 * A record read where its bytes are (a private copy of a block), with no
 * expansion into a struct ibres_hostrec: what a hit packs from. Its
 * pointers are into the copy: the GIDs (n_gids x 16 bytes), IPv6 (16 each),
 * IPv4 (4 each), then n_names names as (length byte, bytes) up to @end;
 * @eps the endpoint sets after them (IBDIR_REC_EPS), or NULL. A look-up's
 * view (ibdir_find) never has them: it holds what its key's endpoints hold.
 */
struct ibdir_view {
	const uint8_t *gids, *v6, *v4, *names, *end, *eps;
	unsigned n_names, n_v4, n_v6, n_gids, n_ep, set_w;
	uint16_t lid, pkey;
	uint32_t qpn;
	uint32_t ttl; /* seconds left, as ibres_hostrec's; set by the finder */
	uint64_t expires_ms;
};

/* View the record copy @rec (@len bytes, header included). 0 when it is a
 * record the writer makes (as ibdir_rec_decode() checks it: then every
 * count indexes inside the copy and every name is 1..IBRES_NAME_MAX bytes
 * hostrec_name_ok() accepts), else -EBADMSG. ttl is set to 0. The view
 * shows the whole record, every endpoint's (v->eps set if it has them). A
 * packed record is refused: unpack it first (ibdir_rec_unpack). */
int ibdir_view_init(const uint8_t *rec, size_t len, struct ibdir_view *v);

/* Name @i of a view made by ibdir_view_init() walks from v->names: the name
 * at *@p; returns its length and moves *@p past it. */
static inline size_t ibdir_view_next_name(const uint8_t **p, const uint8_t **name)
{
	size_t l = **p;

	*name = *p + 1;
	*p += 1 + l;
	return l;
}

/* Does the view list the key @key/@klen of table @tab? 1 or 0. */
int ibdir_view_has_key(const struct ibdir_view *v, unsigned tab, const void *key, size_t klen);

/* Expand a view into @out (its ttl copied). */
void ibdir_view_to_rec(const struct ibdir_view *v, struct ibres_hostrec *out);

/* Does the record copy @rec (@len bytes, header included) list the key
 * @key/@klen of table @tab (a name without regard to ASCII case)? Read from
 * the record's bytes as they are (a packed one unpacked into a copy of its
 * own first), without expanding it. 1 or 0 (0 too for a record whose counts
 * do not fit @len). */
int ibdir_rec_has_key(const uint8_t *rec, size_t len, unsigned tab, const void *key,
		      size_t klen);

/* The answer a look-up by the key @key/@klen of table @tab gives from the
 * record copy @rec (@len bytes, header included; a record of several
 * endpoints is cut in place), as ibdir_find() gives it: into @out, ttl
 * unset. 0, -ENOENT when the record does not list the key, or -EBADMSG. The
 * daemon answers its socket with it, so that the two ways give one answer. */
int ibdir_rec_answer(uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen,
		     struct ibres_hostrec *out);

/* Expand a record copy @rec (@len bytes, header included; packed or not)
 * into @out, ttl unset. 0, or -EBADMSG when its counts and lengths do not add up or it is
 * not a record the writer makes: no name, a count past its array, a name
 * hostrec_name_ok() refuses, a flag it does not know. What it accepts,
 * hostrec_check() accepts. The whole record: its endpoint sets are left out. */
int ibdir_rec_decode(const uint8_t *rec, size_t len, struct ibres_hostrec *out);

/* Where an image keeps its hash and its tables and records. The writer
 * sets them before the image goes LIVE and never changes them after (a new
 * layout is a new generation), so a reader reads them once, as it maps the
 * image, and looks up with its own copy. */
struct ibdir_geom {
	uint64_t seed;
	uint32_t flags; /* IBDIR_ORDERED */
	struct ibdir_table tables[IBDIR_TABLES];
	uint32_t rec_off, rec_size;
};

/* Check the header of the image @base (@size bytes) as ibdir_header_check()
 * does and copy its geometry into @g. 0 or -EBADMSG. */
int ibdir_geom_read(const void *base, size_t size, struct ibdir_geom *g);

/* Is the header of the image @base (@size bytes) one a reader can use:
 * magic, version, sizes, every table and the record area inside the image?
 * 0 or -EBADMSG. */
int ibdir_header_check(const void *base, size_t size);

/*
 * Look a key (@type an IBRES_T_* key item, @key/@len as on the wire) up in
 * the image @base of @size bytes, at CLOCK_MONOTONIC @now_ms. Trusts
 * nothing in the image. Returns:
 *   0         found: *@rec filled with what the key's endpoints hold,
 *             rec->ttl the seconds left (UINT32_MAX: never expires)
 *   -ENODATA  the directory says no such host exists
 *   -ESTALE   replaced, closed, or its heartbeat too old (the daemon
 *             stopped or died): ask the daemon for the directory again
 *   -EAGAIN   ask the daemon (not there and not authoritative, expired,
 *             being written)
 *   -EBADMSG  the image is inconsistent
 */
int ibdir_lookup(const void *base, size_t size, uint64_t now_ms, uint16_t type, const void *key,
		 size_t len, struct ibres_hostrec *rec);

/*
 * The same look-up in an image whose geometry @g ibdir_geom_read() read
 * when it was mapped, giving the record as a view over a copy of its bytes in
 * @buf (@cap bytes, 8-byte aligned) rather than an expanded record: what a
 * hit packs from, with nothing between the image and the caller's buffer
 * but one copy of the record's own bytes (unpacked where it lies, when it is
 * packed). Returns as ibdir_lookup(), and -EMSGSIZE when a record on the
 * way (the one found, or one that shares its slot's hash), or its unpacking,
 * is larger than @cap: look again with IBDIR_REC_MAX bytes,
 * which always suffice. v->ttl is the seconds left. A record of several
 * endpoints is cut, in @buf, to what the key's endpoints hold.
 */
int ibdir_find(const void *base, size_t size, const struct ibdir_geom *g, uint64_t now_ms,
	       uint16_t type, const void *key, size_t len, void *buf, size_t cap,
	       struct ibdir_view *v);

#endif
