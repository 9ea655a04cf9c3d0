/* SPDX-License-Identifier: MIT */
/*
 * The ib transport's private state, shared by its files: transport_ib.c (the
 * queues, receiving, sending, open and close), transport_ib_port.c (the
 * port's events and its multicast groups) and transport_ib_addr.c (the pure
 * parts, transport_ib.h).
 */
#ifndef IBRESD_TRANSPORT_IB_IMPL_H
#define IBRESD_TRANSPORT_IB_IMPL_H

#include "fabric/transport_ib.h"
#include "fabric/transport_roce.h"
#include "core/config.h"
#include "core/loop.h"

#define SEND_DEPTH	    64
#define SLOT_LEN	    2048 /* a datagram: FW_MAX_LEN fits the smallest usual UD MTU */
#define RECV_SLOT	    (IB_GRH_LEN + SLOT_LEN)
#define AH_CACHE	    64	 /* unicast address handles kept */
#define ATTACH_RETRY_MS	    1000 /* a group not joined yet: look again */
#define POLL_BATCH	    32	 /* completions per poll; their buffers reposted as one chain */
#define MCAST_QPN	    0xffffff
#define WRID_RECV	    (1ull << 32) /* a receive's work request id: this bit and the slot */
#define DRY_LOG_MS	    60000	 /* at most one "receive queue ran dry" warning a minute */
#define HW_COUNTER_PATH_MAX 256
#define SYSFS_IB	    "/sys/class/infiniband"

struct ah_slot {
	uint16_t lid;
	uint8_t gid[16];
	struct ibv_ah *ah;
	uint64_t used;
};

struct ib_group {
	bool wanted; /* join() was called */
	bool attached;
	uint8_t mgid[16];
	uint16_t mlid;
	uint32_t qkey;
	uint8_t sl;
	struct ibv_ah *ah;
};

struct ib_priv {
	struct transport *t;
	struct loop *loop;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;	      /* recv_depth receive slots, then SEND_DEPTH send slots */
	unsigned recv_depth;  /* receive slots, after the device's limits */
	unsigned recv_posted; /* of which the HCA holds now */
	struct ibv_wc *wcs;   /* polled completions not handled yet: a ring */
	unsigned wc_cap, wc_head, wc_n;
	uint64_t queue_empty;		  /* times every posted buffer was found consumed */
	bool dry;			  /* and the last time is not over */
	uint64_t dry_warned_ms;		  /* when that was last logged */
	uint64_t dry_warned_at;		  /* queue_empty then */
	char hw_oob[HW_COUNTER_PATH_MAX]; /* the port's out_of_buffer counter, "" none */
	uint64_t hw_last, hw_total;	  /* its last reading, its growth since open */
	bool send_busy[SEND_DEPTH];
	unsigned send_next;
	struct loop_fd cq_lf, async_lf;
	struct loop_timer attach_timer;
	struct ib_group groups[CFG_MAX_GROUPS];
	struct ah_slot ahs[AH_CACHE];
	uint64_t ah_clock;
	uint8_t port_num;
	uint16_t pkey_index;
	uint8_t sl;
	uint8_t gid[16];
	unsigned cq_events; /* to acknowledge in batches */
	bool roce;	    /* Ethernet link layer: GRH routing, IP groups */
	struct roce_gid rgid;
	int mfd[2]; /* roce: UDP sockets (IPv4, IPv6) holding IP group memberships */
};

/* transport_ib_port.c */
void ib_ah_cache_flush(struct ib_priv *p);
void ib_group_release(struct ib_priv *p, unsigned g);
void ib_on_async(struct loop_fd *lf, uint32_t events);
void ib_on_attach_timer(struct loop_timer *timer);
int ib_group_attach(struct ib_priv *p, unsigned g);
int ib_join(struct transport *t, unsigned g);
int ib_leave(struct transport *t, unsigned g);

#endif
