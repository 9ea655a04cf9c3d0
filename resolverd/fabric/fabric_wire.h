/* SPDX-License-Identifier: MIT */
/* The fabric protocol's datagrams (doc/fabric-protocol.md): a fixed header,
 * TLV items, and an optional HMAC-SHA256 trailer. Pure encode/decode. */
#ifndef IBRESD_FABRIC_WIRE_H
#define IBRESD_FABRIC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hostkey.h"
#include "hostrec.h"

#define FW_MAGIC 0x49425253u /* "IBRS" */
#define FW_VERSION 1
#define FW_HDR_LEN 24
#define FW_MAX_LEN 1400 /* fits one IPoIB datagram and a 2048-byte UD MTU */
#define FW_HMAC_LEN 32
#define FW_MAX_GROUPS 8

enum fw_type {
	FW_REQUEST = 1,  /* multicast: who has TARGET? */
	FW_REPLY = 2,    /* unicast, from the owner of TARGET only */
	FW_ANNOUNCE = 3, /* multicast (or unicast to a newcomer): here I am */
	FW_GOODBYE = 4,  /* multicast: I am leaving */
	FW_RAIL_DOWN = 5, /* multicast: TARGET (a GID), another endpoint of my host, is down */
	FW_RANGE_QUERY = 6,  /* unicast: what do you hold in RANGE? (count and sum, or names) */
	FW_RANGE_ANSWER = 7, /* unicast: the answer, same tid: RANGE, SUMS or HINTs, DIGEST */
};

enum fw_flags {
	FW_FLAG_HMAC = 1 << 0,	   /* a 32-byte HMAC-SHA256 trailer follows the items */
	FW_FLAG_NEWCOMER = 1 << 1, /* ANNOUNCE at start-up: peers answer with their identity */
	/* the sender announces periodically (announce_interval not 0), on
	 * every datagram: a host learned from its REQUEST or REPLY alone is
	 * one whose silence means it left. Daemons before it never set it */
	FW_FLAG_ANNOUNCES = 1 << 2,
	/* the sender says on every datagram whether it announces (bit 2):
	 * without bit 2 it does not (announce_interval 0). Set by every
	 * daemon since the two bits; a datagram without it says nothing */
	FW_FLAG_SAYS_ANNOUNCES = 1 << 3,
};

/* Item types of the fabric protocol (beside the host record's, 1..24). */
enum {
	FW_T_TARGET = 0x101,  /* nested: one key item (NAME, IPV4, IPV6 or GID) */
	FW_T_GROUP = 0x102,   /* 2 bytes: MTU enum, rate enum; repeated, lowest priority first */
	FW_T_CHOSEN = 0x103,  /* 2 bytes: the group a REPLY chose (MTU, rate) */
	FW_T_STAMP = 0x104,   /* 8 bytes: the sender's freshness stamp (with a key) */
	FW_T_RAILS = 0x105,   /* 16 bytes per GID: every endpoint of the sender's host,
			       * ascending, distinct; only from a host of several */
	FW_T_DIGEST = 0x106,  /* 20 bytes: the sender's directory digest (ANNOUNCE) */
	FW_T_RANGE = 0x107,   /* 20 bytes: lo, hi, parts, flags: a range of digest terms */
	FW_T_SUMS = 0x108,    /* 12 bytes a part: hosts, sum of each part of RANGE */
	FW_T_HINT = 0x109,    /* a canonical name the sender holds in RANGE; repeated */
	FW_T_HINT_AT = 0x10a, /* the same with where its host is reached: kind, address,
			       * name (an answer to FW_RANGE_WHERE); repeated */
	FW_T_UP = 0x10b,      /* 4 bytes: ms the sender has kept what it hears (NEWCOMER) */
	FW_T_GONE = 0x10c,    /* a canonical name whose GOODBYE the sender heard lately
			       * (ANNOUNCE); repeated */
};

