// SPDX-License-Identifier: MIT
#include "engine/resolver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fabric.h"
#include "core/hosts_file.h"
#include "core/log.h"
#include "os/netlink.h"
#include "ib/path.h"
#include "ib/sa.h"

#define SWEEP_INTERVAL_MS 1000

static int key_of_host(const struct ibres_hostrec *h, const struct cache_key *k)
{
	char name[IBRES_NAME_MAX + 1];
	unsigned i;

	switch (k->type) {
	case IBRES_KEY_NAME:
		memcpy(name, k->data, k->len);
		name[k->len] = '\0';
		return hostrec_has_name(h, name);
	case IBRES_KEY_IPV4:
		for (i = 0; i < h->n_v4; i++)
			if (!memcmp(&h->v4[i], k->data, 4))
				return 1;
		return 0;
	case IBRES_KEY_IPV6:
		for (i = 0; i < h->n_v6; i++)
			if (!memcmp(&h->v6[i], k->data, 16))
				return 1;
		return 0;
	case IBRES_KEY_GID:
		for (i = 0; i < h->n_gids; i++)
			if (!memcmp(h->gids[i], k->data, 16))
				return 1;
		return 0;
	case IBRES_KEY_LID:
		return h->lid && k->len == 2 && h->lid == (k->data[0] << 8 | k->data[1]);
	}
	return 0;
}

struct endpoint *endpoint_by_key(struct ibresd *d, const struct cache_key *k)
{
	for (unsigned i = 0; i < d->n_eps; i++)
		if (key_of_host(&d->eps[i].cfg.id, k))
			return &d->eps[i];
	return NULL;
}

struct endpoint *endpoint_for_dest(struct ibresd *d, const struct cache_key *dst)
{
	for (unsigned i = 0; i < d->n_eps; i++) {
		const struct ibres_hostrec *id = &d->eps[i].cfg.id;

		if ((dst->type == IBRES_KEY_IPV4 && id->n_v4) ||
		    (dst->type == IBRES_KEY_IPV6 && id->n_v6) ||
		    (dst->type != IBRES_KEY_IPV4 && dst->type != IBRES_KEY_IPV6))
			return &d->eps[i];
	}
	return NULL;
}

