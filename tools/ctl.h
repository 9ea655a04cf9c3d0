/* SPDX-License-Identifier: MIT */
/*
 * ibresctl's parts shared between its files: the command's state, a key
 * given on the command line, the exit statuses and the helpers every
 * command uses (ibresctl.c); the cache (ctl_cache.c) and config
 * (ctl_config.c) commands.
 */
#ifndef IBRES_TOOLS_CTL_H
#define IBRES_TOOLS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conn.h"
#include "ibres.h"
#include "json.h"

enum { EXIT_NEGATIVE = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

#define ANSWER_MAX	(IBRES_MSG_MAX + 1)
#define CACHE_PAGES_MAX 100000 /* bound on CACHE_LIST round trips */

struct ctl {
	struct ibres *h;
	const char *socket; /* for messages */
	int timeout_ms;
	bool json;
	bool prometheus;       /* --format prometheus (stats only) */
	const char *hosts_out; /* --hosts-out (config import-ibacm) */
	bool cache_only;
	bool nodelay;
	const char *gen_device; /* config generate --device */
	const char *gen_name;	/* config generate --name */
	struct json j;
	uint8_t ans[ANSWER_MAX];
};

/* A lookup key given on the command line. */
struct key {
	uint16_t type; /* IBRES_T_NAME, _IPV4, _IPV6 or _GID */
	uint8_t data[IBRES_NAME_MAX + 1];
	size_t len;
	bool maybe_gid; /* an IPv6 literal without "gid:": a GID if not an address */
};

/* Print "ibresctl: ", @fmt with @arg and where --help is to stderr; returns
 * EXIT_USAGE. */
int ctl_usage_error(const char *fmt, const char *arg);
/* Report a failed request (@what): an answer's @status > 0 exits 1, no
 * (usable) answer (@err) exits 3; the JSON error object too with --json. */
int ctl_failed(struct ctl *c, const char *what, int err, int status);
/* A host name, IPv4 or IPv6 address, or "gid:" GID into @k; 0 or -EINVAL. */
int ctl_parse_key(const char *arg, struct key *k);
/* An extension request @op whose body is at most the key @k and one u32 item
 * (@u32_type 0: none): as ibc_ext(), the answer in c->ans. */
int ctl_ext_call(struct ctl *c, uint8_t op, const struct key *k, uint16_t u32_type, uint32_t u32,
		 uint8_t *status, const uint8_t **body, size_t *len);

/* ibresctl cache list | cache flush [KEY] (ctl_cache.c) */
int cmd_cache(struct ctl *c, int argc, char **argv);
/* ibresctl config check FILE | generate | import-ibacm (ctl_config.c) */
int cmd_config(struct ctl *c, int argc, char **argv);

#endif
