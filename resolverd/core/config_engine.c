// SPDX-License-Identifier: MIT
/*
 * The config engine: ibresd.conf's shape ([daemon], [resolve], [endpoint
 * LABEL], "key = value") parsed by tables of keys that config_keys.c gives.
 * Each key has a type (integer, boolean, duration, path, string, enumeration
 * or a custom setter), the field it fills and its limits. The same tables
 * give the "expected ..." part of error messages and drive printing, so the
 * printed form always parses back to the same settings.
 *
 * Nothing here logs or exits: errors come back as "FILE:LINE: message".
 */
#include "core/config_engine.h"

#include "core/config_lex.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HINT_DIST 2 /* "did you mean" edit distance */

/* One parse of one text: where it is, what it fills, what it has seen. */
struct parser {
	const struct cfg_schema *schema;
	struct line_reader r;
	struct ibres_config *cfg;
	enum sect_type sect;
	struct cfg_endpoint *ep;
	unsigned *seen; /* first line of each key in the current section, 0 = unset */
	unsigned seen_daemon[KEYS_MAX];
	unsigned seen_resolve[KEYS_MAX];
	unsigned seen_ep[CFG_MAX_ENDPOINTS][KEYS_MAX];
	unsigned ep_line[CFG_MAX_ENDPOINTS];
};

/* ---- values ------------------------------------------------------------- */

/* "N[unit]" in milliseconds; @unit_ms applies when no unit is given. */
static int parse_duration(const char *s, uint64_t unit_ms, uint64_t *ms)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", MS_PER_S }, { "m", MS_PER_M }, { "h", MS_PER_H },
		{ "d", MS_PER_D },
	};
	uint64_t v;
	size_t i;
	int ret;

	ret = cfg_parse_digits(&s, 10, &v);
	if (ret)
		return ret;
	while (is_ws(*s))
		s++;
	if (*s) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(s, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		unit_ms = units[i].ms;
	}
	if (v && unit_ms > UINT64_MAX / v)
		return -ERANGE;
	*ms = v * unit_ms;
	return 0;
}

/* A duration in the largest unit that divides it: "1h", "500ms", "0". */
static const char *fmt_duration(uint64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {
		{ "d", MS_PER_D }, { "h", MS_PER_H }, { "m", MS_PER_M }, { "s", MS_PER_S },
		{ "ms", 1 },
	};
	size_t i;

	if (!ms) {
		snprintf(buf, len, "0");
		return buf;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]) - 1; i++)
		if (ms % units[i].ms == 0)
			break;
	snprintf(buf, len, "%llu%s", (unsigned long long)(ms / units[i].ms), units[i].name);
	return buf;
}

void cfg_store_uint(void *field, size_t size, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (size) {
	case 1:
		memcpy(field, &v8, 1);
		break;
	case 2:
		memcpy(field, &v16, 2);
		break;
	case 4:
		memcpy(field, &v32, 4);
		break;
	default:
		memcpy(field, &v, 8);
		break;
	}
}

uint64_t cfg_load_uint(const void *field, size_t size)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v;

	switch (size) {
	case 1:
		memcpy(&v8, field, 1);
		return v8;
	case 2:
		memcpy(&v16, field, 2);
		return v16;
	case 4:
		memcpy(&v32, field, 4);
		return v32;
	default:
		memcpy(&v, field, 8);
		return v;
	}
}

static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[KEYS_MAX + 1], i, j, diag, tmp;
	size_t la = strlen(a), lb = strlen(b);

	if (la > KEYS_MAX || lb > KEYS_MAX)
		return UINT32_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			diag = tmp;
		}
	}
	return row[lb];
}

/* ---- errors ------------------------------------------------------------- */

