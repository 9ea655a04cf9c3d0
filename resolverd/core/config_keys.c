// SPDX-License-Identifier: MIT
/*
 * ibresd.conf(5) itself: its sections and their keys (type, field, limits),
 * the setters and printers of the keys no generic type fits, the defaults,
 * and config.h's config_parse/config_load/config_print, which run the engine
 * (config_engine.c) over these tables.
 *
 * Nothing here logs or exits: errors come back as "FILE:LINE: message".
 */
#include "core/config.h"

#include "core/config_engine.h"
#include "core/config_lex.h"
#include "ibenum.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CFG_FILE_MAX (64u << 20) /* largest config file read */

#define DEFAULT_MTU 4      /* 2048 bytes */
#define DEFAULT_RATE 3     /* 10 Gb/s */
#define DEFAULT_PKT_LIFE 18
#define DEFAULT_UDP_PORT 4790

/* ---- IB enums (lib/ibenum.c) as error messages list them -------------- */

/* Strings, for the tables' .expect; test_config's test_enum_lists fails when
 * they no longer list exactly lib/ibenum.c's values. */

#define RATES_TEXT "2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, 112, 120, 168, " \
	"200, 300, 400 or 600 (Gb/s)"
#define MTUS_TEXT "256, 512, 1024, 2048 or 4096 (bytes)"

/* ---- custom setters and printers ------------------------------------- */

static int set_gid(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;

	(void)p;
	(void)k;
	if (!cfg_parse_gid(val, ep->id.gids[0]))
		return BAD_VALUE;
	ep->id.n_gids = 1;
	return 0;
}

static void print_gid(FILE *out, const struct key_def *k, const void *obj)
{
	const struct cfg_endpoint *ep = obj;
	char buf[INET6_ADDRSTRLEN];

	if (!ep->id.n_gids || !inet_ntop(AF_INET6, ep->id.gids[0], buf, sizeof(buf)))
		fprintf(out, "# %s (not set)\n", k->name);
	else
		fprintf(out, "%s = %s\n", k->name, buf);
}

static int too_many(struct parser *p, const struct key_def *k, unsigned max)
{
	char lb[96];

	return cfg_perr(p, "too many '%s' values in %s: at most %u", k->name,
			cfg_sect_label(p, lb, sizeof(lb)), max);
}

static int set_name(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;
	char qb[QUOTE_MAX + 1];
	unsigned i;

	if (!cfg_valid_hostname(val))
		return BAD_VALUE;
	for (i = 0; i < ep->id.n_names; i++)
		if (!strcasecmp(ep->id.names[i], val))
			return cfg_perr(p, "name '%s' given twice in [endpoint %s]",
					cfg_quote(val, qb), ep->label);
	if (ep->id.n_names == IBRES_EP_NAMES_MAX)
		return too_many(p, k, IBRES_EP_NAMES_MAX);
	memset(ep->id.names[ep->id.n_names], 0, sizeof(ep->id.names[0]));
	memcpy(ep->id.names[ep->id.n_names], val, strlen(val));
	ep->id.n_names++;
	return 0;
}

static void print_name(FILE *out, const struct key_def *k, const void *obj)
{
	const struct cfg_endpoint *ep = obj;
	unsigned i;

	if (!ep->id.n_names)
		fprintf(out, "# %s (none)\n", k->name);
	for (i = 0; i < ep->id.n_names; i++)
		fprintf(out, "%s = %s\n", k->name, ep->id.names[i]);
}

static int set_address(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;
	char qb[QUOTE_MAX + 1];
	struct in6_addr v6;
	struct in_addr v4;
	unsigned i;

	switch (cfg_parse_unicast(val, &v4, &v6)) {
	case AF_INET:
		for (i = 0; i < ep->id.n_v4; i++)
			if (ep->id.v4[i].s_addr == v4.s_addr)
				goto dup;
		if (ep->id.n_v4 == IBRES_EP_ADDRS_MAX)
			return too_many(p, k, IBRES_EP_ADDRS_MAX);
		ep->id.v4[ep->id.n_v4++] = v4;
		return 0;
	case AF_INET6:
		for (i = 0; i < ep->id.n_v6; i++)
			if (!memcmp(&ep->id.v6[i], &v6, sizeof(v6)))
				goto dup;
		if (ep->id.n_v6 == IBRES_EP_ADDRS_MAX)
			return too_many(p, k, IBRES_EP_ADDRS_MAX);
		ep->id.v6[ep->id.n_v6++] = v6;
		return 0;
	default:
		return BAD_VALUE;
	}
dup:
	return cfg_perr(p, "address '%s' given twice in [endpoint %s]", cfg_quote(val, qb),
			ep->label);
}

