/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer for ibresctl --json (indented, UTF-8 passed
 * through, control characters escaped). */
#ifndef IBRESCTL_JSON_H
#define IBRESCTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_DEPTH_MAX]; /* nothing written yet at this level */
};

void json_init(struct json *j, FILE *f);
/* @key is the member name inside an object, NULL inside an array or at the top. */
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
/* Finish the document (a newline after the top-level value). */
void json_end(struct json *j);

#endif
