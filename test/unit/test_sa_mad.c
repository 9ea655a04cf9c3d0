// SPDX-License-Identifier: MIT
/* resolverd/ib/sa_mad.c: MAD layouts (checked against rdma-core's umad headers),
 * round trips, and every reason to drop a response. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include "ib/sa_mad.h"

static void test_layout_matches_rdma_core(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct umad_sa_packet, comp_mask), 48);
	assert_int_equal(offsetof(struct umad_sa_packet, data), SA_HDR_LEN);
	assert_int_equal(sizeof(struct umad_hdr), MAD_HDR_LEN);
	assert_int_equal(offsetof(struct umad_hdr, tid), 8);
	assert_int_equal(offsetof(struct umad_hdr, attr_id), 16);
	assert_int_equal(sizeof(struct ibres_path_record), SA_PATH_REC_LEN);
	assert_int_equal(UMAD_SA_ATTR_PATH_REC, SA_ATTR_PATH_REC);
	assert_int_equal(UMAD_SA_ATTR_MCMEMBER_REC, SA_ATTR_MCMEMBER_REC);
	assert_int_equal(UMAD_CLASS_SUBN_ADM, MAD_CLASS_SA);
	assert_int_equal(UMAD_CLASS_SUBN_DIRECTED_ROUTE, MAD_CLASS_SMI_DR);
	assert_int_equal(UMAD_SA_CLASS_VERSION, MAD_SA_CLASS_VERSION);
	assert_int_equal(UMAD_SA_METHOD_DELETE, MAD_METHOD_DELETE);
	assert_int_equal(UMAD_SA_METHOD_DELETE_RESP, MAD_METHOD_DELETE_RESP);
	assert_int_equal(UMAD_METHOD_GET_RESP, MAD_METHOD_GET_RESP);
}

static void sample_path(struct ibres_path_record *p)
{
	memset(p, 0, sizeof(*p));
	inet_pton(AF_INET6, "fe80::10:3", p->dgid);
	inet_pton(AF_INET6, "fe80::10:1", p->sgid);
	p->dlid = htobe16(4);
	p->slid = htobe16(3);
	p->reversible_numpath = 0x81;
	p->pkey = htobe16(0xffff);
	p->mtu = 0x84;
	p->rate = 0x83;
	p->packetlifetime = 0x92;
}

static void test_path_get_encode(void **state)
{
	struct ibres_path_record p, out;
	uint8_t mad[MAD_LEN];
	struct umad_sa_packet *sa = (void *)mad;
	struct mad_hdr h;

	(void)state;
	sample_path(&p);
	assert_int_equal(sa_encode_path_get(mad, 0xabcd1234, &p, PR_COMP_DGID | PR_COMP_SGID),
			 MAD_LEN);
	assert_int_equal(sa->mad_hdr.base_version, 1);
	assert_int_equal(sa->mad_hdr.mgmt_class, UMAD_CLASS_SUBN_ADM);
	assert_int_equal(sa->mad_hdr.class_version, 2);
	assert_int_equal(sa->mad_hdr.method, UMAD_METHOD_GET);
	assert_int_equal(be16toh(sa->mad_hdr.attr_id), UMAD_SA_ATTR_PATH_REC);
	assert_int_equal(be64toh(sa->mad_hdr.tid), 0xabcd1234);
	assert_int_equal(be64toh(sa->comp_mask), (1u << 2) | (1u << 3));
	assert_memory_equal(sa->data, &p, 64);

	assert_int_equal(mad_parse_hdr(mad, sizeof(mad), &h), MAD_OK);
	assert_int_equal(sa_tid_low(h.tid | 0x0001000100000000ULL), 0xabcd1234);
	assert_int_equal(sa_decode_path(mad, sizeof(mad), &out), MAD_OK);
	assert_memory_equal(&out, &p, sizeof(p));
	/* OpenSM answers with the header and one record: 120 bytes are enough */
	assert_int_equal(sa_decode_path(mad, SA_HDR_LEN + 64, &out), MAD_OK);
	assert_int_equal(sa_decode_path(mad, SA_HDR_LEN + 63, &out), MAD_ERR_SHORT);
}

