// SPDX-License-Identifier: MIT
/* wall_us() in a file of its own, as now_ms() is alone in clock.c: a unit
 * test that brings a fake of one clock does not pull in the other. */
#include "core/clock.h"

#include <time.h>

uint64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
