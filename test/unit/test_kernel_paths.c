// SPDX-License-Identifier: MIT
/*
 * The kernel's path queries end to end inside the daemon, without a kernel:
 * resolverd/os/kpath.c and resolverd/frontend/kernel_paths.c over the real
 * resolver and host store, built as main.c builds them. Three seams: this
 * file defines now_ms() (a fake clock; core/clock.o is not linked), the
 * kpath_sock_*() calls (a fake kernel on a socketpair; os/kpath_sock.o is
 * not linked) and transport_for() (a fabric transport that only counts what
 * it sends, as in test_protocol.c). Queries are built as the kernel builds them from its uapi
 * headers; answers are read back as the kernel reads them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "core/clock.h"
#include "core/hoststore.h"
#include "core/log.h"
#include "engine/resolver.h"
#include "fabric/fabric.h"
#include "fabric/transport.h"
#include "frontend/kernel_paths.h"
#include "os/kpath.h"

#define START_MS 5000
#define BOUND_MS 300

/* --- the fake clock ---------------------------------------------------------- */

static uint64_t fake_now = START_MS;

uint64_t now_ms(void)
{
	return fake_now;
}

/* --- the fake kernel ---------------------------------------------------------- */

#define SENT_MAX 64

static struct {
	int daemon_fd, kernel_fd; /* a datagram socketpair */
	bool no_rdma;             /* kpath_sock_open fails as without ib_core */
	unsigned n_sent;
	uint8_t sent[SENT_MAX][KPATH_MSG_MAX];
	size_t sent_len[SENT_MAX];
} kern;

int kpath_sock_open(void)
{
	int sv[2];

	if (kern.no_rdma)
		return -EPROTONOSUPPORT;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	if (kern.kernel_fd > 2)
		close(kern.kernel_fd); /* a daemon's earlier socket, closed on its side */
	kern.daemon_fd = sv[0];
	kern.kernel_fd = sv[1];
	return sv[0];
}

int kpath_sock_adopt(int fd)
{
	(void)fd;
	return 0;
}

int kpath_activation_fd(void)
{
	return -1;
}

uint32_t kpath_sock_pid(int fd)
{
	(void)fd;
	return 4242;
}

int kpath_sock_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(fd, kern.daemon_fd);
	assert_true(kern.n_sent < SENT_MAX);
	assert_true(len <= KPATH_MSG_MAX);
	memcpy(kern.sent[kern.n_sent], buf, len);
	kern.sent_len[kern.n_sent++] = len;
	return 0;
}

ssize_t kpath_sock_recv(int fd, void *buf, size_t cap)
{
	ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);

	return n < 0 ? -errno : n;
}

/* --- the fake fabric transport ---------------------------------------------------- */

static unsigned fabric_sent;

static int fake_open(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep)
{
	(void)loop;
	t->ep = ep;
	t->priv = &fabric_sent;
	return 0;
}

static void fake_close(struct transport *t, struct loop *loop)
{
	(void)loop;
	t->priv = NULL;
}

static int fake_group(struct transport *t, unsigned g)
{
	(void)t;
	(void)g;
	return 0;
}

static int fake_send_mcast(struct transport *t, unsigned g, const void *buf, size_t len)
{
	(void)t;
	(void)g;
	(void)buf;
	(void)len;
	fabric_sent++;
	return 0;
}

static int fake_send_ucast(struct transport *t, const struct transport_addr *to, const void *buf,
			   size_t len)
{
	(void)to;
	return fake_send_mcast(t, 0, buf, len);
}

static const struct transport_ops fake_ops = {
	.name = "fake",
	.open = fake_open,
	.close = fake_close,
	.join = fake_group,
	.leave = fake_group,
	.send_mcast = fake_send_mcast,
	.send_ucast = fake_send_ucast,
};

const struct transport_ops *transport_for(const struct cfg_endpoint *ep)
{
	return ep->transport == TRANSPORT_IP ? &fake_ops : NULL;
}

