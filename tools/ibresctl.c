// SPDX-License-Identifier: MIT
/*
 * ibresctl: command-line client of ibresd. See ibresctl(1).
 * Exit status: 0 success, 1 negative answer (not found, refused...), 2 usage
 * error, 3 daemon unreachable or protocol error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confgen.h"
#include "ibacm_import.h"
#include "conn.h"
#include "hostrec.h"
#include "ibenum.h"
#include "ibres.h"
#include "json.h"
#include "metrics.h"
#include "show.h"
#include "tlv.h"

#ifndef IBRES_VERSION
#define IBRES_VERSION "unknown"
#endif

#include "ctl.h"


static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ibresctl [OPTIONS] COMMAND [ARGS]\n"
		"Query and control ibresd, the InfiniBand name service daemon (nss-ib).\n"
		"\n"
		"Commands:\n"
		"  resolve [SRC] DST    path records from SRC (default: chosen by the daemon)\n"
		"                       to DST; SRC/DST: name, IPv4, IPv6 or gid:GID\n"
		"  host KEY             the host record of a name, IPv4, IPv6 address or GID\n"
		"  endpoints            this node's endpoints\n"
		"  cache list           every cache entry\n"
		"  cache flush [KEY]    drop one host (KEY) or every learned entry (root)\n"
		"  stats                the daemon's counters and gauges\n"
		"  config check FILE    check an ibresd.conf(5) file with ibresd --check-config\n"
		"  config generate [--device DEV] [--name NAME] [SYSFS_DIR]\n"
		"                       print a config for this node from its IPoIB interfaces\n"
		"                       and RoCE ports (sysfs under SYSFS_DIR, default /sys):\n"
		"                       only device DEV's; every endpoint named NAME (default:\n"
		"                       the host name), each rail also NAME-INTERFACE\n"
		"  config import-ibacm [DIR [SYSFS_DIR]]\n"
		"                       print a config from ibacm's files in DIR (default\n"
		"                       /etc/rdma); --hosts-out FILE writes its hosts file\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH    daemon socket (default $" IBRES_SOCKET_ENV
		" or " IBRES_DEFAULT_SOCKET ")\n"
		"  -t, --timeout MS     bound on each request (default $" IBRES_TIMEOUT_ENV
		" or 10000)\n"
		"  -j, --json           JSON output (the same as --format json)\n"
		"  -f, --format FORMAT  text (default), json, or prometheus (stats only:\n"
		"                       the Prometheus text format, for node_exporter)\n"
		"      --hosts-out FILE config import-ibacm: write ibacm's preloaded hosts here\n"
		"      --cache-only     host: answer from the daemon's cache, never the fabric\n"
		"      --nodelay        resolve: do not wait for the fabric (answer if cached)\n"
		"  -h, --help           this help\n"
		"  -V, --version        the version\n"
		"\n"
		"An IPv6 literal is looked up as an address and then as a GID; write\n"
		"gid:fe80::2:c903:0:1 for a GID only.\n"
		"Exit status: 0 success, 1 negative answer (not found, permission denied...),\n"
		"2 usage error, 3 daemon unreachable or protocol error. See ibresctl(1).\n");
}

int ctl_usage_error(const char *fmt, const char *arg)
{
	fputs("ibresctl: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'ibresctl --help'.\n", stderr);
	return EXIT_USAGE;
}

static const char *status_text(int status)
{
	switch (status) {
	case IBRES_STATUS_ENOMEM:
		return "the daemon is out of memory";
	case IBRES_STATUS_EINVAL:
		return "invalid request";
	case IBRES_STATUS_ENODATA:
		return "not found";
	case IBRES_STATUS_ENOTCONN:
		return "the daemon is not connected to the fabric";
	case IBRES_STATUS_ETIMEDOUT:
		return "the fabric did not answer in time";
	case IBRES_STATUS_ESRCADDR:
		return "unknown source address";
	case IBRES_STATUS_ESRCTYPE:
		return "unsupported source address type";
	case IBRES_STATUS_EDESTADDR:
		return "unknown destination address";
	case IBRES_STATUS_EDESTTYPE:
		return "unsupported destination address type";
	case IBRES_STATUS_EPERM:
		return "permission denied (needs root)";
	case IBRES_STATUS_EAGAIN:
		return "the daemon is busy, try again";
	default:
		return "unknown status";
	}
}

/* Report a failed request: exit 1 for an answer, 3 for no (usable) answer. */
int ctl_failed(struct ctl *c, const char *what, int err, int status)
{
	if (status > 0) {
		fprintf(stderr, "ibresctl: %s: %s\n", what, status_text(status));
		if (c->json) {
			json_obj_begin(&c->j, NULL);
			json_str(&c->j, "error", status_text(status));
			json_u64(&c->j, "status", (uint64_t)status);
			json_obj_end(&c->j);
			json_end(&c->j);
		}
		return EXIT_NEGATIVE;
	}
	if (err == -EBADMSG || err == -EPROTO || err == -EMSGSIZE)
		fprintf(stderr, "ibresctl: %s: malformed answer from ibresd at %s\n", what,
			c->socket);
	else
		fprintf(stderr, "ibresctl: %s: cannot reach ibresd at %s: %s\n", what, c->socket,
			strerror(-err));
	return EXIT_UNREACHABLE;
}

