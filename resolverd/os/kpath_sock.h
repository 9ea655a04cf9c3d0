/* SPDX-License-Identifier: MIT */
/* The NETLINK_RDMA socket itself, alone in its file: the system calls
 * os/kpath.c makes, so that a unit test (test/unit/test_kernel_paths.c)
 * can link a fake kernel in their place, as test_protocol.c does with the
 * transport. */
#ifndef IBRESD_KPATH_SOCK_H
#define IBRESD_KPATH_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KPATH_SOCK_RECV_MAX 65536
#define KPATH_SOCK_RCVBUF (2u << 20) /* bursts of queries at job start */

/* A NETLINK_RDMA socket of ours, non-blocking, bound to RDMA_NL_GROUP_LS,
 * its receive buffer raised; or a negative errno (-EPROTONOSUPPORT: no RDMA
 * netlink in this kernel). */
int kpath_sock_open(void);
/* Ready a socket systemd passed: non-blocking, in the group (joined, with
 * a warning, when ListenNetlink= named other groups). 0 or a negative errno. */
int kpath_sock_adopt(int fd);
/* The NETLINK_RDMA socket among those systemd passed (LISTEN_FDS), as a
 * copy of its own (the passed descriptor stays for the others to close),
 * or -1. */
int kpath_activation_fd(void);
/* Our port id (nlmsg_pid of what we send). */
uint32_t kpath_sock_pid(int fd);
/* One message to the kernel: 0 or a negative errno. */
int kpath_sock_send(int fd, const void *buf, size_t len);
/* One datagram from the kernel into @buf: its length; -EAGAIN when none is
 * waiting; -ENOBUFS after an overrun (queries were lost); -EBADMSG for one
 * that did not come from the kernel (dropped). */
ssize_t kpath_sock_recv(int fd, void *buf, size_t cap);

#endif
