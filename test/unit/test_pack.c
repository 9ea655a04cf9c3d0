// SPDX-License-Identifier: MIT
/* nss/pack.c: results packed into glibc's buffer, tried with every buffer
 * size from 1 byte up and with misaligned buffers; nothing may be written
 * outside the buffer, and everything returned must point inside it. A record
 * the daemon never writes (no name, counts past their arrays, names no host
 * has) is refused whatever the buffer, with nothing written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostdir.h"
#include "hostrec.h"
#include "../../nss/pack.h"

#define GUARD 64
#define FILL  0xa5

static void make_rec(struct ibres_hostrec *r, unsigned names, unsigned v4, unsigned v6,
		     unsigned gids, size_t name_len)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < names; i++) {
		size_t l = name_len ? name_len : 5 + i;

		/* a host name: labels of at most 63 bytes (255 = 4 labels) */
		memset(r->names[i], 'a' + (int)i, l);
		for (size_t d = 63; d + 1 < l; d += 64)
			r->names[i][d] = '.';
		r->names[i][l] = '\0';
	}
	r->n_names = names;
	for (i = 0; i < v4; i++)
		r->v4[i].s_addr = htonl(0xc6120000u + i + 1);
	r->n_v4 = v4;
	for (i = 0; i < v6; i++) {
		inet_pton(AF_INET6, "2001:db8::1", &r->v6[i]);
		r->v6[i].s6_addr[15] = (uint8_t)(i + 1);
	}
	r->n_v6 = v6;
	for (i = 0; i < gids; i++) {
		inet_pton(AF_INET6, "fe80::2:c903:0:1", r->gids[i]);
		r->gids[i][14] = (uint8_t)(i + 1);
	}
	r->n_gids = gids;
}

/* What the NSS module packs from: @r as the directory holds it, viewed. */
static void view_of(const struct ibres_hostrec *r, uint64_t *enc, struct ibdir_view *v)
{
	size_t len = ibdir_rec_encode(r, IBDIR_NEVER, (uint8_t *)enc);

	assert_int_equal(ibdir_view_init((const uint8_t *)enc, len, v), 0);
}

static int inside(const void *p, size_t n, const char *buf, size_t len)
{
	const char *c = p;

	return c >= buf && n <= len && c - buf <= (ptrdiff_t)(len - n);
}

/* The memory around [area + start, + len) must still hold FILL. */
static void check_guards(const unsigned char *area, size_t start, size_t len)
{
	size_t i;

	for (i = 0; i < start; i++)
		assert_int_equal(area[i], FILL);
	for (i = start + len; i < start + len + GUARD; i++)
		assert_int_equal(area[i], FILL);
}

static void check_hostent(const struct hostent *he, const char *buf, size_t len,
			  const struct ibres_hostrec *r, int af, const void *addrs, size_t n,
			  size_t alen)
{
	size_t i;

	assert_int_equal(he->h_addrtype, af);
	assert_int_equal(he->h_length, (int)alen);
	assert_true(inside(he->h_name, strlen(r->names[0]) + 1, buf, len));
	assert_string_equal(he->h_name, r->names[0]);
	assert_true(inside(he->h_aliases, r->n_names * sizeof(char *), buf, len));
	assert_int_equal((uintptr_t)he->h_aliases % alignof(char *), 0);
	for (i = 1; i < r->n_names; i++) {
		assert_true(inside(he->h_aliases[i - 1], strlen(r->names[i]) + 1, buf, len));
		assert_string_equal(he->h_aliases[i - 1], r->names[i]);
	}
	assert_null(he->h_aliases[r->n_names - 1]);
	assert_true(inside(he->h_addr_list, (n + 1) * sizeof(char *), buf, len));
	assert_int_equal((uintptr_t)he->h_addr_list % alignof(char *), 0);
	for (i = 0; i < n; i++) {
		assert_true(inside(he->h_addr_list[i], alen, buf, len));
		assert_int_equal((uintptr_t)he->h_addr_list[i] % 4, 0);
		assert_memory_equal(he->h_addr_list[i], (const char *)addrs + i * alen, alen);
	}
	assert_null(he->h_addr_list[n]);
}

