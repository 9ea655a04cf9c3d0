/* SPDX-License-Identifier: MIT */
/* ibresd configuration: the parsed form of ibresd.conf(5) (the static hosts
 * file is core/hosts_file.h). Parsing never exits or logs: errors come back
 * as text. Implemented by config_keys.c (the keys, defaults, parse and print)
 * over config_engine.c and config_lex.c, and config_validate.c. */
#ifndef IBRESD_CONFIG_H
#define IBRESD_CONFIG_H

#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/un.h>

#include "hostrec.h"

#define CFG_MAX_ENDPOINTS 32 /* 8 rails x 4 partitions; heard_on is 32 bits */
#define CFG_MAX_GROUPS 4      /* multicast priority classes per endpoint */
#define CFG_MAX_PATTERNS 16   /* cluster name patterns */
#define CFG_PATTERN_MAX 128
#define CFG_LINE_MAX 1024     /* longer lines are errors */
#define CFG_ERR_MAX 512
#define CFG_SOCKET_MAX (sizeof(((struct sockaddr_un *)0)->sun_path))
/* ib transport: receive buffers of an endpoint's UD QP (recv_depth), 2,088
 * bytes of registered memory each. The default, 34 MiB, holds a third of the
 * first wave of a 48,000-node boot (47,999 announces within 100 ms); the rest
 * must be drained as it arrives, and the overrun counters say when it was
 * not. A device's limits clamp it: ConnectX (mlx5) takes 32,768 (max_qp_wr);
 * soft-RoCE in Linux 6.1 32,703 (max_cqe 32,767, less the sends). */
#define CFG_RECV_DEPTH_DEFAULT 16384
#define CFG_RECV_DEPTH_MIN 64
#define CFG_RECV_DEPTH_MAX 1048576

enum cfg_route_prot { ROUTE_PROT_MCAST = 0, ROUTE_PROT_SA = 1 };
enum cfg_transport { TRANSPORT_NONE = 0, TRANSPORT_IP = 1, TRANSPORT_IB = 2 };
enum cfg_log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* One multicast priority class: an IP group on the ip transport, an IB
 * multicast group on ib. Ordered lowest priority first. */
struct cfg_group {
	struct sockaddr_storage addr; /* ip transport: AF_INET or AF_INET6 group */
	uint8_t mtu;  /* IB MTU enum (1=256 … 5=4096) */
	uint8_t rate; /* IB rate enum (2=2.5, 3=10, 4=30, 5=5, 6=20, 7=40 … Gb/s) */
};

struct cfg_endpoint {
	char label[64];            /* from "[endpoint LABEL]" */
	unsigned line;             /* that header's line (0: not from a file) */
	struct ibres_hostrec id;   /* names, addresses, GID (gids[0]), LID, QPN, P_Key */
	uint8_t mtu;               /* IB MTU enum */
	uint8_t rate;              /* IB rate enum */
	uint8_t sl;                /* 0..15 */
	uint8_t packet_life;       /* IB packet life time exponent, 0..63 */
	uint64_t dev_guid;         /* reported by EP_QUERY */
	uint8_t port_num;          /* reported by EP_QUERY; 1 by default */
	char device[64];           /* IB port: discovery, SA client, ib transport */
	uint16_t pkey_index;       /* with device: the P_Key table entry to use */
	unsigned recv_depth;       /* ib transport: receive buffers of the UD QP */
	enum cfg_transport transport;
	char interface[16];
	uint16_t udp_port;         /* ip transport */
	struct cfg_group groups[CFG_MAX_GROUPS];
	unsigned n_groups;
};

