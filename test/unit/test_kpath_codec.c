// SPDX-License-Identifier: MIT
/* resolverd/os/kpath_codec.c: the kernel's path queries built here as the
 * kernel builds them (sa_query.c, addr.c) from its uapi headers
 * (rdma/rdma_netlink.h, rdma/ib_user_sa.h), every way a query can be wrong,
 * the flag combinations the kernel accepts and rejects, and our answers read
 * back the way the kernel reads them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>

#include "os/kpath_codec.h"

/* A message under construction, as the kernel's skb. */
struct msg {
	uint8_t buf[1024];
	size_t len;
};

static void msg_begin(struct msg *m, uint16_t op, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr h = { .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_LS, op),
			      .nlmsg_flags = flags,
			      .nlmsg_seq = seq };

	memset(m, 0, sizeof(*m));
	memcpy(m->buf, &h, sizeof(h));
	m->len = NLMSG_HDRLEN;
}

/* skb_put(skb, NLMSG_ALIGN(sizeof(*header))) */
static void msg_resolve_header(struct msg *m, const char *dev, uint8_t port, uint8_t use)
{
	struct rdma_ls_resolve_header h;

	memset(&h, 0, sizeof(h));
	memcpy(h.device_name, dev, strnlen(dev, sizeof(h.device_name)));
	h.port_num = port;
	h.path_use = use;
	memcpy(m->buf + m->len, &h, sizeof(h));
	m->len += NLMSG_ALIGN(sizeof(h));
}

static void msg_ip_header(struct msg *m, uint32_t ifindex)
{
	struct rdma_ls_ip_resolve_header h = { .ifindex = ifindex };

	memcpy(m->buf + m->len, &h, sizeof(h));
	m->len += NLMSG_ALIGN(sizeof(h));
}

/* nla_put(skb, type, len, data) */
static void msg_attr(struct msg *m, uint16_t type, const void *v, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(m->buf + m->len, &a, sizeof(a));
	memcpy(m->buf + m->len + NLA_HDRLEN, v, len);
	m->len += NLA_ALIGN(NLA_HDRLEN + len);
}

/* nlmsg_end() */
static size_t msg_end(struct msg *m)
{
	struct nlmsghdr h;

	memcpy(&h, m->buf, sizeof(h));
	h.nlmsg_len = (uint32_t)m->len;
	memcpy(m->buf, &h, sizeof(h));
	return m->len;
}

static const uint8_t DGID[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 2 };
static const uint8_t SGID[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 1 };

/* A RESOLVE as ib_nl_set_path_rec_attrs() builds it: every attribute
 * flagged mandatory, integers in host order. */
static size_t kernel_resolve(struct msg *m, uint8_t use, uint32_t seq)
{
	uint64_t sid = 0x0000000001060000ull + 4791;
	uint8_t tclass = 0x20;
	uint16_t pkey = 0xffff, qos = 0x123;

	msg_begin(m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, seq);
	msg_resolve_header(m, "mlx5_0", 1, use);
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_SERVICE_ID, &sid, sizeof(sid));
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_DGID, DGID, 16);
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_SGID, SGID, 16);
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_TCLASS, &tclass, 1);
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_PKEY, &pkey, 2);
	msg_attr(m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_QOS_CLASS, &qos, 2);
	return msg_end(m);
}

static void test_resolve_every_path_use(void **state)
{
	struct kpath_query q;
	struct msg m;

	(void)state;
	for (uint8_t use = 0; use < LS_RESOLVE_PATH_USE_MAX; use++) {
		size_t len = kernel_resolve(&m, use, 1000 + use);

		assert_int_equal(kpath_decode(m.buf, len, &q), KPATH_QUERY);
		assert_int_equal(q.op, KPATH_OP_RESOLVE);
		assert_int_equal(q.seq, 1000 + use);
		assert_string_equal(q.device, "mlx5_0");
		assert_int_equal(q.port, 1);
		assert_int_equal(q.path_use, use);
		assert_int_equal(q.has, KPATH_HAS_SERVICE_ID | KPATH_HAS_DGID | KPATH_HAS_SGID |
						KPATH_HAS_TCLASS | KPATH_HAS_PKEY | KPATH_HAS_QOS_CLASS);
		assert_memory_equal(q.dgid, DGID, 16);
		assert_memory_equal(q.sgid, SGID, 16);
		assert_true(q.service_id == 0x0000000001060000ull + 4791);
		assert_int_equal(q.tclass, 0x20);
		assert_int_equal(q.pkey, 0xffff);
		assert_int_equal(q.qos_class, 0x123);
	}
	/* the smallest: a DGID only; and a 63-byte device name */
	char dev[64];

	memset(dev, 'd', 63);
	dev[63] = '\0';
	msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 7);
	msg_resolve_header(&m, dev, 2, LS_RESOLVE_PATH_USE_GMP);
	msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16); /* without the mandatory flag too */
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_QUERY);
	assert_int_equal(q.has, KPATH_HAS_DGID);
	assert_string_equal(q.device, dev);
	assert_int_equal(q.port, 2);
}

