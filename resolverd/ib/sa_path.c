// SPDX-License-Identifier: MIT
/*
 * PathRecords from the SA (sa.h): the path to a stored host for route
 * protocol `sa` (one query per destination, whoever waits for it), and
 * QUERY_SA verification of a client's path. An SA that knows no path to a
 * host learned from the fabric makes the host go.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "ibenum.h"
#include "core/endpoints.h"
#include "ib/sa.h"
#include "ib/sa_mad.h"
#include "ib/sa_query.h"

/* A PathRecord GET and what its answer is for. */
struct path_query {
	struct sa_query q;     /* first: the engine allocates and frees the whole */
	struct host_key dest; /* route: the destination's GID (or LID) key */
	/* route: the destination endpoint's LID and P_Key (a port's
	 * partitions share its GID key, which leads to one of them) */
	uint16_t dest_lid, dest_pkey;
	uint8_t dgid[16];      /* the answer must be about it */
	bool check_dgid;
	struct list_node waiters; /* the client requests still there */
	struct ibres_path_record *out;
};

_Static_assert(offsetof(struct path_query, q) == 0, "sa_query_new() allocates the whole");

static enum sa_rx path_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
			      union sa_answer *ans);
static void route_done(struct sa_query *q, int status, const union sa_answer *ans);
static void verify_done(struct sa_query *q, int status, const union sa_answer *ans);
static void recheck_done(struct sa_query *q, int status, const union sa_answer *ans);

static const struct sa_query_ops route_ops = {
	.name = "PathRecord",
	.size = sizeof(struct path_query),
	.method = MAD_METHOD_GET,
	.attr = SA_ATTR_PATH_REC,
	.decode = path_decode,
	.done = route_done,
};

static const struct sa_query_ops verify_ops = {
	.name = "PathRecord (verify)",
	.size = sizeof(struct path_query),
	.method = MAD_METHOD_GET,
	.attr = SA_ATTR_PATH_REC,
	.decode = path_decode,
	.done = verify_done,
};

static const struct sa_query_ops recheck_ops = {
	.name = "PathRecord (recheck)",
	.size = sizeof(struct path_query),
	.method = MAD_METHOD_GET,
	.attr = SA_ATTR_PATH_REC,
	.decode = path_decode,
	.done = recheck_done,
};

static struct path_query *path_query_of(const struct sa_query *q)
{
	return container_of(q, struct path_query, q);
}

/* A GET of @pr with @mask from @p, the answer to be about @pr's DGID if
 * @mask names it; for the caller to complete and submit. */
static int path_query_new(struct sa_port *p, const struct sa_query_ops *ops,
			  const struct ibres_path_record *pr, uint64_t mask,
			  struct path_query **out)
{
	struct path_query *pq;
	struct sa_query *q;
	int ret;

	ret = sa_query_new(p, ops, &q);
	if (ret)
		return ret;
	pq = path_query_of(q);
	sa_encode_path_get(q->mad, 0, pr, mask);
	if (mask & PR_COMP_DGID) {
		memcpy(pq->dgid, pr->dgid, 16);
		pq->check_dgid = true;
	}
	list_init(&pq->waiters);
	*out = pq;
	return 0;
}

static enum sa_rx path_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
			      union sa_answer *ans)
{
	const struct path_query *pq = path_query_of(q);
	uint8_t gid[16];

	if (sa_decode_path(mad, len, &ans->path) != MAD_OK)
		return SA_RX_MALFORMED;
	sa_port_gid(q->port, gid);
	/* a route starts at our port; a client's verified path may not */
	if ((pq->check_dgid && memcmp(ans->path.dgid, pq->dgid, 16)) ||
	    (q->ops != &verify_ops && memcmp(ans->path.sgid, gid, 16)))
		return SA_RX_MISMATCH;
	return SA_RX_OK;
}

/* Send @pq and let @w wait for it. */
static int path_submit(struct sa_client *sa, struct path_query *pq, struct lookup_waiter *w)
{
	int ret = sa_query_submit(&pq->q);

	if (ret)
		return ret;
	sa->c.path_queries++;
	/* submitting answers nothing at once: the waiter is in time */
	list_add_tail(&pq->waiters, &w->node);
	return 0;
}