struct ibres_config {
	char source[256]; /* the file it was parsed from, for file:line messages */
	/* [daemon] */
	char socket_path[CFG_SOCKET_MAX];
	char acm_socket_path[CFG_SOCKET_MAX]; /* "" = not served */
	bool acm_link;                        /* make /run/ibacm.sock point at it */
	bool acm_af_ib; /* a RESOLVE by IP address there gets the path (librdmacm: AF_IB first) */
	enum cfg_log_level log_level;
	unsigned max_clients;
	unsigned max_clients_per_uid; /* 0: a quarter of max_clients (frontend/admission.h) */
	unsigned client_timeout_ms; /* idle/incomplete request bound per client */
	char user[64];              /* "" = keep the identity started with */
	char host_directory[PATH_MAX]; /* shared directory: "auto" (beside the socket), "" none */
	/* [resolve] */
	unsigned timeout_ms;     /* one fabric attempt */
	unsigned retries;        /* attempts after the first */
	unsigned addr_ttl_s;     /* learned addresses */
	unsigned route_ttl_s;    /* path records */
	unsigned negative_ttl_s; /* "not found" answers */
	unsigned cache_size;     /* entries, hard bound */
	enum cfg_route_prot route_prot;
	char hosts_file[PATH_MAX]; /* "" = none */
	char patterns[CFG_MAX_PATTERNS][CFG_PATTERN_MAX]; /* fnmatch(3), case-insensitive */
	unsigned n_patterns;     /* 0 = every name is a cluster name */
	unsigned settle_ms;      /* after start-up, unknown cluster names are NOTFOUND at once */
	unsigned announce_interval_s;
	unsigned goodbye_repeats; /* our announces that name a host heard saying GOODBYE */
	char cluster_key_file[PATH_MAX]; /* "" = no HMAC */
	unsigned sa_window;      /* SA queries outstanding per port */
	unsigned port_poll_ms;   /* PortInfo poll of IB ports; 0 = off */
	bool kernel_paths;       /* answer the kernel's path queries (NETLINK_RDMA) */
	unsigned kernel_path_timeout_ms; /* bound on each; then the kernel asks the SA */
	/* endpoints */
	struct cfg_endpoint eps[CFG_MAX_ENDPOINTS];
	unsigned n_eps;
};

/* Defaults for every setting, no endpoints. */
void config_defaults(struct ibres_config *cfg);

/* Parse a config file. 0, or a negative errno with "file:line: what is
 * wrong" in @err. @cfg holds defaults plus what was parsed. */
int config_load(const char *path, struct ibres_config *cfg, char *err, size_t errlen);

/* Same, from memory (@name is used in error messages); used by tests and fuzzing. */
int config_parse(const char *name, const char *text, size_t len, struct ibres_config *cfg,
		 char *err, size_t errlen);

/* Check the whole config once parsed (endpoints present, no duplicate
 * addresses or GID and P_Key; a name on several endpoints only when they are
 * one host, of one first name...). 0 or -EINVAL with a message. */
int config_validate(const struct ibres_config *cfg, char *err, size_t errlen);

/* Are @a and @b endpoints of one host (a node's rails and partitions): the
 * same first, canonical, name? The one rule, for the config's checks and
 * the endpoints' rails. */
bool cfg_one_host(const struct cfg_endpoint *a, const struct cfg_endpoint *b);

/* Would endpoint @now need another port than @was (transport, device,
 * port_num, pkey_index; the ip transport's interface and udp_port)? A place
 * keeps the port it was opened on until a restart: the one rule for the
 * reload's check and the fabric's. (Another transport's interface only
 * says where its addresses come from, which netlink follows.) */
bool cfg_port_moved(const struct cfg_endpoint *was, const struct cfg_endpoint *now);
/* Would paths from endpoint @now differ from @was's (MTU, rate, SL, packet
 * life, its groups and theirs)? Then paths cached from it are stale. */
bool cfg_paths_differ(const struct cfg_endpoint *was, const struct cfg_endpoint *now);
/* May @cfg be loaded at a reload of a daemon that opened the first
 * @n_opened places at start on the ports @opened gives: does each of them
 * that @cfg has keep its port (cfg_port_moved())? Places past them (added
 * by a reload, opened never) and the last ones removed may change. 0 or
 * -EINVAL with a message (file:line of the endpoint). */
int config_reload_check(const struct cfg_endpoint *opened, unsigned n_opened,
			const struct ibres_config *cfg, char *err, size_t errlen);

/* Give every endpoint that has no name @hostname as its name (and, when
 * @hostname has dots, its first label as an alias), so that one config file
 * serves a whole cluster and a multi-rail node is one host. Call before config_validate. 0 (also when every
 * endpoint has names), or -EINVAL when @hostname is not a valid host name. */
int config_default_names(struct ibres_config *cfg, const char *hostname);

/* Print the effective settings in config-file syntax (for --check-config). */
void config_print(const struct ibres_config *cfg, FILE *out);

#endif
