// SPDX-License-Identifier: MIT
/*
 * Test helper: a multi-threaded lookup load through glibc (hosts: ib, libnss_ib.so.2 found
 * through LD_LIBRARY_PATH) or through libibres, for the fault tests (test_faults.py). Every
 * call is timed and classified; nothing is retried here. After a failed call a thread pauses
 * 1 ms, as a program would, rather than spin: 32 threads failing at once in a tight loop
 * would starve a small machine and measure the scheduler.
 *
 *   nss_load API THREADS SECONDS NAME IPV4
 *     API  gethostbyname  gethostbyname2_r(NAME, AF_INET)
 *          getaddrinfo    getaddrinfo(NAME, NULL, AF_INET)
 *          libibres       ibres_host_by_name() on one handle shared by every thread
 *
 * Output, key=value lines:
 *   start=S end=S             CLOCK_MONOTONIC seconds, the clock of python's time.monotonic()
 *   calls=N max_ms=X          every call, and the slowest
 *   thread=I calls=N ok=N last_ok=S   per thread (last_ok 0: never)
 *   class=C count=N max_ms=X  per outcome class: ok wrong tryagain unavail notfound other
 *   detail=C value=V          every distinct error seen in class C: the errno name for
 *                             gethostbyname (glibc's return value) and libibres, EAI_x for
 *                             getaddrinfo, h_errno=V for gethostbyname's h_errno
 *   bucket=MS C=N ...         calls that ended in each BUCKET_MS window (absolute ms)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibres.h"

#define BUCKET_MS   50
#define MAX_SECONDS 600
#define N_BUCKETS   (MAX_SECONDS * 1000 / BUCKET_MS + 200)
#define MAX_THREADS 256
#define N_DETAILS   512

enum api { API_GETHOSTBYNAME, API_GETADDRINFO, API_LIBIBRES };
enum outcome { OK, WRONG, TRYAGAIN, UNAVAIL, NOTFOUND, OTHER, N_OUTCOMES };
static const char *const outcome_name[N_OUTCOMES] = { "ok",	  "wrong",    "tryagain",
						      "unavail", "notfound", "other" };

/* A detail value: an errno (0..255), a gai code (256 + -code) or an h_errno (384 + v). */
#define GAI_BASE  256
#define HERR_BASE 384

struct shared {
	enum api api;
	const char *name;
	struct in_addr want;
	double start, stop;
	uint64_t start_ms;
	struct ibres *h;
	pthread_mutex_t lock;
	unsigned long buckets[N_BUCKETS][N_OUTCOMES];
	unsigned char detail[N_OUTCOMES][N_DETAILS];
	unsigned long count[N_OUTCOMES];
	double max_ms[N_OUTCOMES];
};

struct worker {
	struct shared *s;
	pthread_t tid;
	unsigned long calls, ok;
	double last_ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note(struct shared *s, enum outcome o, int detail, double t0, double t1)
{
	uint64_t ms = (uint64_t)(t1 * 1000);
	size_t b = (size_t)((ms - s->start_ms) / BUCKET_MS);
	double dt = (t1 - t0) * 1000;

	pthread_mutex_lock(&s->lock);
	if (b < N_BUCKETS)
		s->buckets[b][o]++;
	if (detail >= 0 && detail < N_DETAILS)
		s->detail[o][detail] = 1;
	s->count[o]++;
	if (dt > s->max_ms[o])
		s->max_ms[o] = dt;
	pthread_mutex_unlock(&s->lock);
}

static enum outcome by_gethostbyname(struct shared *s, int *detail)
{
	struct hostent he, *res = NULL;
	char buf[2048];
	int ret, herr = 0;

	ret = gethostbyname2_r(s->name, AF_INET, &he, buf, sizeof(buf), &res, &herr);
	if (!ret && res) {
		*detail = -1;
		return he.h_length == 4 && !memcmp(he.h_addr_list[0], &s->want, 4) &&
				       !strcmp(he.h_name, s->name) ?
			       OK :
			       WRONG;
	}
	*detail = HERR_BASE + herr;
	switch (herr) {
	case TRY_AGAIN:
		return TRYAGAIN;
	case NO_RECOVERY:
		*detail = ret; /* glibc returns the module's errno */
		return UNAVAIL;
	case HOST_NOT_FOUND:
	case NO_DATA:
		return NOTFOUND;
	default:
		return OTHER;
	}
}

static enum outcome by_getaddrinfo(struct shared *s, int *detail)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	enum outcome o;
	int ret;

	ret = getaddrinfo(s->name, NULL, &hints, &res);
	if (!ret) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)res->ai_addr;

		o = res->ai_family == AF_INET && !memcmp(&sin->sin_addr, &s->want, 4) && !res->ai_next ?
			    OK :
			    WRONG;
		freeaddrinfo(res);
		*detail = -1;
		return o;
	}
	*detail = GAI_BASE - ret;
	switch (ret) {
	case EAI_AGAIN:
		return TRYAGAIN;
	case EAI_NONAME:
	case EAI_NODATA:
		return NOTFOUND;
	case EAI_SYSTEM:
	case EAI_FAIL:
		return UNAVAIL;
	default:
		return OTHER;
	}
}

static enum outcome by_libibres(struct shared *s, int *detail)
{
	struct ibres_host *host = NULL;
	enum outcome o;
	int ret;