/* --- routes (route protocol sa) ------------------------------------------- */

bool sa_route_available(struct sa_client *sa, const struct endpoint *ep)
{
	struct sa_port *p = sa_port_of(sa, ep);

	return p && p->io;
}

static bool same_dest(const struct sa_query *q, const void *arg)
{
	return host_key_eq(&path_query_of(q)->dest, arg);
}

/* The daemon's own query (@ops: a route, or a recheck) for a path from @p
 * to @k, in partition @pkey, by @pr's DGID or DLID (@mask names which): what
 * the SA says of it is its word on the destination (route_done() and
 * recheck_done() drop one it has no path to). */
static int route_new(struct sa_port *p, const struct sa_query_ops *ops, const struct host_key *k,
		     struct ibres_path_record *pr, uint64_t mask, uint16_t pkey,
		     struct path_query **out)
{
	int ret;

	sa_port_gid(p, pr->sgid);
	pr->reversible_numpath = 0x81; /* reversible, one path */
	pr->pkey = htobe16(pkey);
	mask |= PR_COMP_SGID | PR_COMP_REVERSIBLE | PR_COMP_NUMB_PATH | PR_COMP_PKEY;
	ret = path_query_new(p, ops, pr, mask, out);
	if (!ret)
		(*out)->dest = *k;
	return ret;
}

int sa_route_query(struct sa_client *sa, struct endpoint *ep, const struct host *h,
		   struct lookup_waiter *w)
{
	static const uint8_t zero[16];
	uint8_t gid[16];
	struct sa_port *p = sa_port_of(sa, ep);
	struct ibres_path_record pr;
	struct path_query *pq;
	struct host_key k;
	uint64_t mask = 0;
	int ret;

	if (!p || !sa_port_usable(p))
		return -ENOTCONN;
	memset(&pr, 0, sizeof(pr));
	if (memcmp(host_gid(h, gid), zero, 16)) {
		/* GIDs are the stable identity; a LID learned from a peer may be stale */
		host_key_addr(&k, IBRES_KEY_GID, gid);
		memcpy(pr.dgid, gid, 16);
		mask |= PR_COMP_DGID;
	} else if (host_lid(h)) {
		host_key_lid(&k, host_lid(h), (uint8_t)ep->index);
		pr.dlid = htobe16(host_lid(h));
		mask |= PR_COMP_DLID;
	} else {
		return -ENODATA;
	}
	struct sa_query *same = sa_query_find(p, &route_ops, same_dest, &k);

	if (same) {
		sa->c.joined++;
		list_add_tail(&path_query_of(same)->waiters, &w->node);
		return 0;
	}
	ret = route_new(p, &route_ops, &k, &pr, mask, p->pkey ? p->pkey : ep->cfg.id.pkey, &pq);
	if (ret)
		return ret;
	pq->dest_lid = host_lid(h);
	pq->dest_pkey = host_pkey(h);
	return path_submit(sa, pq, w);
}

/* The SA has no path to @gid (its port left the subnet): a host learned
 * from the fabric is stale and goes; the routes to a configured one are
 * dropped. */
static void drop_stale(struct sa_client *sa, const uint8_t gid[16])
{
	struct host_key k;
	struct host *h;

	host_key_addr(&k, IBRES_KEY_GID, gid);
	h = store_lookup(sa->store, &k, now_ms(), false);
	if (!h)
		return;
	sa->c.routes_dropped += store_drop_routes(sa->store, -1, gid);
	if (host_origin(h) != IBRES_ORIGIN_FABRIC)
		return;
	sa->c.hosts_dropped++;
	store_remove_gid(sa->store, gid);
}

/* The endpoint the route query @pq was for, or NULL (it left meanwhile):
 * of the destination's port GID (or LID), the one of its P_Key, whichever
 * of the port's partitions the key leads to. */
static struct host *route_owner(struct sa_client *sa, const struct path_query *pq, uint64_t now)
{
	struct host *h = store_lookup(sa->store, &pq->dest, now, false);
	uint8_t gid[16];

