/* SPDX-License-Identifier: MIT */
/*
 * The resolver's table of queries in flight: one per key being asked on the
 * fabric, with its transaction id, its attempts, one loop timer and the
 * requests waiting for it. The host store never sees a query; a query ends
 * exactly once (answered, timed out, flushed) and its waiters hear how.
 */
#ifndef IBRESD_PENDING_H
#define IBRESD_PENDING_H

#include <stdint.h>

#include "core/hostkey.h"
#include "core/waiter.h"
#include "core/list.h"
#include "core/loop.h"
#include "fabric/fabric.h"

/* Queries in flight at most: a full table answers ENOMEM, never grows. */
#define PENDING_MAX 16384u


struct pending_query {
	struct list_node node; /* the table's list, oldest first */
	struct pending_query *hnext;
	struct host_key key;
	uint64_t tid;
	unsigned attempts; /* requests sent */
	/* a hint's (fabric_events.hint): where the host is, asked there alone
	 * while nobody waits */
	bool has_at;
	/* a peer named the host (at), whoever asked first and whoever waits:
	 * left unanswered, that is a loss the fabric must hear of */
	bool hinted;
	struct fabric_at at;
	struct loop_timer timer;
	struct list_node waiters;
	struct pending_table *pt;
};

struct pending_table {
	struct loop *loop;
	struct pending_query *buckets[1024];
	struct list_node all;
	unsigned n;
	uint64_t next_tid;
	struct key_hasher kh;
	/* The owner's: a query's timer fired (retry or give up). */
	void (*on_timer)(struct pending_query *q, void *arg);
	void *arg;
};

void pending_init(struct pending_table *pt, struct loop *loop,
		  void (*on_timer)(struct pending_query *q, void *arg), void *arg);
/* Ends every query with -ECANCELED. */
void pending_fini(struct pending_table *pt);

struct pending_query *pending_find(struct pending_table *pt, const struct host_key *k);
struct pending_query *pending_find_tid(struct pending_table *pt, uint64_t tid);
/* A new query for @k (not in the table), with a fresh transaction id and no
 * attempt yet. NULL with errno ENOMEM (also when PENDING_MAX are in flight). */
struct pending_query *pending_add(struct pending_table *pt, const struct host_key *k);
/* Fire @q's timer at @due_ms. 0 or -ENOMEM. */
int pending_arm(struct pending_query *q, uint64_t due_ms);
void pending_wait(struct pending_query *q, struct lookup_waiter *w);
/* End @q: out of the table, its waiters told @status, freed. */
void pending_end(struct pending_query *q, int status);
/* End every query with @status. Returns how many. */
unsigned pending_end_all(struct pending_table *pt, int status);

/* Visit the queries, oldest first; stop when @cb returns nonzero. */
void pending_foreach(struct pending_table *pt, int (*cb)(const struct pending_query *q, void *arg),
		     void *arg);

#endif
