// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared directory's freed blocks, written again for other
 * records (resolverd/os/hostdir_write.c), and of the rules that keep a reader
 * from ever taking one record for another because of it: no slot outlives
 * its key, a reader loads its slot and the block's seq again after the copy,
 * and a slot whose hash the record shares with a key it lists but does not
 * hold sends the reader to the daemon (IBDIR_SLOT_ASK). The races are made
 * exact with page faults: the image a reader reads is one state of the
 * directory with a page unreadable, and the fault turns it into a later
 * state at the moment the reader touches that page.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/clock.h"
#include "hostdir.h"
#include "hostdir_fixture.h"
#include "os/hostdir_impl.h"
#include "ibres.h"

/* @r into the store: a fabric host for 10 minutes, or a static one. */
static void insert(struct fx *f, const struct ibres_hostrec *r, uint8_t origin)
{
	hdfx_insert(f, r, origin, origin == IBRES_ORIGIN_STATIC ? 0 : 600);
}

/* The blocks of the image's record area: how many hold a record, how many
 * are free (expiry 0), and the bytes they take. */
static void count_blocks(const void *m, unsigned *live, unsigned *freed, uint64_t *bytes)
{
	const struct ibdir_header *hd = m;
	uint32_t at = hd->rec_off, end = hd->rec_off + hd->rec_size;

	*live = *freed = 0;
	*bytes = 0;
	while (at + sizeof(struct ibdir_rec) <= end) {
		const struct ibdir_rec *b = (const void *)((const uint8_t *)m + at);

		if (!b->cap)
			break; /* never taken */
		assert_true(b->cap % 8 == 0 && b->cap <= end - at);
		if (b->expires_ms)
			(*live)++;
		else
			(*freed)++;
		*bytes += b->cap;
		at += b->cap;
	}
}

/* A multi-rail host's record outgrows its block with every rail learned
 * (one rail: its own record; two and more: the host's one record): the
 * blocks it leaves are written again by the next host's record on its way up
 * (hosts learned one after the other, as a boot's announces come), so that
 * only the last host's lie free; every key still leads to its host's record,
 * and a rail's name or address answers with that rail. */
static void test_freed_blocks_written_again(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec got;
	unsigned live, freed;
	uint64_t bytes;
	char name[32];
	size_t size;
	void *m;

	m = hdfx_map(f, &size);
	for (unsigned h = 1; h <= 60; h++) {
		for (unsigned rail = 0; rail < 4; rail++)
			hdfx_put_rail(f, h, rail, 600);
		loop_run_due(&f->loop);
	}
	assert_int_equal(store_check(&f->store), 0);
	count_blocks(m, &live, &freed, &bytes);
	/* 60 hosts: one record each; free, the last one's smaller blocks and a
	 * few no later record's size took */
	assert_int_equal(live, 60);
	assert_true(freed <= 8); /* 6 after 200 hosts: they do not pile up */
	for (unsigned h = 1; h <= 60; h++) {
		snprintf(name, sizeof(name), "h%u", h);
		assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, name, strlen(name), &got), 0);
		assert_int_equal(got.n_v4, 4);
		for (unsigned rail = 0; rail < 4; rail++) {
			uint32_t a = htonl(0x0a000000u | rail << 16 | h);

			snprintf(name, sizeof(name), "h%u-ib%u", h, rail);
			assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, name, strlen(name), &got),
					 0);
			assert_int_equal(got.n_v4, 1);
			assert_int_equal(got.v4[0].s_addr, a);
			assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &a, 4, &got), 0);
			assert_string_equal(got.names[1], name);
		}
	}
	munmap(m, size);
}

/* The IPv4 table's slots that carry @a's hash and lead to a block. */
static unsigned v4_slots_of(const void *m, struct in_addr a)
{
	const struct ibdir_header *hd = m;
	const uint64_t *slots = (const void *)((const uint8_t *)m + hd->tables[IBDIR_TAB_IPV4].off);
	uint32_t hash = ibdir_hash(hd->seed, IBDIR_TAB_IPV4, &a, 4);
	unsigned n = 0;

	for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_IPV4].n_slots; i++)
		n += (uint32_t)slots[i] > IBDIR_SLOT_DELETED && (uint32_t)(slots[i] >> 32) == hash;
	return n;
}

/* A record rewritten in place without a key takes that key's slot with it,
 * although the block no longer lists the key: a slot left behind would lead,
 * once the block is written again for a host that claims the key too, to
 * that host instead of the key's holder. Here h7's address x changes (in
 * place), a static host takes x, h7 goes (its block is freed) and a fabric
 * host h8, refused x since the static host holds it, gets h7's old block:
 * x must still give the static host. */
static void test_a_dropped_key_leaves_no_slot(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, st, d, got;
	struct in_addr x;
	size_t size;
	void *m;

	m = hdfx_map(f, &size);
	hdfx_rec(&a, 7, 1);
	x = a.v4[0];
	insert(f, &a, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(v4_slots_of(m, x), 1);
	a.v4[0].s_addr = htonl(0x0a0000feu);
	insert(f, &a, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(v4_slots_of(m, x), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got),
			 -EAGAIN); /* not ours: ask */

	hdfx_rec(&st, 50, 1);
	st.v4[0] = x;
	insert(f, &st, IBRES_ORIGIN_STATIC);
	assert_true(store_remove_gid(&f->store, a.gids[0]) > 0);
	loop_run_due(&f->loop);
	hdfx_rec(&d, 8, 1);
	d.v4[0] = x;
	insert(f, &d, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got), 0);
	assert_string_equal(got.names[0], "h50");
	assert_int_equal(got.lid, st.lid);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "h8", 2, &got), 0);
	munmap(m, size);
}

