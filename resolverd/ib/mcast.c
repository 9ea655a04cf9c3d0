// SPDX-License-Identifier: MIT
/*
 * The IB multicast groups of the SA client (mcast.h, sa.h): joining each
 * endpoint's configured groups with MCMemberRecord SET, retrying failed
 * joins with a back-off on the port's join timer, leaving them with DELETE
 * at shutdown, and what the fabric takes from a joined group (its address
 * for the ib transport, its parameters for route protocol mcast).
 */
#include "ib/mcast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "core/log.h"
#include "ibenum.h"
#include "core/endpoints.h"
#include "ib/path.h"
#include "ib/sa.h"
#include "ib/sa_query.h"

#define JOIN_RETRY_MIN_MS 2000
#define JOIN_RETRY_MAX_MS 60000

/* An MCMemberRecord SET or DELETE for one group of its port. */
struct group_query {
	struct sa_query q; /* first: the engine allocates and frees the whole */
	unsigned group;
};

_Static_assert(offsetof(struct group_query, q) == 0, "sa_query_new() allocates the whole");

static enum sa_rx member_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
				union sa_answer *ans);
static void join_done(struct sa_query *q, int status, const union sa_answer *ans);
static void leave_done(struct sa_query *q, int status, const union sa_answer *ans);

static const struct sa_query_ops join_ops = {
	.name = "MCMemberRecord join",
	.size = sizeof(struct group_query),
	.method = MAD_METHOD_SET,
	.attr = SA_ATTR_MCMEMBER_REC,
	.decode = member_decode,
	.done = join_done,
};

/* A leave that is out when the port goes down stays: sa_stop waits for it. */
static const struct sa_query_ops leave_ops = {
	.name = "MCMemberRecord leave",
	.size = sizeof(struct group_query),
	.keep_on_port_down = true,
	.method = MAD_METHOD_DELETE,
	.attr = SA_ATTR_MCMEMBER_REC,
	.decode = member_decode,
	.done = leave_done,
};

static struct group_query *group_query_of(const struct sa_query *q)
{
	return container_of(q, struct group_query, q);
}

static enum sa_rx member_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
				union sa_answer *ans)
{
	const struct sa_port *p = q->port;
	uint8_t gid[16];

	if (sa_decode_mcmember(mad, len, &ans->member) != MAD_OK)
		return SA_RX_MALFORMED;
	sa_port_gid(p, gid);
	if (memcmp(ans->member.mgid, p->groups[group_query_of(q)->group].mgid, 16) ||
	    memcmp(ans->member.port_gid, gid, 16))
		return SA_RX_MISMATCH;
	return SA_RX_OK;
}

/* --- joining -------------------------------------------------------------- */

