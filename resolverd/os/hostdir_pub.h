/* SPDX-License-Identifier: MIT */
/*
 * Publishing the host store as the shared host directory (lib/hostdir.h):
 * a read-only file that libnss_ib and libibres map and answer from with no
 * system call. The publisher follows the store (store_observe): every host
 * added, refreshed or gone is written into the file at once, under sequence
 * counters; growth, or too many deleted slots, makes a new file renamed over
 * the old one. The scope (is a key absent from the file known not to exist?
 * the name patterns) comes from the resolver. A failure (no space on /run, a
 * read-only directory) is logged once: readers then ask the daemon's socket,
 * and the publisher tries again every few seconds.
 */
#ifndef IBRESD_HOSTDIR_PUB_H
#define IBRESD_HOSTDIR_PUB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/loop.h"

struct hostdir_pub;

/* Shown by STATS: bytes is a gauge, the rest counters. */
struct hostdir_stats {
	uint64_t bytes;	   /* size of the file published now (0: none) */
	uint64_t records;  /* hosts in it (a gauge) */
	uint64_t rebuilds; /* new files written (start, growth, compaction) */
	uint64_t failures; /* files that could not be written */
};

/* Publish @store at @path (its directory must exist), built from the whole
 * store now, and follow it. *@out is NULL with the error logged when the
 * first file cannot be made; the daemon then serves over its socket only. */
int hostdir_start(struct hostdir_pub **out, struct loop *loop, struct host_store *store,
		  const char *path);
/* Mark the file closed (readers stop using it), remove it, stop following. */
void hostdir_stop(struct hostdir_pub *p);

/* What a reader may say of a key the file does not hold: from
 * @authoritative_from_ms on (CLOCK_MONOTONIC; 0 always, UINT64_MAX never),
 * that it does not exist; and a name that matches none of the @n fnmatch(3)
 * @patterns (@stride bytes apart) is not a cluster name. Written only when
 * it changed. */
void hostdir_set_scope(struct hostdir_pub *p, uint64_t authoritative_from_ms,
		       const char *patterns, size_t stride, unsigned n);

void hostdir_stats(const struct hostdir_pub *p, struct hostdir_stats *out);

#endif
