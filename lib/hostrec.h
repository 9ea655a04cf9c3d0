/* SPDX-License-Identifier: MIT */
/* A host record: everything nss-ib knows of one node's identity. The daemon
 * keeps these in its cache; the HOST extension opcode carries them as TLV
 * items; libibres and libnss_ib decode them. */
#ifndef IBRES_HOSTREC_H
#define IBRES_HOSTREC_H

/* A function on the hit path of a lookup from the shared directory: the
 * compiler groups them (.text.hot), so a hit touches one or two pages of
 * code. After each system call of glibc's own (its resolv.conf check) the
 * TLB is cold (page-table isolation), and every page a hit touches costs a
 * page walk. */
#define IBRES_HOT __attribute__((hot))

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "ibres_proto.h"
#include "tlv.h"

/* Are P_Keys @a and @b one partition (the membership bit 0x8000 aside)? */
static inline bool hostrec_same_partition(uint16_t a, uint16_t b)
{
	return !((a ^ b) & 0x7fff);
}

struct ibres_hostrec {
	char names[IBRES_HOST_NAMES_MAX][IBRES_NAME_MAX + 1]; /* [0] canonical */
	unsigned n_names;
	struct in_addr v4[IBRES_HOST_ADDRS_MAX];
	unsigned n_v4;
	struct in6_addr v6[IBRES_HOST_ADDRS_MAX];
	unsigned n_v6;
	uint8_t gids[IBRES_HOST_GIDS_MAX][16]; /* [0] is the port GID paths use */
	unsigned n_gids;
	uint16_t lid;
	uint32_t qpn;
	uint16_t pkey;
	uint32_t ttl; /* seconds the answer stays valid; 0 = unknown */
};

/* The endpoints a merged record's names and addresses came from (bit e: the
 * host's e-th endpoint, at most 32): a key of one endpoint (a rail's alias or
 * address) answers with what that endpoint holds, the host's name with all.
 * Filled by the daemon where it merges a host's endpoints, carried in the
 * shared directory's records (lib/hostdir.h). */
#define HOSTREC_EPS_MAX 32u
struct hostrec_eps {
	uint32_t names[IBRES_HOST_NAMES_MAX];
	uint32_t gids[IBRES_HOST_GIDS_MAX];
	uint32_t v6[IBRES_HOST_ADDRS_MAX];
	uint32_t v4[IBRES_HOST_ADDRS_MAX];
	/* each endpoint's own QPN, LID and P_Key (the record's are the first's) */
	struct hostrec_ep {
		uint32_t qpn;
		uint16_t lid, pkey;
	} ep[HOSTREC_EPS_MAX];
	unsigned n_ep; /* 1..HOSTREC_EPS_MAX */
};

/* Append the record's items (NAME, ALIAS…, IPV4…, IPV6…, GID…, LID, QPN,
 * PKEY, TTL) to @w. 0 or -ENOSPC. */
int hostrec_encode(struct tlv_writer *w, const struct ibres_hostrec *h);

/* Fill @h from a sequence of items; unknown item types are skipped so that
 * newer daemons can add items. 0, or -EBADMSG on a malformed or over-limit
 * item, a name hostrec_name_ok() refuses, or no name: whatever passes is a
 * record hostrec_check() accepts. */
int hostrec_decode(const void *buf, size_t len, struct ibres_hostrec *h);

/* Is the name (@len bytes at @name, not NUL-terminated) one the daemon can
 * hold: 1..IBRES_NAME_MAX bytes of labels of 1..63 letters, digits and
 * hyphens (none at a label's either end), dot-separated, with a letter
 * somewhere (a name of digits and dots reads as an address)? The same rule
 * as the daemon's configuration and static hosts (cfg_valid_hostname()), so
 * that a reader refuses what the daemon never writes. 1 or 0. */
int hostrec_name_ok(const void *name, size_t len);

/* Is @h a record the daemon can write: 1..IBRES_HOST_NAMES_MAX names, each
 * NUL-terminated inside its array and hostrec_name_ok(), and every other
 * count within its array? Every consumer checks a record with this before
 * it indexes names or addresses by its counts (names[n_names - 1] with
 * n_names 0 is 8 bytes 32 GiB away). 0 or -EBADMSG. */
int hostrec_check(const struct ibres_hostrec *h);

/* The key item type for an address of family @af (AF_INET, AF_INET6, or
 * AF_IB for a GID) and length @len: 0, -EAFNOSUPPORT, or -EINVAL when the
 * length does not fit the family. */
int hostrec_addr_type(int af, size_t len, uint16_t *type);

/* Case-insensitive name match against every name of @h. */
int hostrec_has_name(const struct ibres_hostrec *h, const char *name);

/* Do @a and @b list the same IPv4 and IPv6 addresses, in the same order? */
int hostrec_same_addrs(const struct ibres_hostrec *a, const struct ibres_hostrec *b);

/* Does @h own the key (@type, @data, @len): one of its names (@data is the
 * name, compared without regard to ASCII case, not NUL-terminated), IPv4,
 * IPv6 addresses, GIDs, or its LID (@data big-endian, 2 bytes, or 3 with
 * the daemon's fabric byte, which a record does not know and is not compared)? The one
 * copy of this rule for the daemon's store, its fabric protocol and its
 * endpoints. 1 or 0; 0 for an unknown type or a length that does not fit. */
int hostrec_has_key(const struct ibres_hostrec *h, uint8_t type, const void *data, size_t len);

/* Are the @n bytes at @a and @b the same name, without regard to ASCII
 * case (the one rule for comparing host names)? 1 or 0. */
int hostrec_name_eq(const void *a, const void *b, size_t n);

/* Is @name one of the cluster's: does it match one of the @n fnmatch(3)
 * patterns at @patterns (each NUL-terminated, @stride bytes apart), without
 * regard to case? Every name is when @n is 0. 1 or 0. */
int hostrec_name_in_patterns(const char *name, const char *patterns, size_t stride, unsigned n);

/* A host answer's TTL: the seconds from @now_ms until @expires_ms, rounded
 * up; HOSTREC_TTL_NEVER when it never expires (@expires_ms UINT64_MAX). */
#define HOSTREC_TTL_NEVER UINT32_MAX
uint32_t hostrec_ttl_left(uint64_t expires_ms, uint64_t now_ms);

#endif