static void test_bad_resolve_headers(void **state)
{
	struct kpath_query q;
	struct msg m;
	const struct {
		const char *dev;
		uint8_t port, use;
	} bad[] = {
		{ "", 1, 0 }, { "mlx5_0", 0, 0 }, { "mlx5_0", 255, 0 },
		{ "mlx5_0", 1, LS_RESOLVE_PATH_USE_MAX }, { "mlx5_0", 1, 255 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 42);
		msg_resolve_header(&m, bad[i].dev, bad[i].port, bad[i].use);
		msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
		assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
		/* still refusable: the sequence number is known */
		assert_true(q.refusable);
		assert_int_equal(q.seq, 42);
		assert_int_equal(q.op, KPATH_OP_RESOLVE);
	}
	/* no DGID: nothing to resolve */
	msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 43);
	msg_resolve_header(&m, "mlx5_0", 1, 0);
	msg_attr(&m, LS_NLA_TYPE_SGID, SGID, 16);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	assert_int_equal(q.seq, 43);
}

static void test_bad_attributes(void **state)
{
	static const struct {
		uint16_t type;
		size_t len;
	} sizes[] = {
		{ LS_NLA_TYPE_SERVICE_ID, 8 }, { LS_NLA_TYPE_DGID, 16 }, { LS_NLA_TYPE_SGID, 16 },
		{ LS_NLA_TYPE_TCLASS, 1 },     { LS_NLA_TYPE_PKEY, 2 },  { LS_NLA_TYPE_QOS_CLASS, 2 },
	};
	uint8_t v[32] = { 0 };
	struct kpath_query q;
	struct msg m;

	(void)state;
	/* every attribute one byte short or long */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int d = -1; d <= 1; d += 2) {
			msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
			msg_resolve_header(&m, "mlx5_0", 1, 0);
			if (sizes[i].type != LS_NLA_TYPE_DGID)
				msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
			msg_attr(&m, RDMA_NLA_F_MANDATORY | sizes[i].type, v,
				 (size_t)((int)sizes[i].len + d));
			assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
		}
	}
	/* twice the same attribute */
	msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
	msg_resolve_header(&m, "mlx5_0", 1, 0);
	msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
	msg_attr(&m, LS_NLA_TYPE_DGID, SGID, 16);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	/* an attribute we do not know: ignored, unless mandatory */
	for (int mandatory = 0; mandatory < 2; mandatory++) {
		msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
		msg_resolve_header(&m, "mlx5_0", 1, 0);
		msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
		msg_attr(&m, (mandatory ? RDMA_NLA_F_MANDATORY : 0) | LS_NLA_TYPE_MAX, v, 5);
		assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q),
				 mandatory ? -EBADMSG : KPATH_QUERY);
	}
	/* an IP_RESOLVE attribute in a RESOLVE, as the kernel flags it */
	msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
	msg_resolve_header(&m, "mlx5_0", 1, 0);
	msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
	msg_attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_IPV4, v, 4);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	/* an attribute length past the message, and below its own header */
	for (uint16_t alen = 0; alen < 4; alen++) {
		struct nlattr a = { .nla_len = alen, .nla_type = LS_NLA_TYPE_DGID };

		msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
		msg_resolve_header(&m, "mlx5_0", 1, 0);
		memcpy(m.buf + m.len, &a, sizeof(a));
		m.len += 4;
		assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	}
	msg_begin(&m, RDMA_NL_LS_OP_RESOLVE, NLM_F_REQUEST, 1);
	msg_resolve_header(&m, "mlx5_0", 1, 0);
	msg_attr(&m, LS_NLA_TYPE_DGID, DGID, 16);
	m.buf[m.len - 20] = 200; /* nla_len of the DGID */
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
}

