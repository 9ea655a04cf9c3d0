// SPDX-License-Identifier: MIT
#include "hostrec.h"

#include <errno.h>
#include <fnmatch.h>
#include <sys/socket.h>
#include <string.h>
#include <strings.h>

int hostrec_encode(struct tlv_writer *w, const struct ibres_hostrec *h)
{
	unsigned i;

	for (i = 0; i < h->n_names; i++)
		tlv_put_str(w, i ? IBRES_T_ALIAS : IBRES_T_NAME, h->names[i]);
	for (i = 0; i < h->n_v4; i++)
		tlv_put(w, IBRES_T_IPV4, &h->v4[i], 4);
	for (i = 0; i < h->n_v6; i++)
		tlv_put(w, IBRES_T_IPV6, &h->v6[i], 16);
	for (i = 0; i < h->n_gids; i++)
		tlv_put(w, IBRES_T_GID, h->gids[i], 16);
	tlv_put_u16(w, IBRES_T_LID, h->lid);
	tlv_put_u32(w, IBRES_T_QPN, h->qpn);
	tlv_put_u16(w, IBRES_T_PKEY, h->pkey);
	tlv_put_u32(w, IBRES_T_TTL, h->ttl);
	return w->overflow ? -ENOSPC : 0;
}

/* Host names, one table look-up a byte. hostrec_name_ok() is an automaton
 * whose state is where the name is (a label's start, after a letter or
 * digit, after a hyphen) and whether a letter was seen (NAME_LETTER); state
 * 0 refuses, for good. Its table, NAME_NEXT[state][byte], is 2 KiB, of
 * which a name's bytes read a few lines: no per-byte arithmetic on the hit
 * path. Labels longer than 63 bytes are looked for apart, in the names long
 * enough to hold one. */
enum { NS_BAD, NS_START, NS_ALNUM, NS_HYPHEN, NAME_LETTER = 4, NAME_STATES = 8 };
#define NAME_ROW(st)                                                                               \
	{                                                                                          \
		['a' ... 'z'] = NS_ALNUM | NAME_LETTER, ['A' ... 'Z'] = NS_ALNUM | NAME_LETTER,    \
		['0' ... '9'] = NS_ALNUM | ((st) & NAME_LETTER),                                   \
		/* a hyphen neither starts nor ends a label */                                     \
		['-'] = ((st) & 3) == NS_START ? NS_BAD : NS_HYPHEN | ((st) & NAME_LETTER),        \
		/* a label holds a byte at least */                                                \
		['.'] = ((st) & 3) == NS_ALNUM ? NS_START | ((st) & NAME_LETTER) : NS_BAD,         \
	}
static const uint8_t NAME_NEXT[NAME_STATES][256] = {
	[NS_START] = NAME_ROW(NS_START),
	[NS_ALNUM] = NAME_ROW(NS_ALNUM),
	[NS_HYPHEN] = NAME_ROW(NS_HYPHEN),
	[NS_START | NAME_LETTER] = NAME_ROW(NS_START | NAME_LETTER),
	[NS_ALNUM | NAME_LETTER] = NAME_ROW(NS_ALNUM | NAME_LETTER),
	[NS_HYPHEN | NAME_LETTER] = NAME_ROW(NS_HYPHEN | NAME_LETTER),
};

/* @c in lower case (ASCII letters only). */
static inline unsigned fold(unsigned c)
{
	return c + (((c - 'A') < 26u) << 5);
}

/* Does every dot-separated label of the name hold at most 63 bytes? */
static int labels_short(const uint8_t *s, size_t len)
{
	size_t label = 0;

	for (size_t i = 0; i < len; i++) {
		label = s[i] == '.' ? 0 : label + 1;
		if (label > 63)
			return 0;
	}
	return 1;
}

