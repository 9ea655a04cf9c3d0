// SPDX-License-Identifier: MIT
/*
 * The shared host directory's writer (hostdir_pub.h; the format is
 * lib/hostdir.h). An endpoint's record is one block of the record area; its
 * struct host keeps the block's offset as the store's observer cookie. An
 * endpoint of a host of several (one per rail) that holds a name they share
 * has a second block, its host's record (host_record_all: every rail's
 * addresses), which those names lead to; its own addresses and names lead
 * to its own.
 *
 * In place: a refreshed record that fits its block is rewritten between two
 * increments of the block's seq; one that does not gets a new block, its
 * slots move to it, and the old block is freed. Slots are changed with
 * table_seq odd, from the first change of a loop turn until the next turn
 * (a zero-delay timer), so a store operation made of several events (a key
 * moving from one host to another) is one change to a reader that misses.
 *
 * A new generation: at start-up, when the record area is full or 5/8 of a
 * table taken (live or deleted slots), and to retry after a failure. It is a
 * memfd, never a file in a folder someone else could reach: its space is
 * reserved with posix_fallocate (no memory fails here, never with SIGBUS in
 * a reader), it is mapped for writing here and then sealed against
 * shrinking, growing, any other writer and more seals, written in full, and
 * only then handed out (frontend/directory.c passes the descriptor over the
 * socket) while the old one is marked IBDIR_REPLACED. Readers check the
 * seals before they map it, so nobody, the daemon's own account included,
 * can truncate a mapping under a reader or write into it through the
 * descriptor it was given. Blocks are never reused inside a generation, so
 * a reader's stale slot can only lead to a record that says which keys it
 * holds.
 */
#include "os/hostdir_pub.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/jitter.h"
#include "core/list.h"
#include "core/log.h"
#include "hostdir.h"

#define REC_AREA_MIN  (128u * 1024)
#define SLOTS_MIN     2048u /* a 1,000-node cluster without growing */
#define RETRY_TICKS   5u /* heartbeats between two tries after a failure */
#define REC_KEYS_MAX  (IBRES_HOST_NAMES_MAX + 2 * IBRES_HOST_ADDRS_MAX + IBRES_HOST_GIDS_MAX)
/* A new file's record area: the records it holds, and room for
 * 1/REC_AREA_GROW_DIV of them more. Room is memory (the memfd is reserved in
 * full), so it is kept small: the price is a new file each time a quarter
 * more was learned, about 20 from 1,000 to 48,000 single-rail hosts, each a
 * few tens of ms. Records also leave blocks behind (one that outgrows its
 * block moves; a host learned rail by rail outgrows its host's record with
 * every rail): the room is scaled by how many bytes the file before took
 * for each byte its records grew, so that it too lasts for a quarter more.
 * At most REC_AREA_MAX_MUL times the records in all. */
#define REC_AREA_GROW_DIV 4u
#define REC_AREA_MAX_MUL  2u
/* A table is written at most half full (layout()) and makes a new file once
 * TABLE_FULL_NUM/TABLE_FULL_DEN of it is taken: 25 % more keys, as much as
 * the record area has room for, so that a table does not make a file of its
 * own just after the area made one. A reader's probe for a key that is not
 * there then takes 3.9 slots on average (2.5 at half full). */
#define TABLE_FULL_NUM 5u
#define TABLE_FULL_DEN 8u
/* A new file is built once the store was quiet HOSTDIR_REBUILD_QUIET_MS
 * (hostdir_pub.h), or REBUILD_WAIT_MS after it became due: each new file
 * writes every host again, and a 48,000-node boot storm made about 17 of
 * them, a quarter of the daemon's CPU (bench/RESULTS.md). Meanwhile hosts
 * are not written into the file that is full (it says it is incomplete, so
 * readers ask the daemon, as they must while the directory fills anyway). */
#define REBUILD_WAIT_MS 3000u

struct dkey {
	uint8_t tab, len;
	const void *data;
};

