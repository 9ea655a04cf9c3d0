// SPDX-License-Identifier: MIT
/* The ibacm opcodes: RESOLVE (by address or by path, waiting for the fabric
 * or the SA when it must), PERF_QUERY and EP_QUERY, answered byte for byte
 * as ibacm does (reference: doc/protocol.md). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "engine/resolver.h"
#include "frontend/handlers.h"
#include "frontend/reply.h"
#include "ib/sa.h"
#include "msg.h"
#include "os/netlink.h"

/* A RESOLVE address entry as a store key. */
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

/* Whether an answer to a RESOLVE by address leaves the path out, so that the
 * path reaches the kernel's rdma_cm through its own query (kernel_paths.c,
 * answered from the same store) rather than through the client. A path in
 * the answer makes librdmacm's rdma_getaddrinfo() put an AF_IB rdma_addrinfo
 * first, whose IP header for the CM's private data rides only in ai_connect:
 *  - on RoCE (a GRH-routed path, no LID at either end) the kernel's rdma_cm
 *    refuses AF_IB (it resolves AF_IB on InfiniBand ports only) and builds
 *    RoCE routes itself from IP routes and neighbours; so always there;
 *  - on InfiniBand a program that takes that entry's addresses into
 *    rdma_resolve_addr() and connects itself (libfabric's verbs provider
 *    unless asked for FI_SOCKADDR_IB) sends a connection request without the
 *    header, which a server bound to one IP address rejects; so on ibacm's
 *    socket, where librdmacm connects, unless acm_af_ib asks for ibacm's
 *    answer. ib_acme -S on the daemon's own socket still gets the path.
 * A RESOLVE by name (ib_acme -f n) always gets it: librdmacm never asks one. */
static bool path_left_to_rdma_cm(const struct request *req, const struct ibres_path_record *path)
{
	if (!req->by_addr || req->key.type == IBRES_KEY_NAME)
		return false;
	if (!path->slid && !path->dlid)
		return true;
	return req->acm_socket && !req->d->cfg.acm_af_ib;
}

/* The answer to a successful RESOLVE: the path first, then the source we
 * chose when the client named none (librdmacm fills ai_src_addr from it).
 * Without the path, the client's own source comes back when it named one,
 * so that the answer holds an entry: ib_acme reads the first entry of the
 * answer as its path and would read past an empty one. */
