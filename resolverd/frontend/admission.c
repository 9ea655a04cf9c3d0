// SPDX-License-Identifier: MIT
#include "frontend/admission.h"

#include <stdlib.h>
#include <string.h>

static unsigned bucket(uid_t uid)
{
	return (unsigned)((uid * 2654435761u) >> 24) % ADM_BUCKETS;
}

void admission_init(struct admission *a)
{
	memset(a, 0, sizeof(*a));
}

void admission_fini(struct admission *a)
{
	for (unsigned i = 0; i < ADM_BUCKETS; i++) {
		while (a->buckets[i]) {
			struct adm_uid *u = a->buckets[i];

			a->buckets[i] = u->next;
			free(u);
		}
	}
	a->n_uids = 0;
}

static struct adm_uid *find(const struct admission *a, uid_t uid)
{
	struct adm_uid *u;

	for (u = a->buckets[bucket(uid)]; u; u = u->next)
		if (u->uid == uid)
			return u;
	return NULL;
}

struct adm_uid *admission_get(struct admission *a, uid_t uid)
{
	struct adm_uid *u = find(a, uid);

	if (!u) {
		unsigned b = bucket(uid);

		u = calloc(1, sizeof(*u));
		if (!u)
			return NULL;
		u->uid = uid;
		u->next = a->buckets[b];
		a->buckets[b] = u;
		a->n_uids++;
	}
	u->n++;
	return u;
}

/* @u freed if no connection and no kept socket holds it. */
static void entry_release(struct admission *a, struct adm_uid *u)
{
	struct adm_uid **pp;

	if (u->n || u->unread)
		return;
	for (pp = &a->buckets[bucket(u->uid)]; *pp; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			a->n_uids--;
			free(u);
			return;
		}
	}
}

void admission_put(struct admission *a, struct adm_uid *u)
{
	if (u) {
		u->n--;
		entry_release(a, u);
	}
}

void admission_unread_get(struct adm_uid *u)
{
	u->unread++;
}

void admission_unread_put(struct admission *a, struct adm_uid *u)
{
	u->unread--;
	entry_release(a, u);
}

unsigned admission_count(const struct admission *a, uid_t uid)
{
	const struct adm_uid *u = find(a, uid);

	return u ? u->n : 0;
}

unsigned admission_quota(unsigned max_clients, unsigned per_uid)
{
	if (per_uid)
		return per_uid;
	return max_clients / 4 ? max_clients / 4 : 1;
}

enum adm_need admission_need(const struct admission *a, uid_t uid, unsigned n_clients,
			     unsigned max_clients, unsigned quota)
{
	if (uid != 0 && admission_count(a, uid) >= quota)
		return ADM_OWN_SLOT;
	if (n_clients >= max_clients)
		return ADM_ANY_SLOT;
	return ADM_ROOM;
}

bool admission_over_max(uid_t uid, unsigned n_clients, unsigned max_clients)
{
	return uid == 0 && n_clients < max_clients + ADM_ROOT_RESERVE;
}

void adm_pick_init(struct adm_pick *p, uid_t newcomer, bool own_only, unsigned quota)
{
	memset(p, 0, sizeof(*p));
	p->newcomer = newcomer;
	p->own_only = own_only;
	p->quota = quota;
}

void adm_pick_offer(struct adm_pick *p, void *conn, const struct adm_uid *owner, bool unknown)
{
	/* root's, sheltered; but for another uid's newcomer, one of unknown
	 * real uid past root's share (admission.h), which ranks as any uid's */
	bool root = owner->uid == 0 && (p->newcomer == 0 || !unknown || owner->n <= p->quota);

	if (p->own_only && owner->uid != p->newcomer)
		return;
	if (root && p->newcomer != 0)
		return;
	/* offered oldest first: a later one wins only by a strictly better rank */
	if (p->best) {
		if (root != p->best_root) {
			if (root)
				return;
		} else if (owner->n <= p->best_n) {
			return;
		}
	}
	p->best = conn;
	p->best_n = owner->n;
	p->best_root = root;
}

void *adm_pick_result(const struct adm_pick *p)
{
	return p->best;
}
