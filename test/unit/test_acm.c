// SPDX-License-Identifier: MIT
/* resolverd/frontend/acm.c: framing and RESOLVE parsing; our wire structs against
 * rdma-core's own headers, field by field. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <endian.h>
#include <infiniband/acm.h>
#include <infiniband/sa.h>

#include "frontend/acm.h"

#define SAME_FIELD(ours, theirs, f1, f2)                                                           \
	do {                                                                                       \
		assert_int_equal(offsetof(ours, f1), offsetof(theirs, f2));                        \
		assert_int_equal(sizeof(((ours *)0)->f1), sizeof(((theirs *)0)->f2));              \
	} while (0)

/* rdma-core defines it as (1 << 31), an int overflow if evaluated at run time (UBSan says
 * so); a file-scope initializer is folded by the compiler. */
static const uint32_t acm_flags_query_sa = ACM_FLAGS_QUERY_SA;

static void test_layout_matches_rdma_core(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ibres_hdr), sizeof(struct acm_hdr));
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, version, version);
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, opcode, opcode);
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, status, status);
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, data, data);
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, length, length);
	SAME_FIELD(struct ibres_hdr, struct acm_hdr, tid, tid);
	assert_int_equal(sizeof(struct ibres_ep_entry), sizeof(struct acm_ep_addr_data));
	assert_int_equal(sizeof(struct ibres_ep_entry), sizeof(struct ibv_path_data));
	SAME_FIELD(struct ibres_ep_entry, struct acm_ep_addr_data, flags, flags);
	SAME_FIELD(struct ibres_ep_entry, struct acm_ep_addr_data, type, type);
	SAME_FIELD(struct ibres_ep_entry, struct acm_ep_addr_data, info, info);
	SAME_FIELD(struct ibres_ep_entry, struct ibv_path_data, info.path, path);
	assert_int_equal(sizeof(struct ibres_path_record), sizeof(struct ibv_path_record));
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, service_id, service_id);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, dgid, dgid);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, sgid, sgid);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, dlid, dlid);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, slid, slid);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, flowlabel_hoplimit,
		   flowlabel_hoplimit);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, reversible_numpath,
		   reversible_numpath);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, pkey, pkey);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, qosclass_sl, qosclass_sl);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, mtu, mtu);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, rate, rate);
	SAME_FIELD(struct ibres_path_record, struct ibv_path_record, packetlifetime,
		   packetlifetime);
	assert_int_equal(sizeof(struct ibres_ep_config), offsetof(struct acm_ep_config_data, addrs));
	SAME_FIELD(struct ibres_ep_config, struct acm_ep_config_data, pkey, pkey);
	SAME_FIELD(struct ibres_ep_config, struct acm_ep_config_data, addr_cnt, addr_cnt);
	SAME_FIELD(struct ibres_ep_config, struct acm_ep_config_data, prov_name, prov_name);
	assert_int_equal(IBRES_ACM_MSG_MAX, sizeof(struct acm_msg));
	assert_int_equal(IBRES_FLAG_QUERY_SA, acm_flags_query_sa);
	assert_int_equal(IBRES_FLAG_NODELAY, ACM_FLAGS_NODELAY);
	assert_int_equal(IBRES_PATH_FLAGS_ACM, IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
						       IBV_PATH_FLAG_OUTBOUND |
						       IBV_PATH_FLAG_INBOUND_REVERSE);
}

static void test_length_byte_order(void **state)
{
	struct ibres_hdr h = { .version = 1, .opcode = IBRES_OP_RESOLVE };
	size_t len;

	(void)state;
	ibres_msg_set_length(&h, 88);
	assert_int_equal(h.length, 88); /* host order */
	assert_int_equal(ibres_msg_get_length(&h), 88);
	assert_int_equal(msg_frame_length(&h, &len), 0);
	assert_int_equal(len, 88);

	h.opcode = IBRES_OP_PERF_QUERY;
	ibres_msg_set_length(&h, 72);
	assert_int_equal(h.length, htobe16(72));
	assert_int_equal(ibres_msg_get_length(&h), 72);

	h.opcode = IBRES_OP_HOST;
	ibres_msg_set_length(&h, 300);
	assert_int_equal(h.length, htobe16(300));
}

