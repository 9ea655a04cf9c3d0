// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the static hosts file parser (resolverd/core/hosts_file.c).
 * What parses must be a valid set of hosts: each has a canonical name, a
 * GID and at most the limits of a host record; no GID, name (in any case)
 * or address on two hosts; each record goes through the client protocol's
 * host record codec (lib/hostrec.c) and back unchanged. What does not parse
 * leaves nothing behind and says where, in "fuzz.hosts:LINE: ..." within
 * the error buffer. Any violation abort()s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/hosts_file.h"
#include "hostrec.h"
#include "tlv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_hosts_file.c:%d: check failed: %s\n", __LINE__,      \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_host(const struct ibres_hostrec *h)
{
	static uint8_t buf[8192];
	static struct ibres_hostrec back;
	struct tlv_writer w;

	check(h->n_names >= 1 && h->n_names <= IBRES_HOST_NAMES_MAX);
	check(h->n_gids >= 1 && h->n_gids <= IBRES_HOST_GIDS_MAX);
	check(h->n_v4 <= IBRES_HOST_ADDRS_MAX && h->n_v6 <= IBRES_HOST_ADDRS_MAX);
	for (unsigned i = 0; i < h->n_names; i++) {
		size_t n = strnlen(h->names[i], sizeof(h->names[i]));

		check(n > 0 && n < sizeof(h->names[i]));
	}
	tlv_writer_init(&w, buf, sizeof(buf));
	check(hostrec_encode(&w, h) == 0 && !w.overflow);
	check(hostrec_decode(buf, w.len, &back) == 0);
	check(back.n_names == h->n_names && back.n_gids == h->n_gids && back.n_v4 == h->n_v4 &&
	      back.n_v6 == h->n_v6 && back.lid == h->lid && back.qpn == h->qpn &&
	      back.pkey == h->pkey);
	for (unsigned i = 0; i < h->n_names; i++)
		check(!strcmp(back.names[i], h->names[i]));
	check(!memcmp(back.gids, h->gids, sizeof(h->gids[0]) * h->n_gids));
	check(!memcmp(back.v4, h->v4, sizeof(h->v4[0]) * h->n_v4));
	check(!memcmp(back.v6, h->v6, sizeof(h->v6[0]) * h->n_v6));
}

/* Nothing of one host on another (a few hosts: the quadratic check is cheap). */
static void check_distinct(const struct ibres_hostrec *a, const struct ibres_hostrec *b)
{
	for (unsigned i = 0; i < a->n_gids; i++)
		for (unsigned j = 0; j < b->n_gids; j++)
			check(memcmp(a->gids[i], b->gids[j], 16));
	for (unsigned i = 0; i < a->n_names; i++)
		check(!hostrec_has_name(b, a->names[i]));
	for (unsigned i = 0; i < a->n_v4; i++)
		for (unsigned j = 0; j < b->n_v4; j++)
			check(a->v4[i].s_addr != b->v4[j].s_addr);
	for (unsigned i = 0; i < a->n_v6; i++)
		for (unsigned j = 0; j < b->n_v6; j++)
			check(memcmp(&a->v6[i], &b->v6[j], 16));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct cfg_hosts hosts;

	err[0] = '\0';
	if (hosts_parse("fuzz.hosts", (const char *)data, size, &hosts, err, sizeof(err))) {
		check(!hosts.hosts && !hosts.n_hosts);
		check(strnlen(err, sizeof(err)) < sizeof(err));
		check(!strncmp(err, "fuzz.hosts", 10));
		return 0;
	}
	check(!hosts.n_hosts || hosts.hosts);
	for (unsigned i = 0; i < hosts.n_hosts; i++) {
		check_host(&hosts.hosts[i]);
		for (unsigned j = i + 1; j < hosts.n_hosts && j < i + 64; j++)
			check_distinct(&hosts.hosts[i], &hosts.hosts[j]);
	}
	hosts_free(&hosts);
	return 0;
}
