/* SPDX-License-Identifier: MIT */
/*
 * A transport carries fabric datagrams for one endpoint: multicast to a
 * priority group, unicast to a peer, and received datagrams with the
 * sender's address. The protocol core (fabric.c) sees only this interface.
 */
#ifndef IBRESD_TRANSPORT_H
#define IBRESD_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/config.h"
#include "core/loop.h"

/* Where a datagram came from, and so where a unicast answer goes. */
struct transport_addr {
	struct sockaddr_storage ss; /* ip: the sender's unicast address and port */
	socklen_t len;
	uint16_t lid;    /* ib: from the work completion */
	uint32_t qpn;    /* ib */
	uint8_t gid[16]; /* ib: from the GRH, if any */
};

struct transport;

/* The receive path's state, for STATS: how often the transport found its
 * receive queue empty (datagrams arriving then were dropped), what the
 * device itself counted, and what the kernel dropped at the ip transport's
 * sockets. */
struct transport_rx_stats {
	uint64_t queue_empty;     /* the daemon's own count */
	uint64_t hw_out_of_buffer; /* the port's out_of_buffer counter, since open */
	bool hw_counted;          /* the device has that counter */
	unsigned slots;           /* receive buffers, once the device's limits applied */
	uint64_t sock_drops;      /* ip: datagrams the kernel dropped at the sockets
				   * (full receive buffer; SO_RXQ_OVFL with each datagram,
				   * SO_MEMINFO asked at each rx_stats), since open */
};

struct transport_ops {
	const char *name;
	/* Open sockets (or a QP) for @ep and register them with @loop. */
	int (*open)(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep);
	void (*close)(struct transport *t, struct loop *loop);
	/* Join/leave group @g (index into ep->groups, lowest priority first). */
	int (*join)(struct transport *t, unsigned g);
	int (*leave)(struct transport *t, unsigned g);
	int (*send_mcast)(struct transport *t, unsigned g, const void *buf, size_t len);
	int (*send_ucast)(struct transport *t, const struct transport_addr *to, const void *buf,
			  size_t len);
	/* Optional: fill @s with the receive path's counters (NULL: none kept),
	 * reading the kernel's or the device's own where it keeps them. */
	void (*rx_stats)(struct transport *t, struct transport_rx_stats *s);
};

struct transport {
	const struct transport_ops *ops;
	const struct cfg_endpoint *ep;
	/* Called for every datagram received. */
	void (*recv)(struct transport *t, const uint8_t *buf, size_t len,
		     const struct transport_addr *from);
	void *owner; /* the protocol core's per-endpoint state */
	void *priv;  /* the transport's own state */
	/* ib: set by the core before open. The IB group behind priority class
	 * @g once the port joined it (0, or -EAGAIN not yet), and a port event
	 * verbs reported (the SA client reads the port again). */
	int (*group_address)(struct transport *t, unsigned g, uint8_t mgid[16], uint16_t *mlid,
			     uint32_t *qkey, uint8_t *sl);
	void (*port_event)(struct transport *t, const char *what);
	uint32_t qpn; /* ib: set by open, the UD QP the endpoint is reached at */
	/* set by the transport: since when (CLOCK_MONOTONIC ms) datagrams to
	 * group 0, where every node announces, reach us (0: not yet; on IB
	 * once the QP is attached to the group, after the SA join) */
	uint64_t mcast_since_ms;
	uint8_t gid[16]; /* ib on RoCE: set by open, the GID the endpoint sends from */
};

extern const struct transport_ops transport_ip_ops;
extern const struct transport_ops transport_ib_ops;

/* The transport an endpoint's config names (NULL: none). Alone in
 * transport_select.c so that a unit test can link a fake transport in. */
const struct transport_ops *transport_for(const struct cfg_endpoint *ep);

#endif
