// SPDX-License-Identifier: MIT
/*
 * The SA client's query engine (sa_query.h): the window of outstanding SA
 * queries per port, sending and retrying, matching answers to queries,
 * timeouts; the helpers about ports that the other files of the client
 * share; and the client's counters (sa_stats).
 *
 * Attempt k of a query carries TID (seq << 4 | k) in the 32 bits the kernel
 * leaves us, so a late answer to an earlier attempt still matches. A query's
 * loop timer is due at its deadline while it waits for the window, then at
 * the end of each attempt: retry, or fail.
 */
#include "ib/sa_query.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ibenum.h"
#include "core/endpoints.h"
#include "ib/sa.h"
#include "ib/umad_io.h"
#include "tlv.h"

#define SA_QUERIES_MAX 4096 /* queued and outstanding, all ports: then -EAGAIN */
#define ATTEMPT_BITS   4    /* low TID bits: the attempt (retries <= 10) */
#define GSI_QPN	       1
#define GSI_QKEY       0x80010000u
#define PERMISSIVE_LID 0xffff

/* --- ports ---------------------------------------------------------------- */

struct sa_port *sa_port_of(struct sa_client *sa, const struct endpoint *ep)
{
	if (!sa || !ep)
		return NULL;
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].ep == (int)ep->index)
			return &sa->ports[i];
	return NULL;
}

struct endpoint *sa_port_ep(const struct sa_port *p)
{
	struct endpoints *eps = p->sa->eps;

	if (p->ep < 0 || (unsigned)p->ep >= eps->n)
		return NULL;
	return &eps->ep[p->ep];
}

bool sa_port_usable(const struct sa_port *p)
{
	return p->io && p->have_info && p->pi.state == SA_PORT_ACTIVE && p->pi.sm_lid &&
	       p->pi.lid && p->pi.sm_lid < 0xc000;
}

void sa_port_gid(const struct sa_port *p, uint8_t gid[16])
{
	uint64_t prefix = htobe64(p->pi.gid_prefix), guid = htobe64(p->port_guid);

	memcpy(gid, &prefix, 8);
	memcpy(gid + 8, &guid, 8);
}

const char *sa_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* --- queries ------------------------------------------------------------- */

static void on_query_timer(struct loop_timer *t);

static uint64_t bound_ms(const struct ibres_config *cfg)
{
	return (uint64_t)cfg->timeout_ms * (cfg->retries + 1);
}

int sa_query_new(struct sa_port *p, const struct sa_query_ops *ops, struct sa_query **out)
{
	struct sa_client *sa = p->sa;
	struct sa_query *q;

	if (!ops->smi && sa->n_queries >= SA_QUERIES_MAX) {
		sa->c.rejected++;
		return -EAGAIN;
	}
	q = calloc(1, ops->size);
	if (!q)
		return -ENOMEM;
	q->port = p;
	q->ops = ops;
	q->timer.cb = on_query_timer;
	q->tid = (sa->seq++ & (UINT32_MAX >> ATTEMPT_BITS)) << ATTEMPT_BITS;
	q->deadline_ms = now_ms() + bound_ms(sa->cfg);
	list_init(&q->node);
	if (!ops->smi) {
		sa->n_queries++;
		sa->c.queries++;
	}
	*out = q;
	return 0;
}

/* Take @q off its list, out of the counts, its timer stopped. */
static void query_unlink(struct sa_client *sa, struct sa_query *q)
{
	list_del(&q->node);
	if (!q->ops->smi) {
		sa->n_queries--;
		if (q->sent)
			q->port->outstanding--;
	}
	loop_timer_cancel(sa->loop, &q->timer);
}

static void query_send(struct sa_client *sa, struct sa_query *q)
{
	struct sa_port *p = q->port;
	uint32_t tid = q->tid | q->attempts;
	const struct ibres_config *cfg = sa->cfg;
	int ret;

	q->mad[12] = (uint8_t)(tid >> 24);
	q->mad[13] = (uint8_t)(tid >> 16);
	q->mad[14] = (uint8_t)(tid >> 8);
	q->mad[15] = (uint8_t)tid;
	if (q->attempts)
		sa->c.retries++;
	q->attempts++;
	if (!q->ops->smi)
		/* to the SA on the SM's SL, as the port says */
		ret = umad_io_send(p->io, UMAD_IO_SA, q->mad, MAD_LEN, p->pi.sm_lid, GSI_QPN,
				   p->pi.sm_sl, GSI_QKEY, cfg->timeout_ms);
	else
		ret = umad_io_send(p->io, UMAD_IO_SMI, q->mad, MAD_LEN, PERMISSIVE_LID, 0, 0, 0,
				   cfg->timeout_ms);
	if (ret < 0) {
		/* the attempt is lost; its timeout brings the retry */
		sa->c.tx_errors++;
		log_debug("%s: %s send failed: %s", p->label, q->ops->name, strerror(-ret));
	}
	/* The timer is armed (sa_query_submit) or was just taken off the heap
	 * to run: its slot is free, so this arm allocates nothing and cannot
	 * fail. */
	loop_timer_arm(sa->loop, &q->timer, now_ms() + cfg->timeout_ms);
	if (!q->sent) {
		q->sent = true;
		list_add_tail(&sa->outstanding, &q->node);
		if (!q->ops->smi)
			p->outstanding++;
	}
}

