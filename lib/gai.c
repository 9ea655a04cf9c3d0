// SPDX-License-Identifier: MIT
/*
 * ibres_getaddrinfo(): rdma_getaddrinfo() answered by ibresd. The list it
 * returns is shaped like librdmacm's: an AF_IB entry (struct sockaddr_ib,
 * path records in ai_route, the IP addresses for the CM header in
 * ai_connect) before the IP entry. Every pointer in every entry is its own
 * malloc() so that rdma_freeaddrinfo() can free the list.
 */
#include "ibres.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "hostrec.h"

/* librdmacm's struct ib_connect_hdr: the IP addresses the RDMA CM puts in
 * front of the private data so that an IP listener accepts an AF_IB
 * connection. */
struct gai_connect_hdr {
	uint8_t cma_version;
	uint8_t ip_version; /* bits 7:4 */
	uint16_t port;
	uint32_t src_addr[4]; /* IPv4 in [3] */
	uint32_t dst_addr[4];
};

static void *dup_mem(const void *p, size_t len)
{
	void *q = malloc(len);

	if (q)
		memcpy(q, p, len);
	return q;
}

static void set_sid(struct sockaddr_ib *sib, int ps, uint16_t port)
{
	sib->sib_sid = htobe64(((uint64_t)(uint16_t)ps << 16) + port);
	sib->sib_sid_mask = 0;
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
}

static struct sockaddr_ib *new_sib(const uint8_t *gid, uint16_t pkey, uint32_t flowinfo, int ps,
				   uint16_t port)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));

	if (!sib)
		return NULL;
	sib->sib_family = AF_IB;
	sib->sib_pkey = pkey;
	sib->sib_flowinfo = flowinfo;
	if (gid)
		memcpy(&sib->sib_addr, gid, 16);
	set_sid(sib, ps, port);
	return sib;
}