/* Every size from 1 up: -ERANGE until it fits, then success for good. */
static void sweep_hostent(const struct ibres_hostrec *r, int af, const void *addrs, size_t n,
			  size_t alen)
{
	size_t max = 4096 + 8 * 300, len, off, fit = 0;
	unsigned char *area = malloc(max + 8 + 2 * GUARD);
	static uint64_t enc[IBDIR_REC_MAX / 8];
	struct ibdir_view v;
	struct hostent he;
	int ret;

	assert_non_null(area);
	view_of(r, enc, &v);
	for (off = 0; off < 8; off += 3) {
		fit = 0;
		for (len = 1; len <= max; len++) {
			char *buf = (char *)area + GUARD + off;

			memset(area, FILL, max + 8 + 2 * GUARD);
			memset(&he, 0, sizeof(he));
			ret = ibpack_hostent(&he, buf, len, &v, af, addrs, n, alen);
			check_guards(area, GUARD + off, len);
			if (ret) {
				assert_int_equal(ret, -ERANGE);
				assert_int_equal(fit, 0); /* never fails after fitting once */
				continue;
			}
			if (!fit)
				fit = len;
			check_hostent(&he, buf, len, r, af, addrs, n, alen);
			if (len > fit + 64)
				break;
		}
		assert_int_not_equal(fit, 0);
	}
	free(area);
}

static void test_hostent_sizes(void **state)
{
	struct ibres_hostrec r;

	(void)state;
	make_rec(&r, 1, 1, 0, 0, 0);
	sweep_hostent(&r, AF_INET, r.v4, r.n_v4, 4);
	make_rec(&r, 3, 2, 2, 2, 0);
	sweep_hostent(&r, AF_INET, r.v4, r.n_v4, 4);
	sweep_hostent(&r, AF_INET6, r.v6, r.n_v6, 16);
	sweep_hostent(&r, 27, r.gids, r.n_gids, 16);
	/* reverse lookup: one address, the one asked about */
	sweep_hostent(&r, AF_INET6, &r.v6[1], 1, 16);
	/* names whose bytes move in each way the packer has: 1-3, 4-7 and
	 * 8 or more at once, alone and with aliases */
	for (size_t l = 1; l <= 17; l++) {
		make_rec(&r, 1, 1, 0, 0, l);
		sweep_hostent(&r, AF_INET, r.v4, r.n_v4, 4);
		make_rec(&r, 3, 1, 0, 0, l);
		sweep_hostent(&r, AF_INET, r.v4, r.n_v4, 4);
	}
}

static void test_hostent_limits(void **state)
{
	struct ibres_hostrec r;

	(void)state;
	/* the biggest record the protocol allows */
	make_rec(&r, IBRES_HOST_NAMES_MAX, IBRES_HOST_ADDRS_MAX, IBRES_HOST_ADDRS_MAX,
		 IBRES_HOST_GIDS_MAX, IBRES_NAME_MAX);
	sweep_hostent(&r, AF_INET, r.v4, r.n_v4, 4);
	sweep_hostent(&r, 27, r.gids, r.n_gids, 16);
}

static void check_tuples(const struct gaih_addrtuple *t, const struct ibres_hostrec *r,
			 const char *buf, size_t len, const struct gaih_addrtuple *first)
{
	size_t i, n = r->n_v4 + r->n_v6;

	for (i = 0; i < n; i++, t = t->next) {
		assert_non_null(t);
		if (i == 0 && first)
			assert_ptr_equal(t, first);
		else
			assert_true(inside(t, sizeof(*t), buf, len));
		assert_int_equal((uintptr_t)t % alignof(struct gaih_addrtuple), 0);
		assert_true(inside(t->name, strlen(r->names[0]) + 1, buf, len));
		assert_string_equal(t->name, r->names[0]);
		assert_int_equal(t->scopeid, 0);
		if (i < r->n_v6) {
			assert_int_equal(t->family, AF_INET6);
			assert_memory_equal(t->addr, &r->v6[i], 16);
		} else {
			assert_int_equal(t->family, AF_INET);
			assert_memory_equal(t->addr, &r->v4[i - r->n_v6], 4);
		}
	}
	assert_null(t);
}