/* A reader's image that moves on when it is touched: it starts as one
 * state of the directory with one page unreadable; each fault turns the
 * whole image into the next state and, if told, makes another page
 * unreadable. A fault with no state left is a real one. */
static struct {
	uint8_t *image;
	size_t size;
	const uint8_t *next[2];
	uint8_t *then_guard[2]; /* page to make unreadable after each */
	unsigned faults;
} mv;

static void move_on_fault(int sig, siginfo_t *si, void *uc)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned k = mv.faults++;

	(void)si;
	(void)uc;
	if (k >= 2 || !mv.next[k]) {
		signal(sig, SIG_DFL);
		return;
	}
	mprotect(mv.image, mv.size, PROT_READ | PROT_WRITE);
	memcpy(mv.image, mv.next[k], mv.size);
	if (mv.then_guard[k])
		mprotect(mv.then_guard[k], page, PROT_NONE);
}

static uint8_t *page_of(const void *at)
{
	return (uint8_t *)((uintptr_t)at & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));
}

/* A private copy of @first (@size bytes) to read, with the page of @at
 * (an offset into it) unreadable; the faults then bring @second and @third
 * (NULL: none), the second fault coming on the page of @then_at if any. */
static uint8_t *moving_image(const uint8_t *first, size_t size, uint32_t at, const uint8_t *second,
			     const uint8_t *third, long then_at)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	memset(&mv, 0, sizeof(mv));
	mv.size = (size + page - 1) & ~(page - 1);
	mv.image = mmap(NULL, mv.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mv.image != MAP_FAILED);
	memcpy(mv.image, first, size);
	mv.next[0] = second;
	mv.next[1] = third;
	if (then_at >= 0) {
		mv.then_guard[0] = page_of(mv.image + then_at);
		assert_true(mv.then_guard[0] != page_of(mv.image + at));
	}
	assert_int_equal(mprotect(page_of(mv.image + at), page, PROT_NONE), 0);
	return mv.image;
}

/* Look @key up in a moving image, with the fault handler in place. */
static int look_moving(uint16_t type, const void *key, size_t len, size_t size,
		       struct ibres_hostrec *got)
{
	struct sigaction sa = {.sa_sigaction = move_on_fault, .sa_flags = SA_SIGINFO}, old;
	int ret;

	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	ret = hdfx_look(mv.image, size, type, key, len, got);
	assert_int_equal(sigaction(SIGSEGV, &old, NULL), 0);
	munmap(mv.image, mv.size);
	return ret;
}

/* A reader that loaded a slot, then copied its block after the writer had
 * moved the record away, freed the block and written it again for another
 * record: the copy is whole (an even, unchanged seq), and it holds the key,
 * but it is not what the key leads to. The reader must load the slot again
 * and probe again. The image is the directory before the move with the
 * block's page unreadable; the copy's fault turns it into the directory
 * after the move. n17 is a static host of several rails (one record), and
 * the block its record of two rails leaves is taken by a fabric host that
 * names itself n17 too, refused the name (the static host holds it). */

/* Rail @rail of n17: both its names on every rail. */
static void put_n17_rail(struct fx *f, unsigned rail)
{
	struct ibres_hostrec r;

	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "n17");
	snprintf(r.names[1], sizeof(r.names[1]), "n17.cluster.example.org.xy");
	r.n_names = 2;
	r.v4[0].s_addr = htonl(0x0a000011u | rail << 16);
	r.n_v4 = 1;
	r.gids[0][0] = 0xfe;
	r.gids[0][1] = 0x80;
	r.gids[0][13] = 17;
	r.gids[0][15] = (uint8_t)rail;
	r.n_gids = 1;
	r.lid = 17;
	r.pkey = 0xffff;
	assert_int_equal(store_insert(&f->store, &r,
				      &(struct store_put){.origin = IBRES_ORIGIN_STATIC,
							  .heard_on = 1u << rail,
							  .rails = 0x55},
				      now_ms(), NULL),
			 0);
}

/* A fabric host alone that lists n17 (and is refused it), its record as
 * large as n17's of two rails, so that it takes that block when it is
 * freed. */
static void put_n17_claimer(struct fx *f)
{
	struct ibres_hostrec r;

	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "n17");
	snprintf(r.names[1], sizeof(r.names[1]), "%s.%s", "claimer-of-another-hosts-name",
		 "as-large-as-its-record");
	r.n_names = 2;
	r.v4[0].s_addr = htonl(0x0a630011u);
	r.n_v4 = 1;
	r.gids[0][0] = 0xfe;
	r.gids[0][1] = 0x80;
	r.gids[0][13] = 99;
	r.n_gids = 1;
	insert(f, &r, IBRES_ORIGIN_FABRIC);
}