static void ip_addr_words(const struct sockaddr_storage *ss, uint32_t w[4])
{
	if (ss->ss_family == AF_INET)
		memcpy(&w[3], &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(w, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

static struct rdma_addrinfo *new_entry(const struct ibc_gai *g, int family)
{
	struct rdma_addrinfo *ai = calloc(1, sizeof(*ai));

	if (!ai)
		return NULL;
	ai->ai_flags = g->flags;
	ai->ai_family = family;
	ai->ai_qp_type = g->qp_type;
	ai->ai_port_space = g->port_space;
	if (g->canon) {
		char **slot = g->passive ? &ai->ai_src_canonname : &ai->ai_dst_canonname;

		*slot = strdup(g->canon);
		if (!*slot)
			goto fail;
	}
	if (g->n_paths) {
		ai->ai_route_len = g->n_paths * sizeof(*g->paths);
		ai->ai_route = dup_mem(g->paths, ai->ai_route_len);
		if (!ai->ai_route)
			goto fail;
	}
	return ai;

fail:
	ibres_freeaddrinfo(ai);
	return NULL;
}

static struct rdma_addrinfo *ib_entry(const struct ibc_gai *g)
{
	const struct ibv_path_record *path = g->n_paths ? &g->paths[0].path : NULL;
	struct rdma_addrinfo *ai = new_entry(g, AF_IB);
	struct sockaddr_ib *sib;
	struct gai_connect_hdr *ch;
	uint32_t flow = 0;
	uint16_t pkey = g->have_gid ? g->pkey : htobe16(0xffff);

	if (!ai)
		return NULL;
	if (path) {
		pkey = path->pkey;
		flow = htobe32(be32toh(path->flowlabel_hoplimit) >> 8);
	}
	if (g->passive) {
		sib = new_sib(g->have_gid ? g->gid : NULL, pkey, 0, g->port_space, g->port);
		if (!sib)
			goto fail;
		ai->ai_src_addr = (struct sockaddr *)sib;
		ai->ai_src_len = sizeof(*sib);
		return ai;
	}

	sib = new_sib(path ? path->dgid.raw : g->gid, pkey, flow, g->port_space, g->port);
	if (!sib)
		goto fail;
	ai->ai_dst_addr = (struct sockaddr *)sib;
	ai->ai_dst_len = sizeof(*sib);
	if (path) {
		sib = new_sib(path->sgid.raw, pkey, flow, g->port_space, 0);
		if (!sib)
			goto fail;
		ai->ai_src_addr = (struct sockaddr *)sib;
		ai->ai_src_len = sizeof(*sib);
	}
	if (g->ip_len) {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			goto fail;
		ch->ip_version = (g->ip.ss_family == AF_INET ? 4 : 6) << 4;
		if (g->ip_src_len)
			ip_addr_words(&g->ip_src, ch->src_addr);
		ip_addr_words(&g->ip, ch->dst_addr);
		ai->ai_connect = ch;
		ai->ai_connect_len = sizeof(*ch);
	}
	return ai;

fail:
	ibres_freeaddrinfo(ai);
	return NULL;
}

static struct rdma_addrinfo *ip_entry(const struct ibc_gai *g)
{
	struct rdma_addrinfo *ai = new_entry(g, g->ip.ss_family);
	struct sockaddr **addr;
	socklen_t *len;

	if (!ai)
		return NULL;
	addr = g->passive ? &ai->ai_src_addr : &ai->ai_dst_addr;
	len = g->passive ? &ai->ai_src_len : &ai->ai_dst_len;
	*addr = dup_mem(&g->ip, g->ip_len);
	if (!*addr)
		goto fail;
	*len = g->ip_len;
	if (!g->passive && g->ip_src_len) {
		ai->ai_src_addr = dup_mem(&g->ip_src, g->ip_src_len);
		if (!ai->ai_src_addr)
			goto fail;
		ai->ai_src_len = g->ip_src_len;
	}
	return ai;

fail:
	ibres_freeaddrinfo(ai);
	return NULL;
}

int ibc_gai_build(const struct ibc_gai *g, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *head = NULL, **tail = &head;
	int ib = g->want_ib && (g->have_gid || g->n_paths || g->passive);
	int ip = g->want_ip && g->ip_len;

	if (!ib && !ip)
		return -ENODATA;
	if (ib) {
		*tail = ib_entry(g);
		if (!*tail)
			goto nomem;
		tail = &(*tail)->ai_next;
	}
	if (ip) {
		*tail = ip_entry(g);
		if (!*tail)
			goto nomem;
	}
	*res = head;
	return 0;

nomem:
	ibres_freeaddrinfo(head);
	return -ENOMEM;
}

IBRES_EXPORT void ibres_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
	}
}

static int parse_service(const char *service, int ps, uint16_t *port)
{
	struct servent se, *sp = NULL;
	char buf[1024], *end;
	unsigned long v;

	*port = 0;
	if (!service || !*service)
		return 0;
	v = strtoul(service, &end, 10);
	if (!*end && service[0] >= '0' && service[0] <= '9') {
		if (v > 65535)
			return -EINVAL;
		*port = (uint16_t)v;
		return 0;
	}
	if (getservbyname_r(service, ps == RDMA_PS_UDP ? "udp" : "tcp", &se, buf, sizeof(buf),
			    &sp) ||
	    !sp)
		return -EINVAL;
	*port = ntohs((uint16_t)sp->s_port);
	return 0;
}

/* Set the IP form from an address of family @af with the service port. */
static void set_ip(struct sockaddr_storage *ss, socklen_t *len, int af, const void *addr,
		   uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (af == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		*len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
		*len = sizeof(*sin6);
	}
}

/* The IP form and GID of a host record, by the requested family. */
static int from_record(struct ibc_gai *g, const struct ibres_hostrec *rec, int family)
{
	if (hostrec_check(rec))
		return -EBADMSG;
	if (rec->n_v4 && (family == AF_UNSPEC || family == AF_INET || family == AF_IB))
		set_ip(&g->ip, &g->ip_len, AF_INET, &rec->v4[0], g->port);
	else if (rec->n_v6 && (family == AF_UNSPEC || family == AF_INET6 || family == AF_IB))
		set_ip(&g->ip, &g->ip_len, AF_INET6, &rec->v6[0], g->port);
	if (rec->n_gids) {
		memcpy(g->gid, rec->gids[0], 16);
		g->pkey = htobe16(rec->pkey ? rec->pkey : 0xffff);
		g->have_gid = 1;
	}
	if (family == AF_IB)
		return g->have_gid ? 0 : -ENODATA;
	return g->ip_len ? 0 : -ENODATA;
}

/* Do the hints name a source? */
static bool has_source(const struct rdma_addrinfo *hints)
{
	return hints && hints->ai_src_addr && hints->ai_src_len;
}

/* Ask for paths to the destination; failures just mean no AF_IB route.
 * *@said (when not NULL): the daemon's answer status (IBRES_STATUS_*), or
 * -1 when there was none. */
static int add_route(struct ibc_gai *g, const struct rdma_addrinfo *hints, struct ibc_route *rt,
		     int *said)
{
	struct ibres_ep_entry ents[3];
	struct sockaddr_ib dib = {.sib_family = AF_IB};
	const struct sockaddr *dst = (const struct sockaddr *)&g->ip;
	const struct sockaddr *src = NULL;
	int n, ret;

	if (has_source(hints))
		src = hints->ai_src_addr;
	if (!g->ip_len) {
		if (!g->have_gid)
			return 0;
		memcpy(&dib.sib_addr, g->gid, 16);
		dst = (const struct sockaddr *)&dib;
	}
	n = ibc_path_entries(src, dst, g->flags & RAI_NUMERICHOST ? IBRES_FLAG_NODELAY : 0, ents);
	if (n < 0)
		return 0;
	ret = ibc_resolve(&ibc_default, ents, (size_t)n, rt, said);
	if (ret)
		return ret == -ENOMEM ? ret : 0;
	g->paths = rt->paths;
	g->n_paths = rt->n_paths;
	if (!g->ip_src_len && rt->has_source && g->ip_len) {
		if (rt->source.type == IBRES_EP_TYPE_IP && g->ip.ss_family == AF_INET)
			set_ip(&g->ip_src, &g->ip_src_len, AF_INET, rt->source.info.addr, 0);
		else if (rt->source.type == IBRES_EP_TYPE_IP6 && g->ip.ss_family == AF_INET6)
			set_ip(&g->ip_src, &g->ip_src_len, AF_INET6, rt->source.info.addr, 0);
	}
	return 0;
}

/* The source hint as the IP source of @g's entries, when it fits. */
static void hint_source(struct ibc_gai *g, const struct rdma_addrinfo *hints)
{
	if (!g->passive && hints && hints->ai_src_addr && !g->ip_src_len && g->ip_len &&
	    hints->ai_src_addr->sa_family == g->ip.ss_family &&
	    hints->ai_src_len <= sizeof(g->ip_src)) {
		memcpy(&g->ip_src, hints->ai_src_addr, hints->ai_src_len);
		g->ip_src_len = hints->ai_src_len;
	}
}

/* Append @g's entries to the list at *@tail; *@tail moves to its end. */
static int append(const struct ibc_gai *g, struct rdma_addrinfo ***tail)
{
	int ret = ibc_gai_build(g, *tail);

	if (ret)
		return ret;
	while (**tail)
		*tail = &(**tail)->ai_next;
	return 0;
}

/* Destination addresses tried for one host name: every one a record holds
 * (8 rails of 4 partitions) */
#define GAI_RAILS_MAX IBRES_HOST_ADDRS_MAX

/* A host name: one result per address of the wanted family that a path
 * reaches (every rail of a multi-rail host, the preferred first, each with
 * its own source and path, as getaddrinfo(3) gives every address of a
 * multi-homed host); none reached, the first address alone, as before,
 * unless the hints' source is one the daemon says reaches none (the
 * destination has no endpoint on its fabric, -EADDRNOTAVAIL, or its rail is
 * down, -ENOTCONN): no pair across fabrics. */
static int by_name(struct ibc_gai *g, const struct ibres_hostrec *rec, int family,
		   const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct ibc_route *rt = NULL;
	struct ibc_gai *gs = NULL;
	struct rdma_addrinfo *head = NULL, **tail = &head;
	bool v4 = rec->n_v4 && family != AF_INET6;
	unsigned n = v4 ? rec->n_v4 : family == AF_INET ? 0 : rec->n_v6, routed = 0;
	int ret = from_record(g, rec, family), said = 0, refused = 0, pick = -1;

	if (ret)
		return ret;
	g->canon = rec->names[0];
	if (n > GAI_RAILS_MAX)
		n = GAI_RAILS_MAX;
	if (!n || g->passive || (g->flags & RAI_NOROUTE))
		n = 0;
	if (n) {
		rt = calloc(n, sizeof(*rt));
		gs = calloc(n, sizeof(*gs));
		if (!rt || !gs) {
			ret = -ENOMEM;
			n = 0;
			goto out;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		gs[i] = *g;
		gs[i].ip_src_len = 0;
		if (v4)
			set_ip(&gs[i].ip, &gs[i].ip_len, AF_INET, &rec->v4[i], g->port);
		else
			set_ip(&gs[i].ip, &gs[i].ip_len, AF_INET6, &rec->v6[i], g->port);
		said = -1;
		ret = add_route(&gs[i], hints, &rt[i], &said);
		if (ret)
			goto out;
		routed += gs[i].n_paths > 0;
		/* refused: not on the source's fabric, or its rail down (a
		 * source that is no endpoint of ours, ESRCADDR, is no refusal:
		 * the first address, as before); else the first not refused */
		if (said == IBRES_STATUS_EDESTADDR || said == IBRES_STATUS_ENOTCONN)
			refused = !refused || refused == said ? said : IBRES_STATUS_EDESTADDR;
		else if (pick < 0)
			pick = (int)i;
	}
	if (!routed && n && refused && has_source(hints)) {
		/* with a source, never an address the daemon refused: it is on
		 * another fabric than the source, or its rail is down */
		if (pick < 0) {
			ret = refused == IBRES_STATUS_ENOTCONN ? -ENOTCONN : -EADDRNOTAVAIL;
			goto out;
		}
	} else {
		pick = 0;
	}
	if (!routed) {
		/* no path anywhere (or none asked for): that address, as before */
		if (n) {
			gs[pick].paths = NULL;
			gs[pick].n_paths = 0;
		}
		hint_source(n ? &gs[pick] : g, hints);
		ret = append(n ? &gs[pick] : g, &tail);
		goto out;
	}
	for (unsigned i = 0; i < n && !ret; i++) {
		if (!gs[i].n_paths)
			continue;
		hint_source(&gs[i], hints);
		ret = append(&gs[i], &tail);
	}
out:
	for (unsigned i = 0; i < n; i++)
		free(rt[i].paths);
	free(rt);
	free(gs);
	if (ret) {
		ibres_freeaddrinfo(head);
		return ret;
	}
	*res = head;
	return 0;
}

IBRES_EXPORT int ibres_getaddrinfo(const char *node, const char *service,
				   const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct ibc_route rt = {0};
	struct ibres_hostrec *rec = NULL;
	struct ibc_gai g;
	uint8_t addr[16];
	int family = hints ? hints->ai_family : AF_UNSPEC;
	int ret;

	if (!res || (!node && !service))
		return -EINVAL;
	if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6 && family != AF_IB)
		return -EAFNOSUPPORT;
	memset(&g, 0, sizeof(g));
	g.flags = hints ? hints->ai_flags : 0;
	g.passive = !!(g.flags & RAI_PASSIVE);
	g.want_ib = family == AF_UNSPEC || family == AF_IB || !g.passive;
	g.want_ip = family != AF_IB;
	g.qp_type = hints ? hints->ai_qp_type : 0;
	g.port_space = hints ? hints->ai_port_space : 0;
	if (!g.port_space)
		g.port_space = g.qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (!g.qp_type)
		g.qp_type = g.port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	ret = parse_service(service, g.port_space, &g.port);
	if (ret)
		return ret;

	if (!node) {
		if (!g.passive)
			return -EINVAL;
		memset(addr, 0, sizeof(addr));
		set_ip(&g.ip, &g.ip_len, family == AF_INET6 ? AF_INET6 : AF_INET, addr, g.port);
	} else if (family == AF_IB && (g.flags & RAI_FAMILY) && (g.flags & RAI_NUMERICHOST)) {
		if (inet_pton(AF_INET6, node, g.gid) != 1)
			return -ENODATA;
		g.have_gid = 1;
		g.pkey = htobe16(0xffff);
	} else if (family != AF_INET6 && inet_pton(AF_INET, node, addr) == 1) {
		set_ip(&g.ip, &g.ip_len, AF_INET, addr, g.port);
	} else if (family != AF_INET && inet_pton(AF_INET6, node, addr) == 1) {
		set_ip(&g.ip, &g.ip_len, AF_INET6, addr, g.port);
	} else if (g.flags & RAI_NUMERICHOST) {
		return -ENODATA;
	} else {
		rec = malloc(sizeof(*rec));
		if (!rec)
			return -ENOMEM;
		ret = -EINVAL;
		if (*node && strlen(node) <= IBRES_NAME_MAX)
			ret = ibc_host_query(&ibc_default, IBRES_T_NAME, node, strlen(node), 0, rec,
					     NULL);
		if (!ret)
			ret = by_name(&g, rec, family, hints, res);
		goto out;
	}

	if (!g.passive && !(g.flags & RAI_NOROUTE)) {
		int said = -1;

		ret = add_route(&g, hints, &rt, &said);
		if (ret)
			goto out;
		/* with a source, an address on another fabric (or a rail
		 * down) is an error, as it is for a name's addresses */
		if (!g.n_paths && has_source(hints) &&
		    (said == IBRES_STATUS_EDESTADDR || said == IBRES_STATUS_ENOTCONN)) {
			ret = said == IBRES_STATUS_ENOTCONN ? -ENOTCONN : -EADDRNOTAVAIL;
			goto out;
		}
	}
	hint_source(&g, hints);
	ret = ibc_gai_build(&g, res);
out:
	free(rt.paths);
	free(rec);
	return ret;
}
