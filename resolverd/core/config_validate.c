// SPDX-License-Identifier: MIT
/*
 * Checks of a parsed ibresd.conf as a whole, which no single line can make
 * (endpoints present, their identities complete and unique; endpoints of
 * one first name are one host's rails), and the host name that every
 * endpoint without one takes (config_default_names).
 *
 * Nothing here logs or exits: errors come back as text.
 */
#include "core/config.h"

#include "core/config_lex.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool name_in(const struct cfg_endpoint *ep, const char *name, unsigned skip_from)
{
	unsigned i;

	for (i = 0; i < ep->id.n_names && i < skip_from; i++)
		if (!strcasecmp(ep->id.names[i], name))
			return true;
	return false;
}

bool cfg_one_host(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
	return a->id.n_names && b->id.n_names && !strcasecmp(a->id.names[0], b->id.names[0]);
}

static int validate_endpoint(const struct ibres_config *cfg, unsigned e, char *err,
			     size_t errlen)
{
	const struct cfg_endpoint *ep = &cfg->eps[e], *o;
	char buf[INET6_ADDRSTRLEN];
	unsigned i, j, k;

	for (j = 0; j < e; j++)
		if (!strcmp(cfg->eps[j].label, ep->label))
			goto bad_label;
	if (!ep->id.n_names) {
		cfg_set_err(err, errlen, "endpoint '%s': no name given", ep->label);
		return -EINVAL;
	}
	if (!ep->device[0] && !ep->id.n_gids) {
		cfg_set_err(err, errlen,
			    "endpoint '%s': no gid given (needed unless 'device' is set)",
			    ep->label);
		return -EINVAL;
	}
	if (!ep->device[0] && !ep->id.lid) {
		cfg_set_err(err, errlen,
			    "endpoint '%s': no lid given (needed unless 'device' is set)",
			    ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IP && !ep->interface[0]) {
		cfg_set_err(err, errlen, "endpoint '%s': transport ip needs an 'interface'",
			    ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IP && !ep->n_groups) {
		cfg_set_err(err, errlen, "endpoint '%s': transport ip needs at least one 'group'",
			    ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IB && (!ep->device[0] || !ep->n_groups)) {
		cfg_set_err(err, errlen,
			    "endpoint '%s': transport ib needs a 'device' and at least "
			    "one 'group'",
			    ep->label);
		return -EINVAL;
	}
	/* names: unique within an endpoint; endpoints of one canonical name are
	 * one host (one per rail and partition) and may share names, other
	 * endpoints may not. Addresses and GIDs: unique everywhere. */
	for (j = 0; j <= e; j++) {
		o = &cfg->eps[j];
		if (j < e && ep->id.n_gids && o->id.n_gids &&
		    !memcmp(ep->id.gids[0], o->id.gids[0], 16) && ep->id.pkey == o->id.pkey) {
			cfg_set_err(err, errlen, "endpoints '%s' and '%s' have the same GID and P_Key",
				    o->label, ep->label);
			return -EINVAL;
		}
		for (i = 0; i < ep->id.n_names; i++) {
			if (!name_in(o, ep->id.names[i], j == e ? i : UINT32_MAX))
				continue;
			if (j < e && cfg_one_host(o, ep))
				continue;
			if (j == e)
				cfg_set_err(err, errlen, "endpoint '%s': name '%s' given twice",
					    ep->label, ep->id.names[i]);
			else
				cfg_set_err(err, errlen,
					    "name '%s' appears in endpoints '%s' and '%s', which "
					    "are not one host (their first names differ)",
					    ep->id.names[i], o->label, ep->label);
			return -EINVAL;
		}
		for (i = 0; i < ep->id.n_v4; i++) {
			for (k = 0; k < (j == e ? i : o->id.n_v4); k++) {
				if (o->id.v4[k].s_addr != ep->id.v4[i].s_addr)
					continue;
				inet_ntop(AF_INET, &ep->id.v4[i], buf, sizeof(buf));
				goto dup_addr;
			}
		}
		for (i = 0; i < ep->id.n_v6; i++) {
			for (k = 0; k < (j == e ? i : o->id.n_v6); k++) {
				if (memcmp(&o->id.v6[k], &ep->id.v6[i], sizeof(struct in6_addr)))
					continue;
				inet_ntop(AF_INET6, &ep->id.v6[i], buf, sizeof(buf));
				goto dup_addr;
			}
		}
	}
	return 0;

bad_label:
	cfg_set_err(err, errlen, "endpoint label '%s' used twice", ep->label);
	return -EINVAL;
dup_addr:
	if (j == e)
		cfg_set_err(err, errlen, "endpoint '%s': address %s given twice", ep->label, buf);
	else
		cfg_set_err(err, errlen, "address %s appears in endpoints '%s' and '%s'", buf,
			    o->label, ep->label);
	return -EINVAL;
}

/* "file:line: " of @ep's section before the message in @err. */
static void at_line(const struct ibres_config *cfg, const struct cfg_endpoint *ep, char *err,
		    size_t errlen)
{
	char msg[CFG_ERR_MAX];

	if (!err || !errlen || !ep->line || !cfg->source[0])
		return;
	snprintf(msg, sizeof(msg), "%s", err);
	cfg_set_err(err, errlen, "%.200s:%u: %s", cfg->source, ep->line, msg);
}

int config_validate(const struct ibres_config *cfg, char *err, size_t errlen)
{
	unsigned e;
	int ret;

	cfg_set_err(err, errlen, "%s", "");
	if (!cfg->n_eps || cfg->n_eps > CFG_MAX_ENDPOINTS) {
		cfg_set_err(err, errlen,
			    cfg->n_eps ? "too many endpoints"
				       : "no endpoint configured: add an [endpoint LABEL] section");
		return -EINVAL;
	}
	if (cfg->acm_socket_path[0] &&
	    !strncmp(cfg->acm_socket_path, cfg->socket_path, sizeof(cfg->socket_path))) {
		cfg_set_err(err, errlen, "acm_socket and socket are the same path: %.*s",
			    (int)sizeof(cfg->socket_path), cfg->socket_path);
		return -EINVAL;
	}
	if (cfg->n_patterns > CFG_MAX_PATTERNS) {
		cfg_set_err(err, errlen, "too many name patterns");
		return -EINVAL;
	}
	for (e = 0; e < cfg->n_eps; e++) {
		const struct cfg_endpoint *ep = &cfg->eps[e];

		if (ep->id.n_names > IBRES_EP_NAMES_MAX || ep->id.n_v4 > IBRES_EP_ADDRS_MAX ||
		    ep->id.n_v6 > IBRES_EP_ADDRS_MAX || ep->n_groups > CFG_MAX_GROUPS ||
		    ep->id.n_gids > IBRES_EP_GIDS_MAX) {
			cfg_set_err(err, errlen, "endpoint '%.63s': too many values", ep->label);
			return -EINVAL;
		}
		ret = validate_endpoint(cfg, e, err, errlen);
		if (ret) {
			at_line(cfg, ep, err, errlen);
			return ret;
		}
	}
	return 0;
}

bool cfg_port_moved(const struct cfg_endpoint *was, const struct cfg_endpoint *now)
{
	if (was->transport != now->transport || strcmp(was->device, now->device) ||
	    was->port_num != now->port_num || was->pkey_index != now->pkey_index)
		return true;
	return now->transport == TRANSPORT_IP &&
	       (strcmp(was->interface, now->interface) || was->udp_port != now->udp_port);
}

bool cfg_paths_differ(const struct cfg_endpoint *was, const struct cfg_endpoint *now)
{
	/* both parsed alike (zeroed, then filled): the same groups, the same bytes */
	return was->mtu != now->mtu || was->rate != now->rate || was->sl != now->sl ||
	       was->packet_life != now->packet_life || was->n_groups != now->n_groups ||
	       memcmp(was->groups, now->groups, sizeof(was->groups[0]) * now->n_groups);
}

/* @ep's port as an administrator wrote it: "device D port P pkey_index K", or
 * "interface I udp_port U" (the ip transport), into @buf. */
static const char *port_words(const struct cfg_endpoint *ep, char *buf, size_t len)
{
	if (ep->transport == TRANSPORT_IP)
		snprintf(buf, len, "transport ip, interface %.15s udp_port %u", ep->interface,
			 ep->udp_port);
	else if (ep->device[0])
		snprintf(buf, len, "transport %s, device %.63s port %u pkey_index %u",
			 ep->transport == TRANSPORT_IB ? "ib" : "none", ep->device, ep->port_num,
			 ep->pkey_index);
	else
		snprintf(buf, len, "transport none, no device");
	return buf;
}

int config_reload_check(const struct cfg_endpoint *opened, unsigned n_opened,
			const struct ibres_config *cfg, char *err, size_t errlen)
{
	char was[128], now[128];

	for (unsigned e = 0; e < n_opened && e < cfg->n_eps; e++) {
		const struct cfg_endpoint *r = &opened[e], *ep = &cfg->eps[e];

		if (!cfg_port_moved(r, ep))
			continue;
		cfg_set_err(err, errlen,
			    "endpoint '%.63s' is endpoint %u of the file, whose port the daemon "
			    "opened as '%.63s' (%s); it would be %s: a reload cannot give an "
			    "endpoint's place another port (endpoints reordered, one removed that "
			    "is not the last, another transport, device, port_num, pkey_index, "
			    "interface or udp_port): restart ibresd for that",
			    ep->label, e + 1, r->label, port_words(r, was, sizeof(was)),
			    port_words(ep, now, sizeof(now)));
		at_line(cfg, ep, err, errlen);
		return -EINVAL;
	}
	return 0;
}

int config_default_names(struct ibres_config *cfg, const char *hostname)
{
	size_t short_len = strcspn(hostname, ".");
	struct ibres_hostrec *id;
	unsigned e;

	if (!cfg_valid_hostname(hostname))
		return -EINVAL;
	for (e = 0; e < cfg->n_eps && e < CFG_MAX_ENDPOINTS; e++) {
		id = &cfg->eps[e].id;
		if (id->n_names)
			continue;
		memset(id->names, 0, sizeof(id->names));
		memcpy(id->names[0], hostname, strlen(hostname));
		id->n_names = 1;
		if (hostname[short_len]) {
			memcpy(id->names[1], hostname, short_len);
			if (cfg_valid_hostname(id->names[1]))
				id->n_names = 2;
			else
				memset(id->names[1], 0, sizeof(id->names[1]));
		}
		/* every endpoint without a name: one host, one endpoint per rail */
	}
	return 0;
}
