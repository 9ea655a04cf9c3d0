// SPDX-License-Identifier: MIT
#include "frontend/dispatch.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fabric/fabric.h"
#include "msg.h"
#include "core/log.h"
#include "os/netlink.h"
#include "engine/resolver.h"
#include "ib/sa.h"

/* Slack past the fabric's own bound before a waiting request gives up. */
#define WAIT_SLACK_MS 500

int reply_status(const struct request *req, uint8_t *reply, size_t *len, uint8_t status)
{
	*len = msg_error(reply, request_hdr(req), status);
	return 0;
}

uint8_t status_from_errno(int err)
{
	return ibres_errno_to_status(err);
}

/* The query ended (called from inside the resolver or the SA client: do
 * nothing but schedule). */
static void request_wake(struct lookup_waiter *w, int status)
{
	struct request *req = container_of(w, struct request, waiter);

	req->woken = true;
	req->wake_status = status;
	loop_timer_arm(&req->d->loop, &req->deadline, 0);
}

static void request_resume(struct loop_timer *t)
{
	struct request *req = container_of(t, struct request, deadline);
	struct ibresd *d = req->d;
	size_t len = 0;
	int ret;

	if (!req->woken) {
		/* Nothing settled in time: every wait has a bound. */
		lookup_waiter_cancel(&req->waiter);
		d->stats.pending_timeouts++;
		reply_status(req, d->scratch, &len, IBRES_STATUS_ETIMEDOUT);
		server_complete(d, req, d->scratch, len);
		return;
	}
	req->woken = false;
	if (req->wake_status < 0) {
		/* the query failed (timed out, flushed): say so, do not look again */
		if (req->wake_status == -ETIMEDOUT)
			d->stats.pending_timeouts++;
		reply_status(req, d->scratch, &len, status_from_errno(req->wake_status));
		server_complete(d, req, d->scratch, len);
		return;
	}
	ret = dispatch_request(d, req, d->scratch, &len);
	if (ret == -EINPROGRESS)
		return;
	if (ret < 0)
		reply_status(req, d->scratch, &len, IBRES_STATUS_EINVAL);
	server_complete(d, req, d->scratch, len);
}

struct lookup_waiter *request_waiter(struct request *req)
{
	req->waiter.done = request_wake;
	return &req->waiter;
}

int request_wait(struct ibresd *d, struct request *req)
{
	uint64_t bound = resolver_bound_ms(&d->cfg) + WAIT_SLACK_MS;

	req->woken = false;
	req->deadline.cb = request_resume;
	loop_timer_arm(&d->loop, &req->deadline, now_ms() + bound);
	return -EINPROGRESS;
}

void dispatch_abandon(struct ibresd *d, struct request *req)
{
	lookup_waiter_cancel(&req->waiter);
	loop_timer_cancel(&d->loop, &req->deadline);
	req->woken = false;
}

/* A RESOLVE address entry as a cache key. */
static int key_from_entry(const struct ibres_ep_entry *e, struct host_key *k)
{
	switch (e->type) {
	case IBRES_EP_TYPE_NAME:
		return host_key_name(k, e->info.name);
	case IBRES_EP_TYPE_IP:
		return host_key_addr(k, IBRES_KEY_IPV4, e->info.addr);
	case IBRES_EP_TYPE_IP6:
		return host_key_addr(k, IBRES_KEY_IPV6, e->info.addr);
	}
	return -EINVAL;
}

static void count(struct ibresd *d, struct endpoint *ep, unsigned counter)
{
	d->counters[counter]++;
	if (ep)
		ep->counters[counter]++;
}

/* The answer to a successful RESOLVE: the path first, then the source we
 * chose when the client named none (librdmacm fills ai_src_addr from it). */
static size_t build_resolve_reply(const struct request *req, uint8_t *reply,
				  const struct ibres_path_record *path,
				  const struct ibres_ep_entry *src_entry)
{
	struct ibres_hdr h = *request_hdr(req);
	struct ibres_ep_entry *out = (void *)(reply + IBRES_HDR_LEN);
	size_t len = IBRES_HDR_LEN + IBRES_EP_LEN;

	memset(out, 0, 2 * IBRES_EP_LEN);
	out[0].flags = IBRES_PATH_FLAGS_ACM;
	out[0].type = IBRES_EP_TYPE_PATH;
	memcpy(&out[0].info.path, path, sizeof(*path));
	if (src_entry) {
		memcpy(&out[1], src_entry, IBRES_EP_LEN);
		len += IBRES_EP_LEN;
	}
	h.status = IBRES_STATUS_SUCCESS;
	memset(h.data, 0, sizeof(h.data));
	ibres_msg_set_length(&h, (uint16_t)len);
	memcpy(reply, &h, sizeof(h));
	return len;
}

