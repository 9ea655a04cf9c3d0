/* SPDX-License-Identifier: MIT */
/*
 * The client side of the daemon: Unix stream listeners (its own socket and,
 * when configured, ibacm's), connections, framing, bounds on every client,
 * and one request in flight per connection (clients of the ibacm protocol
 * send a request and wait for its answer).
 */
#ifndef IBRESD_SERVER_H
#define IBRESD_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "frontend/acm.h"
#include "core/hostkey.h"
#include "core/waiter.h"
#include "core/loop.h"

struct ibresd;
struct client;

/* A request being answered. It lives inside its connection; while it waits
 * on a query (-EINPROGRESS from the dispatcher) the connection reads
 * nothing more. If the client goes away, the waiter is cancelled. */
struct request {
	struct ibresd *d;
	struct client *cl;
	uid_t uid; /* peer's uid (SO_PEERCRED) */
	size_t len;
	uint8_t msg[ACM_REQ_MAX];
	bool counted;                /* counted once even if dispatched again */
	struct lookup_waiter waiter; /* for the dispatcher's use */
	struct loop_timer deadline;  /* answers ETIMEDOUT if nothing else does */
	bool woken;                  /* the entry settled: dispatch again */
	int wake_status;             /* how it settled: 0, or a negative errno */
	bool route_asked;            /* counted its SA route query (dispatch.c) */
	bool verified;               /* QUERY_SA answered: sa_path holds the SA's record */
	struct ibres_path_record sa_path;
};

static inline const struct ibres_hdr *request_hdr(const struct request *req)
{
	return (const struct ibres_hdr *)req->msg;
}

int server_open(struct ibresd *d);
/* Close every connection and listener; remove the sockets and links made. */
void server_close(struct ibresd *d);

/* Answer a request that was left pending. @reply/@len is the whole answer.
 * Afterwards the connection processes whatever it has buffered. */
void server_complete(struct ibresd *d, struct request *req, const void *reply, size_t len);

/* How many clients are connected now. */
unsigned server_clients(const struct ibresd *d);

/*
 * Implemented by the dispatcher (dispatch.c): answer @req into @reply (room
 * for IBRES_MSG_MAX bytes) and return 0 with *len set, or return
 * -EINPROGRESS after arranging a later server_complete(), or -EPROTO to
 * close the connection without an answer.
 */
int dispatch_request(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
/* The request's connection is going away: release what dispatch_request arranged. */
void dispatch_abandon(struct ibresd *d, struct request *req);

#endif
