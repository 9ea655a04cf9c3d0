/* SPDX-License-Identifier: MIT */
/* Something (a client request, mostly) waiting for a query to end: a query
 * on the fabric (engine/pending.h) or to the Subnet Administrator (ib/). */
#ifndef IBRESD_WAITER_H
#define IBRESD_WAITER_H

#include "core/list.h"

struct lookup_waiter {
	struct list_node node;
	/* 0: done (the key has a host now, the path is in place); or a
	 * negative errno (-ETIMEDOUT: no answer in time; -ECANCELED: flushed;
	 * -ENODATA: the host went meanwhile). Called once, with the waiter
	 * already unlinked (it may be freed); it must not end queries. */
	void (*done)(struct lookup_waiter *w, int status);
};

/* Unlink a waiter that gave up; no callback. Harmless when already done or
 * never queued (a zeroed waiter). */
static inline void lookup_waiter_cancel(struct lookup_waiter *w)
{
	if (w->node.next && w->node.next != &w->node)
		list_del(&w->node);
	list_init(&w->node);
}

/* Complete every waiter on @head with @status. The list is taken off @head
 * first, so a callback may queue new waiters there (not woken by this
 * call) and @head's owner may be freed by the caller right after. */
static inline void lookup_waiters_wake(struct list_node *head, int status)
{
	struct list_node woken;

	list_init(&woken);
	if (!list_empty(head)) {
		woken.next = head->next;
		woken.prev = head->prev;
		woken.next->prev = &woken;
		woken.prev->next = &woken;
		list_init(head);
	}
	while (!list_empty(&woken)) {
		struct lookup_waiter *w = list_entry(woken.next, struct lookup_waiter, node);

		list_del(&w->node);
		list_init(&w->node);
		if (w->done)
			w->done(w, status);
	}
}

#endif
