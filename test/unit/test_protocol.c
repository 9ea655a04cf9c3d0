// SPDX-License-Identifier: MIT
/*
 * The protocol core without root: resolverd/engine/resolver.c (lookups, the
 * pending table's retries) and resolverd/fabric/fabric.c (REQUEST, REPLY,
 * ANNOUNCE, GOODBYE) driven in-process through the two seams made for it:
 * this file defines now_ms() (a fake clock the tests advance; core/clock.o
 * is then not linked) and transport_for() (a fake transport that records
 * every datagram sent; fabric/transport_select.o is then not linked).
 * Datagrams from peers are built with the project's own encoder and handed
 * to the transport's recv callback, as transport_ip.c would.
 *
 * The daemon is built as main.c builds it (config_parse, loop_init,
 * resolver_init, fabric_start) without sockets: no server, no netlink, no
 * SA. Nothing here sleeps or reads the real clock: timers run only when a
 * test moves the fake clock past them (loop_run_due).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "core/clock.h"
#include "core/hostkey.h"
#include "core/hoststore.h"
#include "core/hoststore_range.h"
#include "core/list.h"
#include "core/log.h"
#include "engine/resolver.h"
#include "fabric/fabric.h"
#include "fabric/fabric_auth.h"
#include "fabric/fabric_departed.h"
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_gone.h"
#include "fabric/fabric_wire.h"
#include "fabric/transport.h"
#include "tlv.h"

/* IB enums of the groups below (checked against config.c in start()). */
#define MTU_2048 4
#define MTU_4096 5
#define RATE_10 3
#define RATE_40 7

#define UDP_PORT 4790
#define START_MS 5000 /* small on purpose: nothing may assume a large clock */

/* --- the fake clock -------------------------------------------------------- */

static uint64_t fake_now = START_MS;

uint64_t now_ms(void)
{
	return fake_now;
}

/* The wall clock of freshness stamps: a date in 2026 plus the fake clock. */
#define WALL_BASE_US 1790000000000000ULL

uint64_t wall_us(void)
{
	return WALL_BASE_US + fake_now * 1000;
}

/* --- the fake transport ---------------------------------------------------- */

#define SENT_MAX 256

struct sent_dgram {
	uint64_t at_ms;
	bool ucast;
	unsigned group;
	struct transport_addr to;
	struct fw_msg m; /* decoded with the project's decoder */
};

static struct {
	struct sent_dgram sent[SENT_MAX];
	unsigned n_sent;
	struct transport *t; /* the one open transport */
	int priv;            /* t->priv points here while open */
	unsigned opens, closes, joins, leaves;
	uint32_t qpn; /* set into t->qpn by open, as the ib transport does */
	uint64_t sock_drops; /* what rx_stats says our sockets dropped */
	unsigned mcast_fails; /* the next this many multicast sends fail (not joined yet) */
} fake;

/* With a cluster key: the key the daemon signs with (the first of its file). */
static const char *sent_key;

static void record(struct transport *t, bool ucast, unsigned g, const struct transport_addr *to,
		   const void *buf, size_t len)
{
	struct sent_dgram *s;

	assert_ptr_equal(t, fake.t);
	assert_true(len <= FW_MAX_LEN);
	assert_true(fake.n_sent < SENT_MAX);
	s = &fake.sent[fake.n_sent++];
	memset(s, 0, sizeof(*s));
	s->at_ms = fake_now;
	s->ucast = ucast;
	s->group = g;
	if (to)
		s->to = *to;
	assert_int_equal(fw_decode(buf, len, (const uint8_t *)sent_key, sent_key ? strlen(sent_key) : 0,
				   &s->m),
			 FW_OK);
}

static int fake_open(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep)
{
	(void)loop;
	assert_null(fake.t);
	t->ep = ep;
	t->priv = &fake.priv;
	t->qpn = fake.qpn;
	fake.t = t;
	fake.opens++;
	return 0;
}

static void fake_close(struct transport *t, struct loop *loop)
{
	(void)loop;
	assert_ptr_equal(t, fake.t);
	t->priv = NULL;
	fake.t = NULL;
	fake.closes++;
}

static int fake_join(struct transport *t, unsigned g)
{
	assert_true(g < t->ep->n_groups);
	fake.joins++;
	if (g == 0) /* as the ip transport: it hears the group from now on */
		t->mcast_since_ms = fake_now ? fake_now : 1;
	return 0;
}

static int fake_leave(struct transport *t, unsigned g)
{
	assert_true(g < t->ep->n_groups);
	fake.leaves++;
	return 0;
}

static int fake_send_mcast(struct transport *t, unsigned g, const void *buf, size_t len)
{
	assert_true(g < t->ep->n_groups);
	if (fake.mcast_fails) {
		fake.mcast_fails--;
		return -EAGAIN;
	}
	record(t, false, g, NULL, buf, len);
	return 0;
}

static int fake_send_ucast(struct transport *t, const struct transport_addr *to, const void *buf,
			   size_t len)
{
	record(t, true, 0, to, buf, len);
	return 0;
}

static void fake_rx_stats(struct transport *t, struct transport_rx_stats *st)
{
	(void)t;
	memset(st, 0, sizeof(*st));
	st->sock_drops = fake.sock_drops;
}

static const struct transport_ops fake_ops = {
	.name = "fake",
	.rx_stats = fake_rx_stats,
	.open = fake_open,
	.close = fake_close,
	.join = fake_join,
	.leave = fake_leave,
	.send_mcast = fake_send_mcast,
	.send_ucast = fake_send_ucast,
};

const struct transport_ops *transport_for(const struct cfg_endpoint *ep)
{
	return ep->transport == TRANSPORT_IP ? &fake_ops : NULL;
}

/* --- the daemon -------------------------------------------------------------- */

static struct ibresd ctx;
static bool started;

#define RESOLVE_BASE                                                                               \
	"timeout = 100ms\n"                                                                        \
	"negative_ttl = 5s\n"                                                                      \
	"addr_ttl = 60s\n"                                                                         \
	"settle_time = 2s\n"                                                                       \
	"name_pattern = node* login*\n"

/* Announcements off: every miss is asked on the fabric. */
#define ANNOUNCE_OFF "retries = 2\nannounce_interval = 0\n"
/* Every datagram says whether its sender announces (the header's flags). */
#define SAYS_ON	 (FW_FLAG_SAYS_ANNOUNCES | FW_FLAG_ANNOUNCES)
#define SAYS_OFF FW_FLAG_SAYS_ANNOUNCES
/* Announcements every 10 s, at most half of addr_ttl: the directory rule. */
#define DIRECTORY "retries = 2\nannounce_interval = 10s\n"

#define ENDPOINT                                                                                   \
	"[endpoint ib0]\n"                                                                         \
	"name = node1\n"                                                                           \
	"name = node1.cluster.example\n"                                                           \
	"address = 198.18.0.1\n"                                                                   \
	"address = 2001:db8::1\n"                                                                  \
	"gid = fe80::2:c903:0:1\n"                                                                 \
	"lid = 1\n"                                                                                \
	"qpn = 1\n"                                                                                \
	"pkey = 0xffff\n"                                                                          \
	"transport = ip\n"                                                                         \
	"interface = ib0\n"                                                                        \
	"udp_port = 4790\n"                                                                        \
	"group = 239.255.73.1 mtu=2048 rate=10\n"                                                  \
	"group = 239.255.73.2 mtu=4096 rate=40\n"

/* A config text: [resolve] with the base settings and @resolve, one endpoint. */
static void config_text(char *buf, size_t cap, const char *resolve)
{
	int n = snprintf(buf, cap, "[daemon]\nlog_level = error\n[resolve]\n" RESOLVE_BASE
			 "%s" ENDPOINT, resolve);

	assert_true(n > 0 && (size_t)n < cap);
}

static void parse_config(struct ibres_config *cfg, struct cfg_hosts *hosts, const char *resolve,
			 const char *hosts_text)
{
	char text[2048], err[CFG_ERR_MAX];
	int ret;

	config_text(text, sizeof(text), resolve);
	ret = config_parse("test.conf", text, strlen(text), cfg, err, sizeof(err));
	if (ret)
		fail_msg("config: %s", err);
	ret = config_validate(cfg, err, sizeof(err));
	if (ret)
		fail_msg("config: %s", err);
	memset(hosts, 0, sizeof(*hosts));
	if (hosts_text) {
		ret = hosts_parse("test.hosts", hosts_text, strlen(hosts_text), hosts, err,
				  sizeof(err));
		if (ret)
			fail_msg("hosts: %s", err);
	}
}

/* Start the daemon as main.c does, minus sockets, at the fake time START_MS. */
static void start(const char *resolve, const char *hosts_text)
{
	uint32_t qpn = fake.qpn;

	assert_false(started);
	memset(&ctx, 0, sizeof(ctx));
	memset(&fake, 0, sizeof(fake));
	fake.qpn = qpn;
	fake_now = START_MS;
	parse_config(&ctx.cfg, &ctx.static_hosts, resolve, hosts_text);
	log_set_level(ctx.cfg.log_level);
	assert_int_equal(ctx.cfg.eps[0].groups[0].mtu, MTU_2048);
	assert_int_equal(ctx.cfg.eps[0].groups[0].rate, RATE_10);
	assert_int_equal(ctx.cfg.eps[0].groups[1].mtu, MTU_4096);
	assert_int_equal(ctx.cfg.eps[0].groups[1].rate, RATE_40);
	ctx.start_ms = now_ms();
	assert_int_equal(loop_init(&ctx.loop), 0);
	assert_int_equal(resolver_init(&ctx.res,
				       &(struct resolver_deps){ .cfg = &ctx.cfg, .loop = &ctx.loop,
								.store = &ctx.store,
								.eps = &ctx.eps },
				       &ctx.static_hosts),
			 0);
	ctx.res.rng.s = 0x9e3779b97f4a7c15ULL; /* the same jitter on every run */
	assert_int_equal(fabric_start(&ctx.fabric,
				      &(struct fabric_deps){ .cfg = &ctx.cfg, .loop = &ctx.loop,
							     .eps = &ctx.eps, .store = &ctx.store,
							     .ev = resolver_fabric_events(&ctx.res) }),
			 0);
	resolver_attach(&ctx.res, NULL, ctx.fabric);
	started = true;
	assert_non_null(ctx.fabric);
	assert_non_null(fake.t);
	assert_int_equal(fake.opens, 1);
	assert_int_equal(fake.joins, 2);
	assert_int_equal(fake.n_sent, 0);
}

static void stop(void)
{
	if (!started)
		return;
	started = false;
	fake.n_sent = 0; /* room for the GOODBYE even after a failed test */
	resolver_attach(&ctx.res, NULL, NULL);
	fabric_stop(ctx.fabric);
	ctx.fabric = NULL;
	resolver_fini(&ctx.res);
	loop_fini(&ctx.loop);
	hosts_free(&ctx.static_hosts);
}

static int teardown(void **state)
{
	(void)state;
	stop();
	fake.qpn = 0;
	sent_key = NULL;
	return 0;
}

/* Move the fake clock to @t, running every timer due on the way at its own
 * time (so a datagram a timer sends carries the time it was due). */
static void advance_to(uint64_t t)
{
	unsigned guard = 0;

	assert_true(t >= fake_now);
	while (ctx.loop.n_timers && ctx.loop.heap[1]->due_ms <= t) {
		assert_true(++guard < 100000); /* no timer may re-arm itself at once forever */
		if (ctx.loop.heap[1]->due_ms > fake_now)
			fake_now = ctx.loop.heap[1]->due_ms;
		loop_run_due(&ctx.loop);
	}
	fake_now = t;
	loop_run_due(&ctx.loop);
}

static void advance(uint64_t ms)
{
	advance_to(fake_now + ms);
}

/* A fabric counter, read as ibresctl stats reads it (fabric_stats()). */
static uint64_t counter(const char *name)
{
	static uint8_t buf[8192];
	struct tlv_writer w;
	struct tlv_reader r;
	struct tlv_item it;
	char cur[64] = "";
	uint64_t v;

	/* the resolver's query counters (STATS prints them with these names) */
	if (!strcmp(name, "fabric_query_retries"))
		return ctx.res.stats.query_retries;
	if (!strcmp(name, "fabric_query_timeouts"))
		return ctx.res.stats.query_timeouts;
	if (!strcmp(name, "fabric_queries_joined"))
		return ctx.res.stats.queries_joined;
	if (!strcmp(name, "fabric_queries_outstanding"))
		return ctx.res.pending.n;
	tlv_writer_init(&w, buf, sizeof(buf));
	fabric_stats(ctx.fabric, &w);
	assert_false(w.overflow);
	tlv_reader_init(&r, buf, w.len);
	while (tlv_next(&r, &it) == 1) {
		if (it.type == IBRES_T_NAME) {
			assert_int_equal(tlv_get_str(&it, cur, sizeof(cur)), 0);
		} else if (it.type == IBRES_T_COUNTER && !strcmp(cur, name)) {
			assert_int_equal(tlv_get_u64(&it, &v), 0);
			return v;
		}
	}
	fail_msg("no counter %s", name);
	return 0;
}

/* --- what was sent ------------------------------------------------------------ */

static unsigned count_sent(uint8_t type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake.n_sent; i++)
		n += fake.sent[i].m.type == type;
	return n;
}

/* The @i-th (0-based) datagram of @type sent. */
static const struct sent_dgram *nth_sent(uint8_t type, unsigned i)
{
	unsigned seen = 0;

	for (unsigned j = 0; j < fake.n_sent; j++)
		if (fake.sent[j].m.type == type && seen++ == i)
			return &fake.sent[j];
	fail_msg("no datagram %u of type %u", i, type);
	return NULL;
}

static const struct sent_dgram *last_sent(void)
{
	assert_true(fake.n_sent > 0);
	return &fake.sent[fake.n_sent - 1];
}

/* Our own identity as the endpoint's config has it. */
static void assert_is_us(const struct ibres_hostrec *h)
{
	const struct ibres_hostrec *id = &ctx.eps.ep[0].cfg.id;

	assert_int_equal(h->n_names, 2);
	assert_string_equal(h->names[0], "node1");
	assert_string_equal(h->names[1], "node1.cluster.example");
	assert_int_equal(h->n_v4, 1);
	assert_memory_equal(&h->v4[0], &id->v4[0], 4);
	assert_int_equal(h->n_v6, 1);
	assert_memory_equal(&h->v6[0], &id->v6[0], 16);
	assert_int_equal(h->n_gids, 1);
	assert_memory_equal(h->gids[0], id->gids[0], 16);
	assert_int_equal(h->lid, id->lid);
	assert_int_equal(h->qpn, id->qpn);
	assert_int_equal(h->pkey, 0xffff);
	assert_int_equal(h->ttl, 60); /* addr_ttl: how long peers may keep it */
}

/* --- keys, peers, datagrams from peers --------------------------------------- */

static struct host_key key_name(const char *name)
{
	struct host_key k;

	assert_int_equal(host_key_name(&k, name), 0);
	return k;
}

static struct host_key key_addr(uint8_t type, int af, const char *text)
{
	struct host_key k;
	uint8_t a[16];

	assert_int_equal(inet_pton(af, text, a), 1);
	assert_int_equal(host_key_addr(&k, type, a), 0);
	return k;
}

static struct host_key key_v4(const char *text)
{
	return key_addr(IBRES_KEY_IPV4, AF_INET, text);
}

static struct host_key key_v6(const char *text)
{
	return key_addr(IBRES_KEY_IPV6, AF_INET6, text);
}

/* A GID in IPv6 notation. */
static struct host_key key_gid(const char *text)
{
	return key_addr(IBRES_KEY_GID, AF_INET6, text);
}

static struct host_key key_lid(uint16_t lid)
{
	struct host_key k;

	/* the one endpoint, index 0: the fabric every peer is heard on */
	assert_int_equal(host_key_lid(&k, lid, 0), 0);
	return k;
}

/* Peer @n: nodeN, nodeN.cluster.example, 198.18.0.N, 2001:db8::N,
 * GID fe80::2:c903:0:N, LID N, QPN 0x100 + N. */
static void peer_id(struct ibres_hostrec *h, unsigned n)
{
	char s[64];

	memset(h, 0, sizeof(*h));
	snprintf(h->names[0], sizeof(h->names[0]), "node%u", n);
	snprintf(h->names[1], sizeof(h->names[1]), "node%u.cluster.example", n);
	h->n_names = 2;
	snprintf(s, sizeof(s), "198.18.0.%u", n);
	assert_int_equal(inet_pton(AF_INET, s, &h->v4[0]), 1);
	h->n_v4 = 1;
	snprintf(s, sizeof(s), "2001:db8::%x", n);
	assert_int_equal(inet_pton(AF_INET6, s, &h->v6[0]), 1);
	h->n_v6 = 1;
	snprintf(s, sizeof(s), "fe80::2:c903:0:%x", n);
	assert_int_equal(inet_pton(AF_INET6, s, h->gids[0]), 1);
	h->n_gids = 1;
	h->lid = (uint16_t)n;
	h->qpn = 0x100 + n;
	h->pkey = 0xffff;
	h->ttl = 3600; /* longer than our addr_ttl: we keep it 60 s at most */
}

/* A datagram from peer @n, as its daemon would build it: both our groups. */
static void peer_msg(struct fw_msg *m, uint8_t type, unsigned n, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->tid = tid;
	peer_id(&m->sender, n);
	m->groups[0] = (struct fw_group){ MTU_2048, RATE_10 };
	m->groups[1] = (struct fw_group){ MTU_4096, RATE_40 };
	m->n_groups = 2;
}

static void peer_request(struct fw_msg *m, unsigned n, uint64_t tid, struct host_key target)
{
	peer_msg(m, FW_REQUEST, n, tid);
	m->has_target = true;
	m->target = target;
}

static void peer_reply(struct fw_msg *m, unsigned n, uint64_t tid)
{
	peer_msg(m, FW_REPLY, n, tid);
	m->has_chosen = true;
	m->chosen = (struct fw_group){ MTU_4096, RATE_40 };
}

/* Peer @n's unicast address on the ip transport. */
static struct transport_addr peer_addr(unsigned n)
{
	struct transport_addr a;
	struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
	char s[32];

	memset(&a, 0, sizeof(a));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(UDP_PORT);
	snprintf(s, sizeof(s), "198.18.0.%u", n);
	assert_int_equal(inet_pton(AF_INET, s, &sin->sin_addr), 1);
	a.len = sizeof(*sin);
	return a;
}

static void deliver_raw(const uint8_t *buf, size_t len, unsigned from)
{
	struct transport_addr a = peer_addr(from);

	assert_non_null(fake.t);
	fake.t->recv(fake.t, buf, len, &a);
}

/* Hand @m from peer @from to the daemon, encoded as that peer would send it. */
static void deliver(const struct fw_msg *m, unsigned from)
{
	uint8_t buf[FW_MAX_LEN];
	int len = fw_encode(m, NULL, 0, buf, sizeof(buf));

	assert_true(len > FW_HDR_LEN);
	deliver_raw(buf, (size_t)len, from);
}

static void announce_from(unsigned n)
{
	struct fw_msg m;

	peer_msg(&m, FW_ANNOUNCE, n, 0);
	deliver(&m, n);
}

/* --- the store ------------------------------------------------------------------ */

