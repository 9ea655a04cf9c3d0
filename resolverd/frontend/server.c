// SPDX-License-Identifier: MIT
#include "frontend/server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "core/list.h"
#include "core/log.h"
#include "frontend/admission.h"
#include "frontend/listener.h"
#include "frontend/passed.h"
#include "frontend/request.h"

#define IN_CAP (2 * ACM_REQ_MAX)

struct client {
	struct loop_fd lf;
	struct server *srv;
	struct list_node node; /* srv->clients, least recently active first */
	size_t in_len;
	uint8_t *out; /* unsent part of an answer */
	size_t out_len, out_off;
	int out_fd;   /* to pass with the first byte of out (our copy), or -1 */
	bool busy;    /* a request is pending in the dispatcher */
	bool served;  /* at least one request answered */
	bool closing; /* close once the answer is out */
	bool eof;     /* the peer shut down its sending side: answer what it sent, then close */
	bool dead;
	/* a descriptor granted (a slot of passed.h taken), and whether it went */
	enum { PASS_NONE, PASS_GRANTED, PASS_SENT } pass;
	uint64_t wait_since; /* start of the current incomplete request */
	uint64_t out_since;  /* when out began to wait for the peer to read */
	struct adm_uid *owner; /* the peer's uid and how many connections it holds */
	pid_t pid;	       /* the peer's, at connect (SO_PEERCRED) */
	bool uid_checked;      /* owner is the real uid's (not root's by default) */
	/* root's by SO_PEERCRED and counted so: what it sends first carries
	 * its real uid (SO_PASSCRED, listener.c) */
	bool want_creds;
	struct loop_timer idle;
	struct request req;
	uint8_t in[IN_CAP];
};

struct server {
	struct ibresd *d;
	struct listeners *listeners;
	struct admission adm; /* connections per uid */
	struct passed passed; /* sockets kept while a descriptor they passed is unread */
	struct list_node clients;
	unsigned n_clients;
	struct list_node dead;
	struct loop_timer reaper;
	uint8_t reply[IBRES_MSG_MAX];
};

static void client_process(struct client *cl);

/* Descriptors unread in all, at most (passed.h): half of max_clients, so
 * that with every connection's own they stay below the open-file limit
 * main.c asks for, which the kernel's count of them in flight is held to. */
static unsigned passed_bound(unsigned max_clients)
{
	return max_clients / 2 > PASSED_UNREAD_PER_UID ? max_clients / 2 : PASSED_UNREAD_PER_UID;
}

static struct ibresd *cl_daemon(struct client *cl)
{
	return cl->srv->d;
}

static void client_close(struct client *cl)
{
	struct server *srv = cl->srv;

	if (cl->dead)
		return;
	cl->dead = true;
	if (cl->busy)
		request_abandon(srv->d, &cl->req);
	cl->busy = false;
	loop_timer_cancel(&srv->d->loop, &cl->idle);
	loop_del_fd(&srv->d->loop, &cl->lf);
	if (cl->pass == PASS_SENT) {
		passed_done(&srv->passed, &srv->adm, cl->lf.fd, cl->owner);
	} else {
		close(cl->lf.fd);
		if (cl->pass == PASS_GRANTED)
			passed_cancel(&srv->passed, &srv->adm, cl->owner);
	}
	cl->pass = PASS_NONE;
	if (cl->out_fd >= 0)
		close(cl->out_fd);
	cl->out_fd = -1;
	cl->lf.fd = -1;
	list_del(&cl->node);
	list_add_tail(&srv->dead, &cl->node);
	admission_put(&srv->adm, cl->owner);
	cl->owner = NULL;
	srv->n_clients--;
	srv->d->stats.clients_connected = srv->n_clients;
	/* freed from a timer, after any event of this epoll batch that names it */
	loop_timer_arm(&srv->d->loop, &srv->reaper, 0);
}

static void reap_clients(struct loop_timer *t)
{
	struct server *srv = container_of(t, struct server, reaper);
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &srv->dead)
	{
		struct client *cl = list_entry(pos, struct client, node);

		list_del(&cl->node);
		free(cl->out);
		free(cl);
	}
}

static void client_idle_timeout(struct loop_timer *t)
{
	struct client *cl = container_of(t, struct client, idle);

	if (cl->out_len > cl->out_off) {
		cl_daemon(cl)->stats.clients_output_timed_out++;
		log_debug("client fd %d (uid %u): an answer unread for the client timeout, closing",
			  cl->lf.fd, (unsigned)cl->req.uid);
	} else {
		cl_daemon(cl)->stats.clients_timed_out++;
		log_debug("client fd %d (uid %u): no complete request within the client timeout, "
			  "closing", cl->lf.fd, (unsigned)cl->req.uid);
	}
	client_close(cl);
}

