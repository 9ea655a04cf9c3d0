/* SPDX-License-Identifier: MIT */
/*
 * Look-up keys of the host store: a host name (lower-cased), an IPv4 or IPv6
 * address, a GID or a LID; and the keyed hash every table of the daemon uses
 * for them (SipHash-2-4 under a random per-table key, so that names chosen by
 * a hostile peer cannot force long chains).
 */
#ifndef IBRESD_HOSTKEY_H
#define IBRESD_HOSTKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostrec.h"
#include "ibres_proto.h"

#define HOST_KEY_MAX IBRES_NAME_MAX
/* A buffer this big always holds host_key_str() untruncated (a name with
 * every byte escaped as \xNN, plus the type prefix). */
#define HOST_KEY_STR_MAX (8 + 4 * HOST_KEY_MAX)

struct host_key {
	uint8_t type; /* enum ibres_key_type */
	uint8_t len;
	uint8_t data[HOST_KEY_MAX];
};

/* Build a key; names are lower-cased (ASCII). -EINVAL for an empty or too
 * long key, an unknown address type, or LID 0. LIDs are stored big-endian,
 * followed by their fabric: a LID is unique only within one subnet (planes
 * each number theirs from 1), so its key names the local endpoint index the
 * host was first heard on, or HOST_FABRIC_NONE (a static host). */
#define HOST_FABRIC_NONE 0xff
int host_key_name(struct host_key *k, const char *name);
int host_key_addr(struct host_key *k, uint8_t type, const void *addr); /* IPV4/IPV6/GID */
int host_key_lid(struct host_key *k, uint16_t lid, uint8_t fabric);
/* A key of a known type and the right length (a name: 1..HOST_KEY_MAX). */
bool host_key_valid(const struct host_key *k);
static inline bool host_key_eq(const struct host_key *a, const struct host_key *b)
{
	return a->type == b->type && a->len == b->len && !__builtin_memcmp(a->data, b->data, a->len);
}
/* "name:node1", "ipv4:198.18.0.1", "ipv6:2001:db8::1", "gid:fe80::1", "lid:5"
 * ("lid:5@2" on fabric 2)
 * into buf (always NUL-terminated when len > 0, truncated if too small; see
 * HOST_KEY_STR_MAX). Name bytes outside printable ASCII and '\' appear as
 * \xNN. A malformed key prints as "key<type>:<hex bytes>". Returns buf. */
const char *host_key_str(const struct host_key *k, char *buf, size_t len);

/* Keys of one host record: every name, IPv4, IPv6 and GID, and the LID. */
#define HOST_KEYS_MAX (IBRES_HOST_NAMES_MAX + 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_GIDS_MAX + 1)
/* Every key of @h (names, IPv4, IPv6, GIDs, the LID on @fabric if nonzero),
 * skipping malformed names. Returns how many. */
unsigned host_keys_of(const struct ibres_hostrec *h, uint8_t fabric,
		      struct host_key keys[HOST_KEYS_MAX]);

/* The most endpoints a host has: 8 rails x 4 partitions. */
#define HOST_RAILS_MAX 32
/* The rails digest of a host: the first 8 bytes of SHA-256 over the GIDs of
 * all its endpoints (@n of them, ascending and distinct), never 0. Every
 * endpoint announces the list; a new endpoint joins a known host only when
 * the host's digest is its list's, so a forged port cannot join a host whose
 * real endpoints never named it. */
uint64_t rails_digest(const uint8_t (*gids)[16], unsigned n);
/* Are the @n GIDs at @gids ascending and distinct (a rails list's order)? */
bool rails_sorted(const uint8_t (*gids)[16], unsigned n);

/* The directory digest's term for a host (doc/fabric-protocol.md, DIGEST):
 * SipHash-2-4 under a fixed protocol key of @name, its canonical name as a
 * NAME key (ASCII lower case). Every node computes the same term, so that
 * sums of them compare across nodes. */
uint64_t host_digest_term(const struct host_key *name);

/* A random SipHash key (getrandom, without blocking on an early-boot pool). */
struct key_hasher {
	uint64_t seed[2];
};
void key_hasher_init(struct key_hasher *kh);
/* Hash of (type, len, data). */
uint64_t host_key_hash(const struct key_hasher *kh, const struct host_key *k);
/* The same for raw bytes (identity keys and the like). */
uint64_t key_hasher_bytes(const struct key_hasher *kh, const void *buf, size_t len);

#endif
