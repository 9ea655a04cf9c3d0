// SPDX-License-Identifier: MIT
/* resolverd/fabric/transport_ib.c without an HCA: address handle attributes from a
 * path record, from a sender and for a group; receive buffers and the GRH;
 * and the transport refusing a device libibverbs does not have. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/config.h"
#include "core/loop.h"
#include "ib/path.h"
#include "fabric/transport_ib.h"
#include "fabric/transport_roce.h"

static void gid(uint8_t g[16], const char *s)
{
	assert_int_equal(inet_pton(AF_INET6, s, g), 1);
}

static void test_ah_from_local_path(void **state)
{
	struct cfg_endpoint src;
	struct ibres_hostrec dst;
	struct ibres_path_record p;
	struct path_params pp = {.mtu = 4, .rate = 16, .sl = 5, .packet_life = 18, .pkey = 0xffff};
	struct ibv_ah_attr a;

	(void)state;
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	gid(src.id.gids[0], "fe80::2:c903:0:101");
	src.id.lid = 3;
	gid(dst.gids[0], "fe80::2:c903:0:201");
	dst.lid = 4;
	path_build(&p, &src, &dst, &pp);
	ib_ah_attr_from_path(&p, 1, &a);
	assert_int_equal(a.dlid, 4);
	assert_int_equal(a.sl, 5);
	assert_int_equal(a.static_rate, 16); /* IBV_RATE_100_GBPS */
	assert_int_equal(a.static_rate, IBV_RATE_100_GBPS);
	assert_int_equal(a.port_num, 1);
	assert_int_equal(a.src_path_bits, 0);
	/* same subnet: hop limit 0, no GRH */
	assert_int_equal(a.is_global, 0);
}

static void test_ah_from_routed_path(void **state)
{
	struct ibres_path_record p;
	struct ibv_ah_attr a;

	(void)state;
	memset(&p, 0, sizeof(p));
	gid(p.dgid, "fec0::1:2:c903:0:201");
	p.dlid = htobe16(0x20);
	p.qosclass_sl = htobe16(0x123 << 4 | 7);
	p.flowlabel_hoplimit = htobe32(0xabcde << 8 | 64);
	p.tclass = 0x22;
	p.rate = 0x80 | 7;
	ib_ah_attr_from_path(&p, 2, &a);
	assert_int_equal(a.dlid, 0x20);
	assert_int_equal(a.sl, 7);
	assert_int_equal(a.static_rate, IBV_RATE_40_GBPS);
	assert_int_equal(a.is_global, 1);
	assert_memory_equal(a.grh.dgid.raw, p.dgid, 16);
	assert_int_equal(a.grh.flow_label, 0xabcde);
	assert_int_equal(a.grh.hop_limit, 64);
	assert_int_equal(a.grh.traffic_class, 0x22);
	assert_int_equal(a.grh.sgid_index, 0);
	assert_int_equal(a.port_num, 2);
}

static void test_ah_back_to_sender(void **state)
{
	struct transport_addr from;
	struct ibv_ah_attr a;
	uint8_t local[16];

	(void)state;
	gid(local, "fe80::2:c903:0:101");
	memset(&from, 0, sizeof(from));
	from.lid = 9;
	from.qpn = 0x48;
	/* no GRH: LID only */
	ib_ah_attr_from_addr(&from, local, 3, 1, &a);
	assert_int_equal(a.dlid, 9);
	assert_int_equal(a.sl, 3);
	assert_int_equal(a.is_global, 0);
	/* a GRH from our subnet: still LID only */
	gid(from.gid, "fe80::2:c903:0:901");
	ib_ah_attr_from_addr(&from, local, 3, 1, &a);
	assert_int_equal(a.is_global, 0);
	/* from another subnet: back through the GID */
	gid(from.gid, "fec0::2:c903:0:901");
	ib_ah_attr_from_addr(&from, local, 3, 1, &a);
	assert_int_equal(a.is_global, 1);
	assert_memory_equal(a.grh.dgid.raw, from.gid, 16);
	assert_int_equal(a.grh.hop_limit, 0xff);
}