int ctl_parse_key(const char *arg, struct key *k)
{
	memset(k, 0, sizeof(*k));
	if (!strncmp(arg, "gid:", 4)) {
		k->type = IBRES_T_GID;
		k->len = 16;
		return inet_pton(AF_INET6, arg + 4, k->data) == 1 ? 0 : -EINVAL;
	}
	if (inet_pton(AF_INET, arg, k->data) == 1) {
		k->type = IBRES_T_IPV4;
		k->len = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, arg, k->data) == 1) {
		k->type = IBRES_T_IPV6;
		k->len = 16;
		k->maybe_gid = true;
		return 0;
	}
	k->len = strlen(arg);
	if (!k->len || k->len > IBRES_NAME_MAX)
		return -EINVAL;
	k->type = IBRES_T_NAME;
	memcpy(k->data, arg, k->len);
	return 0;
}

/* An extension request whose body is at most one key item and one u32 item. */
int ctl_ext_call(struct ctl *c, uint8_t op, const struct key *k, uint16_t u32_type, uint32_t u32,
		    uint8_t *status, const uint8_t **body, size_t *len)
{
	uint8_t req[4 + IBRES_NAME_MAX + 8];
	struct tlv_writer w;

	tlv_writer_init(&w, req, sizeof(req));
	if (k)
		tlv_put(&w, k->type, k->data, k->len);
	if (u32_type)
		tlv_put_u32(&w, u32_type, u32);
	return ibc_ext(c->h, op, req, w.len, c->ans, sizeof(c->ans), status, body, len);
}

/* ---- host --------------------------------------------------------------- */

static int cmd_host(struct ctl *c, int argc, char **argv)
{
	struct ibres_hostrec rec;
	struct key k;
	int ret, status;

	if (argc != 1)
		return ctl_usage_error("%s", "usage: host NAME|ADDRESS|GID");
	if (ctl_parse_key(argv[0], &k))
		return ctl_usage_error("not a host name, address or GID: '%s'", argv[0]);
	ret = ibc_host_query(c->h, k.type, k.data, k.len, c->cache_only ? IBRES_HOST_CACHE_ONLY : 0,
			     &rec, &status);
	if (ret && status == IBRES_STATUS_ENODATA && k.maybe_gid)
		ret = ibc_host_query(c->h, IBRES_T_GID, k.data, k.len,
				     c->cache_only ? IBRES_HOST_CACHE_ONLY : 0, &rec, &status);
	if (ret)
		return ctl_failed(c, argv[0], ret, status);
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		show_host_json(&c->j, &rec);
		json_obj_end(&c->j);
		json_end(&c->j);
	} else {
		show_host_text(stdout, &rec, "  ");
	}
	return 0;
}

/* ---- resolve ------------------------------------------------------------ */

/* Add @k as a SOURCE/DEST entry, or its GID to the PATH entry @path. */
static void key_entry(const struct key *k, bool gid, uint32_t flags, struct ibres_ep_entry *ents,
		      int *n, struct ibres_ep_entry *path, bool is_src)
{
	struct ibres_ep_entry *e = &ents[*n];

	if (gid || k->type == IBRES_T_GID) {
		memcpy(is_src ? path->info.path.sgid : path->info.path.dgid, k->data, 16);
		path->type = IBRES_EP_TYPE_PATH;
		return;
	}
	memset(e, 0, sizeof(*e));
	e->flags = flags;
	e->type = k->type == IBRES_T_NAME   ? IBRES_EP_TYPE_NAME
		  : k->type == IBRES_T_IPV4 ? IBRES_EP_TYPE_IP
					    : IBRES_EP_TYPE_IP6;
	memcpy(e->info.addr, k->data, k->len);
	(*n)++;
}

