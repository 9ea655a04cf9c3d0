// SPDX-License-Identifier: MIT
#include "engine/resolver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fabric/fabric.h"
#include "core/hosts_file.h"
#include "core/log.h"
#include "os/netlink.h"
#include "ib/path.h"
#include "ib/sa.h"
#include "engine/pending.h"

#define SWEEP_INTERVAL_MS 1000

static void resolver_sweep(struct loop_timer *t);

/* Wait after attempt k (0-based): linear backoff, 1×, 1.5×, 2×… timeout. */
static uint64_t attempt_wait(const struct ibres_config *cfg, unsigned k)
{
	return (uint64_t)cfg->timeout_ms + (uint64_t)cfg->timeout_ms * k / 2;
}

uint64_t resolver_bound_ms(const struct ibres_config *cfg)
{
	uint64_t total = 0;

	for (unsigned k = 0; k <= cfg->retries; k++)
		total += attempt_wait(cfg, k) + attempt_wait(cfg, k) / 10;
	return total;
}

/* A query whose key has a host now ends; its requests look again. True
 * when it ended. A hint's asks a host on the fabric that heard the hint:
 * one of its endpoints heard there ends it (another rail's may be known
 * already, which is why it was asked). */
static bool end_if_known(struct resolver *r, struct pending_query *q, uint64_t now)
{
	if (q->has_at ? !fabric_holds_at(r->fabric, &q->key, &q->at)
		      : !store_lookup(r->store, &q->key, now, false))
		return false;
	pending_end(q, 0);
	return true;
}

static void end_answered(struct resolver *r, const struct host_key *keys, unsigned n)
{
	uint64_t now = now_ms();

	for (unsigned i = 0; i < n; i++) {
		struct pending_query *q = pending_find(&r->pending, &keys[i]);

		if (q)
			end_if_known(r, q, now);
	}
}

static void end_all_answered(struct resolver *r)
{
	struct list_node *pos, *tmp;
	uint64_t now = now_ms();

	list_for_each_safe(pos, tmp, &r->pending.all)
	{
		end_if_known(r, list_entry(pos, struct pending_query, node), now);
	}
}

/* The fabric stored a peer's record. */
static void on_learned(void *arg, const struct ibres_hostrec *h)
{
	struct resolver *r = arg;
	struct host_key keys[HOST_KEYS_MAX];

	if (!r->pending.n)
		return; /* nothing asked: a boot storm's common case */
	/* a LID is never asked on the fabric: its fabric does not matter here */
	end_answered(r, keys, host_keys_of(h, HOST_FABRIC_NONE, keys));
}

static int on_query_key(void *arg, uint64_t tid, struct host_key *k)
{
	struct resolver *r = arg;
	struct pending_query *q = pending_find_tid(&r->pending, tid);

	if (!q)
		return -ENOENT;
	*k = q->key;
	return 0;
}

/* The name @k asked on fabric port @port, unanswered (struct rail_miss). */
static void rail_miss_add(struct resolver *r, const struct host_key *k, unsigned port, uint64_t now)
{
	r->rail_misses[r->rail_miss_next++ % RAIL_MISSES_MAX] =
		(struct rail_miss){.term = host_digest_term(k),
				   .port = port,
				   .until_ms = now + (uint64_t)r->cfg->negative_ttl_s * 1000};
}

static bool rail_missed(const struct resolver *r, const struct host_key *k, unsigned port,
			uint64_t now)
{
	uint64_t term = host_digest_term(k);

	for (unsigned i = 0; i < RAIL_MISSES_MAX; i++)
		if (r->rail_misses[i].term == term && r->rail_misses[i].port == port &&
		    now < r->rail_misses[i].until_ms)
			return true;
	return false;
}

/* How long attempt @k of @q waits: a quarter of a client's when a hint's
 * (nobody waits; the host was named, and its REPLY or our REQUEST lost
 * at a lossy boot is best asked again soon, at the cost of a duplicate
 * unicast pair when it was only slow), at least 10 ms. */
