// SPDX-License-Identifier: MIT
/* resolverd/fabric/fabric_wire.c: round trips and every reason to drop a datagram. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>

#include "fabric/fabric_wire.h"

static const uint8_t KEY[] = "0123456789abcdef-cluster-key";

static void sample(struct fw_msg *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->tid = 0x1122334455667788ULL;
	strcpy(m->sender.names[0], "node1");
	strcpy(m->sender.names[1], "node1.cluster");
	m->sender.n_names = 2;
	inet_pton(AF_INET, "198.18.0.1", &m->sender.v4[0]);
	m->sender.n_v4 = 1;
	inet_pton(AF_INET6, "2001:db8::1", &m->sender.v6[0]);
	m->sender.n_v6 = 1;
	inet_pton(AF_INET6, "fe80::2:c903:0:1", m->sender.gids[0]);
	m->sender.n_gids = 1;
	m->sender.lid = 1;
	m->sender.qpn = 0x48;
	m->sender.pkey = 0xffff;
	m->sender.ttl = 3600;
	m->groups[0] = (struct fw_group){ 4, 3 };
	m->groups[1] = (struct fw_group){ 5, 16 };
	m->n_groups = 2;
	if (type == FW_REQUEST) {
		m->has_target = true;
		host_key_name(&m->target, "node2");
	}
	if (type == FW_REPLY) {
		m->has_chosen = true;
		m->chosen = (struct fw_group){ 5, 16 };
	}
}

static void roundtrip(const uint8_t *key, size_t key_len)
{
	static const uint8_t types[] = { FW_REQUEST, FW_REPLY, FW_ANNOUNCE, FW_GOODBYE };
	uint8_t buf[FW_MAX_LEN];

	for (unsigned i = 0; i < sizeof(types); i++) {
		struct fw_msg m, out;
		int len;

		sample(&m, types[i]);
		/* what a node with a key sends: a freshness stamp */
		m.has_stamp = key != NULL;
		m.stamp = key ? 0x0006543210fedcbaULL + i : 0;
		/* the sender's flags are kept beside the HMAC's */
		m.flags = FW_FLAG_SAYS_ANNOUNCES | FW_FLAG_ANNOUNCES |
			  (types[i] == FW_ANNOUNCE ? FW_FLAG_NEWCOMER : 0);
		len = fw_encode(&m, key, key_len, buf, sizeof(buf));
		assert_true(len > FW_HDR_LEN);
		assert_int_equal(fw_decode(buf, (size_t)len, key, key_len, &out), FW_OK);
		assert_int_equal(out.type, m.type);
		assert_int_equal(out.flags, m.flags | (key ? FW_FLAG_HMAC : 0));
		assert_true(out.tid == m.tid);
		assert_string_equal(out.sender.names[1], "node1.cluster");
		assert_memory_equal(out.sender.gids[0], m.sender.gids[0], 16);
		assert_int_equal(out.sender.lid, 1);
		assert_int_equal(out.sender.ttl, 3600);
		assert_int_equal(out.n_groups, 2);
		assert_int_equal(out.groups[1].rate, 16);
		assert_int_equal(out.has_target, m.has_target);
		if (m.has_target)
			assert_memory_equal(&out.target, &m.target, 2 + m.target.len);
		assert_int_equal(out.has_chosen, m.has_chosen);
		assert_int_equal(out.has_stamp, m.has_stamp);
		assert_true(out.stamp == m.stamp);
	}
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip(NULL, 0);
	roundtrip(KEY, sizeof(KEY) - 1);
}

static void test_target_kinds(void **state)
{
	uint8_t buf[FW_MAX_LEN], addr[16] = { 0xfe, 0x80, 1 };
	struct fw_msg m, out;
	uint8_t types[] = { IBRES_KEY_IPV4, IBRES_KEY_IPV6, IBRES_KEY_GID };
	int len;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		sample(&m, FW_REQUEST);
		host_key_addr(&m.target, types[i], addr);
		len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
		assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
		assert_int_equal(out.target.type, types[i]);
		assert_memory_equal(out.target.data, m.target.data, m.target.len);
	}
}

