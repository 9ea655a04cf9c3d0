// SPDX-License-Identifier: MIT
/* resolverd/frontend/admission.c: the per-uid quota, which connection goes
 * when the socket is full, and root's place, without sockets: connections
 * are array slots offered oldest first, as the server walks its list. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "frontend/admission.h"

struct conn {
	struct adm_uid *owner;
	bool waits;   /* a lookup in progress: not offered */
	bool unknown; /* root's, its real uid not known (it sent nothing yet) */
};

static struct admission adm;
/* Root's sheltered connections (adm_pick_init()): past what these tests hold
 * unless one says otherwise. */
static unsigned quota;
static struct conn conns[64];
static unsigned n_conns;

static int setup(void **state)
{
	(void)state;
	admission_init(&adm);
	n_conns = 0;
	quota = 64;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < n_conns; i++)
		admission_put(&adm, conns[i].owner);
	assert_int_equal(adm.n_uids, 0);
	admission_fini(&adm);
	return 0;
}

static struct conn *connect_as(uid_t uid)
{
	struct conn *c = &conns[n_conns++];

	c->owner = admission_get(&adm, uid);
	c->waits = c->unknown = false;
	assert_non_null(c->owner);
	return c;
}

static struct conn *pick(uid_t newcomer, bool own_only)
{
	struct adm_pick p;

	adm_pick_init(&p, newcomer, own_only, quota);
	for (unsigned i = 0; i < n_conns; i++)
		if (!conns[i].waits)
			adm_pick_offer(&p, &conns[i], conns[i].owner, conns[i].unknown);
	return adm_pick_result(&p);
}

static void test_quota(void **state)
{
	(void)state;
	assert_int_equal(admission_quota(1024, 0), 256);
	assert_int_equal(admission_quota(16, 0), 4);
	assert_int_equal(admission_quota(3, 0), 1); /* at least one */
	assert_int_equal(admission_quota(1, 0), 1);
	assert_int_equal(admission_quota(16, 7), 7);
	assert_int_equal(admission_quota(16, 100), 100); /* then max_clients bounds it */
}

static void test_counts(void **state)
{
	struct adm_uid *a, *b;

	(void)state;
	a = admission_get(&adm, 1000);
	b = admission_get(&adm, 1000);
	assert_ptr_equal(a, b);
	assert_int_equal(admission_count(&adm, 1000), 2);
	assert_int_equal(admission_count(&adm, 1001), 0);
	/* uids in one bucket stay apart */
	for (uid_t u = 0; u < 4 * ADM_BUCKETS; u += ADM_BUCKETS / 2)
		admission_get(&adm, 5000 + u);
	for (uid_t u = 0; u < 4 * ADM_BUCKETS; u += ADM_BUCKETS / 2)
		assert_int_equal(admission_count(&adm, 5000 + u), 1);
	assert_int_equal(adm.n_uids, 9);
	admission_put(&adm, a);
	admission_put(&adm, b);
	assert_int_equal(admission_count(&adm, 1000), 0);
	for (uid_t u = 0; u < 4 * ADM_BUCKETS; u += ADM_BUCKETS / 2) {
		struct adm_uid *x = admission_get(&adm, 5000 + u);

		admission_put(&adm, x);
		admission_put(&adm, x);
	}
	assert_int_equal(adm.n_uids, 0);
}

static void test_need(void **state)
{
	(void)state;
	for (int i = 0; i < 4; i++)
		connect_as(1000);
	assert_int_equal(admission_need(&adm, 1000, 4, 16, 4), ADM_OWN_SLOT);
	assert_int_equal(admission_need(&adm, 1001, 4, 16, 4), ADM_ROOM);
	assert_int_equal(admission_need(&adm, 1001, 16, 16, 4), ADM_ANY_SLOT);
	/* root has no quota */
	for (int i = 0; i < 4; i++)
		connect_as(0);
	assert_int_equal(admission_need(&adm, 0, 8, 16, 4), ADM_ROOM);
	assert_int_equal(admission_need(&adm, 0, 16, 16, 4), ADM_ANY_SLOT);
	/* over max_clients: root alone, and only so far */
	assert_true(admission_over_max(0, 16, 16));
	assert_true(admission_over_max(0, 16 + ADM_ROOT_RESERVE - 1, 16));
	assert_false(admission_over_max(0, 16 + ADM_ROOT_RESERVE, 16));
	assert_false(admission_over_max(1000, 16, 16));
}