/* Arm EPOLLIN/EPOLLOUT and the idle timer to match the client's state. */
static void client_rearm(struct client *cl)
{
	struct ibresd *d = cl_daemon(cl);
	uint32_t ev = 0;

	if (cl->dead)
		return;
	if (cl->out_len > cl->out_off)
		ev |= EPOLLOUT;
	else if (!cl->closing && !cl->eof && cl->in_len < IN_CAP)
		/* also while a request is pending: reading on (into a bounded
		 * buffer) costs nothing, and switching EPOLLIN off and on again
		 * would cost two system calls on every request that waits */
		ev |= EPOLLIN;
	if (loop_mod_fd(&d->loop, &cl->lf, ev) < 0) {
		client_close(cl);
		return;
	}
	/* A client may stay connected and idle between requests (librdmacm
	 * keeps one connection for the life of the process), but not sit on
	 * an incomplete request, nor connect and never ask anything, nor leave
	 * an answer unread (requests sent ahead whose answers it never reads
	 * would hold the connection for good). */
	if (ev & EPOLLOUT)
		loop_timer_arm(&d->loop, &cl->idle, cl->out_since + d->cfg.client_timeout_ms);
	else if (!cl->busy && (cl->in_len || !cl->served))
		loop_timer_arm(&d->loop, &cl->idle, cl->wait_since + d->cfg.client_timeout_ms);
	else
		loop_timer_cancel(&d->loop, &cl->idle);
}

/* send(), with @fd (>= 0) passed along with the first byte (SCM_RIGHTS). */
static ssize_t send_with_fd(int sock, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd < 0)
		return send(sock, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int client_flush(struct client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n = send_with_fd(cl->lf.fd, cl->out + cl->out_off,
					 cl->out_len - cl->out_off, cl->out_fd);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n > 0 && cl->out_fd >= 0) {
			close(cl->out_fd); /* it went with that byte */
			cl->out_fd = -1;
			cl->pass = PASS_SENT;
		}
		cl->out_off += (size_t)n;
	}
	free(cl->out);
	cl->out = NULL;
	cl->out_len = cl->out_off = 0;
	return 0;
}

/* Send an answer (with the descriptor the request passes, if any); only
 * what the socket does not take at once is copied, so an idle client holds
 * no buffer. */
static void client_send(struct client *cl, const void *buf, size_t len)
{
	int pass = cl->req.pass_fd;
	ssize_t n;

	cl->req.pass_fd = -1;
	/* one descriptor per connection, then it closes (its socket kept while
	 * the answer is unread, passed.h): a client that asked again and again
	 * without reading would otherwise leave a descriptor in flight per
	 * answer, counted against the daemon's open-file limit, until passing
	 * any fails for every reader (ETOOMANYREFS). Readers fetch on a
	 * connection of their own. */
	if (pass >= 0) {
		cl->closing = true;
		passed_grant(&cl->srv->passed, cl->owner);
		cl->pass = PASS_GRANTED;
	}
	do {
		n = send_with_fd(cl->lf.fd, buf, len, pass);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		client_close(cl);
		return;
	}
	if (n < 0)
		n = 0;
	if (n > 0 && pass >= 0)
		cl->pass = PASS_SENT;
	if ((size_t)n < len) {
		cl->out = malloc(len - (size_t)n);
		/* not sent yet: the descriptor goes with the rest, as our own copy
		 * (the handler's may be closed before then) */
		if (n == 0 && pass >= 0)
			cl->out_fd = fcntl(pass, F_DUPFD_CLOEXEC, 3);
		if (!cl->out || (n == 0 && pass >= 0 && cl->out_fd < 0)) {
			client_close(cl);
			return;
		}
		memcpy(cl->out, (const uint8_t *)buf + n, len - (size_t)n);
		cl->out_len = len - (size_t)n;
		cl->out_off = 0;
		cl->out_since = now_ms();
	}
	cl->served = true;
	/* move to the tail: most recently active */
	list_del(&cl->node);
	list_add_tail(&cl->srv->clients, &cl->node);
}

/* The answer to a request that waited (request.h). */
static void on_request_complete(struct request *req, const void *reply, size_t len)
{
	struct client *cl = req->owner;

	cl->busy = false;
	client_send(cl, reply, len);
	if (cl->dead)
		return;
	if (cl->in_len)
		cl->wait_since = now_ms();
	client_process(cl);
}

