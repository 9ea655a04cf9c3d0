// SPDX-License-Identifier: MIT
/*
 * The SA client, port discovery and IB multicast groups (sa.h).
 *
 * Queries: one struct sa_query per question. SA queries (PathRecord,
 * MCMemberRecord) go out at most `sa_window` at a time per port, the rest
 * wait in the port's FIFO; local SMPs (PortInfo, P_KeyTable) go out at once.
 * Attempt k of a query carries TID (seq << 4 | k) in the 32 bits the kernel
 * leaves us, so a late answer to an earlier attempt still matches. Each
 * attempt waits `timeout`; after `retries` retries, or past the query's
 * deadline (it may have waited for the window), the query fails with
 * -ETIMEDOUT. Each query has its own loop timer, due at its deadline while
 * it waits for the window, then at the end of each attempt: retry, or fail.
 * Each port has a timer for its polls and one for its join retries.
 */
#include "ib/sa.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "daemon.h"
#include "fabric/fabric.h"
#include "core/log.h"
#include "os/netlink.h"
#include "ib/path.h"
#include "engine/resolver.h"
#include "ib/sa_mad.h"
#include "tlv.h"
#include "ib/umad_io.h"

#define SA_QUERIES_MAX	  4096 /* queued and outstanding, all ports: then -EAGAIN */
#define START_WAIT_MS	  1000 /* the first PortInfo at start-up */
#define STOP_WAIT_MS	  1000 /* the SA's answers to our leaves at shutdown */
#define JOIN_RETRY_MIN_MS 2000
#define JOIN_RETRY_MAX_MS 60000
#define ATTEMPT_BITS	  4 /* low TID bits: the attempt (retries <= 10) */
#define GSI_QPN		  1
#define GSI_QKEY	  0x80010000u
#define PERMISSIVE_LID	  0xffff
#define PORT_ACTIVE	  4
#define PKEY_BLOCK	  32

enum q_kind { Q_PATH, Q_VERIFY, Q_JOIN, Q_LEAVE, Q_PORTINFO, Q_PKEYS };

static const char *const q_names[] = {
	[Q_PATH] = "PathRecord",	  [Q_VERIFY] = "PathRecord (verify)",
	[Q_JOIN] = "MCMemberRecord join", [Q_LEAVE] = "MCMemberRecord leave",
	[Q_PORTINFO] = "PortInfo",	  [Q_PKEYS] = "P_KeyTable",
};

enum grp_state { GRP_IDLE, GRP_JOINING, GRP_JOINED, GRP_FAILED, GRP_LEAVING };

struct sa_group {
	uint8_t mgid[16];
	enum grp_state state;
	struct sa_mcmember rec; /* the SA's answer, while JOINED */
	unsigned failures;
	int last_error;
	uint64_t retry_ms;
};

struct sa_client;

struct sa_port {
	struct sa_client *sa;
	int ep; /* index into d->eps; -1 once a reload removed the endpoint */
	char label[64];
	char dev[64];
	unsigned port_num;
	unsigned pkey_index;
	struct umad_io *io;
	bool have_info;
	struct smp_port_info pi;
	uint64_t port_guid, node_guid;
	uint16_t pkey; /* pkeys[pkey_index]; 0 = unknown */
	struct sa_group groups[CFG_MAX_GROUPS];
	struct loop_timer join_timer; /* the earliest retry of a failed join */
	unsigned outstanding;	      /* SA queries sent and unanswered: the window */
	struct list_node pending;     /* SA queries waiting for the window, FIFO */
	bool polling;		      /* a PortInfo poll is out */
	struct loop_timer poll_timer; /* the next PortInfo poll */
};

struct sa_query {
	struct list_node node; /* sa->outstanding, or port->pending */
	struct loop_timer timer;
	struct sa_port *port;
	enum q_kind kind;
	uint32_t tid;
	unsigned attempts;
	bool sent;
	uint64_t deadline_ms; /* whatever happens, the query ends then */
	uint8_t mad[MAD_LEN];
	struct cache_key dest; /* Q_PATH: the destination's GID (or LID) key */
	uint8_t dgid[16];      /* Q_PATH, Q_VERIFY: the answer must be about it */
	bool check_dgid;
	struct list_node waiters; /* Q_VERIFY: the client request, if still there */
	struct ibres_path_record *out;
	unsigned group; /* Q_JOIN, Q_LEAVE */
};

struct sa_counters {
	uint64_t queries, path_queries, joined, retries, timeouts, errors, rejected, rx,
		rx_malformed, rx_unsolicited, rx_mismatch, rx_kernel_timeouts, tx_errors,
		port_polls, port_events, joins, join_failures, leaves, routes_dropped,
		hosts_dropped;
};

struct sa_client {
	struct ibresd *d;
	struct sa_port ports[CFG_MAX_ENDPOINTS];
	unsigned n_ports;
	struct list_node outstanding;
	unsigned n_queries; /* queued + outstanding SA queries */
	uint32_t seq;
	bool stopping; /* shutting down: send nothing more, arm nothing */
	struct sa_counters c;
};

static void on_query_timer(struct loop_timer *t);
static void try_joins(struct sa_port *p);

/* --- helpers -------------------------------------------------------------- */

static struct endpoint *port_ep(const struct sa_port *p)
{
	struct ibresd *d = p->sa->d;

	if (p->ep < 0 || (unsigned)p->ep >= d->n_eps)
		return NULL;
	return &d->eps[p->ep];
}

static struct sa_port *port_of(struct sa_client *sa, const struct endpoint *ep)
{
	if (!sa || !ep)
		return NULL;
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].ep == (int)ep->index)
			return &sa->ports[i];
	return NULL;
}

/* Can the port ask the SA now? */
static bool port_usable(const struct sa_port *p)
{
	return p->io && p->have_info && p->pi.state == PORT_ACTIVE && p->pi.sm_lid && p->pi.lid &&
	       p->pi.sm_lid < 0xc000;
}

static void port_gid(const struct sa_port *p, uint8_t gid[16])
{
	uint64_t prefix = htobe64(p->pi.gid_prefix), guid = htobe64(p->port_guid);

	memcpy(gid, &prefix, 8);
	memcpy(gid + 8, &guid, 8);
}

