// SPDX-License-Identifier: MIT
/*
 * libibres client side: TLV/host record decoding edge cases it relies on,
 * status mapping, and the connection code against a scripted fake daemon in
 * a child process (timeouts, EINTR, reconnects, fork, framing errors, fds),
 * plus the construction of ibres_getaddrinfo() results.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "msg.h"
#include "hostrec.h"
#include "ibres.h"
#include "tlv.h"

/* ---- TLV and host record decoding ---------------------------------------- */

static size_t put_item(uint8_t *p, uint16_t type, const void *v, uint16_t len)
{
	p[0] = type >> 8;
	p[1] = type & 0xff;
	p[2] = len >> 8;
	p[3] = len & 0xff;
	memcpy(p + 4, v, len);
	return 4u + len;
}

static void test_hostrec_edges(void **state)
{
	static const char *const bad_names[] = {
		"-node", "node-", "a..b", ".node", "node.", "198.18.0.2", "no de", "node_1",
		"n\xc3\xa9", "node\n", "a/b",
	};
	static struct ibres_hostrec h;
	uint8_t buf[4096], v4[4] = {198, 18, 0, 1}, v6[16] = {0x20, 1, 0xd, 0xb8};
	size_t n;
	unsigned i;

	(void)state;
	/* minimal: a name */
	n = put_item(buf, IBRES_T_NAME, "node1", 5);
	assert_int_equal(hostrec_decode(buf, n, &h), 0);
	assert_string_equal(h.names[0], "node1");
	/* empty body, or no NAME: invalid */
	assert_int_equal(hostrec_decode(buf, 0, &h), -EBADMSG);
	n = put_item(buf, IBRES_T_IPV4, v4, 4);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	/* ALIAS before NAME, or a second NAME */
	n = put_item(buf, IBRES_T_ALIAS, "a", 1);
	n += put_item(buf + n, IBRES_T_NAME, "b", 1);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	n = put_item(buf, IBRES_T_NAME, "a", 1);
	n += put_item(buf + n, IBRES_T_NAME, "b", 1);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	/* empty name, NUL inside a name, name too long */
	n = put_item(buf, IBRES_T_NAME, "", 0);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	n = put_item(buf, IBRES_T_NAME, "a\0b", 3);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	memset(buf + 4, 'x', 256);
	n = put_item(buf, IBRES_T_NAME, buf + 4, 256);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	/* names no host has (hostrec_name_ok), as the name or an alias */
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		size_t l = strlen(bad_names[i]);

		n = put_item(buf, IBRES_T_NAME, bad_names[i], l);
		assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
		n = put_item(buf, IBRES_T_NAME, "node1", 5);
		n += put_item(buf + n, IBRES_T_ALIAS, bad_names[i], l);
		assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	}
	/* wrong address length, truncated item */
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	n += put_item(buf + n, IBRES_T_IPV4, v6, 16);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	n += put_item(buf + n, IBRES_T_IPV6, v6, 16);
	assert_int_equal(hostrec_decode(buf, n - 1, &h), -EBADMSG);
	assert_int_equal(hostrec_decode(buf, n, &h), 0);
	assert_int_equal(h.n_v6, 1);
	/* unknown items are skipped (newer daemons); limits are enforced */
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	n += put_item(buf + n, 999, "zzz", 3);
	n += put_item(buf + n, IBRES_T_KEY, "n", 1);
	assert_int_equal(hostrec_decode(buf, n, &h), 0);
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	for (i = 0; i <= IBRES_HOST_ADDRS_MAX; i++)
		n += put_item(buf + n, IBRES_T_IPV4, v4, 4);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	for (i = 0; i < IBRES_HOST_NAMES_MAX; i++)
		n += put_item(buf + n, IBRES_T_ALIAS, "a", 1);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
	/* scalar items must have their exact size */
	n = put_item(buf, IBRES_T_NAME, "n", 1);
	n += put_item(buf + n, IBRES_T_LID, v4, 4);
	assert_int_equal(hostrec_decode(buf, n, &h), -EBADMSG);
}

static void test_status_errno(void **state)
{
	(void)state;
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_SUCCESS), 0);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_ENODATA), -ENODATA);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_ETIMEDOUT), -ETIMEDOUT);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_EINVAL), -EINVAL);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_EPERM), -EPERM);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_EAGAIN), -EAGAIN);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_EDESTADDR), -EADDRNOTAVAIL);
	assert_int_equal(ibres_status_to_errno(200), -EPROTO);
}

static void test_length_order(void **state)
{
	struct ibres_hdr h = {.opcode = IBRES_OP_RESOLVE};
	uint8_t *raw = (uint8_t *)&h.length;

	(void)state;
	ibres_msg_set_length(&h, 0x0158);
	assert_int_equal(ibres_msg_get_length(&h), 0x0158);
	assert_int_equal(raw[0], 0x58); /* RESOLVE: host order (x86: little-endian) */
	h.opcode = IBRES_OP_HOST | IBRES_OP_ACK;
	ibres_msg_set_length(&h, 0x0158);
	assert_int_equal(raw[0], 0x01); /* extension: big-endian */
	assert_int_equal(ibres_msg_get_length(&h), 0x0158);
}

