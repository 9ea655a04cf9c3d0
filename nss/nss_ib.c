// SPDX-License-Identifier: MIT
/*
 * libnss_ib.so.2: the glibc "hosts" entry points of nss-ib. Each call reads
 * the shared host directory (lib/dirmap.c: no system call) and, when that
 * cannot tell, asks ibresd (a HOST query through the connection slots of
 * lib/conn.c, bounded by $IBRES_TIMEOUT_MS or NSS_IB_TIMEOUT_MS). A hit is packed into the
 * caller's buffer straight from a copy of the record's own bytes.
 *
 *   AF_INET, AF_INET6   the host's IPoIB addresses
 *   AF_IB (27)          the host's port GIDs (h_length 16)
 *   reverse             by IPv4 (len 4), IPv6 (len 16) or GID (AF_IB, len 16)
 *
 * Status: daemon unreachable or broken answer -> UNAVAIL; no such host or
 * no address of that family -> NOTFOUND; the daemon or the fabric too slow
 * -> TRYAGAIN (h_errno TRY_AGAIN); buffer too small -> TRYAGAIN with errno
 * ERANGE and h_errno NETDB_INTERNAL, so that glibc retries bigger.
 *
 * The module runs inside every process: no threads, no signal handlers, no
 * logging, libc only. Inside ibresd itself it answers UNAVAIL (lib/conn.c
 * sees that the socket's peer is the calling process), so the daemon's own
 * lookups can never wait on themselves.
 */
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn.h"
#include "hostdir.h"
#include "hostrec.h"
#include "pack.h"

#define NSS_EXPORT __attribute__((visibility("default")))

#ifndef AF_IB
#define AF_IB 27
#endif

/* The module's bound on one lookup without $IBRES_TIMEOUT_MS: shorter than
 * libibres's IBRES_TIMEOUT_DEFAULT_MS. Its caller gets TRY_AGAIN whether the
 * daemon gave up on the fabric or the module on the daemon, and the daemon
 * has sent its last attempt by now (at 4.5 s, 4.95 s at most, with its
 * defaults), so waiting longer buys little; while a daemon that stopped
 * answering costs every lookup of every process this long (getent twice). */
#define NSS_IB_TIMEOUT_MS 5000

/* The module's own handle: its connections are separate from libibres's. */
static struct ibres nss_conn = IBC_INIT_BOUND(NSS_IB_TIMEOUT_MS);

nss_gethostbyname_r _nss_ib_gethostbyname_r;
nss_gethostbyname2_r _nss_ib_gethostbyname2_r;
nss_gethostbyname3_r _nss_ib_gethostbyname3_r;
nss_gethostbyname4_r _nss_ib_gethostbyname4_r;
nss_gethostbyaddr_r _nss_ib_gethostbyaddr_r;
nss_gethostbyaddr2_r _nss_ib_gethostbyaddr2_r;

IBRES_HOT static enum nss_status fail(int err, int *errnop, int *h_errnop)
{
	switch (err) {
	case -ERANGE:
		*errnop = ERANGE;
		*h_errnop = NETDB_INTERNAL;
		return NSS_STATUS_TRYAGAIN;
	case -ENODATA:
	case -EADDRNOTAVAIL:
	case -EINVAL:
		*errnop = ENOENT;
		*h_errnop = HOST_NOT_FOUND;
		return NSS_STATUS_NOTFOUND;
	case -ETIMEDOUT:
	case -EAGAIN:
	case -ENOMEM:
		*errnop = -err;
		*h_errnop = TRY_AGAIN;
		return NSS_STATUS_TRYAGAIN;
	default:
		/* no daemon (ENOENT, ECONNREFUSED...), inside ibresd, or a bad answer */
		*errnop = -err;
		*h_errnop = NO_RECOVERY;
		return NSS_STATUS_UNAVAIL;
	}
}

/* The record of a hit, read in place: a view over a copy of its bytes. A
 * record is a few hundred bytes (an eight-rail host's merged one ~450), so
 * the copy lives on the stack beside the frame; the rare larger one (up to
 * 5 KB) is copied into the heap instead, so that no hit touches pages of
 * stack it does not need. */
#define FOUND_INLINE 1024
struct found {
	struct ibdir_view v;
	void *heap;
	uint64_t copy[FOUND_INLINE / 8];
};

IBRES_HOT static inline __attribute__((always_inline)) int query(uint16_t type, const void *key,
								 size_t len, struct found *f)
{
	return ibc_host_view(&nss_conn, type, key, len, f->copy, sizeof(f->copy), &f->v, &f->heap);
}

IBRES_HOT static void found_done(struct found *f)
{
	if (f->heap)
		free(f->heap);
}

/* The length of a name the module may look up, or 0. */
IBRES_HOT static size_t name_len(const char *name)
{
	size_t len = 0;

	/* a loop of our own, not strnlen(): one page of C library code less
	 * to walk to on a hit */
	if (name)
		while (len <= IBRES_NAME_MAX && name[len])
			len++;
	return len <= IBRES_NAME_MAX ? len : 0;
}

IBRES_HOT static void set_ttl(int32_t *ttlp, const struct ibdir_view *v)
{
	if (ttlp && v->ttl)
		*ttlp = v->ttl > INT32_MAX ? INT32_MAX : (int32_t)v->ttl;
}

/* gethostbyname3_r, called by the exported entry points directly (an
 * exported function calling another goes through the PLT: one more page on
 * a hit). */
