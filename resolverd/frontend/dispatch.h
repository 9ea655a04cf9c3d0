/* SPDX-License-Identifier: MIT */
/* Request dispatch: ibacm opcodes (dispatch.c) and the extension opcodes
 * (ext.c). Entry points for the server are in server.h. */
#ifndef IBRESD_DISPATCH_H
#define IBRESD_DISPATCH_H

#include "daemon.h"
#include "frontend/server.h"

/* Header-only answer with @status. Always 0. */
int reply_status(const struct request *req, uint8_t *reply, size_t *len, uint8_t status);

/* Map a negative errno from the store, the fabric or the SA to an ibacm status. */
uint8_t status_from_errno(int err);

/* @req's waiter, armed to resume the request when its query ends. */
struct lookup_waiter *request_waiter(struct request *req);

/* Leave @req waiting on its query until it ends or the resolve bound
 * passes; the answer then comes from dispatching it again. */
int request_wait(struct ibresd *d, struct request *req);

/* The extension opcodes (ext.c). Same contract as dispatch_request. */
int ext_dispatch(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);

#endif
