// SPDX-License-Identifier: MIT
/*
 * The RoCE v2 parts of the ib transport (transport_roce.h). A RoCE GID table
 * holds one entry per IP address of the netdev (and a link-local one); the
 * endpoint sends from the entry of its own address, which the kernel resolves
 * to the netdev and a source IP when it builds the packet.
 */
#include "fabric/transport_roce.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool is_v4mapped(const uint8_t gid[16])
{
	return !memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix));
}

static bool is_global(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	/* fe80::/10 is the link-local entry every RoCE port has */
	return memcmp(gid, zero, 16) && !(gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80);
}

int roce_find_gid(struct ibv_context *ctx, uint8_t port, const uint8_t *want,
		  struct roce_gid *out)
{
	struct ibv_port_attr pa;
	int best = -1, best_rank = 0;

	if (ibv_query_port(ctx, port, &pa))
		return errno ? -errno : -EIO;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		int rank;

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
			continue; /* an empty slot */
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (want)
			rank = memcmp(e.gid.raw, want, 16) ? 0 : 3;
		else
			rank = is_v4mapped(e.gid.raw) ? 2 : is_global(e.gid.raw) ? 1 : 0;
		if (rank > best_rank) {
			best_rank = rank;
			best = i;
			memcpy(out->gid, e.gid.raw, 16);
			out->index = e.gid_index;
			out->ifindex = (int)e.ndev_ifindex;
		}
	}
	return best < 0 ? -ENOENT : 0;
}

int roce_mgid(const struct sockaddr_storage *group, uint8_t mgid[16])
{
	if (group->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)group;

		memcpy(mgid, v4mapped_prefix, sizeof(v4mapped_prefix));
		memcpy(mgid + 12, &sin->sin_addr, 4);
		return 0;
	}
	if (group->ss_family == AF_INET6) {
		memcpy(mgid, &((const struct sockaddr_in6 *)group)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void roce_ah_attr(const uint8_t dgid[16], unsigned sgid_index, uint8_t hop_limit, uint8_t sl,
		  uint8_t port_num, struct ibv_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->sl = sl & 0xf;
	attr->port_num = port_num;
	attr->is_global = 1;
	memcpy(attr->grh.dgid.raw, dgid, 16);
	attr->grh.sgid_index = (uint8_t)sgid_index;
	attr->grh.hop_limit = hop_limit;
}

/* RFC 1071: the sum over a valid header, its checksum included, is 0xffff. */
static bool ipv4_header_ok(const uint8_t h[20])
{
	uint32_t sum = 0;

	if (h[0] != 0x45)
		return false; /* version 4, no options: what RoCE v2 sends */
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

void roce_grh_sgid(const uint8_t grh[40], uint8_t sgid[16])
{
	if (ipv4_header_ok(grh + 20)) {
		memcpy(sgid, v4mapped_prefix, sizeof(v4mapped_prefix));
		memcpy(sgid + 12, grh + 20 + 12, 4); /* the IPv4 source address */
	} else {
		memcpy(sgid, grh + 8, 16); /* the IPv6 header's source */
	}
}

int roce_ip_membership(int fd, int ifindex, const struct sockaddr_storage *group, bool join)
{
	if (group->ss_family == AF_INET) {
		struct ip_mreqn mr;

		memset(&mr, 0, sizeof(mr));
		mr.imr_multiaddr = ((const struct sockaddr_in *)group)->sin_addr;
		mr.imr_ifindex = ifindex;
		if (setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &mr,
			       sizeof(mr)) < 0)
			return -errno;
		return 0;
	}
	if (group->ss_family == AF_INET6) {
		struct ipv6_mreq mr;

		mr.ipv6mr_multiaddr = ((const struct sockaddr_in6 *)group)->sin6_addr;
		mr.ipv6mr_interface = (unsigned)ifindex;
		if (setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &mr,
			       sizeof(mr)) < 0)
			return -errno;
		return 0;
	}
	return -EAFNOSUPPORT;
}
