/* SPDX-License-Identifier: MIT */
/* Answers every handler builds the same way. */
#ifndef IBRESD_REPLY_H
#define IBRESD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/request.h"

/* Header-only answer to @req with @status into @reply. Always 0. */
int reply_status(const struct request *req, uint8_t *reply, size_t *len, uint8_t status);

#endif
