// SPDX-License-Identifier: MIT
/* Unit tests of resolverd/core/config_*.c: ibresd.conf(5) parsed, validated and
 * printed. The static hosts file is test_hosts_file.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "frontend/request.h"
#include "ibenum.h"
#include "ibres.h"

/* Large: keep them off the stack. */
static struct ibres_config cfg, cfg2;
static char err[CFG_ERR_MAX];

/* An endpoint section that passes config_validate. */
#define EP_OK "[endpoint ib0]\nname = node1\ngid = fe80::1\nlid = 1\n"

static int parse(const char *text)
{
	return config_parse("t.conf", text, strlen(text), &cfg, err, sizeof(err));
}

static int validate(const char *text)
{
	int ret = parse(text);

	if (ret) {
		print_message("unexpected parse error: %s\n", err);
		return ret;
	}
	return config_validate(&cfg, err, sizeof(err));
}

/* Parse must fail with -EINVAL and @want somewhere in the message. */
static void expect_error(const char *text, const char *want)
{
	int ret = parse(text);

	if (ret != -EINVAL || !strstr(err, want))
		fail_msg("input:\n%s\nret %d, error \"%s\", wanted \"%s\"", text, ret, err, want);
}

static void expect_invalid(const char *want, const char *text)
{
	int ret = validate(text);

	if (ret != -EINVAL || !strstr(err, want))
		fail_msg("input:\n%s\nret %d, error \"%s\", wanted \"%s\"", text, ret, err, want);
}

static void expect_ok(const char *text)
{
	int ret = parse(text);

	if (ret)
		fail_msg("input:\n%s\nret %d, error \"%s\"", text, ret, err);
	assert_string_equal(err, "");
}

/* Build "[section]\nkey = value\n" and parse it. */
static int parse_kv(const char *section, const char *key, const char *value)
{
	static char text[4096];

	snprintf(text, sizeof(text), "%s\n%s = %s\n", section, key, value);
	return parse(text);
}

