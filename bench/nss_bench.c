// SPDX-License-Identifier: MIT
/*
 * Host lookup latency, one mode per run (bench/nss-bench runs them all):
 *
 *   nss_bench [OPTIONS] glibc SERVICE N NAME   gethostbyname2_r(NAME, AF_INET) through glibc,
 *                                              with "hosts: SERVICE" (__nss_configure_lookup);
 *                                              SERVICE "-": nsswitch.conf and nscd, as any
 *                                              program (__nss_configure_lookup turns nscd off)
 *   nss_bench [OPTIONS] gai SERVICE N NAME     getaddrinfo(NAME, AF_UNSPEC, SOCK_STREAM), same
 *                                              SERVICE choice
 *   nss_bench [OPTIONS] module PATH N NAME     the module's gethostbyname2_r alone (dlopen'ed;
 *                                              PATH .../libnss_X.so.2 names _nss_X_...), no
 *                                              glibc NSS machinery
 *   nss_bench [OPTIONS] stat FILE N NAME       stat(FILE) alone: the system call glibc makes
 *                                              in every gethostbyname*_r (its resolv.conf
 *                                              check); NAME is not used
 *   nss_bench [OPTIONS] persistent SOCKET N NAME  one HOST round trip per call on the cached
 *                                              connection of a libibres handle
 *   nss_bench [OPTIONS] oneoff SOCKET N NAME   the same, but connecting for every call
 *
 * Options: -t THREADS (default 1: every thread makes N timed calls, all start
 * together after their warm-up); -x notfound (every call must answer "no such
 * host": HOST_NOT_FOUND, EAI_NONAME, NSS_STATUS_NOTFOUND or -ENODATA) instead
 * of the default, an answer holding 198.18.0.1 (checked on every call).
 *
 * Prints "mean_ns p50_ns p99_ns calls_per_s" over every thread's timed calls
 * (N/10 + 1 warm-up calls each first); calls_per_s is all threads' calls over
 * the wall time from the first timed call to the last.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "hostrec.h"
#include "ibres.h"

#define MAX_THREADS 256

static const char *g_name;
static struct in_addr g_want;
static int g_notfound;
static nss_gethostbyname2_r *g_fn;
static struct ibres *g_h;
static const char *g_sock;
static int (*g_one)(void);
static long g_n;
static pthread_barrier_t g_ready;

struct worker {
	pthread_t th;
	uint64_t *t;
	uint64_t start, end;
	int failed;
};

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
	int herr = 0;

	if (gethostbyname2_r(g_name, AF_INET, &he, buf, sizeof(buf), &res, &herr))
		return -1;
	if (g_notfound)
		return !res && herr == HOST_NOT_FOUND ? 0 : -1;
	return res ? check(&he) : -1;
}

static int via_gai(void)
{
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL, *p;
	int ret = getaddrinfo(g_name, NULL, &hints, &ai), ok = -1;

	if (g_notfound)
		return ret == EAI_NONAME ? 0 : -1;
	if (ret)
		return -1;
	for (p = ai; p; p = p->ai_next)
		if (p->ai_family == AF_INET &&
		    ((struct sockaddr_in *)(void *)p->ai_addr)->sin_addr.s_addr == g_want.s_addr)
			ok = 0;
	freeaddrinfo(ai);
	return ok;
}

static int via_module(void)
{
	struct hostent he;
	char buf[1024];
	int err, herr;
	enum nss_status st = g_fn(g_name, AF_INET, &he, buf, sizeof(buf), &err, &herr);

	if (g_notfound)
		return st == NSS_STATUS_NOTFOUND ? 0 : -1;
	return st == NSS_STATUS_SUCCESS ? check(&he) : -1;
}

static int via_stat(void)
{
	struct stat st;

	return stat(g_sock, &st);
}

static int rec_ok(int ret, const struct ibres_hostrec *rec)
{
	if (g_notfound)
		return ret == -ENODATA ? 0 : -1;
	return !ret && rec->n_v4 && rec->v4[0].s_addr == g_want.s_addr ? 0 : -1;
}

static int via_persistent(void)
{
	struct ibres_hostrec rec;

	return rec_ok(ibc_host_query(g_h, IBRES_T_NAME, g_name, strlen(g_name), 0, &rec, NULL),
		      &rec);
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
	return rec_ok(ret, &rec);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	long i, warm;

	for (warm = g_n / 10 + 1; warm; warm--)
		if (g_one())
			w->failed = 1;
	pthread_barrier_wait(&g_ready);
	if (w->failed)
		return NULL;
	w->start = now_ns();
	for (i = 0; i < g_n; i++) {
		uint64_t t0 = now_ns();

		if (g_one()) {
			w->failed = 1;
			return NULL;
		}
		w->t[i] = now_ns() - t0;
	}
	w->end = now_ns();
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: nss_bench [-t THREADS] [-x notfound] "
			"glibc|gai|module|stat|persistent|oneoff ARG N NAME\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct worker w[MAX_THREADS];
	uint64_t *t, sum = 0, first = UINT64_MAX, last = 0;
	long nthreads = 1, total, i;
	const char *mode, *arg;
	void *dl;
	int opt;

	while ((opt = getopt(argc, argv, "t:x:")) != -1) {
		if (opt == 't')
			nthreads = atol(optarg);
		else if (opt == 'x' && !strcmp(optarg, "notfound"))
			g_notfound = 1;
		else
			return usage();
	}
	if (argc - optind != 4 || nthreads < 1 || nthreads > MAX_THREADS)
		return usage();
	mode = argv[optind];
	arg = argv[optind + 1];
	g_n = atol(argv[optind + 2]);
	g_name = argv[optind + 3];
	inet_pton(AF_INET, "198.18.0.1", &g_want);
	if (!strcmp(mode, "glibc") || !strcmp(mode, "gai")) {
		if (strcmp(arg, "-") && __nss_configure_lookup("hosts", arg))
			return 2;
		g_one = mode[1] == 'l' ? via_glibc : via_gai;
	} else if (!strcmp(mode, "module")) {
		const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
		char sym[128];

		if (strncmp(base, "libnss_", 7) || !strchr(base, '.'))
			return usage();
		snprintf(sym, sizeof(sym), "_nss_%.*s_gethostbyname2_r",
			 (int)(strchr(base, '.') - base - 7), base + 7);
		dl = dlopen(arg, RTLD_NOW);
		g_fn = dl ? (nss_gethostbyname2_r *)dlsym(dl, sym) : NULL;
		if (!g_fn) {
			fprintf(stderr, "cannot load %s\n", arg);
			return 2;
		}
		g_one = via_module;
	} else if (!strcmp(mode, "stat")) {
		g_sock = arg;
		g_one = via_stat;
	} else if (!strcmp(mode, "persistent") || !strcmp(mode, "oneoff")) {
		g_sock = arg;
		if (ibres_open(&g_h, g_sock, 0))
			return 2;
		g_one = mode[0] == 'p' ? via_persistent : via_oneoff;
	} else {
		return usage();
	}
	if (g_n < 1)
		return usage();
	total = g_n * nthreads;
	t = calloc((size_t)total, sizeof(*t));
	if (!t || pthread_barrier_init(&g_ready, NULL, (unsigned)nthreads))
		return 2;
	for (i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .t = t + i * g_n };
		if (pthread_create(&w[i].th, NULL, run, &w[i])) {
			fprintf(stderr, "nss_bench: cannot start thread %ld\n", i);
			return 2;
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].failed) {
			fprintf(stderr, "nss_bench: %s lookup of %s: unexpected answer\n", mode, g_name);
			return 1;
		}
		first = w[i].start < first ? w[i].start : first;
		last = w[i].end > last ? w[i].end : last;
	}
	for (i = 0; i < total; i++)
		sum += t[i];
	qsort(t, (size_t)total, sizeof(*t), cmp_u64);
	printf("%llu %llu %llu %.0f\n", (unsigned long long)(sum / (uint64_t)total),
	       (unsigned long long)t[total / 2], (unsigned long long)t[total * 99 / 100],
	       (double)total * 1e9 / (double)(last > first ? last - first : 1));
	free(t);
	ibres_close(g_h);
	return 0;
}