static int encode(uint8_t type, uint8_t *buf)
{
	struct fw_msg m;

	sample(&m, type);
	return fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
}

static void test_drops(void **state)
{
	uint8_t buf[FW_MAX_LEN + 100];
	struct fw_msg out;
	int len;

	(void)state;
	len = encode(FW_REQUEST, buf);
	/* every truncation */
	for (int l = 0; l < len; l++)
		assert_int_equal(fw_decode(buf, (size_t)l, NULL, 0, &out), FW_ERR_MALFORMED);
	/* bad magic */
	buf[0] ^= 1;
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	buf[0] ^= 1;
	/* other version */
	buf[4] = 2;
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_VERSION);
	buf[4] = FW_VERSION;
	/* unknown type */
	buf[5] = 9;
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	buf[5] = FW_REQUEST;
	/* length field disagrees with the datagram */
	assert_int_equal(fw_decode(buf, (size_t)len + 1, NULL, 0, &out), FW_ERR_MALFORMED);
	/* oversize */
	memset(buf + len, 0, sizeof(buf) - (size_t)len);
	buf[16] = (FW_MAX_LEN + 1) >> 8;
	buf[17] = (FW_MAX_LEN + 1) & 0xff;
	assert_int_equal(fw_decode(buf, FW_MAX_LEN + 1, NULL, 0, &out), FW_ERR_MALFORMED);

	/* a REQUEST without a target, a REPLY without a chosen group */
	{
		struct fw_msg m;

		sample(&m, FW_REQUEST);
		m.has_target = false;
		len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
		assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
		sample(&m, FW_REPLY);
		m.has_chosen = false;
		len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
		assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
		/* no GID: no identity */
		sample(&m, FW_ANNOUNCE);
		m.sender.n_gids = 0;
		len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
		assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	}
}

static void test_item_overrun(void **state)
{
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg out;
	int len = encode(FW_ANNOUNCE, buf);

	(void)state;
	/* first item's length points past the end */
	buf[FW_HDR_LEN + 2] = 0xff;
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
}

static void test_hmac(void **state)
{
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m, out;
	int len;

	(void)state;
	sample(&m, FW_ANNOUNCE);
	len = fw_encode(&m, KEY, sizeof(KEY) - 1, buf, sizeof(buf));
	assert_int_equal(fw_decode(buf, (size_t)len, KEY, sizeof(KEY) - 1, &out), FW_OK);
	/* wrong key */
	assert_int_equal(fw_decode(buf, (size_t)len, (const uint8_t *)"another-key-0123", 16, &out),
			 FW_ERR_AUTH);
	/* signed, but we have no key: cannot check, do not trust */
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_AUTH);
	/* any flipped bit */
	for (int i = 0; i < len; i++) {
		if (i == 16 || i == 17 || i == 6 || i == 7 || i == 4)
			continue; /* length, flags, version: other checks first */
		buf[i] ^= 0x40;
		assert_int_not_equal(fw_decode(buf, (size_t)len, KEY, sizeof(KEY) - 1, &out),
				     FW_OK);
		buf[i] ^= 0x40;
	}
	/* unsigned datagram when a key is configured */
	len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
	assert_int_equal(fw_decode(buf, (size_t)len, KEY, sizeof(KEY) - 1, &out), FW_ERR_AUTH);
}

