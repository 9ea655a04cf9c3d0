// SPDX-License-Identifier: MIT
/*
 * ibresd.conf(5) and the static hosts file.
 *
 * The config parser is table driven: each section has one table of keys,
 * each key a type (integer, boolean, duration, path, string, enumeration or
 * a custom setter), the field it fills and its limits. The same tables give
 * the "expected ..." part of error messages and drive config_print(), so the
 * printed form always parses back to the same settings.
 *
 * Nothing here logs or exits: errors come back as "FILE:LINE: message".
 */
#include "core/config.h"

#include "ibenum.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFG_FILE_MAX (64u << 20)    /* largest config file read */
#define HOSTS_FILE_MAX (256u << 20) /* largest hosts file read */
#define KEYS_MAX 32                 /* keys per section table */
#define QUOTE_MAX 64                /* longest value quoted back in a message */
#define HINT_DIST 2                 /* "did you mean" edit distance */

#define DEFAULT_MTU 4      /* 2048 bytes */
#define DEFAULT_RATE 3     /* 10 Gb/s */
#define DEFAULT_PKT_LIFE 18
#define DEFAULT_UDP_PORT 4790

#define MS_PER_S 1000ull
#define MS_PER_M (60 * MS_PER_S)
#define MS_PER_H (60 * MS_PER_M)
#define MS_PER_D (24 * MS_PER_H)

