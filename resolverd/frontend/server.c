// SPDX-License-Identifier: MIT
#include "frontend/server.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon.h"
#include "core/list.h"
#include "core/log.h"
#include "frontend/request.h"

#define LISTEN_BACKLOG 4096
#define ACCEPT_PAUSE_MS 100 /* after EMFILE: let connections drain */
#define IN_CAP (2 * ACM_REQ_MAX)
#define LISTENERS_MAX 4 /* ours, ibacm's, and sockets systemd passes besides */

struct listener {
	struct loop_fd lf;
	struct server *srv;
	char path[CFG_SOCKET_MAX];
	char link[CFG_SOCKET_MAX]; /* symlink we made to this socket, or "" */
	int lock_fd;
	bool adopted; /* passed by systemd: its file is not ours to remove */
	struct loop_timer pause;
};

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
	uint64_t wait_since; /* start of the current incomplete request */
	struct loop_timer idle;
	struct request req;
	uint8_t in[IN_CAP];
};

struct server {
	struct ibresd *d;
	struct listener ls[LISTENERS_MAX];
	unsigned n_ls;
	struct list_node clients;
	unsigned n_clients;
	struct list_node dead;
	struct loop_timer reaper;
	uint8_t reply[IBRES_MSG_MAX];
};

static void client_process(struct client *cl);

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
	close(cl->lf.fd);
	if (cl->out_fd >= 0)
		close(cl->out_fd);
	cl->out_fd = -1;
	cl->lf.fd = -1;
	list_del(&cl->node);
	list_add_tail(&srv->dead, &cl->node);
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

	cl_daemon(cl)->stats.clients_timed_out++;
	log_debug("client fd %d: no complete request within the client timeout, closing",
		  cl->lf.fd);
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
	 * an incomplete request, nor connect and never ask anything. */
	if (!cl->busy && (cl->in_len || !cl->served))
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
	do {
		n = send_with_fd(cl->lf.fd, buf, len, pass);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		client_close(cl);
		return;
	}
	if (n < 0)
		n = 0;
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

static void client_read(struct client *cl, bool hup)
{
	while (!cl->dead && cl->in_len < IN_CAP) {
		ssize_t n = recv(cl->lf.fd, cl->in + cl->in_len, IN_CAP - cl->in_len, MSG_DONTWAIT);

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

/* Make room for a new client by closing the one idle the longest: nothing in progress,
 * whether it was served before or never said anything (else connections that stay silent
 * could hold every slot, and every lookup on the node would fail, for client_timeout).
 * 0 if one was closed. */
static int evict_idle_client(struct server *srv)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &srv->clients)
	{
		struct client *cl = list_entry(pos, struct client, node);

		if (!cl->busy && cl->in_len == 0 && cl->out_len == 0) {
			log_debug("max_clients reached: closing %s client fd %d",
				  cl->served ? "idle" : "silent", cl->lf.fd);
			client_close(cl);
			return 0;
		}
	}
	return -EBUSY;
}

static void listener_resume(struct loop_timer *t)
{
	struct listener *ls = container_of(t, struct listener, pause);

	loop_mod_fd(&ls->srv->d->loop, &ls->lf, EPOLLIN);
}

static void on_listener(struct loop_fd *lf, uint32_t events)
{
	struct listener *ls = container_of(lf, struct listener, lf);
	struct server *srv = ls->srv;
	struct ibresd *d = srv->d;

	(void)events;
	for (;;) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct client *cl;
		int fd = accept4(lf->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				log_warn("accept on %s: %s; pausing new connections", ls->path,
					 strerror(errno));
				loop_mod_fd(&d->loop, lf, 0);
				loop_timer_arm(&d->loop, &ls->pause, now_ms() + ACCEPT_PAUSE_MS);
			}
			return;
		}
		if (srv->n_clients >= d->cfg.max_clients && evict_idle_client(srv) < 0) {
			d->stats.clients_rejected++;
			close(fd);
			continue;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl) {
			close(fd);
			continue;
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
		cl->req.uid = (uid_t)-1;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
			cl->req.uid = cred.uid;
		cl->wait_since = now_ms();
		if (loop_add_fd(&d->loop, &cl->lf, EPOLLIN) < 0) {
			close(fd);
			free(cl);
			continue;
		}
		list_add_tail(&srv->clients, &cl->node);
		srv->n_clients++;
		d->stats.clients_connected = srv->n_clients;
		d->stats.clients_accepted++;
		client_rearm(cl);
	}
}

/* A lock file beside the socket: a second daemon on the same path fails
 * here, before touching the live socket. */
