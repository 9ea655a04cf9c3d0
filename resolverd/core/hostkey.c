// SPDX-License-Identifier: MIT
/* Host store keys and their keyed hash (see hostkey.h). */
#include "core/hostkey.h"

#include <arpa/inet.h>
#include <endian.h>
#include <openssl/sha.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static char ascii_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* ---- SipHash-2-4 -------------------------------------------------------- */

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

/* A macro on the caller's locals: as a function taking pointers it was not
 * inlined, and hashing is on every cache look-up. */
#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = ROTL64(v1, 13);                                                               \
		v1 ^= v0;                                                                          \
		v0 = ROTL64(v0, 32);                                                               \
		v2 += v3;                                                                          \
		v3 = ROTL64(v3, 16);                                                               \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = ROTL64(v3, 21);                                                               \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = ROTL64(v1, 17);                                                               \
		v1 ^= v2;                                                                          \
		v2 = ROTL64(v2, 32);                                                               \
	} while (0)

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint64_t siphash24(const uint64_t key[2], const uint8_t *msg, size_t len)
{
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL;
	uint64_t v1 = key[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL;
	uint64_t v3 = key[1] ^ 0x7465646279746573ULL;
	size_t left = len & 7, i;
	const uint8_t *end = msg + (len - left);
	uint64_t m, b = (uint64_t)len << 56;

	for (; msg != end; msg += 8) {
		m = load_le64(msg);
		v3 ^= m;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (i = 0; i < left; i++)
		b |= (uint64_t)msg[i] << (8 * i);
	v3 ^= b;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void key_hasher_init(struct key_hasher *kh)
{
	struct timespec mono = {0}, real = {0};
	uint64_t x;

	/* GRND_NONBLOCK: never stall start-up on an early-boot entropy pool */
	if (getrandom(kh->seed, sizeof(kh->seed), GRND_NONBLOCK) == (ssize_t)sizeof(kh->seed))
		return;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	x = (uint64_t)mono.tv_sec * 1000000000ULL + (uint64_t)mono.tv_nsec;
	x ^= ((uint64_t)real.tv_sec << 30) ^ (uint64_t)real.tv_nsec;
	x ^= (uint64_t)getpid() << 40;
	x ^= (uint64_t)(uintptr_t)kh;
	kh->seed[0] = splitmix64(&x);
	kh->seed[1] = splitmix64(&x);
}

/* ---- keys ---------------------------------------------------------------- */

static unsigned key_type_len(uint8_t type)
{
	switch (type) {
	case IBRES_KEY_IPV4:
		return 4;
	case IBRES_KEY_IPV6:
	case IBRES_KEY_GID:
		return 16;
	case IBRES_KEY_LID:
		return 3; /* the LID, big-endian, then the fabric it is unique in */
	default:
		return 0;
	}
}

_Static_assert(HOST_KEY_MAX == UINT8_MAX, "struct host_key.len must cover every name length");

bool host_key_valid(const struct host_key *k)
{
	if (!k)
		return false;
	if (k->type == IBRES_KEY_NAME)
		return k->len > 0; /* and <= HOST_KEY_MAX: see the assertion below */
	return k->len && k->len == key_type_len(k->type);
}





int host_key_name(struct host_key *k, const char *name)
{
	size_t len, i;

	if (!k || !name)
		return -EINVAL;
	len = strnlen(name, HOST_KEY_MAX + 1);
	if (len == 0 || len > HOST_KEY_MAX)
		return -EINVAL;
	k->type = IBRES_KEY_NAME;
	k->len = (uint8_t)len;
	for (i = 0; i < len; i++)
		k->data[i] = (uint8_t)ascii_lower(name[i]);
	return 0;
}

int host_key_addr(struct host_key *k, uint8_t type, const void *addr)
{
	unsigned len = key_type_len(type);

	if (!k || !addr || !len || type == IBRES_KEY_LID)
		return -EINVAL;
	k->type = type;
	k->len = (uint8_t)len;
	memcpy(k->data, addr, len);
	return 0;
}

int host_key_lid(struct host_key *k, uint16_t lid, uint8_t fabric)
{
	if (!k || !lid)
		return -EINVAL;
	k->type = IBRES_KEY_LID;
	k->len = 3;
	k->data[0] = (uint8_t)(lid >> 8);
	k->data[1] = (uint8_t)lid;
	k->data[2] = fabric;
	return 0;
}

static void key_str_hex(const struct host_key *k, char *buf, size_t len)
{
	size_t off;
	unsigned i;
	int n;

	n = snprintf(buf, len, "key%u:", k->type);
	off = n < 0 ? 0 : (size_t)n;
	for (i = 0; i < k->len && off < len; i++) {
		n = snprintf(buf + off, len - off, "%02x", k->data[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

static void key_str_name(const struct host_key *k, char *buf, size_t len)
{
	size_t off = 0;
	unsigned i;
	int n;

	n = snprintf(buf, len, "name:");
	off = n < 0 ? 0 : (size_t)n;
	for (i = 0; i < k->len && off + 1 < len; i++) {
		uint8_t ch = k->data[i];

		if (ch > 0x20 && ch < 0x7f && ch != '\\') {
			buf[off++] = (char)ch;
			buf[off] = '\0';
			continue;
		}
		n = snprintf(buf + off, len - off, "\\x%02x", ch);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

const char *host_key_str(const struct host_key *k, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	if (!buf || !len)
		return buf;
	buf[0] = '\0';
	if (!k)
		return buf;
	if (!host_key_valid(k)) {
		key_str_hex(k, buf, len);
		return buf;
	}
	switch (k->type) {
	case IBRES_KEY_NAME:
		key_str_name(k, buf, len);
		break;
	case IBRES_KEY_IPV4:
		inet_ntop(AF_INET, k->data, addr, sizeof(addr));
		snprintf(buf, len, "ipv4:%s", addr);
		break;
	case IBRES_KEY_IPV6:
		inet_ntop(AF_INET6, k->data, addr, sizeof(addr));
		snprintf(buf, len, "ipv6:%s", addr);
		break;
	case IBRES_KEY_GID:
		inet_ntop(AF_INET6, k->data, addr, sizeof(addr));
		snprintf(buf, len, "gid:%s", addr);
		break;
	case IBRES_KEY_LID:
		if (k->data[2] == HOST_FABRIC_NONE)
			snprintf(buf, len, "lid:%u", (unsigned)k->data[0] << 8 | k->data[1]);
		else
			snprintf(buf, len, "lid:%u@%u", (unsigned)k->data[0] << 8 | k->data[1],
				 k->data[2]);
		break;
	}
	return buf;
}


uint64_t key_hasher_bytes(const struct key_hasher *kh, const void *buf, size_t len)
{
	return siphash24(kh->seed, buf, len);
}

uint64_t host_digest_term(const struct host_key *name)
{
	/* "nss-ib-d", "igest v1": a protocol constant, not a secret (the
	 * digest is a hint; see doc/fabric-protocol.md) */
	static const uint64_t key[2] = {0x6e73732d69622d64ULL, 0x6967657374207631ULL};

	return siphash24(key, name->data, name->len);
}

uint64_t host_key_hash(const struct key_hasher *kh, const struct host_key *k)
{
	uint8_t msg[2 + HOST_KEY_MAX];

	msg[0] = k->type;
	msg[1] = k->len;
	memcpy(msg + 2, k->data, k->len);
	return siphash24(kh->seed, msg, 2 + (size_t)k->len);
}

unsigned host_keys_of(const struct ibres_hostrec *h, uint8_t fabric,
		      struct host_key keys[HOST_KEYS_MAX])
{
	unsigned n = 0, i;

	for (i = 0; i < h->n_names && i < IBRES_HOST_NAMES_MAX; i++)
		if (host_key_name(&keys[n], h->names[i]) == 0)
			n++;
	for (i = 0; i < h->n_v4 && i < IBRES_HOST_ADDRS_MAX; i++)
		host_key_addr(&keys[n++], IBRES_KEY_IPV4, &h->v4[i]);
	for (i = 0; i < h->n_v6 && i < IBRES_HOST_ADDRS_MAX; i++)
		host_key_addr(&keys[n++], IBRES_KEY_IPV6, &h->v6[i]);
	for (i = 0; i < h->n_gids && i < IBRES_HOST_GIDS_MAX; i++)
		host_key_addr(&keys[n++], IBRES_KEY_GID, h->gids[i]);
	if (h->lid && host_key_lid(&keys[n], h->lid, fabric) == 0)
		n++;
	return n;
}

uint64_t rails_digest(const uint8_t (*gids)[16], unsigned n)
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	uint64_t d = 0;

	SHA256((const uint8_t *)gids, (size_t)n * 16, md);
	for (unsigned i = 0; i < 8; i++)
		d = d << 8 | md[i];
	return d ? d : 1;
}

bool rails_sorted(const uint8_t (*gids)[16], unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		if (memcmp(gids[i - 1], gids[i], 16) >= 0)
			return false;
	return true;
}