static struct host *find(struct host_key k)
{
	return store_lookup(&ctx.store, &k, fake_now, false);
}

/* Every key of peer @n leads to one learned host whose record is the peer's. */
static struct host *assert_peer_stored(unsigned n)
{
	struct host_key keys[HOST_KEYS_MAX];
	struct ibres_hostrec want, got;
	struct host *h;
	unsigned nk;

	peer_id(&want, n);
	nk = host_keys_of(&want, 0, keys);
	assert_int_equal(nk, 6); /* 2 names, IPv4, IPv6, GID, LID */
	h = find(keys[0]);
	assert_non_null(h);
	for (unsigned i = 0; i < nk; i++) {
		assert_ptr_equal(find(keys[i]), h);
		assert_true(host_has_key(h, &keys[i]));
	}
	assert_int_equal(host_origin(h), IBRES_ORIGIN_FABRIC);
	host_record(h, &got, fake_now);
	assert_int_equal(got.n_names, 2);
	assert_string_equal(got.names[0], want.names[0]);
	assert_string_equal(got.names[1], want.names[1]);
	assert_int_equal(got.n_v4, 1);
	assert_memory_equal(&got.v4[0], &want.v4[0], 4);
	assert_int_equal(got.n_v6, 1);
	assert_memory_equal(&got.v6[0], &want.v6[0], 16);
	assert_int_equal(got.n_gids, 1);
	assert_memory_equal(got.gids[0], want.gids[0], 16);
	assert_int_equal(got.lid, want.lid);
	assert_int_equal(got.qpn, want.qpn);
	assert_int_equal(got.pkey, want.pkey);
	return h;
}

static void assert_peer_absent(unsigned n)
{
	struct host_key keys[HOST_KEYS_MAX];
	struct ibres_hostrec id;
	unsigned nk;

	peer_id(&id, n);
	nk = host_keys_of(&id, 0, keys);
	for (unsigned i = 0; i < nk; i++)
		assert_null(find(keys[i]));
}

/* --- client requests -------------------------------------------------------------- */

struct twaiter {
	struct lookup_waiter w;
	unsigned calls;
	int status;
	uint64_t at_ms;
};

static void tw_done(struct lookup_waiter *w, int status)
{
	struct twaiter *t = container_of(w, struct twaiter, w);

	t->calls++;
	t->status = status;
	t->at_ms = fake_now;
}

static enum lookup_result lookup(struct twaiter *t, struct host_key k, struct host **h)
{
	struct host *dummy;

	/* a waiter still queued on a query must not be reused */
	assert_true(!t->w.node.next || t->w.node.next == &t->w.node);
	memset(t, 0, sizeof(*t));
	t->w.done = tw_done;
	return resolver_lookup(&ctx.res, &t->w, &k, false, h ? h : &dummy);
}

/* ================================================================================= */

/* retries = 2: three REQUESTs of one transaction, spaced by timeout × (1 + k/2)
 * ± 10%, then -ETIMEDOUT within resolver_bound_ms(); a negative answer for
 * negative_ttl; nothing more is sent. */
static void test_retries_bounded(void **state)
{
	struct host_key k = key_name("node2");
	const struct sent_dgram *r[3];
	static struct twaiter w, w2;
	uint64_t t0, gap;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	t0 = fake_now;
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_WAIT);
	assert_int_equal(fake.n_sent, 1);
	r[0] = nth_sent(FW_REQUEST, 0);
	assert_false(r[0]->ucast);
	assert_int_equal(r[0]->group, 0); /* the lowest group, the one every node joins */
	assert_int_equal(r[0]->at_ms, t0);
	assert_true(r[0]->m.has_target);
	assert_true(host_key_eq(&r[0]->m.target, &k));
	assert_int_not_equal(r[0]->m.tid, 0);
	assert_is_us(&r[0]->m.sender);
	assert_int_equal(r[0]->m.n_groups, 2);
	assert_int_equal(r[0]->m.groups[0].mtu, MTU_2048);
	assert_int_equal(r[0]->m.groups[1].mtu, MTU_4096);
	assert_int_equal(counter("fabric_requests_sent"), 1);
	assert_int_equal(counter("fabric_queries_outstanding"), 1);

	/* the first wait is at least timeout - 10% */
	advance_to(t0 + 89);
	assert_int_equal(fake.n_sent, 1);
	assert_int_equal(w.calls, 0);

	advance_to(t0 + 1000);
	assert_int_equal(fake.n_sent, 3);
	assert_int_equal(count_sent(FW_REQUEST), 3);
	for (unsigned i = 0; i < 3; i++) {
		r[i] = nth_sent(FW_REQUEST, i);
		assert_int_equal(r[i]->m.tid, r[0]->m.tid);
		assert_true(host_key_eq(&r[i]->m.target, &k));
		assert_false(r[i]->ucast);
	}
	gap = r[1]->at_ms - r[0]->at_ms; /* 100 ms ± 10% */
	assert_in_range(gap, 90, 109);
	gap = r[2]->at_ms - r[1]->at_ms; /* 150 ms ± 10% */
	assert_in_range(gap, 135, 164);
	gap = w.at_ms - r[2]->at_ms; /* 200 ms ± 10% */
	assert_in_range(gap, 180, 219);
	assert_true(w.at_ms - t0 <= resolver_bound_ms(&ctx.cfg));
	assert_int_equal(resolver_bound_ms(&ctx.cfg), 110 + 165 + 220);

	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, -ETIMEDOUT);
	assert_int_equal(ctx.res.stats.query_retries, 2);
	assert_int_equal(ctx.res.stats.query_timeouts, 1);
	assert_int_equal(counter("fabric_query_retries"), 2);
	assert_int_equal(counter("fabric_query_timeouts"), 1);
	assert_int_equal(counter("fabric_requests_sent"), 3);
	assert_int_equal(counter("fabric_queries_outstanding"), 0);
	assert_int_equal(ctx.res.pending.n, 0);

	/* a negative answer for negative_ttl: asked again only after it */
	assert_int_equal(store_negative(&ctx.store, &k, fake_now, false), -ETIMEDOUT);
	assert_int_equal(lookup(&w2, k, NULL), LOOKUP_TIMEDOUT);
	advance_to(w.at_ms + 5000 - 1);
	assert_int_equal(lookup(&w2, k, NULL), LOOKUP_TIMEDOUT);
	assert_int_equal(fake.n_sent, 3); /* nothing after the bound */
	assert_int_equal(w.calls, 1);
	assert_int_equal(ctx.res.stats.query_timeouts, 1);

	advance_to(w.at_ms + 5000);
	assert_int_equal(store_negative(&ctx.store, &k, fake_now, false), 0);
	assert_int_equal(lookup(&w2, k, NULL), LOOKUP_WAIT);
	assert_int_equal(count_sent(FW_REQUEST), 4);
	assert_int_not_equal(last_sent()->m.tid, r[0]->m.tid); /* a new transaction */
	assert_int_equal(ctx.res.stats.query_retries, 2);

	/* a host heard later replaces the negative answer */
	k = key_name("node3");
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_WAIT);
	advance(1000);
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_TIMEDOUT);
	assert_int_equal(w2.calls, 1);
	assert_int_equal(w2.status, -ETIMEDOUT);
	announce_from(3);
	assert_int_equal(store_negative(&ctx.store, &k, fake_now, false), 0);
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_FOUND);
}

/* A NODELAY lookup answers NOTFOUND at once; its query runs in the
 * background, and a later lookup finds what it brought. */
static void test_nodelay(void **state)
{
	static struct twaiter w;
	struct host_key k = key_name("node2");
	struct host *h;
	struct fw_msg m;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	memset(&w, 0, sizeof(w));
	w.w.done = tw_done;
	assert_int_equal(resolver_lookup(&ctx.res, &w.w, &k, true, &h), LOOKUP_NOTFOUND);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	assert_int_equal(ctx.res.pending.n, 1);
	peer_reply(&m, 2, last_sent()->m.tid);
	deliver(&m, 2);
	assert_int_equal(w.calls, 0); /* it never waited */
	assert_int_equal(ctx.res.pending.n, 0);
	assert_int_equal(lookup(&w, k, &h), LOOKUP_FOUND);
	assert_ptr_equal(h, assert_peer_stored(2));
}

/* retries = 0: one REQUEST, then -ETIMEDOUT after one timeout ± 10%. */
static void test_no_retries(void **state)
{
	static struct twaiter w;
	uint64_t t0;

	(void)state;
	start("retries = 0\nannounce_interval = 0\n", NULL);
	t0 = fake_now;
	assert_int_equal(lookup(&w, key_v4("198.18.0.9"), NULL), LOOKUP_WAIT);
	advance(2000);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	assert_int_equal(fake.n_sent, 1);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, -ETIMEDOUT);
	assert_in_range(w.at_ms - t0, 90, 109);
	assert_int_equal(ctx.res.stats.query_retries, 0);
	assert_int_equal(counter("fabric_query_timeouts"), 1);
}

/* Two lookups of one key share one query: one REQUEST per attempt, both
 * waiters woken once by the REPLY, the second counted as joined. */
static void test_shared_query(void **state)
{
	struct host_key k = key_name("node2");
	static struct twaiter w1, w2;
	struct fw_msg m;
	uint64_t tid;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w1, k, NULL), LOOKUP_WAIT);
	assert_int_equal(lookup(&w2, k, NULL), LOOKUP_WAIT);
	assert_int_equal(ctx.res.pending.n, 1);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	assert_int_equal(ctx.res.stats.queries_joined, 1);
	assert_int_equal(counter("fabric_queries_joined"), 1);
	tid = nth_sent(FW_REQUEST, 0)->m.tid;

	/* the second attempt: still one REQUEST for both */
	advance(120);
	assert_int_equal(count_sent(FW_REQUEST), 2);
	assert_int_equal(nth_sent(FW_REQUEST, 1)->m.tid, tid);
	assert_int_equal(w1.calls + w2.calls, 0);

	peer_reply(&m, 2, tid);
	deliver(&m, 2);
	assert_int_equal(w1.calls, 1);
	assert_int_equal(w1.status, 0);
	assert_int_equal(w2.calls, 1);
	assert_int_equal(w2.status, 0);
	assert_int_equal(ctx.res.pending.n, 0);
	assert_peer_stored(2);

	/* the query's timer is gone with it */
	advance(5000);
	assert_int_equal(count_sent(FW_REQUEST), 2);
	assert_int_equal(w1.calls, 1);
	assert_int_equal(w2.calls, 1);
	assert_int_equal(ctx.res.stats.query_timeouts, 0);
}

/* Two waiters of a query nobody answers: retries + 1 REQUESTs in all, each
 * waiter told -ETIMEDOUT once, one timeout counted. */
static void test_shared_query_times_out(void **state)
{
	struct host_key k = key_v6("2001:db8::7");
	static struct twaiter w1, w2;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w1, k, NULL), LOOKUP_WAIT);
	advance(50);
	assert_int_equal(lookup(&w2, k, NULL), LOOKUP_WAIT);
	advance(3000);
	assert_int_equal(count_sent(FW_REQUEST), 3);
	assert_int_equal(w1.calls, 1);
	assert_int_equal(w1.status, -ETIMEDOUT);
	assert_int_equal(w2.calls, 1);
	assert_int_equal(w2.status, -ETIMEDOUT);
	assert_int_equal(w1.at_ms, w2.at_ms);
	assert_int_equal(ctx.res.stats.queries_joined, 1);
	assert_int_equal(ctx.res.stats.query_timeouts, 1);
}

/* A REPLY ends the query: the waiter hears 0, the host is in the store under
 * every key with the chosen group and a lifetime of at most addr_ttl; later
 * lookups of any key are answered from the store, without traffic. A copy of
 * the REPLY arriving late is unsolicited. */
static void test_reply_completes(void **state)
{
	struct ibres_hostrec id;
	struct host_key keys[HOST_KEYS_MAX];
	static struct twaiter w;
	struct fw_msg m;
	struct host *h, *found;
	uint8_t mtu, rate;
	unsigned nk;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w, key_name("node2.cluster.example"), NULL), LOOKUP_WAIT);
	peer_reply(&m, 2, nth_sent(FW_REQUEST, 0)->m.tid);
	advance(10);
	deliver(&m, 2);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, 0);
	assert_int_equal(ctx.res.pending.n, 0);
	h = assert_peer_stored(2);
	host_group(h, &mtu, &rate);
	assert_int_equal(mtu, MTU_4096); /* the REPLY's CHOSEN */
	assert_int_equal(rate, RATE_40);
	assert_int_equal(host_expires_ms(h), fake_now + 60 * 1000); /* min(addr_ttl, 3600 s) */
	assert_int_equal(counter("fabric_rx"), 1);
	assert_int_equal(counter("fabric_rx_unsolicited"), 0);
	assert_int_equal(counter("fabric_rx_mismatch"), 0);

	peer_id(&id, 2);
	nk = host_keys_of(&id, 0, keys);
	for (unsigned i = 0; i < nk; i++) {
		assert_int_equal(lookup(&w, keys[i], &found), LOOKUP_FOUND);
		assert_ptr_equal(found, h);
	}
	assert_int_equal(count_sent(FW_REQUEST), 1);

	deliver(&m, 2); /* a duplicate: its query is over */
	assert_int_equal(counter("fabric_rx_unsolicited"), 1);
	advance(3000);
	assert_int_equal(fake.n_sent, 1);
	assert_int_equal(w.calls, 0); /* the last lookup() never waited */
}

/* A REPLY whose transaction id is not in flight is dropped (nothing of it is
 * stored) and counted; the query goes on and a REPLY with its id ends it. */
static void test_reply_unknown_tid(void **state)
{
	static struct twaiter w;
	struct fw_msg m;
	uint64_t tid;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w, key_name("node2"), NULL), LOOKUP_WAIT);
	tid = nth_sent(FW_REQUEST, 0)->m.tid;

	peer_reply(&m, 2, tid + 1);
	deliver(&m, 2);
	peer_reply(&m, 2, 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_rx_unsolicited"), 2);
	assert_int_equal(counter("fabric_rx"), 2);
	assert_peer_absent(2);
	assert_int_equal(w.calls, 0);
	assert_int_equal(ctx.res.pending.n, 1);

	advance(120); /* the query retries as if nothing came */
	assert_int_equal(count_sent(FW_REQUEST), 2);
	peer_reply(&m, 2, tid);
	deliver(&m, 2);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, 0);
	assert_peer_stored(2);
	assert_int_equal(counter("fabric_rx_unsolicited"), 2);
}

/* A REPLY with the right transaction id from a host that does not own the
 * queried key is dropped (rx_mismatch): nothing stored, the query goes on. */
static void test_reply_other_key(void **state)
{
	static struct twaiter w;
	struct fw_msg m;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w, key_v4("198.18.0.2"), NULL), LOOKUP_WAIT);
	peer_reply(&m, 3, nth_sent(FW_REQUEST, 0)->m.tid);
	deliver(&m, 3);
	assert_int_equal(counter("fabric_rx_mismatch"), 1);
	assert_int_equal(counter("fabric_rx_unsolicited"), 0);
	assert_peer_absent(3);
	assert_peer_absent(2);
	assert_int_equal(w.calls, 0);
	assert_int_equal(ctx.res.pending.n, 1);
	advance(120);
	assert_int_equal(count_sent(FW_REQUEST), 2);
	advance(3000);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, -ETIMEDOUT);
}

/* A REQUEST from a peer for someone else: the requester is stored (with the
 * best group both joined) and a lookup waiting for it ends; no REPLY. */
static void test_overhear_request(void **state)
{
	static struct twaiter w;
	struct fw_msg m;
	struct host *h;
	uint8_t mtu, rate;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(lookup(&w, key_gid("fe80::2:c903:0:3"), NULL), LOOKUP_WAIT);
	assert_int_equal(fake.n_sent, 1);

	peer_request(&m, 3, 0x77, key_name("node4"));
	m.n_groups = 1; /* the requester joined only the lowest group */
	deliver(&m, 3);
	h = assert_peer_stored(3);
	host_group(h, &mtu, &rate);
	assert_int_equal(mtu, MTU_2048);
	assert_int_equal(rate, RATE_10);
	assert_int_equal(counter("fabric_overheard"), 1);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, 0);
	assert_int_equal(ctx.res.pending.n, 0);
	assert_int_equal(fake.n_sent, 1); /* no REPLY: not ours to answer */
	assert_int_equal(counter("fabric_replies_sent"), 0);
	assert_null(find(key_name("node4")));

	/* an ANNOUNCE is overheard too */
	announce_from(5);
	assert_peer_stored(5);
	assert_int_equal(counter("fabric_overheard"), 2);
	assert_int_equal(fake.n_sent, 1);
}

/* The owner answers a REQUEST for any of its keys with a REPLY unicast back
 * to the requester's address: its identity, the transaction id, the best
 * group both joined; and stores the requester. */
static void test_owner_replies(void **state)
{
	const struct host_key targets[] = {
		key_name("node1"),
		key_name("NODE1.Cluster.Example"),
		key_v4("198.18.0.1"),
		key_v6("2001:db8::1"),
		key_gid("fe80::2:c903:0:1"),
	};
	struct transport_addr from = peer_addr(2);
	const struct sent_dgram *s;
	struct fw_msg m;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	for (unsigned i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		peer_request(&m, 2, 0x1000 + i, targets[i]);
		deliver(&m, 2);
		assert_int_equal(fake.n_sent, i + 1);
		s = last_sent();
		assert_true(s->ucast);
		assert_int_equal(s->to.len, from.len);
		assert_memory_equal(&s->to.ss, &from.ss, from.len);
		assert_int_equal(s->m.type, FW_REPLY);
		/* announcements off: our silence says nothing */
		assert_int_equal(s->m.flags, SAYS_OFF);
		assert_int_equal(s->m.tid, 0x1000 + i);
		assert_true(s->m.has_chosen);
		assert_int_equal(s->m.chosen.mtu, MTU_4096); /* the best common group */
		assert_int_equal(s->m.chosen.rate, RATE_40);
		assert_is_us(&s->m.sender);
	}
	assert_int_equal(counter("fabric_replies_sent"), 5);
	assert_int_equal(counter("fabric_tx_ucast"), 5);
	assert_peer_stored(2);

	/* a requester with the lowest group only gets that one */
	peer_request(&m, 3, 0x2000, key_name("node1"));
	m.n_groups = 1;
	deliver(&m, 3);
	s = last_sent();
	assert_int_equal(s->m.type, FW_REPLY);
	assert_int_equal(s->m.chosen.mtu, MTU_2048);
	assert_int_equal(s->m.chosen.rate, RATE_10);
	assert_peer_stored(3);
	assert_int_equal(counter("fabric_replies_sent"), 6);
	assert_int_equal(counter("fabric_overheard"), 6); /* each requester stored */

	/* a REQUEST for someone else's key gets no REPLY */
	peer_request(&m, 4, 0x3000, key_v4("198.18.0.2"));
	deliver(&m, 4);
	assert_int_equal(fake.n_sent, 6);
	assert_peer_stored(4);

	/* a node that announces says so in its REPLY too: a host learned from
	 * it alone is one whose silence means it left */
	stop();
	start(DIRECTORY, NULL);
	peer_request(&m, 2, 0x4000, key_name("node1"));
	deliver(&m, 2);
	assert_int_equal(last_sent()->m.type, FW_REPLY);
	assert_int_equal(last_sent()->m.flags, SAYS_ON);
}

