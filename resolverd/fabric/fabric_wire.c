// SPDX-License-Identifier: MIT
#include "fabric/fabric_wire.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "tlv.h"

static void put_be16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static uint16_t get_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static int hmac(const uint8_t *key, size_t key_len, const uint8_t *data, size_t len,
		uint8_t out[FW_HMAC_LEN])
{
	unsigned int out_len = FW_HMAC_LEN;

	if (!HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &out_len) ||
	    out_len != FW_HMAC_LEN)
		return -EIO;
	return 0;
}

static int put_key(struct tlv_writer *w, const struct host_key *k)
{
	char name[HOST_KEY_MAX + 1];

	switch (k->type) {
	case IBRES_KEY_NAME:
		memcpy(name, k->data, k->len);
		name[k->len] = '\0';
		return tlv_put_str(w, IBRES_T_NAME, name);
	case IBRES_KEY_IPV4:
		return tlv_put(w, IBRES_T_IPV4, k->data, 4);
	case IBRES_KEY_IPV6:
		return tlv_put(w, IBRES_T_IPV6, k->data, 16);
	case IBRES_KEY_GID:
		return tlv_put(w, IBRES_T_GID, k->data, 16);
	}
	return -EINVAL;
}

size_t fw_where_len(const struct fw_where *w)
{
	switch (w->kind) {
	case FW_WHERE_IPV4:
		return 1 + 4;
	case FW_WHERE_IPV6:
		return 1 + 16;
	case FW_WHERE_IB:
		return 1 + 22;
	default:
		return 0;
	}
}

/* @w's kind and address at @d (fw_where_len(@w) bytes). */
static void where_put(const struct fw_where *w, uint8_t *d)
{
	d[0] = w->kind;
	if (w->kind == FW_WHERE_IPV4)
		memcpy(d + 1, w->addr, 4);
	else if (w->kind == FW_WHERE_IPV6)
		memcpy(d + 1, w->addr, 16);
	else {
		put_be16(d + 1, w->lid);
		put_be32(d + 3, w->qpn);
		memcpy(d + 7, w->addr, 16);
	}
}

/* The kind and address at the start of a FW_T_HINT_AT item's value:
 * their length, or 0 when malformed (an unknown kind, too short). */
static size_t where_get(const uint8_t *d, size_t len, struct fw_where *w)
{
	memset(w, 0, sizeof(*w));
	if (!len)
		return 0;
	w->kind = d[0];
	if (fw_where_len(w) == 0 || fw_where_len(w) > len)
		return 0;
	if (w->kind == FW_WHERE_IPV4)
		memcpy(w->addr, d + 1, 4);
	else if (w->kind == FW_WHERE_IPV6)
		memcpy(w->addr, d + 1, 16);
	else {
		w->lid = get_be16(d + 1);
		w->qpn = get_be32(d + 3);
		memcpy(w->addr, d + 7, 16);
	}
	return fw_where_len(w);
}

