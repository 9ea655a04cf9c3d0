// SPDX-License-Identifier: MIT
/*
 * The IB ports of the SA client (sa.h): opening each endpoint's port at
 * start, reading it (sysfs, then SubnGet(PortInfo) and P_KeyTable MADs on
 * the port's poll timer or after a verbs event), turning a change into a
 * port event, and putting the port's data into its endpoint; and the
 * client's life cycle (sa_start, sa_stop).
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/log.h"
#include "ibenum.h"
#include "core/endpoints.h"
#include "ib/mcast.h"
#include "ib/sa.h"
#include "ib/sa_query.h"
#include "ib/umad_io.h"
#include "os/netlink.h"

#define START_WAIT_MS 1000 /* the first PortInfo at start-up */
#define STOP_WAIT_MS  1000 /* the SA's answers to our leaves at shutdown */

static enum sa_rx port_info_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
				   union sa_answer *ans);
static enum sa_rx pkeys_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
			       union sa_answer *ans);
static void port_info_done(struct sa_query *q, int status, const union sa_answer *ans);
static void pkeys_done(struct sa_query *q, int status, const union sa_answer *ans);

static const struct sa_query_ops port_info_ops = {
	.name = "PortInfo",
	.size = sizeof(struct sa_query),
	.smi = true,
	.method = MAD_METHOD_GET,
	.attr = SMP_ATTR_PORT_INFO,
	.decode = port_info_decode,
	.done = port_info_done,
};

static const struct sa_query_ops pkeys_ops = {
	.name = "P_KeyTable",
	.size = sizeof(struct sa_query),
	.smi = true,
	.method = MAD_METHOD_GET,
	.attr = SMP_ATTR_PKEY_TABLE,
	.decode = pkeys_decode,
	.done = pkeys_done,
};

static enum sa_rx port_info_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
				   union sa_answer *ans)
{
	(void)q;
	return smp_decode_port_info(mad, len, &ans->port_info) == MAD_OK ? SA_RX_OK
									 : SA_RX_MALFORMED;
}

static enum sa_rx pkeys_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
			       union sa_answer *ans)
{
	(void)q;
	return smp_decode_pkeys(mad, len, ans->pkeys) == MAD_OK ? SA_RX_OK : SA_RX_MALFORMED;
}

static const char *state_str(uint8_t state)
{
	static const char *const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "DEFER"};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

/* --- the port's data in its endpoint ----------------------------------------- */

/* The port's data over the endpoint's configured values: its identity into
 * @id, the rest (MTU, rate, GUID) into the endpoint's port parameters. */
static void fill_endpoint(const struct sa_port *p, struct endpoint *ep, struct ibres_hostrec *id)
{
	if (!p->have_info)
		return;
	if (p->port_guid) {
		sa_port_gid(p, id->gids[0]);
		if (!id->n_gids)
			id->n_gids = 1;
	}
	id->lid = p->pi.lid < 0xc000 ? p->pi.lid : 0;
	if (p->pkey)
		id->pkey = p->pkey;
	if (p->pi.mtu)
		ep->cfg.mtu = p->pi.mtu;
	if (p->pi.rate)
		ep->cfg.rate = p->pi.rate;
	if (p->node_guid)
		ep->cfg.dev_guid = p->node_guid;
	ep->cfg.port_num = (uint8_t)p->port_num;
}

/* Put the port's data into its endpoint; a new identity goes to its owner
 * (core/endpoints.h), which refreshes the store and tells the fabric. */
static void port_apply(struct sa_port *p)
{
	struct endpoint *ep = sa_port_ep(p);
	struct ibres_hostrec id;

	if (!ep || !p->have_info)
		return;
	/* a port that is not ACTIVE is no rail now (answers withdrawn, peers
	 * told on the other rails); ACTIVE again, it is announced */
	endpoint_set_down(p->sa->eps, ep, p->pi.state != SA_PORT_ACTIVE);
	id = ep->cfg.id;
	fill_endpoint(p, ep, &id);
	if (endpoint_update(p->sa->eps, ep, &id) == 0)
		return;
	/* the IPoIB interfaces of a port are found by its GID and P_Key */
	netlink_refresh(p->sa->nl);
}

