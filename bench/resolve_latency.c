// SPDX-License-Identifier: MIT
/*
 * Cold and cached RESOLVE latency at a daemon's socket, from C, so that the
 * client's own cost is a few system calls (a Python client under qemu TCG
 * adds hundreds of microseconds to every sample).
 *
 *   resolve_latency [-n] [-m FILE] SOCKET SOURCE DEST SAMPLES GAP_US
 *
 * Each sample: flush every learned entry (IBRES_OP_CACHE_FLUSH, needs uid 0),
 * pause GAP_US, time a RESOLVE of DEST from SOURCE by name (cold: the daemon
 * must ask the fabric), pause GAP_US, time the same RESOLVE again (cached).
 * -n: no flush, for bench/echo_server.c (the zero-work floor of a Unix
 * socket round trip between two processes; it answers every whole 88 bytes
 * it reads, so each of our 160-byte RESOLVEs gets one answer).
 * -m FILE: write "MARK cold|hot I start" and "... end" lines to FILE around
 * each timed RESOLVE (the kernel's trace_marker: bench/rxe-bench --trace).
 * Prints one line: {"cold": [µs, ...], "hot": [µs, ...], "fails": N}, where
 * a fail is an answer with an error status (that sample is left out).
 * Exit status: 0; 1 when the socket cannot be used, a flush is refused, or
 * an answer does not come (ANSWER_TIMEOUT_MS) or comes broken: the stream
 * is out of step then, so the run stops there, after printing what it has;
 * 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ibres_proto.h"

#define ANSWER_TIMEOUT_MS 10000

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void pause_us(long us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Send @req and read one whole answer; its status, or -1 on a broken
 * connection or after ANSWER_TIMEOUT_MS. RESOLVE answers carry their length
 * in host order (with or without the ACK bit), the extension's in
 * big-endian. */
static int call(int fd, const void *req, size_t len, uint8_t *ans, size_t cap)
{
	const struct ibres_hdr *h = (const void *)ans;
	size_t got = 0, want = IBRES_HDR_LEN;

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -1;
	while (got < want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, ANSWER_TIMEOUT_MS) != 1)
			return -1;
		n = recv(fd, ans + got, cap - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		if (got >= IBRES_HDR_LEN) {
			want = (h->opcode & IBRES_OP_MASK) == IBRES_OP_RESOLVE ? h->length
									       : ntohs(h->length);
			if (want < IBRES_HDR_LEN || want > cap)
				return -1;
		}
	}
	return h->status;
}

static void marker(FILE *f, const char *what, int i, const char *edge)
{
	if (f)
		fprintf(f, "MARK %s %d %s\n", what, i, edge);
}

/* call() timed into @us, between @what's markers. */
static int timed(int fd, const void *req, size_t len, uint8_t *ans, size_t cap, FILE *mark,
		 const char *what, int i, double *us)
{
	double t0;
	int st;

	marker(mark, what, i, "start");
	t0 = now_us();
	st = call(fd, req, len, ans, cap);
	*us = now_us() - t0;
	marker(mark, what, i, "end");
	return st;
}

static void print_list(const char *name, const double *v, int n)
{
	printf("\"%s\": [", name);
	for (int i = 0; i < n; i++)
		printf("%s%.1f", i ? ", " : "", v[i]);
	printf("]");
}

int main(int argc, char **argv)
{
	uint8_t resolve[IBRES_HDR_LEN + 2 * IBRES_EP_LEN], flush[IBRES_HDR_LEN];
	static uint8_t ans[IBRES_MSG_MAX];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ibres_hdr *h = (void *)resolve, *fh = (void *)flush;
	struct ibres_ep_entry *src = (void *)(resolve + IBRES_HDR_LEN), *dst = src + 1;
	double *cold, *hot;
	int fd, samples, n = 0, fails = 0, opt, ret = 0;
	bool no_flush = false;
	FILE *mark = NULL;
	long gap;

	while ((opt = getopt(argc, argv, "nm:")) != -1) {
		if (opt == 'n') {
			no_flush = true;
		} else if (opt == 'm') {
			mark = fopen(optarg, "w");
			if (!mark) {
				perror(optarg);
				return 1;
			}
			setvbuf(mark, NULL, _IOLBF, 0);
		} else {
			argc = 0;
			break;
		}
	}
	argv += optind - 1;
	argc -= optind - 1;
	if (argc != 6 || (samples = atoi(argv[4])) <= 0 || (gap = atol(argv[5])) < 0) {
		fprintf(stderr, "usage: resolve_latency [-n] [-m FILE] SOCKET SOURCE DEST SAMPLES "
				"GAP_US\n");
		return 2;
	}
	cold = calloc((size_t)samples, sizeof(*cold));
	hot = calloc((size_t)samples, sizeof(*hot));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	if (!cold || !hot || fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("resolve_latency");
		return 1;
	}
	memset(resolve, 0, sizeof(resolve));
	h->version = IBRES_ACM_VERSION;
	h->opcode = IBRES_OP_RESOLVE;
	h->length = sizeof(resolve);
	src->flags = IBRES_EP_FLAG_SOURCE;
	src->type = IBRES_EP_TYPE_NAME;
	snprintf(src->info.name, sizeof(src->info.name), "%s", argv[2]);
	dst->flags = IBRES_EP_FLAG_DEST;
	dst->type = IBRES_EP_TYPE_NAME;
	snprintf(dst->info.name, sizeof(dst->info.name), "%s", argv[3]);
	memset(flush, 0, sizeof(flush));
	fh->version = IBRES_ACM_VERSION;
	fh->opcode = IBRES_OP_CACHE_FLUSH;
	fh->length = htons(IBRES_HDR_LEN);

	for (int i = 0; i < samples; i++) {
		double c, t;
		int st;

		if (!no_flush && (st = call(fd, flush, sizeof(flush), ans, sizeof(ans))) != 0) {
			fprintf(stderr, "resolve_latency: %s (status %d)\n",
				st < 0 ? "no answer to the flush"
				       : "the flush was refused (not uid 0?)",
				st);
			ret = 1;
			break;
		}
		pause_us(gap);
		st = timed(fd, resolve, sizeof(resolve), ans, sizeof(ans), mark, "cold", i, &c);
		if (st == 0) {
			pause_us(gap);
			st = timed(fd, resolve, sizeof(resolve), ans, sizeof(ans), mark, "hot", i,
				   &t);
		}
		if (st < 0) {
			fprintf(stderr, "resolve_latency: no answer, or a broken one\n");
			ret = 1;
			break;
		}
		if (st > 0) {
			fails++;
			continue;
		}
		cold[n] = c;
		hot[n++] = t;
		pause_us(gap);
	}
	printf("{");
	print_list("cold", cold, n);
	printf(", ");
	print_list("hot", hot, n);
	printf(", \"fails\": %d}\n", fails);
	close(fd);
	if (mark)
		fclose(mark);
	free(cold);
	free(hot);
	return ret;
}