static void test_path_comp_mask(void **state)
{
	struct ibres_path_record p;
	uint64_t m;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(sa_path_comp_mask(&p), 0);
	sample_path(&p);
	m = sa_path_comp_mask(&p);
	assert_int_equal(m, PR_COMP_DGID | PR_COMP_SGID | PR_COMP_DLID | PR_COMP_SLID |
				    PR_COMP_REVERSIBLE | PR_COMP_NUMB_PATH | PR_COMP_PKEY |
				    PR_COMP_MTU_SEL | PR_COMP_MTU | PR_COMP_RATE_SEL |
				    PR_COMP_RATE | PR_COMP_PKT_LIFE_SEL | PR_COMP_PKT_LIFE);
	p.qosclass_sl = htobe16(5);
	p.flowlabel_hoplimit = htobe32(0x12300 | 0xff);
	p.tclass = 1;
	p.service_id = htobe64(7);
	p.preference = 1;
	m = sa_path_comp_mask(&p);
	assert_true(m & PR_COMP_SL);
	assert_true(m & PR_COMP_FLOW_LABEL);
	assert_true(m & PR_COMP_HOP_LIMIT);
	assert_true(m & PR_COMP_TCLASS);
	assert_int_equal(m & PR_COMP_SERVICE_ID, PR_COMP_SERVICE_ID);
	assert_true(m & PR_COMP_PREFERENCE);
	assert_false(m & PR_COMP_QOS_CLASS);
}

static void sample_member(struct sa_mcmember *m)
{
	memset(m, 0, sizeof(*m));
	sa_group_mgid(m->mgid, MCAST_SCOPE_SITE, 0x7fff, 4, 3, 0xefff4901);
	inet_pton(AF_INET6, "fe80::10:1", m->port_gid);
	m->qkey = IBRES_QKEY;
	m->mlid = 0xc001;
	m->mtu = MAD_SEL_EXACTLY << 6 | 4;
	m->tclass = 0x12;
	m->pkey = 0xffff;
	m->rate = MAD_SEL_EXACTLY << 6 | 3;
	m->packet_life = 0x92;
	m->sl = 7;
	m->flow_label = 0xabcde;
	m->hop_limit = 3;
	m->scope = MCAST_SCOPE_SITE;
	m->join_state = MCAST_JOIN_FULL;
	m->proxy_join = true;
}

static void test_mcmember_roundtrip(void **state)
{
	struct sa_mcmember m, out;
	uint8_t mad[MAD_LEN];
	struct umad_sa_packet *sa = (void *)mad;
	const uint8_t *r = sa->data;

	(void)state;
	sample_member(&m);
	assert_int_equal(sa_encode_mcmember(mad, MAD_METHOD_SET, 9, &m, sa_join_comp_mask()),
			 MAD_LEN);
	assert_int_equal(sa->mad_hdr.method, UMAD_METHOD_SET);
	assert_int_equal(be16toh(sa->mad_hdr.attr_id), UMAD_SA_ATTR_MCMEMBER_REC);
	/* the bits OpenSM insists on to create a group are all there */
	assert_int_equal(be64toh(sa->comp_mask) & 0x30c7, 0x30c7);
	assert_true(be64toh(sa->comp_mask) & MCR_COMP_JOIN_STATE);
	/* field positions */
	assert_int_equal(r[0], 0xff);
	assert_int_equal(r[1], 0x15);
	assert_int_equal(r[2] << 8 | r[3], IBRES_MGID_SIGNATURE);
	assert_int_equal(r[4] << 8 | r[5], 0xffff);
	assert_int_equal(r[8], 4);
	assert_int_equal(r[9], 3);
	assert_int_equal(r[12], 0xef);
	assert_int_equal(r[15], 0x01);
	assert_int_equal(r[36] << 8 | r[37], 0xc001);
	assert_int_equal(r[38], 0x84);
	assert_int_equal(r[44] >> 4, 7);
	assert_int_equal(r[47], 3);
	assert_int_equal(r[48], 0x51);
	assert_int_equal(r[49], 0x80);

	assert_int_equal(sa_decode_mcmember(mad, sizeof(mad), &out), MAD_OK);
	assert_memory_equal(out.mgid, m.mgid, 16);
	assert_memory_equal(out.port_gid, m.port_gid, 16);
	assert_int_equal(out.qkey, m.qkey);
	assert_int_equal(out.mlid, m.mlid);
	assert_int_equal(out.mtu, m.mtu);
	assert_int_equal(out.tclass, m.tclass);
	assert_int_equal(out.pkey, m.pkey);
	assert_int_equal(out.rate, m.rate);
	assert_int_equal(out.packet_life, m.packet_life);
	assert_int_equal(out.sl, m.sl);
	assert_int_equal(out.flow_label, m.flow_label);
	assert_int_equal(out.hop_limit, m.hop_limit);
	assert_int_equal(out.scope, m.scope);
	assert_int_equal(out.join_state, m.join_state);
	assert_true(out.proxy_join);
	assert_int_equal(sa_decode_mcmember(mad, SA_HDR_LEN + SA_MCMEMBER_REC_LEN - 1, &out),
			 MAD_ERR_SHORT);
	assert_int_equal(sa_leave_comp_mask(),
			 MCR_COMP_MGID | MCR_COMP_PORT_GID | MCR_COMP_JOIN_STATE);
}

