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
 * not unmapped at once, since another thread may be reading it: it waits in
 * a short list and goes a minute later, when the list needs its place.
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

/* Map the directory the daemon passes, or NULL. */
static struct ibc_dirmap *map_fetched(struct ibres *h)
{
	struct ibc_dirmap *m = NULL;
	struct stat st;
	uint64_t said;
	void *base;
	int fd, seals;

	if (ibc_directory_fd(h, &fd, &said))
		return NULL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & DIR_SEALS) != DIR_SEALS || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != said ||
	    st.st_size < IBDIR_HEADER_SPACE || st.st_size > IBDIR_FILE_MAX)
		goto out;
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto out;
	/* one still being written, or a stopped daemon's, is not taken */
	if (ibdir_header_check(base, (size_t)st.st_size) ||
	    __atomic_load_n(&((const struct ibdir_header *)base)->state, __ATOMIC_ACQUIRE) !=
		    IBDIR_LIVE) {
		munmap(base, (size_t)st.st_size);
		goto out;
	}
	m = malloc(sizeof(*m));
	if (!m) {
		munmap(base, (size_t)st.st_size);
		goto out;
	}
	*m = (struct ibc_dirmap){.base = base, .size = (size_t)st.st_size};
out:
	close(fd);
	return m;
}

/* Put @m aside for unmapping later. 0, or -EBUSY when every place is taken
 * by a mapping replaced less than a minute ago. */
static int retire(struct ibc_dir *d, struct ibc_dirmap *m, uint64_t now)
{
	int oldest = -1;

	for (int i = 0; i < IBC_DIR_RETIRED; i++) {
		if (!d->retired[i]) {
			oldest = i;
			break;
		}
		if (oldest < 0 || d->retired[i]->retired_ms < d->retired[oldest]->retired_ms)
			oldest = i;
	}
	if (d->retired[oldest]) {
		if (d->retired[oldest]->retired_ms + RETIRED_KEEP_MS > now)
			return -EBUSY;
		munmap((void *)d->retired[oldest]->base, d->retired[oldest]->size);
		free(d->retired[oldest]);
	}
	m->retired_ms = now;
	d->retired[oldest] = m;
	return 0;
}

/* Fetch and map the directory anew (the first time, or it was replaced,
 * went bad or its daemon stopped). Returns the mapping to use, or NULL (ask
 * the daemon). */
static struct ibc_dirmap *remap(struct ibres *h, uint64_t now)
{
	struct ibc_dir *d = &h->dir;
	struct ibc_dirmap *m = NULL, *old;

	if (now < __atomic_load_n(&d->next_try_ms, __ATOMIC_RELAXED))
		return NULL;
	if (pthread_mutex_trylock(&d->lock))
		return NULL;
	if (now < d->next_try_ms)
		goto out;
	__atomic_store_n(&d->next_try_ms, now + MAP_RETRY_MS, __ATOMIC_RELAXED);
	m = map_fetched(h);
	old = d->cur;
	if (!m && !old)
		goto out;
	if (old && retire(d, old, now)) {
		/* cannot let go of the old one yet: keep it */
		if (m) {
			munmap((void *)m->base, m->size);
			free(m);
		}
		m = NULL;
		goto out;
	}
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
	ret = ibdir_find(m->base, m->size, now, type, key, len, buf, cap, v);
	if (ret == -ESTALE || ret == -EBADMSG) {
		/* replaced, closed, damaged, or its daemon gone: ask for it again */
		m = remap(h, now);
		if (!m)
			return ret;
		ret = ibdir_find(m->base, m->size, now, type, key, len, buf, cap, v);
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

	if (d->cur) {
		munmap((void *)d->cur->base, d->cur->size);
		free(d->cur);
		d->cur = NULL;
	}
	for (int i = 0; i < IBC_DIR_RETIRED; i++) {
		if (!d->retired[i])
			continue;
		munmap((void *)d->retired[i]->base, d->retired[i]->size);
		free(d->retired[i]);
		d->retired[i] = NULL;
	}
	pthread_mutex_destroy(&d->lock);
}