/* ---- a scripted fake daemon in a child process --------------------------- */

enum fake_mode {
	FAKE_OK,
	FAKE_SILENT,	 /* read requests, never answer */
	FAKE_CLOSE_EACH, /* answer one request per connection, then close */
	FAKE_BAD_TID,
	FAKE_HUGE,  /* announce a 65535-byte answer */
	FAKE_TWICE, /* send every answer twice */
	FAKE_SLOW,  /* answer after 150 ms */
};

static char sock_path[108];
static pid_t fake_pid = -1;

static const uint8_t GID1[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 0x03, 0, 0, 0, 1};

static void fake_record(struct ibres_hostrec *h)
{
	memset(h, 0, sizeof(*h));
	strcpy(h->names[0], "node1");
	strcpy(h->names[1], "node1.cluster");
	h->n_names = 2;
	inet_pton(AF_INET, "198.18.0.1", &h->v4[0]);
	h->n_v4 = 1;
	inet_pton(AF_INET6, "2001:db8::1", &h->v6[0]);
	h->n_v6 = 1;
	memcpy(h->gids[0], GID1, 16);
	h->n_gids = 1;
	h->lid = 1;
	h->qpn = 0x48;
	h->pkey = 0x7fff;
	h->ttl = 300;
}

/* "big1": 16 names of 100 bytes, more than the NSS module's 1 KB stack
 * copy holds once encoded as the directory's records are. */
#define BIG_NAME_LEN 100
static void fake_big_record(struct ibres_hostrec *h)
{
	fake_record(h);
	for (unsigned i = 0; i < IBRES_HOST_NAMES_MAX; i++) {
		memset(h->names[i], 'a' + (int)i, BIG_NAME_LEN);
		h->names[i][BIG_NAME_LEN] = '\0';
		h->names[i][50] = '.';
	}
	memcpy(h->names[0], "big1.", 5);
	h->n_names = IBRES_HOST_NAMES_MAX;
}

/* HOST requests the fake daemon answered (in its own process). */
static unsigned fake_host_asked;

static void fake_path(struct ibres_path_record *p)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, GID1, 16);
	memcpy(p->sgid, GID1, 16);
	p->sgid[15] = 2;
	p->dlid = htobe16(1);
	p->slid = htobe16(2);
	p->flowlabel_hoplimit = htobe32(0x12345 << 8 | 64);
	p->reversible_numpath = 0x81;
	p->pkey = htobe16(0x7fff);
	p->qosclass_sl = htobe16(3);
	p->mtu = 0x80 | 4;
	p->rate = 0x80 | 3;
	p->packetlifetime = 0x80 | 18;
}

/* Build the answer to @req in @out; returns its length. */
static size_t fake_answer(const uint8_t *req, size_t len, uint8_t *out, unsigned accepted)
{
	const struct ibres_hdr *rq = (const struct ibres_hdr *)req;
	struct ibres_hdr *an = (struct ibres_hdr *)out;
	struct ibres_hostrec h;
	struct tlv_writer w;
	struct tlv_reader r;
	struct tlv_item it;
	size_t alen = IBRES_HDR_LEN;
	bool known = false, big = false;

	memcpy(an, rq, IBRES_HDR_LEN);
	an->opcode = rq->opcode | IBRES_OP_ACK;
	an->status = 0;
	tlv_writer_init(&w, out + IBRES_HDR_LEN, 4096);
	switch (rq->opcode) {
	case IBRES_OP_HOST:
		fake_host_asked++;
		tlv_reader_init(&r, req + IBRES_HDR_LEN, len - IBRES_HDR_LEN);
		while (tlv_next(&r, &it) > 0) {
			if ((it.type == IBRES_T_NAME && it.length == 5 &&
			     !memcmp(it.value, "node1", 5)) ||
			    (it.type == IBRES_T_IPV4 && it.length == 4 &&
			     !memcmp(it.value, "\xc6\x12\0\x01", 4)) ||
			    (it.type == IBRES_T_GID && it.length == 16 &&
			     !memcmp(it.value, GID1, 16)))
				known = true;
		}
		tlv_reader_init(&r, req + IBRES_HDR_LEN, len - IBRES_HDR_LEN);
		while (tlv_next(&r, &it) > 0)
			if (it.type == IBRES_T_NAME && it.length == BIG_NAME_LEN &&
			    !memcmp(it.value, "big1.", 5))
				big = true;
		if (!known && !big) {
			an->status = IBRES_STATUS_ENODATA;
			break;
		}
		if (big)
			fake_big_record(&h);
		else
			fake_record(&h);
		hostrec_encode(&w, &h);
		alen += w.len;
		break;
	case IBRES_OP_STATS:
		tlv_put_str(&w, IBRES_T_NAME, "host_asked");
		tlv_put_u64(&w, IBRES_T_COUNTER, fake_host_asked);
		tlv_put_str(&w, IBRES_T_NAME, "accepted");
		tlv_put_u64(&w, IBRES_T_COUNTER, accepted);
		alen += w.len;
		break;
	case IBRES_OP_RESOLVE: {
		struct ibres_ep_entry *e = (struct ibres_ep_entry *)(out + IBRES_HDR_LEN);

		an->opcode = IBRES_OP_RESOLVE;
		memset(e, 0, 2 * sizeof(*e));
		e[0].flags = IBRES_PATH_FLAGS_ACM;
		e[0].type = IBRES_EP_TYPE_PATH;
		fake_path(&e[0].info.path);
		e[1].flags = IBRES_EP_FLAG_SOURCE;
		e[1].type = IBRES_EP_TYPE_IP;
		inet_pton(AF_INET, "198.18.0.2", e[1].info.addr);
		alen += 2 * sizeof(*e);
		break;
	}
	default:
		an->status = IBRES_STATUS_EINVAL;
	}
	ibres_msg_set_length(an, (uint16_t)alen);
	return alen;
}