static void test_a_slot_that_moved_under_the_copy(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec got, r;
	const struct ibdir_header *hd;
	const uint64_t *slots;
	size_t size;
	uint32_t hash, block_at = 0;
	uint8_t *m, *before;

	m = hdfx_map(f, &size);
	hd = (const void *)m;
	put_n17_rail(f, 0);
	put_n17_rail(f, 1);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "n17", 3, &got), 0);
	assert_int_equal(got.n_v4, 2);
	/* the slot the name leads through: to the host's record of two rails */
	hash = ibdir_hash(hd->seed, IBDIR_TAB_NAME, "n17", 3);
	slots = (const void *)(m + hd->tables[IBDIR_TAB_NAME].off);
	for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_NAME].n_slots; i++)
		if ((uint32_t)(slots[i] >> 32) == hash && (uint32_t)slots[i] > IBDIR_SLOT_DELETED)
			block_at = (uint32_t)slots[i];
	assert_int_equal(ibdir_rec_decode(m + block_at, size - block_at, &r), 0);
	assert_int_equal(r.n_v4, 2);
	before = malloc(size);
	assert_non_null(before);
	memcpy(before, m, size);

	put_n17_rail(f, 2);
	put_n17_rail(f, 3);
	put_n17_claimer(f);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	/* the host's record moved; its old block now holds the claimer's record,
	 * which lists the host name too */
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "n17", 3, &got), 0);
	assert_int_equal(got.n_v4, 4);
	assert_int_equal(ibdir_rec_decode(m + block_at, size - block_at, &r), 0);
	assert_int_equal(r.n_v4, 1);
	assert_string_equal(r.names[0], "n17");
	assert_int_equal(hd->state, IBDIR_LIVE);

	/* the slot table is read before the fault: it must not share the page */
	assert_true(hd->tables[IBDIR_TAB_NAME].off + 8 * hd->tables[IBDIR_TAB_NAME].n_slots <=
		    (uintptr_t)page_of((void *)(uintptr_t)block_at));
	moving_image(before, size, block_at, m, NULL, -1);
	assert_int_equal(look_moving(IBRES_T_NAME, "n17", 3, size, &got), 0);
	assert_int_equal(mv.faults, 1); /* the fault came, inside the copy */
	assert_int_equal(got.n_v4, 4);
	free(before);
	munmap(m, size);
}

/* The slot of @a in the IPv4 table that leads to a block (its index, and
 * its word in *@word), or -1. */
static long v4_slot(const void *m, struct in_addr a, uint64_t *word)
{
	const struct ibdir_header *hd = m;
	const uint64_t *slots = (const void *)((const uint8_t *)m + hd->tables[IBDIR_TAB_IPV4].off);
	uint32_t hash = ibdir_hash(hd->seed, IBDIR_TAB_IPV4, &a, 4);

	for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_IPV4].n_slots; i++)
		if ((uint32_t)slots[i] > IBDIR_SLOT_DELETED && (uint32_t)(slots[i] >> 32) == hash) {
			*word = slots[i];
			return i;
		}
	return -1;
}

static uint8_t *snapshot(const void *m, size_t size)
{
	uint8_t *c = malloc(size);

	assert_non_null(c);
	memcpy(c, m, size);
	return c;
}

/* The slot a reader loaded says the same after the copy, but only because it
 * went away and came back: x's slot leads to h7's block X; h7 goes, a static
 * host takes x, and X is written again for h8, a fabric host that lists x
 * but is refused it (the reader copies X now: h8's record, whole); h8 and
 * the static host go, h9 takes x, its record gets X again and x's slot says
 * (hash, X) once more. The block's seq moved meanwhile: the reader must
 * probe again, and answer h9, never h8. Two faults: the copy's brings the
 * middle state (and makes the slot's page unreadable), the slot's second
 * load brings the last. */
