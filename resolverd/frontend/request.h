/* SPDX-License-Identifier: MIT */
/*
 * One request's life, for every opcode: the server hands in a framed
 * message; the opcode's handler starts it and either answers at once or
 * leaves it waiting on a query (a fabric lookup, an SA path). A wait ends
 * once: the query ended, or the bound passed; the handler's finish answers
 * (a failed wait is answered with its status here, unless the handler set
 * finish_on_failure: then its finish answers that too). Nothing is ever run
 * again from the opcode table. The answer goes back through the completion
 * callback the server set.
 */
#ifndef IBRESD_REQUEST_H
#define IBRESD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/hostkey.h"
#include "core/loop.h"
#include "core/waiter.h"
#include "frontend/acm.h"

struct ibresd;
struct ibres_config;

/* A handler's start or finish: "answer later", the waiter is queued. */
#define REQ_WAIT 1

/* What a request carries from its start to its finish. */
enum req_stage {
	REQ_STAGE_LOOKUP = 0, /* waiting for the destination's host */
	REQ_STAGE_ROUTE,      /* waiting for the SA's path to it */
	REQ_STAGE_VERIFY,     /* QUERY_SA: waiting for the SA's record */
};

struct request {
	struct ibresd *d;
	/* The server's: take the answer to a request that waited (@reply,
	 * @len is the whole answer). Set before request_start(). */
	void (*complete)(struct request *req, const void *reply, size_t len);
	void *owner; /* the server's connection */
	uid_t uid;   /* peer's uid (SO_PEERCRED) */
	bool acm_socket; /* the connection came through ibacm's socket (librdmacm's) */
	/* a descriptor to pass with the answer (SCM_RIGHTS), set by a handler that
	 * answers at once; -1: none. Still the handler's: the server passes a copy. */
	int pass_fd;
	/* may it (passed.h)? Set by the server before request_start(); a
	 * handler that would pass one answers IBRES_STATUS_EAGAIN without */
	bool may_pass_fd;
	size_t len;
	uint8_t msg[ACM_REQ_MAX];
	/* the lifecycle's */
	const struct opcode_handler *op;
	struct lookup_waiter waiter; /* what the handler waits on */
	struct loop_timer deadline;  /* the bound; also the wake-up after the waiter */
	uint64_t until_ms;	     /* no wait goes past it (request_start()) */
	bool woken;
	int wake_status;
	/* the handler's, from start to finish: from here to the end,
	 * request_start() zeroes them */
	enum req_stage stage;
	struct host_key key;     /* what is looked up */
	unsigned ep;             /* the local endpoint it is asked from */
	bool nodelay;
	bool by_addr;            /* a RESOLVE by name or address (not by path) */
	bool has_src;            /* RESOLVE without a source: the one we chose */
	bool src_given;          /* RESOLVE with a source: src is the client's */
	bool pick_rail;          /* no source given: the first rail that reaches it */
	uint16_t pick_pkey;      /* ... of this partition (a path's P_Key); 0: any */
	bool rail_asked;	 /* the source's fabric was asked for the host */
	bool finish_on_failure;	 /* a wait that failed is the handler's to answer too */
	struct ibres_ep_entry src;
	bool route_asked;        /* counted its SA route query */
	struct ibres_path_record sa_path; /* QUERY_SA: the SA's record */
};

static inline const struct ibres_hdr *request_hdr(const struct request *req)
{
	return (const struct ibres_hdr *)req->msg;
}

/* An opcode's handler (frontend/opcodes.c). start: answer @req into @reply
 * (room for IBRES_MSG_MAX bytes) and return 0 with *len set; or queue
 * req->waiter (its done callback is the lifecycle's) and return REQ_WAIT; or
 * return -EPROTO to close the connection without an answer. finish: the
 * wait ended well (status 0); same returns (REQ_WAIT: one more wait, e.g.
 * the SA's path after the host). NULL for an opcode that never waits. */
struct opcode_handler {
	uint8_t opcode;
	int (*start)(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
	int (*finish)(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
};

/* The handler of @opcode, or NULL. */
const struct opcode_handler *opcode_handler(uint8_t opcode);

/* Answer @req, or leave it waiting: 0 with the answer in @reply, @len set,
 * -EINPROGRESS (req->complete gets the answer later, within the resolve
 * bound), or -EPROTO (close the connection). */
int request_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
/* The longest a request waits for the fabric or the SA under @cfg before it
 * is answered (-ETIMEDOUT at worst): what a client's bound must exceed. */
uint64_t request_bound_ms(const struct ibres_config *cfg);
/* The connection goes away: forget what the request waits on. */
void request_abandon(struct ibresd *d, struct request *req);

#endif