static void test_encode_limits(void **state)
{
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m;

	(void)state;
	sample(&m, FW_ANNOUNCE);
	assert_int_equal(fw_encode(&m, NULL, 0, buf, 30), -ENOSPC);
	/* a maximal endpoint, of an 8-rail host, still fits one datagram */
	m.sender.n_names = IBRES_EP_NAMES_MAX;
	for (unsigned i = 0; i < IBRES_EP_NAMES_MAX; i++) {
		memset(m.sender.names[i], 'a', 80);
		m.sender.names[i][80] = '\0';
	}
	m.sender.n_v4 = m.sender.n_v6 = IBRES_EP_ADDRS_MAX;
	m.sender.n_gids = IBRES_EP_GIDS_MAX;
	m.n_rails = 8;
	for (unsigned i = 0; i < m.n_rails; i++)
		m.rails[i][15] = (uint8_t)i;
	m.has_stamp = true;
	m.stamp = ~0ULL;
	/* and the directory digest every ANNOUNCE carries */
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = ~0u, .flags = 0xff, .sum = ~0ULL, .seq = ~0u};
	assert_true(fw_encode(&m, KEY, sizeof(KEY) - 1, buf, sizeof(buf)) > 0);
}

/* Rewrite the length of the last item of a datagram of @len bytes (no HMAC)
 * from @from to @to bytes, as a sender of another version would: the
 * datagram's length follows. Returns the new length. */
static size_t resize_last_item(uint8_t *buf, size_t len, unsigned from, unsigned to)
{
	size_t at = len - from - 4; /* the item's header */

	memset(buf + at + 4 + from, 0xee, to > from ? to - from : 0);
	buf[at + 2] = (uint8_t)(to >> 8);
	buf[at + 3] = (uint8_t)to;
	len = len - from + to;
	buf[16] = (uint8_t)(len >> 8);
	buf[17] = (uint8_t)len;
	return len;
}

/* The DIGEST item (0x106): 20 bytes, count, flags, sum, announce number;
 * at most once; a longer one (a later version's) is read as far as known,
 * a shorter one is malformed. */
static void test_digest_item(void **state)
{
	uint8_t buf[FW_MAX_LEN + 8];
	struct fw_msg m, out;
	int len;

	(void)state;
	sample(&m, FW_ANNOUNCE);
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 0x01020304,
				      .flags = FW_DIGEST_SETTLED | FW_DIGEST_UNICAST,
				      .sum = 0x1122334455667788ULL,
				      .seq = 0x0a0b0c0d};
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_true(len > 24);
	/* the last item: type 0x106, length 20, big-endian fields, 3 bytes 0 */
	assert_int_equal(buf[len - 24], 0x01);
	assert_int_equal(buf[len - 23], 0x06);
	assert_int_equal(buf[len - 21], 20);
	assert_int_equal(buf[len - 20], 0x01);
	assert_int_equal(buf[len - 16], FW_DIGEST_SETTLED | FW_DIGEST_UNICAST);
	assert_int_equal(buf[len - 15] | buf[len - 14] | buf[len - 13], 0);
	assert_int_equal(buf[len - 12], 0x11);
	assert_int_equal(buf[len - 4], 0x0a);
	assert_int_equal(buf[len - 1], 0x0d);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_true(out.has_digest);
	assert_memory_equal(&out.digest, &m.digest, sizeof(m.digest));

	/* longer: the known fields are read, the rest skipped */
	len = (int)resize_last_item(buf, (size_t)len, 20, 28);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_true(out.has_digest && out.digest.sum == m.digest.sum &&
		    out.digest.seq == m.digest.seq);
	/* shorter: malformed */
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	len = (int)resize_last_item(buf, (size_t)len, 20, 19);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	/* twice: malformed */
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	memcpy(buf + len, buf + len - 24, 24);
	buf[16] = (uint8_t)((len + 24) >> 8);
	buf[17] = (uint8_t)(len + 24);
	assert_int_equal(fw_decode(buf, (size_t)len + 24, NULL, 0, &out), FW_ERR_MALFORMED);
	/* without it (a daemon before the digest): no digest */
	m.has_digest = false;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_false(out.has_digest);
}