static void test_a_slot_that_came_back(void **state)
{
	struct fx *f = *state;
	struct ibres_hostrec a, st, b, d, got, r;
	const struct ibdir_header *hd;
	uint8_t *m, *first, *middle;
	uint64_t word, word2;
	struct in_addr x;
	size_t size;
	long i;

	m = hdfx_map(f, &size);
	hd = (const void *)m;
	hdfx_rec(&a, 7, 1);
	x = a.v4[0];
	insert(f, &a, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	i = v4_slot(m, x, &word);
	assert_true(i >= 0);
	first = snapshot(m, size);

	assert_true(store_remove_gid(&f->store, a.gids[0]) > 0);
	loop_run_due(&f->loop);
	hdfx_rec(&st, 50, 1);
	st.v4[0] = x;
	insert(f, &st, IBRES_ORIGIN_STATIC);
	loop_run_due(&f->loop);
	hdfx_rec(&b, 8, 1);
	b.v4[0] = x;
	insert(f, &b, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(ibdir_rec_decode(m + (uint32_t)word, size - (uint32_t)word, &r), 0);
	assert_string_equal(r.names[0], "h8"); /* X now holds h8, which lists x */
	assert_int_equal(r.v4[0].s_addr, x.s_addr);
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got), 0);
	assert_string_equal(got.names[0], "h50");
	middle = snapshot(m, size);

	assert_true(store_remove_gid(&f->store, b.gids[0]) > 0);
	loop_run_due(&f->loop);
	assert_true(store_remove_origin(&f->store, IBRES_ORIGIN_STATIC) > 0);
	loop_run_due(&f->loop);
	hdfx_rec(&d, 9, 1);
	d.v4[0] = x;
	insert(f, &d, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	assert_int_equal(v4_slot(m, x, &word2), i);
	assert_true(word2 == word); /* the same slot says the same again */
	assert_int_equal(hdfx_look(m, size, IBRES_T_IPV4, &x, 4, &got), 0);
	assert_string_equal(got.names[0], "h9");
	assert_int_equal(hd->state, IBDIR_LIVE);

	moving_image(first, size, (uint32_t)word, middle, m,
		     (long)(hd->tables[IBDIR_TAB_IPV4].off + 8 * (uint64_t)i));
	assert_int_equal(look_moving(IBRES_T_IPV4, &x, 4, size, &got), 0);
	assert_int_equal(mv.faults, 2); /* in the copy, then at the slot's second load */
	assert_string_equal(got.names[0], "h9");
	free(first);
	free(middle);
	munmap(m, size);
}

struct hashed {
	uint32_t hash, n;
};

static int by_hash(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash ? 1 : (x->n > y->n) - (x->n < y->n);
}

/* The @nth pair (from 0) of names "cN" that share a hash under @seed, into
 * @k and @k2 (16 bytes each); returns the hash. 400,000 names hashed: about
 * 19 pairs share one. */
static uint32_t nth_names_sharing_a_hash(uint64_t seed, unsigned nth, char *k, char *k2)
{
	const unsigned n = 400000;
	struct hashed *v = malloc(n * sizeof(*v));
	uint32_t hash = 0;

	assert_non_null(v);
	k[0] = '\0';
	for (unsigned u = 0; u < n; u++) {
		char s[16];

		snprintf(s, sizeof(s), "c%u", u);
		v[u] = (struct hashed){ibdir_hash(seed, IBDIR_TAB_NAME, s, strlen(s)), u};
	}
	qsort(v, n, sizeof(*v), by_hash);
	for (unsigned u = 1; u < n && !k[0]; u++) {
		/* a third name of one hash is not a pair of its own */
		if (v[u].hash != v[u - 1].hash || (u > 1 && v[u - 1].hash == v[u - 2].hash))
			continue;
		if (!nth--) {
			snprintf(k, 16, "c%u", v[u - 1].n);
			snprintf(k2, 16, "c%u", v[u].n);
			hash = v[u].hash;
		}
	}
	free(v);
	assert_true(k[0]);
	return hash;
}

static uint32_t names_sharing_a_hash(uint64_t seed, char *k, char *k2)
{
	return nth_names_sharing_a_hash(seed, 0, k, k2);
}

/* Host @lid (one GID, LID @lid) named @name and, if not NULL, @name2. */
static void named(struct ibres_hostrec *r, const char *name, const char *name2, unsigned lid)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->names[0], sizeof(r->names[0]), "%s", name);
	r->n_names = 1;
	if (name2) {
		snprintf(r->names[1], sizeof(r->names[1]), "%s", name2);
		r->n_names = 2;
	}
	r->gids[0][0] = 0xfe;
	r->gids[0][1] = 0x80;
	memcpy(&r->gids[0][12], &lid, 4);
	r->n_gids = 1;
	r->lid = (uint16_t)lid;
	r->pkey = 0xffff;
}

/* The block of the record of the host of GID @gid. */
static uint32_t block_of(struct fx *f, const uint8_t *gid)
{
	struct host_key hk;
	const struct host *h;

	assert_int_equal(host_key_addr(&hk, IBRES_KEY_GID, gid), 0);
	h = store_holder(&f->store, &hk);
	assert_non_null(h);
	return host_cookie(h, false);
}

/* The slots of table @tab with hash @hash that lead to the block @off: how
 * many, and in *@asking how many of them say IBDIR_SLOT_ASK. */
static unsigned slots_to(const uint8_t *m, unsigned tab, uint32_t hash, uint32_t off,
			 unsigned *asking)
{
	const struct ibdir_header *hd = (const void *)m;
	const uint64_t *slots = (const void *)(m + hd->tables[tab].off);
	unsigned n = 0;

	*asking = 0;
	for (uint32_t i = 0; i < hd->tables[tab].n_slots; i++)
		if ((uint32_t)(slots[i] >> 32) == hash &&
		    ((uint32_t)slots[i] & ~IBDIR_SLOT_ASK) == off) {
			n++;
			*asking += !!(slots[i] & IBDIR_SLOT_ASK);
		}
	return n;
}

/* Two names of one record that share a hash, one the record's host holds
 * (k2) and one it lists but a static host holds (k): a reader of k that
 * reaches the record's slot for k2 would find k listed and answer the wrong
 * host. The record is written, and its slot for k2 says IBDIR_SLOT_ASK: a
 * reader of k2 (or of k, if it comes there first) asks the daemon, and the
 * directory stays whole: no new generation, and a name nobody has is still
 * answered "no such host". The static host's slot for k, when it is written
 * again, never takes the marked one that stands for k2. Once the static host
 * leaves and the fabric host holds both names, they share one slot with no
 * mark; when k2 leaves the record, that slot goes with it and is set again
 * for k. The names are found by hashing 400,000 of them under this
 * generation's seed (about 19 pairs share a hash). */
