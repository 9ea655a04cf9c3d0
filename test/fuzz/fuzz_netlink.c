// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: rtnetlink notifications (links and addresses) through
 * resolverd/os/netlink.c's parsing and tables, and from there into the
 * endpoints and the host store of a daemon in process (daemon_fake.h).
 *
 * The input is a series of datagrams, each a 2-byte length (big-endian) and
 * that many bytes, fed with netlink_feed() as if the kernel had sent them
 * (the netlink sockets are real: each input starts from this machine's
 * interfaces, read again with netlink_resync(); none is an endpoint's). Endpoint ib0 names its
 * interface, ib1 is found by its port GID and P_Key on an IPoIB interface.
 * After each datagram every endpoint's identity must be within a host
 * record's limits, with no IPv4 or IPv6 address on two endpoints; after the
 * input store_check() must pass. Any violation abort()s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_fake.h"
#include "core/endpoints.h"
#include "core/hoststore.h"
#include "os/netlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_netlink.c:%d: check failed: %s\n", __LINE__, #cond); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static const char conf[] =
	"[daemon]\nlog_level = error\n[resolve]\n"
	"[endpoint ib0]\nname = node1\naddress = 198.18.0.1\ngid = fe80::2:c903:0:1\n"
	"lid = 1\npkey = 0xffff\ninterface = ib0\n"
	"[endpoint ib1]\nname = node1-ib1\ngid = fe80::2:c903:0:2\nlid = 2\npkey = 0x8001\n";

static void check_endpoints(void)
{
	const struct endpoints *e = &fake_d.eps;

	for (unsigned i = 0; i < e->n; i++) {
		const struct ibres_hostrec *a = &e->ep[i].cfg.id;

		check(a->n_v4 <= IBRES_HOST_ADDRS_MAX && a->n_v6 <= IBRES_HOST_ADDRS_MAX);
		check(a->n_names >= 1 && a->n_gids >= 1);
		for (unsigned j = i + 1; j < e->n; j++) {
			const struct ibres_hostrec *b = &e->ep[j].cfg.id;

			for (unsigned x = 0; x < a->n_v4; x++)
				for (unsigned y = 0; y < b->n_v4; y++)
					check(a->v4[x].s_addr != b->v4[y].s_addr);
			for (unsigned x = 0; x < a->n_v6; x++)
				for (unsigned y = 0; y < b->n_v6; y++)
					check(memcmp(&a->v6[x], &b->v6[y], 16));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* one daemon and one pair of netlink sockets for the process (sockets
	 * cost milliseconds); each input starts from the kernel's tables */
	static struct netlink *nl;

	if (!nl) {
		check(fake_daemon_start(conf, NULL) == 0);
		nl = netlink_start(&fake_d.loop, &fake_d.cfg, &fake_d.eps);
		check(nl);
	}
	netlink_resync(nl);
	check_endpoints();
	while (size >= 2) {
		size_t len = (size_t)data[0] << 8 | data[1];

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		netlink_feed(nl, data, len);
		data += len;
		size -= len;
		check_endpoints();
	}
	/* once an input: a broken store stays broken, and checking after every
	 * datagram took most of the time */
	check(store_check(&fake_d.store) == 0);
	return 0;
}
