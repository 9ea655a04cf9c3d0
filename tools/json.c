// SPDX-License-Identifier: MIT
#include "json.h"

#include <inttypes.h>

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
}

static void put_string(FILE *f, const char *s)
{
	const unsigned char *p;

	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Separator, indentation and member name before a value. */
static void lead(struct json *j, const char *key)
{
	int i;

	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth)
		fputc('\n', j->f);
	j->first[j->depth] = false;
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
	if (key) {
		put_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_level(struct json *j, const char *key, char c)
{
	lead(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_DEPTH_MAX)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_level(struct json *j, char c)
{
	bool empty = j->first[j->depth];
	int i;

	if (j->depth)
		j->depth--;
	if (!empty) {
		fputc('\n', j->f);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key)
{
	open_level(j, key, '{');
}

void json_obj_end(struct json *j)
{
	close_level(j, '}');
}

void json_arr_begin(struct json *j, const char *key)
{
	open_level(j, key, '[');
}

void json_arr_end(struct json *j)
{
	close_level(j, ']');
}

void json_str(struct json *j, const char *key, const char *v)
{
	lead(j, key);
	put_string(j->f, v);
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	lead(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_bool(struct json *j, const char *key, bool v)
{
	lead(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	lead(j, key);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputc('\n', j->f);
}