/* Local endpoints and static hosts never expire: they are the truth. */
static int load_authoritative(struct ibresd *d)
{
	uint64_t now = now_ms();
	int ret;

	for (unsigned i = 0; i < d->n_eps; i++) {
		ret = cache_insert_host(&d->cache, &d->eps[i].cfg.id, IBRES_ORIGIN_LOCAL, 0, now);
		if (ret) {
			log_err("endpoint %s: cannot cache its identity: %s", d->eps[i].cfg.label,
				strerror(-ret));
			return ret;
		}
	}
	for (unsigned i = 0; i < d->static_hosts.n_hosts; i++) {
		ret = cache_insert_host(&d->cache, &d->static_hosts.hosts[i], IBRES_ORIGIN_STATIC,
					0, now);
		if (ret) {
			log_err("static host %s: cannot cache it: %s",
				d->static_hosts.hosts[i].names[0], strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static void load_endpoints(struct ibresd *d)
{
	d->n_eps = d->cfg.n_eps;
	for (unsigned i = 0; i < d->n_eps; i++) {
		struct endpoint *ep = &d->eps[i];

		/* counters survive a reload of the same endpoint */
		if (strcmp(ep->cfg.label, d->cfg.eps[i].label))
			memset(ep->counters, 0, sizeof(ep->counters));
		ep->index = i;
		ep->cfg = d->cfg.eps[i];
		sa_apply_endpoint(d, ep); /* a device's port data over the config's */
		netlink_merge(d, ep); /* its interfaces' addresses after the config's */
	}
}

int resolver_init(struct ibresd *d)
{
	int ret;

	ret = cache_init(&d->cache, d->cfg.cache_size);
	if (ret)
		return ret;
	load_endpoints(d);
	ret = load_authoritative(d);
	if (ret) {
		cache_fini(&d->cache);
		return ret;
	}
	d->sweep_timer.cb = resolver_sweep;
	loop_timer_arm(&d->loop, &d->sweep_timer, now_ms() + SWEEP_INTERVAL_MS);
	return 0;
}

void resolver_fini(struct ibresd *d)
{
	loop_timer_cancel(&d->loop, &d->sweep_timer);
	cache_fini(&d->cache);
}

int resolver_reload(struct ibresd *d, struct ibres_config *cfg, struct cfg_hosts *hosts)
{
	struct cache fresh;
	int ret;

	/* Build the new authoritative content first, so a failure changes nothing. */
	ret = cache_init(&fresh, cfg->cache_size);
	if (ret)
		return ret;
	for (unsigned i = 0; i < cfg->n_eps && !ret; i++)
		ret = cache_insert_host(&fresh, &cfg->eps[i].id, IBRES_ORIGIN_LOCAL, 0, 0);
	for (unsigned i = 0; i < hosts->n_hosts && !ret; i++)
		ret = cache_insert_host(&fresh, &hosts->hosts[i], IBRES_ORIGIN_STATIC, 0, 0);
	cache_fini(&fresh);
	if (ret)
		return ret;

	/* Learned entries stay; what the old config made authoritative goes,
	 * and the new truth overwrites any learned key that it claims. */
	cache_remove_origin(&d->cache, IBRES_ORIGIN_LOCAL);
	cache_remove_origin(&d->cache, IBRES_ORIGIN_STATIC);
	d->cfg = *cfg;
	hosts_free(&d->static_hosts);
	d->static_hosts = *hosts;
	memset(hosts, 0, sizeof(*hosts));
	load_endpoints(d);
	return load_authoritative(d);
}

void resolver_sweep(struct loop_timer *t)
{
	struct ibresd *d = container_of(t, struct ibresd, sweep_timer);
	unsigned n = cache_sweep(&d->cache, now_ms());

	if (n)
		log_debug("cache sweep: %u entries expired", n);
	loop_timer_arm(&d->loop, t, now_ms() + SWEEP_INTERVAL_MS);
}

enum lookup_result resolver_lookup(struct ibresd *d, struct cache_waiter *w,
				   const struct cache_key *k, bool nodelay,
				   struct cache_entry **out)
{
	uint64_t now = now_ms();
	struct cache_entry *e = cache_lookup(&d->cache, k, now);

	if (e && (e->state == IBRES_STATE_RESOLVED || e->state == IBRES_STATE_ROUTED)) {
		*out = e;
		return LOOKUP_FOUND;
	}
	if (e && e->state == IBRES_STATE_NEGATIVE)
		return e->neg_status == -ETIMEDOUT ? LOOKUP_TIMEDOUT : LOOKUP_NOTFOUND;
	if (!fabric_may_query(d, k))
		return LOOKUP_NOTFOUND;
	if (!e) {
		e = cache_get_or_create(&d->cache, k, now);
		if (!e)
			return LOOKUP_ERROR;
	}
	/* a second asker joins the query in flight (and is counted) */
	if ((e->state == IBRES_STATE_INIT || e->state == IBRES_STATE_QUERYING) &&
	    fabric_query(d, e) < 0)
		return LOOKUP_ERROR;
	if (nodelay)
		return LOOKUP_NOTFOUND;
	cache_add_waiter(e, w);
	return LOOKUP_WAIT;
}

const struct ibres_path_record *resolver_route(struct ibresd *d, struct endpoint *ep,
					       struct cache_entry *e, bool *cached)
{
	struct ibres_path_record path;
	struct path_params pp;
	uint64_t now = now_ms();

	if (e->state == IBRES_STATE_ROUTED && e->route_ep == (int)ep->index &&
	    e->route_expires_ms > now) {
		*cached = true;
		return &e->route;
	}
	*cached = false;
	fabric_path_params(d, ep, e->host, &pp);
	path_build(&path, &ep->cfg, &e->host->rec, &pp);
	cache_set_route(e, (int)ep->index, &path, d->cfg.route_ttl_s, now);
	return &e->route;
}

void resolver_local_changed(struct ibresd *d, struct endpoint *ep, bool gid_changed)
{
	uint64_t now = now_ms();
	int ret;

	/* a new GID is a new identity: the old record must go first (local
	 * records are never replaced by another identity's) */
	if (gid_changed)
		cache_remove_origin(&d->cache, IBRES_ORIGIN_LOCAL);
	for (unsigned i = 0; i < d->n_eps; i++) {
		if (!gid_changed && &d->eps[i] != ep)
			continue;
		ret = cache_insert_host(&d->cache, &d->eps[i].cfg.id, IBRES_ORIGIN_LOCAL, 0, now);
		if (ret)
			log_err("endpoint %s: cannot cache its identity: %s", d->eps[i].cfg.label,
				strerror(-ret));
	}
	/* paths from it carry its old LID or GID */
	cache_drop_routes(&d->cache, (int)ep->index, NULL);
}

enum lookup_result resolver_route_wait(struct ibresd *d, struct cache_waiter *w,
				       struct endpoint *ep, struct cache_entry *e, int *err)
{
	*err = 0;
	/* loopback paths are built locally, as are paths of endpoints without
	 * an SA port */
	if (d->cfg.route_prot != ROUTE_PROT_SA || !e->host ||
	    e->host->origin == IBRES_ORIGIN_LOCAL || !sa_route_available(d, ep))
		return LOOKUP_FOUND;
	if (e->state == IBRES_STATE_ROUTED && e->route_ep == (int)ep->index &&
	    e->route_expires_ms > now_ms())
		return LOOKUP_FOUND;
	*err = sa_route_query(d, ep, e);
	if (*err)
		return LOOKUP_ERROR;
	cache_add_waiter(e, w);
	return LOOKUP_WAIT;
}
