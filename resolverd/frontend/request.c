// SPDX-License-Identifier: MIT
/* One request's life (see request.h). */
#include "frontend/request.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "daemon.h"
#include "engine/resolver.h"
#include "frontend/reply.h"
#include "msg.h"

/* Slack past the fabric's own bound before a waiting request gives up. */
#define WAIT_SLACK_MS 500
/* A request waits at most this many bounds in all (its look-up, its path,
 * the path's check): a wait that ends only to start again (a path the SA
 * gives and that leaves the request waiting for it still) ends too. */
#define REQUEST_WAITS_MAX 3

/* The query ended (called from inside the resolver or the SA client: do
 * nothing but schedule). */
static void request_woken(struct lookup_waiter *w, int status)
{
	struct request *req = container_of(w, struct request, waiter);

	req->woken = true;
	req->wake_status = status;
	loop_timer_arm(&req->d->loop, &req->deadline, 0);
}

uint64_t request_bound_ms(const struct ibres_config *cfg)
{
	return resolver_bound_ms(cfg) + WAIT_SLACK_MS;
}

static void request_arm(struct ibresd *d, struct request *req)
{
	uint64_t at = now_ms() + request_bound_ms(&d->cfg);

	req->woken = false;
	loop_timer_arm(&d->loop, &req->deadline, at < req->until_ms ? at : req->until_ms);
}

/* @req fails with @status (a negative errno): the client hears so. */
static void request_fail(struct ibresd *d, struct request *req, int status)
{
	size_t len = 0;

	if (status == -ETIMEDOUT)
		d->stats.pending_timeouts++;
	reply_status(req, d->scratch, &len, ibres_errno_to_status(status));
	req->complete(req, d->scratch, len);
}

/* The wait ended: woken, or the bound passed. */
static void request_resume(struct loop_timer *t)
{
	struct request *req = container_of(t, struct request, deadline);
	struct ibresd *d = req->d;
	int status = req->woken ? req->wake_status : -ETIMEDOUT;
	size_t len = 0;
	int ret;

	if (!req->woken)
		lookup_waiter_cancel(&req->waiter); /* every wait has a bound */
	req->woken = false;
	if (status < 0 && !req->finish_on_failure) {
		/* the query failed (timed out, flushed): say so */
		request_fail(d, req, status);
		return;
	}
	ret = req->op->finish(d, req, d->scratch, &len);
	if (ret == REQ_WAIT && now_ms() < req->until_ms) {
		request_arm(d, req);
		return;
	}
	if (ret == REQ_WAIT) {
		/* every bound it had spent: it waits no more */
		lookup_waiter_cancel(&req->waiter);
		request_fail(d, req, -ETIMEDOUT);
		return;
	}
	if (ret < 0)
		reply_status(req, d->scratch, &len, IBRES_STATUS_EINVAL);
	req->complete(req, d->scratch, len);
}

int request_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	const struct ibres_hdr *h = request_hdr(req);
	const struct opcode_handler *op;
	int ret;

	req->pass_fd = -1;
	if (h->version != IBRES_ACM_VERSION) {
		/* ibacm ignores such a message and leaves its client hanging;
		 * we answer it. */
		d->stats.bad_requests++;
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	}
	op = opcode_handler(h->opcode);
	if (!op) {
		d->stats.bad_requests++;
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	}
	req->op = op;
	/* a connection's requests share the struct: each starts the handler's
	 * part over (a RESOLVE without a source left pick_rail set, and the
	 * next one's own source was passed over for another rail) */
	memset(&req->stage, 0, sizeof(*req) - offsetof(struct request, stage));
	req->stage = REQ_STAGE_LOOKUP;
	req->waiter.done = request_woken;
	list_init(&req->waiter.node);
	req->deadline.cb = request_resume;
	req->until_ms = now_ms() + REQUEST_WAITS_MAX * request_bound_ms(&d->cfg);
	ret = op->start(d, req, reply, len);
	if (ret != REQ_WAIT)
		return ret;
	request_arm(d, req);
	return -EINPROGRESS;
}

void request_abandon(struct ibresd *d, struct request *req)
{
	lookup_waiter_cancel(&req->waiter);
	loop_timer_cancel(&d->loop, &req->deadline);
	req->woken = false;
}
