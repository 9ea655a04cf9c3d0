// SPDX-License-Identifier: MIT
/* The RDMA_NL_LS messages (kpath_codec.h): one table of attributes, every
 * length checked, nothing trusted. */
#include "os/kpath_codec.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>
#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(struct ibres_path_record) == sizeof(((struct ib_path_rec_data *)0)->path_rec),
	       "a path record is the SA's 64 bytes");
_Static_assert(sizeof(struct rdma_ls_resolve_header) == KPATH_DEVICE_MAX + 2, "resolve header");
_Static_assert((int)KPATH_OP_RESOLVE == (int)RDMA_NL_LS_OP_RESOLVE &&
		       (int)KPATH_OP_SET_TIMEOUT == (int)RDMA_NL_LS_OP_SET_TIMEOUT &&
		       (int)KPATH_OP_IP_RESOLVE == (int)RDMA_NL_LS_OP_IP_RESOLVE,
	       "ops");
_Static_assert((int)KPATH_USE_ALL == (int)LS_RESOLVE_PATH_USE_ALL &&
		       (int)KPATH_USE_UNIDIRECTIONAL == (int)LS_RESOLVE_PATH_USE_UNIDIRECTIONAL &&
		       (int)KPATH_USE_GMP == (int)LS_RESOLVE_PATH_USE_GMP &&
		       (int)KPATH_USE_MAX == (int)LS_RESOLVE_PATH_USE_MAX,
	       "path uses");

#define LS_TYPE(op) RDMA_NL_GET_TYPE(RDMA_NL_LS, (op))

/* The attributes a query may carry: type, exact payload length, where it
 * goes, for which operation. Integers come in host order, GIDs and
 * addresses in network order: both are copied as they are. */
static const struct attr_def {
	uint16_t type;
	uint8_t len;
	uint8_t op;
	unsigned has;
	size_t offset;
} attrs[] = {
	{ LS_NLA_TYPE_SERVICE_ID, 8, KPATH_OP_RESOLVE, KPATH_HAS_SERVICE_ID,
	  offsetof(struct kpath_query, service_id) },
	{ LS_NLA_TYPE_DGID, 16, KPATH_OP_RESOLVE, KPATH_HAS_DGID, offsetof(struct kpath_query, dgid) },
	{ LS_NLA_TYPE_SGID, 16, KPATH_OP_RESOLVE, KPATH_HAS_SGID, offsetof(struct kpath_query, sgid) },
	{ LS_NLA_TYPE_TCLASS, 1, KPATH_OP_RESOLVE, KPATH_HAS_TCLASS,
	  offsetof(struct kpath_query, tclass) },
	{ LS_NLA_TYPE_PKEY, 2, KPATH_OP_RESOLVE, KPATH_HAS_PKEY, offsetof(struct kpath_query, pkey) },
	{ LS_NLA_TYPE_QOS_CLASS, 2, KPATH_OP_RESOLVE, KPATH_HAS_QOS_CLASS,
	  offsetof(struct kpath_query, qos_class) },
	{ LS_NLA_TYPE_IPV4, 4, KPATH_OP_IP_RESOLVE, KPATH_HAS_IPV4, offsetof(struct kpath_query, ip) },
	{ LS_NLA_TYPE_IPV6, 16, KPATH_OP_IP_RESOLVE, KPATH_HAS_IPV6, offsetof(struct kpath_query, ip) },
};

static const struct attr_def *attr_find(uint16_t type)
{
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (attrs[i].type == type)
			return &attrs[i];
	return NULL;
}

static int decode_attrs(const uint8_t *p, size_t len, struct kpath_query *q)
{
	while (len) {
		struct nlattr a;
		const struct attr_def *d;
		uint16_t type;
		size_t step;

		if (len < sizeof(a))
			return -EBADMSG;
		memcpy(&a, p, sizeof(a));
		if (a.nla_len < sizeof(a) || a.nla_len > len)
			return -EBADMSG;
		type = a.nla_type & RDMA_NLA_TYPE_MASK;
		d = attr_find(type);
		if (!d || d->op != q->op) {
			/* a constraint we do not know: let the SA answer it */
			if (a.nla_type & RDMA_NLA_F_MANDATORY)
				return -EBADMSG;
		} else {
			if (a.nla_len - sizeof(a) != d->len || (q->has & d->has))
				return -EBADMSG;
			memcpy((uint8_t *)q + d->offset, p + sizeof(a), d->len);
			q->has |= d->has;
		}
		step = NLA_ALIGN(a.nla_len);
		if (step >= len)
			break; /* the last one; its padding may be cut */
		p += step;
		len -= step;
	}
	return 0;
}