/* The address of @ep that answers a destination of @type, as an entry. */
static int source_entry(const struct endpoint *ep, uint16_t type, struct ibres_ep_entry *e)
{
	const struct ibres_hostrec *id = &ep->cfg.id;

	memset(e, 0, sizeof(*e));
	e->flags = IBRES_EP_FLAG_SOURCE;
	e->type = type;
	switch (type) {
	case IBRES_EP_TYPE_IP:
		if (!id->n_v4)
			return -ENOENT;
		memcpy(e->info.addr, &id->v4[0], 4);
		return 0;
	case IBRES_EP_TYPE_IP6:
		if (!id->n_v6)
			return -ENOENT;
		memcpy(e->info.addr, &id->v6[0], 16);
		return 0;
	default:
		if (strlen(id->names[0]) >= sizeof(e->info.name))
			return -ENAMETOOLONG;
		strcpy(e->info.name, id->names[0]);
		return 0;
	}
}

static int answer_lookup(struct ibresd *d, struct request *req, struct endpoint *ep,
			 enum lookup_result res, uint8_t *reply, size_t *len)
{
	switch (res) {
	case LOOKUP_WAIT:
		if (!req->counted)
			count(d, ep, IBRES_CNTR_ADDR_QUERY);
		req->counted = true;
		return request_wait(d, req);
	case LOOKUP_NOTFOUND:
		count(d, ep, IBRES_CNTR_NODATA);
		return reply_status(req, reply, len, IBRES_STATUS_ENODATA);
	case LOOKUP_TIMEDOUT:
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ETIMEDOUT);
	default:
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ENOMEM);
	}
}

/* Look the destination up and answer with the path from @ep to it (and the
 * chosen source, if any), or with why not. Both RESOLVE forms end here. */
static int answer_route(struct ibresd *d, struct request *req, struct endpoint *ep,
			const struct host_key *dkey, bool nodelay,
			const struct ibres_ep_entry *src, uint8_t *reply, size_t *len)
{
	struct ibres_path_record path;
	enum lookup_result res;
	struct host *h;
	bool cached;
	int err;

	if (!req->counted)
		ep->counters[IBRES_CNTR_RESOLVE]++;
	res = resolver_lookup(d, request_waiter(req), dkey, nodelay, &h);
	if (res != LOOKUP_FOUND)
		return answer_lookup(d, req, ep, res, reply, len);
	if (!req->counted)
		count(d, ep, IBRES_CNTR_ADDR_CACHE);
	/* route protocol sa: the first resolution waits for the SA's path */
	res = resolver_route_wait(d, request_waiter(req), ep, h, &err);
	if (res == LOOKUP_WAIT) {
		count(d, ep, IBRES_CNTR_ROUTE_QUERY);
		req->counted = req->route_asked = true;
		return request_wait(d, req);
	}
	if (res != LOOKUP_FOUND) {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, status_from_errno(err));
	}
	resolver_route(d, ep, h, &path, &cached);
	if (!req->route_asked)
		count(d, ep, cached ? IBRES_CNTR_ROUTE_CACHE : IBRES_CNTR_ROUTE_QUERY);
	*len = build_resolve_reply(req, reply, &path, src);
	return 0;
}

static int resolve_addr(struct ibresd *d, struct request *req, const struct acm_resolve_req *r,
			uint8_t *reply, size_t *len)
{
	struct host_key dkey, skey;
	struct endpoint *ep;
	struct ibres_ep_entry src;

	if (key_from_entry(r->dst, &dkey) < 0) {
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_EDESTADDR);
	}
	if (r->src) {
		if (key_from_entry(r->src, &skey) < 0 || !(ep = endpoint_by_key(&d->eps, &skey))) {
			count(d, NULL, IBRES_CNTR_ERROR);
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		}
	} else {
		/* A local destination is reached through its own endpoint. */
		ep = endpoint_by_key(&d->eps, &dkey);
		if (!ep) /* where the kernel's route to it leaves from */
			ep = netlink_route_endpoint(d, &dkey);
		if (!ep)
			ep = endpoint_for_dest(&d->eps, &dkey);
		if (!ep || source_entry(ep, r->dst->type, &src) < 0) {
			count(d, NULL, IBRES_CNTR_ERROR);
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		}
	}

	return answer_route(d, req, ep, &dkey, r->dst_flags & IBRES_FLAG_NODELAY,
			    r->src ? NULL : &src, reply, len);
}

