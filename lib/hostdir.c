// SPDX-License-Identifier: MIT
/*
 * The shared host directory's format rules and its reader's look-up over a
 * memory image (hostdir.h). Nothing here makes a system call: a look-up that
 * hits, and one the directory can answer "no such host" for, cost a hash, a
 * few probes and a copy. Every offset, length and count read from the image
 * is checked before it is used; every loop is bounded by a constant.
 */
#include "hostdir.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* How often a reader starts over when the writer is in the way, before it
 * asks the daemon instead. */
#define READ_TRIES 8

static uint64_t load64(const void *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
}

static uint32_t load32_acquire(const void *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

IBRES_HOT int ibdir_table_of(uint16_t type)
{
	switch (type) {
	case IBRES_T_NAME:
		return IBDIR_TAB_NAME;
	case IBRES_T_IPV4:
		return IBDIR_TAB_IPV4;
	case IBRES_T_IPV6:
		return IBDIR_TAB_IPV6;
	case IBRES_T_GID:
		return IBDIR_TAB_GID;
	}
	return -1;
}

uint8_t ibdir_key_type(unsigned tab)
{
	static const uint8_t types[IBDIR_TABLES] = {
		[IBDIR_TAB_NAME] = IBRES_KEY_NAME,
		[IBDIR_TAB_IPV4] = IBRES_KEY_IPV4,
		[IBDIR_TAB_IPV6] = IBRES_KEY_IPV6,
		[IBDIR_TAB_GID] = IBRES_KEY_GID,
	};

	return tab < IBDIR_TABLES ? types[tab] : 0;
}

/* The eight bytes of @w with ASCII capitals made small, all at once: a byte
 * gets 0x20 when it is 'A'..'Z' (its own top bit clear, and adding 0x3f,
 * not 0x25, to its low seven bits sets the top bit). No carry crosses a
 * byte: 0x7f + 0x3f < 0x100. */
IBRES_HOT static inline uint64_t swar_lower(uint64_t w)
{
	const uint64_t low7 = w & 0x7f7f7f7f7f7f7f7full;
	const uint64_t ge_a = low7 + 0x3f3f3f3f3f3f3f3full;
	const uint64_t gt_z = low7 + 0x2525252525252525ull;

	return w | ((ge_a & ~gt_z & ~w & 0x8080808080808080ull) >> 2);
}

/* One word into the state: the two halves of a 128-bit product folded, so
 * that every bit of the word reaches every bit of the state. (A 64-bit
 * product and a shift passed the top bit through unmixed: keys that differ
 * there in one word and in two bits of the next, two IPv6 addresses, shared
 * a hash under every seed.) */
IBRES_HOT static inline uint64_t hash_mix(uint64_t h, uint64_t w)
{
	unsigned __int128 m = (unsigned __int128)(h ^ w) * 0xbf58476d1ce4e5b9ull;

	return (uint64_t)m ^ (uint64_t)(m >> 64);
}

/* ibdir_hash(), inlined into the look-up: a hit makes no call to hash */
IBRES_HOT static inline __attribute__((always_inline)) uint32_t
hash_key(uint64_t seed, unsigned tab, const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (tab + 1));
	const size_t n = len;
	const int fold = tab == IBDIR_TAB_NAME;
	uint64_t w;

	/* eight bytes a step: a name is hashed in one or two, an address in
	 * one or two */
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = hash_mix(h, fold ? swar_lower(w) : w);
	}
	/* the last 1..7 bytes without a loop, as wyhash reads them: two
	 * overlapping 4-byte reads, or the first, middle and last byte (every
	 * byte is read; the length, mixed in below, says which bytes) */
	if (len >= 4) {
		uint32_t a, b;

		memcpy(&a, p, 4);
		memcpy(&b, p + len - 4, 4);
		w = (uint64_t)a | (uint64_t)b << 32;
		h = hash_mix(h, fold ? swar_lower(w) : w);
	} else if (len) {
		w = (uint64_t)p[0] | (uint64_t)p[len / 2] << 8 | (uint64_t)p[len - 1] << 16;
		h = hash_mix(h, fold ? swar_lower(w) : w);
	}
	/* the length after the bytes, not with the first word: there, keys of
	 * two lengths whose first words differ as their lengths do ("b1" and
	 * "c11") shared a hash under every seed, which no new seed parts */
	h ^= n;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

uint32_t ibdir_hash(uint64_t seed, unsigned tab, const void *key, size_t len)
{
	return hash_key(seed, tab, key, len);
}

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

/* ---- front coding (IBDIR_REC_PACKED) ------------------------------------------------ */

