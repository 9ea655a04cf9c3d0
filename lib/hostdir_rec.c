// SPDX-License-Identifier: MIT
/*
 * A shared directory record's coding (hostdir.h): writing one from a host
 * record, and a reader's view of one, checked, cut to the endpoints of the
 * key it was found by and read back. Every count and length is checked
 * against the record's bytes before it is used.
 */
#include "hostdir.h"
#include "ibdir_impl.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

size_t ibdir_rec_size(const struct ibres_hostrec *r)
{
	size_t n = sizeof(struct ibdir_rec) + 16u * r->n_gids + 16u * r->n_v6 + 4u * r->n_v4;

	for (unsigned i = 0; i < r->n_names; i++)
		n += 1 + strnlen(r->names[i], IBRES_NAME_MAX);
	return (n + 7) & ~(size_t)7;
}

size_t ibdir_rec_encode(const struct ibres_hostrec *r, uint64_t expires_ms, uint8_t *out)
{
	return ibdir_rec_encode_eps(r, NULL, expires_ms, out);
}

/* Bytes of one endpoint set in a record of @n_ep endpoints: as few as hold
 * a bit each (an eight-rail host's sets are a byte each). */
static inline unsigned set_width(unsigned n_ep)
{
	return n_ep <= 8 ? 1 : n_ep <= 16 ? 2 : 4;
}

/* The @n sets at @eps, @w bytes each, least significant byte first. */
static uint8_t *put_eps(uint8_t *p, const uint32_t *eps, unsigned n, unsigned w)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned b = 0; b < w; b++)
			*p++ = (uint8_t)(eps[i] >> 8 * b);
	return p;
}

size_t ibdir_rec_encode_eps(const struct ibres_hostrec *r, const struct hostrec_eps *eps,
			    uint64_t expires_ms, uint8_t *out)
{
	struct ibdir_rec hdr = {
		.expires_ms = expires_ms,
		.qpn = r->qpn,
		.lid = r->lid,
		.pkey = r->pkey,
		.n_names = (uint8_t)r->n_names,
		.n_v4 = (uint8_t)r->n_v4,
		.n_v6 = (uint8_t)r->n_v6,
		.n_gids = (uint8_t)r->n_gids,
		.flags = eps ? (uint16_t)(IBDIR_REC_EPS | eps->n_ep << IBDIR_REC_N_EP_SHIFT) : 0,
	};
	uint8_t *p = out + sizeof(hdr);

	memcpy(p, r->gids, 16u * r->n_gids);
	p += 16u * r->n_gids;
	memcpy(p, r->v6, 16u * r->n_v6);
	p += 16u * r->n_v6;
	memcpy(p, r->v4, 4u * r->n_v4);
	p += 4u * r->n_v4;
	for (unsigned i = 0; i < r->n_names; i++) {
		size_t l = strnlen(r->names[i], IBRES_NAME_MAX);

		*p++ = (uint8_t)l;
		memcpy(p, r->names[i], l);
		p += l;
	}
	if (eps) {
		unsigned w = set_width(eps->n_ep);

		p = put_eps(p, eps->names, r->n_names, w);
		p = put_eps(p, eps->gids, r->n_gids, w);
		p = put_eps(p, eps->v6, r->n_v6, w);
		p = put_eps(p, eps->v4, r->n_v4, w);
		_Static_assert(sizeof(eps->ep[0]) == 8, "an endpoint's QPN, LID and P_Key: 8 bytes");
		memcpy(p, eps->ep, 8u * eps->n_ep);
		p += 8u * eps->n_ep;
	}
	hdr.data_len = (uint16_t)(p - out - sizeof(hdr));
	memcpy(out, &hdr, sizeof(hdr));
	return (size_t)(p - out);
}


/* The bytes of the endpoint sets and endpoints of a record of header @hdr
 * (0: none). */
IBRES_HOT static inline size_t eps_bytes(const struct ibdir_rec *hdr)
{
	unsigned n_ep = IBDIR_REC_N_EP(hdr->flags);

	return hdr->flags & IBDIR_REC_EPS
		       ? set_width(n_ep) *
					 ((size_t)hdr->n_names + hdr->n_gids + hdr->n_v6 + hdr->n_v4) +
				 8u * n_ep
		       : 0;
}