/* The stamp item: 8 bytes, at most once. */
static void test_stamp_item(void **state)
{
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m, out;
	int len;

	(void)state;
	sample(&m, FW_GOODBYE);
	m.has_stamp = true;
	m.stamp = 0x0102030405060708ULL;
	len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
	assert_true(len > 12);
	/* the stamp is the last item: type 0x104, length 8, the value big-endian */
	assert_int_equal(buf[len - 12], 0x01);
	assert_int_equal(buf[len - 11], 0x04);
	assert_int_equal(buf[len - 9], 8);
	assert_int_equal(buf[len - 8], 0x01);
	assert_int_equal(buf[len - 1], 0x08);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_true(out.has_stamp && out.stamp == m.stamp);

	/* twice: malformed */
	memcpy(buf + len, buf + len - 12, 12);
	buf[16] = (uint8_t)((len + 12) >> 8);
	buf[17] = (uint8_t)(len + 12);
	assert_int_equal(fw_decode(buf, (size_t)len + 12, NULL, 0, &out), FW_ERR_MALFORMED);
	/* 7 bytes long: malformed */
	len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
	buf[len - 9] = 7;
	buf[16] = (uint8_t)((len - 1) >> 8);
	buf[17] = (uint8_t)(len - 1);
	assert_int_equal(fw_decode(buf, (size_t)len - 1, NULL, 0, &out), FW_ERR_MALFORMED);
}

/* A range query and its answer (0x107 RANGE, 0x108 SUMS, 0x109 HINT):
 * round trips with and without a key, the bytes of RANGE, and every reason
 * to drop one. */
static int range_msg(struct fw_msg *m, uint8_t type, uint8_t *buf, const uint8_t *key,
		     size_t key_len)
{
	sample(m, type);
	m->has_range = true;
	m->range = (struct fw_range){.lo = 0x0102030405060708ULL, .hi = 0xf0f0f0f0f0f0f0f0ULL,
				     .parts = 16, .flags = 0};
	if (type == FW_RANGE_ANSWER) {
		m->has_digest = true;
		m->digest = (struct fw_digest){.hosts = 3, .flags = FW_DIGEST_UNICAST |
								   FW_DIGEST_RANGES,
					       .sum = 77, .seq = 5};
		m->n_sums = 16;
		for (unsigned i = 0; i < 16; i++)
			m->sums[i] = (struct fw_sum){.hosts = i, .sum = 0x1000000000ULL * i + 1};
	}
	return fw_encode(m, key, key_len, buf, FW_MAX_LEN);
}

static void test_range_items(void **state)
{
	uint8_t buf[FW_MAX_LEN + 8];
	struct fw_msg m, out;
	int len;

	(void)state;
	for (int keyed = 0; keyed < 2; keyed++) {
		const uint8_t *key = keyed ? KEY : NULL;
		size_t kl = keyed ? sizeof(KEY) - 1 : 0;

		len = range_msg(&m, FW_RANGE_QUERY, buf, key, kl);
		assert_true(len > 0);
		assert_int_equal(fw_decode(buf, (size_t)len, key, kl, &out), FW_OK);
		assert_int_equal(out.type, FW_RANGE_QUERY);
		assert_true(out.has_range);
		assert_memory_equal(&out.range, &m.range, sizeof(m.range));
		len = range_msg(&m, FW_RANGE_ANSWER, buf, key, kl);
		assert_int_equal(fw_decode(buf, (size_t)len, key, kl, &out), FW_OK);
		assert_int_equal(out.n_sums, 16);
		assert_memory_equal(out.sums, m.sums, sizeof(m.sums));
		assert_true(out.has_digest && out.digest.flags == m.digest.flags);
	}
	/* a query's RANGE is its last item: lo, hi, parts, flags, 2 bytes 0 */
	len = range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
	assert_int_equal(buf[len - 24], 0x01);
	assert_int_equal(buf[len - 23], 0x07);
	assert_int_equal(buf[len - 21], 20);
	assert_int_equal(buf[len - 20], 0x01);
	assert_int_equal(buf[len - 13], 0x08);
	assert_int_equal(buf[len - 12], 0xf0);
	assert_int_equal(buf[len - 4], 16);
	assert_int_equal(buf[len - 3], 0);
	assert_int_equal(buf[len - 2] | buf[len - 1], 0);
	/* longer (a later version's): read as far as known; shorter: malformed */
	len = (int)resize_last_item(buf, (size_t)len, 20, 26);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_true(out.range.hi == m.range.hi && out.range.parts == 16);
	len = range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
	len = (int)resize_last_item(buf, (size_t)len, 20, 19);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	/* twice */
	len = range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
	memcpy(buf + len, buf + len - 24, 24);
	buf[16] = (uint8_t)((len + 24) >> 8);
	buf[17] = (uint8_t)(len + 24);
	assert_int_equal(fw_decode(buf, (size_t)len + 24, NULL, 0, &out), FW_ERR_MALFORMED);
	/* lo above hi; 0 or 17 parts; none at all */
	range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
	m.range.lo = m.range.hi + 1;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	for (unsigned parts = 0; parts <= 17; parts += 17) {
		range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
		m.range.parts = (uint8_t)parts;
		len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
		assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	}
	range_msg(&m, FW_RANGE_QUERY, buf, NULL, 0);
	m.has_range = false;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	/* an answer without the sender's digest, or with sums for fewer parts */
	range_msg(&m, FW_RANGE_ANSWER, buf, NULL, 0);
	m.has_digest = false;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	range_msg(&m, FW_RANGE_ANSWER, buf, NULL, 0);
	m.n_sums = 15;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
}

