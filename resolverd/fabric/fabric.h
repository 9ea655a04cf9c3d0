/* SPDX-License-Identifier: MIT */
/* The fabric protocol as the resolver sees it (doc/fabric-protocol.md):
 * whether a key may be asked on the fabric, sending one attempt of a query,
 * and what it reports up (records learned, the query a reply answers). It
 * stores what it learns in the host store and follows the endpoints'
 * identity (core/endpoints.h). Every function takes a NULL fabric (no
 * endpoint has a transport). */
#ifndef IBRESD_FABRIC_H
#define IBRESD_FABRIC_H

#include <stdbool.h>

#include "core/hostkey.h"
#include "fabric/transport.h"
#include "hostrec.h"

struct endpoint;
struct endpoints;
struct fabric;
struct host;
struct host_store;
struct ibres_config;
struct loop;
struct path_params;
struct sa_client;
struct tlv_writer;

/* Where a peer's hint said a host is reached (fabric_events.hint): the
 * local port that heard the hint, and the host's address there. */
struct fabric_at {
	unsigned port;
	struct transport_addr addr;
	uint64_t named_by; /* the peer whose hint named it (digest_sender()); 0: none */
	bool group;	   /* not @addr: the port's group (fabric_at_rail()) */
};

/* What the protocol core reports up (registered by the resolver, which owns
 * the queries in flight; see engine/pending.h). */
struct fabric_events {
	/* A peer's record went into the host store (overheard or answered). */
	void (*learned)(void *arg, const struct ibres_hostrec *h);
	/* The key of the query in flight with transaction id @tid: 0, or
	 * -ENOENT when none is (the answer is unsolicited and dropped). */
	int (*query_key)(void *arg, uint64_t tid, struct host_key *k);
	/* fabric_authoritative_from() moved: the directory became complete,
	 * or incomplete (a peer's digest, a receive drop). */
	void (*scope_changed)(void *arg);
	/* A peer holds a host of canonical name @k that the store lacks
	 * (fabric_fetch.h): ask it on the fabric, so that it answers for
	 * itself; a peer's word is a hint, never an answer. @at (NULL: not
	 * known) is where the peer said the host is reached, valid during the
	 * call: fabric_send_request_at() asks the host there alone. */
	void (*hint)(void *arg, const struct host_key *k, const struct fabric_at *at);
	void *arg;
};

/* What the protocol core works with: the running config (a reload replaces
 * its content), the loop, the endpoints (their identity is what it
 * announces; it listens to their changes), the store (what it learns), the
 * SA client (IB groups; NULL without IB ports) and the resolver's events. */
struct fabric_deps {
	const struct ibres_config *cfg;
	struct loop *loop;
	struct endpoints *eps;
	struct host_store *store;
	struct sa_client *sa;
	struct fabric_events ev;
};

/* Can every endpoint of @cfg with a transport announce itself in one
 * datagram (FW_MAX_LEN bytes): its identity with its host's rails, its
 * groups, a cluster key's stamp and HMAC? 0; -EMSGSIZE with
 * "file:line: endpoint ...: why" in @err when one cannot; 1 with a warning
 * in @err when one would not fit a look-up of the longest name once its
 * interface gave it IBRES_EP_ADDRS_MAX addresses a family. */
int fabric_check_config(const struct ibres_config *cfg, char *err, size_t errlen);

/* Start the fabric protocol on every endpoint that has a transport; *@out
 * stays NULL when none has. 0 or a negative errno. */
int fabric_start(struct fabric **out, const struct fabric_deps *deps);
/* Say GOODBYE and close the transports. */
void fabric_stop(struct fabric *f);

/* A reload: @old is the running config, @new the one about to replace it.
 * The transports keep the settings they were opened with (an endpoint's
 * transport, interface, UDP port, groups, device and port, and the cluster
 * key): a change of those is logged as needing a restart. */
void fabric_reload(struct fabric *f, const struct ibres_config *old,
		   const struct ibres_config *new);

/* The store lost entries (an admin flush), or announcements were turned on:
 * relearn the directory as at start-up before answering "not found" from it
 * again. */
void fabric_resync(struct fabric *f);