static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t have = 0;
	ssize_t n;

	while (have < len) {
		n = read(fd, buf + have, len - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return (ssize_t)have;
}

static void fake_serve(int lfd, enum fake_mode mode)
{
	struct pollfd fds[65];
	unsigned nfds = 1, accepted = 0, i;
	uint8_t req[IBRES_MSG_MAX], ans[8192];

	fds[0].fd = lfd;
	fds[0].events = POLLIN;
	for (;;) {
		if (poll(fds, nfds, -1) < 0)
			continue;
		if ((fds[0].revents & POLLIN) && nfds < 65) {
			fds[nfds].fd = accept(lfd, NULL, NULL);
			fds[nfds].events = POLLIN;
			fds[nfds].revents = 0;
			if (fds[nfds].fd >= 0) {
				nfds++;
				accepted++;
			}
		}
		for (i = 1; i < nfds; i++) {
			struct ibres_hdr *h = (struct ibres_hdr *)req;
			size_t len, alen;
			uint64_t tid;

			if (!fds[i].revents)
				continue;
			if (read_full(fds[i].fd, req, IBRES_HDR_LEN) < 0)
				goto drop;
			len = ibres_msg_get_length(h);
			if (len < IBRES_HDR_LEN ||
			    read_full(fds[i].fd, req + IBRES_HDR_LEN, len - IBRES_HDR_LEN) < 0)
				goto drop;
			if (mode == FAKE_SILENT)
				continue;
			if (mode == FAKE_SLOW)
				usleep(150000);
			alen = fake_answer(req, len, ans, accepted);
			if (mode == FAKE_BAD_TID) {
				memcpy(&tid, ans + 8, 8);
				tid++;
				memcpy(ans + 8, &tid, 8);
			}
			if (mode == FAKE_HUGE)
				ibres_msg_set_length((struct ibres_hdr *)ans, 65535);
			if (mode == FAKE_TWICE) {
				memcpy(ans + alen, ans, alen);
				alen *= 2;
			}
			if (write(fds[i].fd, ans, alen) != (ssize_t)alen || mode == FAKE_CLOSE_EACH)
				goto drop;
			continue;
		drop:
			close(fds[i].fd);
			fds[i] = fds[--nfds];
			i--;
		}
	}
}

static void fake_start(enum fake_mode mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int ready[2], lfd;
	char c;

	assert_int_equal(pipe(ready), 0);
	unlink(sock_path);
	fake_pid = fork();
	assert_true(fake_pid >= 0);
	if (fake_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_IGN); /* only here: the library must not need it */
		lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		strcpy(sa.sun_path, sock_path);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 64))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		fake_serve(lfd, mode);
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
}

static void fake_stop(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGKILL);
		waitpid(fake_pid, NULL, 0);
	}
	fake_pid = -1;
	unlink(sock_path);
}

static int teardown(void **state)
{
	(void)state;
	fake_stop();
	return 0;
}

static uint64_t ms_now(void)
{
	return ibc_now_ns() / 1000000u;
}

/* The fake daemon's counter @name (STATS: NAME then COUNTER items). */
static unsigned fake_counter(struct ibres *h, const char *name)
{
	uint8_t ans[512], status;
	const uint8_t *body;
	struct tlv_reader r;
	struct tlv_item it;
	uint64_t v = 0;
	size_t len;
	bool this = false;

	assert_int_equal(
		ibc_ext(h, IBRES_OP_STATS, NULL, 0, ans, sizeof(ans), &status, &body, &len), 0);
	tlv_reader_init(&r, body, len);
	while (tlv_next(&r, &it) > 0) {
		if (it.type == IBRES_T_NAME)
			this = it.length == strlen(name) && !memcmp(it.value, name, it.length);
		else if (it.type == IBRES_T_COUNTER && this)
			tlv_get_u64(&it, &v);
	}
	return (unsigned)v;
}

