// SPDX-License-Identifier: MIT
/*
 * Listening sockets and the files beside them. A socket made here lives in a
 * folder that no other user can write to: root's or the daemon's own (made
 * here when missing), not group- or other-writable; else the daemon does
 * not start. A sticky folder anyone may write to (/tmp) is accepted only
 * when the daemon does not run as root: others may make names there, and a
 * root daemon must never act on a name someone else made. Every file is
 * reached through the folder's descriptor without following a symbolic link
 * (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), the lock must be a regular file of our
 * own with one link, and the socket is made under a umask that leaves it
 * 0666: it is never chmodded by path.
 */
#include "frontend/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
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

#include "core/clock.h"
#include "core/config.h"
#include "core/list.h"
#include "core/log.h"
#include "core/loop.h"

#define LISTEN_BACKLOG 4096
#define ACCEPT_PAUSE_MS 100 /* after EMFILE: let connections drain */
/* Connections taken at one wake-up: the rest wait for the loop's next turn
 * (the socket is level-triggered), so that a user opening connections as
 * fast as it can does not keep the loop from the clients it has. */
#define ACCEPT_BATCH 64
#define LISTENERS_MAX 4     /* ours, ibacm's, and sockets systemd passes besides */
#define ACM_LINK_NAME "ibacm.sock"

struct listener {
	struct loop_fd lf;
	struct listeners *set;
	char path[CFG_SOCKET_MAX];
	const char *name; /* the socket's name in its folder (within path) */
	int dir_fd;       /* its folder, for a socket made here; else -1 */
	int lock_fd;
	bool adopted;   /* passed by systemd: its file is not ours to remove */
	bool link_made; /* ACM_LINK_NAME in dir_fd points at this socket */
	bool acm;       /* ibacm's socket: librdmacm's clients come here */
	struct loop_timer pause;
};

struct listeners {
	struct loop *loop;
	listeners_accept_fn fn;
	void *arg;
	struct listener ls[LISTENERS_MAX];
	unsigned n;
};

static void listener_resume(struct loop_timer *t)
{
	struct listener *ls = container_of(t, struct listener, pause);

	loop_mod_fd(ls->set->loop, &ls->lf, EPOLLIN);
}

/* Every connection accepted on @fd carries its sender's credentials with
 * what it sends (SO_PASSCRED, inherited at accept): the kernel's word for
 * the sender's real uid, which the server reads where SO_PEERCRED says root
 * (a set-user-ID program's user). Without it, the server counts such a
 * connection as root's, as before. */
static void pass_credentials(int fd)
{
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		log_debug("SO_PASSCRED: %s", strerror(errno));
}

static void on_listener(struct loop_fd *lf, uint32_t events)
{
	struct listener *ls = container_of(lf, struct listener, lf);
	struct listeners *set = ls->set;

	(void)events;
	for (unsigned n = 0; n < ACCEPT_BATCH; n++) {
		int fd = accept4(lf->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				log_warn("accept on %s: %s; pausing new connections", ls->path,
					 strerror(errno));
				loop_mod_fd(set->loop, lf, 0);
				loop_timer_arm(set->loop, &ls->pause, now_ms() + ACCEPT_PAUSE_MS);
			}
			return;
		}
		set->fn(set->arg, fd, ls->acm);
	}
}

static void listener_init(struct listeners *set, struct listener *ls, const char *path)
{
	const char *slash;

	memset(ls, 0, sizeof(*ls));
	ls->set = set;
	ls->lf.fd = -1;
	ls->dir_fd = -1;
	ls->lock_fd = -1;
	ls->pause.cb = listener_resume;
	snprintf(ls->path, sizeof(ls->path), "%s", path);
	slash = strrchr(ls->path, '/');
	ls->name = slash ? slash + 1 : ls->path;
}

