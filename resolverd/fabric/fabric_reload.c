// SPDX-License-Identifier: MIT
/* A reload and the fabric: the transports keep the settings they were
 * opened with; what would need others is logged as needing a restart. */
#include <netinet/in.h>
#include <string.h>

#include "core/endpoints.h"
#include "core/log.h"
#include "fabric/fabric_impl.h"

static bool same_group(const struct cfg_group *a, const struct cfg_group *b)
{
	if (a->mtu != b->mtu || a->rate != b->rate || a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)&a->addr)->sin_addr,
			       &((const struct sockaddr_in *)&b->addr)->sin_addr, 4);
	if (a->addr.ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
			       &((const struct sockaddr_in6 *)&b->addr)->sin6_addr, 16);
	return true;
}

/* Would @now's endpoint need another transport than @was was opened with? */
static bool transport_differs(const struct cfg_endpoint *was, const struct cfg_endpoint *now)
{
	if (cfg_port_moved(was, now) || was->n_groups != now->n_groups ||
	    (was->transport == TRANSPORT_IB && was->recv_depth != now->recv_depth))
		return true;
	for (unsigned g = 0; g < was->n_groups; g++)
		if (!same_group(&was->groups[g], &now->groups[g]))
			return true;
	return false;
}

static const uint8_t no_gid[16];

static bool gid_changed(const struct cfg_endpoint *was, const struct cfg_endpoint *now)
{
	return was->id.n_gids != now->id.n_gids ||
	       (now->id.n_gids && memcmp(was->id.gids[0], now->id.gids[0], 16));
}

void fabric_reload(struct fabric *f, const struct ibres_config *old,
		   const struct ibres_config *new)
{
	unsigned opened = 0;
	struct fw_msg m;

	if (strcmp(old->cluster_key_file, new->cluster_key_file))
		log_warn("cluster_key_file changed: it takes effect at the next restart");
	for (unsigned i = 0; f && i < f->n_ports; i++) {
		const struct fabric_port *p = &f->ports[i];
		unsigned e = p->ep->index;

		opened |= 1u << e;
		/* its port stays (config_reload_check()): its groups or
		 * receive queue may have changed */
		if (e < new->n_eps && transport_differs(&p->opened, &new->eps[e]))
			log_warn("endpoint %s: its transport settings changed (group, recv_depth): "
				 "they take effect at the next restart",
				 p->opened.label);
		/* RoCE sends from the GID it found at open (an IB port's is the
		 * port's own, whatever the file says) */
		else if (memcmp(p->t.gid, no_gid, 16) && e < old->n_eps &&
			 gid_changed(&old->eps[e], &new->eps[e]))
			log_warn("endpoint %s: its gid changed: the port keeps the one it found at "
				 "start until the next restart",
				 p->opened.label);
		/* gone: the identity peers know says goodbye (the live one, with
		 * what its port gave it), tried once: the port says nothing after
		 * (fabric_port_up). A renamed one's goodbye is said after the
		 * swap (fabric_say_goodbyes). */
		if (fabric_port_up(p) && p->ep->cfg.id.n_names && e >= new->n_eps) {
			fabric_msg_init(&f->ports[i], &m, FW_GOODBYE, 0);
			fabric_port_send(&f->ports[i], &m, NULL);
			log_info("endpoint %s: gone at the reload: said goodbye as %s",
				 p->opened.label, p->ep->cfg.id.names[0]);
		}
	}
	for (unsigned e = 0; e < new->n_eps; e++)
		if (!(opened & (1u << e)) && transport_for(&new->eps[e]) &&
		    (e >= old->n_eps || transport_differs(&old->eps[e], &new->eps[e])))
			log_warn("endpoint %s: a new transport: it starts at the next restart",
				 new->eps[e].label);
}

