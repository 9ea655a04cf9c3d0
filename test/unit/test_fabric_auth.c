// SPDX-License-Identifier: MIT
/* resolverd/fabric/fabric_auth.c: the key file and the freshness table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fabric/fabric_auth.h"

#define T0 1790000000000000ULL /* a wall clock in 2026, microseconds */
#define SEC 1000000ULL

static int parse(struct fabric_keys *k, const char *text)
{
	char err[128];

	return fabric_keys_parse(k, (const uint8_t *)text, strlen(text), err, sizeof(err));
}

static void test_keys_parse(void **state)
{
	static uint8_t big[FABRIC_KEY_FILE_MAX + 1];
	struct fabric_keys k;
	char err[128];

	(void)state;
	assert_int_equal(parse(&k, "0123456789abcdef"), 0);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.len[0], 16);
	assert_int_equal(parse(&k, "0123456789abcdef-new\r\n\n0123456789abcdef-old\n"), 0);
	assert_int_equal(k.n, 2);
	assert_int_equal(k.len[0], 20);
	assert_memory_equal(k.key[0], "0123456789abcdef-new", 20);
	assert_memory_equal(k.key[1], "0123456789abcdef-old", 20);

	assert_int_equal(parse(&k, ""), -EINVAL);
	assert_int_equal(parse(&k, "\n\r\n"), -EINVAL);
	assert_int_equal(parse(&k, "0123456789abcde\n"), -EINVAL); /* 15 bytes */
	assert_int_equal(parse(&k, "aaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbb\ncccccccccccccccc\n"),
			 -EINVAL);
	memset(big, 'k', sizeof(big));
	assert_int_equal(fabric_keys_parse(&k, big, FABRIC_KEY_MAX, err, sizeof(err)), 0);
	assert_int_equal(fabric_keys_parse(&k, big, FABRIC_KEY_MAX + 1, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "129"));
	assert_int_equal(fabric_keys_parse(&k, big, sizeof(big), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a key file"));
}

static void test_keys_load(void **state)
{
	char path[] = "/tmp/test_fabric_auth.XXXXXX";
	struct fabric_keys k;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789abcdef0123\n", 21), 21);
	close(fd);
	assert_int_equal(fabric_keys_load(&k, path), 0);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.len[0], 20);
	unlink(path);
	assert_int_equal(fabric_keys_load(&k, path), -ENOENT);
}

static void gid_of(uint8_t gid[16], unsigned n)
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[12] = (uint8_t)(n >> 24);
	gid[13] = (uint8_t)(n >> 16);
	gid[14] = (uint8_t)(n >> 8);
	gid[15] = (uint8_t)n;
}

static void test_fresh_order(void **state)
{
	struct freshness fr;
	uint8_t a[16], b[16];

	(void)state;
	assert_int_equal(fresh_init(&fr, 0), 0);
	gid_of(a, 1);
	gid_of(b, 2);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0, T0, 1000), FRESH_DUPLICATE);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 - 1, T0, 1000), FRESH_REPLAYED);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 + 1, T0, 1000), FRESH_OK);
	/* another sender has its own order */
	assert_int_equal(fresh_check(&fr, b, 0xffff, 0, T0 - 5 * SEC, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 - 5 * SEC, T0, 1000), FRESH_REPLAYED);

	/* the window, either way */
	assert_int_equal(fresh_check(&fr, b, 0xffff, 0, T0 + FRESH_WINDOW_US, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, b, 0xffff, 0, T0 + FRESH_WINDOW_US + 1, T0, 1000), FRESH_STALE);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 - FRESH_WINDOW_US - 1, T0, 1000), FRESH_STALE);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, 0, T0, 1000), FRESH_STALE);

	/* a sender silent for two windows is forgotten: what it sent before is
	 * outside the window by then, what it sends now is taken */
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 + 1, T0 + 2 * FRESH_WINDOW_US + 1,
				     1000 + FRESH_FORGET_MS + 1),
			 FRESH_STALE);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 0, T0 + 2 * FRESH_WINDOW_US, T0 + 2 * FRESH_WINDOW_US,
				     1000 + FRESH_FORGET_MS + 1),
			 FRESH_OK);
	/* but not earlier: one window later, the old stamp is refused */
	assert_int_equal(fresh_check(&fr, b, 0xffff, 0, T0 + 10, T0 + FRESH_WINDOW_US / 2,
				     1000 + FRESH_WINDOW_US / 2000),
			 FRESH_REPLAYED);
	fresh_fini(&fr);
}