/* Flags a reader knows: none, or endpoint sets of 1..HOSTREC_EPS_MAX
 * endpoints. */
IBRES_HOT static inline int flags_ok(uint16_t flags)
{
	return !flags || ((flags & ((1u << IBDIR_REC_N_EP_SHIFT) - 1)) == IBDIR_REC_EPS &&
			  IBDIR_REC_N_EP(flags) >= 1 && IBDIR_REC_N_EP(flags) <= HOSTREC_EPS_MAX);
}

/* The record header's counts as the writer makes them (ibdir_rec_encode of a
 * record hostrec_check() accepts): 1..IBRES_HOST_NAMES_MAX names, the other
 * counts within their arrays, no flag but IBDIR_REC_EPS, and data_len inside
 * the copy's @len bytes and large enough for the fixed-size items, the
 * endpoint sets and one byte of length and at least one of name each. 1 or
 * 0. */
IBRES_HOT static inline __attribute__((always_inline)) int rec_hdr_ok(const struct ibdir_rec *hdr,
								      size_t len)
{
	size_t fixed;

	if (len < sizeof(*hdr) || !hdr->n_names || !counts_ok(hdr) || !flags_ok(hdr->flags) ||
	    hdr->data_len > len - sizeof(*hdr))
		return 0;
	fixed = 16u * hdr->n_gids + 16u * hdr->n_v6 + 4u * hdr->n_v4 + eps_bytes(hdr);
	return fixed + 2u * hdr->n_names <= hdr->data_len;
}

/* The view of the copy @rec whose header is @hdr and whose data is @data
 * bytes (inside the copy, and at least the fixed-size items and the endpoint
 * sets): the names end where the sets begin. */
IBRES_HOT static void view_fill(const uint8_t *rec, const struct ibdir_rec *hdr, size_t data,
				struct ibdir_view *v)
{
	size_t eps = eps_bytes(hdr);

	v->gids = rec + sizeof(*hdr);
	v->v6 = v->gids + 16u * hdr->n_gids;
	v->v4 = v->v6 + 16u * hdr->n_v6;
	v->names = v->v4 + 4u * hdr->n_v4;
	v->end = v->gids + data - eps;
	v->eps = eps ? v->end : NULL;
	v->n_ep = IBDIR_REC_N_EP(hdr->flags);
	v->set_w = set_width(v->n_ep);
	v->n_names = hdr->n_names;
	v->n_v4 = hdr->n_v4;
	v->n_v6 = hdr->n_v6;
	v->n_gids = hdr->n_gids;
	v->lid = hdr->lid;
	v->pkey = hdr->pkey;
	v->qpn = hdr->qpn;
	v->expires_ms = hdr->expires_ms;
	v->ttl = 0;
}

/* The view's pointers over the copy @rec as its counts say, its data kept
 * inside @len bytes: 0, or -EBADMSG when the fixed-size items do not fit.
 * Nothing else is checked: a look-up at the bytes as they are. */
static int view_layout(const uint8_t *rec, size_t len, struct ibdir_view *v)
{
	struct ibdir_rec hdr;
	size_t data;

	if (len < sizeof(hdr))
		return -EBADMSG;
	memcpy(&hdr, rec, sizeof(hdr));
	data = hdr.data_len < len - sizeof(hdr) ? hdr.data_len : len - sizeof(hdr);
	if (16u * hdr.n_gids + 16u * hdr.n_v6 + 4u * hdr.n_v4 + eps_bytes(&hdr) > data)
		return -EBADMSG;
	view_fill(rec, &hdr, data, v);
	return 0;
}

/* ibdir_view_init(), and in the same walk over the names which of them is
 * @key/@klen (ASCII case aside): *@named its index, or -1 (@key NULL: none
 * is looked for). */
