// SPDX-License-Identifier: MIT
/*
 * The shared directory's front-coded records (lib/hostdir.h,
 * IBDIR_REC_PACKED): packing and unpacking give back every byte the encoder
 * wrote, whatever the record; unpacking in place never reads or writes
 * outside the buffer it was given, and says when that buffer is too small;
 * a packed record whose coding does not add up is refused; the decoder and
 * the key check read packed records as plain ones.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir_image.h"
#include "hostdir.h"
#include "hostrec.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11) % n;
}

/* @n bytes into @p: a copy of @prev's first bytes, some of them, random
 * ones, and often a copy of some of its last bytes, so that the coding
 * shares anything from 0 to all of it at either end. */
static void like(uint8_t *p, const uint8_t *prev, size_t n)
{
	size_t keep = prev ? rnd((uint32_t)n + 1) : 0;
	size_t tail = prev && rnd(2) ? rnd((uint32_t)(n - keep) + 1) : 0;

	for (size_t i = 0; i < n; i++)
		p[i] = i < keep || i >= n - tail ? prev[i] : (uint8_t)rnd(256);
}

/* A name of @len bytes hostrec_name_ok() takes, some of @prev's first
 * bytes then letters and digits: a letter first, a dot every 40 bytes (no
 * label longer than 63), and never last. */
static void name_like(char *name, const char *prev, size_t len)
{
	size_t keep = prev ? rnd((uint32_t)(strlen(prev) < len ? strlen(prev) : len) + 1) : 0;

	for (size_t i = 0; i < len; i++)
		name[i] = i < keep	 ? prev[i]
			  : !i		 ? (char)('a' + rnd(26))
			  : i % 40 == 39 ? '.'
					 : "abcdefgh0123456789"[rnd(18)];
	if (name[len - 1] == '.')
		name[len - 1] = 'z';
	name[len] = '\0';
	assert_true(hostrec_name_ok(name, len));
}

static void random_record(struct ibres_hostrec *r, struct hostrec_eps *e, bool with_eps)
{
	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	r->n_names = 1 + rnd(IBRES_HOST_NAMES_MAX);
	r->n_gids = rnd(IBRES_HOST_GIDS_MAX + 1);
	r->n_v6 = rnd(IBRES_HOST_ADDRS_MAX + 1);
	r->n_v4 = rnd(IBRES_HOST_ADDRS_MAX + 1);
	for (unsigned i = 0; i < r->n_names; i++)
		name_like(r->names[i], i ? r->names[i - 1] : NULL,
			  1 + rnd(rnd(8) ? 30 : IBRES_NAME_MAX));
	for (unsigned i = 0; i < r->n_gids; i++)
		like(r->gids[i], i ? r->gids[i - 1] : NULL, 16);
	for (unsigned i = 0; i < r->n_v6; i++)
		like(r->v6[i].s6_addr, i ? r->v6[i - 1].s6_addr : NULL, 16);
	for (unsigned i = 0; i < r->n_v4; i++)
		r->v4[i].s_addr = (uint32_t)rnd(UINT32_MAX);
	r->qpn = rnd(1u << 24);
	r->lid = (uint16_t)rnd(0xc000);
	r->pkey = 0xffff;
	if (!with_eps)
		return;
	e->n_ep = 1 + rnd(HOSTREC_EPS_MAX);
	for (unsigned i = 0; i < IBRES_HOST_NAMES_MAX; i++)
		e->names[i] = 1u + rnd(UINT32_MAX);
	for (unsigned i = 0; i < IBRES_HOST_ADDRS_MAX; i++) {
		e->gids[i] = rnd(UINT32_MAX);
		e->v6[i] = rnd(UINT32_MAX);
		e->v4[i] = rnd(UINT32_MAX);
	}
	for (unsigned i = 0; i < e->n_ep; i++) {
		e->ep[i].qpn = rnd(1u << 24);
		e->ep[i].lid = (uint16_t)rnd(0xc000);
		e->ep[i].pkey = (uint16_t)(0x8000 | rnd(0x8000));
	}
}