/* The next PortInfo poll of @p at @due, if it is polled at all. */
static void poll_at(struct sa_port *p, uint64_t due)
{
	if (!p->io || !p->sa->cfg->port_poll_ms || p->sa->stopping)
		return;
	if (loop_timer_arm(p->sa->loop, &p->poll_timer, due))
		log_warn("%s: out of memory: no port polls until the next verbs event", p->label);
}

void sa_apply_endpoint(struct sa_client *sa, struct endpoint *ep)
{
	if (!sa)
		return;
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		/* the endpoint at the place it was opened for, as endpoints_load()
		 * and the fabric's transports bind them: a relabelled one is the
		 * same (its GID and LID stay this port's); one the reload removed
		 * has none (sa_port_ep()); a reload never gives a place another
		 * port (config_reload_check()) */
		if (p->ep != (int)ep->index)
			continue;
		snprintf(p->label, sizeof(p->label), "endpoint %s", ep->cfg.label);
		/* a copy from the config has the configured values: put ours
		 * back (before it is published) */
		fill_endpoint(p, ep, &ep->cfg.id);
		/* the reload may have turned polling on */
		if (!loop_timer_armed(&p->poll_timer))
			poll_at(p, now_ms());
	}
}

/* --- reading the port ------------------------------------------------------------ */

static void port_event(struct sa_port *p, const char *what)
{
	p->sa->c.port_events++;
	log_info("%s: %s port %u: %s", p->label, p->dev, p->port_num, what);
}

static void port_update(struct sa_port *p, const struct smp_port_info *pi)
{
	struct smp_port_info old = p->pi;
	bool first = !p->have_info, rejoin = first;
	char msg[128];

	p->pi = *pi;
	p->have_info = true;
	if (!first) {
		if (old.state != pi->state) {
			snprintf(msg, sizeof(msg), "%s (state %s -> %s)",
				 pi->state == SA_PORT_ACTIVE   ? "PORT_ACTIVE"
				 : old.state == SA_PORT_ACTIVE ? "PORT_ERR"
							       : "port state change",
				 state_str(old.state), state_str(pi->state));
			port_event(p, msg);
			rejoin = true;
		}
		if (old.lid != pi->lid) {
			snprintf(msg, sizeof(msg), "LID change %u -> %u", old.lid, pi->lid);
			port_event(p, msg);
			rejoin = true;
		}
		if (old.gid_prefix != pi->gid_prefix) {
			port_event(p, "GID change (subnet prefix)");
			rejoin = true;
		}
		if (old.sm_lid != pi->sm_lid) {
			/* a new SM knows nothing of our groups */
			snprintf(msg, sizeof(msg), "SM change: SM LID %u -> %u", old.sm_lid,
				 pi->sm_lid);
			port_event(p, msg);
			rejoin = true;
		}
		if (pi->client_reregister) {
			port_event(p, "CLIENT_REREGISTER");
			rejoin = true;
		}
	}
	if (!pi->mtu)
		p->pi.mtu = old.mtu; /* sysfs has no MTU: keep what we knew */
	if (rejoin)
		mcast_reset(p);
	if (pi->state != SA_PORT_ACTIVE || !pi->sm_lid)
		sa_port_fail_queries(p, -ENOTCONN);
	port_apply(p);
	mcast_try_joins(p);
	sa_port_pump(p);
}

static void port_info_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct sa_port *p = q->port;

	p->polling = false;
	if (status) {
		log_debug("%s: PortInfo: %s", p->label, strerror(-status));
		return;
	}
	port_update(p, &ans->port_info);
}

static void pkeys_update(struct sa_port *p, const uint16_t *pkeys)
{
	uint16_t pkey = pkeys[p->pkey_index % SA_PKEY_BLOCK];

	if (pkey == p->pkey)
		return;
	if (p->pkey)
		port_event(p, "P_Key change");
	if (!(pkey & 0x7fff))
		log_warn("%s: P_Key table entry %u is empty", p->label, p->pkey_index);
	p->pkey = pkey;
	mcast_reset(p); /* our MGIDs carry the P_Key */
	port_apply(p);
	mcast_try_joins(p);
}

static void pkeys_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	if (!status)
		pkeys_update(q->port, ans->pkeys);
}

/* sysfs through libibumad (real hardware re-reads it; the simulator's copy
 * is from process start): the fallback without an SMI agent. */