/* --- the daemon ------------------------------------------------------------------ */

static struct ibresd ctx;

#define CONFIG                                                                                     \
	"[daemon]\nlog_level = error\n"                                                            \
	"[resolve]\nroute_prot = mcast\nkernel_path_timeout = 300ms\n"                             \
	"[endpoint ib0]\nname = node1\naddress = 198.18.0.1\n"                                     \
	"gid = fe80::2:c903:0:1\nlid = 1\npkey = 0xffff\nqpn = 1\nmtu = 2048\nrate = 10\n"       \
	"device = mlx5_0\nport_num = 1\ntransport = none\n"
/* The same node on the fabric protocol, asking the fabric on every miss. */
#define CONFIG_FABRIC                                                                              \
	"[daemon]\nlog_level = error\n"                                                            \
	"[resolve]\nroute_prot = mcast\nkernel_path_timeout = 300ms\ntimeout = 100ms\n"          \
	"retries = 5\nannounce_interval = 0\n"                                                     \
	"[endpoint ib0]\nname = node1\naddress = 198.18.0.1\n"                                     \
	"gid = fe80::2:c903:0:1\nlid = 1\npkey = 0xffff\nqpn = 1\nmtu = 2048\nrate = 10\n"       \
	"device = mlx5_0\nport_num = 1\ntransport = ip\ninterface = ib0\n"                        \
	"group = 239.255.73.1 mtu=2048 rate=10\n"
#define HOSTS "fe80::2:c903:0:2 2 node2 198.18.0.2 2001:db8::2\n"

static const uint8_t GID1[16] = { 0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, 0, 0, 1 };
static const uint8_t GID2[16] = { 0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, 0, 0, 2 };
static const uint8_t GID9[16] = { 0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, 0, 0, 9 };

static void start_with(const char *conf)
{
	char err[CFG_ERR_MAX];

	memset(&ctx, 0, sizeof(ctx));
	fake_now = START_MS;
	kern.n_sent = 0;
	fabric_sent = 0;
	if (config_parse("t.conf", conf, strlen(conf), &ctx.cfg, err, sizeof(err)) ||
	    config_validate(&ctx.cfg, err, sizeof(err)))
		fail_msg("config: %s", err);
	if (hosts_parse("t.hosts", HOSTS, strlen(HOSTS), &ctx.static_hosts, err, sizeof(err)))
		fail_msg("hosts: %s", err);
	log_set_level(ctx.cfg.log_level);
	assert_int_equal(loop_init(&ctx.loop), 0);
	assert_int_equal(resolver_init(&ctx.res,
				       &(struct resolver_deps){ .cfg = &ctx.cfg, .loop = &ctx.loop,
								.store = &ctx.store,
								.eps = &ctx.eps },
				       &ctx.static_hosts),
			 0);
	assert_int_equal(fabric_start(&ctx.fabric,
				      &(struct fabric_deps){ .cfg = &ctx.cfg, .loop = &ctx.loop,
							     .eps = &ctx.eps, .store = &ctx.store,
							     .ev = resolver_fabric_events(&ctx.res) }),
			 0);
	resolver_attach(&ctx.res, NULL, ctx.fabric);
	ctx.kpath_fd = -1;
	kernel_paths_start(&ctx);
}

static void start(void)
{
	start_with(CONFIG);
}

static int teardown(void **state)
{
	(void)state;
	kernel_paths_stop(&ctx);
	resolver_attach(&ctx.res, NULL, NULL);
	fabric_stop(ctx.fabric);
	ctx.fabric = NULL;
	resolver_fini(&ctx.res);
	loop_fini(&ctx.loop);
	hosts_free(&ctx.static_hosts);
	if (kern.kernel_fd > 2)
		close(kern.kernel_fd);
	kern.kernel_fd = -1;
	kern.no_rdma = false;
	return 0;
}