/* Take every complete request from the input buffer and answer it. */
static void client_process(struct client *cl)
{
	struct server *srv = cl->srv;
	struct ibresd *d = srv->d;

	while (!cl->dead && !cl->busy && !cl->closing && cl->out_len == 0 &&
	       cl->in_len >= IBRES_HDR_LEN) {
		struct ibres_hdr hdr;
		size_t len, reply_len = 0;
		int ret;

		memcpy(&hdr, cl->in, sizeof(hdr));
		if (msg_frame_length(&hdr, &len) < 0) {
			/* The stream cannot be resynchronised: answer and close. */
			d->stats.bad_requests++;
			log_debug("client fd %d: bad message length %u, closing", cl->lf.fd,
				  ibres_msg_get_length(&hdr));
			client_send(cl, srv->reply, msg_error(srv->reply, &hdr, IBRES_STATUS_EINVAL));
			cl->closing = true;
			break;
		}
		if (cl->in_len < len)
			break;
		memcpy(cl->req.msg, cl->in, len);
		cl->req.len = len;
		cl->in_len -= len;
		memmove(cl->in, cl->in + len, cl->in_len);
		cl->wait_since = now_ms();
		d->stats.requests++;
		/* only the directory passes one: other requests pay nothing */
		cl->req.may_pass_fd = hdr.opcode == IBRES_OP_DIRECTORY &&
				      passed_room(&srv->passed, &srv->adm, cl->owner,
						  passed_bound(d->cfg.max_clients), now_ms());

		ret = request_start(d, &cl->req, srv->reply, &reply_len);
		if (ret == -EINPROGRESS) {
			cl->busy = true;
		} else if (ret < 0) {
			d->stats.bad_requests++;
			client_close(cl);
		} else {
			client_send(cl, srv->reply, reply_len);
		}
	}
	/* after EOF, the loop only stops short of a complete request that can
	 * no longer come */
	if (!cl->dead && (cl->closing || (cl->eof && !cl->busy)) && cl->out_len == 0) {
		client_close(cl);
		return;
	}
	client_rearm(cl);
}

static void client_charge(struct server *srv, struct client *cl, uid_t real);

/* No more credentials on what goes either way on @fd (the listener's
 * SO_PASSCRED, inherited): once known, or for a connection that needs none,
 * they would cost every message a reference on its sender (struct pid),
 * one cache line for all threads of a process. */
static void creds_off(int fd)
{
	int zero = 0;

	(void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &zero, sizeof(zero));
}

static int make_room(struct server *srv, uid_t uid, bool own_only, const struct client *spare);

/* @cl now counts against @uid, a user whose set-user-ID program it is: past
 * that user's share, its own oldest connection that waits for nothing goes,
 * as at its accept; this one when none of the others can */
static void charge_share(struct server *srv, struct client *cl)
{
	struct ibresd *d = srv->d;
	uid_t uid = cl->owner->uid;

	if (uid == 0 || admission_count(&srv->adm, uid) <=
				admission_quota(d->cfg.max_clients, d->cfg.max_clients_per_uid))
		return;
	if (make_room(srv, uid, true, cl) < 0) {
		d->stats.clients_quota_rejected++;
		client_close(cl);
	}
}

/* recv() for a connection whose credentials are awaited (want_creds): the
 * first SCM_CREDENTIALS, the kernel's word for its sender's real uid,
 * charges it; a descriptor a client sent along is closed. */
static ssize_t recv_with_creds(struct client *cl, void *buf, size_t len)
{
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = &ctl,
			    .msg_controllen = sizeof(ctl)};
	ssize_t n = recvmsg(cl->lf.fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred)) && cl->want_creds) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			cl->want_creds = false;
			creds_off(cl->lf.fd);
			client_charge(cl->srv, cl, uc.uid);
			charge_share(cl->srv, cl);
		} else if (c->cmsg_type == SCM_RIGHTS) {
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < nfd; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
				close(fd);
			}
		}
	}
	return n;
}

static void client_read(struct client *cl, bool hup)
{
	while (!cl->dead && cl->in_len < IN_CAP) {
		ssize_t n = cl->want_creds
				    ? recv_with_creds(cl, cl->in + cl->in_len, IN_CAP - cl->in_len)
				    : recv(cl->lf.fd, cl->in + cl->in_len, IN_CAP - cl->in_len,
					   MSG_DONTWAIT);

		if (cl->dead)
			return; /* over its user's share (charge_share()) */

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_close(cl);
			return;
		}
		if (n == 0) {
			/* A client that only shut down its sending side still
			 * gets the answers to what it sent; one that hung up
			 * does not need them. */
			if (hup)
				client_close(cl);
			else
				cl->eof = true;
			return;
		}
		if (cl->in_len == 0)
			cl->wait_since = now_ms();
		cl->in_len += (size_t)n;
		/* A short read drained the socket; epoll is level-triggered, so
		 * asking again only to hear EAGAIN would cost a system call
		 * per request. */
		if ((size_t)n < IN_CAP - (cl->in_len - (size_t)n))
			return;
	}
}

