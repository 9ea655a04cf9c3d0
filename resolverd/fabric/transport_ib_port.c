// SPDX-License-Identifier: MIT
/*
 * The ib transport's port: its verbs async events (a port that went down or
 * up, moved its LID or GIDs, or changed SM: every group is attached again,
 * and the fabric layer hears of it) and its multicast groups, attached once
 * the SA client joined them (IB) or at once to the multicast GID of their IP
 * address (RoCE v2, where the port's netdev joins that IP group too).
 */
#include "fabric/transport_ib_impl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"
#include "ib/sa_mad.h"

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

void ib_ah_cache_flush(struct ib_priv *p)
{
	for (unsigned i = 0; i < AH_CACHE; i++) {
		if (p->ahs[i].ah)
			ibv_destroy_ah(p->ahs[i].ah);
		memset(&p->ahs[i], 0, sizeof(p->ahs[i]));
	}
}

static int roce_group_membership(struct ib_priv *p, unsigned g, bool join);

/* RoCE: an address may have moved in the GID table (GID_CHANGE): release the
 * groups and handles built from the old index and look the GID up again. */
static void roce_port_changed(struct ib_priv *p)
{
	struct roce_gid rg;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		ib_group_release(p, g);
	ib_ah_cache_flush(p);
	if (roce_find_gid(p->ctx, p->port_num, p->rgid.gid, &rg) == 0)
		p->rgid = rg;
	else
		log_warn("endpoint %s: its GID left %s's GID table", p->t->ep->label,
			 p->t->ep->device);
}

void ib_on_async(struct loop_fd *lf, uint32_t events)
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

void ib_group_release(struct ib_priv *p, unsigned g)
{
	struct ib_group *grp = &p->groups[g];
	union ibv_gid gid;

	if (grp->attached) {
		memcpy(gid.raw, grp->mgid, 16);
		ibv_detach_mcast(p->qp, &gid, grp->mlid);
		grp->attached = false;
		if (g == 0)
			p->t->mcast_since_ms = 0;
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
int ib_group_attach(struct ib_priv *p, unsigned g)
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
	ib_group_release(p, g);
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
	if (g == 0)
		p->t->mcast_since_ms = now_ms() ? now_ms() : 1;
	if (p->roce)
		roce_ah_attr(mgid, p->rgid.index, 1, sl, p->port_num, &attr);
	else
		ib_ah_attr_mcast(mgid, mlid, sl, p->port_num, &attr);
	grp->ah = ibv_create_ah(p->pd, &attr);
	if (!grp->ah)
		log_warn("endpoint %s: no address handle for IB group %u", p->t->ep->label, g);
	return 0;
}

void ib_on_attach_timer(struct loop_timer *timer)
{
	struct ib_priv *p = container_of(timer, struct ib_priv, attach_timer);
	bool pending = false;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		if (p->groups[g].wanted && ib_group_attach(p, g) != 0)
			pending = true;
	if (pending)
		loop_timer_arm(p->loop, timer, now_ms() + ATTACH_RETRY_MS);
}

int ib_join(struct transport *t, unsigned g)
{
	struct ib_priv *p = t->priv;

	if (g >= CFG_MAX_GROUPS)
		return -EINVAL;
	p->groups[g].wanted = true;
	/* the SA client joins on its own schedule: attach when it has */
	if (ib_group_attach(p, g) != 0)
		loop_timer_arm(p->loop, &p->attach_timer, now_ms() + ATTACH_RETRY_MS);
	return 0;
}

int ib_leave(struct transport *t, unsigned g)
{
	struct ib_priv *p = t->priv;

	if (g >= CFG_MAX_GROUPS)
		return -EINVAL;
	p->groups[g].wanted = false;
	ib_group_release(p, g);
	return 0;
}