/* A port's partitions are senders of their own, whose datagrams may be read
 * in another order than sent (a socket each); one datagram heard on several
 * local ports (one subnet) is taken once on each, and a replay on none. */
static void test_fresh_partitions_and_ports(void **state)
{
	struct freshness fr;
	uint8_t a[16];

	(void)state;
	assert_int_equal(fresh_init(&fr, 0), 0);
	gid_of(a, 1);
	/* sent 0x8001 then 0x8002, read the other way round */
	assert_int_equal(fresh_check(&fr, a, 0x8002, 0, T0 + 1, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0x8001, 1, T0, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0x8001, 1, T0, T0, 1000), FRESH_DUPLICATE);
	assert_int_equal(fresh_check(&fr, a, 0x8002, 0, T0, T0, 1000), FRESH_REPLAYED);
	/* one multicast on ports 2 and 3: one copy each, then duplicates */
	assert_int_equal(fresh_check(&fr, a, 0xffff, 2, T0 + 5, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 3, T0 + 5, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 3, T0 + 5, T0, 1000), FRESH_DUPLICATE);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 2, T0 + 5, T0, 1000), FRESH_DUPLICATE);
	/* a newer one resets the ports: port 2's copy of the older is late */
	assert_int_equal(fresh_check(&fr, a, 0xffff, 3, T0 + 6, T0, 1000), FRESH_OK);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 2, T0 + 5, T0, 1000), FRESH_REPLAYED);
	assert_int_equal(fresh_check(&fr, a, 0xffff, 2, T0 + 6, T0, 1000), FRESH_OK);
	fresh_fini(&fr);
}

/* Sized for the senders of a full cache: half full at most, never fewer
 * than FRESH_BUCKETS buckets. */
static void test_fresh_sizing(void **state)
{
	struct freshness fr;

	(void)state;
	assert_int_equal(fresh_init(&fr, 0), 0);
	assert_int_equal(fr.mask + 1, FRESH_BUCKETS);
	fresh_fini(&fr);
	/* 48,000 hosts of 8 rails */
	assert_int_equal(fresh_init(&fr, 48000ull * 8), 0);
	assert_int_equal(fr.mask + 1, 131072);
	assert_true((uint64_t)(fr.mask + 1) * FRESH_WAYS >= 48000ull * 8 * 2);
	fresh_fini(&fr);
}

/* More senders than the table holds: every bucket overflows, yet no stamp
 * a sender used is ever taken again, and every sender's next one is. */
static void test_fresh_overflow(void **state)
{
	const unsigned n = FRESH_BUCKETS * FRESH_WAYS * 2;
	struct freshness fr;
	uint8_t gid[16];
	unsigned refused = 0;

	(void)state;
	assert_int_equal(fresh_init(&fr, 0), 0);
	for (unsigned i = 0; i < n; i++) {
		gid_of(gid, i);
		assert_int_equal(fresh_check(&fr, gid, 0xffff, 0, T0 + i, T0 + i, 5000 + i / 1000), FRESH_OK);
	}
	for (unsigned i = 0; i < n; i++) {
		enum fresh_verdict v;

		gid_of(gid, i);
		v = fresh_check(&fr, gid, 0xffff, 0, T0 + i, T0 + n, 5000 + n / 1000);
		assert_true(v == FRESH_DUPLICATE || v == FRESH_REPLAYED);
		refused++;
	}
	assert_int_equal(refused, n);
	for (unsigned i = 0; i < n; i += 97) {
		gid_of(gid, i);
		assert_int_equal(fresh_check(&fr, gid, 0xffff, 0, T0 + 2 * n + i, T0 + 2 * n, 5000 + n / 500),
				 FRESH_OK);
	}
	fresh_fini(&fr);
}

static void test_fresh_stamp(void **state)
{
	struct freshness fr;

	(void)state;
	assert_int_equal(fresh_init(&fr, 0), 0);
	assert_true(fresh_stamp(&fr, T0) == T0);
	assert_true(fresh_stamp(&fr, T0) == T0 + 1);        /* the clock did not move */
	assert_true(fresh_stamp(&fr, T0 - SEC) == T0 + 2);  /* it stepped back */
	assert_true(fresh_stamp(&fr, T0 + SEC) == T0 + SEC); /* and on */
	fresh_fini(&fr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_parse),
		cmocka_unit_test(test_keys_load),
		cmocka_unit_test(test_fresh_order),
		cmocka_unit_test(test_fresh_partitions_and_ports),
		cmocka_unit_test(test_fresh_sizing),
		cmocka_unit_test(test_fresh_overflow),
		cmocka_unit_test(test_fresh_stamp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