static const char *gid_str(const uint8_t gid[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

static const char *state_str(uint8_t state)
{
	static const char *const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "DEFER"};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

static bool is_sa_kind(enum q_kind k)
{
	return k == Q_PATH || k == Q_VERIFY || k == Q_JOIN || k == Q_LEAVE;
}

static uint8_t q_method(const struct sa_query *q)
{
	switch (q->kind) {
	case Q_JOIN:
		return MAD_METHOD_SET;
	case Q_LEAVE:
		return MAD_METHOD_DELETE;
	default:
		return MAD_METHOD_GET;
	}
}

static uint16_t q_attr(const struct sa_query *q)
{
	switch (q->kind) {
	case Q_PATH:
	case Q_VERIFY:
		return SA_ATTR_PATH_REC;
	case Q_JOIN:
	case Q_LEAVE:
		return SA_ATTR_MCMEMBER_REC;
	case Q_PORTINFO:
		return SMP_ATTR_PORT_INFO;
	default:
		return SMP_ATTR_PKEY_TABLE;
	}
}

static uint64_t bound_ms(const struct ibres_config *cfg)
{
	return (uint64_t)cfg->timeout_ms * (cfg->retries + 1);
}

/* --- queries ------------------------------------------------------------- */

static struct sa_query *query_new(struct sa_client *sa, struct sa_port *p, enum q_kind kind)
{
	struct sa_query *q;

	if (is_sa_kind(kind) && sa->n_queries >= SA_QUERIES_MAX) {
		sa->c.rejected++;
		errno = EAGAIN;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->port = p;
	q->kind = kind;
	q->timer.cb = on_query_timer;
	q->tid = (sa->seq++ & (UINT32_MAX >> ATTEMPT_BITS)) << ATTEMPT_BITS;
	q->deadline_ms = now_ms() + bound_ms(&sa->d->cfg);
	list_init(&q->node);
	list_init(&q->waiters);
	if (is_sa_kind(kind)) {
		sa->n_queries++;
		sa->c.queries++;
	}
	return q;
}

static void query_send(struct sa_client *sa, struct sa_query *q)
{
	struct sa_port *p = q->port;
	uint32_t tid = q->tid | q->attempts;
	const struct ibres_config *cfg = &sa->d->cfg;
	int ret;

	q->mad[12] = (uint8_t)(tid >> 24);
	q->mad[13] = (uint8_t)(tid >> 16);
	q->mad[14] = (uint8_t)(tid >> 8);
	q->mad[15] = (uint8_t)tid;
	if (q->attempts)
		sa->c.retries++;
	q->attempts++;
	if (is_sa_kind(q->kind))
		/* to the SA on the SM's SL, as the port says */
		ret = umad_io_send(p->io, UMAD_IO_SA, q->mad, MAD_LEN, p->pi.sm_lid, GSI_QPN,
				   p->pi.sm_sl, GSI_QKEY, cfg->timeout_ms);
	else
		ret = umad_io_send(p->io, UMAD_IO_SMI, q->mad, MAD_LEN, PERMISSIVE_LID, 0, 0, 0,
				   cfg->timeout_ms);
	if (ret < 0) {
		/* the attempt is lost; its timeout brings the retry */
		sa->c.tx_errors++;
		log_debug("%s: %s send failed: %s", p->label, q_names[q->kind], strerror(-ret));
	}
	/* The timer is armed (query_submit) or was just taken off the heap
	 * to run: its slot is free, so this arm allocates nothing and cannot
	 * fail. */
	loop_timer_arm(&sa->d->loop, &q->timer, now_ms() + cfg->timeout_ms);
	if (!q->sent) {
		q->sent = true;
		list_add_tail(&sa->outstanding, &q->node);
		if (is_sa_kind(q->kind))
			p->outstanding++;
	}
}

/* Send what the window allows. */
static void pump(struct sa_client *sa, struct sa_port *p)
{
	if (sa->stopping || !port_usable(p))
		return;
	while (p->outstanding < sa->d->cfg.sa_window && !list_empty(&p->pending)) {
		struct sa_query *q = list_entry(p->pending.next, struct sa_query, node);

		list_del(&q->node);
		query_send(sa, q);
	}
}

/* Take @q off its list, out of the counts, its timer stopped. */
static void query_unlink(struct sa_client *sa, struct sa_query *q)
{
	list_del(&q->node);
	if (is_sa_kind(q->kind)) {
		sa->n_queries--;
		if (q->sent)
			q->port->outstanding--;
	}
	loop_timer_cancel(&sa->d->loop, &q->timer);
}

/* Send @q (a local SMP), or queue it for the port's window. 0, or -ENOMEM
 * with @q freed and nobody told. */
static int query_submit(struct sa_client *sa, struct sa_query *q)
{
	int ret;

	/* The only arm that may need memory (the heap grows): later ones
	 * move the timer within its slot. Until sent, the deadline. */
	ret = loop_timer_arm(&sa->d->loop, &q->timer, q->deadline_ms);
	if (ret) {
		query_unlink(sa, q);
		free(q);
		return ret;
	}
	if (is_sa_kind(q->kind)) {
		list_add_tail(&q->port->pending, &q->node);
		pump(sa, q->port);
	} else {
		query_send(sa, q);
	}
	return 0;
}

static void route_deliver(struct sa_client *sa, struct sa_query *q, int status,
			  const struct ibres_path_record *pr);
static void verify_deliver(struct sa_client *sa, struct sa_query *q, int status,
			   const struct ibres_path_record *pr);
static void join_deliver(struct sa_client *sa, struct sa_query *q, int status,
			 const struct sa_mcmember *m);
static void leave_deliver(struct sa_client *sa, struct sa_query *q, int status);
static void port_info_deliver(struct sa_port *p, int status, const struct smp_port_info *pi);
static void pkeys_deliver(struct sa_port *p, int status, const uint16_t *pkeys);

/* Take @q off every list, hand its outcome to whoever waits, free it. On
 * success the decoded answer is in @answer (type by kind). */
static void query_finish(struct sa_client *sa, struct sa_query *q, int status, const void *answer)
{
	struct sa_port *p = q->port;

	query_unlink(sa, q);
	if (status == -ETIMEDOUT)
		sa->c.timeouts++;
	switch (q->kind) {
	case Q_PATH:
		route_deliver(sa, q, status, answer);
		break;
	case Q_VERIFY:
		verify_deliver(sa, q, status, answer);
		break;
	case Q_JOIN:
		join_deliver(sa, q, status, answer);
		break;
	case Q_LEAVE:
		leave_deliver(sa, q, status);
		break;
	case Q_PORTINFO:
		port_info_deliver(p, status, answer);
		break;
	case Q_PKEYS:
		pkeys_deliver(p, status, answer);
		break;
	}
	free(q);
	pump(sa, p);
}

/* Fail every SA query of @p (port down, no SM). */
static void fail_port_queries(struct sa_client *sa, struct sa_port *p, int status)
{
	struct list_node *pos, *tmp;
	bool again = true;

	/* finishing may queue new queries: start over until none is left */
	while (again) {
		again = false;
		list_for_each_safe(pos, tmp, &p->pending)
		{
			query_finish(sa, list_entry(pos, struct sa_query, node), status, NULL);
			again = true;
			break;
		}
		list_for_each_safe(pos, tmp, &sa->outstanding)
		{
			struct sa_query *q = list_entry(pos, struct sa_query, node);

			if (q->port != p || !is_sa_kind(q->kind) || q->kind == Q_LEAVE)
				continue;
			query_finish(sa, q, status, NULL);
			again = true;
			break;
		}
	}
}

static struct sa_query *find_path_query(struct sa_client *sa, struct sa_port *p,
					const struct cache_key *k)
{
	struct list_node *lists[2] = {&sa->outstanding, &p->pending}, *pos, *tmp;

	for (int i = 0; i < 2; i++)
		list_for_each_safe(pos, tmp, lists[i])
		{
			struct sa_query *q = list_entry(pos, struct sa_query, node);

			if (q->port == p && q->kind == Q_PATH && q->dest.type == k->type &&
			    q->dest.len == k->len && !memcmp(q->dest.data, k->data, k->len))
				return q;
		}
	return NULL;
}

/* --- receiving ------------------------------------------------------------ */

static struct sa_query *find_by_tid(struct sa_client *sa, struct sa_port *p, uint32_t tid)
{
	struct list_node *pos, *tmp;
	uint32_t base = tid & ~((1u << ATTEMPT_BITS) - 1), attempt = tid - base;

	list_for_each_safe(pos, tmp, &sa->outstanding)
	{
		struct sa_query *q = list_entry(pos, struct sa_query, node);

		if (q->port == p && q->tid == base && attempt < q->attempts)
			return q;
	}
	return NULL;
}

static void on_rx(void *arg, const struct umad_io_rx *rx)
{
	struct sa_port *p = arg;
	struct sa_client *sa = p->sa;
	struct ibres_path_record pr;
	struct smp_port_info pi;
	struct sa_mcmember m;
	uint16_t pkeys[PKEY_BLOCK];
	struct sa_query *q;
	struct mad_hdr h;
	enum mad_error err;
	uint8_t gid[16];

	sa->c.rx++;
	if (mad_parse_hdr(rx->mad, rx->len, &h) != MAD_OK) {
		sa->c.rx_malformed++;
		return;
	}
	q = find_by_tid(sa, p, sa_tid_low(h.tid));
	if (!q) {
		/* late, duplicate, forged, or not ours at all */
		sa->c.rx_unsolicited++;
		return;
	}
	if (rx->status) {
		/* the kernel hands our own request back when it stops waiting;
		 * our timer decides about the retry */
		sa->c.rx_kernel_timeouts++;
		return;
	}
	if (is_sa_kind(q->kind))
		err = mad_check_response(&h, MAD_CLASS_SA, q_method(q), q_attr(q));
	else
		err = smp_check_response(rx->mad, rx->len, &h, q_attr(q));
	if (err == MAD_ERR_STATUS) {
		int status = mad_status_errno(&h);

		sa->c.errors++;
		log_debug("%s: %s answered with status 0x%04x", p->label, q_names[q->kind],
			  h.status);
		query_finish(sa, q, status < 0 ? status : -EPROTO, NULL);
		return;
	}
	if (err != MAD_OK) {
		/* not an answer to this query; the real one may still come */
		sa->c.rx_mismatch++;
		return;
	}
	switch (q->kind) {
	case Q_PATH:
	case Q_VERIFY:
		if (sa_decode_path(rx->mad, rx->len, &pr) != MAD_OK) {
			sa->c.rx_malformed++;
			return;
		}
		port_gid(p, gid);
		if ((q->check_dgid && memcmp(pr.dgid, q->dgid, 16)) ||
		    (q->kind == Q_PATH && memcmp(pr.sgid, gid, 16))) {
			sa->c.rx_mismatch++;
			return;
		}
		query_finish(sa, q, 0, &pr);
		return;
	case Q_JOIN:
	case Q_LEAVE:
		if (sa_decode_mcmember(rx->mad, rx->len, &m) != MAD_OK) {
			sa->c.rx_malformed++;
			return;
		}
		port_gid(p, gid);
		if (memcmp(m.mgid, p->groups[q->group].mgid, 16) || memcmp(m.port_gid, gid, 16)) {
			sa->c.rx_mismatch++;
			return;
		}
		query_finish(sa, q, 0, &m);
		return;
	case Q_PORTINFO:
		if (smp_decode_port_info(rx->mad, rx->len, &pi) != MAD_OK) {
			sa->c.rx_malformed++;
			return;
		}
		query_finish(sa, q, 0, &pi);
		return;
	case Q_PKEYS:
		if (smp_decode_pkeys(rx->mad, rx->len, pkeys) != MAD_OK) {
			sa->c.rx_malformed++;
			return;
		}
		query_finish(sa, q, 0, pkeys);
		return;
	}
}

/* --- routes (route protocol sa) ------------------------------------------- */

bool sa_route_available(struct ibresd *d, const struct endpoint *ep)
{
	struct sa_port *p = port_of(d->sa, ep);

	return p && p->io;
}

int sa_route_query(struct ibresd *d, struct endpoint *ep, struct cache_entry *e)
{
	struct sa_client *sa = d->sa;
	struct sa_port *p = port_of(sa, ep);
	struct ibres_path_record pr;
	struct cache_key k;
	struct sa_query *q;
	uint64_t mask;
	int ret;

	if (!p || !port_usable(p))
		return -ENOTCONN;
	if (!e->host)
		return -ENODATA;
	memset(&pr, 0, sizeof(pr));
	mask = PR_COMP_SGID | PR_COMP_REVERSIBLE | PR_COMP_NUMB_PATH | PR_COMP_PKEY;
	if (e->host->rec.n_gids) {
		/* GIDs are the stable identity; a LID learned from a peer may be stale */
		cache_key_addr(&k, IBRES_KEY_GID, e->host->rec.gids[0]);
		memcpy(pr.dgid, e->host->rec.gids[0], 16);
		mask |= PR_COMP_DGID;
	} else if (e->host->rec.lid) {
		cache_key_lid(&k, e->host->rec.lid);
		pr.dlid = htobe16(e->host->rec.lid);
		mask |= PR_COMP_DLID;
	} else {
		return -ENODATA;
	}
	if (find_path_query(sa, p, &k)) {
		sa->c.joined++;
		return 0;
	}
	q = query_new(sa, p, Q_PATH);
	if (!q)
		return -errno;
	port_gid(p, pr.sgid);
	pr.reversible_numpath = 0x81; /* reversible, one path */
	pr.pkey = htobe16(p->pkey ? p->pkey : ep->cfg.id.pkey);
	sa_encode_path_get(q->mad, 0, &pr, mask);
	q->dest = k;
	if (mask & PR_COMP_DGID) {
		memcpy(q->dgid, pr.dgid, 16);
		q->check_dgid = true;
	}
	ret = query_submit(sa, q);
	if (ret)
		return ret;
	sa->c.path_queries++;
	return 0;
}

/* The SA has no path to @gid (its port left the subnet): a host learned
 * from the fabric is stale and goes (true: its entries, and their waiters,
 * are gone); the routes to a configured one are dropped. */
static bool drop_stale(struct sa_client *sa, const uint8_t gid[16])
{
	struct ibresd *d = sa->d;
	struct cache_entry *e;
	struct cache_key k;

	cache_key_addr(&k, IBRES_KEY_GID, gid);
	e = cache_peek(&d->cache, &k, now_ms());
	if (!e || !e->host)
		return false;
	sa->c.routes_dropped += cache_drop_routes(&d->cache, -1, gid);
	if (e->host->origin != IBRES_ORIGIN_FABRIC)
		return false;
	sa->c.hosts_dropped++;
	cache_remove_host_by_gid(&d->cache, gid);
	return true;
}

/* Store the answer on every entry of the destination host (all its names
 * and addresses share the route) and wake the requests waiting on them. */
static void route_deliver(struct sa_client *sa, struct sa_query *q, int status,
			  const struct ibres_path_record *pr)
{
	struct ibresd *d = sa->d;
	struct cache_key keys[CACHE_HOST_KEYS_MAX];
	struct ibres_hostrec rec;
	struct cache_entry *e;
	uint64_t now = now_ms();
	unsigned n = 0;
	char ks[CACHE_KEY_STR_MAX];

	e = cache_peek(&d->cache, &q->dest, now);
	if (!e || !e->host)
		return; /* the host left meanwhile; the cache completed its waiters */
	rec = e->host->rec;
	if (status) {
		log_info("%s: no path to %s from the SA: %s", q->port->label,
			 cache_key_str(&q->dest, ks, sizeof(ks)), strerror(-status));
		if (status == -ENODATA && rec.n_gids && drop_stale(sa, rec.gids[0]))
			return;
	}
	for (unsigned i = 0; i < rec.n_names; i++)
		if (cache_key_name(&keys[n], rec.names[i]) == 0)
			n++;
	for (unsigned i = 0; i < rec.n_v4; i++)
		cache_key_addr(&keys[n++], IBRES_KEY_IPV4, &rec.v4[i]);
	for (unsigned i = 0; i < rec.n_v6; i++)
		cache_key_addr(&keys[n++], IBRES_KEY_IPV6, &rec.v6[i]);
	for (unsigned i = 0; i < rec.n_gids; i++)
		cache_key_addr(&keys[n++], IBRES_KEY_GID, rec.gids[i]);
	if (rec.lid && cache_key_lid(&keys[n], rec.lid) == 0)
		n++;
	for (unsigned i = 0; i < n; i++) {
		e = cache_peek(&d->cache, &keys[i], now);
		/* the same host: its identity (first GID, else first name) */
		if (!e || !e->host ||
		    (rec.n_gids ? memcmp(e->host->rec.gids[0], rec.gids[0], 16)
				: strcasecmp(e->host->rec.names[0], rec.names[0])))
			continue;
		if (!status)
			cache_set_route(e, q->port->ep, pr, d->cfg.route_ttl_s, now);
		cache_complete(e, status);
	}
}

int sa_verify_path(struct ibresd *d, struct endpoint *ep, const struct ibres_path_record *in,
		   struct cache_waiter *w, struct ibres_path_record *out)
{
	struct sa_client *sa = d->sa;
	struct sa_port *p = port_of(sa, ep);
	static const uint8_t zero[16];
	struct sa_query *q;
	int ret;

	if (!p || !port_usable(p))
		return -ENOTCONN;
	q = query_new(sa, p, Q_VERIFY);
	if (!q)
		return -errno;
	sa_encode_path_get(q->mad, 0, in, sa_path_comp_mask(in));
	if (memcmp(in->dgid, zero, 16)) {
		memcpy(q->dgid, in->dgid, 16);
		q->check_dgid = true;
	}
	q->out = out;
	ret = query_submit(sa, q);
	if (ret)
		return ret;
	sa->c.path_queries++;
	/* submitting answers nothing at once: the waiter is in time */
	list_add_tail(&q->waiters, &w->node);
	return 0;
}

static void verify_deliver(struct sa_client *sa, struct sa_query *q, int status,
			   const struct ibres_path_record *pr)
{
	struct cache_waiter *w;

	if (status == -ENODATA && q->check_dgid)
		drop_stale(sa, q->dgid);

	if (list_empty(&q->waiters))
		return; /* the client went away */
	w = list_entry(q->waiters.next, struct cache_waiter, node);
	list_del(&w->node);
	if (!status)
		*q->out = *pr;
	if (w->done)
		w->done(w, NULL, status);
}

/* --- groups ----------------------------------------------------------------- */

static uint32_t group_id(const struct cfg_group *g)
{
	const uint8_t *a;

	if (g->addr.ss_family == AF_INET)
		a = (const uint8_t *)&((const struct sockaddr_in *)&g->addr)->sin_addr;
	else
		a = (const uint8_t *)&((const struct sockaddr_in6 *)&g->addr)->sin6_addr + 12;
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/* The join timer is due at the earliest retry of a failed group. */
static void arm_retry(struct sa_port *p)
{
	struct loop *loop = &p->sa->d->loop;
	uint64_t next = UINT64_MAX;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		if (p->groups[g].state == GRP_FAILED && p->groups[g].retry_ms < next)
			next = p->groups[g].retry_ms;
	if (next == UINT64_MAX || p->sa->stopping)
		loop_timer_cancel(loop, &p->join_timer);
	else if (loop_timer_arm(loop, &p->join_timer, next))
		log_warn("%s: out of memory: failed joins are retried at the next port poll",
			 p->label);
}

static void send_join(struct sa_client *sa, struct sa_port *p, unsigned g)
{
	const struct endpoint *ep = port_ep(p);
	const struct cfg_group *cg = &ep->cfg.groups[g];
	struct sa_group *grp = &p->groups[g];
	struct sa_mcmember m;
	struct sa_query *q;

	sa_group_mgid(grp->mgid, MCAST_SCOPE_SITE, p->pkey, cg->mtu, cg->rate, group_id(cg));
	memset(&m, 0, sizeof(m));
	memcpy(m.mgid, grp->mgid, 16);
	port_gid(p, m.port_gid);
	m.qkey = IBRES_QKEY;
	m.mtu = (uint8_t)(MAD_SEL_EXACTLY << 6 | cg->mtu);
	m.rate = (uint8_t)(MAD_SEL_EXACTLY << 6 | cg->rate);
	m.pkey = p->pkey;
	m.sl = ep->cfg.sl;
	m.scope = MCAST_SCOPE_SITE;
	m.join_state = MCAST_JOIN_FULL;
	q = query_new(sa, p, Q_JOIN);
	if (!q)
		goto fail;
	sa_encode_mcmember(q->mad, MAD_METHOD_SET, 0, &m, sa_join_comp_mask());
	q->group = g;
	if (query_submit(sa, q))
		goto fail;
	grp->state = GRP_JOINING;
	return;

fail:
	/* no room for the query now: the retry timer brings it */
	grp->state = GRP_FAILED;
	grp->retry_ms = now_ms() + JOIN_RETRY_MIN_MS;
}

static void try_joins(struct sa_port *p)
{
	const struct endpoint *ep = port_ep(p);
	uint64_t now = now_ms();

	/* the next port update calls again */
	if (!ep || !port_usable(p) || !p->pkey || !p->port_guid)
		return;
	for (unsigned g = 0; g < ep->cfg.n_groups && g < CFG_MAX_GROUPS; g++) {
		struct sa_group *grp = &p->groups[g];

		if (grp->state == GRP_IDLE || (grp->state == GRP_FAILED && grp->retry_ms <= now))
			send_join(p->sa, p, g);
	}
	arm_retry(p);
}

static void on_join_timer(struct loop_timer *t)
{
	try_joins(container_of(t, struct sa_port, join_timer));
}

static void join_deliver(struct sa_client *sa, struct sa_query *q, int status,
			 const struct sa_mcmember *m)
{
	struct sa_port *p = q->port;
	struct sa_group *grp = &p->groups[q->group];
	const struct endpoint *ep = port_ep(p);
	char s[INET6_ADDRSTRLEN];
	uint64_t backoff;

	if (grp->state != GRP_JOINING)
		return; /* reset by a port event meanwhile: a new join follows */
	if (!status) {
		grp->state = GRP_JOINED;
		grp->rec = *m;
		grp->failures = 0;
		grp->last_error = 0;
		sa->c.joins++;
		log_info("%s: joined group %s: MLID 0x%04x, MTU %u, rate %s Gb/s, SL %u, P_Key "
			 "0x%04x",
			 p->label, gid_str(m->mgid, s, sizeof(s)), m->mlid,
			 ib_mtu_to_bytes(m->mtu & 0x3f), ib_rate_to_gbps(m->rate & 0x3f), m->sl,
			 m->pkey);
		return;
	}
	sa->c.join_failures++;
	if (status != grp->last_error || !grp->failures)
		log_warn("%s: cannot join group %s (%u bytes, %s Gb/s): %s", p->label,
			 gid_str(grp->mgid, s, sizeof(s)),
			 ep ? ib_mtu_to_bytes(ep->cfg.groups[q->group].mtu) : 0,
			 ep ? ib_rate_to_gbps(ep->cfg.groups[q->group].rate) : "?",
			 status == -ETIMEDOUT  ? "no answer from the SA"
			 : status == -ENOTCONN ? "the port went down"
			 : status == -EINVAL   ? "the SA refused it (can the port and the existing "
						 "group carry that MTU, rate and SL?)"
					       : strerror(-status));
	grp->last_error = status;
	grp->failures++;
	backoff = (uint64_t)JOIN_RETRY_MIN_MS << (grp->failures < 5 ? grp->failures - 1 : 5);
	grp->state = GRP_FAILED;
	grp->retry_ms = now_ms() + (backoff > JOIN_RETRY_MAX_MS ? JOIN_RETRY_MAX_MS : backoff);
	arm_retry(p);
}

static void leave_deliver(struct sa_client *sa, struct sa_query *q, int status)
{
	struct sa_group *grp = &q->port->groups[q->group];
	char s[INET6_ADDRSTRLEN];

	if (!status) {
		sa->c.leaves++;
		log_info("%s: left group %s", q->port->label, gid_str(grp->mgid, s, sizeof(s)));
	}
	if (grp->state == GRP_LEAVING)
		grp->state = GRP_IDLE;
}

static void send_leave(struct sa_client *sa, struct sa_port *p, unsigned g)
{
	struct sa_group *grp = &p->groups[g];
	struct sa_mcmember m;
	struct sa_query *q;

	memset(&m, 0, sizeof(m));
	memcpy(m.mgid, grp->mgid, 16);
	port_gid(p, m.port_gid);
	m.join_state = MCAST_JOIN_FULL;
	m.scope = MCAST_SCOPE_SITE;
	q = query_new(sa, p, Q_LEAVE);
	if (!q)
		return; /* no room: the membership outlives us */
	sa_encode_mcmember(q->mad, MAD_METHOD_DELETE, 0, &m, sa_leave_comp_mask());
	q->group = g;
	if (query_submit(sa, q) == 0)
		grp->state = GRP_LEAVING;
}

/* Membership is gone or must be renewed: join again when the port allows. */
static void reset_groups(struct sa_port *p)
{
	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++) {
		p->groups[g].state = GRP_IDLE;
		p->groups[g].failures = 0;
	}
	loop_timer_cancel(&p->sa->d->loop, &p->join_timer);
}

void sa_group_path_params(struct ibresd *d, const struct endpoint *ep, uint8_t mtu, uint8_t rate,
			  struct path_params *pp)
{
	struct sa_port *p = port_of(d->sa, ep);

	if (!p)
		return;
	for (unsigned g = 0; g < ep->cfg.n_groups && g < CFG_MAX_GROUPS; g++) {
		const struct sa_mcmember *m = &p->groups[g].rec;

		if (p->groups[g].state != GRP_JOINED || ep->cfg.groups[g].mtu != mtu ||
		    ep->cfg.groups[g].rate != rate)
			continue;
		/* what the SA made of the group, never above the endpoint */
		if ((m->mtu & 0x3f) && (m->mtu & 0x3f) < pp->mtu)
			pp->mtu = m->mtu & 0x3f;
		if ((m->rate & 0x3f) && ib_rate_speed(m->rate & 0x3f) < ib_rate_speed(pp->rate))
			pp->rate = m->rate & 0x3f;
		pp->sl = m->sl;
		if (m->packet_life & 0x3f)
			pp->packet_life = m->packet_life & 0x3f;
		if (m->pkey)
			pp->pkey = m->pkey;
		return;
	}
}

int sa_group_address(struct ibresd *d, const struct endpoint *ep, unsigned g, uint8_t mgid[16],
		     uint16_t *mlid, uint32_t *qkey, uint8_t *sl)
{
	struct sa_port *p = port_of(d->sa, ep);

	if (!p)
		return -ENOENT;
	if (g >= CFG_MAX_GROUPS || p->groups[g].state != GRP_JOINED)
		return -EAGAIN;
	memcpy(mgid, p->groups[g].rec.mgid, 16);
	*mlid = p->groups[g].rec.mlid;
	*qkey = p->groups[g].rec.qkey;
	*sl = p->groups[g].rec.sl;
	return 0;
}

/* The next PortInfo poll of @p at @due, if it is polled at all. */
static void poll_at(struct sa_port *p, uint64_t due)
{
	struct ibresd *d = p->sa->d;

	if (!p->io || !d->cfg.port_poll_ms || p->sa->stopping)
		return;
	if (loop_timer_arm(&d->loop, &p->poll_timer, due))
		log_warn("%s: out of memory: no port polls until the next verbs event", p->label);
}

void sa_port_changed(struct ibresd *d, const struct endpoint *ep, const char *what)
{
	struct sa_port *p = port_of(d->sa, ep);

	if (!p)
		return;
	log_info("%s: verbs event %s: reading the port now", p->label, what);
	poll_at(p, now_ms());
}

/* --- ports -------------------------------------------------------------------- */

/* The port's data over the endpoint's configured values. */
static void fill_endpoint(const struct sa_port *p, struct endpoint *ep)
{
	if (!p->have_info)
		return;
	if (p->port_guid) {
		port_gid(p, ep->cfg.id.gids[0]);
		if (!ep->cfg.id.n_gids)
			ep->cfg.id.n_gids = 1;
	}
	ep->cfg.id.lid = p->pi.lid < 0xc000 ? p->pi.lid : 0;
	if (p->pkey)
		ep->cfg.id.pkey = p->pkey;
	if (p->pi.mtu)
		ep->cfg.mtu = p->pi.mtu;
	if (p->pi.rate)
		ep->cfg.rate = p->pi.rate;
	if (p->node_guid)
		ep->cfg.dev_guid = p->node_guid;
	ep->cfg.port_num = (uint8_t)p->port_num;
}

/* Put the port's data into its endpoint; when the identity changed, refresh
 * the cache and tell the fabric. */
static void port_apply(struct sa_port *p)
{
	struct ibresd *d = p->sa->d;
	struct endpoint *ep = port_ep(p);
	struct ibres_hostrec old;
	bool gid_changed, changed;

	if (!ep || !p->have_info)
		return;
	old = ep->cfg.id;
	fill_endpoint(p, ep);
	gid_changed =
		old.n_gids != ep->cfg.id.n_gids || memcmp(old.gids[0], ep->cfg.id.gids[0], 16);
	changed = gid_changed || old.lid != ep->cfg.id.lid || old.pkey != ep->cfg.id.pkey;
	if (!changed)
		return;
	resolver_local_changed(d, ep, gid_changed);
	/* the IPoIB interfaces of a port are found by its GID and P_Key */
	netlink_refresh(d);
	fabric_identity_changed(d, ep, &old);
}

void sa_apply_endpoint(struct ibresd *d, struct endpoint *ep)
{
	struct sa_client *sa = d->sa;

	if (!sa)
		return;
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		if (strcmp(p->label + strlen("endpoint "), ep->cfg.label)) {
			/* that slot now holds another endpoint */
			if (p->ep == (int)ep->index)
				p->ep = -1;
			continue;
		}
		p->ep = (int)ep->index;
		if (strcmp(ep->cfg.device, p->dev) || ep->cfg.port_num != p->port_num)
			log_warn("%s: device or port changed: it takes effect at the next restart",
				 p->label);
		/* a copy from the config has the configured values: put ours back */
		fill_endpoint(p, ep);
		/* the reload may have turned polling on */
		if (!loop_timer_armed(&p->poll_timer))
			poll_at(p, now_ms());
	}
}

static void port_event(struct sa_client *sa, struct sa_port *p, const char *what)
{
	sa->c.port_events++;
	log_info("%s: %s port %u: %s", p->label, p->dev, p->port_num, what);
}

static void port_update(struct sa_port *p, const struct smp_port_info *pi)
{
	struct sa_client *sa = p->sa;
	struct smp_port_info old = p->pi;
	bool first = !p->have_info, rejoin = first;
	char msg[128];

	p->pi = *pi;
	p->have_info = true;
	if (!first) {
		if (old.state != pi->state) {
			snprintf(msg, sizeof(msg), "%s (state %s -> %s)",
				 pi->state == PORT_ACTIVE   ? "PORT_ACTIVE"
				 : old.state == PORT_ACTIVE ? "PORT_ERR"
							    : "port state change",
				 state_str(old.state), state_str(pi->state));
			port_event(sa, p, msg);
			rejoin = true;
		}
		if (old.lid != pi->lid) {
			snprintf(msg, sizeof(msg), "LID change %u -> %u", old.lid, pi->lid);
			port_event(sa, p, msg);
			rejoin = true;
		}
		if (old.gid_prefix != pi->gid_prefix) {
			port_event(sa, p, "GID change (subnet prefix)");
			rejoin = true;
		}
		if (old.sm_lid != pi->sm_lid) {
			/* a new SM knows nothing of our groups */
			snprintf(msg, sizeof(msg), "SM change: SM LID %u -> %u", old.sm_lid,
				 pi->sm_lid);
			port_event(sa, p, msg);
			rejoin = true;
		}
		if (pi->client_reregister) {
			port_event(sa, p, "CLIENT_REREGISTER");
			rejoin = true;
		}
	}
	if (!pi->mtu)
		p->pi.mtu = old.mtu; /* sysfs has no MTU: keep what we knew */
	if (rejoin)
		reset_groups(p);
	if (pi->state != PORT_ACTIVE || !pi->sm_lid)
		fail_port_queries(sa, p, -ENOTCONN);
	port_apply(p);
	try_joins(p);
	pump(sa, p);
}

static void port_info_deliver(struct sa_port *p, int status, const struct smp_port_info *pi)
{
	p->polling = false;
	if (status) {
		log_debug("%s: PortInfo: %s", p->label, strerror(-status));
		return;
	}
	port_update(p, pi);
}

static void pkeys_deliver(struct sa_port *p, int status, const uint16_t *pkeys)
{
	uint16_t pkey;

	if (status)
		return;
	pkey = pkeys[p->pkey_index % PKEY_BLOCK];
	if (pkey == p->pkey)
		return;
	if (p->pkey)
		port_event(p->sa, p, "P_Key change");
	if (!(pkey & 0x7fff))
		log_warn("%s: P_Key table entry %u is empty", p->label, p->pkey_index);
	p->pkey = pkey;
	reset_groups(p); /* our MGIDs carry the P_Key */
	port_apply(p);
	try_joins(p);
}

/* sysfs through libibumad (real hardware re-reads it; the simulator's copy
 * is from process start): the fallback without an SMI agent. */
static int port_read_sysfs(struct sa_port *p, struct smp_port_info *pi, uint16_t *pkey)
{
	umad_port_t up;
	umad_ca_t ca;
	char rate[16];
	int ret;

	ret = umad_get_port(p->dev, (int)p->port_num, &up);
	if (ret < 0)
		return ret;
	memset(pi, 0, sizeof(*pi));
	if (up.link_layer[0] && strcmp(up.link_layer, "InfiniBand") &&
	    strcmp(up.link_layer, "IB")) {
		umad_release_port(&up);
		return -EPROTONOSUPPORT;
	}
	pi->gid_prefix = be64toh(up.gid_prefix);
	pi->lid = (uint16_t)up.base_lid;
	pi->sm_lid = (uint16_t)up.sm_lid;
	pi->state = (uint8_t)up.state;
	pi->phys_state = (uint8_t)up.phys_state;
	pi->cap_mask = up.capmask;
	snprintf(rate, sizeof(rate), "%u", up.rate);
	ret = ib_rate_from_gbps(rate);
	pi->rate = ret > 0 ? (uint8_t)ret : 0;
	p->port_guid = be64toh(up.port_guid);
	*pkey = p->pkey_index < (unsigned)up.pkeys_size ? up.pkeys[p->pkey_index] : 0;
	umad_release_port(&up);
	if (umad_get_ca(p->dev, &ca) == 0) {
		p->node_guid = be64toh(ca.node_guid);
		umad_release_ca(&ca);
	}
	return 0;
}

static void port_poll(struct sa_client *sa, struct sa_port *p)
{
	struct smp_port_info pi;
	struct sa_query *q;
	uint16_t pkey;

	sa->c.port_polls++;
	if (!umad_io_has_agent(p->io, UMAD_IO_SMI)) {
		if (port_read_sysfs(p, &pi, &pkey) == 0) {
			uint16_t block[PKEY_BLOCK] = {0};

			block[p->pkey_index % PKEY_BLOCK] = pkey;
			pkeys_deliver(p, 0, block);
			port_update(p, &pi);
		}
		return;
	}
	if (p->polling)
		return;
	q = query_new(sa, p, Q_PORTINFO);
	if (!q)
		return;
	smp_encode_get(q->mad, 0, SMP_ATTR_PORT_INFO, p->port_num);
	if (query_submit(sa, q))
		return;
	p->polling = true;
	q = query_new(sa, p, Q_PKEYS);
	if (!q)
		return;
	smp_encode_get(q->mad, 0, SMP_ATTR_PKEY_TABLE, p->pkey_index / PKEY_BLOCK);
	query_submit(sa, q);
}

/* --- timers ---------------------------------------------------------------------- */

static void on_query_timer(struct loop_timer *t)
{
	struct sa_query *q = container_of(t, struct sa_query, timer);
	struct sa_port *p = q->port;
	struct sa_client *sa = p->sa;

	if (!q->sent) {
		/* queued for the window past its time */
		query_finish(sa, q, -ETIMEDOUT, NULL);
		return;
	}
	if (q->attempts > sa->d->cfg.retries || now_ms() >= q->deadline_ms || !port_usable(p)) {
		log_debug("%s: %s: no answer after %u attempts", p->label, q_names[q->kind],
			  q->attempts);
		query_finish(sa, q, port_usable(p) || !is_sa_kind(q->kind) ? -ETIMEDOUT : -ENOTCONN,
			     NULL);
		return;
	}
	query_send(sa, q);
}

static void on_poll_timer(struct loop_timer *t)
{
	struct sa_port *p = container_of(t, struct sa_port, poll_timer);
	unsigned ms = p->sa->d->cfg.port_poll_ms;

	if (!ms)
		return; /* a reload turned polling off */
	/* before the poll's queries arm theirs: the slot this timer just left
	 * is free */
	poll_at(p, now_ms() + ms);
	port_poll(p->sa, p);
}

/* --- life cycle ----------------------------------------------------------------- */

/* Hand MADs to on_rx outside the loop (start-up, shutdown) until @done says
 * so or @ms pass. */
static void wait_outside_loop(struct sa_client *sa, unsigned ms,
			      bool (*done)(const struct sa_client *sa))
{
	uint64_t deadline = now_ms() + ms;
	struct pollfd pfd[CFG_MAX_ENDPOINTS];
	struct sa_port *who[CFG_MAX_ENDPOINTS];

	while (!done(sa)) {
		uint64_t now = now_ms();
		unsigned n = 0;

		if (now >= deadline)
			return;
		for (unsigned i = 0; i < sa->n_ports; i++) {
			if (!sa->ports[i].io)
				continue;
			pfd[n].fd = umad_io_fd(sa->ports[i].io);
			pfd[n].events = POLLIN;
			who[n++] = &sa->ports[i];
		}
		if (!n || poll(pfd, n, (int)(deadline - now)) < 0)
			return;
		for (unsigned i = 0; i < n; i++)
			if (pfd[i].revents & POLLIN)
				umad_io_dispatch(who[i]->io);
	}
}

static bool polls_done(const struct sa_client *sa)
{
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].polling)
			return false;
	return true;
}