static void print_address(FILE *out, const struct key_def *k, const void *obj)
{
	const struct cfg_endpoint *ep = obj;
	char buf[INET6_ADDRSTRLEN];
	unsigned i;

	if (!ep->id.n_v4 && !ep->id.n_v6)
		fprintf(out, "# %s (none)\n", k->name);
	for (i = 0; i < ep->id.n_v4; i++)
		if (inet_ntop(AF_INET, &ep->id.v4[i], buf, sizeof(buf)))
			fprintf(out, "%s = %s\n", k->name, buf);
	for (i = 0; i < ep->id.n_v6; i++)
		if (inet_ntop(AF_INET6, &ep->id.v6[i], buf, sizeof(buf)))
			fprintf(out, "%s = %s\n", k->name, buf);
}

static int set_mtu(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	uint64_t v;
	int mtu;

	(void)p;
	if (cfg_parse_uint(val, &v) || v > UINT32_MAX)
		return BAD_VALUE;
	mtu = ib_mtu_from_bytes((unsigned)v);
	if (mtu < 0)
		return BAD_VALUE;
	*((uint8_t *)obj + k->off) = (uint8_t)mtu;
	return 0;
}

static void print_mtu(FILE *out, const struct key_def *k, const void *obj)
{
	fprintf(out, "%s = %u\n", k->name, ib_mtu_to_bytes(*((const uint8_t *)obj + k->off)));
}

static int set_rate(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	int rate = ib_rate_from_gbps(val);

	(void)p;
	if (rate < 0)
		return BAD_VALUE;
	*((uint8_t *)obj + k->off) = (uint8_t)rate;
	return 0;
}

static void print_rate(FILE *out, const struct key_def *k, const void *obj)
{
	fprintf(out, "%s = %s\n", k->name, ib_rate_to_gbps(*((const uint8_t *)obj + k->off)));
}

static int set_guid(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	const char *s = val;
	uint64_t v;

	(void)p;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (cfg_parse_digits(&s, 16, &v) || *s)
		return BAD_VALUE;
	cfg_store_uint((uint8_t *)obj + k->off, k->size, v);
	return 0;
}

static void print_guid(FILE *out, const struct key_def *k, const void *obj)
{
	fprintf(out, "%s = 0x%016llx\n", k->name,
		(unsigned long long)cfg_load_uint((const uint8_t *)obj + k->off, k->size));
}

static bool is_mcast(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr));
	return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

static bool parse_group_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	else
		return false;
	return is_mcast(ss);
}

static int set_group(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;
	struct cfg_group g;
	bool have_mtu = false, have_rate = false;
	char qb[QUOTE_MAX + 1], copy[CFG_LINE_MAX + 1];
	char *s = copy, *tok;
	unsigned i;
	uint64_t v;
	int ret;

	/* memset, not an initializer: padding too must compare equal */
	memset(&g, 0, sizeof(g));
	g.mtu = DEFAULT_MTU;
	g.rate = DEFAULT_RATE;
	/* tokens are cut out of a copy: messages show the whole value */
	snprintf(copy, sizeof(copy), "%s", val);
	tok = cfg_next_token(&s);
	if (!tok || !parse_group_addr(tok, &g.addr))
		return BAD_VALUE;
	while ((tok = cfg_next_token(&s))) {
		if (!strncmp(tok, "mtu=", 4) && !have_mtu) {
			if (cfg_parse_uint(tok + 4, &v) || v > UINT32_MAX)
				return BAD_VALUE;
			ret = ib_mtu_from_bytes((unsigned)v);
			if (ret < 0)
				return BAD_VALUE;
			g.mtu = (uint8_t)ret;
			have_mtu = true;
		} else if (!strncmp(tok, "rate=", 5) && !have_rate) {
			ret = ib_rate_from_gbps(tok + 5);
			if (ret < 0)
				return BAD_VALUE;
			g.rate = (uint8_t)ret;
			have_rate = true;
		} else {
			return BAD_VALUE;
		}
	}
	for (i = 0; i < ep->n_groups; i++)
		if (same_addr(&ep->groups[i].addr, &g.addr))
			return cfg_perr(p, "group '%s' given twice in [endpoint %s]",
					cfg_quote(val, qb), ep->label);
	if (ep->n_groups == CFG_MAX_GROUPS)
		return too_many(p, k, CFG_MAX_GROUPS);
	memcpy(&ep->groups[ep->n_groups++], &g, sizeof(g));
	return 0;
}