static uint64_t hint_wait(const struct ibres_config *cfg, const struct pending_query *q,
			  unsigned k)
{
	uint64_t w = attempt_wait(cfg, k);

	if (!q->has_at || !q->hinted) /* a client's, or asked on one rail for one */
		return w;
	return w / 4 > 10 ? w / 4 : 10;
}

/* A query's timer: the next attempt, or the end of the bound. */
static void on_query_timer(struct pending_query *q, void *arg)
{
	struct resolver *r = arg;
	uint64_t now = now_ms();

	if (end_if_known(r, q, now))
		return; /* known meanwhile (a static host, an endpoint) */
	if (q->attempts > r->cfg->retries) {
		char key[HOST_KEY_STR_MAX];

		r->stats.query_timeouts++;
		log_debug("fabric: no answer for %s after %u attempts",
			  host_key_str(&q->key, key, sizeof(key)), q->attempts);
		/* a hint's query nobody waited for: the fetch does not ask that
		 * name again before negative_ttl, but a client does (a peer
		 * said it lives; the loss may have been ours) */
		store_set_negative(r->store, &q->key, r->cfg->negative_ttl_s,
				   q->has_at ? -EHOSTUNREACH : -ETIMEDOUT, now);
		if (q->has_at && q->at.group)
			rail_miss_add(r, &q->key, q->at.port, now);
		if (q->hinted)
			fabric_hint_unanswered(r->fabric, &q->key, &q->at);
		pending_end(q, -ETIMEDOUT);
		return;
	}
	r->stats.query_retries++;
	/* a hint's query stays with the host it named: a multicast from each
	 * node that lost a REPLY would reach every node (at 48,000 nodes,
	 * millions of datagrams each) */
	fabric_send_request_at(r->fabric, &q->key, q->tid, q->has_at ? &q->at : NULL);
	pending_arm(q, now + jitter_apply(&r->rng, hint_wait(r->cfg, q, q->attempts)));
	q->attempts++;
}

/* A new query for @k, its first attempt sent: to @at alone when not NULL
 * (@hinted: a hint's, else a rail's ask on its group), else the whole
 * fabric. NULL when the table is full or the timer cannot be armed. */
static struct pending_query *query_new(struct resolver *r, const struct host_key *k,
				       const struct fabric_at *at, bool hinted)
{
	struct pending_query *q = pending_add(&r->pending, k);

	if (!q)
		return NULL;
	q->attempts = 1;
	if (at) {
		q->has_at = true;
		q->hinted = hinted;
		q->at = *at;
	}
	if (pending_arm(q, now_ms() + jitter_apply(&r->rng, hint_wait(r->cfg, q, 0))) < 0) {
		pending_end(q, -ENOMEM);
		return NULL;
	}
	fabric_send_request_at(r->fabric, k, q->tid, at);
	return q;
}

/* Ask the fabric for @k, or join the query in flight; every attempt to @at
 * alone when a hint said where the host is. A client's lookup (@at NULL)
 * that joins a hint's query makes it a client's from then on: the whole
 * fabric at once and on a client's schedule (the host may not answer at
 * the address named), so that the client waits its own bound, never the
 * hint's and then its own. */
static struct pending_query *query_start_at(struct resolver *r, const struct host_key *k,
					    const struct fabric_at *at)
{
	struct pending_query *q = pending_find(&r->pending, k);

	if (q) {
		r->stats.queries_joined++;
		if (at && !q->hinted && !q->has_at) { /* not a rail's ask either */
			/* a client's query a peer then named the host in: asked as
			 * the client's still, its silence a loss all the same */
			q->hinted = true;
			q->at = *at;
		}
		if (!at && q->has_at) {
			q->has_at = false;
			q->attempts = 1;
			pending_arm(q, now_ms() + jitter_apply(&r->rng, attempt_wait(r->cfg, 0)));
			fabric_send_request(r->fabric, k, q->tid);
		}
		return q;
	}
	return query_new(r, k, at, true);
}

static struct pending_query *query_start(struct resolver *r, const struct host_key *k)
{
	return query_start_at(r, k, NULL);
}