/* Unpack the @len bytes of @rec copied at offset @at of a heap buffer of
 * exactly @cap bytes (so that a stray read or write is caught by ASan or
 * valgrind); on success @out gets the result. */
static int unpack_in(const uint8_t *rec, size_t len, size_t cap, size_t at, uint8_t *out,
		     size_t *out_len)
{
	uint8_t *buf = malloc(cap);
	int ret;

	assert_non_null(buf);
	memcpy(buf + at, rec, len);
	ret = ibdir_rec_unpack(buf, cap, at, len, out_len);
	if (!ret)
		memcpy(out, buf, *out_len);
	free(buf);
	return ret;
}

static size_t pack_start_only(const uint8_t *rec, size_t len, uint8_t *out);

/* Random records, plain and with endpoint sets: packed (and packed as a
 * daemon from before IBDIR_REC_PACKED_ENDS packs them: their start shared
 * only), then unpacked at
 * the end of the buffer (as ibdir_find does), at its start, and in every
 * buffer from too small to large enough, give back the encoder's bytes or
 * say -EMSGSIZE; never a record that is not the one packed. */
static void test_round_trip(void **state)
{
	static uint8_t plain[IBDIR_REC_MAX], packed[IBDIR_REC_MAX], got[IBDIR_REC_MAX];

	unsigned n_packed = 0;

	(void)state;
	for (unsigned round = 0; round < 800; round++) {
		struct ibres_hostrec r, out;
		struct hostrec_eps e;
		size_t len, plen, glen, room;

		random_record(&r, &e, round & 1);
		len = ibdir_rec_encode_eps(&r, round & 1 ? &e : NULL, IBDIR_NEVER, plain);
		if (round % 4 < 2) {
			plen = ibdir_rec_pack(plain, len, packed);
			assert_true(plen <= len);
			n_packed += plen < len;
		} else {
			plen = pack_start_only(plain, len, packed);
		}
		room = (plen + 7) & ~(size_t)7;
		/* as the reader does: at the end of the largest buffer */
		assert_int_equal(
			unpack_in(packed, plen, IBDIR_REC_MAX, IBDIR_REC_MAX - room, got, &glen),
			0);
		assert_int_equal(glen, len);
		assert_memory_equal(got, plain, len);
		/* at the start: moved to the end first */
		assert_int_equal(unpack_in(packed, plen, IBDIR_REC_MAX, 0, got, &glen), 0);
		assert_memory_equal(got, plain, len);
		/* the decoder and the key check take it packed */
		assert_int_equal(ibdir_rec_decode(packed, plen, &out), 0);
		assert_int_equal(out.n_names, r.n_names);
		assert_string_equal(out.names[r.n_names - 1], r.names[r.n_names - 1]);
		assert_int_equal(ibdir_rec_has_key(packed, plen, IBDIR_TAB_NAME,
						   r.names[r.n_names - 1],
						   strlen(r.names[r.n_names - 1])),
				 1);
		if (r.n_gids)
			assert_int_equal(ibdir_rec_has_key(packed, plen, IBDIR_TAB_GID,
							   r.gids[r.n_gids - 1], 16),
					 1);
		/* every buffer size near the record's: the right bytes, or too
		 * small; large enough from its plain size and the slack on */
		for (size_t cap = room; cap <= ((len + IBDIR_UNPACK_SLACK + 7) & ~(size_t)7);
		     cap += 8) {
			int ret = unpack_in(packed, plen, cap, cap - room, got, &glen);

			if (ret) {
				assert_int_equal(ret, -EMSGSIZE);
				assert_true(cap < len + IBDIR_UNPACK_SLACK);
				continue;
			}
			assert_int_equal(glen, len);
			assert_memory_equal(got, plain, len);
		}
	}
	/* most were packed: the unpacking above was not of plain copies */
	assert_true(n_packed >= 100);
}

