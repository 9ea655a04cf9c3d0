// SPDX-License-Identifier: MIT
/*
 * The ib transport: fabric datagrams on a UD QP of the endpoint's HCA port
 * (libibverbs). One QP per endpoint, Q_Key IBRES_QKEY (a controlled one: only
 * a privileged process can give a QP that Q_Key, so only such a process can
 * send to ours). Both link layers:
 * - InfiniBand: multicast goes to the IB groups the SA client joined for the
 *   endpoint (mcast.c), which the QP attaches to as soon as their MGID and
 *   MLID are known; unicast answers go to the sender's LID and QPN from the
 *   work completion (GID from the GRH).
 * - RoCE v2 (transport_roce.h): no LIDs, no SA. Every address handle is
 *   GRH-routed from the endpoint's GID index; a group is the multicast GID of
 *   its configured IP address, joined as an IP group on the port's netdev
 *   too; the sender's GID comes from the IP header before the payload.
 * Completions and verbs async events (port events, transport_ib_port.c)
 * come through the event loop: both descriptors are non-blocking.
 * The receive queue holds the endpoint's recv_depth buffers (clamped to what
 * the device takes); each poll's consumed buffers go back in one chained
 * ibv_post_recv. A UD QP with no buffer posted drops what arrives without a
 * trace, so the transport counts the times it found every buffer consumed
 * (the queue ran dry) and reads the port's out_of_buffer counter where the
 * device has one (mlx5; not rxe, which drops in silence). test/vm/ runs it on soft-RoCE in a
 * guest; doc/hardware-testing.md says what only an IB cluster can verify.
 */#include "fabric/transport_ib_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fabric/fabric_wire.h"
#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"
#include "ib/sa_mad.h"

_Static_assert(FW_MAX_LEN <= SLOT_LEN, "a datagram fits a slot");

static uint8_t *recv_slot(struct ib_priv *p, unsigned i)
{
	return p->buf + (size_t)i * RECV_SLOT;
}

static uint8_t *send_slot(struct ib_priv *p, unsigned i)
{
	return p->buf + (size_t)p->recv_depth * RECV_SLOT + (size_t)i * SLOT_LEN;
}

static size_t buf_len(unsigned recv_depth)
{
	return (size_t)recv_depth * RECV_SLOT + (size_t)SEND_DEPTH * SLOT_LEN;
}

/* Hand receive slots @slots[0..n) (n <= POLL_BATCH) back to the HCA in one
 * chained post. 0 or -errno; what went in before a failure stays posted. */
static int post_recvs(struct ib_priv *p, const unsigned *slots, unsigned n)
{
	struct ibv_recv_wr wr[POLL_BATCH], *bad = NULL;
	struct ibv_sge sge[POLL_BATCH];
	int ret;

	if (!n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)recv_slot(p, slots[i]);
		sge[i].length = RECV_SLOT;
		sge[i].lkey = p->mr->lkey;
		wr[i].wr_id = WRID_RECV | slots[i];
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_recv(p->qp, wr, &bad);
	p->recv_posted += ret && bad ? (unsigned)(bad - wr) : ret ? 0 : n;
	return -ret;
}