/* The SA answered a QUERY_SA (called from the SA client: only schedule). */
static void request_verified(struct lookup_waiter *w, int status)
{
	struct request *req = container_of(w, struct request, waiter);

	req->verified = true;
	request_wake(w, status);
}

/* QUERY_SA (ib_acme -v): the SA's record for the client's path, never the
 * cache's. The request waits for the SA; its answer comes back here. */
static int verify_path(struct ibresd *d, struct request *req, struct endpoint *ep,
		       const struct ibres_path_record *in, uint8_t *reply, size_t *len)
{
	int ret;

	if (req->verified) {
		*len = build_resolve_reply(req, reply, &req->sa_path, NULL);
		return 0;
	}
	if (!req->counted)
		ep->counters[IBRES_CNTR_RESOLVE]++;
	req->waiter.done = request_verified;
	ret = sa_verify_path(d, ep, in, &req->waiter, &req->sa_path);
	if (ret) {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, status_from_errno(ret));
	}
	count(d, ep, IBRES_CNTR_ROUTE_QUERY);
	req->counted = true;
	return request_wait(d, req);
}

static bool gid_is_zero(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	return !memcmp(gid, zero, 16);
}

static int resolve_path(struct ibresd *d, struct request *req, const struct acm_resolve_req *r,
			uint8_t *reply, size_t *len)
{
	const struct ibres_path_record *in = &r->path->info.path;
	struct host_key dkey, skey;
	struct endpoint *ep = NULL;

	if (r->query_sa && !d->sa) {
		/* Verification needs a Subnet Administrator; none is configured. */
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ENOTCONN);
	}
	if (!gid_is_zero(in->sgid)) {
		host_key_addr(&skey, IBRES_KEY_GID, in->sgid);
		ep = endpoint_by_key(&d->eps, &skey);
	} else if (in->slid) {
		host_key_lid(&skey, be16toh(in->slid));
		ep = endpoint_by_key(&d->eps, &skey);
	} else if (d->eps.n) {
		ep = &d->eps.ep[0];
	}
	if (!ep) {
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
	}
	if (r->query_sa)
		return verify_path(d, req, ep, in, reply, len);
	if (!gid_is_zero(in->dgid)) {
		host_key_addr(&dkey, IBRES_KEY_GID, in->dgid);
	} else if (in->dlid) {
		host_key_lid(&dkey, be16toh(in->dlid));
	} else {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_EDESTADDR);
	}
	return answer_route(d, req, ep, &dkey, r->path->flags & IBRES_FLAG_NODELAY, NULL, reply,
			    len);
}

static int handle_resolve(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct acm_resolve_req r;
	int status = acm_parse_resolve(req->msg, req->len, &r);

	if (!req->counted) {
		d->counters[IBRES_CNTR_RESOLVE]++;
		req->route_asked = req->verified = false; /* a new request */
	}
	if (status) {
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, (uint8_t)status);
	}
	return r.is_path ? resolve_path(d, req, &r, reply, len)
			 : resolve_addr(d, req, &r, reply, len);
}

static int handle_perf(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	const struct ibres_hdr *rh = request_hdr(req);
	const uint64_t *counters = d->counters;
	struct ibres_hdr h = *rh;
	uint64_t *out = (void *)(reply + IBRES_HDR_LEN);
	unsigned index = rh->data[1];

	if (req->len == IBRES_HDR_LEN + IBRES_EP_LEN) {
		const struct ibres_ep_entry *e = (const void *)(req->msg + IBRES_HDR_LEN);
		struct host_key k;
		struct endpoint *ep;

		if (!(e->flags & IBRES_EP_FLAG_SOURCE) ||
		    (e->type == IBRES_EP_TYPE_NAME && !memchr(e->info.name, 0, IBRES_ADDR_MAX)) ||
		    key_from_entry(e, &k) < 0 || !(ep = endpoint_by_key(&d->eps, &k)))
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		counters = ep->counters;
	} else if (req->len != IBRES_HDR_LEN) {
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	} else if (index) {
		if (index > d->eps.n)
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		counters = d->eps.ep[index - 1].counters;
	}
	for (unsigned i = 0; i < IBRES_CNTR_MAX; i++)
		out[i] = htobe64(counters[i]);
	h.opcode = IBRES_OP_PERF_QUERY | IBRES_OP_ACK;
	h.status = IBRES_STATUS_SUCCESS;
	memset(h.data, 0, sizeof(h.data));
	h.data[0] = IBRES_CNTR_MAX;
	*len = IBRES_HDR_LEN + IBRES_CNTR_MAX * sizeof(uint64_t);
	ibres_msg_set_length(&h, (uint16_t)*len);
	memcpy(reply, &h, sizeof(h));
	return 0;
}