struct hostdir_pub {
	struct loop *loop;
	struct host_store *store;
	uint8_t *map; /* the generation published now, read-write; NULL: none */
	size_t size;
	int fd; /* its sealed memfd (what readers are given); -1: none */
	uint32_t rec_next, rec_end; /* free space of the record area */
	uint64_t rec_built;	    /* bytes of records written when the file was made */
	uint64_t left_behind;	    /* bytes of blocks freed since (never reused) */
	uint32_t used[IBDIR_TABLES]; /* slots not empty (live or deleted) */
	bool in_section; /* table_seq is odd */
	bool rebuild;	 /* a new file is needed */
	uint64_t due_ms;     /* when it became so */
	uint64_t changed_ms; /* the store's last change */
	bool incomplete; /* a host is missing from the file: not authoritative */
	bool logged;	 /* a failure was logged; quiet until a success */
	unsigned retry_in;
	uint64_t auth_from; /* as the resolver said; IBDIR_NEVER while incomplete */
	char patterns[IBDIR_PATTERNS_MAX][IBDIR_PATTERN_LEN];
	unsigned n_patterns;
	struct jitter_rng rng;
	struct loop_timer beat, end_section, later;
	struct hostdir_stats stats;
	uint8_t enc[IBDIR_REC_MAX];
	/* records expanded: the one written, the one it replaces, the one being
	 * dropped */
	struct ibres_hostrec cur, prev, gone;
};

static struct ibdir_header *hd_of(const struct hostdir_pub *p)
{
	return (struct ibdir_header *)p->map;
}

static uint64_t *slots_of(const struct hostdir_pub *p, unsigned tab)
{
	return (uint64_t *)(p->map + hd_of(p)->tables[tab].off);
}

static unsigned rec_keys(const struct ibres_hostrec *r, struct dkey *k)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->n_names; i++)
		k[n++] = (struct dkey){ IBDIR_TAB_NAME, (uint8_t)strlen(r->names[i]), r->names[i] };
	for (unsigned i = 0; i < r->n_v4; i++)
		k[n++] = (struct dkey){ IBDIR_TAB_IPV4, 4, &r->v4[i] };
	for (unsigned i = 0; i < r->n_v6; i++)
		k[n++] = (struct dkey){ IBDIR_TAB_IPV6, 16, &r->v6[i] };
	for (unsigned i = 0; i < r->n_gids; i++)
		k[n++] = (struct dkey){ IBDIR_TAB_GID, 16, r->gids[i] };
	return n;
}

/* Does the store give this key to @h? Only then does its slot point at @h.
 * And is it a key of @h's view: a name every endpoint of its host shares
 * leads to the host's record (@all), any other key to @h's own. */
static bool holds(const struct hostdir_pub *p, const struct host *h, const struct dkey *k, bool all)
{
	struct host_key hk;

	/* the store's own key rules (a name is folded to lower case) */
	if (k->tab == IBDIR_TAB_NAME)
		host_key_name(&hk, k->data); /* a record's names are NUL-terminated */
	else
		host_key_addr(&hk, ibdir_key_type(k->tab), k->data);
	if (store_holder(p->store, &hk) != h)
		return false;
	return all == (k->tab == IBDIR_TAB_NAME && host_key_shared(h, &hk));
}

/* The record of @h's view into @r; returns its expiry. */
static uint64_t view_of(const struct host *h, bool all, struct ibres_hostrec *r)
{
	if (all)
		return host_record_all(h, r, 0);
	host_record(h, r, 0);
	return host_expires_ms(h);
}

/* ---- writing under the readers' feet ------------------------------------------ */

static void section_begin(struct hostdir_pub *p)
{
	struct ibdir_header *hd = hd_of(p);

	if (p->in_section)
		return;
	__atomic_store_n(&hd->table_seq, hd->table_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	p->in_section = true;
	loop_timer_arm(p->loop, &p->end_section, now_ms());
}

static void section_end(struct hostdir_pub *p)
{
	struct ibdir_header *hd = hd_of(p);

	if (!p->in_section)
		return;
	__atomic_store_n(&hd->table_seq, hd->table_seq + 1, __ATOMIC_RELEASE);
	p->in_section = false;
}

static void want_rebuild(struct hostdir_pub *p)
{
	if (!p->rebuild)
		p->due_ms = now_ms();
	p->rebuild = true;
}

static void store_words(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;

		memcpy(&w, src + i, 8);
		__atomic_store_n((uint64_t *)(dst + i), w, __ATOMIC_RELAXED);
	}
}

static struct ibdir_rec *block(const struct hostdir_pub *p, uint32_t off)
{
	return (struct ibdir_rec *)(p->map + off);
}

/* Write @len encoded bytes (p->enc) into the block at @off: a new block, or
 * in place between two increments of its seq. */
