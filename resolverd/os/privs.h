/* SPDX-License-Identifier: MIT */
/* Running as another user ([daemon] user in ibresd.conf(5)): the user is
 * looked up at start, and the daemon switches to it once everything that
 * needs root is open (sockets, netlink, transports, the cluster key). */
#ifndef IBRESD_PRIVS_H
#define IBRESD_PRIVS_H

struct ibresd;

/* Look d->cfg.user up (nothing to do when it is unset) into d->run_uid and
 * d->run_gid. 0, or -ENOENT for an unknown user (logged). */
int privs_lookup(struct ibresd *d);

/* Become d->cfg.user: its groups, its gid, its uid, then check that root
 * cannot be regained. 0 (also when no user is set or when already running
 * as it), or a negative errno (logged): the daemon must not go on. */
int privs_drop(struct ibresd *d);

#endif
