// SPDX-License-Identifier: MIT
#include "dir_image.h"

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
	uint8_t enc[IBDIR_REC_MAX];
	size_t len = ibdir_rec_encode(r, IBDIR_NEVER, enc), cap = (len + 7) & ~(size_t)7;
	struct ibdir_rec hdr;
	uint32_t off = m->next;

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

void dir_image_free(struct dir_image *m)
{
	free(m->b);
	m->b = NULL;
}