/* A response to @req as an SA would build it. */
static void make_response(uint8_t *mad, const uint8_t *req, uint8_t method, uint16_t status)
{
	memcpy(mad, req, MAD_LEN);
	mad[3] = method;
	mad[4] = (uint8_t)(status >> 8);
	mad[5] = (uint8_t)status;
	/* the kernel put its agent id into the upper half of the TID */
	mad[10] = 0x00;
	mad[11] = 0x01;
}

static void test_response_checks(void **state)
{
	struct ibres_path_record p;
	uint8_t req[MAD_LEN], resp[MAD_LEN];
	struct mad_hdr h;

	(void)state;
	sample_path(&p);
	sa_encode_path_get(req, 77, &p, PR_COMP_DGID);

	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	assert_int_equal(mad_parse_hdr(resp, SA_HDR_LEN + 64, &h), MAD_OK);
	assert_int_equal(sa_tid_low(h.tid), 77);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_OK);
	/* the request itself coming back is not an answer */
	assert_int_equal(mad_parse_hdr(req, MAD_LEN, &h), MAD_OK);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_ERR_METHOD);
	/* wrong attribute, class, class version, base version */
	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	resp[17] = 0x38;
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_ERR_ATTR);
	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	resp[1] = 0x04;
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_ERR_CLASS);
	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	resp[2] = 1;
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_ERR_VERSION);
	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	resp[0] = 2;
	assert_int_equal(mad_parse_hdr(resp, MAD_LEN, &h), MAD_ERR_VERSION);
	assert_int_equal(mad_parse_hdr(resp, MAD_HDR_LEN - 1, &h), MAD_ERR_SHORT);
	assert_int_equal(mad_parse_hdr(NULL, 0, &h), MAD_ERR_SHORT);
	/* DELETE is answered with DeleteResp only */
	make_response(resp, req, MAD_METHOD_GET_RESP, 0);
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_DELETE, SA_ATTR_PATH_REC),
			 MAD_ERR_METHOD);
	make_response(resp, req, MAD_METHOD_DELETE_RESP, 0);
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_DELETE, SA_ATTR_PATH_REC),
			 MAD_OK);

	/* statuses */
	make_response(resp, req, MAD_METHOD_GET_RESP, 0x0300);
	mad_parse_hdr(resp, MAD_LEN, &h);
	assert_int_equal(mad_check_response(&h, MAD_CLASS_SA, MAD_METHOD_GET, SA_ATTR_PATH_REC),
			 MAD_ERR_STATUS);
	assert_int_equal(mad_status_errno(&h), -ENODATA);
	h.status = 0x0500;
	assert_int_equal(mad_status_errno(&h), -ENODATA);
	h.status = 0x0100;
	assert_int_equal(mad_status_errno(&h), -EAGAIN);
	h.status = 0x0001;
	assert_int_equal(mad_status_errno(&h), -EAGAIN);
	h.status = 0x0200;
	assert_int_equal(mad_status_errno(&h), -EINVAL);
	h.status = 0x0600;
	assert_int_equal(mad_status_errno(&h), -EINVAL);
	h.status = 0x0700;
	assert_int_equal(mad_status_errno(&h), -EACCES);
	h.status = 0x000c;
	assert_int_equal(mad_status_errno(&h), -EINVAL);
	h.status = 0x0800;
	assert_int_equal(mad_status_errno(&h), -EPROTO);
	h.status = 0;
	assert_int_equal(mad_status_errno(&h), 0);
}

