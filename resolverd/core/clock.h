/* SPDX-License-Identifier: MIT */
/* The daemon's one clock. It lives alone in clock.c so that a unit test can
 * link its own now_ms() (a fake clock) in place of this one. */
#ifndef IBRESD_CLOCK_H
#define IBRESD_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC. Never assume it is large: a machine may
 * have booted seconds ago. */
uint64_t now_ms(void);

/* Microseconds of CLOCK_REALTIME: wall time, comparable between nodes
 * whose clocks agree; it may step either way. Only for freshness stamps. */
uint64_t wall_us(void);

#endif
