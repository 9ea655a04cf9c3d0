/* SPDX-License-Identifier: MIT */
/*
 * The daemon's mirror of the kernel's interfaces and addresses, as netlink.c
 * reads them from rtnetlink: the interfaces that may carry an endpoint's
 * addresses (IPoIB ones, and those the config names) and their usable
 * addresses, in the order the kernel listed them. netlink_tables.c applies
 * one RTM_NEWLINK/DELLINK/NEWADDR/DELADDR message to them.
 */
#ifndef IBRESD_NETLINK_TABLES_H
#define IBRESD_NETLINK_TABLES_H

#include <linux/netlink.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"

#define NL_LINKS_MAX	  64 /* IPoIB and configured interfaces tracked */
#define NL_LINK_ADDRS_MAX 32 /* addresses tracked per interface and family */
#define NL_ADDRS_MAX	  (NL_LINKS_MAX * NL_LINK_ADDRS_MAX * 2) /* so never full */
#define IPOIB_HWADDR_LEN  20 /* flags, QPN (3 bytes), port GID (16 bytes) */

/* What a message did to the tables. */
enum { NL_CHANGED = 1, NL_RESYNC = 2 };

/* An interface whose addresses may be an endpoint's: an IPoIB interface, or
 * one an endpoint names. Others are not tracked. */
struct nl_link {
	int ifindex;
	unsigned flags; /* IFF_* */
	char name[IFNAMSIZ];
	bool ipoib; /* ARPHRD_INFINIBAND with a 20-byte address: gid and pkey are set */
	uint8_t gid[16];
	uint16_t pkey; /* from the broadcast address; 0 if unknown */
	bool overflow; /* it has addresses beyond NL_LINK_ADDRS_MAX that are not tracked */
};

struct nl_addr {
	int ifindex;
	int family;
	uint8_t addr[16];
};

struct nl_tables {
	struct nl_link links[NL_LINKS_MAX];
	unsigned n_links;
	struct nl_addr addrs[NL_ADDRS_MAX];
	unsigned n_addrs;
	/* the interface names the config had when these were read */
	char ifnames[CFG_MAX_ENDPOINTS][IFNAMSIZ];
	bool warned_full;
};

/* The tracked interface @ifindex, or NULL. */
struct nl_link *nl_link_find(struct nl_tables *t, int ifindex);

/* The interface names endpoints give (the config's, so a reload sees them). */
void nl_config_ifnames(const struct ibres_config *cfg, char (*out)[IFNAMSIZ]);

/* Apply the rtnetlink message @h to @t: NL_CHANGED when an address or an
 * interface's state changed, NL_RESYNC when the tables could not hold it all
 * (dump again later), 0 when nothing tracked moved. */
int nl_tables_apply(struct nl_tables *t, struct nlmsghdr *h);

#endif