static unsigned fake_accepted(struct ibres *h)
{
	return fake_counter(h, "accepted");
}

/* What the NSS module gets: a view over a copy of the record; one larger
 * than the caller's copy comes in a buffer of its own, from one request. */
static void test_host_view(void **state)
{
	uint64_t copy[1024 / 8];
	struct ibdir_view v;
	const uint8_t *p, *name;
	struct ibres_hostrec want;
	char big[BIG_NAME_LEN];
	struct ibres *h;
	void *heap;

	(void)state;
	fake_start(FAKE_OK);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	assert_int_equal(ibc_host_view(h, IBRES_T_NAME, "node1", 5, copy, sizeof(copy), &v, &heap),
			 0);
	assert_null(heap);
	assert_int_equal(v.n_names, 2);
	assert_int_equal(v.ttl, 300);
	assert_true((const uint8_t *)v.gids >= (const uint8_t *)copy &&
		    v.end <= (const uint8_t *)copy + sizeof(copy));
	assert_int_equal(fake_counter(h, "host_asked"), 1);

	fake_big_record(&want);
	memcpy(big, want.names[0], BIG_NAME_LEN);
	assert_int_equal(
		ibc_host_view(h, IBRES_T_NAME, big, BIG_NAME_LEN, copy, sizeof(copy), &v, &heap),
		0);
	assert_non_null(heap);
	assert_true((const uint8_t *)v.gids >= (const uint8_t *)heap &&
		    v.end <= (const uint8_t *)heap + IBDIR_REC_MAX);
	assert_int_equal(v.n_names, IBRES_HOST_NAMES_MAX);
	p = v.names;
	for (unsigned i = 0; i < v.n_names; i++) {
		assert_int_equal(ibdir_view_next_name(&p, &name), BIG_NAME_LEN);
		assert_memory_equal(name, want.names[i], BIG_NAME_LEN);
	}
	free(heap);
	/* asked once, not again for room */
	assert_int_equal(fake_counter(h, "host_asked"), 2);
	/* unknown: no buffer left behind */
	assert_int_equal(ibc_host_view(h, IBRES_T_NAME, "node9", 5, copy, sizeof(copy), &v, &heap),
			 -ENODATA);
	assert_null(heap);
	ibres_close(h);
	fake_stop();
}

/* ---- the public API against the fake daemon ------------------------------ */

static void test_host_calls(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	struct in_addr a4;
	int i;

	(void)state;
	fake_start(FAKE_OK);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
	assert_string_equal(host->name, "node1");
	assert_string_equal(host->aliases[0], "node1.cluster");
	assert_null(host->aliases[1]);
	assert_int_equal(host->n_ipv4, 1);
	assert_int_equal(host->ipv4[0].s_addr, htonl(0xc6120001));
	assert_int_equal(host->n_ipv6, 1);
	assert_int_equal(host->ipv6[0].s6_addr[15], 1);
	assert_int_equal(host->n_gids, 1);
	assert_memory_equal(host->gids[0].raw, GID1, 16);
	assert_int_equal(host->lid, 1);
	assert_int_equal(host->qpn, 0x48);
	assert_int_equal(host->pkey, 0x7fff);
	assert_int_equal(host->ttl, 300);
	ibres_host_free(host);

	inet_pton(AF_INET, "198.18.0.1", &a4);
	assert_int_equal(ibres_host_by_addr(h, AF_INET, &a4, 4, 0, &host), 0);
	ibres_host_free(host);
	assert_int_equal(ibres_host_by_addr(h, AF_IB, GID1, 16, IBRES_LOOKUP_CACHE_ONLY, &host), 0);
	ibres_host_free(host);
	assert_int_equal(ibres_host_by_name(h, "nosuch", 0, &host), -ENODATA);
	assert_int_equal(ibres_host_by_addr(h, AF_INET, &a4, 16, 0, &host), -EINVAL);
	assert_int_equal(ibres_host_by_addr(h, AF_UNIX, &a4, 4, 0, &host), -EAFNOSUPPORT);
	assert_int_equal(ibres_host_by_name(h, "", 0, &host), -EINVAL);
	assert_int_equal(ibres_host_by_name(h, "node1", 0x80, &host), -EINVAL);

	/* one persistent connection served all of that */
	for (i = 0; i < 20; i++) {
		assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
		ibres_host_free(host);
	}
	assert_int_equal(fake_accepted(h), 1);
	ibres_close(h);
}