IBRES_HOT static inline __attribute__((always_inline)) int
view_init_named(const uint8_t *rec, size_t len, struct ibdir_view *v, const void *key, size_t klen,
		int *named)
{
	struct ibdir_rec hdr;
	const uint8_t *p, *end;

	*named = -1;
	if (len < sizeof(hdr))
		return -EBADMSG;
	memcpy(&hdr, rec, sizeof(hdr));
	if (!rec_hdr_ok(&hdr, len))
		return -EBADMSG;
	view_fill(rec, &hdr, hdr.data_len, v);
	/* only names the daemon can hold, filling the data exactly (a host of
	 * several endpoints: those of the key's endpoints, view_names_ok(),
	 * once the view is cut to them) */
	p = v->names;
	end = v->end;
	for (unsigned i = 0; i < v->n_names; i++) {
		size_t l;

		if (p >= end)
			return -EBADMSG;
		l = *p++;
		if (l > (size_t)(end - p) || (!v->eps && !hostrec_name_ok(p, l)))
			return -EBADMSG;
		if (key && *named < 0 && l == klen && hostrec_name_eq(p, key, l))
			*named = (int)i;
		p += l;
	}
	return p == end ? 0 : -EBADMSG;
}

/* Are the names of @v, whose lengths view_init_named() checked, names the
 * daemon can hold? 0 or -EBADMSG. */
static int view_names_ok(const struct ibdir_view *v)
{
	const uint8_t *p = v->names;

	for (unsigned i = 0; i < v->n_names; i++, p += 1 + *p)
		if (!hostrec_name_ok(p + 1, *p))
			return -EBADMSG;
	return 0;
}

IBRES_HOT int ibdir_view_init(const uint8_t *rec, size_t len, struct ibdir_view *v)
{
	int named;

	if (view_init_named(rec, len, v, NULL, 0, &named))
		return -EBADMSG;
	return v->eps ? view_names_ok(v) : 0;
}

void ibdir_view_to_rec(const struct ibdir_view *v, struct ibres_hostrec *out)
{
	const uint8_t *p = v->names, *name;

	/* every field is set: no memset of the 5 KB record (entries past a
	 * count are never read) */
	out->ttl = v->ttl;
	out->n_gids = v->n_gids;
	memcpy(out->gids, v->gids, 16u * v->n_gids);
	out->n_v6 = v->n_v6;
	memcpy(out->v6, v->v6, 16u * v->n_v6);
	out->n_v4 = v->n_v4;
	memcpy(out->v4, v->v4, 4u * v->n_v4);
	for (unsigned i = 0; i < v->n_names; i++) {
		size_t l = ibdir_view_next_name(&p, &name);

		memcpy(out->names[i], name, l);
		out->names[i][l] = '\0';
		out->names[i][IBRES_NAME_MAX] = '\0'; /* hostrec_check()'s bound */
	}
	out->n_names = v->n_names;
	out->lid = v->lid;
	out->qpn = v->qpn;
	out->pkey = v->pkey;
}

/* Is the record copy @rec packed? */
static bool rec_packed(const uint8_t *rec, size_t len)
{
	struct ibdir_rec hdr;

	if (len < sizeof(hdr))
		return false;
	memcpy(&hdr, rec, sizeof(hdr));
	return hdr.flags & IBDIR_REC_PACKED;
}

/* The packed record @rec (@len bytes) unpacked into @tmp (IBDIR_REC_MAX
 * bytes): 0 with its length in *@len, or -EBADMSG. */
static int rec_unpacked(const uint8_t *rec, size_t *len, uint8_t *tmp)
{
	struct ibdir_rec hdr;
	size_t n;

	memcpy(&hdr, rec, sizeof(hdr));
	n = sizeof(hdr) + hdr.data_len;
	if (n > *len || n > IBDIR_REC_MAX)
		return -EBADMSG;
	memcpy(tmp + IBDIR_REC_MAX - n, rec, n);
	return ibdir_rec_unpack(tmp, IBDIR_REC_MAX, IBDIR_REC_MAX - n, n, len) ? -EBADMSG : 0;
}

/* ibdir_rec_decode() of a packed record: a frame of its own for the copy,
 * so that a plain record's decoding does not reserve it. */
static __attribute__((noinline)) int decode_packed(const uint8_t *rec, size_t len,
						   struct ibres_hostrec *out)
{
	uint64_t tmp[IBDIR_REC_MAX / 8];

	if (rec_unpacked(rec, &len, (uint8_t *)tmp))
		return -EBADMSG;
	return ibdir_rec_decode((const uint8_t *)tmp, len, out);
}

int ibdir_rec_decode(const uint8_t *rec, size_t len, struct ibres_hostrec *out)
{
	struct ibdir_view v;

	if (rec_packed(rec, len))
		return decode_packed(rec, len, out);
	if (ibdir_view_init(rec, len, &v))
		return -EBADMSG;
	ibdir_view_to_rec(&v, out);
	return 0;
}

