// SPDX-License-Identifier: MIT
/* The in-process daemon of daemon_fake.h. */
#include "daemon_fake.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "engine/resolver.h"
#include "fabric/fabric.h"
#include "fabric/transport.h"

struct ibresd fake_d;
uint64_t fake_now = FAKE_START_MS;
struct fake_sent fake_sent[FAKE_SENT_RING];
unsigned long fake_n_sent;

static struct transport *fake_t;
static int fake_priv;

uint64_t now_ms(void)
{
	return fake_now;
}

uint64_t wall_us(void)
{
	return FAKE_WALL_BASE_US + fake_now * 1000;
}

static void keep(bool ucast, const void *buf, size_t len)
{
	struct fake_sent *s = &fake_sent[fake_n_sent++ % FAKE_SENT_RING];

	if (len > FW_MAX_LEN)
		abort(); /* the core never sends more than a datagram holds */
	s->ucast = ucast;
	s->len = len;
	memcpy(s->buf, buf, len);
}

static int fake_open(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep)
{
	(void)loop;
	t->ep = ep;
	t->priv = &fake_priv;
	if (!fake_t)
		fake_t = t;
	return 0;
}

static void fake_close(struct transport *t, struct loop *loop)
{
	(void)loop;
	t->priv = NULL;
	if (fake_t == t)
		fake_t = NULL;
}

static int fake_join(struct transport *t, unsigned g)
{
	return g < t->ep->n_groups ? 0 : -EINVAL;
}

static int fake_send_mcast(struct transport *t, unsigned g, const void *buf, size_t len)
{
	if (g >= t->ep->n_groups)
		abort();
	keep(false, buf, len);
	return 0;
}

static int fake_send_ucast(struct transport *t, const struct transport_addr *to, const void *buf,
			   size_t len)
{
	(void)t;
	(void)to;
	keep(true, buf, len);
	return 0;
}

static const struct transport_ops fake_ops = {
	.name = "fake",
	.open = fake_open,
	.close = fake_close,
	.join = fake_join,
	.leave = fake_join,
	.send_mcast = fake_send_mcast,
	.send_ucast = fake_send_ucast,
};

const struct transport_ops *transport_for(const struct cfg_endpoint *ep)
{
	return ep->transport == TRANSPORT_IP ? &fake_ops : NULL;
}

int fake_daemon_start(const char *conf, const char *hosts)
{
	char err[CFG_ERR_MAX];
	struct ibresd *d = &fake_d;

	memset(d, 0, sizeof(*d));
	fake_now = FAKE_START_MS;
	fake_n_sent = 0;
	fake_t = NULL;
	if (config_parse("fuzz.conf", conf, strlen(conf), &d->cfg, err, sizeof(err)) ||
	    config_validate(&d->cfg, err, sizeof(err)))
		return -1;
	if (hosts && hosts_parse("fuzz.hosts", hosts, strlen(hosts), &d->static_hosts, err,
				 sizeof(err)))
		return -1;
	log_set_level(d->cfg.log_level);
	d->start_ms = now_ms();
	d->scratch = malloc(IBRES_MSG_MAX);
	if (!d->scratch || loop_init(&d->loop))
		goto err_hosts;
	if (resolver_init(&d->res,
			  &(struct resolver_deps){ .cfg = &d->cfg, .loop = &d->loop,
						   .store = &d->store, .eps = &d->eps },
			  &d->static_hosts))
		goto err_loop;
	if (fabric_start(&d->fabric,
			 &(struct fabric_deps){ .cfg = &d->cfg, .loop = &d->loop, .eps = &d->eps,
						.store = &d->store,
						.ev = resolver_fabric_events(&d->res) }))
		goto err_resolver;
	resolver_attach(&d->res, NULL, d->fabric);
	return 0;
err_resolver:
	resolver_fini(&d->res);
err_loop:
	loop_fini(&d->loop);
err_hosts:
	free(d->scratch);
	d->scratch = NULL;
	hosts_free(&d->static_hosts);
	return -1;
}

void fake_daemon_stop(void)
{
	struct ibresd *d = &fake_d;

	resolver_attach(&d->res, NULL, NULL);
	fabric_stop(d->fabric);
	d->fabric = NULL;
	resolver_fini(&d->res);
	loop_fini(&d->loop);
	hosts_free(&d->static_hosts);
	free(d->scratch);
	d->scratch = NULL;
}

void fake_advance(uint64_t ms)
{
	struct loop *l = &fake_d.loop;
	uint64_t t = fake_now + ms;
	unsigned guard = 0;

	while (l->n_timers && l->heap[1]->due_ms <= t) {
		if (++guard > 100000)
			abort(); /* a timer that re-arms itself at once, forever */
		if (l->heap[1]->due_ms > fake_now)
			fake_now = l->heap[1]->due_ms;
		loop_run_due(l);
	}
	fake_now = t;
	loop_run_due(l);
}

void fake_deliver(const uint8_t *buf, size_t len, uint8_t from)
{
	struct transport_addr a;
	struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;

	if (!fake_t)
		return;
	memset(&a, 0, sizeof(a));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(4790);
	sin->sin_addr.s_addr = htonl(0xc6120000u | from); /* 198.18.0.from */
	a.len = sizeof(*sin);
	fake_t->recv(fake_t, buf, len, &a);
}
