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

struct endpoint;
struct endpoints;
struct ibres_config;
struct loop;
struct netlink;

/* Open the netlink sockets, read every link and address, and follow changes
 * from @loop. @cfg is the running config (a reload replaces what it holds),
 * @eps the endpoints whose addresses it follows (changes go to their owner,
 * core/endpoints.h). Call before the endpoints are loaded so that they start
 * with their interfaces' addresses. NULL on failure (logged): endpoints then
 * have their configured addresses only; every function here takes NULL. */
struct netlink *netlink_start(struct loop *loop, const struct ibres_config *cfg,
			      struct endpoints *eps);
void netlink_stop(struct netlink *nl);

/* Give identity @id of @ep its addresses: the config's first, then the
 * kernel's, at most IBRES_EP_ADDRS_MAX per family; an address another
 * endpoint's config lists, or an earlier endpoint already has, is left out.
 * Returns how many kernel addresses found no room. No-op without netlink. */
unsigned netlink_merge(struct netlink *nl, const struct endpoint *ep, struct ibres_hostrec *id);

/* Merge every endpoint again; for each whose addresses changed, log the
 * change and hand the new identity to its owner (endpoint_update: the store
 * is refreshed and the fabric announces it). */
void netlink_refresh(struct netlink *nl);
/* Read every link and address again, and follow them (what lost
 * notifications lead to; tests use it to start over). */
void netlink_resync(struct netlink *nl);
/* Take @len bytes of rtnetlink notifications (links, addresses) as if the
 * kernel had sent them on the event socket: the tables and, when they
 * changed, the endpoints follow. For tests and fuzzing (test/fuzz). */
void netlink_feed(struct netlink *nl, const void *buf, size_t len);

/* The endpoint the kernel would send from towards IPv4 or IPv6 @dst: the
 * owner of the route's preferred source address, else the endpoint of its
 * output interface. NULL when @dst is a name, the lookup fails, no endpoint
 * matches, or fewer than two endpoints have an address of @dst's family
 * (nothing to choose). */
struct endpoint *netlink_route_endpoint(struct netlink *nl, const struct host_key *dst);

#endif
