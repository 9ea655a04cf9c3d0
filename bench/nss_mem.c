// SPDX-License-Identifier: MIT
/*
 * The floor for bench/nss-bench: a glibc hosts module ("benchmem") that
 * answers one fixed host (node1: 198.18.0.1 and 2001:db8::1, as
 * conf/examples/single-node.conf) from memory, with the same packing work as
 * a real module and no I/O at all; any other name is NOTFOUND at once.
 * gethostbyname2_r for gethostbyname(), gethostbyname4_r for getaddrinfo().
 * Built as libnss_benchmem.so.2 by the script.
 */
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

nss_gethostbyname2_r _nss_benchmem_gethostbyname2_r;
nss_gethostbyname4_r _nss_benchmem_gethostbyname4_r;

EXPORT enum nss_status _nss_benchmem_gethostbyname2_r(const char *name, int af, struct hostent *he,
						      char *buf, size_t len, int *errnop,
						      int *h_errnop)
{
	static const unsigned char addr[4] = {198, 18, 0, 1};
	size_t nlen = strlen(name) + 1;
	char **ptrs = (char **)(void *)buf;

	if (af != AF_INET || strcmp(name, "node1")) {
		*errnop = ENOENT;
		*h_errnop = HOST_NOT_FOUND;
		return NSS_STATUS_NOTFOUND;
	}
	if (((size_t)buf & (sizeof(char *) - 1)) || len < 3 * sizeof(char *) + 4 + nlen) {
		*errnop = ERANGE;
		*h_errnop = NETDB_INTERNAL;
		return NSS_STATUS_TRYAGAIN;
	}
	ptrs[0] = NULL;			    /* aliases */
	ptrs[1] = buf + 3 * sizeof(char *); /* address list */
	ptrs[2] = NULL;
	memcpy(ptrs[1], addr, 4);
	memcpy(ptrs[1] + 4, name, nlen);
	he->h_name = ptrs[1] + 4;
	he->h_aliases = &ptrs[0];
	he->h_addrtype = AF_INET;
	he->h_length = 4;
	he->h_addr_list = &ptrs[1];
	*h_errnop = NETDB_SUCCESS;
	return NSS_STATUS_SUCCESS;
}

/* Both addresses as gaih_addrtuples, IPv6 first (as libnss_ib packs them). */
EXPORT enum nss_status _nss_benchmem_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat,
						      char *buf, size_t len, int *errnop,
						      int *h_errnop, int32_t *ttlp)
{
	static const unsigned char v4[4] = {198, 18, 0, 1};
	static const unsigned char v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
	size_t nlen = strlen(name) + 1, own;
	struct gaih_addrtuple *t = (struct gaih_addrtuple *)(void *)buf, *first;
	char *copy;

	if (strcmp(name, "node1")) {
		*errnop = ENOENT;
		*h_errnop = HOST_NOT_FOUND;
		return NSS_STATUS_NOTFOUND;
	}
	own = *pat ? 1 : 2; /* glibc may supply the first tuple */
	if (((size_t)buf & (_Alignof(struct gaih_addrtuple) - 1)) ||
	    len < own * sizeof(*t) + nlen) {
		*errnop = ERANGE;
		*h_errnop = NETDB_INTERNAL;
		return NSS_STATUS_TRYAGAIN;
	}
	copy = buf + own * sizeof(*t);
	memcpy(copy, name, nlen);
	first = *pat ? *pat : &t[0];
	memset(first, 0, sizeof(*first));
	first->name = copy;
	first->family = AF_INET6;
	memcpy(first->addr, v6, 16);
	first->next = &t[own - 1];
	memset(first->next, 0, sizeof(*first->next));
	first->next->name = copy;
	first->next->family = AF_INET;
	memcpy(first->next->addr, v4, 4);
	*pat = first;
	if (ttlp)
		*ttlp = 0;
	*h_errnop = NETDB_SUCCESS;
	return NSS_STATUS_SUCCESS;
}