	ret = ibres_host_by_name(s->h, s->name, 0, &host);
	if (!ret) {
		o = host->n_ipv4 == 1 && !memcmp(&host->ipv4[0], &s->want, 4) &&
				    !strcmp(host->name, s->name) ?
			    OK :
			    WRONG;
		ibres_host_free(host);
		*detail = -1;
		return o;
	}
	*detail = -ret;
	switch (ret) {
	case -ETIMEDOUT:
	case -EAGAIN:
		return TRYAGAIN;
	case -ENOENT:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -EPIPE:
	case -EACCES:
		return UNAVAIL;
	case -ENODATA:
		return NOTFOUND;
	default:
		return OTHER;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;

	for (;;) {
		double t0 = now_s(), t1;
		enum outcome o;
		int detail;

		if (t0 >= s->stop)
			break;
		switch (s->api) {
		case API_GETHOSTBYNAME:
			o = by_gethostbyname(s, &detail);
			break;
		case API_GETADDRINFO:
			o = by_getaddrinfo(s, &detail);
			break;
		default:
			o = by_libibres(s, &detail);
			break;
		}
		t1 = now_s();
		note(s, o, detail, t0, t1);
		w->calls++;
		if (o == OK) {
			w->ok++;
			w->last_ok = t1;
		} else {
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		}
	}
	return NULL;
}

static void detail_name(enum api api, int v, char *buf, size_t len)
{
	const char *e;

	if (v >= HERR_BASE) {
		snprintf(buf, len, "h_errno=%d", v - HERR_BASE);
	} else if (v >= GAI_BASE) {
		snprintf(buf, len, "gai=%d", GAI_BASE - v);
	} else {
		e = strerrorname_np(v);
		snprintf(buf, len, "%s", e ? e : "?");
	}
	(void)api;
}

static void report(struct shared *s, struct worker *w, int n)
{
	unsigned long calls = 0;
	double max_ms = 0;
	char name[64];

	for (int o = 0; o < N_OUTCOMES; o++) {
		calls += s->count[o];
		if (s->max_ms[o] > max_ms)
			max_ms = s->max_ms[o];
	}
	printf("start=%.6f\nend=%.6f\ncalls=%lu\nmax_ms=%.3f\n", s->start, now_s(), calls, max_ms);
	for (int i = 0; i < n; i++)
		printf("thread=%d calls=%lu ok=%lu last_ok=%.6f\n", i, w[i].calls, w[i].ok,
		       w[i].last_ok);
	for (int o = 0; o < N_OUTCOMES; o++) {
		if (!s->count[o])
			continue;
		printf("class=%s count=%lu max_ms=%.3f\n", outcome_name[o], s->count[o],
		       s->max_ms[o]);
		for (int v = 0; v < N_DETAILS; v++)
			if (s->detail[o][v]) {
				detail_name(s->api, v, name, sizeof(name));
				printf("detail=%s value=%s\n", outcome_name[o], name);
			}
	}
	for (size_t b = 0; b < N_BUCKETS; b++) {
		int any = 0;

		for (int o = 0; o < N_OUTCOMES; o++)
			any |= s->buckets[b][o] != 0;
		if (!any)
			continue;
		printf("bucket=%llu", (unsigned long long)(s->start_ms + b * BUCKET_MS));
		for (int o = 0; o < N_OUTCOMES; o++)
			if (s->buckets[b][o])
				printf(" %s=%lu", outcome_name[o], s->buckets[b][o]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	static struct shared s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct worker *w;
	int n, ret = 0;
	double secs;

	if (argc != 6) {
		fprintf(stderr, "usage: see the comment at the top of nss_load.c\n");
		return 2;
	}
	if (!strcmp(argv[1], "gethostbyname"))
		s.api = API_GETHOSTBYNAME;
	else if (!strcmp(argv[1], "getaddrinfo"))
		s.api = API_GETADDRINFO;
	else if (!strcmp(argv[1], "libibres"))
		s.api = API_LIBIBRES;
	else
		return 2;
	n = atoi(argv[2]);
	secs = atof(argv[3]);
	s.name = argv[4];
	if (n < 1 || n > MAX_THREADS || !(secs > 0 && secs <= MAX_SECONDS) ||
	    inet_pton(AF_INET, argv[5], &s.want) != 1)
		return 2;
	if (s.api != API_LIBIBRES && __nss_configure_lookup("hosts", "ib")) {
		perror("__nss_configure_lookup");
		return 2;
	}
	if (s.api == API_LIBIBRES && ibres_open(&s.h, NULL, 0)) {
		fprintf(stderr, "ibres_open failed\n");
		return 2;
	}
	w = calloc((size_t)n, sizeof(*w));
	if (!w)
		return 2;
	s.start = now_s();
	s.start_ms = (uint64_t)(s.start * 1000);
	s.stop = s.start + secs;
	for (int i = 0; i < n; i++) {
		w[i].s = &s;
		if (pthread_create(&w[i].tid, NULL, work, &w[i])) {
			fprintf(stderr, "pthread_create failed\n");
			s.stop = 0;
			n = i;
			ret = 2;
			break;
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
	if (!ret)
		report(&s, w, n);
	if (s.h)
		ibres_close(s.h);
	free(w);
	return ret;
}
