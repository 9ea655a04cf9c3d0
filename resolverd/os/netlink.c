// SPDX-License-Identifier: MIT
/*
 * Local addresses and routes from the kernel: rtnetlink through libnl-3.
 *
 * Two sockets. The event socket joins the link and address groups, is
 * non-blocking and sits in the event loop; it keeps a table of the
 * interfaces that may carry an endpoint's addresses (IPoIB ones, and those
 * the config names) and of their usable addresses (netlink_tables.c). The request socket
 * carries dumps and route lookups; the kernel answers those synchronously,
 * and a receive timeout bounds the wait should it ever not.
 *
 * Start-up subscribes first and dumps second, so nothing falls between the
 * two: a notification older than the dump that is applied after it is put
 * right by the newer one that follows it. A lost notification (ENOBUFS:
 * the socket overran) makes the daemon dump everything again.
 */
#include "os/netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "core/config.h"
#include "core/endpoints.h"
#include "core/list.h"
#include "core/loop.h"
#include "core/log.h"
#include "os/netlink_tables.h"

#define NL_BUF_LEN	    32768 /* one netlink datagram (dump parts are a page or two) */
#define NL_EVENT_RCVBUF	    (1 << 20)
#define NL_EVENT_BATCH	    64	 /* datagrams read per wake-up; epoll calls again */
#define NL_RECV_TIMEOUT_MS  1000 /* one receive on the request socket */
#define NL_REQUEST_BOUND_MS 5000 /* a whole request, dumps included */
#define NL_DUMP_TRIES	    3	 /* a dump interrupted by changes is redone */
#define NL_RESYNC_DELAY_MS  50	 /* resyncs asked for by a burst of changes coalesce */
#define NL_RESYNC_RETRY_MS  1000

struct netlink {
	const struct ibres_config *cfg; /* the running one (a reload replaces its content) */
	struct loop *loop;
	struct endpoints *eps;
	struct nl_sock *ev, *rq;
	struct loop_fd lf;
	bool lost; /* notifications were dropped: resync once drained */
	struct loop_timer resync_timer;
	struct nl_tables *t;
	struct ibres_hostrec after; /* an endpoint's identity with the kernel's addresses */ /* scratch for netlink_refresh */
	union {
		struct nlmsghdr h; /* alignment */
		uint8_t b[NL_BUF_LEN];
	} evbuf, rqbuf;
};
/* --- requests ---------------------------------------------------------------- */

typedef int (*answer_cb)(struct netlink *nl, struct nlmsghdr *h, void *arg);

/* Send @msg on the request socket and hand each answer to @cb: every part
 * of a dump up to NLMSG_DONE, or the single answer of a plain request. 0,
 * the kernel's negative errno, -EAGAIN when a dump was interrupted by
 * changes (do it again), -ETIMEDOUT past the bound. */
static int request(struct netlink *nl, struct nl_msg *msg, bool dump, answer_cb cb, void *arg)
{
	int fd = nl_socket_get_fd(nl->rq);
	uint64_t deadline = now_ms() + NL_REQUEST_BOUND_MS;
	bool interrupted = false;
	uint32_t seq;
	int ret;

	ret = nl_send_auto(nl->rq, msg);
	if (ret < 0)
		return -EIO;
	seq = nlmsg_hdr(msg)->nlmsg_seq;
	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		struct nlmsghdr *h;
		ssize_t n;
		int rem;

		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		n = recvfrom(fd, nl->rqbuf.b, sizeof(nl->rqbuf.b), MSG_TRUNC,
			     (struct sockaddr *)&from, &flen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		if ((size_t)n > sizeof(nl->rqbuf.b))
			return -EMSGSIZE;
		if (from.nl_pid != 0)
			continue; /* only the kernel answers */
		rem = (int)n;
		for (h = &nl->rqbuf.h; nlmsg_ok(h, rem); h = nlmsg_next(h, &rem)) {
			/* an answer to an earlier request that timed out */
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_flags & NLM_F_DUMP_INTR)
				interrupted = true;
			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) {
				int err = 0;

				if (nlmsg_datalen(h) >= (int)sizeof(int))
					memcpy(&err, nlmsg_data(h), sizeof(err));
				if (err > 0)
					err = -err;
				return err ? err : interrupted ? -EAGAIN : 0;
			}
			ret = cb(nl, h, arg);
			if (!dump)
				return ret;
		}
	}
}