/* How many leading bytes @a and @b (@n bytes each at least) share. */
static size_t shared_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t s = 0;

	while (s < n && a[s] == b[s])
		s++;
	return s;
}

/* How many bytes 16-byte item @it shares with the one before it at its
 * start (*@s, at most 15) and then at its end (the return, at most 15). */
static size_t shared_ends(const uint8_t *it, size_t *s)
{
	size_t t = 0;

	*s = shared_bytes(it - 16, it, 15);
	while (t < 15 && *s + t < 16 && it[-1 - t] == it[15 - t])
		t++;
	return t;
}

/* Would any of the @n 16-byte items at @it share bytes at its end that
 * its start does not give (IBDIR_REC_PACKED_ENDS)? */
static bool ends_help(const uint8_t *it, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		size_t s;

		it += 16;
		if (shared_ends(it, &s) && shared_bytes(it - 16, it, 16) < 16)
			return true;
	}
	return false;
}

/* The @n 16-byte items at *@in to @p, each after the first as the bytes
 * it shares with the one before: with @ends at its start (s) and at its
 * end (t), s << 4 | t in one byte (0..15 each, s + t <= 16), then the bytes
 * between; else at its start, a byte 0..16, then the rest. */
static uint8_t *pack_16(uint8_t *p, const uint8_t **in, unsigned n, bool ends)
{
	const uint8_t *it = *in;

	for (unsigned i = 0; i < n; i++, it += 16) {
		size_t s = 0, t = 0;

		if (i && ends) {
			t = shared_ends(it, &s);
			*p++ = (uint8_t)(s << 4 | t);
		} else if (i) {
			s = shared_bytes(it - 16, it, 16);
			*p++ = (uint8_t)s;
		}
		memcpy(p, it + s, 16 - s - t);
		p += 16 - s - t;
	}
	*in = it;
	return p;
}

size_t ibdir_rec_pack(const uint8_t *rec, size_t len, uint8_t *out)
{
	const uint8_t *in = rec + sizeof(struct ibdir_rec), *prev = NULL;
	uint8_t *p = out + sizeof(struct ibdir_rec);
	struct ibdir_rec hdr;
	size_t rest;
	bool ends;

	memcpy(&hdr, rec, sizeof(hdr));
	/* sharing at both ends only where it saves something: a record like
	 * any other a reader from before the flag reads too */
	ends = ends_help(in, hdr.n_gids) || ends_help(in + 16u * hdr.n_gids, hdr.n_v6);
	p = pack_16(p, &in, hdr.n_gids, ends);
	p = pack_16(p, &in, hdr.n_v6, ends);
	memcpy(p, in, 4u * hdr.n_v4);
	p += 4u * hdr.n_v4;
	in += 4u * hdr.n_v4;
	for (unsigned i = 0; i < hdr.n_names; i++) {
		size_t l = *in,
		       s = prev ? shared_bytes(prev + 1, in + 1, l < *prev ? l : *prev) : 0;

		*p++ = (uint8_t)l;
		if (prev)
			*p++ = (uint8_t)s;
		memcpy(p, in + 1 + s, l - s);
		p += l - s;
		prev = in;
		in += 1 + l;
	}
	/* the endpoint sets and endpoints, as they are */
	rest = len - (size_t)(in - rec);
	memcpy(p, in, rest);
	p += rest;
	/* packed only when that saves an eighth of the block or more: a few
	 * bytes are not worth what unpacking adds to every hit */
	if ((((size_t)(p - out) + 7) & ~(size_t)7) * 8 > ((len + 7) & ~(size_t)7) * 7) {
		memcpy(out, rec, len);
		return len;
	}
	hdr.flags |= (uint16_t)(IBDIR_REC_PACKED | (ends ? IBDIR_REC_PACKED_ENDS : 0));
	hdr.data_len = (uint16_t)(p - out - sizeof(hdr));
	memcpy(out, &hdr, sizeof(hdr));
	return (size_t)(p - out);
}

/* Move @n bytes from @from down to @to (never after it), a word at a time
 * while a word is left: each word is loaded before its store, and a store
 * reaches no byte not loaded yet since @to <= @from. */
static inline __attribute__((always_inline)) void move_down(uint8_t *to, const uint8_t *from,
							    size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, from + i, 8);
		memcpy(to + i, &w, 8);
	}
	for (; i < n; i++)
		to[i] = from[i];
}

/* Sixteen bytes at @o: the first @s (0..16) of the 16 at @head, then the
 * rest of the 16 at @tail. Loaded whole and stored whole: no call and no
 * loop to copy a few bytes. The caller sees that the store reaches no
 * input not read yet and that both loads are inside the buffer. */