void sa_port_pump(struct sa_port *p)
{
	struct sa_client *sa = p->sa;

	if (sa->stopping || !sa_port_usable(p))
		return;
	while (p->outstanding < sa->cfg->sa_window && !list_empty(&p->pending)) {
		struct sa_query *q = list_entry(p->pending.next, struct sa_query, node);

		list_del(&q->node);
		query_send(sa, q);
	}
}

int sa_query_submit(struct sa_query *q)
{
	struct sa_port *p = q->port;
	struct sa_client *sa = p->sa;
	int ret;

	/* The only arm that may need memory (the heap grows): later ones
	 * move the timer within its slot. Until sent, the deadline. */
	ret = loop_timer_arm(sa->loop, &q->timer, q->deadline_ms);
	if (ret) {
		query_unlink(sa, q);
		free(q);
		return ret;
	}
	if (q->ops->smi) {
		query_send(sa, q);
	} else {
		list_add_tail(&p->pending, &q->node);
		sa_port_pump(p);
	}
	return 0;
}

/* Hand @q's outcome to whoever waits, then free it. On success the decoded
 * answer is in @ans. */
static void query_finish(struct sa_client *sa, struct sa_query *q, int status,
			 const union sa_answer *ans)
{
	struct sa_port *p = q->port;

	/* out of everything first: done() may start queries, which must
	 * neither find this one nor count it in the window */
	query_unlink(sa, q);
	if (status == -ETIMEDOUT)
		sa->c.timeouts++;
	q->ops->done(q, status, ans);
	free(q);
	sa_port_pump(p);
}

/* The first query of @p (NULL: of any port) that @pick takes, queued ones
 * first. */
static struct sa_query *first_query(struct sa_client *sa, struct sa_port *p,
				    bool (*pick)(const struct sa_query *q))
{
	struct list_node *pos, *tmp;

	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *pp = &sa->ports[i];

		if (p && pp != p)
			continue;
		list_for_each_safe(pos, tmp, &pp->pending)
		{
			struct sa_query *q = list_entry(pos, struct sa_query, node);

			if (pick(q))
				return q;
		}
	}
	list_for_each_safe(pos, tmp, &sa->outstanding)
	{
		struct sa_query *q = list_entry(pos, struct sa_query, node);

		if ((!p || q->port == p) && pick(q))
			return q;
	}
	return NULL;
}

static bool fails_on_port_down(const struct sa_query *q)
{
	return !q->ops->smi && !(q->sent && q->ops->keep_on_port_down);
}

void sa_port_fail_queries(struct sa_port *p, int status)
{
	struct sa_query *q;

	/* finishing may queue new queries: look again each time */
	while ((q = first_query(p->sa, p, fails_on_port_down)))
		query_finish(p->sa, q, status, NULL);
}

static bool any_query(const struct sa_query *q)
{
	(void)q;
	return true;
}

void sa_query_cancel_all(struct sa_client *sa)
{
	struct sa_query *q;

	while ((q = first_query(sa, NULL, any_query)))
		query_finish(sa, q, -ECANCELED, NULL);
}

struct sa_query *sa_query_find(struct sa_port *p, const struct sa_query_ops *ops,
			       bool (*match)(const struct sa_query *q, const void *arg),
			       const void *arg)
{
	struct list_node *lists[2] = {&p->sa->outstanding, &p->pending}, *pos, *tmp;

	for (int i = 0; i < 2; i++)
		list_for_each_safe(pos, tmp, lists[i])
		{
			struct sa_query *q = list_entry(pos, struct sa_query, node);

			if (q->port == p && q->ops == ops && match(q, arg))
				return q;
		}
	return NULL;
}

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
	if (q->attempts > sa->cfg->retries || now_ms() >= q->deadline_ms || !sa_port_usable(p)) {
		log_debug("%s: %s: no answer after %u attempts", p->label, q->ops->name,
			  q->attempts);
		query_finish(sa, q, sa_port_usable(p) || q->ops->smi ? -ETIMEDOUT : -ENOTCONN,
			     NULL);
		return;
	}
	query_send(sa, q);
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

void sa_port_rx(void *arg, const struct umad_io_rx *rx)
{
	struct sa_port *p = arg;
	struct sa_client *sa = p->sa;
	union sa_answer ans;
	struct sa_query *q;
	struct mad_hdr h;
	enum mad_error err;

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
	if (!q->ops->smi)
		err = mad_check_response(&h, MAD_CLASS_SA, q->ops->method, q->ops->attr);
	else
		err = smp_check_response(rx->mad, rx->len, &h, q->ops->attr);
	if (err == MAD_ERR_STATUS) {
		int status = mad_status_errno(&h);

		sa->c.errors++;
		log_debug("%s: %s answered with status 0x%04x", p->label, q->ops->name, h.status);
		query_finish(sa, q, status < 0 ? status : -EPROTO, NULL);
		return;
	}
	if (err != MAD_OK) {
		/* not an answer to this query; the real one may still come */
		sa->c.rx_mismatch++;
		return;
	}
	switch (q->ops->decode(q, rx->mad, rx->len, &ans)) {
	case SA_RX_OK:
		query_finish(sa, q, 0, &ans);
		return;
	case SA_RX_MALFORMED:
		sa->c.rx_malformed++;
		return;
	case SA_RX_MISMATCH:
		sa->c.rx_mismatch++;
		return;
	}
}

void sa_wait_outside_loop(struct sa_client *sa, unsigned ms,
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

/* --- counters -------------------------------------------------------------- */

void sa_stats(struct sa_client *sa, struct tlv_writer *w)
{
	static const struct sa_counters zero;
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