static int dump_cb(struct netlink *nl, struct nlmsghdr *h, void *arg)
{
	(void)nl;
	nl_tables_apply(arg, h);
	return 0;
}

static int dump(struct netlink *nl, int type, struct nl_tables *t)
{
	/* ifinfomsg and ifaddrmsg both start with the family: AF_UNSPEC, all */
	struct ifinfomsg hdr = { .ifi_family = AF_UNSPEC };
	struct nl_msg *msg = nlmsg_alloc_simple(type, NLM_F_DUMP);
	size_t len = type == RTM_GETLINK ? sizeof(struct ifinfomsg) : sizeof(struct ifaddrmsg);
	int ret;

	if (!msg)
		return -ENOMEM;
	ret = nlmsg_append(msg, &hdr, len, NLMSG_ALIGNTO) < 0 ? -ENOMEM : 0;
	if (!ret)
		ret = request(nl, msg, true, dump_cb, t);
	nlmsg_free(msg);
	return ret;
}

/* Read every link and address into fresh tables; the old ones stay if
 * this fails. */
static int resync(struct netlink *nl)
{
	struct nl_tables *t = calloc(1, sizeof(*t));
	int ret = -EAGAIN;

	if (!t)
		return -ENOMEM;
	nl_config_ifnames(nl->cfg, t->ifnames);
	for (unsigned i = 0; i < NL_DUMP_TRIES && ret == -EAGAIN; i++) {
		t->n_links = t->n_addrs = 0;
		ret = dump(nl, RTM_GETLINK, t);
		if (!ret)
			ret = dump(nl, RTM_GETADDR, t);
	}
	if (ret) {
		free(t);
		return ret;
	}
	free(nl->t);
	nl->t = t;
	return 0;
}

static void resync_later(struct netlink *nl, uint64_t delay_ms)
{
	if (!loop_timer_armed(&nl->resync_timer))
		loop_timer_arm(nl->loop, &nl->resync_timer, now_ms() + delay_ms);
}

/* Resync now; on failure (logged) keep the tables and try again later. */
static void resync_now(struct netlink *nl)
{
	int ret;

	loop_timer_cancel(nl->loop, &nl->resync_timer);
	ret = resync(nl);
	if (ret) {
		log_warn("netlink: cannot read the addresses: %s; retrying", strerror(-ret));
		resync_later(nl, NL_RESYNC_RETRY_MS);
	}
}

/* --- endpoints ----------------------------------------------------------------- */

/* Does @l carry @ep's addresses? */
static bool link_serves(const struct nl_link *l, const struct endpoint *ep,
			const struct ibres_hostrec *id)
{
	/* 127.0.0.1 is no cluster address (and the shared-namespace test
	 * fabric puts every node's address on lo) */
	if (l->flags & IFF_LOOPBACK)
		return false;
	if (ep->cfg.interface[0])
		return !strcmp(l->name, ep->cfg.interface);
	/* no interface named: the IPoIB interfaces of the endpoint's port and
	 * partition (the membership bit aside) */
	return l->ipoib && id->n_gids && !memcmp(l->gid, id->gids[0], 16) &&
	       (!l->pkey || !id->pkey || (l->pkey | 0x8000) == (id->pkey | 0x8000));
}

/* Does @id list address @a of @family (the one rule, lib/hostrec.h)? */
static bool id_has_addr(const struct ibres_hostrec *id, int family, const uint8_t *a)
{
	return family == AF_INET ? hostrec_has_key(id, IBRES_KEY_IPV4, a, 4)
				 : hostrec_has_key(id, IBRES_KEY_IPV6, a, 16);
}

/* Is @a someone else's: listed in another endpoint's config, or taken from
 * the kernel by an earlier endpoint? */
static bool addr_claimed(struct netlink *nl, const struct endpoint *ep, const struct nl_addr *a)
{
	for (unsigned j = 0; j < nl->cfg->n_eps; j++)
		if (j != ep->index && id_has_addr(&nl->cfg->eps[j].id, a->family, a->addr))
			return true;
	for (unsigned j = 0; j < ep->index && j < nl->eps->n; j++)
		if (id_has_addr(&nl->eps->ep[j].cfg.id, a->family, a->addr))
			return true;
	return false;
}

