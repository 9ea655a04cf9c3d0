// SPDX-License-Identifier: MIT
/*
 * The shared host directory's generations (hostdir_pub.h): made at start-up,
 * when the one published fills up (once the store is quiet), and to retry
 * after a failure; the timers that drive them. hostdir_impl.h has the
 * design, hostdir_write.c the records and slots.
 */
#include "os/hostdir_impl.h"

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

#define REC_AREA_MIN (128u * 1024)
#define SLOTS_MIN    2048u /* a 1,000-node cluster without growing */
#define RETRY_TICKS  5u	   /* heartbeats between two tries after a failure */
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
/* A new file is built once the store was quiet HOSTDIR_REBUILD_QUIET_MS
 * (hostdir_pub.h), or REBUILD_WAIT_MS after it became due: each new file
 * writes every host again, and a 48,000-node boot storm made about 17 of
 * them, a quarter of the daemon's CPU (bench/RESULTS.md). Meanwhile hosts
 * are not written into the file that is full (it says it is incomplete, so
 * readers ask the daemon, as they must while the directory fills anyway). */
#define REBUILD_WAIT_MS 3000u
/* Room to grow is for a directory that grows. Once it took no new block and
 * no new slot for HOSTDIR_COMPACT_BEATS heartbeats (a boot storm is over, or
 * the daemon started on a settled cluster), the store is written again into
 * a compact file: room for 1/COMPACT_ROOM_DIV more records (blocks left
 * behind dropped), tables 4/5 full. Once, until growth makes a new file
 * again; and only if the file shrinks by an eighth or more, which is worth
 * every reader fetching it (one message each, at its next look-up). At
 * 48,000 eight-rail hosts about 110 bytes a host (bench/RESULTS.md). */
#define COMPACT_ROOM_DIV 16u

/* ---- files ------------------------------------------------------------------------ */

struct sizing {
	struct hostdir_pub *p;
	uint64_t keys[IBDIR_TABLES];
	uint64_t bytes;
	/* the file this one replaces: bytes of blocks taken and freed since it
	 * was made (taken - freed: how much its records grew; 0, 0: no file) */
	uint64_t taken, freed;
};

/* Keys of @n in @keys to size a table for: each key that leads to @h's
 * view (@view: VIEW_OWN for a host alone, VIEW_HOST for a host one record
 * holds). Asking the store of each key was a fifth of a new generation's
 * time: when the store's own count says @h's host holds at least as many
 * keys as its record lists, every key is counted without asking (a key
 * another host holds is listed only after a conflict; counted anyway, a slot
 * too many costs about 11 bytes, and at most its LIDs' worth a host). */
static void count_keys(struct sizing *z, struct host *h, const struct dkey *keys, unsigned n,
		       enum dview view)
{
	unsigned held = 0;

	for (const struct host *e = h; e; e = host_next_endpoint(h, e))
		held += host_keys_held(e);
	for (unsigned i = 0; i < n; i++)
		if (held >= n || hostdir_holds(z->p, h, &keys[i], view))
			z->keys[keys[i].tab]++;
}

/* The speaker @s of a host of several endpoints, if one record holds the
 * host whole: it counts the record and its keys. False: the host is
 * written an endpoint at a time. */
static bool size_whole_host(struct sizing *z, struct host *s)
{
	struct dkey keys[REC_KEYS_MAX];

	if (!hostdir_host_whole(z->p, s))
		return false;
	count_keys(z, s, keys, hostdir_rec_keys(&z->p->cur, keys), VIEW_HOST);
	z->bytes += (hostdir_encode(z->p, &z->p->eps, 0) + 7) & ~7ull;
	return true;
}

/* A host alone: its record and its keys. */
static void size_alone(struct sizing *z, struct host *h)
{
	struct dkey keys[REC_KEYS_MAX];
	unsigned n;

	host_record(h, &z->p->cur, 0);
	n = hostdir_rec_keys(&z->p->cur, keys);
	count_keys(z, h, keys, n, VIEW_OWN);
	if (n)
		z->bytes += (hostdir_encode(z->p, NULL, 0) + 7) & ~7ull;
}