int fw_encode(const struct fw_msg *m, const uint8_t *key, size_t key_len, uint8_t *buf,
	      size_t cap)
{
	size_t trailer = key ? FW_HMAC_LEN : 0;
	uint16_t flags = m->flags & (uint16_t)~FW_FLAG_HMAC;
	struct tlv_writer w;
	uint64_t tid = htobe64(m->tid);
	size_t len;

	if (cap < FW_HDR_LEN + trailer)
		return -ENOSPC;
	if (cap > FW_MAX_LEN)
		cap = FW_MAX_LEN;
	tlv_writer_init(&w, buf + FW_HDR_LEN, cap - FW_HDR_LEN - trailer);
	if (hostrec_encode(&w, &m->sender) < 0)
		return -ENOSPC;
	for (unsigned i = 0; i < m->n_groups && i < FW_MAX_GROUPS; i++)
		tlv_put(&w, FW_T_GROUP, &m->groups[i], 2);
	if (m->has_target) {
		int nest = tlv_nest_begin(&w);

		if (nest >= 0) {
			/* the nest header was written as type NEST; retag it */
			put_be16(w.buf + nest, FW_T_TARGET);
			if (put_key(&w, &m->target) < 0)
				return -EINVAL;
			tlv_nest_end(&w, nest);
		}
	}
	if (m->has_chosen)
		tlv_put(&w, FW_T_CHOSEN, &m->chosen, 2);
	if (m->has_stamp)
		tlv_put_u64(&w, FW_T_STAMP, m->stamp);
	if (m->n_rails) {
		if (m->n_rails > HOST_RAILS_MAX)
			return -EINVAL;
		tlv_put(&w, FW_T_RAILS, m->rails, (size_t)m->n_rails * 16);
	}
	if (m->has_range) {
		uint8_t d[FW_RANGE_LEN] = {0};

		put_be64(d, m->range.lo);
		put_be64(d + 8, m->range.hi);
		d[16] = m->range.parts;
		d[17] = m->range.flags;
		tlv_put(&w, FW_T_RANGE, d, sizeof(d));
	}
	if (m->n_sums) {
		uint8_t d[FW_PARTS_MAX * FW_SUM_LEN];

		if (m->n_sums > FW_PARTS_MAX)
			return -EINVAL;
		for (unsigned i = 0; i < m->n_sums; i++) {
			put_be32(d + i * FW_SUM_LEN, m->sums[i].hosts);
			put_be64(d + i * FW_SUM_LEN + 4, m->sums[i].sum);
		}
		tlv_put(&w, FW_T_SUMS, d, (size_t)m->n_sums * FW_SUM_LEN);
	}
	for (size_t off = 0, i = 0; i < m->n_hints && off < m->hints_len; i++) {
		size_t n = strnlen(m->hints + off, m->hints_len - off);
		const struct fw_where *at = i < FW_WHERE_MAX ? &m->where[i] : NULL;
		uint8_t d[1 + 22 + IBRES_NAME_MAX];
		size_t wl = at ? fw_where_len(at) : 0;

		if (wl && n <= IBRES_NAME_MAX) {
			where_put(at, d);
			memcpy(d + wl, m->hints + off, n);
			tlv_put(&w, FW_T_HINT_AT, d, wl + n);
		} else {
			tlv_put(&w, FW_T_HINT, m->hints + off, n);
		}
		off += n + 1;
	}
	for (size_t off = 0, i = 0; i < m->n_gone && off < m->gone_len; i++) {
		size_t n = strnlen(m->gone + off, m->gone_len - off);

		tlv_put(&w, FW_T_GONE, m->gone + off, n);
		off += n + 1;
	}
	if (m->has_up) {
		uint8_t d[FW_UP_LEN];

		put_be32(d, m->up_ms);
		tlv_put(&w, FW_T_UP, d, sizeof(d));
	}
	if (m->has_digest) {
		uint8_t d[FW_DIGEST_LEN] = {0};

		put_be32(d, m->digest.hosts);
		d[4] = m->digest.flags;
		put_be64(d + 8, m->digest.sum);
		put_be32(d + 16, m->digest.seq);
		tlv_put(&w, FW_T_DIGEST, d, sizeof(d));
	}
	if (w.overflow)
		return -ENOSPC;

	len = FW_HDR_LEN + w.len + trailer;
	if (key)
		flags |= FW_FLAG_HMAC;
	put_be32(buf, FW_MAGIC);
	buf[4] = FW_VERSION;
	buf[5] = m->type;
	put_be16(buf + 6, flags);
	memcpy(buf + 8, &tid, 8);
	put_be16(buf + 16, (uint16_t)len);
	memset(buf + 18, 0, 6);
	if (key && hmac(key, key_len, buf, len - FW_HMAC_LEN, buf + len - FW_HMAC_LEN) < 0)
		return -EIO;
	return (int)len;
}

int fw_hint_add_at(struct fw_msg *m, const char *name, const struct fw_where *w)
{
	unsigned i = m->n_hints;
	int ret;

	if (w && w->kind != FW_WHERE_NONE && (i >= FW_WHERE_MAX || !fw_where_len(w)))
		return -ENOSPC;
	ret = fw_hint_add(m, name);
	if (ret == 0 && i < FW_WHERE_MAX) {
		if (w)
			m->where[i] = *w;
		else
			memset(&m->where[i], 0, sizeof(m->where[i]));
	}
	return ret;
}

/* Append @name to a packed list of NUL-terminated names (@cap bytes, at
 * most @max names): 0 or -ENOSPC. */
static int names_add(char *buf, size_t cap, unsigned max, unsigned *n, unsigned *used,
		     const char *name)
{
	size_t len = strlen(name);

	if (!len || len > IBRES_NAME_MAX || *n >= max || *used + len + 1 > cap)
		return -ENOSPC;
	memcpy(buf + *used, name, len + 1);
	*used += (unsigned)len + 1;
	(*n)++;
	return 0;
}

int fw_hint_add(struct fw_msg *m, const char *name)
{
	return names_add(m->hints, sizeof(m->hints), UINT_MAX, &m->n_hints, &m->hints_len, name);
}