static void print_group(FILE *out, const struct key_def *k, const void *obj)
{
	const struct cfg_endpoint *ep = obj;
	char buf[INET6_ADDRSTRLEN];
	const void *a;
	unsigned i;

	if (!ep->n_groups)
		fprintf(out, "# %s (none)\n", k->name);
	for (i = 0; i < ep->n_groups; i++) {
		const struct cfg_group *g = &ep->groups[i];

		if (g->addr.ss_family == AF_INET)
			a = &((const struct sockaddr_in *)&g->addr)->sin_addr;
		else
			a = &((const struct sockaddr_in6 *)&g->addr)->sin6_addr;
		if (!inet_ntop(g->addr.ss_family, a, buf, sizeof(buf)))
			continue;
		fprintf(out, "%s = %s mtu=%u rate=%s\n", k->name, buf, ib_mtu_to_bytes(g->mtu),
			ib_rate_to_gbps(g->rate));
	}
}

static int set_patterns(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct ibres_config *cfg = obj;
	char *s = val, *tok;

	(void)k;
	while ((tok = cfg_next_token(&s))) {
		char qb[QUOTE_MAX + 1];
		size_t n = strlen(tok);

		if (n >= CFG_PATTERN_MAX)
			return cfg_perr(p, "name_pattern '%s' too long: at most %u characters",
					cfg_quote(tok, qb), CFG_PATTERN_MAX - 1);
		if (cfg->n_patterns == CFG_MAX_PATTERNS)
			return cfg_perr(p, "too many name patterns: at most %u", CFG_MAX_PATTERNS);
		memset(cfg->patterns[cfg->n_patterns], 0, CFG_PATTERN_MAX);
		memcpy(cfg->patterns[cfg->n_patterns], tok, n);
		cfg->n_patterns++;
	}
	return 0;
}

static void print_patterns(FILE *out, const struct key_def *k, const void *obj)
{
	const struct ibres_config *cfg = obj;
	unsigned i;

	if (!cfg->n_patterns)
		fprintf(out, "# %s (none: every name is a cluster name)\n", k->name);
	for (i = 0; i < cfg->n_patterns; i++)
		fprintf(out, "%s = %s\n", k->name, cfg->patterns[i]);
}

/* auto or none. It was once a file's path: it is a memfd passed over the
 * socket now, and a path is refused with the reason rather than ignored. */
static int set_host_directory(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct ibres_config *cfg = obj;
	char qb[QUOTE_MAX + 1];

	(void)k;
	if (!strcasecmp(val, "none") || !strcasecmp(val, "no") || !strcasecmp(val, "off")) {
		cfg->host_directory[0] = '\0';
		return 0;
	}
	if (!strcasecmp(val, "auto") || !strcasecmp(val, "yes") || !strcasecmp(val, "on")) {
		snprintf(cfg->host_directory, sizeof(cfg->host_directory), "auto");
		return 0;
	}
	if (val[0] == '/')
		return cfg_perr(p, "host_directory '%s': the directory is no longer a file (readers "
				"get it over the socket); use 'auto' or 'none'", cfg_quote(val, qb));
	return cfg_perr(p, "host_directory '%s': 'auto' or 'none'", cfg_quote(val, qb));
}