#define FW_DIGEST_LEN 20 /* longer (a later version's) is read as far as known */
#define FW_RANGE_LEN 20  /* likewise */
#define FW_UP_LEN 4      /* likewise */
#define FW_PARTS_MAX 16  /* parts of a range (core/hoststore_range.h) */
#define FW_SUM_LEN 12
/* The names of a RANGE_ANSWER, packed: each NUL-terminated. */
#define FW_HINTS_BYTES FW_MAX_LEN
/* Hints of a datagram that carry an address (FW_T_HINT_AT), at most: each
 * takes at least 10 bytes (item header, kind, an IPv4 address, a name). */
#define FW_WHERE_MAX 140
/* The GONE names of an ANNOUNCE, at most, and their bytes packed (each
 * NUL-terminated): a decoder keeps the first that fit and skips the rest. */
#define FW_GONE_MAX   8
#define FW_GONE_BYTES 512

enum fw_digest_flags {
	/* the sender's settle time had passed, and it counted its directory
	 * complete, when it sent it */
	FW_DIGEST_SETTLED = 1 << 0,
	FW_DIGEST_UNICAST = 1 << 1, /* sent to one node (an answer to a NEWCOMER) */
	FW_DIGEST_RANGES = 1 << 2,  /* the sender answers RANGE_QUERY */
	/* the sender's settle time had passed and its start-up burst was
	 * checked (it may still count itself incomplete) */
	FW_DIGEST_PAST_SETTLE = 1 << 3,
	/* the count and sum are of the hosts the sender heard on the fabric
	 * it sent this on (a host once, whichever of its endpoints), not of
	 * its whole directory: nodes of several rails compare each fabric */
	FW_DIGEST_FABRIC = 1 << 4,
	/* the sender saw a loss, or a digest that disagreed with its own,
	 * less than its hold ago: what it holds may lack what it lost, so its
	 * equal digest vouches for nothing. Daemons before it never set it */
	FW_DIGEST_DISTURBED = 1 << 5,
};

enum fw_range_flags {
	FW_RANGE_NAMES = 1 << 0, /* query: list the names in the range, not the sums */
	FW_RANGE_MORE = 1 << 1,  /* answer: more names than the datagram holds */
	/* query (with NAMES): the names in ascending digest term from lo on,
	 * each with where its host is reached (FW_T_HINT_AT); an answer that
	 * keeps the flag did so, and with MORE the rest starts after the last
	 * name's term. Daemons before it clear it in their answer. */
	FW_RANGE_WHERE = 1 << 2,
	/* answer: no multicast announce of the asker was heard here on that
	 * fabric (its NEWCOMER did not reach this node); daemons before it set
	 * it when the query was the first they heard of the asker, or never */
	FW_RANGE_ASKER_NEW = 1 << 3,
	/* query: count (or list) the hosts heard on the fabric the query
	 * arrives on (FW_DIGEST_FABRIC), not the whole directory; an answer
	 * that keeps the flag did so */
	FW_RANGE_FABRIC = 1 << 4,
	/* answer: over the answerer's rate limit, its DIGEST alone (no sums,
	 * no names): ask another peer. Daemons before it send nothing then */
	FW_RANGE_BUSY = 1 << 5,
};

/* Where a hinted host is reached on the port that heard the hint: its
 * address on the ip transport (the port number is the cluster's), its LID,
 * QPN and GID on InfiniBand. */
enum fw_where_kind {
	FW_WHERE_NONE = 0,
	FW_WHERE_IPV4 = 1, /* 4 bytes */
	FW_WHERE_IPV6 = 2, /* 16 bytes */
	FW_WHERE_IB = 3,   /* LID 2, QPN 4, GID 16 (big-endian) */
};

struct fw_where {
	uint8_t kind; /* enum fw_where_kind */
	uint8_t addr[16];
	uint16_t lid;
	uint32_t qpn;
};

