// SPDX-License-Identifier: MIT
/*
 * The floor for bench/nss-bench: a glibc hosts module ("benchmem") that
 * answers one fixed host from memory, with the same packing work as a real
 * module and no I/O at all. Built as libnss_benchmem.so.2 by the script.
 */
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

nss_gethostbyname2_r _nss_benchmem_gethostbyname2_r;

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
