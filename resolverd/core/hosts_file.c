// SPDX-License-Identifier: MIT
/*
 * The static hosts file: one remote host a line, "GID LID NAME [NAME|ADDRESS|
 * qpn=N|pkey=N ...]", read with the config's text layer (config_lex.h). A
 * hash of every GID, name and address seen so far finds a duplicate on any
 * earlier line in one pass.
 *
 * Nothing here logs or exits: errors come back as "FILE:LINE: message".
 */
#include "core/hosts_file.h"

#include "core/config_lex.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HOSTS_FILE_MAX (256u << 20) /* largest hosts file read */

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

enum { DK_EMPTY, DK_GID, DK_NAME, DK_V4, DK_V6 };

/* One name, address or GID already seen, by its place in the host array
 * (which moves when it grows, so no pointers). */
struct dedup_ent {
	uint32_t host;
	uint32_t line;
	uint8_t kind;
	uint8_t idx;
};

struct dedup {
	struct dedup_ent *tab;
	size_t cap; /* power of two */
	size_t used;
};

static const void *dedup_key(const struct cfg_hosts *h, uint8_t kind, uint32_t host, uint8_t idx,
			     size_t *len)
{
	const struct ibres_hostrec *r = &h->hosts[host];

	switch (kind) {
	case DK_GID:
		*len = 16;
		return r->gids[idx];
	case DK_NAME:
		*len = strlen(r->names[idx]);
		return r->names[idx];
	case DK_V4:
		*len = 4;
		return &r->v4[idx];
	default:
		*len = 16;
		return &r->v6[idx];
	}
}

static size_t dedup_hash(uint8_t kind, const uint8_t *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ kind;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)(kind == DK_NAME ? lower((char)key[i]) : (char)key[i]);
		h *= 0x100000001b3ull;
	}
	return (size_t)(h ^ (h >> 29));
}

static bool dedup_eq(const struct cfg_hosts *h, const struct dedup_ent *e, uint8_t kind,
		     const void *key, size_t len)
{
	const void *k2;
	size_t len2;

	if (e->kind != kind)
		return false;
	k2 = dedup_key(h, e->kind, e->host, e->idx, &len2);
	if (kind == DK_NAME)
		return !strcasecmp(k2, key);
	return len == len2 && !memcmp(k2, key, len);
}

static int dedup_grow(struct dedup *d, const struct cfg_hosts *h)
{
	size_t cap = d->cap ? d->cap * 2 : 256, i, j, len;
	struct dedup_ent *tab;
	const void *key;

	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (i = 0; i < d->cap; i++) {
		const struct dedup_ent *e = &d->tab[i];

		if (e->kind == DK_EMPTY)
			continue;
		key = dedup_key(h, e->kind, e->host, e->idx, &len);
		for (j = dedup_hash(e->kind, key, len) & (cap - 1); tab[j].kind != DK_EMPTY;
		     j = (j + 1) & (cap - 1))
			;
		tab[j] = *e;
	}
	free(d->tab);
	d->tab = tab;
	d->cap = cap;
	return 0;
}

/* Record an item of host @host; 0, -ENOMEM, or -EEXIST with the line where
 * it was first seen in *first. */
static int dedup_add(struct dedup *d, const struct cfg_hosts *h, uint8_t kind, uint32_t host,
		     uint8_t idx, uint32_t line, uint32_t *first)
{
	const void *key;
	size_t len, j;
	int ret;

	if ((d->used + 1) * 2 > d->cap) {
		ret = dedup_grow(d, h);
		if (ret)
			return ret;
	}
	key = dedup_key(h, kind, host, idx, &len);
	for (j = dedup_hash(kind, key, len) & (d->cap - 1); d->tab[j].kind != DK_EMPTY;
	     j = (j + 1) & (d->cap - 1)) {
		if (dedup_eq(h, &d->tab[j], kind, key, len)) {
			*first = d->tab[j].line;
			return -EEXIST;
		}
	}
	d->tab[j] = (struct dedup_ent){ .host = host, .line = line, .kind = kind, .idx = idx };
	d->used++;
	return 0;
}