/* ---- small helpers ------------------------------------------------------ */

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hex_val(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static char *trim(char *s)
{
	char *end;

	while (is_ws(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_ws(end[-1]))
		*--end = '\0';
	return s;
}

/* Next whitespace-separated token of *s (modified in place), or NULL. */
static char *next_token(char **s)
{
	char *p = *s, *tok;

	while (is_ws(*p))
		p++;
	if (!*p) {
		*s = p;
		return NULL;
	}
	tok = p;
	while (*p && !is_ws(*p))
		p++;
	if (*p)
		*p++ = '\0';
	*s = p;
	return tok;
}

/* @s cut to QUOTE_MAX characters for an error message. */
static const char *quote(const char *s, char *buf)
{
	size_t n = strlen(s);

	if (n <= QUOTE_MAX)
		return s;
	memcpy(buf, s, QUOTE_MAX - 3);
	memcpy(buf + QUOTE_MAX - 3, "...", 4);
	return buf;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Digits in @base from *s; *s is left after them. 0, -EINVAL (no digit) or
 * -ERANGE (does not fit 64 bits). */
static int parse_digits(const char **s, unsigned base, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int d;

	for (; (d = hex_val(*p)) >= 0 && (unsigned)d < base; p++) {
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return -ERANGE;
		v = v * base + (unsigned)d;
	}
	if (p == *s)
		return -EINVAL;
	*s = p;
	*out = v;
	return 0;
}

/* A whole string as a decimal or 0x-hex unsigned integer. */
static int parse_uint(const char *s, uint64_t *out)
{
	unsigned base = 10;
	int ret;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	ret = parse_digits(&s, base, out);
	if (ret)
		return ret;
	return *s ? -EINVAL : 0;
}

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

	ret = parse_digits(&s, 10, &v);
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

static void store_uint(void *field, size_t size, uint64_t v)
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

static uint64_t load_uint(const void *field, size_t size)
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

/* RFC 1123 host name: dot-separated labels of letters, digits and hyphens,
 * 1..63 characters each, no hyphen at either end of a label, at most
 * IBRES_NAME_MAX in all. Names made only of digits and dots are refused:
 * resolvers read them as numeric addresses. */
static bool valid_hostname(const char *s)
{
	size_t n = strlen(s), label = 0, i;
	bool alpha = false;

	if (!n || n > IBRES_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '.') {
			if (!label || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (c == '-') {
			if (!label)
				return false;
		} else if (is_alpha(c)) {
			alpha = true;
		} else if (!is_digit(c)) {
			return false;
		}
		if (++label > 63)
			return false;
	}
	return label && s[n - 1] != '-' && alpha;
}

/* An IPv4 or IPv6 unicast literal. Returns AF_INET, AF_INET6 or 0. */
static int parse_unicast(const char *s, struct in_addr *v4, struct in6_addr *v6)
{
	if (inet_pton(AF_INET, s, v4) == 1) {
		uint32_t a = ntohl(v4->s_addr);

		return (a == 0 || IN_MULTICAST(a) || a == INADDR_BROADCAST) ? 0 : AF_INET;
	}
	if (inet_pton(AF_INET6, s, v6) == 1) {
		if (IN6_IS_ADDR_UNSPECIFIED(v6) || IN6_IS_ADDR_MULTICAST(v6))
			return 0;
		return AF_INET6;
	}
	return 0;
}

/* A GID in IPv6 notation, not all zeroes. */
static bool parse_gid(const char *s, uint8_t gid[16])
{
	struct in6_addr a;

	if (inet_pton(AF_INET6, s, &a) != 1 || IN6_IS_ADDR_UNSPECIFIED(&a))
		return false;
	memcpy(gid, &a, 16);
	return true;
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

/* ---- IB enums (lib/ibenum.c) as error messages list them -------------- */

#define RATES_TEXT "2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, 112, 120, 168, " \
	"200, 300, 400 or 600 (Gb/s)"
#define MTUS_TEXT "256, 512, 1024, 2048 or 4096 (bytes)"

/* ---- lines -------------------------------------------------------------- */

struct line_reader {
	const char *text;
	size_t len;
	size_t off;
	unsigned lineno;
	unsigned char bad; /* the control character met, for -EILSEQ */
	char buf[CFG_LINE_MAX + 1];
};

static void line_reader_init(struct line_reader *r, const char *text, size_t len)
{
	r->text = text;
	r->len = text ? len : 0;
	r->off = 0;
	r->lineno = 0;
	r->bad = 0;
}

/* 1 with the next line in r->buf (no newline), 0 at the end, -E2BIG for an
 * overlong line, -EILSEQ for a control character other than tab and CR. */
static int next_line(struct line_reader *r)
{
	size_t n = 0;

	if (r->off >= r->len)
		return 0;
	r->lineno++;
	while (r->off < r->len && r->text[r->off] != '\n') {
		unsigned char c = (unsigned char)r->text[r->off++];

		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
			r->bad = c;
			return -EILSEQ;
		}
		if (n == CFG_LINE_MAX)
			return -E2BIG;
		r->buf[n++] = (char)c;
	}
	if (r->off < r->len)
		r->off++;
	r->buf[n] = '\0';
	return 1;
}

/* Cut a comment ('#' at the start or after whitespace) and surrounding
 * whitespace. */
static char *strip_line(char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] == '#' && (i == 0 || is_ws(s[i - 1]))) {
			s[i] = '\0';
			break;
		}
	}
	return trim(s);
}

static int line_error(const char *name, const struct line_reader *r, int ret, char *err,
		      size_t errlen)
{
	if (ret == -E2BIG)
		set_err(err, errlen, "%s:%u: line longer than %u characters", name, r->lineno,
			CFG_LINE_MAX);
	else
		set_err(err, errlen, "%s:%u: invalid control character 0x%02x", name, r->lineno,
			r->bad);
	return -EINVAL;
}

static int read_file(const char *path, size_t max, char **text, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf, *nbuf;
	ssize_t got;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				ret = -EFBIG;
				goto out_free;
			}
			cap *= 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				goto out_free;
			}
			buf = nbuf;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out_free;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;

out_free:
	free(buf);
out_close:
	close(fd);
	return ret;
}

/* ---- config: key tables ------------------------------------------------- */

enum key_type { KT_INT, KT_BOOL, KT_DURATION, KT_PATH, KT_STRING, KT_ENUM, KT_CUSTOM };

enum {
	KF_REPEAT = 1 << 0,  /* may be given more than once */
	KF_NONE = 1 << 1,    /* path, string: "none" means unset ("") */
	KF_HEX = 1 << 2,     /* integer: shown in hex */
	KF_ZERO_OK = 1 << 3, /* duration: 0 is allowed below min (off) */
};