static void print_host_directory(FILE *out, const struct key_def *k, const void *obj)
{
	const struct ibres_config *cfg = obj;

	fprintf(out, "%s = %s\n", k->name, cfg->host_directory[0] ? cfg->host_directory : "none");
}

static void print_lid(FILE *out, const struct key_def *k, const void *obj)
{
	const struct cfg_endpoint *ep = obj;

	if (!ep->id.lid)
		fprintf(out, "# %s (not set)\n", k->name);
	else
		fprintf(out, "%s = %u\n", k->name, ep->id.lid);
}

/* ---- the tables ----------------------------------------------------- */

#define FIELD(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define D(f) FIELD(struct ibres_config, f)
#define E(f) FIELD(struct cfg_endpoint, f)

static const struct enum_val log_levels[] = {
	{ "error", LOG_LVL_ERR }, { "warning", LOG_LVL_WARN }, { "info", LOG_LVL_INFO },
	{ "debug", LOG_LVL_DEBUG }, { NULL, 0 },
};

static const struct enum_val route_prots[] = {
	{ "mcast", ROUTE_PROT_MCAST }, { "sa", ROUTE_PROT_SA }, { NULL, 0 },
};

static const struct enum_val transports[] = {
	{ "none", TRANSPORT_NONE }, { "ip", TRANSPORT_IP }, { "ib", TRANSPORT_IB }, { NULL, 0 },
};

static const struct key_def daemon_keys[] = {
	{ .name = "socket", .type = KT_PATH, D(socket_path) },
	{ .name = "acm_socket", .type = KT_PATH, .flags = KF_NONE, D(acm_socket_path) },
	{ .name = "acm_link", .type = KT_BOOL, D(acm_link) },
	{ .name = "acm_af_ib", .type = KT_BOOL, D(acm_af_ib) },
	{ .name = "log_level", .type = KT_ENUM, D(log_level), .enums = log_levels },
	{ .name = "max_clients", .type = KT_INT, D(max_clients), .min = 1, .max = 65536 },
	{ .name = "max_clients_per_uid", .type = KT_INT, D(max_clients_per_uid), .min = 0,
	  .max = 65536 },
	{ .name = "client_timeout", .type = KT_DURATION, D(client_timeout_ms), .min = 100,
	  .max = MS_PER_H, .unit_ms = MS_PER_S, .store_ms = 1 },
	{ .name = "user", .type = KT_STRING, .flags = KF_NONE, D(user) },
	{ .name = "host_directory", .type = KT_CUSTOM,
	  .expect = "'auto' (hosts.db beside the socket), 'none', or an absolute path",
	  .set = set_host_directory, .print = print_host_directory },
};

static const struct key_def resolve_keys[] = {
	{ .name = "timeout", .type = KT_DURATION, D(timeout_ms), .min = 10, .max = 60 * MS_PER_S,
	  .unit_ms = 1, .store_ms = 1 },
	{ .name = "retries", .type = KT_INT, D(retries), .min = 0, .max = 10 },
	{ .name = "addr_ttl", .type = KT_DURATION, D(addr_ttl_s), .min = MS_PER_S,
	  .max = 30 * MS_PER_D, .unit_ms = MS_PER_S, .store_ms = MS_PER_S },
	{ .name = "route_ttl", .type = KT_DURATION, D(route_ttl_s), .min = MS_PER_S,
	  .max = 30 * MS_PER_D, .unit_ms = MS_PER_S, .store_ms = MS_PER_S },
	{ .name = "negative_ttl", .type = KT_DURATION, D(negative_ttl_s), .min = 0,
	  .max = MS_PER_D, .unit_ms = MS_PER_S, .store_ms = MS_PER_S },
	{ .name = "cache_size", .type = KT_INT, D(cache_size), .min = 16, .max = 4194304 },
	{ .name = "route_prot", .type = KT_ENUM, D(route_prot), .enums = route_prots },
	{ .name = "hosts_file", .type = KT_PATH, .flags = KF_NONE, D(hosts_file) },
	{ .name = "name_pattern", .type = KT_CUSTOM, .flags = KF_REPEAT,
	  .expect = "one or more fnmatch(3) patterns separated by spaces",
	  .set = set_patterns, .print = print_patterns },
	{ .name = "settle_time", .type = KT_DURATION, D(settle_ms), .min = 0,
	  .max = 10 * MS_PER_M, .unit_ms = MS_PER_S, .store_ms = 1 },
	{ .name = "announce_interval", .type = KT_DURATION, .flags = KF_ZERO_OK,
	  D(announce_interval_s), .min = MS_PER_S, .max = MS_PER_D, .unit_ms = MS_PER_S,
	  .store_ms = MS_PER_S },
	{ .name = "goodbye_repeats", .type = KT_INT, D(goodbye_repeats), .min = 0, .max = 8 },
	{ .name = "cluster_key_file", .type = KT_PATH, .flags = KF_NONE, D(cluster_key_file) },
	{ .name = "sa_window", .type = KT_INT, D(sa_window), .min = 1, .max = 64 },
	{ .name = "port_poll_interval", .type = KT_DURATION, .flags = KF_ZERO_OK, D(port_poll_ms),
	  .min = 100, .max = MS_PER_H, .unit_ms = MS_PER_S, .store_ms = 1 },
	{ .name = "kernel_paths", .type = KT_BOOL, D(kernel_paths) },
	{ .name = "kernel_path_timeout", .type = KT_DURATION, D(kernel_path_timeout_ms), .min = 100,
	  .max = 60 * MS_PER_S, .unit_ms = 1, .store_ms = 1 },
};

