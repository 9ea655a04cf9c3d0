/* SPDX-License-Identifier: MIT */
/*
 * The native InfiniBand side of the daemon, for every endpoint whose config
 * names a `device`: port discovery, the Subnet Administrator client and the
 * multicast groups (doc/fabric-protocol.md, "InfiniBand ports and the SA").
 *
 * - Port data (LID, SM LID, GID prefix and port GUID, P_Key table, active
 *   MTU and rate, subnet timeout, state) come from libibumad at start and
 *   then from SubnGet(PortInfo) MADs to the port itself every
 *   `port_poll_interval`; a change is handled like the verbs port events
 *   (PORT_ACTIVE, PORT_ERR, LID, GID, P_Key change, CLIENT_REREGISTER):
 *   the endpoint's identity is updated, routes from it are dropped, groups
 *   are joined again, the fabric hears the new identity.
 * - SA queries: PathRecord GET (route protocol `sa`, QUERY_SA verification)
 *   and MCMemberRecord SET/DELETE (groups), matched to their answers by
 *   transaction id, at most `sa_window` outstanding per port, each attempt
 *   bounded by `timeout`, `retries` retries, all timed by the daemon.
 * - Blocking umad I/O runs on helper threads (umad_io.h); everything here
 *   runs on the event loop.
 *
 * How a client request waits for the SA (route protocol `sa`): the request
 * found its destination's host in the store but without a path from its
 * endpoint. resolver_route_wait() starts (or joins) one PathRecord query for
 * (endpoint, destination GID) and hangs the request's waiter on the query.
 * When the answer comes, the path is stored with that host (for all its
 * names and addresses) with the route TTL, and the waiters are completed:
 * the requests find the path stored. A failure completes them with the
 * error (no SM: ENOTCONN; no answer: ETIMEDOUT; no path: ENODATA, and a
 * learned host the SA no longer knows is dropped from the store).
 */
#ifndef IBRESD_SA_H
#define IBRESD_SA_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hoststore.h"
#include "core/waiter.h"
#include "ibres_proto.h"

struct sa_client;
struct netlink;

/* What the SA client works with: the running config (a reload replaces its
 * content), the loop, the endpoints (it reports port data to their owner),
 * the store (paths, hosts the SA no longer knows) and netlink (an IB port's
 * IPoIB addresses follow its GID). */
struct sa_deps {
	const struct ibres_config *cfg;
	struct loop *loop;
	struct endpoints *eps;
	struct host_store *store;
	struct netlink *nl;
};

struct endpoint;
struct path_params;
struct tlv_writer;

/* Open the port of every endpoint that names a device, discover it (bounded
 * wait), put its data into the endpoint and the store, and start joining
 * the endpoint's groups. A port that cannot be used (no such device, not
 * InfiniBand: RoCE, iWARP) is skipped with a log line; the endpoint keeps its
 * configured values. Call before fabric_start. 0 or -ENOMEM. */
int sa_start(struct sa_client **out, const struct sa_deps *deps);

/* Leave the groups (bounded wait for the SA's answers) and close the ports.
 * Waiters still on SA queries complete with -ECANCELED. */
void sa_stop(struct sa_client *sa);

/* @ep was just copied from the configuration (start, reload): give it its
 * port's data again (GID, LID, P_Key, MTU, rate, node GUID). No-op for an
 * endpoint without a port. */
void sa_apply_endpoint(struct sa_client *sa, struct endpoint *ep);

/* Can routes from @ep come from the SA (its port is open)? */
bool sa_route_available(struct sa_client *sa, const struct endpoint *ep);

/* Start, or join, the PathRecord query from @ep to @h; @w waits for it. The
 * answer lands as described above. 0, -ENOTCONN (port not active or no SM),
 * -ENODATA (the host has neither GID nor LID), -EAGAIN (too many queries),
 * -ENOMEM. */
int sa_route_query(struct sa_client *sa, struct endpoint *ep, const struct host *h,
		   struct lookup_waiter *w);

/* QUERY_SA: ask the SA for @in as given (component mask of its non-zero
 * fields), never from the store. @w->done runs once with the status; on 0,
 * *@out holds the SA's record. @w may be cancelled with
 * lookup_waiter_cancel() before that; @out is then not touched. 0 or
 * -ENOTCONN, -EAGAIN, -ENOMEM. */
int sa_verify_path(struct sa_client *sa, struct endpoint *ep, const struct ibres_path_record *in,
		   struct lookup_waiter *w, struct ibres_path_record *out);

/* Route protocol mcast: when @ep's port joined the IB group of parameters
 * (@mtu, @rate), the path inherits what the SA answered for it: MTU, rate,
 * SL, packet life, P_Key. */
void sa_group_path_params(struct sa_client *sa, const struct endpoint *ep, uint8_t mtu, uint8_t rate,
			  struct path_params *pp);

/* One of @ep's IB groups, for the ib transport: 0 with MGID, MLID, Q_Key
 * and SL once joined, -EAGAIN before, -ENOENT without an SA port. */
int sa_group_address(struct sa_client *sa, const struct endpoint *ep, unsigned g, uint8_t mgid[16],
		     uint16_t *mlid, uint32_t *qkey, uint8_t *sl);

/* Verbs reported a port event on @ep's device (ib transport): read the port
 * now rather than at the next poll. */
void sa_port_changed(struct sa_client *sa, const struct endpoint *ep, const char *what);

/* Append the SA client's counters (NAME, COUNTER pairs) to a STATS answer;
 * zeros without any port. */
void sa_stats(struct sa_client *sa, struct tlv_writer *w);

#endif