/* At max_clients: the oldest connection of the uid holding the most. */
static void test_pick_the_biggest_holder(void **state)
{
	struct conn *first_b;

	(void)state;
	connect_as(1000);            /* oldest, but its uid holds fewer */
	first_b = connect_as(2000);
	connect_as(2000);
	connect_as(1000);
	connect_as(2000);
	assert_ptr_equal(pick(3000, false), first_b);
	assert_ptr_equal(pick(1000, false), first_b);
	/* a connection waiting on a lookup is not offered: the next of that uid goes */
	first_b->waits = true;
	assert_ptr_equal(pick(3000, false), &conns[2]);
	/* none of the biggest holder's free: the next uid's */
	conns[2].waits = conns[4].waits = true;
	assert_ptr_equal(pick(3000, false), &conns[0]);
	conns[0].waits = conns[3].waits = true;
	assert_null(pick(3000, false));
}

/* Root's connections never make room for another uid; for root, others' go first. */
static void test_root_is_never_evicted_for_others(void **state)
{
	struct conn *user;

	(void)state;
	for (int i = 0; i < 5; i++)
		connect_as(0);
	assert_null(pick(1000, false));
	user = connect_as(1000);
	assert_ptr_equal(pick(1000, false), user);
	assert_ptr_equal(pick(0, false), user); /* root holds more, but root's go last */
	user->waits = true;
	assert_ptr_equal(pick(0, false), &conns[0]); /* root's own oldest, for root */
	assert_null(pick(1001, false));
}

/* Root's connections whose real uid nothing told (they sent nothing: a
 * user's set-user-ID programs stopped right after connecting, maybe), past
 * root's quota: those go for another uid as any uid's, the biggest holder's
 * first; root's known ones stay, and within its quota all are sheltered. */
static void test_root_beyond_its_quota_goes_for_others(void **state)
{
	struct conn *user;

	(void)state;
	quota = 4;
	user = connect_as(1000);
	connect_as(0); /* root's own, known */
	for (int i = 0; i < 4; i++)
		connect_as(0)->unknown = true;
	assert_ptr_equal(pick(2000, false), &conns[2]);
	assert_ptr_equal(pick(1000, false), &conns[2]);
	/* for root's own newcomer as ever: others' first, then root's oldest
	 * (the known one; unknown ones are no worse for root) */
	assert_ptr_equal(pick(0, false), user);
	user->waits = true;
	assert_ptr_equal(pick(0, false), &conns[1]);
	user->waits = false;
	/* an unknown one waiting on a lookup stays: the next one goes */
	conns[2].waits = true;
	assert_ptr_equal(pick(2000, false), &conns[3]);
	/* root's known one never goes for another uid */
	conns[3].waits = conns[4].waits = conns[5].waits = true;
	assert_ptr_equal(pick(2000, false), user);
	user->waits = true;
	assert_null(pick(2000, false));
	/* root back at its quota: its unknown ones are sheltered too */
	conns[5].waits = user->waits = false;
	admission_put(&adm, conns[--n_conns].owner);
	assert_ptr_equal(pick(2000, false), user);
}

/* At the quota: the newcomer's own oldest free connection, nobody else's. */
static void test_own_slot(void **state)
{
	(void)state;
	connect_as(2000);
	connect_as(2000);
	connect_as(1000);
	connect_as(1000);
	assert_ptr_equal(pick(1000, true), &conns[2]);
	conns[2].waits = true;
	assert_ptr_equal(pick(1000, true), &conns[3]);
	conns[3].waits = true;
	assert_null(pick(1000, true)); /* refused: all of its own wait on lookups */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_need, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pick_the_biggest_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_is_never_evicted_for_others, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_root_beyond_its_quota_goes_for_others, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_slot, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