static void test_frame_bounds(void **state)
{
	struct ibres_hdr h = { .version = 1, .opcode = IBRES_OP_RESOLVE };
	size_t len;

	(void)state;
	for (unsigned l = 0; l < IBRES_HDR_LEN; l++) {
		h.length = (uint16_t)l;
		assert_int_equal(msg_frame_length(&h, &len), -EBADMSG);
	}
	h.length = IBRES_HDR_LEN;
	assert_int_equal(msg_frame_length(&h, &len), 0);
	h.length = ACM_REQ_MAX;
	assert_int_equal(msg_frame_length(&h, &len), 0);
	h.length = ACM_REQ_MAX + 1;
	assert_int_equal(msg_frame_length(&h, &len), -EBADMSG);
	h.length = 0xffff;
	assert_int_equal(msg_frame_length(&h, &len), -EBADMSG);
}

static void test_error_reply(void **state)
{
	struct ibres_hdr req = { .version = 1, .opcode = IBRES_OP_PERF_QUERY, .tid = 42,
				 .data = { 1, 2, 3 } };
	uint8_t out[16];
	struct ibres_hdr *h = (void *)out;

	(void)state;
	assert_int_equal(msg_error(out, &req, IBRES_STATUS_ESRCADDR), 16);
	assert_int_equal(h->opcode, IBRES_OP_PERF_QUERY | IBRES_OP_ACK);
	assert_int_equal(h->status, IBRES_STATUS_ESRCADDR);
	assert_int_equal(be16toh(h->length), 16);
	assert_int_equal(h->tid, 42);
	assert_int_equal(h->data[0] | h->data[1] | h->data[2], 0);
}

struct msgbuf {
	struct ibres_hdr hdr;
	struct ibres_ep_entry e[10];
} __attribute__((packed));

static size_t build(struct msgbuf *m, unsigned n)
{
	m->hdr.version = 1;
	m->hdr.opcode = IBRES_OP_RESOLVE;
	m->hdr.length = (uint16_t)(IBRES_HDR_LEN + n * IBRES_EP_LEN);
	return m->hdr.length;
}

static void set_name(struct ibres_ep_entry *e, uint32_t flags, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->flags = flags;
	e->type = IBRES_EP_TYPE_NAME;
	strcpy(e->info.name, name);
}

static void test_resolve_parse(void **state)
{
	struct msgbuf m;
	struct acm_resolve_req r;
	size_t len;

	(void)state;
	memset(&m, 0, sizeof(m));
	set_name(&m.e[0], IBRES_EP_FLAG_SOURCE, "a");
	set_name(&m.e[1], IBRES_EP_FLAG_DEST | IBRES_FLAG_NODELAY, "b");
	len = build(&m, 2);
	assert_int_equal(acm_parse_resolve(&m, len, &r), 0);
	assert_false(r.is_path);
	assert_ptr_equal(r.src, &m.e[0]);
	assert_ptr_equal(r.dst, &m.e[1]);
	assert_true(r.dst_flags & IBRES_FLAG_NODELAY);

	/* dest only */
	set_name(&m.e[0], IBRES_EP_FLAG_DEST, "b");
	len = build(&m, 1);
	assert_int_equal(acm_parse_resolve(&m, len, &r), 0);
	assert_null(r.src);

	/* IP entries need no terminator */
	m.e[0].type = IBRES_EP_TYPE_IP;
	memset(m.e[0].info.addr, 0xff, 64);
	assert_int_equal(acm_parse_resolve(&m, len, &r), 0);
	m.e[0].type = IBRES_EP_TYPE_IP6;
	assert_int_equal(acm_parse_resolve(&m, len, &r), 0);
}