int cfg_perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_line_verr(&p->r, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *cfg_sect_label(const struct parser *p, char *buf, size_t len)
{
	switch (p->sect) {
	case SECT_DAEMON:
		return "[daemon]";
	case SECT_RESOLVE:
		return "[resolve]";
	default:
		snprintf(buf, len, "[endpoint %s]", p->ep->label);
		return buf;
	}
}

/* ---- generic key handling ---------------------------------------------- */

static const char *describe(const struct key_def *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	const struct enum_val *e;
	size_t n;

	switch (k->type) {
	case KT_INT:
		if (k->flags & KF_HEX)
			snprintf(buf, len, "an integer 0x%llx..0x%llx", (unsigned long long)k->min,
				 (unsigned long long)k->max);
		else
			snprintf(buf, len, "an integer %llu..%llu", (unsigned long long)k->min,
				 (unsigned long long)k->max);
		break;
	case KT_BOOL:
		snprintf(buf, len, "yes, no, true, false, on, off, 1 or 0");
		break;
	case KT_DURATION:
		snprintf(buf, len, "%s%s %s..%s (units ms, s, m, h, d; default %s)",
			 (k->flags & KF_ZERO_OK) ? "0 (off) or " : "",
			 k->store_ms == 1 ? "a duration" : "a whole number of seconds",
			 fmt_duration(k->min, lo, sizeof(lo)), fmt_duration(k->max, hi, sizeof(hi)),
			 k->unit_ms == 1 ? "ms" : "s");
		break;
	case KT_PATH:
		snprintf(buf, len, "an absolute path of at most %zu characters%s", k->size - 1,
			 (k->flags & KF_NONE) ? " or 'none'" : "");
		break;
	case KT_STRING:
		snprintf(buf, len, "1..%zu characters without spaces%s", k->size - 1,
			 (k->flags & KF_NONE) ? " or 'none'" : "");
		break;
	case KT_ENUM:
		n = (size_t)snprintf(buf, len, "one of");
		for (e = k->enums; e->name && n < len; e++)
			n += (size_t)snprintf(buf + n, len - n, "%s %s", e == k->enums ? "" : ",",
					      e->name);
		break;
	case KT_CUSTOM:
		snprintf(buf, len, "%s", k->expect);
		break;
	}
	return buf;
}

static int set_value(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	uint8_t *field = (uint8_t *)obj + k->off;
	const struct enum_val *e;
	uint64_t v;
	size_t i, n;

	switch (k->type) {
	case KT_INT:
		if (cfg_parse_uint(val, &v) || v < k->min || v > k->max)
			return BAD_VALUE;
		cfg_store_uint(field, k->size, v);
		return 0;
	case KT_BOOL:
		for (i = 0; i < 4; i++) {
			if (!strcasecmp(val, yes[i]) || !strcasecmp(val, no[i])) {
				*(bool *)(void *)field = !strcasecmp(val, yes[i]);
				return 0;
			}
		}
		return BAD_VALUE;
	case KT_DURATION:
		if (parse_duration(val, k->unit_ms, &v) || v % k->store_ms)
			return BAD_VALUE;
		if (!(v == 0 && (k->flags & KF_ZERO_OK)) && (v < k->min || v > k->max))
			return BAD_VALUE;
		cfg_store_uint(field, k->size, v / k->store_ms);
		return 0;
	case KT_PATH:
		n = strlen(val);
		if ((k->flags & KF_NONE) && !strcasecmp(val, "none")) {
			memset(field, 0, k->size);
			return 0;
		}
		if (val[0] != '/' || n >= k->size)
			return BAD_VALUE;
		memset(field, 0, k->size);
		memcpy(field, val, n);
		return 0;
	case KT_STRING:
		n = strlen(val);
		if ((k->flags & KF_NONE) && !strcasecmp(val, "none")) {
			memset(field, 0, k->size);
			return 0;
		}
		if (!n || n >= k->size)
			return BAD_VALUE;
		for (i = 0; i < n; i++)
			if (is_ws(val[i]) || val[i] == '/')
				return BAD_VALUE;
		memset(field, 0, k->size);
		memcpy(field, val, n);
		return 0;
	case KT_ENUM:
		for (e = k->enums; e->name; e++) {
			if (!strcasecmp(val, e->name)) {
				cfg_store_uint(field, k->size, e->val);
				return 0;
			}
		}
		return BAD_VALUE;
	case KT_CUSTOM:
		return k->set(p, k, obj, val);
	}
	return BAD_VALUE;
}

static void print_key(FILE *out, const struct key_def *k, const void *obj)
{
	const uint8_t *field = (const uint8_t *)obj + k->off;
	const struct enum_val *e;
	char buf[32];
	uint64_t v;

	if (k->print) {
		k->print(out, k, obj);
		return;
	}
	switch (k->type) {
	case KT_INT:
		v = cfg_load_uint(field, k->size);
		if (k->flags & KF_HEX)
			fprintf(out, "%s = 0x%04llx\n", k->name, (unsigned long long)v);
		else
			fprintf(out, "%s = %llu\n", k->name, (unsigned long long)v);
		break;
	case KT_BOOL:
		fprintf(out, "%s = %s\n", k->name,
			*(const bool *)(const void *)field ? "yes" : "no");
		break;
	case KT_DURATION:
		v = cfg_load_uint(field, k->size) * k->store_ms;
		fprintf(out, "%s = %s\n", k->name, fmt_duration(v, buf, sizeof(buf)));
		break;
	case KT_PATH:
	case KT_STRING:
		if (field[0])
			fprintf(out, "%s = %.*s\n", k->name, (int)k->size, (const char *)field);
		else if (k->flags & KF_NONE)
			fprintf(out, "%s = none\n", k->name);
		else
			fprintf(out, "# %s (not set)\n", k->name);
		break;
	case KT_ENUM:
		v = cfg_load_uint(field, k->size);
		for (e = k->enums; e->name; e++)
			if (e->val == v)
				break;
		fprintf(out, "%s = %s\n", k->name, e->name ? e->name : "?");
		break;
	case KT_CUSTOM:
		break;
	}
}

static const struct key_def *find_key(const struct section_def *s, const char *name)
{
	unsigned i;

	for (i = 0; i < s->n_keys; i++)
		if (!strcmp(s->keys[i].name, name))
			return &s->keys[i];
	return NULL;
}

static int unknown_key(struct parser *p, const char *key)
{
	const struct section_def *cur = &p->schema->sections[p->sect];
	char lb[96], qb[QUOTE_MAX + 1];
	const char *best = NULL;
	unsigned i, d, best_d = HINT_DIST + 1;
	int s;

	for (s = SECT_DAEMON; s <= SECT_ENDPOINT; s++) {
		if (&p->schema->sections[s] != cur && find_key(&p->schema->sections[s], key))
			return cfg_perr(p, "unknown key '%s' in %s (it belongs in [%s%s])", key,
					cfg_sect_label(p, lb, sizeof(lb)),
					p->schema->sections[s].name,
					s == SECT_ENDPOINT ? " LABEL" : "");
	}
	for (i = 0; i < cur->n_keys; i++) {
		d = edit_distance(key, cur->keys[i].name);
		if (d < best_d) {
			best_d = d;
			best = cur->keys[i].name;
		}
	}
	if (best)
		return cfg_perr(p, "unknown key '%s' in %s (did you mean '%s'?)",
				cfg_quote(key, qb), cfg_sect_label(p, lb, sizeof(lb)), best);
	return cfg_perr(p, "unknown key '%s' in %s", cfg_quote(key, qb),
			cfg_sect_label(p, lb, sizeof(lb)));
}

static bool is_key_char(char c)
{
	return is_alpha(c) || is_digit(c) || c == '_';
}

static int parse_setting(struct parser *p, char *line)
{
	const struct section_def *sect;
	char xb[160], qb[QUOTE_MAX + 1];
	const struct key_def *k;
	char *key = line, *val;
	size_t klen = 0;
	unsigned idx;
	void *obj;
	int ret;

	while (is_key_char(line[klen]))
		klen++;
	val = line + klen;
	while (is_ws(*val))
		val++;
	if (!klen || *val != '=')
		return cfg_perr(p, "syntax error in '%s': expected 'key = value' or '[section]'",
				cfg_quote(line, qb));
	val = cfg_trim(val + 1);
	key[klen] = '\0';
	/* "key =#..." is a comment too: no value starts with '#', so that
	 * config_print's "key = value" reads back the same */
	if (val[0] == '#')
		val[0] = '\0';

	if (p->sect == SECT_NONE)
		return cfg_perr(p,
				"key '%s' outside of any section: put it under [daemon], "
				"[resolve] or [endpoint LABEL]",
				cfg_quote(key, qb));
	sect = &p->schema->sections[p->sect];
	k = find_key(sect, key);
	if (!k)
		return unknown_key(p, key);
	idx = (unsigned)(k - sect->keys);
	if (p->seen[idx] && !(k->flags & KF_REPEAT))
		return cfg_perr(p, "'%s' set twice in %s (first on line %u)", key,
				cfg_sect_label(p, xb, sizeof(xb)), p->seen[idx]);
	if (!p->seen[idx])
		p->seen[idx] = p->r.lineno;
	if (!*val)
		return cfg_perr(p, "missing value for '%s': expected %s", key,
				describe(k, xb, sizeof(xb)));

	obj = p->sect == SECT_ENDPOINT ? (void *)p->ep : (void *)p->cfg;
	ret = set_value(p, k, obj, val);
	if (ret == BAD_VALUE) {
		char db[512];

		return cfg_perr(p, "invalid value '%s' for '%s': expected %s", cfg_quote(val, qb),
				key, describe(k, db, sizeof(db)));
	}
	return ret;
}

static bool valid_label(const char *s)
{
	size_t n = strlen(s), i;

	if (!n || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

static int parse_section(struct parser *p, char *line)
{
	struct ibres_config *cfg = p->cfg;
	char qb[QUOTE_MAX + 1];
	size_t n = strlen(line);
	char *in, *label;
	unsigned i;

	if (n < 2 || line[n - 1] != ']')
		return cfg_perr(p,
				"invalid section header '%s': expected [daemon], [resolve] or "
				"[endpoint LABEL]",
				cfg_quote(line, qb));
	line[n - 1] = '\0';
	in = cfg_trim(line + 1);
	if (!strcmp(in, "daemon")) {
		p->sect = SECT_DAEMON;
		p->seen = p->seen_daemon;
		return 0;
	}
	if (!strcmp(in, "resolve")) {
		p->sect = SECT_RESOLVE;
		p->seen = p->seen_resolve;
		return 0;
	}
	if (strncmp(in, "endpoint", 8) || (in[8] && !is_ws(in[8])))
		return cfg_perr(p,
				"unknown section [%s]: expected [daemon], [resolve] or "
				"[endpoint LABEL]",
				cfg_quote(in, qb));
	label = cfg_trim(in + 8);
	if (!valid_label(label))
		return cfg_perr(p,
				"invalid endpoint label '%s': expected 1..63 letters, digits, "
				"'_', '.' or '-'",
				cfg_quote(label, qb));
	for (i = 0; i < cfg->n_eps; i++)
		if (!strcmp(cfg->eps[i].label, label))
			return cfg_perr(p, "duplicate endpoint label '%s' (first on line %u)",
					label, p->ep_line[i]);
	if (cfg->n_eps == CFG_MAX_ENDPOINTS)
		return cfg_perr(p, "too many endpoints: at most %u", CFG_MAX_ENDPOINTS);
	p->ep = &cfg->eps[cfg->n_eps];
	p->schema->endpoint_defaults(p->ep);
	memcpy(p->ep->label, label, strlen(label));
	p->ep_line[cfg->n_eps] = p->r.lineno;
	p->ep->line = p->r.lineno;
	p->seen = p->seen_ep[cfg->n_eps];
	cfg->n_eps++;
	p->sect = SECT_ENDPOINT;
	return 0;
}

static int parse_line(void *ctx, char *line)
{
	struct parser *p = ctx;

	return line[0] == '[' ? parse_section(p, line) : parse_setting(p, line);
}

/* ---- entry points ------------------------------------------------------- */

int cfg_parse_text(const struct cfg_schema *schema, const char *name, const char *text, size_t len,
		   struct ibres_config *cfg, char *err, size_t errlen)
{
	struct parser *p;
	int ret;

	cfg_set_err(err, errlen, "%s", "");
	p = calloc(1, sizeof(*p));
	if (!p) {
		cfg_set_err(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	p->schema = schema;
	p->cfg = cfg;
	p->sect = SECT_NONE;
	cfg_line_reader_init(&p->r, name, text, len, err, errlen);
	ret = cfg_each_line(&p->r, parse_line, p);
	free(p);
	return ret;
}

void cfg_print_section(FILE *out, const struct section_def *s, const void *obj)
{
	unsigned i;

	for (i = 0; i < s->n_keys; i++)
		print_key(out, &s->keys[i], obj);
}
