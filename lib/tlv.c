// SPDX-License-Identifier: MIT
#include "tlv.h"

#include "ibres_proto.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#define TLV_HDR 4

void tlv_writer_init(struct tlv_writer *w, void *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->overflow = false;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

int tlv_put(struct tlv_writer *w, uint16_t type, const void *value, size_t length)
{
	if (w->overflow || length > UINT16_MAX || w->cap - w->len < TLV_HDR + length) {
		w->overflow = true;
		return -ENOSPC;
	}
	put_be16(w->buf + w->len, type);
	put_be16(w->buf + w->len + 2, (uint16_t)length);
	if (length)
		memcpy(w->buf + w->len + TLV_HDR, value, length);
	w->len += TLV_HDR + length;
	return 0;
}

int tlv_put_str(struct tlv_writer *w, uint16_t type, const char *s)
{
	return tlv_put(w, type, s, strlen(s));
}

int tlv_put_u8(struct tlv_writer *w, uint16_t type, uint8_t v)
{
	return tlv_put(w, type, &v, 1);
}

int tlv_put_u16(struct tlv_writer *w, uint16_t type, uint16_t v)
{
	uint16_t be = htobe16(v);

	return tlv_put(w, type, &be, 2);
}

int tlv_put_u32(struct tlv_writer *w, uint16_t type, uint32_t v)
{
	uint32_t be = htobe32(v);

	return tlv_put(w, type, &be, 4);
}

int tlv_put_u64(struct tlv_writer *w, uint16_t type, uint64_t v)
{
	uint64_t be = htobe64(v);

	return tlv_put(w, type, &be, 8);
}

int tlv_nest_begin(struct tlv_writer *w)
{
	size_t off = w->len;
	int ret = tlv_put(w, IBRES_T_NEST, NULL, 0);

	return ret ? ret : (int)off;
}

void tlv_nest_end(struct tlv_writer *w, int nest_off)
{
	size_t body;

	if (w->overflow || nest_off < 0)
		return;
	body = w->len - (size_t)nest_off - TLV_HDR;
	if (body > UINT16_MAX) {
		w->overflow = true;
		return;
	}
	put_be16(w->buf + nest_off + 2, (uint16_t)body);
}

void tlv_truncate(struct tlv_writer *w, size_t mark)
{
	if (mark <= w->len)
		w->len = mark;
	w->overflow = false;
}

void tlv_reader_init(struct tlv_reader *r, const void *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->off = 0;
}

int tlv_next(struct tlv_reader *r, struct tlv_item *it)
{
	const uint8_t *p;

	if (r->off == r->len)
		return 0;
	if (r->len - r->off < TLV_HDR)
		return -EBADMSG;
	p = r->buf + r->off;
	it->type = (uint16_t)(p[0] << 8 | p[1]);
	it->length = (uint16_t)(p[2] << 8 | p[3]);
	if (r->len - r->off - TLV_HDR < it->length)
		return -EBADMSG;
	it->value = p + TLV_HDR;
	r->off += TLV_HDR + it->length;
	return 1;
}

int tlv_get_u8(const struct tlv_item *it, uint8_t *v)
{
	if (it->length != 1)
		return -EBADMSG;
	*v = it->value[0];
	return 0;
}

int tlv_get_u16(const struct tlv_item *it, uint16_t *v)
{
	uint16_t be;

	if (it->length != 2)
		return -EBADMSG;
	memcpy(&be, it->value, 2);
	*v = be16toh(be);
	return 0;
}

int tlv_get_u32(const struct tlv_item *it, uint32_t *v)
{
	uint32_t be;

	if (it->length != 4)
		return -EBADMSG;
	memcpy(&be, it->value, 4);
	*v = be32toh(be);
	return 0;
}

int tlv_get_u64(const struct tlv_item *it, uint64_t *v)
{
	uint64_t be;

	if (it->length != 8)
		return -EBADMSG;
	memcpy(&be, it->value, 8);
	*v = be64toh(be);
	return 0;
}

int tlv_get_str(const struct tlv_item *it, char *dst, size_t cap)
{
	if (memchr(it->value, '\0', it->length))
		return -EBADMSG;
	if ((size_t)it->length + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(dst, it->value, it->length);
	dst[it->length] = '\0';
	return 0;
}