static int qp_to_rts(struct ib_priv *p)
{
	struct ibv_qp_attr attr;
	int ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = p->pkey_index;
	attr.port_num = p->port_num;
	attr.qkey = IBRES_QKEY;
	ret = ibv_modify_qp(p->qp, &attr,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (ret)
		return -ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(p->qp, &attr, IBV_QP_STATE);
	if (ret)
		return -ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	ret = ibv_modify_qp(p->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return -ret;
}

static void on_recv(struct ib_priv *p, const struct ibv_wc *wc, unsigned slot)
{
	struct transport_addr from;
	const uint8_t *payload;
	size_t len;

	if (wc->status == IBV_WC_SUCCESS &&
	    ib_parse_recv(recv_slot(p, slot), wc->byte_len, wc->wc_flags & IBV_WC_GRH, wc->slid,
			  wc->src_qp, &from, &payload, &len) == 0) {
		if (p->roce) /* no LIDs; the "GRH" may be an IPv4 header */
			roce_grh_sgid(recv_slot(p, slot), from.gid);
		p->t->recv(p->t, payload, len, &from);
	}
}

/* Every buffer the HCA held came back before we gave any again: the queue
 * was empty from the last one's arrival until now, and what arrived in
 * between was dropped. */
static void ran_dry(struct ib_priv *p)
{
	uint64_t now = now_ms();

	p->queue_empty++;
	if (p->dry_warned_ms && now < p->dry_warned_ms + DRY_LOG_MS)
		return;
	log_warn("endpoint %s: its receive queue ran dry (%" PRIu64 " time%s since the last "
		 "warning): datagrams were lost; recv_depth is %u",
		 p->t->ep->label, p->queue_empty - p->dry_warned_at,
		 p->queue_empty - p->dry_warned_at == 1 ? "" : "s", p->recv_depth);
	p->dry_warned_ms = now ? now : 1;
	p->dry_warned_at = p->queue_empty;
}

/* Move what the completion queue holds into the ring of polled completions
 * (room for every work request outstanding, so it never overflows); then
 * the HCA holds recv_posted buffers exactly. */
static void poll_all(struct ib_priv *p)
{
	for (int calls = 0; calls < 3 && p->wc_n < p->wc_cap; calls++) {
		unsigned tail = (p->wc_head + p->wc_n) % p->wc_cap;
		unsigned room = p->wc_cap - p->wc_n;
		int n;

		if (room > p->wc_cap - tail)
			room = p->wc_cap - tail; /* up to the ring's end, then from its start */
		n = ibv_poll_cq(p->cq, (int)room, &p->wcs[tail]);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++)
			if ((p->wcs[tail + i].wr_id & WRID_RECV) && p->recv_posted)
				p->recv_posted--;
		p->wc_n += (unsigned)n;
		if ((unsigned)n < room)
			return; /* the completion queue is empty */
	}
}

static void on_cq(struct loop_fd *lf, uint32_t events)
{
	struct ib_priv *p = container_of(lf, struct ib_priv, cq_lf);
	struct ibv_cq *cq;
	void *ctx;

	(void)events;
	if (ibv_get_cq_event(p->ch, &cq, &ctx) == 0 && ++p->cq_events >= 64) {
		ibv_ack_cq_events(p->cq, p->cq_events);
		p->cq_events = 0;
	}
	ibv_req_notify_cq(p->cq, 0);
	/* Drain after re-arming: nothing slips between the two. Then, batch by
	 * batch: poll everything, and if the HCA holds no buffer the queue ran
	 * dry (the HCA's own count only ever falls between two of our posts, so
	 * a look just before each post sees every time it reached zero); hand
	 * the batch to the protocol; post its buffers again in one chain. At
	 * most a queue's worth of batches polled, then the loop serves the
	 * others: what arrived since the re-arm raises the next event. */
	for (unsigned round = 0; round <= p->wc_cap / POLL_BATCH + 1; round++) {
		unsigned slots[POLL_BATCH], n_slots = 0;

		if (round <= p->wc_cap / POLL_BATCH)
			poll_all(p);
		if (!p->wc_n)
			return;
		if (!p->recv_posted && !p->dry) {
			p->dry = true;
			ran_dry(p);
		}
		for (unsigned i = 0; i < POLL_BATCH && p->wc_n; i++) {
			const struct ibv_wc *wc = &p->wcs[p->wc_head];

			/* the work request id, not the opcode: an error
			 * completion's opcode is undefined */
			if (wc->wr_id & WRID_RECV) {
				unsigned slot = (unsigned)(wc->wr_id & ~WRID_RECV);

				if (slot < p->recv_depth) {
					slots[n_slots++] = slot;
					on_recv(p, wc, slot);
				}
			} else if (wc->wr_id < SEND_DEPTH) {
				p->send_busy[wc->wr_id] = false;
			}
			p->wc_head = (p->wc_head + 1) % p->wc_cap;
			p->wc_n--;
		}
		if (post_recvs(p, slots, n_slots))
			log_warn("endpoint %s: cannot post receive buffers again", p->t->ep->label);
		else if (n_slots)
			p->dry = false;
	}
}

/* --- sending ------------------------------------------------------------------------ */

static int post_send(struct ib_priv *p, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
		     const void *buf, size_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	unsigned i = p->send_next;
	int ret;

	if (len > SLOT_LEN)
		return -EMSGSIZE;
	if (p->send_busy[i])
		return -EAGAIN; /* every slot in flight: the core retries later */
	memcpy(send_slot(p, i), buf, len);
	sge.addr = (uintptr_t)send_slot(p, i);
	sge.length = (uint32_t)len;
	sge.lkey = p->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret)
		return -ret;
	p->send_busy[i] = true;
	p->send_next = (i + 1) % SEND_DEPTH;
	return 0;
}