static void test_resolve_path(void **state)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct sockaddr_ib dib = {.sib_family = AF_IB};
	struct ibv_path_data *paths;
	size_t n;

	(void)state;
	fake_start(FAKE_OK);
	setenv(IBRES_SOCKET_ENV, sock_path, 1);
	inet_pton(AF_INET, "198.18.0.1", &dst.sin_addr);
	assert_int_equal(ibres_resolve_path(NULL, NULL, (struct sockaddr *)&dst, 0, &paths, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(paths[0].flags, IBRES_PATH_FLAGS_ACM);
	assert_memory_equal(paths[0].path.dgid.raw, GID1, 16);
	assert_int_equal(be16toh(paths[0].path.pkey), 0x7fff);
	free(paths);
	memcpy(&dib.sib_addr, GID1, 16);
	assert_int_equal(ibres_resolve_path(NULL, (struct sockaddr *)&dst, (struct sockaddr *)&dib,
					    IBRES_RESOLVE_NODELAY, &paths, &n),
			 0);
	free(paths);
	dst.sin_family = AF_UNIX;
	assert_int_equal(ibres_resolve_path(NULL, NULL, (struct sockaddr *)&dst, 0, &paths, &n),
			 -EAFNOSUPPORT);
	assert_int_equal(ibres_resolve_path(NULL, NULL, NULL, 0, &paths, &n), -EINVAL);
}

static void test_no_daemon(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	char path[128];
	uint64_t t0;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s.none", sock_path);
	assert_int_equal(ibres_open(&h, path, 5000), 0);
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), -ENOENT);
	assert_true(ms_now() - t0 < 100); /* at once, not after the timeout */
	ibres_close(h);

	/* a socket file nobody listens on */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	strcpy(sa.sun_path, path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(ibres_open(&h, path, 5000), 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), -ECONNREFUSED);
	ibres_close(h);
	unlink(path);

	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(ibres_open(&h, path, 0), -EINVAL);
}

static void test_timeout(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	uint64_t t0, dt;

	(void)state;
	fake_start(FAKE_SILENT);
	assert_int_equal(ibres_open(&h, sock_path, 200), 0);
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), -ETIMEDOUT);
	dt = ms_now() - t0;
	assert_true(dt >= 195 && dt < 1000);
	/* the timed-out stream was dropped: the next call waits afresh */
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), -ETIMEDOUT);
	assert_true(ms_now() - t0 < 1000);
	ibres_close(h);

	/* the environment sets the implicit handle's bound */
	setenv(IBRES_SOCKET_ENV, sock_path, 1);
	setenv(IBRES_TIMEOUT_ENV, "100", 1);
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(NULL, "node1", 0, &host), -ETIMEDOUT);
	dt = ms_now() - t0;
	assert_true(dt >= 95 && dt < 1000);
	setenv(IBRES_TIMEOUT_ENV, "junk", 1);
	assert_int_equal(ibc_timeout_ms(&ibc_default), IBRES_TIMEOUT_DEFAULT_MS);
	unsetenv(IBRES_TIMEOUT_ENV);
	assert_int_equal(IBRES_TIMEOUT_DEFAULT_MS, 10000);
}

/* A handle with a default of its own (the NSS module's, 5 s) keeps it unless
 * the handle or $IBRES_TIMEOUT_MS says otherwise. */
static void test_handle_default_bound(void **state)
{
	static struct ibres own = IBC_INIT_BOUND(5000);

	(void)state;
	unsetenv(IBRES_TIMEOUT_ENV);
	assert_int_equal(ibc_timeout_ms(&own), 5000);
	setenv(IBRES_TIMEOUT_ENV, "250", 1);
	assert_int_equal(ibc_timeout_ms(&own), 250);
	setenv(IBRES_TIMEOUT_ENV, "junk", 1);
	assert_int_equal(ibc_timeout_ms(&own), 5000);
	unsetenv(IBRES_TIMEOUT_ENV);
	own.timeout_ms = 700;
	assert_int_equal(ibc_timeout_ms(&own), 700);
}

static void test_reconnect(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	int i;

	(void)state;
	/* the daemon closes after each answer: every reuse fails and is retried once */
	fake_start(FAKE_CLOSE_EACH);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	for (i = 0; i < 5; i++) {
		assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
		ibres_host_free(host);
		usleep(2000); /* let the close arrive */
	}
	ibres_close(h);
}

static void framing_case(enum fake_mode mode, int want)
{
	struct ibres_host *host;
	struct ibres *h;

	fake_start(mode);
	assert_int_equal(ibres_open(&h, sock_path, 1000), 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), want);
	ibres_close(h);
	fake_stop();
}

