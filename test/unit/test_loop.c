// SPDX-License-Identifier: MIT
/* resolverd/core/loop.c: the timer heap keeps order through arm, re-arm and cancel,
 * and the loop runs fd callbacks and due timers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <sys/epoll.h>
#include <unistd.h>

#include "core/list.h"
#include "core/loop.h"

#define N 500

struct tt {
	struct loop_timer t;
	unsigned id;
};

static unsigned fired[N], n_fired;
static struct loop *cur;

static void on_timer(struct loop_timer *t)
{
	fired[n_fired++] = container_of(t, struct tt, t)->id;
	if (n_fired == N / 2 || n_fired == N)
		loop_stop(cur);
}

static void test_heap_order(void **state)
{
	static struct tt ts[N];
	struct loop l;
	uint64_t now = now_ms();
	/* All due already, without wrapping the unsigned clock on a machine
	 * that booted seconds ago (a fresh CI machine): due times stay >= 1. */
	uint64_t base = now > 1001 ? now - 1001 : 1;

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	cur = &l;
	srand(1);
	for (unsigned i = 0; i < N; i++) {
		ts[i].id = i;
		ts[i].t.cb = on_timer;
		assert_int_equal(loop_timer_arm(&l, &ts[i].t, base + (uint64_t)(rand() % 1000)), 0);
	}
	/* re-arm half of them, cancel a quarter */
	for (unsigned i = 0; i < N; i += 2)
		loop_timer_arm(&l, &ts[i].t, base + (uint64_t)(rand() % 1000));
	for (unsigned i = 1; i < N; i += 4)
		loop_timer_cancel(&l, &ts[i].t);
	for (unsigned i = 1; i < N; i += 4)
		assert_false(loop_timer_armed(&ts[i].t));
	/* refill so exactly N fire: re-arm the cancelled ones */
	for (unsigned i = 1; i < N; i += 4)
		loop_timer_arm(&l, &ts[i].t, base + (uint64_t)(rand() % 1000));
	n_fired = 0;
	assert_int_equal(loop_run(&l), 0);
	assert_int_equal(n_fired, N / 2);
	assert_int_equal(loop_run(&l), 0); /* the rest, until all N fired */
	assert_int_equal(n_fired, N);
	for (unsigned i = 1; i < n_fired; i++)
		assert_true(ts[fired[i - 1]].t.due_ms <= ts[fired[i]].t.due_ms);
	loop_fini(&l);
}

static int pipefd[2];
static int fd_calls;

static void on_fd(struct loop_fd *lf, uint32_t events)
{
	char c;

	assert_true(events & EPOLLIN);
	assert_int_equal(read(lf->fd, &c, 1), 1);
	fd_calls++;
}

static void stop_timer(struct loop_timer *t)
{
	(void)t;
	loop_stop(cur);
}

static void test_fd_and_timer(void **state)
{
	struct loop l;
	struct loop_fd lf = { .cb = on_fd };
	struct loop_timer stop = { .cb = stop_timer };
	uint64_t t0 = now_ms();

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	cur = &l;
	assert_int_equal(pipe(pipefd), 0);
	lf.fd = pipefd[0];
	assert_int_equal(loop_add_fd(&l, &lf, EPOLLIN), 0);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	loop_timer_arm(&l, &stop, t0 + 50);
	assert_int_equal(loop_run(&l), 0);
	assert_int_equal(fd_calls, 1);
	assert_true(now_ms() >= t0 + 50); /* never woken early */
	loop_del_fd(&l, &lf);
	close(pipefd[0]);
	close(pipefd[1]);
	loop_fini(&l);
}

static uint64_t order_due[3];
static unsigned n_order;

static void record_timer(struct loop_timer *t)
{
	assert_true(now_ms() >= t->due_ms); /* never early */
	order_due[n_order++] = t->due_ms;
	if (n_order == 2)
		loop_stop(cur);
}

static struct loop_timer *to_cancel, *to_arm;
static uint64_t to_arm_due;

/* A file descriptor event that cancels the earliest timer after the loop
 * has programmed the timerfd for it, and arms a later one. */
static void on_fd_cancel(struct loop_fd *lf, uint32_t events)
{
	char c;

	(void)events;
	assert_int_equal(read(lf->fd, &c, 1), 1);
	loop_timer_cancel(cur, to_cancel);
	loop_timer_arm(cur, to_arm, to_arm_due);
}

/* The timerfd holds only the earliest deadline and is only moved earlier. A
 * cancelled earliest timer leaves it set: it fires early once, finds nothing
 * due, and is set again, so the next timers still fire, in order and never
 * early. */
static void test_timerfd_follows_the_heap(void **state)
{
	struct loop l;
	struct loop_fd lf = { .cb = on_fd_cancel };
	struct loop_timer late = { .cb = record_timer }, mid = { .cb = record_timer },
			  gone = { .cb = record_timer };
	int p[2];
	uint64_t t0 = now_ms();

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	cur = &l;
	n_order = 0;
	assert_int_equal(pipe(p), 0);
	lf.fd = p[0];
	assert_int_equal(loop_add_fd(&l, &lf, EPOLLIN), 0);
	loop_timer_arm(&l, &late, t0 + 80);
	loop_timer_arm(&l, &gone, t0 + 20);
	to_cancel = &gone;
	to_arm = &mid;
	to_arm_due = t0 + 50;
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_run(&l), 0);
	assert_int_equal(n_order, 2);
	assert_true(order_due[0] == t0 + 50 && order_due[1] == t0 + 80);
	assert_true(now_ms() < t0 + 1000); /* and not slept past them either */
	loop_del_fd(&l, &lf);
	close(p[0]);
	close(p[1]);
	loop_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_order),
		cmocka_unit_test(test_fd_and_timer),
		cmocka_unit_test(test_timerfd_follows_the_heap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