/* Deliver what the kernel sent, and run what became due. */
static void pump(void)
{
	struct epoll_event ev[16];
	int n;

	while ((n = epoll_wait(ctx.loop.epfd, ev, 16, 0)) > 0)
		for (int i = 0; i < n; i++) {
			struct loop_fd *lf = ev[i].data.ptr;

			lf->cb(lf, ev[i].events);
		}
	loop_run_due(&ctx.loop);
}

static void advance_to(uint64_t t)
{
	while (ctx.loop.n_timers && ctx.loop.heap[1]->due_ms <= t) {
		if (ctx.loop.heap[1]->due_ms > fake_now)
			fake_now = ctx.loop.heap[1]->due_ms;
		loop_run_due(&ctx.loop);
	}
	fake_now = t;
	pump();
}

/* --- the kernel's messages ----------------------------------------------------- */

struct msg {
	uint8_t buf[512];
	size_t len;
};

static void attr(struct msg *m, uint16_t type, const void *v, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(m->buf + m->len, &a, sizeof(a));
	memcpy(m->buf + m->len + NLA_HDRLEN, v, len);
	m->len += NLA_ALIGN(NLA_HDRLEN + len);
}

static void begin(struct msg *m, uint16_t op, uint32_t seq)
{
	struct nlmsghdr h = { .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_LS, op),
			      .nlmsg_flags = NLM_F_REQUEST,
			      .nlmsg_seq = seq };

	memset(m, 0, sizeof(*m));
	memcpy(m->buf, &h, sizeof(h));
	m->len = NLMSG_HDRLEN;
}

static void kernel_send(struct msg *m)
{
	((struct nlmsghdr *)m->buf)->nlmsg_len = (uint32_t)m->len;
	assert_int_equal(send(kern.kernel_fd, m->buf, m->len, 0), (ssize_t)m->len);
}

/* A RESOLVE as ib_nl_set_path_rec_attrs() builds it. */
static void kernel_resolve(uint32_t seq, const char *dev, uint8_t port, uint8_t use,
			   const uint8_t dgid[16], const uint8_t *sgid, int pkey)
{
	struct rdma_ls_resolve_header h;
	uint64_t sid = 0x1060000000012b7ull;
	struct msg m;

	begin(&m, RDMA_NL_LS_OP_RESOLVE, seq);
	memset(&h, 0, sizeof(h));
	memcpy(h.device_name, dev, strlen(dev));
	h.port_num = port;
	h.path_use = use;
	memcpy(m.buf + m.len, &h, sizeof(h));
	m.len += NLMSG_ALIGN(sizeof(h));
	attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_SERVICE_ID, &sid, sizeof(sid));
	attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_DGID, dgid, 16);
	if (sgid)
		attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_SGID, sgid, 16);
	if (pkey >= 0) {
		uint16_t p = (uint16_t)pkey;

		attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_PKEY, &p, 2);
	}
	kernel_send(&m);
}

/* What the kernel reads in answer @i: type, flags, seq and the records. */
struct answer {
	uint16_t type, flags;
	uint32_t seq, pid;
	unsigned n;
	struct ib_path_rec_data recs[4];
	uint8_t gid[16];
	bool has_gid;
	uint32_t timeout;
	bool has_timeout;
};

static struct answer answer(unsigned i)
{
	struct answer a = { 0 };
	struct nlmsghdr h;
	size_t off;