static void test_framing_errors(void **state)
{
	(void)state;
	framing_case(FAKE_BAD_TID, -EPROTO);
	framing_case(FAKE_HUGE, -EMSGSIZE);
	framing_case(FAKE_TWICE, -EPROTO);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_eintr(void **state)
{
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct itimerval it = {{0, 3000}, {0, 3000}}, off = {{0, 0}, {0, 0}};
	struct ibres_host *host;
	sigset_t alrm;
	struct ibres *h;
	uint64_t t0;

	(void)state;
	fake_start(FAKE_SLOW);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART: poll() sees EINTR */
	setitimer(ITIMER_REAL, &it, NULL);
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
	setitimer(ITIMER_REAL, &off, NULL);
	/* a SIGALRM raised before the timer stopped may still be pending
	 * (valgrind hands signals over late): take it while on_alarm is the
	 * handler, so that the default action (the end of the process, "Alarm
	 * clock" in CI's valgrind run) never meets it */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, NULL);
	while (sigtimedwait(&alrm, NULL, &(struct timespec){0, 0}) == SIGALRM)
		;
	sigaction(SIGALRM, &old, NULL);
	sigprocmask(SIG_UNBLOCK, &alrm, NULL);
	assert_true(ms_now() - t0 >= 145);
	ibres_host_free(host);
	ibres_close(h);
}

static void test_fork(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	int status;
	pid_t pid;

	(void)state;
	fake_start(FAKE_OK);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
	ibres_host_free(host);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child must not talk on the parent's stream */
		int ok =
			ibres_host_by_name(h, "node1", 0, &host) == 0 && h->slot[0].pid == getpid();

		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
	ibres_host_free(host);
	assert_int_equal(fake_accepted(h), 2);
	ibres_close(h);
}

static void test_fd_hygiene(void **state)
{
	struct ibres_host *host;
	struct ibres *h;
	int saved, fd;

	(void)state;
	fake_start(FAKE_OK);
	saved = dup(0);
	assert_true(saved >= 0);
	close(0);
	assert_int_equal(ibres_open(&h, sock_path, 2000), 0);
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), 0);
	ibres_host_free(host);
	fd = h->slot[0].fd;
	assert_true(fcntl(0, F_GETFD) < 0); /* stdin stays closed */
	dup2(saved, 0);
	close(saved);
	assert_true(fd >= 3);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ibres_close(h);
}

static void test_self_deadlock(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ibres_host *host;
	struct ibres *h;
	uint64_t t0;
	int lfd;

	(void)state;
	/* this process itself listens: it is "ibresd" and must not ask itself */
	unlink(sock_path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, sock_path);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(ibres_open(&h, sock_path, 3000), 0);
	t0 = ms_now();
	assert_int_equal(ibres_host_by_name(h, "node1", 0, &host), -EDEADLK);
	assert_true(ms_now() - t0 < 500);
	ibres_close(h);
	close(lfd);
	unlink(sock_path);
}

#define THREADS 8
#define CALLS	300

static void *hammer(void *arg)
{
	struct ibres *h = arg;
	struct ibres_host *host;
	long bad = 0;
	int i;

	for (i = 0; i < CALLS; i++) {
		if (ibres_host_by_name(h, "node1", 0, &host) || strcmp(host->name, "node1"))
			bad++;
		else
			ibres_host_free(host);
	}
	return (void *)bad;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	struct ibres *h;
	void *bad;
	int i;

	(void)state;
	fake_start(FAKE_OK);
	assert_int_equal(ibres_open(&h, sock_path, 5000), 0);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, h), 0);
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_int_equal((long)bad, 0);
	}
	ibres_close(h);
}

/* ---- ibres_getaddrinfo() results ---------------------------------------- */

static void check_sib(const struct sockaddr *sa, socklen_t len, const uint8_t *gid, uint16_t port,
		      uint16_t pkey)
{
	const struct sockaddr_ib *sib = (const struct sockaddr_ib *)sa;
	uint64_t mask = RDMA_IB_IP_PS_MASK | (port ? RDMA_IB_IP_PORT_MASK : 0);

	assert_non_null(sa);
	assert_int_equal(len, sizeof(*sib));
	assert_int_equal(sib->sib_family, AF_IB);
	assert_int_equal(be16toh(sib->sib_pkey), pkey);
	if (gid)
		assert_memory_equal(&sib->sib_addr, gid, 16);
	assert_int_equal(be64toh(sib->sib_sid), ((uint64_t)RDMA_PS_TCP << 16) + port);
	assert_int_equal(be64toh(sib->sib_sid_mask), mask);
}

