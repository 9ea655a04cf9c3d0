// SPDX-License-Identifier: MIT
#include "core/jitter.h"

#include <sys/random.h>
#include <unistd.h>

#include "core/clock.h"

void jitter_seed(struct jitter_rng *r)
{
	if (getrandom(&r->s, sizeof(r->s), GRND_NONBLOCK) != sizeof(r->s))
		r->s = now_ms() ^ (uint64_t)getpid() << 32;
	r->s |= 1;
}

uint32_t jitter_next(struct jitter_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return (uint32_t)((r->s * 0x2545F4914F6CDD1DULL) >> 32);
}

uint64_t jitter_apply(struct jitter_rng *r, uint64_t base)
{
	uint64_t span = base / 5;

	return span ? base - base / 10 + jitter_next(r) % span : base;
}
