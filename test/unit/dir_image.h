/* SPDX-License-Identifier: MIT */
/* Hand-made shared directory images for the unit tests (no writer): a
 * header, four tables of a power of two of slots, the record area; records
 * laid out one after the other as the writer encodes them, their keys in
 * the tables, hashed by the reader's own ibdir_hash(). */
#ifndef IBRES_TEST_DIR_IMAGE_H
#define IBRES_TEST_DIR_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "hostrec.h"

struct dir_image {
	uint8_t *b; /* page aligned, @size bytes */
	size_t size;
	uint32_t slots, next;
};

/* A live image of @slots slots a table and @area bytes of records, its
 * heartbeat @now_ms, its seed fixed (the same image every time). */
void dir_image_init(struct dir_image *m, uint32_t slots, uint32_t area, uint64_t now_ms);

/* Add @r as the daemon writes it (ibdir_rec_encode(), then ibdir_rec_pack();
 * seq even, cap its rounded size), whatever its counts, with every key it
 * holds in the tables; @n_names, when not 0, is put over the header's name
 * count (a shape the writer never makes; the record is then left plain).
 * Returns the record's offset. */
uint32_t dir_image_put(struct dir_image *m, const struct ibres_hostrec *r, uint8_t n_names);
/* The same with endpoint sets (a host of several endpoints in one record). */
uint32_t dir_image_put_eps(struct dir_image *m, const struct ibres_hostrec *r,
			   const struct hostrec_eps *eps, uint8_t n_names);

/* Add the record bytes @rec (@len, header included) as they are, at the
 * next 8-byte boundary, with a slot for one key @key/@klen of table @tab.
 * Returns the record's offset. */
uint32_t dir_image_put_raw(struct dir_image *m, const uint8_t *rec, size_t len, unsigned tab,
			   const void *key, size_t klen);

/* A host of three endpoints in one record, @r and its sets @e: mr1, rail 0
 * in partitions 0xffff (mr1-ib0: 198.18.1.1, 2001:db8::101) and 0x8001
 * (mr1-ib0-8001: 198.18.2.1), sharing the port GID fe80::1:1, LID 10; rail
 * 1 (mr1-ib1: 198.18.1.2, GID fe80::1:2, LID 20). QPN 1 each. */
void dir_image_multirail(struct ibres_hostrec *r, struct hostrec_eps *e);

void dir_image_free(struct dir_image *m);

#endif
