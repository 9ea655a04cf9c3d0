/* SPDX-License-Identifier: MIT */
/* The event loop: epoll for file descriptors, a binary heap of timers on
 * CLOCK_MONOTONIC behind one timerfd. Single-threaded; everything runs from
 * loop_run(). */
#ifndef IBRESD_LOOP_H
#define IBRESD_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;

struct loop_fd {
	int fd;
	uint32_t events; /* EPOLLIN/EPOLLOUT currently armed */
	void (*cb)(struct loop_fd *lf, uint32_t events);
};

struct loop_timer {
	uint64_t due_ms;
	unsigned heap_index; /* 0 = not armed */
	void (*cb)(struct loop_timer *t);
};

struct loop {
	int epfd;
	bool stop;
	struct loop_timer **heap; /* 1-based binary heap */
	unsigned n_timers, cap_timers;
	/* The heap's earliest deadline is programmed into a timerfd, and the
	 * loop sleeps in epoll_wait without a timeout: a sleep with a timeout
	 * arms and cancels a kernel timer on every wake-up, which measurably
	 * delays each wake-up on virtual machines (bench/RESULTS.md). */
	struct loop_fd timer_lf;
	uint64_t timerfd_due_ms; /* what the timerfd is set to; 0 = not set */
};

#include "core/clock.h"

int loop_init(struct loop *l);
void loop_fini(struct loop *l);
int loop_add_fd(struct loop *l, struct loop_fd *lf, uint32_t events);
int loop_mod_fd(struct loop *l, struct loop_fd *lf, uint32_t events);
void loop_del_fd(struct loop *l, struct loop_fd *lf);
/* Arm (or re-arm) a timer to fire at @due_ms. 0 or -ENOMEM. */
int loop_timer_arm(struct loop *l, struct loop_timer *t, uint64_t due_ms);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->heap_index != 0;
}
/* Run the timers that are due by now_ms(), earliest first (loop_run does
 * this after every batch of events; unit tests with a fake clock call it). */
void loop_run_due(struct loop *l);
/* Run until loop_stop(). 0, or a negative errno if epoll fails. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

#endif