static void sweep_tuples(const struct ibres_hostrec *r, int prealloc)
{
	size_t max = 4096, len, off, fit; /* 64 tuples of 32 bytes and a name */
	unsigned char *area = malloc(max + 8 + 2 * GUARD);
	static uint64_t enc[IBDIR_REC_MAX / 8];
	struct gaih_addrtuple mine, *pat;
	struct ibdir_view v;
	int ret;

	assert_non_null(area);
	view_of(r, enc, &v);
	for (off = 0; off < 8; off += 5) {
		fit = 0;
		for (len = 1; len <= max; len++) {
			char *buf = (char *)area + GUARD + off;

			memset(area, FILL, max + 8 + 2 * GUARD);
			memset(&mine, 0xee, sizeof(mine));
			pat = prealloc ? &mine : NULL;
			ret = ibpack_tuples(&pat, buf, len, &v);
			check_guards(area, GUARD + off, len);
			if (ret) {
				assert_int_equal(ret, -ERANGE);
				assert_int_equal(fit, 0);
				assert_ptr_equal(pat, prealloc ? &mine : NULL);
				continue;
			}
			if (!fit)
				fit = len;
			check_tuples(pat, r, buf, len, prealloc ? &mine : NULL);
			if (len > fit + 64)
				break;
		}
		assert_int_not_equal(fit, 0);
	}
	free(area);
}

static void test_tuples(void **state)
{
	static uint64_t enc[IBDIR_REC_MAX / 8];
	struct ibres_hostrec r;
	struct gaih_addrtuple *pat = NULL;
	struct ibdir_view v;
	char buf[256];

	(void)state;
	make_rec(&r, 2, 1, 0, 1, 0);
	sweep_tuples(&r, 0);
	sweep_tuples(&r, 1);
	make_rec(&r, 1, 3, 2, 1, 0);
	sweep_tuples(&r, 0);
	sweep_tuples(&r, 1);
	make_rec(&r, 1, 0, 1, 0, IBRES_NAME_MAX);
	sweep_tuples(&r, 1);
	make_rec(&r, 1, IBRES_HOST_ADDRS_MAX, IBRES_HOST_ADDRS_MAX, 0, IBRES_NAME_MAX);
	sweep_tuples(&r, 0);
	for (size_t l = 1; l <= 17; l++) {
		make_rec(&r, 2, 1, 1, 0, l);
		sweep_tuples(&r, 0);
	}

	/* GIDs only: no tuple to give (AF_IB never goes into tuples) */
	make_rec(&r, 1, 0, 0, 2, 0);
	view_of(&r, enc, &v);
	assert_int_equal(ibpack_tuples(&pat, buf, sizeof(buf), &v), -ENOENT);
	assert_null(pat);
}

/* A view with counts no record has is refused with -EBADMSG, and nothing
 * is written, whatever the buffer: no index is computed from its counts.
 * ibdir_view_init() makes no such view (test_hostdir.c); the packers do not
 * rely on that. */
static void refused(const struct ibdir_view *v)
{
	size_t max = 4096;
	unsigned char *area = malloc(max + 2 * GUARD);
	static const uint8_t addr[16];
	struct gaih_addrtuple mine, *pat;
	struct hostent he;

	assert_non_null(area);
	for (size_t len = 0; len <= max; len += len < 64 ? 1 : 61) {
		char *buf = (char *)area + GUARD;

		memset(area, FILL, max + 2 * GUARD);
		memset(&he, 0xee, sizeof(he));
		if (!v->n_names || v->n_names > IBRES_HOST_NAMES_MAX) {
			assert_int_equal(ibpack_hostent(&he, buf, len, v, AF_INET, addr, 1, 4),
					 -EBADMSG);
			assert_int_equal(ibpack_hostent(&he, buf, len, v, 27, addr, 1, 16),
					 -EBADMSG);
		}
		pat = NULL;
		assert_int_equal(ibpack_tuples(&pat, buf, len, v), -EBADMSG);
		assert_null(pat);
		memset(&mine, 0xee, sizeof(mine));
		pat = &mine;
		assert_int_equal(ibpack_tuples(&pat, buf, len, v), -EBADMSG);
		assert_ptr_equal(pat, &mine);
		/* nothing written: not the buffer, not around it */
		for (size_t i = 0; i < max + 2 * GUARD; i++)
			assert_int_equal(area[i], FILL);
		for (size_t i = 0; i < sizeof(mine); i++)
			assert_int_equal(((unsigned char *)&mine)[i], 0xee);
	}
	free(area);
}