static inline __attribute__((always_inline)) void put16(uint8_t *o, const uint8_t *head,
							const uint8_t *tail, size_t s)
{
#ifdef __SSE2__
	/* from byte 16 - s: s bytes of ones, then zeros */
	static const uint8_t ones_then_zeros[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	__m128i t = _mm_loadu_si128((const __m128i *)(const void *)tail);
	__m128i mask = _mm_loadu_si128((const __m128i *)(const void *)(ones_then_zeros + 16 - s));
	__m128i h = s ? _mm_loadu_si128((const __m128i *)(const void *)head) : _mm_setzero_si128();

	_mm_storeu_si128((__m128i *)(void *)o,
			 _mm_or_si128(_mm_and_si128(mask, h), _mm_andnot_si128(mask, t)));
#else
	uint8_t item[16];

	memcpy(item, tail, 16);
	if (s)
		memcpy(item, head, s);
	memcpy(o, item, 16);
#endif
}

/* Sixteen bytes at @o: the 16 at @prev with its bytes @s .. @s + @r - 1
 * (@s + @r <= 16) the @r at @in. Loaded whole and stored whole, as put16(),
 * when the 16 bytes from @in - @s end by @lim (the bytes past @in + @r are
 * loaded and left out), else byte by byte. The caller sees that the store
 * reaches no input not read yet and that @in - @s is inside the buffer. */
static inline __attribute__((always_inline)) void put16_mid(uint8_t *o, const uint8_t *prev,
							    const uint8_t *in, size_t s, size_t r,
							    const uint8_t *lim)
{
	uint8_t item[16];

#ifdef __SSE2__
	static const uint8_t ones_then_zeros[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	if ((size_t)(lim - in) >= 16 - s) {
		/* from byte 16 - x: x bytes of ones; the middle is ones from s
		 * to s + r */
		__m128i to_end = _mm_loadu_si128(
			(const __m128i *)(const void *)(ones_then_zeros + 16 - (s + r)));
		__m128i to_s =
			_mm_loadu_si128((const __m128i *)(const void *)(ones_then_zeros + 16 - s));
		__m128i mid = _mm_andnot_si128(to_s, to_end);
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in - s));
		__m128i p = _mm_loadu_si128((const __m128i *)(const void *)prev);

		_mm_storeu_si128((__m128i *)(void *)o,
				 _mm_or_si128(_mm_and_si128(mid, v), _mm_andnot_si128(mid, p)));
		return;
	}
#else
	(void)lim;
#endif
	memcpy(item, prev, 16);
	memcpy(item + s, in, r);
	memcpy(o, item, 16);
}

/* Unpack @n 16-byte items from *@in (up to @end) to *@out, the data
 * unpacked starting at @data (past IBDIR_DATA_MAX bytes of it: no record
 * the writer makes, -EBADMSG). Every write stays before the input not read
 * yet: -EMSGSIZE when it would not. Items coded by their start alone (a
 * record without IBDIR_REC_PACKED_ENDS, from a daemon before it). */
static int unpack_16(uint8_t **out, const uint8_t **in, const uint8_t *end, const uint8_t *data,
		     unsigned n)
{
	uint8_t *o = *out;
	const uint8_t *i = *in;

	for (unsigned k = 0; k < n; k++, o += 16) {
		size_t s = 0, r;

		if (k) {
			if (i >= end)
				return -EBADMSG;
			s = *i++;
		}
		if (s > 16 || (size_t)(end - i) < 16 - s)
			return -EBADMSG;
		r = 16 - s;
		if ((size_t)(o - data) + 16 > IBDIR_DATA_MAX)
			return -EBADMSG;
		if (o + 16 > i + r)
			return -EMSGSIZE;
		/* the 16 bytes that end where the item does (i - s is past the
		 * record's header and first item) */
		put16(o, o - 16, i - s, s);
		i += r;
	}
	*out = o;
	*in = i;
	return 0;
}

/* unpack_16() of items coded by their start and end (pack_16(),
 * IBDIR_REC_PACKED_ENDS); @lim is the end of the buffer. */
