// SPDX-License-Identifier: MIT
/*
 * Sending a fabric datagram from one port: the message every datagram
 * starts as (the endpoint's identity, groups and rails), and its encoding,
 * stamp and HMAC on the way out (doc/fabric-protocol.md). Shared by the
 * protocol core (fabric.c) and the fetch (fabric_fetch.c).
 */
#include "fabric/fabric_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/list.h"
#include "core/log.h"
#include "fabric/fabric_wire.h"
#include "fabric/transport.h"

static void port_groups(const struct fabric_port *p, struct fw_msg *m)
{
	m->n_groups = 0;
	for (unsigned g = 0; g < p->opened.n_groups && g < FW_MAX_GROUPS; g++) {
		m->groups[m->n_groups].mtu = p->opened.groups[g].mtu;
		m->groups[m->n_groups].rate = p->opened.groups[g].rate;
		m->n_groups++;
	}
}

void fabric_msg_init(struct fabric_port *p, struct fw_msg *m, uint8_t type, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->tid = tid;
	m->flags = FW_FLAG_SAYS_ANNOUNCES | (fabric_announcing(p->f) ? FW_FLAG_ANNOUNCES : 0);
	m->sender = p->ep->cfg.id;
	m->sender.ttl = p->f->cfg->addr_ttl_s;
	m->n_rails = endpoint_rails(p->f->eps, p->ep, m->rails);
	port_groups(p, m);
}

/* Are @a and @b one port (whose partitions share its GID): the same device
 * and port (whose own GID is used whatever the file says), or without a
 * device the same configured GID? Without either, an endpoint learns its GID
 * from its transport: a port of its own. */
static bool cfg_same_port(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
	static const uint8_t none[16];

	if (a->device[0] || b->device[0])
		return !strcmp(a->device, b->device) && a->port_num == b->port_num;
	return memcmp(a->id.gids[0], none, 16) && !memcmp(a->id.gids[0], b->id.gids[0], 16);
}

/* The distinct ports of @ep's host in @cfg (FW_T_RAILS, one GID each), 0
 * alone: as endpoint_rails() counts them at run time, over the
 * configuration. */
static unsigned cfg_rails(const struct ibres_config *cfg, const struct cfg_endpoint *ep)
{
	unsigned n = 0, others = 0;

	for (unsigned i = 0; i < cfg->n_eps; i++) {
		const struct cfg_endpoint *o = &cfg->eps[i];
		bool seen = false;

		if (!cfg_one_host(o, ep))
			continue;
		others += o != ep;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = cfg_one_host(&cfg->eps[j], ep) && cfg_same_port(&cfg->eps[j], o);
		n += !seen;
	}
	if (n > HOST_RAILS_MAX)
		n = HOST_RAILS_MAX;
	return others ? n : 0;
}

/* The length of the datagram @ep of @cfg would send, as the largest of its
 * kinds: an ANNOUNCE (with @lookup, a REQUEST for a name of IBRES_NAME_MAX
 * bytes, and a REPLY's choice, too; with @kernel_addrs, the addresses the
 * kernel may add to the configured ones, IBRES_EP_ADDRS_MAX a family); or
 * a negative errno when it does not fit. */
static int largest_datagram(const struct ibres_config *cfg, const struct cfg_endpoint *ep,
			    bool lookup, bool kernel_addrs, struct fw_msg *m)
{
	static const uint8_t key[FW_HMAC_LEN];
	uint8_t buf[FW_MAX_LEN];

	memset(m, 0, sizeof(*m));
	m->type = FW_ANNOUNCE;
	m->sender = ep->id;
	m->sender.ttl = cfg->addr_ttl_s ? cfg->addr_ttl_s : 1;
	if (!m->sender.n_gids)
		m->sender.n_gids = 1; /* the transport finds the port's */
	m->sender.qpn = 0xffffff;
	if (kernel_addrs && m->sender.n_v4 < IBRES_EP_ADDRS_MAX)
		m->sender.n_v4 = IBRES_EP_ADDRS_MAX;
	if (kernel_addrs && m->sender.n_v6 < IBRES_EP_ADDRS_MAX)
		m->sender.n_v6 = IBRES_EP_ADDRS_MAX;
	m->n_groups = ep->n_groups < FW_MAX_GROUPS ? ep->n_groups : FW_MAX_GROUPS;
	m->has_stamp = m->has_digest = m->has_up = true;
	m->n_rails = cfg_rails(cfg, ep);
	if (lookup) {
		m->has_target = m->has_chosen = true;
		m->target.type = IBRES_KEY_NAME;
		m->target.len = IBRES_NAME_MAX;
		memset(m->target.data, 'a', IBRES_NAME_MAX);
	}
	return fw_encode(m, cfg->cluster_key_file[0] ? key : NULL, sizeof(key), buf, sizeof(buf));
}