static int resolve_once(struct ctl *c, const struct key *src, const struct key *dst, bool as_gid,
			struct ibc_route *rt, int *status)
{
	struct ibres_ep_entry ents[3], path;
	int n = 0;

	memset(&path, 0, sizeof(path));
	path.info.path.reversible_numpath = 0x81;
	if (src)
		key_entry(src, as_gid && src->maybe_gid, IBRES_EP_FLAG_SOURCE, ents, &n, &path,
			  true);
	key_entry(dst, as_gid && dst->maybe_gid,
		  IBRES_EP_FLAG_DEST | (c->nodelay ? IBRES_FLAG_NODELAY : 0), ents, &n, &path,
		  false);
	if (path.type == IBRES_EP_TYPE_PATH)
		ents[n++] = path;
	return ibc_resolve(c->h, ents, (size_t)n, rt, status);
}

static void source_text(const struct ibres_ep_entry *e, char *buf, size_t len)
{
	switch (e->type) {
	case IBRES_EP_TYPE_IP:
		inet_ntop(AF_INET, e->info.addr, buf, (socklen_t)len);
		break;
	case IBRES_EP_TYPE_IP6:
		inet_ntop(AF_INET6, e->info.addr, buf, (socklen_t)len);
		break;
	case IBRES_EP_TYPE_NAME:
		snprintf(buf, len, "%.*s", IBRES_ADDR_MAX, e->info.name);
		break;
	default:
		snprintf(buf, len, "(type %u)", e->type);
	}
}

static int cmd_resolve(struct ctl *c, int argc, char **argv)
{
	struct key src, dst;
	struct ibc_route rt;
	char b[IBRES_ADDR_MAX + 1];
	int i, ret, status;

	if (argc < 1 || argc > 2)
		return ctl_usage_error("%s", "usage: resolve [SRC] DST");
	for (i = 0; i < argc; i++) {
		struct key *k = i == argc - 1 ? &dst : &src;

		if (ctl_parse_key(argv[i], k) || (k->type == IBRES_T_NAME && k->len >= IBRES_ADDR_MAX))
			return ctl_usage_error("not a name (at most 63 bytes), address or GID: '%s'",
					   argv[i]);
	}
	ret = resolve_once(c, argc == 2 ? &src : NULL, &dst, false, &rt, &status);
	if (ret &&
	    (status == IBRES_STATUS_ENODATA || status == IBRES_STATUS_EDESTADDR ||
	     status == IBRES_STATUS_ESRCADDR) &&
	    (dst.maybe_gid || (argc == 2 && src.maybe_gid)))
		ret = resolve_once(c, argc == 2 ? &src : NULL, &dst, true, &rt, &status);
	if (ret)
		return ctl_failed(c, argv[argc - 1], ret, status);

	if (c->json) {
		json_obj_begin(&c->j, NULL);
		if (rt.has_source) {
			source_text(&rt.source, b, sizeof(b));
			json_str(&c->j, "source", b);
		}
		json_arr_begin(&c->j, "paths");
		for (size_t p = 0; p < rt.n_paths; p++)
			show_path_json(&c->j, NULL, rt.paths[p].flags,
				       (const struct ibres_path_record *)&rt.paths[p].path);
		json_arr_end(&c->j);
		json_obj_end(&c->j);
		json_end(&c->j);
	} else {
		if (rt.has_source) {
			source_text(&rt.source, b, sizeof(b));
			printf("source  %s\n", b);
		}
		for (size_t p = 0; p < rt.n_paths; p++) {
			printf("path %zu of %zu\n", p + 1, rt.n_paths);
			show_path_text(stdout, rt.paths[p].flags,
				       (const struct ibres_path_record *)&rt.paths[p].path, "  ");
		}
	}
	free(rt.paths);
	return 0;
}

/* ---- endpoints ---------------------------------------------------------- */

