// SPDX-License-Identifier: MIT
/* resolverd/ib/path.c: every field of a built path record. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>

#include "ib/path.h"

static void fill(struct cfg_endpoint *ep, struct ibres_hostrec *dst, const char *dgid)
{
	memset(ep, 0, sizeof(*ep));
	inet_pton(AF_INET6, "fe80::2:c903:0:1", ep->id.gids[0]);
	ep->id.n_gids = 1;
	ep->id.lid = 1;
	ep->id.pkey = 0x8001;
	ep->mtu = 5;
	ep->rate = 16;
	ep->sl = 3;
	ep->packet_life = 18;
	memset(dst, 0, sizeof(*dst));
	inet_pton(AF_INET6, dgid, dst->gids[0]);
	dst->n_gids = 1;
	dst->lid = 0x1234;
}

static void test_fields(void **state)
{
	struct cfg_endpoint ep;
	struct ibres_hostrec dst;
	struct ibres_path_record p;
	struct path_params pp;

	(void)state;
	fill(&ep, &dst, "fe80::2:c903:0:2");
	path_params_of(&ep, &pp);
	pp.mtu = 4; /* the group's */
	pp.rate = 3;
	path_build(&p, &ep, &dst, &pp);
	assert_memory_equal(p.dgid, dst.gids[0], 16);
	assert_memory_equal(p.sgid, ep.id.gids[0], 16);
	assert_int_equal(be16toh(p.dlid), 0x1234);
	assert_int_equal(be16toh(p.slid), 1);
	assert_int_equal(be32toh(p.flowlabel_hoplimit), 0);
	assert_int_equal(p.reversible_numpath, 0x81);
	assert_int_equal(be16toh(p.pkey), 0x8001);
	assert_int_equal(be16toh(p.qosclass_sl), 3);
	assert_int_equal(p.mtu, 0x80 | 4);
	assert_int_equal(p.rate, 0x80 | 3);
	assert_int_equal(p.packetlifetime, 0x80 | 18);
	assert_int_equal(p.service_id, 0);
	assert_int_equal(p.tclass, 0);
	assert_int_equal(p.preference, 0);
}

static void test_other_subnet_needs_hops(void **state)
{
	struct cfg_endpoint ep;
	struct ibres_hostrec dst;
	struct ibres_path_record p;
	struct path_params pp;

	(void)state;
	fill(&ep, &dst, "fec0::2:c903:0:2");
	path_params_of(&ep, &pp);
	path_build(&p, &ep, &dst, &pp);
	assert_int_equal(be32toh(p.flowlabel_hoplimit) & 0xff, 0xff);
}

/* RoCE: IPv4-mapped GIDs, no LIDs; a GRH (an IP header) with TTL 64. */
static void test_roce_path_is_grh_routed(void **state)
{
	struct cfg_endpoint ep;
	struct ibres_hostrec dst;
	struct ibres_path_record p;
	struct path_params pp;

	(void)state;
	fill(&ep, &dst, "::ffff:198.18.0.2");
	inet_pton(AF_INET6, "::ffff:198.18.0.1", ep.id.gids[0]);
	ep.id.lid = 0;
	dst.lid = 0;
	path_params_of(&ep, &pp);
	path_build(&p, &ep, &dst, &pp);
	assert_int_equal(be32toh(p.flowlabel_hoplimit), 64);
	assert_int_equal(p.dlid, 0);
	assert_int_equal(p.slid, 0);
	assert_memory_equal(p.dgid, dst.gids[0], 16);
	assert_memory_equal(p.sgid, ep.id.gids[0], 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_roce_path_is_grh_routed),
		cmocka_unit_test(test_other_subnet_needs_hops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
