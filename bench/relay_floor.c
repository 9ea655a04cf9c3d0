// SPDX-License-Identifier: MIT
/*
 * The floor under a cold resolution: the same message path as ibresd's
 * (client -> Unix stream socket -> multicast request -> unicast reply ->
 * answer on the Unix socket), with no work at all in between. What a cold
 * resolution costs above this is the daemons' own cost; what this costs is
 * the machine's (system calls, the network stack, process wake-ups).
 *
 *   relay_floor relay SOCKET GROUP LOCAL PORT [--local]
 *	Listens on the Unix stream SOCKET. For each client message it sends a
 *	134-byte datagram (the size of a fabric REQUEST) to the IPv4 multicast
 *	GROUP:PORT out of LOCAL, waits for the unicast answer and then writes
 *	the client's message back to it. --local skips the datagrams (the
 *	floor under a cached resolution).
 *   relay_floor responder GROUP LOCAL PORT
 *	Joins GROUP on LOCAL and answers every datagram with 127 bytes (the
 *	size of a fabric REPLY) to its sender.
 *
 * Both run until killed. Benchmark code: no limits beyond one client at a
 * time and 4 KiB messages.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define REQUEST_LEN 134
#define REPLY_LEN 127

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static struct sockaddr_in inet_addr_port(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "relay_floor: bad IPv4 address %s\n", addr);
		exit(2);
	}
	return sin;
}

static int responder(const char *group, const char *local, int port)
{
	struct sockaddr_in any = inet_addr_port("0.0.0.0", port);
	struct sockaddr_in grp = inet_addr_port(group, port);
	struct sockaddr_in me = inet_addr_port(local, port);
	struct ip_mreq mreq = { .imr_multiaddr = grp.sin_addr, .imr_interface = me.sin_addr };
	uint8_t buf[2048], reply[REPLY_LEN];
	int one = 1;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(reply, 'r', sizeof(reply));
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&any, sizeof(any)) ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq)))
		die("responder socket");
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from;
		socklen_t len = sizeof(from);

		if (recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len) < 0)
			die("recvfrom");
		sendto(fd, reply, sizeof(reply), 0, (struct sockaddr *)&from, len);
	}
}

static int relay(const char *path, const char *group, const char *local, int port, bool local_only)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sockaddr_in grp = inet_addr_port(group, port);
	struct sockaddr_in me = inet_addr_port(local, port);
	struct epoll_event ev, evs[8];
	uint8_t msg[4096], request[REQUEST_LEN], buf[2048];
	unsigned char loop = 0;
	int lfd, ufd, cfd = -1, ep;
	ssize_t msg_len = 0;

	memset(request, 'q', sizeof(request));
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) || listen(lfd, 16))
		die("relay socket");
	ufd = socket(AF_INET, SOCK_DGRAM, 0);
	if (ufd < 0 || bind(ufd, (struct sockaddr *)&me, sizeof(me)) ||
	    setsockopt(ufd, IPPROTO_IP, IP_MULTICAST_IF, &me.sin_addr, sizeof(me.sin_addr)) ||
	    setsockopt(ufd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)))
		die("relay datagram socket");
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.fd = ufd;
	epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, evs, 8, -1);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == lfd) {
				if (cfd >= 0)
					close(cfd);
				cfd = accept(lfd, NULL, NULL);
				ev.data.fd = cfd;
				epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
			} else if (fd == cfd) {
				msg_len = recv(cfd, msg, sizeof(msg), MSG_DONTWAIT);
				if (msg_len <= 0) {
					close(cfd);
					cfd = -1;
				} else if (local_only) {
					send(cfd, msg, msg_len, MSG_NOSIGNAL);
				} else {
					sendto(ufd, request, sizeof(request), 0,
					       (struct sockaddr *)&grp, sizeof(grp));
				}
			} else if (fd == ufd) {
				if (recv(ufd, buf, sizeof(buf), MSG_DONTWAIT) > 0 && cfd >= 0)
					send(cfd, msg, msg_len, MSG_NOSIGNAL);
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "relay"))
		return relay(argv[2], argv[3], argv[4], atoi(argv[5]),
			     argc > 6 && !strcmp(argv[6], "--local"));
	if (argc == 5 && !strcmp(argv[1], "responder"))
		return responder(argv[2], argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: relay_floor relay SOCKET GROUP LOCAL PORT [--local]\n"
			"       relay_floor responder GROUP LOCAL PORT\n");
	return 2;
}