static size_t build_resolve_reply(const struct request *req, uint8_t *reply,
				  const struct ibres_path_record *path,
				  const struct ibres_ep_entry *src_entry,
				  const struct ibres_ep_entry *client_src)
{
	struct ibres_hdr h = *request_hdr(req);
	struct ibres_ep_entry *out = (void *)(reply + IBRES_HDR_LEN);
	size_t len = IBRES_HDR_LEN;

	memset(out, 0, 2 * IBRES_EP_LEN);
	if (!path_left_to_rdma_cm(req, path)) {
		out->flags = IBRES_PATH_FLAGS_ACM;
		out->type = IBRES_EP_TYPE_PATH;
		memcpy(&out->info.path, path, sizeof(*path));
		out++;
		len += IBRES_EP_LEN;
	} else if (!src_entry) {
		src_entry = client_src;
	}
	if (src_entry) {
		memcpy(out, src_entry, IBRES_EP_LEN);
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
			 enum lookup_result res, bool first, uint8_t *reply, size_t *len)
{
	switch (res) {
	case LOOKUP_WAIT:
		if (first)
			count(d, ep, IBRES_CNTR_ADDR_QUERY);
		req->stage = REQ_STAGE_LOOKUP;
		return REQ_WAIT;
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

/* The path from @ep to @h (and the chosen source, if any); with route
 * protocol sa, the first time waits for the SA's path. */
static int answer_path(struct ibresd *d, struct request *req, struct endpoint *ep, struct host *h,
		       uint8_t *reply, size_t *len)
{
	struct ibres_path_record path;
	enum lookup_result res;
	bool cached;
	int err;

	res = resolver_route_wait(&d->res, &req->waiter, ep, h, &err);
	if (res == LOOKUP_WAIT) {
		count(d, ep, IBRES_CNTR_ROUTE_QUERY);
		req->route_asked = true;
		req->stage = REQ_STAGE_ROUTE;
		return REQ_WAIT;
	}
	if (res != LOOKUP_FOUND) {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, ibres_errno_to_status(err));
	}
	resolver_route(&d->res, ep, h, &path, &cached);
	if (!req->route_asked)
		count(d, ep, cached ? IBRES_CNTR_ROUTE_CACHE : IBRES_CNTR_ROUTE_QUERY);
	*len = build_resolve_reply(req, reply, &path, req->has_src ? &req->src : NULL,
				   req->src_given ? &req->src : NULL);
	return 0;
}

/* Look the destination (req->key) up from endpoint req->ep and answer with
 * the path to it, or with why not. Both RESOLVE forms come here at their
 * start (@first) and again when a wait ended. */
static int answer_route(struct ibresd *d, struct request *req, bool first, uint8_t *reply,
			size_t *len)
{
	enum lookup_result res;
	struct endpoint *ep;
	struct host *h, *dst;

	if (req->ep >= d->eps.n) {
		/* a reload took the endpoint away while the request waited */
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
	}
	ep = &d->eps.ep[req->ep];
	req->finish_on_failure = false; /* the rail's ask below sets it, for its wait */
	if (first)
		ep->counters[IBRES_CNTR_RESOLVE]++;
	if (ep->down && !req->pick_rail) {
		/* the caller's own source is on a rail that is down */
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ENOTCONN);
	}
	res = resolver_lookup(&d->res, &req->waiter, &req->key, req->nodelay, &h);
	if (res != LOOKUP_FOUND)
		return answer_lookup(d, req, ep, res, first, reply, len);
	if (first)
		count(d, ep, IBRES_CNTR_ADDR_CACHE);
	/* the destination's endpoint on the source's fabric; with a source of
	 * our choosing, the first rail that reaches it */
	dst = resolver_on_rail(h, &req->key, ep);
	if (!dst && req->pick_rail) {
		struct endpoint *other =
			resolver_pick_rail(&d->res, h, &req->key, req->pick_pkey, &dst);

		if (other && (!req->has_src || source_entry(other, req->src.type, &req->src) == 0)) {
			ep = other;
			req->ep = ep->index;
		} else {
			dst = NULL;
		}
	}
	if (!dst && !req->pick_rail && !req->rail_asked && !ep->down && !req->nodelay) {
		/* known on other rails: its endpoint here may be one the
		 * directory lacks yet (a boot's lost announcements); asked
		 * here once, while it may */
		bool asked = false;

		res = resolver_lookup_on_rail(&d->res, &req->waiter, h, &req->key, ep, &asked);
		req->rail_asked = asked || res != LOOKUP_WAIT;
		if (res == LOOKUP_WAIT) {
			/* not heard there within the query's bound: EDESTADDR
			 * (counted as a cache hit already: not as a query) */
			req->finish_on_failure = true;
			req->stage = REQ_STAGE_LOOKUP;
			return REQ_WAIT;
		}
	}
	if (!dst) {
		/* no rail that is up reaches it; or it is on another fabric */
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len,
				    ep->down ? IBRES_STATUS_ENOTCONN : IBRES_STATUS_EDESTADDR);
	}
	return answer_path(d, req, ep, dst, reply, len);
}

static int resolve_addr(struct ibresd *d, struct request *req, const struct acm_resolve_req *r,
			uint8_t *reply, size_t *len)
{
	struct host_key dkey, skey;
	struct endpoint *ep;

	if (key_from_entry(r->dst, &dkey) < 0) {
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_EDESTADDR);
	}
	if (r->src) {
		if (key_from_entry(r->src, &skey) < 0 || !(ep = endpoint_by_key(&d->eps, &skey))) {
			count(d, NULL, IBRES_CNTR_ERROR);
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		}
		memcpy(&req->src, r->src, sizeof(req->src));
		req->src_given = true;
	} else {
		/* A local destination is reached through its own endpoint. */
		ep = endpoint_by_key(&d->eps, &dkey);
		if (!ep) /* where the kernel's route to it leaves from */
			ep = netlink_route_endpoint(d->netlink, &dkey);
		if (!ep)
			ep = endpoint_for_dest(&d->eps, &dkey);
		if (!ep || source_entry(ep, r->dst->type, &req->src) < 0) {
			count(d, NULL, IBRES_CNTR_ERROR);
			return reply_status(req, reply, len, IBRES_STATUS_ESRCADDR);
		}
		req->has_src = true;
		req->pick_rail = true;
	}
	req->key = dkey;
	req->by_addr = true;
	req->ep = ep->index;
	req->nodelay = r->dst_flags & IBRES_FLAG_NODELAY;
	return answer_route(d, req, true, reply, len);
}

/* QUERY_SA (ib_acme -v): the SA's record for the client's path, never the
 * store's. The request waits for the SA; resolve_finish answers. */
static int verify_path(struct ibresd *d, struct request *req, struct endpoint *ep,
		       const struct ibres_path_record *in, uint8_t *reply, size_t *len)
{
	int ret;

	ep->counters[IBRES_CNTR_RESOLVE]++;
	ret = sa_verify_path(d->sa, ep, in, &req->waiter, &req->sa_path);
	if (ret) {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, ibres_errno_to_status(ret));
	}
	count(d, ep, IBRES_CNTR_ROUTE_QUERY);
	req->stage = REQ_STAGE_VERIFY;
	return REQ_WAIT;
}

