// SPDX-License-Identifier: MIT
/*
 * The ip transport: fabric datagrams over UDP on one interface (IPoIB on a
 * cluster; veth or lo in tests). One socket per group receives that group's
 * multicast; one socket bound to the endpoint's own address sends everything
 * and receives unicast, so several daemons can share an interface.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <linux/sock_diag.h>
#include <assert.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/list.h"
#include "fabric/transport.h"
#include "fabric/transport_ip.h"

#define RECV_BUF 2048
#define RECV_BATCH 8
#define RECV_ROUNDS 8 /* then give the other file descriptors a turn */
/* Room for a whole cluster's burst: a node booting with 48,000 others hears
 * every start-up announcement within the jitter window on its groups, and a
 * newcomer every node's unicast answer at once (bench/directory-bench: the
 * kernel's default 208 KiB dropped half of a 48k boot storm). A bound on
 * what may queue, not memory taken up front. */
#define SOCK_RCVBUF (32 << 20)
/* A warning about socket drops at most this often. */
#define DROP_LOG_MS 60000

/* Root may raise the buffer past net.core.rmem_max; anyone else gets that. */
static void set_rcvbuf(int fd)
{
	int rcvbuf = SOCK_RCVBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
}

struct ip_sock {
	struct loop_fd lf;
	struct transport *t;
	uint32_t ovfl; /* the kernel's drop count of this socket, as last reported */
};

struct ip_priv {
	int family;
	unsigned ifindex;
	struct ip_sock ucast;
	struct ip_sock mcast[CFG_MAX_GROUPS];
	bool joined[CFG_MAX_GROUPS];
	struct loop *loop;
	/* datagrams the kernel dropped at our sockets (a full receive buffer),
	 * from their SO_RXQ_OVFL counts, summed since open */
	uint64_t sock_drops;
	uint64_t drop_warned_ms, drop_warned_at;
};

bool ip_rxq_ovfl(const struct msghdr *mh, uint32_t *count)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)mh); c;
	     c = CMSG_NXTHDR((struct msghdr *)mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL ||
		    c->cmsg_len != CMSG_LEN(sizeof(*count)))
			continue;
		memcpy(count, CMSG_DATA(c), sizeof(*count));
		return true;
	}
	return false;
}

uint32_t ip_ovfl_advance(uint32_t *last, uint32_t now)
{
	/* the count is the socket's total, 32 bits wide: what it rose by since
	 * the last one seen, modulo 2^32. A datagram queued before drops that
	 * the socket's own count (ip_sock_drops) already showed carries an
	 * older total: no rise, and no going back. */
	int32_t d = (int32_t)(now - *last);

	if (d <= 0)
		return 0;
	*last = now;
	return (uint32_t)d;
}

bool ip_sock_drops(int fd, uint32_t *count)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0 ||
	    len < (SK_MEMINFO_DROPS + 1) * sizeof(mem[0]))
		return false;
	*count = mem[SK_MEMINFO_DROPS];
	return true;
}

/* The kernel dropped datagrams at socket @s: counted, and said in the log. */
static void sock_dropped(struct ip_sock *s, uint32_t n)
{
	struct ip_priv *p = s->t->priv;
	uint64_t now = now_ms();

	p->sock_drops += n;
	if (p->drop_warned_ms && now < p->drop_warned_ms + DROP_LOG_MS)
		return;
	log_warn("endpoint %s: the kernel dropped %" PRIu64 " datagram%s at its sockets since the "
		 "last warning (receive buffer full): datagrams were lost",
		 s->t->ep->label, p->sock_drops - p->drop_warned_at,
		 p->sock_drops - p->drop_warned_at == 1 ? "" : "s");
	p->drop_warned_ms = now ? now : 1;
	p->drop_warned_at = p->sock_drops;
}

/* Read in batches: a batch that comes back short has drained the socket,
 * so the usual case costs one system call and no EAGAIN. */
