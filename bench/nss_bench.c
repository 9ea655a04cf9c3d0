// SPDX-License-Identifier: MIT
/*
 * Host lookup latency, one mode per run (bench/nss-bench runs them all):
 *
 *   nss_bench glibc SERVICE N NAME     gethostbyname2_r(NAME, AF_INET) through glibc,
 *                                      with "hosts: SERVICE" (__nss_configure_lookup)
 *   nss_bench module PATH N NAME       the module's _nss_ib_gethostbyname2_r alone
 *                                      (dlopen'ed), no glibc NSS machinery
 *   nss_bench persistent SOCKET N NAME one HOST round trip per call on the cached
 *                                      connection of a libibres handle
 *   nss_bench oneoff SOCKET N NAME     the same, but connecting for every call
 *
 * Every call must succeed and answer 198.18.0.1 (checked). Prints
 * "mean_ns p50_ns p99_ns" over N timed calls after N/10 warm-up calls.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "hostrec.h"
#include "ibres.h"

static const char *g_name;
static struct in_addr g_want;
static nss_gethostbyname2_r *g_fn;
static struct ibres *g_h;
static const char *g_sock;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int check(const struct hostent *he)
{
	return he->h_length == 4 && !memcmp(he->h_addr_list[0], &g_want, 4) ? 0 : -1;
}

static int via_glibc(void)
{
	struct hostent he, *res = NULL;
	char buf[1024];
	int herr;

	if (gethostbyname2_r(g_name, AF_INET, &he, buf, sizeof(buf), &res, &herr) || !res)
		return -1;
	return check(&he);
}

static int via_module(void)
{
	struct hostent he;
	char buf[1024];
	int err, herr;

	if (g_fn(g_name, AF_INET, &he, buf, sizeof(buf), &err, &herr) != NSS_STATUS_SUCCESS)
		return -1;
	return check(&he);
}

static int via_persistent(void)
{
	struct ibres_hostrec rec;

	if (ibc_host_query(g_h, IBRES_T_NAME, g_name, strlen(g_name), 0, &rec, NULL))
		return -1;
	return rec.n_v4 && rec.v4[0].s_addr == g_want.s_addr ? 0 : -1;
}

static int via_oneoff(void)
{
	struct ibres_hostrec rec;
	struct ibres *h;
	int ret;

	if (ibres_open(&h, g_sock, 0))
		return -1;
	ret = ibc_host_query(h, IBRES_T_NAME, g_name, strlen(g_name), 0, &rec, NULL);
	ibres_close(h);
	if (ret)
		return -1;
	return rec.n_v4 && rec.v4[0].s_addr == g_want.s_addr ? 0 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int (*one)(void);
	uint64_t *t, sum = 0, t0;
	long n, i, warm;
	void *dl;

	if (argc != 5) {
		fprintf(stderr, "usage: nss_bench glibc|module|persistent|oneoff ARG N NAME\n");
		return 2;
	}
	n = atol(argv[3]);
	g_name = argv[4];
	inet_pton(AF_INET, "198.18.0.1", &g_want);
	if (!strcmp(argv[1], "glibc")) {
		if (__nss_configure_lookup("hosts", argv[2]))
			return 2;
		one = via_glibc;
	} else if (!strcmp(argv[1], "module")) {
		dl = dlopen(argv[2], RTLD_NOW);
		g_fn = dl ? (nss_gethostbyname2_r *)dlsym(dl, "_nss_ib_gethostbyname2_r") : NULL;
		if (!g_fn) {
			fprintf(stderr, "cannot load %s\n", argv[2]);
			return 2;
		}
		one = via_module;
	} else if (!strcmp(argv[1], "persistent") || !strcmp(argv[1], "oneoff")) {
		g_sock = argv[2];
		if (ibres_open(&g_h, g_sock, 0))
			return 2;
		one = argv[1][0] == 'p' ? via_persistent : via_oneoff;
	} else {
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t || n < 1)
		return 2;
	for (warm = n / 10 + 1; warm; warm--) {
		if (one()) {
			fprintf(stderr, "nss_bench: %s lookup of %s failed\n", argv[1], g_name);
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (one()) {
			fprintf(stderr, "nss_bench: %s lookup of %s failed\n", argv[1], g_name);
			return 1;
		}
		t[i] = now_ns() - t0;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	printf("%llu %llu %llu\n", (unsigned long long)(sum / (uint64_t)n),
	       (unsigned long long)t[n / 2], (unsigned long long)t[n * 99 / 100]);
	free(t);
	ibres_close(g_h);
	return 0;
}
