// SPDX-License-Identifier: MIT
/*
 * The IB MTU and rate enumerations and their units, as two tables: every
 * conversion either way is a search of one of them, so a new rate is one
 * line here. Lookups only: no logging, no state.
 */
#include "ibenum.h"

#include <errno.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	uint8_t mtu;
	uint16_t bytes;
} ib_mtus[] = {
	{1, 256}, {2, 512}, {3, 1024}, {4, 2048}, {5, 4096},
};

struct ib_rate {
	uint8_t rate;
	uint16_t gbps10; /* Gb/s x 10 */
	const char *gbps;
};

/* Slowest first. The IBTA numbers grew as speeds were added, so they are not
 * in order of speed: compare rates by gbps10. */
static const struct ib_rate ib_rates[] = {
	{2, 25, "2.5"},	   {5, 50, "5"},      {3, 100, "10"},	 {11, 140, "14"},
	{6, 200, "20"},	   {15, 250, "25"},   {19, 280, "28"},	 {4, 300, "30"},
	{7, 400, "40"},	   {20, 500, "50"},   {12, 560, "56"},	 {8, 600, "60"},
	{9, 800, "80"},	   {16, 1000, "100"}, {13, 1120, "112"}, {10, 1200, "120"},
	{14, 1680, "168"}, {17, 2000, "200"}, {18, 3000, "300"}, {21, 4000, "400"},
	{22, 6000, "600"},
};

static const struct ib_rate *rate_of_enum(uint8_t rate)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(ib_rates); i++)
		if (ib_rates[i].rate == rate)
			return &ib_rates[i];
	return NULL;
}

int ib_mtu_from_bytes(unsigned bytes)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(ib_mtus); i++)
		if (ib_mtus[i].bytes == bytes)
			return ib_mtus[i].mtu;
	return -EINVAL;
}

unsigned ib_mtu_to_bytes(uint8_t mtu)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(ib_mtus); i++)
		if (ib_mtus[i].mtu == mtu)
			return ib_mtus[i].bytes;
	return 0;
}

int ib_rate_from_gbps(const char *gbps)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(ib_rates); i++)
		if (!strcmp(gbps, ib_rates[i].gbps))
			return ib_rates[i].rate;
	return -EINVAL;
}

const char *ib_rate_to_gbps(uint8_t rate)
{
	const struct ib_rate *r = rate_of_enum(rate);

	return r ? r->gbps : "?";
}

int ib_rate_from_gbps10(unsigned gbps10)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(ib_rates); i++)
		if (ib_rates[i].gbps10 == gbps10)
			return ib_rates[i].rate;
	return -EINVAL;
}

unsigned ib_rate_to_gbps10(uint8_t rate)
{
	const struct ib_rate *r = rate_of_enum(rate);

	return r ? r->gbps10 : 0;
}
