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
 * Completions and verbs async events (port events) come through the event
 * loop: both descriptors are non-blocking. test/vm/ runs it on soft-RoCE in a
 * guest; doc/hardware-testing.md says what only an IB cluster can verify.
 */
#include "fabric/transport_ib.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fabric/fabric_wire.h"
#include "fabric/transport_roce.h"
#include "core/list.h"
#include "core/log.h"
#include "ib/sa_mad.h"

#define RECV_DEPTH	256
#define SEND_DEPTH	64
#define SLOT_LEN	2048 /* a datagram: FW_MAX_LEN fits the smallest usual UD MTU */
#define RECV_SLOT	(IB_GRH_LEN + SLOT_LEN)
#define AH_CACHE	64   /* unicast address handles kept */
#define ATTACH_RETRY_MS 1000 /* a group not joined yet: look again */
#define POLL_BATCH	32
#define MCAST_QPN	0xffffff

_Static_assert(FW_MAX_LEN <= SLOT_LEN, "a datagram fits a slot");

struct ah_slot {
	uint16_t lid;
	uint8_t gid[16];
	struct ibv_ah *ah;
	uint64_t used;
};

struct ib_group {
	bool wanted; /* join() was called */
	bool attached;
	uint8_t mgid[16];
	uint16_t mlid;
	uint32_t qkey;
	uint8_t sl;
	struct ibv_ah *ah;
};

struct ib_priv {
	struct transport *t;
	struct loop *loop;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* RECV_DEPTH receive slots, then SEND_DEPTH send slots */
	bool send_busy[SEND_DEPTH];
	unsigned send_next;
	struct loop_fd cq_lf, async_lf;
	struct loop_timer attach_timer;
	struct ib_group groups[CFG_MAX_GROUPS];
	struct ah_slot ahs[AH_CACHE];
	uint64_t ah_clock;
	uint8_t port_num;
	uint16_t pkey_index;
	uint8_t sl;
	uint8_t gid[16];
	unsigned cq_events; /* to acknowledge in batches */
	bool roce;          /* Ethernet link layer: GRH routing, IP groups */
	struct roce_gid rgid;
	int mfd[2];         /* roce: UDP sockets (IPv4, IPv6) holding IP group memberships */
};

/* --- pure helpers (transport_ib.h) ------------------------------------------------ */

void ib_ah_attr_from_path(const struct ibres_path_record *p, uint8_t port_num,
			  struct ibv_ah_attr *attr)
{
	uint32_t fl_hop = be32toh(p->flowlabel_hoplimit);

	memset(attr, 0, sizeof(*attr));
	attr->dlid = be16toh(p->dlid);
	attr->sl = be16toh(p->qosclass_sl) & 0xf;
	attr->src_path_bits = 0;
	attr->static_rate = p->rate & 0x3f; /* enum ibv_rate has the IB values */
	attr->port_num = port_num;
	if ((fl_hop & 0xff) > 1) {
		attr->is_global = 1;
		memcpy(attr->grh.dgid.raw, p->dgid, 16);
		attr->grh.flow_label = (fl_hop >> 8) & 0xfffff;
		attr->grh.hop_limit = (uint8_t)fl_hop;
		attr->grh.traffic_class = p->tclass;
		attr->grh.sgid_index = 0;
	}
}

void ib_ah_attr_from_addr(const struct transport_addr *from, const uint8_t local_gid[16],
			  uint8_t sl, uint8_t port_num, struct ibv_ah_attr *attr)
{
	static const uint8_t zero[16];

	memset(attr, 0, sizeof(*attr));
	attr->dlid = from->lid;
	attr->sl = sl & 0xf;
	attr->port_num = port_num;
	/* another subnet: only the GID routes there */
	if (memcmp(from->gid, zero, 16) && memcmp(from->gid, local_gid, 8)) {
		attr->is_global = 1;
		memcpy(attr->grh.dgid.raw, from->gid, 16);
		attr->grh.hop_limit = 0xff;
		attr->grh.sgid_index = 0;
	}
}

void ib_ah_attr_mcast(const uint8_t mgid[16], uint16_t mlid, uint8_t sl, uint8_t port_num,
		      struct ibv_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->dlid = mlid;
	attr->sl = sl & 0xf;
	attr->port_num = port_num;
	attr->is_global = 1; /* multicast always carries a GRH */
	memcpy(attr->grh.dgid.raw, mgid, 16);
	attr->grh.hop_limit = 1;
	attr->grh.sgid_index = 0;
}