size_t kpath_msg_len(const void *buf, size_t len)
{
	struct nlmsghdr h;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	return h.nlmsg_len >= sizeof(h) && h.nlmsg_len <= len ? h.nlmsg_len : 0;
}

int kpath_decode(const void *buf, size_t len, struct kpath_query *q)
{
	const uint8_t *p = buf;
	struct nlmsghdr h;
	size_t hdr;
	int ret;

	memset(q, 0, sizeof(*q));
	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, p, sizeof(h));
	if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
		return -EBADMSG;
	len = h.nlmsg_len;
	/* acknowledgements (older kernels ack every reply), other clients */
	if (h.nlmsg_type < NLMSG_MIN_TYPE || RDMA_NL_GET_CLIENT(h.nlmsg_type) != RDMA_NL_LS)
		return KPATH_IGNORE;
	if (!(h.nlmsg_flags & NLM_F_REQUEST))
		return KPATH_IGNORE; /* somebody's answer, not a query */
	switch (RDMA_NL_GET_OP(h.nlmsg_type)) {
	case RDMA_NL_LS_OP_RESOLVE:
		hdr = NLMSG_ALIGN(sizeof(struct rdma_ls_resolve_header));
		break;
	case RDMA_NL_LS_OP_IP_RESOLVE:
		hdr = NLMSG_ALIGN(sizeof(struct rdma_ls_ip_resolve_header));
		break;
	default:
		return KPATH_IGNORE;
	}
	q->op = (uint8_t)RDMA_NL_GET_OP(h.nlmsg_type);
	q->seq = h.nlmsg_seq;
	q->refusable = true;
	p += NLMSG_HDRLEN;
	len -= NLMSG_HDRLEN > len ? len : NLMSG_HDRLEN;
	if (len < hdr)
		return -EBADMSG;
	if (q->op == KPATH_OP_RESOLVE) {
		struct rdma_ls_resolve_header rh;

		memcpy(&rh, p, sizeof(rh));
		memcpy(q->device, rh.device_name, KPATH_DEVICE_MAX);
		q->device[KPATH_DEVICE_MAX] = '\0';
		q->port = rh.port_num;
		q->path_use = rh.path_use;
		if (!q->device[0] || !q->port || q->port == 255 || q->path_use >= KPATH_USE_MAX)
			return -EBADMSG;
	} else {
		struct rdma_ls_ip_resolve_header ih;

		memcpy(&ih, p, sizeof(ih));
		q->ifindex = ih.ifindex;
	}
	ret = decode_attrs(p + hdr, len - hdr, q);
	if (ret)
		return ret;
	if (q->op == KPATH_OP_RESOLVE && !(q->has & KPATH_HAS_DGID))
		return -EBADMSG;
	if (q->op == KPATH_OP_IP_RESOLVE && !(q->has & (KPATH_HAS_IPV4 | KPATH_HAS_IPV6)))
		return -EBADMSG;
	if ((q->has & KPATH_HAS_IPV4) && (q->has & KPATH_HAS_IPV6))
		return -EBADMSG;
	return KPATH_QUERY;
}

/* Path records for each path use: how many, with which flags; the GMP
 * record comes first, for kernels that take only the first. */
static const struct {
	unsigned n;
	uint32_t flags[KPATH_RECORDS_MAX];
	bool reversed[KPATH_RECORDS_MAX]; /* the inbound path: from there to us */
} answers[KPATH_USE_MAX] = {
	[KPATH_USE_ALL] = { 3,
			    { IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL,
			      IB_PATH_PRIMARY | IB_PATH_OUTBOUND, IB_PATH_PRIMARY | IB_PATH_INBOUND },
			    { false, false, true } },
	[KPATH_USE_UNIDIRECTIONAL] = { 1, { IB_PATH_PRIMARY | IB_PATH_OUTBOUND }, { false } },
	[KPATH_USE_GMP] = { 1, { IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL }, { false } },
};

