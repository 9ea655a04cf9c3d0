/* SPDX-License-Identifier: MIT */
/* The daemon's context: every piece of mutable state lives here and is owned
 * by the one event loop. */
#ifndef IBRESD_DAEMON_H
#define IBRESD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/config.h"
#include "core/endpoints.h"
#include "core/hoststore.h"
#include "core/hosts_file.h"
#include "core/loop.h"
#include "engine/resolver.h"
#include "os/privs.h"
#include "fabric/fabric.h"

struct server;
struct fabric;
struct sa_client;
struct netlink;
struct hostdir_pub;
struct kpath;

/* Named counters beyond ibacm's seven (STATS opcode, ibresctl stats). */
struct daemon_stats {
	uint64_t clients_connected; /* a gauge (frontend/server.c) */
	uint64_t clients_accepted;
	uint64_t clients_rejected; /* over max_clients */
	uint64_t clients_quota_rejected; /* over max_clients_per_uid, none of its own to close */
	uint64_t clients_evicted;        /* closed to make room (frontend/admission.h) */
	uint64_t clients_timed_out;
	uint64_t clients_output_timed_out; /* an answer left unread for client_timeout */
	uint64_t directory_unread_refused; /* DIRECTORY refused: unread ones (frontend/passed.h) */
	uint64_t requests;
	uint64_t bad_requests;   /* malformed: closed or answered EINVAL */
	uint64_t admin_denied;   /* state-changing request from uid != 0 */
	uint64_t host_lookups;
	uint64_t host_notfound;
	uint64_t pending_timeouts;
};

struct ibresd {
	char config_path[PATH_MAX];
	char socket_override[CFG_SOCKET_MAX]; /* --socket, survives reloads */
	bool foreground;
	struct ibres_config cfg;
	/* each place's port as opened at start, where it stays until a restart
	 * (config_reload_check()); places a reload added were opened never */
	struct cfg_endpoint opened[CFG_MAX_ENDPOINTS];
	unsigned n_opened;
	struct cfg_hosts static_hosts; /* parsed; the resolver frees them once in the store */
	struct loop loop;
	struct host_store store; /* what is known (core/hoststore.h) */
	struct resolver res;     /* lookups and what is being asked (engine/resolver.h) */
	struct server *server;
	struct fabric *fabric; /* NULL: no endpoint carries the fabric protocol */
	struct sa_client *sa;  /* NULL: no endpoint names an IB device (sa.h) */
	struct netlink *netlink; /* NULL: no kernel addresses, config addresses only */
	struct hostdir_pub *dir; /* NULL: no shared host directory (os/hostdir_pub.h) */
	struct kpath *kpath;     /* NULL: not answering the kernel's path queries */
	int kpath_fd;            /* the NETLINK_RDMA socket systemd passed until started; -1 */
	struct run_user run_as;   /* [daemon] user, looked up at start (cfg.user set) */
	struct endpoints eps; /* the local endpoints, owner of their identity */
	uint64_t counters[IBRES_CNTR_MAX]; /* ibacm's global counters */
	struct daemon_stats stats;
	uint8_t *scratch; /* IBRES_MSG_MAX bytes for answers built outside a dispatch */
	uint64_t start_ms;
};

#endif