static void rec_write(struct hostdir_pub *p, uint32_t off, size_t len, bool fresh)
{
	struct ibdir_rec *b = block(p, off);
	size_t n = (len + 7) & ~(size_t)7;
	uint32_t seq = fresh ? 0 : b->seq, cap = fresh ? (uint32_t)n : b->cap;

	memset(p->enc + len, 0, n - len);
	memcpy(p->enc, &(uint32_t){ seq + 1 }, 4);
	memcpy(p->enc + 4, &cap, 4);
	if (!fresh) {
		__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
	/* the block's first word (seq, cap) too: seq stays odd until the end */
	store_words((uint8_t *)b, p->enc, n);
	__atomic_store_n(&b->seq, seq + 2, __ATOMIC_RELEASE);
}

static void rec_free(struct hostdir_pub *p, uint32_t off)
{
	struct ibdir_rec *b = block(p, off);
	uint32_t seq = b->seq;

	__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&b->expires_ms, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->seq, seq + 2, __ATOMIC_RELEASE);
	p->left_behind += b->cap;
	if (p->stats.records)
		p->stats.records--;
}

static uint32_t rec_alloc(struct hostdir_pub *p, size_t len)
{
	uint32_t n = (uint32_t)((len + 7) & ~(size_t)7), off = p->rec_next;

	if (n > p->rec_end - p->rec_next)
		return 0;
	p->rec_next += n;
	return off;
}

/* Our own record at @off, expanded into @r. */
static int rec_read(const struct hostdir_pub *p, uint32_t off, struct ibres_hostrec *r)
{
	const struct ibdir_header *hd = hd_of(p);

	if (off < hd->rec_off || off >= p->rec_next || (off & 7))
		return -EINVAL;
	return ibdir_rec_decode(p->map + off, p->rec_next - off, r);
}

/* The slot holding @k (-1 if none); *@free_at the first slot @k could take. */
static long slot_find(struct hostdir_pub *p, const struct dkey *k, uint32_t hash, long *free_at)
{
	uint32_t n = hd_of(p)->tables[k->tab].n_slots, mask = n - 1, i = hash & mask;
	uint64_t *slots = slots_of(p, k->tab);

	*free_at = -1;
	for (uint32_t probes = 0; probes < n; probes++, i = (i + 1) & mask) {
		uint32_t at = (uint32_t)slots[i];

		if (at == IBDIR_SLOT_EMPTY) {
			if (*free_at < 0)
				*free_at = i;
			return -1;
		}
		if (at == IBDIR_SLOT_DELETED) {
			if (*free_at < 0)
				*free_at = i;
			continue;
		}
		if ((uint32_t)(slots[i] >> 32) == hash && at >= hd_of(p)->rec_off &&
		    at < p->rec_next && !(at & 7) &&
		    ibdir_rec_has_key(p->map + at, p->rec_next - at, k->tab, k->data, k->len))
			return i;
	}
	return -1;
}

/* Point the slot of @k at the block @off. 0, or -ENOSPC (table full). */
static int slot_set(struct hostdir_pub *p, const struct dkey *k, uint32_t off)
{
	uint32_t hash = ibdir_hash(hd_of(p)->seed, k->tab, k->data, k->len);
	uint64_t *slots = slots_of(p, k->tab);
	long free_at, at = slot_find(p, k, hash, &free_at);

	if (at < 0) {
		if (free_at < 0)
			return -ENOSPC;
		at = free_at;
		if ((uint32_t)slots[at] == IBDIR_SLOT_EMPTY)
			p->used[k->tab]++;
	}
	__atomic_store_n(&slots[at], (uint64_t)hash << 32 | off, __ATOMIC_RELEASE);
	/* TABLE_FULL_NUM/DEN of the table taken (deleted slots lengthen probes
	 * too): a new file */
	if ((uint64_t)p->used[k->tab] * TABLE_FULL_DEN >
	    (uint64_t)hd_of(p)->tables[k->tab].n_slots * TABLE_FULL_NUM)
		want_rebuild(p);
	return 0;
}

/* Delete the slot of @k if it points at the block @off. */
static void slot_del(struct hostdir_pub *p, const struct dkey *k, uint32_t off)
{
	uint32_t hash = ibdir_hash(hd_of(p)->seed, k->tab, k->data, k->len);
	uint64_t *slots = slots_of(p, k->tab);
	long free_at, at = slot_find(p, k, hash, &free_at);

	if (at >= 0 && (uint32_t)slots[at] == off)
		__atomic_store_n(&slots[at], (uint64_t)IBDIR_SLOT_DELETED, __ATOMIC_RELEASE);
}