static void test_keys_sharing_a_hash(void **state)
{
	struct fx *f = *state;
	char k[16], k2[16];
	struct ibres_hostrec r, got, fab;
	struct hostdir_stats st;
	unsigned asking;
	uint32_t hash, off;
	uint64_t seed;
	size_t size;
	uint8_t *m;
	int ret;

	hostdir_set_scope(f->pub, 0, NULL, 0, 0); /* a miss is authoritative */
	m = hdfx_map(f, &size);
	seed = ((const struct ibdir_header *)(const void *)m)->seed;
	hash = names_sharing_a_hash(seed, k, k2);
	named(&r, k, NULL, 2); /* the static host holds k */
	insert(f, &r, IBRES_ORIGIN_STATIC);
	loop_run_due(&f->loop);
	named(&fab, k2, k, 3); /* a fabric host: k2, and k, which it is refused */
	insert(f, &fab, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	hostdir_stats(f->pub, &st);

	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), -EAGAIN);
	ret = hdfx_look(m, size, IBRES_T_NAME, k, strlen(k), &got);
	assert_true(ret == -EAGAIN || (ret == 0 && got.lid == 2));
	off = block_of(f, fab.gids[0]);
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, off, &asking), 1);
	assert_int_equal(asking, 1);
	/* the fabric host's other keys answer from the file, and so do misses */
	assert_int_equal(hdfx_look(m, size, IBRES_T_GID, fab.gids[0], 16, &got), 0);
	assert_int_equal(got.lid, 3);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, "nobody", 6, &got), -ENODATA);
	usleep((HOSTDIR_REBUILD_QUIET_MS + 20) * 1000);
	loop_run_due(&f->loop);
	assert_int_equal(((const struct ibdir_header *)(const void *)m)->state, IBDIR_LIVE);
	assert_int_equal(f->pub->stats.rebuilds, st.rebuilds);

	/* the static host goes and comes back (a reload): its slot for k is its
	 * own, and the fabric host's marked slot, which stands for k2, stays */
	assert_true(store_remove_origin(&f->store, IBRES_ORIGIN_STATIC) > 0);
	loop_run_due(&f->loop);
	insert(f, &r, IBRES_ORIGIN_STATIC);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), -EAGAIN);
	ret = hdfx_look(m, size, IBRES_T_NAME, k, strlen(k), &got);
	assert_true(ret == -EAGAIN || (ret == 0 && got.lid == 2));
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, off, &asking), 1);
	assert_int_equal(asking, 1);
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, block_of(f, r.gids[0]), &asking), 1);
	assert_int_equal(asking, 0);

	/* the static host goes: the fabric host holds both, one slot unmarked */
	assert_true(store_remove_origin(&f->store, IBRES_ORIGIN_STATIC) > 0);
	insert(f, &fab, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(store_check(&f->store), 0);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k, strlen(k), &got), 0);
	assert_int_equal(got.lid, 3);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), 0);
	assert_int_equal(got.lid, 3);
	off = block_of(f, fab.gids[0]);
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, off, &asking), 1);
	assert_int_equal(asking, 0);

	/* k2 leaves the record: the slot k shares goes with it, and is set
	 * again for k */
	named(&fab, k, "hx", 3);
	insert(f, &fab, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k, strlen(k), &got), 0);
	assert_int_equal(got.lid, 3);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), -ENODATA);
	off = block_of(f, fab.gids[0]);
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, off, &asking), 1);
	assert_int_equal(asking, 0);
	assert_int_equal(f->pub->stats.rebuilds, st.rebuilds);
	munmap(m, size);
}

/* The writer's image at each first store into a page it was told to guard:
 * the states a reader can meet between two steps of one change. */
static struct {
	uint8_t *map;
	size_t size;
	uint8_t *snap[4];
	unsigned n;
} wf;

static void snap_on_write_fault(int sig, siginfo_t *si, void *uc)
{
	uint8_t *page = page_of(si->si_addr);

	(void)uc;
	if (wf.n >= 4 || page < wf.map || page >= wf.map + wf.size) {
		signal(sig, SIG_DFL);
		return;
	}
	memcpy(wf.snap[wf.n++], wf.map, wf.size); /* the guarded pages stay readable */
	mprotect(page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
}

struct guarded {
	struct sigaction old;
	uint8_t *slot_page, *block_page;
};

/* The pages of the name table's slot @at and of the block @x, guarded: wf
 * snapshots the writer's image at its first store into either. */
static void guard(struct fx *f, long at, uint32_t x, struct guarded *g)
{
	const struct sigaction sa = {.sa_sigaction = snap_on_write_fault, .sa_flags = SA_SIGINFO};
	const struct ibdir_header *hd = (const void *)f->pub->map;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	/* larger pages hold the header, a table and records together: the first
	 * fault would come from another store, and the order go unseen */
	if (page != 4096)
		skip();
	memset(&wf, 0, sizeof(wf));
	wf.map = f->pub->map;
	wf.size = f->pub->size;
	for (unsigned i = 0; i < 4; i++)
		assert_non_null(wf.snap[i] = malloc(wf.size));
	g->slot_page = page_of(wf.map + hd->tables[IBDIR_TAB_NAME].off + 8 * (size_t)at);
	g->block_page = page_of(wf.map + x);
	assert_int_equal(sigaction(SIGSEGV, &sa, &g->old), 0);
	assert_int_equal(mprotect(g->slot_page, page, PROT_READ), 0);
	assert_int_equal(mprotect(g->block_page, page, PROT_READ), 0);
}

static void unguard(struct guarded *g)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	assert_int_equal(sigaction(SIGSEGV, &g->old, NULL), 0);
	mprotect(g->slot_page, page, PROT_READ | PROT_WRITE);
	mprotect(g->block_page, page, PROT_READ | PROT_WRITE);
}