static void test_gai_build(void **state)
{
	struct ibv_path_data paths[2];
	struct rdma_addrinfo *res, *ip;
	struct sockaddr_in *sin;
	struct ibc_gai g;
	uint32_t ch[9];

	(void)state;
	memset(paths, 0, sizeof(paths));
	paths[0].flags = IBRES_PATH_FLAGS_ACM;
	fake_path((struct ibres_path_record *)&paths[0].path);
	paths[1] = paths[0];
	memset(&g, 0, sizeof(g));
	g.want_ib = g.want_ip = 1;
	g.qp_type = IBV_QPT_RC;
	g.port_space = RDMA_PS_TCP;
	g.port = 7471;
	g.canon = "node1";
	sin = (struct sockaddr_in *)&g.ip;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(7471);
	inet_pton(AF_INET, "198.18.0.1", &sin->sin_addr);
	g.ip_len = sizeof(*sin);
	sin = (struct sockaddr_in *)&g.ip_src;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "198.18.0.2", &sin->sin_addr);
	g.ip_src_len = sizeof(*sin);
	g.paths = paths;
	g.n_paths = 2;

	assert_int_equal(ibc_gai_build(&g, &res), 0);
	/* AF_IB first: addresses and P_Key from the primary path */
	assert_int_equal(res->ai_family, AF_IB);
	assert_int_equal(res->ai_qp_type, IBV_QPT_RC);
	assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
	check_sib(res->ai_dst_addr, res->ai_dst_len, GID1, 7471, 0x7fff);
	check_sib(res->ai_src_addr, res->ai_src_len, paths[0].path.sgid.raw, 0, 0x7fff);
	assert_int_equal(be32toh(((struct sockaddr_ib *)res->ai_dst_addr)->sib_flowinfo), 0x12345);
	assert_int_equal(res->ai_route_len, 2 * sizeof(struct ibv_path_data));
	assert_memory_equal(res->ai_route, paths, sizeof(paths));
	assert_string_equal(res->ai_dst_canonname, "node1");
	assert_null(res->ai_src_canonname);
	/* the CM header: IP version 4, addresses in the last word */
	assert_int_equal(res->ai_connect_len, 36);
	memcpy(ch, res->ai_connect, 36);
	assert_int_equal(((uint8_t *)ch)[1], 0x40);
	assert_int_equal(ch[4], htonl(0xc6120002));
	assert_int_equal(ch[8], htonl(0xc6120001));
	/* then the IP form, with the route too (as librdmacm gives it) */
	ip = res->ai_next;
	assert_non_null(ip);
	assert_int_equal(ip->ai_family, AF_INET);
	assert_int_equal(ip->ai_dst_len, sizeof(struct sockaddr_in));
	assert_int_equal(((struct sockaddr_in *)ip->ai_dst_addr)->sin_port, htons(7471));
	assert_int_equal(ip->ai_src_len, sizeof(struct sockaddr_in));
	assert_int_equal(ip->ai_route_len, 2 * sizeof(struct ibv_path_data));
	assert_null(ip->ai_connect);
	assert_null(ip->ai_next);
	ibres_freeaddrinfo(res);

	/* no route: the AF_IB entry from the record's GID and P_Key, no source */
	g.n_paths = 0;
	g.paths = NULL;
	memcpy(g.gid, GID1, 16);
	g.have_gid = 1;
	g.pkey = htobe16(0x8001);
	assert_int_equal(ibc_gai_build(&g, &res), 0);
	check_sib(res->ai_dst_addr, res->ai_dst_len, GID1, 7471, 0x8001);
	assert_null(res->ai_src_addr);
	assert_null(res->ai_route);
	assert_int_equal(res->ai_route_len, 0);
	ibres_freeaddrinfo(res);

	/* IP only, then nothing at all */
	g.want_ib = 0;
	assert_int_equal(ibc_gai_build(&g, &res), 0);
	assert_int_equal(res->ai_family, AF_INET);
	assert_null(res->ai_next);
	ibres_freeaddrinfo(res);
	g.want_ip = 0;
	assert_int_equal(ibc_gai_build(&g, &res), -ENODATA);

	/* passive wildcard */
	memset(&g, 0, sizeof(g));
	g.passive = 1;
	g.flags = RAI_PASSIVE;
	g.want_ib = g.want_ip = 1;
	g.port_space = RDMA_PS_TCP;
	g.port = 7471;
	sin = (struct sockaddr_in *)&g.ip;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(7471);
	g.ip_len = sizeof(*sin);
	assert_int_equal(ibc_gai_build(&g, &res), 0);
	assert_int_equal(res->ai_family, AF_IB);
	assert_int_equal(res->ai_flags, RAI_PASSIVE);
	assert_null(res->ai_dst_addr);
	check_sib(res->ai_src_addr, res->ai_src_len, NULL, 7471, 0xffff);
	assert_true(ib_addr_any(&((struct sockaddr_ib *)res->ai_src_addr)->sib_addr));
	assert_int_equal(res->ai_next->ai_family, AF_INET);
	assert_non_null(res->ai_next->ai_src_addr);
	assert_null(res->ai_next->ai_dst_addr);
	ibres_freeaddrinfo(res);
	ibres_freeaddrinfo(NULL);
}