static int show_endpoint(struct ctl *c, const struct tlv_item *nest)
{
	struct ibres_hostrec rec;
	struct tlv_reader r;
	struct tlv_item it;
	char label[IBRES_NAME_MAX + 1] = "";
	uint8_t mtu = 0, rate = 0, sl = 0, state = 0;
	int ret;

	if (hostrec_decode(nest->value, nest->length, &rec))
		return -EBADMSG;
	tlv_reader_init(&r, nest->value, nest->length);
	while ((ret = tlv_next(&r, &it)) > 0) {
		if (it.type == IBRES_T_LABEL)
			ret = tlv_get_str(&it, label, sizeof(label));
		else if (it.type == IBRES_T_MTU)
			ret = tlv_get_u8(&it, &mtu);
		else if (it.type == IBRES_T_RATE)
			ret = tlv_get_u8(&it, &rate);
		else if (it.type == IBRES_T_SL)
			ret = tlv_get_u8(&it, &sl);
		else if (it.type == IBRES_T_STATE)
			ret = tlv_get_u8(&it, &state);
		if (ret < 0)
			return -EBADMSG;
	}
	if (ret < 0)
		return -EBADMSG;
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_str(&c->j, "label", label);
		show_host_json(&c->j, &rec);
		json_u64(&c->j, "mtu", mtu);
		json_u64(&c->j, "mtu_bytes", ib_mtu_to_bytes(mtu));
		json_u64(&c->j, "rate", rate);
		json_str(&c->j, "rate_gbps", ib_rate_to_gbps(rate));
		json_u64(&c->j, "sl", sl);
		if (state)
			json_str(&c->j, "state", state == IBRES_EP_DOWN ? "down" : "up");
		json_obj_end(&c->j);
	} else {
		printf("endpoint %s: ", label);
		show_host_text(stdout, &rec, "  ");
		printf("  mtu      %u (%u bytes)\n", mtu, ib_mtu_to_bytes(mtu));
		printf("  rate     %u (%s Gb/s)\n", rate, ib_rate_to_gbps(rate));
		printf("  sl       %u\n", sl);
		if (state)
			printf("  state    %s\n", state == IBRES_EP_DOWN ? "down" : "up");
	}
	return 0;
}

static int cmd_endpoints(struct ctl *c, int argc, char **argv)
{
	const uint8_t *body;
	struct tlv_reader r;
	struct tlv_item it;
	size_t len;
	uint8_t status;
	int ret;

	(void)argv;
	if (argc)
		return ctl_usage_error("%s", "usage: endpoints");
	ret = ctl_ext_call(c, IBRES_OP_ENDPOINTS, NULL, 0, 0, &status, &body, &len);
	if (ret || status)
		return ctl_failed(c, "endpoints", ret, ret ? -1 : status);
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_arr_begin(&c->j, "endpoints");
	}
	tlv_reader_init(&r, body, len);
	while ((ret = tlv_next(&r, &it)) > 0) {
		if (it.type != IBRES_T_NEST)
			continue;
		ret = show_endpoint(c, &it);
		if (ret)
			break;
	}
	if (c->json) {
		json_arr_end(&c->j);
		json_obj_end(&c->j);
		json_end(&c->j);
	}
	if (ret < 0)
		return ctl_failed(c, "endpoints", -EBADMSG, -1);
	return 0;
}

/* ---- stats -------------------------------------------------------------- */

