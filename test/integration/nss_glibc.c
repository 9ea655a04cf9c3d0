// SPDX-License-Identifier: MIT
/*
 * Test helper: host lookups through glibc with "hosts: SERVICES" set by
 * __nss_configure_lookup() (no /etc/nsswitch.conf change; libnss_ib.so.2 is
 * found through LD_LIBRARY_PATH).
 *
 *   nss_glibc SERVICES byname2 NAME AF      gethostbyname2_r, buffer grown on ERANGE
 *   nss_glibc SERVICES byaddr ADDR AF       gethostbyaddr_r (AF 27: ADDR is a GID)
 *   nss_glibc SERVICES threads T N NAME ADDR  T threads x N gethostbyname2_r(AF_INET),
 *                                           each answer checked against ADDR
 *   nss_glibc SERVICES repeat N NAME AF     one gethostbyname2_r, then N more between
 *                                           the markers "repeat-begin"/"repeat-end"
 *                                           written to stderr (for strace)
 *   nss_glibc SERVICES fork NAME AF         one lookup, fork(), the child's lookup
 *                                           between the markers; prints the child's
 *   nss_glibc SERVICES watch MS T NAME ADDR T threads look NAME up for MS ms; prints
 *                                           per 250 ms slice the answers that were
 *                                           right, wrong and failed, and the longest
 *                                           call
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_hostent(const struct hostent *he)
{
	char a[64];
	int i;

	printf("name=%s\naliases=", he->h_name);
	for (i = 0; he->h_aliases[i]; i++)
		printf("%s%s", i ? "," : "", he->h_aliases[i]);
	printf("\naf=%d\nlength=%d\naddrs=", he->h_addrtype, he->h_length);
	for (i = 0; he->h_addr_list[i]; i++) {
		inet_ntop(he->h_length == 4 ? AF_INET : AF_INET6, he->h_addr_list[i], a, sizeof(a));
		printf("%s%s", i ? "," : "", a);
	}
	printf("\n");
}

static int report(int ret, struct hostent *res, int herr, struct hostent *he)
{
	printf("ret=%d\nh_errno=%d\n", ret, herr);
	if (!ret && res)
		print_hostent(he);
	else
		printf("found=0\n");
	return 0;
}

static int by_name(const char *name, int af)
{
	struct hostent he, *res = NULL;
	size_t len = 16;
	char *buf = NULL;
	int ret, herr = 0;

	do {
		len *= 2;
		free(buf);
		buf = malloc(len);
		ret = gethostbyname2_r(name, af, &he, buf, len, &res, &herr);
	} while (ret == ERANGE && len < 1 << 20);
	report(ret, res, herr, &he);
	free(buf);
	return 0;
}

static int by_addr(const char *text, int af)
{
	struct hostent he, *res = NULL;
	unsigned char addr[16];
	size_t len = 16;
	char *buf = NULL;
	int ret, herr = 0;
	socklen_t alen = af == AF_INET ? 4 : 16;

	if (inet_pton(af == AF_INET ? AF_INET : AF_INET6, text, addr) != 1)
		return 2;
	do {
		len *= 2;
		free(buf);
		buf = malloc(len);
		ret = gethostbyaddr_r(addr, alen, af, &he, buf, len, &res, &herr);
	} while (ret == ERANGE && len < 1 << 20);
	report(ret, res, herr, &he);
	free(buf);
	return 0;
}

struct job {
	const char *name;
	struct in_addr want;
	long n;
	long bad;
	long err;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	struct hostent he, *res;
	char buf[1024];
	long i;
	int herr;

	for (i = 0; i < j->n; i++) {
		res = NULL;
		if (gethostbyname2_r(j->name, AF_INET, &he, buf, sizeof(buf), &res, &herr) ||
		    !res) {
			j->err++;
			continue;
		}
		if (strcmp(he.h_name, j->name) || he.h_length != 4 ||
		    memcmp(he.h_addr_list[0], &j->want, 4) || he.h_addr_list[1])
			j->bad++;
	}
	return NULL;
}

static int threads(int t, long n, const char *name, const char *addr)
{
	pthread_t *tid = calloc((size_t)t, sizeof(*tid));
	struct job *jobs = calloc((size_t)t, sizeof(*jobs));
	struct timespec a, b;
	long bad = 0, err = 0;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < t; i++) {
		jobs[i].name = name;
		jobs[i].n = n;
		inet_pton(AF_INET, addr, &jobs[i].want);
		if (pthread_create(&tid[i], NULL, worker, &jobs[i]))
			return 1;
	}
	for (i = 0; i < t; i++) {
		pthread_join(tid[i], NULL);
		bad += jobs[i].bad;
		err += jobs[i].err;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("lookups=%ld\nwrong=%ld\nfailed=%ld\nseconds=%.3f\n", (long)t * n, bad, err,
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	free(tid);
	free(jobs);
	return 0;
}

static int repeat(long n, const char *name, int af)
{
	struct hostent he, *res = NULL;
	char buf[4096];
	long differ = 0;
	int ret, herr = 0, first;

	first = gethostbyname2_r(name, af, &he, buf, sizeof(buf), &res, &herr);
	write(2, "repeat-begin\n", 13);
	for (long i = 0; i < n; i++)
		if (gethostbyname2_r(name, af, &he, buf, sizeof(buf), &res, &herr) != first)
			differ++;
	write(2, "repeat-end\n", 11);
	ret = gethostbyname2_r(name, af, &he, buf, sizeof(buf), &res, &herr);
	printf("repeat_differ=%ld\n", differ);
	return report(ret, res, herr, &he);
}

static int fork_check(const char *name, int af)
{
	struct hostent he, *res = NULL;
	char buf[4096];
	int herr = 0, status;
	pid_t pid;

	gethostbyname2_r(name, af, &he, buf, sizeof(buf), &res, &herr);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		int ret;

		write(2, "repeat-begin\n", 13);
		ret = gethostbyname2_r(name, af, &he, buf, sizeof(buf), &res, &herr);
		write(2, "repeat-end\n", 11);
		report(ret, res, herr, &he);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

#define SLICE_MS 250
#define SLICES_MAX 400

struct watch {
	const char *name;
	struct in_addr want;
	uint64_t start_ns, end_ns;
	long right[SLICES_MAX], wrong[SLICES_MAX], failed[SLICES_MAX];
	uint64_t longest_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *watcher(void *arg)
{
	struct watch *w = arg;
	struct hostent he, *res;
	char buf[1024];
	int herr;

	for (;;) {
		uint64_t t0 = mono_ns(), t1;
		unsigned slice;
		int ret;

		if (t0 >= w->end_ns)
			return NULL;
		res = NULL;
		ret = gethostbyname2_r(w->name, AF_INET, &he, buf, sizeof(buf), &res, &herr);
		t1 = mono_ns();
		if (t1 - t0 > w->longest_ns)
			w->longest_ns = t1 - t0;
		slice = (unsigned)((t0 - w->start_ns) / (SLICE_MS * 1000000u));
		if (slice >= SLICES_MAX)
			slice = SLICES_MAX - 1;
		if (ret || !res)
			w->failed[slice]++;
		else if (strcmp(he.h_name, w->name) || memcmp(he.h_addr_list[0], &w->want, 4))
			w->wrong[slice]++;
		else
			w->right[slice]++;
	}
}

static int watch(long ms, int t, const char *name, const char *addr)
{
	struct watch *w = calloc((size_t)t, sizeof(*w));
	pthread_t *tid = calloc((size_t)t, sizeof(*tid));
	uint64_t start = mono_ns(), longest = 0;
	unsigned slices = (unsigned)((ms + SLICE_MS - 1) / SLICE_MS);

	if (!w || !tid || slices > SLICES_MAX)
		return 2;
	for (int i = 0; i < t; i++) {
		w[i].name = name;
		inet_pton(AF_INET, addr, &w[i].want);
		w[i].start_ns = start;
		w[i].end_ns = start + (uint64_t)ms * 1000000u;
		if (pthread_create(&tid[i], NULL, watcher, &w[i]))
			return 2;
	}
	for (int i = 0; i < t; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].longest_ns > longest)
			longest = w[i].longest_ns;
	}
	for (unsigned s = 0; s < slices; s++) {
		long r = 0, x = 0, f = 0;

		for (int i = 0; i < t; i++) {
			r += w[i].right[s];
			x += w[i].wrong[s];
			f += w[i].failed[s];
		}
		printf("slice=%u %ld %ld %ld\n", s, r, x, f);
	}
	printf("longest_ms=%.1f\n", (double)longest / 1e6);
	free(w);
	free(tid);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: see the comment at the top of nss_glibc.c\n");
		return 2;
	}
	if (__nss_configure_lookup("hosts", argv[1])) {
		perror("__nss_configure_lookup");
		return 2;
	}
	if (!strcmp(argv[2], "byname2") && argc == 5)
		return by_name(argv[3], atoi(argv[4]));
	if (!strcmp(argv[2], "byaddr") && argc == 5)
		return by_addr(argv[3], atoi(argv[4]));
	if (!strcmp(argv[2], "fork") && argc == 5)
		return fork_check(argv[3], atoi(argv[4]));
	if (!strcmp(argv[2], "watch") && argc == 7)
		return watch(atol(argv[3]), atoi(argv[4]), argv[5], argv[6]);
	if (!strcmp(argv[2], "repeat") && argc == 6)
		return repeat(atol(argv[3]), argv[4], atoi(argv[5]));
	if (!strcmp(argv[2], "threads") && argc == 7)
		return threads(atoi(argv[3]), atol(argv[4]), argv[5], argv[6]);
	fprintf(stderr, "bad arguments\n");
	return 2;
}