IBRES_HOT static enum nss_status by_name(const char *name, int af, struct hostent *result,
					 char *buffer, size_t buflen, int *errnop, int *h_errnop,
					 int32_t *ttlp, char **canonp)
{
	enum nss_status st = NSS_STATUS_SUCCESS;
	const void *addrs;
	struct found f;
	size_t len, n, alen;
	int ret;

	if (af != AF_INET && af != AF_INET6 && af != AF_IB) {
		*errnop = EAFNOSUPPORT;
		*h_errnop = NO_DATA;
		return NSS_STATUS_UNAVAIL;
	}
	len = name_len(name);
	if (!len)
		return fail(-ENODATA, errnop, h_errnop);
	ret = query(IBRES_T_NAME, name, len, &f);
	if (ret)
		goto out;

	if (af == AF_INET) {
		addrs = f.v.v4;
		n = f.v.n_v4;
		alen = 4;
	} else if (af == AF_INET6) {
		addrs = f.v.v6;
		n = f.v.n_v6;
		alen = 16;
	} else {
		addrs = f.v.gids;
		n = f.v.n_gids;
		alen = 16;
	}
	if (!n) {
		/* the host exists but has no address of this family */
		*errnop = ENOENT;
		*h_errnop = NO_DATA;
		st = NSS_STATUS_NOTFOUND;
		goto out;
	}
	ret = ibpack_hostent(result, buffer, buflen, &f.v, af, addrs, n, alen);
	if (ret)
		goto out;
	set_ttl(ttlp, &f.v);
	if (canonp)
		*canonp = result->h_name;
	*h_errnop = NETDB_SUCCESS;
out:
	found_done(&f);
	return ret ? fail(ret, errnop, h_errnop) : st;
}

IBRES_HOT NSS_EXPORT enum nss_status
_nss_ib_gethostbyname3_r(const char *name, int af, struct hostent *result, char *buffer,
			 size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp, char **canonp)
{
	return by_name(name, af, result, buffer, buflen, errnop, h_errnop, ttlp, canonp);
}

IBRES_HOT NSS_EXPORT enum nss_status _nss_ib_gethostbyname2_r(const char *name, int af,
							      struct hostent *result, char *buffer,
							      size_t buflen, int *errnop,
							      int *h_errnop)
{
	return by_name(name, af, result, buffer, buflen, errnop, h_errnop, NULL, NULL);
}

IBRES_HOT NSS_EXPORT enum nss_status _nss_ib_gethostbyname_r(const char *name,
							     struct hostent *result, char *buffer,
							     size_t buflen, int *errnop,
							     int *h_errnop)
{
	return by_name(name, AF_INET, result, buffer, buflen, errnop, h_errnop, NULL, NULL);
}

IBRES_HOT NSS_EXPORT enum nss_status
_nss_ib_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat, char *buffer, size_t buflen,
			 int *errnop, int *h_errnop, int32_t *ttlp)
{
	enum nss_status st = NSS_STATUS_SUCCESS;
	struct found f;
	size_t len;
	int ret;

	len = name_len(name);
	if (!len)
		return fail(-ENODATA, errnop, h_errnop);
	ret = query(IBRES_T_NAME, name, len, &f);
	if (ret)
		goto out;
	/* AF_INET/AF_INET6 only: glibc's getaddrinfo mangles other families */
	ret = ibpack_tuples(pat, buffer, buflen, &f.v);
	if (ret == -ENOENT) {
		*errnop = ENOENT;
		*h_errnop = NO_DATA;
		st = NSS_STATUS_NOTFOUND;
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	set_ttl(ttlp, &f.v);
	*h_errnop = NETDB_SUCCESS;
out:
	found_done(&f);
	return ret ? fail(ret, errnop, h_errnop) : st;
}

IBRES_HOT static enum nss_status by_addr(const void *addr, socklen_t len, int af,
					 struct hostent *result, char *buffer, size_t buflen,
					 int *errnop, int *h_errnop, int32_t *ttlp)
{
	struct found f;
	uint16_t type;
	int ret = hostrec_addr_type(af, len, &type);

	if (ret == -EAFNOSUPPORT) {
		*errnop = EAFNOSUPPORT;
		*h_errnop = NO_DATA;
		return NSS_STATUS_UNAVAIL;
	}
	if (ret || !addr) {
		*errnop = EINVAL;
		*h_errnop = NO_RECOVERY;
		return NSS_STATUS_UNAVAIL;
	}
	ret = query(type, addr, len, &f);
	if (ret)
		goto out;
	/* like the dns and files modules: the one address asked about */
	ret = ibpack_hostent(result, buffer, buflen, &f.v, af, addr, 1, len);
	if (ret)
		goto out;
	set_ttl(ttlp, &f.v);
	*h_errnop = NETDB_SUCCESS;
out:
	found_done(&f);
	return ret ? fail(ret, errnop, h_errnop) : NSS_STATUS_SUCCESS;
}

IBRES_HOT NSS_EXPORT enum nss_status
_nss_ib_gethostbyaddr2_r(const void *addr, socklen_t len, int af, struct hostent *result,
			 char *buffer, size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp)
{
	return by_addr(addr, len, af, result, buffer, buflen, errnop, h_errnop, ttlp);
}

IBRES_HOT NSS_EXPORT enum nss_status _nss_ib_gethostbyaddr_r(const void *addr, socklen_t len,
							     int af, struct hostent *result,
							     char *buffer, size_t buflen,
							     int *errnop, int *h_errnop)
{
	return by_addr(addr, len, af, result, buffer, buflen, errnop, h_errnop, NULL);
}