static void test_ah_mcast(void **state)
{
	struct ibv_ah_attr a;
	uint8_t mgid[16];

	(void)state;
	gid(mgid, "ff15:4962:ffff:0:403:0:efff:4901");
	ib_ah_attr_mcast(mgid, 0xc001, 2, 1, &a);
	assert_int_equal(a.dlid, 0xc001);
	assert_int_equal(a.is_global, 1);
	assert_memory_equal(a.grh.dgid.raw, mgid, 16);
	assert_int_equal(a.sl, 2);
	assert_int_equal(a.port_num, 1);
}

static void test_parse_recv(void **state)
{
	uint8_t buf[IB_GRH_LEN + 100];
	struct transport_addr from;
	const uint8_t *payload;
	uint8_t sgid[16];
	size_t len;

	(void)state;
	memset(buf, 0, sizeof(buf));
	gid(sgid, "fe80::2:c903:0:301");
	buf[0] = 0x60; /* IP version 6 */
	memcpy(buf + 8, sgid, 16);
	memset(buf + 24, 0xee, 16); /* DGID: not the sender */
	memcpy(buf + IB_GRH_LEN, "IBRS", 4);
	assert_int_equal(
		ib_parse_recv(buf, IB_GRH_LEN + 60, true, 7, 0x1000048, &from, &payload, &len), 0);
	assert_ptr_equal(payload, buf + IB_GRH_LEN);
	assert_int_equal(len, 60);
	assert_memory_equal(payload, "IBRS", 4);
	assert_int_equal(from.lid, 7);
	assert_int_equal(from.qpn, 0x48); /* 24 bits */
	assert_memory_equal(from.gid, sgid, 16);
	/* without a GRH the room is still there, the GID stays zero */
	assert_int_equal(ib_parse_recv(buf, IB_GRH_LEN, false, 7, 0x48, &from, &payload, &len), 0);
	assert_int_equal(len, 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(from.gid[i], 0);
	/* shorter than the GRH room: not a datagram of ours */
	assert_int_equal(ib_parse_recv(buf, IB_GRH_LEN - 1, true, 7, 0x48, &from, &payload, &len),
			 -EBADMSG);
}

static void test_open_without_device(void **state)
{
	struct cfg_endpoint ep;
	struct transport t;
	struct loop l;

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	memset(&ep, 0, sizeof(ep));
	memset(&t, 0, sizeof(t));
	strcpy(ep.label, "ib0");
	strcpy(ep.device, "no-such-hca");
	ep.port_num = 1;
	ep.n_groups = 1;
	t.ops = &transport_ib_ops;
	assert_string_equal(t.ops->name, "ib");
	assert_true(t.ops->open(&t, &l, &ep) < 0);
	assert_null(t.priv);
	/* no device, no groups: refused before touching verbs */
	ep.device[0] = '\0';
	assert_int_equal(t.ops->open(&t, &l, &ep), -EINVAL);
	loop_fini(&l);
}

/* RoCE: groups are the IPv4-mapped (or IPv6) GIDs of their addresses. */
static void test_roce_mgid(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	uint8_t mgid[16], want[16];

	(void)state;
	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "239.255.73.1", &sin->sin_addr);
	assert_int_equal(roce_mgid(&ss, mgid), 0);
	gid(want, "::ffff:239.255.73.1");
	assert_memory_equal(mgid, want, 16);
	memset(&ss, 0, sizeof(ss));
	sin6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "ff15::1:2", &sin6->sin6_addr);
	assert_int_equal(roce_mgid(&ss, mgid), 0);
	gid(want, "ff15::1:2");
	assert_memory_equal(mgid, want, 16);
	ss.ss_family = AF_UNIX;
	assert_int_equal(roce_mgid(&ss, mgid), -EAFNOSUPPORT);
}

/* RoCE: always a GRH from our GID index, never a LID. */
static void test_roce_ah(void **state)
{
	struct ibv_ah_attr a;
	uint8_t d[16];

	(void)state;
	gid(d, "::ffff:198.18.0.2");
	roce_ah_attr(d, 3, 64, 2, 1, &a);
	assert_int_equal(a.is_global, 1);
	assert_int_equal(a.dlid, 0);
	assert_int_equal(a.grh.sgid_index, 3);
	assert_int_equal(a.grh.hop_limit, 64);
	assert_int_equal(a.sl, 2);
	assert_int_equal(a.port_num, 1);
	assert_memory_equal(a.grh.dgid.raw, d, 16);
}