static void test_refused_records(void **state)
{
	static uint64_t enc[IBDIR_REC_MAX / 8];
	struct ibres_hostrec r;
	struct ibdir_view v, bad;

	(void)state;
	make_rec(&r, 1, 1, 1, 1, 0);
	view_of(&r, enc, &v);
	/* the finding of issue 21: no name (aliases[n_names - 1] was 32 GiB away) */
	bad = v;
	bad.n_names = 0;
	refused(&bad);
	/* counts past their arrays */
	bad.n_names = IBRES_HOST_NAMES_MAX + 1;
	refused(&bad);
	bad.n_names = UINT32_MAX;
	refused(&bad);
	bad = v;
	bad.n_v4 = IBRES_HOST_ADDRS_MAX + 1;
	refused(&bad);
	bad = v;
	bad.n_v6 = UINT32_MAX;
	refused(&bad);
	/* names whose lengths run past the view's end: the first (both packers
	 * refuse), or the second (the hostent's), the buffer left as it was */
	{
		static const uint8_t past[] = { 200, 'a' }, second[] = { 1, 'a', 5, 'b' };
		struct gaih_addrtuple *pat = NULL;
		struct hostent he;
		char buf[1024];

		bad = v;
		bad.names = past;
		bad.end = past + sizeof(past);
		refused(&bad);
		for (unsigned k = 0; k < 2; k++) {
			bad.names = k ? second : past;
			bad.end = k ? second + sizeof(second) : past + sizeof(past);
			bad.n_names = k ? 2 : 1;
			memset(buf, FILL, sizeof(buf));
			assert_int_equal(ibpack_hostent(&he, buf, sizeof(buf), &bad, AF_INET, r.v4, 1, 4),
					 -EBADMSG);
			for (size_t i = 0; i < sizeof(buf); i++)
				assert_int_equal((uint8_t)buf[i], FILL);
		}
		assert_int_equal(ibpack_tuples(&pat, buf, sizeof(buf), &bad), 0);
	}
	/* more addresses than a record holds, or an address longer than 16 bytes */
	{
		struct hostent he;
		char buf[4096];

		assert_int_equal(ibpack_hostent(&he, buf, sizeof(buf), &v, AF_INET, r.v4,
						IBRES_HOST_GIDS_MAX + 1, 4),
				 -EBADMSG);
		assert_int_equal(ibpack_hostent(&he, buf, sizeof(buf), &v, AF_INET, r.v4, 1, 17),
				 -EBADMSG);
		assert_int_equal(ibpack_hostent(&he, buf, sizeof(buf), &v, AF_INET, r.v4, 1, 4), 0);
	}
}

/* The rule, one byte at a time, as the daemon's configuration states it:
 * labels of 1..63 letters, digits and hyphens, no hyphen at either end of
 * one, dot-separated, a letter somewhere, 1..255 bytes. */
static int name_ok_reference(const uint8_t *s, size_t len)
{
	size_t label = 0;
	int letter = 0;

	if (!len || len > IBRES_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];
		int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

		if (c == '.') {
			if (!label || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!alpha && !(c >= '0' && c <= '9') && c != '-')
			return 0;
		if (c == '-' && !label)
			return 0;
		letter |= alpha;
		if (++label > 63)
			return 0;
	}
	return label && s[len - 1] != '-' && letter;
}

/* Every byte value in every place of a label: alone, first, last, inside,
 * beside a dot and a hyphen, in the first and in a later label, after a
 * letter and after a digit (the table's rows are states: each is entered
 * here and left by every byte). */