	assert_true(i < kern.n_sent);
	memcpy(&h, kern.sent[i], sizeof(h));
	assert_int_equal(h.nlmsg_len, kern.sent_len[i]);
	a.type = h.nlmsg_type;
	a.flags = h.nlmsg_flags;
	a.seq = h.nlmsg_seq;
	a.pid = h.nlmsg_pid;
	for (off = NLMSG_HDRLEN; off < h.nlmsg_len;) {
		struct nlattr at;

		memcpy(&at, kern.sent[i] + off, sizeof(at));
		if (at.nla_type == LS_NLA_TYPE_PATH_RECORD) {
			assert_int_equal(at.nla_len, NLA_HDRLEN + sizeof(struct ib_path_rec_data));
			assert_true(a.n < 4);
			memcpy(&a.recs[a.n++], kern.sent[i] + off + NLA_HDRLEN,
			       sizeof(struct ib_path_rec_data));
		} else if (at.nla_type == LS_NLA_TYPE_DGID) {
			memcpy(a.gid, kern.sent[i] + off + NLA_HDRLEN, 16);
			a.has_gid = true;
		} else if (at.nla_type == LS_NLA_TYPE_TIMEOUT) {
			memcpy(&a.timeout, kern.sent[i] + off + NLA_HDRLEN, 4);
			a.has_timeout = true;
		}
		off += NLA_ALIGN(at.nla_len);
	}
	return a;
}

static void assert_refused(unsigned i, uint32_t seq)
{
	struct answer a = answer(i);

	assert_int_equal(a.seq, seq);
	assert_int_equal(a.flags, RDMA_NL_LS_F_ERR);
	assert_int_equal(a.n, 0);
}

static uint64_t stat_of(const char *name)
{
	uint8_t buf[1024];
	struct tlv_writer w;
	struct tlv_reader r;
	struct tlv_item it;
	char cur[64] = "";
	uint64_t v;

	tlv_writer_init(&w, buf, sizeof(buf));
	kpath_stats(ctx.kpath, &w);
	tlv_reader_init(&r, buf, w.len);
	while (tlv_next(&r, &it) > 0) {
		if (it.type == IBRES_T_NAME)
			tlv_get_str(&it, cur, sizeof(cur));
		else if (it.type == IBRES_T_COUNTER && !strcmp(cur, name) && !tlv_get_u64(&it, &v))
			return v;
	}
	fail_msg("no statistic %s", name);
	return 0;
}

/* --- tests ---------------------------------------------------------------------- */

static void test_set_timeout_at_start(void **state)
{
	struct answer a;

	(void)state;
	start();
	assert_non_null(ctx.kpath);
	assert_int_equal(kern.n_sent, 1);
	a = answer(0);
	assert_int_equal(a.type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_SET_TIMEOUT));
	assert_true(a.flags & NLM_F_REQUEST);
	assert_int_equal(a.pid, 4242);
	assert_true(a.has_timeout);
	assert_int_equal(a.timeout, BOUND_MS + 250); /* our bound, with a margin */
	/* a new bound, told again; the same one, not */
	ctx.cfg.kernel_path_timeout_ms = 1500;
	kernel_paths_reload(&ctx);
	kernel_paths_reload(&ctx);
	assert_int_equal(kern.n_sent, 2);
	assert_int_equal(answer(1).timeout, 1750);
}

static void test_every_path_use_from_the_cache(void **state)
{
	(void)state;
	start();
	kern.n_sent = 0;
	for (uint8_t use = 0; use < LS_RESOLVE_PATH_USE_MAX; use++) {
		struct answer a;
		uint32_t flags[4];

		kernel_resolve(100 + use, "mlx5_0", 1, use, GID2, GID1, 0xffff);
		pump();
		assert_int_equal(kern.n_sent, use + 1u); /* answered at once: a static host */
		a = answer(use);
		assert_int_equal(a.seq, 100 + use);
		assert_int_equal(a.type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE));
		assert_int_equal(a.flags, 0);
		assert_int_equal(a.n, use == LS_RESOLVE_PATH_USE_ALL ? 3 : 1);
		for (unsigned i = 0; i < a.n; i++)
			flags[i] = a.recs[i].flags;
		assert_true(kpath_kernel_accepts(use, flags, a.n));
		/* the path from node1 to node2, the service ID echoed */
		const struct ibres_path_record *p = (const void *)a.recs[0].path_rec;

		assert_memory_equal(p->dgid, GID2, 16);
		assert_memory_equal(p->sgid, GID1, 16);
		assert_int_equal(be16toh(p->dlid), 2);
		assert_int_equal(be16toh(p->slid), 1);
		assert_true(be64toh(p->service_id) == 0x1060000000012b7ull);
		if (use == LS_RESOLVE_PATH_USE_ALL) {
			const struct ibres_path_record *in = (const void *)a.recs[2].path_rec;

			assert_int_equal(a.recs[2].flags, IB_PATH_PRIMARY | IB_PATH_INBOUND);
			assert_memory_equal(in->dgid, GID1, 16);
			assert_int_equal(be16toh(in->dlid), 1);
		}
	}
	assert_int_equal(stat_of("kpath_requests"), 3);
	assert_int_equal(stat_of("kpath_answered"), 3);
	assert_int_equal(stat_of("kpath_outstanding"), 0);
}

