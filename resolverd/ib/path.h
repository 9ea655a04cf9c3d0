/* SPDX-License-Identifier: MIT */
/* Path records built from what both ends and their multicast group agree on
 * (route protocol "mcast"), without asking the SA. doc/fabric-protocol.md
 * derives every field. */
#ifndef IBRESD_PATH_H
#define IBRESD_PATH_H

#include "core/config.h"
#include "hostrec.h"
#include "ibres_proto.h"

/* The parameters a path inherits: the chosen group's, capped by the source
 * endpoint's own. */
struct path_params {
	uint8_t mtu;  /* IB MTU enum */
	uint8_t rate; /* IB rate enum */
	uint8_t sl;
	uint8_t packet_life;
	uint16_t pkey;
};

/* The endpoint's own parameters (its loopback path, or a peer on its group). */
void path_params_of(const struct cfg_endpoint *ep, struct path_params *pp);

/* Build the record from @src's GID/LID to @dst's gids[0]/lid. Without a LID
 * at either end (RoCE) the path is GRH-routed with hop limit 64. */
void path_build(struct ibres_path_record *p, const struct cfg_endpoint *src,
		const struct ibres_hostrec *dst, const struct path_params *pp);

#endif
