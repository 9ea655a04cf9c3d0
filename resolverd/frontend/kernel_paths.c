// SPDX-License-Identifier: MIT
/* Kernel path queries through the resolver (kernel_paths.h). Like a client
 * request, a query waits on a lookup or an SA path through its waiter and
 * goes on from a loop timer, never from inside the waiter's callback. */
#include "frontend/kernel_paths.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "daemon.h"
#include "engine/resolver.h"
#include "os/kpath.h"

struct kernel_query {
	struct ibresd *d;
	struct kpath_pending *p;
	struct lookup_waiter waiter;
	struct loop_timer wake;
	int wake_status;
	unsigned ep; /* RESOLVE: the endpoint of the queried port */
};

static void query_free(struct kernel_query *kq)
{
	lookup_waiter_cancel(&kq->waiter);
	loop_timer_cancel(&kq->d->loop, &kq->wake);
	free(kq);
}

static void refuse(struct kernel_query *kq)
{
	kpath_refuse(kq->p);
	query_free(kq);
}

/* The endpoint on the queried device and port, with the P_Key and source
 * GID asked for (when asked). */
static int endpoint_of(struct ibresd *d, const struct kpath_query *q, unsigned *index)
{
	for (unsigned i = 0; i < d->eps.n; i++) {
		const struct endpoint *ep = &d->eps.ep[i];
		const struct ibres_hostrec *id = &ep->cfg.id;
		bool gid_ok = !(q->has & KPATH_HAS_SGID);

		if (strcmp(ep->cfg.device, q->device) || ep->cfg.port_num != q->port)
			continue;
		/* the membership bit aside, as the SA matches P_Keys */
		if ((q->has & KPATH_HAS_PKEY) && !hostrec_same_partition(id->pkey, q->pkey))
			continue;
		for (unsigned g = 0; !gid_ok && g < id->n_gids; g++)
			gid_ok = !memcmp(id->gids[g], q->sgid, 16);
		if (gid_ok) {
			*index = i;
			return 0;
		}
	}
	return -ENOENT;
}

/* Go as far as the cache and the queries in flight allow: answer, refuse,
 * or wait (the waiter is queued). */
static void step(struct kernel_query *kq)
{
	struct ibresd *d = kq->d;
	const struct kpath_query *q = &kq->p->q;
	struct ibres_path_record path;
	enum lookup_result res;
	struct host_key key;
	struct endpoint *ep;
	struct host *h;
	bool cached;
	int err;

	if (q->op == KPATH_OP_IP_RESOLVE)
		err = host_key_addr(&key, q->has & KPATH_HAS_IPV4 ? IBRES_KEY_IPV4 : IBRES_KEY_IPV6,
				    q->ip);
	else
		err = host_key_addr(&key, IBRES_KEY_GID, q->dgid);
	if (err || (q->op == KPATH_OP_RESOLVE && (kq->ep >= d->eps.n || d->eps.ep[kq->ep].down))) {
		refuse(kq); /* a reload took the endpoint away, or its rail is down */
		return;
	}
	res = resolver_lookup(&d->res, &kq->waiter, &key, false, &h);
	if (res == LOOKUP_WAIT)
		return;
	if (res != LOOKUP_FOUND) {
		refuse(kq);
		return;
	}
	if (q->op == KPATH_OP_IP_RESOLVE) {
		uint8_t gid_buf[16];
		const uint8_t *gid = host_gid(h, gid_buf);

		kpath_answer_gid(kq->p, gid);
		query_free(kq);
		return;
	}
	ep = &d->eps.ep[kq->ep];
	/* never a path across fabrics: the GID must be one this port heard
	 * (of a port's partitions, the one heard here) */
	h = resolver_on_rail(h, &key, ep);
	if (!h) {
		refuse(kq);
		return;
	}
	res = resolver_route_wait(&d->res, &kq->waiter, ep, h, &err);
	if (res == LOOKUP_WAIT)
		return;
	if (res != LOOKUP_FOUND) {
		refuse(kq);
		return;
	}
	resolver_route(&d->res, ep, h, &path, &cached);
	kpath_answer_paths(kq->p, &path);
	query_free(kq);
}

static void on_wake(struct loop_timer *t)
{
	struct kernel_query *kq = container_of(t, struct kernel_query, wake);

	if (kq->wake_status)
		refuse(kq);
	else
		step(kq);
}

