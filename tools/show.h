/* SPDX-License-Identifier: MIT */
/* ibresctl: names of protocol values and the printers shared by its
 * subcommands, each in a human form and a JSON form. */
#ifndef IBRESCTL_SHOW_H
#define IBRESCTL_SHOW_H

#include <stdint.h>
#include <stdio.h>

#include "hostrec.h"
#include "ibres_proto.h"
#include "json.h"

#define GID_STRLEN 46 /* INET6_ADDRSTRLEN */

const char *show_gid(const void *gid, char buf[GID_STRLEN]);
const char *show_state(uint8_t state);
const char *show_origin(uint8_t origin);
const char *show_keytype(uint8_t type);
/* "gmp primary outbound inbound-reverse" for the IBV_PATH_FLAG_* bits. */
const char *show_path_flags(uint32_t flags, char *buf, size_t len);

/* A host record: indented lines under a title line of its canonical name. */
void show_host_text(FILE *f, const struct ibres_hostrec *h, const char *indent);
/* The record's members into the JSON object being written. */
void show_host_json(struct json *j, const struct ibres_hostrec *h);

/* A path record with its IBV_PATH_FLAG_* @flags (every field). */
void show_path_text(FILE *f, uint32_t flags, const struct ibres_path_record *p, const char *indent);
void show_path_json(struct json *j, const char *key, uint32_t flags,
		    const struct ibres_path_record *p);

#endif
