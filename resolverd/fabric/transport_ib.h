/* SPDX-License-Identifier: MIT */
/*
 * The ib transport's pure parts, apart so that they can be tested without
 * an HCA: address handle attributes from a path record or from a received
 * datagram's sender, and the parsing of a UD receive buffer (GRH first).
 */
#ifndef IBRESD_TRANSPORT_IB_H
#define IBRESD_TRANSPORT_IB_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibres_proto.h"
#include "fabric/transport.h"

#define IB_GRH_LEN 40 /* every UD receive buffer starts with room for the GRH */

/* The address vector of @p from @port_num: DLID, SL, static rate; a GRH
 * (DGID, flow label, traffic class, hop limit, SGID index 0) when the path's
 * hop limit is above 1, i.e. it leaves the subnet. */
void ib_ah_attr_from_path(const struct ibres_path_record *p, uint8_t port_num,
			  struct ibv_ah_attr *attr);

/* The address vector back to the sender of a datagram: its LID, our SL;
 * a GRH to its GID when its subnet prefix is not ours (@local_gid). */
void ib_ah_attr_from_addr(const struct transport_addr *from, const uint8_t local_gid[16],
			  uint8_t sl, uint8_t port_num, struct ibv_ah_attr *attr);

/* A multicast address vector: MLID, GRH with the MGID. */
void ib_ah_attr_mcast(const uint8_t mgid[16], uint16_t mlid, uint8_t sl, uint8_t port_num,
		      struct ibv_ah_attr *attr);

/* A completed receive of @byte_len bytes in @buf (GRH room included), with
 * @has_grh from the work completion's flags: the payload and the sender
 * (LID, QPN from the completion; GID from the GRH, zero without one).
 * 0, or -EBADMSG when the completion is shorter than the GRH room. */
int ib_parse_recv(const uint8_t *buf, size_t byte_len, bool has_grh, uint16_t slid, uint32_t src_qp,
		  struct transport_addr *from, const uint8_t **payload, size_t *len);

/* The receive buffers a UD QP gets for @want asked: at most the device's
 * @max_qp_wr, and with @send_depth sends at most @max_cqe completions in
 * the one completion queue (a limit of 0 or less: none known). At least 1. */
unsigned ib_recv_depth_fit(unsigned want, int max_qp_wr, int max_cqe, unsigned send_depth);

/* A counter file's value (sysfs hw_counters: a decimal number and a
 * newline). 0, -errno from open/read, or -EBADMSG. */
int ib_read_counter(const char *path, uint64_t *value);

/* Add to @total what a counter gained from its reading @last to @now (and
 * make @now the last); a counter that went back was reset, and counts
 * from zero. */
void ib_counter_advance(uint64_t *last, uint64_t *total, uint64_t now);

#endif
