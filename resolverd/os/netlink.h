/* SPDX-License-Identifier: MIT */
/*
 * Local addresses and routes from the kernel (rtnetlink, through libnl-3).
 *
 * An endpoint's addresses are those its config lists, then those the kernel
 * has on its interface ("interface =" in ibresd.conf(5)) or, for an endpoint
 * without one, on the IPoIB interfaces whose port GID and P_Key are the
 * endpoint's. The daemon follows address changes at run time: the endpoint's
 * identity goes to its owner (core/endpoints.h), which refreshes the store
 * and tells the fabric.
 */
#ifndef IBRESD_NETLINK_H
#define IBRESD_NETLINK_H

#include "core/hostkey.h"
#include "hostrec.h"

struct ibresd;
struct endpoint;

/* Open the netlink sockets, read every link and address, and follow changes
 * from the event loop. Call before resolver_init so that the endpoints start
 * with their interfaces' addresses. On failure (logged) d->netlink stays
 * NULL and endpoints have their configured addresses only. 0 or a negative
 * errno. */
int netlink_start(struct ibresd *d);
void netlink_stop(struct ibresd *d);

/* Give identity @id of @ep its addresses: the config's first, then the
 * kernel's, at most IBRES_HOST_ADDRS_MAX per family; an address another
 * endpoint's config lists, or an earlier endpoint already has, is left out.
 * Returns how many kernel addresses found no room. No-op without netlink. */
unsigned netlink_merge(struct ibresd *d, const struct endpoint *ep, struct ibres_hostrec *id);

/* Merge every endpoint again; for each whose addresses changed, log the
 * change, re-insert its identity into the cache (its stale keys go) and
 * have the fabric announce it now (and once more a second later). */
void netlink_refresh(struct ibresd *d);

/* The endpoint the kernel would send from towards IPv4 or IPv6 @dst: the
 * owner of the route's preferred source address, else the endpoint of its
 * output interface. NULL when @dst is a name, the lookup fails, no endpoint
 * matches, or fewer than two endpoints have an address of @dst's family
 * (nothing to choose). */
struct endpoint *netlink_route_endpoint(struct ibresd *d, const struct host_key *dst);

#endif