int ib_parse_recv(const uint8_t *buf, size_t byte_len, bool has_grh, uint16_t slid, uint32_t src_qp,
		  struct transport_addr *from, const uint8_t **payload, size_t *len)
{
	if (byte_len < IB_GRH_LEN)
		return -EBADMSG;
	memset(from, 0, sizeof(*from));
	from->lid = slid;
	from->qpn = src_qp & 0xffffff;
	if (has_grh)
		memcpy(from->gid, buf + 8, 16); /* GRH: SGID at 8, DGID at 24 */
	*payload = buf + IB_GRH_LEN;
	*len = byte_len - IB_GRH_LEN;
	return 0;
}

/* --- the QP ----------------------------------------------------------------------- */

static uint8_t *recv_slot(struct ib_priv *p, unsigned i)
{
	return p->buf + (size_t)i * RECV_SLOT;
}

static uint8_t *send_slot(struct ib_priv *p, unsigned i)
{
	return p->buf + (size_t)RECV_DEPTH * RECV_SLOT + (size_t)i * SLOT_LEN;
}

static int post_recv(struct ib_priv *p, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)recv_slot(p, i),
		.length = RECV_SLOT,
		.lkey = p->mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(p->qp, &wr, &bad);
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

static void on_recv(struct ib_priv *p, const struct ibv_wc *wc)
{
	struct transport_addr from;
	const uint8_t *payload;
	size_t len;

	if (wc->status == IBV_WC_SUCCESS &&
	    ib_parse_recv(recv_slot(p, (unsigned)wc->wr_id), wc->byte_len,
			  wc->wc_flags & IBV_WC_GRH, wc->slid, wc->src_qp, &from, &payload,
			  &len) == 0) {
		if (p->roce) /* no LIDs; the "GRH" may be an IPv4 header */
			roce_grh_sgid(recv_slot(p, (unsigned)wc->wr_id), from.gid);
		p->t->recv(p->t, payload, len, &from);
	}
	if (post_recv(p, (unsigned)wc->wr_id))
		log_warn("endpoint %s: cannot post a receive buffer", p->t->ep->label);
}

static void on_cq(struct loop_fd *lf, uint32_t events)
{
	struct ib_priv *p = container_of(lf, struct ib_priv, cq_lf);
	struct ibv_wc wc[POLL_BATCH];
	struct ibv_cq *cq;
	void *ctx;
	int n;

	(void)events;
	if (ibv_get_cq_event(p->ch, &cq, &ctx) == 0 && ++p->cq_events >= 64) {
		ibv_ack_cq_events(p->cq, p->cq_events);
		p->cq_events = 0;
	}
	ibv_req_notify_cq(p->cq, 0);
	/* drain after re-arming: nothing slips between the two */
	for (int round = 0; round < RECV_DEPTH / POLL_BATCH; round++) {
		n = ibv_poll_cq(p->cq, POLL_BATCH, wc);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV)
				on_recv(p, &wc[i]);
			else if (wc[i].wr_id < SEND_DEPTH)
				p->send_busy[wc[i].wr_id] = false;
		}
	}
}

static const char *port_event_name(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case IBV_EVENT_PORT_ERR:
		return "PORT_ERR";
	case IBV_EVENT_LID_CHANGE:
		return "LID_CHANGE";
	case IBV_EVENT_PKEY_CHANGE:
		return "PKEY_CHANGE";
	case IBV_EVENT_GID_CHANGE:
		return "GID_CHANGE";
	case IBV_EVENT_SM_CHANGE:
		return "SM_CHANGE";
	case IBV_EVENT_CLIENT_REREGISTER:
		return "CLIENT_REREGISTER";
	default:
		return NULL;
	}
}

static void ah_cache_flush(struct ib_priv *p)
{
	for (unsigned i = 0; i < AH_CACHE; i++) {
		if (p->ahs[i].ah)
			ibv_destroy_ah(p->ahs[i].ah);
		memset(&p->ahs[i], 0, sizeof(p->ahs[i]));
	}
}

static void group_release(struct ib_priv *p, unsigned g);
static int roce_group_membership(struct ib_priv *p, unsigned g, bool join);

/* RoCE: an address may have moved in the GID table (GID_CHANGE): release the
 * groups and handles built from the old index and look the GID up again. */
