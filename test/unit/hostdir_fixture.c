// SPDX-License-Identifier: MIT
/* The shared directory's test fixture (hostdir_fixture.h). */
#include "hostdir_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/clock.h"
#include "hostdir.h"
#include "ibres.h"

int hdfx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->dir, "/tmp/test_hostdir.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/ibresd.sock", f->dir);
	assert_int_equal(loop_init(&f->loop), 0);
	assert_int_equal(store_init(&f->store, 1u << 16), 0);
	assert_int_equal(hostdir_start(&f->pub, &f->loop, &f->store), 0);
	assert_non_null(f->pub);
	*state = f;
	return 0;
}

int hdfx_teardown(void **state)
{
	struct fx *f = *state;

	hostdir_stop(f->pub);
	store_fini(&f->store);
	loop_fini(&f->loop);
	unlink(f->sock);
	rmdir(f->dir);
	free(f);
	return 0;
}

void hdfx_rec(struct ibres_hostrec *r, unsigned i, unsigned gen)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->names[0], sizeof(r->names[0]), "h%u", i);
	snprintf(r->names[1], sizeof(r->names[1]), "alias-%u.Example", i);
	r->n_names = 2;
	r->v4[0].s_addr = htonl(0x0a000000u | i);
	r->n_v4 = 1;
	/* the IPv6 address and the QPN both carry the generation: a record
	 * mixed from two versions shows */
	r->v6[0].s6_addr[0] = 0x20;
	r->v6[0].s6_addr[1] = 0x01;
	memcpy(&r->v6[0].s6_addr[8], &i, 4);
	memcpy(&r->v6[0].s6_addr[12], &gen, 4);
	r->n_v6 = 1;
	r->gids[0][0] = 0xfe;
	r->gids[0][1] = 0x80;
	memcpy(&r->gids[0][12], &i, 4);
	r->n_gids = 1;
	r->lid = (uint16_t)(i + 1);
	r->qpn = gen;
	r->pkey = 0xffff;
}

void hdfx_insert(struct fx *f, const struct ibres_hostrec *r, uint8_t origin, uint32_t ttl)
{
	assert_int_equal(store_insert(&f->store, r,
				      &(struct store_put){.origin = origin, .ttl_s = ttl}, now_ms(),
				      NULL),
			 0);
}

void hdfx_put(struct fx *f, unsigned i, unsigned gen, uint8_t origin, uint32_t ttl)
{
	struct ibres_hostrec r;

	hdfx_rec(&r, i, gen);
	hdfx_insert(f, &r, origin, ttl);
}

/* Map the generation published now (read-only, as a reader): its
 * descriptor is sealed, so nothing can shrink or write it. */
void *hdfx_map(struct fx *f, size_t *size)
{
	uint64_t said;
	struct stat st;
	void *m;
	int fd = hostdir_fd(f->pub, &said);
	int seals = fcntl(fd, F_GET_SEALS);

	assert_true(fd >= 0);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((uint64_t)st.st_size, said);
	/* what a reader given this descriptor cannot do */
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(write(fd, "x", 1), -1);
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	*size = (size_t)st.st_size;
	return m;
}

int hdfx_look(const void *m, size_t size, uint16_t type, const void *key, size_t len,
	      struct ibres_hostrec *out)
{
	return ibdir_lookup(m, size, now_ms(), type, key, len, out);
}

/* Rail @rail of host h@host, heard on local endpoint @rail: a name of its
 * own (h@host-ib@rail), an IPv4 address, a GID; the LID is the host's on
 * every rail (planes number alike). */
void hdfx_put_rail(struct fx *f, unsigned host, unsigned rail, uint32_t ttl)
{
	struct ibres_hostrec r;

	memset(&r, 0, sizeof(r));
	snprintf(r.names[0], sizeof(r.names[0]), "h%u", host);
	snprintf(r.names[1], sizeof(r.names[1]), "h%u-ib%u", host, rail);
	r.n_names = 2;
	r.v4[0].s_addr = htonl(0x0a000000u | rail << 16 | host);
	r.n_v4 = 1;
	r.gids[0][0] = 0xfe;
	r.gids[0][1] = 0x80;
	r.gids[0][13] = (uint8_t)host;
	r.gids[0][15] = (uint8_t)rail;
	r.n_gids = 1;
	r.lid = (uint16_t)host;
	r.pkey = 0xffff;
	assert_int_equal(store_insert(&f->store, &r,
				      &(struct store_put){.origin = IBRES_ORIGIN_FABRIC,
							  .heard_on = 1u << rail,
							  .rails = 0x55,
							  .ttl_s = ttl},
				      now_ms(), NULL),
			 0);
	assert_int_equal(store_check(&f->store), 0);
}