int fabric_check_config(const struct ibres_config *cfg, char *err, size_t errlen)
{
	struct fw_msg m;
	int warned = 0;

	for (unsigned i = 0; i < cfg->n_eps; i++) {
		const struct cfg_endpoint *ep = &cfg->eps[i];

		if (!transport_for(ep))
			continue;
		if (largest_datagram(cfg, ep, false, false, &m) < 0) {
			snprintf(err, errlen,
				 "%s:%u: endpoint %s: its names and addresses (%u names, %u IPv4, "
				 "%u IPv6, %u GIDs) with its host's %u rails leave no room in a "
				 "fabric datagram (%u bytes) to announce it: fewer or shorter "
				 "names, or fewer addresses",
				 cfg->source, ep->line, ep->label, ep->id.n_names, ep->id.n_v4,
				 ep->id.n_v6, ep->id.n_gids, m.n_rails, FW_MAX_LEN);
			return -EMSGSIZE;
		}
		if (!warned && largest_datagram(cfg, ep, true, true, &m) < 0) {
			snprintf(err, errlen,
				 "%s:%u: endpoint %s: with %u addresses a family from its "
				 "interface, its names would leave no room in a fabric datagram "
				 "(%u bytes) for a look-up of the longest name; such a datagram "
				 "is not sent (logged)",
				 cfg->source, ep->line, ep->label, IBRES_EP_ADDRS_MAX, FW_MAX_LEN);
			warned = 1;
		}
	}
	return warned;
}

/* @m encoded and sent; *@unencodable (if given) set when it cannot be
 * encoded at all (too long for a datagram), as against a send that failed. */
static int port_send(struct fabric_port *p, const struct fw_msg *m, const struct transport_addr *to,
		     bool *unencodable)
{
	struct fabric *f = p->f;
	struct fw_msg stamped;
	int len, ret;

	if (unencodable)
		*unencodable = false;

	if (f->keys.n) {
		stamped = *m;
		stamped.has_stamp = true;
		stamped.stamp = fresh_stamp(&f->fresh, wall_us());
		m = &stamped;
	}
	len = fw_encode(m, f->keys.n ? f->keys.key[0] : NULL, f->keys.len[0], f->buf,
			sizeof(f->buf));
	if (len < 0) {
		if (unencodable) /* not a signing failure (-EIO): that may pass */
			*unencodable = len == -ENOSPC || len == -EINVAL;
		f->c.tx_errors++;
		if (!p->told_too_long) {
			p->told_too_long = true;
			log_warn("fabric: endpoint %s: a datagram (type %u) does not fit %u bytes "
				 "with its names and addresses: not sent; fewer or shorter names "
				 "or addresses",
				 p->ep->cfg.label, m->type, FW_MAX_LEN);
		}
		return len;
	}
	if (to) {
		ret = p->t.ops->send_ucast(&p->t, to, f->buf, (size_t)len);
		f->c.tx_ucast++;
	} else {
		/* requests and announcements go to the lowest-priority group,
		 * the one every node joins; the time before the send, not
		 * after: a send that takes a while (a busy host's softirq
		 * delivers it to every namespace) reached no one later than
		 * it began, and heard_us() compares with it */
		uint64_t began = now_ms();

		ret = p->t.ops->send_mcast(&p->t, 0, f->buf, (size_t)len);
		f->c.tx_mcast++;
		/* every node listening then has heard who we are */
		if (ret >= 0 && m->type == FW_ANNOUNCE)
			p->mcast_announced_ms = began ? began : 1;
	}
	if (ret < 0) {
		f->c.tx_errors++;
		log_debug("fabric: send on %s failed: %s", p->ep->cfg.label, strerror(-ret));
	}
	return ret;
}

static const uint8_t no_gid[16];

/* Is @h's identity, as a peer keys it (canonical name, port GID, P_Key),
 * the one @s holds? */
static bool says(const struct said_identity *s, const struct ibres_hostrec *h)
{
	return s->any && s->pkey == h->pkey &&
	       !memcmp(s->gid, h->n_gids ? h->gids[0] : no_gid, 16) &&
	       !strcasecmp(s->name, h->n_names ? h->names[0] : "");
}

static void said_set(struct said_identity *s, const struct ibres_hostrec *h)
{
	s->any = true;
	snprintf(s->name, sizeof(s->name), "%s", h->n_names ? h->names[0] : "");
	memcpy(s->gid, h->n_gids ? h->gids[0] : no_gid, 16);
	s->pkey = h->pkey;
}

/* A GID and P_Key for a log line. */
static const char *id_text(const uint8_t gid[16], uint16_t pkey, char *buf, size_t len)
{
	char g[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, gid, g, sizeof(g));
	snprintf(buf, len, "%s P_Key 0x%04x", g, pkey);
	return buf;
}

