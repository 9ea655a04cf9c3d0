/* SPDX-License-Identifier: MIT */
/*
 * Descriptors passed to clients (the shared directory's, SCM_RIGHTS) that
 * their peers have not read yet. The kernel counts a descriptor in flight
 * against the sending user, the daemon's, until the peer takes it, and past
 * the daemon's open-file limit of them it refuses to pass any (sendmsg
 * fails with ETOOMANYREFS): one user who asks for the directory on many
 * connections and never reads would take the mapped directory from every
 * reader. So the socket of a connection whose answer carried a descriptor
 * is kept, not closed, until its peer has read that answer or gone
 * (SIOCOUTQ says 0 then), and a uid with PASSED_UNREAD_PER_UID of them, or
 * the daemon with its bound of them all, is passed no more until some are
 * read.
 */
#ifndef IBRESD_PASSED_H
#define IBRESD_PASSED_H

#include <stdbool.h>

#include "core/list.h"
#include "frontend/admission.h"

#define PASSED_UNREAD_PER_UID 8u

struct passed {
	struct list_node socks; /* struct passed_sock, oldest first */
	unsigned n;
};

void passed_init(struct passed *p);
/* Close every socket kept; their owners' counts go down in @adm. */
void passed_fini(struct passed *p, struct admission *adm);

/* @sock, whose answer carried a descriptor to a peer of @owner's uid, is
 * done with: closed at once if its peer has read everything, else kept
 * (and counted against @owner) until it has. */
void passed_done(struct passed *p, struct admission *adm, int sock, struct adm_uid *owner);

/* May one more descriptor go to a peer of @owner's uid, with at most
 * @max_total unread in all? Sockets whose peers have read since are closed
 * first when a bound is reached. */
bool passed_room(struct passed *p, struct admission *adm, const struct adm_uid *owner,
		 unsigned max_total);

#endif