struct hosts_parser {
	struct line_reader r;
	struct cfg_hosts *h;
	unsigned cap;
	struct dedup dd;
};

static int herr(struct hosts_parser *hp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int herr(struct hosts_parser *hp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_line_verr(&hp->r, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int hosts_dedup(struct hosts_parser *hp, uint8_t kind, uint8_t idx, const char *tok)
{
	static const char *const what[] = { "", "GID", "name", "address", "address" };
	char qb[QUOTE_MAX + 1];
	uint32_t first;
	int ret;

	ret = dedup_add(&hp->dd, hp->h, kind, hp->h->n_hosts, idx, hp->r.lineno, &first);
	if (ret == -ENOMEM) {
		herr(hp, "out of memory");
		return -ENOMEM;
	}
	if (ret == -EEXIST && first == hp->r.lineno)
		return herr(hp, "%s '%s' given twice", what[kind], cfg_quote(tok, qb));
	if (ret == -EEXIST)
		return herr(hp, "%s '%s' already given on line %u", what[kind], cfg_quote(tok, qb),
			    first);
	return ret;
}

#define HOSTS_SYNTAX "'GID LID NAME [NAME|ADDRESS|qpn=N|pkey=N ...]'"

static int hosts_option(struct hosts_parser *hp, struct ibres_hostrec *r, const char *tok,
			bool *have_qpn, bool *have_pkey)
{
	char qb[QUOTE_MAX + 1];
	uint64_t v;

	if (!strncmp(tok, "qpn=", 4)) {
		if (*have_qpn)
			return herr(hp, "qpn given twice");
		if (cfg_parse_uint(tok + 4, &v) || v < 1 || v > 0xffffff)
			return herr(hp, "invalid value '%s' for 'qpn': expected an integer "
				    "1..16777215", cfg_quote(tok + 4, qb));
		r->qpn = (uint32_t)v;
		*have_qpn = true;
		return 0;
	}
	if (!strncmp(tok, "pkey=", 5)) {
		if (*have_pkey)
			return herr(hp, "pkey given twice");
		if (cfg_parse_uint(tok + 5, &v) || v > 0xffff)
			return herr(hp, "invalid value '%s' for 'pkey': expected an integer "
				    "0x0..0xffff", cfg_quote(tok + 5, qb));
		r->pkey = (uint16_t)v;
		*have_pkey = true;
		return 0;
	}
	return herr(hp, "unknown option '%s': expected qpn=N or pkey=N", cfg_quote(tok, qb));
}

static int hosts_line(void *ctx, char *line)
{
	struct hosts_parser *hp = ctx;
	bool have_qpn = false, have_pkey = false;
	char qb[QUOTE_MAX + 1];
	struct ibres_hostrec *r, *nh;
	struct in6_addr v6;
	struct in_addr v4;
	char *tok, *s = line;
	uint64_t v;
	int ret;

	if (hp->h->n_hosts == CFG_HOSTS_MAX)
		return herr(hp, "too many hosts: at most %u", CFG_HOSTS_MAX);
	if (hp->h->n_hosts == hp->cap) {
		unsigned cap = hp->cap ? hp->cap * 2 : 16;

		if (cap > CFG_HOSTS_MAX)
			cap = CFG_HOSTS_MAX;
		nh = realloc(hp->h->hosts, (size_t)cap * sizeof(*nh));
		if (!nh) {
			herr(hp, "out of memory");
			return -ENOMEM;
		}
		hp->h->hosts = nh;
		hp->cap = cap;
	}
	r = &hp->h->hosts[hp->h->n_hosts];
	memset(r, 0, sizeof(*r));
	r->qpn = 1;
	r->pkey = 0xffff;

	tok = cfg_next_token(&s);
	if (!cfg_parse_gid(tok, r->gids[0]))
		return herr(hp, "invalid GID '%s': expected an IPv6-style GID such as "
			    "fe80::2:c903:0:1; line format " HOSTS_SYNTAX, cfg_quote(tok, qb));
	r->n_gids = 1;
	ret = hosts_dedup(hp, DK_GID, 0, tok);
	if (ret)
		return ret;
	tok = cfg_next_token(&s);
	if (!tok)
		return herr(hp, "missing LID and name: expected " HOSTS_SYNTAX);
	if (cfg_parse_uint(tok, &v) || v < 1 || v > 0xbfff)
		return herr(hp, "invalid LID '%s': expected an integer 1..49151",
			    cfg_quote(tok, qb));
	r->lid = (uint16_t)v;

	while ((tok = cfg_next_token(&s))) {
		if (strchr(tok, '=')) {
			ret = hosts_option(hp, r, tok, &have_qpn, &have_pkey);
		} else if (inet_pton(AF_INET, tok, &v4) == 1 ||
			   inet_pton(AF_INET6, tok, &v6) == 1) {
			switch (cfg_parse_unicast(tok, &v4, &v6)) {
			case AF_INET:
				if (r->n_v4 == IBRES_EP_ADDRS_MAX)
					return herr(hp, "too many IPv4 addresses: at most %u",
						    IBRES_EP_ADDRS_MAX);
				r->v4[r->n_v4++] = v4;
				ret = hosts_dedup(hp, DK_V4, (uint8_t)(r->n_v4 - 1), tok);
				break;
			case AF_INET6:
				if (r->n_v6 == IBRES_EP_ADDRS_MAX)
					return herr(hp, "too many IPv6 addresses: at most %u",
						    IBRES_EP_ADDRS_MAX);
				r->v6[r->n_v6++] = v6;
				ret = hosts_dedup(hp, DK_V6, (uint8_t)(r->n_v6 - 1), tok);
				break;
			default:
				return herr(hp, "invalid address '%s': expected a unicast address",
					    cfg_quote(tok, qb));
			}
		} else if (cfg_valid_hostname(tok)) {
			if (r->n_names == IBRES_EP_NAMES_MAX)
				return herr(hp, "too many names: at most %u", IBRES_EP_NAMES_MAX);
			memcpy(r->names[r->n_names++], tok, strlen(tok));
			ret = hosts_dedup(hp, DK_NAME, (uint8_t)(r->n_names - 1), tok);
		} else {
			return herr(hp, "invalid field '%s': expected a host name, an IPv4 or IPv6 "
				    "address, qpn=N or pkey=N", cfg_quote(tok, qb));
		}
		if (ret)
			return ret;
	}
	if (!r->n_names)
		return herr(hp, "no host name given: expected " HOSTS_SYNTAX);
	hp->h->n_hosts++;
	return 0;
}

int hosts_parse(const char *name, const char *text, size_t len, struct cfg_hosts *hosts,
		char *err, size_t errlen)
{
	struct hosts_parser *hp;
	int ret;

	hosts->hosts = NULL;
	hosts->n_hosts = 0;
	cfg_set_err(err, errlen, "%s", "");
	hp = calloc(1, sizeof(*hp));
	if (!hp) {
		cfg_set_err(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	hp->h = hosts;
	cfg_line_reader_init(&hp->r, name, text, len, err, errlen);
	ret = cfg_each_line(&hp->r, hosts_line, hp);
	free(hp->dd.tab);
	free(hp);
	if (ret)
		hosts_free(hosts);
	return ret;
}

int hosts_load(const char *path, struct cfg_hosts *hosts, char *err, size_t errlen)
{
	size_t len;
	char *text;
	int ret;

	hosts->hosts = NULL;
	hosts->n_hosts = 0;
	ret = cfg_read_file(path, HOSTS_FILE_MAX, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = hosts_parse(path, text, len, hosts, err, errlen);
	free(text);
	return ret;
}

void hosts_free(struct cfg_hosts *hosts)
{
	free(hosts->hosts);
	hosts->hosts = NULL;
	hosts->n_hosts = 0;
}
