// SPDX-License-Identifier: MIT
/*
 * The mirror of the kernel's interfaces and addresses (netlink_tables.h):
 * one rtnetlink message at a time, from the event socket or a dump.
 */
#include "os/netlink_tables.h"

#include <arpa/inet.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "core/log.h"

struct nl_link *nl_link_find(struct nl_tables *t, int ifindex)
{
	for (unsigned i = 0; i < t->n_links; i++)
		if (t->links[i].ifindex == ifindex)
			return &t->links[i];
	return NULL;
}

static struct nl_addr *addr_find(struct nl_tables *t, int ifindex, int family, const uint8_t *a)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < t->n_addrs; i++) {
		struct nl_addr *x = &t->addrs[i];

		if (x->ifindex == ifindex && x->family == family && !memcmp(x->addr, a, len))
			return x;
	}
	return NULL;
}

static unsigned addrs_on(const struct nl_tables *t, int ifindex, int family)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->n_addrs; i++)
		if (t->addrs[i].ifindex == ifindex && t->addrs[i].family == family)
			n++;
	return n;
}

/* Remove the addresses of @ifindex (when @one is NULL) or just @one, keeping
 * the order of the others: it is the order endpoints list them in, and an
 * endpoint's first address must not move for nothing. */
static void addrs_remove(struct nl_tables *t, int ifindex, const struct nl_addr *one)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->n_addrs; i++) {
		struct nl_addr *x = &t->addrs[i];

		if (one ? x == one : x->ifindex == ifindex)
			continue;
		t->addrs[n++] = *x;
	}
	t->n_addrs = n;
}

static void link_remove(struct nl_tables *t, struct nl_link *l)
{
	addrs_remove(t, l->ifindex, NULL);
	*l = t->links[--t->n_links];
}

void nl_config_ifnames(const struct ibres_config *cfg, char (*out)[IFNAMSIZ])
{
	memset(out, 0, sizeof(char[CFG_MAX_ENDPOINTS][IFNAMSIZ]));
	for (unsigned i = 0; i < cfg->n_eps && i < CFG_MAX_ENDPOINTS; i++)
		snprintf(out[i], IFNAMSIZ, "%s", cfg->eps[i].interface);
}

static bool is_candidate(const struct nl_tables *t, const struct nl_link *l)
{
	if (l->ipoib)
		return true;
	for (unsigned i = 0; i < CFG_MAX_ENDPOINTS; i++)
		if (t->ifnames[i][0] && !strcmp(t->ifnames[i], l->name))
			return true;
	return false;
}