/* Local endpoints and static hosts never expire: they are the truth. */
static int load_authoritative(struct resolver *r, const struct cfg_hosts *hosts)
{
	uint64_t now = now_ms();
	unsigned bad = 0;
	int ret;

	ret = endpoints_publish(r->eps, &bad);
	if (ret) {
		log_err("endpoint %s: cannot cache its identity: %s", r->eps->ep[bad].cfg.label,
			strerror(-ret));
		return ret;
	}
	for (unsigned i = 0; i < hosts->n_hosts; i++) {
		ret = store_insert(r->store, &hosts->hosts[i], &(struct store_put){ .origin = IBRES_ORIGIN_STATIC }, now, NULL);
		if (ret) {
			log_err("static host %s: cannot cache it: %s",
				hosts->hosts[i].names[0], strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The static hosts live in the store now; the parsed file (a fixed-size
 * record per line) goes, and only its count stays. */
static void forget_static_hosts(struct resolver *r, struct cfg_hosts *hosts)
{
	r->n_static_hosts = hosts->n_hosts;
	hosts_free(hosts);
}

static void load_endpoints(struct resolver *r)
{
	endpoints_load(r->eps, r->cfg);
	for (unsigned i = 0; i < r->eps->n; i++) {
		struct endpoint *ep = &r->eps->ep[i];

		/* before it is published: a device's port data over the
		 * config's, then its interfaces' addresses after the config's */
		sa_apply_endpoint(r->sa, ep);
		/* its QPN, a RoCE port's GID (none at start-up) */
		fabric_apply_endpoint(r->fabric, ep);
		netlink_merge(r->nl, ep, &ep->cfg.id);
	}
}

/* Tell readers of the shared directory what a key's absence means now. */
static void publish_scope(struct resolver *r)
{
	hostdir_set_scope(r->dir, fabric_authoritative_from(r->fabric), r->cfg->patterns[0],
			  sizeof(r->cfg->patterns[0]), r->cfg->n_patterns);
}

/* The fabric's directory became complete or incomplete. */
static void on_scope_changed(void *arg)
{
	publish_scope(arg);
}

/* A peer holds a host we lack (a cluster name: the fabric checked), or
 * lack on the fabric of @at (another rail heard it): asked like a miss,
 * with nobody waiting. A name that did not answer lately (a negative
 * answer) is not asked again before that answer expires. */
static void on_hint(void *arg, const struct host_key *k, const struct fabric_at *at)
{
	struct resolver *r = arg;
	uint64_t now = now_ms();

	if ((!at && store_lookup(r->store, k, now, false)) || store_negative(r->store, k, now, false))
		return;
	query_start_at(r, k, at);
}

struct fabric_events resolver_fabric_events(struct resolver *r)
{
	return (struct fabric_events){.learned = on_learned,
				      .query_key = on_query_key,
				      .scope_changed = on_scope_changed,
				      .hint = on_hint,
				      .arg = r};
}

/* A rail went down or came back: the fabric counts the directory incomplete
 * again (it forgot, or asks everyone again); so do the readers. The fabric,
 * registered first, has heard of it already. */
static void on_endpoint(void *arg, const struct endpoint *ep, const struct ibres_hostrec *old,
			unsigned changes)
{
	(void)ep;
	(void)old;
	if (changes & EP_CHANGE_STATE)
		publish_scope(arg);
}

void resolver_attach(struct resolver *r, struct sa_client *sa, struct fabric *f)
{
	r->sa = sa;
	r->fabric = f;
	if (!r->listening && endpoints_listen(r->eps, on_endpoint, r) == 0)
		r->listening = true;
	publish_scope(r);
}

void resolver_publish(struct resolver *r, struct hostdir_pub *dir)
{
	r->dir = dir;
	publish_scope(r);
}

int resolver_init(struct resolver *r, const struct resolver_deps *deps, struct cfg_hosts *hosts)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->cfg = deps->cfg;
	r->loop = deps->loop;
	r->store = deps->store;
	r->eps = deps->eps;
	r->nl = deps->nl;
	ret = store_init(r->store, r->cfg->cache_size);
	if (ret)
		return ret;
	endpoints_init(r->eps, r->store);
	jitter_seed(&r->rng);
	pending_init(&r->pending, r->loop, on_query_timer, r);
	load_endpoints(r);
	ret = load_authoritative(r, hosts);
	forget_static_hosts(r, hosts);
	if (ret) {
		store_fini(r->store);
		return ret;
	}
	r->sweep_timer.cb = resolver_sweep;
	loop_timer_arm(r->loop, &r->sweep_timer, now_ms() + SWEEP_INTERVAL_MS);
	return 0;
}

void resolver_fini(struct resolver *r)
{
	if (r->listening)
		endpoints_unlisten(r->eps, on_endpoint, r);
	r->listening = false;
	loop_timer_cancel(r->loop, &r->sweep_timer);
	pending_fini(&r->pending);
	store_fini(r->store);
}

int resolver_reload(struct resolver *r, const struct ibres_config *cfg, struct cfg_hosts *hosts)
{
	bool announced = r->cfg->announce_interval_s > 0, renamed = cfg->n_eps != r->cfg->n_eps;
	struct endpoint_port_id was[CFG_MAX_ENDPOINTS];
	unsigned n_was = r->eps->n;
	struct host_store fresh;
	int ret;

	/* Build the new authoritative content first, so a failure changes nothing. */
	ret = store_init(&fresh, cfg->cache_size);
	if (ret)
		return ret;
	for (unsigned i = 0; i < cfg->n_eps && !ret; i++)
		ret = store_insert(&fresh, &cfg->eps[i].id, &(struct store_put){ .origin = IBRES_ORIGIN_LOCAL, .heard_on = 1u << i }, 0, NULL);
	for (unsigned i = 0; i < hosts->n_hosts && !ret; i++)
		ret = store_insert(&fresh, &hosts->hosts[i], &(struct store_put){ .origin = IBRES_ORIGIN_STATIC }, 0, NULL);
	store_fini(&fresh);
	if (ret)
		return ret;

	/* Learned hosts stay; what the old config made authoritative goes,
	 * and the new truth overwrites any learned key that it claims. */
	store_remove_origin(r->store, IBRES_ORIGIN_LOCAL);
	store_remove_origin(r->store, IBRES_ORIGIN_STATIC);
	/* each module sees (old, new) before the new config takes over; what
	 * cannot change while running is logged as needing a restart */
	fabric_reload(r->fabric, r->cfg, cfg);
	/* both parsed alike (zeroed, then filled): the same bytes, the same identity */
	for (unsigned i = 0; i < cfg->n_eps && !renamed; i++)
		renamed = memcmp(&cfg->eps[i].id, &r->cfg->eps[i].id, sizeof(cfg->eps[i].id)) != 0;
	for (unsigned i = 0; i < n_was; i++)
		endpoint_port_id(&r->eps->ep[i].cfg.id, &was[i]);
	/* paths built with another MTU, rate, SL or route_prot go */
	for (unsigned i = 0; i < n_was && i < cfg->n_eps; i++)
		if (cfg->route_prot != r->cfg->route_prot ||
		    cfg_paths_differ(&r->cfg->eps[i], &cfg->eps[i]))
			store_drop_routes(r->store, (int)i, NULL);
	*r->cfg = *cfg; /* the swap itself: nothing holds the old one */
	store_set_max_hosts(r->store, r->cfg->cache_size);
	load_endpoints(r);
	/* a place's new GID, LID or P_Key (an ip endpoint's, from the file):
	 * its paths, and what it heard in another partition, go */
	endpoints_reloaded(r->eps, was, n_was);
	/* a renamed endpoint's old identity says goodbye, every one before any
	 * announcement, with announcements off too */
	fabric_say_goodbyes(r->fabric);
	ret = load_authoritative(r, hosts);
	forget_static_hosts(r, hosts);
	end_all_answered(r);
	/* announcements turned on, or places past the old last (one removed
	 * before and configured again knows no peer there, as a rail back up):
	 * announce as a newcomer, and ask misses on the fabric for a settle
	 * time, as at start-up */
	if (r->cfg->announce_interval_s && (!announced || r->eps->n > n_was))
		fabric_resync(r->fabric);
	/* turned off: peers hear it at once */
	if (announced && !r->cfg->announce_interval_s)
		fabric_announce_stopped(r->fabric);
	/* names or addresses changed: peers hear them now, not at the period */
	else if (renamed && announced)
		fabric_identity_reloaded(r->fabric);
	publish_scope(r);
	return ret;
}

static void resolver_sweep(struct loop_timer *t)
{
	struct resolver *r = container_of(t, struct resolver, sweep_timer);
	unsigned n = store_sweep(r->store, now_ms());

	if (n)
		log_debug("store sweep: %u hosts and negative answers expired", n);
	loop_timer_arm(r->loop, t, now_ms() + SWEEP_INTERVAL_MS);
}

static bool reaches(const struct host *h, const struct endpoint *ep)
{
	uint32_t on = host_heard_on(h);

	if (ep->down)
		return false; /* a rail that is down answers nothing */
	/* a static host (heard on none): the rails of its partition; one of
	 * the default partition (a hosts line without pkey=) from any rail */
	if (!on)
		return hostrec_same_partition(host_pkey(h), 0xffff) ||
		       hostrec_same_partition(host_pkey(h), ep->cfg.id.pkey);
	return ep->index < 32 && (on >> ep->index & 1);
}

struct host *resolver_on_rail(const struct host *h, const struct host_key *k,
			      const struct endpoint *ep)
{
	uint64_t now = now_ms();

	if (!host_key_shared(h, k))
		return reaches(h, ep) ? (struct host *)h : NULL;
	/* a name of the host, or a port GID its partitions share; an endpoint
	 * past its time is none, though the sweep has not taken it yet (the
	 * look-up that found @h checked @h's alone) */
	for (const struct host *e = h; e; e = host_next_endpoint(h, e))
		if (host_has_key(e, k) && reaches(e, ep) && host_expires_ms(e) > now)
			return (struct host *)e;
	return NULL;
}

static bool in_partition(const struct endpoint *ep, uint16_t pkey)
{
	return !pkey || hostrec_same_partition(ep->cfg.id.pkey, pkey);
}

struct endpoint *resolver_pick_rail(struct resolver *r, struct host *h, const struct host_key *k,
				    uint16_t pkey, struct host **dst)
{
	for (unsigned i = 0; i < r->eps->n; i++) {
		if (!in_partition(&r->eps->ep[i], pkey))
			continue;
		*dst = resolver_on_rail(h, k, &r->eps->ep[i]);
		if (*dst)
			return &r->eps->ep[i];
	}
	*dst = NULL;
	return NULL;
}

struct endpoint *resolver_lid_rail(struct resolver *r, uint16_t lid, uint16_t pkey)
{
	uint64_t now = now_ms();
	struct host_key k;

	for (unsigned i = 0; i < r->eps->n; i++) {
		struct endpoint *ep = &r->eps->ep[i];

		if (ep->down || !in_partition(ep, pkey) ||
		    host_key_lid(&k, lid, (uint8_t)ep->index) < 0)
			continue;
		if (store_lookup(r->store, &k, now, false))
			return ep;
	}
	return NULL;
}

enum lookup_result resolver_lookup(struct resolver *r, struct lookup_waiter *w,
				   const struct host_key *k, bool nodelay, struct host **out)
{
	uint64_t now = now_ms(), cut;
	struct pending_query *q;
	int neg;

	/* a key a host holds is never negative: asking this first counts a
	 * negative answer as the one hit it is */
	neg = store_negative(r->store, k, now, false);
	if (neg && neg != -EHOSTUNREACH) { /* a hint's is asked: see on_query_timer() */
		store_negative(r->store, k, now, true);
		return neg == -ETIMEDOUT ? LOOKUP_TIMEDOUT : LOOKUP_NOTFOUND;
	}
	*out = store_lookup(r->store, k, now, true);
	if (*out)
		return LOOKUP_FOUND;
	if (!fabric_may_query(r->fabric, k))
		return LOOKUP_NOTFOUND;
	/* every rail down for longer than a query could wait (a flap's query
	 * is answered once a rail is back, a boot's once a port is active):
	 * nothing can be asked, nothing known is proof (fabric_digest.h),
	 * try again later, at once */
	cut = fabric_cut_off_since(r->fabric);
	if (cut && now - cut >= resolver_bound_ms(r->cfg))
		return LOOKUP_TIMEDOUT;
	/* a miss that does not wait starts a query only while the table is
	 * at most half full: such requests cost the asker nothing to send in
	 * a stream, and must not take the table from the lookups that wait */
	if (nodelay && r->pending.n >= PENDING_MAX / 2 && !pending_find(&r->pending, k))
		return LOOKUP_NOTFOUND;
	/* a second asker joins the query in flight (and is counted) */
	q = query_start(r, k);
	if (!q)
		return LOOKUP_ERROR;
	if (nodelay)
		return LOOKUP_NOTFOUND;
	pending_wait(q, w);
	return LOOKUP_WAIT;
}

enum lookup_result resolver_lookup_on_rail(struct resolver *r, struct lookup_waiter *w,
					   const struct host *h, const struct host_key *k,
					   const struct endpoint *ep, bool *asked)
{
	char name[IBRES_NAME_MAX + 1];
	struct pending_query *q;
	struct fabric_at at;

	/* the host's name (its rails' aliases name those rails alone), a
	 * cluster name the directory may lack there, a fabric up there */
	if (k->type != IBRES_KEY_NAME || k->len != strlen(host_name(h, name)) ||
	    strncasecmp((const char *)k->data, name, k->len) ||
	    fabric_at_rail(r->fabric, ep, &at) || rail_missed(r, k, at.port, now_ms()) ||
	    !fabric_may_query(r->fabric, k))
		return LOOKUP_NOTFOUND;
	q = pending_find(&r->pending, k);
	/* another query of the name (a hint's, another rail's): its end first */
	*asked = !q || (q->has_at && q->at.group && q->at.port == at.port);
	if (q)
		r->stats.queries_joined++;
	else if (!(q = query_new(r, k, &at, false))) /* ended once heard there */
		return LOOKUP_ERROR;
	pending_wait(q, w);
	return LOOKUP_WAIT;
}

const struct ibres_path_record *resolver_route(struct resolver *r, struct endpoint *ep,
					       struct host *h, struct ibres_path_record *out,
					       bool *cached)
{
	const struct ibres_path_record *p;
	struct ibres_hostrec rec;
	struct path_params pp;
	uint64_t now = now_ms();

	p = host_route(r->store, h, (int)ep->index, now);
	if (p) {
		*cached = true;
		*out = *p;
		return out;
	}
	*cached = false;
	fabric_path_params(r->sa, ep, h, &pp);
	host_record(h, &rec, now);
	path_build(out, &ep->cfg, &rec, &pp);
	/* without memory to cache it, the path is still right for this answer */
	store_set_route(r->store, h, (int)ep->index, out, r->cfg->route_ttl_s, now);
	return out;
}

unsigned resolver_flush(struct resolver *r, const struct host_key *k)
{
	struct pending_query *q;
	unsigned n;

	if (!k) {
		n = store_flush(r->store, NULL) + pending_end_all(&r->pending, -ECANCELED);
	} else {
		n = store_flush(r->store, k);
		q = pending_find(&r->pending, k);
		if (q) {
			pending_end(q, -ECANCELED);
			n++;
		}
	}
	/* what was flushed is asked on the fabric again: the directory is
	 * incomplete until the nodes answered the resync */
	fabric_resync(r->fabric);
	publish_scope(r);
	return n;
}

enum lookup_result resolver_route_wait(struct resolver *r, struct lookup_waiter *w,
				       struct endpoint *ep, struct host *h, int *err)
{
	*err = 0;
	/* loopback paths are built locally, as are paths of endpoints without
	 * an SA port */
	if (r->cfg->route_prot != ROUTE_PROT_SA || host_origin(h) == IBRES_ORIGIN_LOCAL ||
	    !sa_route_available(r->sa, ep))
		return LOOKUP_FOUND;
	if (host_route(r->store, h, (int)ep->index, now_ms()))
		return LOOKUP_FOUND;
	*err = sa_route_query(r->sa, ep, h, w);
	return *err ? LOOKUP_ERROR : LOOKUP_WAIT;
}