static void test_every_truncation(void **state)
{
	struct kpath_query q;
	struct msg m;
	size_t len = kernel_resolve(&m, 0, 9);
	size_t hdr_end = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rdma_ls_resolve_header));
	size_t dgid_end = 0;
	bool whole[1024] = { false }; /* cut here: every attribute before it complete */

	(void)state;
	/* where each attribute ends (its length, or with its padding) */
	for (size_t off = hdr_end; off < len;) {
		struct nlattr a;

		memcpy(&a, m.buf + off, sizeof(a));
		for (size_t e = off + a.nla_len; e <= off + NLA_ALIGN(a.nla_len); e++)
			whole[e] = true;
		if ((a.nla_type & RDMA_NLA_TYPE_MASK) == LS_NLA_TYPE_DGID)
			dgid_end = off + a.nla_len;
		off += NLA_ALIGN(a.nla_len);
	}
	assert_true(dgid_end > hdr_end);
	for (size_t cut = 0; cut < len; cut++) {
		struct msg t = m;
		struct nlmsghdr h;

		/* a header that claims more than arrived */
		assert_int_equal(kpath_decode(t.buf, cut, &q), -EBADMSG);
		assert_false(q.refusable);
		/* a header that claims the cut: whole attributes up to a DGID make a query */
		memcpy(&h, t.buf, sizeof(h));
		h.nlmsg_len = (uint32_t)cut;
		memcpy(t.buf, &h, sizeof(h));
		assert_int_equal(kpath_decode(t.buf, cut, &q),
				 cut >= dgid_end && whole[cut] ? KPATH_QUERY : -EBADMSG);
	}
}

static void test_not_queries(void **state)
{
	struct kpath_query q;
	struct msg m;
	struct nlmsgerr e = { .error = -EINVAL };

	(void)state;
	/* an acknowledgement of one of our answers (kernels before 2020) */
	msg_begin(&m, 0, 0, 5);
	((struct nlmsghdr *)m.buf)->nlmsg_type = NLMSG_ERROR;
	memcpy(m.buf + m.len, &e, sizeof(e));
	m.len += NLMSG_ALIGN(sizeof(e));
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_IGNORE);
	/* another client (iWARP port mapper), our own kind of message, an answer */
	msg_begin(&m, 0, NLM_F_REQUEST, 5);
	((struct nlmsghdr *)m.buf)->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_IWCM, 1);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_IGNORE);
	msg_begin(&m, RDMA_NL_LS_OP_SET_TIMEOUT, NLM_F_REQUEST, 5);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_IGNORE);
	kernel_resolve(&m, 0, 5);
	((struct nlmsghdr *)m.buf)->nlmsg_flags = 0;
	assert_int_equal(kpath_decode(m.buf, m.len, &q), KPATH_IGNORE);
	msg_begin(&m, RDMA_NL_LS_NUM_OPS, NLM_F_REQUEST, 5);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_IGNORE);
}

static void test_ip_resolve(void **state)
{
	const uint8_t v4[4] = { 198, 18, 0, 2 };
	const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	struct kpath_query q;
	struct msg m;

	(void)state;
	/* ib_nl_ip_send_msg(): ifindex header, one mandatory address */
	msg_begin(&m, RDMA_NL_LS_OP_IP_RESOLVE, NLM_F_REQUEST, 77);
	msg_ip_header(&m, 3);
	msg_attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_IPV4, v4, 4);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_QUERY);
	assert_int_equal(q.op, KPATH_OP_IP_RESOLVE);
	assert_int_equal(q.ifindex, 3);
	assert_int_equal(q.has, KPATH_HAS_IPV4);
	assert_memory_equal(q.ip, v4, 4);
	msg_begin(&m, RDMA_NL_LS_OP_IP_RESOLVE, NLM_F_REQUEST, 78);
	msg_ip_header(&m, 4);
	msg_attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_IPV6, v6, 16);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), KPATH_QUERY);
	assert_int_equal(q.has, KPATH_HAS_IPV6);
	assert_memory_equal(q.ip, v6, 16);
	/* both, none, a GID attribute in an IP query */
	msg_attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_IPV4, v4, 4);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	msg_begin(&m, RDMA_NL_LS_OP_IP_RESOLVE, NLM_F_REQUEST, 79);
	msg_ip_header(&m, 4);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
	assert_int_equal(q.seq, 79);
	msg_attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_DGID, DGID, 16);
	assert_int_equal(kpath_decode(m.buf, msg_end(&m), &q), -EBADMSG);
}

/* The kernel's acceptance of one record, restated per path use from
 * sa_query.c's masks: count the flag combinations of the six IB_PATH_*
 * bits it takes. */
