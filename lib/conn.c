// SPDX-License-Identifier: MIT
/* Client connections to ibresd: see conn.h for the slot design. */
#include "conn.h"
#include "msg.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibres.h"

struct ibres ibc_default = IBC_INIT;

uint64_t ibc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ibc_timeout_ms(const struct ibres *h)
{
	const char *s;
	char *end;
	long v;

	if (h->timeout_ms > 0)
		return h->timeout_ms;
	s = secure_getenv(IBRES_TIMEOUT_ENV);
	if (s && *s) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (!errno && !*end && v > 0 && v <= INT_MAX)
			return (int)v;
	}
	return IBRES_TIMEOUT_DEFAULT_MS;
}

uint64_t ibc_deadline(const struct ibres *h)
{
	return ibc_now_ns() + (uint64_t)ibc_timeout_ms(h) * 1000000u;
}

/* Milliseconds left until @deadline, rounded up; 0 once it has passed. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = ibc_now_ns(), ms;

	if (now >= deadline)
		return 0;
	ms = (deadline - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Wait for @events on @fd until @deadline, retrying EINTR. 0, -ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int ms, n;

	for (;;) {
		ms = ms_left(deadline);
		if (!ms)
			return -ETIMEDOUT;
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0; /* readiness or an error: the next call reports it */
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

const char *ibc_socket_path(const struct ibres *h)
{
	const char *p;

	if (h->path[0])
		return h->path;
	p = secure_getenv(IBRES_SOCKET_ENV);
	return p && *p ? p : IBRES_DEFAULT_SOCKET;
}

/* A connected, non-blocking, close-on-exec socket numbered 3 or above. */
static int conn_open(const struct ibres *h, pid_t self, uint64_t deadline)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = ibc_socket_path(h);
	size_t plen = strlen(path);
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd, nfd, ret;

	if (plen >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, plen + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (fd < 3) {
		/* stdin/out/err were closed: never let our socket take their place */
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		ret = -errno;
		close(fd);
		if (nfd < 0)
			return ret;
		fd = nfd;
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EISCONN)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			ret = -errno;
			goto fail;
		}
		/* listen backlog full: the daemon is busy or stopped */
		if (!ms_left(deadline)) {
			ret = -ETIMEDOUT;
			goto fail;
		}
		poll(NULL, 0, 1);
	}
	/* ibresd must never resolve through its own socket (nss: hosts: ib) */
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) && cred.pid == self) {
		ret = -EDEADLK;
		goto fail;
	}
	return fd;

fail:
	close(fd);
	return ret;
}

static int send_all(int fd, const uint8_t *p, size_t len, uint64_t deadline)
{
	ssize_t n;
	int ret;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		ret = wait_fd(fd, POLLOUT, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * One request/answer exchange on @fd. *@got is set once any answer byte has
 * arrived (a failure before that on a reused connection may be retried).
 */
static ssize_t exchange(int fd, uint8_t *req, size_t req_len, uint8_t *ans, size_t cap,
			uint64_t tid, uint64_t deadline, int *got)
{
	const struct ibres_hdr *rq = (const struct ibres_hdr *)req;
	const struct ibres_hdr *an = (const struct ibres_hdr *)ans;
	size_t have = 0, want = IBRES_HDR_LEN;
	uint64_t atid;
	ssize_t n;
	int ret;

	*got = 0;
	if (cap < IBRES_HDR_LEN)
		return -EMSGSIZE;
	memcpy(req + offsetof(struct ibres_hdr, tid), &tid, sizeof(tid));
	ret = send_all(fd, req, req_len, deadline);
	if (ret)
		return ret;

	while (have < want) {
		ret = wait_fd(fd, POLLIN, deadline);
		if (ret)
			return ret;
		n = recv(fd, ans + have, cap - have, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		*got = 1;
		have += (size_t)n;
		if (want == IBRES_HDR_LEN && have >= IBRES_HDR_LEN) {
			if (an->version != IBRES_ACM_VERSION ||
			    (an->opcode & ~IBRES_OP_ACK) != (rq->opcode & ~IBRES_OP_ACK))
				return -EPROTO;
			want = ibres_msg_get_length(an);
			if (want < IBRES_HDR_LEN)
				return -EBADMSG;
			if (want > cap)
				return -EMSGSIZE;
		}
	}
	if (have != want)
		return -EPROTO; /* more than one answer: out of step */
	memcpy(&atid, &an->tid, sizeof(atid));
	if (atid != tid)
		return -EPROTO;
	return (ssize_t)have;
}

static int retriable(ssize_t err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN;
}

static struct ibc_slot *slot_get(struct ibres *h)
{
	unsigned i;

	for (i = 0; i < IBC_SLOTS; i++)
		if (!pthread_mutex_trylock(&h->slot[i].lock))
			return &h->slot[i];
	return NULL;
}

static void slot_drop(struct ibc_slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

ssize_t ibc_transact(struct ibres *h, void *req, size_t req_len, void *ans, size_t cap,
		     uint64_t deadline_ns)
{
	pid_t self = getpid();
	struct ibc_slot *s = slot_get(h);
	ssize_t ret;
	int fd, got, reused;

	if (!s) {
		/* every cached connection is busy: use one of our own */
		fd = conn_open(h, self, deadline_ns);
		if (fd < 0)
			return fd;
		ret = exchange(fd, req, req_len, ans, cap, 1, deadline_ns, &got);
		close(fd);
		return ret;
	}

	if (s->fd >= 0 && s->pid != self)
		slot_drop(s); /* inherited through fork(): the parent owns that stream */
	reused = s->fd >= 0;
	for (;;) {
		if (s->fd < 0) {
			s->fd = conn_open(h, self, deadline_ns);
			if (s->fd < 0) {
				ret = s->fd;
				s->fd = -1;
				break;
			}
			s->pid = self;
		}
		ret = exchange(s->fd, req, req_len, ans, cap, ++s->tid, deadline_ns, &got);
		if (ret >= 0)
			break;
		slot_drop(s);
		/* the daemon may have closed an idle connection: one fresh try */
		if (!reused || got || !retriable(ret))
			break;
		reused = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int ibc_ext(struct ibres *h, uint8_t op, const void *body, size_t len, void *ans, size_t cap,
	    uint8_t *status, const uint8_t **abody, size_t *alen)
{
	uint8_t req[IBRES_HDR_LEN + 512];
	struct ibres_hdr *hdr = (struct ibres_hdr *)req;
	ssize_t n;

	if (len > sizeof(req) - IBRES_HDR_LEN)
		return -EINVAL;
	memset(hdr, 0, IBRES_HDR_LEN);
	hdr->version = IBRES_ACM_VERSION;
	hdr->opcode = op;
	ibres_msg_set_length(hdr, (uint16_t)(IBRES_HDR_LEN + len));
	if (len)
		memcpy(req + IBRES_HDR_LEN, body, len);
	n = ibc_transact(h, req, IBRES_HDR_LEN + len, ans, cap, ibc_deadline(h));
	if (n < 0)
		return (int)n;
	*status = ((const struct ibres_hdr *)ans)->status;
	*abody = (const uint8_t *)ans + IBRES_HDR_LEN;
	*alen = (size_t)n - IBRES_HDR_LEN;
	return 0;
}

void ibc_disconnect(struct ibres *h)
{
	unsigned i;

	for (i = 0; i < IBC_SLOTS; i++)
		slot_drop(&h->slot[i]);
}