int fw_gone_add(struct fw_msg *m, const char *name)
{
	return names_add(m->gone, sizeof(m->gone), FW_GONE_MAX, &m->n_gone, &m->gone_len, name);
}

static int get_key(const struct tlv_item *nest, struct host_key *k)
{
	char name[IBRES_NAME_MAX + 1];
	struct tlv_reader r;
	struct tlv_item it;
	int n = 0, ret;

	tlv_reader_init(&r, nest->value, nest->length);
	while ((ret = tlv_next(&r, &it)) > 0) {
		if (n++)
			return -EBADMSG;
		switch (it.type) {
		case IBRES_T_NAME:
			if (tlv_get_str(&it, name, sizeof(name)) < 0 || host_key_name(k, name) < 0)
				return -EBADMSG;
			break;
		case IBRES_T_IPV4:
			if (it.length != 4)
				return -EBADMSG;
			host_key_addr(k, IBRES_KEY_IPV4, it.value);
			break;
		case IBRES_T_IPV6:
		case IBRES_T_GID:
			if (it.length != 16)
				return -EBADMSG;
			host_key_addr(k, it.type == IBRES_T_GID ? IBRES_KEY_GID : IBRES_KEY_IPV6,
				       it.value);
			break;
		default:
			return -EBADMSG;
		}
	}
	return ret < 0 || n != 1 ? -EBADMSG : 0;
}

/* Every item is checked here; hostrec_decode then reads the identity items. */
static enum fw_error decode_items(const uint8_t *body, size_t len, struct fw_msg *m)
{
	struct tlv_reader r;
	struct tlv_item it;
	int ret;

	tlv_reader_init(&r, body, len);
	while ((ret = tlv_next(&r, &it)) > 0) {
		switch (it.type) {
		case FW_T_GROUP:
			if (it.length != 2 || m->n_groups == FW_MAX_GROUPS)
				return FW_ERR_MALFORMED;
			memcpy(&m->groups[m->n_groups++], it.value, 2);
			break;
		case FW_T_TARGET:
			if (m->has_target || get_key(&it, &m->target) < 0)
				return FW_ERR_MALFORMED;
			m->has_target = true;
			break;
		case FW_T_CHOSEN:
			if (it.length != 2 || m->has_chosen)
				return FW_ERR_MALFORMED;
			memcpy(&m->chosen, it.value, 2);
			m->has_chosen = true;
			break;
		case FW_T_STAMP:
			if (m->has_stamp || tlv_get_u64(&it, &m->stamp) < 0)
				return FW_ERR_MALFORMED;
			m->has_stamp = true;
			break;
		case FW_T_RAILS:
			if (m->n_rails || !it.length || it.length % 16 ||
			    it.length / 16 > HOST_RAILS_MAX)
				return FW_ERR_MALFORMED;
			m->n_rails = it.length / 16;
			memcpy(m->rails, it.value, it.length);
			if (!rails_sorted((const uint8_t(*)[16])m->rails, m->n_rails))
				return FW_ERR_MALFORMED;
			break;
		case FW_T_UP:
			if (m->has_up || it.length < FW_UP_LEN)
				return FW_ERR_MALFORMED;
			m->up_ms = get_be32(it.value);
			m->has_up = true;
			break;
		case FW_T_DIGEST:
			if (m->has_digest || it.length < FW_DIGEST_LEN)
				return FW_ERR_MALFORMED;
			m->digest.hosts = get_be32(it.value);
			m->digest.flags = it.value[4];
			m->digest.sum = get_be64(it.value + 8);
			m->digest.seq = get_be32(it.value + 16);
			m->has_digest = true;
			break;
		case FW_T_RANGE:
			if (m->has_range || it.length < FW_RANGE_LEN)
				return FW_ERR_MALFORMED;
			m->range.lo = get_be64(it.value);
			m->range.hi = get_be64(it.value + 8);
			m->range.parts = it.value[16];
			m->range.flags = it.value[17];
			if (m->range.lo > m->range.hi || !m->range.parts ||
			    m->range.parts > FW_PARTS_MAX)
				return FW_ERR_MALFORMED;
			m->has_range = true;
			break;
		case FW_T_SUMS:
			if (m->n_sums || !it.length || it.length % FW_SUM_LEN ||
			    it.length / FW_SUM_LEN > FW_PARTS_MAX)
				return FW_ERR_MALFORMED;
			m->n_sums = it.length / FW_SUM_LEN;
			for (unsigned i = 0; i < m->n_sums; i++) {
				m->sums[i].hosts = get_be32(it.value + i * FW_SUM_LEN);
				m->sums[i].sum = get_be64(it.value + i * FW_SUM_LEN + 4);
			}
			break;
		case FW_T_HINT: {
			char name[IBRES_NAME_MAX + 1];

			/* a name, no NUL inside (its user checks it further) */
			if (tlv_get_str(&it, name, sizeof(name)) < 0 || !name[0] ||
			    fw_hint_add(m, name) < 0)
				return FW_ERR_MALFORMED;
			break;
		}
		case FW_T_HINT_AT: {
			char name[IBRES_NAME_MAX + 1];
			struct fw_where at;
			size_t wl = where_get(it.value, it.length, &at), n = it.length - wl;

			/* an address of a kind we know, then a name without NUL */
			if (!wl || !n || n > IBRES_NAME_MAX || memchr(it.value + wl, 0, n))
				return FW_ERR_MALFORMED;
			memcpy(name, it.value + wl, n);
			name[n] = '\0';
			if (fw_hint_add_at(m, name, &at) < 0)
				return FW_ERR_MALFORMED;
			break;
		}
		case FW_T_GONE: {
			char name[IBRES_NAME_MAX + 1];

			/* a name, no NUL inside; past the bound, skipped */
			if (tlv_get_str(&it, name, sizeof(name)) < 0 || !name[0])
				return FW_ERR_MALFORMED;
			fw_gone_add(m, name);
			break;
		}
		default:
			break; /* identity items, and items of newer versions */
		}
	}
	if (ret < 0)
		return FW_ERR_MALFORMED;
	/* hostrec_decode skips our item types; it needs a canonical name */
	if (hostrec_decode(body, len, &m->sender) < 0 || m->sender.n_gids == 0)
		return FW_ERR_MALFORMED;
	return FW_OK;
}