/* A list of names @add appends to (its packed length at @used_off in struct
 * fw_msg): it holds at most @bytes of 255-byte names; as the last item of
 * an ANNOUNCE, a name emptied or with a NUL inside is malformed. */
static void check_name_list(int (*add)(struct fw_msg *, const char *), size_t used_off,
			    size_t bytes)
{
	uint8_t buf[FW_MAX_LEN + 8];
	char longname[IBRES_NAME_MAX + 1];
	struct fw_msg m, out;
	unsigned used;
	int len;

	sample(&m, FW_ANNOUNCE);
	memset(longname, 'a', IBRES_NAME_MAX);
	longname[IBRES_NAME_MAX] = '\0';
	while (add(&m, longname) == 0)
		;
	memcpy(&used, (const char *)&m + used_off, sizeof(used));
	assert_true(used <= bytes);
	assert_true(used + IBRES_NAME_MAX + 1 > bytes);
	sample(&m, FW_ANNOUNCE);
	assert_int_equal(add(&m, "node7"), 0);
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	buf[len - 3] = '\0';
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	len = (int)resize_last_item(buf, (size_t)len, 5, 0);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
}

static void test_hint_items(void **state)
{
	uint8_t buf[FW_MAX_LEN + 8];
	char longname[IBRES_NAME_MAX + 2];
	struct fw_msg m, out;
	int len;

	(void)state;
	range_msg(&m, FW_RANGE_ANSWER, buf, NULL, 0);
	m.n_sums = 0;
	m.range.parts = 1;
	m.range.flags = FW_RANGE_NAMES | FW_RANGE_MORE;
	assert_int_equal(fw_hint_add(&m, "node7"), 0);
	assert_int_equal(fw_hint_add(&m, "gpu-a12.cluster"), 0);
	assert_int_equal(fw_hint_add(&m, ""), -ENOSPC);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(fw_hint_add(&m, longname), -ENOSPC); /* 256 bytes: too long */
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(out.n_hints, 2);
	assert_string_equal(out.hints, "node7");
	assert_string_equal(out.hints + 6, "gpu-a12.cluster");
	assert_int_equal(out.range.flags, FW_RANGE_NAMES | FW_RANGE_MORE);
	check_name_list(fw_hint_add, offsetof(struct fw_msg, hints_len), FW_HINTS_BYTES);
	/* so many that the names would not fit the decoder's room: impossible
	 * in one datagram (FW_HINTS_BYTES is the datagram's length) */
	static_assert(FW_HINTS_BYTES >= FW_MAX_LEN, "every name a datagram holds fits");
}

