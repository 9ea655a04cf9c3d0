// SPDX-License-Identifier: MIT
/* Unit tests of resolverd/core/hosts_file.c: the static hosts file. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/hosts_file.h"

static char err[CFG_ERR_MAX];

static void gid_of(const char *s, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

static struct cfg_hosts hosts;

static int hparse(const char *text)
{
	return hosts_parse("h", text, strlen(text), &hosts, err, sizeof(err));
}

static void expect_hosts_error(const char *text, const char *want)
{
	int ret = hparse(text);

	if (ret != -EINVAL || !strstr(err, want))
		fail_msg("input:\n%s\nret %d, error \"%s\", wanted \"%s\"", text, ret, err, want);
	assert_null(hosts.hosts);
	assert_int_equal(hosts.n_hosts, 0);
}

static void test_hosts_parse(void **state)
{
	const struct ibres_hostrec *r;
	struct in6_addr a6;
	uint8_t gid[16];

	(void)state;
	assert_int_equal(hparse("# static hosts\n\n"
				"fe80::2:c903:0:2 2 node2 node2.cluster 198.18.0.2 2001:db8::2\n"
				"  fe80::2:c903:0:3\t0x3 198.18.0.3 node3 qpn=0x48 pkey=0x8001"
				" # x\n"
				"fe80::2:c903:0:4 49151 node4 2001:db8::4 n4 198.18.0.4 "
				"198.18.1.4\n"), 0);
	assert_string_equal(err, "");
	assert_int_equal(hosts.n_hosts, 3);
	r = &hosts.hosts[0];
	gid_of("fe80::2:c903:0:2", gid);
	assert_int_equal(r->n_gids, 1);
	assert_memory_equal(r->gids[0], gid, 16);
	assert_int_equal(r->lid, 2);
	assert_int_equal(r->qpn, 1);
	assert_int_equal(r->pkey, 0xffff);
	assert_int_equal(r->ttl, 0);
	assert_int_equal(r->n_names, 2);
	assert_string_equal(r->names[0], "node2");
	assert_string_equal(r->names[1], "node2.cluster");
	assert_int_equal(r->n_v4, 1);
	assert_int_equal(r->v4[0].s_addr, inet_addr("198.18.0.2"));
	assert_int_equal(r->n_v6, 1);
	inet_pton(AF_INET6, "2001:db8::2", &a6);
	assert_memory_equal(&r->v6[0], &a6, 16);
	r = &hosts.hosts[1];
	assert_int_equal(r->lid, 3);
	assert_int_equal(r->qpn, 0x48);
	assert_int_equal(r->pkey, 0x8001);
	assert_int_equal(r->n_names, 1);
	assert_string_equal(r->names[0], "node3"); /* first name is canonical */
	r = &hosts.hosts[2];
	assert_int_equal(r->lid, 49151);
	assert_int_equal(r->n_names, 2);
	assert_string_equal(r->names[1], "n4");
	assert_int_equal(r->n_v4, 2);
	assert_int_equal(r->v4[1].s_addr, inet_addr("198.18.1.4"));
	hosts_free(&hosts);
	assert_null(hosts.hosts);
	assert_int_equal(hosts.n_hosts, 0);

	/* empty files */
	assert_int_equal(hparse(""), 0);
	assert_int_equal(hosts.n_hosts, 0);
	hosts_free(&hosts);
	assert_int_equal(hparse("# only comments\n\n  # more\n"), 0);
	assert_int_equal(hosts.n_hosts, 0);
	hosts_free(&hosts);
	/* no final newline, CRLF */
	assert_int_equal(hparse("fe80::1 1 a\r\nfe80::2 2 b"), 0);
	assert_int_equal(hosts.n_hosts, 2);
	assert_string_equal(hosts.hosts[1].names[0], "b");
	hosts_free(&hosts);
}