static bool gid_is_zero(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	return !memcmp(gid, zero, 16);
}

/* Is @gid one of @id's GIDs? */
static bool has_gid(const struct ibres_hostrec *id, const uint8_t gid[16])
{
	for (unsigned i = 0; i < id->n_gids; i++)
		if (!memcmp(id->gids[i], gid, 16))
			return true;
	return false;
}

/* The source endpoint a PathRecord names: the port of its SGID (any of an
 * endpoint's GIDs), else of its SLID (a LID two of our ports have names
 * none: planes each number theirs from 1), and of that port's endpoints (its partitions) the one of
 * the record's P_Key, the same one first (0: the default partition's, else the port's first). NULL:
 * none. */
static struct endpoint *path_source(struct endpoints *eps, const struct ibres_path_record *in)
{
	uint16_t want = be16toh(in->pkey), slid = be16toh(in->slid);
	struct endpoint *port = NULL, *best = NULL;
	bool by_gid = !gid_is_zero(in->sgid);

	for (unsigned i = 0; i < eps->n; i++) {
		struct endpoint *e = &eps->ep[i];
		uint16_t pk = e->cfg.id.pkey;

		if (by_gid ? !has_gid(&e->cfg.id, in->sgid) : e->cfg.id.lid != slid)
			continue;
		if (port && memcmp(port->cfg.id.gids[0], e->cfg.id.gids[0], 16))
			return NULL; /* the SLID of two ports */
		if (!port)
			port = e;
		if (want) {
			if (hostrec_same_partition(pk, want) &&
			    (!best || (pk == want && best->cfg.id.pkey != want)))
				best = e;
		} else if (!best || (hostrec_same_partition(pk, 0x7fff) &&
				     !hostrec_same_partition(best->cfg.id.pkey, 0x7fff))) {
			best = e;
		}
	}
	return best;
}

static int resolve_path(struct ibresd *d, struct request *req, const struct acm_resolve_req *r,
			uint8_t *reply, size_t *len)
{
	const struct ibres_path_record *in = &r->path->info.path;
	struct endpoint *ep = NULL;
	struct host_key dkey, skey;

	if (r->query_sa && !d->sa) {
		/* Verification needs a Subnet Administrator; none is configured. */
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_ENOTCONN);
	}
	if (!gid_is_zero(in->sgid) || in->slid) {
		ep = path_source(&d->eps, in);
	} else if (r->src) {
		/* the path's source as an address (librdmacm's IP SOURCE):
		 * that endpoint, its rail and partition, and no other */
		if (key_from_entry(r->src, &skey) == 0)
			ep = endpoint_by_key(&d->eps, &skey);
	} else {
		/* no source: the first rail of the record's partition (P_Key
		 * 0: any) that reaches the destination; by LID, whose fabric
		 * has it */
		req->pick_rail = true;
		req->pick_pkey = be16toh(in->pkey);
		for (unsigned i = 0; i < d->eps.n && !ep; i++)
			if (!req->pick_pkey ||
			    hostrec_same_partition(d->eps.ep[i].cfg.id.pkey, req->pick_pkey))
				ep = &d->eps.ep[i];
		if (ep && gid_is_zero(in->dgid) && in->dlid) {
			struct endpoint *at =
				resolver_lid_rail(&d->res, be16toh(in->dlid), req->pick_pkey);

			if (at)
				ep = at;
		}
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
		host_key_lid(&dkey, be16toh(in->dlid), (uint8_t)ep->index);
	} else if (r->dst && key_from_entry(r->dst, &dkey) == 0) {
		/* a path from a GID to an address or name (libibres) */
	} else {
		count(d, ep, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, IBRES_STATUS_EDESTADDR);
	}
	req->key = dkey;
	req->ep = ep->index;
	req->nodelay = r->path->flags & IBRES_FLAG_NODELAY;
	return answer_route(d, req, true, reply, len);
}

int resolve_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct acm_resolve_req r;
	int status = acm_parse_resolve(req->msg, req->len, &r);

	d->counters[IBRES_CNTR_RESOLVE]++;
	if (status) {
		count(d, NULL, IBRES_CNTR_ERROR);
		return reply_status(req, reply, len, (uint8_t)status);
	}
	return r.is_path ? resolve_path(d, req, &r, reply, len)
			 : resolve_addr(d, req, &r, reply, len);
}

int resolve_finish(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	if (req->stage == REQ_STAGE_VERIFY) {
		*len = build_resolve_reply(req, reply, &req->sa_path, NULL, NULL);
		return 0;
	}
	/* the host (or its SA path) is in the store now: answer from there */
	return answer_route(d, req, false, reply, len);
}

int perf_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
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

int ep_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
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