static int unpack_16_ends(uint8_t **out, const uint8_t **in, const uint8_t *end,
			  const uint8_t *data, const uint8_t *lim, unsigned n)
{
	uint8_t *o = *out;
	const uint8_t *i = *in;

	for (unsigned k = 0; k < n; k++, o += 16) {
		size_t s = 0, t = 0, r;

		if (k) {
			if (i >= end)
				return -EBADMSG;
			s = *i >> 4;
			t = *i++ & 15u;
			if (s + t > 16)
				return -EBADMSG;
		}
		r = 16 - s - t;
		if ((size_t)(end - i) < r)
			return -EBADMSG;
		if ((size_t)(o - data) + 16 > IBDIR_DATA_MAX)
			return -EBADMSG;
		if (o + 16 > i + r)
			return -EMSGSIZE;
		if (k)
			put16_mid(o, o - 16, i, s, r, lim); /* i - s: past the first item */
		else
			put16(o, o, i, 0);
		i += r;
	}
	*out = o;
	*in = i;
	return 0;
}

/* Unpack @n names from *@in (up to @end) to *@out, as unpack_16(); @lim is
 * the end of the buffer. */
static int unpack_names(uint8_t **out, const uint8_t **in, const uint8_t *end, const uint8_t *data,
			const uint8_t *lim, unsigned n)
{
	uint8_t *o = *out, *prev = NULL;
	const uint8_t *i = *in;

	for (unsigned k = 0; k < n; k++) {
		size_t l, s = 0, r;

		if (i >= end)
			return -EBADMSG;
		l = *i++;
		if (prev) {
			if (i >= end)
				return -EBADMSG;
			s = *i++;
			if (s > l || s > *prev)
				return -EBADMSG;
		}
		r = l - s;
		if ((size_t)(end - i) < r || (size_t)(o - data) + 1 + l > IBDIR_DATA_MAX)
			return -EBADMSG;
		if (o + 1 + l > i + r)
			return -EMSGSIZE;
		if (l <= 16 && o + 17 <= i + r && i - s + 16 <= lim) {
			/* a short name (most are), stored as 16 bytes, those
			 * past it written again by what follows: room for them
			 * before the input not read yet */
			put16(o + 1, prev ? prev + 1 : o, i - s, s);
		} else {
			/* forward, never past the bytes not read yet (o + 1 + s
			 * <= i); the prefix from before @o */
			for (size_t j = 0; j < r; j++)
				o[1 + s + j] = i[j];
			for (size_t j = 0; j < s; j++)
				o[1 + j] = prev[1 + j];
		}
		*o = (uint8_t)l;
		prev = o;
		o += 1 + l;
		i += r;
	}
	*out = o;
	*in = i;
	return 0;
}

/* Are the header's four counts within their arrays (names, IPv4, IPv6,
 * GIDs)? All four at once: a byte over its limit, once the limit's distance
 * to 0x7f is added, has its top bit set (no carry leaves a byte below 0x80:
 * 0x7f + 0x7f < 0x100), and so has a byte over 0x7f. */
IBRES_HOT static inline __attribute__((always_inline)) bool counts_ok(const struct ibdir_rec *hdr)
{
	_Static_assert(IBRES_HOST_NAMES_MAX < 0x80 && IBRES_HOST_ADDRS_MAX < 0x80 &&
			       IBRES_HOST_GIDS_MAX < 0x80,
		       "the limits of the counts' check");
	_Static_assert(offsetof(struct ibdir_rec, n_gids) ==
			       offsetof(struct ibdir_rec, n_names) + 3,
		       "counts side by side, n_names first");
	static const uint8_t to_7f[4] = {0x7f - IBRES_HOST_NAMES_MAX, 0x7f - IBRES_HOST_ADDRS_MAX,
					 0x7f - IBRES_HOST_ADDRS_MAX, 0x7f - IBRES_HOST_GIDS_MAX};
	uint32_t counts, add;

	memcpy(&counts, (const uint8_t *)hdr + offsetof(struct ibdir_rec, n_names), 4);
	memcpy(&add, to_7f, 4); /* in the counts' byte order */
	return !(((counts + add) | counts) & 0x80808080u);
}

