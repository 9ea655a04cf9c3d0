/* SPDX-License-Identifier: MIT */
/* The InfiniBand MTU and rate enumerations (IBTA numbering, the same as enum
 * ibv_mtu and enum ibv_rate) and the units people write them in, one table
 * each, for the daemon, its config parser and ibresctl. Internal: nothing
 * here is exported from libibres.so. */
#ifndef IBRES_IBENUM_H
#define IBRES_IBENUM_H

#include <stdint.h>

/* MTU in bytes (256, 512, 1024, 2048 or 4096) -> enum 1..5, else -EINVAL. */
int ib_mtu_from_bytes(unsigned bytes);

/* MTU enum -> bytes, 0 if unknown. */
unsigned ib_mtu_to_bytes(uint8_t mtu);

/* Rate in Gb/s as config files write it ("2.5", "10", "100"...; exactly one
 * of the strings ib_rate_to_gbps returns) -> enum, else -EINVAL. */
int ib_rate_from_gbps(const char *gbps);

/* Rate enum -> Gb/s text ("2.5", "10"...), "?" if unknown. */
const char *ib_rate_to_gbps(uint8_t rate);

/* Rate in tenths of Gb/s (25 for 2.5) -> enum, else -EINVAL. */
int ib_rate_from_gbps10(unsigned gbps10);

/* Rate enum -> tenths of Gb/s, 0 if unknown: comparable, so the slower of
 * two rates can be chosen. */
unsigned ib_rate_to_gbps10(uint8_t rate);

#endif
