// SPDX-License-Identifier: MIT
/* The local endpoints and their identity (see endpoints.h). */
#include "core/endpoints.h"

#include <errno.h>
#include <string.h>

#include "core/clock.h"

void endpoints_init(struct endpoints *e, struct host_store *store)
{
	memset(e, 0, sizeof(*e));
	e->store = store;
}

int endpoints_listen(struct endpoints *e, endpoint_listener_fn fn, void *arg)
{
	if (e->n_listeners >= ENDPOINT_LISTENERS_MAX)
		return -ENOSPC;
	e->listeners[e->n_listeners].fn = fn;
	e->listeners[e->n_listeners].arg = arg;
	e->n_listeners++;
	return 0;
}

void endpoints_unlisten(struct endpoints *e, endpoint_listener_fn fn, void *arg)
{
	for (unsigned i = 0; i < e->n_listeners; i++)
		if (e->listeners[i].fn == fn && e->listeners[i].arg == arg) {
			e->listeners[i] = e->listeners[--e->n_listeners];
			return;
		}
}

void endpoints_load(struct endpoints *e, const struct ibres_config *cfg)
{
	unsigned was = e->n;

	e->n = cfg->n_eps;
	for (unsigned i = 0; i < e->n; i++) {
		struct endpoint *ep = &e->ep[i];

		/* a place keeps the port it was opened on until a restart, and
		 * so its state and counters (a reload that would give it
		 * another port is refused: config_reload_check()) */
		if (i >= was) {
			ep->down = false; /* a new place: its port's state is news */
			memset(ep->counters, 0, sizeof(ep->counters));
		}
		ep->index = i;
		ep->cfg = cfg->eps[i];
	}
	/* what endpoints the reload removed heard, and the paths from them, go:
	 * no rail reaches it now */
	for (unsigned i = e->n; i < was; i++) {
		store_forget_fabric(e->store, i);
		store_drop_routes(e->store, (int)i, NULL);
	}
}

unsigned endpoint_rails(const struct endpoints *e, const struct endpoint *ep,
			uint8_t gids[HOST_RAILS_MAX][16])
{
	unsigned n = 0, others = 0;

	for (unsigned i = 0; i < e->n; i++) {
		const struct endpoint *o = &e->ep[i];
		unsigned at = 0;

		if (!cfg_one_host(&o->cfg, &ep->cfg) || !o->cfg.id.n_gids)
			continue;
		others += o != ep;
		/* insertion into an ascending, distinct list */
		while (at < n && memcmp(gids[at], o->cfg.id.gids[0], 16) < 0)
			at++;
		if ((at < n && !memcmp(gids[at], o->cfg.id.gids[0], 16)) || n == HOST_RAILS_MAX)
			continue;
		memmove(gids[at + 1], gids[at], (size_t)(n - at) * 16);
		memcpy(gids[at], o->cfg.id.gids[0], 16);
		n++;
	}
	return others ? n : 0;
}

/* Store @ep's identity as a LOCAL record of its host. */
static int publish_one(struct endpoints *e, const struct endpoint *ep, uint64_t now)
{
	uint8_t gids[HOST_RAILS_MAX][16];
	unsigned n = endpoint_rails(e, ep, gids);

	return store_insert(e->store, &ep->cfg.id,
			    &(struct store_put){ .origin = IBRES_ORIGIN_LOCAL,
						 .heard_on = 1u << ep->index,
						 .rails = n ? rails_digest((const uint8_t(*)[16])gids, n)
							    : 0 },
			    now, NULL);
}

int endpoints_publish(struct endpoints *e, unsigned *failed_ep)
{
	uint64_t now = now_ms();

	for (unsigned i = 0; i < e->n; i++) {
		int ret = publish_one(e, &e->ep[i], now);

		if (ret) {
			*failed_ep = i;
			return ret;
		}
	}
	return 0;
}

static unsigned changes_of(const struct ibres_hostrec *a, const struct ibres_hostrec *b)
{
	unsigned c = 0;

	if (!hostrec_same_addrs(a, b))
		c |= EP_CHANGE_ADDRS;
	if (a->lid != b->lid || a->pkey != b->pkey)
		c |= EP_CHANGE_PORT;
	if (a->n_gids != b->n_gids || (a->n_gids && memcmp(a->gids[0], b->gids[0], 16)))
		c |= EP_CHANGE_GID;
	if (a->qpn != b->qpn)
		c |= EP_CHANGE_QPN;
	/* names and other GIDs come from the config only: a reload */
	return c;
}