enum fw_error fw_decode(const uint8_t *buf, size_t len, const uint8_t *key, size_t key_len,
			struct fw_msg *m)
{
	size_t trailer = 0;
	uint16_t mlen;
	uint64_t tid;

	memset(m, 0, sizeof(*m));
	if (len < FW_HDR_LEN || len > FW_MAX_LEN || get_be32(buf) != FW_MAGIC)
		return FW_ERR_MALFORMED;
	if (buf[4] != FW_VERSION)
		return FW_ERR_VERSION;
	mlen = get_be16(buf + 16);
	if (mlen != len)
		return FW_ERR_MALFORMED;
	m->type = buf[5];
	m->flags = get_be16(buf + 6);
	memcpy(&tid, buf + 8, 8);
	m->tid = be64toh(tid);
	if (m->type < FW_REQUEST || m->type > FW_RANGE_ANSWER)
		return FW_ERR_MALFORMED;

	if (key) {
		uint8_t mac[FW_HMAC_LEN];

		if (!(m->flags & FW_FLAG_HMAC) || len < FW_HDR_LEN + FW_HMAC_LEN)
			return FW_ERR_AUTH;
		if (hmac(key, key_len, buf, len - FW_HMAC_LEN, mac) < 0 ||
		    CRYPTO_memcmp(mac, buf + len - FW_HMAC_LEN, FW_HMAC_LEN))
			return FW_ERR_AUTH;
		trailer = FW_HMAC_LEN;
	} else if (m->flags & FW_FLAG_HMAC) {
		return FW_ERR_AUTH; /* we cannot check it: do not trust it */
	}
	if (decode_items(buf + FW_HDR_LEN, len - FW_HDR_LEN - trailer, m) != FW_OK)
		return FW_ERR_MALFORMED;
	if (m->type == FW_REQUEST && !m->has_target)
		return FW_ERR_MALFORMED;
	if (m->type == FW_RAIL_DOWN && (!m->has_target || m->target.type != IBRES_KEY_GID))
		return FW_ERR_MALFORMED;
	if (m->type == FW_REPLY && !m->has_chosen)
		return FW_ERR_MALFORMED;
	/* a range query needs its range; an answer its range, the sender's
	 * digest, and a sum for every part when it has sums */
	if ((m->type == FW_RANGE_QUERY || m->type == FW_RANGE_ANSWER) && !m->has_range)
		return FW_ERR_MALFORMED;
	if (m->type == FW_RANGE_ANSWER &&
	    (!m->has_digest || (m->n_sums && m->n_sums != m->range.parts)))
		return FW_ERR_MALFORMED;
	return FW_OK;
}
