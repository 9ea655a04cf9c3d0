/* SPDX-License-Identifier: MIT */
/* The table-driven config engine (config_engine.c) as config_keys.c uses it:
 * the types of its key tables, and the calls that parse and print by them.
 * Internal to core/config_*.c. */
#ifndef IBRESD_CONFIG_ENGINE_H
#define IBRESD_CONFIG_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"

#define KEYS_MAX 32 /* keys per section table */

#define MS_PER_S 1000ull
#define MS_PER_M (60 * MS_PER_S)
#define MS_PER_H (60 * MS_PER_M)
#define MS_PER_D (24 * MS_PER_H)

/* ---- key tables ---------------------------------------------------------- */

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

/* What the engine parses by. Passed in rather than linked to, so that the
 * engine calls no other config file (tools/layercheck refuses two modules
 * that call each other). */
struct cfg_schema {
	const struct section_def *sections; /* indexed by enum sect_type */
	void (*endpoint_defaults)(struct cfg_endpoint *ep); /* a new [endpoint] */
};

/* Parse @text (@len bytes, @name in messages) into @cfg, which the caller has
 * set to its defaults. 0, or a negative errno with "NAME:LINE: what is wrong"
 * in @err. */
int cfg_parse_text(const struct cfg_schema *schema, const char *name, const char *text, size_t len,
		   struct ibres_config *cfg, char *err, size_t errlen);

/* Every key of @s as "key = value" lines, from @obj (a struct ibres_config or
 * a struct cfg_endpoint, as the section's keys say). */
void cfg_print_section(FILE *out, const struct section_def *s, const void *obj);

/* For custom setters: "NAME:LINE: " and the message into the parser's error
 * text. Always -EINVAL. */
int cfg_perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "[daemon]", "[resolve]" or "[endpoint LABEL]": the section being parsed. */
const char *cfg_sect_label(const struct parser *p, char *buf, size_t len);

/* An unsigned field of @size bytes (1, 2, 4 or 8), stored or loaded. */
void cfg_store_uint(void *field, size_t size, uint64_t v);
uint64_t cfg_load_uint(const void *field, size_t size);

#endif