IBRES_HOT int hostrec_name_ok(const void *name, size_t len)
{
	const uint8_t *s = name;
	unsigned st = NS_START;

	if (!len || len > IBRES_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		st = NAME_NEXT[st][s[i]];
	/* the last label ends on a letter or digit; a letter somewhere (a
	 * name of digits and dots reads as an address) */
	return st == (NS_ALNUM | NAME_LETTER) && (len <= 63 || labels_short(s, len));
}

static int hostrec_shape_ok(const struct ibres_hostrec *h)
{
	if (!h->n_names || h->n_names > IBRES_HOST_NAMES_MAX || h->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    h->n_v6 > IBRES_HOST_ADDRS_MAX || h->n_gids > IBRES_HOST_GIDS_MAX)
		return -EBADMSG;
	/* the last byte of a name's array is always NUL (the decoders see to
	 * it), so a string function never reads past the array */
	for (unsigned i = 0; i < h->n_names; i++)
		if (!h->names[i][0] || h->names[i][IBRES_NAME_MAX])
			return -EBADMSG;
	return 0;
}

int hostrec_check(const struct ibres_hostrec *h)
{
	if (hostrec_shape_ok(h))
		return -EBADMSG;
	for (unsigned i = 0; i < h->n_names; i++)
		if (!hostrec_name_ok(h->names[i], strlen(h->names[i])))
			return -EBADMSG;
	return 0;
}

static int add_name(struct ibres_hostrec *h, const struct tlv_item *it)
{
	if (h->n_names == IBRES_HOST_NAMES_MAX || !hostrec_name_ok(it->value, it->length))
		return -EBADMSG;
	if (tlv_get_str(it, h->names[h->n_names], sizeof(h->names[0])))
		return -EBADMSG;
	h->n_names++;
	return 0;
}

static int add_bytes(void *array, unsigned *count, unsigned max, size_t size,
		     const struct tlv_item *it)
{
	if (it->length != size || *count == max)
		return -EBADMSG;
	memcpy((uint8_t *)array + (size_t)*count * size, it->value, size);
	(*count)++;
	return 0;
}

int hostrec_decode(const void *buf, size_t len, struct ibres_hostrec *h)
{
	struct tlv_reader r;
	struct tlv_item it;
	int ret;

	memset(h, 0, sizeof(*h));
	tlv_reader_init(&r, buf, len);
	while ((ret = tlv_next(&r, &it)) > 0) {
		switch (it.type) {
		case IBRES_T_NAME:
			/* the canonical name must come first */
			if (h->n_names)
				return -EBADMSG;
			ret = add_name(h, &it);
			break;
		case IBRES_T_ALIAS:
			ret = h->n_names ? add_name(h, &it) : -EBADMSG;
			break;
		case IBRES_T_IPV4:
			ret = add_bytes(h->v4, &h->n_v4, IBRES_HOST_ADDRS_MAX, 4, &it);
			break;
		case IBRES_T_IPV6:
			ret = add_bytes(h->v6, &h->n_v6, IBRES_HOST_ADDRS_MAX, 16, &it);
			break;
		case IBRES_T_GID:
			ret = add_bytes(h->gids, &h->n_gids, IBRES_HOST_GIDS_MAX, 16, &it);
			break;
		case IBRES_T_LID:
			ret = tlv_get_u16(&it, &h->lid);
			break;
		case IBRES_T_QPN:
			ret = tlv_get_u32(&it, &h->qpn);
			break;
		case IBRES_T_PKEY:
			ret = tlv_get_u16(&it, &h->pkey);
			break;
		case IBRES_T_TTL:
			ret = tlv_get_u32(&it, &h->ttl);
			break;
		default:
			ret = 0;
			break;
		}
		if (ret)
			return -EBADMSG;
	}
	if (ret < 0)
		return -EBADMSG;
	return hostrec_check(h);
}

/* AF_IB from <rdma/ib.h>, which the NSS module cannot include. */
#define AF_IB_FAMILY 27

int hostrec_addr_type(int af, size_t len, uint16_t *type)
{
	switch (af) {
	case AF_INET:
		*type = IBRES_T_IPV4;
		return len == 4 ? 0 : -EINVAL;
	case AF_INET6:
		*type = IBRES_T_IPV6;
		return len == 16 ? 0 : -EINVAL;
	case AF_IB_FAMILY: /* a GID */
		*type = IBRES_T_GID;
		return len == 16 ? 0 : -EINVAL;
	}
	return -EAFNOSUPPORT;
}

int hostrec_has_name(const struct ibres_hostrec *h, const char *name)
{
	unsigned i;

	for (i = 0; i < h->n_names; i++)
		if (!strcasecmp(h->names[i], name))
			return 1;
	return 0;
}

int hostrec_same_addrs(const struct ibres_hostrec *a, const struct ibres_hostrec *b)
{
	return a->n_v4 == b->n_v4 && a->n_v6 == b->n_v6 &&
	       !memcmp(a->v4, b->v4, a->n_v4 * sizeof(a->v4[0])) &&
	       !memcmp(a->v6, b->v6, a->n_v6 * sizeof(a->v6[0]));
}

IBRES_HOT int hostrec_name_eq(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	if (n >= 4 && n <= 8) {
		/* most names on a hit: two overlapping 4-byte reads a side, the
		 * same bytes when the cases match too */
		uint32_t x0, x1, y0, y1;

		memcpy(&x0, x, 4);
		memcpy(&x1, x + n - 4, 4);
		memcpy(&y0, y, 4);
		memcpy(&y1, y + n - 4, 4);
		if (x0 == y0 && x1 == y1)
			return 1;
	}
	/* names mostly match in case: fold only where the bytes differ */
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i] && fold(x[i]) != fold(y[i]))
			return 0;
	return 1;
}