/* A range of digest terms, lo..hi inclusive, in @parts equal parts. */
struct fw_range {
	uint64_t lo, hi;
	uint8_t parts; /* 1..FW_PARTS_MAX */
	uint8_t flags;
};

struct fw_sum {
	uint32_t hosts; /* saturated at UINT32_MAX */
	uint64_t sum;
};

/* What the sender's directory holds (core/hoststore.h, struct store_digest),
 * and how many multicast announces its endpoint sent since it started. */
struct fw_digest {
	uint32_t hosts; /* saturated at UINT32_MAX */
	uint8_t flags;
	uint64_t sum;
	uint32_t seq; /* 1 for the first; a unicast answer repeats the last one's */
};

struct fw_group {
	uint8_t mtu;
	uint8_t rate;
};

struct fw_msg {
	uint8_t type;
	uint16_t flags;
	uint64_t tid;
	struct ibres_hostrec sender;
	struct fw_group groups[FW_MAX_GROUPS];
	unsigned n_groups;
	bool has_target;
	struct host_key target;
	bool has_chosen;
	struct fw_group chosen;
	bool has_stamp;
	uint64_t stamp; /* wall-clock microseconds, strictly rising per sender */
	uint8_t rails[HOST_RAILS_MAX][16]; /* FW_T_RAILS; n_rails 0: a host alone */
	unsigned n_rails;
	bool has_digest;
	struct fw_digest digest;
	/* a NEWCOMER's: how long (ms, saturated) it has been listening and
	 * keeping what it hears, since its start or resync */
	bool has_up;
	uint32_t up_ms;
	bool has_range;
	struct fw_range range;
	struct fw_sum sums[FW_PARTS_MAX]; /* n_sums: 0, or range.parts */
	unsigned n_sums;
	char hints[FW_HINTS_BYTES]; /* n_hints names, each NUL-terminated */
	unsigned n_hints, hints_len;
	/* where[i]: hint i's host, for the first FW_WHERE_MAX hints (kind
	 * FW_WHERE_NONE: a plain FW_T_HINT) */
	struct fw_where where[FW_WHERE_MAX];
	/* an ANNOUNCE's: hosts whose GOODBYE the sender heard in its last
	 * announce rounds, n_gone names, each NUL-terminated */
	char gone[FW_GONE_BYTES];
	unsigned n_gone, gone_len;
};

/* Append name @name to @m's hints: 0, or -ENOSPC when the datagram could
 * not hold it (FW_HINTS_BYTES). */
int fw_hint_add(struct fw_msg *m, const char *name);
/* The same with where its host is reached (@w NULL or FW_WHERE_NONE: a
 * plain hint); -ENOSPC also past FW_WHERE_MAX hints. */
int fw_hint_add_at(struct fw_msg *m, const char *name, const struct fw_where *w);
/* Append name @name to @m's GONE names: 0, or -ENOSPC past FW_GONE_MAX
 * names or FW_GONE_BYTES. */
int fw_gone_add(struct fw_msg *m, const char *name);
/* The encoded length of @w (0 for FW_WHERE_NONE). */
size_t fw_where_len(const struct fw_where *w);

/* Why a datagram was dropped. */
enum fw_error {
	FW_OK = 0,
	FW_ERR_MALFORMED = -1, /* short, bad magic, bad length, bad item */
	FW_ERR_VERSION = -2,   /* another protocol version */
	FW_ERR_AUTH = -3,      /* HMAC missing, wrong, or present without a key */
};

/* Encode @m into @buf (FW_MAX_LEN bytes). With @key, an HMAC trailer is
 * added. Returns the length, or -ENOSPC. */
int fw_encode(const struct fw_msg *m, const uint8_t *key, size_t key_len, uint8_t *buf,
	      size_t cap);

/* Decode and check a datagram. With @key, only authenticated datagrams pass. */
enum fw_error fw_decode(const uint8_t *buf, size_t len, const uint8_t *key, size_t key_len,
			struct fw_msg *m);

#endif
