/* SPDX-License-Identifier: MIT */
/*
 * Descriptors passed to clients (the shared directory's, SCM_RIGHTS) that
 * their peers have not read yet. The kernel counts a descriptor in flight
 * against the sending user, the daemon's, until the peer takes it, and past
 * the daemon's open-file limit of them it refuses to pass any (sendmsg
 * fails with ETOOMANYREFS): one user who asks for the directory on many
 * connections and never reads would take the mapped directory from every
 * reader. So a descriptor takes a slot of its uid's when it is granted
 * (before it goes: an answer may wait for room in the socket), and the
 * socket whose answer carried it is kept (shut down: its peer sees the end
 * of the stream after the answer) until the peer has read the answer or
 * gone (SIOCOUTQ says 0 then). A uid with PASSED_UNREAD_PER_UID slots, or
 * the daemon with its bound of them all, is granted no more until some are
 * read.
 */
#ifndef IBRESD_PASSED_H
#define IBRESD_PASSED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/list.h"
#include "frontend/admission.h"

#define PASSED_UNREAD_PER_UID 8u
/* At a bound, every kept socket is looked at again at most this often:
 * requests at the bound are refused in between without that cost. */
#define PASSED_SWEEP_MS 50u

struct passed {
	struct list_node socks; /* struct passed_sock, oldest first */
	unsigned n;		/* slots taken: kept sockets and grants not sent yet */
	uint64_t swept_ms;	/* the last look at all of them */
};

void passed_init(struct passed *p);
/* Close every socket kept; their owners' counts go down in @adm. */
void passed_fini(struct passed *p, struct admission *adm);

/* May one more descriptor go to a peer of @owner's uid, with at most
 * @max_total slots taken in all? At a bound, sockets whose peers have read
 * since are closed first (at most every PASSED_SWEEP_MS). */
bool passed_room(struct passed *p, struct admission *adm, const struct adm_uid *owner,
		 unsigned max_total, uint64_t now_ms);
/* A descriptor granted to a peer of @owner's uid: a slot taken. */
void passed_grant(struct passed *p, struct adm_uid *owner);
/* The grant's descriptor never went (the connection closed first). */
void passed_cancel(struct passed *p, struct admission *adm, struct adm_uid *owner);
/* @sock, whose answer carried the granted descriptor, is done with: closed
 * (the slot freed) if its peer has read everything, else shut down and
 * kept, holding the slot, until it has. */
void passed_done(struct passed *p, struct admission *adm, int sock, struct adm_uid *owner);

#endif