static int ib_send_mcast(struct transport *t, unsigned g, const void *buf, size_t len)
{
	struct ib_priv *p = t->priv;
	struct ib_group *grp;

	if (g >= CFG_MAX_GROUPS)
		return -EINVAL;
	grp = &p->groups[g];
	if ((!grp->attached || !grp->ah) && ib_group_attach(p, g) != 0)
		return -EAGAIN;
	if (!grp->ah)
		return -EHOSTUNREACH;
	return post_send(p, grp->ah, MCAST_QPN, grp->qkey, buf, len);
}

/* A cached address handle towards @to (least recently used one replaced). */
static struct ibv_ah *ucast_ah(struct ib_priv *p, const struct transport_addr *to)
{
	struct ah_slot *victim = &p->ahs[0];
	struct ibv_ah_attr attr;

	for (unsigned i = 0; i < AH_CACHE; i++) {
		struct ah_slot *s = &p->ahs[i];

		if (s->ah && s->lid == to->lid && !memcmp(s->gid, to->gid, 16)) {
			s->used = ++p->ah_clock;
			return s->ah;
		}
		if (!s->ah || s->used < victim->used)
			victim = s;
	}
	if (victim->ah)
		ibv_destroy_ah(victim->ah);
	if (p->roce)
		roce_ah_attr(to->gid, p->rgid.index, ROCE_HOP_LIMIT, p->sl, p->port_num, &attr);
	else
		ib_ah_attr_from_addr(to, p->gid, p->sl, p->port_num, &attr);
	victim->ah = ibv_create_ah(p->pd, &attr);
	victim->lid = to->lid;
	memcpy(victim->gid, to->gid, 16);
	victim->used = ++p->ah_clock;
	return victim->ah;
}

static int ib_send_ucast(struct transport *t, const struct transport_addr *to, const void *buf,
			 size_t len)
{
	struct ib_priv *p = t->priv;
	struct ibv_ah *ah;

	static const uint8_t zero[16];

	if (!to->qpn || (p->roce ? !memcmp(to->gid, zero, 16) : !to->lid))
		return -EDESTADDRREQ;
	ah = ucast_ah(p, to);
	if (!ah)
		return -EHOSTUNREACH;
	return post_send(p, ah, to->qpn, IBRES_QKEY, buf, len);
}

/* --- open / close ------------------------------------------------------------------- */

/* The queues and their memory (a QP, its CQ, the registered buffers). */
static void queues_destroy(struct ib_priv *p)
{
	if (p->qp)
		ibv_destroy_qp(p->qp);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->cq) {
		if (p->cq_events)
			ibv_ack_cq_events(p->cq, p->cq_events);
		ibv_destroy_cq(p->cq);
	}
	free(p->buf);
	free(p->wcs);
	p->qp = NULL;
	p->mr = NULL;
	p->cq = NULL;
	p->buf = NULL;
	p->wcs = NULL;
	p->cq_events = 0;
}

static int queues_create(struct ib_priv *p, unsigned depth)
{
	struct ibv_qp_init_attr qa;

	p->recv_depth = depth;
	p->wc_cap = depth + SEND_DEPTH;
	p->wc_head = p->wc_n = 0;
	p->buf = calloc(1, buf_len(depth));
	p->wcs = calloc(p->wc_cap, sizeof(*p->wcs));
	if (!p->buf || !p->wcs)
		return -ENOMEM;
	p->cq = ibv_create_cq(p->ctx, (int)p->wc_cap, NULL, p->ch, 0);
	if (!p->cq)
		return errno ? -errno : -ENOMEM;
	p->mr = ibv_reg_mr(p->pd, p->buf, buf_len(depth), IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr)
		return errno ? -errno : -ENOMEM;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = p->cq;
	qa.recv_cq = p->cq;
	qa.cap.max_send_wr = SEND_DEPTH;
	qa.cap.max_recv_wr = depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	p->qp = ibv_create_qp(p->pd, &qa);
	if (!p->qp)
		return errno ? -errno : -EIO;
	return 0;
}

/* The queues for @want receive buffers, or as many as the device and the
 * locked-memory limit allow: the device's maxima first, then halving on
 * a failure for want of memory. */