static int take_lock(struct listener *ls)
{
	char lock[CFG_SOCKET_MAX + 8];

	snprintf(lock, sizeof(lock), "%s.lock", ls->path);
	ls->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (ls->lock_fd < 0) {
		log_err("cannot open lock file %s: %s", lock, strerror(errno));
		return -errno;
	}
	if (flock(ls->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		log_err("another ibresd is already serving %s (lock %s is held)", ls->path, lock);
		close(ls->lock_fd);
		ls->lock_fd = -1;
		return err == EWOULDBLOCK ? -EADDRINUSE : -err;
	}
	return 0;
}

static int listener_open(struct server *srv, struct listener *ls, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ibresd *d = srv->d;
	char dir[CFG_SOCKET_MAX];
	struct stat st;
	int fd, ret;

	ls->srv = srv;
	ls->lf.fd = -1;
	ls->lock_fd = -1;
	ls->link[0] = '\0';
	ls->adopted = false;
	ls->pause.cb = listener_resume;
	if (strlen(path) >= sizeof(sa.sun_path) || strlen(path) >= sizeof(ls->path)) {
		log_err("socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(ls->path, path);
	strcpy(sa.sun_path, path);

	/* Create the socket's directory (one level, like RuntimeDirectory=). */
	strcpy(dir, path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST) {
		log_err("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	ret = take_lock(ls);
	if (ret)
		return ret;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("%s exists and is not a socket; not removing it", path);
			ret = -EEXIST;
			goto err_lock;
		}
		unlink(path); /* stale: its daemon is gone, we hold the lock */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto err_lock;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		log_err("bind %s: %s", path, strerror(errno));
		goto err_fd;
	}
	/* Queries are open to everyone; admin requests are checked per peer. */
	if (chmod(path, 0666) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		ret = -errno;
		log_err("listen %s: %s", path, strerror(errno));
		goto err_unlink;
	}
	ls->lf.fd = fd;
	ls->lf.cb = on_listener;
	ret = loop_add_fd(&d->loop, &ls->lf, EPOLLIN);
	if (ret)
		goto err_unlink;
	log_info("listening on %s", path);
	return 0;

err_unlink:
	unlink(path);
err_fd:
	close(fd);
	ls->lf.fd = -1;
err_lock:
	close(ls->lock_fd);
	ls->lock_fd = -1;
	return ret;
}

static void listener_close(struct server *srv, struct listener *ls)
{
	if (ls->lf.fd >= 0) {
		loop_del_fd(&srv->d->loop, &ls->lf);
		close(ls->lf.fd);
		if (!ls->adopted)
			unlink(ls->path);
		ls->lf.fd = -1;
	}
	loop_timer_cancel(&srv->d->loop, &ls->pause);
	if (ls->link[0])
		unlink(ls->link);
	ls->link[0] = '\0';
	if (ls->lock_fd >= 0)
		close(ls->lock_fd);
	ls->lock_fd = -1;
}

/* ibacm's clients (librdmacm) connect to "ibacm.sock" beside ibacm's own
 * socket; point it at ours, as ibacm does. */
static void make_acm_link(struct listener *ls)
{
	char dir[CFG_SOCKET_MAX], link[CFG_SOCKET_MAX + 16];
	const char *target = strrchr(ls->path, '/') + 1;
	struct stat st;

	strcpy(dir, ls->path);
	snprintf(link, sizeof(link), "%s/ibacm.sock", dirname(dir));
	if (!strcmp(link, ls->path))
		return;
	if (lstat(link, &st) == 0) {
		if (!S_ISLNK(st.st_mode)) {
			log_warn("%s exists and is not a symlink; not replacing it", link);
			return;
		}
		unlink(link);
	}
	if (symlink(target, link) < 0) {
		log_warn("cannot link %s -> %s: %s", link, target, strerror(errno));
		return;
	}
	if (strlen(link) < sizeof(ls->link))
		strcpy(ls->link, link);
}

/* --- socket activation -------------------------------------------------- */

/* The descriptors systemd passed (LISTEN_FDS, from SD_LISTEN_FDS_START on). */
struct activation {
	int n;
	char **names; /* FileDescriptorName= of each, or NULL */
	bool *used;
};

static const char *passed_name(const struct activation *a, int i)
{
	return a->names && a->names[i] ? a->names[i] : "unnamed";
}

/* The file a Unix socket is bound to, into @buf; "" if none (abstract or
 * unbound). */
static const char *bound_path(int fd, char *buf, size_t len)
{
	struct sockaddr_un sa;
	socklen_t salen = sizeof(sa);
	size_t n;

	buf[0] = '\0';
	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0 || sa.sun_family != AF_UNIX ||
	    salen <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return buf;
	n = strnlen(sa.sun_path, salen - offsetof(struct sockaddr_un, sun_path));
	snprintf(buf, len, "%.*s", (int)n, sa.sun_path);
	return buf;
}

/* Is @fd a listening Unix stream socket on @path: the same name, or the
 * same file reached by another name? */
static bool passed_is(int fd, const char *path)
{
	char bound[CFG_SOCKET_MAX + 1];
	struct stat a, b;

	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, path, 0) > 0)
		return true;
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0 ||
	    !bound_path(fd, bound, sizeof(bound))[0])
		return false;
	return stat(bound, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Serve a socket systemd made: it is bound and listening already, and its
 * file (and any link to it) is systemd's, neither locked nor removed. */
static int listener_adopt(struct server *srv, struct listener *ls, int fd, const char *path,
			  const char *name)
{
	int flags = fcntl(fd, F_GETFL);
	int ret;

	memset(ls, 0, sizeof(*ls));
	ls->srv = srv;
	ls->lock_fd = -1;
	ls->adopted = true;
	ls->pause.cb = listener_resume;
	snprintf(ls->path, sizeof(ls->path), "%s", path);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		ret = -errno;
		goto err;
	}
	ls->lf.fd = fd;
	ls->lf.cb = on_listener;
	ret = loop_add_fd(&srv->d->loop, &ls->lf, EPOLLIN);
	if (ret)
		goto err;
	log_info("listening on %s (socket '%s' from systemd)", path, name);
	return 0;
err:
	log_err("socket %s from systemd: %s", path, strerror(-ret));
	close(fd);
	ls->lf.fd = -1;
	return ret;
}

/* Take the passed socket for @path if there is one: 1 if taken, 0 if none,
 * or a negative errno. */
static int adopt_for(struct server *srv, struct activation *a, struct listener *ls,
		     const char *path)
{
	for (int i = 0; i < a->n; i++) {
		int fd = SD_LISTEN_FDS_START + i, ret;

		if (a->used[i] || !passed_is(fd, path))
			continue;
		a->used[i] = true;
		ret = listener_adopt(srv, ls, fd, path, passed_name(a, i));
		return ret ? ret : 1;
	}
	return 0;
}

/* Passed descriptors the configuration does not name: a listening Unix
 * stream socket is served too (systemd listens there for us, so someone
 * expects an answer); anything else is closed. */
static int adopt_others(struct server *srv, struct activation *a)
{
	char path[CFG_SOCKET_MAX + 1];

	for (int i = 0; i < a->n; i++) {
		int fd = SD_LISTEN_FDS_START + i, ret;

		if (a->used[i])
			continue;
		a->used[i] = true;
		/* the kernel's path queries took a copy (frontend/kernel_paths.c) */
		if (sd_is_socket(fd, AF_NETLINK, SOCK_RAW, -1) > 0) {
			close(fd);
			continue;
		}
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_warn("descriptor %d ('%s') from systemd is not a listening Unix stream "
				 "socket; closing it", fd, passed_name(a, i));
			close(fd);
			continue;
		}
		if (!bound_path(fd, path, sizeof(path))[0])
			snprintf(path, sizeof(path), "descriptor %d", fd);
		if (srv->n_ls == LISTENERS_MAX) {
			log_warn("socket %s ('%s') from systemd: already serving %u sockets; "
				 "closing it", path, passed_name(a, i), LISTENERS_MAX);
			close(fd);
			continue;
		}
		log_info("socket %s ('%s') from systemd is not in the configuration: serving it "
			 "too", path, passed_name(a, i));
		ret = listener_adopt(srv, &srv->ls[srv->n_ls], fd, path, passed_name(a, i));
		if (ret)
			return ret;
		srv->n_ls++;
	}
	return 0;
}