static void test_smp(void **state)
{
	uint8_t mad[MAD_LEN];
	struct smp_port_info pi;
	struct smp_node_info ni;
	struct mad_hdr h;
	uint16_t pkeys[32];
	uint8_t *a = mad + SMP_DATA_OFF;

	(void)state;
	assert_int_equal(smp_encode_get(mad, 5, SMP_ATTR_PORT_INFO, 1), MAD_LEN);
	assert_int_equal(mad[1], 0x81);
	assert_int_equal(mad[2], 1);
	assert_int_equal(mad[3], 1);
	assert_int_equal(mad[6], 0); /* hop pointer */
	assert_int_equal(mad[7], 0); /* hop count: our own port */
	assert_int_equal(mad[23], 1);
	assert_int_equal(mad[32] << 8 | mad[33], 0xffff);
	assert_int_equal(mad[34] << 8 | mad[35], 0xffff);

	/* the request is not a response; the response has the direction bit */
	mad_parse_hdr(mad, MAD_LEN, &h);
	assert_int_equal(smp_check_response(mad, MAD_LEN, &h, SMP_ATTR_PORT_INFO), MAD_ERR_METHOD);
	mad[3] = MAD_METHOD_GET_RESP;
	mad_parse_hdr(mad, MAD_LEN, &h);
	assert_int_equal(smp_check_response(mad, MAD_LEN, &h, SMP_ATTR_PORT_INFO), MAD_ERR_METHOD);
	mad[4] = 0x80;
	mad_parse_hdr(mad, MAD_LEN, &h);
	assert_int_equal(h.status, 0);
	assert_int_equal(smp_check_response(mad, MAD_LEN, &h, SMP_ATTR_PORT_INFO), MAD_OK);
	assert_int_equal(
		smp_check_response(mad, SMP_DATA_OFF + SMP_DATA_LEN - 1, &h, SMP_ATTR_PORT_INFO),
		MAD_ERR_SHORT);
	assert_int_equal(smp_check_response(mad, MAD_LEN, &h, SMP_ATTR_NODE_INFO), MAD_ERR_ATTR);
	mad[5] = 0x1c;
	mad_parse_hdr(mad, MAD_LEN, &h);
	assert_int_equal(smp_check_response(mad, MAD_LEN, &h, SMP_ATTR_PORT_INFO), MAD_ERR_STATUS);

	/* PortInfo as ibsim's HCA port reports it */
	memset(a, 0, SMP_DATA_LEN);
	a[8] = 0xfe;
	a[9] = 0x80;
	a[17] = 3;    /* LID */
	a[19] = 1;    /* SM LID */
	a[22] = 0x40; /* capability mask: extended speeds supported */
	a[28] = 1;
	a[31] = 2;    /* 4x */
	a[32] = 0x74; /* speeds supported, state active */
	a[33] = 0x52; /* LinkUp */
	a[35] = 0x11; /* 2.5 Gb/s */
	a[36] = 0x40; /* NeighborMTU 2048 */
	a[41] = 0x04;
	a[51] = 0x80 | 18;
	assert_int_equal(smp_decode_port_info(mad, MAD_LEN, &pi), MAD_OK);
	assert_int_equal(pi.gid_prefix, 0xfe80000000000000ULL);
	assert_int_equal(pi.lid, 3);
	assert_int_equal(pi.sm_lid, 1);
	assert_int_equal(pi.state, 4);
	assert_int_equal(pi.phys_state, 5);
	assert_int_equal(pi.mtu, 4);
	assert_int_equal(pi.mtu_cap, 4);
	assert_int_equal(pi.rate, 3); /* 10 Gb/s */
	assert_int_equal(pi.subnet_timeout, 18);
	assert_true(pi.client_reregister);
	assert_int_equal(pi.local_port, 1);
	/* 4x EDR through the extended speeds */
	a[62] = 0x20;
	assert_int_equal(smp_decode_port_info(mad, MAD_LEN, &pi), MAD_OK);
	assert_int_equal(pi.rate, 16);
	assert_int_equal(smp_decode_port_info(mad, SMP_DATA_OFF + 63, &pi), MAD_ERR_SHORT);

	memset(a, 0, SMP_DATA_LEN);
	a[2] = 1;
	a[3] = 1;
	a[19] = 0x02;
	a[27] = 0x03;
	a[36] = 1;
	assert_int_equal(smp_decode_node_info(mad, MAD_LEN, &ni), MAD_OK);
	assert_int_equal(ni.node_type, 1);
	assert_int_equal(ni.node_guid, 0x02);
	assert_int_equal(ni.port_guid, 0x03);
	assert_int_equal(ni.local_port, 1);

	memset(a, 0, SMP_DATA_LEN);
	a[0] = 0xff;
	a[1] = 0xff;
	a[2] = 0x80;
	a[3] = 0x01;
	assert_int_equal(smp_decode_pkeys(mad, MAD_LEN, pkeys), MAD_OK);
	assert_int_equal(pkeys[0], 0xffff);
	assert_int_equal(pkeys[1], 0x8001);
	assert_int_equal(pkeys[31], 0);
	assert_int_equal(smp_decode_pkeys(mad, 100, pkeys), MAD_ERR_SHORT);
}