/* The address strings EP_QUERY lists: names, then IPv4, then IPv6. */
static unsigned ep_addr_strings(const struct endpoint *ep, char (*out)[IBRES_ADDR_MAX],
				unsigned max)
{
	const struct ibres_hostrec *id = &ep->cfg.id;
	unsigned n = 0;

	for (unsigned i = 0; i < id->n_v4 && n < max; i++)
		inet_ntop(AF_INET, &id->v4[i], out[n++], IBRES_ADDR_MAX);
	for (unsigned i = 0; i < id->n_v6 && n < max; i++)
		inet_ntop(AF_INET6, &id->v6[i], out[n++], IBRES_ADDR_MAX);
	for (unsigned i = 0; i < id->n_names && n < max; i++)
		snprintf(out[n++], IBRES_ADDR_MAX, "%s", id->names[i]);
	return n;
}

static int handle_ep_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	const struct ibres_hdr *rh = request_hdr(req);
	unsigned index = rh->data[0], port = rh->data[1], seen = 0, max_port = 1;
	struct ibres_ep_config *cfgd = (void *)(reply + IBRES_HDR_LEN);
	char (*addrs)[IBRES_ADDR_MAX] = (void *)(cfgd + 1);
	struct endpoint *ep = NULL;
	struct ibres_hdr h = *rh;
	unsigned n;

	for (unsigned i = 0; i < d->eps.n; i++)
		if (d->eps.ep[i].cfg.port_num > max_port)
			max_port = d->eps.ep[i].cfg.port_num;
	/* Endpoint N (1-based) of port @port; any port when the client does
	 * not know the port count yet (ib_acme starts with 255). */
	for (unsigned i = 0; i < d->eps.n && !ep; i++) {
		if (port && port != 255 && d->eps.ep[i].cfg.port_num != port)
			continue;
		if (++seen == index)
			ep = &d->eps.ep[i];
	}
	if (!ep || req->len != IBRES_HDR_LEN)
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);

	memset(cfgd, 0, sizeof(*cfgd));
	cfgd->dev_guid = htobe64(ep->cfg.dev_guid);
	cfgd->port_num = ep->cfg.port_num;
	cfgd->phys_port_cnt = (uint8_t)max_port;
	cfgd->pkey = htobe16(ep->cfg.id.pkey);
	snprintf(cfgd->prov_name, sizeof(cfgd->prov_name), "ibres");
	memset(addrs, 0, (size_t)IBRES_ADDR_MAX * (2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_NAMES_MAX));
	n = ep_addr_strings(ep, addrs, 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_NAMES_MAX);
	cfgd->addr_cnt = htobe16((uint16_t)n);

	h.opcode = IBRES_OP_EP_QUERY | IBRES_OP_ACK;
	h.status = IBRES_STATUS_SUCCESS;
	memset(h.data, 0, sizeof(h.data));
	*len = IBRES_HDR_LEN + sizeof(*cfgd) + (size_t)n * IBRES_ADDR_MAX;
	ibres_msg_set_length(&h, (uint16_t)*len);
	memcpy(reply, &h, sizeof(h));
	return 0;
}

int dispatch_request(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	const struct ibres_hdr *h = request_hdr(req);

	if (h->version != IBRES_ACM_VERSION) {
		/* ibacm ignores such a message and leaves its client hanging;
		 * we answer it. */
		d->stats.bad_requests++;
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	}
	switch (h->opcode) {
	case IBRES_OP_RESOLVE:
		return handle_resolve(d, req, reply, len);
	case IBRES_OP_PERF_QUERY:
		return handle_perf(d, req, reply, len);
	case IBRES_OP_EP_QUERY:
		return handle_ep_query(d, req, reply, len);
	case IBRES_OP_HOST:
	case IBRES_OP_CACHE_LIST:
	case IBRES_OP_CACHE_FLUSH:
	case IBRES_OP_STATS:
	case IBRES_OP_ENDPOINTS:
		return ext_dispatch(d, req, reply, len);
	default:
		d->stats.bad_requests++;
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	}
}
