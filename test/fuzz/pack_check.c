// SPDX-License-Identifier: MIT
/* Packing what a decoder returned at every buffer size (pack_check.h). */
#include "pack_check.h"

#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../nss/pack.h"
#include "hostdir.h"
#include "tlv.h"

/* More than the largest record needs (8 names of 255 bytes and their
 * pointers, 8 addresses): a size that still does not fit is a bug. */
#define PACK_SIZE_MAX 8192u
#define AF_IB_FAMILY  27

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "pack_check.c:%d: check failed: %s\n", __LINE__, #cond);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static int inside(const void *p, size_t n, const char *buf, size_t len)
{
	const char *c = p;

	return c >= buf && n <= len && (size_t)(c - buf) <= len - n;
}

/* A NUL-terminated copy of @want inside the buffer. */
static void check_str(const char *s, const char *want, const char *buf, size_t len)
{
	size_t l = strlen(want) + 1;

	check(inside(s, l, buf, len) && !memcmp(s, want, l));
}

static void check_hostent(const struct hostent *he, const char *buf, size_t len,
			  const struct ibres_hostrec *rec, int af, const void *addrs, size_t n,
			  size_t alen)
{
	size_t i;

	check(he->h_addrtype == af && he->h_length == (int)alen);
	check_str(he->h_name, rec->names[0], buf, len);
	check(inside(he->h_aliases, rec->n_names * sizeof(char *), buf, len));
	check((uintptr_t)he->h_aliases % alignof(char *) == 0);
	for (i = 0; i + 1 < rec->n_names; i++)
		check_str(he->h_aliases[i], rec->names[i + 1], buf, len);
	check(he->h_aliases[i] == NULL);
	check(inside(he->h_addr_list, (n + 1) * sizeof(char *), buf, len));
	check((uintptr_t)he->h_addr_list % alignof(char *) == 0);
	for (i = 0; i < n; i++)
		check(inside(he->h_addr_list[i], alen, buf, len) &&
		      !memcmp(he->h_addr_list[i], (const uint8_t *)addrs + i * alen, alen));
	check(he->h_addr_list[n] == NULL);
}

/* One allocation of PACK_SIZE_MAX bytes; a buffer of @len bytes is its last
 * @len: a byte written past the buffer's end is past the allocation's (ASan),
 * one written before its start lands on GUARD bytes that are checked. The
 * buffer's alignment changes with @len, as glibc's may. */
#define GUARD 64
#define FILL  0xa5
static uint8_t *area;

static char *buffer(size_t len)
{
	check(len + GUARD <= PACK_SIZE_MAX);
	if (!area) {
		area = malloc(PACK_SIZE_MAX);
		check(area);
	}
	memset(area + PACK_SIZE_MAX - len - GUARD, FILL, GUARD);
	return (char *)area + PACK_SIZE_MAX - len;
}

static void check_guard(size_t len)
{
	for (size_t i = 0; i < GUARD; i++)
		check(area[PACK_SIZE_MAX - len - GUARD + i] == FILL);
}

/* ibpack_hostent at every size from 0 up to the first that fits. */
static void sweep_hostent(const struct ibres_hostrec *rec, const struct ibdir_view *v, int af,
			  const void *addrs, size_t n, size_t alen)
{
	for (size_t len = 0;; len++) {
		char *buf = buffer(len);
		struct hostent he;
		int ret;

		memset(&he, 0, sizeof(he));
		ret = ibpack_hostent(&he, buf, len, v, af, addrs, n, alen);
		check_guard(len);
		if (ret) {
			check(ret == -ERANGE);
			continue;
		}
		check_hostent(&he, buf, len, rec, af, addrs, n, alen);
		return;
	}
}

static void check_tuples(const struct gaih_addrtuple *t, const struct ibres_hostrec *rec,
			 const char *buf, size_t len, const struct gaih_addrtuple *first)
{
	size_t n = rec->n_v6 + rec->n_v4;

	for (size_t i = 0; i < n; i++, t = t->next) {
		check(t != NULL);
		check(i == 0 && first ? t == first : inside(t, sizeof(*t), buf, len));
		check((uintptr_t)t % alignof(struct gaih_addrtuple) == 0);
		check_str(t->name, rec->names[0], buf, len);
		if (i < rec->n_v6)
			check(t->family == AF_INET6 && !memcmp(t->addr, &rec->v6[i], 16));
		else
			check(t->family == AF_INET &&
			      !memcmp(t->addr, &rec->v4[i - rec->n_v6], 4));
	}
	check(t == NULL);
}