static bool leaves_done(const struct sa_client *sa)
{
	for (unsigned i = 0; i < sa->n_ports; i++)
		for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
			if (sa->ports[i].groups[g].state == GRP_LEAVING)
				return false;
	return true;
}

/* Open one endpoint's port; false when it is not usable (logged). */
static bool port_open(struct sa_client *sa, struct sa_port *p, struct endpoint *ep)
{
	struct smp_port_info pi;
	uint16_t pkey = 0;
	int ret;

	p->sa = sa;
	p->ep = (int)ep->index;
	snprintf(p->label, sizeof(p->label), "endpoint %s", ep->cfg.label);
	snprintf(p->dev, sizeof(p->dev), "%s", ep->cfg.device);
	p->port_num = ep->cfg.port_num;
	p->pkey_index = ep->cfg.pkey_index;
	list_init(&p->pending);
	p->poll_timer.cb = on_poll_timer;
	p->join_timer.cb = on_join_timer;
	ret = port_read_sysfs(p, &pi, &pkey);
	if (ret == -EPROTONOSUPPORT) {
		log_warn("%s: %s port %u is not InfiniBand (RoCE?): skipped; the endpoint keeps "
			 "its configured values",
			 p->label, p->dev, p->port_num);
		return false;
	}
	if (ret < 0) {
		log_warn("%s: %s port %u: no InfiniBand port there (%s; iWARP devices have "
			 "none): skipped; the endpoint keeps its configured values",
			 p->label, p->dev, p->port_num, strerror(-ret));
		return false;
	}
	p->pkey = pkey;
	/* sysfs first: the identity is known even if the MADs below fail */
	p->pi = pi;
	p->have_info = true;
	ret = umad_io_open(&p->io, p->dev, p->port_num, &sa->d->loop, on_rx, p);
	if (ret)
		log_warn("%s: no MADs on %s port %u (%s): no SA, no groups, no port events",
			 p->label, p->dev, p->port_num, strerror(-ret));
	return true;
}

