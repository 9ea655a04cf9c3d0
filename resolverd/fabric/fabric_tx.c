// SPDX-License-Identifier: MIT
/*
 * Sending a fabric datagram from one port: the message every datagram
 * starts as (the endpoint's identity, groups and rails), and its encoding,
 * stamp and HMAC on the way out (doc/fabric-protocol.md). Shared by the
 * protocol core (fabric.c) and the fetch (fabric_fetch.c).
 */
#include "fabric/fabric_impl.h"

#include <errno.h>
#include <string.h>

#include "core/clock.h"
#include "core/endpoints.h"
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

int fabric_port_send(struct fabric_port *p, const struct fw_msg *m, const struct transport_addr *to)
{
	struct fabric *f = p->f;
	struct fw_msg stamped;
	int len, ret;

	if (f->keys.n) {
		stamped = *m;
		stamped.has_stamp = true;
		stamped.stamp = fresh_stamp(&f->fresh, wall_us());
		m = &stamped;
	}
	len = fw_encode(m, f->keys.n ? f->keys.key[0] : NULL, f->keys.len[0], f->buf,
			sizeof(f->buf));
	if (len < 0) {
		f->c.tx_errors++;
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
