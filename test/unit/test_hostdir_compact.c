// SPDX-License-Identifier: MIT
/*
 * The shared directory once it stopped growing (os/hostdir_pub.c,
 * hostdir_compact()): the publisher writes the store again into a file with
 * less room, readers of the old one are told to fetch it, every host is in
 * it, and growth after it still works; a directory too small to shrink by
 * an eighth keeps its file; the heartbeat does it after HOSTDIR_COMPACT_BEATS
 * beats without growth, and growth starts the count again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hostdir.h"
#include "hostdir_fixture.h"
#include "ibres.h"
#include "os/hostdir_impl.h"

/* Enough hosts that the room of a file made for growth is worth dropping:
 * records past REC_AREA_MIN, tables past SLOTS_MIN. */
#define MANY 4000u

/* Hosts @from..@to-1 into the store, and the loop turned until the file
 * holds them: a new one made for growth is made once the store is quiet
 * (HOSTDIR_REBUILD_QUIET_MS), bounded. */
static void put_many(struct fx *f, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		hdfx_put(f, i, 1, IBRES_ORIGIN_FABRIC, 600);
	loop_run_due(&f->loop); /* the loop turn that ends the write section */
	for (unsigned i = 0; i < 100 && f->pub->rebuild; i++) {
		usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
		loop_run_due(&f->loop);
	}
	assert_false(f->pub->rebuild);
}

/* Every host @from..@to-1 of @m by name, by IPv4 address and by GID. */
static void all_found(const void *m, size_t size, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		struct ibres_hostrec want, got;

		hdfx_rec(&want, i, 1);
		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, want.names[0],
					   strlen(want.names[0]), &got),
				 0);
		assert_string_equal(got.names[1], want.names[1]);
		assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &want.v4[0], 4, &got), 0);
		assert_string_equal(got.names[0], want.names[0]);
		assert_int_equal(hdfx_look(m, size, IBRES_T_GID, want.gids[0], 16, &got), 0);
		assert_string_equal(got.names[0], want.names[0]);
	}
}

static uint64_t rebuilds(const struct fx *f)
{
	struct hostdir_stats st;

	hostdir_stats(f->pub, &st);
	return st.rebuilds;
}

static void test_compact_shrinks_and_keeps_every_host(void **state)
{
	struct fx *f = *state;
	size_t size0, size1, size2;
	uint64_t gens;
	void *m0, *m1, *m2;

	put_many(f, 0, MANY);
	hostdir_set_scope(f->pub, 0, NULL, 0, 0); /* a miss is authoritative */
	m0 = hdfx_map(f, &size0);
	all_found(m0, size0, 0, MANY);
	gens = rebuilds(f);

	assert_int_equal(hostdir_compact(f->pub), 0);
	assert_int_equal(rebuilds(f), gens + 1);
	assert_int_equal(((const struct ibdir_header *)m0)->state, IBDIR_REPLACED);
	m1 = hdfx_map(f, &size1);
	assert_true(size1 <= size0 - size0 / 8);
	assert_int_equal(((const struct ibdir_header *)m1)->state, IBDIR_LIVE);
	all_found(m1, size1, 0, MANY);
	/* authoritative as before: a name no host has is known absent */
	{
		struct ibres_hostrec got;

		assert_int_equal(hdfx_look(m1, size1, IBRES_T_NAME, "nosuchhost", 10, &got),
				 -ENODATA);
	}

	/* as compact as is worth it: asked again, it keeps the file */
	assert_int_equal(hostdir_compact(f->pub), 0);
	assert_int_equal(rebuilds(f), gens + 1);
	assert_int_equal(((const struct ibdir_header *)m1)->state, IBDIR_LIVE);

	/* a few more fit its room, in place */
	put_many(f, MANY, MANY + 50);
	assert_int_equal(rebuilds(f), gens + 1);
	all_found(m1, size1, 0, MANY + 50);

	/* growth past its room makes a file for growth again */
	put_many(f, MANY + 50, MANY + 1500);
	assert_true(rebuilds(f) >= gens + 2);
	assert_false(f->pub->compact);
	assert_int_equal(((const struct ibdir_header *)m1)->state, IBDIR_REPLACED);
	m2 = hdfx_map(f, &size2);
	all_found(m2, size2, 0, MANY + 1500);
	munmap(m0, size0);
	munmap(m1, size1);
	munmap(m2, size2);
}

/* A few hosts: the file is its minimum size already, and stays. */
static void test_compact_small_keeps_file(void **state)
{
	struct fx *f = *state;
	uint64_t gens;
	size_t size;
	void *m;

	put_many(f, 0, 20);
	gens = rebuilds(f);
	m = hdfx_map(f, &size);
	assert_int_equal(hostdir_compact(f->pub), 0);
	assert_int_equal(rebuilds(f), gens);
	assert_int_equal(((const struct ibdir_header *)m)->state, IBDIR_LIVE);
	all_found(m, size, 0, 20);
	munmap(m, size);
}

/* One heartbeat, now. */
static void beat(struct fx *f)
{
	loop_timer_arm(&f->loop, &f->pub->beat, 0);
	loop_run_due(&f->loop);
}

/* The heartbeat compacts once nothing grew for HOSTDIR_COMPACT_BEATS beats;
 * a new host meanwhile starts the count again; a refresh is not growth. */
static void test_compact_after_quiet_beats(void **state)
{
	struct fx *f = *state;
	uint64_t gens;
	size_t size;
	void *m;

	put_many(f, 0, MANY);
	gens = rebuilds(f);
	beat(f); /* the count starts after the writes above */
	for (unsigned i = 0; i < HOSTDIR_COMPACT_BEATS - 1; i++)
		beat(f);
	assert_int_equal(rebuilds(f), gens);
	put_many(f, MANY, MANY + 1); /* growth */
	for (unsigned i = 0; i < HOSTDIR_COMPACT_BEATS; i++) {
		beat(f);
		/* heard again unchanged: only its expiry moves */
		hdfx_put(f, i % MANY, 1, IBRES_ORIGIN_FABRIC, 600);
		assert_int_equal(rebuilds(f), gens);
	}
	beat(f);
	assert_int_equal(rebuilds(f), gens + 1);
	m = hdfx_map(f, &size);
	all_found(m, size, 0, MANY + 1);
	/* once: no more beats make another */
	for (unsigned i = 0; i < 2 * HOSTDIR_COMPACT_BEATS; i++)
		beat(f);
	assert_int_equal(rebuilds(f), gens + 1);
	assert_int_equal(((const struct ibdir_header *)m)->state, IBDIR_LIVE);
	munmap(m, size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_compact_shrinks_and_keeps_every_host,
						hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_small_keeps_file, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_after_quiet_beats, hdfx_setup,
						hdfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