static void test_refused_at_once(void **state)
{
	const uint8_t v4[4] = { 198, 18, 0, 2 };
	struct msg m;
	uint32_t ifx = 3;

	(void)state;
	start();
	kern.n_sent = 0;
	/* not ours: another device, another port, another P_Key, another source GID */
	kernel_resolve(1, "mlx5_1", 1, 0, GID2, NULL, -1);
	kernel_resolve(2, "mlx5_0", 2, 0, GID2, NULL, -1);
	kernel_resolve(3, "mlx5_0", 1, 0, GID2, NULL, 0x8001);
	kernel_resolve(4, "mlx5_0", 1, 0, GID2, GID9, -1);
	/* a destination nobody knows (no fabric here: known at once) */
	kernel_resolve(5, "mlx5_0", 1, 2, GID9, NULL, -1);
	/* malformed: a path use the kernel does not have */
	kernel_resolve(6, "mlx5_0", 1, LS_RESOLVE_PATH_USE_MAX, GID2, NULL, -1);
	pump();
	assert_int_equal(kern.n_sent, 6);
	for (unsigned i = 0; i < 6; i++)
		assert_refused(i, i + 1);
	assert_int_equal(stat_of("kpath_refused"), 6);
	assert_int_equal(stat_of("kpath_malformed"), 1);
	/* the limited-member P_Key of the same partition is ours */
	kernel_resolve(7, "mlx5_0", 1, 2, GID2, GID1, 0x7fff);
	pump();
	assert_int_equal(answer(6).flags, 0);
	assert_int_equal(answer(6).n, 1);

	/* IP_RESOLVE: the host with the address, by its GID */
	begin(&m, RDMA_NL_LS_OP_IP_RESOLVE, 8);
	memcpy(m.buf + m.len, &ifx, 4);
	m.len += 4;
	attr(&m, RDMA_NLA_F_MANDATORY | LS_NLA_TYPE_IPV4, v4, 4);
	kernel_send(&m);
	pump();
	struct answer a = answer(7);

	assert_int_equal(a.type, RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_IP_RESOLVE));
	assert_int_equal(a.flags, 0);
	assert_true(a.has_gid);
	assert_memory_equal(a.gid, GID2, 16);
	assert_int_equal(stat_of("kpath_ip_requests"), 1);
	/* an acknowledgement is no query */
	begin(&m, 0, 9);
	((struct nlmsghdr *)m.buf)->nlmsg_type = NLMSG_ERROR;
	memset(m.buf + m.len, 0, sizeof(struct nlmsgerr));
	m.len += sizeof(struct nlmsgerr);
	kernel_send(&m);
	pump();
	assert_int_equal(kern.n_sent, 8);
}

/* Queries the upper layer holds: refused at the bound, and at stop. */
static struct kpath_pending *held[8];
static unsigned n_held, n_ended;

static void hold(void *ctx_, struct kpath_pending *p)
{
	(void)ctx_;
	held[n_held++] = p;
}

static void ended(void *ctx_, struct kpath_pending *p)
{
	(void)ctx_;
	(void)p;
	n_ended++;
}