static int port_read_sysfs(struct sa_port *p, struct smp_port_info *pi, uint16_t *pkey)
{
	umad_port_t up;
	umad_ca_t ca;
	char rate[16];
	int ret;

	ret = umad_get_port(p->dev, (int)p->port_num, &up);
	if (ret < 0)
		return ret;
	memset(pi, 0, sizeof(*pi));
	if (up.link_layer[0] && strcmp(up.link_layer, "InfiniBand") &&
	    strcmp(up.link_layer, "IB")) {
		umad_release_port(&up);
		return -EPROTONOSUPPORT;
	}
	pi->gid_prefix = be64toh(up.gid_prefix);
	pi->lid = (uint16_t)up.base_lid;
	pi->sm_lid = (uint16_t)up.sm_lid;
	pi->state = (uint8_t)up.state;
	pi->phys_state = (uint8_t)up.phys_state;
	pi->cap_mask = up.capmask;
	snprintf(rate, sizeof(rate), "%u", up.rate);
	ret = ib_rate_from_gbps(rate);
	pi->rate = ret > 0 ? (uint8_t)ret : 0;
	p->port_guid = be64toh(up.port_guid);
	*pkey = p->pkey_index < (unsigned)up.pkeys_size ? up.pkeys[p->pkey_index] : 0;
	umad_release_port(&up);
	if (umad_get_ca(p->dev, &ca) == 0) {
		p->node_guid = be64toh(ca.node_guid);
		umad_release_ca(&ca);
	}
	return 0;
}

static void port_poll(struct sa_port *p)
{
	struct smp_port_info pi;
	struct sa_query *q;
	uint16_t pkey;

	p->sa->c.port_polls++;
	if (!umad_io_has_agent(p->io, UMAD_IO_SMI)) {
		if (port_read_sysfs(p, &pi, &pkey) == 0) {
			uint16_t block[SA_PKEY_BLOCK] = {0};

			block[p->pkey_index % SA_PKEY_BLOCK] = pkey;
			pkeys_update(p, block);
			port_update(p, &pi);
		}
		return;
	}
	if (p->polling)
		return;
	if (sa_query_new(p, &port_info_ops, &q))
		return;
	smp_encode_get(q->mad, 0, SMP_ATTR_PORT_INFO, p->port_num);
	if (sa_query_submit(q))
		return;
	p->polling = true;
	if (sa_query_new(p, &pkeys_ops, &q))
		return;
	smp_encode_get(q->mad, 0, SMP_ATTR_PKEY_TABLE, p->pkey_index / SA_PKEY_BLOCK);
	sa_query_submit(q);
}

static void on_poll_timer(struct loop_timer *t)
{
	struct sa_port *p = container_of(t, struct sa_port, poll_timer);
	unsigned ms = p->sa->cfg->port_poll_ms;

	if (!ms)
		return; /* a reload turned polling off */
	/* before the poll's queries arm theirs: the slot this timer just left
	 * is free */
	poll_at(p, now_ms() + ms);
	port_poll(p);
}

void sa_port_changed(struct sa_client *sa, const struct endpoint *ep, const char *what)
{
	struct sa_port *p = sa_port_of(sa, ep);

	if (!p)
		return;
	log_info("%s: verbs event %s: reading the port now", p->label, what);
	poll_at(p, now_ms());
}

/* --- life cycle ----------------------------------------------------------------- */

static bool polls_done(const struct sa_client *sa)
{
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].polling)
			return false;
	return true;
}

