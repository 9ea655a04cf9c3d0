/* SPDX-License-Identifier: MIT */
/*
 * The daemon's listening sockets and their files: its own socket and, when
 * configured, ibacm's, each either passed by systemd or made here (folder,
 * lock file, socket, the ibacm.sock link), plus any other listening socket
 * systemd passes. Files in the socket's folder are made only where no other
 * user can swap them (listener.c says what is checked); each accepted
 * connection goes to the callback.
 */
#ifndef IBRESD_LISTENER_H
#define IBRESD_LISTENER_H

#include <stdbool.h>

struct loop;
struct ibres_config;
struct listeners;

/* A connection accepted on one of the sockets: @fd is non-blocking, close-on-exec and now
 * the callee's; @acm: it came through ibacm's socket (acm_socket, or one systemd passed
 * named "acm"), where librdmacm connects. */
typedef void (*listeners_accept_fn)(void *arg, int fd, bool acm);

/* Serve cfg's socket_path and acm_socket_path (and its link with acm_link), and every
 * listening Unix stream socket systemd passed. 0, or a negative errno (logged); nothing is
 * left open then. */
int listeners_open(struct listeners **out, struct loop *loop, const struct ibres_config *cfg,
		   listeners_accept_fn fn, void *arg);
/* Stop listening; remove the sockets and links made here (systemd's stay). */
void listeners_close(struct listeners *ls);

#endif
