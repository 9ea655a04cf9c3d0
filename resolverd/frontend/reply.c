// SPDX-License-Identifier: MIT
#include "frontend/reply.h"

int reply_status(const struct request *req, uint8_t *reply, size_t *len, uint8_t status)
{
	*len = msg_error(reply, request_hdr(req), status);
	return 0;
}