static void guard_free(void)
{
	for (unsigned i = 0; i < 4; i++)
		free(wf.snap[i]);
}

/* A record rewritten in place that drops a key K and now lists K2, of K's
 * hash, which a static host holds: K's slot must be gone before the block's
 * bytes change, else a reader between the two follows K's slot for K2 (it
 * comes first in the probe run), finds K2 listed and answers the fabric
 * host. The writer's pages of the block and of K's slot are guarded; every
 * state at a first store into either must answer K2 with the static host. */
static void test_in_place_drops_slots_before_the_bytes(void **state)
{
	struct fx *f = *state;
	struct guarded g;
	size_t size;
	const struct ibdir_header *hd;
	struct ibres_hostrec r, got;
	char k[16], k2[16];
	uint8_t *m;
	const uint64_t *slots;
	uint32_t hash, x = 0;
	long at = -1;

	m = hdfx_map(f, &size);
	hd = (const void *)m;
	hash = names_sharing_a_hash(hd->seed, k, k2);
	named(&r, k, "hxxxxxxx", 3); /* longer than "hx" and k2: in place */
	insert(f, &r, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	named(&r, k2, NULL, 2);
	insert(f, &r, IBRES_ORIGIN_STATIC);
	loop_run_due(&f->loop);
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), 0);
	assert_int_equal(got.lid, 2);
	slots = (const void *)(m + hd->tables[IBDIR_TAB_NAME].off);
	for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_NAME].n_slots && at < 0; i++)
		if ((uint32_t)(slots[i] >> 32) == hash && (uint32_t)slots[i] > IBDIR_SLOT_DELETED &&
		    ibdir_rec_has_key(m + (uint32_t)slots[i], size - (uint32_t)slots[i],
				      IBDIR_TAB_NAME, k, strlen(k))) {
			at = i;
			x = (uint32_t)slots[i];
		}
	assert_true(at >= 0);

	guard(f, at, x, &g);
	named(&r, "hx", k2, 3); /* k and hxxxxxxx dropped; k2 listed, refused */
	insert(f, &r, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	unguard(&g);
	assert_int_equal(store_check(&f->store), 0);
	/* the scenario: rewritten in place, k2 listed, both pages written */
	assert_int_equal(ibdir_rec_decode(m + x, size - x, &r), 0);
	assert_int_equal(r.lid, 3);
	assert_true(ibdir_rec_has_key(m + x, size - x, IBDIR_TAB_NAME, k2, strlen(k2)));
	assert_int_equal(wf.n, g.slot_page == g.block_page ? 1 : 2);
	for (unsigned i = 0; i < wf.n; i++) {
		int ret = hdfx_look(wf.snap[i], size, IBRES_T_NAME, k2, strlen(k2), &got);

		assert_true(ret != 0 || got.lid == 2);
	}
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k2, strlen(k2), &got), 0);
	assert_int_equal(got.lid, 2);
	guard_free();
	munmap(m, size);
}

/* A record rewritten in place that keeps a key K and now lists K2, of K's
 * hash, which a static host holds: K's slot must say IBDIR_SLOT_ASK before
 * the block's bytes change, else a reader between the two follows K's slot
 * for K2 (should it come first in the probe run), finds K2 listed and
 * answers the fabric host. The writer's pages of the block and of K's slot
 * are guarded; in every state at a first store into either, K's slot either
 * asks or leads to a block that does not list K2. */
