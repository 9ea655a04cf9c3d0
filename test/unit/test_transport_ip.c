// SPDX-License-Identifier: MIT
/* resolverd/fabric/transport_ip.c's drop count: the SO_RXQ_OVFL control
 * message as the kernel really sends it (a UDP socket on 127.0.0.1 whose
 * small receive buffer overflowed), and the 32-bit count's arithmetic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/transport_ip.h"

#define FLOOD 256 /* datagrams sent while nobody reads: far more than fit */

/* Receive one datagram from @fd (non-blocking); true and its drop count
 * in @ovfl (or @have false) when there was one. */
static bool recv_one(int fd, bool *have, uint32_t *ovfl)
{
	char buf[64];
	union {
		char b[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.b,
		.msg_controllen = sizeof(ctl.b),
	};

	if (recvmsg(fd, &mh, MSG_DONTWAIT) < 0)
		return false;
	*have = ip_rxq_ovfl(&mh, ovfl);
	return true;
}

static void test_overflow_counted_by_kernel(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int rx, tx, one = 1, small = 2048;
	unsigned queued = 0, before = 0;
	char payload[200] = {0};
	bool have = false;
	uint32_t ovfl = 0, last = 0;

	(void)state;
	rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(rx >= 0 && tx >= 0);
	assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)), 0);
	assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(bind(rx, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(rx, (struct sockaddr *)&sin, &len), 0);
	for (int i = 0; i < FLOOD; i++)
		assert_int_equal(sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&sin,
					sizeof(sin)),
				 (ssize_t)sizeof(payload));
	/* what was queued before the first drop carries no count */
	while (recv_one(rx, &have, &ovfl)) {
		queued++;
		if (!have)
			before++;
	}
	assert_true(queued > 0 && queued < FLOOD);
	assert_int_equal(before, queued);
	/* the next datagram carries the socket's total: every one not queued */
	assert_int_equal(
		sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&sin, sizeof(sin)),
		(ssize_t)sizeof(payload));
	assert_true(recv_one(rx, &have, &ovfl));
	assert_true(have);
	assert_int_equal(ovfl, FLOOD - queued);
	assert_int_equal(ip_ovfl_advance(&last, ovfl), FLOOD - queued);
	assert_int_equal(ip_ovfl_advance(&last, ovfl), 0);
	close(rx);
	close(tx);
}

/* Drops after the last datagram read: no datagram reports them, the
 * socket's own count does (what the transport asks every second). */
static void test_drops_asked_of_the_socket(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int rx, tx, small = 2048;
	unsigned queued = 0;
	char payload[200] = {0};
	bool have = false;
	uint32_t ovfl = 0, count = 0, last = 0;

	(void)state;
	rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(rx >= 0 && tx >= 0);
	assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(bind(rx, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(rx, (struct sockaddr *)&sin, &len), 0);
	assert_true(ip_sock_drops(rx, &count));
	assert_int_equal(count, 0);
	for (int i = 0; i < FLOOD; i++)
		assert_int_equal(sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&sin,
					sizeof(sin)),
				 (ssize_t)sizeof(payload));
	while (recv_one(rx, &have, &ovfl))
		queued++;
	assert_true(queued > 0 && queued < FLOOD);
	assert_true(ip_sock_drops(rx, &count));
	assert_int_equal(count, FLOOD - queued);
	assert_int_equal(ip_ovfl_advance(&last, count), FLOOD - queued);
	close(rx);
	close(tx);
}

static void test_older_count_adds_nothing(void **state)
{
	uint32_t last = 10;

	(void)state;
	/* a datagram queued before drops the socket's count already showed */
	assert_int_equal(ip_ovfl_advance(&last, 7), 0);
	assert_int_equal(last, 10);
	assert_int_equal(ip_ovfl_advance(&last, 10), 0);
	assert_int_equal(ip_ovfl_advance(&last, 12), 2);
	assert_int_equal(last, 12);
}

static void test_no_control_message(void **state)
{
	struct msghdr mh = {0};
	uint32_t v = 7;

	(void)state;
	assert_false(ip_rxq_ovfl(&mh, &v));
	assert_int_equal(v, 7);
}

static void test_count_wraps(void **state)
{
	uint32_t last = UINT32_MAX - 2;

	(void)state;
	/* the kernel's count is 32 bits: a rise across the wrap is still a rise */
	assert_int_equal(ip_ovfl_advance(&last, 4), 7);
	assert_int_equal(last, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overflow_counted_by_kernel),
		cmocka_unit_test(test_drops_asked_of_the_socket),
		cmocka_unit_test(test_older_count_adds_nothing),
		cmocka_unit_test(test_no_control_message),
		cmocka_unit_test(test_count_wraps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