int ibdir_rec_unpack(uint8_t *buf, size_t cap, size_t at, size_t len, size_t *out_len)
{
	size_t room = (len + 7) & ~(size_t)7, data;
	struct ibdir_rec hdr;
	const uint8_t *in, *end;
	uint8_t *o;
	int ret;

	if (len < sizeof(hdr))
		return -EBADMSG;
	if (at > cap || len > cap - at)
		return -EMSGSIZE;
	memcpy(&hdr, buf + at, sizeof(hdr));
	if (!(hdr.flags & IBDIR_REC_PACKED)) {
		memmove(buf, buf + at, len);
		*out_len = len;
		return 0;
	}
	/* counts and a length the writer never makes: refused before any
	 * unpacking (nor may the data unpacked pass IBDIR_DATA_MAX bytes), so
	 * that IBDIR_REC_MAX bytes suffice whatever the input */
	if (hdr.data_len > len - sizeof(hdr) || !counts_ok(&hdr))
		return -EBADMSG;
	/* unpacked forward from the buffer's start, from the end of it: the
	 * writes never pass what is not read yet */
	if (room > cap)
		room = cap;
	if (at < cap - room) {
		memmove(buf + cap - room, buf + at, len);
		at = cap - room;
	}
	in = buf + at + sizeof(hdr);
	end = in + hdr.data_len;
	o = buf + sizeof(hdr);
	if (hdr.flags & IBDIR_REC_PACKED_ENDS) {
		ret = unpack_16_ends(&o, &in, end, buf + sizeof(hdr), buf + cap, hdr.n_gids);
		if (!ret)
			ret = unpack_16_ends(&o, &in, end, buf + sizeof(hdr), buf + cap, hdr.n_v6);
	} else {
		ret = unpack_16(&o, &in, end, buf + sizeof(hdr), hdr.n_gids);
		if (!ret)
			ret = unpack_16(&o, &in, end, buf + sizeof(hdr), hdr.n_v6);
	}
	if (!ret && (size_t)(end - in) < 4u * hdr.n_v4)
		ret = -EBADMSG;
	if (!ret) {
		move_down(o, in, 4u * hdr.n_v4); /* as long as they were: o <= in */
		o += 4u * hdr.n_v4;
		in += 4u * hdr.n_v4;
		ret = unpack_names(&o, &in, end, buf + sizeof(hdr), buf + cap, hdr.n_names);
	}
	if (ret)
		return ret;
	move_down(o, in, (size_t)(end - in)); /* the endpoint sets, as long */
	o += end - in;
	data = (size_t)(o - buf) - sizeof(hdr);
	if (data > IBDIR_DATA_MAX)
		return -EBADMSG;
	hdr.flags &= (uint16_t)~(IBDIR_REC_PACKED | IBDIR_REC_PACKED_ENDS);
	hdr.data_len = (uint16_t)data;
	memcpy(buf, &hdr, sizeof(hdr));
	*out_len = sizeof(hdr) + data;
	return 0;
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

/* What a look-up by item @at_key (key_index()'s order) of table @tab gives
 * from the view @v over the copy @rec, its lengths checked: a record of
 * several endpoints cut, in place, to the key's endpoints (a name of two or
 * more of them is the host's: the whole record), the names it keeps
 * checked. 0 or -EBADMSG. */
static int view_answer(uint8_t *rec, struct ibdir_view *v, unsigned tab, unsigned at_key)
{
	uint32_t want;

	if (!v->eps)
		return 0;
	want = eps_of(v, at_key);
	if (tab == IBDIR_TAB_NAME && (want & (want - 1)))
		want = UINT32_MAX;
	return view_select(rec, v, want) || view_names_ok(v) ? -EBADMSG : 0;
}

/* The view of the copy @rec (@len bytes) that a look-up by the key
 * @key/@klen of table @tab gives: checked (view_init_named()), the key
 * found, the view cut to the key's endpoints (view_answer()). 0, 1 when the
 * record does not list the key, or -EBADMSG. */
IBRES_HOT static inline __attribute__((always_inline)) int
view_for_key(uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen,
	     struct ibdir_view *v)
{
	int named, at;

	if (view_init_named(rec, len, v, tab == IBDIR_TAB_NAME ? key : NULL, klen, &named))
		return -EBADMSG;
	at = tab == IBDIR_TAB_NAME ? named : key_index(v, tab, key, klen);
	if (at < 0)
		return 1;
	return view_answer(rec, v, tab, (unsigned)at);
}

int ibdir_rec_answer(uint8_t *rec, size_t len, unsigned tab, const void *key, size_t klen,
		     struct ibres_hostrec *out)
{
	struct ibdir_view v;
	int ret = view_for_key(rec, len, tab, key, klen, &v);

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

IBRES_HOT static int span_ok(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

int ibdir_geom_read(const void *base, size_t size, struct ibdir_geom *g)
{
	const struct ibdir_header *hd = base;

	if (size < IBDIR_HEADER_SPACE || size > IBDIR_FILE_MAX)
		return -EBADMSG;
	if (memcmp(hd->magic, IBDIR_MAGIC, sizeof(hd->magic)) || hd->version != IBDIR_VERSION ||
	    hd->header_size != sizeof(*hd) || load64(&hd->file_size) != size)
		return -EBADMSG;
	/* copied, then checked: what is used is what was checked */
	g->seed = load64(&hd->seed);
	g->flags = __atomic_load_n(&hd->flags, __ATOMIC_RELAXED);
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		g->tables[t].off = __atomic_load_n(&hd->tables[t].off, __ATOMIC_RELAXED);
		g->tables[t].n_slots = __atomic_load_n(&hd->tables[t].n_slots, __ATOMIC_RELAXED);
	}
	g->rec_off = __atomic_load_n(&hd->rec_off, __ATOMIC_RELAXED);
	g->rec_size = __atomic_load_n(&hd->rec_size, __ATOMIC_RELAXED);
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		uint32_t off = g->tables[t].off, n = g->tables[t].n_slots;

		if (!n || n > IBDIR_SLOTS_MAX || (off & 7) ||
		    !span_ok(off, (uint64_t)n * 8, IBDIR_HEADER_SPACE, size))
			return -EBADMSG;
	}
	if ((g->rec_off & 7) || !span_ok(g->rec_off, g->rec_size, IBDIR_HEADER_SPACE, size))
		return -EBADMSG;
	return 0;
}

int ibdir_header_check(const void *base, size_t size)
{
	struct ibdir_geom g;

	return ibdir_geom_read(base, size, &g);
}

/* Two words as one 16-byte store. The copy is read at once, in pieces of
 * other sizes (the header as two 16-byte halves, names 4 and 8 bytes at a
 * time at any offset): a load is served from the store buffer only when one
 * store holds all of it, and one that straddles two stores waits until they
 * reach the cache (about 6 ns a hit, measured, with 8-byte stores). */
IBRES_HOT static inline void store16(uint8_t *to, uint64_t w0, uint64_t w1)
{
#ifdef __SSE2__
	_mm_storeu_si128((__m128i *)(void *)to, _mm_set_epi64x((long long)w1, (long long)w0));
#else
	memcpy(to, &w0, 8);
	memcpy(to + 8, &w1, 8);
#endif
}

/* Copy the record at @off (inside [@lo, @hi)) into @buf (@cap bytes, a
 * multiple of 8): a packed one to its end, where it is unpacked from
 * (ibdir_rec_unpack), a plain one to its start. 0 with *@rec where it
 * starts, *@len and the seq it was copied under in *@seq,
 * -EAGAIN when the writer kept changing it,
 * -EMSGSIZE when it is larger than @cap, -EBADMSG when it cannot be a
 * record. */
IBRES_HOT static int rec_copy(const uint8_t *base, uint64_t lo, uint64_t hi, uint32_t off,
			      uint8_t *buf, size_t cap, uint8_t **rec, size_t *len, uint32_t *seq)
{
	const struct ibdir_rec *r = (const void *)(base + off);

	if ((off & 7) || !span_ok(off, sizeof(*r), lo, hi))
		return -EBADMSG;
	for (unsigned t = 0; t < READ_TRIES; t++) {
		uint32_t s1 = load32_acquire(&r->seq);
		uint16_t data_len = __atomic_load_n(&r->data_len, __ATOMIC_RELAXED);
		uint16_t packed = __atomic_load_n(&r->flags, __ATOMIC_RELAXED) & IBDIR_REC_PACKED;
		size_t n = (sizeof(*r) + data_len + 7) & ~(size_t)7;
		uint8_t *to;
		struct ibdir_rec got;

		if (s1 & 1)
			continue;
		/* sized by the length as read once (the copy's own must agree);
		 * a length that does not fit counts only if it was no tear */
		if (data_len > IBDIR_DATA_MAX || !span_ok(off, n, lo, hi) || n > cap) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) != s1)
				continue;
			return n > cap && data_len <= IBDIR_DATA_MAX && span_ok(off, n, lo, hi)
				       ? -EMSGSIZE
				       : -EBADMSG;
		}
		/* a packed one where it is unpacked from, a plain one where it
		 * is read */
		to = packed ? buf + cap - n : buf;
		/* sixteen bytes a step (n is a multiple of 8, at least 32) */
		for (size_t i = 0; i + 16 <= n; i += 16)
			store16(to + i, load64((const uint8_t *)r + i),
				load64((const uint8_t *)r + i + 8));
		if (n & 8) {
			uint64_t w = load64((const uint8_t *)r + n - 8);

			memcpy(to + n - 8, &w, 8);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) != s1)
			continue;
		memcpy(&got, to, sizeof(got));
		if (got.data_len != data_len || (got.flags & IBDIR_REC_PACKED) != packed)
			continue;
		*rec = to;
		*len = sizeof(*r) + data_len;
		*seq = s1;
		return 0;
	}
	return -EAGAIN;
}

