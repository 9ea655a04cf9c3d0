// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the shared host directory's records as the NSS module
 * gets them. The input is a directory image (its heartbeat set to now). Its
 * record area is walked block by block; every block is decoded as it is
 * (lib/hostdir_rec.c's ibdir_rec_decode, a packed one unpacked), and every key
 * its bytes hold where a record keeps them (a packed one's, unpacked),
 * whatever its counts say (the IPv4 address of a record
 * without a name: issue 21), is looked up through the reader
 * (ibdir_lookup). Every record either gives back must be one the daemon
 * could have written (hostrec_check) and hold the key asked; the first
 * PACKED_MAX different ones of an input must also survive the writers'
 * encodings and be packed into a hostent and gaih_addrtuple list at every
 * buffer size from 0 up by nss/pack.c (pack_check.c): -ERANGE below the
 * size it needs, nothing written outside the buffer (ASan).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostdir.h"
#include "pack_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BLOCKS_MAX 64 /* blocks of an input walked */
#define PACKED_MAX 2  /* distinct records of an input packed at every size */
#define SMALL_COPY 128 /* bytes: a copy too small for most records */

static struct {
	struct ibres_hostrec recs[PACKED_MAX];
	unsigned n;
} packed;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Pack a record a decoder gave, once per input: packing at every size is
 * the expensive part. */
static void pack_once(const struct ibres_hostrec *rec)
{
	for (unsigned i = 0; i < packed.n; i++)
		if (!memcmp(&packed.recs[i], rec, sizeof(*rec)))
			return;
	if (packed.n == PACKED_MAX) {
		/* still a record the daemon could write */
		if (hostrec_check(rec))
			abort();
		return;
	}
	pack_check(rec);
	packed.recs[packed.n++] = *rec;
}

static void ask(const uint8_t *img, size_t n, uint64_t now, uint16_t type, const void *key,
		size_t len)
{
	uint64_t small[SMALL_COPY / 8];
	struct ibres_hostrec rec;
	struct ibdir_geom g;
	struct ibdir_view v;
	int ret, small_ret;

	memset(&rec, 0, sizeof(rec));
	ret = ibdir_lookup(img, n, now, type, key, len, &rec);
	if (ret && ret != -ENODATA && ret != -EAGAIN && ret != -ESTALE && ret != -EBADMSG)
		abort();
	/* the NSS module's copy on its stack: the same answer, or "too large"
	 * for a record that does not fit it */
	small_ret = ibdir_geom_read(img, n, &g)
			    ? -EBADMSG
			    : ibdir_find(img, n, &g, now, type, key, len, small, sizeof(small), &v);
	if (small_ret != ret && small_ret != -EMSGSIZE)
		abort();
	if (!small_ret && !ibdir_view_has_key(&v, (unsigned)ibdir_table_of(type), key, len))
		abort();
	if (ret)
		return;
	if (!hostrec_has_key(&rec, ibdir_key_type((unsigned)ibdir_table_of(type)), key, len))
		abort();
	rec.ttl = 0; /* the same record, whatever time is left */
	pack_once(&rec);
}

/* Every key the block's bytes hold where a record keeps them, its counts
 * taken as they are (only kept inside the block); a packed block's where
 * its unpacked copy keeps them, when it unpacks. */
static void ask_raw_keys(const uint8_t *img, size_t n, uint64_t now, const uint8_t *b, size_t len)
{
	static uint64_t copy[IBDIR_REC_MAX / 8];
	struct ibdir_rec hdr;
	const uint8_t *p, *end;

	memcpy(&hdr, b, sizeof(hdr));
	if (hdr.flags & IBDIR_REC_PACKED) {
		size_t raw = sizeof(hdr) + hdr.data_len;

		if (raw > len || raw > sizeof(copy))
			return;
		memcpy(copy, b, raw);
		if (ibdir_rec_unpack((uint8_t *)copy, sizeof(copy), 0, raw, &len))
			return;
		b = (const uint8_t *)copy;
		memcpy(&hdr, b, sizeof(hdr));
	}
	p = b + sizeof(hdr);
	end = p + (hdr.data_len < len - sizeof(hdr) ? hdr.data_len : len - sizeof(hdr));
	for (unsigned i = 0; i < hdr.n_gids && (size_t)(end - p) >= 16; i++, p += 16)
		ask(img, n, now, IBRES_T_GID, p, 16);
	for (unsigned i = 0; i < hdr.n_v6 && (size_t)(end - p) >= 16; i++, p += 16)
		ask(img, n, now, IBRES_T_IPV6, p, 16);
	for (unsigned i = 0; i < hdr.n_v4 && (size_t)(end - p) >= 4; i++, p += 4)
		ask(img, n, now, IBRES_T_IPV4, p, 4);
	for (unsigned i = 0; i < hdr.n_names && p < end; i++) {
		size_t l = *p++;

		if (l > (size_t)(end - p))
			l = (size_t)(end - p);
		if (l)
			ask(img, n, now, IBRES_T_NAME, p, l);
		p += l;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ibdir_header *hd;
	uint64_t now = mono_ms(), off, end;
	uint8_t *img;

	if (size > (1u << 22))
		return 0;
	/* a mapping is page aligned: so is the copy */
	img = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (!img)
		return 0;
	memcpy(img, data, size);
	packed.n = 0;
	if (size >= sizeof(struct ibdir_header))
		memcpy(img + offsetof(struct ibdir_header, heartbeat_ms), &now, sizeof(now));
	if (ibdir_header_check(img, size)) {
		free(img);
		return 0;
	}
	hd = (const void *)img;
	off = hd->rec_off;
	end = off + hd->rec_size;
	for (unsigned i = 0; i < BLOCKS_MAX && end - off >= sizeof(struct ibdir_rec); i++) {
		struct ibdir_rec hdr;
		struct ibres_hostrec rec;
		uint64_t next;

		memcpy(&hdr, img + off, sizeof(hdr));
		memset(&rec, 0, sizeof(rec));
		if (!ibdir_rec_decode(img + off, end - off, &rec))
			pack_once(&rec);
		ask_raw_keys(img, size, now, img + off, end - off);
		/* the next block: by its capacity, else by its data */
		next = hdr.cap >= sizeof(hdr) && !(hdr.cap & 7) ? hdr.cap
								 : (sizeof(hdr) + hdr.data_len + 7) & ~7u;
		if (next > end - off)
			break;
		off += next;
	}
	free(img);
	return 0;
}
