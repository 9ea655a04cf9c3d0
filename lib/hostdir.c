// SPDX-License-Identifier: MIT
/*
 * The shared host directory's file: its tables' hash, its header and
 * geometry, and the reader's look-up over a memory image (hostdir.h). A
 * record's coding is hostdir_rec.c's and its packing hostdir_pack.c's.
 * Nothing here makes a system call: a look-up that hits, and one the
 * directory can answer "no such host" for, cost a hash, a few probes and a
 * copy. Every offset, length and count read from the image is checked before
 * it is used; every loop is bounded by a constant.
 */
#include "hostdir.h"
#include "ibdir_impl.h"

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
		ret = ibdir_view_for_key(rec, rlen, tab, key, len, v);
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
