// SPDX-License-Identifier: MIT
/*
 * The ib transport's pure parts (transport_ib.h), apart so that they can be
 * tested without an HCA: address vectors from a path record, from a
 * datagram's sender and for a group; a UD receive buffer's GRH and payload;
 * the receive queue's depth within the device's limits; sysfs counters.
 */
#include "fabric/transport_ib.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ib_ah_attr_from_path(const struct ibres_path_record *p, uint8_t port_num,
			  struct ibv_ah_attr *attr)
{
	uint32_t fl_hop = be32toh(p->flowlabel_hoplimit);

	memset(attr, 0, sizeof(*attr));
	attr->dlid = be16toh(p->dlid);
	attr->sl = be16toh(p->qosclass_sl) & 0xf;
	attr->src_path_bits = 0;
	attr->static_rate = p->rate & 0x3f; /* enum ibv_rate has the IB values */
	attr->port_num = port_num;
	if ((fl_hop & 0xff) > 1) {
		attr->is_global = 1;
		memcpy(attr->grh.dgid.raw, p->dgid, 16);
		attr->grh.flow_label = (fl_hop >> 8) & 0xfffff;
		attr->grh.hop_limit = (uint8_t)fl_hop;
		attr->grh.traffic_class = p->tclass;
		attr->grh.sgid_index = 0;
	}
}

void ib_ah_attr_from_addr(const struct transport_addr *from, const uint8_t local_gid[16],
			  uint8_t sl, uint8_t port_num, struct ibv_ah_attr *attr)
{
	static const uint8_t zero[16];

	memset(attr, 0, sizeof(*attr));
	attr->dlid = from->lid;
	attr->sl = sl & 0xf;
	attr->port_num = port_num;
	/* another subnet: only the GID routes there */
	if (memcmp(from->gid, zero, 16) && memcmp(from->gid, local_gid, 8)) {
		attr->is_global = 1;
		memcpy(attr->grh.dgid.raw, from->gid, 16);
		attr->grh.hop_limit = 0xff;
		attr->grh.sgid_index = 0;
	}
}

void ib_ah_attr_mcast(const uint8_t mgid[16], uint16_t mlid, uint8_t sl, uint8_t port_num,
		      struct ibv_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->dlid = mlid;
	attr->sl = sl & 0xf;
	attr->port_num = port_num;
	attr->is_global = 1; /* multicast always carries a GRH */
	memcpy(attr->grh.dgid.raw, mgid, 16);
	attr->grh.hop_limit = 1;
	attr->grh.sgid_index = 0;
}

int ib_parse_recv(const uint8_t *buf, size_t byte_len, bool has_grh, uint16_t slid, uint32_t src_qp,
		  struct transport_addr *from, const uint8_t **payload, size_t *len)
{
	if (byte_len < IB_GRH_LEN)
		return -EBADMSG;
	memset(from, 0, sizeof(*from));
	from->lid = slid;
	from->qpn = src_qp & 0xffffff;
	if (has_grh)
		memcpy(from->gid, buf + 8, 16); /* GRH: SGID at 8, DGID at 24 */
	*payload = buf + IB_GRH_LEN;
	*len = byte_len - IB_GRH_LEN;
	return 0;
}

unsigned ib_recv_depth_fit(unsigned want, int max_qp_wr, int max_cqe, unsigned send_depth)
{
	unsigned depth = want;

	if (max_qp_wr > 0 && (unsigned)max_qp_wr < depth)
		depth = (unsigned)max_qp_wr;
	/* sends and receives share one completion queue */
	if (max_cqe > 0 && (unsigned)max_cqe < depth + send_depth)
		depth = (unsigned)max_cqe > send_depth ? (unsigned)max_cqe - send_depth : 1;
	return depth ? depth : 1;
}

int ib_read_counter(const char *path, uint64_t *value)
{
	char text[32], *end;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	text[n] = 0;
	errno = 0;
	*value = strtoull(text, &end, 10);
	if (end == text || errno || (*end && *end != '\n') || text[0] == '-')
		return -EBADMSG;
	return 0;
}

void ib_counter_advance(uint64_t *last, uint64_t *total, uint64_t now)
{
	/* a counter that went back was reset (a driver or firmware reset):
	 * what it holds now is new */
	*total += now >= *last ? now - *last : now;
	*last = now;
}

/* --- the QP ----------------------------------------------------------------------- */