static void test_getaddrinfo(void **state)
{
	struct rdma_addrinfo hints, *res;
	const char *gid = "fe80::2:c903:0:1";

	(void)state;
	fake_start(FAKE_OK);
	setenv(IBRES_SOCKET_ENV, sock_path, 1);

	assert_int_equal(ibres_getaddrinfo("node1", "7471", NULL, &res), 0);
	assert_int_equal(res->ai_family, AF_IB);
	check_sib(res->ai_dst_addr, res->ai_dst_len, GID1, 7471, 0x7fff);
	assert_int_equal(res->ai_route_len, sizeof(struct ibv_path_data));
	assert_string_equal(res->ai_dst_canonname, "node1");
	assert_int_equal(res->ai_next->ai_family, AF_INET);
	/* the source the daemon chose fills the IP entry's source */
	assert_non_null(res->ai_next->ai_src_addr);
	assert_int_equal(((struct sockaddr_in *)res->ai_next->ai_src_addr)->sin_addr.s_addr,
			 htonl(0xc6120002));
	ibres_freeaddrinfo(res);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NOROUTE;
	hints.ai_family = AF_INET6;
	assert_int_equal(ibres_getaddrinfo("node1", NULL, &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_IB);
	assert_null(res->ai_route);
	assert_int_equal(res->ai_next->ai_family, AF_INET6);
	ibres_freeaddrinfo(res);

	/* a numeric GID needs no daemon with RAI_NOROUTE */
	fake_stop();
	hints.ai_flags = RAI_FAMILY | RAI_NUMERICHOST | RAI_NOROUTE;
	hints.ai_family = AF_IB;
	assert_int_equal(ibres_getaddrinfo(gid, "1", &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_IB);
	check_sib(res->ai_dst_addr, res->ai_dst_len, GID1, 1, 0xffff);
	assert_null(res->ai_next);
	ibres_freeaddrinfo(res);
	/* a numeric IP without a daemon: the IP form only */
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_family = AF_UNSPEC;
	assert_int_equal(ibres_getaddrinfo("198.18.0.7", "7471", &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_INET);
	assert_null(res->ai_next);
	ibres_freeaddrinfo(res);

	fake_start(FAKE_OK);
	assert_int_equal(ibres_getaddrinfo("nosuch", "7471", NULL, &res), -ENODATA);
	hints.ai_flags = RAI_NUMERICHOST;
	assert_int_equal(ibres_getaddrinfo("node1", "7471", &hints, &res), -ENODATA);
	hints.ai_flags = 0;
	hints.ai_family = AF_UNIX;
	assert_int_equal(ibres_getaddrinfo("node1", "7471", &hints, &res), -EAFNOSUPPORT);
	assert_int_equal(ibres_getaddrinfo("node1", "70000", NULL, &res), -EINVAL);
	assert_int_equal(ibres_getaddrinfo(NULL, NULL, NULL, &res), -EINVAL);
	assert_int_equal(ibres_getaddrinfo(NULL, "7471", NULL, &res), -EINVAL);

	/* passive, wildcard and by name */
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	assert_int_equal(ibres_getaddrinfo(NULL, "7471", &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_IB);
	assert_null(res->ai_dst_addr);
	assert_int_equal(res->ai_next->ai_family, AF_INET);
	ibres_freeaddrinfo(res);
	hints.ai_family = AF_IB;
	assert_int_equal(ibres_getaddrinfo("node1", "7471", &hints, &res), 0);
	check_sib(res->ai_src_addr, res->ai_src_len, GID1, 7471, 0x7fff);
	assert_null(res->ai_next);
	ibres_freeaddrinfo(res);
}

static int setup_group(void **state)
{
	(void)state;
	snprintf(sock_path, sizeof(sock_path), "/tmp/ibres-test-client-%d.sock", (int)getpid());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostrec_edges),
		cmocka_unit_test(test_status_errno),
		cmocka_unit_test(test_length_order),
		cmocka_unit_test_teardown(test_host_calls, teardown),

		cmocka_unit_test_teardown(test_host_view, teardown),
		cmocka_unit_test_teardown(test_resolve_path, teardown),
		cmocka_unit_test_teardown(test_no_daemon, teardown),
		cmocka_unit_test_teardown(test_timeout, teardown),
		cmocka_unit_test(test_handle_default_bound),
		cmocka_unit_test_teardown(test_reconnect, teardown),
		cmocka_unit_test_teardown(test_framing_errors, teardown),
		cmocka_unit_test_teardown(test_eintr, teardown),
		cmocka_unit_test_teardown(test_fork, teardown),
		cmocka_unit_test_teardown(test_fd_hygiene, teardown),
		cmocka_unit_test_teardown(test_self_deadlock, teardown),
		cmocka_unit_test_teardown(test_threads, teardown),
		cmocka_unit_test(test_gai_build),
		cmocka_unit_test_teardown(test_getaddrinfo, teardown),
	};

	/* the connection code alone: a handle would also connect to ask for the
	 * shared directory (test_hostdir.c and test_hostdir.py test that), and
	 * these tests count the fake daemon's connections */
	setenv("IBRES_DIRECTORY", "off", 1);
	return cmocka_run_group_tests(tests, setup_group, NULL);
}
