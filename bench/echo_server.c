// SPDX-License-Identifier: MIT
/*
 * The baseline: a minimal epoll server on a Unix stream socket that answers
 * each 88-byte request with a 160-byte message (the size of ibresd's RESOLVE
 * answer), doing no work at all.   echo_server SOCKET
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define REQ 88
#define ANS 160

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev, evs[64];
	uint8_t buf[4096], ans[ANS];
	int lfd, ep;

	if (argc != 2)
		return 2;
	memset(ans, 0, sizeof(ans));
	ans[0] = 1;
	ans[1] = 1;
	ans[6] = ANS;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1024) < 0)
		return 1;
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					ev.events = EPOLLIN;
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			ssize_t r = recv(fd, buf, sizeof(buf), 0);

			if (r <= 0) {
				close(fd);
				continue;
			}
			for (ssize_t k = 0; k + REQ <= r; k += REQ)
				send(fd, ans, sizeof(ans), MSG_NOSIGNAL);
		}
	}
}