static void test_bound_and_stop(void **state)
{
	static const struct kpath_ops ops = { .query = hold, .ended = ended };
	struct kpath *kp;

	(void)state;
	start();
	kernel_paths_stop(&ctx); /* our own upper layer instead */
	kern.n_sent = 0;
	n_held = n_ended = 0;
	kp = kpath_start(&ctx.loop, -1, BOUND_MS, &ops);
	ctx.kpath = kp;
	assert_non_null(kp);
	kern.n_sent = 0;
	kernel_resolve(11, "mlx5_0", 1, 0, GID2, NULL, -1);
	advance_to(START_MS + 10);
	kernel_resolve(12, "mlx5_0", 1, 0, GID2, NULL, -1);
	advance_to(START_MS + 20);
	assert_int_equal(n_held, 2);
	assert_int_equal(kern.n_sent, 0);
	assert_int_equal(stat_of("kpath_outstanding"), 2);
	/* the first (received at +10) reaches its bound, not the second (+20) */
	advance_to(START_MS + 10 + BOUND_MS - 1);
	assert_int_equal(kern.n_sent, 0);
	advance_to(START_MS + 10 + BOUND_MS + 5);
	assert_int_equal(kern.n_sent, 1);
	assert_refused(0, 11);
	assert_int_equal(n_ended, 1);
	/* the second is answered in time: exactly one answer each */
	struct ibres_path_record fwd;

	memset(&fwd, 0, sizeof(fwd));
	memcpy(fwd.dgid, GID2, 16);
	kpath_answer_paths(held[1], &fwd);
	advance_to(START_MS + 10 * BOUND_MS);
	assert_int_equal(kern.n_sent, 2);
	assert_int_equal(answer(1).seq, 12);
	assert_int_equal(answer(1).n, 3);
	/* at stop, what is in flight is refused */
	kernel_resolve(13, "mlx5_0", 1, 0, GID2, NULL, -1);
	pump();
	assert_int_equal(n_held, 3);
	kpath_stop(kp);
	ctx.kpath = NULL;
	assert_int_equal(kern.n_sent, 3);
	assert_refused(2, 13);
	assert_int_equal(n_ended, 2);
}

/* A destination the cache lacks: the query waits on the fabric; its answer
 * completes it, from a loop turn of its own. */
static void test_waits_for_the_fabric(void **state)
{
	struct fabric_events ev;
	struct ibres_hostrec node9;
	unsigned asked;

	(void)state;
	start_with(CONFIG_FABRIC);
	assert_non_null(ctx.fabric);
	kern.n_sent = 0;
	kernel_resolve(21, "mlx5_0", 1, LS_RESOLVE_PATH_USE_ALL, GID9, NULL, -1);
	pump();
	advance_to(START_MS + 50);
	asked = fabric_sent;
	assert_true(asked >= 1); /* a REQUEST went out */
	assert_int_equal(kern.n_sent, 0);
	assert_int_equal(stat_of("kpath_outstanding"), 1);
	/* node9 answers (what fabric.c reports when a REPLY arrives) */
	memset(&node9, 0, sizeof(node9));
	strcpy(node9.names[0], "node9");
	node9.n_names = 1;
	memcpy(node9.gids[0], GID9, 16);
	node9.n_gids = 1;
	node9.lid = 9;
	node9.qpn = 1;
	node9.pkey = 0xffff;
	node9.ttl = 60;
	assert_int_equal(store_insert(&ctx.store, &node9, &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC, .ttl_s = 60, .grp_mtu = 4, .grp_rate = 3 }, fake_now, NULL),
			 0);
	ev = resolver_fabric_events(&ctx.res);
	ev.learned(ev.arg, &node9);
	advance_to(START_MS + 60);
	assert_int_equal(kern.n_sent, 1);
	struct answer a = answer(0);

	assert_int_equal(a.seq, 21);
	assert_int_equal(a.flags, 0);
	assert_int_equal(a.n, 3);
	assert_int_equal(be16toh(((const struct ibres_path_record *)a.recs[0].path_rec)->dlid), 9);
	assert_int_equal(stat_of("kpath_outstanding"), 0);
	/* the next one comes from the cache, with no fabric traffic */
	asked = fabric_sent;
	kernel_resolve(22, "mlx5_0", 1, LS_RESOLVE_PATH_USE_GMP, GID9, NULL, -1);
	pump();
	assert_int_equal(kern.n_sent, 2);
	assert_int_equal(answer(1).n, 1);
	assert_int_equal(fabric_sent, asked);
}

