/* SPDX-License-Identifier: MIT */
/* The ibacm client protocol (v1) codec: framing rules and the parsing of
 * RESOLVE, PERF_QUERY and EP_QUERY requests. Pure functions on buffers. */
#ifndef IBRESD_ACM_H
#define IBRESD_ACM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibres_proto.h"
#include "msg.h"

/* Longest request the daemon accepts. ACM requests are at most 592 bytes;
 * extension requests carry a key and a few flags. */
#define ACM_REQ_MAX 4096

/* The length rule (RESOLVE host order, every other opcode big-endian) is
 * the clients' too: lib/msg.h. */

/* Once a header is in: the message's total length, or -EBADMSG when the
 * length field is below the header size or above ACM_REQ_MAX. */
int msg_frame_length(const struct ibres_hdr *h, size_t *len);

/* Write a header-only error answer to @req into @out (16 bytes). */
size_t msg_error(void *out, const struct ibres_hdr *req, uint8_t status);

struct acm_resolve_req {
	bool is_path;                     /* a PATH lookup (by GID or LID) */
	bool query_sa;                    /* PATH with QUERY_SA: verify against the SA */
	/* address resolution: SOURCE or NULL, and DEST; beside a PATH entry,
	 * either may be there (NULL: not) to say what the path leaves blank */
	const struct ibres_ep_entry *src;
	const struct ibres_ep_entry *dst;
	const struct ibres_ep_entry *path;
	uint32_t dst_flags;
	unsigned n_entries;
};

/* Parse a complete RESOLVE message. 0, or an IBRES_STATUS_* (> 0) to answer with. */
int acm_parse_resolve(const void *msg, size_t len, struct acm_resolve_req *r);

/* The string of a NAME entry (validated by acm_parse_resolve). */
static inline const char *acm_entry_name(const struct ibres_ep_entry *e)
{
	return e->info.name;
}

#endif
