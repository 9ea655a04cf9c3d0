/* SPDX-License-Identifier: MIT */
/*
 * The kernel's path queries to user space (NETLINK_RDMA, client RDMA_NL_LS):
 * the messages, decoded and built without any socket. The layouts are the
 * kernel's uapi (rdma/rdma_netlink.h, rdma/ib_user_sa.h); the rules of what
 * the kernel accepts in a reply are those of drivers/infiniband/core/
 * sa_query.c and addr.c, written once here (kpath_kernel_accepts).
 */
#ifndef IBRESD_KPATH_CODEC_H
#define IBRESD_KPATH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibres_proto.h"

#define KPATH_DEVICE_MAX 64 /* LS_DEVICE_NAME_MAX */
#define KPATH_RECORDS_MAX 3 /* what rdma_cm takes for one route */
/* The largest message we build: a RESOLVE answer with every record. */
#define KPATH_MSG_MAX (16 + KPATH_RECORDS_MAX * (4 + 72))
/* The kernel clamps SET_TIMEOUT to this range (IB_SA_LOCAL_SVC_TIMEOUT_*). */
#define KPATH_TIMEOUT_MIN_MS 100
#define KPATH_TIMEOUT_MAX_MS 200000

enum kpath_op {
	KPATH_OP_RESOLVE = 0,     /* RDMA_NL_LS_OP_RESOLVE */
	KPATH_OP_SET_TIMEOUT = 1, /* RDMA_NL_LS_OP_SET_TIMEOUT (ours to send) */
	KPATH_OP_IP_RESOLVE = 2,  /* RDMA_NL_LS_OP_IP_RESOLVE */
};

enum kpath_path_use {
	KPATH_USE_ALL = 0,            /* reversible: GMP, inbound and outbound paths */
	KPATH_USE_UNIDIRECTIONAL = 1, /* one outbound path */
	KPATH_USE_GMP = 2,            /* one reversible path */
	KPATH_USE_MAX = 3,
};

/* The attributes a query carried (bits of kpath_query.has). */
enum {
	KPATH_HAS_SERVICE_ID = 1u << 0,
	KPATH_HAS_DGID = 1u << 1,
	KPATH_HAS_SGID = 1u << 2,
	KPATH_HAS_TCLASS = 1u << 3,
	KPATH_HAS_PKEY = 1u << 4,
	KPATH_HAS_QOS_CLASS = 1u << 5,
	KPATH_HAS_IPV4 = 1u << 6,
	KPATH_HAS_IPV6 = 1u << 7,
};

/* One decoded query from the kernel. */
struct kpath_query {
	uint8_t op; /* enum kpath_op: RESOLVE or IP_RESOLVE */
	bool refusable; /* op and seq are sound: a refusal can name the query */
	uint32_t seq;
	/* RESOLVE */
	char device[KPATH_DEVICE_MAX + 1];
	uint8_t port;
	uint8_t path_use; /* enum kpath_path_use */
	unsigned has;     /* KPATH_HAS_* */
	uint64_t service_id;
	uint8_t dgid[16], sgid[16];
	uint8_t tclass;
	uint16_t pkey, qos_class;
	/* IP_RESOLVE */
	uint32_t ifindex;
	uint8_t ip[16]; /* IPv4 in the first 4 bytes */
};

enum kpath_decoded {
	KPATH_QUERY,  /* *q is a query to answer */
	KPATH_IGNORE, /* an acknowledgement or a message not for us: nothing to do */
};

/* Decode the netlink message at @buf (one, of @len bytes including its
 * header, as NLMSG_OK found it). Returns enum kpath_decoded, or -EBADMSG
 * for a malformed query (q->refusable when its op and seq are known, so
 * that it can still be refused). */
int kpath_decode(const void *buf, size_t len, struct kpath_query *q);

/* The length of the netlink message at @buf among @len bytes (a datagram
 * holds one or more, each NLMSG_ALIGNed), or 0 when no whole message is
 * there: walk with off += NLMSG_ALIGN(n) while n = kpath_msg_len(...). */
size_t kpath_msg_len(const void *buf, size_t len);

/* A path record with the IB_PATH_* flags the kernel reads. */
struct kpath_record {
	uint32_t flags;
	struct ibres_path_record rec; /* wire order, as the SA sends it */
};

/* The records answering @path_use with the path @fwd from us to the
 * destination (reversible): GMP one, UNIDIRECTIONAL one, ALL three (the
 * GMP path, the outbound path and the inbound path, i.e. @fwd reversed).
 * Returns how many were written to @out. */
unsigned kpath_records_for(uint8_t path_use, const struct ibres_path_record *fwd,
			   struct kpath_record out[KPATH_RECORDS_MAX]);

/* Would the kernel take @n records with these @flags for @path_use and
 * complete the route? (sa_query.c keeps the records whose flags hold the
 * path use's mask; rdma_cm then needs a GMP or flagless record among those
 * for ALL.) */
bool kpath_kernel_accepts(uint8_t path_use, const uint32_t *flags, unsigned n);

/* Messages to the kernel, into @buf (KPATH_MSG_MAX bytes); each returns its
 * length, or 0 if @cap is too small. @pid is our port id (nlmsg_pid). */
size_t kpath_encode_paths(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
			  const struct kpath_record *recs, unsigned n);
/* A RESOLVE or IP_RESOLVE answer with RDMA_NL_LS_F_ERR: ask the SA yourself. */
size_t kpath_encode_refusal(uint8_t *buf, size_t cap, uint8_t op, uint32_t seq, uint32_t pid);
size_t kpath_encode_gid(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
			const uint8_t gid[16]);
/* SET_TIMEOUT to @ms (the kernel clamps it to 100..200000). */
size_t kpath_encode_set_timeout(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
				uint32_t ms);

#endif
