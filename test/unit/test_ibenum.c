// SPDX-License-Identifier: MIT
/* Unit tests of lib/ibenum.c: every IB MTU and rate enum both ways, and
 * every value that is none. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibenum.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* From the IBTA spec (PathRecord MTU and Rate), not from the code. */
static const struct {
	uint8_t e;
	unsigned bytes;
} mtus[] = { { 1, 256 }, { 2, 512 }, { 3, 1024 }, { 4, 2048 }, { 5, 4096 } };

static const struct {
	uint8_t e;
	const char *gbps;
	unsigned gbps10;
} rates[] = {
	{ 2, "2.5", 25 },    { 3, "10", 100 },    { 4, "30", 300 },    { 5, "5", 50 },
	{ 6, "20", 200 },    { 7, "40", 400 },    { 8, "60", 600 },    { 9, "80", 800 },
	{ 10, "120", 1200 }, { 11, "14", 140 },   { 12, "56", 560 },   { 13, "112", 1120 },
	{ 14, "168", 1680 }, { 15, "25", 250 },   { 16, "100", 1000 }, { 17, "200", 2000 },
	{ 18, "300", 3000 }, { 19, "28", 280 },   { 20, "50", 500 },   { 21, "400", 4000 },
	{ 22, "600", 6000 },
};

static int mtu_of_bytes(unsigned bytes)
{
	size_t i;

	for (i = 0; i < N(mtus); i++)
		if (mtus[i].bytes == bytes)
			return mtus[i].e;
	return -1;
}

static int rate_of_enum(unsigned e)
{
	size_t i;

	for (i = 0; i < N(rates); i++)
		if (rates[i].e == e)
			return (int)i;
	return -1;
}

static void test_mtu(void **state)
{
	unsigned b;
	size_t i;

	(void)state;
	for (i = 0; i < N(mtus); i++) {
		assert_int_equal(ib_mtu_from_bytes(mtus[i].bytes), mtus[i].e);
		assert_int_equal(ib_mtu_to_bytes(mtus[i].e), mtus[i].bytes);
	}
	/* every other enum value, every other byte count up to 64 KiB and beyond */
	for (i = 0; i <= UINT8_MAX; i++)
		if (i < 1 || i > 5)
			assert_int_equal(ib_mtu_to_bytes((uint8_t)i), 0);
	for (b = 0; b <= 65536; b++)
		if (mtu_of_bytes(b) < 0)
			assert_int_equal(ib_mtu_from_bytes(b), -EINVAL);
	assert_int_equal(ib_mtu_from_bytes(UINT_MAX), -EINVAL);
	assert_int_equal(ib_mtu_from_bytes(256u + (1u << 31)), -EINVAL);
}

static void test_rate(void **state)
{
	static const char *const bad[] = {
		"",    "3",	"10.0", "2,5", " 10", "10 ", "010", "0",    "1",	"2",
		"2.50", "100G", "?",	"-10", "+10", "0x64", "1e2", "6000", "1000", "10\n",
	};
	unsigned v;
	size_t i;

	(void)state;
	for (i = 0; i < N(rates); i++) {
		assert_int_equal(ib_rate_from_gbps(rates[i].gbps), rates[i].e);
		assert_string_equal(ib_rate_to_gbps(rates[i].e), rates[i].gbps);
		assert_int_equal(ib_rate_from_gbps10(rates[i].gbps10), rates[i].e);
		assert_int_equal(ib_rate_to_gbps10(rates[i].e), rates[i].gbps10);
		/* the two units agree */
		assert_int_equal((unsigned)(strtod(rates[i].gbps, NULL) * 10 + 0.5),
				 rates[i].gbps10);
	}
	/* every other enum value: 0, 1 and 23 up are not rates */
	for (v = 0; v <= UINT8_MAX; v++) {
		if (rate_of_enum(v) >= 0)
			continue;
		assert_string_equal(ib_rate_to_gbps((uint8_t)v), "?");
		assert_int_equal(ib_rate_to_gbps10((uint8_t)v), 0);
	}
	for (i = 0; i < N(bad); i++)
		assert_int_equal(ib_rate_from_gbps(bad[i]), -EINVAL);
	for (v = 0; v <= 10000; v++) {
		for (i = 0; i < N(rates); i++)
			if (rates[i].gbps10 == v)
				break;
		if (i == N(rates))
			assert_int_equal(ib_rate_from_gbps10(v), -EINVAL);
	}
	assert_int_equal(ib_rate_from_gbps10(UINT_MAX), -EINVAL);
}

/* gbps10 orders rates by speed, whatever their enum numbers. */
static void test_rate_order(void **state)
{
	size_t i, j;

	(void)state;
	assert_true(ib_rate_to_gbps10(3) < ib_rate_to_gbps10(7));   /* 10 < 40 */
	assert_true(ib_rate_to_gbps10(7) < ib_rate_to_gbps10(16));  /* 40 < 100 */
	assert_true(ib_rate_to_gbps10(2) < ib_rate_to_gbps10(5));   /* 2.5 < 5 */
	assert_true(ib_rate_to_gbps10(12) < ib_rate_to_gbps10(16)); /* 56 < 100 */
	assert_int_equal(ib_rate_to_gbps10(0), 0);
	assert_int_equal(ib_rate_to_gbps10(200), 0);
	for (i = 0; i < N(rates); i++)
		for (j = 0; j < N(rates); j++)
			assert_int_equal(ib_rate_to_gbps10(rates[i].e) <
						 ib_rate_to_gbps10(rates[j].e),
					 strtod(rates[i].gbps, NULL) < strtod(rates[j].gbps, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtu),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_rate_order),
	};

	return cmocka_run_group_tests_name("ibenum", tests, NULL, NULL);
}
