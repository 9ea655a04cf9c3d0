// SPDX-License-Identifier: MIT
/* The table of queries in flight (see pending.h). */
#include "engine/pending.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS (sizeof(((struct pending_table *)0)->buckets) / sizeof(struct pending_query *))

static void on_query_timer(struct loop_timer *t)
{
	struct pending_query *q = container_of(t, struct pending_query, timer);

	q->pt->on_timer(q, q->pt->arg);
}

void pending_init(struct pending_table *pt, struct loop *loop,
		  void (*on_timer)(struct pending_query *q, void *arg), void *arg)
{
	memset(pt, 0, sizeof(*pt));
	pt->loop = loop;
	list_init(&pt->all);
	key_hasher_init(&pt->kh);
	/* a random start: a restarted daemon does not accept answers meant
	 * for the queries of its previous life */
	pt->next_tid = pt->kh.seed[0] >> 16 | 1;
	pt->on_timer = on_timer;
	pt->arg = arg;
}

void pending_fini(struct pending_table *pt)
{
	pending_end_all(pt, -ECANCELED);
}

static unsigned bucket(const struct pending_table *pt, const struct host_key *k)
{
	return (unsigned)(host_key_hash(&pt->kh, k) % BUCKETS);
}

struct pending_query *pending_find(struct pending_table *pt, const struct host_key *k)
{
	for (struct pending_query *q = pt->buckets[bucket(pt, k)]; q; q = q->hnext)
		if (host_key_eq(&q->key, k))
			return q;
	return NULL;
}

struct pending_query *pending_find_tid(struct pending_table *pt, uint64_t tid)
{
	struct list_node *pos, *tmp;

	/* a handful in flight at a time: a list walk is cheaper than an index */
	list_for_each_safe(pos, tmp, &pt->all)
	{
		struct pending_query *q = list_entry(pos, struct pending_query, node);

		if (q->tid == tid)
			return q;
	}
	return NULL;
}

struct pending_query *pending_add(struct pending_table *pt, const struct host_key *k)
{
	struct pending_query *q;
	unsigned b;

	if (pt->n >= PENDING_MAX || !host_key_valid(k)) {
		errno = pt->n >= PENDING_MAX ? ENOMEM : EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->key = *k;
	q->tid = pt->next_tid++;
	q->pt = pt;
	q->timer.cb = on_query_timer;
	list_init(&q->waiters);
	b = bucket(pt, k);
	q->hnext = pt->buckets[b];
	pt->buckets[b] = q;
	list_add_tail(&pt->all, &q->node);
	pt->n++;
	return q;
}

int pending_arm(struct pending_query *q, uint64_t due_ms)
{
	return loop_timer_arm(q->pt->loop, &q->timer, due_ms);
}

void pending_wait(struct pending_query *q, struct lookup_waiter *w)
{
	list_add_tail(&q->waiters, &w->node);
}

void pending_end(struct pending_query *q, int status)
{
	struct pending_table *pt = q->pt;
	struct pending_query **pp;

	for (pp = &pt->buckets[bucket(pt, &q->key)]; *pp; pp = &(*pp)->hnext)
		if (*pp == q) {
			*pp = q->hnext;
			break;
		}
	list_del(&q->node);
	pt->n--;
	loop_timer_cancel(pt->loop, &q->timer);
	/* out of the table already: a callback that looks again starts anew */
	lookup_waiters_wake(&q->waiters, status);
	free(q);
}

unsigned pending_end_all(struct pending_table *pt, int status)
{
	unsigned n = 0;

	while (!list_empty(&pt->all)) {
		pending_end(list_entry(pt->all.next, struct pending_query, node), status);
		n++;
	}
	return n;
}

void pending_foreach(struct pending_table *pt, int (*cb)(const struct pending_query *q, void *arg),
		     void *arg)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &pt->all)
	{
		if (cb(list_entry(pos, struct pending_query, node), arg))
			return;
	}
}
