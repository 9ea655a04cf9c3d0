// SPDX-License-Identifier: MIT
/*
 * The front coding of a shared directory record (IBDIR_REC_PACKED,
 * hostdir.h): the writer's packing and the reader's unpacking in place.
 * Every read and write of the unpacking stays inside the buffer it is given
 * and before the input not read yet; a record the writer never makes is
 * refused, never unpacked past IBDIR_DATA_MAX bytes.
 */
#include "hostdir.h"
#include "ibdir_impl.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
 * the writer makes, -EBADMSG); @lim is the end of the buffer. Each item
 * after the first is coded by what it shares with the one before: with
 * @ends (IBDIR_REC_PACKED_ENDS, pack_16()) s << 4 | t, at its start and
 * end, else (a record from a daemon before the flag) s alone, 0..16. Every
 * write stays before the input not read yet: -EMSGSIZE when it would not. */
static int unpack_16(uint8_t **out, const uint8_t **in, const uint8_t *end, const uint8_t *data,
		     const uint8_t *lim, unsigned n, bool ends)
{
	uint8_t *o = *out;
	const uint8_t *i = *in;

	for (unsigned k = 0; k < n; k++, o += 16) {
		size_t s = 0, t = 0, r;

		if (k) {
			if (i >= end)
				return -EBADMSG;
			s = ends ? *i >> 4 : *i;
			t = ends ? *i & 15u : 0;
			i++;
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
		/* i - s is past the record's header and first item; with t 0
		 * the load ends where the item does, inside the input */
		if (k)
			put16_mid(o, o - 16, i, s, r, lim);
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

int ibdir_rec_unpack(uint8_t *buf, size_t cap, size_t at, size_t len, size_t *out_len)
{
	size_t room = (len + 7) & ~(size_t)7, data;
	struct ibdir_rec hdr;
	const uint8_t *in, *end;
	uint8_t *o;
	bool ends;
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
	ends = hdr.flags & IBDIR_REC_PACKED_ENDS;
	ret = unpack_16(&o, &in, end, buf + sizeof(hdr), buf + cap, hdr.n_gids, ends);
	if (!ret)
		ret = unpack_16(&o, &in, end, buf + sizeof(hdr), buf + cap, hdr.n_v6, ends);
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
