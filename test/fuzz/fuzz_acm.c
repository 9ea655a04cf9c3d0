// SPDX-License-Identifier: MIT
/* Fuzz target: client messages through the framing rules and the RESOLVE
 * parser; parsed entries must lie inside the message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frontend/acm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const void *p, const uint8_t *msg, size_t len)
{
	const uint8_t *b = p;

	if (p && (b < msg || b + IBRES_EP_LEN > msg + len))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t msg[ACM_REQ_MAX];
	struct acm_resolve_req r;
	struct ibres_hdr h;
	size_t len;

	if (size < IBRES_HDR_LEN)
		return 0;
	memcpy(&h, data, sizeof(h));
	if (msg_frame_length(&h, &len) < 0)
		return 0;
	if (len > size)
		len = size;
	memcpy(msg, data, len);
	if (acm_parse_resolve(msg, len, &r) == 0) {
		inside(r.src, msg, len);
		inside(r.dst, msg, len);
		inside(r.path, msg, len);
		if (r.dst && r.dst->type == IBRES_EP_TYPE_NAME &&
		    strnlen(r.dst->info.name, IBRES_ADDR_MAX) == IBRES_ADDR_MAX)
			__builtin_trap();
	}
	return 0;
}
