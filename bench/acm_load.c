// SPDX-License-Identifier: MIT
/*
 * Load generator: N client threads, each with one persistent Unix stream
 * connection, send a cached RESOLVE (by name) and wait for the whole answer,
 * for a fixed time. Prints requests per second. With "reconnect", each
 * request on a connection of its own (connect, ask, read, close), as a
 * process that looks up once does.
 *   acm_load SOCKET CLIENTS SECONDS NAME [reconnect]
 */
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

struct worker {
	pthread_t th;
	const char *path;
	const char *name;
	double seconds;
	int reconnect;
	uint64_t done;
	int failed;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_conn(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint8_t req[IBRES_HDR_LEN + IBRES_EP_LEN], ans[IBRES_MSG_MAX];
	struct ibres_hdr *h = (void *)req;
	struct ibres_ep_entry *e = (void *)(req + IBRES_HDR_LEN);
	double end;
	int fd = open_conn(w->path);

	if (fd < 0) {
		w->failed = 1;
		return NULL;
	}
	memset(req, 0, sizeof(req));
	h->version = 1;
	h->opcode = IBRES_OP_RESOLVE;
	h->length = sizeof(req);
	e->flags = IBRES_EP_FLAG_DEST;
	e->type = IBRES_EP_TYPE_NAME;
	snprintf(e->info.name, sizeof(e->info.name), "%s", w->name);
	end = now_s() + w->seconds;
	while (now_s() < end) {
		ssize_t n;

		if (send(fd, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
			w->failed = 1;
			break;
		}
		n = recv(fd, ans, sizeof(ans), 0);
		if (n < IBRES_HDR_LEN || ((struct ibres_hdr *)ans)->status != 0) {
			w->failed = 1;
			break;
		}
		w->done++;
		if (w->reconnect) {
			close(fd);
			fd = open_conn(w->path);
			if (fd < 0) {
				w->failed = 1;
				return NULL;
			}
		}
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	uint64_t total = 0;
	int n, failed = 0;
	double secs, t0;

	if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "reconnect"))) {
		fprintf(stderr, "usage: acm_load SOCKET CLIENTS SECONDS NAME [reconnect]\n");
		return 2;
	}
	n = atoi(argv[2]);
	secs = atof(argv[3]);
	ws = calloc((size_t)n, sizeof(*ws));
	if (!ws || n <= 0)
		return 2;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		ws[i] = (struct worker){
			.path = argv[1], .name = argv[4], .seconds = secs, .reconnect = argc == 6
		};
		pthread_create(&ws[i].th, NULL, run, &ws[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(ws[i].th, NULL);
		total += ws[i].done;
		failed |= ws[i].failed;
	}
	printf("%.0f\n", total / (now_s() - t0));
	free(ws);
	return failed;
}