static void test_hosts_errors(void **state)
{
	static char text[8192];
	size_t n;
	unsigned i;

	(void)state;
	expect_hosts_error("fe80::zz 1 a\n", "h:1: invalid GID 'fe80::zz': expected an IPv6-style "
			   "GID");
	expect_hosts_error("\n:: 1 a\n", "h:2: invalid GID '::'");
	expect_hosts_error("node1 1 a\n", "invalid GID 'node1'");
	expect_hosts_error("fe80::1\n", "h:1: missing LID and name");
	expect_hosts_error("fe80::1 0 a\n", "h:1: invalid LID '0': expected an integer 1..49151");
	expect_hosts_error("fe80::1 0xc000 a\n", "invalid LID '0xc000'");
	expect_hosts_error("fe80::1 x a\n", "invalid LID 'x'");
	expect_hosts_error("fe80::1 1\n", "h:1: no host name given");
	expect_hosts_error("fe80::1 1 198.18.0.1\n", "no host name given");
	expect_hosts_error("fe80::1 1 a_b\n", "h:1: invalid field 'a_b': expected a host name, an "
			   "IPv4 or IPv6 address, qpn=N or pkey=N");
	expect_hosts_error("fe80::1 1 a 239.1.1.1\n", "invalid address '239.1.1.1': expected a "
			   "unicast address");
	expect_hosts_error("fe80::1 1 a ff02::1\n", "invalid address 'ff02::1'");
	expect_hosts_error("fe80::1 1 a qpn=0\n", "invalid value '0' for 'qpn': expected an "
			   "integer 1..16777215");
	expect_hosts_error("fe80::1 1 a qpn=0x1000000\n", "for 'qpn'");
	expect_hosts_error("fe80::1 1 a pkey=0x10000\n", "invalid value '0x10000' for 'pkey': "
			   "expected an integer 0x0..0xffff");
	expect_hosts_error("fe80::1 1 a pkey=\n", "for 'pkey'");
	expect_hosts_error("fe80::1 1 a qpn=2 qpn=3\n", "qpn given twice");
	expect_hosts_error("fe80::1 1 a pkey=2 pkey=3\n", "pkey given twice");
	expect_hosts_error("fe80::1 1 a lid=3\n", "unknown option 'lid=3': expected qpn=N or "
			   "pkey=N");
	/* repeated on two lines, or on one */
	expect_hosts_error("fe80::1 1 a\n# c\nfe80::2 2 b A\n", "h:3: name 'A' already given on "
			   "line 1");
	expect_hosts_error("fe80::1 1 a\nfe80:0::1 2 b\n", "h:2: GID 'fe80:0::1' already given on "
			   "line 1");
	expect_hosts_error("fe80::1 1 a 198.18.0.1\nfe80::2 2 b 198.18.0.1\n",
			   "h:2: address '198.18.0.1' already given on line 1");
	expect_hosts_error("fe80::1 1 a 2001:db8::1\nfe80::2 2 b 2001:db8::1\n",
			   "address '2001:db8::1' already given on line 1");
	expect_hosts_error("fe80::1 1 a b a\n", "h:1: name 'a' given twice");
	expect_hosts_error("fe80::1 1 a 198.18.0.1 198.18.0.1\n", "address '198.18.0.1' given "
			   "twice");
	/* the same LID on two lines is allowed (two P_Keys of one port) */
	assert_int_equal(hparse("fe80::1 1 a\nfe80::2 1 b\n"), 0);
	hosts_free(&hosts);
	/* per-line limits */
	n = (size_t)snprintf(text, sizeof(text), "fe80::1 1");
	for (i = 0; i < IBRES_EP_NAMES_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " n%u", i);
	assert_int_equal(hparse(text), 0);
	assert_int_equal(hosts.hosts[0].n_names, IBRES_EP_NAMES_MAX);
	hosts_free(&hosts);
	snprintf(text + n, sizeof(text) - n, " more");
	expect_hosts_error(text, "too many names: at most 8");
	n = (size_t)snprintf(text, sizeof(text), "fe80::1 1 a");
	for (i = 0; i < IBRES_EP_ADDRS_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " 198.18.0.%u 2001:db8::%u",
				      i + 1, i + 1);
	assert_int_equal(hparse(text), 0);
	hosts_free(&hosts);
	snprintf(text + n, sizeof(text) - n, " 198.18.9.9");
	expect_hosts_error(text, "too many IPv4 addresses: at most 8");
	snprintf(text + n, sizeof(text) - n, " 2001:db8::9:9");
	expect_hosts_error(text, "too many IPv6 addresses: at most 8");
	/* line length and control characters */
	n = (size_t)snprintf(text, sizeof(text), "fe80::1 1 a\n#");
	memset(text + n, 'x', CFG_LINE_MAX);
	text[n + CFG_LINE_MAX] = '\0';
	expect_hosts_error(text, "h:2: line longer than 1024 characters");
	expect_hosts_error("fe80::1 1 a\x7f\n", "h:1: invalid control character 0x7f");
	/* errors after hosts were added leak nothing (checked under valgrind/ASan) */
	n = 0;
	for (i = 1; i <= 100; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "fe80::%x %u h%u\n", i, i, i);
	assert_int_equal(hparse(text), 0);
	assert_int_equal(hosts.n_hosts, 100);
	hosts_free(&hosts);
	snprintf(text + n, sizeof(text) - n, "fe80::1 1 x\n");
	expect_hosts_error(text, "h:101: GID 'fe80::1' already given on line 1");
}

static void test_hosts_many(void **state)
{
	size_t cap = (size_t)(CFG_HOSTS_MAX + 1) * 48, n = 0;
	char *text = malloc(cap);
	unsigned i;
	int ret;

	(void)state;
	assert_non_null(text);
	for (i = 0; i < CFG_HOSTS_MAX; i++)
		n += (size_t)snprintf(text + n, cap - n, "fe80::1:%x %u n%u 10.%u.%u.%u\n", i,
				      i % 0xbfff + 1, i, i >> 16, (i >> 8) & 255, i & 255);
	ret = hosts_parse("h", text, n, &hosts, err, sizeof(err));
	if (ret)
		fail_msg("%s", err);
	assert_int_equal(hosts.n_hosts, CFG_HOSTS_MAX);
	assert_string_equal(hosts.hosts[CFG_HOSTS_MAX - 1].names[0], "n65535");
	hosts_free(&hosts);
	snprintf(text + n, cap - n, "fe80::2:1 1 last\n");
	ret = hosts_parse("h", text, strlen(text), &hosts, err, sizeof(err));
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(err, "h:65537: too many hosts: at most 65536");
	assert_null(hosts.hosts);
	free(text);
}

static void test_hosts_load(void **state)
{
	(void)state;
	assert_int_equal(hosts_load("/nonexistent/hosts", &hosts, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/hosts: No such file or directory");
	assert_null(hosts.hosts);
	if (hosts_load("conf/examples/hosts.example", &hosts, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(hosts.n_hosts >= 3);
	assert_string_equal(hosts.hosts[0].names[0], "node2");
	assert_int_equal(hosts.hosts[0].lid, 2);
	hosts_free(&hosts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hosts_parse),
		cmocka_unit_test(test_hosts_errors),
		cmocka_unit_test(test_hosts_many),
		cmocka_unit_test(test_hosts_load),
	};

	return cmocka_run_group_tests_name("hosts_file", tests, NULL, NULL);
}