static void scope_write(struct hostdir_pub *p)
{
	struct ibdir_header *hd = hd_of(p);
	uint32_t seq;
	uint64_t from = p->incomplete ? IBDIR_NEVER : p->auth_from;

	if (!p->map)
		return;
	seq = hd->scope_seq;
	if (hd->authoritative_from_ms == from && hd->n_patterns == p->n_patterns &&
	    !memcmp(hd->patterns, p->patterns, sizeof(p->patterns)))
		return;
	__atomic_store_n(&hd->scope_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&hd->authoritative_from_ms, from, __ATOMIC_RELAXED);
	__atomic_store_n(&hd->n_patterns, p->n_patterns, __ATOMIC_RELAXED);
	store_words((uint8_t *)hd->patterns, (const uint8_t *)p->patterns, sizeof(p->patterns));
	__atomic_store_n(&hd->scope_seq, seq + 2, __ATOMIC_RELEASE);
}

/* ---- following the store --------------------------------------------------------- */

/* Remove the record at @off and the slots pointing at it. */
static void drop_record(struct hostdir_pub *p, uint32_t off)
{
	struct dkey keys[REC_KEYS_MAX];
	unsigned n;

	if (!off || rec_read(p, off, &p->gone))
		return;
	n = rec_keys(&p->gone, keys);
	for (unsigned i = 0; i < n; i++)
		slot_del(p, &keys[i], off);
	rec_free(p, off);
}

/* @h's view could not be written: its records go (its keys now miss, and a
 * miss is no longer authoritative), and a new file is due. */
static void lose_host(struct hostdir_pub *p, struct host *h, bool all, uint32_t off, uint32_t to)
{
	want_rebuild(p);
	p->incomplete = true;
	scope_write(p);
	drop_record(p, to);
	if (off != to)
		drop_record(p, off);
	host_set_cookie(h, all, 0);
}

/* Write one view of @h (its own record, or its host's) and the slots of the
 * keys that lead to it. */
static void put_view(struct hostdir_pub *p, struct host *h, bool all)
{
	struct dkey keys[REC_KEYS_MAX], old_keys[REC_KEYS_MAX];
	uint32_t off = host_cookie(h, all), to;
	unsigned n, n_old, mine = 0;
	bool held[REC_KEYS_MAX];
	uint64_t expires;
	size_t len;

	if (off && rec_read(p, off, &p->prev))
		off = 0;
	if (all && !host_next_endpoint(h, h)) {
		/* a host alone shares no name with another endpoint */
		drop_record(p, off);
		host_set_cookie(h, all, 0);
		return;
	}
	expires = view_of(h, all, &p->cur);
	n = rec_keys(&p->cur, keys);
	for (unsigned i = 0; i < n; i++)
		mine += held[i] = holds(p, h, &keys[i], all);
	if (!mine) {
		/* nothing a reader could ask for (a LID alone; no name the host shares) */
		drop_record(p, off);
		host_set_cookie(h, all, 0);
		return;
	}
	len = ibdir_rec_encode(&p->cur, expires, p->enc);
	if (off && len <= block(p, off)->cap) {
		to = off;
		rec_write(p, to, len, false);
	} else {
		to = rec_alloc(p, len);
		if (!to) {
			lose_host(p, h, all, off, off);
			return;
		}
		rec_write(p, to, len, true);
		p->stats.records++;
	}
	host_set_cookie(h, all, to);
	for (unsigned i = 0; i < n; i++)
		if (held[i] && slot_set(p, &keys[i], to)) {
			lose_host(p, h, all, off, to);
			return;
		}
	if (!off)
		return;
	n_old = rec_keys(&p->prev, old_keys);
	for (unsigned i = 0; i < n_old; i++) {
		const struct dkey *k = &old_keys[i];

		if (to == off && hostrec_has_key(&p->cur, ibdir_key_type(k->tab), k->data, k->len) &&
		    holds(p, h, k, all))
			continue;
		slot_del(p, k, off);
	}
	if (to != off)
		rec_free(p, off);
}

/* A new file is due: @h waits for it. Its records here go, and the slots
 * leading to them (they may be older than it is; a host that lost a key to
 * another is put too, so that its old record does not answer for it). The
 * file says it is incomplete: a reader asks the daemon instead. */