/* ibpack_tuples at every size, with the caller's first tuple or without. */
static void sweep_tuples(const struct ibres_hostrec *rec, const struct ibdir_view *v, int prealloc)
{
	for (size_t len = 0;; len++) {
		char *buf = buffer(len);
		struct gaih_addrtuple mine, *pat = prealloc ? &mine : NULL;
		int ret;

		memset(&mine, 0xee, sizeof(mine));
		ret = ibpack_tuples(&pat, buf, len, v);
		check_guard(len);
		if (ret == -ENOENT) {
			/* no IP address: whatever the size */
			check(!rec->n_v4 && !rec->n_v6 && pat == (prealloc ? &mine : NULL));
			return;
		}
		if (ret) {
			check(ret == -ERANGE && pat == (prealloc ? &mine : NULL));
			continue;
		}
		check_tuples(pat, rec, buf, len, prealloc ? &mine : NULL);
		return;
	}
}

static void check_same(const struct ibres_hostrec *a, const struct ibres_hostrec *b)
{
	check(a->n_names == b->n_names && a->n_v4 == b->n_v4 && a->n_v6 == b->n_v6 &&
	      a->n_gids == b->n_gids && a->lid == b->lid && a->qpn == b->qpn &&
	      a->pkey == b->pkey);
	for (unsigned i = 0; i < a->n_names; i++)
		check(!strcmp(a->names[i], b->names[i]));
	check(!memcmp(a->v4, b->v4, a->n_v4 * sizeof(a->v4[0])));
	check(!memcmp(a->v6, b->v6, a->n_v6 * sizeof(a->v6[0])));
	check(!memcmp(a->gids, b->gids, a->n_gids * sizeof(a->gids[0])));
}

/* The writers' encodings of a record the readers accept decode back to it:
 * a reader refuses nothing a writer makes of it. */
static void check_round_trips(const struct ibres_hostrec *rec)
{
	static uint8_t enc[IBDIR_REC_MAX], tlv[4096];
	static struct ibres_hostrec back;
	struct tlv_writer w;
	size_t len = ibdir_rec_encode(rec, IBDIR_NEVER, enc);

	check(len <= IBDIR_REC_MAX);
	check(ibdir_rec_decode(enc, len, &back) == 0);
	check_same(rec, &back);
	tlv_writer_init(&w, tlv, sizeof(tlv));
	check(hostrec_encode(&w, rec) == 0);
	check(hostrec_decode(tlv, w.len, &back) == 0);
	check_same(rec, &back);
}

void pack_check(const struct ibres_hostrec *rec)
{
	static uint64_t enc[IBDIR_REC_MAX / 8];
	struct ibdir_view v;

	check(hostrec_check(rec) == 0);
	check_round_trips(rec);
	/* the module packs from the record's bytes as the directory holds them */
	check(ibdir_view_init((const uint8_t *)enc,
			      ibdir_rec_encode(rec, IBDIR_NEVER, (uint8_t *)enc), &v) == 0);
	/* gethostbyname, gethostbyname2/3: every address of a family it has */
	if (rec->n_v4)
		sweep_hostent(rec, &v, AF_INET, rec->v4, rec->n_v4, 4);
	if (rec->n_v6)
		sweep_hostent(rec, &v, AF_INET6, rec->v6, rec->n_v6, 16);
	if (rec->n_gids)
		sweep_hostent(rec, &v, AF_IB_FAMILY, rec->gids, rec->n_gids, 16);
	/* gethostbyaddr: the one address asked about */
	if (rec->n_v4)
		sweep_hostent(rec, &v, AF_INET, &rec->v4[rec->n_v4 - 1], 1, 4);
	if (rec->n_v6)
		sweep_hostent(rec, &v, AF_INET6, &rec->v6[0], 1, 16);
	if (rec->n_gids)
		sweep_hostent(rec, &v, AF_IB_FAMILY, rec->gids[rec->n_gids - 1], 1, 16);
	/* gethostbyname4 */
	sweep_tuples(rec, &v, 0);
	sweep_tuples(rec, &v, 1);
}
