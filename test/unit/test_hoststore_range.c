// SPDX-License-Identifier: MIT
/* resolverd/core/hoststore_range.c: the parts of a range, the range
 * digests against the store's whole digest (each host once, however many
 * endpoints; static hosts not counted), the names of a range, and what one
 * walk costs at 48,000 hosts (printed, not asserted: bench/RESULTS.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/hostkey.h"
#include "core/hoststore.h"
#include "core/hoststore_range.h"
#include "core/term_index.h"

#define COST_HOSTS 48000
#define COST_WALKS 20

static uint64_t term_of(const char *name)
{
	struct host_key k;

	assert_int_equal(host_key_name(&k, name), 0);
	return host_digest_term(&k);
}

/* Endpoint @i of node @n, named @name, origin @origin; @rails nonzero: one
 * of a host of several endpoints. */
static void put(struct host_store *s, const char *name, unsigned n, unsigned i, uint8_t origin,
		uint64_t rails)
{
	struct ibres_hostrec h;
	char gid[64];

	memset(&h, 0, sizeof(h));
	snprintf(h.names[h.n_names++], sizeof(h.names[0]), "%s", name);
	snprintf(gid, sizeof(gid), "fe80::%x:%x", n, i);
	assert_int_equal(inet_pton(AF_INET6, gid, h.gids[h.n_gids++]), 1);
	h.lid = (uint16_t)(n * 4 + i + 1);
	h.pkey = 0xffff;
	assert_int_equal(store_insert(s, &h,
				      &(struct store_put){.origin = origin,
							  .heard_on = 1,
							  .rails = rails,
							  .ttl_s = 3600},
				      0, NULL),
			 0);
}

static void test_parts(void **state)
{
	struct store_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = 16}, sub;
	struct store_range small = {.lo = 10, .hi = 15, .parts = 16};
	struct store_range three = {.lo = 0, .hi = 9, .parts = 3};

	(void)state;
	assert_true(store_range_valid(&whole));
	assert_int_equal(store_range_part(&whole, 0), 0);
	assert_int_equal(store_range_part(&whole, (1ULL << 60) - 1), 0);
	assert_int_equal(store_range_part(&whole, 1ULL << 60), 1);
	assert_int_equal(store_range_part(&whole, UINT64_MAX), 15);
	assert_true(store_range_sub(&whole, 0, &sub));
	assert_true(sub.lo == 0 && sub.hi == (1ULL << 60) - 1 && sub.parts == 1);
	assert_true(store_range_sub(&whole, 15, &sub));
	assert_true(sub.lo == 15ULL << 60 && sub.hi == UINT64_MAX);
	assert_false(store_range_sub(&whole, 16, &sub));
	/* narrower than its parts: one term a part, the rest empty */
	assert_int_equal(store_range_part(&small, 9), -1);
	assert_int_equal(store_range_part(&small, 15), 5);
	assert_int_equal(store_range_part(&small, 16), -1);
	assert_true(store_range_sub(&small, 5, &sub));
	assert_true(sub.lo == 15 && sub.hi == 15);
	assert_false(store_range_sub(&small, 6, &sub));
	/* uneven: 4, 4 and what is left */
	assert_true(store_range_sub(&three, 1, &sub));
	assert_true(sub.lo == 4 && sub.hi == 7);
	assert_true(store_range_sub(&three, 2, &sub));
	assert_true(sub.lo == 8 && sub.hi == 9);
	assert_int_equal(store_range_part(&three, 9), 2);
	/* malformed ones */
	assert_false(store_range_valid(&(struct store_range){.lo = 2, .hi = 1, .parts = 1}));
	assert_false(store_range_valid(&(struct store_range){.lo = 0, .hi = 1, .parts = 0}));
	assert_false(store_range_valid(&(struct store_range){.lo = 0, .hi = 1, .parts = 17}));
}

/* The parts of any range cover it, in order, without a gap, and each term
 * lies in the part store_range_part() says. */
static void test_parts_cover(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (unsigned round = 0; round < 2000; round++) {
		struct store_range r, sub;
		uint64_t a, b, next;
		bool first = true;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		a = seed;
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		b = round % 3 ? a + (seed % 1000) : seed;
		if (b < a)
			b = UINT64_MAX;
		r = (struct store_range){.lo = a, .hi = b, .parts = 1 + round % 16};
		next = r.lo;
		for (unsigned i = 0; i < r.parts; i++) {
			if (!store_range_sub(&r, i, &sub))
				break;
			assert_true(sub.lo == next && sub.lo <= sub.hi && sub.hi <= r.hi);
			assert_int_equal(store_range_part(&r, sub.lo), (int)i);
			assert_int_equal(store_range_part(&r, sub.hi), (int)i);
			first = false;
			if (sub.hi == r.hi)
				break;
			next = sub.hi + 1;
		}
		assert_false(first);
		assert_true(sub.hi == r.hi);
	}
}

