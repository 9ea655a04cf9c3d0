// SPDX-License-Identifier: MIT
/* The NETLINK_RDMA local-service socket and the queries in flight
 * (kpath.h). */
#include "os/kpath.h"

#include <endian.h>
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/log.h"
#include "os/kpath_sock.h"

#define RECV_BATCH 64 /* datagrams per wake-up: the loop serves others too */
/* The kernel waits this much longer than our bound, so that our refusal at
 * the bound reaches it before it gives up on its own. */
#define KERNEL_MARGIN_MS 250

struct kpath {
	struct loop *loop;
	struct loop_fd lf;
	struct kpath_ops ops;
	unsigned bound_ms;
	uint32_t pid;       /* our netlink port id */
	uint32_t next_seq;  /* of our own requests (SET_TIMEOUT) */
	struct list_node pending;
	unsigned n_pending;
	bool warned_eperm;
	struct kpath_counters c;
	uint8_t rx[KPATH_SOCK_RECV_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
};

static void send_msg(struct kpath *kp, const uint8_t *buf, size_t len)
{
	if (!len || kpath_sock_send(kp->lf.fd, buf, len))
		kp->c.tx_errors++;
}

static void send_set_timeout(struct kpath *kp)
{
	uint8_t buf[KPATH_MSG_MAX];
	uint64_t ms = (uint64_t)kp->bound_ms + KERNEL_MARGIN_MS;

	if (ms < KPATH_TIMEOUT_MIN_MS)
		ms = KPATH_TIMEOUT_MIN_MS;
	if (ms > KPATH_TIMEOUT_MAX_MS)
		ms = KPATH_TIMEOUT_MAX_MS;
	send_msg(kp, buf,
		 kpath_encode_set_timeout(buf, sizeof(buf), kp->next_seq++, kp->pid, (uint32_t)ms));
	log_info("kernel path queries: answering within %u ms (kernel told to wait %llu ms)",
		 kp->bound_ms, (unsigned long long)ms);
}

/* Take @p off the books; the caller has answered or refused it. */
static void pending_free(struct kpath_pending *p)
{
	struct kpath *kp = p->kp;

	loop_timer_cancel(kp->loop, &p->timer);
	list_del(&p->node);
	kp->n_pending--;
	free(p);
}

static void refuse_query(struct kpath *kp, const struct kpath_query *q)
{
	uint8_t buf[KPATH_MSG_MAX];

	send_msg(kp, buf, kpath_encode_refusal(buf, sizeof(buf), q->op, q->seq, kp->pid));
	kp->c.refused++;
}

void kpath_refuse(struct kpath_pending *p)
{
	log_debug("kernel path query %u: refused, the kernel asks the SA", p->q.seq);
	refuse_query(p->kp, &p->q);
	pending_free(p);
}

void kpath_answer_paths(struct kpath_pending *p, const struct ibres_path_record *fwd)
{
	struct kpath *kp = p->kp;
	struct kpath_record recs[KPATH_RECORDS_MAX];
	uint32_t flags[KPATH_RECORDS_MAX];
	uint8_t buf[KPATH_MSG_MAX];
	unsigned n = kpath_records_for(p->q.path_use, fwd, recs);

	for (unsigned i = 0; i < n; i++) {
		flags[i] = recs[i].flags;
		/* the SA echoes the service ID it was asked for */
		if (p->q.has & KPATH_HAS_SERVICE_ID)
			recs[i].rec.service_id = htobe64(p->q.service_id);
	}
	/* an answer the kernel would not take fails the route: let the SA answer */
	if (!n || !kpath_kernel_accepts(p->q.path_use, flags, n)) {
		kpath_refuse(p);
		return;
	}
	send_msg(kp, buf, kpath_encode_paths(buf, sizeof(buf), p->q.seq, kp->pid, recs, n));
	log_debug("kernel path query %u (%s port %u, path use %u): %u record%s", p->q.seq,
		  p->q.device, p->q.port, p->q.path_use, n, n == 1 ? "" : "s");
	kp->c.answered++;
	pending_free(p);
}

void kpath_answer_gid(struct kpath_pending *p, const uint8_t gid[16])
{
	struct kpath *kp = p->kp;
	uint8_t buf[KPATH_MSG_MAX];

	send_msg(kp, buf, kpath_encode_gid(buf, sizeof(buf), p->q.seq, kp->pid, gid));
	kp->c.answered++;
	pending_free(p);
}

static void on_bound(struct loop_timer *t)
{
	struct kpath_pending *p = container_of(t, struct kpath_pending, timer);
	struct kpath *kp = p->kp;

	log_debug("kernel path query %u: no answer within %u ms; the kernel asks the SA",
		  p->q.seq, kp->bound_ms);
	refuse_query(kp, &p->q);
	kp->ops.ended(kp->ops.ctx, p);
	pending_free(p);
}

static void new_query(struct kpath *kp, const struct kpath_query *q)
{
	struct kpath_pending *p;

	if (q->op == KPATH_OP_IP_RESOLVE)
		kp->c.ip_requests++;
	else
		kp->c.requests++;
	if (kp->n_pending >= KPATH_PENDING_MAX || !(p = calloc(1, sizeof(*p)))) {
		refuse_query(kp, q);
		return;
	}
	p->q = *q;
	p->kp = kp;
	p->timer.cb = on_bound;
	list_add_tail(&kp->pending, &p->node);
	kp->n_pending++;
	if (loop_timer_arm(kp->loop, &p->timer, now_ms() + kp->bound_ms)) {
		kpath_refuse(p);
		return;
	}
	kp->ops.query(kp->ops.ctx, p); /* may end p at once */
}

/* An acknowledgement: kernels ack our messages with an error when they
 * refuse them; the one that matters is a missing CAP_NET_ADMIN. */
static void on_ack(struct kpath *kp, const struct nlmsghdr *h)
{
	struct nlmsgerr e;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(e)))
		return;
	memcpy(&e, NLMSG_DATA(h), sizeof(e));
	if (e.error == -EPERM && !kp->warned_eperm) {
		kp->warned_eperm = true;
		log_warn("kernel path queries: the kernel refuses our answers (EPERM): ibresd needs "
			 "CAP_NET_ADMIN for them; the kernel asks the SA meanwhile");
	}
}