static void test_name_rule_every_byte(void **state)
{
	static const char *const shapes[] = { "%", "%a", "a%", "a%a", "1%", "%1", "a.%", "%.a",
					      "a-%", "%-a", "a.b%", "1.%a", "a1-%.b", "a.%-1",
					      "9%", "a.1%", "-%", "%." };
	uint8_t name[16];

	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			size_t len = strlen(shapes[k]);

			for (size_t i = 0; i < len; i++)
				name[i] = shapes[k][i] == '%' ? (uint8_t)c : (uint8_t)shapes[k][i];
			assert_int_equal(hostrec_name_ok(name, len), name_ok_reference(name, len));
		}
	}
}

/* hostrec_name_ok() (a table look-up a byte) against the reference: every
 * string of up to 6 bytes over an alphabet of each kind of byte, at every
 * offset of a buffer, and random longer ones around the label limit. */
static void test_name_rule_exhaustive(void **state)
{
	static const uint8_t alphabet[] = { 'a', 'Z', '0', '-', '.', '_', 0x80 | 'a', 0, '@', '[' };
	const size_t k = sizeof(alphabet);
	uint8_t buf[IBRES_NAME_MAX + 16];
	unsigned seed = 1;

	(void)state;
	for (size_t len = 1; len <= 6; len++) {
		size_t total = 1;

		for (size_t i = 0; i < len; i++)
			total *= k;
		for (size_t n = 0; n < total; n++) {
			size_t x = n, off = n % 8;

			for (size_t i = 0; i < len; i++, x /= k)
				buf[off + i] = alphabet[x % k];
			assert_int_equal(hostrec_name_ok(buf + off, len),
					 name_ok_reference(buf + off, len));
		}
	}
	for (unsigned round = 0; round < 200000; round++) {
		size_t len = 1 + (size_t)rand_r(&seed) % IBRES_NAME_MAX;

		for (size_t i = 0; i < len; i++) {
			unsigned r = (unsigned)rand_r(&seed) % 64;

			/* mostly name bytes, dots now and then, a stray byte rarely */
			buf[i] = r < 40 ? (uint8_t)('a' + r % 26) : r < 50 ? (uint8_t)('0' + r % 10)
				 : r < 56 ? '-' : r < 63 ? '.' : alphabet[(unsigned)rand_r(&seed) % k];
		}
		assert_int_equal(hostrec_name_ok(buf, len), name_ok_reference(buf, len));
		/* one label around the limit */
		memset(buf, 'a', len);
		if (len > 70)
			buf[(unsigned)rand_r(&seed) % len] = '.';
		assert_int_equal(hostrec_name_ok(buf, len), name_ok_reference(buf, len));
	}
}

/* The names the daemon's configuration accepts pass; the rule's edges. */
static void test_name_rule(void **state)
{
	static const char *const good[] = {
		"a", "node1", "NODE-3.Example.com", "1a", "a1.2.3", "x-y-z", "login1.ib0",
	};
	static const char *const bad[] = {
		"", "-", "1", "1.2", "a-", "-a", "a.-b", "a-.b", "a..b", ".a", "a.", "a b", "a_b",
		"a\tb", "a\x7f", "\xff",
	};
	char l63[64], l64[65], n255[256], n256[257];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(hostrec_name_ok(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(hostrec_name_ok(bad[i], strlen(bad[i])));
	/* a NUL inside the length is no name */
	assert_false(hostrec_name_ok("ab\0c", 4));
	memset(l63, 'a', 63);
	l63[63] = '\0';
	memset(l64, 'a', 64);
	l64[64] = '\0';
	assert_true(hostrec_name_ok(l63, 63));
	assert_false(hostrec_name_ok(l64, 64));
	memset(n255, 'a', 255);
	for (size_t d = 63; d < 255; d += 64)
		n255[d] = '.';
	n255[255] = '\0';
	assert_true(hostrec_name_ok(n255, 255));
	memcpy(n256, n255, 255);
	n256[255] = 'a';
	n256[256] = '\0';
	assert_false(hostrec_name_ok(n256, 256));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostent_sizes), cmocka_unit_test(test_hostent_limits),
		cmocka_unit_test(test_tuples),	      cmocka_unit_test(test_refused_records),
		cmocka_unit_test(test_name_rule),
		cmocka_unit_test(test_name_rule_exhaustive),
		cmocka_unit_test(test_name_rule_every_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