/* Peers hold of @p's endpoint the identity its last datagram that went out
 * carried (p->said). Before a datagram under another one, @now (a reload
 * renamed the endpoint, while its port was up or down; its port's GID or
 * P_Key changed), that one says GOODBYE, multicast, from the addresses the
 * port has now (a receiver checks the datagram's source against those the
 * GOODBYE lists): peers then take @now at once, rather than refuse it as a
 * claim on what another host owns until the old record expires. Only what
 * a receiver reads goes in: the old name, GID and P_Key, the addresses and
 * LID. An identity without a GID (a device's port not read yet) says none:
 * it is no new owner. True when one is owed and could not go (the port not
 * joined yet): the next datagram tries again. */
static bool goodbye_first(struct fabric_port *p, const struct ibres_hostrec *now)
{
	const struct said_identity *was = &p->said;
	char a[96], b[96];
	bool unencodable;
	struct fw_msg bye;
	int ret;

	if (!was->any || says(was, now) || !now->n_gids || !memcmp(now->gids[0], no_gid, 16))
		return false;
	if (!was->name[0] || !memcmp(was->gid, no_gid, 16)) {
		p->said.any = false; /* nothing a peer keys */
		return false;
	}
	fabric_msg_init(p, &bye, FW_GOODBYE, 0);
	bye.sender = *now;
	bye.n_rails = 0;
	bye.sender.n_names = 1;
	snprintf(bye.sender.names[0], sizeof(bye.sender.names[0]), "%s", was->name);
	memcpy(bye.sender.gids[0], was->gid, 16);
	bye.sender.pkey = was->pkey;
	ret = port_send(p, &bye, NULL, &unencodable);
	if (unencodable) {
		p->said.any = false; /* it never fits: owing it would only fail again */
		return false;
	}
	if (ret < 0)
		return true;
	log_info("fabric: endpoint %s: said goodbye as %s (%s) before it speaks as %s (%s)",
		 p->ep->cfg.label, was->name, id_text(was->gid, was->pkey, a, sizeof(a)),
		 now->n_names ? now->names[0] : "(no name)",
		 id_text(now->gids[0], now->pkey, b, sizeof(b)));
	p->said.any = false;
	return false;
}

/* Goodbyes owed are tried again after this, doubled each time up to the max
 * (an IB port joins its group again after a port change; with announcements
 * off nothing else would carry them). */
#define GOODBYE_RETRY_MS     100u
#define GOODBYE_RETRY_MAX_MS 5000u

/* Every port up says the goodbye it owes; true when one is still owed. */
static bool say_all(struct fabric *f)
{
	bool owed = false;

	for (unsigned i = 0; i < f->n_ports; i++)
		if (fabric_port_up(&f->ports[i]))
			owed |= goodbye_first(&f->ports[i], &f->ports[i].ep->cfg.id);
	return owed;
}

void fabric_say_goodbyes(struct fabric *f)
{
	/* a new change: tried again soon, whatever an older one backed off to */
	if (!f || !say_all(f))
		return;
	f->goodbye_retry_ms = GOODBYE_RETRY_MS;
	loop_timer_arm(f->loop, &f->goodbye_timer, now_ms() + f->goodbye_retry_ms);
}

void fabric_on_goodbye_timer(struct loop_timer *t)
{
	struct fabric *f = container_of(t, struct fabric, goodbye_timer);

	if (!say_all(f))
		return;
	f->goodbye_retry_ms = f->goodbye_retry_ms < GOODBYE_RETRY_MAX_MS / 2
				      ? 2 * f->goodbye_retry_ms
				      : GOODBYE_RETRY_MAX_MS;
	loop_timer_arm(f->loop, &f->goodbye_timer, now_ms() + f->goodbye_retry_ms);
}

int fabric_port_send(struct fabric_port *p, const struct fw_msg *m, const struct transport_addr *to)
{
	bool owed;
	int ret;

	if (!fabric_port_up(p))
		return -ENOTCONN; /* down, or its endpoint removed by a reload */
	/* a goodbye owed and not sent: the identity peers hold stays the old
	 * one, whatever goes out now, and the next datagram tries again */
	owed = goodbye_first(p, &m->sender);
	ret = port_send(p, m, to, NULL);

	if (ret < 0 || owed)
		return ret;
	if (says(&p->said, &m->sender)) {
		if (m->type == FW_GOODBYE)
			p->said.any = false; /* peers forget it */
	} else if (m->type != FW_GOODBYE && m->sender.n_gids &&
		   memcmp(m->sender.gids[0], no_gid, 16)) {
		said_set(&p->said, &m->sender);
	}
	return ret;
}