/* GONE names (an ANNOUNCE's): they round-trip; an empty or too long name
 * is refused; at most FW_GONE_MAX and FW_GONE_BYTES are kept, and a
 * decoder skips the ones past that (a later version may send more); an
 * empty name or one with a NUL inside is malformed. */
static void test_gone_items(void **state)
{
	uint8_t buf[FW_MAX_LEN + 8];
	char longname[IBRES_NAME_MAX + 2], name[8];
	struct fw_msg m, out;
	int len;

	(void)state;
	sample(&m, FW_ANNOUNCE);
	assert_int_equal(fw_gone_add(&m, "node2"), 0);
	assert_int_equal(fw_gone_add(&m, "gpu-a12.cluster"), 0);
	assert_int_equal(fw_gone_add(&m, ""), -ENOSPC);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(fw_gone_add(&m, longname), -ENOSPC); /* 256 bytes: too long */
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_true(len > 0);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(out.n_gone, 2);
	assert_string_equal(out.gone, "node2");
	assert_string_equal(out.gone + 6, "gpu-a12.cluster");
	assert_int_equal(out.n_hints, 0);
	/* the bounds: names, then bytes */
	sample(&m, FW_ANNOUNCE);
	for (unsigned i = 0; i < FW_GONE_MAX; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		assert_int_equal(fw_gone_add(&m, name), 0);
	}
	assert_int_equal(fw_gone_add(&m, "n9"), -ENOSPC);
	check_name_list(fw_gone_add, offsetof(struct fw_msg, gone_len), FW_GONE_BYTES);
	/* a datagram with more than a decoder keeps: the first FW_GONE_MAX */
	sample(&m, FW_ANNOUNCE);
	for (unsigned i = 0; i < FW_GONE_MAX + 2; i++)
		m.gone_len += (unsigned)snprintf(m.gone + m.gone_len, 8, "n%u", i) + 1;
	m.n_gone = FW_GONE_MAX + 2;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(out.n_gone, FW_GONE_MAX);
	assert_string_equal(out.gone, "n0");
}

/* A hint with where its host is reached: each kind round-trips, a plain
 * hint beside it stays plain; an unknown kind, an address cut short, a
 * name missing or with a NUL inside: malformed; past FW_WHERE_MAX refused. */
