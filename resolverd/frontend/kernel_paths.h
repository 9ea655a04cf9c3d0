/* SPDX-License-Identifier: MIT */
/* The kernel's path queries (os/kpath.h) answered through the resolver:
 * the destination GID looked up like any other key (cache, then fabric),
 * the path from the local endpoint of the queried device and port (cache,
 * then SA or multicast group), all within [resolve] kernel_path_timeout. */
#ifndef IBRESD_KERNEL_PATHS_H
#define IBRESD_KERNEL_PATHS_H

struct ibresd;

/* Take the socket systemd passed, if any. Call before server_open(), which
 * closes the passed descriptors it does not serve. */
void kernel_paths_adopt(struct ibresd *d);
/* Serve the queries when [resolve] kernel_paths is on (d->kpath stays NULL
 * otherwise, or when the kernel has no RDMA netlink: logged). */
void kernel_paths_start(struct ibresd *d);
/* After a reload: the new bound. */
void kernel_paths_reload(struct ibresd *d);
/* Refuse what is in flight and close. */
void kernel_paths_stop(struct ibresd *d);

#endif
