/* SPDX-License-Identifier: MIT */
/* Running as another user ([daemon] user in ibresd.conf(5)): the user is
 * looked up at start, and the daemon switches to it once everything that
 * needs root is open (sockets, netlink, transports, the cluster key). */
#ifndef IBRESD_PRIVS_H
#define IBRESD_PRIVS_H

#include <stdbool.h>
#include <sys/types.h>

/* The user to run as: its name ("" = keep the identity started with) and,
 * once looked up, its ids. */
struct run_user {
	char name[64];
	uid_t uid;
	gid_t gid;
};

/* Look u->name up (nothing to do when it is unset) into u->uid and u->gid.
 * 0, or -ENOENT for an unknown user (logged). */
int privs_lookup(struct run_user *u);

/* Become @u: its groups, its gid, its uid, then check that root cannot be
 * regained, and warn when @config_path or @hosts_file (reloads re-read
 * them) are not readable any more. With @keep_net_admin, CAP_NET_ADMIN
 * (answers to the kernel's path queries) survives the switch, alone. 0
 * (also when no user is set or when already running as it), or a negative
 * errno (logged): the daemon must not go on. */
int privs_drop(const struct run_user *u, const char *config_path, const char *hosts_file,
	       bool keep_net_admin);

/* CAP_NET_ADMIN is needed only to answer the kernel's path queries: without
 * @needed, drop it from every capability set for good (logged when that
 * fails: a seccomp filter without capset, say). Other capabilities stay as
 * they are. */
void privs_net_admin(bool needed);

#endif