static uint32_t group_id(const struct cfg_group *g)
{
	const uint8_t *a;

	if (g->addr.ss_family == AF_INET)
		a = (const uint8_t *)&((const struct sockaddr_in *)&g->addr)->sin_addr;
	else
		a = (const uint8_t *)&((const struct sockaddr_in6 *)&g->addr)->sin6_addr + 12;
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/* The join timer is due at the earliest retry of a failed group. */
static void arm_retry(struct sa_port *p)
{
	struct loop *loop = p->sa->loop;
	uint64_t next = UINT64_MAX;

	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
		if (p->groups[g].state == GRP_FAILED && p->groups[g].retry_ms < next)
			next = p->groups[g].retry_ms;
	if (next == UINT64_MAX || p->sa->stopping)
		loop_timer_cancel(loop, &p->join_timer);
	else if (loop_timer_arm(loop, &p->join_timer, next))
		log_warn("%s: out of memory: failed joins are retried at the next port poll",
			 p->label);
}

static void send_join(struct sa_port *p, unsigned g)
{
	const struct endpoint *ep = sa_port_ep(p);
	const struct cfg_group *cg = &ep->cfg.groups[g];
	struct sa_group *grp = &p->groups[g];
	struct sa_mcmember m;
	struct sa_query *q;

	sa_group_mgid(grp->mgid, MCAST_SCOPE_SITE, p->pkey, cg->mtu, cg->rate, group_id(cg));
	memset(&m, 0, sizeof(m));
	memcpy(m.mgid, grp->mgid, 16);
	sa_port_gid(p, m.port_gid);
	m.qkey = IBRES_QKEY;
	m.mtu = (uint8_t)(MAD_SEL_EXACTLY << 6 | cg->mtu);
	m.rate = (uint8_t)(MAD_SEL_EXACTLY << 6 | cg->rate);
	m.pkey = p->pkey;
	m.sl = ep->cfg.sl;
	m.scope = MCAST_SCOPE_SITE;
	m.join_state = MCAST_JOIN_FULL;
	if (sa_query_new(p, &join_ops, &q))
		goto fail;
	sa_encode_mcmember(q->mad, MAD_METHOD_SET, 0, &m, sa_join_comp_mask());
	group_query_of(q)->group = g;
	if (sa_query_submit(q))
		goto fail;
	grp->state = GRP_JOINING;
	return;

fail:
	/* no room for the query now: the retry timer brings it */
	grp->state = GRP_FAILED;
	grp->retry_ms = now_ms() + JOIN_RETRY_MIN_MS;
}

void mcast_try_joins(struct sa_port *p)
{
	const struct endpoint *ep = sa_port_ep(p);
	uint64_t now = now_ms();

	/* the next port update calls again */
	if (!ep || !sa_port_usable(p) || !p->pkey || !p->port_guid)
		return;
	for (unsigned g = 0; g < ep->cfg.n_groups && g < CFG_MAX_GROUPS; g++) {
		struct sa_group *grp = &p->groups[g];

		if (grp->state == GRP_IDLE || (grp->state == GRP_FAILED && grp->retry_ms <= now))
			send_join(p, g);
	}
	arm_retry(p);
}

static void on_join_timer(struct loop_timer *t)
{
	mcast_try_joins(container_of(t, struct sa_port, join_timer));
}

static void join_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct sa_port *p = q->port;
	struct sa_client *sa = p->sa;
	unsigned g = group_query_of(q)->group;
	struct sa_group *grp = &p->groups[g];
	const struct endpoint *ep = sa_port_ep(p);
	char s[INET6_ADDRSTRLEN];
	uint64_t backoff;

	if (grp->state != GRP_JOINING)
		return; /* reset by a port event meanwhile: a new join follows */
	if (!status) {
		const struct sa_mcmember *m = &ans->member;

		grp->state = GRP_JOINED;
		grp->rec = *m;
		grp->failures = 0;
		grp->last_error = 0;
		sa->c.joins++;
		log_info("%s: joined group %s: MLID 0x%04x, MTU %u, rate %s Gb/s, SL %u, P_Key "
			 "0x%04x",
			 p->label, sa_gid_str(m->mgid, s, sizeof(s)), m->mlid,
			 ib_mtu_to_bytes(m->mtu & 0x3f), ib_rate_to_gbps(m->rate & 0x3f), m->sl,
			 m->pkey);
		return;
	}
	sa->c.join_failures++;
	if (status != grp->last_error || !grp->failures)
		log_warn("%s: cannot join group %s (%u bytes, %s Gb/s): %s", p->label,
			 sa_gid_str(grp->mgid, s, sizeof(s)),
			 ep ? ib_mtu_to_bytes(ep->cfg.groups[g].mtu) : 0,
			 ep ? ib_rate_to_gbps(ep->cfg.groups[g].rate) : "?",
			 status == -ETIMEDOUT  ? "no answer from the SA"
			 : status == -ENOTCONN ? "the port went down"
			 : status == -EINVAL   ? "the SA refused it (can the port and the existing "
						 "group carry that MTU, rate and SL?)"
					       : strerror(-status));
	grp->last_error = status;
	grp->failures++;
	backoff = (uint64_t)JOIN_RETRY_MIN_MS << (grp->failures < 5 ? grp->failures - 1 : 5);
	grp->state = GRP_FAILED;
	grp->retry_ms = now_ms() + (backoff > JOIN_RETRY_MAX_MS ? JOIN_RETRY_MAX_MS : backoff);
	arm_retry(p);
}