static void gid_of(const char *s, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

/* ---- defaults ----------------------------------------------------------- */

static void test_defaults(void **state)
{
	(void)state;
	memset(&cfg, 0x5a, sizeof(cfg));
	config_defaults(&cfg);
	assert_string_equal(cfg.socket_path, IBRES_DEFAULT_SOCKET);
	assert_string_equal(cfg.acm_socket_path, "");
	assert_false(cfg.acm_link);
	assert_false(cfg.acm_af_ib); /* rdma_getaddrinfo: no AF_IB entry (nss-ib(8)) */
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
	assert_int_equal(cfg.max_clients, 1024);
	assert_int_equal(cfg.max_clients_per_uid, 0); /* a quarter of max_clients */
	assert_int_equal(cfg.client_timeout_ms, 10000);
	assert_int_equal(cfg.timeout_ms, 1000);
	assert_int_equal(cfg.retries, 3);
	assert_int_equal(cfg.addr_ttl_s, 3600);
	assert_int_equal(cfg.route_ttl_s, 3600);
	assert_int_equal(cfg.negative_ttl_s, 10);
	assert_int_equal(cfg.cache_size, 65536);
	assert_int_equal(cfg.route_prot, ROUTE_PROT_MCAST);
	assert_string_equal(cfg.hosts_file, "");
	assert_int_equal(cfg.n_patterns, 0);
	assert_int_equal(cfg.settle_ms, 3000);
	assert_int_equal(cfg.announce_interval_s, 60);
	assert_int_equal(cfg.goodbye_repeats, 2);
	assert_string_equal(cfg.cluster_key_file, "");
	assert_int_equal(cfg.n_eps, 0);

	/* an empty file, comments and blank lines: defaults */
	expect_ok("");
	assert_string_equal(cfg.socket_path, IBRES_DEFAULT_SOCKET);
	expect_ok("# nothing\n\n   \n\t# indented comment\n");
	assert_int_equal(cfg.timeout_ms, 1000);
	/* defaults survive a parse with empty sections */
	expect_ok("[daemon]\n[resolve]\n");
	assert_int_equal(cfg.max_clients, 1024);
}

static void test_endpoint_defaults(void **state)
{
	const struct cfg_endpoint *ep = &cfg.eps[0];
	uint8_t gid[16];

	(void)state;
	expect_ok(EP_OK);
	assert_int_equal(cfg.n_eps, 1);
	assert_string_equal(ep->label, "ib0");
	assert_int_equal(ep->id.n_names, 1);
	assert_string_equal(ep->id.names[0], "node1");
	assert_int_equal(ep->id.n_gids, 1);
	gid_of("fe80::1", gid);
	assert_memory_equal(ep->id.gids[0], gid, 16);
	assert_int_equal(ep->id.lid, 1);
	assert_int_equal(ep->id.pkey, 0xffff);
	assert_int_equal(ep->id.qpn, 1);
	assert_int_equal(ep->mtu, 4);
	assert_int_equal(ep->rate, 3);
	assert_int_equal(ep->sl, 0);
	assert_int_equal(ep->packet_life, 18);
	assert_int_equal(ep->dev_guid, 0);
	assert_int_equal(ep->port_num, 1);
	assert_string_equal(ep->device, "");
	assert_int_equal(ep->transport, TRANSPORT_NONE);
	assert_string_equal(ep->interface, "");
	assert_int_equal(ep->udp_port, 4790);
	assert_int_equal(ep->recv_depth, CFG_RECV_DEPTH_DEFAULT);
	assert_int_equal(ep->recv_depth, 16384);
	assert_int_equal(ep->n_groups, 0);
	assert_int_equal(ep->id.n_v4, 0);
	assert_int_equal(ep->id.n_v6, 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
}

/* ---- [daemon] ----------------------------------------------------------- */

static void test_daemon_keys(void **state)
{
	char text[512];
	char longp[CFG_SOCKET_MAX + 2];

	(void)state;
	expect_ok("[daemon]\nsocket = /tmp/x.sock\nacm_socket = /run/ibacm-unix.sock\n"
		  "acm_link = yes\nacm_af_ib = yes\nlog_level = debug\nmax_clients = 7\n"
		  "client_timeout = 2m\n");
	assert_string_equal(cfg.socket_path, "/tmp/x.sock");
	assert_string_equal(cfg.acm_socket_path, "/run/ibacm-unix.sock");
	assert_true(cfg.acm_link);
	assert_true(cfg.acm_af_ib);
	assert_int_equal(cfg.log_level, LOG_LVL_DEBUG);
	assert_int_equal(cfg.max_clients, 7);
	assert_int_equal(cfg.client_timeout_ms, 120000);

	/* no space around '=', trailing comment, CRLF */
	expect_ok("[daemon]\r\nsocket=/a/b # the socket\r\nacm_socket=none\r\n");
	assert_string_equal(cfg.socket_path, "/a/b");
	assert_string_equal(cfg.acm_socket_path, "");

	/* user: a name, or none (the default: stay as started) */
	assert_string_equal(cfg.user, "");
	assert_int_equal(parse_kv("[daemon]", "user", "ibres"), 0);
	assert_string_equal(cfg.user, "ibres");
	assert_int_equal(parse_kv("[daemon]", "user", "None"), 0);
	assert_string_equal(cfg.user, "");

	/* booleans */
	static const char *const yes[] = { "yes", "true", "on", "1", "YES", "True" };
	static const char *const no[] = { "no", "false", "off", "0", "NO", "Off" };
	for (unsigned i = 0; i < 6; i++) {
		assert_int_equal(parse_kv("[daemon]", "acm_link", yes[i]), 0);
		assert_true(cfg.acm_link);
		assert_int_equal(parse_kv("[daemon]", "acm_link", no[i]), 0);
		assert_false(cfg.acm_link);
	}
	/* log levels */
	static const char *const lv[] = { "error", "warning", "info", "debug" };
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(parse_kv("[daemon]", "log_level", lv[i]), 0);
		assert_int_equal(cfg.log_level, i);
	}
	assert_int_equal(parse_kv("[daemon]", "max_clients", "1"), 0);
	assert_int_equal(cfg.max_clients, 1);
	assert_int_equal(parse_kv("[daemon]", "max_clients", "65536"), 0);
	assert_int_equal(cfg.max_clients, 65536);
	assert_int_equal(parse_kv("[daemon]", "max_clients_per_uid", "0"), 0);
	assert_int_equal(cfg.max_clients_per_uid, 0);
	assert_int_equal(parse_kv("[daemon]", "max_clients_per_uid", "4"), 0);
	assert_int_equal(cfg.max_clients_per_uid, 4);
	assert_int_equal(parse_kv("[daemon]", "max_clients_per_uid", "65536"), 0);
	assert_int_equal(cfg.max_clients_per_uid, 65536);
	assert_int_equal(parse_kv("[daemon]", "max_clients", "0x100"), 0);
	assert_int_equal(cfg.max_clients, 256);
	assert_int_equal(parse_kv("[daemon]", "max_clients", "010"), 0);
	assert_int_equal(cfg.max_clients, 10); /* decimal, not octal */
	assert_int_equal(parse_kv("[daemon]", "client_timeout", "100ms"), 0);
	assert_int_equal(cfg.client_timeout_ms, 100);
	assert_int_equal(parse_kv("[daemon]", "client_timeout", "1h"), 0);
	assert_int_equal(cfg.client_timeout_ms, 3600000);
	assert_int_equal(parse_kv("[daemon]", "client_timeout", "5"), 0);
	assert_int_equal(cfg.client_timeout_ms, 5000); /* default unit s */
	assert_int_equal(parse_kv("[daemon]", "client_timeout", "30 s"), 0);
	assert_int_equal(cfg.client_timeout_ms, 30000);

	/* the longest socket path that fits, and one byte more */
	memset(longp, 'a', sizeof(longp));
	longp[0] = '/';
	longp[CFG_SOCKET_MAX - 1] = '\0';
	assert_int_equal(parse_kv("[daemon]", "socket", longp), 0);
	assert_int_equal(strlen(cfg.socket_path), CFG_SOCKET_MAX - 1);
	longp[CFG_SOCKET_MAX - 1] = 'a';
	longp[CFG_SOCKET_MAX] = '\0';
	snprintf(text, sizeof(text), "[daemon]\nsocket = %s\n", longp);
	expect_error(text, "for 'socket': expected an absolute path of at most 107 characters");
}

/* ---- [resolve] ---------------------------------------------------------- */

static void test_resolve_keys(void **state)
{
	(void)state;
	expect_ok("[resolve]\ntimeout = 500ms\nretries = 0\naddr_ttl = 1h\nroute_ttl = 2d\n"
		  "negative_ttl = 0\ncache_size = 16\nroute_prot = sa\n"
		  "hosts_file = /etc/ibres/hosts\nname_pattern = node* gpu[0-9]*\n"
		  "name_pattern = login?\nsettle_time = 500ms\nannounce_interval = 0\n"
		  "cluster_key_file = /etc/ibres/key\n");
	assert_int_equal(cfg.timeout_ms, 500);
	assert_int_equal(cfg.retries, 0);
	assert_int_equal(cfg.addr_ttl_s, 3600);
	assert_int_equal(cfg.route_ttl_s, 2 * 86400);
	assert_int_equal(cfg.negative_ttl_s, 0);
	assert_int_equal(cfg.cache_size, 16);
	assert_int_equal(cfg.route_prot, ROUTE_PROT_SA);
	assert_string_equal(cfg.hosts_file, "/etc/ibres/hosts");
	assert_int_equal(cfg.n_patterns, 3);
	assert_string_equal(cfg.patterns[0], "node*");
	assert_string_equal(cfg.patterns[1], "gpu[0-9]*");
	assert_string_equal(cfg.patterns[2], "login?");
	assert_int_equal(cfg.settle_ms, 500);
	assert_int_equal(cfg.announce_interval_s, 0);
	assert_string_equal(cfg.cluster_key_file, "/etc/ibres/key");

	assert_int_equal(parse_kv("[resolve]", "timeout", "250"), 0);
	assert_int_equal(cfg.timeout_ms, 250); /* default unit ms */
	assert_int_equal(parse_kv("[resolve]", "timeout", "10ms"), 0);
	assert_int_equal(cfg.timeout_ms, 10);
	assert_int_equal(parse_kv("[resolve]", "timeout", "60s"), 0);
	assert_int_equal(cfg.timeout_ms, 60000);
	assert_int_equal(parse_kv("[resolve]", "timeout", "1m"), 0);
	assert_int_equal(cfg.timeout_ms, 60000);
	assert_int_equal(parse_kv("[resolve]", "retries", "10"), 0);
	assert_int_equal(cfg.retries, 10);
	assert_int_equal(parse_kv("[resolve]", "addr_ttl", "30d"), 0);
	assert_int_equal(cfg.addr_ttl_s, 30 * 86400);
	assert_int_equal(parse_kv("[resolve]", "addr_ttl", "1"), 0);
	assert_int_equal(cfg.addr_ttl_s, 1);
	assert_int_equal(parse_kv("[resolve]", "addr_ttl", "2000ms"), 0);
	assert_int_equal(cfg.addr_ttl_s, 2);
	assert_int_equal(parse_kv("[resolve]", "route_ttl", "1s"), 0);
	assert_int_equal(cfg.route_ttl_s, 1);
	assert_int_equal(parse_kv("[resolve]", "negative_ttl", "1d"), 0);
	assert_int_equal(cfg.negative_ttl_s, 86400);
	assert_int_equal(parse_kv("[resolve]", "negative_ttl", "90"), 0);
	assert_int_equal(cfg.negative_ttl_s, 90);
	assert_int_equal(parse_kv("[resolve]", "cache_size", "4194304"), 0);
	assert_int_equal(cfg.cache_size, 4194304);
	assert_int_equal(parse_kv("[resolve]", "route_prot", "mcast"), 0);
	assert_int_equal(cfg.route_prot, ROUTE_PROT_MCAST);
	assert_int_equal(parse_kv("[resolve]", "hosts_file", "none"), 0);
	assert_string_equal(cfg.hosts_file, "");
	assert_int_equal(parse_kv("[resolve]", "settle_time", "10m"), 0);
	assert_int_equal(cfg.settle_ms, 600000);
	assert_int_equal(parse_kv("[resolve]", "settle_time", "0"), 0);
	assert_int_equal(cfg.settle_ms, 0);
	assert_int_equal(parse_kv("[resolve]", "settle_time", "4"), 0);
	assert_int_equal(cfg.settle_ms, 4000); /* default unit s */
	assert_int_equal(parse_kv("[resolve]", "announce_interval", "1s"), 0);
	assert_int_equal(cfg.announce_interval_s, 1);
	assert_int_equal(parse_kv("[resolve]", "announce_interval", "1d"), 0);
	assert_int_equal(cfg.announce_interval_s, 86400);
	assert_int_equal(parse_kv("[resolve]", "announce_interval", "5m"), 0);
	assert_int_equal(cfg.announce_interval_s, 300);
	assert_int_equal(parse_kv("[resolve]", "goodbye_repeats", "0"), 0);
	assert_int_equal(cfg.goodbye_repeats, 0);
	assert_int_equal(parse_kv("[resolve]", "goodbye_repeats", "8"), 0);
	assert_int_equal(cfg.goodbye_repeats, 8);
	assert_true(parse_kv("[resolve]", "goodbye_repeats", "9") < 0);
	assert_int_equal(parse_kv("[resolve]", "cluster_key_file", "none"), 0);
	assert_string_equal(cfg.cluster_key_file, "");
	/* '#' not after whitespace is part of the value */
	assert_int_equal(parse_kv("[resolve]", "name_pattern", "a#b # comment"), 0);
	assert_int_equal(cfg.n_patterns, 1);
	assert_string_equal(cfg.patterns[0], "a#b");
}

static void test_name_patterns_limit(void **state)
{
	char text[2048], pat[CFG_PATTERN_MAX + 1];
	size_t n;
	unsigned i;

	(void)state;
	/* CFG_MAX_PATTERNS over several lines is fine, one more is not */
	n = (size_t)snprintf(text, sizeof(text), "[resolve]\n");
	for (i = 0; i < CFG_MAX_PATTERNS; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "name_pattern = p%u*\n", i);
	expect_ok(text);
	assert_int_equal(cfg.n_patterns, CFG_MAX_PATTERNS);
	snprintf(text + n, sizeof(text) - n, "name_pattern = extra\n");
	expect_error(text, "too many name patterns: at most 16");

	/* the same in one value */
	n = (size_t)snprintf(text, sizeof(text), "[resolve]\nname_pattern =");
	for (i = 0; i <= CFG_MAX_PATTERNS; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " p%u", i);
	expect_error(text, "t.conf:2: too many name patterns");

	/* pattern length */
	memset(pat, 'x', sizeof(pat));
	pat[CFG_PATTERN_MAX - 1] = '\0';
	assert_int_equal(parse_kv("[resolve]", "name_pattern", pat), 0);
	assert_int_equal(strlen(cfg.patterns[0]), CFG_PATTERN_MAX - 1);
	pat[CFG_PATTERN_MAX - 1] = 'x';
	pat[CFG_PATTERN_MAX] = '\0';
	assert_int_equal(parse_kv("[resolve]", "name_pattern", pat), -EINVAL);
	assert_non_null(strstr(err, "too long: at most 127 characters"));
}

/* ---- [endpoint] --------------------------------------------------------- */

static void test_endpoint_keys(void **state)
{
	const struct cfg_endpoint *ep = &cfg.eps[0];
	struct in6_addr a6;
	uint8_t gid[16];

	(void)state;
	expect_ok("[endpoint mlx5_0.p1-x]\n"
		  "gid = fe80::2:c903:0:1\nlid = 0xbfff\npkey = 0x7fff\nqpn = 0xffffff\n"
		  "mtu = 4096\nrate = 100\nsl = 15\npacket_life = 63\n"
		  "name = node1.cluster\nname = Node1\nname = n-1\n"
		  "address = 198.18.0.1\naddress = 2001:db8::1\naddress = 198.18.0.2\n"
		  "dev_guid = 0x0002c90300000001\nport_num = 254\ndevice = mlx5_0\n"
		  "transport = ip\ninterface = ib0.8001\nudp_port = 65535\n"
		  "group = 239.255.73.1\ngroup = 239.255.73.2 mtu=4096 rate=100\n"
		  "group = ff15::1 rate=2.5 mtu=256\n");
	assert_string_equal(ep->label, "mlx5_0.p1-x");
	gid_of("fe80::2:c903:0:1", gid);
	assert_memory_equal(ep->id.gids[0], gid, 16);
	assert_int_equal(ep->id.lid, 0xbfff);
	assert_int_equal(ep->id.pkey, 0x7fff); /* stored as given */
	assert_int_equal(ep->id.qpn, 0xffffff);
	assert_int_equal(ep->mtu, 5);
	assert_int_equal(ep->rate, 16);
	assert_int_equal(ep->sl, 15);
	assert_int_equal(ep->packet_life, 63);
	assert_int_equal(ep->id.n_names, 3);
	assert_string_equal(ep->id.names[0], "node1.cluster");
	assert_string_equal(ep->id.names[1], "Node1");
	assert_string_equal(ep->id.names[2], "n-1");
	assert_int_equal(ep->id.n_v4, 2);
	assert_int_equal(ep->id.v4[0].s_addr, inet_addr("198.18.0.1"));
	assert_int_equal(ep->id.v4[1].s_addr, inet_addr("198.18.0.2"));
	assert_int_equal(ep->id.n_v6, 1);
	inet_pton(AF_INET6, "2001:db8::1", &a6);
	assert_memory_equal(&ep->id.v6[0], &a6, 16);
	assert_true(ep->dev_guid == 0x0002c90300000001ull);
	assert_int_equal(ep->port_num, 254);
	assert_string_equal(ep->device, "mlx5_0");
	assert_int_equal(ep->transport, TRANSPORT_IP);
	assert_string_equal(ep->interface, "ib0.8001");
	assert_int_equal(ep->udp_port, 65535);
	assert_int_equal(ep->n_groups, 3);
	assert_int_equal(ep->groups[0].addr.ss_family, AF_INET);
	assert_int_equal(((const struct sockaddr_in *)&ep->groups[0].addr)->sin_addr.s_addr,
			 inet_addr("239.255.73.1"));
	assert_int_equal(ep->groups[0].mtu, 4);
	assert_int_equal(ep->groups[0].rate, 3);
	assert_int_equal(ep->groups[1].mtu, 5);
	assert_int_equal(ep->groups[1].rate, 16);
	assert_int_equal(ep->groups[2].addr.ss_family, AF_INET6);
	inet_pton(AF_INET6, "ff15::1", &a6);
	assert_memory_equal(&((const struct sockaddr_in6 *)&ep->groups[2].addr)->sin6_addr,
			    &a6, 16);
	assert_int_equal(ep->groups[2].mtu, 1);
	assert_int_equal(ep->groups[2].rate, 2);

	/* small ends of the ranges, and other spellings */
	expect_ok("[endpoint e]\nlid = 1\npkey = 0\nqpn = 1\nsl = 0\npacket_life = 0\n"
		  "port_num = 1\nudp_port = 1\ndev_guid = ffffffffffffffff\ntransport = ib\n"
		  "mtu = 256\nrate = 2.5\n");
	assert_int_equal(ep->id.lid, 1);
	assert_int_equal(ep->id.pkey, 0);
	assert_int_equal(ep->id.qpn, 1);
	assert_int_equal(ep->packet_life, 0);
	assert_int_equal(ep->udp_port, 1);
	assert_true(ep->dev_guid == UINT64_MAX);
	assert_int_equal(ep->transport, TRANSPORT_IB);
	assert_int_equal(ep->mtu, 1);
	assert_int_equal(ep->rate, 2);
	assert_int_equal(parse_kv("[endpoint e]", "transport", "none"), 0);
	assert_int_equal(ep->transport, TRANSPORT_NONE);
	assert_int_equal(parse_kv("[endpoint e]", "lid", "49151"), 0);
	assert_int_equal(ep->id.lid, 49151);
	assert_int_equal(parse_kv("[endpoint e]", "pkey", "0xFFFF"), 0);
	assert_int_equal(ep->id.pkey, 0xffff);
	assert_int_equal(parse_kv("[endpoint e]", "interface", "abcdefghijklmno"), 0);
	assert_string_equal(ep->interface, "abcdefghijklmno");

	/* every MTU */
	static const struct {
		const char *v;
		uint8_t e;
	} mtus[] = { { "256", 1 }, { "512", 2 }, { "1024", 3 }, { "2048", 4 }, { "4096", 5 } };
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(parse_kv("[endpoint e]", "mtu", mtus[i].v), 0);
		assert_int_equal(ep->mtu, mtus[i].e);
	}
}

