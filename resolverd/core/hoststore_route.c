// SPDX-License-Identifier: MIT
/*
 * The host store's paths (hoststore.h): the path from a local endpoint to an
 * endpoint record, cached for route_ttl. Few of the hosts a directory holds
 * are ever talked to, so a path is not a field of every record (8 bytes an
 * endpoint, 64 an eight-rail host) but an entry of a table of its own,
 * chained by the record it leads to; a record's `routed` bit says whether
 * the table may hold any of its paths, so that a record never talked to is
 * freed or replaced without a look.
 */
#include "core/hoststore_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROUTES_MIN 16u

static unsigned route_bucket(const struct host *h, unsigned mask)
{
	uint64_t a = (uint64_t)(uintptr_t)h / HOST_ALIGN;

	return (unsigned)((a * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & mask;
}

/* @p into the bucket of its record in @table (@mask + 1 buckets). */
static void route_link(struct host_path **table, unsigned mask, struct host_path *p)
{
	unsigned b = route_bucket(p->owner, mask);

	p->next = table[b];
	table[b] = p;
}

/* Room for one more path: as many buckets as paths, at least ROUTES_MIN. */
static int routes_reserve(struct host_store *s)
{
	unsigned cap = s->routes ? s->route_mask + 1 : 0, ncap = cap ? cap * 2 : ROUTES_MIN;
	struct host_path **nb;

	if (s->routes && s->n_paths + 1 <= cap)
		return 0;
	if (ncap > UINT32_MAX / 2)
		return -ENOMEM;
	nb = calloc(ncap, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (unsigned i = 0; i < cap; i++)
		for (struct host_path *p = s->routes[i], *next; p; p = next) {
			next = p->next;
			route_link(nb, ncap - 1, p);
		}
	free(s->routes);
	s->routes = nb;
	s->route_mask = ncap - 1;
	return 0;
}

static struct host_path **route_find(const struct host_store *s, const struct host *h, int ep)
{
	struct host_path **pp;

	if (!h->routed || !s->routes)
		return NULL;
	for (pp = &s->routes[route_bucket(h, s->route_mask)]; *pp; pp = &(*pp)->next)
		if ((*pp)->owner == h && (*pp)->ep == ep)
			return pp;
	return NULL;
}

static void route_free(struct host_store *s, struct host_path **pp)
{
	struct host_path *p = *pp;

	*pp = p->next;
	free(p);
	s->n_paths--;
}

const struct ibres_path_record *host_route(const struct host_store *s, const struct host *h, int ep,
					   uint64_t now_ms)
{
	struct host_path **pp = route_find(s, h, ep);

	return pp && (*pp)->expires_ms > now_ms ? &(*pp)->path : NULL;
}

int store_set_route(struct host_store *s, struct host *h, int ep,
		    const struct ibres_path_record *path, uint32_t ttl_s, uint64_t now_ms)
{
	struct host_path **pp = route_find(s, h, ep), *p;

	if (pp) {
		p = *pp;
	} else {
		if (routes_reserve(s) < 0)
			return -ENOMEM;
		p = malloc(sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->owner = h;
		p->ep = ep;
		route_link(s->routes, s->route_mask, p);
		s->n_paths++;
		h->routed = 1;
	}
	p->path = *path;
	p->expires_ms = deadline(now_ms, ttl_s);
	return 0;
}

/* Drop the paths @pred selects from bucket @b (@owner NULL: of any record). */
static unsigned routes_drop_in(struct host_store *s, unsigned b, const struct host *owner,
			       bool (*pred)(const struct host_path *p, const void *arg),
			       const void *arg)
{
	unsigned n = 0;

	for (struct host_path **pp = &s->routes[b]; *pp;) {
		if ((!owner || (*pp)->owner == owner) && pred(*pp, arg)) {
			route_free(s, pp);
			n++;
		} else {
			pp = &(*pp)->next;
		}
	}
	return n;
}

struct drop_filter {
	int ep;
	const uint8_t *gid;
};

static bool pred_drop(const struct host_path *p, const void *arg)
{
	const struct drop_filter *f = arg;
	const struct host *h = p->owner;
	uint8_t buf[16];

	return (f->ep < 0 || p->ep == f->ep) &&
	       (!f->gid || (h->n_gids && !memcmp(h_gid(h, 0, buf), f->gid, 16)));
}

unsigned store_drop_routes(struct host_store *s, int ep, const uint8_t *gid)
{
	struct drop_filter f = {ep, gid};
	unsigned n = 0;

	for (unsigned b = 0; s->routes && b <= s->route_mask; b++)
		n += routes_drop_in(s, b, NULL, pred_drop, &f);
	return n;
}

static bool pred_any(const struct host_path *p, const void *arg)
{
	(void)p;
	(void)arg;
	return true;
}

void hs_routes_drop(struct host_store *s, struct host *h)
{
	if (!h->routed)
		return;
	if (s->routes)
		routes_drop_in(s, route_bucket(h, s->route_mask), h, pred_any, NULL);
	h->routed = 0;
}

void hs_routes_move(struct host_store *s, struct host *from, struct host *to)
{
	struct host_path *moved = NULL;

	if (!from->routed || !s->routes)
		return;
	for (struct host_path **pp = &s->routes[route_bucket(from, s->route_mask)]; *pp;) {
		struct host_path *p = *pp;

		if (p->owner != from) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->owner = to;
		p->next = moved;
		moved = p;
	}
	for (struct host_path *p = moved, *next; p; p = next) {
		next = p->next;
		route_link(s->routes, s->route_mask, p);
	}
	from->routed = 0;
	to->routed = moved != NULL;
}

static bool pred_expired_route(const struct host_path *p, const void *arg)
{
	return p->expires_ms <= *(const uint64_t *)arg;
}

void hs_routes_expire(struct host_store *s, uint64_t now_ms)
{
	for (unsigned b = 0; s->routes && b <= s->route_mask; b++)
		routes_drop_in(s, b, NULL, pred_expired_route, &now_ms);
}

void hs_routes_fini(struct host_store *s)
{
	for (unsigned b = 0; s->routes && b <= s->route_mask; b++)
		while (s->routes[b])
			route_free(s, &s->routes[b]);
	free(s->routes);
	s->routes = NULL;
	s->route_mask = 0;
}

size_t hs_routes_bytes(const struct host_store *s)
{
	return (s->routes ? (size_t)(s->route_mask + 1) * sizeof(*s->routes) : 0) +
	       s->n_paths * sizeof(struct host_path);
}

int hs_routes_check(const struct host_store *s,
		    bool (*held)(const struct host_store *s, const struct host *h))
{
	unsigned long n = 0;

	for (unsigned b = 0; s->routes && b <= s->route_mask; b++)
		for (const struct host_path *p = s->routes[b]; p; p = p->next) {
			/* every path leads to a record the store holds, in its
			 * bucket, and marked as routed */
			if (route_bucket(p->owner, s->route_mask) != b || !p->owner->routed ||
			    !held(s, p->owner))
				return -EUCLEAN;
			n++;
		}
	return n == s->n_paths ? 0 : -EUCLEAN;
}