static void test_kernel_accepts_flag_combinations(void **state)
{
	unsigned taken[LS_RESOLVE_PATH_USE_MAX] = { 0 };

	(void)state;
	for (uint32_t f = 0; f < 64; f++) {
		for (uint8_t use = 0; use < LS_RESOLVE_PATH_USE_MAX; use++) {
			bool ok = kpath_kernel_accepts(use, &f, 1);
			bool want;

			switch (use) {
			case LS_RESOLVE_PATH_USE_UNIDIRECTIONAL:
				want = (f & IB_PATH_PRIMARY) && (f & IB_PATH_OUTBOUND);
				break;
			case LS_RESOLVE_PATH_USE_GMP:
				want = (f & IB_PATH_PRIMARY) && (f & IB_PATH_GMP) &&
				       (f & IB_PATH_OUTBOUND) && (f & IB_PATH_INBOUND_REVERSE);
				break;
			default: /* ALL: a primary record, and rdma_cm needs the GMP one */
				want = (f & IB_PATH_PRIMARY) && (f & IB_PATH_GMP);
			}
			assert_int_equal(ok, want);
			taken[use] += ok;
		}
	}
	assert_int_equal(taken[LS_RESOLVE_PATH_USE_UNIDIRECTIONAL], 16);
	assert_int_equal(taken[LS_RESOLVE_PATH_USE_GMP], 4);
	assert_int_equal(taken[LS_RESOLVE_PATH_USE_ALL], 16);

	/* ALL: inbound and outbound without the GMP record fail the route */
	uint32_t io[2] = { IB_PATH_PRIMARY | IB_PATH_INBOUND, IB_PATH_PRIMARY | IB_PATH_OUTBOUND };

	assert_false(kpath_kernel_accepts(LS_RESOLVE_PATH_USE_ALL, io, 2));
	/* no record, alternates only */
	assert_false(kpath_kernel_accepts(LS_RESOLVE_PATH_USE_GMP, io, 0));
	uint32_t alt = IB_PATH_ALTERNATE | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL;

	assert_false(kpath_kernel_accepts(LS_RESOLVE_PATH_USE_GMP, &alt, 1));
	/* what ibacm sends for every path use: one PRIMARY|GMP|BIDIRECTIONAL */
	uint32_t acm = IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL;

	for (uint8_t use = 0; use < LS_RESOLVE_PATH_USE_MAX; use++)
		assert_true(kpath_kernel_accepts(use, &acm, 1));
}

static void test_our_records_for_every_path_use(void **state)
{
	struct ibres_path_record fwd;
	struct kpath_record r[KPATH_RECORDS_MAX];
	uint32_t flags[KPATH_RECORDS_MAX];
	unsigned n;

	(void)state;
	memset(&fwd, 0, sizeof(fwd));
	memcpy(fwd.dgid, DGID, 16);
	memcpy(fwd.sgid, SGID, 16);
	fwd.dlid = htobe16(2);
	fwd.slid = htobe16(1);
	fwd.reversible_numpath = 0x81;
	fwd.mtu = 0x84;
	for (uint8_t use = 0; use < LS_RESOLVE_PATH_USE_MAX; use++) {
		n = kpath_records_for(use, &fwd, r);
		assert_int_equal(n, use == LS_RESOLVE_PATH_USE_ALL ? 3 : 1);
		for (unsigned i = 0; i < n; i++)
			flags[i] = r[i].flags;
		assert_true(kpath_kernel_accepts(use, flags, n));
		/* the GMP path first: older kernels take the first primary record */
		if (use != LS_RESOLVE_PATH_USE_UNIDIRECTIONAL)
			assert_true(r[0].flags & IB_PATH_GMP);
		assert_memory_equal(&r[0].rec, &fwd, sizeof(fwd));
	}
	n = kpath_records_for(LS_RESOLVE_PATH_USE_ALL, &fwd, r);
	assert_int_equal(r[1].flags, IB_PATH_PRIMARY | IB_PATH_OUTBOUND);
	assert_memory_equal(&r[1].rec, &fwd, sizeof(fwd));
	assert_int_equal(r[2].flags, IB_PATH_PRIMARY | IB_PATH_INBOUND);
	assert_memory_equal(r[2].rec.dgid, SGID, 16);
	assert_memory_equal(r[2].rec.sgid, DGID, 16);
	assert_int_equal(be16toh(r[2].rec.dlid), 1);
	assert_int_equal(be16toh(r[2].rec.slid), 2);
	assert_int_equal(r[2].rec.mtu, 0x84);
	assert_int_equal(kpath_records_for(LS_RESOLVE_PATH_USE_MAX, &fwd, r), 0);
}

