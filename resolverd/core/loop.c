// SPDX-License-Identifier: MIT
#include "core/loop.h"
#include "core/list.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_EVENTS 64

/* The timerfd expired: nothing to do here but note it; the due timers run
 * after every batch of events. */
static void on_timerfd(struct loop_fd *lf, uint32_t events)
{
	struct loop *l = container_of(lf, struct loop, timer_lf);
	uint64_t expirations;

	(void)events;
	while (read(lf->fd, &expirations, sizeof(expirations)) < 0 && errno == EINTR)
		;
	l->timerfd_due_ms = 0;
}

int loop_init(struct loop *l)
{
	int ret;

	l->stop = false;
	l->heap = NULL;
	l->n_timers = l->cap_timers = 0;
	l->timerfd_due_ms = 0;
	l->timer_lf.fd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		return -errno;
	l->timer_lf.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->timer_lf.fd < 0) {
		ret = -errno;
		goto err_epoll;
	}
	l->timer_lf.cb = on_timerfd;
	ret = loop_add_fd(l, &l->timer_lf, EPOLLIN);
	if (ret)
		goto err_timerfd;
	return 0;

err_timerfd:
	close(l->timer_lf.fd);
	l->timer_lf.fd = -1;
err_epoll:
	close(l->epfd);
	l->epfd = -1;
	return ret;
}

void loop_fini(struct loop *l)
{
	if (l->timer_lf.fd >= 0)
		close(l->timer_lf.fd);
	l->timer_lf.fd = -1;
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
	free(l->heap);
	l->heap = NULL;
	l->n_timers = l->cap_timers = 0;
}

int loop_add_fd(struct loop *l, struct loop_fd *lf, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = lf };

	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, lf->fd, &ev) < 0)
		return -errno;
	lf->events = events;
	return 0;
}

int loop_mod_fd(struct loop *l, struct loop_fd *lf, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = lf };

	if (lf->events == events)
		return 0;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, lf->fd, &ev) < 0)
		return -errno;
	lf->events = events;
	return 0;
}

void loop_del_fd(struct loop *l, struct loop_fd *lf)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, lf->fd, NULL);
	lf->events = 0;
}

static void heap_swap(struct loop *l, unsigned a, unsigned b)
{
	struct loop_timer *t = l->heap[a];

	l->heap[a] = l->heap[b];
	l->heap[b] = t;
	l->heap[a]->heap_index = a;
	l->heap[b]->heap_index = b;
}

static void heap_up(struct loop *l, unsigned i)
{
	while (i > 1 && l->heap[i / 2]->due_ms > l->heap[i]->due_ms) {
		heap_swap(l, i, i / 2);
		i /= 2;
	}
}

static void heap_down(struct loop *l, unsigned i)
{
	for (;;) {
		unsigned least = i, c = 2 * i;

		if (c <= l->n_timers && l->heap[c]->due_ms < l->heap[least]->due_ms)
			least = c;
		if (c + 1 <= l->n_timers && l->heap[c + 1]->due_ms < l->heap[least]->due_ms)
			least = c + 1;
		if (least == i)
			return;
		heap_swap(l, i, least);
		i = least;
	}
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	unsigned i = t->heap_index;

	if (!i)
		return;
	t->heap_index = 0;
	if (i != l->n_timers) {
		l->heap[i] = l->heap[l->n_timers];
		l->heap[i]->heap_index = i;
		l->n_timers--;
		heap_up(l, i);
		heap_down(l, i);
	} else {
		l->n_timers--;
	}
}

int loop_timer_arm(struct loop *l, struct loop_timer *t, uint64_t due_ms)
{
	loop_timer_cancel(l, t);
	if (l->n_timers + 1 >= l->cap_timers) {
		unsigned cap = l->cap_timers ? l->cap_timers * 2 : 64;
		struct loop_timer **h = realloc(l->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->cap_timers = cap;
	}
	t->due_ms = due_ms;
	l->heap[++l->n_timers] = t;
	t->heap_index = l->n_timers;
	heap_up(l, t->heap_index);
	return 0;
}

void loop_run_due(struct loop *l)
{
	uint64_t now = now_ms();

	while (l->n_timers && l->heap[1]->due_ms <= now && !l->stop) {
		struct loop_timer *t = l->heap[1];

		loop_timer_cancel(l, t);
		t->cb(t);
	}
}

/* The epoll_wait timeout: 0 when a timer is due, else none, with the
 * timerfd set to the earliest deadline. The timerfd is only moved earlier:
 * when the earliest timer was cancelled it fires early once, finds nothing
 * due, and is set again, which costs less than a system call on every
 * cancel. Should the timerfd refuse, a plain timeout does the job. */
static int next_timeout(struct loop *l)
{
	struct itimerspec its = { 0 };
	uint64_t now, due;

	if (!l->n_timers)
		return -1;
	now = now_ms();
	due = l->heap[1]->due_ms;
	if (due <= now)
		return 0;
	if (l->timerfd_due_ms && l->timerfd_due_ms <= due)
		return -1;
	its.it_value.tv_sec = (time_t)(due / 1000);
	its.it_value.tv_nsec = (long)(due % 1000) * 1000000;
	if (timerfd_settime(l->timer_lf.fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
		l->timerfd_due_ms = due;
		return -1;
	}
	/* +1 so a timer is never woken for early by rounding */
	return due - now > 60000 ? 60000 : (int)(due - now) + 1;
}

int loop_run(struct loop *l)
{
	struct epoll_event events[LOOP_MAX_EVENTS];

	l->stop = false;
	while (!l->stop) {
		int n = epoll_wait(l->epfd, events, LOOP_MAX_EVENTS, next_timeout(l));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !l->stop; i++) {
			struct loop_fd *lf = events[i].data.ptr;

			lf->cb(lf, events[i].events);
		}
		loop_run_due(l);
	}
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}