static void test_rates(void **state)
{
	static const struct {
		const char *gbps;
		int e;
	} rates[] = {
		{ "2.5", 2 }, { "10", 3 },   { "30", 4 },   { "5", 5 },    { "20", 6 },
		{ "40", 7 },  { "60", 8 },   { "80", 9 },   { "120", 10 }, { "14", 11 },
		{ "56", 12 }, { "112", 13 }, { "168", 14 }, { "25", 15 },  { "100", 16 },
		{ "200", 17 }, { "300", 18 }, { "28", 19 }, { "50", 20 },  { "400", 21 },
		{ "600", 22 },
	};
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		assert_int_equal(parse_kv("[endpoint e]", "rate", rates[i].gbps), 0);
		assert_int_equal(cfg.eps[0].rate, rates[i].e);
	}
}

/* "A, B or C (UNIT)" from @n values, each with its size (sorted by) and its text. */
static void join_list(char *buf, size_t len, unsigned n, const unsigned *size,
		      char text[][8], const char *unit)
{
	unsigned order[256], i, j;
	size_t off = 0;

	for (i = 0; i < n; i++) {
		for (j = i; j && size[order[j - 1]] > size[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					!i ? "" : i == n - 1 ? " or " : ", ", text[order[i]]);
	snprintf(buf + off, len - off, " (%s)", unit);
}

/* The values that messages list for mtu and rate are exactly lib/ibenum's,
 * smallest first. */
static void test_enum_lists(void **state)
{
	char mtus[512], rates[512], text[256][8];
	unsigned size[256], n, v;

	(void)state;
	for (n = 0, v = 0; v <= UINT8_MAX; v++) {
		if (!ib_mtu_to_bytes((uint8_t)v))
			continue;
		size[n] = ib_mtu_to_bytes((uint8_t)v);
		snprintf(text[n++], sizeof(text[0]), "%u", ib_mtu_to_bytes((uint8_t)v));
	}
	join_list(mtus, sizeof(mtus), n, size, text, "bytes");
	assert_string_equal(mtus, "256, 512, 1024, 2048 or 4096 (bytes)");
	for (n = 0, v = 0; v <= UINT8_MAX; v++) {
		if (!ib_rate_to_gbps10((uint8_t)v))
			continue;
		size[n] = ib_rate_to_gbps10((uint8_t)v);
		snprintf(text[n++], sizeof(text[0]), "%s", ib_rate_to_gbps((uint8_t)v));
	}
	join_list(rates, sizeof(rates), n, size, text, "Gb/s");

	assert_int_equal(parse_kv("[endpoint e]", "mtu", "1500"), -EINVAL);
	assert_non_null(strstr(err, mtus));
	assert_int_equal(parse_kv("[endpoint e]", "rate", "7"), -EINVAL);
	assert_non_null(strstr(err, rates));
	assert_int_equal(parse_kv("[endpoint e]", "group", "239.1.1.1 rate=7"), -EINVAL);
	assert_non_null(strstr(err, mtus));
	assert_non_null(strstr(err, rates));
}

/* ---- invalid values: one table for every key -------------------------- */

struct bad_case {
	const char *section;
	const char *key;
	const char *value;
	const char *expect; /* part of the "expected ..." text */
};

static const struct bad_case bad_cases[] = {
	{ "[daemon]", "socket", "relative/path", "an absolute path" },
	{ "[daemon]", "socket", "none", "an absolute path of at most 107 characters" },
	{ "[daemon]", "acm_socket", "ibacm.sock", "or 'none'" },
	{ "[daemon]", "acm_link", "maybe", "yes, no, true, false, on, off, 1 or 0" },
	{ "[daemon]", "acm_link", "2", "yes, no" },
	{ "[daemon]", "log_level", "verbose", "one of error, warning, info, debug" },
	{ "[daemon]", "log_level", "warn", "one of error" },
	{ "[daemon]", "max_clients", "0", "an integer 1..65536" },
	{ "[daemon]", "user", "a/b", "1..63 characters without spaces or 'none'" },
	{ "[daemon]", "user", "0123456789012345678901234567890123456789012345678901234567890123",
	  "1..63 characters" },
	{ "[daemon]", "max_clients", "65537", "an integer 1..65536" },
	{ "[daemon]", "max_clients_per_uid", "65537", "an integer 0..65536" },
	{ "[daemon]", "max_clients_per_uid", "-1", "an integer" },
	{ "[daemon]", "max_clients", "abc", "an integer 1..65536" },
	{ "[daemon]", "max_clients", "12abc", "an integer" },
	{ "[daemon]", "max_clients", "-1", "an integer" },
	{ "[daemon]", "max_clients", "+5", "an integer" },
	{ "[daemon]", "max_clients", "0x", "an integer" },
	{ "[daemon]", "max_clients", "1 2", "an integer" },
	{ "[daemon]", "max_clients", "99999999999999999999999", "an integer 1..65536" },
	{ "[daemon]", "max_clients", "4294967297", "an integer 1..65536" },
	{ "[daemon]", "client_timeout", "99ms", "a duration 100ms..1h (units ms, s, m, h, d; "
						"default s)" },
	{ "[daemon]", "client_timeout", "61m", "a duration 100ms..1h" },
	{ "[daemon]", "client_timeout", "10x", "a duration" },
	{ "[daemon]", "client_timeout", "1.5s", "a duration" },
	{ "[daemon]", "client_timeout", "s", "a duration" },
	{ "[daemon]", "client_timeout", "10 s s", "a duration" },
	{ "[resolve]", "timeout", "9ms", "a duration 10ms..1m (units ms, s, m, h, d; default ms)" },
	{ "[resolve]", "timeout", "9", "a duration 10ms..1m" },
	{ "[resolve]", "timeout", "61s", "a duration 10ms..1m" },
	{ "[resolve]", "timeout", "18446744073709551615d", "a duration" },
	{ "[resolve]", "timeout", "18446744073709551616", "a duration" },
	{ "[resolve]", "timeout", "99999999999999999999999ms", "a duration" },
	{ "[resolve]", "timeout", "1S", "a duration" },
	{ "[resolve]", "timeout", "-5", "a duration" },
	{ "[resolve]", "retries", "11", "an integer 0..10" },
	{ "[resolve]", "retries", "three", "an integer 0..10" },
	{ "[resolve]", "addr_ttl", "0", "a whole number of seconds 1s..30d" },
	{ "[resolve]", "addr_ttl", "1500ms", "a whole number of seconds 1s..30d" },
	{ "[resolve]", "addr_ttl", "31d", "a whole number of seconds 1s..30d" },
	{ "[resolve]", "route_ttl", "999ms", "a whole number of seconds 1s..30d" },
	{ "[resolve]", "route_ttl", "721h", "1s..30d" },
	{ "[resolve]", "negative_ttl", "25h", "a whole number of seconds 0..1d" },
	{ "[resolve]", "negative_ttl", "1ms", "a whole number of seconds 0..1d" },
	{ "[resolve]", "cache_size", "15", "an integer 16..4194304" },
	{ "[resolve]", "cache_size", "4194305", "an integer 16..4194304" },
	{ "[resolve]", "route_prot", "path", "one of mcast, sa" },
	{ "[resolve]", "hosts_file", "hosts", "an absolute path of at most 4095 characters or "
					      "'none'" },
	{ "[resolve]", "settle_time", "11m",
	  "a duration 0..10m (units ms, s, m, h, d; default s)" },
	{ "[resolve]", "announce_interval", "500ms",
	  "0 (off) or a whole number of seconds 1s..1d" },
	{ "[resolve]", "announce_interval", "2d", "0 (off) or a whole number of seconds 1s..1d" },
	{ "[resolve]", "cluster_key_file", "key", "an absolute path" },
	{ "[endpoint e]", "gid", "fe80::zz", "a GID in IPv6 notation" },
	{ "[endpoint e]", "gid", "198.18.0.1", "a GID in IPv6 notation" },
	{ "[endpoint e]", "gid", "::", "not ::" },
	{ "[endpoint e]", "lid", "0", "an integer 1..49151" },
	{ "[endpoint e]", "lid", "0xc000", "an integer 1..49151" },
	{ "[endpoint e]", "lid", "abc", "an integer 1..49151" },
	{ "[endpoint e]", "pkey", "0x10000", "an integer 0x0..0xffff" },
	{ "[endpoint e]", "qpn", "0", "an integer 1..16777215" },
	{ "[endpoint e]", "qpn", "0x1000000", "an integer 1..16777215" },
	{ "[endpoint e]", "mtu", "1500", "256, 512, 1024, 2048 or 4096 (bytes)" },
	{ "[endpoint e]", "mtu", "4", "256, 512" },
	{ "[endpoint e]", "mtu", "4294969344", "256, 512" },
	{ "[endpoint e]", "rate", "3", "2.5, 5, 10" },
	{ "[endpoint e]", "rate", "10G", "2.5, 5, 10" },
	{ "[endpoint e]", "sl", "16", "an integer 0..15" },
	{ "[endpoint e]", "packet_life", "64", "an integer 0..63" },
	{ "[endpoint e]", "name", "-node", "a host name" },
	{ "[endpoint e]", "name", "node-", "a host name" },
	{ "[endpoint e]", "name", "a..b", "a host name" },
	{ "[endpoint e]", "name", ".a", "a host name" },
	{ "[endpoint e]", "name", "a.", "a host name" },
	{ "[endpoint e]", "name", "a-.b", "a host name" },
	{ "[endpoint e]", "name", "node_1", "a host name" },
	{ "[endpoint e]", "name", "node 1", "a host name" },
	{ "[endpoint e]", "name", "1234", "not all digits" },
	{ "[endpoint e]", "name", "10.1.2", "a host name" },
	{ "[endpoint e]", "name", "n\xc3\xa9", "a host name" },
	{ "[endpoint e]", "address", "198.18.0.256", "an IPv4 or IPv6 unicast address" },
	{ "[endpoint e]", "address", "node1", "an IPv4 or IPv6 unicast address" },
	{ "[endpoint e]", "address", "239.1.1.1", "unicast" },
	{ "[endpoint e]", "address", "ff02::1", "unicast" },
	{ "[endpoint e]", "address", "0.0.0.0", "unicast" },
	{ "[endpoint e]", "address", "::", "unicast" },
	{ "[endpoint e]", "address", "255.255.255.255", "unicast" },
	{ "[endpoint e]", "address", "198.18.0.1/24", "unicast" },
	{ "[endpoint e]", "dev_guid", "xyz", "a 64-bit hexadecimal GUID" },
	{ "[endpoint e]", "dev_guid", "0x10000000000000000", "a 64-bit hexadecimal GUID" },
	{ "[endpoint e]", "dev_guid", "0x", "a 64-bit hexadecimal GUID" },
	{ "[endpoint e]", "port_num", "0", "an integer 1..254" },
	{ "[endpoint e]", "port_num", "255", "an integer 1..254" },
	{ "[endpoint e]", "device", "mlx5 0", "1..63 characters without spaces" },
	{ "[endpoint e]", "transport", "udp", "one of none, ip, ib" },
	{ "[endpoint e]", "interface", "abcdefghijklmnop", "1..15 characters without spaces" },
	{ "[endpoint e]", "interface", "ib/0", "1..15 characters" },
	{ "[endpoint e]", "udp_port", "0", "an integer 1..65535" },
	{ "[endpoint e]", "udp_port", "65536", "an integer 1..65535" },
	{ "[endpoint e]", "recv_depth", "63", "an integer 64..1048576" },
	{ "[endpoint e]", "recv_depth", "1048577", "an integer 64..1048576" },
	{ "[endpoint e]", "group", "198.18.0.1", "multicast ADDRESS" },
	{ "[endpoint e]", "group", "239.255.73.1 mtu=1500", "'ADDRESS [mtu=BYTES] [rate=GBPS]'" },
	{ "[endpoint e]", "group", "239.255.73.1 rate=3", "'ADDRESS" },
	{ "[endpoint e]", "group", "239.255.73.1 speed=10", "'ADDRESS" },
	{ "[endpoint e]", "group", "239.255.73.1 mtu=2048 mtu=4096", "'ADDRESS" },
	{ "[endpoint e]", "group", "239.255.73.1 rate=10 rate=10", "'ADDRESS" },
	{ "[endpoint e]", "group", "mtu=2048", "'ADDRESS" },
	{ "[endpoint e]", "group", "2001:db8::1", "'ADDRESS" },
};

static void test_bad_values(void **state)
{
	char want[256];
	unsigned i;
	int ret;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		ret = parse_kv(c->section, c->key, c->value);
		snprintf(want, sizeof(want), "t.conf:2: invalid value '%s' for '%s': expected ",
			 c->value, c->key);
		if (ret != -EINVAL || strncmp(err, want, strlen(want)) || !strstr(err, c->expect))
			fail_msg("%s %s = %s: ret %d, error \"%s\"", c->section, c->key, c->value,
				 ret, err);
	}
	/* the example from the spec, byte for byte */
	assert_int_equal(parse_kv("[endpoint e]", "lid", "abc"), -EINVAL);
	assert_string_equal(err, "t.conf:2: invalid value 'abc' for 'lid': expected an integer "
				 "1..49151");
	/* host_directory: auto or none; a path (a file, once) is refused with the reason */
	assert_int_equal(parse_kv("[daemon]", "host_directory", "none"), 0);
	assert_string_equal(cfg.host_directory, "");
	assert_int_equal(parse_kv("[daemon]", "host_directory", "auto"), 0);
	assert_string_equal(cfg.host_directory, "auto");
	assert_int_equal(parse_kv("[daemon]", "host_directory", "/run/ibres/hosts.db"), -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: "));
	assert_non_null(strstr(err, "no longer a file"));
	assert_int_equal(parse_kv("[daemon]", "host_directory", "maybe"), -EINVAL);
	assert_non_null(strstr(err, "'auto' or 'none'"));
}

static void test_missing_value(void **state)
{
	(void)state;
	expect_error("[resolve]\ntimeout =\n", "t.conf:2: missing value for 'timeout': expected "
		     "a duration");
	expect_error("[endpoint e]\nname =   # comment\n", "missing value for 'name': expected a "
		     "host name");
	/* '#' right after '=' starts a comment too (no value starts with '#') */
	expect_error("[resolve]\nname_pattern =#x\n", "t.conf:2: missing value for "
		     "'name_pattern'");
	expect_error("[endpoint e]\ndevice=#x\n", "missing value for 'device'");
}

static void test_hostname_limits(void **state)
{
	char name[IBRES_NAME_MAX + 2];
	unsigned i;

	(void)state;
	/* one label of 63 characters: fine; 64: not */
	memset(name, 'a', 64);
	name[63] = '\0';
	assert_int_equal(parse_kv("[endpoint e]", "name", name), 0);
	name[63] = 'a';
	name[64] = '\0';
	assert_int_equal(parse_kv("[endpoint e]", "name", name), -EINVAL);
	/* 255 characters in labels of 63: fine; 256: not */
	for (i = 0; i < IBRES_NAME_MAX + 1; i++)
		name[i] = (i % 64 == 63) ? '.' : 'b';
	name[IBRES_NAME_MAX] = '\0';
	assert_int_equal(parse_kv("[endpoint e]", "name", name), 0);
	assert_int_equal(strlen(cfg.eps[0].id.names[0]), IBRES_NAME_MAX);
	name[IBRES_NAME_MAX] = 'b';
	name[IBRES_NAME_MAX + 1] = '\0';
	assert_int_equal(parse_kv("[endpoint e]", "name", name), -EINVAL);
	/* digits are fine when some label has a letter */
	assert_int_equal(parse_kv("[endpoint e]", "name", "0node.1"), 0);
	assert_int_equal(parse_kv("[endpoint e]", "name", "x"), 0);
}

/* ---- structure errors --------------------------------------------------- */

static void test_structure_errors(void **state)
{
	(void)state;
	expect_error("[resolve]\n\ntiemout = 5\n",
		     "t.conf:3: unknown key 'tiemout' in [resolve] (did you mean 'timeout'?)");
	expect_error("[resolve]\nfrobnicate = 5\n", "t.conf:2: unknown key 'frobnicate' in "
		     "[resolve]");
	expect_error("[daemon]\ntimeout = 5\n", "t.conf:2: unknown key 'timeout' in [daemon] "
		     "(it belongs in [resolve])");
	expect_error("[endpoint ib0]\nsocket = /x\n", "unknown key 'socket' in [endpoint ib0] "
		     "(it belongs in [daemon])");
	expect_error("[resolve]\nlid = 5\n", "(it belongs in [endpoint LABEL])");
	expect_error("[resolve]\nTimeout = 5\n", "unknown key 'Timeout' in [resolve]");
	expect_error("[global]\n", "t.conf:1: unknown section [global]: expected [daemon], "
		     "[resolve] or [endpoint LABEL]");
	expect_error("[Daemon]\n", "unknown section [Daemon]");
	expect_error("[endpoints ib0]\n", "unknown section [endpoints ib0]");
	expect_error("[daemon\n", "t.conf:1: invalid section header '[daemon'");
	expect_error("[daemon] x\n", "invalid section header");
	expect_error("[]\n", "unknown section []");
	expect_error("[endpoint]\n", "invalid endpoint label ''");
	expect_error("[endpoint a b]\n", "invalid endpoint label 'a b': expected 1..63 letters");
	expect_error("[endpoint a/b]\n", "invalid endpoint label 'a/b'");
	expect_error("[endpoint "
		     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
		     "invalid endpoint label");
	expect_ok("[ endpoint   ib0 ]\n[ daemon ]\n");
	assert_string_equal(cfg.eps[0].label, "ib0");
	expect_error("timeout = 5\n[resolve]\n", "t.conf:1: key 'timeout' outside of any section");
	expect_error("# c\n\nsocket = /x\n", "t.conf:3: key 'socket' outside of any section");
	expect_error("[endpoint a]\n[endpoint b]\n[endpoint a]\n",
		     "t.conf:3: duplicate endpoint label 'a' (first on line 1)");
	expect_error("[resolve]\ntimeout = 50\n# c\ntimeout = 60\n",
		     "t.conf:4: 'timeout' set twice in [resolve] (first on line 2)");
	/* a section given twice still sees the first value */
	expect_error("[daemon]\nsocket = /a\n[resolve]\n[daemon]\nsocket = /b\n",
		     "t.conf:5: 'socket' set twice in [daemon] (first on line 2)");
	expect_error("[endpoint a]\nlid = 1\nlid = 2\n", "'lid' set twice in [endpoint a]");
	/* per-endpoint: the same key in two endpoints is fine */
	expect_ok("[endpoint a]\nlid = 1\n[endpoint b]\nlid = 2\n");
	assert_int_equal(cfg.n_eps, 2);
	assert_int_equal(cfg.eps[1].id.lid, 2);
	expect_error("[daemon]\nsocket /a\n", "t.conf:2: syntax error in 'socket /a': expected "
		     "'key = value' or '[section]'");
	expect_error("[daemon]\n= /a\n", "syntax error");
	expect_error("[daemon]\nso-cket = /a\n", "syntax error");
	expect_error("[daemon]\nsocket\n", "syntax error");
	expect_error("[daemon]\nsocket = /a\x01\n", "t.conf:2: invalid control character 0x01");
	{
		static const char nul[] = "[daemon]\nsocket = /a\0b\n";

		assert_int_equal(config_parse("t.conf", nul, sizeof(nul) - 1, &cfg, err,
					      sizeof(err)), -EINVAL);
		assert_string_equal(err, "t.conf:2: invalid control character 0x00");
	}
	/* a file without a final newline */
	assert_int_equal(config_parse("t.conf", "[resolve]\nretries = 5", 21, &cfg, err,
				      sizeof(err)), 0);
	assert_int_equal(cfg.retries, 5);
	/* @len bounds the text, not the NUL */
	assert_int_equal(config_parse("t.conf", "[resolve]\nretries = 52", 21, &cfg, err,
				      sizeof(err)), 0);
	assert_int_equal(cfg.retries, 5);
}

static void test_line_length(void **state)
{
	static char text[CFG_LINE_MAX + 64];
	size_t n;

	(void)state;
	/* exactly CFG_LINE_MAX characters: fine */
	n = (size_t)snprintf(text, sizeof(text), "[resolve]\n# ");
	memset(text + n, 'x', CFG_LINE_MAX - 2);
	strcpy(text + n + CFG_LINE_MAX - 2, "\nretries = 1\n");
	expect_ok(text);
	assert_int_equal(cfg.retries, 1);
	/* one more */
	memset(text + n, 'x', CFG_LINE_MAX - 1);
	strcpy(text + n + CFG_LINE_MAX - 1, "\nretries = 1\n");
	expect_error(text, "t.conf:2: line longer than 1024 characters");
	/* also without a newline at the end */
	text[n + CFG_LINE_MAX - 1] = '\0';
	expect_error(text, "t.conf:2: line longer than 1024 characters");
}

static void test_limits(void **state)
{
	static char text[8192];
	size_t n;
	unsigned i;

	(void)state;
	/* endpoints */
	n = 0;
	for (i = 0; i < CFG_MAX_ENDPOINTS; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "[endpoint e%u]\n", i);
	expect_ok(text);
	assert_int_equal(cfg.n_eps, CFG_MAX_ENDPOINTS);
	snprintf(text + n, sizeof(text) - n, "[endpoint last]\n");
	expect_error(text, "t.conf:33: too many endpoints: at most 32");

	/* names */
	n = (size_t)snprintf(text, sizeof(text), "[endpoint e]\n");
	for (i = 0; i < IBRES_EP_NAMES_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "name = n%u\n", i);
	expect_ok(text);
	assert_int_equal(cfg.eps[0].id.n_names, IBRES_EP_NAMES_MAX);
	snprintf(text + n, sizeof(text) - n, "name = more\n");
	expect_error(text, "t.conf:10: too many 'name' values in [endpoint e]: at most 8");

	/* addresses, per family */
	n = (size_t)snprintf(text, sizeof(text), "[endpoint e]\n");
	for (i = 0; i < IBRES_EP_ADDRS_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "address = 198.18.0.%u\naddress = 2001:db8::%u\n", i + 1,
				      i + 1);
	expect_ok(text);
	assert_int_equal(cfg.eps[0].id.n_v4, IBRES_EP_ADDRS_MAX);
	assert_int_equal(cfg.eps[0].id.n_v6, IBRES_EP_ADDRS_MAX);
	snprintf(text + n, sizeof(text) - n, "address = 198.18.1.1\n");
	expect_error(text, "too many 'address' values in [endpoint e]: at most 8");
	snprintf(text + n, sizeof(text) - n, "address = 2001:db8::1:1\n");
	expect_error(text, "too many 'address' values in [endpoint e]: at most 8");

	/* groups */
	n = (size_t)snprintf(text, sizeof(text), "[endpoint e]\n");
	for (i = 0; i < CFG_MAX_GROUPS; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "group = 239.255.73.%u\n", i);
	expect_ok(text);
	assert_int_equal(cfg.eps[0].n_groups, CFG_MAX_GROUPS);
	snprintf(text + n, sizeof(text) - n, "group = ff15::1\n");
	expect_error(text, "t.conf:6: too many 'group' values in [endpoint e]: at most 4");
}

static void test_duplicates_in_endpoint(void **state)
{
	(void)state;
	expect_error("[endpoint e]\nname = node1\nname = NODE1\n",
		     "t.conf:3: name 'NODE1' given twice in [endpoint e]");
	expect_error("[endpoint e]\naddress = 198.18.0.1\naddress = 198.18.0.1\n",
		     "t.conf:3: address '198.18.0.1' given twice in [endpoint e]");
	expect_error("[endpoint e]\naddress = 2001:db8::1\naddress = 2001:db8:0::1\n",
		     "address '2001:db8:0::1' given twice");
	expect_error("[endpoint e]\ngroup = 239.255.73.1\ngroup = 239.255.73.1 mtu=4096\n",
		     "group '239.255.73.1 mtu=4096' given twice in [endpoint e]");
}

/* ---- config_validate ---------------------------------------------------- */

/* config_reload_check(): @text against the running @run. */
static int reload_check(const char *run, const char *text)
{
	assert_int_equal(config_parse("run.conf", run, strlen(run), &cfg2, err, sizeof(err)), 0);
	assert_int_equal(parse(text), 0);
	return config_reload_check(cfg2.eps, cfg2.n_eps, &cfg, err, sizeof(err));
}

#define TWO_RAILS                                                                                  \
	"[endpoint ib0]\nname = n\ndevice = mlx5_0\n[endpoint ib1]\nname = n\ndevice = mlx5_1\n"

static void test_reload_check(void **state)
{
	(void)state;
	/* every place keeps its port: the same file, a relabel, one added or
	 * the last removed */
	assert_int_equal(reload_check(TWO_RAILS, TWO_RAILS), 0);
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib0]\nname = m\ndevice = mlx5_0\n"
						 "[endpoint rail1]\nname = m\ndevice = mlx5_1\n"),
			 0);
	assert_int_equal(reload_check(TWO_RAILS, TWO_RAILS "[endpoint ib2]\nname = n\n"
							   "device = mlx5_2\n"),
			 0);
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib0]\nname = n\ndevice = mlx5_0\n"), 0);
	/* reordered, the first removed: the file's line of the moved one */
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib1]\nname = n\ndevice = mlx5_1\n"
						 "[endpoint ib0]\nname = n\ndevice = mlx5_0\n"),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf:1: endpoint 'ib1' is endpoint 1 of the file, whose "
				    "port the daemon opened as 'ib0' (transport none, device "
				    "mlx5_0 port 1 pkey_index 0); it would be transport none, "
				    "device mlx5_1 port 1 pkey_index 0"));
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib1]\nname = n\ndevice = mlx5_1\n"),
			 -EINVAL);
	/* another port, P_Key index or transport at a place */
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib0]\nname = n\ndevice = mlx5_0\n"
						 "\n[endpoint ib1]\nname = n\ndevice = mlx5_1\n"
						 "pkey_index = 1\n"),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf:5: endpoint 'ib1' is endpoint 2 of the file"));
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib0]\nname = n\ndevice = mlx5_0\n"
						 "port_num = 2\n"),
			 -EINVAL);
	assert_int_equal(reload_check(EP_OK "transport = ip\ninterface = ib0\n",
				      EP_OK "transport = ip\ninterface = ib1\n"),
			 -EINVAL);
	assert_non_null(strstr(err, "(transport ip, interface ib0 udp_port 4790); it would be "
				    "transport ip, interface ib1 udp_port 4790"));
	assert_int_equal(reload_check(EP_OK "transport = ip\ninterface = ib0\n",
				      EP_OK "transport = ip\ninterface = ib0\nudp_port = 4792\n"),
			 -EINVAL);
	assert_int_equal(reload_check(EP_OK, EP_OK "transport = ip\ninterface = ib0\n"), -EINVAL);
	/* another transport's interface only says where its addresses come from */
	assert_int_equal(reload_check(EP_OK "interface = ib0\n", EP_OK "interface = ib1\n"), 0);
	assert_int_equal(reload_check(TWO_RAILS "interface = ib1\n", TWO_RAILS "interface = ib3\n"),
			 0);
	/* the ports as opened, not the last file: a place removed, then
	 * configured again, is on the port it was opened on */
	assert_int_equal(reload_check(TWO_RAILS, "[endpoint ib0]\nname = n\ndevice = mlx5_0\n"
						 "[endpoint x]\nname = n\ndevice = mlx5_2\n"),
			 -EINVAL);
}