unsigned netlink_merge(struct netlink *nl, const struct endpoint *ep, struct ibres_hostrec *id)
{
	const struct ibres_hostrec *conf;
	unsigned dropped = 0;
	char ifnames[CFG_MAX_ENDPOINTS][IFNAMSIZ];

	if (!nl || ep->index >= nl->cfg->n_eps)
		return 0;
	/* a reload named other interfaces: their addresses are not tracked */
	nl_config_ifnames(nl->cfg, ifnames);
	if (memcmp(ifnames, nl->t->ifnames, sizeof(ifnames)))
		resync_now(nl);
	/* The config's addresses come first and stay even when no interface
	 * has them: the ip transport is bound to the first, and an address
	 * may be served by another interface or a proxy. */
	conf = &nl->cfg->eps[ep->index].id;
	memcpy(id->v4, conf->v4, sizeof(id->v4));
	id->n_v4 = conf->n_v4;
	memcpy(id->v6, conf->v6, sizeof(id->v6));
	id->n_v6 = conf->n_v6;
	for (unsigned i = 0; i < nl->t->n_addrs; i++) {
		const struct nl_addr *a = &nl->t->addrs[i];
		const struct nl_link *l = nl_link_find(nl->t, a->ifindex);

		if (!l || !link_serves(l, ep, id) || id_has_addr(id, a->family, a->addr) ||
		    addr_claimed(nl, ep, a))
			continue;
		if (a->family == AF_INET && id->n_v4 < IBRES_EP_ADDRS_MAX)
			memcpy(&id->v4[id->n_v4++], a->addr, 4);
		else if (a->family == AF_INET6 && id->n_v6 < IBRES_EP_ADDRS_MAX)
			memcpy(&id->v6[id->n_v6++], a->addr, 16);
		else
			dropped++;
	}
	return dropped;
}

/* Log the addresses in @a that @b lacks, as @what. */
static void log_diff(const struct endpoint *ep, const struct ibres_hostrec *a,
		     const struct ibres_hostrec *b, const char *what)
{
	char s[INET6_ADDRSTRLEN];

	for (unsigned i = 0; i < a->n_v4; i++)
		if (!id_has_addr(b, AF_INET, (const uint8_t *)&a->v4[i]))
			log_info("endpoint %s: address %s %s", ep->cfg.label,
				 inet_ntop(AF_INET, &a->v4[i], s, sizeof(s)), what);
	for (unsigned i = 0; i < a->n_v6; i++)
		if (!id_has_addr(b, AF_INET6, (const uint8_t *)&a->v6[i]))
			log_info("endpoint %s: address %s %s", ep->cfg.label,
				 inet_ntop(AF_INET6, &a->v6[i], s, sizeof(s)), what);
}

/* An ip transport endpoint without a device is a rail only while its
 * interface is up with a carrier (one with a device has its port's state,
 * ib/port.c). */
static void link_state(struct netlink *nl, struct endpoint *ep)
{
	if (ep->cfg.transport != TRANSPORT_IP || !ep->cfg.interface[0] || ep->cfg.device[0])
		return; /* an endpoint with a device has its port's state */
	for (unsigned i = 0; i < nl->t->n_links; i++) {
		const struct nl_link *l = &nl->t->links[i];

		if (strcmp(l->name, ep->cfg.interface) || (l->flags & IFF_LOOPBACK))
			continue;
		if (ep->down != !((l->flags & IFF_UP) && (l->flags & IFF_RUNNING)))
			log_info("endpoint %s: interface %s is %s", ep->cfg.label, l->name,
				 ep->down ? "up again" : "down (no carrier)");
		endpoint_set_down(nl->eps, ep, !((l->flags & IFF_UP) && (l->flags & IFF_RUNNING)));
		return;
	}
}

void netlink_refresh(struct netlink *nl)
{
	if (!nl)
		return;
	for (unsigned i = 0; i < nl->eps->n; i++) {
		struct endpoint *ep = &nl->eps->ep[i];
		unsigned dropped;
		int ret;

		link_state(nl, ep);
		nl->after = ep->cfg.id;
		dropped = netlink_merge(nl, ep, &nl->after);
		if (hostrec_same_addrs(&nl->after, &ep->cfg.id))
			continue;
		log_diff(ep, &nl->after, &ep->cfg.id, "added");
		log_diff(ep, &ep->cfg.id, &nl->after, "removed");
		if (dropped)
			log_warn("endpoint %s: %u addresses left out (at most %u per family)",
				 ep->cfg.label, dropped, IBRES_EP_ADDRS_MAX);
		/* the owner of the identity updates the store and tells the
		 * fabric, which announces the change */
		ret = endpoint_update(nl->eps, ep, &nl->after);
		if (ret < 0)
			log_err("endpoint %s: cannot cache its new addresses: %s", ep->cfg.label,
				strerror(-ret));
	}
}

