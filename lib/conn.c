// SPDX-License-Identifier: MIT
/* Client connections to ibresd: see conn.h for the slot design. */
#include "conn.h"
#include "msg.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibres.h"
#include "tlv.h"

/* The bound on fetching the shared directory: a daemon too busy (or stopped)
 * to pass it at once is asked over the socket instead, and asked for the
 * directory again a second later (lib/dirmap.c). */
#define DIR_FETCH_MS 250

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
	return h->default_ms > 0 ? h->default_ms : IBRES_TIMEOUT_DEFAULT_MS;
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

/* May this process believe a daemon whose socket @peer listened on? One
 * that runs with privileges (euid 0, or set-id or file capabilities:
 * AT_SECURE) believes root alone, since anyone else could have put a socket
 * where its environment points; others believe root or themselves. The
 * daemon listens before it drops to its [daemon] user, and systemd listens
 * for it, so its peer is root. */
static bool peer_trusted(uid_t peer)
{
	uid_t self = geteuid();

	if (peer == 0)
		return true;
	return self != 0 && !getauxval(AT_SECURE) && peer == self;
}

/* A connected, non-blocking, close-on-exec socket numbered 3 or above, to
 * a daemon this process may believe. */
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
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		ret = -errno;
		goto fail;
	}
	/* ibresd must never resolve through its own socket (nss: hosts: ib) */
	if (cred.pid == self) {
		ret = -EDEADLK;
		goto fail;
	}
	if (!peer_trusted(cred.uid)) {
		ret = -EACCES;
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
	/* a process running with privileges it did not start with (set-user-ID,
	 * file capabilities: AT_SECURE) keeps no connection between calls: a
	 * user who leaves many of them waiting (sudo at its password prompt,
	 * after a host lookup) holds no connection of the daemon's, which
	 * would count as root's where the daemon cannot see who ran them */
	if (s->fd >= 0 && getauxval(AT_SECURE))
		slot_drop(s);
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

/* Receive into @buf what is there, keeping the first descriptor passed with
 * it in *@fd (any other is closed). */
static ssize_t recv_with_fd(int sock, uint8_t *buf, size_t cap, int *fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	return n;
}

int ibc_directory_fd(struct ibres *h, int *fdp, uint64_t *size)
{
	uint8_t ans[IBRES_HDR_LEN + 64];
	struct ibres_hdr rq = { .version = IBRES_ACM_VERSION, .opcode = IBRES_OP_DIRECTORY };
	const struct ibres_hdr *an = (const struct ibres_hdr *)ans;
	int ms = ibc_timeout_ms(h) < DIR_FETCH_MS ? ibc_timeout_ms(h) : DIR_FETCH_MS;
	uint64_t deadline = ibc_now_ns() + (uint64_t)ms * 1000000u;
	size_t have = 0, want = IBRES_HDR_LEN;
	struct tlv_reader r;
	struct tlv_item it;
	int sock, fd = -1, ret;

	*fdp = -1;
	sock = conn_open(h, getpid(), deadline);
	if (sock < 0)
		return sock;
	ibres_msg_set_length(&rq, IBRES_HDR_LEN);
	ret = send_all(sock, (const uint8_t *)&rq, IBRES_HDR_LEN, deadline);
	while (!ret && have < want) {
		ssize_t n;

		ret = wait_fd(sock, POLLIN, deadline);
		if (ret)
			break;
		/* a connection of its own carries one answer: take all there is
		 * (header and body come in one send), and check the length after */
		n = recv_with_fd(sock, ans + have, sizeof(ans) - have, &fd);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n <= 0) {
			ret = n ? (int)n : -ECONNRESET;
			break;
		}
		have += (size_t)n;
		if (want == IBRES_HDR_LEN && have >= IBRES_HDR_LEN) {
			want = ibres_msg_get_length(an);
			if (an->version != IBRES_ACM_VERSION ||
			    (an->opcode & ~IBRES_OP_ACK) != IBRES_OP_DIRECTORY ||
			    want < IBRES_HDR_LEN || want > sizeof(ans))
				ret = -EPROTO;
		}
	}
	if (!ret && have != want)
		ret = -EPROTO; /* more than one answer */
	close(sock);
	if (!ret && an->status != IBRES_STATUS_SUCCESS)
		ret = -ENODATA;
	if (!ret && fd < 0)
		ret = -EPROTO;
	*size = 0;
	tlv_reader_init(&r, ans + IBRES_HDR_LEN, want - IBRES_HDR_LEN);
	while (!ret && tlv_next(&r, &it) == 1)
		if (it.type == IBRES_T_COUNT && tlv_get_u64(&it, size))
			ret = -EPROTO;
	if (!ret && !*size)
		ret = -EPROTO;
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	*fdp = fd;
	return 0;
}
