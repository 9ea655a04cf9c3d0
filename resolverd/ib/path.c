// SPDX-License-Identifier: MIT
#include "ib/path.h"

#include <endian.h>
#include <string.h>

/* Selector 2 ("exactly") in bits 7:6 of MTU, rate and packet life. */
#define PATH_ROCE_HOP_LIMIT 64
#define SEL_EXACTLY (2u << 6)

void path_params_of(const struct cfg_endpoint *ep, struct path_params *pp)
{
	pp->mtu = ep->mtu;
	pp->rate = ep->rate;
	pp->sl = ep->sl;
	pp->packet_life = ep->packet_life;
	pp->pkey = ep->id.pkey;
}

void path_build(struct ibres_path_record *p, const struct cfg_endpoint *src,
		const struct ibres_hostrec *dst, const struct path_params *pp)
{
	const uint8_t *sgid = src->id.gids[0];
	const uint8_t *dgid = dst->gids[0];
	/* Same subnet prefix: the packet stays in the subnet, hop limit 0.
	 * Otherwise it has to cross a router: the largest hop limit. RoCE (no
	 * LIDs at either end): the GRH is an IP header whose TTL is the hop
	 * limit, 64 as in the routes the kernel's rdma_cm builds for RoCE. */
	uint32_t hop_limit = !src->id.lid && !dst->lid ? PATH_ROCE_HOP_LIMIT
			     : memcmp(sgid, dgid, 8)   ? 0xff
							 : 0;

	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, dgid, 16);
	memcpy(p->sgid, sgid, 16);
	p->dlid = htobe16(dst->lid);
	p->slid = htobe16(src->id.lid);
	p->flowlabel_hoplimit = htobe32(hop_limit);
	p->reversible_numpath = 0x80 | 1;
	p->pkey = htobe16(pp->pkey);
	p->qosclass_sl = htobe16(pp->sl & 0xf);
	p->mtu = SEL_EXACTLY | (pp->mtu & 0x3f);
	p->rate = SEL_EXACTLY | (pp->rate & 0x3f);
	p->packetlifetime = SEL_EXACTLY | (pp->packet_life & 0x3f);
}
