// SPDX-License-Identifier: MIT
#include "dir_image.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hostdir.h"

void dir_image_init(struct dir_image *m, uint32_t slots, uint32_t area, uint64_t now_ms)
{
	struct ibdir_header *hd;

	m->size = IBDIR_HEADER_SPACE + IBDIR_TABLES * (size_t)slots * 8 + area;
	m->b = aligned_alloc(4096, (m->size + 4095) & ~(size_t)4095);
	assert_non_null(m->b);
	memset(m->b, 0, m->size);
	m->slots = slots;
	hd = (void *)m->b;
	memcpy(hd->magic, IBDIR_MAGIC, sizeof(hd->magic));
	hd->version = IBDIR_VERSION;
	hd->header_size = sizeof(*hd);
	hd->file_size = m->size;
	hd->seed = 0x0123456789abcdefull;
	hd->state = IBDIR_LIVE;
	hd->heartbeat_ms = now_ms;
	for (unsigned t = 0; t < IBDIR_TABLES; t++) {
		hd->tables[t].off = IBDIR_HEADER_SPACE + t * slots * 8;
		hd->tables[t].n_slots = slots;
	}
	hd->rec_off = IBDIR_HEADER_SPACE + IBDIR_TABLES * slots * 8;
	hd->rec_size = area;
	m->next = hd->rec_off;
	assert_int_equal(ibdir_header_check(m->b, m->size), 0);
}

static void put_slot(struct dir_image *m, unsigned tab, const void *key, size_t len, uint32_t off)
{
	struct ibdir_header *hd = (void *)m->b;
	uint64_t *slots = (uint64_t *)(void *)(m->b + hd->tables[tab].off);
	uint32_t h = ibdir_hash(hd->seed, tab, key, len), i = ibdir_home(h, m->slots);

	for (uint32_t n = 0; (uint32_t)slots[i] != IBDIR_SLOT_EMPTY; n++) {
		assert_true(n < m->slots); /* a test that fills a table */
		i = ibdir_next(i, m->slots);
	}
	slots[i] = (uint64_t)h << 32 | off;
}

uint32_t dir_image_put(struct dir_image *m, const struct ibres_hostrec *r, uint8_t n_names)
{
	return dir_image_put_eps(m, r, NULL, n_names);
}

uint32_t dir_image_put_eps(struct dir_image *m, const struct ibres_hostrec *r,
			   const struct hostrec_eps *eps, uint8_t n_names)
{
	uint8_t plain[IBDIR_REC_MAX], enc[IBDIR_REC_MAX];
	size_t len = ibdir_rec_encode_eps(r, eps, IBDIR_NEVER, plain), cap;
	struct ibdir_rec hdr;
	uint32_t off = m->next;

	/* packed as the daemon writes it, unless a count is to be falsified */
	if (n_names)
		memcpy(enc, plain, len);
	else
		len = ibdir_rec_pack(plain, len, enc);
	cap = (len + 7) & ~(size_t)7;
	memcpy(&hdr, enc, sizeof(hdr));
	hdr.seq = 2;
	hdr.cap = (uint32_t)cap;
	if (n_names)
		hdr.n_names = n_names;
	memcpy(enc, &hdr, sizeof(hdr));
	assert_true(off + cap <= m->size);
	memcpy(m->b + off, enc, len);
	m->next += (uint32_t)cap;
	for (unsigned i = 0; i < r->n_names; i++)
		put_slot(m, IBDIR_TAB_NAME, r->names[i], strlen(r->names[i]), off);
	for (unsigned i = 0; i < r->n_v4; i++)
		put_slot(m, IBDIR_TAB_IPV4, &r->v4[i], 4, off);
	for (unsigned i = 0; i < r->n_v6; i++)
		put_slot(m, IBDIR_TAB_IPV6, &r->v6[i], 16, off);
	for (unsigned i = 0; i < r->n_gids; i++)
		put_slot(m, IBDIR_TAB_GID, r->gids[i], 16, off);
	return off;
}

uint32_t dir_image_put_raw(struct dir_image *m, const uint8_t *rec, size_t len, unsigned tab,
			   const void *key, size_t klen)
{
	uint32_t off = m->next;

	assert_true(off + ((len + 7) & ~(size_t)7) <= m->size);
	memcpy(m->b + off, rec, len);
	m->next += (uint32_t)((len + 7) & ~(size_t)7);
	put_slot(m, tab, key, klen, off);
	return off;
}

void dir_image_multirail(struct ibres_hostrec *r, struct hostrec_eps *e)
{
	static const char *const names[] = { "mr1", "mr1-ib0", "mr1-ib0-8001", "mr1-ib1" };
	static const uint32_t name_eps[] = { 7, 1, 2, 4 };

	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	for (unsigned i = 0; i < 4; i++) {
		strcpy(r->names[i], names[i]);
		e->names[i] = name_eps[i];
	}
	r->n_names = 4;
	inet_pton(AF_INET6, "fe80::1:1", r->gids[0]);
	inet_pton(AF_INET6, "fe80::1:2", r->gids[1]);
	r->n_gids = 2;
	e->gids[0] = 3;
	e->gids[1] = 4;
	inet_pton(AF_INET6, "2001:db8::101", &r->v6[0]);
	r->n_v6 = 1;
	e->v6[0] = 1;
	inet_pton(AF_INET, "198.18.1.1", &r->v4[0]);
	inet_pton(AF_INET, "198.18.2.1", &r->v4[1]);
	inet_pton(AF_INET, "198.18.1.2", &r->v4[2]);
	r->n_v4 = 3;
	e->v4[0] = 1;
	e->v4[1] = 2;
	e->v4[2] = 4;
	r->lid = 10;
	r->qpn = 1;
	r->pkey = 0xffff;
	e->ep[0] = (struct hostrec_ep){ .qpn = 1, .lid = 10, .pkey = 0xffff };
	e->ep[1] = (struct hostrec_ep){ .qpn = 1, .lid = 10, .pkey = 0x8001 };
	e->ep[2] = (struct hostrec_ep){ .qpn = 1, .lid = 20, .pkey = 0xffff };
	e->n_ep = 3;
}

void dir_image_free(struct dir_image *m)
{
	free(m->b);
	m->b = NULL;
}