/* Which of the view's items is the key @key/@klen of table @tab: its place
 * in the endpoint sets' order (the names, then the GIDs, IPv6 and IPv4
 * addresses), or -1. */
IBRES_HOT static int key_index(const struct ibdir_view *v, unsigned tab, const void *key,
			       size_t klen)
{
	unsigned gids = v->n_names, v6 = gids + v->n_gids, v4 = v6 + v->n_v6;
	const uint8_t *p;

	switch (tab) {
	case IBDIR_TAB_GID:
		for (unsigned i = 0; klen == 16 && i < v->n_gids; i++)
			if (!memcmp(v->gids + 16 * i, key, 16))
				return (int)(gids + i);
		return -1;
	case IBDIR_TAB_IPV6:
		for (unsigned i = 0; klen == 16 && i < v->n_v6; i++)
			if (!memcmp(v->v6 + 16 * i, key, 16))
				return (int)(v6 + i);
		return -1;
	case IBDIR_TAB_IPV4:
		for (unsigned i = 0; klen == 4 && i < v->n_v4; i++)
			if (!memcmp(v->v4 + 4 * i, key, 4))
				return (int)(v4 + i);
		return -1;
	case IBDIR_TAB_NAME:
		/* bounded by the data even in a view nobody checked */
		p = v->names;
		for (unsigned i = 0; i < v->n_names && p < v->end; i++) {
			size_t l = *p++;

			if (l > (size_t)(v->end - p))
				return -1;
			if (l == klen && hostrec_name_eq(p, key, l))
				return (int)i;
			p += l;
		}
		return -1;
	}
	return -1;
}

IBRES_HOT int ibdir_view_has_key(const struct ibdir_view *v, unsigned tab, const void *key,
				 size_t klen)
{
	return key_index(v, tab, key, klen) >= 0;
}

/* The endpoint set of item @i in the sets @sets of @w bytes each. */
static inline __attribute__((always_inline)) uint32_t set_at(const uint8_t *sets, unsigned w,
							      unsigned i)
{
	const uint8_t *p = sets + w * i;
	uint32_t e = 0;

	for (unsigned b = 0; b < w; b++)
		e |= (uint32_t)p[b] << 8 * b;
	return e;
}

/* The endpoint set of item @i of a view with sets (key_index()'s order). */
static inline uint32_t eps_of(const struct ibdir_view *v, unsigned i)
{
	return v->set_w == 1 ? v->eps[i] : set_at(v->eps, v->set_w, i);
}

/* Keep the @n items of @size bytes at @from whose sets (@sets, @w bytes
 * each) meet @want, moved to @to: never past an item not read yet, since
 * @to is never after @from. Returns how many. */
static inline __attribute__((always_inline)) unsigned
keep_items(const uint8_t *sets, unsigned w, uint32_t want, const uint8_t *from, unsigned n,
	   size_t size, uint8_t **to)
{
	uint8_t *t = *to;

	for (unsigned i = 0; i < n; i++)
		if (set_at(sets, w, i) & want) {
			memmove(t, from + size * i, size);
			t += size;
		}
	n = (unsigned)((size_t)(t - *to) / size);
	*to = t;
	return n;
}

/* view_select()'s moves, for sets of @w bytes (a constant where inlined:
 * one byte, up to eight endpoints, is most hosts of several). */