static void test_resolve_errors(void **state)
{
	struct msgbuf m;
	struct acm_resolve_req r;
	size_t len;

	(void)state;
	memset(&m, 0, sizeof(m));
	len = build(&m, 0);
	assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EINVAL);
	assert_int_equal(acm_parse_resolve(&m, IBRES_HDR_LEN + 40, &r), IBRES_STATUS_EINVAL);
	for (unsigned i = 0; i < 9; i++)
		set_name(&m.e[i], IBRES_EP_FLAG_DEST, "x");
	assert_int_equal(acm_parse_resolve(&m, build(&m, 9), &r), IBRES_STATUS_EINVAL);
	assert_int_equal(acm_parse_resolve(&m, build(&m, 8), &r), IBRES_STATUS_EDESTADDR);

	set_name(&m.e[0], IBRES_EP_FLAG_SOURCE, "a");
	set_name(&m.e[1], IBRES_EP_FLAG_SOURCE, "b");
	set_name(&m.e[2], IBRES_EP_FLAG_DEST, "c");
	assert_int_equal(acm_parse_resolve(&m, build(&m, 3), &r), IBRES_STATUS_ESRCADDR);

	len = build(&m, 1);
	set_name(&m.e[0], IBRES_EP_FLAG_SOURCE, "a");
	assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EDESTADDR);
	set_name(&m.e[0], 0, "a");
	assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EINVAL);

	/* types: 0, GID and LID (internal), anything unknown */
	static const uint16_t bad[] = { 0, 4, 5, 6, 0x11, 0xffff };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_name(&m.e[0], IBRES_EP_FLAG_DEST, "a");
		m.e[0].type = bad[i];
		assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EDESTTYPE);
		m.e[0].flags = IBRES_EP_FLAG_SOURCE;
		set_name(&m.e[1], IBRES_EP_FLAG_DEST, "b");
		assert_int_equal(acm_parse_resolve(&m, build(&m, 2), &r), IBRES_STATUS_ESRCTYPE);
		len = build(&m, 1);
	}
	/* unterminated and empty names */
	set_name(&m.e[0], IBRES_EP_FLAG_DEST, "");
	assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EINVAL);
	memset(m.e[0].info.name, 'A', 64);
	assert_int_equal(acm_parse_resolve(&m, len, &r), IBRES_STATUS_EINVAL);
}

static void test_resolve_path(void **state)
{
	struct msgbuf m;
	struct acm_resolve_req r;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.e[0].type = IBRES_EP_TYPE_PATH;
	assert_int_equal(acm_parse_resolve(&m, build(&m, 1), &r), 0);
	assert_true(r.is_path);
	assert_false(r.query_sa);
	m.e[0].flags = IBRES_FLAG_QUERY_SA;
	assert_int_equal(acm_parse_resolve(&m, build(&m, 1), &r), 0);
	assert_true(r.query_sa);
	/* librdmacm: an IP SOURCE entry, then the PATH entry */
	memset(&m, 0, sizeof(m));
	m.e[0].flags = IBRES_EP_FLAG_SOURCE;
	m.e[0].type = IBRES_EP_TYPE_IP;
	m.e[1].type = IBRES_EP_TYPE_PATH;
	assert_int_equal(acm_parse_resolve(&m, build(&m, 2), &r), 0);
	assert_true(r.is_path);
	assert_ptr_equal(r.path, &m.e[1]);
	/* ... which says the path's source: kept, as a destination is */
	assert_ptr_equal(r.src, &m.e[0]);
	assert_null(r.dst);
	m.e[2].flags = IBRES_EP_FLAG_DEST;
	m.e[2].type = IBRES_EP_TYPE_IP6;
	assert_int_equal(acm_parse_resolve(&m, build(&m, 3), &r), 0);
	assert_ptr_equal(r.src, &m.e[0]);
	assert_ptr_equal(r.dst, &m.e[2]);
	/* beside a path too, an address entry must be one */
	set_name(&m.e[2], IBRES_EP_FLAG_DEST, "");
	assert_int_equal(acm_parse_resolve(&m, build(&m, 3), &r), IBRES_STATUS_EINVAL);
	m.e[2].type = IBRES_EP_TYPE_PATH; /* a second PATH entry: the first counts */
	assert_int_equal(acm_parse_resolve(&m, build(&m, 3), &r), 0);
	assert_ptr_equal(r.path, &m.e[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_matches_rdma_core),
		cmocka_unit_test(test_length_byte_order),
		cmocka_unit_test(test_frame_bounds),
		cmocka_unit_test(test_error_reply),
		cmocka_unit_test(test_resolve_parse),
		cmocka_unit_test(test_resolve_errors),
		cmocka_unit_test(test_resolve_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