/* RTM_NEWLINK / RTM_DELLINK. */
static int on_link(struct nl_tables *t, struct nlmsghdr *h)
{
	struct nlattr *tb[IFLA_MAX + 1];
	struct nl_link n = {0}, *l;
	struct ifinfomsg *ifi;

	if (nlmsg_parse(h, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return 0;
	ifi = nlmsg_data(h);
	l = nl_link_find(t, ifi->ifi_index);
	if (h->nlmsg_type == RTM_DELLINK) {
		if (!l)
			return 0;
		link_remove(t, l);
		return NL_CHANGED;
	}
	/* a message may leave attributes out (the IPv6 layer's, for one):
	 * what it does not say stays as it was */
	if (l)
		n = *l;
	n.ifindex = ifi->ifi_index;
	n.flags = ifi->ifi_flags;
	if (tb[IFLA_IFNAME])
		nla_strlcpy(n.name, tb[IFLA_IFNAME], sizeof(n.name));
	if (tb[IFLA_ADDRESS]) {
		const uint8_t *hw = nla_data(tb[IFLA_ADDRESS]);

		n.ipoib = ifi->ifi_type == ARPHRD_INFINIBAND &&
			  nla_len(tb[IFLA_ADDRESS]) == IPOIB_HWADDR_LEN;
		if (n.ipoib)
			memcpy(n.gid, hw + 4, 16);
	}
	if (n.ipoib && tb[IFLA_BROADCAST] && nla_len(tb[IFLA_BROADCAST]) == IPOIB_HWADDR_LEN) {
		const uint8_t *bc = nla_data(tb[IFLA_BROADCAST]);

		n.pkey = (uint16_t)(bc[8] << 8 | bc[9]);
	}
	if (!is_candidate(t, &n)) {
		if (!l)
			return 0;
		link_remove(t, l); /* renamed away from an endpoint's interface */
		return NL_CHANGED;
	}
	if (!l) {
		if (t->n_links == NL_LINKS_MAX) {
			if (!t->warned_full)
				log_warn("netlink: more than %u IPoIB and configured interfaces; "
					 "%s and later ones are ignored",
					 NL_LINKS_MAX, n.name);
			t->warned_full = true;
			return 0;
		}
		t->links[t->n_links++] = n;
		/* renamed into an endpoint's interface: its addresses are not known */
		return NL_CHANGED | NL_RESYNC;
	}
	if (!strcmp(l->name, n.name) && l->ipoib == n.ipoib && !memcmp(l->gid, n.gid, 16) &&
	    l->pkey == n.pkey && (l->flags & IFF_LOOPBACK) == (n.flags & IFF_LOOPBACK)) {
		/* up or down (carrier): an ip endpoint's rail state */
		bool state = (l->flags ^ n.flags) & (IFF_UP | IFF_RUNNING);

		l->flags = n.flags;
		return state ? NL_CHANGED : 0;
	}
	*l = n;
	return NL_CHANGED;
}

/* RTM_NEWADDR / RTM_DELADDR. */
static int on_addr(struct nl_tables *t, struct nlmsghdr *h)
{
	struct nlattr *tb[IFA_MAX + 1], *a;
	struct ifaddrmsg *ifa;
	struct nl_link *l;
	struct nl_addr *x;
	uint32_t flags;
	bool usable;
	int len;

	if (nlmsg_parse(h, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return 0;
	ifa = nlmsg_data(h);
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return 0;
	l = nl_link_find(t, (int)ifa->ifa_index);
	if (!l)
		return 0;
	len = ifa->ifa_family == AF_INET ? 4 : 16;
	/* IFA_LOCAL is the local end of a point-to-point address; otherwise
	 * (and always on IPv6 without a peer) IFA_ADDRESS is ours */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!a || nla_len(a) != len)
		return 0;
	/* A link-local IPv6 address names nothing without its interface. */
	if (ifa->ifa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((struct in6_addr *)nla_data(a)))
		return 0;
	flags = tb[IFA_FLAGS] && nla_len(tb[IFA_FLAGS]) == 4 ? nla_get_u32(tb[IFA_FLAGS])
							     : ifa->ifa_flags;
	/* Not ours to announce until duplicate address detection passed. */
	usable = h->nlmsg_type == RTM_NEWADDR && !(flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
	x = addr_find(t, l->ifindex, ifa->ifa_family, nla_data(a));
	if (usable && !x) {
		if (addrs_on(t, l->ifindex, ifa->ifa_family) >= NL_LINK_ADDRS_MAX) {
			l->overflow = true;
			return 0;
		}
		x = &t->addrs[t->n_addrs++];
		memset(x, 0, sizeof(*x));
		x->ifindex = l->ifindex;
		x->family = ifa->ifa_family;
		memcpy(x->addr, nla_data(a), (size_t)len);
		return NL_CHANGED;
	}
	if (usable)
		return 0;
	if (x)
		addrs_remove(t, 0, x);
	/* room for one that was not tracked: read them again */
	if (l->overflow)
		return (x ? NL_CHANGED : 0) | NL_RESYNC;
	return x ? NL_CHANGED : 0;
}

int nl_tables_apply(struct nl_tables *t, struct nlmsghdr *h)
{
	switch (h->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
		return on_link(t, h);
	case RTM_NEWADDR:
	case RTM_DELADDR:
		return on_addr(t, h);
	}
	return 0;
}
