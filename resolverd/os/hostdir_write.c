// SPDX-License-Identifier: MIT
/*
 * The shared host directory's records and slots, written under the readers'
 * feet, and the store's observer (hostdir_impl.h has the design).
 */
#include "os/hostdir_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

/* A table is written at most 7/10 full (slots_for() in hostdir_pub.c) and
 * makes a new file once TABLE_FULL_NUM/TABLE_FULL_DEN of it is taken: 25 %
 * more keys, as much as the record area has room for, so that a table does not
 * make a file of its own just after the area made one. A key that is there
 * is found after (1 + 1 / (1 - load)) / 2 slots on average, 2.2 at 7/10 and
 * 4.5 at 7/8, most in the cache line of the first; in Robin Hood order one
 * that is not there is given up about as soon (lib/hostdir.h). */
#define TABLE_FULL_NUM 7u
#define TABLE_FULL_DEN 8u

static uint64_t *slots_of(const struct hostdir_pub *p, unsigned tab)
{
	return (uint64_t *)(p->map + hd_of(p)->tables[tab].off);
}

size_t hostdir_encode(struct hostdir_pub *p, const struct hostrec_eps *eps, uint64_t expires_ms)
{
	size_t len = ibdir_rec_encode_eps(&p->cur, eps, expires_ms, p->plain);

	return ibdir_rec_pack(p->plain, len, p->enc);
}

unsigned hostdir_rec_keys(const struct ibres_hostrec *r, struct dkey *k)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->n_names; i++)
		k[n++] = (struct dkey){IBDIR_TAB_NAME, (uint8_t)strlen(r->names[i]), r->names[i]};
	for (unsigned i = 0; i < r->n_v4; i++)
		k[n++] = (struct dkey){IBDIR_TAB_IPV4, 4, &r->v4[i]};
	for (unsigned i = 0; i < r->n_v6; i++)
		k[n++] = (struct dkey){IBDIR_TAB_IPV6, 16, &r->v6[i]};
	for (unsigned i = 0; i < r->n_gids; i++)
		k[n++] = (struct dkey){IBDIR_TAB_GID, 16, r->gids[i]};
	return n;
}

/* Is @e an endpoint of @h's host? */
static bool same_host(const struct host *h, const struct host *e)
{
	for (const struct host *x = h; x; x = host_next_endpoint(h, x))
		if (x == e)
			return true;
	return false;
}

/* Does the store give this key to @h (VIEW_HOST: to an endpoint of @h's
 * host)? Only then does its slot point at @h's view. And is it a key of that
 * view: a name every endpoint of its host shares leads to the host's record
 * (VIEW_SHARED), any other key to @h's own (VIEW_OWN); every key of the host
 * to its one record (VIEW_HOST). */
bool hostdir_holds(const struct hostdir_pub *p, const struct host *h, const struct dkey *k,
		   enum dview view)
{
	const struct host *holder;
	struct host_key hk;

	/* the store's own key rules (a name is folded to lower case) */
	if (k->tab == IBDIR_TAB_NAME)
		host_key_name(&hk, k->data); /* a record's names are NUL-terminated */
	else
		host_key_addr(&hk, ibdir_key_type(k->tab), k->data);
	holder = store_holder(p->store, &hk);
	if (view == VIEW_HOST)
		return holder && same_host(h, holder);
	if (holder != h)
		return false;
	return (view == VIEW_SHARED) ==
	       (k->tab == IBDIR_TAB_NAME && host_next_endpoint(h, h) && host_key_everyones(h, &hk));
}

/* The endpoint of @h's host that writes the host's one record: the lowest
 * by address, so that it stays while the endpoints do. */
static struct host *speaker_of(const struct host *h)
{
	const struct host *s = h;