/* Is the name (@key, @len bytes) outside every pattern of @hd? Patterns are
 * read under scope_seq. 1, 0, or -EAGAIN. */
IBRES_HOT static int outside_patterns(const struct ibdir_header *hd, const void *key, size_t len,
				      uint64_t *auth_from)
{
	char name[IBRES_NAME_MAX + 1], pats[IBDIR_PATTERNS_MAX][IBDIR_PATTERN_LEN];

	memcpy(name, key, len);
	name[len] = '\0';
	for (unsigned t = 0; t < READ_TRIES; t++) {
		uint32_t s1 = load32_acquire(&hd->scope_seq), n;

		if (s1 & 1)
			continue;
		*auth_from = load64(&hd->authoritative_from_ms);
		n = __atomic_load_n(&hd->n_patterns, __ATOMIC_RELAXED);
		if (n > IBDIR_PATTERNS_MAX)
			return -EBADMSG;
		for (unsigned i = 0; i < n; i++) {
			for (size_t j = 0; j < IBDIR_PATTERN_LEN; j += 8) {
				uint64_t w = load64(&hd->patterns[i][j]);

				memcpy(&pats[i][j], &w, 8);
			}
			pats[i][IBDIR_PATTERN_LEN - 1] = '\0';
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&hd->scope_seq, __ATOMIC_RELAXED) == s1)
			return !hostrec_name_in_patterns(name, pats[0], IBDIR_PATTERN_LEN, n);
	}
	return -EAGAIN;
}