/* Open one endpoint's port; false when it is not usable (logged). */
static bool port_open(struct sa_client *sa, struct sa_port *p, struct endpoint *ep)
{
	struct smp_port_info pi;
	uint16_t pkey = 0;
	int ret;

	p->sa = sa;
	p->ep = (int)ep->index;
	snprintf(p->label, sizeof(p->label), "endpoint %s", ep->cfg.label);
	snprintf(p->dev, sizeof(p->dev), "%s", ep->cfg.device);
	p->port_num = ep->cfg.port_num;
	p->pkey_index = ep->cfg.pkey_index;
	list_init(&p->pending);
	p->poll_timer.cb = on_poll_timer;
	mcast_port_init(p);
	ret = port_read_sysfs(p, &pi, &pkey);
	if (ret == -EPROTONOSUPPORT) {
		log_info("%s: %s port %u is not InfiniBand: no Subnet Administrator there (on "
			 "RoCE the ib transport routes by GID)",
			 p->label, p->dev, p->port_num);
		return false;
	}
	if (ret < 0) {
		log_warn("%s: %s port %u: no InfiniBand port there (%s; iWARP devices have "
			 "none): skipped; the endpoint keeps its configured values",
			 p->label, p->dev, p->port_num, strerror(-ret));
		return false;
	}
	p->pkey = pkey;
	/* sysfs first: the identity is known even if the MADs below fail */
	p->pi = pi;
	p->have_info = true;
	ret = umad_io_open(&p->io, p->dev, p->port_num, sa->loop, sa_port_rx, p);
	if (ret)
		log_warn("%s: no MADs on %s port %u (%s): no SA, no groups, no port events",
			 p->label, p->dev, p->port_num, strerror(-ret));
	return true;
}

int sa_start(struct sa_client **out, const struct sa_deps *deps)
{
	struct endpoints *eps = deps->eps;
	struct sa_client *sa;
	bool any = false;

	*out = NULL;
	for (unsigned i = 0; i < eps->n; i++)
		any |= eps->ep[i].cfg.device[0] != '\0';
	if (!any)
		return 0;
	sa = calloc(1, sizeof(*sa));
	if (!sa)
		return -ENOMEM;
	sa->cfg = deps->cfg;
	sa->loop = deps->loop;
	sa->eps = eps;
	sa->store = deps->store;
	sa->nl = deps->nl;
	list_init(&sa->outstanding);
	if (getrandom(&sa->seq, sizeof(sa->seq), 0) != sizeof(sa->seq))
		sa->seq = (uint32_t)now_ms();
	*out = sa;
	umad_init();
	for (unsigned i = 0; i < eps->n; i++) {
		struct sa_port *p = &sa->ports[sa->n_ports];

		if (!eps->ep[i].cfg.device[0])
			continue;
		if (port_open(sa, p, &eps->ep[i]))
			sa->n_ports++;
		else
			memset(p, 0, sizeof(*p));
	}
	/* the first PortInfo (MTU, rate, state) before anyone hears of us */
	for (unsigned i = 0; i < sa->n_ports; i++)
		if (sa->ports[i].io)
			port_poll(&sa->ports[i]);
	sa_wait_outside_loop(sa, START_WAIT_MS, polls_done);
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];
		char s[INET6_ADDRSTRLEN];
		uint8_t gid[16];

		poll_at(p, now_ms() + sa->cfg->port_poll_ms);
		sa_port_gid(p, gid);
		log_info("%s: %s port %u%s: %s, LID %u, SM LID %u, GID %s, P_Key 0x%04x, MTU %u, "
			 "rate %s Gb/s",
			 p->label, p->dev, p->port_num, p->polling || !p->io ? " (sysfs)" : "",
			 state_str(p->pi.state), p->pi.lid, p->pi.sm_lid,
			 sa_gid_str(gid, s, sizeof(s)), p->pkey, ib_mtu_to_bytes(p->pi.mtu),
			 ib_rate_to_gbps(p->pi.rate));
		port_apply(p);
		if (p->io && !sa_port_usable(p))
			log_warn(
				"%s: %s port %u is %s%s: no SA until a Subnet Manager brings it up",
				p->label, p->dev, p->port_num, state_str(p->pi.state),
				p->pi.sm_lid ? "" : " with no SM");
		mcast_try_joins(p);
	}
	return 0;
}

void sa_stop(struct sa_client *sa)
{
	if (!sa)
		return;
	mcast_leave_all(sa);
	sa_wait_outside_loop(sa, STOP_WAIT_MS, mcast_leaves_done);
	/* whoever still waits learns that nothing will come */
	sa->stopping = true;
	sa_query_cancel_all(sa);
	for (unsigned i = 0; i < sa->n_ports; i++) {
		struct sa_port *p = &sa->ports[i];

		loop_timer_cancel(sa->loop, &p->poll_timer);
		mcast_port_close(p);
		umad_io_close(p->io, sa->loop);
	}
	free(sa);
}
