// SPDX-License-Identifier: MIT
/*
 * DIRECTORY (extension opcode 0x0d): the shared host directory handed to a
 * reader as a descriptor (SCM_RIGHTS), never as a path, as nscd hands out its
 * database. The descriptor is a memfd sealed against shrinking, growing and
 * writing (os/hostdir_pub.h): whoever receives it can map it and read, and
 * nothing more. The answer's body says its size, which the reader checks
 * against the descriptor's.
 */
#include <endian.h>
#include <string.h>

#include "daemon.h"
#include "core/log.h"
#include "frontend/handlers.h"
#include "frontend/passed.h"
#include "frontend/reply.h"
#include "os/hostdir_pub.h"
#include "tlv.h"

int directory_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct ibres_hdr hdr = *request_hdr(req);
	struct tlv_writer w;
	uint64_t size;
	int fd = hostdir_fd(d->dir, &size);

	if (fd < 0)
		return reply_status(req, reply, len, IBRES_STATUS_ENODATA);
	if (!req->may_pass_fd) {
		/* its uid leaves too many unread, or all together do (passed.h):
		 * the reader asks the daemon for what it looks up, and for the
		 * directory again later */
		req->d->stats.directory_unread_refused++;
		log_debug("uid %u: directory descriptors passed and unread at a bound (%u a user, "
			  "half of max_clients in all): passing none now",
			  (unsigned)req->uid, PASSED_UNREAD_PER_UID);
		return reply_status(req, reply, len, IBRES_STATUS_EAGAIN);
	}
	tlv_writer_init(&w, reply + IBRES_HDR_LEN, IBRES_MSG_MAX - IBRES_HDR_LEN);
	tlv_put_u64(&w, IBRES_T_COUNT, size);
	hdr.opcode |= IBRES_OP_ACK;
	hdr.status = IBRES_STATUS_SUCCESS;
	memset(hdr.data, 0, sizeof(hdr.data));
	*len = IBRES_HDR_LEN + w.len;
	hdr.length = htobe16((uint16_t)*len);
	memcpy(reply, &hdr, sizeof(hdr));
	req->pass_fd = fd;
	return 0;
}
