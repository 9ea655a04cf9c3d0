/* SPDX-License-Identifier: MIT */
/*
 * The client side of the daemon: connections on the listeners
 * (frontend/listener.h), framing, bounds on every client (who is admitted
 * and whose connection goes when the socket is full: frontend/admission.h),
 * and one request in flight per connection (clients of the ibacm protocol
 * send a request and wait for its answer; its life is frontend/request.h).
 * The number of connected clients is the gauge d->stats.clients_connected.
 */
#ifndef IBRESD_SERVER_H
#define IBRESD_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


struct ibresd;

int server_open(struct ibresd *d);
/* The descriptors the server may hold at most with @max_clients: every
 * connection, root's over the bound, and sockets kept for a descriptor
 * unread (passed.h). */
unsigned server_fds_max(unsigned max_clients);
/* Close every connection and listener; remove the sockets and links made. */
void server_close(struct ibresd *d);

#endif
