// SPDX-License-Identifier: MIT
/*
 * The text layer under ibresd.conf and the static hosts file: a line reader
 * that refuses control characters and overlong lines, comments, tokens, and
 * the values both files hold (integers, host names, unicast addresses,
 * GIDs). Shared so that both files read the same way.
 *
 * Nothing here logs or exits: errors come back as "FILE:LINE: message".
 */
#include "core/config_lex.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostrec.h"

/* ---- small helpers ------------------------------------------------------ */

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

char *cfg_trim(char *s)
{
	char *end;

	while (is_ws(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_ws(end[-1]))
		*--end = '\0';
	return s;
}

char *cfg_next_token(char **s)
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

const char *cfg_quote(const char *s, char *buf)
{
	size_t n = strlen(s);

	if (n <= QUOTE_MAX)
		return s;
	memcpy(buf, s, QUOTE_MAX - 3);
	memcpy(buf + QUOTE_MAX - 3, "...", 4);
	return buf;
}

void cfg_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int cfg_parse_digits(const char **s, unsigned base, uint64_t *out)
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

int cfg_parse_uint(const char *s, uint64_t *out)
{
	unsigned base = 10;
	int ret;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	ret = cfg_parse_digits(&s, base, out);
	if (ret)
		return ret;
	return *s ? -EINVAL : 0;
}

/* RFC 1123 host name: dot-separated labels of letters, digits and hyphens,
 * 1..63 characters each, no hyphen at either end of a label, at most
 * IBRES_NAME_MAX in all. Names made only of digits and dots are refused:
 * resolvers read them as numeric addresses. The one copy of the rule is
 * hostrec_name_ok(), which the readers of the daemon's answers and of the
 * shared directory apply too: they refuse any name the daemon could not hold. */
bool cfg_valid_hostname(const char *s)
{
	return hostrec_name_ok(s, strnlen(s, IBRES_NAME_MAX + 1));
}

int cfg_parse_unicast(const char *s, struct in_addr *v4, struct in6_addr *v6)
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

bool cfg_parse_gid(const char *s, uint8_t gid[16])
{
	struct in6_addr a;

	if (inet_pton(AF_INET6, s, &a) != 1 || IN6_IS_ADDR_UNSPECIFIED(&a))
		return false;
	memcpy(gid, &a, 16);
	return true;
}

/* ---- lines -------------------------------------------------------------- */

void cfg_line_reader_init(struct line_reader *r, const char *name, const char *text, size_t len,
			  char *err, size_t errlen)
{
	r->name = name;
	r->err = err;
	r->errlen = errlen;
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
	return cfg_trim(s);
}

int cfg_line_verr(const struct line_reader *r, const char *fmt, va_list ap)
{
	int n;

	if (!r->err || !r->errlen)
		return -EINVAL;
	n = snprintf(r->err, r->errlen, "%s:%u: ", r->name, r->lineno);
	if (n < 0 || (size_t)n >= r->errlen)
		return -EINVAL;
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	return -EINVAL;
}

static int line_err(const struct line_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int line_err(const struct line_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_line_verr(r, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cfg_each_line(struct line_reader *r, int (*fn)(void *ctx, char *line), void *ctx)
{
	char *line;
	int ret;

	while ((ret = next_line(r)) > 0) {
		line = strip_line(r->buf);
		if (!*line)
			continue;
		ret = fn(ctx, line);
		if (ret)
			return ret;
	}
	if (ret == -E2BIG)
		return line_err(r, "line longer than %u characters", CFG_LINE_MAX);
	if (ret < 0)
		return line_err(r, "invalid control character 0x%02x", r->bad);
	return 0;
}

int cfg_read_file(const char *path, size_t max, char **text, size_t *len, char *err,
		  size_t errlen)
{
	size_t cap = 4096, n = 0;
	char *buf, *nbuf;
	ssize_t got;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
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
out:
	cfg_set_err(err, errlen, "%s: %s", path, ret == -EFBIG ? "file too large" : strerror(-ret));
	return ret;
}
