// SPDX-License-Identifier: MIT
#include "os/privs.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

int privs_lookup(struct run_user *u)
{
	struct passwd *pw;

	if (!u->name[0])
		return 0;
	errno = 0;
	pw = getpwnam(u->name);
	if (!pw) {
		int err = errno ? errno : ENOENT;

		log_err("[daemon] user '%s': %s", u->name,
			err == ENOENT ? "no such user" : strerror(err));
		return -err;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	return 0;
}

/* SIGHUP re-reads these as the new user: say now if it cannot. */
static void check_readable(const char *what, const char *path)
{
	if (path[0] && access(path, R_OK) < 0)
		log_warn("%s %s is not readable by the daemon's user: reloads will fail (%s)", what,
			 path, strerror(errno));
}

int privs_drop(const struct run_user *u, const char *config_path, const char *hosts_file)
{
	const char *user = u->name;

	if (!user[0])
		return 0;
	if (getuid() == u->uid && geteuid() == u->uid && getgid() == u->gid &&
	    getegid() == u->gid)
		return 0; /* started as that user already */
	if (geteuid() != 0) {
		log_err("cannot become user %s: not started as root", user);
		return -EPERM;
	}
	/* the user's supplementary groups (e.g. one owning /dev/infiniband),
	 * then the gid while still root, the uid last */
	if (initgroups(user, u->gid) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0) {
		int err = errno;

		log_err("cannot become user %s: %s", user, strerror(err));
		return -err;
	}
	/* setuid() from root to another uid drops every capability, and with
	 * it the way back; make sure of it */
	if (setuid(0) == 0 || seteuid(0) == 0 || getuid() != u->uid ||
	    geteuid() != u->uid || getgid() != u->gid || getegid() != u->gid) {
		log_err("switched to user %s, but root can be regained: stopping", user);
		return -EPERM;
	}
	log_info("running as user %s (uid %u, gid %u)", user, (unsigned)u->uid,
		 (unsigned)u->gid);
	check_readable("configuration file", config_path);
	check_readable("hosts file", hosts_file);
	return 0;
}