void mcast_reset(struct sa_port *p)
{
	for (unsigned g = 0; g < CFG_MAX_GROUPS; g++) {
		p->groups[g].state = GRP_IDLE;
		p->groups[g].failures = 0;
	}
	loop_timer_cancel(p->sa->loop, &p->join_timer);
}

void mcast_port_init(struct sa_port *p)
{
	p->join_timer.cb = on_join_timer;
}

void mcast_port_close(struct sa_port *p)
{
	loop_timer_cancel(p->sa->loop, &p->join_timer);
}

/* --- leaving ---------------------------------------------------------------- */

static void send_leave(struct sa_port *p, unsigned g)
{
	struct sa_group *grp = &p->groups[g];
	struct sa_mcmember m;
	struct sa_query *q;

	memset(&m, 0, sizeof(m));
	memcpy(m.mgid, grp->mgid, 16);
	sa_port_gid(p, m.port_gid);
	m.join_state = MCAST_JOIN_FULL;
	m.scope = MCAST_SCOPE_SITE;
	if (sa_query_new(p, &leave_ops, &q))
		return; /* no room: the membership outlives us */
	sa_encode_mcmember(q->mad, MAD_METHOD_DELETE, 0, &m, sa_leave_comp_mask());
	group_query_of(q)->group = g;
	if (sa_query_submit(q) == 0)
		grp->state = GRP_LEAVING;
}

static void leave_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct sa_group *grp = &q->port->groups[group_query_of(q)->group];
	char s[INET6_ADDRSTRLEN];

	(void)ans;
	if (!status) {
		q->port->sa->c.leaves++;
		log_info("%s: left group %s", q->port->label, sa_gid_str(grp->mgid, s, sizeof(s)));
	}
	if (grp->state == GRP_LEAVING)
		grp->state = GRP_IDLE;
}

void mcast_leave_all(struct sa_client *sa)
{
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		if (!sa_port_usable(p))
			continue;
		for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
			if (p->groups[g].state == GRP_JOINED)
				send_leave(p, g);
	}
}

bool mcast_leaves_done(const struct sa_client *sa)
{
	for (unsigned i = 0; i < sa->n_ports; i++)
		for (unsigned g = 0; g < CFG_MAX_GROUPS; g++)
			if (sa->ports[i].groups[g].state == GRP_LEAVING)
				return false;
	return true;
}

/* --- for the fabric ---------------------------------------------------------- */

void sa_group_path_params(struct sa_client *sa, const struct endpoint *ep, uint8_t mtu, uint8_t rate,
			  struct path_params *pp)
{
	struct sa_port *p = sa_port_of(sa, ep);

	if (!p)
		return;
	for (unsigned g = 0; g < ep->cfg.n_groups && g < CFG_MAX_GROUPS; g++) {
		const struct sa_mcmember *m = &p->groups[g].rec;

		if (p->groups[g].state != GRP_JOINED || ep->cfg.groups[g].mtu != mtu ||
		    ep->cfg.groups[g].rate != rate)
			continue;
		/* what the SA made of the group, never above the endpoint */
		if ((m->mtu & 0x3f) && (m->mtu & 0x3f) < pp->mtu)
			pp->mtu = m->mtu & 0x3f;
		if ((m->rate & 0x3f) && ib_rate_to_gbps10(m->rate & 0x3f) < ib_rate_to_gbps10(pp->rate))
			pp->rate = m->rate & 0x3f;
		pp->sl = m->sl;
		if (m->packet_life & 0x3f)
			pp->packet_life = m->packet_life & 0x3f;
		if (m->pkey)
			pp->pkey = m->pkey;
		return;
	}
}

int sa_group_address(struct sa_client *sa, const struct endpoint *ep, unsigned g, uint8_t mgid[16],
		     uint16_t *mlid, uint32_t *qkey, uint8_t *sl)
{
	struct sa_port *p = sa_port_of(sa, ep);

	if (!p)
		return -ENOENT;
	if (g >= CFG_MAX_GROUPS || p->groups[g].state != GRP_JOINED)
		return -EAGAIN;
	memcpy(mgid, p->groups[g].rec.mgid, 16);
	*mlid = p->groups[g].rec.mlid;
	*qkey = p->groups[g].rec.qkey;
	*sl = p->groups[g].rec.sl;
	return 0;
}