/* @m, from an InfiniBand port of SLID @slid (no IP address). */
static void deliver_from_lid(const struct fw_msg *m, uint16_t slid)
{
	struct transport_addr a = {.lid = slid, .qpn = m->sender.qpn};
	uint8_t buf[FW_MAX_LEN];
	int len = fw_encode(m, NULL, 0, buf, sizeof(buf));

	assert_true(len > FW_HDR_LEN);
	memcpy(a.gid, m->sender.gids[0], 16);
	fake.t->recv(fake.t, buf, (size_t)len, &a);
}

/* The subnet manager gave two live peers each other's LID (a failover's
 * reassignment): the SLID of an InfiniBand datagram, which the sending
 * port's HCA sets, proves the new LID, and the sender takes it from the
 * host that had it; the same claim from another SLID, or over IP, is a
 * conflict still. */
static void test_lid_moved_by_the_subnet_manager(void **state)
{
	struct fw_msg m;
	struct host *h;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	deliver_from_lid(&m, 2);
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	deliver_from_lid(&m, 3);
	assert_non_null(find(key_name("node2")));
	assert_non_null(find(key_name("node3")));
	/* node2 says LID 3, from another SLID, or over IP: node3's still */
	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	m.sender.lid = 3;
	deliver_from_lid(&m, 2);
	assert_int_equal(counter("fabric_rx_conflict"), 1);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_rx_conflict"), 2);
	h = find(key_lid(3));
	assert_non_null(h);
	assert_string_equal(host_name(h, (char[IBRES_NAME_MAX + 1]){0}), "node3");
	/* from SLID 3: the subnet manager moved it; node2 holds LID 3 now */
	deliver_from_lid(&m, 3);
	assert_int_equal(counter("fabric_rx_conflict"), 2);
	h = find(key_lid(3));
	assert_non_null(h);
	assert_string_equal(host_name(h, (char[IBRES_NAME_MAX + 1]){0}), "node2");
	assert_null(find(key_lid(2)));
}

/* First come, first served: a second identity claiming a live peer's name,
 * address or GID, a static host's or our own is dropped and counted; a
 * REQUEST from it gets no REPLY. */
static void test_conflicts(void **state)
{
	struct fw_msg m;

	(void)state;
	start(ANNOUNCE_OFF, "fe80::2:c903:0:10 16 login1 198.18.1.1\n");
	announce_from(2);
	assert_peer_stored(2);
	assert_int_equal(counter("fabric_overheard"), 1);

	/* node5 claims node2's name */
	peer_msg(&m, FW_ANNOUNCE, 5, 0);
	strcpy(m.sender.names[1], "node2");
	deliver(&m, 5);
	assert_int_equal(counter("fabric_rx_conflict"), 1);
	assert_peer_absent(5);

	/* node6 claims node2's IPv4 address */
	peer_msg(&m, FW_ANNOUNCE, 6, 0);
	assert_int_equal(inet_pton(AF_INET, "198.18.0.2", &m.sender.v4[1]), 1);
	m.sender.n_v4 = 2;
	deliver(&m, 6);
	assert_int_equal(counter("fabric_rx_conflict"), 2);
	assert_peer_absent(6);

	/* node2's GID under another canonical name */
	peer_msg(&m, FW_ANNOUNCE, 7, 0);
	assert_int_equal(inet_pton(AF_INET6, "fe80::2:c903:0:2", m.sender.gids[0]), 1);
	deliver(&m, 7);
	assert_int_equal(counter("fabric_rx_conflict"), 3);
	assert_null(find(key_name("node7")));

	/* our own name, a static host's address */
	peer_msg(&m, FW_ANNOUNCE, 8, 0);
	strcpy(m.sender.names[1], "node1");
	deliver(&m, 8);
	peer_msg(&m, FW_ANNOUNCE, 9, 0);
	assert_int_equal(inet_pton(AF_INET, "198.18.1.1", &m.sender.v4[0]), 1);
	deliver(&m, 9);
	assert_int_equal(counter("fabric_rx_conflict"), 5);
	assert_peer_absent(8);
	assert_peer_absent(9);
	assert_int_equal(host_origin(find(key_name("node1"))), IBRES_ORIGIN_LOCAL);
	assert_int_equal(host_origin(find(key_v4("198.18.1.1"))), IBRES_ORIGIN_STATIC);

	/* a forged requester gets nothing from us */
	peer_request(&m, 5, 0x55, key_name("node1"));
	strcpy(m.sender.names[1], "node2");
	deliver(&m, 5);
	assert_int_equal(counter("fabric_rx_conflict"), 6);
	assert_int_equal(fake.n_sent, 0);
	assert_int_equal(counter("fabric_replies_sent"), 0);

	/* node2 is untouched */
	assert_ptr_equal(assert_peer_stored(2), find(key_name("node2")));
	assert_int_equal(counter("fabric_overheard"), 1);

	/* a refresh of the same identity is no conflict */
	announce_from(2);
	assert_int_equal(counter("fabric_rx_conflict"), 6);
	assert_int_equal(counter("fabric_overheard"), 2);
}

/* The directory rule: with announcements every 10 s (at most half of
 * addr_ttl), once settle_time has passed an unknown cluster name or address
 * is NOTFOUND at once, without a REQUEST. Names outside the patterns and
 * LIDs are never asked. */