static void on_datagram(struct loop_fd *lf, uint32_t events)
{
	struct ip_sock *s = container_of(lf, struct ip_sock, lf);
	static_assert(RECV_BATCH * RECV_BUF <= 16384, "receive batch too big for the stack");
	uint8_t bufs[RECV_BATCH][RECV_BUF];
	struct transport_addr from[RECV_BATCH];
	struct iovec iov[RECV_BATCH];
	struct mmsghdr msgs[RECV_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl[RECV_BATCH];

	(void)events;
	for (int i = 0; i < RECV_BATCH; i++)
		iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = RECV_BUF };
	for (int round = 0; round < RECV_ROUNDS; round++) {
		int n;

		/* the kernel overwrites the lengths: set again each round */
		for (int i = 0; i < RECV_BATCH; i++) {
			msgs[i] = (struct mmsghdr){ .msg_hdr = {
							    .msg_name = &from[i].ss,
							    .msg_namelen = sizeof(from[i].ss),
							    .msg_iov = &iov[i],
							    .msg_iovlen = 1,
							    .msg_control = ctl[i].buf,
							    .msg_controllen = sizeof(ctl[i].buf),
						    } };
		}
		n = recvmmsg(lf->fd, msgs, RECV_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			size_t len = msgs[i].msg_len;
			uint32_t ovfl, d;

			/* drops before this datagram: report them first, so
			 * that the core sees the loss before what follows */
			if (ip_rxq_ovfl(&msgs[i].msg_hdr, &ovfl) &&
			    (d = ip_ovfl_advance(&s->ovfl, ovfl)) != 0)
				sock_dropped(s, d);
			from[i].len = msgs[i].msg_hdr.msg_namelen;
			/* An oversize datagram arrives cut (MSG_TRUNC makes
			 * msg_len its real length); hand over a length past
			 * the buffer so the core rejects it rather than
			 * parsing a prefix. */
			if (len > RECV_BUF)
				len = RECV_BUF + 1;
			s->t->recv(s->t, bufs[i], len, &from[i]);
		}
		if (n < RECV_BATCH)
			return;
	}
}

static int new_socket(int family)
{
	int one = 1, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* SO_RXQ_OVFL: every datagram comes with the socket's drop count */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* The endpoint's unicast address of the groups' family, port @port. */
static int local_addr(const struct cfg_endpoint *ep, int family, struct sockaddr_storage *ss,
		      socklen_t *len, unsigned ifindex)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (void *)ss;

		if (!ep->id.n_v4)
			return -EADDRNOTAVAIL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(ep->udp_port);
		sin->sin_addr = ep->id.v4[0];
		*len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (void *)ss;

		if (!ep->id.n_v6)
			return -EADDRNOTAVAIL;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ep->udp_port);
		sin6->sin6_addr = ep->id.v6[0];
		if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
			sin6->sin6_scope_id = ifindex;
		*len = sizeof(*sin6);
	}
	return 0;
}

/* Is @ifname a loopback interface? Only there can other daemons share the
 * interface with us, so only there must our own multicast loop back. */
static bool is_loopback(const char *ifname)
{
	struct ifreq ifr = { 0 };
	bool ret = false;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		ret = ifr.ifr_flags & IFF_LOOPBACK;
	close(fd);
	return ret;
}

static int set_mcast_out(int fd, int family, unsigned ifindex, int loop)
{
	int ttl = 1;

	/* On a real interface our own copies would only wake us for nothing. */
	if (family == AF_INET) {
		struct ip_mreqn mr = { .imr_ifindex = (int)ifindex };

		if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) < 0)
			return -errno;
	} else {
		int idx = (int)ifindex;

		if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof(idx)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &loop, sizeof(loop)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof(ttl)) < 0)
			return -errno;
	}
	return 0;
}

