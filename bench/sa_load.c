// SPDX-License-Identifier: MIT
/*
 * SA load through ibresd: N client threads, each with one persistent Unix
 * stream connection, send QUERY_SA path requests (ib_acme -v: the daemon
 * asks the Subnet Administrator every time, never its cache) from SGID to
 * the destination GIDs in turn, each waiting for its answer, for a fixed
 * time. Prints answered requests per second and failures.
 *   sa_load SOCKET CLIENTS SECONDS SGID DGID...
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ibres_proto.h"

#define MAX_DESTS 256

struct worker {
	pthread_t th;
	unsigned id;
	const char *path;
	double seconds;
	uint64_t done, failed;
	int broken;
};

static uint8_t sgid[16];
static uint8_t dgids[MAX_DESTS][16];
static unsigned n_dests;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t req[IBRES_HDR_LEN + IBRES_EP_LEN], ans[IBRES_MSG_MAX];
	struct ibres_hdr *h = (void *)req, *ah = (void *)ans;
	struct ibres_ep_entry *e = (void *)(req + IBRES_HDR_LEN);
	unsigned next = w->id;
	double end;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		w->broken = 1;
		return NULL;
	}
	memset(req, 0, sizeof(req));
	h->version = 1;
	h->opcode = IBRES_OP_RESOLVE;
	h->length = sizeof(req); /* RESOLVE: host byte order */
	e->flags = IBRES_FLAG_QUERY_SA;
	e->type = IBRES_EP_TYPE_PATH;
	memcpy(e->info.path.sgid, sgid, 16);
	e->info.path.reversible_numpath = 0x81;
	e->info.path.pkey = htons(0xffff);
	end = now_s() + w->seconds;
	while (now_s() < end) {
		memcpy(e->info.path.dgid, dgids[next++ % n_dests], 16);
		if (write(fd, req, sizeof(req)) != (ssize_t)sizeof(req) ||
		    read_full(fd, ans, IBRES_HDR_LEN) < 0 || ah->length < IBRES_HDR_LEN ||
		    ah->length > sizeof(ans) ||
		    read_full(fd, ans + IBRES_HDR_LEN, ah->length - IBRES_HDR_LEN) < 0) {
			w->broken = 1;
			break;
		}
		if (ah->status)
			w->failed++;
		else
			w->done++;
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	uint64_t done = 0, failed = 0;
	unsigned n;
	double secs, t0, t1;
	int broken = 0;

	if (argc < 6) {
		fprintf(stderr, "usage: sa_load SOCKET CLIENTS SECONDS SGID DGID...\n");
		return 2;
	}
	n = (unsigned)atoi(argv[2]);
	secs = atof(argv[3]);
	if (!n || n > 1024 || secs <= 0 || inet_pton(AF_INET6, argv[4], sgid) != 1)
		return 2;
	for (int i = 5; i < argc && n_dests < MAX_DESTS; i++)
		if (inet_pton(AF_INET6, argv[i], dgids[n_dests]) == 1)
			n_dests++;
	if (!n_dests)
		return 2;
	ws = calloc(n, sizeof(*ws));
	if (!ws)
		return 1;
	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		ws[i].id = i;
		ws[i].path = argv[1];
		ws[i].seconds = secs;
		pthread_create(&ws[i].th, NULL, run, &ws[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(ws[i].th, NULL);
		done += ws[i].done;
		failed += ws[i].failed;
		broken |= ws[i].broken;
	}
	t1 = now_s();
	printf("%llu %llu %.3f %.0f\n", (unsigned long long)done, (unsigned long long)failed,
	       t1 - t0, done / (t1 - t0));
	free(ws);
	return broken ? 1 : 0;
}