/* May the daemon make files in the folder @dfd (@dir)? See the top of this file. */
static int check_folder(int dfd, const char *dir)
{
	uid_t me = geteuid();
	struct stat st;
	bool owner_ok, shared;

	if (fstat(dfd, &st) < 0) {
		log_err("socket folder %s: %s", dir, strerror(errno));
		return -errno;
	}
	owner_ok = st.st_uid == 0 || st.st_uid == me;
	shared = st.st_mode & (S_IWGRP | S_IWOTH);
	if (owner_ok && (!shared || ((st.st_mode & S_ISVTX) && me != 0)))
		return 0;
	log_err("socket folder %s is owned by uid %u with mode %04o: it must belong to root%s "
		"and be writable by no one else%s; refusing to start", dir, (unsigned)st.st_uid,
		(unsigned)(st.st_mode & 07777), me ? " or to the daemon's user" : "",
		me ? " (or be sticky, as /tmp)" : " (a sticky folder such as /tmp is refused to "
		"root)");
	return -EPERM;
}

/* Open @ls's folder (made when missing, one level, like RuntimeDirectory=) and check it. */
static int open_folder(struct listener *ls)
{
	char dir[CFG_SOCKET_MAX];
	const char *d;
	mode_t old;
	int ret;

	snprintf(dir, sizeof(dir), "%s", ls->path);
	d = dirname(dir);
	/* 0755 whatever the umask: every user must reach the socket */
	old = umask(022);
	ret = mkdir(d, 0755) < 0 && errno != EEXIST ? -errno : 0;
	umask(old);
	if (ret) {
		log_err("cannot create %s: %s", d, strerror(-ret));
		return ret;
	}
	ls->dir_fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ls->dir_fd < 0) {
		log_err("cannot open socket folder %s: %s", d, strerror(errno));
		return -errno;
	}
	ret = check_folder(ls->dir_fd, d);
	if (ret) {
		close(ls->dir_fd);
		ls->dir_fd = -1;
	}
	return ret;
}

/* A lock file beside the socket: a second daemon on the same path fails here, before
 * touching the live socket. Never through a link, never someone else's file. */
static int take_lock(struct listener *ls)
{
	char lock[CFG_SOCKET_MAX + 8];
	struct stat st;
	int ret;

	snprintf(lock, sizeof(lock), "%s.lock", ls->name);
	ls->lock_fd = openat(ls->dir_fd, lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
				 O_NOCTTY | O_CLOEXEC, 0644);
	if (ls->lock_fd < 0) {
		ret = -errno;
		log_err("cannot open lock file %s.lock: %s%s", ls->path, strerror(errno),
			errno == ELOOP ? " (a symbolic link: refusing to follow it)" : "");
		return ret;
	}
	if (fstat(ls->lock_fd, &st) < 0) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
		log_err("lock file %s.lock is not a regular file of uid %u with one link (type "
			"%o, uid %u, %u links); refusing it", ls->path, (unsigned)geteuid(),
			(unsigned)(st.st_mode & S_IFMT), (unsigned)st.st_uid,
			(unsigned)st.st_nlink);
		ret = -EPERM;
		goto err;
	}
	if (flock(ls->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		log_err("another ibresd is already serving %s (lock %s.lock is held)", ls->path,
			ls->path);
		goto err;
	}
	return 0;
err:
	close(ls->lock_fd);
	ls->lock_fd = -1;
	return ret;
}

/* bind() under a umask that leaves the socket 0666: queries are open to everyone (admin
 * requests are checked per peer); never a chmod by path after. */
static int bind_open(int fd, const struct sockaddr_un *sa)
{
	mode_t old = umask(0111);
	int ret = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));

	umask(old);
	return ret < 0 ? -errno : 0;
}

/* Where the socket is bound before it listens: ".NAME.new" beside it, so that its name
 * appears (renamed) only once it listens, and a client that finds the name is never refused
 * (a daemon starting while NSS looks up); NULL when that name does not fit sun_path. */
static const char *bind_name(const struct listener *ls, struct sockaddr_un *sa)
{
	int dir_len = (int)(ls->name - ls->path);
	int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%.*s.%s.new", dir_len, ls->path,
			 ls->name);

	if (n < 0 || (size_t)n >= sizeof(sa->sun_path)) {
		strcpy(sa->sun_path, ls->path);
		return NULL;
	}
	return sa->sun_path + dir_len;
}