/* Our socket @path: the one systemd passed, else one we make. */
static int listener_setup(struct server *srv, struct activation *a, struct listener *ls,
			  const char *path)
{
	int ret = adopt_for(srv, a, ls, path);

	if (ret)
		return ret < 0 ? ret : 0;
	return listener_open(srv, ls, path);
}

int server_open(struct ibresd *d)
{
	struct server *srv = calloc(1, sizeof(*srv));
	struct activation a = { 0 };
	int ret;

	if (!srv)
		return -ENOMEM;
	srv->d = d;
	list_init(&srv->clients);
	list_init(&srv->dead);
	srv->reaper.cb = reap_clients;
	d->server = srv;

	/* socket activation: what systemd passed, for this process only */
	a.n = sd_listen_fds_with_names(1, &a.names);
	if (a.n < 0) {
		log_warn("sockets from systemd: %s; ignoring them", strerror(-a.n));
		a.n = 0;
	}
	if (a.n > 0 && !(a.used = calloc((size_t)a.n, sizeof(*a.used)))) {
		ret = -ENOMEM;
		goto err;
	}
	ret = listener_setup(srv, &a, &srv->ls[0], d->cfg.socket_path);
	if (ret)
		goto err;
	srv->n_ls = 1;
	if (d->cfg.acm_socket_path[0]) {
		ret = listener_setup(srv, &a, &srv->ls[1], d->cfg.acm_socket_path);
		if (ret)
			goto err;
		srv->n_ls = 2;
		/* systemd makes its own link (Symlinks=) */
		if (d->cfg.acm_link && !srv->ls[1].adopted)
			make_acm_link(&srv->ls[1]);
	}
	ret = adopt_others(srv, &a);
	if (ret)
		goto err;
	goto out;
err:
	server_close(d);
out:
	/* a descriptor nobody took (an error above) is not left open */
	for (int i = 0; i < a.n; i++)
		if (!a.used || !a.used[i])
			close(SD_LISTEN_FDS_START + i);
	for (int i = 0; a.names && i < a.n; i++)
		free(a.names[i]);
	free(a.names);
	free(a.used);
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
	for (unsigned i = 0; i < srv->n_ls; i++)
		listener_close(srv, &srv->ls[i]);
	loop_timer_cancel(&d->loop, &srv->reaper);
	reap_clients(&srv->reaper);
	free(srv);
	d->server = NULL;
}

