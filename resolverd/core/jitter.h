/* SPDX-License-Identifier: MIT */
/* Randomness for timing only (retry and announce jitter, start-up delays,
 * burst ids): xorshift64*, seeded from getrandom() without blocking on an
 * early-boot pool. Never for anything an attacker must not guess. */
#ifndef IBRESD_JITTER_H
#define IBRESD_JITTER_H

#include <stdint.h>

struct jitter_rng {
	uint64_t s; /* never 0 */
};

void jitter_seed(struct jitter_rng *r);
/* 32 random bits. */
uint32_t jitter_next(struct jitter_rng *r);
/* @base ± 10 %. */
uint64_t jitter_apply(struct jitter_rng *r, uint64_t base);

#endif