static void test_hint_at_items(void **state)
{
	const struct fw_where v4 = {.kind = FW_WHERE_IPV4, .addr = {198, 18, 0, 7}};
	const struct fw_where v6 = {.kind = FW_WHERE_IPV6, .addr = {0x20, 0x01, 0x0d, 0xb8, [15] = 9}};
	const struct fw_where ib = {
		.kind = FW_WHERE_IB, .lid = 0x1234, .qpn = 0xabcdef, .addr = {0xfe, 0x80, [15] = 3}};
	const struct fw_where bad = {.kind = 9};
	uint8_t buf[FW_MAX_LEN + 8];
	struct fw_msg m, out;
	int len;

	(void)state;
	range_msg(&m, FW_RANGE_ANSWER, buf, NULL, 0);
	m.n_sums = 0;
	m.range.parts = 1;
	m.range.flags = FW_RANGE_NAMES | FW_RANGE_WHERE | FW_RANGE_MORE;
	assert_int_equal(fw_hint_add_at(&m, "node7", &v4), 0);
	assert_int_equal(fw_hint_add_at(&m, "node8", &v6), 0);
	assert_int_equal(fw_hint_add(&m, "node9"), 0);
	assert_int_equal(fw_hint_add_at(&m, "node10", &ib), 0);
	assert_int_equal(fw_hint_add_at(&m, "node11", &bad), -ENOSPC);
	assert_int_equal(m.n_hints, 4);
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_true(len > 0);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(out.n_hints, 4);
	assert_int_equal(out.range.flags, FW_RANGE_NAMES | FW_RANGE_WHERE | FW_RANGE_MORE);
	assert_string_equal(out.hints, "node7");
	assert_string_equal(out.hints + 6, "node8");
	assert_string_equal(out.hints + 12, "node9");
	assert_string_equal(out.hints + 18, "node10");
	assert_int_equal(out.where[0].kind, FW_WHERE_IPV4);
	assert_memory_equal(out.where[0].addr, v4.addr, 4);
	assert_int_equal(out.where[1].kind, FW_WHERE_IPV6);
	assert_memory_equal(out.where[1].addr, v6.addr, 16);
	assert_int_equal(out.where[2].kind, FW_WHERE_NONE);
	assert_int_equal(out.where[3].kind, FW_WHERE_IB);
	assert_int_equal(out.where[3].lid, ib.lid);
	assert_int_equal(out.where[3].qpn, ib.qpn);
	assert_memory_equal(out.where[3].addr, ib.addr, 16);
	/* the item of an IB hint, the last of this ANNOUNCE: its kind unknown,
	 * cut into its address, its name empty or with a NUL inside */
	sample(&m, FW_ANNOUNCE);
	assert_int_equal(fw_hint_add_at(&m, "node10", &ib), 0);
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(out.where[0].qpn, ib.qpn);
	buf[len - 29] = 9;
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	buf[len - 29] = FW_WHERE_IB;
	buf[len - 2] = '\0';
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_ERR_MALFORMED);
	buf[len - 2] = '1';
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_int_equal(fw_decode(buf, resize_last_item(buf, (size_t)len, 29, 23), NULL, 0, &out),
			 FW_ERR_MALFORMED);
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, resize_last_item(buf, (size_t)len, 29, 10), NULL, 0, &out),
			 FW_ERR_MALFORMED);
	/* at most FW_WHERE_MAX of them */
	sample(&m, FW_ANNOUNCE);
	for (unsigned i = 0; i < FW_WHERE_MAX; i++)
		assert_int_equal(fw_hint_add_at(&m, "n", &v4), 0);
	assert_int_equal(fw_hint_add_at(&m, "n", &v4), -ENOSPC);
	assert_int_equal(fw_hint_add(&m, "n"), 0);
}

/* A NEWCOMER's UP item: round-trips, a longer one (a later version's) is
 * read as far as known, a shorter one is malformed. */
static void test_up_item(void **state)
{
	uint8_t buf[FW_MAX_LEN + 8];
	struct fw_msg m, out;
	int len;

	(void)state;
	sample(&m, FW_ANNOUNCE);
	m.has_up = true;
	m.up_ms = 0x01020304;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_true(len > 0);
	assert_int_equal(fw_decode(buf, (size_t)len, NULL, 0, &out), FW_OK);
	assert_true(out.has_up);
	assert_int_equal(out.up_ms, 0x01020304);
	sample(&m, FW_ANNOUNCE);
	assert_false(m.has_up);
	m.has_up = true;
	m.up_ms = 7;
	/* the UP item is the last but one (the DIGEST, if any, follows): put
	 * it last by dropping the digest */
	m.has_digest = false;
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, resize_last_item(buf, (size_t)len, 4, 8), NULL, 0, &out),
			 FW_OK);
	assert_int_equal(out.up_ms, 7);
	len = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
	assert_int_equal(fw_decode(buf, resize_last_item(buf, (size_t)len, 4, 3), NULL, 0, &out),
			 FW_ERR_MALFORMED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),     cmocka_unit_test(test_target_kinds),
		cmocka_unit_test(test_drops),	      cmocka_unit_test(test_item_overrun),
		cmocka_unit_test(test_hmac),	      cmocka_unit_test(test_encode_limits),
		cmocka_unit_test(test_stamp_item),    cmocka_unit_test(test_digest_item),
		cmocka_unit_test(test_range_items),   cmocka_unit_test(test_hint_items),
		cmocka_unit_test(test_hint_at_items), cmocka_unit_test(test_gone_items),
		cmocka_unit_test(test_up_item),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