enum sect_type { SECT_NONE, SECT_DAEMON, SECT_RESOLVE, SECT_ENDPOINT };

struct parser;
struct key_def;

/* Custom setters return 0, BAD_VALUE for the generic "invalid value"
 * message, or a negative errno with their own message written. */
#define BAD_VALUE 1

typedef int (*key_setter)(struct parser *p, const struct key_def *k, void *obj, char *val);
typedef void (*key_printer)(FILE *out, const struct key_def *k, const void *obj);

struct enum_val {
	const char *name;
	unsigned val;
};

struct key_def {
	const char *name;
	enum key_type type;
	unsigned flags;
	size_t off;  /* field in struct ibres_config or struct cfg_endpoint */
	size_t size; /* field size */
	uint64_t min, max; /* integers; durations in ms */
	uint64_t unit_ms;  /* durations: the unit of a bare number */
	uint64_t store_ms; /* durations: the unit of the field (1 or 1000) */
	const struct enum_val *enums;
	const char *expect; /* custom: what a valid value looks like */
	key_setter set;
	key_printer print;
};

struct section_def {
	const char *name;
	const struct key_def *keys;
	unsigned n_keys;
};

struct parser {
	const char *name;
	struct line_reader r;
	struct ibres_config *cfg;
	char *err;
	size_t errlen;
	enum sect_type sect;
	struct cfg_endpoint *ep;
	unsigned *seen; /* first line of each key in the current section, 0 = unset */
	unsigned seen_daemon[KEYS_MAX];
	unsigned seen_resolve[KEYS_MAX];
	unsigned seen_ep[CFG_MAX_ENDPOINTS][KEYS_MAX];
	unsigned ep_line[CFG_MAX_ENDPOINTS];
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->err || !p->errlen)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->r.lineno);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *sect_label(const struct parser *p, char *buf, size_t len)
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

/* ---- custom setters and printers ------------------------------------- */

static int set_gid(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;

	(void)p;
	(void)k;
	if (!parse_gid(val, ep->id.gids[0]))
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

	return perr(p, "too many '%s' values in %s: at most %u", k->name,
		    sect_label(p, lb, sizeof(lb)), max);
}

static int set_name(struct parser *p, const struct key_def *k, void *obj, char *val)
{
	struct cfg_endpoint *ep = obj;
	char qb[QUOTE_MAX + 1];
	unsigned i;

	if (!valid_hostname(val))
		return BAD_VALUE;
	for (i = 0; i < ep->id.n_names; i++)
		if (!strcasecmp(ep->id.names[i], val))
			return perr(p, "name '%s' given twice in [endpoint %s]", quote(val, qb),
				    ep->label);
	if (ep->id.n_names == IBRES_HOST_NAMES_MAX)
		return too_many(p, k, IBRES_HOST_NAMES_MAX);
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

	switch (parse_unicast(val, &v4, &v6)) {
	case AF_INET:
		for (i = 0; i < ep->id.n_v4; i++)
			if (ep->id.v4[i].s_addr == v4.s_addr)
				goto dup;
		if (ep->id.n_v4 == IBRES_HOST_ADDRS_MAX)
			return too_many(p, k, IBRES_HOST_ADDRS_MAX);
		ep->id.v4[ep->id.n_v4++] = v4;
		return 0;
	case AF_INET6:
		for (i = 0; i < ep->id.n_v6; i++)
			if (!memcmp(&ep->id.v6[i], &v6, sizeof(v6)))
				goto dup;
		if (ep->id.n_v6 == IBRES_HOST_ADDRS_MAX)
			return too_many(p, k, IBRES_HOST_ADDRS_MAX);
		ep->id.v6[ep->id.n_v6++] = v6;
		return 0;
	default:
		return BAD_VALUE;
	}
dup:
	return perr(p, "address '%s' given twice in [endpoint %s]", quote(val, qb), ep->label);
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
	if (parse_uint(val, &v) || v > UINT32_MAX)
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
	if (parse_digits(&s, 16, &v) || *s)
		return BAD_VALUE;
	store_uint((uint8_t *)obj + k->off, k->size, v);
	return 0;
}

