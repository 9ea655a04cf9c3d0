/* SPDX-License-Identifier: MIT */
/*
 * Packing NSS results into the caller's buffer. glibc hands a module one
 * buffer of any size and alignment; everything the result points to must
 * live inside it. Each function either fits the whole result and returns 0,
 * or returns -ERANGE having written nothing outside the buffer (glibc then
 * calls again with a bigger one).
 */
#ifndef NSS_IB_PACK_H
#define NSS_IB_PACK_H

#include <netdb.h>
#include <nss.h>
#include <stddef.h>

#include "hostrec.h"

/* A bump allocator over [buf, buf + len). */
struct ibpack {
	char *buf;
	size_t len;
	size_t off;
};

void ibpack_init(struct ibpack *p, char *buf, size_t len);
/* @size bytes aligned to @align (a power of two) from the buffer; NULL if
 * they do not fit (the allocator is then unchanged). */
void *ibpack_alloc(struct ibpack *p, size_t size, size_t align);
/* A copy of @s in the buffer, or NULL. */
char *ibpack_str(struct ibpack *p, const char *s);

/*
 * A hostent: h_name = rec->names[0], h_aliases = the other names, and the
 * @n addresses of @alen bytes each at @addrs, family @af. 0, -ERANGE, or
 * -EBADMSG (writing nothing) when @rec is not a record hostrec_shape_ok()
 * accepts or @n and @alen are more than a record holds (8, 16 bytes).
 */
int ibpack_hostent(struct hostent *he, char *buf, size_t buflen, const struct ibres_hostrec *rec,
		   int af, const void *addrs, size_t n, size_t alen);

/*
 * The gethostbyname4_r tuple list: one tuple per IPv6 then IPv4 address of
 * @rec, all named rec->names[0]. If *@pat is not NULL the caller supplied
 * the first tuple and it is filled in place; otherwise *@pat points into
 * @buf. 0, -ERANGE, -ENOENT when @rec has no IP address, or -EBADMSG
 * (writing nothing) when @rec is not a record hostrec_shape_ok() accepts.
 */
int ibpack_tuples(struct gaih_addrtuple **pat, char *buf, size_t buflen,
		  const struct ibres_hostrec *rec);

#endif
