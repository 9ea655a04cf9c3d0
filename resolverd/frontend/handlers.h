/* SPDX-License-Identifier: MIT */
/* The opcode handlers, for the table in opcodes.c (contract: request.h).
 * ibacm's opcodes are in acm_ops.c, the extension opcodes in ext.c. */
#ifndef IBRESD_HANDLERS_H
#define IBRESD_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

struct ibresd;
struct request;

int resolve_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int resolve_finish(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int perf_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int ep_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);

int host_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int host_finish(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int cache_list(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int cache_flush(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int stats_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int endpoints_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);
int directory_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len);

#endif