/* An eight-rail host as test/fabric/emulate --rails 8 --planes names it:
 * node7 on every rail, aliases node7-ib0..7, every GID on fe80::/64, an
 * IPv4 address a rail (and with @v6, an IPv6 one), rail i's LID 7 + i. */
static void eight_rails(struct ibres_hostrec *r, struct hostrec_eps *e, bool v6)
{
	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	snprintf(r->names[0], sizeof(r->names[0]), "node7");
	e->names[0] = 0xff;
	for (unsigned i = 0; i < 8; i++) {
		snprintf(r->names[1 + i], sizeof(r->names[0]), "node7-ib%u", i);
		e->names[1 + i] = 1u << i;
		inet_pton(AF_INET6, "fe80::2:c903:0:7", r->gids[i]);
		r->gids[i][11] = (uint8_t)i;
		e->gids[i] = 1u << i;
		r->v6[i].s6_addr[0] = 0x20;
		r->v6[i].s6_addr[1] = 0x01;
		r->v6[i].s6_addr[2] = 0x0d;
		r->v6[i].s6_addr[3] = 0xb8;
		r->v6[i].s6_addr[5] = (uint8_t)i;
		r->v6[i].s6_addr[15] = 7;
		e->v6[i] = 1u << i;
		r->v4[i].s_addr = htonl(0xc6120000u | i << 8 | 7);
		e->v4[i] = 1u << i;
		e->ep[i].lid = (uint16_t)(7 + i);
		e->ep[i].pkey = 0xffff;
	}
	r->n_names = 9;
	r->n_gids = r->n_v4 = 8;
	r->n_v6 = v6 ? 8 : 0;
	e->n_ep = 8;
}

/* The eight-rail host packed is at least a fifth smaller; a record of one
 * GID and one name packs to no more than it was. */
