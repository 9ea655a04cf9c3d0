/* SPDX-License-Identifier: MIT */
/*
 * Rules of the client protocol that the daemon and its clients (libibres,
 * libnss_ib, ibresctl) must apply alike: where a message's length lives and
 * how a status maps to an errno and back. Internal; nothing is exported.
 */
#ifndef IBRES_MSG_H
#define IBRES_MSG_H

#include <stdint.h>

#include "ibres_proto.h"

/* The length field of @hdr: ibacm keeps it in host order for RESOLVE and in
 * network order for every other opcode; so do we, byte for byte. */
uint16_t ibres_msg_get_length(const struct ibres_hdr *hdr);
void ibres_msg_set_length(struct ibres_hdr *hdr, uint16_t len);

/* An answer's status as a negative errno (0 for success, -EPROTO for a
 * status this side does not know). */
int ibres_status_to_errno(uint8_t status);
/* A negative errno from the daemon's work as the status a client sees
 * (-EINVAL and anything unknown: IBRES_STATUS_EINVAL). */
uint8_t ibres_errno_to_status(int err);

#endif
