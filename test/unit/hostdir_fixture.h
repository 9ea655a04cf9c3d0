/* SPDX-License-Identifier: MIT */
/* The shared directory's test fixture: a host store, the daemon's publisher
 * following it on a loop the test turns, and a reader's view of the image
 * (test_hostdir.c, test_hostdir_reuse.c). */
#ifndef IBRES_TEST_HOSTDIR_FIXTURE_H
#define IBRES_TEST_HOSTDIR_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/loop.h"
#include "hostrec.h"
#include "os/hostdir_pub.h"

struct fx {
	char dir[64], sock[96];
	struct loop loop;
	struct host_store store;
	struct hostdir_pub *pub;
};

/* cmocka's setup and teardown: a fixture in *@state. */
int hdfx_setup(void **state);
int hdfx_teardown(void **state);
/* Host h@i: two names, an IPv4, an IPv6 and a GID address, LID @i + 1; the
 * IPv6 address and the QPN carry @gen, so that a record mixed from two
 * versions shows. */
void hdfx_rec(struct ibres_hostrec *r, unsigned i, unsigned gen);
/* @r into the store, of @origin, for @ttl seconds (0: for ever). */
void hdfx_insert(struct fx *f, const struct ibres_hostrec *r, uint8_t origin, uint32_t ttl);
/* hdfx_rec(@i, @gen) into the store, of @origin, for @ttl seconds. */
void hdfx_put(struct fx *f, unsigned i, unsigned gen, uint8_t origin, uint32_t ttl);
/* Rail @rail of host h@host, heard on local endpoint @rail: names h@host and
 * h@host-ib@rail, 10.@rail.0.@host, a GID; the LID is the host's on every
 * rail (planes number alike). */
void hdfx_put_rail(struct fx *f, unsigned host, unsigned rail, uint32_t ttl);
/* Map the generation published now, read-only, as a reader does (checking
 * its seals); *@size its bytes. */
void *hdfx_map(struct fx *f, size_t *size);
/* A reader's lookup in image @m now. */
int hdfx_look(const void *m, size_t size, uint16_t type, const void *key, size_t len,
	      struct ibres_hostrec *out);

#endif
