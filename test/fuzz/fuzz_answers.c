// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the daemon's answers as every process decodes them,
 * libibres (lib/conn.c framing, lib/host.c, lib/path.c, lib/gai.c) and the
 * NSS module (nss/nss_ib.c, nss/pack.c), through their public calls.
 *
 * A child process plays the daemon on a Unix socket: it reads each
 * request whole and answers with the input's bytes, then closes the
 * connection (so that a short answer ends at once instead of at the
 * timeout). The first byte of the input says which calls are made, the
 * size of the NSS buffer, and whether the answer's header gets the
 * request's tid, opcode and true length (else the bytes stay as they are:
 * the client must refuse them). Every call must return within its bound,
 * and what it returns must be whole: names NUL-terminated, NSS results
 * inside the caller's buffer, freed without complaint (ASan). Any
 * violation abort()s.
 */
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "ibres.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum nss_status _nss_ib_gethostbyname3_r(const char *name, int af, struct hostent *result,
					 char *buffer, size_t buflen, int *errnop, int *h_errnop,
					 int32_t *ttlp, char **canonp);
enum nss_status _nss_ib_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat,
					 char *buffer, size_t buflen, int *errnop, int *h_errnop,
					 int32_t *ttlp);
enum nss_status _nss_ib_gethostbyaddr2_r(const void *addr, socklen_t len, int af,
					 struct hostent *result, char *buffer, size_t buflen,
					 int *errnop, int *h_errnop, int32_t *ttlp);

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_answers.c:%d: check failed: %s\n", __LINE__, #cond); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

enum {
	M_FIX = 1 << 0,  /* the answer gets the request's tid, opcode|ACK and its length */
	M_HOST = 1 << 1, /* ibres_host_by_name, ibres_host_by_addr */
	M_PATH = 1 << 2, /* ibres_resolve_path */
	M_GAI = 1 << 3,  /* ibres_getaddrinfo */
	M_NSS = 1 << 4,  /* the NSS module's calls; bits 5-7: buffer size */
};

/* Shared with the daemon process: what it answers next. */
struct answer {
	volatile int ready; /* the daemon listens */
	size_t len;
	bool fix;
	uint8_t buf[65535];
};

static struct {
	int listen_fd;
	char path[64];
	struct answer *ans; /* MAP_SHARED */
} srv;

static struct ibres *handle;

static bool read_all(int fd, uint8_t *buf, size_t len)
{
	size_t have = 0;

	while (have < len) {
		ssize_t n = recv(fd, buf + have, len - have, 0);

		if (n <= 0)
			return false;
		have += (size_t)n;
	}
	return true;
}

static void daemon_loop(void)
{
	static uint8_t req[65536], ans[65536];

	for (;;) {
		struct ibres_hdr q, a;
		int fd = accept(srv.listen_fd, NULL, NULL);
		size_t len;

		if (fd < 0)
			continue;
		/* a request at a time, answered and closed */
		if (read_all(fd, req, IBRES_HDR_LEN)) {
			memcpy(&q, req, sizeof(q));
			len = ibres_msg_get_length(&q);
			if (len >= IBRES_HDR_LEN && read_all(fd, req + IBRES_HDR_LEN,
							     len - IBRES_HDR_LEN)) {
				len = srv.ans->len;
				memcpy(ans, srv.ans->buf, len);
				if (srv.ans->fix && len >= IBRES_HDR_LEN) {
					memcpy(&a, ans, sizeof(a));
					a.version = q.version;
					a.opcode = q.opcode | (a.opcode & IBRES_OP_ACK);
					a.tid = q.tid;
					ibres_msg_set_length(&a, (uint16_t)len);
					memcpy(ans, &a, sizeof(a));
				}
				if (len)
					send(fd, ans, len, MSG_NOSIGNAL);
			}
		}
		close(fd);
	}
}

static void remove_socket(void)
{
	unlink(srv.path);
}

/* The daemon is a child process: the library refuses to talk to a socket
 * its own process listens on (an ibresd resolving through itself). */