static void test_in_place_marks_before_the_bytes(void **state)
{
	struct fx *f = *state;
	struct guarded g;
	size_t size;
	const struct ibdir_header *hd;
	struct ibres_hostrec r, got;
	char k[16], k2[16];
	uint8_t *m;
	const uint64_t *slots;
	uint32_t hash, x;
	unsigned asking;
	long at = -1;

	m = hdfx_map(f, &size);
	hd = (const void *)m;
	hash = names_sharing_a_hash(hd->seed, k, k2);
	/* an IPv6 address, dropped later: the block is rewritten in place,
	 * and the only slot of the name table that changes is k's */
	named(&r, k, "hx", 3);
	r.v6[0].s6_addr[0] = 0xfd;
	r.n_v6 = 1;
	insert(f, &r, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	named(&r, k2, NULL, 2);
	insert(f, &r, IBRES_ORIGIN_STATIC);
	loop_run_due(&f->loop);
	named(&r, k, "hx", 3);
	x = block_of(f, r.gids[0]);
	slots = (const void *)(m + hd->tables[IBDIR_TAB_NAME].off);
	for (uint32_t i = 0; i < hd->tables[IBDIR_TAB_NAME].n_slots && at < 0; i++)
		if (slots[i] == ((uint64_t)hash << 32 | x))
			at = i;
	assert_true(at >= 0);

	guard(f, at, x, &g);
	named(&r, k, "hx", 3); /* k kept; k2 listed, refused */
	snprintf(r.names[2], sizeof(r.names[2]), "%s", k2);
	r.n_names = 3;
	insert(f, &r, IBRES_ORIGIN_FABRIC);
	loop_run_due(&f->loop);
	unguard(&g);
	assert_int_equal(store_check(&f->store), 0);
	/* the scenario: rewritten in place, k2 listed, both pages written */
	assert_int_equal(block_of(f, r.gids[0]), x);
	assert_true(ibdir_rec_has_key(m + x, size - x, IBDIR_TAB_NAME, k2, strlen(k2)));
	assert_int_equal(slots_to(m, IBDIR_TAB_NAME, hash, x, &asking), 1);
	assert_int_equal(asking, 1);
	assert_int_equal(wf.n, g.slot_page == g.block_page ? 1 : 2);
	for (unsigned i = 0; i < wf.n; i++) {
		int ret = hdfx_look(wf.snap[i], size, IBRES_T_NAME, k2, strlen(k2), &got);
		unsigned n = slots_to(wf.snap[i], IBDIR_TAB_NAME, hash, x, &asking);

		assert_true(ret != 0 || got.lid == 2);
		assert_true(asking == n || !ibdir_rec_has_key(wf.snap[i] + x, size - x,
							      IBDIR_TAB_NAME, k2, strlen(k2)));
	}
	assert_int_equal(hdfx_look(m, size, IBRES_T_NAME, k, strlen(k), &got), -EAGAIN);
	guard_free();
	munmap(m, size);
}

/* Random changes to a few hosts whose names include two pairs that share a
 * hash (static hosts, which win a name, and fabric hosts, which are refused
 * it, two of them hosts of two rails; reloads of the static ones; fabric
 * endpoints going), every state checked
 * against the store: a name is answered with the host the store gives it
 * to, or "no such host" only when the store gives it to none, or the reader
 * is sent to the daemon, which only a name of a pair may be; and no slot
 * outlives its block or doubles another (slots_sound()). */
#define CH_HOSTS 6 /* LIDs 1..6; 1 and 2 static, 5 and 6 of two rails */
#define CH_NAMES 8 /* two pairs that share a hash, four other names */

/* Host @lid's record of random names of @names; hosts 5 and 6 are of two
 * rails (@rail 0 or 1, one GID each, the host's name on both), so that their
 * names are one record's with its endpoint sets. */
static void random_names(struct ibres_hostrec *r, char names[][16], unsigned lid, unsigned rail,
			 unsigned *rng)
{
	memset(r, 0, sizeof(*r));
	if (lid >= 5)
		snprintf(r->names[r->n_names++], sizeof(r->names[0]), "mr%u", lid);
	for (unsigned i = 0; i < CH_NAMES && r->n_names < 4; i++) {
		*rng = *rng * 1103515245u + 12345u;
		if ((*rng >> 16) % 3 == 0)
			snprintf(r->names[r->n_names++], sizeof(r->names[0]), "%s", names[i]);
	}
	if (!r->n_names)
		snprintf(r->names[r->n_names++], sizeof(r->names[0]), "own%u", lid);
	r->gids[0][0] = 0xfe;
	r->gids[0][1] = 0x80;
	r->gids[0][11] = (uint8_t)rail;
	memcpy(&r->gids[0][12], &lid, 4);
	r->n_gids = 1;
	r->lid = (uint16_t)lid;
	r->pkey = 0xffff;
}

/* Rail @rail of host @lid (5 or 6) as the fabric teaches it. */
static void insert_rail(struct fx *f, const struct ibres_hostrec *r, unsigned rail)
{
	const struct store_put put = {
		.origin = IBRES_ORIGIN_FABRIC, .heard_on = 1u << rail, .rails = 0x55, .ttl_s = 600};

	assert_int_equal(store_insert(&f->store, r, &put, now_ms(), NULL), 0);
}

/* Does the block at @at of image @m list a key of table @tab of hash
 * @hash? */
static bool block_lists_hash(const uint8_t *m, uint32_t at, unsigned tab, uint32_t hash)
{
	const struct ibdir_header *hd = (const void *)m;
	const struct ibdir_rec *b = (const void *)(m + at);
	uint64_t copy[IBDIR_REC_MAX / 8];
	const uint8_t *q, *name;
	size_t len = sizeof(*b) + b->data_len;
	struct ibdir_view v;

	/* the block as a reader sees it: a copy, unpacked */
	if (at + len > hd->rec_off + hd->rec_size || len > sizeof(copy))
		return false;
	memcpy(copy, m + at, len);
	if (ibdir_rec_unpack((uint8_t *)copy, sizeof(copy), 0, len, &len) ||
	    ibdir_view_init((const uint8_t *)copy, len, &v))
		return false;
	q = v.names;
	for (unsigned i = 0; i < v.n_names; i++) {
		size_t l = ibdir_view_next_name(&q, &name);

		if (tab == IBDIR_TAB_NAME && ibdir_hash(hd->seed, tab, name, l) == hash)
			return true;
	}
	for (unsigned i = 0; i < v.n_v4; i++)
		if (tab == IBDIR_TAB_IPV4 && ibdir_hash(hd->seed, tab, v.v4 + 4 * i, 4) == hash)
			return true;
	for (unsigned i = 0; i < v.n_v6; i++)
		if (tab == IBDIR_TAB_IPV6 && ibdir_hash(hd->seed, tab, v.v6 + 16 * i, 16) == hash)
			return true;
	for (unsigned i = 0; i < v.n_gids; i++)
		if (tab == IBDIR_TAB_GID && ibdir_hash(hd->seed, tab, v.gids + 16 * i, 16) == hash)
			return true;
	return false;
}

/* Every slot of image @m leads to a live block (none outlives its block)
 * that lists a key of its hash, and no block has two slots of one hash
 * (keys of a block that share a hash share one; the same home keeps them in
 * one run). */
static void slots_sound(const uint8_t *m, size_t size)
{
	const struct ibdir_header *hd = (const void *)m;

	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		const uint64_t *slots = (const void *)(m + hd->tables[t].off);
		uint32_t n = hd->tables[t].n_slots;

		for (uint32_t i = 0; i < n; i++) {
			uint32_t at = (uint32_t)slots[i] & ~IBDIR_SLOT_ASK, home;

			if (!at)
				continue;
			assert_true(at >= hd->rec_off && at + sizeof(struct ibdir_rec) <= size &&
				    !(at & 7));
			assert_int_not_equal(
				((const struct ibdir_rec *)(const void *)(m + at))->expires_ms, 0);
			assert_true(block_lists_hash(m, at, t, (uint32_t)(slots[i] >> 32)));
			home = ibdir_home((uint32_t)(slots[i] >> 32), n);
			for (uint32_t j = ibdir_next(i, n);
			     (uint32_t)slots[j] &&
			     ibdir_home((uint32_t)(slots[j] >> 32), n) == home;
			     j = ibdir_next(j, n))
				assert_true((slots[j] & ~(uint64_t)IBDIR_SLOT_ASK) !=
					    (slots[i] & ~(uint64_t)IBDIR_SLOT_ASK));
		}
	}
}