/* An endpoint of a host one record cannot hold, written on its own: its
 * record, and its host's shared names. */
static void size_endpoint(struct sizing *z, struct host *h)
{
	struct dkey keys[REC_KEYS_MAX];
	bool shared = false;
	unsigned n;

	host_record(h, &z->p->cur, 0);
	n = hostdir_rec_keys(&z->p->cur, keys);
	/* a slot for every key the store gives @h (a name the host's endpoints
	 * share is counted once, with the one that holds it) */
	for (unsigned i = 0; i < n; i++) {
		if (hostdir_holds(z->p, h, &keys[i], VIEW_OWN))
			z->keys[keys[i].tab]++;
		else if (hostdir_holds(z->p, h, &keys[i], VIEW_SHARED))
			z->keys[keys[i].tab]++, shared = true;
	}
	if (n)
		z->bytes += (hostdir_encode(z->p, NULL, 0) + 7) & ~7ull;
	if (shared) {
		/* it holds its host's shared names: room for the host's record */
		host_record_all(h, &z->p->cur, 0);
		z->bytes += (hostdir_encode(z->p, NULL, 0) + 7) & ~7ull;
	}
}

/* Every endpoint of the store in turn: a host of several is sized once, when
 * its speaker comes (as hostdir_put_new() writes it). */
static void size_host(void *arg, struct host *h)
{
	struct sizing *z = arg;

	if (!host_next_endpoint(h, h)) {
		size_alone(z, h);
		return;
	}
	if (!hostdir_is_speaker(h) || size_whole_host(z, h))
		return;
	for (struct host *e = h; e; e = host_next_endpoint(h, e))
		size_endpoint(z, e);
}

/* Slots for a table of @keys keys: 10/7 as many, so that it starts 7/10
 * full (@compact: 5/4, 4/5 full), or a little less when count_keys() counted
 * a key the writer gives no slot (a table 7/8 taken makes a new file,
 * slot_set()). Any number will do (format 3): a power of two would cost up
 * to twice the memory. */
static uint32_t slots_for(uint64_t keys, bool compact)
{
	uint64_t n = (compact ? keys * 5 / 4 : keys * 10 / 7) + 2;

	if (n < SLOTS_MIN)
		return SLOTS_MIN;
	return n < IBDIR_SLOTS_MAX ? (uint32_t)n : IBDIR_SLOTS_MAX;
}

/* Lay out an empty file of room for what @z counted, and some to grow
 * (@compact: a little, COMPACT_ROOM_DIV). */
static uint64_t layout(struct ibdir_header *hd, const struct sizing *z, bool compact)
{
	uint64_t off = IBDIR_HEADER_SPACE, room = z->bytes / REC_AREA_GROW_DIV, area;

	if (compact)
		room = z->bytes / COMPACT_ROOM_DIV;
	else if (z->taken && z->freed >= z->taken)
		room = z->bytes; /* blocks taken, none of it growth: churn */
	else if (z->freed)
		room = room * z->taken / (z->taken - z->freed);
	area = z->bytes + room;
	if (area > z->bytes * REC_AREA_MAX_MUL)
		area = z->bytes * REC_AREA_MAX_MUL;
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		hd->tables[t].n_slots = slots_for(z->keys[t], compact);
		hd->tables[t].off = (uint32_t)off;
		off += (uint64_t)hd->tables[t].n_slots * 8;
	}
	if (area < REC_AREA_MIN)
		area = REC_AREA_MIN;
	hd->rec_off = (uint32_t)off;
	hd->rec_size = (uint32_t)(area < IBDIR_FILE_MAX ? area : IBDIR_FILE_MAX);
	return off + area;
}

/* Every cookie points into the generation before: none may be followed in
 * the new one (an endpoint asks its host's speaker which kind of block it
 * has), so all go before any host is written. */