static void start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t parent = getpid(), pid;

	srv.ans = mmap(NULL, sizeof(*srv.ans), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	check(srv.ans != MAP_FAILED);
	snprintf(srv.path, sizeof(srv.path), "/tmp/fuzz_answers.%d.sock", (int)parent);
	unlink(srv.path);
	strcpy(sa.sun_path, srv.path);
	srv.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	check(srv.listen_fd >= 0);
	pid = fork();
	check(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		if (bind(srv.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(srv.listen_fd, 16))
			_exit(1);
		__atomic_store_n(&srv.ans->ready, 1, __ATOMIC_RELEASE);
		daemon_loop();
	}
	close(srv.listen_fd);
	atexit(remove_socket);
	for (int i = 0; !__atomic_load_n(&srv.ans->ready, __ATOMIC_ACQUIRE); i++) {
		check(i < 5000); /* 5 s */
		usleep(1000);
	}
	/* the NSS module takes the default handle: $IBRES_SOCKET */
	setenv("IBRES_SOCKET", srv.path, 1);
	setenv("IBRES_TIMEOUT_MS", "2000", 1);
	check(ibres_open(&handle, srv.path, 2000) == 0);
}

static void check_host(const struct ibres_host *h)
{
	check(h->name && strlen(h->name) <= IBRES_NAME_MAX);
	for (char **a = h->aliases; *a; a++)
		check(strlen(*a) <= IBRES_NAME_MAX);
}

static void host_calls(void)
{
	static const uint8_t v4[4] = { 198, 18, 0, 5 };
	struct ibres_host *h = NULL;

	if (!ibres_host_by_name(handle, "node5", 0, &h)) {
		check_host(h);
		ibres_host_free(h);
	}
	h = NULL;
	if (!ibres_host_by_addr(handle, AF_INET, v4, 4, IBRES_LOOKUP_CACHE_ONLY, &h)) {
		check_host(h);
		ibres_host_free(h);
	}
}

static void path_call(void)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct ibv_path_data *paths = NULL;
	size_t n = 0;

	dst.sin_addr.s_addr = htonl(0xc6120005);
	if (!ibres_resolve_path(handle, NULL, (struct sockaddr *)&dst, 0, &paths, &n)) {
		check(paths && n >= 1);
		free(paths);
	}
}

static void gai_call(void)
{
	struct rdma_addrinfo *res = NULL;

	if (!ibres_getaddrinfo("node5", "4791", NULL, &res))
		ibres_freeaddrinfo(res);
}

/* The result lies in @buf, names NUL-terminated within it. */
static void check_in(const void *p, const char *buf, size_t len)
{
	const char *c = p;

	check(c >= buf && c < buf + len);
}

static void nss_calls(size_t buflen)
{
	static const uint8_t v4[4] = { 198, 18, 0, 5 };
	char *buf = malloc(buflen);
	struct gaih_addrtuple *pat = NULL;
	struct hostent he;
	int err, herr;
	int32_t ttl;

	check(buf);
	if (_nss_ib_gethostbyname3_r("node5", AF_INET6, &he, buf, buflen, &err, &herr, &ttl,
				     NULL) == NSS_STATUS_SUCCESS) {
		check_in(he.h_name, buf, buflen);
		check(strnlen(he.h_name, buf + buflen - he.h_name) < (size_t)(buf + buflen - he.h_name));
		for (char **a = he.h_aliases; *a; a++)
			check_in(*a, buf, buflen);
		for (char **a = he.h_addr_list; *a; a++)
			check_in(*a, buf, buflen);
	}
	if (_nss_ib_gethostbyname4_r("node5", &pat, buf, buflen, &err, &herr, &ttl) ==
	    NSS_STATUS_SUCCESS)
		for (struct gaih_addrtuple *t = pat; t; t = t->next) {
			check_in(t, buf, buflen);
			check_in(t->name, buf, buflen);
		}
	if (_nss_ib_gethostbyaddr2_r(v4, 4, AF_INET, &he, buf, buflen, &err, &herr, &ttl) ==
	    NSS_STATUS_SUCCESS)
		check_in(he.h_name, buf, buflen);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode;

	if (!size)
		return 0;
	if (!handle)
		start();
	mode = data[0];
	srv.ans->len = size - 1 > sizeof(srv.ans->buf) ? sizeof(srv.ans->buf) : size - 1;
	memcpy(srv.ans->buf, data + 1, srv.ans->len);
	srv.ans->fix = mode & M_FIX;
	if (mode & M_HOST)
		host_calls();
	if (mode & M_PATH)
		path_call();
	if (mode & M_GAI)
		gai_call();
	if (mode & M_NSS)
		nss_calls((size_t)16 << (mode >> 5)); /* 16 bytes to 2 KiB */
	return 0;
}
