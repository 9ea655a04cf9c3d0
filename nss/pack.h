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

#include "hostdir.h"

/*
 * A hostent: h_name = the view's first name, h_aliases = the other names,
 * and the @n addresses of @alen bytes each at @addrs, family @af. @v is a
 * view ibdir_view_init() made (every name inside its copy). 0, -ERANGE, or
 * -EBADMSG (writing nothing) when @v holds no name or more than a record
 * may, or @n and @alen are more than a record holds (32, 16 bytes).
 */
int ibpack_hostent(struct hostent *he, char *buf, size_t buflen, const struct ibdir_view *v, int af,
		   const void *addrs, size_t n, size_t alen);

/*
 * The gethostbyname4_r tuple list: one tuple per IPv6 then IPv4 address of
 * @v, all named with its first name. If *@pat is not NULL the caller
 * supplied the first tuple and it is filled in place; otherwise *@pat
 * points into @buf. 0, -ERANGE, -ENOENT when @v has no IP address, or
 * -EBADMSG (writing nothing) when its counts are more than a record holds.
 */
int ibpack_tuples(struct gaih_addrtuple **pat, char *buf, size_t buflen,
		  const struct ibdir_view *v);

#endif
