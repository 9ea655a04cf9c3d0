/* SPDX-License-Identifier: MIT */
/* Shared by fuzz_dirpack.c and fuzz_anspack.c: a decoded host record packed
 * the way the NSS module packs it (nss/pack.c), at every buffer size. */
#ifndef FUZZ_PACK_CHECK_H
#define FUZZ_PACK_CHECK_H

#include <stdint.h>

#include "hostrec.h"

/* What a decoder returned as a record must be one hostrec_check() accepts.
 * Then pack @rec as each NSS entry point does: gethostbyname (AF_INET),
 * gethostbyname2/3 (AF_INET, AF_INET6, and AF_IB's GIDs), gethostbyaddr
 * (one address of each family it has, the one asked about) and the
 * gethostbyname4 tuples (the caller's first tuple or none), each into a
 * buffer of every size from 0 up to the first that fits, ending where its
 * allocation ends: -ERANGE below, 0 there, everything returned inside the
 * buffer and equal to the record; ASan catches a byte written past the
 * end, guard bytes one written before the start. abort()s on a violation. */
void pack_check(const struct ibres_hostrec *rec);

#endif