	for (struct host *e = h; e; e = host_next_endpoint(h, e)) {
		if (host_pkey(e) != pq->dest_pkey)
			continue;
		if (pq->dest.type == IBRES_KEY_GID ? !memcmp(host_gid(e, gid), pq->dest.data, 16)
						   : host_lid(e) == pq->dest_lid)
			return e;
	}
	return NULL;
}

/* Store the answer with the destination endpoint (all its names and
 * addresses share the path) and wake the requests waiting for it. */
static void route_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct path_query *pq = path_query_of(q);
	struct sa_client *sa = q->port->sa;
	uint64_t now = now_ms();
	char ks[HOST_KEY_STR_MAX];
	struct host *h;

	h = route_owner(sa, pq, now);
	if (!h) {
		lookup_waiters_wake(&pq->waiters, -ENODATA); /* the host left meanwhile */
		return;
	}
	if (status) {
		log_info("%s: no path to %s from the SA: %s", q->port->label,
			 host_key_str(&pq->dest, ks, sizeof(ks)), strerror(-status));
		if (status == -ENODATA && pq->check_dgid)
			drop_stale(sa, pq->dgid);
	} else if (store_set_route(sa->store, h, q->port->ep, &ans->path, sa->cfg->route_ttl_s,
				   now) < 0) {
		status = -ENOMEM;
	}
	lookup_waiters_wake(&pq->waiters, status);
}

/* --- QUERY_SA ---------------------------------------------------------------- */

int sa_verify_path(struct sa_client *sa, struct endpoint *ep, const struct ibres_path_record *in,
		   struct lookup_waiter *w, struct ibres_path_record *out)
{
	struct sa_port *p = sa_port_of(sa, ep);
	struct path_query *pq;
	int ret;

	if (!p || !sa_port_usable(p))
		return -ENOTCONN;
	ret = path_query_new(p, &verify_ops, in, sa_path_comp_mask(in), &pq);
	if (ret)
		return ret;
	pq->out = out;
	return path_submit(sa, pq, w);
}

/* A client's PathRecord to @dgid found none. The client chose its terms (a
 * P_Key, SL, MTU or LID no path has, a port of another plane), and any local
 * user may send one: that drops nothing. For a host @p heard, the daemon asks
 * again in its own terms, from @p in @p's partition, and only that answer
 * may drop it (recheck_done()). */
static void recheck_dest(struct sa_port *p, const uint8_t dgid[16])
{
	struct ibres_path_record pr;
	struct path_query *pq;
	const struct host *h;
	struct host_key k;

	host_key_addr(&k, IBRES_KEY_GID, dgid);
	h = store_lookup(p->sa->store, &k, now_ms(), false);
	/* a host this port heard: the client may name a port of another
	 * plane, or a partition the destination is not in */
	if (!h || p->ep < 0 || p->ep >= 32 || !(host_heard_on(h) >> p->ep & 1))
		return;
	if (!p->pkey || !sa_port_usable(p) || sa_query_find(p, &recheck_ops, same_dest, &k))
		return; /* no partition known, the port down, or asked already */
	memset(&pr, 0, sizeof(pr));
	memcpy(pr.dgid, dgid, 16);
	if (route_new(p, &recheck_ops, &k, &pr, PR_COMP_DGID, p->pkey, &pq) == 0 &&
	    sa_query_submit(&pq->q) == 0)
		p->sa->c.path_queries++;
}

/* A path found is not kept: the route protocol decides where paths come
 * from. */
static void recheck_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	(void)ans;
	if (status == -ENODATA)
		drop_stale(q->port->sa, path_query_of(q)->dgid);
}

static void verify_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct path_query *pq = path_query_of(q);

	if (status == -ENODATA && pq->check_dgid)
		recheck_dest(q->port, pq->dgid);

	if (list_empty(&pq->waiters))
		return; /* the client went away */
	if (!status)
		*pq->out = ans->path;
	lookup_waiters_wake(&pq->waiters, status);
}
