/* SPDX-License-Identifier: MIT */
/*
 * Inside the SA client (sa.h): the client and its ports, and the query
 * engine of sa_query.c that sa_path.c (PathRecords), mcast.c (groups) and
 * port.c (PortInfo, P_KeyTable) put their MADs through.
 *
 * A query is one question and its retries. SA queries go out at most
 * `sa_window` at a time per port, the rest wait in the port's FIFO; local
 * SMPs go out at once. Each attempt waits `timeout`; after `retries`
 * retries, or past the query's deadline (it may have waited for the window),
 * the query fails with -ETIMEDOUT. Each query has its own loop timer.
 */
#ifndef IBRESD_SA_QUERY_H
#define IBRESD_SA_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/list.h"
#include "core/loop.h"
#include "ib/mcast.h"
#include "ib/sa_mad.h"

struct endpoints;
struct host_store;
struct netlink;
struct endpoint;
struct umad_io;
struct umad_io_rx;

#define SA_PORT_ACTIVE 4  /* PortInfo PortState */
#define SA_PKEY_BLOCK  32 /* P_Keys in one P_KeyTable block */

struct sa_counters {
	uint64_t queries, path_queries, joined, retries, timeouts, errors, rejected, rx,
		rx_malformed, rx_unsolicited, rx_mismatch, rx_kernel_timeouts, tx_errors,
		port_polls, port_events, joins, join_failures, leaves, routes_dropped,
		hosts_dropped;
};

/* The port of one endpoint that names an IB device. */
struct sa_port {
	struct sa_client *sa;
	int ep;		/* the place in the endpoints it was opened for (past their end: removed) */
	char label[80]; /* "endpoint " and the [endpoint] label */
	char dev[64];
	unsigned port_num;
	unsigned pkey_index;
	struct umad_io *io;
	bool have_info;
	struct smp_port_info pi;
	uint64_t port_guid, node_guid;
	uint16_t pkey; /* pkeys[pkey_index]; 0 = unknown */
	struct sa_group groups[CFG_MAX_GROUPS];
	struct loop_timer join_timer; /* mcast.c: the earliest retry of a failed join */
	unsigned outstanding;	      /* SA queries sent and unanswered: the window */
	struct list_node pending;     /* SA queries waiting for the window, FIFO */
	bool polling;		      /* a PortInfo poll is out */
	struct loop_timer poll_timer; /* port.c: the next PortInfo poll */
};

struct sa_client {
	const struct ibres_config *cfg; /* the running one (a reload replaces its content) */
	struct loop *loop;
	struct endpoints *eps;
	struct host_store *store;
	struct netlink *nl;
	struct sa_port ports[CFG_MAX_ENDPOINTS];
	unsigned n_ports;
	struct list_node outstanding; /* sent queries of every port */
	unsigned n_queries;	      /* queued + outstanding SA queries */
	uint32_t seq;
	bool stopping; /* shutting down: send nothing more, arm nothing */
	struct sa_counters c;
};

/* A decoded answer; which member by the query's kind. */
union sa_answer {
	struct ibres_path_record path;
	struct sa_mcmember member;
	struct smp_port_info port_info;
	uint16_t pkeys[SA_PKEY_BLOCK];
};

/* What a response that passed the header checks is to its query. */
enum sa_rx { SA_RX_OK, SA_RX_MALFORMED, SA_RX_MISMATCH };

struct sa_query;

/* One kind of query. A query is the first member of a structure of
 * @size bytes that holds what its kind needs beside it. */
struct sa_query_ops {
	const char *name; /* for the log */
	size_t size;
	bool smi;		/* a local SMP: no window, no SA_QUERIES_MAX */
	bool keep_on_port_down; /* once sent, it stays when the port goes down */
	uint8_t method;
	uint16_t attr;
	/* Decode @mad, a response of the right class, method and attribute
	 * with status 0, into @ans, and check that it is about @q. */
	enum sa_rx (*decode)(const struct sa_query *q, const uint8_t *mad, size_t len,
			     union sa_answer *ans);
	/* @q is off every list and its timer stopped: hand @status, and on 0
	 * @ans, to whoever waits. The engine frees @q afterwards. */
	void (*done)(struct sa_query *q, int status, const union sa_answer *ans);
};

struct sa_query {
	struct list_node node; /* sa->outstanding, or port->pending */
	struct loop_timer timer;
	struct sa_port *port;
	const struct sa_query_ops *ops;
	uint32_t tid; /* attempt k carries tid | k */
	unsigned attempts;
	bool sent;
	uint64_t deadline_ms; /* whatever happens, the query ends then */
	uint8_t mad[MAD_LEN]; /* the request; the engine writes the TID */
};

/* The port of @ep, or NULL (no device, not usable at start). */
struct sa_port *sa_port_of(struct sa_client *sa, const struct endpoint *ep);

/* @p's endpoint, or NULL once a reload removed it. */
struct endpoint *sa_port_ep(const struct sa_port *p);

/* Can @p ask the SA now: MADs, active, an SM? */
bool sa_port_usable(const struct sa_port *p);

/* @p's port GID: subnet prefix and port GUID. */
void sa_port_gid(const struct sa_port *p, uint8_t gid[16]);

/* @gid for a log line, in @buf. */
const char *sa_gid_str(const uint8_t gid[16], char *buf, size_t len);

/* A new query of @ops->size bytes, zeroed but for the engine's part, for
 * the caller to fill (the MAD without TID) and submit. 0, -EAGAIN (too many
 * SA queries) or -ENOMEM. */
int sa_query_new(struct sa_port *p, const struct sa_query_ops *ops, struct sa_query **out);

/* Send @q (a local SMP), or queue it for the port's window. 0, or -ENOMEM
 * with @q freed and its done() not called. */
int sa_query_submit(struct sa_query *q);

/* @p's queued or outstanding query of @ops for which @match is true. */
struct sa_query *sa_query_find(struct sa_port *p, const struct sa_query_ops *ops,
			       bool (*match)(const struct sa_query *q, const void *arg),
			       const void *arg);

/* Send what @p's window allows (its port just became usable). */
void sa_port_pump(struct sa_port *p);

/* @p went down or lost its SM: fail its SA queries with @status, but for
 * those sent with ops->keep_on_port_down. */
void sa_port_fail_queries(struct sa_port *p, int status);

/* Shutting down: fail every query with -ECANCELED, including those their
 * waiters start meanwhile. */
void sa_query_cancel_all(struct sa_client *sa);

/* The umad_io receive callback of a port (@arg is the struct sa_port):
 * match the MAD to its query, check and decode it, finish the query. */
void sa_port_rx(void *arg, const struct umad_io_rx *rx);

/* Hand MADs to sa_port_rx outside the loop (start-up, shutdown) until @done
 * says so or @ms pass. Timers do not run meanwhile. */
void sa_wait_outside_loop(struct sa_client *sa, unsigned ms,
			  bool (*done)(const struct sa_client *sa));

#endif
