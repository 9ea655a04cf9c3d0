// SPDX-License-Identifier: MIT
#include "os/privs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

/* The capability sets, through the raw system calls (no libcap). */
static int caps_get(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, data) ? -errno : 0;
}

static int caps_set(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capset, &h, data) ? -errno : 0;
}

#define CAP_WORD(c) ((c) / 32)
#define CAP_BIT(c) (1u << ((c) % 32))

void privs_net_admin(bool needed)
{
	struct __user_cap_data_struct data[2];
	const unsigned w = CAP_WORD(CAP_NET_ADMIN);
	int ret;

	if (needed || caps_get(data) || !(data[w].permitted & CAP_BIT(CAP_NET_ADMIN)))
		return;
	data[w].effective &= ~CAP_BIT(CAP_NET_ADMIN);
	data[w].permitted &= ~CAP_BIT(CAP_NET_ADMIN);
	data[w].inheritable &= ~CAP_BIT(CAP_NET_ADMIN);
	ret = caps_set(data);
	if (ret)
		log_warn("cannot drop CAP_NET_ADMIN, which nothing needs: %s", strerror(-ret));
	else
		log_debug("dropped CAP_NET_ADMIN: nothing here needs it");
}

/* After the switch to a user with keep-caps set: CAP_NET_ADMIN alone. */
static int keep_only_net_admin(void)
{
	struct __user_cap_data_struct data[2] = { { 0 } };
	const unsigned w = CAP_WORD(CAP_NET_ADMIN);

	data[w].effective = data[w].permitted = CAP_BIT(CAP_NET_ADMIN);
	return caps_set(data);
}

int privs_drop(const struct run_user *u, const char *config_path, const char *hosts_file,
	       bool keep_net_admin)
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
	if ((keep_net_admin && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) ||
	    initgroups(user, u->gid) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0) {
		int err = errno;

		log_err("cannot become user %s: %s", user, strerror(err));
		return -err;
	}
	if (keep_net_admin) {
		int ret = keep_only_net_admin();

		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
		if (ret) {
			log_err("user %s: cannot keep CAP_NET_ADMIN for the kernel's path "
				"queries: %s", user, strerror(-ret));
			return ret;
		}
	}
	/* setuid() from root to another uid drops every capability (but the
	 * one kept above), and with it the way back; make sure of it */
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