static void on_waited(struct lookup_waiter *w, int status)
{
	struct kernel_query *kq = container_of(w, struct kernel_query, waiter);

	kq->wake_status = status;
	if (loop_timer_arm(&kq->d->loop, &kq->wake, now_ms()))
		kq->wake_status = -ENOMEM; /* the bound's timer refuses it */
}

static void on_query(void *ctx, struct kpath_pending *p)
{
	struct ibresd *d = ctx;
	struct kernel_query *kq = calloc(1, sizeof(*kq));

	if (!kq) {
		kpath_refuse(p);
		return;
	}
	kq->d = d;
	kq->p = p;
	p->priv = kq;
	list_init(&kq->waiter.node);
	kq->waiter.done = on_waited;
	kq->wake.cb = on_wake;
	if (p->q.op == KPATH_OP_RESOLVE && endpoint_of(d, &p->q, &kq->ep)) {
		log_debug("kernel path query %u: no endpoint on %s port %u%s", p->q.seq,
			  p->q.device, p->q.port, p->q.has & KPATH_HAS_PKEY ? " with that P_Key" : "");
		refuse(kq);
		return;
	}
	step(kq);
}

static void on_ended(void *ctx, struct kpath_pending *p)
{
	(void)ctx;
	query_free(p->priv);
}

/* Query @p is refused from a timer, as a waiter's wake is, if it is for
 * the endpoint @arg (one that went down). */
static void refuse_on(void *arg, struct kpath_pending *p)
{
	const struct endpoint *ep = arg;
	struct kernel_query *kq = p->priv;

	if (p->q.op != KPATH_OP_RESOLVE || kq->ep != ep->index)
		return;
	lookup_waiter_cancel(&kq->waiter);
	kq->wake_status = -ENETDOWN;
	loop_timer_arm(&kq->d->loop, &kq->wake, now_ms()); /* -ENOMEM: the bound refuses */
}

/* A rail went down: its queries waiting on a lookup are refused at once
 * (F_ERR), not at their bound. */
static void on_endpoint(void *arg, const struct endpoint *ep, const struct ibres_hostrec *old,
			unsigned changes)
{
	struct ibresd *d = arg;

	(void)old;
	if ((changes & EP_CHANGE_STATE) && ep->down)
		kpath_foreach(d->kpath, refuse_on, (void *)ep);
}

static bool any_device(const struct ibresd *d)
{
	for (unsigned i = 0; i < d->eps.n; i++)
		if (d->eps.ep[i].cfg.device[0])
			return true;
	return false;
}

void kernel_paths_adopt(struct ibresd *d)
{
	d->kpath_fd = kpath_activation_fd();
}

void kernel_paths_start(struct ibresd *d)
{
	static const struct kpath_ops ops_template = { .query = on_query, .ended = on_ended };
	struct kpath_ops ops = ops_template;

	ops.ctx = d;
	if (!d->cfg.kernel_paths) {
		if (d->kpath_fd >= 0)
			log_warn("kernel path queries: kernel_paths = no, but systemd passed a "
				 "NETLINK_RDMA socket; not serving it");
		else
			log_info("kernel path queries: off (kernel_paths = no)");
		if (d->kpath_fd >= 0)
			close(d->kpath_fd);
		d->kpath_fd = -1;
		return;
	}
	if (!any_device(d)) {
		/* the kernel asks for its InfiniBand ports only: listening would
		 * only delay its SA queries by our refusals */
		log_info("kernel path queries: no endpoint names an InfiniBand device; not "
			 "listening");
		if (d->kpath_fd >= 0)
			close(d->kpath_fd);
		d->kpath_fd = -1;
		return;
	}
	d->kpath = kpath_start(&d->loop, d->kpath_fd, d->cfg.kernel_path_timeout_ms, &ops);
	d->kpath_fd = -1; /* kpath_start took it, or closed it */
	if (d->kpath && endpoints_listen(&d->eps, on_endpoint, d))
		log_warn("kernel path queries: a rail going down refuses its queries only at "
			 "their bound (no listener slot left)");
}

void kernel_paths_reload(struct ibresd *d)
{
	kpath_set_bound(d->kpath, d->cfg.kernel_path_timeout_ms);
}

void kernel_paths_stop(struct ibresd *d)
{
	if (d->kpath)
		endpoints_unlisten(&d->eps, on_endpoint, d);
	kpath_stop(d->kpath);
	d->kpath = NULL;
}
