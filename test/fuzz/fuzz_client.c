// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a client's byte stream through the daemon's framing and
 * dispatch, in process: ibacm's opcodes (RESOLVE, PERF_QUERY, EP_QUERY) and
 * our extension opcodes (HOST, CACHE_LIST, CACHE_FLUSH, STATS, ENDPOINTS),
 * on a daemon with static hosts, a fabric on a fake transport and a fake
 * clock (daemon_fake.h).
 *
 * The first byte picks the client (uid 0 or not; on ibacm's socket or the
 * daemon's own, where a RESOLVE by address gets a path or not) and the daemon
 * (announcements on or off); the rest is the stream. It is cut into
 * messages as frontend/server.c cuts it (msg_frame_length(); a bad length
 * ends the connection, as does a handler's -EPROTO) and each goes through
 * request_start(). Every answer must be a whole message: at least a
 * header, the length its header says, the request's opcode with the ACK
 * bit (a RESOLVE success without, as ibacm answers), its tid. A request that waits must be answered within the resolve
 * bound of the config plus a second (the fake clock moves on until it is);
 * no request is ever answered twice. Any violation abort()s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_fake.h"
#include "engine/resolver.h"
#include "frontend/request.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_client.c:%d: check failed: %s\n", __LINE__, #cond);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static struct request req;
static uint8_t reply[IBRES_MSG_MAX];
static unsigned answers; /* of the request in flight */

static void check_answer(const void *buf, size_t len)
{
	const struct ibres_hdr *q = request_hdr(&req);
	struct ibres_hdr h;

	check(len >= IBRES_HDR_LEN && len <= IBRES_MSG_MAX);
	memcpy(&h, buf, sizeof(h));
	check(ibres_msg_get_length(&h) == len);
	/* a RESOLVE success keeps ibacm's opcode without the ACK bit */
	check((h.opcode & IBRES_OP_MASK) == (q->opcode & IBRES_OP_MASK));
	check(h.opcode == (q->opcode | IBRES_OP_ACK) || h.opcode == IBRES_OP_RESOLVE);
	check(h.tid == q->tid);
	answers++;
}

static void on_complete(struct request *r, const void *buf, size_t len)
{
	check(r == &req);
	check_answer(buf, len);
}

/* One framed message; false: the connection is closed. */
static bool dispatch(const uint8_t *msg, size_t len)
{
	uint64_t bound = resolver_bound_ms(&fake_d.cfg) + 1000, waited = 0;
	size_t reply_len = 0;
	int ret;

	memcpy(req.msg, msg, len);
	req.len = len;
	answers = 0;
	ret = request_start(&fake_d, &req, reply, &reply_len);
	if (ret == -EINPROGRESS) {
		/* every wait has a bound */
		while (!answers) {
			check(waited <= bound);
			fake_advance(50);
			waited += 50;
		}
		check(answers == 1);
		return true;
	}
	if (ret < 0)
		return false;
	check(ret == 0);
	check_answer(reply, reply_len);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char conf[2048];
	uint8_t mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	snprintf(conf, sizeof(conf),
		 "[daemon]\nlog_level = error\n[resolve]\ntimeout = 100ms\nretries = 1\n"
		 "negative_ttl = 5s\naddr_ttl = 60s\nsettle_time = 1s\n"
		 "name_pattern = node* login*\nannounce_interval = %s\n"
		 "[endpoint ib0]\nname = node1\nname = node1.cluster.example\n"
		 "address = 198.18.0.1\naddress = 2001:db8::1\ngid = fe80::2:c903:0:1\n"
		 "lid = 1\nqpn = 1\npkey = 0xffff\ntransport = ip\ninterface = ib0\n"
		 "udp_port = 4790\ngroup = 239.255.73.1 mtu=2048 rate=10\n"
		 "group = 239.255.73.2 mtu=4096 rate=40\n"
		 "[endpoint ib1]\nname = node1-ib1\naddress = 198.19.0.1\n"
		 "gid = fe80::2:c903:0:101\nlid = 101\n",
		 mode & 2 ? "10s" : "0");
	check(fake_daemon_start(conf, "fe80::2:c903:0:10 16 login1 198.18.1.1 2001:db8::10\n"
				      "fe80::2:c903:0:11 17 node5 node5.cluster.example "
				      "198.18.0.5 qpn=0x55 pkey=0x8001\n") == 0);
	memset(&req, 0, sizeof(req));
	req.d = &fake_d;
	req.complete = on_complete;
	req.uid = mode & 1 ? 0 : 1000;
	req.acm_socket = mode & 4;

	/* the server's framing: whole messages, one at a time */
	while (size >= IBRES_HDR_LEN) {
		struct ibres_hdr h;
		size_t len;

		memcpy(&h, data, sizeof(h));
		if (msg_frame_length(&h, &len) < 0) {
			/* answered EINVAL, then closed: the stream cannot be resynchronised */
			check(msg_error(reply, &h, IBRES_STATUS_EINVAL) == IBRES_HDR_LEN);
			break;
		}
		if (size < len)
			break; /* incomplete at EOF */
		if (!dispatch(data, len))
			break;
		data += len;
		size -= len;
	}
	fake_daemon_stop();
	return 0;
}
