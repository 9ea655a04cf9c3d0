// SPDX-License-Identifier: MIT
/*
 * A handle's window on the shared host directory (lib/hostdir.h): getting
 * it from the daemon, mapping it, noticing that it was replaced, and when to
 * ask the daemon instead.
 *
 * The directory is never opened by path: the daemon passes its descriptor
 * over the socket (IBRES_OP_DIRECTORY), after conn_open has checked who
 * listens there, as nscd hands out its database. The descriptor must be a
 * memfd sealed against shrinking, growing and writing, so nobody can
 * truncate the mapping under us (SIGBUS) or write into it; it is mapped
 * read-only and closed at once, so nothing the application does to its
 * descriptors can reach it, and the mapping survives fork(). A look-up reads
 * the current mapping through one atomic pointer and writes nothing shared.
 * Fetching anew is done by one thread at a time (trylock: the others ask the
 * daemon meanwhile), at most once a second. A mapping that was replaced is
 * not unmapped at once, since another thread may be reading it: its place
 * in the handle is taken again a minute later at the earliest.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hostdir.h"
#include "ibres.h"

#define MAP_RETRY_MS	1000u
#define RETIRED_KEEP_MS 60000u
/* What a directory's descriptor must be sealed with before it is mapped. */
#define DIR_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE)

enum { DIR_UNDECIDED = 0, DIR_ON = 1, DIR_OFF = -1 };

/* The coarse monotonic clock: read from the vDSO, never a system call. */
IBRES_HOT static uint64_t coarse_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* $IBRES_DIRECTORY=off (none, 0) turns the fast path off; decided once per
 * handle. */
static int decide(struct ibres *h)
{
	const char *env = secure_getenv(IBRES_DIRECTORY_ENV);
	int mode = DIR_ON;

	if (env && (!strcmp(env, "off") || !strcmp(env, "none") || !strcmp(env, "0")))
		mode = DIR_OFF;
	__atomic_store_n(&h->dir.mode, mode, __ATOMIC_RELEASE);
	return mode;
}

/* Map the directory the daemon passes into the place @m. 0, or -1 (@m
 * stays free). */
static int map_fetched(struct ibres *h, struct ibc_dirmap *m)
{
	struct stat st;
	uint64_t said;
	void *base;
	int fd, seals, ret = -1;

	if (ibc_directory_fd(h, &fd, &said))
		return -1;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & DIR_SEALS) != DIR_SEALS || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != said ||
	    st.st_size < IBDIR_HEADER_SPACE || st.st_size > IBDIR_FILE_MAX)
		goto out;
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto out;
	/* one still being written, or a stopped daemon's, is not taken; its
	 * geometry is read once it is LIVE (the writer sets it before) */
	if (__atomic_load_n(&((const struct ibdir_header *)base)->state, __ATOMIC_ACQUIRE) !=
		    IBDIR_LIVE ||
	    ibdir_geom_read(base, (size_t)st.st_size, &m->geom)) {
		munmap(base, (size_t)st.st_size);
		goto out;
	}
	m->size = (size_t)st.st_size;
	m->retired_ms = 0;
	m->base = base;
	ret = 0;
out:
	close(fd);
	return ret;
}

/* A place for a new mapping: a free one, or the one replaced longest ago
 * if that was a minute ago or more (another thread may still be reading a
 * younger one); it is unmapped then. NULL when there is none. */
static struct ibc_dirmap *free_place(struct ibc_dir *d, uint64_t now)
{
	struct ibc_dirmap *oldest = NULL;

	for (unsigned i = 0; i < IBC_DIR_MAPS; i++) {
		struct ibc_dirmap *m = &d->maps[i];

		if (m == d->cur)
			continue;
		if (!m->base)
			return m;
		if (!oldest || m->retired_ms < oldest->retired_ms)
			oldest = m;
	}
	if (!oldest || oldest->retired_ms + RETIRED_KEEP_MS > now)
		return NULL;
	munmap((void *)oldest->base, oldest->size);
	oldest->base = NULL;
	return oldest;
}

/* Fetch and map the directory anew (the first time, or it was replaced,
 * went bad or its daemon stopped). Returns the mapping to use, or NULL (ask
 * the daemon). */
static struct ibc_dirmap *remap(struct ibres *h, uint64_t now)
{
	struct ibc_dir *d = &h->dir;
	struct ibc_dirmap *m = NULL;

	if (now < __atomic_load_n(&d->next_try_ms, __ATOMIC_RELAXED))
		return NULL;
	if (pthread_mutex_trylock(&d->lock))
		return NULL;
	if (now < d->next_try_ms)
		goto out;
	__atomic_store_n(&d->next_try_ms, now + MAP_RETRY_MS, __ATOMIC_RELAXED);
	/* no place for it: keep the old one (its look-ups go to the daemon) */
	m = free_place(d, now);
	if (!m || map_fetched(h, m)) {
		m = NULL;
		goto out;
	}
	if (d->cur)
		d->cur->retired_ms = now;
	__atomic_store_n(&d->cur, m, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&d->lock);
	return m;
}

IBRES_HOT int ibc_dir_find(struct ibres *h, uint16_t type, const void *key, size_t len, void *buf,
			   size_t cap, struct ibdir_view *v)
{
	struct ibc_dir *d = &h->dir;
	int mode = __atomic_load_n(&d->mode, __ATOMIC_ACQUIRE);
	struct ibc_dirmap *m;
	uint64_t now;
	int ret;

	if (mode == DIR_UNDECIDED)
		mode = decide(h);
	if (mode == DIR_OFF)
		return -ENOENT;
	now = coarse_now_ms();
	m = __atomic_load_n(&d->cur, __ATOMIC_ACQUIRE);
	if (!m) {
		m = remap(h, now);
		if (!m)
			return -ENOENT;
	}
	ret = ibdir_find(m->base, m->size, &m->geom, now, type, key, len, buf, cap, v);
	if (ret == -ESTALE || ret == -EBADMSG) {
		/* replaced, closed, damaged, or its daemon gone: ask for it again */
		m = remap(h, now);
		if (!m)
			return ret;
		ret = ibdir_find(m->base, m->size, &m->geom, now, type, key, len, buf, cap, v);
	}
	return ret;
}

int ibc_dir_query(struct ibres *h, uint16_t type, const void *key, size_t len,
		  struct ibres_hostrec *rec)
{
	uint64_t buf[IBDIR_REC_MAX / 8];
	struct ibdir_view v;
	int ret = ibc_dir_find(h, type, key, len, buf, sizeof(buf), &v);

	if (ret == 0)
		ibdir_view_to_rec(&v, rec);
	return ret;
}

void ibc_dir_disable(struct ibres *h)
{
	__atomic_store_n(&h->dir.mode, DIR_OFF, __ATOMIC_RELEASE);
}

void ibc_dir_release(struct ibres *h)
{
	struct ibc_dir *d = &h->dir;

	d->cur = NULL;
	for (unsigned i = 0; i < IBC_DIR_MAPS; i++) {
		if (!d->maps[i].base)
			continue;
		munmap((void *)d->maps[i].base, d->maps[i].size);
		d->maps[i].base = NULL;
	}
	pthread_mutex_destroy(&d->lock);
}