void netlink_resync(struct netlink *nl)
{
	if (!nl)
		return;
	resync_now(nl);
	netlink_refresh(nl);
}

static void on_resync_timer(struct loop_timer *t)
{
	netlink_resync(container_of(t, struct netlink, resync_timer));
}

/* One datagram of notifications from the kernel: what it did (NL_*). */
static int apply(struct netlink *nl, int len)
{
	struct nlmsghdr *h;
	int what = 0;

	for (h = &nl->evbuf.h; nlmsg_ok(h, len); h = nlmsg_next(h, &len))
		what |= nl_tables_apply(nl->t, h);
	return what;
}

void netlink_feed(struct netlink *nl, const void *buf, size_t len)
{
	int what;

	if (!nl || len > sizeof(nl->evbuf.b))
		return;
	memcpy(nl->evbuf.b, buf, len);
	what = apply(nl, (int)len);
	if (what & NL_RESYNC)
		resync_later(nl, NL_RESYNC_DELAY_MS);
	if (what & NL_CHANGED)
		netlink_refresh(nl);
}

static void on_event(struct loop_fd *lf, uint32_t events)
{
	struct netlink *nl = container_of(lf, struct netlink, lf);
	bool drained = false;
	int what = 0;

	(void)events;
	for (unsigned i = 0; i < NL_EVENT_BATCH; i++) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t n;

		n = recvfrom(lf->fd, nl->evbuf.b, sizeof(nl->evbuf.b), MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &flen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS || errno == ENOMEM) {
				/* the socket overran: notifications were dropped */
				if (!nl->lost)
					log_info("netlink: address notifications were lost; "
						 "reading every address again");
				nl->lost = true;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				drained = true;
			else
				log_warn("netlink: receive: %s", strerror(errno));
			break;
		}
		if ((size_t)n > sizeof(nl->evbuf.b)) {
			nl->lost = true; /* cut: its messages are lost */
			continue;
		}
		if (from.nl_pid != 0)
			continue;
		what |= apply(nl, (int)n);
	}
	/* After an overrun the kernel reports no further drop until the queue
	 * was empty once: the dump is taken then, so it covers every drop
	 * that went unreported. */
	if (drained && nl->lost) {
		nl->lost = false;
		resync_now(nl);
		what |= NL_CHANGED;
	} else if (what & NL_RESYNC) {
		resync_later(nl, NL_RESYNC_DELAY_MS);
	}
	if (what & NL_CHANGED)
		netlink_refresh(nl);
}

/* --- route lookup ---------------------------------------------------------------- */

struct route_answer {
	bool has_src;
	uint8_t src[16];
	int oif;
};