/* Nobody answers: refused at the bound, well before the fabric query's own
 * end, and the query's waiter is gone when that end comes. */
static void test_fabric_silence_refused_at_the_bound(void **state)
{
	(void)state;
	start_with(CONFIG_FABRIC);
	kern.n_sent = 0;
	kernel_resolve(31, "mlx5_0", 1, 0, GID9, NULL, -1);
	pump(); /* received at START_MS */
	advance_to(START_MS + BOUND_MS - 1);
	assert_int_equal(kern.n_sent, 0);
	advance_to(START_MS + BOUND_MS + 1);
	assert_int_equal(kern.n_sent, 1);
	assert_refused(0, 31);
	assert_int_equal(stat_of("kpath_outstanding"), 0);
	/* the fabric query runs on (6 attempts of 100 ms) and ends: nothing more */
	advance_to(START_MS + 5000);
	assert_int_equal(kern.n_sent, 1);
	/* a query for it later still gets an answer of its own */
	kernel_resolve(32, "mlx5_0", 1, 0, GID9, NULL, -1);
	pump();
	advance_to(START_MS + 5000 + 2 * BOUND_MS);
	assert_int_equal(kern.n_sent, 2);
	assert_refused(1, 32);
}

/* Its rail going down refuses a query that waits on the fabric at once, not
 * at the bound; and a query for that rail after it, at once too. */
static void test_rail_down_refuses_at_once(void **state)
{
	(void)state;
	start_with(CONFIG_FABRIC);
	kern.n_sent = 0;
	kernel_resolve(41, "mlx5_0", 1, 0, GID9, NULL, -1);
	pump(); /* received at START_MS, waiting on the fabric */
	advance_to(START_MS + 10);
	assert_int_equal(kern.n_sent, 0);
	assert_int_equal(stat_of("kpath_outstanding"), 1);
	endpoint_set_down(&ctx.eps, &ctx.eps.ep[0], true);
	advance_to(START_MS + 11);
	assert_int_equal(kern.n_sent, 1);
	assert_refused(0, 41);
	assert_int_equal(stat_of("kpath_outstanding"), 0);
	kernel_resolve(42, "mlx5_0", 1, 0, GID2, NULL, -1);
	pump();
	assert_int_equal(kern.n_sent, 2);
	assert_refused(1, 42);
	/* the fabric query runs on and ends: nothing more */
	advance_to(START_MS + 5000);
	assert_int_equal(kern.n_sent, 2);
}

static void test_no_rdma_netlink(void **state)
{
	(void)state;
	kern.no_rdma = true;
	kern.kernel_fd = -1;
	start();
	assert_null(ctx.kpath);
	assert_int_equal(stat_of("kpath_requests"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_set_timeout_at_start, teardown),
		cmocka_unit_test_teardown(test_every_path_use_from_the_cache, teardown),
		cmocka_unit_test_teardown(test_refused_at_once, teardown),
		cmocka_unit_test_teardown(test_bound_and_stop, teardown),
		cmocka_unit_test_teardown(test_waits_for_the_fabric, teardown),
		cmocka_unit_test_teardown(test_fabric_silence_refused_at_the_bound, teardown),
		cmocka_unit_test_teardown(test_rail_down_refuses_at_once, teardown),
		cmocka_unit_test_teardown(test_no_rdma_netlink, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