/* An endpoint's names or addresses changed (a reload, or its port): announce
 * now and once more a little later, so that peers drop what it no longer
 * has at once, not at the next period. */
void fabric_identity_reloaded(struct fabric *f);

/* Every endpoint whose port is up and whose identity (canonical name, port
 * GID, P_Key) is not the one its last datagram carried says goodbye under
 * that one now, all before any announcement under the new ones; with
 * announcements off too (a port down says it once up, before its first
 * datagram). One that cannot go yet (an IB port not joined again) is owed:
 * tried before each datagram of its port and on a timer, 0.1 s doubling to
 * 5 s. After a reload swapped the endpoints' identities. */
void fabric_say_goodbyes(struct fabric *f);

/* A reload turned announcements off: one last ANNOUNCE on every port that
 * is up, which says so (its flags), so that peers stop taking this node's
 * silence for its absence now (fabric_departed.h), not at its next
 * datagram. A peer that misses it learns so from the next one. */
void fabric_announce_stopped(struct fabric *f);

/* A reload copied @ep's config over it: put back what its transport gave
 * it (a verbs transport's UD QP number, which peers must reach, and on RoCE
 * the port's GID when the config names none). */
void fabric_apply_endpoint(struct fabric *f, struct endpoint *ep);

/* May @k be sent to the fabric? False without a transport, for names
 * outside the cluster name patterns, and (authoritative "not found") for
 * cluster names once the directory is complete: the settle time passed and
 * the peers' digests agree with ours (fabric_digest.h). */
bool fabric_may_query(struct fabric *f, const struct host_key *k);
/* Since when (CLOCK_MONOTONIC ms) a key that the store does not hold is
 * known not to exist (no fabric, or a complete directory), names outside the
 * patterns aside: 0 always, UINT64_MAX never (announcements off, or the
 * directory incomplete). It moves at a resync and when completeness changes
 * (the scope_changed event). */
uint64_t fabric_authoritative_from(const struct fabric *f);

/* Send one REQUEST for @k with transaction id @tid on every open port (one
 * attempt; the resolver's pending table retries). 0, or a negative errno
 * when no port could send. */
int fabric_send_request(struct fabric *f, const struct host_key *k, uint64_t tid);
/* The same, by unicast to @at only (a hint's, see fabric_events.hint), on
 * the port that heard the hint, or on that port's group (@at->group); a
 * multicast REQUEST on every port when @at is NULL. */
int fabric_send_request_at(struct fabric *f, const struct host_key *k, uint64_t tid,
			   const struct fabric_at *at);
/* A hint's query for @k to @at went unanswered, every attempt: the host is
 * gone (the peer that named it missed its GOODBYE) or datagrams were lost.
 * Unless we heard @k say goodbye (fabric_departed.h), the directory of
 * @at's fabric counts incomplete until peers vouch again (fabric_digest.h). */
void fabric_hint_unanswered(struct fabric *f, const struct host_key *k, const struct fabric_at *at);
/* Since when no port has been up (every link down, or none active yet:
 * nothing can be asked), CLOCK_MONOTONIC ms; 0 while one is. */
uint64_t fabric_cut_off_since(struct fabric *f);
/* Where a host known on other rails is asked on @ep's fabric alone: its
 * port's group (a lookup from a source there, while the directory may lack
 * the host's endpoint there). 0, or -ENOENT when @ep has no fabric port up. */
int fabric_at_rail(const struct fabric *f, const struct endpoint *ep, struct fabric_at *at);
/* Does the store hold the host named by @k with an endpoint heard on the
 * fabric of @at's port (a static host: anywhere)? */
bool fabric_holds_at(struct fabric *f, const struct host_key *k, const struct fabric_at *at);

/* The path parameters towards @h from @ep: the group both joined (the
 * lowest when unknown), capped by the endpoint's own MTU and rate, and on
 * IB what the SA answered for that group (@sa may be NULL). */
void fabric_path_params(struct sa_client *sa, const struct endpoint *ep, const struct host *h,
			struct path_params *pp);

/* Append the fabric's named counters (NAME, COUNTER pairs) to a STATS answer. */
void fabric_stats(const struct fabric *f, struct tlv_writer *w);

#endif