static int queues_fit(struct ib_priv *p, const struct cfg_endpoint *ep)
{
	struct ibv_device_attr da;
	unsigned depth;
	int ret;

	if (ibv_query_device(p->ctx, &da)) {
		ret = errno ? -errno : -EIO;
		log_err("endpoint %s: %s: cannot query the device: %s", ep->label, ep->device,
			strerror(-ret));
		return ret;
	}
	depth = ib_recv_depth_fit(ep->recv_depth, da.max_qp_wr, da.max_cqe, SEND_DEPTH);
	if (depth < ep->recv_depth)
		log_info("endpoint %s: recv_depth %u is more than %s takes (max_qp_wr %d, "
			 "max_cqe %d): %u receive buffers",
			 ep->label, ep->recv_depth, ep->device, da.max_qp_wr, da.max_cqe, depth);
	for (;;) {
		ret = queues_create(p, depth);
		if (!ret)
			return 0;
		queues_destroy(p);
		if ((ret != -ENOMEM && ret != -EAGAIN && ret != -EINVAL && ret != -EPERM) ||
		    depth / 2 < CFG_RECV_DEPTH_MIN)
			break;
		log_warn("endpoint %s: no room for %u receive buffers (%s; %zu KiB of locked "
			 "memory: see LimitMEMLOCK): trying %u",
			 ep->label, depth, strerror(-ret), buf_len(depth) / 1024, depth / 2);
		depth /= 2;
	}
	log_err("endpoint %s: cannot create a UD QP with %u receive buffers: %s", ep->label,
		depth, strerror(-ret));
	return ret;
}

/* The port's out_of_buffer counter (datagrams dropped for want of a receive
 * buffer, every QP of the port together) where the device keeps one. */
static void hw_counter_open(struct ib_priv *p, const struct cfg_endpoint *ep)
{
	int n = snprintf(p->hw_oob, sizeof(p->hw_oob), SYSFS_IB "/%s/ports/%u/hw_counters/"
			 "out_of_buffer", ep->device, ep->port_num);

	if (n < 0 || (size_t)n >= sizeof(p->hw_oob) || ib_read_counter(p->hw_oob, &p->hw_last)) {
		p->hw_oob[0] = 0;
		log_info("endpoint %s: %s counts no receive-queue drops (no out_of_buffer "
			 "counter): only the daemon's own count of its queue running dry",
			 ep->label, ep->device);
	}
}

static void ib_rx_stats(struct transport *t, struct transport_rx_stats *s)
{
	struct ib_priv *p = t->priv;
	uint64_t now;

	memset(s, 0, sizeof(*s));
	if (!p)
		return;
	s->queue_empty = p->queue_empty;
	s->slots = p->recv_depth;
	if (p->hw_oob[0] && ib_read_counter(p->hw_oob, &now) == 0)
		ib_counter_advance(&p->hw_last, &p->hw_total, now);
	s->hw_counted = p->hw_oob[0] != 0;
	s->hw_out_of_buffer = p->hw_total;
}

static void ib_close(struct transport *t, struct loop *loop)
{
	struct ib_priv *p = t->priv;

	if (!p)
		return;
	loop_timer_cancel(loop, &p->attach_timer);
	if (p->cq_lf.cb)
		loop_del_fd(loop, &p->cq_lf);
	if (p->async_lf.cb)
		loop_del_fd(loop, &p->async_lf);
	for (unsigned g = 0; g < CFG_MAX_GROUPS && p->qp; g++)
		ib_group_release(p, g);
	ib_ah_cache_flush(p);
	for (int i = 0; i < 2; i++)
		if (p->mfd[i] >= 0)
			close(p->mfd[i]);
	queues_destroy(p);
	if (p->ch)
		ibv_destroy_comp_channel(p->ch);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
	free(p);
	t->priv = NULL;
}

