/* SPDX-License-Identifier: MIT */
/* The text layer under ibresd.conf and the static hosts file (config_lex.c):
 * lines, whitespace-separated tokens, the values they hold, and messages.
 * Internal to core/config_*.c and core/hosts_file.c. */
#ifndef IBRESD_CONFIG_LEX_H
#define IBRESD_CONFIG_LEX_H

#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#define QUOTE_MAX 64 /* longest value quoted back in a message */

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ---- lines --------------------------------------------------------------- */

struct line_reader {
	const char *name; /* of the file, in messages */
	char *err;        /* messages go here (none when NULL or errlen is 0) */
	size_t errlen;
	const char *text;
	size_t len;
	size_t off;
	unsigned lineno;
	unsigned char bad; /* the control character met, for -EILSEQ */
	char buf[CFG_LINE_MAX + 1];
};

/* Read @len bytes of @text (none when @text is NULL) line by line, @name in
 * messages, which go to @err. */
void cfg_line_reader_init(struct line_reader *r, const char *name, const char *text, size_t len,
			  char *err, size_t errlen);

/* Hand each line of @r to @fn, without its comment ('#' at the start or after
 * whitespace) and surrounding whitespace, blank lines skipped, until @fn
 * fails. 0, @fn's error, or -EINVAL for a line that is too long or holds a
 * control character other than tab and CR. */
int cfg_each_line(struct line_reader *r, int (*fn)(void *ctx, char *line), void *ctx);

/* "NAME:LINE: " (the line being read) and the message into r->err. Always
 * -EINVAL. */
int cfg_line_verr(const struct line_reader *r, const char *fmt, va_list ap);

/* A whole file of at most @max bytes into a malloc'ed *@text. 0, or -EFBIG or
 * the errno of open or read with "PATH: what is wrong" in @err. */
int cfg_read_file(const char *path, size_t max, char **text, size_t *len, char *err,
		  size_t errlen);

/* ---- tokens and values --------------------------------------------------- */

/* @s without leading and trailing whitespace (cut in place). */
char *cfg_trim(char *s);

/* Next whitespace-separated token of *s (modified in place), or NULL. */
char *cfg_next_token(char **s);

/* Digits in @base from *s; *s is left after them. 0, -EINVAL (no digit) or
 * -ERANGE (does not fit 64 bits). */
int cfg_parse_digits(const char **s, unsigned base, uint64_t *out);

/* A whole string as a decimal or 0x-hex unsigned integer. 0, -EINVAL or
 * -ERANGE. */
int cfg_parse_uint(const char *s, uint64_t *out);

/* RFC 1123 host name of at most IBRES_NAME_MAX characters, not all digits. */
bool cfg_valid_hostname(const char *s);

/* An IPv4 or IPv6 unicast literal. Returns AF_INET, AF_INET6 or 0. */
int cfg_parse_unicast(const char *s, struct in_addr *v4, struct in6_addr *v6);

/* A GID in IPv6 notation, not all zeroes. */
bool cfg_parse_gid(const char *s, uint8_t gid[16]);

/* ---- messages ------------------------------------------------------------ */

/* @s cut to QUOTE_MAX characters for an error message; @buf has
 * QUOTE_MAX + 1 bytes. */
const char *cfg_quote(const char *s, char *buf);

/* printf into @err (nothing when @err is NULL or @errlen is 0). */
void cfg_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