static void test_changes_around_shared_hashes(void **state)
{
	struct fx *f = *state;
	char names[CH_NAMES][16];
	struct ibres_hostrec r, got;
	unsigned rng = 1, asked = 0, answered = 0, asked_mr = 0, answered_mr = 0;
	uint64_t seed, rebuilds;
	size_t size;
	uint8_t *m;

	hostdir_set_scope(f->pub, 0, NULL, 0, 0);
	m = hdfx_map(f, &size);
	seed = ((const struct ibdir_header *)(const void *)m)->seed;
	nth_names_sharing_a_hash(seed, 0, names[0], names[1]);
	nth_names_sharing_a_hash(seed, 1, names[2], names[3]);
	for (unsigned i = 4; i < CH_NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "n%u", i);
	rebuilds = f->pub->stats.rebuilds;

	for (unsigned step = 0; step < 4000; step++) {
		unsigned lid, op, rail;

		rng = rng * 1103515245u + 12345u;
		lid = (rng >> 16) % CH_HOSTS + 1;
		op = (rng >> 8) % 8;
		rail = lid >= 5 ? (rng >> 4) & 1 : 0;
		if (op == 0) {
			store_remove_origin(&f->store, IBRES_ORIGIN_STATIC); /* a reload */
		} else if (op == 1 && lid > 2) {
			random_names(&r, names, lid, rail, &rng);
			store_remove_gid(&f->store, r.gids[0]);
		} else if (lid >= 5) {
			random_names(&r, names, lid, rail, &rng);
			insert_rail(f, &r, rail);
		} else {
			random_names(&r, names, lid, rail, &rng);
			insert(f, &r, lid <= 2 ? IBRES_ORIGIN_STATIC : IBRES_ORIGIN_FABRIC);
		}
		loop_run_due(&f->loop);
		assert_int_equal(store_check(&f->store), 0);
		slots_sound(m, size);
		for (unsigned i = 0; i < CH_NAMES; i++) {
			const struct host *holder;
			struct host_key hk;
			int ret =
				hdfx_look(m, size, IBRES_T_NAME, names[i], strlen(names[i]), &got);

			assert_int_equal(host_key_name(&hk, names[i]), 0);
			holder = store_holder(&f->store, &hk);
			if (ret == -EAGAIN) {
				assert_true(i < 4); /* only a name of a pair */
				asked++;
				if (holder) {
					host_record(holder, &r, now_ms());
					asked_mr += r.lid >= 5;
				}
				continue;
			}
			if (!holder) {
				assert_int_equal(ret, -ENODATA);
				continue;
			}
			assert_int_equal(ret, 0);
			host_record(holder, &r, now_ms());
			assert_int_equal(got.lid, r.lid);
			answered += i < 4;
			answered_mr += i < 4 && r.lid >= 5;
		}
	}
	/* both ways were taken, and all in the one generation */
	assert_true(asked > 0 && answered > 0);
	assert_true(asked_mr > 0 && answered_mr > 0); /* and in a record of two rails */
	assert_int_equal(f->pub->stats.rebuilds, rebuilds);
	munmap(m, size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_freed_blocks_written_again, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_a_dropped_key_leaves_no_slot, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_a_slot_that_moved_under_the_copy, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_a_slot_that_came_back, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_keys_sharing_a_hash, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_in_place_drops_slots_before_the_bytes,
						hdfx_setup, hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_in_place_marks_before_the_bytes, hdfx_setup,
						hdfx_teardown),
		cmocka_unit_test_setup_teardown(test_changes_around_shared_hashes, hdfx_setup,
						hdfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