static inline __attribute__((always_inline)) int
cut_items(uint8_t *rec, struct ibdir_view *v, uint32_t want, unsigned w)
{
	const uint8_t *sets = v->eps, *from = v->names;
	uint8_t *to = rec + sizeof(struct ibdir_rec);
	struct ibdir_view out = *v;
	unsigned n = 0;

	out.gids = to;
	out.n_gids = keep_items(sets + w * v->n_names, w, want, v->gids, v->n_gids, 16, &to);
	out.v6 = to;
	out.n_v6 = keep_items(sets + w * (v->n_names + v->n_gids), w, want, v->v6, v->n_v6, 16,
			      &to);
	out.v4 = to;
	out.n_v4 = keep_items(sets + w * (v->n_names + v->n_gids + v->n_v6), w, want, v->v4,
			      v->n_v4, 4, &to);
	out.names = to;
	for (unsigned i = 0; i < v->n_names; i++) {
		size_t l = 1u + *from;

		if (set_at(sets, w, i) & want) {
			move_down(to, from, l);
			to += l;
			n++;
		}
		from += l;
	}
	if (!n)
		return -EBADMSG;
	out.n_names = n;
	out.end = to;
	out.eps = NULL;
	{
		/* the first of the key's endpoints (the preferred rail first),
		 * after the sets of every name and address */
		struct hostrec_ep ep;

		memcpy(&ep,
		       sets + w * (v->n_names + v->n_gids + v->n_v6 + v->n_v4) +
			       8u * (unsigned)__builtin_ctz(want),
		       sizeof(ep));
		out.qpn = ep.qpn;
		out.lid = ep.lid;
		out.pkey = ep.pkey;
	}
	*v = out;
	return 0;
}

/* Cut the view @v of a record with endpoint sets, over the checked copy
 * @rec, to the items of the endpoints @want, in place: every kept item
 * moves forward over those left out (the sets, after the names, stay where
 * they are until the end), and the view then has no sets, as a record of
 * those endpoints alone would be. -EBADMSG when no name is left (the writer
 * gives every endpoint the host's name). */
static int view_select(uint8_t *rec, struct ibdir_view *v, uint32_t want)
{
	uint32_t every = (uint32_t)-1 >> (32 - v->n_ep);

	if ((want & every) == every) {
		/* a key of every endpoint (the host's name): the whole record,
		 * whose QPN, LID and P_Key are its first endpoint's */
		v->eps = NULL;
		return 0;
	}
	if (!(want & every))
		return -EBADMSG; /* no endpoint of the record */
	if (v->set_w == 1)
		return cut_items(rec, v, want, 1);
	return cut_items(rec, v, want, v->set_w);
}

/* What a look-up by item @at_key (key_index()'s order) gives from the view
 * @v over the copy @rec, its lengths checked: a record of
 * several endpoints cut, in place, to the key's endpoints (the host's name,
 * which every endpoint has: all of them; a rail's alias its partitions
 * share: theirs, and no other rail's), the names it keeps checked. 0 or
 * -EBADMSG. */
static int view_answer(uint8_t *rec, struct ibdir_view *v, unsigned at_key)
{
	if (!v->eps)
		return 0;
	return view_select(rec, v, eps_of(v, at_key)) || view_names_ok(v) ? -EBADMSG : 0;
}

/* ibdir_impl.h: checked by view_init_named(), cut by view_answer(). */
IBRES_HOT int ibdir_view_for_key(uint8_t *rec, size_t len, unsigned tab, const void *key,
				 size_t klen, struct ibdir_view *v)
{
	int named, at;

	if (view_init_named(rec, len, v, tab == IBDIR_TAB_NAME ? key : NULL, klen, &named))
		return -EBADMSG;
	at = tab == IBDIR_TAB_NAME ? named : key_index(v, tab, key, klen);
	if (at < 0)
		return 1;
	return view_answer(rec, v, (unsigned)at);
}

int ibdir_rec_answer(uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen,
		     struct ibres_hostrec *out)
{
	struct ibdir_view v;
	int ret = ibdir_view_for_key(rec, len, tab, key, klen, &v);

	if (ret)
		return ret > 0 ? -ENOENT : ret;
	ibdir_view_to_rec(&v, out);
	return 0;
}

/* ibdir_rec_has_key() of a packed record, as decode_packed(). */
static __attribute__((noinline)) int has_key_packed(const uint8_t *rec, size_t len, unsigned tab,
						    const void *key, size_t klen)
{
	uint64_t tmp[IBDIR_REC_MAX / 8];

	return !rec_unpacked(rec, &len, (uint8_t *)tmp) &&
	       ibdir_rec_has_key((const uint8_t *)tmp, len, tab, key, klen);
}

int ibdir_rec_has_key(const uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen)
{
	struct ibdir_view v;

	if (rec_packed(rec, len))
		return has_key_packed(rec, len, tab, key, klen);
	/* only reads inside @len: refusing a record is ibdir_view_init's */
	return !view_layout(rec, len, &v) && ibdir_view_has_key(&v, tab, key, klen);
}