static void on_client(struct loop_fd *lf, uint32_t events)
{
	struct client *cl = container_of(lf, struct client, lf);

	if (cl->dead)
		return;
	if (events & EPOLLOUT) {
		if (client_flush(cl) < 0) {
			client_close(cl);
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		client_read(cl, events & EPOLLHUP);
	if (!cl->dead)
		client_process(cl);
}

/* The real uid of process @pid, from /proc (the kernel's SO_PEERCRED gives the
 * effective one): 0 or a negative errno. The process may have gone, and its
 * pid been taken since: what that costs is a connection counted against
 * another uid's share, never another's rights (those follow SO_PEERCRED). */
static int real_uid_of(pid_t pid, uid_t *out)
{
	char path[32], buf[1024];
	unsigned long r;
	const char *at;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	at = strstr(buf, "\nUid:");
	if (!at || sscanf(at + 5, "%lu", &r) != 1)
		return -EIO;
	*out = (uid_t)r;
	return 0;
}

/* @cl, counted as root's, is a process of real uid @real: a set-user-ID
 * program's counts against the user who started it from then on (its
 * rights stay root's, req.uid). One that passed a descriptor keeps its
 * owner (its slot of passed.h is counted there). */
static void client_charge(struct server *srv, struct client *cl, uid_t real)
{
	struct adm_uid *u;

	cl->uid_checked = true;
	if (real == 0 || cl->owner->uid != 0 || cl->pass != PASS_NONE)
		return;
	u = admission_get(&srv->adm, real);
	if (!u)
		return;
	admission_put(&srv->adm, cl->owner);
	cl->owner = u;
}

/* Root's connections taken without a look at their real uid (below root's
 * share, on_accept()), and that sent nothing yet (recv_with_creds()), are
 * looked at in /proc once one must go for a newcomer, and may go for
 * another user's. */
static void recheck_root(struct server *srv)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &srv->clients)
	{
		struct client *cl = list_entry(pos, struct client, node);
		uid_t real;

		if (cl->uid_checked || cl->owner->uid != 0 || cl->pass != PASS_NONE)
			continue;
		if (real_uid_of(cl->pid, &real) < 0)
			real = 0;
		client_charge(srv, cl, real);
	}
}

/* Make room for a connection from @uid: close the connection the policy picks
 * (frontend/admission.h) among those that wait for nothing from the daemon: idle (whether
 * it asked anything before or not), in the middle of a request, or with an answer it does
 * not read; else connections that hold on could take every slot, and every lookup on the
 * node would fail. A lookup in progress is not cut short. 0 if one was closed. */
static int make_room(struct server *srv, uid_t uid, bool own_only, const struct client *spare)
{
	struct list_node *pos, *tmp;
	struct adm_pick p;
	struct client *victim;

	if (!own_only)
		recheck_root(srv);
	/* least recently active first */
	adm_pick_init(&p, uid, own_only,
		      admission_quota(srv->d->cfg.max_clients, srv->d->cfg.max_clients_per_uid));
	list_for_each_safe(pos, tmp, &srv->clients)
	{
		struct client *cl = list_entry(pos, struct client, node);

		if (!cl->busy && cl != spare)
			adm_pick_offer(&p, cl, cl->owner, cl->want_creds);
	}
	victim = adm_pick_result(&p);
	if (!victim)
		return -EBUSY;
	log_debug("%s: closing %s client fd %d of uid %u (%u connections) for uid %u",
		  own_only ? "max_clients_per_uid reached" : "max_clients reached",
		  victim->out_len > victim->out_off ? "unread" :
		  victim->in_len ? "partial" : victim->served ? "idle" : "silent",
		  victim->lf.fd, (unsigned)victim->owner->uid, victim->owner->n, (unsigned)uid);
	srv->d->stats.clients_evicted++;
	client_close(victim);
	return 0;
}

