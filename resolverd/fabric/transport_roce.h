/* SPDX-License-Identifier: MIT */
/*
 * What the ib transport does differently on a RoCE v2 port (Ethernet link
 * layer): no LIDs and no SA; every address handle carries a GRH from the
 * source GID index of the endpoint's GID in the port's GID table; groups are
 * the IPv4-mapped (or IPv6) multicast GIDs of the configured group addresses,
 * and the port's netdev must be a member of the IP group, or a soft-RoCE
 * device drops what is sent to it; a received "GRH" is an IPv4 header in its
 * last 20 bytes when the sender's GID is IPv4-mapped.
 */
#ifndef IBRESD_TRANSPORT_ROCE_H
#define IBRESD_TRANSPORT_ROCE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define ROCE_HOP_LIMIT 64 /* the IP TTL/hop limit of unicast, as rdma_cm's routes */

/* The entry of a port's GID table the endpoint sends from. */
struct roce_gid {
	uint8_t gid[16];
	unsigned index;
	int ifindex; /* the netdev behind it */
};

/* Find the RoCE v2 GID of @port: @want when given (it must be in the table),
 * else the first IPv4-mapped one, else the first global one. 0, -ENOENT
 * (none, or @want is not a RoCE v2 GID of the port), or -errno. */
int roce_find_gid(struct ibv_context *ctx, uint8_t port, const uint8_t *want,
		  struct roce_gid *out);

/* The multicast GID of an IPv4 (::ffff:a.b.c.d) or IPv6 group address; 0 or
 * -EAFNOSUPPORT. */
int roce_mgid(const struct sockaddr_storage *group, uint8_t mgid[16]);

/* A GRH-routed address vector to @dgid (unicast or group): no LID. */
void roce_ah_attr(const uint8_t dgid[16], unsigned sgid_index, uint8_t hop_limit, uint8_t sl,
		  uint8_t port_num, struct ibv_ah_attr *attr);

/* The sender's GID from the 40 bytes before a RoCE v2 payload: ::ffff:SRC
 * when they end in a valid IPv4 header, else the IPv6 header's source. */
void roce_grh_sgid(const uint8_t grh[40], uint8_t sgid[16]);

/* Join (or leave) IP group @group on interface @ifindex with the UDP socket
 * @fd (the membership lasts as long as the socket). 0 or -errno. */
int roce_ip_membership(int fd, int ifindex, const struct sockaddr_storage *group, bool join);

#endif