static int cmd_stats(struct ctl *c, int argc, char **argv)
{
	char name[IBRES_NAME_MAX + 1] = "";
	const uint8_t *body;
	struct tlv_reader r;
	struct tlv_item it;
	uint64_t v;
	size_t len;
	uint8_t status;
	int ret;

	(void)argv;
	if (argc)
		return ctl_usage_error("%s", "usage: stats");
	ret = ctl_ext_call(c, IBRES_OP_STATS, NULL, 0, 0, &status, &body, &len);
	if (ret || status)
		return ctl_failed(c, "stats", ret, ret ? -1 : status);
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_obj_begin(&c->j, "counters");
	}
	/* a malformed answer prints nothing in Prometheus form: a textfile
	 * collector must not publish half a scrape */
	tlv_reader_init(&r, body, len);
	while (c->prometheus && (ret = tlv_next(&r, &it)) > 0) {
		if (it.type == IBRES_T_NAME)
			ret = tlv_get_str(&it, name, sizeof(name));
		else if (it.type == IBRES_T_COUNTER && (tlv_get_u64(&it, &v) || !name[0]))
			ret = -EBADMSG;
		if (ret < 0)
			return ctl_failed(c, "stats", -EBADMSG, -1);
		if (it.type == IBRES_T_COUNTER)
			name[0] = '\0';
	}
	tlv_reader_init(&r, body, len);
	while ((ret = tlv_next(&r, &it)) > 0) {
		if (it.type == IBRES_T_NAME) {
			ret = tlv_get_str(&it, name, sizeof(name));
		} else if (it.type == IBRES_T_COUNTER) {
			ret = tlv_get_u64(&it, &v);
			if (!ret && !name[0])
				ret = -EBADMSG; /* a counter needs its name first */
			if (!ret && c->prometheus)
				metric_write_prom(stdout, name, v);
			else if (!ret && c->json)
				json_u64(&c->j, name, v);
			else if (!ret)
				printf("%-28s %llu\n", name, (unsigned long long)v);
			name[0] = '\0';
		}
		if (ret < 0)
			break;
	}
	if (c->json) {
		json_obj_end(&c->j);
		json_obj_end(&c->j);
		json_end(&c->j);
	}
	if (ret < 0)
		return ctl_failed(c, "stats", -EBADMSG, -1);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static const struct command {
	const char *name;
	int (*fn)(struct ctl *c, int argc, char **argv);
} commands[] = {
	{"resolve", cmd_resolve}, {"host", cmd_host},	{"endpoints", cmd_endpoints},
	{"cache", cmd_cache},	  {"stats", cmd_stats}, {"config", cmd_config},
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'}, {"timeout", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},	  {"cache-only", no_argument, NULL, 'C'},
		{"nodelay", no_argument, NULL, 'N'},	  {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},	  {"format", required_argument, NULL, 'f'},
		{"hosts-out", required_argument, NULL, 'H'}, {"device", required_argument, NULL, 'D'},
		{"name", required_argument, NULL, 'n'},	  {NULL, 0, NULL, 0},
	};
	static struct ctl c; /* holds a 64 KiB answer buffer */
	const char *socket_path = NULL, *env;
	char *end;
	long v;
	size_t i;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "s:t:jf:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_path = optarg;
			break;
		case 't':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0 || v > INT_MAX)
				return ctl_usage_error("bad --timeout '%s' (milliseconds, > 0)",
						   optarg);
			c.timeout_ms = (int)v;
			break;
		case 'j':
			c.json = true;
			break;
		case 'f':
			c.json = !strcmp(optarg, "json");
			c.prometheus = !strcmp(optarg, "prometheus");
			if (!c.json && !c.prometheus && strcmp(optarg, "text"))
				return ctl_usage_error("bad --format '%s' (text, json or prometheus)",
						   optarg);
			break;
		case 'H':
			c.hosts_out = optarg;
			break;
		case 'C':
			c.cache_only = true;
			break;
		case 'N':
			c.nodelay = true;
			break;
		case 'D':
			c.gen_device = optarg;
			break;
		case 'n':
			c.gen_name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ibresctl (nss-ib) %s\n", IBRES_VERSION);
			return 0;
		default:
			fputs("Try 'ibresctl --help'.\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return ctl_usage_error("%s", "no command given");
	if (c.prometheus && strcmp(argv[optind], "stats"))
		return ctl_usage_error("--format prometheus is for 'stats' only, not '%s'",
				   argv[optind]);
	if ((c.gen_device || c.gen_name) &&
	    (strcmp(argv[optind], "config") || optind + 1 >= argc ||
	     strcmp(argv[optind + 1], "generate")))
		return ctl_usage_error("%s", "--device and --name go with 'config generate' only");
	env = getenv(IBRES_SOCKET_ENV);
	c.socket = socket_path ? socket_path : env && *env ? env : IBRES_DEFAULT_SOCKET;
	ret = ibres_open(&c.h, socket_path, c.timeout_ms);
	if (ret == -EINVAL)
		return ctl_usage_error("socket path too long: '%s'", socket_path);
	if (ret)
		return ctl_failed(&c, "ibresctl", ret, -1);
	/* an admin asks the daemon itself, never its published directory */
	ibc_dir_disable(c.h);
	c.timeout_ms = ibc_timeout_ms(c.h);
	json_init(&c.j, stdout);

	ret = -1;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[optind], commands[i].name)) {
			ret = commands[i].fn(&c, argc - optind - 1, argv + optind + 1);
			break;
		}
	}
	if (ret < 0)
		ret = ctl_usage_error("unknown command '%s'", argv[optind]);
	ibres_close(c.h);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "ibresctl: write error: %s\n", strerror(errno));
		return ret ? ret : EXIT_UNREACHABLE;
	}
	return ret;
}