/* May a connection from @uid come in (admission.h)? Room is made when it must be. */
static bool admit(struct server *srv, uid_t uid)
{
	struct ibresd *d = srv->d;
	unsigned quota = admission_quota(d->cfg.max_clients, d->cfg.max_clients_per_uid);

	switch (admission_need(&srv->adm, uid, srv->n_clients, d->cfg.max_clients, quota)) {
	case ADM_ROOM:
		return true;
	case ADM_OWN_SLOT:
		if (make_room(srv, uid, true, NULL) == 0)
			return true;
		log_debug("uid %u holds %u connections, every one waiting on a lookup: refusing "
			  "another (max_clients_per_uid %u)", (unsigned)uid,
			  admission_count(&srv->adm, uid), quota);
		d->stats.clients_quota_rejected++;
		return false;
	case ADM_ANY_SLOT:
		if (make_room(srv, uid, false, NULL) == 0 ||
		    admission_over_max(uid, srv->n_clients, d->cfg.max_clients))
			return true;
		d->stats.clients_rejected++;
		return false;
	}
	return false;
}

/* A connection accepted on one of the listeners (listener.h). */
static void on_accept(void *arg, int fd, bool acm)
{
	struct server *srv = arg;
	struct ibresd *d = srv->d;
	struct ucred cred = { 0 };
	socklen_t clen = sizeof(cred);
	uid_t uid = (uid_t)-1; /* unknown: a uid of its own, under the quota */
	uid_t share_uid = uid; /* whose share it counts in: the real uid */
	bool checked;
	struct client *cl;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
		uid = share_uid = cred.uid;
	/* a set-user-ID root program counts against the user who started it:
	 * else any user could fill the socket with them (root is exempt from
	 * the per-uid share); its rights stay root's (req.uid). Looked up (a
	 * read in /proc, a fifth of a connection's cost) only once root holds
	 * a share's worth; below that, when one must go (recheck_root()) */
	checked = uid != 0 || cred.pid <= 0 ||
		  admission_count(&srv->adm, 0) >=
			  admission_quota(d->cfg.max_clients, d->cfg.max_clients_per_uid);
	if (uid == 0 && checked && cred.pid > 0 && real_uid_of(cred.pid, &share_uid) < 0)
		share_uid = 0;
	if (!admit(srv, share_uid)) {
		close(fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->owner = admission_get(&srv->adm, share_uid);
	cl->pid = cred.pid;
	cl->uid_checked = checked;
	/* root by SO_PEERCRED, counted as root's: what it sends says who it is */
	cl->want_creds = uid == 0 && share_uid == 0;
	if (!cl->want_creds)
		creds_off(fd);
	if (!cl->owner) {
		close(fd);
		free(cl);
		return;
	}
	cl->srv = srv;
	cl->lf.fd = fd;
	cl->out_fd = -1;
	cl->req.pass_fd = -1;
	cl->lf.cb = on_client;
	cl->idle.cb = client_idle_timeout;
	cl->req.owner = cl;
	cl->req.complete = on_request_complete;
	cl->req.d = d;
	cl->req.uid = uid;
	cl->req.acm_socket = acm;
	cl->wait_since = now_ms();
	if (loop_add_fd(&d->loop, &cl->lf, EPOLLIN) < 0) {
		admission_put(&srv->adm, cl->owner);
		close(fd);
		free(cl);
		return;
	}
	list_add_tail(&srv->clients, &cl->node);
	srv->n_clients++;
	d->stats.clients_connected = srv->n_clients;
	d->stats.clients_accepted++;
	client_rearm(cl);
}

unsigned server_fds_max(unsigned max_clients)
{
	return max_clients + ADM_ROOT_RESERVE + passed_bound(max_clients);
}

int server_open(struct ibresd *d)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int ret;

	if (!srv)
		return -ENOMEM;
	srv->d = d;
	list_init(&srv->clients);
	list_init(&srv->dead);
	srv->reaper.cb = reap_clients;
	admission_init(&srv->adm);
	passed_init(&srv->passed);
	d->server = srv;
	ret = listeners_open(&srv->listeners, &d->loop, &d->cfg, on_accept, srv);
	if (ret)
		server_close(d);
	return ret;
}

void server_close(struct ibresd *d)
{
	struct server *srv = d->server;
	struct list_node *pos, *tmp;

	if (!srv)
		return;
	list_for_each_safe(pos, tmp, &srv->clients)
	{
		client_close(list_entry(pos, struct client, node));
	}
	listeners_close(srv->listeners);
	loop_timer_cancel(&d->loop, &srv->reaper);
	reap_clients(&srv->reaper);
	passed_fini(&srv->passed, &srv->adm);
	admission_fini(&srv->adm);
	free(srv);
	d->server = NULL;
}

