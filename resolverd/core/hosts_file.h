/* SPDX-License-Identifier: MIT */
/* The static hosts file of ibresd.conf(5)'s hosts_file: one remote host a
 * line, "GID LID NAME [NAME|ADDRESS|qpn=N|pkey=N ...]". Parsing never exits
 * or logs: errors come back as text. */
#ifndef IBRESD_HOSTS_FILE_H
#define IBRESD_HOSTS_FILE_H

#include <stddef.h>

#include "hostrec.h"

#define CFG_HOSTS_MAX 65536 /* lines of the static hosts file */

/* Static hosts: each line one remote host. */
struct cfg_hosts {
	struct ibres_hostrec *hosts;
	unsigned n_hosts;
};

/* Load the static hosts file. 0 or a negative errno with "file:line: ..."
 * @hosts is overwritten (not freed first); on error it is left empty. */
int hosts_load(const char *path, struct cfg_hosts *hosts, char *err, size_t errlen);

/* Same, from memory (@name is used in error messages); used by tests and fuzzing. */
int hosts_parse(const char *name, const char *text, size_t len, struct cfg_hosts *hosts,
		char *err, size_t errlen);

/* Free the hosts and leave @hosts empty. */
void hosts_free(struct cfg_hosts *hosts);

#endif
