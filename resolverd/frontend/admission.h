/* SPDX-License-Identifier: MIT */
/*
 * Who may connect, and whose connection goes when the socket is full: the
 * policy alone, without sockets (a unit test drives it), over the
 * connections' owners.
 *
 * - A connection is its process's real uid's (the server reads it for an
 *   effective root once root holds a quota's worth, and for root's others
 *   when one must go: a set-user-ID program counts against its user).
 * - Each uid but root holds at most max_clients_per_uid connections (0 in
 *   ibresd.conf: a quarter of max_clients, at least 1). A uid at its quota
 *   gets room by closing its own oldest connection that waits for nothing
 *   from the daemon (idle, partial or unread); it is refused when all of its
 *   own wait on a lookup.
 * - At max_clients, the oldest such connection of the uid that holds the
 *   most goes. A root connection goes only to make room for root, but for
 *   one whose real uid nothing told yet (it sent nothing, and /proc did
 *   not say) while root holds more than a quota: such ones go as any uid's.
 *   They may be a user's set-user-ID programs stopped before they asked: a
 *   user cannot fill the socket with them.
 * - Root is exempt from the quota and, when nothing can go, may open up to
 *   ADM_ROOT_RESERVE connections over max_clients: its lookups are never
 *   starved by what other users hold.
 */
#ifndef IBRESD_ADMISSION_H
#define IBRESD_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ADM_ROOT_RESERVE 16 /* root's connections over max_clients */
#define ADM_BUCKETS 256     /* uid hash buckets */

/* One uid's share of the connections; each connection holds a reference. */
struct adm_uid {
	struct adm_uid *next;
	uid_t uid;
	unsigned n;
	unsigned unread; /* sockets kept for a passed descriptor unread (passed.h) */
};

struct admission {
	struct adm_uid *buckets[ADM_BUCKETS];
	unsigned n_uids;
};

void admission_init(struct admission *a);
/* Free every entry (connections must hold none any more). */
void admission_fini(struct admission *a);

/* Count one more connection of @uid: its entry, or NULL without memory. */
struct adm_uid *admission_get(struct admission *a, uid_t uid);
/* One connection of @u fewer; frees the entry when nothing holds it. */
void admission_put(struct admission *a, struct adm_uid *u);
/* One socket more, or fewer, kept for a descriptor @u's peer has not read
 * (passed.h): it holds the entry too, but is no connection of the quota. */
void admission_unread_get(struct adm_uid *u);
void admission_unread_put(struct admission *a, struct adm_uid *u);
/* Connections @uid holds now. */
unsigned admission_count(const struct admission *a, uid_t uid);

/* The per-uid quota in effect: @per_uid, or a quarter of @max_clients (at least 1) when 0. */
unsigned admission_quota(unsigned max_clients, unsigned per_uid);

/* What a new connection from @uid needs before it is served. */
enum adm_need {
	ADM_ROOM,     /* nothing: below every bound */
	ADM_OWN_SLOT, /* @uid is at its quota: one of its own must go, else refuse */
	ADM_ANY_SLOT, /* the socket is full: someone's must go (adm_pick), else refuse */
};

enum adm_need admission_need(const struct admission *a, uid_t uid, unsigned n_clients,
			     unsigned max_clients, unsigned quota);

/* With ADM_ANY_SLOT and no connection to close: may @uid come in all the same? */
bool admission_over_max(uid_t uid, unsigned n_clients, unsigned max_clients);

/* Choosing the connection to close for a newcomer. Offer every connection that waits for
 * nothing from the daemon, oldest first (@unknown: root's by SO_PEERCRED, its real uid
 * not known); the pick is the oldest of the uid holding the most, never root's for
 * another uid (but an @unknown one while root holds more than @quota), root's last. */
struct adm_pick {
	uid_t newcomer;
	bool own_only; /* ADM_OWN_SLOT: the newcomer's own */
	unsigned quota; /* root's share: past it, its @unknown ones go as any uid's */
	void *best;
	unsigned best_n;
	bool best_root;
};

void adm_pick_init(struct adm_pick *p, uid_t newcomer, bool own_only, unsigned quota);
void adm_pick_offer(struct adm_pick *p, void *conn, const struct adm_uid *owner, bool unknown);
/* The connection to close, or NULL. */
void *adm_pick_result(const struct adm_pick *p);

#endif