static void test_rails_pack_small(void **state)
{
	uint8_t plain[IBDIR_REC_MAX], packed[IBDIR_REC_MAX];
	struct ibres_hostrec r;
	struct hostrec_eps e;
	size_t len, plen;

	(void)state;
	eight_rails(&r, &e, true);
	len = ibdir_rec_encode_eps(&r, &e, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	assert_true(plen * 5 <= len * 4);

	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "n");
	r.n_names = 1;
	r.n_gids = 1;
	r.gids[0][0] = 0xfe;
	len = ibdir_rec_encode(&r, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	assert_int_equal(plen, len);
	assert_memory_equal(packed, plain, len); /* plain: nothing to share */
}

/* The packed record @packed (@plen bytes) cut short, each length from the
 * header's to one byte less than it: refused, unpacked or decoded, and
 * nothing read past the copy. */
static void assert_cut_short_refused(const uint8_t *packed, size_t plen)
{
	static uint8_t bad[IBDIR_REC_MAX], got[IBDIR_REC_MAX];
	struct ibres_hostrec out;
	struct ibdir_rec hdr;
	size_t glen = 0;

	for (size_t cut = 0; cut < plen - sizeof(hdr); cut++) {
		memcpy(bad, packed, plen);
		memcpy(&hdr, bad, sizeof(hdr));
		hdr.data_len = (uint16_t)cut;
		memcpy(bad, &hdr, sizeof(hdr));
		assert_int_not_equal(
			unpack_in(bad, sizeof(hdr) + cut, IBDIR_REC_MAX, 0, got, &glen) ||
				ibdir_rec_decode(got, glen, &out),
			0);
	}
}

/* Packed records whose coding does not add up: each refused with -EBADMSG,
 * and nothing read past the record (the buffer ends where it does). */
static void test_bad_coding_refused(void **state)
{
	uint8_t plain[IBDIR_REC_MAX], packed[IBDIR_REC_MAX], bad[IBDIR_REC_MAX], got[IBDIR_REC_MAX];
	struct ibres_hostrec r, out;
	struct ibdir_rec hdr;
	size_t len, plen, glen, gid1, name1;

	(void)state;
	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "node1");
	snprintf(r.names[1], sizeof(r.names[1]), "node1-ib1");
	r.n_names = 2;
	inet_pton(AF_INET6, "fe80::1", r.gids[0]);
	inet_pton(AF_INET6, "fe80::2", r.gids[1]);
	r.n_gids = 2;
	len = ibdir_rec_encode(&r, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	assert_true(plen < len);
	memcpy(&hdr, packed, sizeof(hdr));
	assert_true(hdr.flags & IBDIR_REC_PACKED);
	/* the second GID's shared byte (15), the second name's (5); the GIDs
	 * share nothing at their end: their start alone is counted, as a
	 * daemon before IBDIR_REC_PACKED_ENDS counted it */
	gid1 = sizeof(hdr) + 16;
	assert_false(hdr.flags & IBDIR_REC_PACKED_ENDS);
	assert_int_equal(packed[gid1], 15);
	name1 = gid1 + 2 + 1 + 5;
	assert_int_equal(packed[name1], 9);
	assert_int_equal(packed[name1 + 1], 5);
	assert_int_equal(unpack_in(packed, plen, IBDIR_REC_MAX, 0, got, &glen), 0);
	/* read unpacked: the alias and the second GID are front-coded */
	assert_int_equal(ibdir_rec_has_key(packed, plen, IBDIR_TAB_NAME, "node1-ib1", 9), 1);
	assert_int_equal(ibdir_rec_has_key(packed, plen, IBDIR_TAB_GID, r.gids[1], 16), 1);
	assert_int_equal(ibdir_rec_decode(packed, plen, &out), 0);
	assert_string_equal(out.names[1], "node1-ib1");

	memcpy(bad, packed, plen);
	bad[gid1] = 17; /* more than a GID */
	assert_int_equal(unpack_in(bad, plen, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	assert_int_equal(ibdir_rec_decode(bad, plen, &out), -EBADMSG);
	/* IBDIR_REC_PACKED_ENDS on a plain record: a flag no reader takes there */
	memcpy(bad, plain, len);
	memcpy(&hdr, bad, sizeof(hdr));
	hdr.flags |= IBDIR_REC_PACKED_ENDS;
	memcpy(bad, &hdr, sizeof(hdr));
	assert_int_equal(ibdir_rec_decode(bad, len, &out), -EBADMSG);
	memcpy(bad, packed, plen);
	bad[name1 + 1] = 10; /* more than the name */
	assert_int_equal(unpack_in(bad, plen, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	bad[name1] = 7;
	bad[name1 + 1] = 6; /* more than the name before it (5) */
	assert_int_equal(unpack_in(bad, plen, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	assert_int_equal(ibdir_rec_has_key(bad, plen, IBDIR_TAB_NAME, "node1", 5), 0);
	/* cut short: each length from the header's to one byte less than it */
	assert_cut_short_refused(packed, plen);
	/* a data_len past the copy */
	assert_int_equal(unpack_in(packed, plen - 1, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	/* a view is never over a packed record */
	{
		struct ibdir_view v;

		assert_int_equal(ibdir_view_init(packed, plen, &v), -EBADMSG);
	}
}

/* ibdir_rec_pack() before IBDIR_REC_PACKED_ENDS: GIDs and IPv6 addresses
 * share their start only (a daemon from before writes these). */
static size_t pack_start_only(const uint8_t *rec, size_t len, uint8_t *out)
{
	const uint8_t *in = rec + sizeof(struct ibdir_rec), *prev = NULL;
	uint8_t *p = out + sizeof(struct ibdir_rec);
	struct ibdir_rec hdr;

	memcpy(&hdr, rec, sizeof(hdr));
	for (unsigned i = 0; i < (unsigned)hdr.n_gids + hdr.n_v6; i++, in += 16) {
		size_t s = 0;

		if (i && i != hdr.n_gids)
			while (s < 16 && in[s - 16] == in[s])
				s++;
		if (i && i != hdr.n_gids)
			*p++ = (uint8_t)s;
		memcpy(p, in + s, 16 - s);
		p += 16 - s;
	}
	memcpy(p, in, 4u * hdr.n_v4);
	p += 4u * hdr.n_v4;
	in += 4u * hdr.n_v4;
	for (unsigned i = 0; i < hdr.n_names; i++) {
		size_t l = *in, s = 0;

		while (prev && s < l && s < *prev && prev[1 + s] == in[1 + s])
			s++;
		*p++ = (uint8_t)l;
		if (prev)
			*p++ = (uint8_t)s;
		memcpy(p, in + 1 + s, l - s);
		p += l - s;
		prev = in;
		in += 1 + l;
	}
	memcpy(p, in, len - (size_t)(in - rec));
	p += len - (size_t)(in - rec);
	hdr.flags |= IBDIR_REC_PACKED;
	hdr.data_len = (uint16_t)(p - out - sizeof(hdr));
	memcpy(out, &hdr, sizeof(hdr));
	return (size_t)(p - out);
}

/* GIDs and IPv6 addresses share bytes at both ends: rails whose subnets
 * differ in the middle of the address take 2 bytes an address after the
 * first, an address like the one before 1; an eight-rail host's record is
 * smaller than sharing only their start makes it, and a record packed that
 * way (by a daemon from before) still reads back, unpacked and through the
 * reader. */
static void test_ends_shared(void **state)
{
	static uint8_t plain[IBDIR_REC_MAX], packed[IBDIR_REC_MAX], old[IBDIR_REC_MAX],
		got[IBDIR_REC_MAX], bad[IBDIR_REC_MAX];
	struct ibres_hostrec r, out;
	struct hostrec_eps e;
	struct ibdir_rec hdr;
	struct dir_image m;
	size_t len, plen, olen, glen, v6;

	(void)state;
	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "node5");
	r.n_names = 1;
	inet_pton(AF_INET6, "2001:db8:0:1::5", &r.v6[0]);
	inet_pton(AF_INET6, "2001:db8:0:2::5", &r.v6[1]);
	inet_pton(AF_INET6, "2001:db8:0:2::5", &r.v6[2]);
	inet_pton(AF_INET6, "2001:db9:0:2::6", &r.v6[3]);
	r.n_v6 = 4;
	len = ibdir_rec_encode(&r, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	v6 = sizeof(struct ibdir_rec) + 16;
	assert_int_equal(packed[v6], 7 << 4 | 8); /* 2001:db8:0:, ::5 */
	assert_int_equal(packed[v6 + 1], 2);
	assert_int_equal(packed[v6 + 2], 15 << 4 | 1); /* the same */
	assert_int_equal(packed[v6 + 3], 3 << 4 | 0);  /* 2001:d, nothing at the end */
	assert_memory_equal(packed + v6 + 4, r.v6[3].s6_addr + 3, 13);
	assert_int_equal(plen, sizeof(struct ibdir_rec) + 16 + 2 + 1 + 14 + 1 + 5);
	assert_int_equal(unpack_in(packed, plen, IBDIR_REC_MAX, 0, got, &glen), 0);
	assert_int_equal(glen, len);
	assert_memory_equal(got, plain, len);
	/* coding that does not add up: more than an address; the flag taken
	 * away (a start-only count of 0x78) */
	memcpy(bad, packed, plen);
	bad[v6 + 2] = 15 << 4 | 2;
	assert_int_equal(unpack_in(bad, plen, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	memcpy(bad, packed, plen);
	memcpy(&hdr, bad, sizeof(hdr));
	assert_true(hdr.flags & IBDIR_REC_PACKED_ENDS);
	hdr.flags &= (uint16_t)~IBDIR_REC_PACKED_ENDS;
	memcpy(bad, &hdr, sizeof(hdr));
	assert_int_equal(unpack_in(bad, plen, IBDIR_REC_MAX, 0, got, &glen), -EBADMSG);
	assert_cut_short_refused(packed, plen);
	/* where the end shares nothing more (the last byte differs), the
	 * record is packed byte for byte as before the flag */
	inet_pton(AF_INET6, "2001:db8:0:1::6", &r.v6[1]);
	r.n_v6 = 2;
	len = ibdir_rec_encode(&r, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	olen = pack_start_only(plain, len, old);
	assert_int_equal(plen, olen);
	assert_memory_equal(packed, old, plen);
	/* the last address shares 8 bytes at its end and a 2-byte name ends
	 * the record, in a buffer that ends where the record does, on a page
	 * nobody may read: its 16 bytes are not loaded past the buffer's end
	 * (a load that is would fault) */
	inet_pton(AF_INET6, "2001:db8:0:2::5", &r.v6[1]);
	r.n_v6 = 2;
	snprintf(r.names[0], sizeof(r.names[0]), "a");
	len = ibdir_rec_encode(&r, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	assert_int_equal(plen, sizeof(struct ibdir_rec) + 16 + 2 + 2);
	{
		size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = len + IBDIR_UNPACK_SLACK;
		uint8_t *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *buf = map + page - cap;

		assert_true(map != MAP_FAILED);
		assert_int_equal(mprotect(map + page, page, PROT_NONE), 0);
		memcpy(buf + cap - plen, packed, plen);
		assert_int_equal(ibdir_rec_unpack(buf, cap, cap - plen, plen, &glen), 0);
		assert_int_equal(glen, len);
		assert_memory_equal(buf, plain, len);
		munmap(map, 2 * page);
	}

	eight_rails(&r, &e, true);
	len = ibdir_rec_encode_eps(&r, &e, IBDIR_NEVER, plain);
	plen = ibdir_rec_pack(plain, len, packed);
	olen = pack_start_only(plain, len, old);
	/* the IPv6 addresses differ in byte 5 alone, 2 bytes each after the
	 * first (12 sharing their start only); the GIDs in byte 11, 2 (6) */
	assert_int_equal(olen - plen, 7 * (12 - 2) + 7 * (6 - 2));
	assert_int_equal(unpack_in(old, olen, IBDIR_REC_MAX,
				   IBDIR_REC_MAX - ((olen + 7) & ~(size_t)7), got, &glen),
			 0);
	assert_int_equal(glen, len);
	assert_memory_equal(got, plain, len);
	assert_int_equal(ibdir_rec_decode(old, olen, &out), 0);
	assert_memory_equal(out.v6[7].s6_addr, r.v6[7].s6_addr, 16);

	/* through the reader, the record a daemon from before wrote */
	dir_image_init(&m, 64, 16384, 1000);
	dir_image_put_raw(&m, old, olen, IBDIR_TAB_NAME, "node7-ib6", 9);
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node7-ib6", 9, &out), 0);
	assert_int_equal(out.n_v6, 1);
	assert_memory_equal(out.v6[0].s6_addr, r.v6[6].s6_addr, 16);
	assert_memory_equal(out.gids[0], r.gids[6], 16);
	dir_image_free(&m);
}

/* Through the reader (ibdir_lookup): an eight-rail host's packed record by
 * its name (every rail's items) and by a rail's alias and GID (that rail's
 * alone), a plain record beside it; a file of another format is refused. */
static void test_reader_unpacks(void **state)
{
	struct ibres_hostrec r, got;
	struct hostrec_eps e;
	struct dir_image m;
	uint32_t off;

	(void)state;
	dir_image_init(&m, 64, 16384, 1000);
	eight_rails(&r, &e, false);
	off = dir_image_put_eps(&m, &r, &e, 0);
	assert_true(((const struct ibdir_rec *)(const void *)(m.b + off))->flags &
		    IBDIR_REC_PACKED);
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node7", 5, &got), 0);
	assert_int_equal(got.n_names, 9);
	assert_int_equal(got.n_gids, 8);
	assert_string_equal(got.names[8], "node7-ib7");
	assert_memory_equal(got.gids[7], r.gids[7], 16);
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node7-ib5", 9, &got), 0);
	assert_int_equal(got.n_gids, 1);
	assert_memory_equal(got.gids[0], r.gids[5], 16);
	assert_int_equal(got.lid, 12);
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_GID, r.gids[3], 16, &got), 0);
	assert_int_equal(got.n_names, 2);
	assert_string_equal(got.names[1], "node7-ib3");

	/* a buffer too small to unpack it in (but for its copy): -EMSGSIZE,
	 * and IBDIR_REC_MAX bytes do */
	{
		const struct ibdir_rec *b = (const void *)(m.b + off);
		size_t copy = (sizeof(*b) + b->data_len + 7) & ~(size_t)7;
		uint64_t small[IBDIR_REC_MAX / 8], big[IBDIR_REC_MAX / 8];
		struct ibdir_geom g;
		struct ibdir_view v;

		assert_int_equal(ibdir_geom_read(m.b, m.size, &g), 0);
		assert_int_equal(ibdir_find(m.b, m.size, &g, 1000, IBRES_T_NAME, "node7", 5, small,
					    copy + 8, &v),
				 -EMSGSIZE);
		assert_int_equal(ibdir_find(m.b, m.size, &g, 1000, IBRES_T_NAME, "node7", 5, big,
					    sizeof(big), &v),
				 0);
		assert_int_equal(v.n_gids, 8);
	}
	/* a packed record that would unpack past IBDIR_DATA_MAX bytes, its
	 * counts in bounds (a 255-byte name, then one sharing all of it, then
	 * filler up to the largest data): damage, not "too large" */
	{
		static uint8_t rec[sizeof(struct ibdir_rec) + IBDIR_DATA_MAX];
		struct ibdir_rec hdr = {.seq = 2,
					.cap = sizeof(rec),
					.expires_ms = IBDIR_NEVER,
					.n_names = 2,
					.data_len = IBDIR_DATA_MAX,
					.flags = IBDIR_REC_PACKED};
		uint8_t *d = rec + sizeof(hdr);
		char name[IBRES_NAME_MAX];

		memset(rec, 0, sizeof(rec));
		memcpy(rec, &hdr, sizeof(hdr));
		memset(name, 'q', sizeof(name));
		d[0] = IBRES_NAME_MAX;
		memcpy(d + 1, name, IBRES_NAME_MAX);
		d[1 + IBRES_NAME_MAX] = IBRES_NAME_MAX;
		d[2 + IBRES_NAME_MAX] = IBRES_NAME_MAX;
		dir_image_put_raw(&m, rec, sizeof(rec), IBDIR_TAB_NAME, name, IBRES_NAME_MAX);
		assert_int_equal(
			ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, name, IBRES_NAME_MAX, &got),
			-EBADMSG);
		assert_int_equal(ibdir_rec_decode(rec, sizeof(rec), &got), -EBADMSG);
	}

	/* a plain record beside it, as a reader from before packing reads it;
	 * a file of another format is refused */
	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "node8");
	r.n_names = 1;
	r.v4[0].s_addr = htonl(0xc6120008u);
	r.n_v4 = 1;
	off = dir_image_put(&m, &r, 0);
	assert_false(((const struct ibdir_rec *)(const void *)(m.b + off))->flags &
		     IBDIR_REC_PACKED);
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node8", 5, &got), 0);
	((struct ibdir_header *)(void *)m.b)->version = IBDIR_VERSION - 1;
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node8", 5, &got), -EBADMSG);
	((struct ibdir_header *)(void *)m.b)->version = IBDIR_VERSION + 1;
	assert_int_equal(ibdir_lookup(m.b, m.size, 1000, IBRES_T_NAME, "node8", 5, &got), -EBADMSG);
	dir_image_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_rails_pack_small),
		cmocka_unit_test(test_bad_coding_refused),
		cmocka_unit_test(test_ends_shared),
		cmocka_unit_test(test_reader_unpacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