static void test_rates(void **state)
{
	(void)state;
	assert_int_equal(ib_rate_of_link(1, 1, 0), 2);	 /* 1x SDR 2.5 */
	assert_int_equal(ib_rate_of_link(2, 1, 0), 3);	 /* 4x SDR 10 */
	assert_int_equal(ib_rate_of_link(2, 2, 0), 6);	 /* 4x DDR 20 */
	assert_int_equal(ib_rate_of_link(2, 4, 0), 7);	 /* 4x QDR 40 */
	assert_int_equal(ib_rate_of_link(8, 4, 0), 10);	 /* 12x QDR 120 */
	assert_int_equal(ib_rate_of_link(2, 4, 1), 12);	 /* 4x FDR 56 */
	assert_int_equal(ib_rate_of_link(2, 4, 2), 16);	 /* 4x EDR 100 */
	assert_int_equal(ib_rate_of_link(2, 4, 4), 17);	 /* 4x HDR 200 */
	assert_int_equal(ib_rate_of_link(2, 4, 8), 21);	 /* 4x NDR 400 */
	assert_int_equal(ib_rate_of_link(16, 1, 2), 20); /* 2x EDR 50 */
	assert_int_equal(ib_rate_of_link(1, 1, 1), 11);	 /* 1x FDR 14 */
	assert_int_equal(ib_rate_of_link(0, 1, 0), 0);
	assert_int_equal(ib_rate_of_link(2, 3, 0), 0);
	assert_int_equal(ib_rate_of_link(2, 1, 3), 0);
	assert_int_equal(ib_rate_of_link(8, 1, 8), 0); /* 12x NDR: no enum */
}

static void test_mgid(void **state)
{
	uint8_t a[16], b[16];
	char s[64];

	(void)state;
	sa_group_mgid(a, MCAST_SCOPE_SITE, 0x7fff, 4, 3, 0xefff4901);
	inet_ntop(AF_INET6, a, s, sizeof(s));
	assert_string_equal(s, "ff15:4962:ffff:0:403:0:efff:4901");
	/* another group, another MGID */
	sa_group_mgid(b, MCAST_SCOPE_SITE, 0x7fff, 4, 3, 0xefff4902);
	assert_memory_not_equal(a, b, 16);
	sa_group_mgid(b, MCAST_SCOPE_SITE, 0x7fff, 5, 3, 0xefff4901);
	assert_memory_not_equal(a, b, 16);
	sa_group_mgid(b, 0x2, 0x8001, 4, 3, 0);
	inet_ntop(AF_INET6, b, s, sizeof(s));
	assert_string_equal(s, "ff12:4962:8001:0:403::");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_matches_rdma_core),
		cmocka_unit_test(test_path_get_encode),
		cmocka_unit_test(test_path_comp_mask),
		cmocka_unit_test(test_mcmember_roundtrip),
		cmocka_unit_test(test_response_checks),
		cmocka_unit_test(test_smp),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_mgid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