static void forget_host(void *arg, struct host *h)
{
	(void)arg;
	host_set_cookie(h, false, 0);
	host_set_cookie(h, true, 0);
}

static void write_host(void *arg, struct host *h)
{
	hostdir_put_new(arg, h);
}

static void fail(struct hostdir_pub *p, const char *what, int err)
{
	p->stats.failures++;
	if (p->map && !p->rebuild) {
		/* compacting (on_beat()): the file published serves on */
		log_warn("host directory: compacting: %s: %s; the file published stays", what,
			 strerror(err));
		return;
	}
	p->retry_in = RETRY_TICKS;
	if (p->logged)
		return;
	p->logged = true;
	log_err("host directory: %s: %s; clients ask over the socket until it can be written", what,
		strerror(err));
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

/* Write the whole store into a new generation and publish it (@compact:
 * with little room, and only if that makes the file an eighth smaller). */
static int build(struct hostdir_pub *p, bool compact)
{
	struct sizing z = {.p = p};
	struct ibdir_header tmpl = {0}, *hd;
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
	size = layout(&tmpl, &z, compact);
	if (compact && size > p->size - p->size / 8)
		return 0; /* not worth it */
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
	hd->flags = IBDIR_ORDERED;
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
	p->compact = compact;
	p->steady_beats = 0;
	p->left_behind = 0;
	hostdir_bins_clear(p);
	store_foreach_host(p->store, forget_host, p);
	store_foreach_host(p->store, write_host, p);
	p->rec_built = p->rec_next - hd->rec_off;
	if (p->rebuild) {
		/* it was sized for all of it: the store changed meanwhile? try again */
		fail(p, "fill", ENOSPC);
		goto err_map;
	}
	hostdir_section_end(p);
	loop_timer_cancel(p->loop, &p->end_section);
	loop_timer_cancel(p->loop, &p->later);
	hostdir_scope_write(p);
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
		build(p, false);
	else
		loop_timer_arm(p->loop, &p->later, at);
}

int hostdir_compact(struct hostdir_pub *p)
{
	int ret;

	if (!p->map || p->rebuild)
		return -EAGAIN;
	if (p->in_section)
		hostdir_section_end(p);
	ret = build(p, true);
	if (ret && !p->map && !build(p, false)) {
		/* it could not be filled (the old one is gone): one for growth,
		 * published, so nothing waits for a retry */
		p->retry_in = 0;
		ret = 0;
	}
	/* made, not worth it, or failed: not again until growth makes a file */
	p->compact = true;
	return ret;
}

static void on_later(struct loop_timer *t)
{
	try_rebuild(container_of(t, struct hostdir_pub, later));
}

static void on_end_section(struct loop_timer *t)
{
	struct hostdir_pub *p = container_of(t, struct hostdir_pub, end_section);

	if (p->map)
		hostdir_section_end(p);
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
			build(p, false);
	} else if (p->map && !p->rebuild && !p->compact && !p->in_section && !p->retry_in) {
		if (p->grown != p->grown_seen)
			p->steady_beats = 0;
		else if (++p->steady_beats >= HOSTDIR_COMPACT_BEATS)
			hostdir_compact(p);
		p->grown_seen = p->grown;
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
	store_observe(store, &(struct store_observer){.put = hostdir_on_put,
						      .refresh = hostdir_on_refresh,
						      .gone = hostdir_on_gone,
						      .arg = p});
	if (!build(p, false))
		log_info(
			"host directory: %llu hosts, %llu bytes, passed to readers over the socket",
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
		hostdir_section_end(p);
		__atomic_store_n(&hd_of(p)->state, IBDIR_CLOSED, __ATOMIC_RELEASE);
		munmap(p->map, p->size);
		close(p->fd);
	}
	hostdir_bins_free(p);
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
	hostdir_scope_write(p);
}

void hostdir_stats(const struct hostdir_pub *p, struct hostdir_stats *out)
{
	if (p)
		*out = p->stats;
	else
		memset(out, 0, sizeof(*out));
}