struct names {
	unsigned n, gpu1;
	struct store_range r;
};

static int visit(void *arg, const char *nm)
{
	struct names *g = arg;

	assert_int_not_equal(store_range_part(&g->r, term_of(nm)), -1);
	assert_string_not_equal(nm, "static1");
	g->n++;
	g->gpu1 += !strcmp(nm, "gpu1");
	return 0;
}

static void test_digests_and_names(void **state)
{
	struct store_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = 16}, one = whole;
	struct store_digest all, parts[16], sum = {0}, mine[16] = {{0}};
	struct host_store s;
	char name[32];

	(void)state;
	assert_int_equal(store_init(&s, 1024), 0);
	for (unsigned n = 0; n < 200; n++) {
		snprintf(name, sizeof(name), "node%u", n);
		put(&s, name, n, 0, IBRES_ORIGIN_FABRIC, 0);
		mine[store_range_part(&whole, term_of(name))].hosts++;
		mine[store_range_part(&whole, term_of(name))].sum += term_of(name);
	}
	/* a host of three endpoints counts once; a static host not at all */
	for (unsigned i = 0; i < 3; i++)
		put(&s, "gpu1", 500, i, IBRES_ORIGIN_FABRIC, 0x1234);
	mine[store_range_part(&whole, term_of("gpu1"))].hosts++;
	mine[store_range_part(&whole, term_of("gpu1"))].sum += term_of("gpu1");
	put(&s, "static1", 600, 0, IBRES_ORIGIN_STATIC, 0);
	store_digest(&s, &all);
	assert_int_equal(all.hosts, 201);

	store_range_digest(&s, &whole, STORE_ALL_FABRICS, parts);
	for (unsigned i = 0; i < 16; i++) {
		assert_int_equal(parts[i].hosts, mine[i].hosts);
		assert_true(parts[i].sum == mine[i].sum);
		sum.hosts += parts[i].hosts;
		sum.sum += parts[i].sum;
	}
	assert_true(sum.hosts == all.hosts && sum.sum == all.sum);
	one.parts = 1;
	store_range_digest(&s, &one, STORE_ALL_FABRICS, parts);
	assert_true(parts[0].hosts == all.hosts && parts[0].sum == all.sum);

	/* the names of the part gpu1 lies in: each once, each in the part */
	{
		struct names got = {0};
		int part = store_range_part(&whole, term_of("gpu1"));

		assert_true(store_range_sub(&whole, (unsigned)part, &got.r));
		unsigned visited = store_range_names(&s, &got.r, STORE_ALL_FABRICS, visit, &got);

		assert_int_equal(visited, got.n);
		assert_int_equal(got.gpu1, 1);
		store_range_digest(&s, &got.r, STORE_ALL_FABRICS, parts);
		assert_int_equal(got.n, parts[0].hosts);
	}
	store_fini(&s);
}

static int count_name(void *arg, const char *name)
{
	(void)name;
	++*(unsigned *)arg;
	return 0;
}

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One walk's cost at the cluster size the issue names: printed for
 * bench/RESULTS.md; asserted is only that it answers what the whole digest
 * says. */
static void test_cost_48k(void **state)
{
	struct store_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = 16};
	struct store_range narrow = {.lo = 0, .hi = UINT64_MAX >> 12, .parts = 1};
	struct store_digest all, parts[16];
	struct host_store s;
	uint64_t t0, walk_ns, names_ns;
	unsigned visited = 0;
	char name[32];

	(void)state;
	assert_int_equal(store_init(&s, COST_HOSTS + 16), 0);
	for (unsigned n = 0; n < COST_HOSTS; n++) {
		snprintf(name, sizeof(name), "node%05u", n);
		put(&s, name, n, 0, IBRES_ORIGIN_FABRIC, 0);
	}
	store_digest(&s, &all);
	assert_int_equal(all.hosts, COST_HOSTS);
	t0 = ns_now();
	for (unsigned i = 0; i < COST_WALKS; i++)
		store_range_digest(&s, &whole, STORE_ALL_FABRICS, parts);
	walk_ns = (ns_now() - t0) / COST_WALKS;
	t0 = ns_now();
	for (unsigned i = 0; i < COST_WALKS; i++)
		store_range_names(&s, &narrow, STORE_ALL_FABRICS, count_name, &visited);
	names_ns = (ns_now() - t0) / COST_WALKS;
	printf("# range digest of %u hosts, 16 parts: %.2f ms a walk (%.0f ns a host); "
	       "names of a 1/4096 range (%u): %.2f ms a walk\n",
	       COST_HOSTS, walk_ns / 1e6, (double)walk_ns / COST_HOSTS, visited / COST_WALKS,
	       names_ns / 1e6);
	{
		uint64_t n = 0, sum = 0;

		for (unsigned i = 0; i < 16; i++)
			n += parts[i].hosts, sum += parts[i].sum;
		assert_true(n == all.hosts && sum == all.sum);
	}
	store_fini(&s);
}