IBRES_HOT static int key_ok(unsigned tab, size_t len)
{
	switch (tab) {
	case IBDIR_TAB_NAME:
		/* a NUL in it matches no name a record holds (names are checked);
		 * a miss then asks the daemon (miss_verdict) */
		return len && len <= IBRES_NAME_MAX;
	case IBDIR_TAB_IPV4:
		return len == 4;
	default:
		return len == 16;
	}
}

/* Not in the tables: what the directory says of such a key. */
IBRES_HOT static int miss_verdict(const struct ibdir_header *hd, unsigned tab, const void *key,
				  size_t len, uint64_t now_ms)
{
	uint64_t auth_from = IBDIR_NEVER;
	int outside;

	if (tab == IBDIR_TAB_NAME) {
		/* not a name anyone can hold: no verdict from us */
		if (memchr(key, '\0', len))
			return -EAGAIN;
		outside = outside_patterns(hd, key, len, &auth_from);
		if (outside < 0)
			return outside;
		if (outside)
			return -ENODATA;
	} else {
		uint32_t s = load32_acquire(&hd->scope_seq);

		auth_from = load64(&hd->authoritative_from_ms);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((s & 1) || __atomic_load_n(&hd->scope_seq, __ATOMIC_RELAXED) != s)
			return -EAGAIN;
	}
	return auth_from != IBDIR_NEVER && now_ms >= auth_from ? -ENODATA : -EAGAIN;
}

/* probe(): the slot moved while its record was copied; probe again */
#define PROBE_AGAIN 2

/* Probe table @tab for the key. 0 (found, *@v over @buf), 1 (not there),
 * PROBE_AGAIN, or < 0. */
IBRES_HOT static int probe(const uint8_t *base, const struct ibdir_geom *g, unsigned tab,
			   const void *key, size_t len, uint64_t now_ms, uint8_t *buf, size_t cap,
			   struct ibdir_view *v)
{
	uint32_t off = g->tables[tab].off, n = g->tables[tab].n_slots;
	uint64_t lo = g->rec_off, hi = lo + g->rec_size;
	uint32_t hash, i;