static void ip_close(struct transport *t, struct loop *loop)
{
	struct ip_priv *p = t->priv;

	if (!p)
		return;
	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++) {
		if (p->mcast[g].lf.fd >= 0) {
			loop_del_fd(loop, &p->mcast[g].lf);
			close(p->mcast[g].lf.fd);
		}
	}
	if (p->ucast.lf.fd >= 0) {
		loop_del_fd(loop, &p->ucast.lf);
		close(p->ucast.lf.fd);
	}
	free(p);
	t->priv = NULL;
	t->mcast_since_ms = 0;
}

static int ip_open(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep)
{
	struct sockaddr_storage ss;
	struct ip_priv *p;
	socklen_t len;
	int ret;

	if (!ep->n_groups)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->priv = p;
	t->ep = ep;
	p->loop = loop;
	p->family = ep->groups[0].addr.ss_family;
	p->ucast.lf.fd = -1;
	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		p->mcast[g].lf.fd = -1;
	p->ifindex = if_nametoindex(ep->interface);
	if (!p->ifindex) {
		log_err("endpoint %s: no interface '%s'", ep->label, ep->interface);
		ret = -ENODEV;
		goto err;
	}
	ret = local_addr(ep, p->family, &ss, &len, p->ifindex);
	if (ret) {
		log_err("endpoint %s: no %s address for the groups' family", ep->label,
			p->family == AF_INET ? "IPv4" : "IPv6");
		goto err;
	}
	ret = new_socket(p->family);
	if (ret < 0)
		goto err;
	p->ucast.lf.fd = ret;
	if (bind(ret, (struct sockaddr *)&ss, len) < 0) {
		ret = -errno;
		log_err("endpoint %s: bind to its own address: %s", ep->label, strerror(errno));
		goto err;
	}
	set_rcvbuf(p->ucast.lf.fd);
	ret = set_mcast_out(p->ucast.lf.fd, p->family, p->ifindex, is_loopback(ep->interface));
	if (ret)
		goto err;
	p->ucast.t = t;
	p->ucast.lf.cb = on_datagram;
	ret = loop_add_fd(loop, &p->ucast.lf, EPOLLIN);
	if (ret)
		goto err;
	return 0;
err:
	ip_close(t, loop);
	return ret;
}