static void hold_back(struct hostdir_pub *p, struct host *h)
{
	for (int all = 0; all < 2; all++) {
		drop_record(p, host_cookie(h, all));
		host_set_cookie(h, all, 0);
	}
	if (!p->incomplete) {
		p->incomplete = true;
		scope_write(p);
	}
}

static void on_put(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;

	if (!p->map)
		return;
	p->changed_ms = now_ms();
	section_begin(p);
	if (p->rebuild) {
		hold_back(p, h);
		return;
	}
	put_view(p, h, false);
	put_view(p, h, true);
}

static void on_refresh(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;
	uint32_t off = host_cookie(h, false);
	struct ibdir_rec *b;
	uint32_t seq;

	if (!p->map)
		return;
	if (!off && p->rebuild)
		return; /* held back: the new file will hold it (and nothing changed) */
	if (!off || host_cookie(h, true)) {
		on_put(arg, h); /* no record yet, or its host's view too */
		return;
	}
	/* the record is the same: its expiry alone, in place, between two
	 * increments of its seq as rec_write does */
	b = block(p, off);
	seq = b->seq;
	__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&b->expires_ms, host_expires_ms(h), __ATOMIC_RELAXED);
	__atomic_store_n(&b->seq, seq + 2, __ATOMIC_RELEASE);
}

static void on_gone(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;

	if (!p->map)
		return;
	p->changed_ms = now_ms();
	section_begin(p);
	for (int all = 0; all < 2; all++) {
		drop_record(p, host_cookie(h, all));
		host_set_cookie(h, all, 0);
	}
}

/* ---- files ------------------------------------------------------------------------ */

struct sizing {
	struct hostdir_pub *p;
	uint64_t keys[IBDIR_TABLES];
	uint64_t bytes;
	/* the file this one replaces: bytes of blocks taken and freed since it
	 * was made (taken - freed: how much its records grew; 0, 0: no file) */
	uint64_t taken, freed;
};

static void size_host(void *arg, struct host *h)
{
	struct sizing *z = arg;
	struct dkey keys[REC_KEYS_MAX];
	unsigned n;

	bool shared = false;

	host_record(h, &z->p->cur, 0);
	n = rec_keys(&z->p->cur, keys);
	/* a slot for every key the store gives @h (a name the host's endpoints
	 * share is counted once, with the one that holds it) */
	for (unsigned i = 0; i < n; i++) {
		if (holds(z->p, h, &keys[i], false))
			z->keys[keys[i].tab]++;
		else if (holds(z->p, h, &keys[i], true))
			z->keys[keys[i].tab]++, shared = true;
	}
	if (n)
		z->bytes += (ibdir_rec_encode(&z->p->cur, 0, z->p->enc) + 7) & ~7ull;
	if (shared) {
		/* it holds its host's shared names: room for the host's record */
		host_record_all(h, &z->p->cur, 0);
		z->bytes += (ibdir_rec_encode(&z->p->cur, 0, z->p->enc) + 7) & ~7ull;
	}
}

static uint32_t pow2_at_least(uint64_t n)
{
	uint32_t v = SLOTS_MIN;

	while (v < n && v < IBDIR_SLOTS_MAX)
		v <<= 1;
	return v;
}

/* Lay out an empty file of room for what @z counted, and some to grow. */
static uint64_t layout(struct ibdir_header *hd, const struct sizing *z)
{
	uint64_t off = IBDIR_HEADER_SPACE, room = z->bytes / REC_AREA_GROW_DIV, area;

	if (z->taken && z->freed >= z->taken)
		room = z->bytes; /* blocks taken, none of it growth: churn */
	else if (z->freed)
		room = room * z->taken / (z->taken - z->freed);
	area = z->bytes + room;
	if (area > z->bytes * REC_AREA_MAX_MUL)
		area = z->bytes * REC_AREA_MAX_MUL;
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		/* under half full: a table over half full (slot_set) makes a
		 * new file, and comes out of it twice as large when its keys
		 * filled it; readers want a power of two */
		hd->tables[t].n_slots = pow2_at_least(z->keys[t] * 2 + 1);
		hd->tables[t].off = (uint32_t)off;
		off += (uint64_t)hd->tables[t].n_slots * 8;
	}
	if (area < REC_AREA_MIN)
		area = REC_AREA_MIN;
	hd->rec_off = (uint32_t)off;
	hd->rec_size = (uint32_t)(area < IBDIR_FILE_MAX ? area : IBDIR_FILE_MAX);
	return off + area;
}