unsigned kpath_records_for(uint8_t path_use, const struct ibres_path_record *fwd,
			   struct kpath_record out[KPATH_RECORDS_MAX])
{
	if (path_use >= KPATH_USE_MAX)
		return 0;
	for (unsigned i = 0; i < answers[path_use].n; i++) {
		struct ibres_path_record *r = &out[i].rec;

		out[i].flags = answers[path_use].flags[i];
		*r = *fwd;
		if (answers[path_use].reversed[i]) {
			memcpy(r->dgid, fwd->sgid, 16);
			memcpy(r->sgid, fwd->dgid, 16);
			r->dlid = fwd->slid;
			r->slid = fwd->dlid;
		}
	}
	return answers[path_use].n;
}

bool kpath_kernel_accepts(uint8_t path_use, const uint32_t *flags, unsigned n)
{
	uint32_t mask;
	unsigned kept = 0;
	bool gmp = false;

	switch (path_use) {
	case KPATH_USE_UNIDIRECTIONAL:
		mask = IB_PATH_PRIMARY | IB_PATH_OUTBOUND;
		break;
	case KPATH_USE_ALL:
		mask = IB_PATH_PRIMARY;
		break;
	default:
		mask = IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL;
		break;
	}
	for (unsigned i = 0; i < n && kept < KPATH_RECORDS_MAX; i++) {
		if ((flags[i] & mask) != mask)
			continue;
		kept++;
		gmp |= !!(flags[i] & IB_PATH_GMP);
	}
	if (!kept)
		return false;
	/* rdma_cm takes its route's path from the GMP record */
	return path_use != KPATH_USE_ALL || gmp;
}

static size_t put_header(uint8_t *buf, size_t cap, uint8_t op, uint16_t flags, uint32_t seq,
			 uint32_t pid)
{
	struct nlmsghdr h = {
		.nlmsg_len = NLMSG_HDRLEN,
		.nlmsg_type = LS_TYPE(op),
		.nlmsg_flags = flags,
		.nlmsg_seq = seq,
		.nlmsg_pid = pid,
	};

	if (cap < NLMSG_HDRLEN)
		return 0;
	memset(buf, 0, NLMSG_HDRLEN);
	memcpy(buf, &h, sizeof(h));
	return NLMSG_HDRLEN;
}

/* Append an attribute (no RDMA_NLA_F_MANDATORY: the kernel compares the
 * type exactly); 0 if it does not fit. */
static size_t put_attr(uint8_t *buf, size_t cap, size_t used, uint16_t type, const void *v,
		       size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };
	size_t total = NLA_ALIGN(NLA_HDRLEN + len);

	if (!used || cap < used || cap - used < total)
		return 0;
	memset(buf + used, 0, total);
	memcpy(buf + used, &a, sizeof(a));
	memcpy(buf + used + NLA_HDRLEN, v, len);
	return used + total;
}

static size_t finish(uint8_t *buf, size_t used)
{
	struct nlmsghdr h;

	if (!used)
		return 0;
	memcpy(&h, buf, sizeof(h));
	h.nlmsg_len = (uint32_t)used;
	memcpy(buf, &h, sizeof(h));
	return used;
}

size_t kpath_encode_paths(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
			  const struct kpath_record *recs, unsigned n)
{
	size_t used = put_header(buf, cap, KPATH_OP_RESOLVE, 0, seq, pid);

	for (unsigned i = 0; i < n && used; i++) {
		struct ib_path_rec_data d = { .flags = recs[i].flags };

		memcpy(d.path_rec, &recs[i].rec, sizeof(d.path_rec));
		used = put_attr(buf, cap, used, LS_NLA_TYPE_PATH_RECORD, &d, sizeof(d));
	}
	return n ? finish(buf, used) : 0;
}

size_t kpath_encode_refusal(uint8_t *buf, size_t cap, uint8_t op, uint32_t seq, uint32_t pid)
{
	return finish(buf, put_header(buf, cap, op, RDMA_NL_LS_F_ERR, seq, pid));
}

size_t kpath_encode_gid(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
			const uint8_t gid[16])
{
	size_t used = put_header(buf, cap, KPATH_OP_IP_RESOLVE, 0, seq, pid);

	return finish(buf, put_attr(buf, cap, used, LS_NLA_TYPE_DGID, gid, 16));
}

size_t kpath_encode_set_timeout(uint8_t *buf, size_t cap, uint32_t seq, uint32_t pid,
				uint32_t ms)
{
	size_t used = put_header(buf, cap, KPATH_OP_SET_TIMEOUT, NLM_F_REQUEST, seq, pid);

	return finish(buf, put_attr(buf, cap, used, LS_NLA_TYPE_TIMEOUT, &ms, sizeof(ms)));
}
