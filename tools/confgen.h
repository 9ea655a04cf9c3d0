/* SPDX-License-Identifier: MIT */
/* `ibresctl config generate`: an ibresd.conf for this node from what sysfs
 * and the interfaces show (like `ib_acme -A -O` for ibacm): an endpoint per
 * IPoIB interface (the ip transport over it) and per RoCE port (the ib
 * transport on its UD QPs). */
#ifndef IBRESCTL_CONFGEN_H
#define IBRESCTL_CONFGEN_H

#include <stdio.h>

/* Write a config to @out. @sysfs is the sysfs mount ("/sys" normally; tests
 * point it at a prepared tree); @hostname names the first endpoint; @device,
 * when not NULL, keeps only that RDMA device's endpoints (a node with several
 * HCAs, or several nodes on one machine). Returns the number of endpoints
 * written (0: none found, a commented template is written), or a negative
 * errno. */
int confgen_write(FILE *out, const char *sysfs, const char *hostname, const char *device);

#endif
