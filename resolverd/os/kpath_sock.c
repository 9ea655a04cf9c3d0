// SPDX-License-Identifier: MIT
/* The NETLINK_RDMA socket's system calls (kpath_sock.h). */
#include "os/kpath_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/log.h"

#define LS_GROUP_BIT (1u << (RDMA_NL_GROUP_LS - 1))

static void raise_rcvbuf(int fd)
{
	int size = KPATH_SOCK_RCVBUF;

	/* FORCE needs CAP_NET_ADMIN, which answering needs anyway */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

int kpath_sock_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = LS_GROUP_BIT };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_RDMA);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	raise_rcvbuf(fd);
	return fd;
}

/* systemd's ListenNetlink= takes a group bit mask ("rdma 4" is group 3). */
int kpath_sock_adopt(int fd)
{
	struct sockaddr_nl sa;
	socklen_t len = sizeof(sa);
	int flags = fcntl(fd, F_GETFL), group = RDMA_NL_GROUP_LS;

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	if (!(sa.nl_groups & LS_GROUP_BIT)) {
		log_warn("kernel path queries: the socket from systemd is not in the "
			 "local-service group (ListenNetlink=rdma 4 is group %d); joining it",
			 RDMA_NL_GROUP_LS);
		if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
			return -errno;
	}
	raise_rcvbuf(fd);
	return 0;
}

int kpath_activation_fd(void)
{
	int n = sd_listen_fds(0);

	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i, proto = 0;
		socklen_t plen = sizeof(proto);

		if (sd_is_socket(fd, AF_NETLINK, SOCK_RAW, -1) <= 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &plen) < 0 ||
		    proto != NETLINK_RDMA)
			continue;
		return fcntl(fd, F_DUPFD_CLOEXEC, 3);
	}
	return -1;
}

uint32_t kpath_sock_pid(int fd)
{
	struct sockaddr_nl self;
	socklen_t len = sizeof(self);

	return getsockname(fd, (struct sockaddr *)&self, &len) == 0 ? self.nl_pid : 0;
}

int kpath_sock_send(int fd, const void *buf, size_t len)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK }; /* port 0: the kernel */
	ssize_t n;

	do
		n = sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

ssize_t kpath_sock_recv(int fd, void *buf, size_t cap)
{
	struct sockaddr_nl from;
	socklen_t flen = sizeof(from);
	ssize_t n;

	do
		n = recvfrom(fd, buf, cap, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* queries come from the kernel only (port 0) */
	if (flen < sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0)
		return -EBADMSG;
	return n;
}