static void roce_port_changed(struct ib_priv *p)
{
	struct roce_gid rg;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		group_release(p, g);
	ah_cache_flush(p);
	if (roce_find_gid(p->ctx, p->port_num, p->rgid.gid, &rg) == 0)
		p->rgid = rg;
	else
		log_warn("endpoint %s: its GID left %s's GID table", p->t->ep->label,
			 p->t->ep->device);
}

static void on_async(struct loop_fd *lf, uint32_t events)
{
	struct ib_priv *p = container_of(lf, struct ib_priv, async_lf);
	struct ibv_async_event ev;

	(void)events;
	for (int i = 0; i < 16 && ibv_get_async_event(p->ctx, &ev) == 0; i++) {
		const char *what = port_event_name(ev.event_type);

		if (what && ev.element.port_num == p->port_num) {
			if (p->roce)
				roce_port_changed(p);
			/* groups may have new MLIDs: attach again when known */
			for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
				p->groups[g].attached = false;
			loop_timer_arm(p->loop, &p->attach_timer, now_ms() + ATTACH_RETRY_MS);
			if (p->t->port_event)
				p->t->port_event(p->t, what);
		} else if (!what) {
			log_warn("endpoint %s: verbs async event %s", p->t->ep->label,
				 ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
}

/* --- groups ------------------------------------------------------------------------ */

static void group_release(struct ib_priv *p, unsigned g)
{
	struct ib_group *grp = &p->groups[g];
	union ibv_gid gid;

	if (grp->attached) {
		memcpy(gid.raw, grp->mgid, 16);
		ibv_detach_mcast(p->qp, &gid, grp->mlid);
		grp->attached = false;
		if (p->roce)
			roce_group_membership(p, g, false);
	}
	if (grp->ah) {
		ibv_destroy_ah(grp->ah);
		grp->ah = NULL;
	}
}

/* RoCE: the port's netdev joins (leaves) group @g's IP address, without
 * which a soft-RoCE device drops what is sent to the group. */
static int roce_group_membership(struct ib_priv *p, unsigned g, bool join)
{
	const struct sockaddr_storage *a = &p->t->ep->groups[g].addr;
	int i = a->ss_family == AF_INET6, ret;

	if (p->mfd[i] < 0) {
		p->mfd[i] = socket(i ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (p->mfd[i] < 0)
			return -errno;
	}
	ret = roce_ip_membership(p->mfd[i], p->rgid.ifindex, a, join);
	if (ret && join)
		log_warn("endpoint %s: cannot join the IP group of group %u: %s", p->t->ep->label,
			 g, strerror(-ret));
	return ret;
}

/* RoCE: a group is the multicast GID of its IP address, no SA, no MLID. */
static int roce_group_address(struct ib_priv *p, unsigned g, uint8_t mgid[16], uint16_t *mlid,
			      uint32_t *qkey, uint8_t *sl)
{
	int ret = roce_mgid(&p->t->ep->groups[g].addr, mgid);

	if (ret) {
		log_warn("endpoint %s: group %u has no IP address to map to a GID", p->t->ep->label,
			 g);
		return ret;
	}
	*mlid = 0;
	*qkey = IBRES_QKEY;
	*sl = p->sl;
	return roce_group_membership(p, g, true);
}

/* Attach to group @g once the SA client joined it (IB) or at once (RoCE);
 * 0 or -EAGAIN. */
static int group_attach(struct ib_priv *p, unsigned g)
{
	struct ib_group *grp = &p->groups[g];
	struct ibv_ah_attr attr;
	uint8_t mgid[16], sl;
	union ibv_gid gid;
	uint16_t mlid;
	uint32_t qkey;
	int ret;

	if (p->roce && grp->attached)
		return 0; /* a RoCE group never moves; a port event releases it */
	if (p->roce)
		ret = roce_group_address(p, g, mgid, &mlid, &qkey, &sl);
	else if (!p->t->group_address)
		ret = -EAGAIN;
	else
		ret = p->t->group_address(p->t, g, mgid, &mlid, &qkey, &sl);
	if (ret)
		return ret;
	if (grp->attached && !memcmp(grp->mgid, mgid, 16) && grp->mlid == mlid)
		return 0;
	group_release(p, g);
	memcpy(gid.raw, mgid, 16);
	ret = ibv_attach_mcast(p->qp, &gid, mlid);
	if (ret) {
		log_warn("endpoint %s: cannot attach to its IB group %u: %s", p->t->ep->label, g,
			 strerror(ret));
		return -ret;
	}
	memcpy(grp->mgid, mgid, 16);
	grp->mlid = mlid;
	grp->qkey = qkey;
	grp->sl = sl;
	grp->attached = true;
	if (p->roce)
		roce_ah_attr(mgid, p->rgid.index, 1, sl, p->port_num, &attr);
	else
		ib_ah_attr_mcast(mgid, mlid, sl, p->port_num, &attr);
	grp->ah = ibv_create_ah(p->pd, &attr);
	if (!grp->ah)
		log_warn("endpoint %s: no address handle for IB group %u", p->t->ep->label, g);
	return 0;
}

static void on_attach_timer(struct loop_timer *timer)
{
	struct ib_priv *p = container_of(timer, struct ib_priv, attach_timer);
	bool pending = false;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		if (p->groups[g].wanted && group_attach(p, g) != 0)
			pending = true;
	if (pending)
		loop_timer_arm(p->loop, timer, now_ms() + ATTACH_RETRY_MS);
}

static int ib_join(struct transport *t, unsigned g)
{
	struct ib_priv *p = t->priv;

	if (g >= CFG_MAX_GROUPS)
		return -EINVAL;
	p->groups[g].wanted = true;
	/* the SA client joins on its own schedule: attach when it has */
	if (group_attach(p, g) != 0)
		loop_timer_arm(p->loop, &p->attach_timer, now_ms() + ATTACH_RETRY_MS);
	return 0;
}

static int ib_leave(struct transport *t, unsigned g)
{
	struct ib_priv *p = t->priv;

	if (g >= CFG_MAX_GROUPS)
		return -EINVAL;
	p->groups[g].wanted = false;
	group_release(p, g);
	return 0;
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
	if ((!grp->attached || !grp->ah) && group_attach(p, g) != 0)
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
		group_release(p, g);
	ah_cache_flush(p);
	for (int i = 0; i < 2; i++)
		if (p->mfd[i] >= 0)
			close(p->mfd[i]);
	if (p->qp)
		ibv_destroy_qp(p->qp);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->cq) {
		if (p->cq_events)
			ibv_ack_cq_events(p->cq, p->cq_events);
		ibv_destroy_cq(p->cq);
	}
	if (p->ch)
		ibv_destroy_comp_channel(p->ch);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
	free(p->buf);
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
	struct ibv_qp_init_attr qa;
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
	p->attach_timer.cb = on_attach_timer;
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
	p->buf = calloc(1, (size_t)RECV_DEPTH * RECV_SLOT + (size_t)SEND_DEPTH * SLOT_LEN);
	p->pd = ibv_alloc_pd(p->ctx);
	p->ch = ibv_create_comp_channel(p->ctx);
	if (!p->buf || !p->pd || !p->ch) {
		ret = -ENOMEM;
		goto err;
	}
	p->cq = ibv_create_cq(p->ctx, RECV_DEPTH + SEND_DEPTH, NULL, p->ch, 0);
	p->mr = ibv_reg_mr(p->pd, p->buf,
			   (size_t)RECV_DEPTH * RECV_SLOT + (size_t)SEND_DEPTH * SLOT_LEN,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!p->cq || !p->mr) {
		ret = -ENOMEM;
		goto err;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = p->cq;
	qa.recv_cq = p->cq;
	qa.cap.max_send_wr = SEND_DEPTH;
	qa.cap.max_recv_wr = RECV_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	p->qp = ibv_create_qp(p->pd, &qa);
	if (!p->qp) {
		ret = errno ? -errno : -EIO;
		log_err("endpoint %s: cannot create a UD QP: %s", ep->label, strerror(-ret));
		goto err;
	}
	ret = qp_to_rts(p);
	if (ret) {
		log_err("endpoint %s: UD QP to RTS: %s", ep->label, strerror(-ret));
		goto err;
	}
	for (unsigned i = 0; i < RECV_DEPTH; i++) {
		ret = post_recv(p, i);
		if (ret)
			goto err;
	}
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
	p->async_lf.cb = on_async;
	ret = loop_add_fd(loop, &p->async_lf, EPOLLIN);
	if (ret) {
		p->async_lf.cb = NULL;
		goto err;
	}
	t->qpn = p->qp->qp_num;
	if (p->roce)
		log_info("endpoint %s: UD QP 0x%06x on %s port %u (RoCE v2, GID index %u)",
			 ep->label, t->qpn, ep->device, p->port_num, p->rgid.index);
	else
		log_info("endpoint %s: UD QP 0x%06x on %s port %u", ep->label, t->qpn,
			 ep->device, p->port_num);
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
};