static void write_host(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;

	host_set_cookie(h, false, 0);
	host_set_cookie(h, true, 0);
	if (!p->rebuild)
		on_put(p, h);
}

static void fail(struct hostdir_pub *p, const char *what, int err)
{
	p->stats.failures++;
	p->retry_in = RETRY_TICKS;
	if (p->logged)
		return;
	p->logged = true;
	log_err("host directory: %s: %s; clients ask over the socket until it can be written",
		what, strerror(err));
}

/* A memfd of @size bytes, mapped read-write at *@map, then sealed: it can
 * never shrink or grow, and nothing can write it but this mapping. */
static int new_generation(struct hostdir_pub *p, uint64_t size, uint8_t **map)
{
	const unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	int fd, ret;
	void *m;

	fd = memfd_create("ibres-hosts.db", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		ret = errno;
		fail(p, "memfd_create", ret);
		return -ret;
	}
	ret = ftruncate(fd, (off_t)size) ? errno : posix_fallocate(fd, 0, (off_t)size);
	if (ret) {
		fail(p, "reserve space", ret);
		goto err_fd;
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = errno;
		fail(p, "map", ret);
		goto err_fd;
	}
	if (fcntl(fd, F_ADD_SEALS, seals)) {
		ret = errno;
		fail(p, "seal", ret);
		munmap(m, size);
		goto err_fd;
	}
	*map = m;
	return fd;
err_fd:
	close(fd);
	return -ret;
}

/* The old generation: readers still mapping it fetch the new one. */
static void retire(uint8_t *map, size_t size, int fd)
{
	if (!map)
		return;
	__atomic_store_n(&((struct ibdir_header *)map)->state, IBDIR_REPLACED, __ATOMIC_RELEASE);
	munmap(map, size);
	close(fd);
}

/* Write the whole store into a new generation and publish it. */
static int build(struct hostdir_pub *p)
{
	struct sizing z = { .p = p };
	struct ibdir_header tmpl = { 0 }, *hd;
	uint8_t *old = p->map, *m = NULL;
	size_t old_size = p->size;
	int old_fd = p->fd;
	uint64_t size;
	int fd;

	store_foreach_host(p->store, size_host, &z);
	if (p->map) {
		z.taken = p->rec_next - hd_of(p)->rec_off - p->rec_built;
		z.freed = p->left_behind;
	}
	size = layout(&tmpl, &z);
	if (size > IBDIR_FILE_MAX) {
		fail(p, "too large", EFBIG);
		return -EFBIG;
	}
	fd = new_generation(p, size, &m);
	if (fd < 0)
		return fd;

	hd = (struct ibdir_header *)m;
	*hd = tmpl;
	memcpy(hd->magic, IBDIR_MAGIC, sizeof(hd->magic));
	hd->version = IBDIR_VERSION;
	hd->header_size = sizeof(*hd);
	hd->file_size = size;
	hd->seed = (uint64_t)jitter_next(&p->rng) << 32 | jitter_next(&p->rng);
	hd->state = IBDIR_BUILDING;
	hd->authoritative_from_ms = IBDIR_NEVER;
	p->map = m;
	p->size = size;
	p->fd = fd;
	p->rec_next = hd->rec_off;
	p->rec_end = hd->rec_off + hd->rec_size;
	memset(p->used, 0, sizeof(p->used));
	p->stats.records = 0;
	p->in_section = false;
	p->rebuild = false;
	p->incomplete = false;
	p->left_behind = 0;
	store_foreach_host(p->store, write_host, p);
	p->rec_built = p->rec_next - hd->rec_off;
	if (p->rebuild) {
		/* it was sized for all of it: the store changed meanwhile? try again */
		fail(p, "fill", ENOSPC);
		goto err_map;
	}
	section_end(p);
	loop_timer_cancel(p->loop, &p->end_section);
	loop_timer_cancel(p->loop, &p->later);
	scope_write(p);
	hd->heartbeat_ms = now_ms();
	__atomic_store_n(&hd->state, IBDIR_LIVE, __ATOMIC_RELEASE);
	retire(old, old_size, old_fd);
	if (p->logged)
		log_info("host directory: published again");
	p->logged = false;
	p->stats.rebuilds++;
	p->stats.bytes = size;
	return 0;

err_map:
	munmap(m, size);
	close(fd);
	/* every host's cookie pointed into the new generation: the old one cannot
	 * be followed any more, and readers must not use it */
	retire(old, old_size, old_fd);
	p->map = NULL;
	p->size = 0;
	p->fd = -1;
	p->stats.bytes = 0;
	p->stats.records = 0;
	p->in_section = false;
	return -ENOSPC;
}