	for (const struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		if (e < s)
			s = e;
	return (struct host *)s;
}

bool hostdir_is_speaker(const struct host *h)
{
	for (const struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		if (e < h)
			return false;
	return true;
}

bool hostdir_host_whole(struct hostdir_pub *p, const struct host *h)
{
	bool whole;

	p->whole_expires = host_record_eps(h, &p->cur, &p->eps, &whole, 0);
	return whole && p->cur.n_names;
}

/* The record of @h's view into p->cur; returns its expiry. VIEW_HOST's is
 * the one hostdir_host_whole() made just before (put_host()). */
static uint64_t view_of(struct hostdir_pub *p, const struct host *h, enum dview view)
{
	if (view == VIEW_HOST)
		return p->whole_expires;
	if (view == VIEW_SHARED)
		return host_record_all(h, &p->cur, 0);
	host_record(h, &p->cur, 0);
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

void hostdir_want_rebuild(struct hostdir_pub *p)
{
	if (!p->rebuild)
		p->due_ms = now_ms();
	p->rebuild = true;
}

void hostdir_section_end(struct hostdir_pub *p)
{
	struct ibdir_header *hd = hd_of(p);

	if (!p->in_section)
		return;
	__atomic_store_n(&hd->table_seq, hd->table_seq + 1, __ATOMIC_RELEASE);
	p->in_section = false;
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
	memcpy(p->enc, &(uint32_t){seq + 1}, 4);
	memcpy(p->enc + 4, &cap, 4);
	if (!fresh) {
		__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
	/* the block's first word (seq, cap) too: seq stays odd until the end */
	store_words((uint8_t *)b, p->enc, n);
	__atomic_store_n(&b->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The block's expiry alone, in place, between two increments of its seq
 * (0: the block is free). */
static void rec_set_expiry(struct ibdir_rec *b, uint64_t expires_ms)
{
	uint32_t seq = b->seq;

	__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&b->expires_ms, expires_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&b->seq, seq + 2, __ATOMIC_RELEASE);
}

void hostdir_bins_clear(struct hostdir_pub *p)
{
	for (unsigned i = 0; i < FREE_BINS; i++)
		p->bins[i].n = 0;
}

void hostdir_bins_free(struct hostdir_pub *p)
{
	for (unsigned i = 0; i < FREE_BINS; i++) {
		free(p->bins[i].off);
		p->bins[i] = (struct free_bin){0};
	}
}

/* Keep the freed block @off of @cap bytes to be written again (if its size
 * is kept and there is memory for it: else it is left behind). */
static void bin_push(struct hostdir_pub *p, uint32_t off, uint32_t cap)
{
	struct free_bin *b;

	if (cap > FREE_BIN_BYTES)
		return;
	b = &p->bins[cap / 8];
	if (b->n == b->cap) {
		uint32_t ncap = b->cap ? b->cap * 2 : 64, *n;

		n = realloc(b->off, ncap * sizeof(*n));
		if (!n)
			return;
		b->off = n;
		b->cap = ncap;
	}
	b->off[b->n++] = off;
}

/* A freed block of @n bytes or up to a quarter more, or 0. */
static uint32_t bin_pop(struct hostdir_pub *p, uint32_t n)
{
	uint32_t last = (n + n / 4) / 8;

	if (last >= FREE_BINS)
		last = FREE_BINS - 1;
	for (uint32_t i = n / 8; i <= last; i++)
		if (p->bins[i].n)
			return p->bins[i].off[--p->bins[i].n];
	return 0;
}

static void rec_free(struct hostdir_pub *p, uint32_t off)
{
	struct ibdir_rec *b = block(p, off);

	rec_set_expiry(b, 0);
	p->left_behind += b->cap;
	bin_push(p, off, b->cap);
	if (p->stats.records)
		p->stats.records--;
}

/* A block for @len bytes: a freed one (*@reused: written again in place,
 * under its seq, so that a reader that copied the old record sees it move)
 * or one from the free space. 0 when there is neither. */
static uint32_t rec_alloc(struct hostdir_pub *p, size_t len, bool *reused)
{
	uint32_t n = (uint32_t)((len + 7) & ~(size_t)7), off = bin_pop(p, n);

	*reused = off != 0;
	if (off) {
		p->left_behind -= block(p, off)->cap;
		return off;
	}
	if (n > p->rec_end - p->rec_next)
		return 0;
	off = p->rec_next;
	p->rec_next += n;
	p->grown++;
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

static uint32_t slot_prev(uint32_t i, uint32_t n)
{
	return i ? i - 1 : n - 1;
}

/* The slot to point at the block @to for @k (-1 if none): the block's own
 * slot of @k's hash (keys of one block that share a hash share it), else one
 * that leads to another block listing @k, unmarked (@k moves from there; a
 * marked one stands for another key the block holds). *@at_or_past is where
 * the probe stopped: the first empty slot, or the first whose key's home
 * comes after @k's (Robin Hood order, lib/hostdir.h: @k would go there). */
static long slot_find(struct hostdir_pub *p, const struct dkey *k, uint32_t hash, uint32_t to,
		      uint32_t *at_or_past)
{
	uint32_t n = hd_of(p)->tables[k->tab].n_slots, i = ibdir_home(hash, n);
	uint64_t *slots = slots_of(p, k->tab);
	long moved_from = -1;

	for (uint32_t d = 0; d < n; d++, i = ibdir_next(i, n)) {
		uint32_t at = (uint32_t)slots[i] & ~IBDIR_SLOT_ASK;

		if (at == IBDIR_SLOT_EMPTY || ibdir_dist(slots[i], i, n) < d)
			break;
		if ((uint32_t)(slots[i] >> 32) != hash)
			continue;
		if (at == to)
			return i;
		if (moved_from < 0 && !(slots[i] & IBDIR_SLOT_ASK) && at >= hd_of(p)->rec_off &&
		    at < p->rec_next && !(at & 7) &&
		    ibdir_rec_has_key(p->map + at, p->rec_next - at, k->tab, k->data, k->len))
			moved_from = i;
	}
	*at_or_past = i;
	return moved_from;
}

/* Point the slot of @k (of hash @hash) at the block @off, with
 * IBDIR_SLOT_ASK if @ask. 0, or -ENOSPC (no empty slot left). Keys of one
 * block that share a hash share its slot: the one word stands for them all.
 * A new key goes where Robin Hood order puts it, and the slots from there to
 * the next empty one move one on, the last first: every key stays in some
 * slot a reader could find it in while they move, and table_seq, odd
 * meanwhile, tells a reader that missed to look again. */
static int slot_set(struct hostdir_pub *p, const struct dkey *k, uint32_t hash, uint32_t off,
		    bool ask)
{
	uint32_t n = hd_of(p)->tables[k->tab].n_slots, at_or_past = 0, j;
	uint64_t *slots = slots_of(p, k->tab);
	uint64_t w = (uint64_t)hash << 32 | off | (ask ? IBDIR_SLOT_ASK : 0);
	long at = slot_find(p, k, hash, off, &at_or_past);

	if (at >= 0) {
		__atomic_store_n(&slots[at], w, __ATOMIC_RELEASE);
		return 0;
	}
	if (p->used[k->tab] + 1 >= n)
		return -ENOSPC; /* one empty slot at least ends every probe */
	for (j = at_or_past; (uint32_t)slots[j] != IBDIR_SLOT_EMPTY; j = ibdir_next(j, n))
		;
	for (; j != at_or_past; j = slot_prev(j, n))
		__atomic_store_n(&slots[j], slots[slot_prev(j, n)], __ATOMIC_RELEASE);
	__atomic_store_n(&slots[at_or_past], w, __ATOMIC_RELEASE);
	/* TABLE_FULL_NUM/DEN of the table taken: a new file */
	p->grown++;
	if ((uint64_t)++p->used[k->tab] * TABLE_FULL_DEN > (uint64_t)n * TABLE_FULL_NUM)
		hostdir_want_rebuild(p);
	return 0;
}

/* The slot of hash @hash in table @tab that points at the block @off
 * (IBDIR_SLOT_ASK or not), or -1: found by its hash and that offset, not by
 * what the block holds now. */
static long slot_of_block(struct hostdir_pub *p, unsigned tab, uint32_t hash, uint32_t off)
{
	uint32_t n = hd_of(p)->tables[tab].n_slots, i = ibdir_home(hash, n);
	uint64_t *slots = slots_of(p, tab), want = (uint64_t)hash << 32 | off;

	for (uint32_t d = 0; d < n; d++, i = ibdir_next(i, n)) {
		if ((uint32_t)slots[i] == IBDIR_SLOT_EMPTY || ibdir_dist(slots[i], i, n) < d)
			return -1;
		if ((slots[i] & ~(uint64_t)IBDIR_SLOT_ASK) == want)
			return i;
	}
	return -1;
}

/* Delete the slot of @k that points at the block @off, found by hash and
 * block (slot_of_block()), not by what the block holds now: a block
 * rewritten in place without @k no longer lists it, and a slot left behind
 * would lead a reader to whatever record the block holds once it is written
 * again. The slots after it move one back, up to an empty one or one at its
 * key's home (backward shift: no tombstone is left to lengthen probes). */
static void slot_del(struct hostdir_pub *p, const struct dkey *k, uint32_t off)
{
	uint32_t hash = ibdir_hash(hd_of(p)->seed, k->tab, k->data, k->len);
	uint32_t n = hd_of(p)->tables[k->tab].n_slots, i, nx;
	uint64_t *slots = slots_of(p, k->tab);
	long at = slot_of_block(p, k->tab, hash, off);

	if (at < 0)
		return;
	i = (uint32_t)at;
	for (nx = ibdir_next(i, n);
	     (uint32_t)slots[nx] != IBDIR_SLOT_EMPTY && ibdir_dist(slots[nx], nx, n);
	     i = nx, nx = ibdir_next(nx, n))
		__atomic_store_n(&slots[i], slots[nx], __ATOMIC_RELEASE);
	__atomic_store_n(&slots[i], (uint64_t)IBDIR_SLOT_EMPTY, __ATOMIC_RELEASE);
	p->used[k->tab]--;
}

void hostdir_scope_write(struct hostdir_pub *p)
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
	n = hostdir_rec_keys(&p->gone, keys);
	for (unsigned i = 0; i < n; i++)
		slot_del(p, &keys[i], off);
	rec_free(p, off);
}

/* @h's view could not be written: its records go (its keys now miss, and a
 * miss is no longer authoritative), and a new file is due. */
static void lose_host(struct hostdir_pub *p, struct host *h, bool all, uint32_t off, uint32_t to)
{
	hostdir_want_rebuild(p);
	p->incomplete = true;
	hostdir_scope_write(p);
	drop_record(p, to);
	if (off != to)
		drop_record(p, off);
	host_set_cookie(h, all, 0);
}

/* The hashes of the @n keys @k into @hash (what slot_set() is given), and
 * in @ask which of the keys @held (whose slots lead to this record) share
 * their hash with a key the record lists but does not hold, in one table. A
 * reader that follows such a slot finds both listed and cannot tell whether
 * the record holds its key (the store may give it to another host): the
 * slot says so (IBDIR_SLOT_ASK), and the reader asks the daemon. Keys held
 * that share a hash need no mark: the record answers for each of them. (A
 * key held and one not are two keys: holding depends on the key alone.) */
static void hash_keys(const struct hostdir_pub *p, const struct dkey *k, unsigned n,
		      const bool *held, uint32_t *hash, bool *ask)
{
	for (unsigned i = 0; i < n; i++) {
		hash[i] = ibdir_hash(hd_of(p)->seed, k[i].tab, k[i].data, k[i].len);
		ask[i] = false;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!held[i])
			continue;
		for (unsigned j = 0; j < n && !ask[i]; j++)
			ask[i] = !held[j] && k[j].tab == k[i].tab && hash[j] == hash[i];
	}
}

/* Before the block at @off is rewritten in place: the slots it keeps that
 * will be ambiguous (hash_keys()) say so first, so that no reader takes
 * the new bytes for an answer between the two. */
static void mark_before_rewrite(struct hostdir_pub *p, const struct dkey *k, unsigned n,
				const uint32_t *hash, const bool *ask, uint32_t off)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t *slots = slots_of(p, k[i].tab);
		long at = ask[i] ? slot_of_block(p, k[i].tab, hash[i], off) : -1;

		if (at >= 0)
			__atomic_store_n(&slots[at], slots[at] | IBDIR_SLOT_ASK, __ATOMIC_RELEASE);
	}
}

/* Write one view of @h and the slots of the keys that lead to it: its own
 * record (its first cookie), or its host's (the second; VIEW_HOST only after
 * hostdir_host_whole() of @h made it). */
static void put_view(struct hostdir_pub *p, struct host *h, enum dview view)
{
	struct dkey keys[REC_KEYS_MAX], old_keys[REC_KEYS_MAX];
	bool all = view != VIEW_OWN;
	uint32_t off = host_cookie(h, all), to;
	unsigned n, n_old, mine = 0;
	uint32_t hash[REC_KEYS_MAX];
	bool held[REC_KEYS_MAX], ask[REC_KEYS_MAX];
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
	expires = view_of(p, h, view);
	n = hostdir_rec_keys(&p->cur, keys);
	for (unsigned i = 0; i < n; i++)
		mine += held[i] = hostdir_holds(p, h, &keys[i], view);
	if (!mine) {
		/* nothing a reader could ask for (a LID alone; no name the host
		 * shares) */
		drop_record(p, off);
		host_set_cookie(h, all, 0);
		return;
	}
	hash_keys(p, keys, n, held, hash, ask);
	len = hostdir_encode(p, view == VIEW_HOST ? &p->eps : NULL, expires);
	n_old = off ? hostdir_rec_keys(&p->prev, old_keys) : 0;
	if (off && len <= block(p, off)->cap) {
		/* in place: the slots of keys it no longer leads to go before its
		 * bytes change (slot_del() finds them by hash and block), and those
		 * it keeps that the new record makes ambiguous are marked, so that
		 * no slot leads a reader to the new record for a key it was not
		 * set for (a key the new record lists, not holds, with that hash) */
		for (unsigned i = 0; i < n_old; i++) {
			const struct dkey *k = &old_keys[i];

			if (!hostrec_has_key(&p->cur, ibdir_key_type(k->tab), k->data, k->len) ||
			    !hostdir_holds(p, h, k, view))
				slot_del(p, k, off);
		}
		mark_before_rewrite(p, keys, n, hash, ask, off);
		to = off;
		rec_write(p, to, len, false);
	} else {
		bool reused;

		to = rec_alloc(p, len, &reused);
		if (!to) {
			lose_host(p, h, all, off, off);
			return;
		}
		rec_write(p, to, len, !reused);
		p->stats.records++;
	}
	host_set_cookie(h, all, to);
	for (unsigned i = 0; i < n; i++)
		if (held[i] && slot_set(p, &keys[i], hash[i], to, ask[i])) {
			lose_host(p, h, all, off, to);
			return;
		}
	if (!off || to == off)
		return;
	for (unsigned i = 0; i < n_old; i++)
		slot_del(p, &old_keys[i], off);
	rec_free(p, off);
}

/* @h's blocks go (both cookies), and the slots leading to them. */
static void drop_views(struct hostdir_pub *p, struct host *h)
{
	for (int all = 0; all < 2; all++) {
		drop_record(p, host_cookie(h, all));
		host_set_cookie(h, all, 0);
	}
}

/* A new file is due: @h waits for it. Its records here go, and the slots
 * leading to them (they may be older than it is; a host that lost a key to
 * another is put too, so that its old record does not answer for it; the
 * host's one record goes as its speaker is put, in the same turn). The file
 * says it is incomplete: a reader asks the daemon instead. */
static void hold_back(struct hostdir_pub *p, struct host *h)
{
	drop_views(p, h);
	if (!p->incomplete) {
		p->incomplete = true;
		hostdir_scope_write(p);
	}
}

/* Is the block at @off (0: none) a host's one record (VIEW_HOST)? */
static bool is_host_record(const struct hostdir_pub *p, uint32_t off)
{
	return off && (block(p, off)->flags & IBDIR_REC_EPS);
}

/* @h, an endpoint of a host of several, put. Its speaker writes the host as
 * one record when one holds it whole, and drops the blocks its other
 * endpoints had: true, and @h is written. False: each endpoint's views, as
 * a host was written before (VIEW_OWN, VIEW_SHARED). */
static bool put_host(struct hostdir_pub *p, struct host *h)
{
	struct host *s = speaker_of(h);
	bool was_host = is_host_record(p, host_cookie(s, true));

	if (h != s) {
		/* the speaker, put in the same turn (hs_ring_changed), writes it */
		if (was_host || hostdir_host_whole(p, s)) {
			drop_views(p, h);
			return true;
		}
		return false;
	}
	if (hostdir_host_whole(p, h)) {
		/* first the host's record, so that its keys' slots lead there,
		 * then the blocks of before go (their slots are found by block) */
		put_view(p, h, VIEW_HOST);
		drop_record(p, host_cookie(h, false));
		host_set_cookie(h, false, 0);
		for (struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
			drop_views(p, e);
		return true;
	}
	if (was_host) {
		/* no longer whole: every endpoint's own views again now, since
		 * those put before in this turn left theirs to the host's record */
		for (struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e)) {
			put_view(p, e, VIEW_OWN);
			put_view(p, e, VIEW_SHARED);
		}
	}
	return false;
}

void hostdir_on_put(void *arg, struct host *h)
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
	if (host_next_endpoint(h, h) && put_host(p, h))
		return;
	put_view(p, h, VIEW_OWN);
	put_view(p, h, VIEW_SHARED);
}

void hostdir_put_new(struct hostdir_pub *p, struct host *h)
{
	if (p->rebuild)
		return;
	if (!host_next_endpoint(h, h)) {
		hostdir_on_put(p, h);
		return;
	}
	if (!hostdir_is_speaker(h))
		return;
	hostdir_on_put(p, h);
	if (p->rebuild || is_host_record(p, host_cookie(h, true)))
		return;
	/* one record does not hold it: each other endpoint writes its own
	 * views (or one does, and holds no key a reader could ask for: each
	 * other endpoint is put and writes nothing, as in any update) */
	for (struct host *e = host_next_endpoint(h, h); e && !p->rebuild;
	     e = host_next_endpoint(h, e))
		hostdir_on_put(p, e);
}

/* Has any endpoint of @h's host a block in this file? */
static bool ring_written(const struct host *h)
{
	for (const struct host *e = h; e; e = host_next_endpoint(h, e))
		if (host_cookie(e, false) || host_cookie(e, true))
			return true;
	return false;
}

/* @h, an endpoint of a host of several, heard again as it was. Its host
 * written as one record: that record's expiry is the host's soonest, and
 * only it moves. Written record by record (a host one record cannot hold):
 * each endpoint is put, as a change of one puts them all (the record of
 * their shared names carries the soonest expiry). */
static void refresh_ring(struct hostdir_pub *p, struct host *h)
{
	struct host *s = speaker_of(h);
	uint32_t off = host_cookie(s, true);

	if (is_host_record(p, off)) {
		rec_set_expiry(block(p, off), host_soonest_expires_ms(s));
		return;
	}
	if (p->rebuild && !ring_written(h))
		return; /* held back: the new file will hold it (and nothing changed) */
	hostdir_on_put(p, h);
	for (struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		hostdir_on_put(p, e);
}

void hostdir_on_refresh(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;
	uint32_t off = host_cookie(h, false);

	if (!p->map)
		return;
	if (host_next_endpoint(h, h)) {
		refresh_ring(p, h);
		return;
	}
	if (!off && p->rebuild)
		return; /* held back: the new file will hold it (and nothing changed) */
	if (!off || host_cookie(h, true)) {
		hostdir_on_put(arg, h); /* no record yet, or its host's view too */
		return;
	}
	rec_set_expiry(block(p, off), host_expires_ms(h)); /* the record is the same */
}

void hostdir_on_gone(void *arg, struct host *h)
{
	struct hostdir_pub *p = arg;

	if (!p->map)
		return;
	p->changed_ms = now_ms();
	section_begin(p);
	drop_views(p, h);
}