static void test_validate(void **state)
{
	(void)state;
	assert_int_equal(validate(EP_OK), 0);
	assert_string_equal(err, "");
	expect_invalid("no endpoint configured", "[daemon]\n");
	expect_invalid("acm_socket and socket are the same path: /run/x.sock",
		       "[daemon]\nsocket = /run/x.sock\nacm_socket = /run/x.sock\n" EP_OK);
	expect_invalid("endpoint 'ib0': no name given", "[endpoint ib0]\ngid = fe80::1\nlid = 1\n");
	expect_invalid("endpoint 'ib0': no gid given", "[endpoint ib0]\nname = a\nlid = 1\n");
	expect_invalid("endpoint 'ib0': no lid given", "[endpoint ib0]\nname = a\ngid = fe80::1\n");
	/* device replaces gid and lid */
	assert_int_equal(validate("[endpoint ib0]\nname = a\ndevice = mlx5_0\n"), 0);
	expect_invalid("endpoint 'ib0': transport ip needs an 'interface'",
		       EP_OK "transport = ip\ngroup = 239.255.73.1\n");
	expect_invalid("endpoint 'ib0': transport ip needs at least one 'group'",
		       EP_OK "transport = ip\ninterface = ib0\n");
	assert_int_equal(validate(EP_OK "transport = ip\ninterface = ib0\n"
				  "group = 239.255.73.1\n"), 0);
	expect_invalid("endpoint 'ib0': transport ib needs a 'device' and at least one 'group'",
		       EP_OK "transport = ib\ngroup = 239.255.73.1\n");
	expect_invalid("endpoint 'ib0': transport ib needs a 'device' and at least one 'group'",
		       EP_OK "transport = ib\ndevice = mlx5_0\n");
	assert_int_equal(validate(EP_OK "transport = ib\ndevice = mlx5_0\ngroup = 239.255.73.1\n"),
			 0);
	/* the SA client's keys */
	assert_int_equal(validate("[resolve]\nsa_window = 64\nport_poll_interval = 0\n" EP_OK
				  "device = mlx5_0\npkey_index = 127\n"),
			 0);
	assert_int_equal(cfg.sa_window, 64);
	assert_int_equal(cfg.port_poll_ms, 0);
	assert_int_equal(cfg.eps[0].pkey_index, 127);
	/* the ib transport's receive queue, both ends of its range */
	assert_int_equal(parse(EP_OK "recv_depth = 64\n"), 0);
	assert_int_equal(cfg.eps[0].recv_depth, 64);
	assert_int_equal(parse(EP_OK "recv_depth = 1048576\n"), 0);
	assert_int_equal(cfg.eps[0].recv_depth, 1048576);
	assert_int_not_equal(parse("[resolve]\nsa_window = 0\n"), 0);
	assert_int_not_equal(parse("[resolve]\nsa_window = 65\n"), 0);
	assert_int_not_equal(parse("[resolve]\nport_poll_interval = 50ms\n"), 0);
	assert_int_not_equal(parse(EP_OK "pkey_index = 128\n"), 0);
	assert_int_equal(parse("[resolve]\nport_poll_interval = 500ms\n"), 0);
	assert_int_equal(cfg.port_poll_ms, 500);
	/* endpoints of one first name are one host: they share names */
	assert_int_equal(validate(EP_OK "name = node1-ib0\nname = node1.cluster\n"
				  "[endpoint ib1]\nname = NODE1\nname = node1-ib1\n"
				  "name = node1.cluster\ngid = fe80::2\nlid = 1\n"),
			 0);
	/* other endpoints do not; addresses, and GID with P_Key, are unique */
	expect_invalid("name 'NODE1' appears in endpoints 'ib0' and 'ib1', which are not one host",
		       EP_OK "[endpoint ib1]\nname = x\nname = NODE1\ngid = fe80::2\nlid = 2\n");
	expect_invalid("name 'x' appears in endpoints 'ib0' and 'ib1', which are not one host",
		       EP_OK "name = x\n[endpoint ib1]\nname = x\ngid = fe80::2\nlid = 2\n");
	expect_invalid("t.conf:5: endpoints 'ib0' and 'ib1' have the same GID and P_Key",
		       EP_OK "[endpoint ib1]\nname = node1\ngid = fe80::1\nlid = 1\n");
	/* a second partition of the port: the same GID, another P_Key */
	assert_int_equal(validate(EP_OK "[endpoint ib1]\nname = node1\ngid = fe80::1\nlid = 1\n"
				  "pkey = 0x8001\n"),
			 0);
	expect_invalid("address 198.18.0.1 appears in endpoints 'ib0' and 'ib1'",
		       EP_OK "address = 198.18.0.1\n[endpoint ib1]\nname = x\n"
		       "address = 198.18.0.1\ngid = fe80::2\nlid = 2\n");
	expect_invalid("address 2001:db8::1 appears in endpoints 'ib0' and 'ib1'",
		       EP_OK "address = 2001:db8::1\n[endpoint ib1]\nname = x\n"
		       "address = 2001:db8::1\ngid = fe80::2\nlid = 2\n");
	/* the same GID with two P_Keys is two endpoints */
	assert_int_equal(validate(EP_OK "address = 198.18.0.1\n"
				  "[endpoint ib1]\nname = node2\ngid = fe80::1\nlid = 1\n"
				  "pkey = 0x8001\naddress = 198.18.0.2\n"), 0);
	assert_int_equal(cfg.n_eps, 2);

	/* a config built by hand is checked the same way */
	config_defaults(&cfg2);
	cfg2.n_eps = 2;
	strcpy(cfg2.eps[0].label, "a");
	strcpy(cfg2.eps[1].label, "a");
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no name given"));
	cfg2.eps[0].id.n_names = 1;
	strcpy(cfg2.eps[0].id.names[0], "x");
	cfg2.eps[0].device[0] = 'd';
	cfg2.eps[1].id.n_names = 1;
	strcpy(cfg2.eps[1].id.names[0], "y");
	cfg2.eps[1].device[0] = 'd';
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "endpoint label 'a' used twice");
	strcpy(cfg2.eps[1].label, "b");
	cfg2.eps[1].id.n_names = 2;
	strcpy(cfg2.eps[1].id.names[1], "Y");
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "endpoint 'b': name 'Y' given twice");
	cfg2.eps[1].id.n_names = 1;
	cfg2.eps[1].id.n_v4 = 2;
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "endpoint 'b': address 0.0.0.0 given twice");
	cfg2.eps[1].id.n_v4 = 0;
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), 0);
	cfg2.eps[1].id.n_names = IBRES_EP_NAMES_MAX + 1;
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	cfg2.eps[1].id.n_names = 1;
	cfg2.n_eps = CFG_MAX_ENDPOINTS + 1;
	assert_int_equal(config_validate(&cfg2, err, sizeof(err)), -EINVAL);
	/* a NULL or empty error buffer is fine */
	cfg2.n_eps = 0;
	assert_int_equal(config_validate(&cfg2, NULL, 0), -EINVAL);
	assert_int_equal(config_parse("t", "x", 1, &cfg2, NULL, 0), -EINVAL);
	assert_int_equal(config_parse("t", "x", 1, &cfg2, err, 1), -EINVAL);
	assert_string_equal(err, "");
}