/* The new file that is due, now if the store is quiet (or it waited long
 * enough), else when it will be. */
static void try_rebuild(struct hostdir_pub *p)
{
	uint64_t at = p->changed_ms + HOSTDIR_REBUILD_QUIET_MS;

	if (!p->rebuild || !p->map || p->retry_in || p->in_section)
		return;
	if (at > p->due_ms + REBUILD_WAIT_MS)
		at = p->due_ms + REBUILD_WAIT_MS;
	if (now_ms() >= at)
		build(p);
	else
		loop_timer_arm(p->loop, &p->later, at);
}

static void on_later(struct loop_timer *t)
{
	try_rebuild(container_of(t, struct hostdir_pub, later));
}

static void on_end_section(struct loop_timer *t)
{
	struct hostdir_pub *p = container_of(t, struct hostdir_pub, end_section);

	if (p->map)
		section_end(p);
	try_rebuild(p);
}

static void on_beat(struct loop_timer *t)
{
	struct hostdir_pub *p = container_of(t, struct hostdir_pub, beat);

	if (p->map)
		__atomic_store_n(&hd_of(p)->heartbeat_ms, now_ms(), __ATOMIC_RELEASE);
	if ((!p->map || p->rebuild) && !p->in_section && (!p->retry_in || !--p->retry_in)) {
		if (p->map)
			try_rebuild(p);
		else
			build(p);
	}
	loop_timer_arm(p->loop, t, now_ms() + IBDIR_HEARTBEAT_MS);
}

int hostdir_start(struct hostdir_pub **out, struct loop *loop, struct host_store *store)
{
	struct hostdir_pub *p;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->loop = loop;
	p->store = store;
	p->fd = -1;
	p->auth_from = IBDIR_NEVER; /* until the resolver says otherwise */
	p->beat.cb = on_beat;
	p->end_section.cb = on_end_section;
	p->later.cb = on_later;
	jitter_seed(&p->rng);
	store_observe(store, &(struct store_observer){
				     .put = on_put, .refresh = on_refresh, .gone = on_gone, .arg = p});
	if (!build(p))
		log_info("host directory: %llu hosts, %llu bytes, passed to readers over the socket",
			 (unsigned long long)p->stats.records, (unsigned long long)p->stats.bytes);
	loop_timer_arm(loop, &p->beat, now_ms() + IBDIR_HEARTBEAT_MS);
	*out = p;
	return 0;
}

void hostdir_stop(struct hostdir_pub *p)
{
	if (!p)
		return;
	store_observe(p->store, NULL);
	loop_timer_cancel(p->loop, &p->beat);
	loop_timer_cancel(p->loop, &p->end_section);
	loop_timer_cancel(p->loop, &p->later);
	if (p->map) {
		section_end(p);
		__atomic_store_n(&hd_of(p)->state, IBDIR_CLOSED, __ATOMIC_RELEASE);
		munmap(p->map, p->size);
		close(p->fd);
	}
	free(p);
}

int hostdir_fd(const struct hostdir_pub *p, uint64_t *size)
{
	if (!p || !p->map)
		return -ENODATA;
	*size = p->size;
	return p->fd;
}

void hostdir_set_scope(struct hostdir_pub *p, uint64_t authoritative_from_ms, const char *patterns,
		       size_t stride, unsigned n)
{
	if (!p)
		return;
	p->auth_from = authoritative_from_ms;
	memset(p->patterns, 0, sizeof(p->patterns));
	p->n_patterns = n < IBDIR_PATTERNS_MAX ? n : IBDIR_PATTERNS_MAX;
	for (unsigned i = 0; i < p->n_patterns; i++)
		snprintf(p->patterns[i], sizeof(p->patterns[i]), "%s", patterns + i * stride);
	scope_write(p);
}

void hostdir_stats(const struct hostdir_pub *p, struct hostdir_stats *out)
{
	if (p)
		*out = p->stats;
	else
		memset(out, 0, sizeof(*out));
}