void endpoint_port_id(const struct ibres_hostrec *id, struct endpoint_port_id *out)
{
	memset(out, 0, sizeof(*out));
	if (id->n_gids)
		memcpy(out->gid, id->gids[0], 16);
	out->lid = id->lid;
	out->pkey = id->pkey;
}

/* @ep was @was: the paths from it carry its old GID, LID and P_Key; the
 * peers it heard in another partition are none of this one's (those that
 * are members too are heard again). */
static void port_id_moved(struct endpoints *e, const struct endpoint *ep,
			  const struct endpoint_port_id *was)
{
	struct endpoint_port_id now;

	endpoint_port_id(&ep->cfg.id, &now);
	if (!memcmp(&now, was, sizeof(now)))
		return;
	if (!hostrec_same_partition(now.pkey, was->pkey))
		store_forget_fabric(e->store, ep->index);
	store_drop_routes(e->store, (int)ep->index, NULL);
}

void endpoints_reloaded(struct endpoints *e, const struct endpoint_port_id *was, unsigned n)
{
	for (unsigned i = 0; i < n && i < e->n; i++)
		port_id_moved(e, &e->ep[i], &was[i]);
}

int endpoint_update(struct endpoints *e, struct endpoint *ep, const struct ibres_hostrec *id)
{
	struct endpoint_port_id was;
	struct ibres_hostrec old = ep->cfg.id;
	uint64_t now = now_ms();
	unsigned changes = changes_of(&old, id);
	int ret = 0;

	if (!changes)
		return 0;
	ep->cfg.id = *id;
	/* a new GID is a new identity: local records are never replaced by
	 * another identity's, so the old ones go first and all come back */
	if (changes & EP_CHANGE_GID) {
		store_remove_origin(e->store, IBRES_ORIGIN_LOCAL);
		for (unsigned i = 0; i < e->n; i++) {
			int r = publish_one(e, &e->ep[i], now);

			if (r && !ret)
				ret = r;
		}
	} else {
		/* same identity: replaced in place, keys it no longer has go */
		ret = publish_one(e, ep, now);
	}
	endpoint_port_id(&old, &was);
	port_id_moved(e, ep, &was);
	for (unsigned i = 0; i < e->n_listeners; i++)
		e->listeners[i].fn(e->listeners[i].arg, ep, &old, changes);
	return ret ? ret : (int)changes;
}

void endpoint_set_down(struct endpoints *e, struct endpoint *ep, bool down)
{
	if (ep->down == down)
		return;
	ep->down = down;
	if (down) {
		store_forget_fabric(e->store, ep->index);
		store_drop_routes(e->store, (int)ep->index, NULL);
	}
	for (unsigned i = 0; i < e->n_listeners; i++)
		e->listeners[i].fn(e->listeners[i].arg, ep, &ep->cfg.id, EP_CHANGE_STATE);
}

struct endpoint *endpoint_by_key(struct endpoints *e, const struct host_key *k)
{
	for (unsigned i = 0; i < e->n; i++)
		if (hostrec_has_key(&e->ep[i].cfg.id, k->type, k->data, k->len))
			return &e->ep[i];
	return NULL;
}

struct endpoint *endpoint_for_dest(struct endpoints *e, const struct host_key *dst)
{
	for (unsigned i = 0; i < e->n; i++) {
		const struct ibres_hostrec *id = &e->ep[i].cfg.id;

		if ((dst->type == IBRES_KEY_IPV4 && id->n_v4) ||
		    (dst->type == IBRES_KEY_IPV6 && id->n_v6) ||
		    (dst->type != IBRES_KEY_IPV4 && dst->type != IBRES_KEY_IPV6))
			return &e->ep[i];
	}
	return NULL;
}

bool endpoints_own_gid(const struct endpoints *e, const uint8_t gid[16])
{
	for (unsigned i = 0; i < e->n; i++)
		if (!memcmp(e->ep[i].cfg.id.gids[0], gid, 16))
			return true;
	return false;
}