/* A client that keeps every default waits longer than the daemon may make a
 * lookup wait with its defaults: it gets the daemon's answer, never a
 * timeout of its own first. 5 s, the old client default, was shorter than
 * the 8.2 s the daemon may take. */
static void test_clients_outwait_the_default_bound(void **state)
{
	(void)state;
	config_defaults(&cfg);
	assert_int_equal(request_bound_ms(&cfg), 7700 + 500);
	assert_true(request_bound_ms(&cfg) + 1000 <= IBRES_TIMEOUT_DEFAULT_MS);
}

static void test_default_names(void **state)
{
	(void)state;
	expect_ok("[endpoint a]\ndevice = mlx5_0\n[endpoint b]\ndevice = mlx5_1\n");
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -EINVAL);
	assert_int_equal(config_default_names(&cfg, "bad_name"), -EINVAL);
	assert_int_equal(cfg.eps[0].id.n_names, 0);
	assert_int_equal(config_default_names(&cfg, "node7.cluster.example"), 0);
	assert_int_equal(cfg.eps[0].id.n_names, 2);
	assert_string_equal(cfg.eps[0].id.names[0], "node7.cluster.example");
	assert_string_equal(cfg.eps[0].id.names[1], "node7");
	/* every endpoint without a name: one host of two rails */
	assert_int_equal(cfg.eps[1].id.n_names, 2);
	assert_string_equal(cfg.eps[1].id.names[0], "node7.cluster.example");
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);

	expect_ok("[endpoint a]\ndevice = mlx5_0\n");
	assert_int_equal(config_default_names(&cfg, "node7"), 0);
	assert_int_equal(cfg.eps[0].id.n_names, 1);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	/* a numeric first label is not added as an alias */
	expect_ok("[endpoint a]\ndevice = mlx5_0\n");
	assert_int_equal(config_default_names(&cfg, "123.example"), 0);
	assert_int_equal(cfg.eps[0].id.n_names, 1);
	/* configured names win */
	expect_ok(EP_OK);
	assert_int_equal(config_default_names(&cfg, "other"), 0);
	assert_int_equal(cfg.eps[0].id.n_names, 1);
	assert_string_equal(cfg.eps[0].id.names[0], "node1");
}