static const struct key_def endpoint_keys[] = {
	{ .name = "gid", .type = KT_CUSTOM, .expect = "a GID in IPv6 notation, not ::",
	  .set = set_gid, .print = print_gid },
	{ .name = "lid", .type = KT_INT, E(id.lid), .min = 1, .max = 0xbfff, .print = print_lid },
	{ .name = "pkey", .type = KT_INT, .flags = KF_HEX, E(id.pkey), .min = 0, .max = 0xffff },
	{ .name = "qpn", .type = KT_INT, E(id.qpn), .min = 1, .max = 0xffffff },
	{ .name = "mtu", .type = KT_CUSTOM, E(mtu), .expect = MTUS_TEXT, .set = set_mtu,
	  .print = print_mtu },
	{ .name = "rate", .type = KT_CUSTOM, E(rate), .expect = RATES_TEXT, .set = set_rate,
	  .print = print_rate },
	{ .name = "sl", .type = KT_INT, E(sl), .min = 0, .max = 15 },
	{ .name = "packet_life", .type = KT_INT, E(packet_life), .min = 0, .max = 63 },
	{ .name = "name", .type = KT_CUSTOM, .flags = KF_REPEAT,
	  .expect = "a host name: dot-separated labels of 1..63 letters, digits and hyphens, "
		    "at most 255 characters, not all digits",
	  .set = set_name, .print = print_name },
	{ .name = "address", .type = KT_CUSTOM, .flags = KF_REPEAT,
	  .expect = "an IPv4 or IPv6 unicast address", .set = set_address,
	  .print = print_address },
	{ .name = "dev_guid", .type = KT_CUSTOM, E(dev_guid),
	  .expect = "a 64-bit hexadecimal GUID such as 0x0002c90300000001", .set = set_guid,
	  .print = print_guid },
	{ .name = "port_num", .type = KT_INT, E(port_num), .min = 1, .max = 254 },
	{ .name = "device", .type = KT_STRING, E(device) },
	{ .name = "pkey_index", .type = KT_INT, E(pkey_index), .min = 0, .max = 127 },
	{ .name = "recv_depth", .type = KT_INT, E(recv_depth), .min = CFG_RECV_DEPTH_MIN,
	  .max = CFG_RECV_DEPTH_MAX },
	{ .name = "transport", .type = KT_ENUM, E(transport), .enums = transports },
	{ .name = "interface", .type = KT_STRING, E(interface) },
	{ .name = "udp_port", .type = KT_INT, E(udp_port), .min = 1, .max = 65535 },
	{ .name = "group", .type = KT_CUSTOM, .flags = KF_REPEAT,
	  .expect = "'ADDRESS [mtu=BYTES] [rate=GBPS]' with an IPv4 or IPv6 multicast ADDRESS, "
		    "BYTES one of " MTUS_TEXT ", GBPS one of " RATES_TEXT,
	  .set = set_group, .print = print_group },
};