static int name_eq_key(const char *name, const uint8_t *data, size_t len)
{
	return strnlen(name, len + 1) == len && hostrec_name_eq(name, data, len);
}

int hostrec_has_key(const struct ibres_hostrec *h, uint8_t type, const void *data, size_t len)
{
	const uint8_t *d = data;
	unsigned i;

	switch (type) {
	case IBRES_KEY_NAME:
		for (i = 0; i < h->n_names && i < IBRES_HOST_NAMES_MAX; i++)
			if (len && len <= IBRES_NAME_MAX && name_eq_key(h->names[i], d, len))
				return 1;
		return 0;
	case IBRES_KEY_IPV4:
		for (i = 0; len == 4 && i < h->n_v4 && i < IBRES_HOST_ADDRS_MAX; i++)
			if (!memcmp(&h->v4[i], d, 4))
				return 1;
		return 0;
	case IBRES_KEY_IPV6:
		for (i = 0; len == 16 && i < h->n_v6 && i < IBRES_HOST_ADDRS_MAX; i++)
			if (!memcmp(&h->v6[i], d, 16))
				return 1;
		return 0;
	case IBRES_KEY_GID:
		for (i = 0; len == 16 && i < h->n_gids && i < IBRES_HOST_GIDS_MAX; i++)
			if (!memcmp(h->gids[i], d, 16))
				return 1;
		return 0;
	case IBRES_KEY_LID:
		/* a record knows no fabric: the daemon's third byte is its caller's */
		return (len == 2 || len == 3) && h->lid && d[0] == (uint8_t)(h->lid >> 8) &&
		       d[1] == (uint8_t)h->lid;
	}
	return 0;
}

int hostrec_name_in_patterns(const char *name, const char *patterns, size_t stride, unsigned n)
{
	if (!n)
		return 1;
	for (unsigned i = 0; i < n; i++)
		if (fnmatch(patterns + i * stride, name, FNM_CASEFOLD) == 0)
			return 1;
	return 0;
}

IBRES_HOT uint32_t hostrec_ttl_left(uint64_t expires_ms, uint64_t now_ms)
{
	if (expires_ms == UINT64_MAX)
		return HOSTREC_TTL_NEVER;
	return expires_ms > now_ms ? (uint32_t)((expires_ms - now_ms + 999) / 1000) : 0;
}
