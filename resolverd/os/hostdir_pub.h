/* SPDX-License-Identifier: MIT */
/*
 * Publishing the host store as the shared host directory (lib/hostdir.h):
 * a sealed memfd that libnss_ib and libibres receive over the daemon's
 * socket, map read-only and answer from with no system call. The publisher
 * follows the store (store_observe): every host added, refreshed or gone is
 * written into the mapping at once, under sequence counters; growth makes a
 * new generation, and the old one says IBDIR_REPLACED; so does a directory
 * that stopped growing, once, into a file with less room. The scope (is a key
 * absent from it known not to exist? the name patterns) comes from the
 * resolver. A failure (no memory) is logged once: readers then ask the
 * daemon's socket, and the publisher tries again every few seconds.
 */
#ifndef IBRESD_HOSTDIR_PUB_H
#define IBRESD_HOSTDIR_PUB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/loop.h"

struct hostdir_pub;

/* A new file, once one is due (the last one filled up), waits until the
 * store has not changed for this long (or three seconds have passed). */
#define HOSTDIR_REBUILD_QUIET_MS 100u

/* Shown by STATS: bytes is a gauge, the rest counters. */
struct hostdir_stats {
	uint64_t bytes;	   /* size of the generation published now (0: none) */
	uint64_t records;  /* hosts in it (a gauge) */
	uint64_t rebuilds; /* generations written (start, growth, compaction) */
	uint64_t failures; /* generations that could not be made */
};

/* Publish @store, built from the whole store now, and follow it. A
 * generation that cannot be made is logged and tried again; readers ask
 * over the socket meanwhile. -ENOMEM only. */
int hostdir_start(struct hostdir_pub **out, struct loop *loop, struct host_store *store);
/* Mark the generation closed (readers stop using it), stop following. */
void hostdir_stop(struct hostdir_pub *p);

/* The descriptor of the generation published now (a memfd sealed against
 * shrinking, growing and writing: what a reader is handed) and its size in
 * *@size; it stays ours. -ENODATA when none is published. */
int hostdir_fd(const struct hostdir_pub *p, uint64_t *size);

/* What a reader may say of a key the file does not hold: from
 * @authoritative_from_ms on (CLOCK_MONOTONIC; 0 always, UINT64_MAX never),
 * that it does not exist; and a name that matches none of the @n fnmatch(3)
 * @patterns (@stride bytes apart) is not a cluster name. Written only when
 * it changed. */
void hostdir_set_scope(struct hostdir_pub *p, uint64_t authoritative_from_ms,
		       const char *patterns, size_t stride, unsigned n);

void hostdir_stats(const struct hostdir_pub *p, struct hostdir_stats *out);

/* Write the store into a compact generation now (little room to grow), if
 * that makes the file an eighth smaller; else keep the one published. The
 * publisher does so itself once the directory took no new room for a
 * minute; until the next generation made for growth, no more. 0 (also
 * when it was not worth it), -EAGAIN (none published, or one for growth is
 * due), or the failure: the file published stays, unless the new one
 * could not hold the store after all (its sizing is an upper bound, so it
 * should not happen), and then a file for growth is made at once. */
int hostdir_compact(struct hostdir_pub *p);

#endif