/* ---- config_print ------------------------------------------------------- */

static char *print_cfg(const struct ibres_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	config_print(c, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void round_trip(const char *text)
{
	char *out, *out2;
	int ret;

	expect_ok(text);
	out = print_cfg(&cfg);
	ret = config_parse("printed", out, strlen(out), &cfg2, err, sizeof(err));
	if (ret)
		fail_msg("printed config does not parse: %s\n%s", err, out);
	/* where it was read from is not configuration */
	memcpy(cfg2.source, cfg.source, sizeof(cfg.source));
	for (unsigned i = 0; i < cfg.n_eps; i++)
		cfg2.eps[i].line = cfg.eps[i].line;
	if (memcmp(&cfg, &cfg2, sizeof(cfg)))
		fail_msg("printed config parses differently:\n%s", out);
	out2 = print_cfg(&cfg2);
	assert_string_equal(out, out2);
	free(out);
	free(out2);
}

static void test_print_round_trip(void **state)
{
	char *out;

	(void)state;
	round_trip("");
	round_trip(EP_OK);
	round_trip("[daemon]\nsocket = /tmp/s p a c e.sock\nacm_socket = /run/ibacm-unix.sock\n"
		   "acm_link = on\nlog_level = warning\nmax_clients = 3\nmax_clients_per_uid = 2\n"
		   "client_timeout = 1500ms\n"
		   "user = ibres\n"
		   "[resolve]\ntimeout = 1500\nretries = 0\naddr_ttl = 90\nroute_ttl = 7d\n"
		   "negative_ttl = 0\ncache_size = 100\nroute_prot = sa\n"
		   "hosts_file = /etc/ibres/hosts\nname_pattern = a* b?\nname_pattern = c[0-9]\n"
		   "settle_time = 0\nannounce_interval = 0\ncluster_key_file = /k\n"
		   "[endpoint ib0]\ngid = fe80::2:c903:0:1\nlid = 0x10\npkey = 0x8001\n"
		   "qpn = 0x48\nmtu = 4096\nrate = 2.5\nsl = 3\npacket_life = 0\n"
		   "name = node1.example\nname = node1\naddress = 2001:db8::1\n"
		   "address = 198.18.0.1\naddress = 198.18.0.9\ndev_guid = abc\nport_num = 2\n"
		   "device = mlx5_0\ntransport = ip\ninterface = ib0\nudp_port = 9\n"
		   "group = 239.255.73.1 rate=600\ngroup = ff15::1:2 mtu=256\n"
		   "[endpoint ib1]\ndevice = hfi1_0\ntransport = ib\nname = x\n"
		   "[endpoint e.2]\n");

	/* every key is printed, defaults included */
	expect_ok(EP_OK);
	out = print_cfg(&cfg);
	static const char *const want[] = {
		"[daemon]\n", "socket = /run/ibres/ibresd.sock\n", "acm_socket = none\n",
		"acm_link = no\n", "log_level = info\n", "max_clients = 1024\n",
		"max_clients_per_uid = 0\n",
		"client_timeout = 10s\n", "user = none\n", "[resolve]\n", "timeout = 1s\n",
		"retries = 3\n",
		"addr_ttl = 1h\n", "route_ttl = 1h\n", "negative_ttl = 10s\n",
		"cache_size = 65536\n", "route_prot = mcast\n", "hosts_file = none\n",
		"# name_pattern", "settle_time = 3s\n", "announce_interval = 1m\n",
		"cluster_key_file = none\n", "sa_window = 4\n", "port_poll_interval = 2s\n",
		"[endpoint ib0]\n", "gid = fe80::1\n", "lid = 1\n",
		"pkey = 0xffff\n", "qpn = 1\n", "mtu = 2048\n", "rate = 10\n", "sl = 0\n",
		"packet_life = 18\n", "name = node1\n", "# address",
		"dev_guid = 0x0000000000000000\n",
		"port_num = 1\n", "# device", "transport = none\n", "# interface",
		"udp_port = 4790\n", "# group",
	};
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(out, want[i]))
			fail_msg("'%s' missing from:\n%s", want[i], out);
	free(out);
}

/* ---- config_load and the shipped files --------------------------------- */

static void test_load_errors(void **state)
{
	char path[] = "/tmp/test_config.XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(config_load("/nonexistent/ibresd.conf", &cfg, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "/nonexistent/ibresd.conf: No such file or directory");
	assert_int_equal(cfg.max_clients, 1024); /* defaults */
	assert_int_equal(config_load("/", &cfg, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, "/: Is a directory");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[resolve]\nretries = 99\n", 23), 23);
	close(fd);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: invalid value '99' for 'retries'"));
	assert_memory_equal(err, path, strlen(path));
	unlink(path);
}

static void test_single_node_conf(void **state)
{
	const struct cfg_endpoint *ep = &cfg.eps[0];
	uint8_t gid[16];
	struct in6_addr a6;

	(void)state;
	if (config_load("conf/examples/single-node.conf", &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	if (config_validate(&cfg, err, sizeof(err)))
		fail_msg("%s", err);
	assert_string_equal(cfg.socket_path, IBRES_DEFAULT_SOCKET);
	assert_int_equal(cfg.n_eps, 1);
	assert_string_equal(ep->label, "ib0");
	assert_int_equal(ep->id.n_names, 1);
	assert_string_equal(ep->id.names[0], "node1");
	assert_int_equal(ep->id.n_v4, 1);
	assert_int_equal(ep->id.v4[0].s_addr, inet_addr("198.18.0.1"));
	assert_int_equal(ep->id.n_v6, 1);
	inet_pton(AF_INET6, "2001:db8::1", &a6);
	assert_memory_equal(&ep->id.v6[0], &a6, 16);
	gid_of("fe80::2:c903:0:1", gid);
	assert_memory_equal(ep->id.gids[0], gid, 16);
	assert_int_equal(ep->id.lid, 1);
	assert_int_equal(ep->id.pkey, 0xffff);
	assert_int_equal(ep->mtu, 4);
	assert_int_equal(ep->rate, 3);
	assert_int_equal(ep->sl, 0);
	assert_int_equal(ep->transport, TRANSPORT_NONE);
}

static void test_shipped_conf(void **state)
{
	const struct cfg_endpoint *ep = &cfg.eps[0];
	const struct sockaddr_in *g;

	(void)state;
	if (config_load("conf/ibresd.conf", &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	/* the shipped file names no host: the daemon adds the host name */
	assert_int_equal(config_default_names(&cfg, "node7"), 0);
	if (config_validate(&cfg, err, sizeof(err)))
		fail_msg("%s", err);
	assert_string_equal(cfg.socket_path, IBRES_DEFAULT_SOCKET);
	assert_string_equal(cfg.acm_socket_path, "");
	assert_false(cfg.acm_link);
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
	assert_int_equal(cfg.max_clients, 1024);
	assert_int_equal(cfg.client_timeout_ms, 10000);
	assert_int_equal(cfg.timeout_ms, 1000);
	assert_int_equal(cfg.retries, 3);
	assert_int_equal(cfg.addr_ttl_s, 3600);
	assert_int_equal(cfg.route_ttl_s, 3600);
	assert_int_equal(cfg.negative_ttl_s, 10);
	assert_int_equal(cfg.cache_size, 65536);
	assert_int_equal(cfg.route_prot, ROUTE_PROT_MCAST);
	assert_string_equal(cfg.hosts_file, "");
	assert_int_equal(cfg.n_patterns, 0);
	assert_int_equal(cfg.settle_ms, 3000);
	assert_int_equal(cfg.announce_interval_s, 60);
	assert_string_equal(cfg.cluster_key_file, "");
	assert_int_equal(cfg.n_eps, 1);
	assert_string_equal(ep->label, "ib0");
	assert_string_equal(ep->id.names[0], "node7");
	assert_int_equal(ep->transport, TRANSPORT_IP);
	assert_string_equal(ep->interface, "ib0");
	assert_string_equal(ep->device, "mlx5_0");
	assert_int_equal(ep->udp_port, 4790);
	assert_int_equal(ep->n_groups, 2);
	g = (const struct sockaddr_in *)&ep->groups[0].addr;
	assert_int_equal(g->sin_family, AF_INET);
	assert_int_equal(g->sin_addr.s_addr, inet_addr("239.255.73.1"));
	assert_int_equal(ep->groups[0].mtu, 4);
	assert_int_equal(ep->groups[0].rate, 3);
	g = (const struct sockaddr_in *)&ep->groups[1].addr;
	assert_int_equal(g->sin_addr.s_addr, inet_addr("239.255.73.2"));
	assert_int_equal(ep->groups[1].mtu, 5);
	assert_int_equal(ep->groups[1].rate, 16);
	assert_int_equal(ep->id.pkey, 0xffff);
	assert_int_equal(ep->id.qpn, 1);
	assert_int_equal(ep->sl, 0);
	assert_int_equal(ep->packet_life, 18);
	assert_int_equal(ep->port_num, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_clients_outwait_the_default_bound),
		cmocka_unit_test(test_endpoint_defaults),
		cmocka_unit_test(test_daemon_keys),
		cmocka_unit_test(test_resolve_keys),
		cmocka_unit_test(test_name_patterns_limit),
		cmocka_unit_test(test_endpoint_keys),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_enum_lists),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_missing_value),
		cmocka_unit_test(test_hostname_limits),
		cmocka_unit_test(test_structure_errors),
		cmocka_unit_test(test_line_length),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_duplicates_in_endpoint),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_reload_check),
		cmocka_unit_test(test_default_names),
		cmocka_unit_test(test_print_round_trip),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_single_node_conf),
		cmocka_unit_test(test_shipped_conf),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