static int route_cb(struct netlink *nl, struct nlmsghdr *h, void *arg)
{
	struct route_answer *ra = arg;
	struct nlattr *tb[RTA_MAX + 1];
	struct rtmsg *rtm;
	int len;

	(void)nl;
	if (h->nlmsg_type != RTM_NEWROUTE || nlmsg_parse(h, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return -EBADMSG;
	rtm = nlmsg_data(h);
	len = rtm->rtm_family == AF_INET ? 4 : 16;
	if (tb[RTA_PREFSRC] && nla_len(tb[RTA_PREFSRC]) == len) {
		ra->has_src = true;
		memcpy(ra->src, nla_data(tb[RTA_PREFSRC]), (size_t)len);
	}
	if (tb[RTA_OIF] && nla_len(tb[RTA_OIF]) == 4)
		ra->oif = (int)nla_get_u32(tb[RTA_OIF]);
	return 0;
}

struct endpoint *netlink_route_endpoint(struct netlink *nl, const struct host_key *dst)
{
	struct route_answer ra = { 0 };
	struct rtmsg rtm = { 0 };
	unsigned candidates = 0;
	struct nl_msg *msg;
	struct host_key k;
	struct nl_link *l;
	int ret, len;

	if (!nl || (dst->type != IBRES_KEY_IPV4 && dst->type != IBRES_KEY_IPV6))
		return NULL;
	for (unsigned i = 0; i < nl->eps->n; i++)
		if (dst->type == IBRES_KEY_IPV4 ? nl->eps->ep[i].cfg.id.n_v4 : nl->eps->ep[i].cfg.id.n_v6)
			candidates++;
	if (candidates < 2)
		return NULL; /* the first rule gives the only one there is */

	len = dst->type == IBRES_KEY_IPV4 ? 4 : 16;
	rtm.rtm_family = dst->type == IBRES_KEY_IPV4 ? AF_INET : AF_INET6;
	rtm.rtm_dst_len = (unsigned char)(len * 8);
	msg = nlmsg_alloc_simple(RTM_GETROUTE, 0);
	if (!msg)
		return NULL;
	if (nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, RTA_DST, len, dst->data) < 0)
		ret = -ENOMEM;
	else
		ret = request(nl, msg, false, route_cb, &ra);
	nlmsg_free(msg);
	if (ret) {
		log_debug("netlink: route lookup failed: %s", strerror(-ret));
		return NULL;
	}
	if (ra.has_src && host_key_addr(&k, dst->type, ra.src) == 0) {
		struct endpoint *ep = endpoint_by_key(nl->eps, &k);

		if (ep)
			return ep;
	}
	l = ra.oif ? nl_link_find(nl->t, ra.oif) : NULL;
	for (unsigned i = 0; l && i < nl->eps->n; i++)
		if (link_serves(l, &nl->eps->ep[i], &nl->eps->ep[i].cfg.id))
			return &nl->eps->ep[i];
	return NULL;
}

/* --- life cycle -------------------------------------------------------------------- */

static int open_sockets(struct netlink *nl)
{
	struct timeval tv = { .tv_sec = NL_RECV_TIMEOUT_MS / 1000,
			      .tv_usec = (NL_RECV_TIMEOUT_MS % 1000) * 1000 };
	int rcvbuf = NL_EVENT_RCVBUF, fd;

	nl->ev = nl_socket_alloc();
	nl->rq = nl_socket_alloc();
	if (!nl->ev || !nl->rq)
		return -ENOMEM;
	nl_socket_disable_auto_ack(nl->rq);
	if (nl_connect(nl->ev, NETLINK_ROUTE) < 0 || nl_connect(nl->rq, NETLINK_ROUTE) < 0)
		return -EAFNOSUPPORT;
	if (nl_socket_add_memberships(nl->ev, RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
				      RTNLGRP_IPV6_IFADDR, 0) < 0 ||
	    nl_socket_set_nonblocking(nl->ev) < 0)
		return -EIO;
	fd = nl_socket_get_fd(nl->ev);
	/* room for a burst (an interface with many addresses going away);
	 * beyond it, ENOBUFS and a full resync */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(nl_socket_get_fd(nl->rq), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	nl->lf.fd = fd;
	return 0;
}

static void netlink_free(struct netlink *nl)
{
	if (nl->ev)
		nl_socket_free(nl->ev);
	if (nl->rq)
		nl_socket_free(nl->rq);
	free(nl->t);
	free(nl);
}

struct netlink *netlink_start(struct loop *loop, const struct ibres_config *cfg,
			      struct endpoints *eps)
{
	struct netlink *nl = calloc(1, sizeof(*nl));
	int ret;

	if (!nl) {
		ret = -ENOMEM;
		goto err;
	}
	nl->cfg = cfg;
	nl->loop = loop;
	nl->eps = eps;
	nl->lf.fd = -1;
	nl->lf.cb = on_event;
	nl->resync_timer.cb = on_resync_timer;
	ret = open_sockets(nl);
	if (ret)
		goto err_free;
	/* subscribed first: a change during the dump is not lost */
	ret = resync(nl);
	if (ret)
		goto err_free;
	ret = loop_add_fd(loop, &nl->lf, EPOLLIN);
	if (ret)
		goto err_free;
	log_debug("netlink: %u links, %u addresses", nl->t->n_links, nl->t->n_addrs);
	return nl;

err_free:
	netlink_free(nl);
err:
	log_warn("netlink: %s; endpoints keep their configured addresses only", strerror(-ret));
	return NULL;
}

void netlink_stop(struct netlink *nl)
{
	if (!nl)
		return;
	loop_timer_cancel(nl->loop, &nl->resync_timer);
	loop_del_fd(nl->loop, &nl->lf);
	netlink_free(nl);
}
