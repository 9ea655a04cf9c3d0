// SPDX-License-Identifier: MIT
/* resolverd/frontend/passed.c: sockets kept while the answer that carried a
 * descriptor is unread, and the bounds on them, over real unix socket pairs
 * (the kernel's own SIOCOUTQ says what a peer has read). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frontend/passed.h"

static struct admission adm;
static struct passed pd;

static int setup(void **state)
{
	(void)state;
	admission_init(&adm);
	passed_init(&pd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	passed_fini(&pd, &adm);
	assert_int_equal(pd.n, 0);
	assert_int_equal(adm.n_uids, 0); /* every entry released */
	admission_fini(&adm);
	return 0;
}

/* A connection of @owner that sent an answer of @len bytes: the daemon's
 * end is handed to passed_done() as the server does on closing; the
 * peer's end is returned. */
static int answer_sent(struct adm_uid *owner, size_t len)
{
	int sv[2];
	char buf[64] = { 0 };

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	passed_grant(&pd, owner);
	if (len)
		assert_int_equal(send(sv[0], buf, len, 0), (ssize_t)len);
	passed_done(&pd, &adm, sv[0], owner);
	return sv[1];
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Kept while unread, counted against the owner, its peer seeing the end of
 * the stream after the answer; gone once read or the peer closed, and the
 * entry of a uid with no connection left goes with it. */
static void test_kept_until_read(void **state)
{
	struct adm_uid *u = admission_get(&adm, 1000);
	int peer[3];
	char buf[64];

	(void)state;
	peer[0] = answer_sent(u, 28);
	peer[1] = answer_sent(u, 28);
	peer[2] = answer_sent(u, 0); /* nothing went: closed at once */
	assert_int_equal(pd.n, 2);
	assert_int_equal(u->unread, 2);
	assert_true(passed_room(&pd, &adm, u, 100, 1000));

	assert_int_equal(read(peer[0], buf, sizeof(buf)), 28);
	assert_int_equal(read(peer[0], buf, sizeof(buf)), 0); /* shut down: the end */
	close(peer[1]);
	admission_put(&adm, u); /* its last connection: the entry stays while kept */
	assert_int_equal(adm.n_uids, 1);
	/* the next one sweeps from the oldest: both are done */
	u = admission_get(&adm, 1000);
	peer[1] = answer_sent(u, 28);
	assert_int_equal(pd.n, 1);
	assert_int_equal(u->unread, 1);
	admission_put(&adm, u);
	close(peer[0]);
	close(peer[1]);
	close(peer[2]);
}

/* A grant takes its slot before its descriptor goes (an answer may wait for
 * room in the socket), and gives it back if it never goes. */
static void test_grant_counts_before_it_goes(void **state)
{
	struct adm_uid *u = admission_get(&adm, 1000);

	(void)state;
	for (unsigned i = 0; i < PASSED_UNREAD_PER_UID; i++)
		passed_grant(&pd, u);
	assert_false(passed_room(&pd, &adm, u, 100, 1000));
	passed_cancel(&pd, &adm, u);
	assert_true(passed_room(&pd, &adm, u, 100, 2000));
	for (unsigned i = 1; i < PASSED_UNREAD_PER_UID; i++)
		passed_cancel(&pd, &adm, u);
	assert_int_equal(pd.n, 0);
	assert_int_equal(u->unread, 0);
	admission_put(&adm, u);
}

/* PASSED_UNREAD_PER_UID unread of one uid: no more for it, others still get
 * theirs; the bound on all of them holds too. One read makes room, seen at
 * the next look, which comes at most every PASSED_SWEEP_MS. */
static void test_bounds(void **state)
{
	struct adm_uid *atk = admission_get(&adm, 2000), *other = admission_get(&adm, 1000);
	int peer[PASSED_UNREAD_PER_UID];
	char buf[64];

	(void)state;
	for (unsigned i = 0; i < PASSED_UNREAD_PER_UID; i++)
		peer[i] = answer_sent(atk, 28);
	assert_false(passed_room(&pd, &adm, atk, 100, 1000));
	assert_true(passed_room(&pd, &adm, other, 100, 1000));
	assert_false(passed_room(&pd, &adm, other, PASSED_UNREAD_PER_UID, 1000)); /* all */
	assert_int_equal(read(peer[3], buf, sizeof(buf)), 28);
	assert_false(passed_room(&pd, &adm, atk, 100, 1000 + PASSED_SWEEP_MS - 1));
	assert_int_equal(pd.n, PASSED_UNREAD_PER_UID);
	assert_true(passed_room(&pd, &adm, atk, 100, 1000 + PASSED_SWEEP_MS)); /* swept */
	assert_int_equal(pd.n, PASSED_UNREAD_PER_UID - 1);
	assert_true(is_open(peer[0]));
	for (unsigned i = 0; i < PASSED_UNREAD_PER_UID; i++)
		close(peer[i]);
	admission_put(&adm, atk);
	admission_put(&adm, other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kept_until_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grant_counts_before_it_goes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