static void test_directory_rule(void **state)
{
	struct host_key k;
	static struct twaiter w;

	(void)state;
	start(DIRECTORY, NULL);

	/* outside the patterns: never asked, even before the settle time */
	assert_int_equal(lookup(&w, key_name("www.example.org"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(lookup(&w, key_lid(9), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(count_sent(FW_REQUEST), 0);

	/* before the settle time a miss is asked */
	assert_int_equal(lookup(&w, key_name("node9"), NULL), LOOKUP_WAIT);
	assert_int_equal(count_sent(FW_REQUEST), 1);

	announce_from(2);
	advance_to(START_MS + 2000 - 1);
	k = key_name("node8");
	assert_true(fabric_may_query(ctx.fabric, &k));
	assert_int_equal(w.calls, 1); /* node9 timed out meanwhile */
	assert_int_equal(w.status, -ETIMEDOUT);
	assert_int_equal(count_sent(FW_REQUEST), 3);

	advance_to(START_MS + 2000);
	assert_false(fabric_may_query(ctx.fabric, &k));
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_NOTFOUND);
	assert_int_equal(lookup(&w, key_v4("198.18.0.8"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(lookup(&w, key_gid("fe80::2:c903:0:8"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(lookup(&w, key_name("www.example.org"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(lookup(&w, key_name("node2"), NULL), LOOKUP_FOUND);
	assert_int_equal(lookup(&w, key_name("node9"), NULL), LOOKUP_TIMEDOUT);
	advance(10000);
	assert_int_equal(lookup(&w, key_name("node9"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(count_sent(FW_REQUEST), 3);
	assert_int_equal(ctx.res.pending.n, 0);
}

/* Without the directory (announcements off, or an interval over half of
 * addr_ttl), a miss is asked after the settle time too; names outside the
 * patterns still are not. */
static void test_no_directory(void **state)
{
	static const char *const modes[] = { ANNOUNCE_OFF, "retries = 2\nannounce_interval = 60s\n" };
	static struct twaiter w;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		start(modes[i], NULL);
		advance(5000);
		assert_int_equal(lookup(&w, key_name("www.example.org"), NULL), LOOKUP_NOTFOUND);
		assert_int_equal(count_sent(FW_REQUEST), 0);
		assert_int_equal(lookup(&w, key_name("node8"), NULL), LOOKUP_WAIT);
		assert_int_equal(count_sent(FW_REQUEST), 1);
		/* it announces all the same (at 60 s), and says so */
		assert_int_equal(nth_sent(FW_REQUEST, 0)->m.flags, i ? SAYS_ON : SAYS_OFF);
		stop();
	}
}

/* Start-up: three NEWCOMER announcements of one burst, the first within
 * 100 ms, the others settle_time / 4 ± 10% apart; then one every
 * announce_interval ± 10% without the NEWCOMER flag. */
static void test_startup_announces(void **state)
{
	const struct sent_dgram *a[5];

	(void)state;
	start(DIRECTORY, NULL);
	advance_to(START_MS + 2000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 3);
	for (unsigned i = 0; i < 3; i++) {
		a[i] = nth_sent(FW_ANNOUNCE, i);
		assert_false(a[i]->ucast);
		assert_int_equal(a[i]->group, 0);
		assert_int_equal(a[i]->m.flags, FW_FLAG_NEWCOMER | SAYS_ON);
		assert_int_equal(a[i]->m.tid, a[0]->m.tid);
		assert_is_us(&a[i]->m.sender);
	}
	assert_in_range(a[0]->at_ms - START_MS, 0, 99);
	assert_in_range(a[1]->at_ms - a[0]->at_ms, 450, 549);
	assert_in_range(a[2]->at_ms - a[1]->at_ms, 450, 549);

	advance_to(a[2]->at_ms + 8999);
	assert_int_equal(count_sent(FW_ANNOUNCE), 3);
	advance_to(a[2]->at_ms + 11000 + 11000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 5);
	a[3] = nth_sent(FW_ANNOUNCE, 3);
	a[4] = nth_sent(FW_ANNOUNCE, 4);
	assert_in_range(a[3]->at_ms - a[2]->at_ms, 9000, 10999);
	assert_in_range(a[4]->at_ms - a[3]->at_ms, 9000, 10999);
	for (unsigned i = 3; i < 5; i++) {
		assert_int_equal(a[i]->m.flags, SAYS_ON);
		assert_int_equal(a[i]->m.tid, 0);
		assert_is_us(&a[i]->m.sender);
	}
	assert_int_equal(counter("fabric_announces_sent"), 5);
	assert_int_equal(fake.n_sent, 5);
}

/* A node that heard a peer after its first NEWCOMER announce sends no
 * other: every node up heard that one, or answers it (the boot budget); its
 * next announce is the periodic one. The burst is checked all the same. */
static void test_startup_one_newcomer_once_heard(void **state)
{
	const struct sent_dgram *a;

	(void)state;
	start(DIRECTORY, NULL);
	advance_to(START_MS + 100);
	assert_int_equal(count_sent(FW_ANNOUNCE), 1);
	a = nth_sent(FW_ANNOUNCE, 0);
	assert_int_equal(a->m.flags, FW_FLAG_NEWCOMER | SAYS_ON);
	announce_from(2); /* a peer's answer */
	advance_to(START_MS + 2000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 1);
	/* the periodic one an interval (± 10 %) after the slot that sent
	 * nothing, settle_time / 4 after the first */
	advance_to(a->at_ms + 9000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 1);
	advance_to(a->at_ms + 12000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 2);
	assert_int_equal(nth_sent(FW_ANNOUNCE, 1)->m.flags, SAYS_ON);
	assert_int_equal(counter("fabric_announces_sent"), 2);
}

/* A NEWCOMER announcement gets one unicast ANNOUNCE of ours per burst,
 * unless it could hear our own multicast one: none before ours went out,
 * none when its UP says it listened then. */
static void test_newcomer_answered(void **state)
{
	struct transport_addr from = peer_addr(2);
	uint64_t ours;
	const struct sent_dgram *s;
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	peer_msg(&m, FW_ANNOUNCE, 2, 0xb1);
	m.flags = FW_FLAG_NEWCOMER;
	/* before our own first announce: that one reaches the newcomer, which
	 * is up; no answer */
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 0);
	advance_to(START_MS + 100);
	assert_int_equal(fake.n_sent, 1); /* our NEWCOMER announce */
	ours = last_sent()->at_ms;
	advance(5);
	fake.n_sent = 0;
	m.tid = 0xb0; /* its next burst, after ours went out */
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 1);
	s = last_sent();
	assert_true(s->ucast);
	assert_memory_equal(&s->to.ss, &from.ss, from.len);
	assert_int_equal(s->m.type, FW_ANNOUNCE);
	assert_int_equal(s->m.flags, SAYS_ON);
	assert_is_us(&s->m.sender);
	assert_peer_stored(2);

	deliver(&m, 2); /* the same burst again */
	assert_int_equal(fake.n_sent, 1);
	m.tid = 0xb2; /* a new burst (the peer resynced) */
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 2);
	assert_true(last_sent()->ucast);
	m.flags = 0; /* a periodic one */
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 2);
	assert_int_equal(counter("fabric_overheard"), 5);
	assert_int_equal(counter("fabric_announces_sent"), 3);

	/* a NEWCOMER that says it has listened since a millisecond before
	 * our last multicast announce heard us: no answer; one that started
	 * in the same millisecond (it may have joined after the send) or
	 * after: an answer */
	fake.n_sent = 0;
	m.flags = FW_FLAG_NEWCOMER;
	m.tid = 0xb3;
	m.has_up = true;
	m.up_ms = (uint32_t)(fake_now - ours + 1);
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 0);
	m.tid = 0xb4;
	m.up_ms = (uint32_t)(fake_now - ours);
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 1);
	assert_true(last_sent()->ucast);
	m.tid = 0xb5;
	m.up_ms = (uint32_t)(fake_now - ours - 1);
	deliver(&m, 2);
	assert_int_equal(fake.n_sent, 2);
}

/* GOODBYE removes the peer, every key of it; a GOODBYE from another identity
 * (the GID under another name, the name under another GID, a static host's)
 * changes nothing. */
static void test_goodbye(void **state)
{
	struct fw_msg m;

	(void)state;
	start(ANNOUNCE_OFF, "fe80::2:c903:0:10 16 login1 198.18.1.1\n");
	announce_from(2);
	assert_peer_stored(2);

	peer_msg(&m, FW_GOODBYE, 2, 0);
	strcpy(m.sender.names[0], "node7");
	deliver(&m, 7);
	peer_msg(&m, FW_GOODBYE, 2, 0);
	assert_int_equal(inet_pton(AF_INET6, "fe80::2:c903:0:7", m.sender.gids[0]), 1);
	deliver(&m, 7);
	peer_msg(&m, FW_GOODBYE, 2, 0);
	strcpy(m.sender.names[0], "login1");
	assert_int_equal(inet_pton(AF_INET6, "fe80::2:c903:0:10", m.sender.gids[0]), 1);
	deliver(&m, 7);
	assert_int_equal(counter("fabric_goodbyes_rx"), 0);
	assert_int_equal(counter("fabric_rx_mismatch"), 3);
	assert_peer_stored(2);
	assert_int_equal(host_origin(find(key_name("login1"))), IBRES_ORIGIN_STATIC);

	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	assert_peer_absent(2);
	assert_int_equal(ctx.store.stats.learned, 0);
	assert_int_equal(fake.n_sent, 0);

	/* the name is free now: another identity may take it */
	peer_msg(&m, FW_ANNOUNCE, 5, 0);
	strcpy(m.sender.names[1], "node2");
	deliver(&m, 5);
	assert_int_equal(counter("fabric_rx_conflict"), 0);
	assert_int_equal(
		memcmp(host_gid(find(key_name("node2")), (uint8_t[16]){0}), m.sender.gids[0], 16),
		0);
}

/* A learned host lives min(addr_ttl, its own TTL); the sweep timer removes
 * it (without any lookup) within a second of its expiry; its name may then
 * move to another identity, and a lookup asks the fabric again. */
static void test_expiry(void **state)
{
	struct fw_msg m;
	static struct twaiter w;
	uint64_t t0;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	t0 = fake_now;
	announce_from(2); /* TTL 3600 s: kept addr_ttl, 60 s */
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	m.sender.ttl = 10; /* asks for 10 s */
	deliver(&m, 3);
	assert_int_equal(host_expires_ms(find(key_name("node2"))), t0 + 60000);
	assert_int_equal(host_expires_ms(find(key_name("node3"))), t0 + 10000);
	assert_int_equal(ctx.store.stats.learned, 2);

	advance_to(t0 + 10000 - 1);
	assert_int_equal(ctx.store.stats.learned, 2);
	assert_int_equal(ctx.store.stats.expirations, 0);
	advance_to(t0 + 10000 + 1000);
	assert_int_equal(ctx.store.stats.learned, 1);
	assert_int_equal(ctx.store.stats.expirations, 1);

	advance_to(t0 + 60000 - 1);
	assert_int_equal(ctx.store.stats.learned, 1);
	assert_peer_stored(2);
	advance_to(t0 + 60000 + 1000);
	assert_int_equal(ctx.store.stats.learned, 0);
	assert_int_equal(ctx.store.stats.expirations, 2);
	assert_int_equal(ctx.store.stats.hosts, 1); /* ourselves */
	assert_int_equal(fake.n_sent, 0);

	/* asked again */
	assert_int_equal(lookup(&w, key_name("node2"), NULL), LOOKUP_WAIT);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	/* the name moved: no conflict with an expired owner; it answers */
	peer_reply(&m, 5, last_sent()->m.tid);
	strcpy(m.sender.names[1], "node2");
	deliver(&m, 5);
	assert_int_equal(counter("fabric_rx_conflict"), 0);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, 0);
	assert_int_equal(
		memcmp(host_gid(find(key_name("node2")), (uint8_t[16]){0}), m.sender.gids[0], 16),
		0);
}

/* The LID of the endpoint changes (as sa.c reports it): the local record
 * in the store takes it, the routes from the endpoint are dropped, and an
 * announcement goes out at once. */
static void test_identity_change_lid(void **state)
{
	struct ibres_path_record pr;
	struct ibres_hostrec old;
	struct endpoint *ep;
	struct host *h2, *me;
	unsigned before;
	bool cached;

	(void)state;
	start(DIRECTORY, NULL);
	ep = &ctx.eps.ep[0];
	advance(3000); /* past the start-up announcements */
	assert_int_equal(count_sent(FW_ANNOUNCE), 3);
	announce_from(2);
	h2 = find(key_name("node2"));
	assert_non_null(h2);
	assert_non_null(resolver_route(&ctx.res, ep, h2, &pr, &cached));
	assert_false(cached);
	assert_int_equal(be16toh(pr.slid), 1);
	assert_int_equal(be16toh(pr.dlid), 2);
	assert_non_null(resolver_route(&ctx.res, ep, h2, &pr, &cached));
	assert_true(cached);
	assert_non_null(host_route(&ctx.store, h2, 0, fake_now));

	old = ep->cfg.id;
	old.lid = 9;
	before = fake.n_sent;
	/* the one owner of the identity: store, routes, and the fabric told */
	assert_int_equal(endpoint_update(&ctx.eps, ep, &old), EP_CHANGE_PORT);

	me = find(key_name("node1"));
	assert_non_null(me);
	assert_int_equal(host_origin(me), IBRES_ORIGIN_LOCAL);
	assert_int_equal(host_lid(me), 9);
	assert_ptr_equal(find(key_lid(9)), me);
	assert_null(find(key_lid(1)));
	assert_ptr_equal(find(key_gid("fe80::2:c903:0:1")), me);
	h2 = find(key_name("node2"));
	assert_non_null(h2);
	assert_null(host_route(&ctx.store, h2, 0, fake_now));

	assert_int_equal(fake.n_sent, before); /* the same GID: no GOODBYE */
	advance(0);
	assert_int_equal(fake.n_sent, before + 1);
	assert_int_equal(last_sent()->m.type, FW_ANNOUNCE);
	assert_false(last_sent()->ucast);
	assert_int_equal(last_sent()->at_ms, fake_now);
	assert_is_us(&last_sent()->m.sender);
	assert_int_equal(last_sent()->m.sender.lid, 9);

	/* a new route from the endpoint carries the new LID */
	assert_non_null(resolver_route(&ctx.res, ep, h2, &pr, &cached));
	assert_false(cached);
	assert_int_equal(be16toh(pr.slid), 9);
}

/* The GID changes: a GOODBYE for the old identity, the new record in the
 * store (the old GID leads nowhere), routes dropped, an announcement. */
static void test_identity_change_gid(void **state)
{
	struct ibres_path_record pr;
	struct ibres_hostrec old;
	const struct sent_dgram *s;
	struct endpoint *ep;
	struct host *h2, *me;
	unsigned before;
	bool cached;

	(void)state;
	start(DIRECTORY, NULL);
	ep = &ctx.eps.ep[0];
	advance(3000);
	announce_from(2);
	h2 = find(key_name("node2"));
	assert_non_null(resolver_route(&ctx.res, ep, h2, &pr, &cached));
	assert_non_null(host_route(&ctx.store, h2, 0, fake_now));

	old = ep->cfg.id;
	{
		struct ibres_hostrec id = old;

		assert_int_equal(inet_pton(AF_INET6, "fe80::2:c903:0:99", id.gids[0]), 1);
		before = fake.n_sent;
		assert_int_equal(endpoint_update(&ctx.eps, ep, &id), EP_CHANGE_GID);
	}

	me = find(key_name("node1"));
	assert_non_null(me);
	assert_int_equal(host_origin(me), IBRES_ORIGIN_LOCAL);
	assert_memory_equal(host_gid(me, (uint8_t[16]){0}), ep->cfg.id.gids[0], 16);
	assert_ptr_equal(find(key_gid("fe80::2:c903:0:99")), me);
	assert_null(find(key_gid("fe80::2:c903:0:1")));
	assert_ptr_equal(find(key_v4("198.18.0.1")), me);
	assert_int_equal(ctx.store.stats.hosts, 2);
	h2 = find(key_name("node2"));
	assert_null(host_route(&ctx.store, h2, 0, fake_now));

	/* the old identity says goodbye at once, then the new one is announced */
	assert_int_equal(fake.n_sent, before + 1);
	s = last_sent();
	assert_int_equal(s->m.type, FW_GOODBYE);
	assert_false(s->ucast);
	assert_memory_equal(s->m.sender.gids[0], old.gids[0], 16);
	assert_string_equal(s->m.sender.names[0], "node1");
	assert_int_equal(s->m.sender.pkey, old.pkey);
	assert_int_equal(s->m.sender.lid, ep->cfg.id.lid);
	advance(0);
	assert_int_equal(fake.n_sent, before + 2);
	s = last_sent();
	assert_int_equal(s->m.type, FW_ANNOUNCE);
	assert_is_us(&s->m.sender);

	assert_non_null(resolver_route(&ctx.res, ep, h2, &pr, &cached));
	assert_false(cached);
	assert_memory_equal(pr.sgid, ep->cfg.id.gids[0], 16);
}

/* Started with @conf and past its start-up: endpoint 0's identity in
 * *@old, and in *@id the same with another port GID (fe80::2:c903:0:99),
 * for endpoint_update(). */
static struct endpoint *start_for_gid_change(const char *conf, struct ibres_hostrec *old,
					     struct ibres_hostrec *id)
{
	struct endpoint *ep;

	start(conf, NULL);
	ep = &ctx.eps.ep[0];
	advance(3000);
	*old = ep->cfg.id;
	*id = *old;
	assert_int_equal(inet_pton(AF_INET6, "fe80::2:c903:0:99", id->gids[0]), 1);
	return ep;
}

/* With announcements off nothing else goes out: an owed goodbye is tried
 * on a timer, 100 ms then doubling, and once said the timer stops. */
static void test_owed_goodbye_timer(void **state)
{
	struct ibres_hostrec old, id;
	struct endpoint *ep;
	struct fw_msg m;
	unsigned before;

	(void)state;
	ep = start_for_gid_change(ANNOUNCE_OFF, &old, &id);
	/* a datagram under the old identity first (an answer): peers hold it */
	peer_request(&m, 2, 0x3000, key_name("node1"));
	deliver(&m, 2);
	assert_int_equal(last_sent()->m.type, FW_REPLY);
	before = fake.n_sent;
	fake.mcast_fails = 2; /* at the change, and at the first retry */
	assert_int_equal(endpoint_update(&ctx.eps, ep, &id), EP_CHANGE_GID);
	assert_int_equal(fake.n_sent, before);
	advance(99);
	assert_int_equal(fake.n_sent, before);
	advance(1); /* 100 ms: fails again */
	assert_int_equal(fake.mcast_fails, 0);
	assert_int_equal(fake.n_sent, before);
	advance(199);
	assert_int_equal(fake.n_sent, before);
	advance(1); /* 200 ms later: it goes */
	assert_int_equal(fake.n_sent, before + 1);
	assert_int_equal(last_sent()->m.type, FW_GOODBYE);
	assert_memory_equal(last_sent()->m.sender.gids[0], old.gids[0], 16);
	advance(60000);
	assert_int_equal(fake.n_sent, before + 1);
}

/* A goodbye that cannot go (the port's multicast not joined yet) is owed:
 * each datagram tries it first; one that goes while it is owed goes under
 * the new identity, and the goodbye after it is still the old one's. */
static void test_identity_change_goodbye_retried(void **state)
{
	struct ibres_hostrec old, id;
	struct endpoint *ep;
	unsigned before;

	(void)state;
	ep = start_for_gid_change(DIRECTORY, &old, &id);
	before = fake.n_sent;
	fake.mcast_fails = 2; /* the goodbye at the change, and again at the announce */
	assert_int_equal(endpoint_update(&ctx.eps, ep, &id), EP_CHANGE_GID);
	assert_int_equal(fake.n_sent, before);
	advance(0);
	assert_int_equal(fake.mcast_fails, 0);
	assert_int_equal(fake.n_sent, before + 1);
	assert_int_equal(last_sent()->m.type, FW_ANNOUNCE);
	assert_memory_equal(last_sent()->m.sender.gids[0], id.gids[0], 16);
	advance(1000); /* the goodbye timer (100 ms), then REANNOUNCE_MS */
	assert_int_equal(fake.n_sent, before + 3);
	assert_int_equal(fake.sent[before + 1].m.type, FW_GOODBYE);
	assert_memory_equal(fake.sent[before + 1].m.sender.gids[0], old.gids[0], 16);
	assert_string_equal(fake.sent[before + 1].m.sender.names[0], "node1");
	assert_int_equal(fake.sent[before + 1].m.sender.n_names, 1);
	assert_int_equal(fake.sent[before + 1].m.sender.lid, id.lid);
	assert_int_equal(fake.sent[before + 1].m.sender.pkey, old.pkey);
	assert_int_equal(last_sent()->m.type, FW_ANNOUNCE);
	/* said once: the next periodic announcement goes alone */
	before = fake.n_sent;
	advance(11000); /* announce_interval 10 s, +- 10 % */
	assert_true(fake.n_sent > before);
	assert_int_equal(last_sent()->m.type, FW_ANNOUNCE);
	assert_int_equal(count_sent(FW_GOODBYE), 1);
}

/* A reload replaces the static hosts and the settings and keeps what was
 * learned; a query in flight for a key the new hosts file holds ends. */
static void test_reload(void **state)
{
	static struct ibres_config cfg; /* large */
	struct cfg_hosts hosts;
	static struct twaiter w;
	struct host *h;

	(void)state;
	start(ANNOUNCE_OFF, "fe80::2:c903:0:10 16 login1 198.18.1.1\n");
	announce_from(2);
	announce_from(3);
	assert_int_equal(host_origin(find(key_name("login1"))), IBRES_ORIGIN_STATIC);
	assert_int_equal(lookup(&w, key_name("login2"), NULL), LOOKUP_WAIT);
	assert_int_equal(ctx.cfg.timeout_ms, 100);

	parse_config(&cfg, &hosts, "retries = 1\nannounce_interval = 0\n",
		     "fe80::2:c903:0:11 17 login2 198.18.1.2\n"
		     "fe80::2:c903:0:12 18 login3 198.18.0.3\n");
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	assert_int_equal(hosts.n_hosts, 0); /* the daemon owns them now */
	hosts_free(&hosts);

	assert_int_equal(ctx.cfg.retries, 1);
	assert_int_equal(ctx.res.n_static_hosts, 2);
	assert_null(find(key_name("login1")));
	assert_null(find(key_v4("198.18.1.1")));
	assert_null(find(key_gid("fe80::2:c903:0:10")));
	assert_null(find(key_lid(16)));
	h = find(key_name("login2"));
	assert_non_null(h);
	assert_int_equal(host_origin(h), IBRES_ORIGIN_STATIC);
	assert_ptr_equal(find(key_v4("198.18.1.2")), h);
	assert_ptr_equal(find(key_lid(17)), h);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, 0);
	assert_int_equal(ctx.res.pending.n, 0);

	assert_peer_stored(2);
	assert_int_equal(host_origin(find(key_name("node1"))), IBRES_ORIGIN_LOCAL);
	/* the new truth takes the learned key it claims; the rest stays learned */
	h = find(key_v4("198.18.0.3"));
	assert_int_equal(host_origin(h), IBRES_ORIGIN_STATIC);
	assert_ptr_equal(h, find(key_name("login3")));
	h = find(key_name("node3"));
	assert_non_null(h);
	assert_int_equal(host_origin(h), IBRES_ORIGIN_FABRIC);
	assert_ptr_equal(find(key_gid("fe80::2:c903:0:3")), h);
	assert_int_equal(ctx.store.stats.hosts, 5);
	assert_int_equal(ctx.store.stats.learned, 2);
	assert_int_equal(store_check(&ctx.store), 0);

	/* the new settings apply: retries = 1 */
	assert_int_equal(count_sent(FW_REQUEST), 1); /* login2's */
	assert_int_equal(lookup(&w, key_name("node4"), NULL), LOOKUP_WAIT);
	advance(2000);
	assert_int_equal(count_sent(FW_REQUEST), 3);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.status, -ETIMEDOUT);
}

/* A reload that turns announcements off stops them, and the directory rule
 * with them, after one last announcement that says so; one that turns them
 * on starts over as a newcomer: three NEWCOMER announcements of a new burst,
 * misses asked for a settle time. */
static void test_reload_announcements(void **state)
{
	static struct ibres_config cfg;
	static struct twaiter w;
	struct cfg_hosts hosts;
	struct host_key k = key_name("node8");
	uint64_t t, burst;

	(void)state;
	start(DIRECTORY, NULL);
	advance(3000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 3);
	burst = nth_sent(FW_ANNOUNCE, 0)->m.tid;
	assert_false(fabric_may_query(ctx.fabric, &k));

	parse_config(&cfg, &hosts, ANNOUNCE_OFF, NULL);
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	hosts_free(&hosts);
	/* at once, the last: peers no longer take our silence for absence */
	assert_int_equal(count_sent(FW_ANNOUNCE), 4);
	assert_int_equal(last_sent()->m.flags, SAYS_OFF);
	assert_true(last_sent()->m.has_digest);
	assert_int_equal(last_sent()->m.digest.seq, nth_sent(FW_ANNOUNCE, 2)->m.digest.seq + 1);
	advance(60000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 4);
	assert_int_equal(fake.n_sent, 4);
	assert_true(fabric_may_query(ctx.fabric, &k));
	assert_int_equal(lookup(&w, k, NULL), LOOKUP_WAIT);
	advance(1000);
	assert_int_equal(w.status, -ETIMEDOUT);
	assert_int_equal(count_sent(FW_REQUEST), 3);
	/* announcements off at once: every datagram says it does not announce */
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(nth_sent(FW_REQUEST, i)->m.flags, SAYS_OFF);

	parse_config(&cfg, &hosts, DIRECTORY, NULL);
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	hosts_free(&hosts);
	t = fake_now;
	k = key_name("node7");
	advance_to(t + 2000 - 1);
	assert_true(fabric_may_query(ctx.fabric, &k));
	assert_int_equal(count_sent(FW_ANNOUNCE), 7);
	for (unsigned i = 4; i < 7; i++) {
		assert_int_equal(nth_sent(FW_ANNOUNCE, i)->m.flags, FW_FLAG_NEWCOMER | SAYS_ON);
		assert_int_equal(nth_sent(FW_ANNOUNCE, i)->m.tid, nth_sent(FW_ANNOUNCE, 4)->m.tid);
	}
	assert_int_not_equal(nth_sent(FW_ANNOUNCE, 4)->m.tid, burst);
	advance_to(t + 2000);
	assert_false(fabric_may_query(ctx.fabric, &k));
	advance(11000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 8);
	assert_int_equal(last_sent()->m.flags, SAYS_ON);

	/* off again: one last announcement; a reload that keeps them off sends
	 * nothing */
	parse_config(&cfg, &hosts, ANNOUNCE_OFF, NULL);
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	hosts_free(&hosts);
	assert_int_equal(count_sent(FW_ANNOUNCE), 9);
	assert_int_equal(last_sent()->m.flags, SAYS_OFF);
	parse_config(&cfg, &hosts, ANNOUNCE_OFF, NULL);
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	hosts_free(&hosts);
	advance(60000);
	assert_int_equal(count_sent(FW_ANNOUNCE), 9);
}

/* The transport's QPN (the ib transport's UD QP) is the endpoint's: in the
 * store and in what is announced, before and after a reload. */
static void test_reload_keeps_transport_qpn(void **state)
{
	static struct ibres_config cfg;
	struct ibres_hostrec rec;
	struct cfg_hosts hosts;
	struct fw_msg m;

	(void)state;
	fake.qpn = 0x4242;
	start(ANNOUNCE_OFF, NULL);
	assert_int_equal(ctx.eps.ep[0].cfg.id.qpn, 0x4242);
	host_record(find(key_name("node1")), &rec, fake_now);
	assert_int_equal(rec.qpn, 0x4242);

	parse_config(&cfg, &hosts, ANNOUNCE_OFF, NULL);
	assert_int_equal(resolver_reload(&ctx.res, &cfg, &hosts), 0);
	hosts_free(&hosts);
	assert_int_equal(ctx.eps.ep[0].cfg.id.qpn, 0x4242);
	host_record(find(key_name("node1")), &rec, fake_now);
	assert_int_equal(rec.qpn, 0x4242);

	peer_request(&m, 2, 0x99, key_name("node1"));
	deliver(&m, 2);
	assert_int_equal(last_sent()->m.type, FW_REPLY);
	assert_int_equal(last_sent()->m.sender.qpn, 0x4242);
}

/* Peer @n's announce carrying a DIGEST: @hosts hosts, announce number
 * @seq, @flags (RANGES: it answers range queries). */
static void announce_digest(unsigned n, uint32_t hosts, uint32_t seq, uint8_t flags)
{
	struct fw_msg m;

	peer_msg(&m, FW_ANNOUNCE, n, 0);
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = hosts, .sum = 0x5eed + hosts, .seq = seq,
				      .flags = flags};
	deliver(&m, n);
}

/* RANGE_QUERYs sent to peer @n. */
static unsigned range_queries_to(unsigned n)
{
	struct transport_addr a = peer_addr(n);
	unsigned k = 0;

	for (unsigned i = 0; i < fake.n_sent; i++)
		k += fake.sent[i].m.type == FW_RANGE_QUERY && fake.sent[i].ucast &&
		     !memcmp(&fake.sent[i].to.ss, &a.ss, a.len);
	return k;
}

/* Announce numbers are compared between multicast announces only: a unicast
 * answer repeats its sender's last multicast number and may be read before
 * that multicast announce (another socket, a storm's backlog), which is no
 * gap; a multicast number past the next is one. */
static void test_unicast_answer_no_gap(void **state)
{
	(void)state;
	start(DIRECTORY, NULL);
	announce_digest(2, 1, 1, FW_DIGEST_RANGES);
	announce_digest(2, 2, 2, FW_DIGEST_RANGES | FW_DIGEST_UNICAST); /* ahead of multicast 2 */
	announce_digest(2, 2, 2, FW_DIGEST_RANGES);
	announce_digest(2, 2, 3, FW_DIGEST_RANGES);
	assert_int_equal(counter("fabric_rx_gaps"), 0);
	announce_digest(2, 2, 9, FW_DIGEST_RANGES | FW_DIGEST_UNICAST);
	assert_int_equal(counter("fabric_rx_gaps"), 0);
	announce_digest(2, 2, 5, FW_DIGEST_RANGES); /* multicast 4 was not heard */
	assert_int_equal(counter("fabric_rx_gaps"), 1);
	assert_int_equal(counter("fabric_overheard"), 6);
}

/* The digest of our answer to peer 3's range query (the last datagram sent). */
static uint8_t answer_flags(uint64_t tid)
{
	struct fw_msg m;

	peer_msg(&m, FW_RANGE_QUERY, 3, tid);
	m.has_range = true;
	m.range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	deliver(&m, 3);
	assert_int_equal(last_sent()->m.type, FW_RANGE_ANSWER);
	assert_true(last_sent()->m.has_digest);
	return last_sent()->m.digest.flags;
}

/* Our digest says DISTURBED for a hold after a loss (an announce number
 * skipped) or a digest other than ours, so that peers that lost the same
 * datagrams take no vouching from it; a hold of quiet later it does not. */
static void test_disturbed_digest_says_so(void **state)
{
	(void)state;
	start(DIRECTORY, NULL);
	advance_to(START_MS + 5000);
	assert_false(answer_flags(0x100) & FW_DIGEST_DISTURBED);
	announce_digest(2, 1, 1, FW_DIGEST_RANGES);
	announce_digest(2, 1, 3, FW_DIGEST_RANGES); /* 2 was not heard */
	assert_int_equal(counter("fabric_rx_gaps"), 1);
	assert_true(answer_flags(0x200) & FW_DIGEST_DISTURBED);
	advance(DIGEST_HOLD_MS - 1);
	assert_true(answer_flags(0x300) & FW_DIGEST_DISTURBED);
	advance(1);
	assert_false(answer_flags(0x400) & FW_DIGEST_DISTURBED);
	/* a peer holding more: a disagreement disturbs as a loss does */
	announce_digest(2, 9, 4, FW_DIGEST_RANGES);
	assert_true(answer_flags(0x500) & FW_DIGEST_DISTURBED);
}

/* A fetch whose peer answers nothing: each query is tried FETCH_TRIES times,
 * then the session ends (no other peer to move on to); the peer is forgotten
 * after FETCH_STRIKES unanswered queries in a row, not after the first (on a
 * lossy fabric most are lost). A peer that asks us a range query answers
 * them too: it refills the list. */
static void test_fetch_keeps_lossy_peers(void **state)
{
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	/* peer 2 holds 5 hosts: we can never meet that claim */
	announce_digest(2, 5, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	/* (all within one announce round, before a quiet round could
	 * overrule the claim) */
	advance_to(START_MS + 8000);
	assert_int_equal(counter("directory_complete"), 0);
	assert_int_equal(range_queries_to(2), FETCH_STRIKES * FETCH_TRIES);
	assert_int_equal(counter("fabric_fetch_timeouts"), FETCH_STRIKES);
	assert_int_equal(counter("fabric_fetch_sessions"), FETCH_STRIKES);
	advance_to(START_MS + 9000);
	assert_int_equal(range_queries_to(2), FETCH_STRIKES * FETCH_TRIES); /* forgotten */
	assert_int_equal(counter("directory_complete"), 0);

	/* peer 3 asks us: answered, and asked in turn by the next session */
	peer_msg(&m, FW_RANGE_QUERY, 3, 0x77);
	m.has_range = true;
	m.range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	deliver(&m, 3);
	assert_int_equal(count_sent(FW_RANGE_ANSWER), 1);
	assert_int_equal(range_queries_to(3), 0);
	advance(FETCH_IDLE_MS + 1);
	assert_int_equal(range_queries_to(3), 1);
	assert_int_equal(counter("fabric_fetch_sessions"), FETCH_STRIKES + 1);
}

/* Started, peers @a and @b claiming 5 hosts (settled, answering range
 * queries), until the fetch sends its first query. */
static void two_claimers_asked(unsigned a, unsigned b)
{
	start(DIRECTORY, NULL);
	announce_digest(a, 5, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	announce_digest(b, 5, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	while (!count_sent(FW_RANGE_QUERY) && fake_now < START_MS + 6000)
		advance(1);
}

/* A query the peer leaves unanswered moves on to another peer within the
 * session, never back to the one that did not answer. */
static void test_fetch_moves_on(void **state)
{
	unsigned to2, to4;
	uint64_t drops;

	(void)state;
	two_claimers_asked(2, 4);
	assert_int_equal(count_sent(FW_RANGE_QUERY), 1);
	drops = counter("fabric_rx_drops_detected");
	/* its three attempts, then the other peer's first, in one session */
	advance(FETCH_TRIES * FETCH_WAIT_MS + 1);
	to2 = range_queries_to(2);
	to4 = range_queries_to(4);
	assert_true((to2 == FETCH_TRIES && to4 == 1) || (to4 == FETCH_TRIES && to2 == 1));
	assert_int_equal(counter("fabric_fetch_sessions"), 1);
	assert_int_equal(counter("fabric_fetch_timeouts"), 1);
	/* its digest says it answers them: its silence is a loss */
	assert_int_equal(counter("fabric_fetch_losses"), 1);
	assert_true(counter("fabric_rx_drops_detected") > drops);
}

/* A host known only from its REPLY (a daemon before range queries, maybe)
 * is asked too, but its silence is no loss; a peer whose digest says it
 * answers them, silent, is one. */
static void test_fetch_silence_of_a_replier(void **state)
{
	struct twaiter tw = {0};
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	assert_int_equal(lookup(&tw, key_name("node2"), NULL), LOOKUP_WAIT);
	peer_reply(&m, 2, last_sent()->m.tid);
	deliver(&m, 2);
	assert_peer_stored(2);
	/* peer 3 claims more: asked first, silent (a loss); then peer 2 */
	announce_digest(3, 9, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	while (counter("fabric_fetch_timeouts") < 2 && fake_now < START_MS + 20000)
		advance(1);
	assert_int_equal(range_queries_to(2), FETCH_TRIES);
	assert_true(range_queries_to(3) >= FETCH_TRIES); /* (and at once again) */
	assert_int_equal(counter("fabric_fetch_losses"), 1);
}

static uint64_t name_term(const char *name)
{
	struct host_key k = key_name(name);

	return host_digest_term(&k);
}

/* The answer of peer @n to the range query sent last (other datagrams may
 * have followed it): the same tid and range, its digest (@hosts), range
 * flags @flags added; sums all zero. */
static void answer_last_query(struct fw_msg *m, unsigned n, uint32_t hosts, uint8_t flags)
{
	const struct sent_dgram *q = last_sent();

	while (q > fake.sent && q->m.type != FW_RANGE_QUERY)
		q--;
	assert_int_equal(q->m.type, FW_RANGE_QUERY);
	peer_msg(m, FW_RANGE_ANSWER, n, q->m.tid);
	m->has_range = true;
	m->range = q->m.range;
	m->range.flags |= flags;
	m->has_digest = true;
	m->digest = (struct fw_digest){.hosts = hosts, .sum = 1, .seq = 1,
				       .flags = FW_DIGEST_RANGES | FW_DIGEST_PAST_SETTLE};
	if (!(q->m.range.flags & FW_RANGE_NAMES))
		m->n_sums = q->m.range.parts;
}

/* At the burst's check, a claim still unmet is a loss (datagrams were
 * lost: fabric_rx_drops_detected), unless it is quiet: the peer holds more
 * only of a host that said goodbye to us (node5), which it missed. A claim
 * of a host we never heard (node9) is one. (The peer answers no range
 * query, so that the fetch, which would ask it, counts no loss of its
 * own.) */
static void test_burst_check_quiet_claim_is_no_loss(void **state)
{
	static const char *const extra[] = {"node5", "node9"};
	struct store_digest own;
	struct fw_msg m;

	(void)state;
	for (unsigned lost = 0; lost < 2; lost++) {
		start(DIRECTORY, NULL);
		advance(500);
		announce_from(3);
		announce_from(5);
		peer_msg(&m, FW_GOODBYE, 5, 0);
		deliver(&m, 5);
		assert_peer_absent(5);
		store_fabric_digest(&ctx.store, 0, &own);
		peer_msg(&m, FW_ANNOUNCE, 2, 0);
		m.has_digest = true;
		m.digest = (struct fw_digest){.hosts = (uint32_t)own.hosts + 2,
					      .sum = own.sum + name_term("node2") +
						     name_term(extra[lost]),
					      .seq = 1,
					      .flags = FW_DIGEST_FABRIC};
		deliver(&m, 2);
		assert_int_equal(counter("fabric_rx_drops_detected"), 0);
		advance_to(START_MS + 4000);
		assert_int_equal(counter("fabric_rx_drops_detected"), lost);
		stop();
	}
}

/* A node that holds no peer at its burst's check is complete, alone (the
 * first node of a cluster). The first peer's digest makes it incomplete (its
 * NEWCOMERs and every answer may have been lost at a lossy boot): its answer
 * to that very NEWCOMER is DISTURBED, and it asks the peer, whose settled
 * word after the hold ends it. */
static void test_alone_until_a_peer_speaks(void **state)
{
	struct store_digest own;
	struct fw_msg m;
	uint64_t until;

	(void)state;
	start(DIRECTORY, NULL);
	advance_to(START_MS + 4000);
	assert_int_equal(counter("directory_complete"), 1);
	peer_msg(&m, FW_ANNOUNCE, 2, 0x55);
	m.flags = FW_FLAG_NEWCOMER;
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 1, .sum = 7, .seq = 1, .flags = FW_DIGEST_RANGES};
	deliver(&m, 2);
	assert_int_equal(counter("directory_complete"), 0);
	assert_true(last_sent()->ucast);
	assert_int_equal(last_sent()->m.type, FW_ANNOUNCE);
	assert_true(last_sent()->m.digest.flags & FW_DIGEST_DISTURBED);
	store_digest(&ctx.store, &own);
	assert_int_equal(own.hosts, 2);
	for (until = fake_now + 3000; fake_now < until && count_sent(FW_RANGE_QUERY) == 0;)
		advance(1);
	assert_int_equal(count_sent(FW_RANGE_QUERY), 1);
	assert_true(fake_now >= START_MS + 4000 + DIGEST_HOLD_MS);
	answer_last_query(&m, 2, (uint32_t)own.hosts, 0);
	m.digest.sum = own.sum;
	deliver(&m, 2);
	assert_int_equal(counter("directory_complete"), 1);
}

/* Peer 3's settled digest of this fabric: ours, plus @extra's term when
 * @extra is a name (a host it holds and we do not). */
static void announce_with(unsigned n, uint32_t seq, const char *extra)
{
	struct store_digest own;
	struct fw_msg m;

	store_fabric_digest(&ctx.store, 0, &own);
	peer_msg(&m, FW_ANNOUNCE, n, 0);
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = (uint32_t)own.hosts + (extra ? 1 : 0),
				      .sum = own.sum + (extra ? name_term(extra) : 0),
				      .seq = seq,
				      .flags = FW_DIGEST_RANGES | FW_DIGEST_FABRIC |
					       FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE};
	deliver(&m, n);
}

/* Serve the fetch as the peers it asks, each holding what we hold plus
 * @extra (NULL: nothing more) at peer @where's address: sums with @extra's
 * part one host more, then that part's names with where each host is.
 * Returns once a REQUEST went out (or no query came for 2 s). */
static void serve_fetch(const char *extra, unsigned where)
{
	struct transport_addr at = peer_addr(where ? where : 1);
	unsigned seen = count_sent(FW_RANGE_QUERY), requests = count_sent(FW_REQUEST);
	uint64_t quiet_until = fake_now + 2000, t = extra ? name_term(extra) : 0;
	uint32_t more = extra ? 1 : 0;

	while (fake_now < quiet_until && count_sent(FW_REQUEST) == requests) {
		struct store_range r, sub;
		struct store_digest own, part[FW_PARTS_MAX];
		const struct sent_dgram *q;
		struct fw_msg m;
		unsigned n;

		advance(10);
		if (count_sent(FW_RANGE_QUERY) == seen)
			continue;
		q = nth_sent(FW_RANGE_QUERY, seen++);
		/* answered by the peer asked (@n, or another that holds the same) */
		n = ntohl(((const struct sockaddr_in *)&q->to.ss)->sin_addr.s_addr) & 0xff;
		store_fabric_digest(&ctx.store, 0, &own);
		peer_msg(&m, FW_RANGE_ANSWER, n, q->m.tid);
		m.has_range = true;
		m.range = q->m.range;
		m.has_digest = true;
		m.digest = (struct fw_digest){.hosts = (uint32_t)own.hosts + more,
					      .sum = own.sum + t,
					      .seq = 1,
					      .flags = FW_DIGEST_RANGES | FW_DIGEST_FABRIC |
						       FW_DIGEST_PAST_SETTLE | FW_DIGEST_SETTLED};
		if (q->m.range.flags & FW_RANGE_NAMES) {
			struct fw_where w = {.kind = FW_WHERE_IPV4};

			memcpy(w.addr, &((struct sockaddr_in *)&at.ss)->sin_addr, 4);
			if (extra && t >= q->m.range.lo && t <= q->m.range.hi)
				assert_int_equal(fw_hint_add_at(&m, extra, &w), 0);
		} else {
			r = (struct store_range){.lo = q->m.range.lo,
						 .hi = q->m.range.hi,
						 .parts = q->m.range.parts};
			store_range_digest(&ctx.store, &r, 0, part);
			m.n_sums = q->m.range.parts;
			for (unsigned i = 0; i < r.parts; i++) {
				m.sums[i] = (struct fw_sum){.hosts = (uint32_t)part[i].hosts,
							    .sum = part[i].sum};
				if (extra && store_range_sub(&r, i, &sub) && t >= sub.lo &&
				    t <= sub.hi) {
					m.sums[i].hosts++;
					m.sums[i].sum += t;
				}
			}
		}
		deliver(&m, n);
		quiet_until = fake_now + 2000;
	}
}

/* Peer @n's digest (number @seq) holds node2, which we lack: incomplete;
 * the fetch asks node2 where the peer says it is, and it answers. */
static void node2_back_through(unsigned n, uint32_t seq)
{
	unsigned requests = count_sent(FW_REQUEST);
	struct fw_msg m;

	announce_with(n, seq, "node2");
	assert_int_equal(counter("directory_complete"), 0);
	serve_fetch("node2", 2);
	assert_int_equal(count_sent(FW_REQUEST), requests + 1);
	peer_reply(&m, 2, last_sent()->m.tid);
	deliver(&m, 2);
	assert_peer_stored(2);
	assert_int_equal(counter("directory_complete"), 1);
}

/* A peer that missed node2's GOODBYE keeps it, and its digests hold one host
 * more than ours. A quiet claim: we fetch (the peer names where node2 is)
 * and ask node2 there, but our digests stay quiet; unanswered, that is no
 * loss and meets the claim. Then, while that is recent, such digests are no
 * news at all; later, a claim again, and node2, back, answers and is
 * learned. */
static void test_missed_goodbye_is_no_claim(void **state)
{
	struct transport_addr at = peer_addr(2);
	const struct sent_dgram *q;
	struct fw_msg m;
	unsigned queries, requests;
	uint64_t until, losses;

	(void)state;
	start(DIRECTORY, NULL);
	advance_to(START_MS + 4000);
	announce_with(2, 1, NULL);
	announce_with(3, 1, NULL);
	announce_with(4, 1, NULL);
	advance(DIGEST_HOLD_MS + 100);
	announce_with(2, 2, NULL);
	announce_with(3, 2, NULL);
	announce_with(4, 2, NULL);
	serve_fetch(NULL, 0);
	assert_int_equal(counter("directory_complete"), 1);
	losses = counter("fabric_fetch_losses");
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_peer_absent(2);

	/* a restart is a GOODBYE and a NEWCOMER: the claim is asked at once */
	announce_with(3, 3, "node2");
	assert_int_equal(counter("fabric_departed_explained"), 1);
	assert_int_equal(counter("fabric_digest_mismatches"), 0);
	assert_int_equal(counter("directory_complete"), 0);
	serve_fetch("node2", 2);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	q = nth_sent(FW_REQUEST, 0);
	assert_true(q->ucast);
	assert_memory_equal(&q->to.ss, &at.ss, at.len);
	assert_false(last_sent()->m.has_digest &&
		     (last_sent()->m.digest.flags & FW_DIGEST_DISTURBED));
	for (until = fake_now + 5000; fake_now < until && !counter("fabric_departed_confirmed");)
		advance(10);
	assert_int_equal(counter("fabric_departed_confirmed"), 1);
	assert_int_equal(counter("directory_complete"), 1);
	assert_int_equal(counter("fabric_fetch_losses"), losses);
	assert_int_equal(counter("fabric_hints_unanswered"), 0);
	assert_int_equal(counter("fabric_digest_mismatches"), 0);

	/* peer 3's word on node2 found stale lately: its digests are no news */
	queries = count_sent(FW_RANGE_QUERY);
	requests = count_sent(FW_REQUEST); /* the query's tries */
	announce_with(3, 4, "node2");
	assert_int_equal(counter("directory_complete"), 1);
	advance(2000);
	assert_int_equal(count_sent(FW_RANGE_QUERY), queries);
	assert_int_equal(count_sent(FW_REQUEST), requests);

	/* but peer 4's may be news: node2 came back (a restart on IB has a
	 * new QPN, which peer 3 does not know) and we missed its announces */
	advance(2000);
	node2_back_through(4, 3);
	/* it says goodbye again, and peer 3 keeps its old word */
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_peer_absent(2);

	/* later peer 3's word is asked again: node2 came back, answers */
	advance(DEPARTED_FRESH_MS);
	node2_back_through(3, 5);
	assert_int_equal(counter("fabric_departed_confirmed"), 1);
	assert_int_equal(counter("fabric_fetch_losses"), losses);
	assert_int_equal(counter("fabric_digest_mismatches"), 0);
}

/* Peer @n announces a digest of this fabric holding ours less the terms
 * of @gone (NULL-terminated), with @flags. */
static void announce_without(unsigned n, uint32_t seq, const char *const *gone, uint8_t flags)
{
	struct store_digest own;
	struct fw_msg m;

	store_fabric_digest(&ctx.store, 0, &own);
	peer_msg(&m, FW_ANNOUNCE, n, 0);
	m.has_digest = true;
	m.digest = (struct fw_digest){
		.hosts = (uint32_t)own.hosts, .sum = own.sum, .seq = seq, .flags = flags};
	for (; *gone; gone++) {
		m.digest.hosts--;
		m.digest.sum -= name_term(*gone);
	}
	deliver(&m, n);
}

#define UNHEARD_ROUND_MS (10 * 1100 + DIGEST_TICK_MS) /* DIRECTORY's round */
#define UNHEARD_FLAGS                                                                              \
	(FW_DIGEST_RANGES | FW_DIGEST_FABRIC | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE)

/* Peer @n asks the fabric for a name not ours (we store it), saying it
 * announces (@flags SAYS_ON) or not (SAYS_OFF), or says nothing (0). */
static void overheard_request(unsigned n, uint16_t flags)
{
	struct fw_msg m;

	peer_request(&m, n, 0x7700 + n, key_name("node99"));
	m.flags = flags;
	deliver(&m, n);
}

/* Peers node2-node7 announce, node7 only in unicast answers (to our
 * NEWCOMER: it started first, and left before its first periodic
 * announce reached us). node8 is heard only in its requests, which say
 * it announces (we missed its announces); node9 only in its requests,
 * which said it announces and, after the first round, that it no longer
 * does (its announce_interval set to 0 by a reload). */
static void peers_announce_round(uint32_t seq)
{
	static const char *const none[] = {NULL};

	for (unsigned n = 2; n <= 6; n++)
		announce_with(n, seq, NULL);
	announce_without(7, seq, none, UNHEARD_FLAGS | FW_DIGEST_UNICAST);
	overheard_request(8, SAYS_ON);
	overheard_request(9, seq == 1 ? SAYS_ON : SAYS_OFF);
}

/* Peers node2-node7 announce, we are complete; they announce once more,
 * then the hosts in @gone leave and node3-5 agree on a digest without
 * them: the first agreement (two rounds after the start-up's digests, of
 * fewer hosts each: their marks) marks every endpoint, and nothing moves.
 * Returns when. */
static uint64_t peers_then_mark(const char *const *gone)
{
	start(DIRECTORY, NULL);
	advance_to(START_MS + 4000);
	peers_announce_round(1);
	advance(DIGEST_HOLD_MS + 100);
	peers_announce_round(2);
	serve_fetch(NULL, 0);
	assert_int_equal(counter("directory_complete"), 1);
	advance(2 * UNHEARD_ROUND_MS);
	peers_announce_round(3);
	for (unsigned n = 3; n <= 5; n++)
		announce_without(n, 4, gone, UNHEARD_FLAGS);
	assert_int_equal(counter("fabric_departed_shortened"), 0);
	return fake_now;
}

/* We missed the GOODBYEs of node2, node7 and node8 (three: no one term
 * tells which hosts the peers lack; node7 was heard only in unicast
 * answers, node8 only in its requests). K distinct peers past their
 * start-up agreeing on a digest of fewer hosts make the store mark every
 * endpoint of a daemon that announces; at the next agreement two rounds or
 * more later, those not heard since are kept only until their next
 * announce could come: node2, node7 and node8, and node6 too, which lives
 * but whose announces were lost; it announces and is kept. node9, which
 * no longer announces, is not marked: its silence says nothing. A
 * peer still in its start-up does not count, nor one whose digest differs
 * (a peer that lags); one that is DISTURBED or counts itself incomplete
 * does (a claim no one explains disturbs every peer that hears it). */
static void test_peers_lacking_hosts_shorten_the_unheard(void **state)
{
	static const char *const gone[] = {"node2", "node7", "node8", NULL};
	static const char *const lags[] = {"node2", NULL};
	uint64_t round = UNHEARD_ROUND_MS, marked, node9;
	uint8_t flags = UNHEARD_FLAGS;

	(void)state;
	marked = peers_then_mark(gone);
	node9 = host_expires_ms(find(key_name("node9")));
	/* two rounds on; node3-5 announce, node6's announces are lost */
	advance(round);
	for (unsigned n = 3; n <= 5; n++)
		announce_without(n, 5, gone, flags);
	advance_to(marked + 2 * round + 100);
	announce_without(3, 6, gone, flags | FW_DIGEST_DISTURBED);
	announce_without(4, 6, gone, flags & ~(FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE));
	announce_without(4, 7, lags, flags);
	announce_without(5, 6, gone, flags & ~FW_DIGEST_SETTLED);
	assert_int_equal(counter("fabric_departed_shortened"), 0);
	announce_without(4, 8, gone, flags);
	assert_int_equal(counter("fabric_departed_shortened"), 4);
	assert_int_equal(host_expires_ms(find(key_name("node2"))), fake_now + 2 * round);
	assert_int_equal(host_expires_ms(find(key_name("node7"))), fake_now + 2 * round);
	assert_int_equal(host_expires_ms(find(key_name("node8"))), fake_now + 2 * round);
	assert_int_equal(host_expires_ms(find(key_name("node6"))), fake_now + 2 * round);
	assert_int_equal(host_expires_ms(find(key_name("node9"))), node9);
	assert_int_equal(host_expires_ms(find(key_name("node3"))),
			 marked + 2 * round + 100 + 60 * 1000);
	/* node6 announces: its TTL again */
	advance(1000);
	announce_without(6, 4, gone, flags);
	assert_int_equal(host_expires_ms(find(key_name("node6"))), fake_now + 60 * 1000);
	advance(2 * round);
	assert_null(find(key_name("node2")));
	assert_null(find(key_name("node7")));
	assert_null(find(key_name("node8")));
	for (unsigned n = 3; n <= 6; n++)
		assert_peer_stored(n);
	assert_peer_stored(9);
}

/* The silence may be ours: datagrams our receive path dropped since the
 * mark, or far more endpoints unheard than the peers lack hosts (node6,
 * node7 and node8 silent too, the peers lacking node2 alone). Nothing moves; the
 * store is marked again. */
static void test_unheard_kept_when_the_silence_may_be_ours(void **state)
{
	static const char *const gone[] = {"node2", NULL};
	uint64_t round = UNHEARD_ROUND_MS, marked, expires;

	(void)state;
	marked = peers_then_mark(gone);
	expires = host_expires_ms(find(key_name("node2")));
	/* our socket dropped datagrams; node6 and node7 announce (and hold
	 * node2), then node3-5 agree */
	fake.sock_drops = 3;
	advance_to(marked + 2 * round + 100);
	announce_with(6, 5, NULL);
	announce_with(7, 5, NULL);
	for (unsigned n = 3; n <= 5; n++)
		announce_without(n, 5, gone, UNHEARD_FLAGS);
	assert_int_equal(counter("fabric_departed_shortened"), 0);
	assert_int_equal(host_expires_ms(find(key_name("node2"))), expires);
	/* marked again; two rounds on, node3-5 announce, node6 and node7 not */
	marked = fake_now;
	advance_to(marked + 2 * round + 100);
	for (unsigned n = 3; n <= 5; n++)
		announce_without(n, 6, gone, UNHEARD_FLAGS);
	assert_int_equal(counter("fabric_departed_shortened"), 0);
	assert_int_equal(host_expires_ms(find(key_name("node2"))), expires);
}

/* The fetch after a lossy boot: a part where we lack many of the peer's
 * hosts is paged through at once (not split), names in term order with
 * where each host is; a host we lack is asked by unicast at the address the
 * peer named, alone; the next page starts after the last name's term. An
 * answer without WHERE (a daemon before it) is split as before. */
static void test_fetch_pages_and_asks_the_host(void **state)
{
	const char *lacked = "node50";
	uint64_t t = name_term(lacked);
	struct fw_range asked, whole = {.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	struct store_range part, sr = {.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	const struct sent_dgram *q;
	struct transport_addr at = peer_addr(9);
	struct fw_where w = {.kind = FW_WHERE_IPV4};
	struct fw_msg m;
	int p;

	(void)state;
	start(DIRECTORY, NULL);
	announce_digest(2, 41, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	while (!count_sent(FW_RANGE_QUERY) && fake_now < START_MS + 6000)
		advance(10);
	q = last_sent();
	assert_int_equal(q->m.type, FW_RANGE_QUERY);
	assert_memory_equal(&q->m.range, &whole, sizeof(whole));
	/* the peer holds 40 hosts in node50's part, we none: dense */
	p = store_range_part(&sr, t);
	assert_true(p >= 0 && store_range_sub(&sr, (unsigned)p, &part));
	peer_msg(&m, FW_RANGE_ANSWER, 2, q->m.tid);
	m.has_range = true;
	m.range = q->m.range;
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 41, .sum = 1, .seq = 1,
				      .flags = FW_DIGEST_RANGES | FW_DIGEST_PAST_SETTLE};
	m.n_sums = FW_PARTS_MAX;
	m.sums[p] = (struct fw_sum){.hosts = 40, .sum = 77};
	deliver(&m, 2);
	q = last_sent();
	assert_int_equal(q->m.type, FW_RANGE_QUERY);
	assert_int_equal(q->m.range.flags, FW_RANGE_NAMES | FW_RANGE_WHERE);
	assert_true(q->m.range.lo == part.lo && q->m.range.hi == part.hi);
	asked = q->m.range;

	/* a page: node50 with its address, MORE */
	peer_msg(&m, FW_RANGE_ANSWER, 2, q->m.tid);
	m.has_range = true;
	m.range = asked;
	m.range.flags |= FW_RANGE_MORE;
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 41, .sum = 1, .seq = 1,
				      .flags = FW_DIGEST_RANGES | FW_DIGEST_PAST_SETTLE};
	memcpy(w.addr, &((struct sockaddr_in *)&at.ss)->sin_addr, 4);
	assert_int_equal(fw_hint_add_at(&m, lacked, &w), 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_fetch_hints"), 1);
	assert_int_equal(counter("fabric_requests_unicast"), 1);
	assert_int_equal(count_sent(FW_REQUEST), 1);
	q = nth_sent(FW_REQUEST, 0);
	assert_true(q->ucast);
	assert_memory_equal(&q->to.ss, &at.ss, at.len); /* the named address, our port */
	assert_true(q->m.has_target && q->m.target.len == strlen(lacked) &&
		    !memcmp(q->m.target.data, lacked, q->m.target.len));
	/* the next page, after node50's term */
	q = last_sent();
	assert_int_equal(q->m.type, FW_RANGE_QUERY);
	assert_int_equal(q->m.range.flags, FW_RANGE_NAMES | FW_RANGE_WHERE);
	assert_true(q->m.range.lo == t + 1 && q->m.range.hi == asked.hi);
	asked = q->m.range;

	/* a daemon before WHERE: its answer clears the flag, MORE: split */
	peer_msg(&m, FW_RANGE_ANSWER, 2, q->m.tid);
	m.has_range = true;
	m.range = asked;
	m.range.flags = FW_RANGE_NAMES | FW_RANGE_MORE;
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 41, .sum = 1, .seq = 1,
				      .flags = FW_DIGEST_RANGES | FW_DIGEST_PAST_SETTLE};
	assert_int_equal(fw_hint_add(&m, "node51"), 0);
	deliver(&m, 2);
	q = last_sent();
	assert_int_equal(q->m.type, FW_RANGE_QUERY);
	assert_int_equal(q->m.range.flags, FW_RANGE_NAMES | FW_RANGE_WHERE);
	assert_true(q->m.range.lo >= asked.lo && q->m.range.hi <= asked.hi &&
		    q->m.range.hi - q->m.range.lo < asked.hi - asked.lo);
	/* its name without an address: asked on the fabric, multicast */
	assert_int_equal(count_sent(FW_REQUEST), 2);
	assert_false(nth_sent(FW_REQUEST, 1)->ucast);
	assert_int_equal(counter("fabric_requests_unicast"), 1);

	/* a hint naming a group address is no host's: asked on the fabric */
	{
		struct fw_where group = {.kind = FW_WHERE_IPV4, .addr = {224, 0, 0, 1}};

		answer_last_query(&m, 2, 41, 0);
		assert_int_equal(fw_hint_add_at(&m, "node61", &group), 0);
		deliver(&m, 2);
		assert_false(nth_sent(FW_REQUEST, count_sent(FW_REQUEST) - 1)->ucast);
		assert_int_equal(counter("fabric_requests_unicast"), 1);
	}

	/* the peer answered at once: a query it leaves unanswered is tried
	 * again after FETCH_WAIT_MIN_MS, not FETCH_WAIT_MS */
	{
		unsigned queries = count_sent(FW_RANGE_QUERY);

		advance(FETCH_WAIT_MIN_MS - 1);
		assert_int_equal(count_sent(FW_RANGE_QUERY), queries);
		advance(2);
		assert_int_equal(count_sent(FW_RANGE_QUERY), queries + 1);
	}
	/* nobody waits for node50: its retries go to the host alone (retries =
	 * 2: three attempts), never to every node; node51's and node61's (no
	 * address, or none of a host's) are multicast */
	advance(3000);
	{
		unsigned to_host = 0, mcast51 = 0;

		for (unsigned i = 0; i < fake.n_sent; i++) {
			const struct sent_dgram *r = &fake.sent[i];

			if (r->m.type != FW_REQUEST)
				continue;
			if (r->m.target.len == strlen(lacked) &&
			    !memcmp(r->m.target.data, lacked, r->m.target.len)) {
				assert_true(r->ucast);
				assert_memory_equal(&r->to.ss, &at.ss, at.len);
				to_host++;
			} else {
				assert_false(r->ucast);
				mcast51++;
			}
		}
		assert_int_equal(to_host, 3);
		assert_int_equal(mcast51, 6); /* node51's and node61's */
		assert_int_equal(counter("fabric_requests_unicast"), 3);
	}
}

/* The peer (198.18.0.N) the last datagram went to. */
static unsigned last_to_peer(void)
{
	const struct sockaddr_in *sin = (const void *)&last_sent()->to.ss;

	return ntohl(sin->sin_addr.s_addr) & 0xff;
}

/* A peer whose digest claimed hosts we lack is asked first in every
 * session until it answers one (it alone is known to hold them), even when
 * a session moved on to another peer that answered. */
static void test_fetch_asks_the_claimer_until_it_answers(void **state)
{
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	for (unsigned n = 3; n <= 6; n++) /* fewer hosts than ours at the end: no claim */
		announce_digest(n, 1, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	announce_digest(2, 9, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	/* (FETCH_STRIKES unanswered would forget it) */
	for (unsigned session = 0; session < FETCH_STRIKES; session++) {
		uint64_t before = counter("fabric_fetch_sessions");

		while (counter("fabric_fetch_sessions") == before && fake_now < START_MS + 20000)
			advance(1);
		assert_int_equal(last_sent()->m.type, FW_RANGE_QUERY);
		assert_int_equal(last_to_peer(), 2); /* not answered yet: first again */
		if (session == FETCH_STRIKES - 1)
			break;
		/* it answers none; the session moves on, and that peer answers */
		while (last_to_peer() == 2 && fake_now < START_MS + 20000)
			advance(1);
		answer_last_query(&m, last_to_peer(), 1, 0);
		deliver(&m, last_to_peer());
	}
	assert_int_equal(counter("fabric_fetch_timeouts"), FETCH_STRIKES - 1);
}

/* NEWCOMER announces multicast so far. */
static unsigned newcomers_sent(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake.n_sent; i++)
		n += fake.sent[i].m.type == FW_ANNOUNCE && !fake.sent[i].ucast &&
		     (fake.sent[i].m.flags & FW_FLAG_NEWCOMER);
	return n;
}

/* Peers answered so far in the test (answer_queries()). */
static unsigned answered_peer[FETCH_PEERS + 2];

/* Answer the next @steps queries, the i-th flagged FW_RANGE_ASKER_NEW when
 * @flagged[i], with digest @d (NULL: a claim of 41 hosts); @fresh: only
 * queries to peers not answered before in the test (others go unanswered).
 * @again[i] (unless NULL): NEWCOMER announces multicast since @before once
 * the i-th was handled; @wait ms after each (a query sent meanwhile goes
 * unanswered: a loss once its peer answered one). Returns the answers given. */
static unsigned answer_queries(const bool *flagged, const unsigned *again, unsigned steps,
			       unsigned before, uint64_t wait, bool fresh,
			       const struct store_digest *d)
{
	unsigned *answered = answered_peer, done = 0;
	struct fw_msg m;

	while (done < steps && fake_now < START_MS + 60000) {
		unsigned queries = count_sent(FW_RANGE_QUERY), n;

		while (count_sent(FW_RANGE_QUERY) == queries && fake_now < START_MS + 60000)
			advance(1);
		n = last_to_peer();
		assert_in_range(n, 2, FETCH_PEERS + 1);
		if (fresh && answered[n])
			continue;
		answered[n] = 1;
		answer_last_query(&m, n, 41, flagged[done] ? FW_RANGE_ASKER_NEW : 0);
		if (d) {
			m.digest.hosts = (uint32_t)d->hosts;
			m.digest.sum = d->sum;
		}
		deliver(&m, n);
		if (again)
			assert_int_equal(newcomers_sent() - before, again[done]);
		done++;
		advance(wait);
	}
	return done;
}

/* Every NEWCOMER announce sent after the first @before: multicast, with UP. */
static void assert_repeats_multicast(unsigned before)
{
	for (unsigned i = 0, seen = 0; i < fake.n_sent; i++) {
		if (fake.sent[i].m.type != FW_ANNOUNCE || seen++ < before)
			continue;
		if (!(fake.sent[i].m.flags & FW_FLAG_NEWCOMER))
			continue; /* a periodic one */
		assert_false(fake.sent[i].ucast);
		assert_true(fake.sent[i].m.has_up);
	}
}

static void peers_announce(unsigned from, unsigned to)
{
	for (unsigned n = from; n <= to; n++)
		announce_digest(n, 41, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
}

/* Most peers that answered first had heard no multicast announce of ours
 * (FW_RANGE_ASKER_NEW): our NEWCOMER did not get out, and it is multicast
 * again. Then in doubt: an answer to a query asked after the repeat that
 * had not heard it either asks for one more, 500 ms after the last at the
 * earliest; one that had ends the doubt, and a pending repeat with it. One
 * peer in a few that had not (a lossy fabric's share) is no reason. */
static void test_newcomer_again_when_unheard(void **state)
{
	/* 1 of 1, 1 of 2: none; 2 of 3: again. In doubt: not heard, within
	 * 500 ms of the last: pending, and the next answer handled 500 ms
	 * later sends it; heard: the doubt ends; then 1 of 1 first answers
	 * since the repeat is no reason */
	static const bool flagged[] = {false, true, true, true, true, false, true};
	static const unsigned again[] = {0, 0, 1, 1, 2, 2, 2};
	unsigned before;

	(void)state;
	memset(answered_peer, 0, sizeof(answered_peer));
	start(DIRECTORY, NULL);
	peers_announce(2, 9);
	advance_to(START_MS + 1000); /* our one NEWCOMER went out (peers were heard) */
	before = newcomers_sent();
	assert_int_equal(before, 1);
	assert_int_equal(answer_queries(flagged, again, 4, before, 0, true, NULL), 4);
	advance(500);
	assert_int_equal(answer_queries(flagged + 4, again + 4, 3, before, 0, true, NULL), 3);
	assert_int_equal(counter("fabric_newcomer_repeats"), 2);
	/* 2 of 2 first answers since the repeat: again, in doubt; a repeat
	 * asked for, then the doubt ended before it could go: none */
	advance(500);
	{
		static const bool more[] = {true, true, false};
		static const unsigned sent[] = {3, 3, 3};

		assert_int_equal(answer_queries(more, sent, 1, before, 0, true, NULL), 1);
		assert_int_equal(answer_queries(more + 1, sent + 1, 2, before, 0, false, NULL), 2);
		advance(1000);
		peers_announce(2, 2); /* a datagram handled: nothing pending */
		assert_int_equal(newcomers_sent() - before, 3);
	}
	assert_repeats_multicast(before);
}

/* A NEWCOMER that no repeat gets out is sent again at most NEWCOMER_REPEATS
 * times a burst (the start-up ones included); then the doubt ends. */
static void test_newcomer_repeats_bounded(void **state)
{
	bool flagged[NEWCOMER_REPEATS + 4];
	unsigned again[NEWCOMER_REPEATS + 4], before;

	(void)state;
	memset(answered_peer, 0, sizeof(answered_peer));
	start(DIRECTORY, NULL);
	peers_announce(2, 9);
	advance_to(START_MS + 1000);
	before = newcomers_sent();
	/* the second answer decides; each after it, 500 ms later, again */
	for (unsigned i = 0; i < NEWCOMER_REPEATS + 4; i++) {
		flagged[i] = true;
		again[i] = i < 1 ? 0 : i < NEWCOMER_REPEATS + 1 ? i : NEWCOMER_REPEATS;
	}
	assert_int_equal(answer_queries(flagged, again, NEWCOMER_REPEATS + 4, before, 500, false,
					NULL),
			 NEWCOMER_REPEATS + 4);
	assert_int_equal(counter("fabric_newcomer_repeats"), NEWCOMER_REPEATS);
	assert_repeats_multicast(before);
}

/* In doubt, the node keeps asking peers though its directory counts
 * complete (the peers that lost our NEWCOMER agree with it), until an
 * answer says the repeat got out; then it stops. */
static void test_doubt_keeps_asking_while_complete(void **state)
{
	static const bool unheard[] = {true, true, true, true, true, true};
	struct store_digest own;
	struct fw_msg m;

	(void)state;
	memset(answered_peer, 0, sizeof(answered_peer));
	start(DIRECTORY, NULL);
	for (unsigned n = 2; n <= 7; n++) /* fewer than we will hold: no claim */
		announce_digest(n, 1, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	advance_to(START_MS + 1000); /* our one NEWCOMER went out */
	store_digest(&ctx.store, &own);
	/* peers agree with us, and had not heard us */
	assert_int_equal(answer_queries(unheard, NULL, 6, 0, 0, false, &own), 6);
	assert_true(counter("fabric_newcomer_repeats") >= 1);
	/* (answered at once, a query each 200 ms: no loss; K agreed) */
	assert_int_equal(answer_queries(unheard, NULL, 6, 0, 0, false, &own), 6);
	assert_int_equal(counter("fabric_fetch_losses"), 0);
	assert_int_equal(counter("directory_complete"), 1);
	/* still in doubt: asking, each answer had not heard us */
	assert_int_equal(answer_queries(unheard, NULL, 3, 0, 0, false, &own), 3);
	assert_int_equal(counter("directory_complete"), 1);
	/* an answer that heard us: the doubt ends, and the asking with it */
	{
		static const bool heard[] = {false};
		uint64_t until = fake_now + 1000;
		unsigned queries;

		assert_int_equal(answer_queries(heard, NULL, 1, 0, 0, false, &own), 1);
		while (fake_now < until) { /* a session in flight ends */
			unsigned q = count_sent(FW_RANGE_QUERY);

			advance(1);
			if (count_sent(FW_RANGE_QUERY) > q) {
				answer_last_query(&m, last_to_peer(), 41, 0);
				m.digest.hosts = (uint32_t)own.hosts;
				m.digest.sum = own.sum;
				deliver(&m, last_to_peer());
			}
		}
		queries = count_sent(FW_RANGE_QUERY);
		advance(3000);
		assert_int_equal(count_sent(FW_RANGE_QUERY), queries);
	}
	assert_int_equal(counter("directory_complete"), 1);
	assert_int_equal(counter("fabric_fetch_losses"), 0);
}

/* A query's tries carry their number in the tid's low bits. The answer to
 * a later try, the first unanswered, is a datagram lost on the way: the
 * directory is incomplete until peers vouch again (a loss no counter of
 * ours sees). A first try's answer that comes after the second was sent
 * (a slow peer) is none. */
static void test_fetch_later_try_is_a_loss(void **state)
{
	const struct sent_dgram *q;
	uint64_t tid, drops;
	struct fw_msg m;

	(void)state;
	two_claimers_asked(2, 3);
	q = last_sent();
	tid = q->m.tid;
	assert_int_equal(tid & FETCH_TRY_MASK, 0);
	/* the second try: the same query, the next number */
	while (count_sent(FW_RANGE_QUERY) == 1)
		advance(1);
	assert_int_equal(last_sent()->m.tid, tid | 1);
	/* the first try's answer, late: the round trip, no loss */
	answer_last_query(&m, last_to_peer(), 5, 0);
	m.tid = tid;
	deliver(&m, last_to_peer());
	assert_int_equal(counter("fabric_fetch_answers"), 1);
	assert_int_equal(counter("fabric_fetch_losses"), 0);
	/* (the peers' claims, more hosts than ours, counted as losses) */
	drops = counter("fabric_rx_drops_detected");
	/* the next query: its second try answered */
	while (count_sent(FW_RANGE_QUERY) < 3)
		advance(1);
	tid = last_sent()->m.tid;
	while (last_sent()->m.type != FW_RANGE_QUERY || last_sent()->m.tid == tid)
		advance(1);
	assert_int_equal(last_sent()->m.tid, tid | 1);
	answer_last_query(&m, last_to_peer(), 5, 0);
	deliver(&m, last_to_peer());
	assert_int_equal(counter("fabric_fetch_answers"), 2);
	assert_int_equal(counter("fabric_fetch_losses"), 1);
	/* the loss, and the answer's claim */
	assert_int_equal(counter("fabric_rx_drops_detected"), drops + 2);
	assert_int_equal(counter("directory_complete"), 0);
	/* a peer that answered before leaves a query unanswered: a loss (it
	 * is gone, or datagrams were lost; its word is missing) */
	drops = counter("fabric_rx_drops_detected");
	while (counter("fabric_fetch_timeouts") == 0 && fake_now < START_MS + 30000)
		advance(1);
	assert_int_equal(counter("fabric_fetch_losses"), 2);
	assert_true(counter("fabric_rx_drops_detected") > drops);
}

/* Peer @n announces, saying it announces, naming @gone (NULL-terminated) as
 * hosts it heard say goodbye. */
static void announce_gone(unsigned n, const char *const *gone)
{
	struct fw_msg m;

	peer_msg(&m, FW_ANNOUNCE, n, 0);
	m.flags = SAYS_ON;
	for (; gone && *gone; gone++)
		assert_int_equal(fw_gone_add(&m, *gone), 0);
	deliver(&m, n);
}

/* The names our announces sent since the @from-th datagram carried, each
 * counted in @times[] (of @names). */
static void names_told(unsigned from, const char *const *names, unsigned *times)
{
	for (unsigned i = from; i < fake.n_sent; i++) {
		const struct sent_dgram *s = &fake.sent[i];
		const char *g = s->m.gone;

		if (s->m.type != FW_ANNOUNCE) {
			assert_int_equal(s->m.n_gone, 0);
			continue;
		}
		assert_true(s->m.n_gone <= FW_GONE_MAX);
		for (unsigned j = 0; j < s->m.n_gone; j++, g += strlen(g) + 1) {
			unsigned k = 0;

			while (names[k] && strcmp(names[k], g))
				k++;
			assert_non_null(names[k]);
			times[k]++;
		}
	}
}

/* Our periodic announces name a host whose GOODBYE we heard in
 * goodbye_repeats (2) of them; nine that left at once, each twice, at most
 * FW_GONE_MAX a datagram, in turn; not one that came back. */
static void test_goodbye_repeated_in_announces(void **state)
{
	static const char *const names[] = {"node2", "node3", "node4",	"node5",  "node6",  "node7",
					    "node8", "node9", "node10", "node11", "node12", NULL};
	unsigned times[12] = {0}, first, announces;
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	for (unsigned n = 2; n <= 12; n++)
		announce_gone(n, NULL);
	advance_to(START_MS + 12000);
	first = fake.n_sent;
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	advance(3 * UNHEARD_ROUND_MS); /* three announces or more, each 9-11 s */
	names_told(first, names, times);
	assert_int_equal(times[0], 2);
	assert_int_equal(counter("fabric_gone_sent"), 2);

	/* nine leave at once: each named twice, eight at most a datagram */
	for (unsigned n = 3; n <= 11; n++)
		announce_gone(n, NULL); /* heard again, well within addr_ttl */
	first = fake.n_sent;
	for (unsigned n = 3; n <= 11; n++) {
		peer_msg(&m, FW_GOODBYE, n, 0);
		deliver(&m, n);
	}
	assert_int_equal(counter("fabric_goodbyes_rx"), 10);
	memset(times, 0, sizeof(times));
	advance(6 * UNHEARD_ROUND_MS);
	names_told(first, names, times);
	for (unsigned k = 1; k <= 9; k++)
		assert_int_equal(times[k], 2);
	assert_int_equal(times[0], 0);
	/* in turn: the first two announces name all nine (not eight twice) */
	{
		unsigned seen = 0, two = 0;

		memset(times, 0, sizeof(times));
		for (unsigned i = first; i < fake.n_sent && two < 2; i++) {
			const char *g = fake.sent[i].m.gone;

			if (fake.sent[i].m.type != FW_ANNOUNCE)
				continue;
			two++;
			for (unsigned j = 0; j < fake.sent[i].m.n_gone; j++, g += strlen(g) + 1)
				for (unsigned k = 1; k <= 9; k++)
					if (!strcmp(names[k], g) && !times[k]++)
						seen++;
		}
		assert_int_equal(two, 2);
		assert_int_equal(seen, 9);
	}

	/* node12 says goodbye and comes back before our next announce: its
	 * return forgets the goodbye, and nothing is named */
	announce_gone(12, NULL);
	first = fake.n_sent;
	peer_msg(&m, FW_GOODBYE, 12, 0);
	deliver(&m, 12);
	assert_int_equal(counter("fabric_goodbyes_rx"), 11);
	announce_gone(12, NULL);
	assert_non_null(find(key_name("node12")));
	announces = count_sent(FW_ANNOUNCE);
	advance(2 * UNHEARD_ROUND_MS);
	assert_true(count_sent(FW_ANNOUNCE) >= announces + 2);
	memset(times, 0, sizeof(times));
	names_told(first, names, times);
	assert_int_equal(times[10], 0);
}

/* A resync's NEWCOMER announces name nothing (a burst's repeats come within
 * a second, while losses are still likely); the periodic ones after it do,
 * twice. */
static void test_goodbye_not_named_in_newcomers(void **state)
{
	static const char *const names[] = {"node2", NULL};
	unsigned times[1] = {0}, first, newcomers = 0;
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	announce_gone(2, NULL);
	announce_gone(3, NULL);
	advance_to(START_MS + 12000);
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	first = fake.n_sent;
	fabric_resync(ctx.fabric);
	advance(2000);
	for (unsigned i = first; i < fake.n_sent; i++)
		if (fake.sent[i].m.type == FW_ANNOUNCE &&
		    (fake.sent[i].m.flags & FW_FLAG_NEWCOMER)) {
			newcomers++;
			assert_int_equal(fake.sent[i].m.n_gone, 0);
		}
	assert_true(newcomers >= 1);
	advance(3 * UNHEARD_ROUND_MS);
	names_told(first, names, times);
	assert_int_equal(times[0], 2);
}

/* goodbye_repeats = 0: nothing repeated. */
static void test_goodbye_not_repeated_when_off(void **state)
{
	static const char *const names[] = {"node2", NULL};
	unsigned times[1] = {0}, first, announces;
	struct fw_msg m;

	(void)state;
	start(DIRECTORY "goodbye_repeats = 0\n", NULL);
	announce_gone(2, NULL);
	announce_gone(3, NULL);
	advance_to(START_MS + 12000);
	first = fake.n_sent;
	announces = count_sent(FW_ANNOUNCE);
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	advance(3 * UNHEARD_ROUND_MS);
	assert_true(count_sent(FW_ANNOUNCE) >= announces + 3);
	names_told(first, names, times);
	assert_int_equal(times[0], 0);
	assert_int_equal(counter("fabric_gone_sent"), 0);
}

/* The TTL left of @name's host, in seconds (it is held). */
static uint32_t ttl_of(const char *name)
{
	struct ibres_hostrec rec;
	struct host *h = find(key_name(name));

	assert_non_null(h);
	host_record(h, &rec, fake_now);
	return rec.ttl;
}

/* We missed node2's GOODBYE; peer 3's announce names it: node2 is kept
 * only until its next announce could come (two of our rounds), and then
 * goes; node3, named by peer 4 but alive, announces and gets its TTL back.
 * An alias, our own name, a name we do not hold, a host whose daemon does
 * not announce: nothing. Not in the no-directory mode. */
static void test_gone_keeps_the_host_until_its_next_announce(void **state)
{
	static const char *const node2[] = {"node2", NULL};
	static const char *const node3[] = {"node3", NULL};
	static const char *const others[] = {"node4.cluster.example", "node1", "node77", "node6",
					     NULL};
	uint64_t until;
	struct fw_msg m;

	(void)state;
	start(DIRECTORY, NULL);
	for (unsigned n = 2; n <= 5; n++)
		announce_gone(n, NULL);
	peer_msg(&m, FW_ANNOUNCE, 6, 0);
	m.flags = SAYS_OFF; /* node6's daemon does not announce */
	deliver(&m, 6);
	assert_true(ttl_of("node2") > 50); /* addr_ttl: 60 s */

	announce_gone(3, node2);
	assert_int_equal(counter("fabric_gone_heard"), 1);
	assert_int_equal(counter("fabric_gone_shortened"), 1);
	assert_true(ttl_of("node2") <= 2 * UNHEARD_ROUND_MS / 1000);
	/* named again: not moved again (nor later) */
	announce_gone(4, node2);
	assert_int_equal(counter("fabric_gone_shortened"), 1);

	announce_gone(4, node3);
	assert_int_equal(counter("fabric_gone_shortened"), 2);
	assert_true(ttl_of("node3") <= 2 * UNHEARD_ROUND_MS / 1000);

	announce_gone(5, others);
	assert_int_equal(counter("fabric_gone_heard"), 7);
	assert_int_equal(counter("fabric_gone_shortened"), 2);
	assert_true(ttl_of("node4") > 50);
	assert_true(ttl_of("node6") > 50);

	/* the peers announce every round; node2, gone, does not */
	for (until = fake_now + 2 * UNHEARD_ROUND_MS + 2000; fake_now < until;) {
		advance(UNHEARD_ROUND_MS / 2);
		for (unsigned n = 3; n <= 5; n++)
			announce_gone(n, NULL);
	}
	assert_peer_absent(2);
	for (unsigned n = 3; n <= 5; n++)
		assert_true(ttl_of(n == 3 ? "node3" : n == 4 ? "node4" : "node5") > 50);
	assert_int_equal(counter("fabric_departed_shortened"), 0);
}

/* A name counts only in a periodic multicast announce from its sender's own
 * address, and not while our receive path drops datagrams. */
static void test_gone_taken_only_from_its_sender(void **state)
{
	static const char *const node2[] = {"node2", NULL};
	struct fw_msg m;
	uint64_t drops;

	(void)state;
	start(DIRECTORY, NULL);
	for (unsigned n = 2; n <= 4; n++)
		announce_gone(n, NULL);
	/* peer 3's announce, copied from peer 4's address */
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	m.flags = SAYS_ON;
	assert_int_equal(fw_gone_add(&m, "node2"), 0);
	deliver(&m, 4);
	/* its unicast answer to a NEWCOMER */
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	m.flags = SAYS_ON;
	m.has_digest = true;
	m.digest = (struct fw_digest){.hosts = 4, .seq = 1, .flags = FW_DIGEST_UNICAST};
	assert_int_equal(fw_gone_add(&m, "node2"), 0);
	deliver(&m, 3);
	assert_int_equal(counter("fabric_gone_heard"), 2);
	assert_int_equal(counter("fabric_gone_shortened"), 0);
	/* our sockets dropped datagrams: not within a round of it */
	drops = counter("fabric_rx_drops_detected");
	fake.sock_drops = 3;
	for (uint64_t t0 = fake_now;
	     fake_now < t0 + 5000 && counter("fabric_rx_drops_detected") == drops;)
		advance(10); /* the next tick reads the counters */
	assert_true(counter("fabric_rx_drops_detected") > drops);
	announce_gone(3, node2);
	assert_int_equal(counter("fabric_gone_shortened"), 0);
	advance(UNHEARD_ROUND_MS / 2);
	announce_gone(4, node2);
	assert_int_equal(counter("fabric_gone_shortened"), 0);
	advance(UNHEARD_ROUND_MS / 2 + 100);
	announce_gone(4, node2);
	assert_int_equal(counter("fabric_gone_shortened"), 1);
	assert_true(ttl_of("node2") <= 2 * UNHEARD_ROUND_MS / 1000);
}

/* Announcements off: no directory, and a host's silence says nothing. */
static void test_gone_ignored_without_directory(void **state)
{
	static const char *const node2[] = {"node2", NULL};

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	announce_gone(2, NULL);
	announce_gone(3, node2);
	assert_int_equal(counter("fabric_gone_heard"), 1);
	assert_int_equal(counter("fabric_gone_shortened"), 0);
	assert_true(ttl_of("node2") > 50);
}

/* A hint's query that the host left unanswered (every attempt to the
 * address named) keeps the fetch from asking the name again, not a client:
 * its lookup asks the whole fabric; and it is a loss (the host is gone, or
 * datagrams were lost). A client joining a hint's query still in flight
 * makes it its own: multicast at once, every attempt; unanswered, it is a
 * loss too, and so is a client's query a hint then named the host in. */
static void test_hint_query_and_clients(void **state)
{
	struct transport_addr at = peer_addr(9);
	struct fw_where w = {.kind = FW_WHERE_IPV4};
	struct twaiter tw = {0}, tw54 = {0};
	struct fw_msg m;
	unsigned n;

	(void)state;
	start(DIRECTORY, NULL);
	memcpy(w.addr, &((struct sockaddr_in *)&at.ss)->sin_addr, 4);
	announce_digest(2, 3, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	while (!count_sent(FW_RANGE_QUERY) && fake_now < START_MS + 6000)
		advance(10);
	/* peer 2 holds 2 hosts in every part: small, asked for names */
	answer_last_query(&m, 2, 3, 0);
	for (unsigned i = 0; i < m.n_sums; i++)
		m.sums[i] = (struct fw_sum){.hosts = 2, .sum = i};
	deliver(&m, 2);
	/* node54: a client asks first (the whole fabric), then the hint
	 * names it: the client's query still, no unicast */
	assert_int_equal(lookup(&tw54, key_name("node54"), NULL), LOOKUP_WAIT);
	answer_last_query(&m, 2, 3, 0);
	assert_int_equal(fw_hint_add_at(&m, "node52", &w), 0);
	assert_int_equal(fw_hint_add_at(&m, "node53", &w), 0);
	assert_int_equal(fw_hint_add_at(&m, "node54", &w), 0);
	deliver(&m, 2);
	assert_int_equal(counter("fabric_requests_unicast"), 2);

	/* node53: a client joins at once: the query is a client's from now
	 * on, asked of every node now and on a client's schedule (its bound,
	 * not the hint's and then its own) */
	n = count_sent(FW_REQUEST);
	assert_int_equal(lookup(&tw, key_name("node53"), NULL), LOOKUP_WAIT);
	assert_int_equal(count_sent(FW_REQUEST), n + 1);
	assert_false(last_sent()->ucast);
	assert_int_equal(counter("fabric_requests_unicast"), 2);

	/* node52: nobody; every attempt to the address, then a negative that
	 * a client does not take, and a loss */
	assert_int_equal(counter("fabric_hints_unanswered"), 0);
	advance(150);
	assert_int_equal(tw.calls, 0); /* node53: the client's bound */
	assert_int_equal(counter("fabric_hints_unanswered"), 1);
	advance(850); /* within negative_ttl (5 s) of node52's last attempt */
	assert_int_equal(tw.calls, 1);
	assert_int_equal(tw.status, -ETIMEDOUT);
	assert_int_equal(tw54.calls, 1);
	assert_int_equal(tw54.status, -ETIMEDOUT);
	/* node53 and node54: named by a peer, unanswered on the whole fabric */
	assert_int_equal(counter("fabric_hints_unanswered"), 3);
	{
		unsigned mcast53 = 0;

		for (unsigned i = 0; i < fake.n_sent; i++)
			mcast53 += fake.sent[i].m.type == FW_REQUEST && !fake.sent[i].ucast &&
				   fake.sent[i].m.target.len == 6 &&
				   !memcmp(fake.sent[i].m.target.data, "node53", 6);
		assert_int_equal(mcast53, 3); /* at the join, then retries = 2 */
	}
	/* node52's 3 attempts, node53's first before the client joined */
	assert_int_equal(counter("fabric_requests_unicast"), 4);
	n = count_sent(FW_REQUEST);
	assert_int_equal(lookup(&tw, key_name("node52"), NULL), LOOKUP_WAIT);
	assert_int_equal(count_sent(FW_REQUEST), n + 1);
	assert_false(last_sent()->ucast);
	advance(1000);
	assert_int_equal(tw.status, -ETIMEDOUT);
	/* its own timeout is a client's negative: answered from it now */
	assert_int_equal(lookup(&tw, key_name("node52"), NULL), LOOKUP_TIMEDOUT);
}

/* The answering side: names in ascending term from the range's start, each
 * with the address its endpoint was heard from on the asking port; this
 * node itself without one; a query without WHERE gets plain names. */
static void test_range_names_in_term_order_with_where(void **state)
{
	struct fw_msg m, a;
	const struct sent_dgram *s;
	uint64_t prev = 0;
	unsigned with = 0;

	(void)state;
	start(DIRECTORY, NULL);
	for (unsigned n = 2; n <= 6; n++) /* multicast announces, numbered */
		announce_digest(n, 1, 1, FW_DIGEST_RANGES);
	peer_msg(&m, FW_RANGE_QUERY, 3, 0x55);
	m.has_range = true;
	m.range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = 1,
				    .flags = FW_RANGE_NAMES | FW_RANGE_WHERE};
	deliver(&m, 3);
	s = last_sent();
	assert_int_equal(s->m.type, FW_RANGE_ANSWER);
	assert_true(s->ucast);
	a = s->m;
	assert_int_equal(a.range.flags, FW_RANGE_NAMES | FW_RANGE_WHERE);
	assert_int_equal(a.n_hints, 6); /* five peers and us */
	for (unsigned i = 0, off = 0; i < a.n_hints; off += (unsigned)strlen(a.hints + off) + 1, i++) {
		const char *name = a.hints + off;
		uint64_t t = name_term(name);

		assert_true(i == 0 || t > prev);
		prev = t;
		if (!strcmp(name, "node1")) {
			assert_int_equal(a.where[i].kind, FW_WHERE_NONE);
			continue;
		}
		with++;
		assert_int_equal(a.where[i].kind, FW_WHERE_IPV4);
		assert_int_equal(a.where[i].addr[0], 198);
		assert_int_equal(a.where[i].addr[3], (uint8_t)atoi(name + 4));
	}
	assert_int_equal(with, 5);
	/* it heard the asker's multicast announce: not new to it */
	assert_int_equal(a.range.flags & FW_RANGE_ASKER_NEW, 0);

	/* without WHERE: plain names, the flag not kept */
	m.tid = 0x56;
	m.range.flags = FW_RANGE_NAMES;
	deliver(&m, 3);
	a = last_sent()->m;
	assert_int_equal(a.range.flags, FW_RANGE_NAMES);
	assert_int_equal(a.n_hints, 6);
	for (unsigned i = 0; i < a.n_hints; i++)
		assert_int_equal(a.where[i].kind, FW_WHERE_NONE);

	/* a peer heard of first by its query: told so, and learned */
	peer_msg(&m, FW_RANGE_QUERY, 9, 0x54);
	m.has_range = true;
	m.range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	deliver(&m, 9);
	a = last_sent()->m;
	assert_int_equal(a.type, FW_RANGE_ANSWER);
	assert_int_equal(a.range.flags, FW_RANGE_ASKER_NEW);
	assert_peer_stored(9);
	/* its second try (the first answer lost), its next query: learned
	 * from them, but no multicast announce of it heard: its NEWCOMER did
	 * not get out, the answers still say so */
	m.tid = 0x54 | 1;
	deliver(&m, 9);
	assert_int_equal(last_sent()->m.range.flags, FW_RANGE_ASKER_NEW);
	m.tid = 0x58;
	deliver(&m, 9);
	assert_int_equal(last_sent()->m.range.flags, FW_RANGE_ASKER_NEW);
	/* its multicast announce heard: not new any more */
	announce_digest(9, 1, 1, FW_DIGEST_RANGES);
	m.tid = 0x5c;
	deliver(&m, 9);
	assert_int_equal(last_sent()->m.range.flags, 0);
}

/* Over its rate limit a node answers a range query with its DIGEST alone
 * (FW_RANGE_BUSY): its word, at no cost; past that limit too, nothing. The
 * asker takes the word and asks the next peer at once: no loss. */
static void test_range_busy(void **state)
{
	struct fw_msg m;
	unsigned to3;

	(void)state;
	start(DIRECTORY, NULL);
	announce_digest(2, 1, 1, FW_DIGEST_RANGES);
	peer_msg(&m, FW_RANGE_QUERY, 2, 0x40);
	m.has_range = true;
	m.range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = FW_PARTS_MAX};
	for (unsigned i = 0; i < RANGE_ANSWERS_PER_S + RANGE_BUSY_PER_S + 5; i++) {
		fake.n_sent = 0; /* (more than the fake transport records) */
		m.tid = 0x40 + 4 * (uint64_t)i;
		deliver(&m, 2);
		if (i == RANGE_ANSWERS_PER_S - 1) {
			assert_int_equal(last_sent()->m.type, FW_RANGE_ANSWER);
			assert_int_equal(last_sent()->m.range.flags & FW_RANGE_BUSY, 0);
			assert_int_equal(last_sent()->m.n_sums, FW_PARTS_MAX);
		} else if (i == RANGE_ANSWERS_PER_S) {
			assert_int_equal(last_sent()->m.type, FW_RANGE_ANSWER);
			assert_int_equal(last_sent()->m.range.flags & FW_RANGE_BUSY, FW_RANGE_BUSY);
			assert_true(last_sent()->m.has_digest);
			assert_int_equal(last_sent()->m.n_sums, 0);
		} else if (i >= RANGE_ANSWERS_PER_S + RANGE_BUSY_PER_S) {
			assert_int_equal(fake.n_sent, 0); /* past both limits: silence */
		}
	}
	assert_int_equal(counter("fabric_range_answered"), RANGE_ANSWERS_PER_S);
	assert_int_equal(counter("fabric_range_refused"), RANGE_BUSY_PER_S + 5);
	assert_int_equal(counter("fabric_range_busy"), RANGE_BUSY_PER_S);

	/* the asking side: peers 2 and 3 claim more; the one asked says BUSY */
	announce_digest(2, 9, 2, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	announce_digest(3, 9, 1, FW_DIGEST_RANGES | FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE);
	while (!count_sent(FW_RANGE_QUERY) && fake_now < START_MS + 6000)
		advance(1);
	answer_last_query(&m, last_to_peer(), 9, FW_RANGE_BUSY);
	m.n_sums = 0;
	to3 = range_queries_to(3) + range_queries_to(2);
	deliver(&m, last_to_peer());
	assert_int_equal(counter("fabric_fetch_busy"), 1);
	assert_int_equal(counter("fabric_fetch_answers"), 1);
	assert_int_equal(counter("fabric_fetch_losses"), 0);
	/* at once, the other peer */
	assert_int_equal(range_queries_to(3) + range_queries_to(2), to3 + 1);
	assert_int_equal(last_sent()->m.type, FW_RANGE_QUERY);
	assert_int_equal(counter("fabric_fetch_sessions"), 1);
}

/* What the receiver drops before looking at a message: malformed, another
 * version, an HMAC it cannot check, its own datagrams. */
static void test_receive_drops(void **state)
{
	static const uint8_t key[] = "0123456789abcdef-cluster-key";
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m;
	int len;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	memset(buf, 0xa5, 64);
	deliver_raw(buf, 64, 2);
	assert_int_equal(counter("fabric_rx_malformed"), 1);

	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
	assert_true(len > 0);
	buf[4] = FW_VERSION + 1;
	deliver_raw(buf, (size_t)len, 2);
	assert_int_equal(counter("fabric_rx_bad_version"), 1);

	len = fw_encode(&m, key, sizeof(key) - 1, buf, sizeof(buf));
	assert_true(len > 0);
	deliver_raw(buf, (size_t)len, 2);
	assert_int_equal(counter("fabric_rx_auth_failed"), 1);

	/* our own REQUEST, looped back */
	memset(&m, 0, sizeof(m));
	m.type = FW_REQUEST;
	m.tid = 5;
	m.sender = ctx.eps.ep[0].cfg.id;
	m.has_target = true;
	m.target = key_name("node2");
	len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
	assert_true(len > 0);
	deliver_raw(buf, (size_t)len, 1);
	assert_int_equal(counter("fabric_rx_self"), 1);

	assert_int_equal(counter("fabric_rx"), 4);
	assert_int_equal(counter("fabric_overheard"), 0);
	assert_peer_absent(2);
	assert_int_equal(ctx.store.stats.hosts, 1);
	assert_int_equal(fake.n_sent, 0);
}

/* Shutdown: a GOODBYE with our identity, the groups left, the transport
 * closed. */
static void test_stop_says_goodbye(void **state)
{
	static struct twaiter w;
	const struct sent_dgram *s;

	(void)state;
	start(ANNOUNCE_OFF, NULL);
	resolver_attach(&ctx.res, NULL, NULL);
	fabric_stop(ctx.fabric);
	ctx.fabric = NULL;
	assert_null(ctx.fabric);
	assert_int_equal(fake.n_sent, 1);
	s = last_sent();
	assert_int_equal(s->m.type, FW_GOODBYE);
	assert_false(s->ucast);
	assert_int_equal(s->group, 0);
	assert_is_us(&s->m.sender);
	assert_int_equal(fake.leaves, 2);
	assert_int_equal(fake.closes, 1);
	/* no transport: nothing may be asked (teardown's fabric_stop is a no-op) */
	assert_int_equal(lookup(&w, key_name("node2"), NULL), LOOKUP_NOTFOUND);
	assert_int_equal(fake.n_sent, 1);
}


/* --- a cluster key: authentication and freshness ---------------------------- */

#define KEY_NEW "0123456789abcdef-the-new-key"
#define KEY_OLD "0123456789abcdef-the-old-key"

/* Start with cluster_key_file holding @keys (and announcements off). */
static void start_keyed(const char *keys)
{
	static char path[] = "/tmp/test_protocol.key.XXXXXX";
	char resolve[256];
	int fd;

	strcpy(path + sizeof(path) - 7, "XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, keys, strlen(keys)), (ssize_t)strlen(keys));
	close(fd);
	snprintf(resolve, sizeof(resolve), ANNOUNCE_OFF "cluster_key_file = %s\n", path);
	sent_key = KEY_NEW;
	start(resolve, NULL);
	unlink(path); /* read at start only */
}

/* @m from peer @n signed with @key, stamped @stamp (0: none); the datagram
 * stays in @buf for a replay. */
static size_t deliver_signed(struct fw_msg *m, unsigned n, const char *key, uint64_t stamp,
			     uint8_t *buf)
{
	int len;

	m->has_stamp = stamp != 0;
	m->stamp = stamp;
	len = fw_encode(m, (const uint8_t *)key, strlen(key), buf, FW_MAX_LEN);
	assert_true(len > FW_HDR_LEN);
	deliver_raw(buf, (size_t)len, n);
	return (size_t)len;
}

/* Every datagram sent carries a stamp, strictly rising, under the first key. */
static void test_keyed_send_stamps(void **state)
{
	struct host_key k = key_name("node2");

	(void)state;
	start_keyed(KEY_NEW "\n" KEY_OLD "\n");
	assert_int_equal(fabric_send_request(ctx.fabric, &k, 7), 0);
	assert_int_equal(fabric_send_request(ctx.fabric, &k, 8), 0);
	assert_int_equal(fake.n_sent, 2); /* record() checked the HMAC with KEY_NEW */
	assert_true(fake.sent[0].m.has_stamp);
	assert_true(fake.sent[0].m.stamp == wall_us()); /* the fake clock did not move */
	assert_true(fake.sent[1].m.stamp == fake.sent[0].m.stamp + 1);
	advance(1000);
	assert_int_equal(fabric_send_request(ctx.fabric, &k, 9), 0);
	assert_true(fake.sent[2].m.stamp == wall_us());
}

/* The issue's attack: a GOODBYE captured while a node left, replayed after
 * it came back, drops nothing; nor does any other replay change the store. */
static void test_keyed_replay(void **state)
{
	uint8_t announce1[FW_MAX_LEN], bye[FW_MAX_LEN], announce2[FW_MAX_LEN], other[FW_MAX_LEN];
	size_t announce1_len, bye_len, announce2_len;
	struct fw_msg m;

	(void)state;
	start_keyed(KEY_NEW "\n");
	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	announce1_len = deliver_signed(&m, 2, KEY_NEW, wall_us(), announce1);
	assert_peer_stored(2);
	advance(100);
	peer_msg(&m, FW_GOODBYE, 2, 0);
	bye_len = deliver_signed(&m, 2, KEY_NEW, wall_us(), bye);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	assert_peer_absent(2);
	advance(5000); /* the node restarts */
	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	announce2_len = deliver_signed(&m, 2, KEY_NEW, wall_us(), announce2);
	assert_peer_stored(2);

	advance(10000);
	deliver_raw(bye, bye_len, 2);
	deliver_raw(announce1, announce1_len, 2);
	assert_int_equal(counter("fabric_rx_replayed"), 2);
	deliver_raw(announce2, announce2_len, 2);
	assert_int_equal(counter("fabric_rx_duplicate"), 1);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);
	assert_peer_stored(2);

	/* beyond the window it is stale, even to a receiver that forgot the sender */
	advance(FRESH_FORGET_MS + 1000);
	deliver_raw(bye, bye_len, 2);
	assert_int_equal(counter("fabric_rx_stale"), 1);
	assert_int_equal(counter("fabric_goodbyes_rx"), 1);

	/* a stamp from a clock more than the window ahead, or none: stale */
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	deliver_signed(&m, 3, KEY_NEW, wall_us() + FRESH_WINDOW_US + 1000, other);
	deliver_signed(&m, 3, KEY_NEW, 0, other);
	assert_int_equal(counter("fabric_rx_stale"), 3);
	assert_peer_absent(3);
	/* within the window: taken */
	deliver_signed(&m, 3, KEY_NEW, wall_us() + FRESH_WINDOW_US - 1000, other);
	assert_peer_stored(3);
	assert_int_equal(counter("fabric_rx_replayed"), 2);
	assert_int_equal(fake.n_sent, 0);
}

/* A key change: both keys of the file are taken (the second counted), the
 * first signs; a key outside the file is refused. */
static void test_keyed_rollover(void **state)
{
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m;

	(void)state;
	start_keyed(KEY_NEW "\r\n" KEY_OLD "\r\n");
	peer_msg(&m, FW_ANNOUNCE, 2, 0);
	deliver_signed(&m, 2, KEY_OLD, wall_us(), buf);
	peer_msg(&m, FW_ANNOUNCE, 3, 0);
	deliver_signed(&m, 3, KEY_NEW, wall_us(), buf);
	peer_msg(&m, FW_ANNOUNCE, 4, 0);
	deliver_signed(&m, 4, "0123456789abcdef-another-key", wall_us(), buf);
	assert_peer_stored(2);
	assert_peer_stored(3);
	assert_peer_absent(4);
	assert_int_equal(counter("fabric_rx_auth_second_key"), 1);
	assert_int_equal(counter("fabric_rx_auth_failed"), 1);
	/* the second key also guards freshness: the same datagram again is refused */
	peer_msg(&m, FW_GOODBYE, 2, 0);
	deliver_signed(&m, 2, KEY_OLD, wall_us() - 1, buf);
	assert_int_equal(counter("fabric_rx_replayed"), 1);
	assert_peer_stored(2);
}

/* A bad key file stops the start, with the reason logged. */
static void test_keyed_bad_file(void **state)
{
	struct ibres_config cfg;
	struct cfg_hosts hosts;
	struct fabric *f;
	struct endpoints eps;
	struct host_store store;
	struct loop loop;

	(void)state;
	memset(&eps, 0, sizeof(eps));
	memset(&store, 0, sizeof(store));
	parse_config(&cfg, &hosts, ANNOUNCE_OFF "cluster_key_file = /nonexistent/cluster.key\n",
		     NULL);
	assert_int_equal(loop_init(&loop), 0);
	assert_int_equal(fabric_start(&f, &(struct fabric_deps){ .cfg = &cfg, .loop = &loop,
								  .eps = &eps, .store = &store }),
			 -ENOENT);
	assert_null(f);
	loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_retries_bounded, teardown),
		cmocka_unit_test_teardown(test_no_retries, teardown),
		cmocka_unit_test_teardown(test_nodelay, teardown),
		cmocka_unit_test_teardown(test_shared_query, teardown),
		cmocka_unit_test_teardown(test_shared_query_times_out, teardown),
		cmocka_unit_test_teardown(test_reply_completes, teardown),
		cmocka_unit_test_teardown(test_reply_unknown_tid, teardown),
		cmocka_unit_test_teardown(test_reply_other_key, teardown),
		cmocka_unit_test_teardown(test_overhear_request, teardown),
		cmocka_unit_test_teardown(test_owner_replies, teardown),
		cmocka_unit_test_teardown(test_conflicts, teardown),
		cmocka_unit_test_teardown(test_lid_moved_by_the_subnet_manager, teardown),
		cmocka_unit_test_teardown(test_directory_rule, teardown),
		cmocka_unit_test_teardown(test_unicast_answer_no_gap, teardown),
		cmocka_unit_test_teardown(test_disturbed_digest_says_so, teardown),
		cmocka_unit_test_teardown(test_alone_until_a_peer_speaks, teardown),
		cmocka_unit_test_teardown(test_burst_check_quiet_claim_is_no_loss, teardown),
		cmocka_unit_test_teardown(test_missed_goodbye_is_no_claim, teardown),
		cmocka_unit_test_teardown(test_peers_lacking_hosts_shorten_the_unheard, teardown),
		cmocka_unit_test_teardown(test_unheard_kept_when_the_silence_may_be_ours, teardown),
		cmocka_unit_test_teardown(test_fetch_keeps_lossy_peers, teardown),
		cmocka_unit_test_teardown(test_fetch_moves_on, teardown),
		cmocka_unit_test_teardown(test_fetch_silence_of_a_replier, teardown),
		cmocka_unit_test_teardown(test_fetch_asks_the_claimer_until_it_answers, teardown),
		cmocka_unit_test_teardown(test_no_directory, teardown),
		cmocka_unit_test_teardown(test_startup_announces, teardown),
		cmocka_unit_test_teardown(test_startup_one_newcomer_once_heard, teardown),
		cmocka_unit_test_teardown(test_newcomer_answered, teardown),
		cmocka_unit_test_teardown(test_fetch_pages_and_asks_the_host, teardown),
		cmocka_unit_test_teardown(test_range_names_in_term_order_with_where, teardown),
		cmocka_unit_test_teardown(test_newcomer_again_when_unheard, teardown),
		cmocka_unit_test_teardown(test_newcomer_repeats_bounded, teardown),
		cmocka_unit_test_teardown(test_doubt_keeps_asking_while_complete, teardown),
		cmocka_unit_test_teardown(test_range_busy, teardown),
		cmocka_unit_test_teardown(test_fetch_later_try_is_a_loss, teardown),
		cmocka_unit_test_teardown(test_hint_query_and_clients, teardown),
		cmocka_unit_test_teardown(test_goodbye, teardown),
		cmocka_unit_test_teardown(test_expiry, teardown),
		cmocka_unit_test_teardown(test_identity_change_lid, teardown),
		cmocka_unit_test_teardown(test_identity_change_gid, teardown),
		cmocka_unit_test_teardown(test_identity_change_goodbye_retried, teardown),
		cmocka_unit_test_teardown(test_owed_goodbye_timer, teardown),
		cmocka_unit_test_teardown(test_reload, teardown),
		cmocka_unit_test_teardown(test_reload_announcements, teardown),
		cmocka_unit_test_teardown(test_reload_keeps_transport_qpn, teardown),
		cmocka_unit_test_teardown(test_receive_drops, teardown),
		cmocka_unit_test_teardown(test_goodbye_repeated_in_announces, teardown),
		cmocka_unit_test_teardown(test_gone_keeps_the_host_until_its_next_announce,
					  teardown),
		cmocka_unit_test_teardown(test_gone_ignored_without_directory, teardown),
		cmocka_unit_test_teardown(test_gone_taken_only_from_its_sender, teardown),
		cmocka_unit_test_teardown(test_goodbye_not_repeated_when_off, teardown),
		cmocka_unit_test_teardown(test_goodbye_not_named_in_newcomers, teardown),
		cmocka_unit_test_teardown(test_stop_says_goodbye, teardown),
		cmocka_unit_test_teardown(test_keyed_send_stamps, teardown),
		cmocka_unit_test_teardown(test_keyed_replay, teardown),
		cmocka_unit_test_teardown(test_keyed_rollover, teardown),
		cmocka_unit_test_teardown(test_keyed_bad_file, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