/* RoCE v2 receive: an IPv4 header in bytes 20..39 gives ::ffff:SRC; an IPv6
 * one (or a bad checksum) the GRH's source field. */
static void test_roce_grh_sgid(void **state)
{
	static const uint8_t ip4[20] = {0x45, 0, 0, 0x3c, 0x12, 0x34, 0x40, 0, 0x40, 0x11, 0, 0,
					198,  18, 0, 3,	   198,	 18,   0,    1};
	uint8_t grh[40], sgid[16], want[16];
	uint32_t sum = 0;
	uint16_t csum;

	(void)state;
	memset(grh, 0xaa, sizeof(grh));
	memcpy(grh + 20, ip4, 20);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)grh[20 + i] << 8 | grh[20 + i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	csum = (uint16_t)~sum;
	grh[30] = (uint8_t)(csum >> 8);
	grh[31] = (uint8_t)csum;
	roce_grh_sgid(grh, sgid);
	gid(want, "::ffff:198.18.0.3");
	assert_memory_equal(sgid, want, 16);
	grh[31] ^= 1; /* not an IPv4 header after all: the IPv6 source field */
	roce_grh_sgid(grh, sgid);
	assert_memory_equal(sgid, grh + 8, 16);
}

static void test_recv_depth_fit(void **state)
{
	(void)state;
	/* within the device's limits: as asked */
	assert_int_equal(ib_recv_depth_fit(16384, 32768, 4194303, 64), 16384);
	/* max_qp_wr (an older HCA's 16351, rxe's 16384) */
	assert_int_equal(ib_recv_depth_fit(32768, 16351, 4194303, 64), 16351);
	/* one completion queue for both: max_cqe less the sends */
	assert_int_equal(ib_recv_depth_fit(32768, 1 << 20, 32767, 64), 32767 - 64);
	/* limits not known (0 or negative): as asked */
	assert_int_equal(ib_recv_depth_fit(1024, 0, -1, 64), 1024);
	/* a completion queue smaller than the sends: still one buffer */
	assert_int_equal(ib_recv_depth_fit(1024, 1024, 32, 64), 1);
	assert_int_equal(ib_recv_depth_fit(0, 1024, 4096, 64), 1);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_read_counter(void **state)
{
	char path[] = "/tmp/test_transport_ib.XXXXXX";
	uint64_t v = 7;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_file(path, "18446744073709551615\n");
	assert_int_equal(ib_read_counter(path, &v), 0);
	assert_true(v == UINT64_MAX);
	write_file(path, "42");
	assert_int_equal(ib_read_counter(path, &v), 0);
	assert_int_equal(v, 42);
	write_file(path, "");
	assert_int_equal(ib_read_counter(path, &v), -EBADMSG);
	write_file(path, "-1\n");
	assert_int_equal(ib_read_counter(path, &v), -EBADMSG);
	write_file(path, "12 apples\n");
	assert_int_equal(ib_read_counter(path, &v), -EBADMSG);
	write_file(path, "99999999999999999999999\n");
	assert_int_equal(ib_read_counter(path, &v), -EBADMSG);
	unlink(path);
	assert_int_equal(ib_read_counter(path, &v), -ENOENT);
}

static void test_counter_advance(void **state)
{
	uint64_t last = 100, total = 0;

	(void)state;
	ib_counter_advance(&last, &total, 100);
	assert_int_equal(total, 0);
	ib_counter_advance(&last, &total, 130);
	assert_int_equal(total, 30);
	assert_int_equal(last, 130);
	/* reset under us: what it holds now is new */
	ib_counter_advance(&last, &total, 5);
	assert_int_equal(total, 35);
	ib_counter_advance(&last, &total, 9);
	assert_int_equal(total, 39);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ah_from_local_path),
		cmocka_unit_test(test_ah_from_routed_path),
		cmocka_unit_test(test_ah_back_to_sender),
		cmocka_unit_test(test_ah_mcast),
		cmocka_unit_test(test_parse_recv),
		cmocka_unit_test(test_roce_mgid),
		cmocka_unit_test(test_roce_ah),
		cmocka_unit_test(test_roce_grh_sgid),
		cmocka_unit_test(test_open_without_device),
		cmocka_unit_test(test_recv_depth_fit),
		cmocka_unit_test(test_read_counter),
		cmocka_unit_test(test_counter_advance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
