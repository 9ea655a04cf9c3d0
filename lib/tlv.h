/* SPDX-License-Identifier: MIT */
/* TLV items of the extension protocol (include/ibres_proto.h): a bounded
 * writer and a bounds-checked reader. Shared by the daemon and clients. */
#ifndef IBRES_TLV_H
#define IBRES_TLV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tlv_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool overflow; /* set once an item did not fit; later puts are ignored */
};

struct tlv_reader {
	const uint8_t *buf;
	size_t len;
	size_t off;
};

struct tlv_item {
	uint16_t type;
	uint16_t length;
	const uint8_t *value;
};

void tlv_writer_init(struct tlv_writer *w, void *buf, size_t cap);
/* Each put returns 0, or -ENOSPC (and sets w->overflow) when the item does not fit. */
int tlv_put(struct tlv_writer *w, uint16_t type, const void *value, size_t length);
int tlv_put_str(struct tlv_writer *w, uint16_t type, const char *s);
int tlv_put_u8(struct tlv_writer *w, uint16_t type, uint8_t v);
int tlv_put_u16(struct tlv_writer *w, uint16_t type, uint16_t v);
int tlv_put_u32(struct tlv_writer *w, uint16_t type, uint32_t v);
int tlv_put_u64(struct tlv_writer *w, uint16_t type, uint64_t v);
/* Open a NEST item; returns its offset for tlv_nest_end, or -ENOSPC. */
int tlv_nest_begin(struct tlv_writer *w);
void tlv_nest_end(struct tlv_writer *w, int nest_off);
/* Undo everything written since offset @mark (used to drop a partial record). */
void tlv_truncate(struct tlv_writer *w, size_t mark);

void tlv_reader_init(struct tlv_reader *r, const void *buf, size_t len);
/* 1 and the next item, 0 at a clean end, -EBADMSG when an item overruns. */
int tlv_next(struct tlv_reader *r, struct tlv_item *it);
/* Typed getters: -EBADMSG unless the length is exactly right. */
int tlv_get_u8(const struct tlv_item *it, uint8_t *v);
int tlv_get_u16(const struct tlv_item *it, uint16_t *v);
int tlv_get_u32(const struct tlv_item *it, uint32_t *v);
int tlv_get_u64(const struct tlv_item *it, uint64_t *v);
/* Copy a string item into dst (NUL-terminated); -ENAMETOOLONG if it does not
 * fit, -EBADMSG if it holds a NUL byte. */
int tlv_get_str(const struct tlv_item *it, char *dst, size_t cap);

#endif