/* A socket file @name (@shown in messages) that a daemon, or a start, that died left in the
 * folder: removed, as we hold the lock. 0, or -EEXIST when @name is anything but a socket,
 * which is not ours to remove. */
static int remove_stale(const struct listener *ls, const char *name, const char *shown)
{
	struct stat st;

	if (fstatat(ls->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		log_err("%s exists and is not a socket; not removing it", shown);
		return -EEXIST;
	}
	unlinkat(ls->dir_fd, name, 0);
	return 0;
}

static int listener_open(struct listeners *set, struct listener *ls, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *tmp;
	int fd, ret;

	listener_init(set, ls, path);
	if (strlen(path) >= sizeof(sa.sun_path) || strlen(path) >= sizeof(ls->path)) {
		log_err("socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	ret = open_folder(ls);
	if (ret)
		return ret;
	ret = take_lock(ls);
	if (ret)
		goto err_dir;
	tmp = bind_name(ls, &sa);
	ret = remove_stale(ls, ls->name, path);
	if (!ret && tmp)
		ret = remove_stale(ls, tmp, sa.sun_path);
	if (ret)
		goto err_lock;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto err_lock;
	}
	ret = bind_open(fd, &sa);
	if (ret) {
		log_err("bind %s: %s", sa.sun_path, strerror(-ret));
		goto err_fd;
	}
	if (listen(fd, LISTEN_BACKLOG) < 0) {
		ret = -errno;
		log_err("listen %s: %s", path, strerror(errno));
		goto err_unlink;
	}
	/* never over a name someone else made meanwhile (a file system without
	 * RENAME_NOREPLACE: the name was checked above, under the lock) */
	if (tmp && renameat2(ls->dir_fd, tmp, ls->dir_fd, ls->name, RENAME_NOREPLACE) < 0 &&
	    (errno != EINVAL || renameat(ls->dir_fd, tmp, ls->dir_fd, ls->name) < 0)) {
		ret = -errno;
		log_err("rename %s to %s: %s", sa.sun_path, path, strerror(errno));
		goto err_unlink;
	}
	tmp = NULL; /* bound at its name now */
	pass_credentials(fd);
	ls->lf.fd = fd;
	ls->lf.cb = on_listener;
	ret = loop_add_fd(set->loop, &ls->lf, EPOLLIN);
	if (ret)
		goto err_unlink;
	log_info("listening on %s", path);
	return 0;

err_unlink:
	unlinkat(ls->dir_fd, tmp ? tmp : ls->name, 0);
err_fd:
	close(fd);
	ls->lf.fd = -1;
err_lock:
	close(ls->lock_fd);
	ls->lock_fd = -1;
err_dir:
	close(ls->dir_fd);
	ls->dir_fd = -1;
	return ret;
}

/* After a switch of user the folder may not be ours to change any more: the files stay,
 * and the next start replaces a stale socket. */
static void listener_close(struct listeners *set, struct listener *ls)
{
	if (ls->lf.fd >= 0) {
		loop_del_fd(set->loop, &ls->lf);
		close(ls->lf.fd);
		if (!ls->adopted && ls->dir_fd >= 0)
			unlinkat(ls->dir_fd, ls->name, 0);
		ls->lf.fd = -1;
	}
	loop_timer_cancel(set->loop, &ls->pause);
	if (ls->link_made)
		unlinkat(ls->dir_fd, ACM_LINK_NAME, 0);
	ls->link_made = false;
	if (ls->dir_fd >= 0)
		close(ls->dir_fd);
	ls->dir_fd = -1;
	if (ls->lock_fd >= 0)
		close(ls->lock_fd);
	ls->lock_fd = -1;
}

/* ibacm's clients (librdmacm) connect to "ibacm.sock" beside ibacm's own socket; point it
 * at ours, as ibacm does. */
static void make_acm_link(struct listener *ls)
{
	struct stat st;

	if (!strcmp(ls->name, ACM_LINK_NAME))
		return;
	if (fstatat(ls->dir_fd, ACM_LINK_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISLNK(st.st_mode)) {
			log_warn("%s beside %s exists and is not a symlink; not replacing it",
				 ACM_LINK_NAME, ls->path);
			return;
		}
		unlinkat(ls->dir_fd, ACM_LINK_NAME, 0);
	}
	if (symlinkat(ls->name, ls->dir_fd, ACM_LINK_NAME) < 0) {
		log_warn("cannot link %s beside %s to it: %s", ACM_LINK_NAME, ls->path,
			 strerror(errno));
		return;
	}
	ls->link_made = true;
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
static int listener_adopt(struct listeners *set, struct listener *ls, int fd, const char *path,
			  const char *name)
{
	int flags = fcntl(fd, F_GETFL);
	int ret;

	listener_init(set, ls, path);
	ls->adopted = true;
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		ret = -errno;
		goto err;
	}
	pass_credentials(fd);
	ls->lf.fd = fd;
	ls->lf.cb = on_listener;
	ret = loop_add_fd(set->loop, &ls->lf, EPOLLIN);
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
static int adopt_for(struct listeners *set, struct activation *a, struct listener *ls,
		     const char *path)
{
	for (int i = 0; i < a->n; i++) {
		int fd = SD_LISTEN_FDS_START + i, ret;

		if (a->used[i] || !passed_is(fd, path))
			continue;
		a->used[i] = true;
		ret = listener_adopt(set, ls, fd, path, passed_name(a, i));
		return ret ? ret : 1;
	}
	return 0;
}

/* Passed descriptors the configuration does not name: a listening Unix
 * stream socket is served too (systemd listens there for us, so someone
 * expects an answer); anything else is closed. */
static int adopt_others(struct listeners *set, struct activation *a)
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
		if (set->n == LISTENERS_MAX) {
			log_warn("socket %s ('%s') from systemd: already serving %u sockets; "
				 "closing it", path, passed_name(a, i), LISTENERS_MAX);
			close(fd);
			continue;
		}
		log_info("socket %s ('%s') from systemd is not in the configuration: serving it "
			 "too", path, passed_name(a, i));
		ret = listener_adopt(set, &set->ls[set->n], fd, path, passed_name(a, i));
		if (ret)
			return ret;
		/* ibresd-acm.socket's, when ibresd.conf names no acm_socket */
		set->ls[set->n].acm = !strcmp(passed_name(a, i), "acm");
		set->n++;
	}
	return 0;
}

/* Our socket @path: the one systemd passed, else one we make. */
static int listener_setup(struct listeners *set, struct activation *a, struct listener *ls,
			  const char *path)
{
	int ret = adopt_for(set, a, ls, path);

	if (ret)
		return ret < 0 ? ret : 0;
	return listener_open(set, ls, path);
}

int listeners_open(struct listeners **out, struct loop *loop, const struct ibres_config *cfg,
		   listeners_accept_fn fn, void *arg)
{
	struct listeners *set = calloc(1, sizeof(*set));
	struct activation a = { 0 };
	int ret;

	*out = NULL;
	if (!set)
		return -ENOMEM;
	set->loop = loop;
	set->fn = fn;
	set->arg = arg;

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
	ret = listener_setup(set, &a, &set->ls[0], cfg->socket_path);
	if (ret)
		goto err;
	set->n = 1;
	if (cfg->acm_socket_path[0]) {
		ret = listener_setup(set, &a, &set->ls[1], cfg->acm_socket_path);
		if (ret)
			goto err;
		set->n = 2;
		set->ls[1].acm = true;
		/* systemd makes its own link (Symlinks=) */
		if (cfg->acm_link && !set->ls[1].adopted)
			make_acm_link(&set->ls[1]);
	}
	ret = adopt_others(set, &a);
	if (ret)
		goto err;
	*out = set;
	goto out;
err:
	listeners_close(set);
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

void listeners_close(struct listeners *set)
{
	if (!set)
		return;
	for (unsigned i = 0; i < set->n; i++)
		listener_close(set, &set->ls[i]);
	free(set);
}