int sa_start(struct ibresd *d)
{
	struct sa_client *sa;
	bool any = false;

	d->sa = NULL;
	for (unsigned i = 0; i < d->n_eps; i++)
		any |= d->eps[i].cfg.device[0] != '\0';
	if (!any)
		return 0;
	sa = calloc(1, sizeof(*sa));
	if (!sa)
		return -ENOMEM;
	sa->d = d;
	list_init(&sa->outstanding);
	if (getrandom(&sa->seq, sizeof(sa->seq), 0) != sizeof(sa->seq))
		sa->seq = (uint32_t)now_ms();
	d->sa = sa;
	umad_init();
	for (unsigned i = 0; i < d->n_eps; i++) {
		struct sa_port *p = &sa->ports[sa->n_ports];

		if (!d->eps[i].cfg.device[0])
			continue;
		if (port_open(sa, p, &d->eps[i]))
			sa->n_ports++;
		else
			memset(p, 0, sizeof(*p));
	}
	/* the first PortInfo (MTU, rate, state) before anyone hears of us */
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].io)
			port_poll(sa, &sa->ports[i]);
	wait_outside_loop(sa, START_WAIT_MS, polls_done);
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];
		char s[INET6_ADDRSTRLEN];
		uint8_t gid[16];

		poll_at(p, now_ms() + d->cfg.port_poll_ms);
		port_gid(p, gid);
		log_info("%s: %s port %u%s: %s, LID %u, SM LID %u, GID %s, P_Key 0x%04x, MTU %u, "
			 "rate %s Gb/s",
			 p->label, p->dev, p->port_num, p->polling || !p->io ? " (sysfs)" : "",
			 state_str(p->pi.state), p->pi.lid, p->pi.sm_lid,
			 gid_str(gid, s, sizeof(s)), p->pkey, ib_mtu_to_bytes(p->pi.mtu),
			 ib_rate_to_gbps(p->pi.rate));
		port_apply(p);
		if (p->io && !port_usable(p))
			log_warn(
				"%s: %s port %u is %s%s: no SA until a Subnet Manager brings it up",
				p->label, p->dev, p->port_num, state_str(p->pi.state),
				p->pi.sm_lid ? "" : " with no SM");
		try_joins(p);
	}
	return 0;
}