/* core/term_index.c: the sorted copy answers what the walk answers (every
 * part of every level down to parts of a few hosts), in ascending term, each
 * host once; a range's first name is found by its term; its build at 48,000
 * hosts is printed (bench/RESULTS.md). */
static void test_term_index(void **state)
{
	struct store_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = 16};
	struct store_digest walk[16], index[16];
	struct term_index ti = {0};
	struct host_store s;
	uint64_t t0, build_ns;
	char name[32];

	(void)state;
	assert_int_equal(store_init(&s, COST_HOSTS + 16), 0);
	for (unsigned n = 0; n < 300; n++) {
		snprintf(name, sizeof(name), "node%u", n);
		put(&s, name, n, 0, IBRES_ORIGIN_FABRIC, 0);
	}
	for (unsigned i = 0; i < 3; i++)
		put(&s, "gpu1", 500, i, IBRES_ORIGIN_FABRIC, 0x1234);
	put(&s, "static1", 600, 0, IBRES_ORIGIN_STATIC, 0);
	assert_int_equal(term_index_build(&ti, &s, STORE_ALL_FABRICS, 5), 0);
	assert_int_equal(ti.n, 301);
	assert_int_equal(ti.built_ms, 5);
	for (size_t i = 1; i < ti.n; i++)
		assert_true(ti.e[i - 1].term < ti.e[i].term);
	for (size_t i = 0; i < ti.n; i++) {
		assert_true(term_of(term_index_name(&ti, i)) == ti.e[i].term);
		assert_true(strcmp(term_index_name(&ti, i), "static1") != 0);
	}
	/* two levels of 16 parts, and one level more inside part 5 */
	for (unsigned top = 0; top < 16; top++) {
		struct store_range sub, subsub;

		store_range_digest(&s, &whole, STORE_ALL_FABRICS, walk);
		term_index_digest(&ti, &whole, index);
		assert_memory_equal(walk, index, sizeof(walk));
		assert_true(store_range_sub(&whole, top, &sub));
		sub.parts = 16;
		store_range_digest(&s, &sub, STORE_ALL_FABRICS, walk);
		term_index_digest(&ti, &sub, index);
		assert_memory_equal(walk, index, sizeof(walk));
		if (top != 5)
			continue;
		assert_true(store_range_sub(&sub, 3, &subsub));
		subsub.parts = 16;
		store_range_digest(&s, &subsub, STORE_ALL_FABRICS, walk);
		term_index_digest(&ti, &subsub, index);
		assert_memory_equal(walk, index, sizeof(walk));
	}
	/* the first name at or after a term: gpu1's own, and the one after */
	{
		size_t at = term_index_lower(&ti, term_of("gpu1"));

		assert_string_equal(term_index_name(&ti, at), "gpu1");
		assert_true(term_index_lower(&ti, term_of("gpu1") + 1) == at + 1);
		assert_int_equal(term_index_lower(&ti, 0), 0);
	}
	/* built again from a store of 48,000: timed */
	for (unsigned n = 300; n < COST_HOSTS; n++) {
		snprintf(name, sizeof(name), "node%u", n);
		put(&s, name, n, 0, IBRES_ORIGIN_FABRIC, 0);
	}
	t0 = ns_now();
	assert_int_equal(term_index_build(&ti, &s, STORE_ALL_FABRICS, 6), 0);
	build_ns = ns_now() - t0;
	{
		struct store_digest all;

		store_digest(&s, &all); /* what the store kept of them */
		assert_true(all.hosts > COST_HOSTS / 2);
		assert_int_equal(ti.n, all.hosts);
	}
	store_range_digest(&s, &whole, STORE_ALL_FABRICS, walk);
	term_index_digest(&ti, &whole, index);
	assert_memory_equal(walk, index, sizeof(walk));
	printf("# term index of %zu hosts: built in %.2f ms\n", ti.n, build_ns / 1e6);
	term_index_free(&ti);
	assert_int_equal(ti.n, 0);
	store_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_parts_cover),
		cmocka_unit_test(test_digests_and_names),
		cmocka_unit_test(test_cost_48k),
		cmocka_unit_test(test_term_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