static void print_guid(FILE *out, const struct key_def *k, const void *obj)
{
	fprintf(out, "%s = 0x%016llx\n", k->name,
		(unsigned long long)load_uint((const uint8_t *)obj + k->off, k->size));
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
	tok = next_token(&s);
	if (!tok || !parse_group_addr(tok, &g.addr))
		return BAD_VALUE;
	while ((tok = next_token(&s))) {
		if (!strncmp(tok, "mtu=", 4) && !have_mtu) {
			if (parse_uint(tok + 4, &v) || v > UINT32_MAX)
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
			return perr(p, "group '%s' given twice in [endpoint %s]", quote(val, qb),
				    ep->label);
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
	while ((tok = next_token(&s))) {
		char qb[QUOTE_MAX + 1];
		size_t n = strlen(tok);

		if (n >= CFG_PATTERN_MAX)
			return perr(p, "name_pattern '%s' too long: at most %u characters",
				    quote(tok, qb), CFG_PATTERN_MAX - 1);
		if (cfg->n_patterns == CFG_MAX_PATTERNS)
			return perr(p, "too many name patterns: at most %u", CFG_MAX_PATTERNS);
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
	{ .name = "log_level", .type = KT_ENUM, D(log_level), .enums = log_levels },
	{ .name = "max_clients", .type = KT_INT, D(max_clients), .min = 1, .max = 65536 },
	{ .name = "client_timeout", .type = KT_DURATION, D(client_timeout_ms), .min = 100,
	  .max = MS_PER_H, .unit_ms = MS_PER_S, .store_ms = 1 },
	{ .name = "user", .type = KT_STRING, .flags = KF_NONE, D(user) },
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
	{ .name = "cluster_key_file", .type = KT_PATH, .flags = KF_NONE, D(cluster_key_file) },
	{ .name = "sa_window", .type = KT_INT, D(sa_window), .min = 1, .max = 64 },
	{ .name = "port_poll_interval", .type = KT_DURATION, .flags = KF_ZERO_OK, D(port_poll_ms),
	  .min = 100, .max = MS_PER_H, .unit_ms = MS_PER_S, .store_ms = 1 },
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
		if (parse_uint(val, &v) || v < k->min || v > k->max)
			return BAD_VALUE;
		store_uint(field, k->size, v);
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
		store_uint(field, k->size, v / k->store_ms);
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
				store_uint(field, k->size, e->val);
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
		v = load_uint(field, k->size);
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
		v = load_uint(field, k->size) * k->store_ms;
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
		v = load_uint(field, k->size);
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
	const struct section_def *cur = &sections[p->sect];
	char lb[96], qb[QUOTE_MAX + 1];
	const char *best = NULL;
	unsigned i, d, best_d = HINT_DIST + 1;
	int s;

	for (s = SECT_DAEMON; s <= SECT_ENDPOINT; s++) {
		if (&sections[s] != cur && find_key(&sections[s], key))
			return perr(p, "unknown key '%s' in %s (it belongs in [%s%s])", key,
				    sect_label(p, lb, sizeof(lb)), sections[s].name,
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
		return perr(p, "unknown key '%s' in %s (did you mean '%s'?)", quote(key, qb),
			    sect_label(p, lb, sizeof(lb)), best);
	return perr(p, "unknown key '%s' in %s", quote(key, qb), sect_label(p, lb, sizeof(lb)));
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
		return perr(p, "syntax error in '%s': expected 'key = value' or '[section]'",
			    quote(line, qb));
	val = trim(val + 1);
	key[klen] = '\0';
	/* "key =#..." is a comment too: no value starts with '#', so that
	 * config_print's "key = value" reads back the same */
	if (val[0] == '#')
		val[0] = '\0';

	if (p->sect == SECT_NONE)
		return perr(p, "key '%s' outside of any section: put it under [daemon], "
			    "[resolve] or [endpoint LABEL]", quote(key, qb));
	sect = &sections[p->sect];
	k = find_key(sect, key);
	if (!k)
		return unknown_key(p, key);
	idx = (unsigned)(k - sect->keys);
	if (p->seen[idx] && !(k->flags & KF_REPEAT))
		return perr(p, "'%s' set twice in %s (first on line %u)", key,
			    sect_label(p, xb, sizeof(xb)), p->seen[idx]);
	if (!p->seen[idx])
		p->seen[idx] = p->r.lineno;
	if (!*val)
		return perr(p, "missing value for '%s': expected %s", key,
			    describe(k, xb, sizeof(xb)));

	obj = p->sect == SECT_ENDPOINT ? (void *)p->ep : (void *)p->cfg;
	ret = set_value(p, k, obj, val);
	if (ret == BAD_VALUE) {
		char db[512];

		return perr(p, "invalid value '%s' for '%s': expected %s", quote(val, qb), key,
			    describe(k, db, sizeof(db)));
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
}

static int parse_section(struct parser *p, char *line)
{
	struct ibres_config *cfg = p->cfg;
	char qb[QUOTE_MAX + 1];
	size_t n = strlen(line);
	char *in, *label;
	unsigned i;

	if (n < 2 || line[n - 1] != ']')
		return perr(p, "invalid section header '%s': expected [daemon], [resolve] or "
			    "[endpoint LABEL]", quote(line, qb));
	line[n - 1] = '\0';
	in = trim(line + 1);
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
		return perr(p, "unknown section [%s]: expected [daemon], [resolve] or "
			    "[endpoint LABEL]", quote(in, qb));
	label = trim(in + 8);
	if (!valid_label(label))
		return perr(p, "invalid endpoint label '%s': expected 1..63 letters, digits, "
			    "'_', '.' or '-'", quote(label, qb));
	for (i = 0; i < cfg->n_eps; i++)
		if (!strcmp(cfg->eps[i].label, label))
			return perr(p, "duplicate endpoint label '%s' (first on line %u)", label,
				    p->ep_line[i]);
	if (cfg->n_eps == CFG_MAX_ENDPOINTS)
		return perr(p, "too many endpoints: at most %u", CFG_MAX_ENDPOINTS);
	p->ep = &cfg->eps[cfg->n_eps];
	endpoint_defaults(p->ep);
	memcpy(p->ep->label, label, strlen(label));
	p->ep_line[cfg->n_eps] = p->r.lineno;
	p->seen = p->seen_ep[cfg->n_eps];
	cfg->n_eps++;
	p->sect = SECT_ENDPOINT;
	return 0;
}

/* ---- config: public API ------------------------------------------------- */

void config_defaults(struct ibres_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->socket_path, IBRES_DEFAULT_SOCKET, sizeof(IBRES_DEFAULT_SOCKET));
	cfg->acm_link = false;
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
	cfg->sa_window = 4;
	cfg->port_poll_ms = 2 * MS_PER_S;
}

int config_parse(const char *name, const char *text, size_t len, struct ibres_config *cfg,
		 char *err, size_t errlen)
{
	struct parser *p;
	char *line;
	int ret;

	config_defaults(cfg);
	set_err(err, errlen, "%s", "");
	p = calloc(1, sizeof(*p));
	if (!p) {
		set_err(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	p->name = name;
	p->cfg = cfg;
	p->err = err;
	p->errlen = errlen;
	p->sect = SECT_NONE;
	line_reader_init(&p->r, text, len);
	while ((ret = next_line(&p->r)) > 0) {
		line = strip_line(p->r.buf);
		if (!*line)
			continue;
		ret = line[0] == '[' ? parse_section(p, line) : parse_setting(p, line);
		if (ret)
			goto out;
	}
	if (ret < 0)
		ret = line_error(name, &p->r, ret, err, errlen);
out:
	free(p);
	return ret;
}

int config_load(const char *path, struct ibres_config *cfg, char *err, size_t errlen)
{
	size_t len;
	char *text;
	int ret;

	ret = read_file(path, CFG_FILE_MAX, &text, &len);
	if (ret) {
		config_defaults(cfg);
		set_err(err, errlen, "%s: %s", path,
			ret == -EFBIG ? "file too large" : strerror(-ret));
		return ret;
	}
	ret = config_parse(path, text, len, cfg, err, errlen);
	free(text);
	return ret;
}

static bool name_in(const struct cfg_endpoint *ep, const char *name, unsigned skip_from)
{
	unsigned i;

	for (i = 0; i < ep->id.n_names && i < skip_from; i++)
		if (!strcasecmp(ep->id.names[i], name))
			return true;
	return false;
}

static int validate_endpoint(const struct ibres_config *cfg, unsigned e, char *err,
			     size_t errlen)
{
	const struct cfg_endpoint *ep = &cfg->eps[e], *o;
	char buf[INET6_ADDRSTRLEN];
	unsigned i, j, k;

	for (j = 0; j < e; j++)
		if (!strcmp(cfg->eps[j].label, ep->label))
			goto bad_label;
	if (!ep->id.n_names) {
		set_err(err, errlen, "endpoint '%s': no name given", ep->label);
		return -EINVAL;
	}
	if (!ep->device[0] && !ep->id.n_gids) {
		set_err(err, errlen, "endpoint '%s': no gid given (needed unless 'device' is set)",
			ep->label);
		return -EINVAL;
	}
	if (!ep->device[0] && !ep->id.lid) {
		set_err(err, errlen, "endpoint '%s': no lid given (needed unless 'device' is set)",
			ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IP && !ep->interface[0]) {
		set_err(err, errlen, "endpoint '%s': transport ip needs an 'interface'", ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IP && !ep->n_groups) {
		set_err(err, errlen, "endpoint '%s': transport ip needs at least one 'group'",
			ep->label);
		return -EINVAL;
	}
	if (ep->transport == TRANSPORT_IB && (!ep->device[0] || !ep->n_groups)) {
		set_err(err, errlen, "endpoint '%s': transport ib needs a 'device' and at least "
			"one 'group'", ep->label);
		return -EINVAL;
	}
	/* names and addresses: unique within the endpoint and across endpoints */
	for (j = 0; j <= e; j++) {
		o = &cfg->eps[j];
		for (i = 0; i < ep->id.n_names; i++) {
			if (!name_in(o, ep->id.names[i], j == e ? i : UINT32_MAX))
				continue;
			if (j == e)
				set_err(err, errlen, "endpoint '%s': name '%s' given twice",
					ep->label, ep->id.names[i]);
			else
				set_err(err, errlen, "name '%s' appears in endpoints '%s' and '%s'",
					ep->id.names[i], o->label, ep->label);
			return -EINVAL;
		}
		for (i = 0; i < ep->id.n_v4; i++) {
			for (k = 0; k < (j == e ? i : o->id.n_v4); k++) {
				if (o->id.v4[k].s_addr != ep->id.v4[i].s_addr)
					continue;
				inet_ntop(AF_INET, &ep->id.v4[i], buf, sizeof(buf));
				goto dup_addr;
			}
		}
		for (i = 0; i < ep->id.n_v6; i++) {
			for (k = 0; k < (j == e ? i : o->id.n_v6); k++) {
				if (memcmp(&o->id.v6[k], &ep->id.v6[i], sizeof(struct in6_addr)))
					continue;
				inet_ntop(AF_INET6, &ep->id.v6[i], buf, sizeof(buf));
				goto dup_addr;
			}
		}
	}
	return 0;

bad_label:
	set_err(err, errlen, "endpoint label '%s' used twice", ep->label);
	return -EINVAL;
dup_addr:
	if (j == e)
		set_err(err, errlen, "endpoint '%s': address %s given twice", ep->label, buf);
	else
		set_err(err, errlen, "address %s appears in endpoints '%s' and '%s'", buf, o->label,
			ep->label);
	return -EINVAL;
}

int config_validate(const struct ibres_config *cfg, char *err, size_t errlen)
{
	unsigned e;
	int ret;

	set_err(err, errlen, "%s", "");
	if (!cfg->n_eps || cfg->n_eps > CFG_MAX_ENDPOINTS) {
		set_err(err, errlen, cfg->n_eps ? "too many endpoints" :
			"no endpoint configured: add an [endpoint LABEL] section");
		return -EINVAL;
	}
	if (cfg->acm_socket_path[0] &&
	    !strncmp(cfg->acm_socket_path, cfg->socket_path, sizeof(cfg->socket_path))) {
		set_err(err, errlen, "acm_socket and socket are the same path: %.*s",
			(int)sizeof(cfg->socket_path), cfg->socket_path);
		return -EINVAL;
	}
	if (cfg->n_patterns > CFG_MAX_PATTERNS) {
		set_err(err, errlen, "too many name patterns");
		return -EINVAL;
	}
	for (e = 0; e < cfg->n_eps; e++) {
		const struct cfg_endpoint *ep = &cfg->eps[e];

		if (ep->id.n_names > IBRES_HOST_NAMES_MAX || ep->id.n_v4 > IBRES_HOST_ADDRS_MAX ||
		    ep->id.n_v6 > IBRES_HOST_ADDRS_MAX || ep->n_groups > CFG_MAX_GROUPS ||
		    ep->id.n_gids > IBRES_HOST_GIDS_MAX) {
			set_err(err, errlen, "endpoint '%.63s': too many values", ep->label);
			return -EINVAL;
		}
		ret = validate_endpoint(cfg, e, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int config_default_names(struct ibres_config *cfg, const char *hostname)
{
	size_t short_len = strcspn(hostname, ".");
	struct ibres_hostrec *id;
	unsigned e;

	if (!valid_hostname(hostname))
		return -EINVAL;
	for (e = 0; e < cfg->n_eps && e < CFG_MAX_ENDPOINTS; e++) {
		id = &cfg->eps[e].id;
		if (id->n_names)
			continue;
		memset(id->names, 0, sizeof(id->names));
		memcpy(id->names[0], hostname, strlen(hostname));
		id->n_names = 1;
		if (hostname[short_len]) {
			memcpy(id->names[1], hostname, short_len);
			if (valid_hostname(id->names[1]))
				id->n_names = 2;
			else
				memset(id->names[1], 0, sizeof(id->names[1]));
		}
		break;
	}
	return 0;
}

static void print_section(FILE *out, const struct section_def *s, const void *obj)
{
	unsigned i;

	for (i = 0; i < s->n_keys; i++)
		print_key(out, &s->keys[i], obj);
}

void config_print(const struct ibres_config *cfg, FILE *out)
{
	unsigned i;

	fprintf(out, "# ibresd effective configuration\n\n[daemon]\n");
	print_section(out, &sections[SECT_DAEMON], cfg);
	fprintf(out, "\n[resolve]\n");
	print_section(out, &sections[SECT_RESOLVE], cfg);
	for (i = 0; i < cfg->n_eps && i < CFG_MAX_ENDPOINTS; i++) {
		fprintf(out, "\n[endpoint %.63s]\n", cfg->eps[i].label);
		print_section(out, &sections[SECT_ENDPOINT], &cfg->eps[i]);
	}
}

/* ---- static hosts file ---------------------------------------------------- */

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
	const char *name;
	struct line_reader r;
	struct cfg_hosts *h;
	unsigned cap;
	struct dedup dd;
	char *err;
	size_t errlen;
};

static int herr(struct hosts_parser *hp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int herr(struct hosts_parser *hp, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!hp->err || !hp->errlen)
		return -EINVAL;
	n = snprintf(hp->err, hp->errlen, "%s:%u: ", hp->name, hp->r.lineno);
	if (n < 0 || (size_t)n >= hp->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(hp->err + n, hp->errlen - (size_t)n, fmt, ap);
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
		return herr(hp, "%s '%s' given twice", what[kind], quote(tok, qb));
	if (ret == -EEXIST)
		return herr(hp, "%s '%s' already given on line %u", what[kind], quote(tok, qb),
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
		if (parse_uint(tok + 4, &v) || v < 1 || v > 0xffffff)
			return herr(hp, "invalid value '%s' for 'qpn': expected an integer "
				    "1..16777215", quote(tok + 4, qb));
		r->qpn = (uint32_t)v;
		*have_qpn = true;
		return 0;
	}
	if (!strncmp(tok, "pkey=", 5)) {
		if (*have_pkey)
			return herr(hp, "pkey given twice");
		if (parse_uint(tok + 5, &v) || v > 0xffff)
			return herr(hp, "invalid value '%s' for 'pkey': expected an integer "
				    "0x0..0xffff", quote(tok + 5, qb));
		r->pkey = (uint16_t)v;
		*have_pkey = true;
		return 0;
	}
	return herr(hp, "unknown option '%s': expected qpn=N or pkey=N", quote(tok, qb));
}

static int hosts_line(struct hosts_parser *hp, char *line)
{
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

	tok = next_token(&s);
	if (!parse_gid(tok, r->gids[0]))
		return herr(hp, "invalid GID '%s': expected an IPv6-style GID such as "
			    "fe80::2:c903:0:1; line format " HOSTS_SYNTAX, quote(tok, qb));
	r->n_gids = 1;
	ret = hosts_dedup(hp, DK_GID, 0, tok);
	if (ret)
		return ret;
	tok = next_token(&s);
	if (!tok)
		return herr(hp, "missing LID and name: expected " HOSTS_SYNTAX);
	if (parse_uint(tok, &v) || v < 1 || v > 0xbfff)
		return herr(hp, "invalid LID '%s': expected an integer 1..49151", quote(tok, qb));
	r->lid = (uint16_t)v;

	while ((tok = next_token(&s))) {
		if (strchr(tok, '=')) {
			ret = hosts_option(hp, r, tok, &have_qpn, &have_pkey);
		} else if (inet_pton(AF_INET, tok, &v4) == 1 ||
			   inet_pton(AF_INET6, tok, &v6) == 1) {
			switch (parse_unicast(tok, &v4, &v6)) {
			case AF_INET:
				if (r->n_v4 == IBRES_HOST_ADDRS_MAX)
					return herr(hp, "too many IPv4 addresses: at most %u",
						    IBRES_HOST_ADDRS_MAX);
				r->v4[r->n_v4++] = v4;
				ret = hosts_dedup(hp, DK_V4, (uint8_t)(r->n_v4 - 1), tok);
				break;
			case AF_INET6:
				if (r->n_v6 == IBRES_HOST_ADDRS_MAX)
					return herr(hp, "too many IPv6 addresses: at most %u",
						    IBRES_HOST_ADDRS_MAX);
				r->v6[r->n_v6++] = v6;
				ret = hosts_dedup(hp, DK_V6, (uint8_t)(r->n_v6 - 1), tok);
				break;
			default:
				return herr(hp, "invalid address '%s': expected a unicast address",
					    quote(tok, qb));
			}
		} else if (valid_hostname(tok)) {
			if (r->n_names == IBRES_HOST_NAMES_MAX)
				return herr(hp, "too many names: at most %u", IBRES_HOST_NAMES_MAX);
			memcpy(r->names[r->n_names++], tok, strlen(tok));
			ret = hosts_dedup(hp, DK_NAME, (uint8_t)(r->n_names - 1), tok);
		} else {
			return herr(hp, "invalid field '%s': expected a host name, an IPv4 or IPv6 "
				    "address, qpn=N or pkey=N", quote(tok, qb));
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
	char *line;
	int ret;

	hosts->hosts = NULL;
	hosts->n_hosts = 0;
	set_err(err, errlen, "%s", "");
	hp = calloc(1, sizeof(*hp));
	if (!hp) {
		set_err(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	hp->name = name;
	hp->h = hosts;
	hp->err = err;
	hp->errlen = errlen;
	line_reader_init(&hp->r, text, len);
	while ((ret = next_line(&hp->r)) > 0) {
		line = strip_line(hp->r.buf);
		if (!*line)
			continue;
		ret = hosts_line(hp, line);
		if (ret)
			goto out;
	}
	if (ret < 0)
		ret = line_error(name, &hp->r, ret, err, errlen);
out:
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
	ret = read_file(path, HOSTS_FILE_MAX, &text, &len);
	if (ret) {
		set_err(err, errlen, "%s: %s", path,
			ret == -EFBIG ? "file too large" : strerror(-ret));
		return ret;
	}
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