static void on_datagram(struct kpath *kp, size_t len)
{
	size_t off = 0, n;

	while ((n = kpath_msg_len(kp->rx + off, len - off))) {
		const struct nlmsghdr *h = (const void *)(kp->rx + off);
		struct kpath_query q;
		int ret;

		if (h->nlmsg_type == NLMSG_ERROR) {
			on_ack(kp, h);
		} else {
			ret = kpath_decode(h, n, &q);
			if (ret == KPATH_QUERY) {
				new_query(kp, &q);
			} else if (ret < 0) {
				kp->c.malformed++;
				if (q.refusable)
					refuse_query(kp, &q);
			}
		}
		off += NLMSG_ALIGN(n);
		if (off >= len)
			return;
	}
	kp->c.malformed++; /* a tail that is not a message */
}

static void on_readable(struct loop_fd *lf, uint32_t events)
{
	struct kpath *kp = container_of(lf, struct kpath, lf);

	(void)events;
	for (unsigned i = 0; i < RECV_BATCH; i++) {
		ssize_t n = kpath_sock_recv(lf->fd, kp->rx, sizeof(kp->rx));

		if (n == -ENOBUFS) {
			/* a burst overran the buffer: those queries wait out the
			 * kernel's timeout, then go to the SA */
			log_warn("kernel path queries: receive buffer overrun; some queries "
				 "were lost");
			continue;
		}
		if (n == -EBADMSG) {
			kp->c.malformed++; /* not from the kernel */
			continue;
		}
		if (n < 0)
			return; /* EAGAIN, or nothing more to read */
		on_datagram(kp, (size_t)n);
	}
}

struct kpath *kpath_start(struct loop *loop, int activation_fd, unsigned bound_ms,
			  const struct kpath_ops *ops)
{
	struct kpath *kp;
	int fd = activation_fd, ret;

	if (fd < 0) {
		fd = kpath_sock_open();
		if (fd < 0) {
			/* no ib_core, or a kernel without RDMA netlink */
			log_info("kernel path queries: no NETLINK_RDMA local service here (%s); "
				 "kernel RDMA consumers ask the SA themselves",
				 strerror(-fd));
			return NULL;
		}
	} else if ((ret = kpath_sock_adopt(fd)) < 0) {
		log_err("kernel path queries: socket from systemd: %s", strerror(-ret));
		close(fd);
		return NULL;
	}
	kp = calloc(1, sizeof(*kp));
	if (!kp) {
		close(fd);
		log_err("kernel path queries: out of memory");
		return NULL;
	}
	kp->loop = loop;
	kp->ops = *ops;
	kp->bound_ms = bound_ms;
	kp->next_seq = 1;
	kp->pid = kpath_sock_pid(fd);
	list_init(&kp->pending);
	kp->lf.fd = fd;
	kp->lf.cb = on_readable;
	if (loop_add_fd(loop, &kp->lf, EPOLLIN)) {
		log_err("kernel path queries: cannot watch the socket");
		close(fd);
		free(kp);
		return NULL;
	}
	log_info("kernel path queries: listening on NETLINK_RDMA group %d%s", RDMA_NL_GROUP_LS,
		 activation_fd >= 0 ? " (socket from systemd)" : "");
	send_set_timeout(kp);
	return kp;
}

void kpath_set_bound(struct kpath *kp, unsigned bound_ms)
{
	if (!kp || kp->bound_ms == bound_ms)
		return;
	kp->bound_ms = bound_ms;
	send_set_timeout(kp);
}

void kpath_foreach(struct kpath *kp, void (*fn)(void *arg, struct kpath_pending *p), void *arg)
{
	struct list_node *pos;

	for (pos = kp ? kp->pending.next : NULL; pos && pos != &kp->pending; pos = pos->next)
		fn(arg, list_entry(pos, struct kpath_pending, node));
}

void kpath_stop(struct kpath *kp)
{
	struct list_node *pos, *tmp;

	if (!kp)
		return;
	/* the kernel asks the SA now instead of waiting for us in vain */
	list_for_each_safe(pos, tmp, &kp->pending)
	{
		struct kpath_pending *p = list_entry(pos, struct kpath_pending, node);

		refuse_query(kp, &p->q);
		kp->ops.ended(kp->ops.ctx, p);
		pending_free(p);
	}
	loop_del_fd(kp->loop, &kp->lf);
	close(kp->lf.fd);
	free(kp);
}

void kpath_stats(const struct kpath *kp, struct tlv_writer *w)
{
	static const struct kpath_counters zero;
	const struct kpath_counters *c = kp ? &kp->c : &zero;
	const struct {
		const char *name;
		uint64_t value;
	} rows[] = {
		{ "kpath_requests", c->requests },
		{ "kpath_ip_requests", c->ip_requests },
		{ "kpath_answered", c->answered },
		{ "kpath_refused", c->refused },
		{ "kpath_malformed", c->malformed },
		{ "kpath_tx_errors", c->tx_errors },
		{ "kpath_outstanding", kp ? kp->n_pending : 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rows[i].value);
	}
}