	hash = hash_key(g->seed, tab, key, len);
	i = ibdir_home(hash, n);
	for (unsigned p = 0; p < n && p < IBDIR_PROBES_MAX; p++, i = ibdir_next(i, n)) {
		uint64_t slot =
			__atomic_load_n((const uint64_t *)(base + off) + i, __ATOMIC_ACQUIRE);
		uint32_t at = (uint32_t)slot;
		struct ibdir_rec hdr;
		uint8_t *rec;
		size_t rlen;
		uint32_t seq;
		int ret;

		if (at == IBDIR_SLOT_EMPTY)
			return 1;
		if ((uint32_t)(slot >> 32) != hash) {
			/* in Robin Hood order, a key whose home comes after ours:
			 * ours would be before it (a slot moving under us makes
			 * this a miss table_seq does not let stand) */
			if ((g->flags & IBDIR_ORDERED) && ibdir_dist(slot, i, n) < p)
				return 1;
			continue;
		}
		if (at == IBDIR_SLOT_DELETED)
			continue;
		if (at & IBDIR_SLOT_ASK)
			return -EAGAIN; /* the record lists two keys of this hash */
		ret = rec_copy(base, lo, hi, at, buf, cap, &rec, &rlen, &seq);
		if (ret)
			return ret;
		/* a freed block is written again for another record, but only
		 * after every slot leading to it was changed. The slot loaded again
		 * after the copy (ordered by the copy's acquire fence) shows that
		 * change; and should it lead to the block again (freed and taken
		 * again since), its store came after the block's seq moved, which
		 * the seq loaded after it then shows */
		if (__atomic_load_n((const uint64_t *)(base + off) + i, __ATOMIC_ACQUIRE) != slot ||
		    __atomic_load_n(&((const struct ibdir_rec *)(const void *)(base + at))->seq,
				    __ATOMIC_RELAXED) != seq)
			return PROBE_AGAIN;
		memcpy(&hdr, rec, sizeof(hdr));
		if (!hdr.expires_ms)
			continue; /* a freed block: its slots are going */
		if (hdr.flags & IBDIR_REC_PACKED) {
			/* IBDIR_REC_MAX bytes unpack any record that can be one */
			ret = ibdir_rec_unpack(buf, cap, (size_t)(rec - buf), rlen, &rlen);
			if (ret)
				return ret == -EMSGSIZE && cap < IBDIR_REC_MAX ? ret : -EBADMSG;
			rec = buf;
		}
		/* a block the writer never makes (damaged, or no name) is no
		 * collision to probe past: that would end in an authoritative
		 * "no such host"; a name is looked for as the names are checked */
		ret = view_for_key(rec, rlen, tab, key, len, v);
		if (ret < 0)
			return -EBADMSG;
		if (ret)
			continue; /* a collision, or the key moved to another host */
		if (v->expires_ms <= now_ms)
			return -EAGAIN; /* the daemon refreshes or forgets it */
		v->ttl = hostrec_ttl_left(v->expires_ms, now_ms);
		return 0;
	}
	return -EAGAIN; /* too long a run: not worth it */
}

IBRES_HOT int ibdir_find(const void *base, size_t size, const struct ibdir_geom *g, uint64_t now_ms,
			 uint16_t type, const void *key, size_t len, void *buf, size_t cap,
			 struct ibdir_view *v)
{
	const struct ibdir_header *hd = base;
	uint64_t beat;
	int tab = ibdir_table_of(type);

	if (!base || size < IBDIR_HEADER_SPACE)
		return -EBADMSG;
	if (load32_acquire(&hd->state) != IBDIR_LIVE)
		return -ESTALE;
	if (tab < 0 || !key || !key_ok((unsigned)tab, len))
		return -EAGAIN;
	beat = load64(&hd->heartbeat_ms);
	/* its daemon stopped or died: another may publish a new one */
	if (now_ms > beat + IBDIR_HEARTBEAT_STALE_MS || beat > now_ms + IBDIR_HEARTBEAT_STALE_MS)
		return -ESTALE;
	cap &= ~(size_t)7;
	for (unsigned t = 0; t < READ_TRIES; t++) {
		uint32_t seq = load32_acquire(&hd->table_seq);
		int ret;

		/* a hit is checked against the record itself: whatever the slots
		 * are doing, the record says which keys it holds */
		ret = probe(base, g, (unsigned)tab, key, len, now_ms, buf, cap, v);
		if (ret == PROBE_AGAIN)
			continue;
		if (ret <= 0)
			return ret;
		/* not there: believe it only if no slot changed meanwhile */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((seq & 1) || __atomic_load_n(&hd->table_seq, __ATOMIC_RELAXED) != seq)
			continue;
		return miss_verdict(hd, (unsigned)tab, key, len, now_ms);
	}
	return -EAGAIN;
}

int ibdir_lookup(const void *base, size_t size, uint64_t now_ms, uint16_t type, const void *key,
		 size_t len, struct ibres_hostrec *rec)
{
	uint64_t buf[IBDIR_REC_MAX / 8];
	struct ibdir_geom g;
	struct ibdir_view v;
	int ret;

	if (!base || ibdir_geom_read(base, size, &g))
		return -EBADMSG;
	ret = ibdir_find(base, size, &g, now_ms, type, key, len, buf, sizeof(buf), &v);
	if (ret)
		return ret;
	ibdir_view_to_rec(&v, rec);
	return 0;
}
