/* SPDX-License-Identifier: MIT */
/* The IB multicast groups of the SA client (mcast.c), as its other files
 * need them: a port's groups live in its struct sa_port (sa_query.h); port.c
 * renews them on port events and leaves them at shutdown. */
#ifndef IBRESD_MCAST_H
#define IBRESD_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "ib/sa_mad.h"

struct sa_client;
struct sa_port;

enum grp_state { GRP_IDLE, GRP_JOINING, GRP_JOINED, GRP_FAILED, GRP_LEAVING };

/* One of an endpoint's configured groups, on the endpoint's port. */
struct sa_group {
	uint8_t mgid[16];
	enum grp_state state;
	struct sa_mcmember rec; /* the SA's answer, while JOINED */
	unsigned failures;
	int last_error;
	uint64_t retry_ms; /* FAILED: join again then */
};

/* Set up @p's join retries; before any other call about @p. */
void mcast_port_init(struct sa_port *p);

/* No more join retries for @p (it closes). */
void mcast_port_close(struct sa_port *p);

/* Join the groups of @p's endpoint that are not joined yet, and those whose
 * retry is due, if the port can ask the SA; a failed join is retried with
 * a growing back-off. */
void mcast_try_joins(struct sa_port *p);

/* Membership is gone or must be renewed (port state, LID, GID or P_Key
 * change, a new SM, CLIENT_REREGISTER): every group is joined again at the
 * next mcast_try_joins(). */
void mcast_reset(struct sa_port *p);

/* Shutting down: leave every joined group of every usable port, so that the
 * SA can drop groups nobody uses. mcast_leaves_done() is true once the SA
 * answered all the leaves (or they failed). */
void mcast_leave_all(struct sa_client *sa);
bool mcast_leaves_done(const struct sa_client *sa);

#endif
