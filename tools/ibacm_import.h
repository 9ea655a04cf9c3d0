/* SPDX-License-Identifier: MIT */
/* `ibresctl config import-ibacm`: an ibresd.conf (and a static hosts file)
 * from ibacm's configuration: ibacm_opts.cfg, ibacm_addr.cfg and the hosts
 * data file the options name. */
#ifndef IBRESCTL_IBACM_IMPORT_H
#define IBRESCTL_IBACM_IMPORT_H

#include <stdio.h>

struct ibacm_import_args {
	const char *dir;       /* ibacm's directory, normally /etc/rdma */
	const char *sysfs;     /* "/sys": IB ports when ibacm_addr.cfg lists none */
	const char *hostname;  /* names the endpoints found in sysfs */
	const char *hosts_out; /* write the hosts file here, or NULL */
};

/* Write the config to @out and, with @a->hosts_out, the hosts file there.
 * Notes for the user (what needs a hand) go to @err. Returns 0, or a
 * negative errno when ibacm_opts.cfg cannot be read or a file is malformed
 * beyond a line (the message is on @err). */
int ibacm_import(FILE *out, FILE *err, const struct ibacm_import_args *a);

#endif
