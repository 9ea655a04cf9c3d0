/* SPDX-License-Identifier: MIT */
/*
 * The kernel's path queries (NETLINK_RDMA local service, RDMA_NL_LS): the
 * socket bound to the RDMA_NL_GROUP_LS multicast group (our own, or the one
 * systemd passed from "ListenNetlink=rdma 3"), the queries in flight and
 * their time bound. Each query is answered exactly once: with path records
 * or a GID, or refused with RDMA_NL_LS_F_ERR (the kernel then asks the SA at
 * once) — when the upper layer cannot answer, when the bound passes, and
 * when the daemon stops. The upper layer (frontend/kernel_paths.c) resolves
 * through callbacks it registers; the messages are kpath_codec.h's.
 */
#ifndef IBRESD_KPATH_H
#define IBRESD_KPATH_H

#include <stdint.h>

#include "core/list.h"
#include "core/loop.h"
#include "os/kpath_codec.h"
#include "os/kpath_sock.h"
#include "tlv.h"

#define KPATH_PENDING_MAX 4096 /* queries in flight; more are refused at once */

struct kpath;

/* A query in flight. */
struct kpath_pending {
	struct kpath_query q;
	void *priv; /* the upper layer's */
	struct list_node node;
	struct loop_timer timer;
	struct kpath *kp;
};

struct kpath_ops {
	void *ctx;
	/* A query to answer: kpath_answer_paths(), kpath_answer_gid() or
	 * kpath_refuse() exactly once, now or later, unless ended() came
	 * first. */
	void (*query)(void *ctx, struct kpath_pending *p);
	/* @p was refused for us (its bound passed, or the daemon stops): drop
	 * what waits for it; it is freed on return. */
	void (*ended)(void *ctx, struct kpath_pending *p);
};

struct kpath_counters {
	uint64_t requests, ip_requests, answered, refused, malformed, tx_errors;
};

/* Start serving the kernel's queries: take the NETLINK_RDMA socket systemd
 * passed (@activation_fd >= 0, see kpath_activation_fd) or open and bind
 * one, and tell the kernel to wait @bound_ms plus a margin for our answers
 * (SET_TIMEOUT). NULL when the kernel has no RDMA netlink (logged once, as a
 * notice: the kernel then asks the SA itself) or on failure (logged). */
struct kpath *kpath_start(struct loop *loop, int activation_fd, unsigned bound_ms,
			  const struct kpath_ops *ops);
/* Refuse what is in flight (each gets ended()) and close. NULL is fine. */
void kpath_stop(struct kpath *kp);
/* A new bound for queries from now on (and SET_TIMEOUT again). */
void kpath_set_bound(struct kpath *kp, unsigned bound_ms);

/* kpath_activation_fd(): os/kpath_sock.h */

/* Answers; each ends @p (it is freed). */
void kpath_answer_paths(struct kpath_pending *p, const struct ibres_path_record *fwd);
void kpath_answer_gid(struct kpath_pending *p, const uint8_t gid[16]);
void kpath_refuse(struct kpath_pending *p);
/* Call @fn for every query in flight, oldest first; @fn may not answer,
 * refuse or end one (it may arm a timer that does). */
void kpath_foreach(struct kpath *kp, void (*fn)(void *arg, struct kpath_pending *p), void *arg);

/* Append the counters (NAME, COUNTER pairs: kpath_*) to a STATS answer;
 * zeros when @kp is NULL, so the names are always there. */
void kpath_stats(const struct kpath *kp, struct tlv_writer *w);

#endif