/* The endpoint's device, opened; -ENODEV when libibverbs does not know it. */
static int open_device(struct ib_priv *p, const char *name)
{
	struct ibv_device **list;
	int n = 0, ret = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? -errno : -ENODEV;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		p->ctx = ibv_open_device(list[i]);
		ret = p->ctx ? 0 : (errno ? -errno : -EIO);
		break;
	}
	ibv_free_device_list(list);
	return ret;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static int ib_open(struct transport *t, struct loop *loop, const struct cfg_endpoint *ep)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ib_priv *p;
	int ret;

	if (!ep->device[0] || !ep->n_groups)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->priv = p;
	t->ep = ep;
	p->t = t;
	p->loop = loop;
	p->port_num = ep->port_num;
	p->pkey_index = ep->pkey_index;
	p->sl = ep->sl;
	p->attach_timer.cb = ib_on_attach_timer;
	p->mfd[0] = p->mfd[1] = -1;
	ret = open_device(p, ep->device);
	if (ret) {
		log_err("endpoint %s: no RDMA device '%s' (%s)", ep->label, ep->device,
			strerror(-ret));
		goto err;
	}
	if (ibv_query_port(p->ctx, p->port_num, &pa)) {
		ret = errno ? -errno : -EIO;
		log_err("endpoint %s: %s port %u: %s", ep->label, ep->device, p->port_num,
			strerror(-ret));
		goto err;
	}
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		/* RoCE (ibacm used to crash on these): GRH routing from our GID */
		p->roce = true;
		ret = roce_find_gid(p->ctx, p->port_num, ep->id.n_gids ? ep->id.gids[0] : NULL,
				    &p->rgid);
		if (ret) {
			log_err("endpoint %s: %s port %u has no RoCE v2 GID%s", ep->label,
				ep->device, p->port_num,
				ep->id.n_gids ? " equal to the endpoint's gid" : "");
			goto err;
		}
		memcpy(p->gid, p->rgid.gid, 16);
		memcpy(t->gid, p->rgid.gid, 16);
	} else if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND) {
		if (ibv_query_gid(p->ctx, p->port_num, 0, &gid) == 0)
			memcpy(p->gid, gid.raw, 16);
	} else {
		/* iWARP has no UD QPs */
		log_warn("endpoint %s: %s port %u is neither InfiniBand nor RoCE: no ib "
			 "transport there", ep->label, ep->device, p->port_num);
		ret = -EPROTONOSUPPORT;
		goto err;
	}
	p->pd = ibv_alloc_pd(p->ctx);
	p->ch = ibv_create_comp_channel(p->ctx);
	if (!p->pd || !p->ch) {
		ret = -ENOMEM;
		goto err;
	}
	ret = queues_fit(p, ep);
	if (ret)
		goto err;
	ret = qp_to_rts(p);
	if (ret) {
		log_err("endpoint %s: UD QP to RTS: %s", ep->label, strerror(-ret));
		goto err;
	}
	for (unsigned i = 0; i < p->recv_depth; i += POLL_BATCH) {
		unsigned slots[POLL_BATCH], n = 0;

		while (n < POLL_BATCH && i + n < p->recv_depth) {
			slots[n] = i + n;
			n++;
		}
		ret = post_recvs(p, slots, n);
		if (ret) {
			log_err("endpoint %s: cannot post receive buffers: %s", ep->label,
				strerror(-ret));
			goto err;
		}
	}
	hw_counter_open(p, ep);
	ret = ibv_req_notify_cq(p->cq, 0);
	if (ret) {
		ret = -ret;
		goto err;
	}
	ret = set_nonblock(p->ch->fd);
	if (!ret)
		ret = set_nonblock(p->ctx->async_fd);
	if (ret)
		goto err;
	p->cq_lf.fd = p->ch->fd;
	p->cq_lf.cb = on_cq;
	ret = loop_add_fd(loop, &p->cq_lf, EPOLLIN);
	if (ret) {
		p->cq_lf.cb = NULL;
		goto err;
	}
	p->async_lf.fd = p->ctx->async_fd;
	p->async_lf.cb = ib_on_async;
	ret = loop_add_fd(loop, &p->async_lf, EPOLLIN);
	if (ret) {
		p->async_lf.cb = NULL;
		goto err;
	}
	t->qpn = p->qp->qp_num;
	if (p->roce)
		log_info("endpoint %s: UD QP 0x%06x on %s port %u (RoCE v2, GID index %u), %u "
			 "receive buffers (%zu KiB)",
			 ep->label, t->qpn, ep->device, p->port_num, p->rgid.index, p->recv_depth,
			 buf_len(p->recv_depth) / 1024);
	else
		log_info("endpoint %s: UD QP 0x%06x on %s port %u, %u receive buffers (%zu KiB)",
			 ep->label, t->qpn, ep->device, p->port_num, p->recv_depth,
			 buf_len(p->recv_depth) / 1024);
	return 0;
err:
	ib_close(t, loop);
	return ret;
}

const struct transport_ops transport_ib_ops = {
	.name = "ib",
	.open = ib_open,
	.close = ib_close,
	.join = ib_join,
	.leave = ib_leave,
	.send_mcast = ib_send_mcast,
	.send_ucast = ib_send_ucast,
	.rx_stats = ib_rx_stats,
};