void sa_stop(struct ibresd *d)
{
	struct sa_client *sa = d->sa;

	if (!sa)
		return;
	/* leave what we joined, so that the SA can drop groups nobody uses */
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		if (!port_usable(p))
			continue;
		for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
			if (p->groups[g].state == GRP_JOINED)
				send_leave(sa, p, g);
	}
	wait_outside_loop(sa, STOP_WAIT_MS, leaves_done);
	/* whoever still waits learns that nothing will come */
	sa->stopping = true;
	/* a waiter may ask again when cancelled: until none is left, each
	 * with its timer */
	for (;;) {
		struct list_node *first = &sa->outstanding;

		for (unsigned i = 0; i < sa->n_ports && first == &sa->outstanding; i++)
			if (!list_empty(&sa->ports[i].pending))
				first = &sa->ports[i].pending;
		if (list_empty(first))
			break;
		query_finish(sa, list_entry(first->next, struct sa_query, node), -ECANCELED, NULL);
	}
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		loop_timer_cancel(&d->loop, &p->poll_timer);
		loop_timer_cancel(&d->loop, &p->join_timer);
		umad_io_close(p->io, &d->loop);
	}
	free(sa);
	d->sa = NULL;
}

void sa_stats(struct ibresd *d, struct tlv_writer *w)
{
	static const struct sa_counters zero;
	const struct sa_client *sa = d->sa;
	const struct sa_counters *c = sa ? &sa->c : &zero;
	struct umad_io_stats io, sum;
	uint64_t outstanding = 0, queued = 0, joined = 0;

	memset(&sum, 0, sizeof(sum));
	for (unsigned i = 0; sa && i < sa->n_ports; i++) {
		umad_io_get_stats(sa->ports[i].io, &io);
		sum.rx_dropped += io.rx_dropped;
		sum.rx_errors += io.rx_errors;
		sum.tx_errors += io.tx_errors;
		outstanding += sa->ports[i].outstanding;
		for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
			joined += sa->ports[i].groups[g].state == GRP_JOINED;
	}
	if (sa)
		queued = sa->n_queries - outstanding;
	const struct {
		const char *name;
		uint64_t value;
	} rows[] = {
		{"sa_queries", c->queries},
		{"sa_path_queries", c->path_queries},
		{"sa_queries_joined", c->joined},
		{"sa_queries_outstanding", outstanding},
		{"sa_queries_queued", queued},
		{"sa_queries_rejected", c->rejected},
		{"sa_retries", c->retries},
		{"sa_timeouts", c->timeouts},
		{"sa_errors", c->errors},
		{"sa_rx", c->rx},
		{"sa_rx_malformed", c->rx_malformed},
		{"sa_rx_unsolicited", c->rx_unsolicited},
		{"sa_rx_mismatch", c->rx_mismatch},
		{"sa_rx_kernel_timeouts", c->rx_kernel_timeouts},
		{"sa_tx_errors", c->tx_errors + sum.tx_errors},
		{"sa_routes_dropped", c->routes_dropped},
		{"sa_hosts_dropped", c->hosts_dropped},
		{"umad_rx_dropped", sum.rx_dropped},
		{"umad_rx_errors", sum.rx_errors},
		{"port_polls", c->port_polls},
		{"port_events", c->port_events},
		{"mcast_groups_joined", joined},
		{"mcast_joins", c->joins},
		{"mcast_join_failures", c->join_failures},
		{"mcast_leaves", c->leaves},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rows[i].value);
	}
}
