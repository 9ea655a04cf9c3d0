/* SPDX-License-Identifier: MIT */
/* `ibresctl config generate`: an ibresd.conf for this node from what sysfs
 * and the interfaces show (like `ib_acme -A -O` for ibacm). */
#ifndef IBRESCTL_CONFGEN_H
#define IBRESCTL_CONFGEN_H

#include <stdio.h>

/* Write a config to @out. @sysfs is the sysfs mount ("/sys" normally; tests
 * point it at a prepared tree). Returns the number of endpoints written
 * (0: none found, a commented template is written), or a negative errno. */
int confgen_write(FILE *out, const char *sysfs, const char *hostname);

#endif