/* Our answers read back as ib_nl_handle_resolve_resp() and friends do. */
static void test_answers_as_the_kernel_reads_them(void **state)
{
	struct ibres_path_record fwd;
	struct kpath_record r[KPATH_RECORDS_MAX];
	uint8_t buf[KPATH_MSG_MAX];
	struct nlmsghdr h;
	struct nlattr a;
	struct ib_path_rec_data d;
	size_t len, off;
	unsigned n, seen = 0;
	uint32_t ms;

	(void)state;
	memset(&fwd, 0x5a, sizeof(fwd));
	n = kpath_records_for(LS_RESOLVE_PATH_USE_ALL, &fwd, r);
	len = kpath_encode_paths(buf, sizeof(buf), 1234, 99, r, n);
	assert_int_equal(len, NLMSG_HDRLEN + 3 * NLA_ALIGN(NLA_HDRLEN + sizeof(d)));
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.nlmsg_len, len);
	assert_int_equal(h.nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE));
	assert_int_equal(h.nlmsg_flags & (NLM_F_REQUEST | RDMA_NL_LS_F_ERR), 0);
	assert_int_equal(h.nlmsg_seq, 1234);
	assert_int_equal(h.nlmsg_pid, 99);
	for (off = NLMSG_HDRLEN; off < len; off += NLA_ALIGN(a.nla_len)) {
		memcpy(&a, buf + off, sizeof(a));
		/* compared exactly: no flag bits in the type */
		assert_int_equal(a.nla_type, LS_NLA_TYPE_PATH_RECORD);
		assert_int_equal(a.nla_len, NLA_HDRLEN + sizeof(d));
		memcpy(&d, buf + off + NLA_HDRLEN, sizeof(d));
		assert_int_equal(d.flags, r[seen].flags);
		assert_int_equal(d.reserved, 0);
		assert_memory_equal(d.path_rec, &r[seen].rec, 64);
		seen++;
	}
	assert_int_equal(seen, 3);
	/* too small a buffer: nothing, never a partial message */
	assert_int_equal(kpath_encode_paths(buf, len - 1, 1, 1, r, n), 0);
	assert_int_equal(kpath_encode_paths(buf, sizeof(buf), 1, 1, r, 0), 0);

	len = kpath_encode_refusal(buf, sizeof(buf), KPATH_OP_RESOLVE, 55, 99);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(len, NLMSG_HDRLEN);
	assert_int_equal(h.nlmsg_flags, RDMA_NL_LS_F_ERR);
	assert_int_equal(h.nlmsg_seq, 55);
	len = kpath_encode_refusal(buf, sizeof(buf), KPATH_OP_IP_RESOLVE, 56, 99);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_IP_RESOLVE));

	len = kpath_encode_gid(buf, sizeof(buf), 57, 99, DGID);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.nlmsg_flags, 0);
	memcpy(&a, buf + NLMSG_HDRLEN, sizeof(a));
	assert_int_equal(a.nla_type, LS_NLA_TYPE_DGID);
	assert_int_equal(a.nla_len, NLA_HDRLEN + sizeof(struct rdma_nla_ls_gid));
	assert_memory_equal(buf + NLMSG_HDRLEN + NLA_HDRLEN, DGID, 16);

	/* ib_nl_handle_set_timeout(): a request with a u32 TIMEOUT attribute */
	len = kpath_encode_set_timeout(buf, sizeof(buf), 58, 99, 1500);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_SET_TIMEOUT));
	assert_true(h.nlmsg_flags & NLM_F_REQUEST);
	assert_int_equal(h.nlmsg_len, len);
	memcpy(&a, buf + NLMSG_HDRLEN, sizeof(a));
	assert_int_equal(a.nla_type, LS_NLA_TYPE_TIMEOUT);
	assert_int_equal(a.nla_len, NLA_HDRLEN + 4);
	memcpy(&ms, buf + NLMSG_HDRLEN + NLA_HDRLEN, 4);
	assert_int_equal(ms, 1500);
	assert_int_equal(kpath_encode_set_timeout(buf, NLMSG_HDRLEN + 4, 58, 99, 1500), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_every_path_use),
		cmocka_unit_test(test_bad_resolve_headers),
		cmocka_unit_test(test_bad_attributes),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_not_queries),
		cmocka_unit_test(test_ip_resolve),
		cmocka_unit_test(test_kernel_accepts_flag_combinations),
		cmocka_unit_test(test_our_records_for_every_path_use),
		cmocka_unit_test(test_answers_as_the_kernel_reads_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