#undef D
#undef E

#define NKEYS(t) (unsigned)(sizeof(t) / sizeof((t)[0]))

_Static_assert(NKEYS(daemon_keys) <= KEYS_MAX, "daemon keys");
_Static_assert(NKEYS(resolve_keys) <= KEYS_MAX, "resolve keys");
_Static_assert(NKEYS(endpoint_keys) <= KEYS_MAX, "endpoint keys");

static const struct section_def sections[] = {
	[SECT_DAEMON] = { "daemon", daemon_keys, NKEYS(daemon_keys) },
	[SECT_RESOLVE] = { "resolve", resolve_keys, NKEYS(resolve_keys) },
	[SECT_ENDPOINT] = { "endpoint", endpoint_keys, NKEYS(endpoint_keys) },
};

/* ---- defaults and entry points ------------------------------------------ */

static void endpoint_defaults(struct cfg_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->id.qpn = 1;
	ep->id.pkey = 0xffff;
	ep->mtu = DEFAULT_MTU;
	ep->rate = DEFAULT_RATE;
	ep->sl = 0;
	ep->packet_life = DEFAULT_PKT_LIFE;
	ep->port_num = 1;
	ep->transport = TRANSPORT_NONE;
	ep->udp_port = DEFAULT_UDP_PORT;
	ep->recv_depth = CFG_RECV_DEPTH_DEFAULT;
}

static const struct cfg_schema schema = {
	.sections = sections,
	.endpoint_defaults = endpoint_defaults,
};

void config_defaults(struct ibres_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->socket_path, IBRES_DEFAULT_SOCKET, sizeof(IBRES_DEFAULT_SOCKET));
	strcpy(cfg->host_directory, "auto");
	cfg->acm_link = false;
	cfg->acm_af_ib = false;
	cfg->log_level = LOG_LVL_INFO;
	cfg->max_clients = 1024;
	cfg->client_timeout_ms = 10 * MS_PER_S;
	cfg->timeout_ms = 1000;
	cfg->retries = 3;
	cfg->addr_ttl_s = 3600;
	cfg->route_ttl_s = 3600;
	cfg->negative_ttl_s = 10;
	cfg->cache_size = 65536;
	cfg->route_prot = ROUTE_PROT_MCAST;
	cfg->settle_ms = 3 * MS_PER_S;
	cfg->announce_interval_s = 60;
	cfg->goodbye_repeats = 2;
	cfg->sa_window = 4;
	cfg->port_poll_ms = 2 * MS_PER_S;
	cfg->kernel_paths = true;
	cfg->kernel_path_timeout_ms = MS_PER_S;
}

int config_parse(const char *name, const char *text, size_t len, struct ibres_config *cfg,
		 char *err, size_t errlen)
{
	config_defaults(cfg);
	snprintf(cfg->source, sizeof(cfg->source), "%s", name ? name : "");
	return cfg_parse_text(&schema, name, text, len, cfg, err, errlen);
}

int config_load(const char *path, struct ibres_config *cfg, char *err, size_t errlen)
{
	size_t len;
	char *text;
	int ret;

	ret = cfg_read_file(path, CFG_FILE_MAX, &text, &len, err, errlen);
	if (ret) {
		config_defaults(cfg);
		return ret;
	}
	ret = config_parse(path, text, len, cfg, err, errlen);
	free(text);
	return ret;
}

void config_print(const struct ibres_config *cfg, FILE *out)
{
	unsigned i;

	fprintf(out, "# ibresd effective configuration\n\n[daemon]\n");
	cfg_print_section(out, &sections[SECT_DAEMON], cfg);
	fprintf(out, "\n[resolve]\n");
	cfg_print_section(out, &sections[SECT_RESOLVE], cfg);
	for (i = 0; i < cfg->n_eps && i < CFG_MAX_ENDPOINTS; i++) {
		fprintf(out, "\n[endpoint %.63s]\n", cfg->eps[i].label);
		cfg_print_section(out, &sections[SECT_ENDPOINT], &cfg->eps[i]);
	}
}