static int ip_join(struct transport *t, unsigned g)
{
	struct ip_priv *p = t->priv;
	const struct cfg_group *grp = &t->ep->groups[g];
	struct sockaddr_storage ss = grp->addr;
	int fd, ret;

	if (g >= t->ep->n_groups || p->joined[g])
		return g >= t->ep->n_groups ? -EINVAL : 0;
	fd = new_socket(p->family);
	if (fd < 0)
		return fd;
	set_rcvbuf(fd);
	if (p->family == AF_INET) {
		struct sockaddr_in *sin = (void *)&ss;
		struct ip_mreqn mr = { .imr_multiaddr = sin->sin_addr,
				       .imr_ifindex = (int)p->ifindex };
		int off = 0;

		sin->sin_port = htons(t->ep->udp_port);
		/* bound to the group address: only this group's datagrams */
		if (bind(fd, (struct sockaddr *)sin, sizeof(*sin)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof(off)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
			goto err;
	} else {
		struct sockaddr_in6 *sin6 = (void *)&ss;
		struct ipv6_mreq mr = { .ipv6mr_multiaddr = sin6->sin6_addr,
					.ipv6mr_interface = p->ifindex };
		char ifname[IF_NAMESIZE];

		sin6->sin6_port = htons(t->ep->udp_port);
		sin6->sin6_scope_id = p->ifindex;
		/* IPv6 hands a group's datagram to every socket that joined
		 * that group, on whichever interface (it has no
		 * IP_MULTICAST_ALL's ifindex check): rails sharing a group
		 * would hear each other's peers. Bound to its interface, a
		 * socket hears its own rail only (by name: SO_BINDTOIFINDEX
		 * is Linux 5.0's; joins are made before privileges drop). */
		if (!if_indextoname(p->ifindex, ifname) ||
		    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, sizeof(ifname)) < 0 ||
		    bind(fd, (struct sockaddr *)sin6, sizeof(*sin6)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
			goto err;
	}
	p->mcast[g].lf.fd = fd;
	p->mcast[g].lf.cb = on_datagram;
	p->mcast[g].t = t;
	p->mcast[g].ovfl = 0; /* a new socket counts from 0 */
	ret = loop_add_fd(p->loop, &p->mcast[g].lf, EPOLLIN);
	if (ret) {
		close(fd);
		p->mcast[g].lf.fd = -1;
		return ret;
	}
	p->joined[g] = true;
	if (g == 0)
		t->mcast_since_ms = now_ms() ? now_ms() : 1;
	return 0;
err:
	ret = -errno;
	log_err("endpoint %s: join group %u: %s", t->ep->label, g, strerror(errno));
	close(fd);
	return ret;
}

static int ip_leave(struct transport *t, unsigned g)
{
	struct ip_priv *p = t->priv;

	if (g >= CFG_MAX_GROUPS || !p->joined[g])
		return 0;
	/* closing the socket drops the membership */
	loop_del_fd(p->loop, &p->mcast[g].lf);
	close(p->mcast[g].lf.fd);
	p->mcast[g].lf.fd = -1;
	p->joined[g] = false;
	if (g == 0)
		t->mcast_since_ms = 0; /* it hears the group no more (a NEWCOMER's UP) */
	return 0;
}

static int send_to(struct ip_priv *p, const struct sockaddr *sa, socklen_t len, const void *buf,
		   size_t n)
{
	ssize_t ret;

	do {
		ret = sendto(p->ucast.lf.fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL, sa, len);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

static int ip_send_mcast(struct transport *t, unsigned g, const void *buf, size_t len)
{
	struct ip_priv *p = t->priv;
	struct sockaddr_storage ss;

	if (g >= t->ep->n_groups)
		return -EINVAL;
	ss = t->ep->groups[g].addr;
	if (p->family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = htons(t->ep->udp_port);
		return send_to(p, (struct sockaddr *)&ss, sizeof(struct sockaddr_in), buf, len);
	}
	((struct sockaddr_in6 *)&ss)->sin6_port = htons(t->ep->udp_port);
	((struct sockaddr_in6 *)&ss)->sin6_scope_id = p->ifindex;
	return send_to(p, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6), buf, len);
}

static int ip_send_ucast(struct transport *t, const struct transport_addr *to, const void *buf,
			 size_t len)
{
	struct ip_priv *p = t->priv;

	if (to->ss.ss_family != p->family)
		return -EAFNOSUPPORT;
	return send_to(p, (const struct sockaddr *)&to->ss, to->len, buf, len);
}

/* Drops at @s since its count was last seen, asked of the socket itself: a
 * datagram carries the count only when one arrives after the drops, and
 * none may (the end of a storm). */
static void poll_drops(struct ip_sock *s)
{
	uint32_t count, d;

	if (s->lf.fd >= 0 && ip_sock_drops(s->lf.fd, &count) &&
	    (d = ip_ovfl_advance(&s->ovfl, count)) != 0)
		sock_dropped(s, d);
}

static void ip_rx_stats(struct transport *t, struct transport_rx_stats *s)
{
	struct ip_priv *p = t->priv;

	memset(s, 0, sizeof(*s));
	if (!p)
		return;
	poll_drops(&p->ucast);
	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		if (p->joined[g])
			poll_drops(&p->mcast[g]);
	s->sock_drops = p->sock_drops;
}

const struct transport_ops transport_ip_ops = {
	.name = "ip",
	.open = ip_open,
	.close = ip_close,
	.join = ip_join,
	.leave = ip_leave,
	.send_mcast = ip_send_mcast,
	.send_ucast = ip_send_ucast,
	.rx_stats = ip_rx_stats,
};
