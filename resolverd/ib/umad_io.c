// SPDX-License-Identifier: MIT
/* libibumad behind two helper threads and two pipes (umad_io.h). */
#include "ib/umad_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "core/list.h"
#include "core/log.h"

#define RX_WAIT_MS	  200  /* umad_recv bound: how soon the receiver sees stop */
#define RX_ERROR_PAUSE_MS 100  /* after an unexpected umad_recv failure */
#define JOIN_WAIT_MS	  2000 /* per thread at close */
#define DISPATCH_BATCH	  64   /* MADs per loop callback, then let others run */

/* One record on either pipe: at most PIPE_BUF bytes, so every write and
 * read moves a whole record. */
struct io_msg {
	int32_t agent;
	int32_t status;
	uint16_t lid; /* tx: destination; rx: source */
	uint32_t qpn;
	uint32_t qkey;
	uint32_t timeout_ms;
	uint8_t sl;
	uint32_t len;
	uint8_t mad[MAD_LEN];
};

_Static_assert(sizeof(struct io_msg) <= PIPE_BUF, "pipe records must be atomic");

struct umad_io {
	int portid;
	int agents[UMAD_IO_AGENTS]; /* -1 when not registered */
	int rx_pipe[2];		    /* receiver -> loop */
	int tx_pipe[2];		    /* loop -> sender */
	pthread_t rx_thread, tx_thread;
	bool rx_started, tx_started;
	atomic_bool stop;
	struct loop_fd lf;
	umad_io_recv_fn fn;
	void *arg;
	char dev[UMAD_CA_NAME_LEN];
	unsigned port;
	atomic_uint_fast64_t rx, rx_dropped, rx_errors, tx, tx_errors;
	struct umad_io_rx scratch; /* loop side */
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *rx_main(void *arg)
{
	struct umad_io *io = arg;
	size_t size = umad_size() + MAD_LEN;
	uint8_t *buf = calloc(1, size);
	struct io_msg msg;

	if (!buf)
		return NULL;
	while (!atomic_load(&io->stop)) {
		struct ib_user_mad *umad = (struct ib_user_mad *)buf;
		int len = MAD_LEN, agent;

		/* umad_recv's own bound; under umad2sim its poll is a timed
		 * condition wait, so the bound holds there too */
		agent = umad_recv(io->portid, buf, &len, RX_WAIT_MS);
		if (agent == -ETIMEDOUT)
			continue;
		if (agent < 0) {
			/* a MAD larger than ours (RMPP) or a failing port */
			atomic_fetch_add(&io->rx_errors, 1);
			sleep_ms(RX_ERROR_PAUSE_MS);
			continue;
		}
		memset(&msg, 0, sizeof(msg));
		msg.agent = -1;
		for (int i = 0; i < UMAD_IO_AGENTS; i++)
			if (io->agents[i] >= 0 && io->agents[i] == agent)
				msg.agent = i;
		if (msg.agent < 0 || len < 0) {
			atomic_fetch_add(&io->rx_dropped, 1);
			continue;
		}
		msg.status = umad_status(buf);
		msg.lid = ntohs(umad->addr.lid);
		msg.len = (uint32_t)len > MAD_LEN ? MAD_LEN : (uint32_t)len;
		memcpy(msg.mad, umad_get_mad(buf), msg.len);
		if (write(io->rx_pipe[1], &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			atomic_fetch_add(&io->rx_dropped, 1); /* the loop is behind: a lost MAD */
		else
			atomic_fetch_add(&io->rx, 1);
	}
	free(buf);
	return NULL;
}

static void *tx_main(void *arg)
{
	struct umad_io *io = arg;
	size_t size = umad_size() + MAD_LEN;
	uint8_t *buf = calloc(1, size);
	struct io_msg msg;
	ssize_t n;

	if (!buf)
		return NULL;
	/* EOF when the loop closes its end: everything queued was sent */
	while ((n = read(io->tx_pipe[0], &msg, sizeof(msg))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n != (ssize_t)sizeof(msg) || msg.len > MAD_LEN || msg.agent < 0 ||
		    msg.agent >= UMAD_IO_AGENTS || atomic_load(&io->stop))
			continue;
		memset(buf, 0, size);
		umad_set_addr(buf, msg.lid, (int)msg.qpn, msg.sl, (int)msg.qkey);
		memcpy(umad_get_mad(buf), msg.mad, msg.len);
		if (umad_send(io->portid, io->agents[msg.agent], buf, (int)msg.len,
			      (int)msg.timeout_ms, 0) < 0)
			atomic_fetch_add(&io->tx_errors, 1);
		else
			atomic_fetch_add(&io->tx, 1);
	}
	free(buf);
	return NULL;
}

void umad_io_dispatch(struct umad_io *io)
{
	struct io_msg msg;

	for (int i = 0; i < DISPATCH_BATCH; i++) {
		if (read(io->rx_pipe[0], &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			return;
		if (msg.len > MAD_LEN)
			continue;
		io->scratch.agent = msg.agent;
		io->scratch.status = msg.status;
		io->scratch.slid = msg.lid;
		io->scratch.len = msg.len;
		memcpy(io->scratch.mad, msg.mad, msg.len);
		io->fn(io->arg, &io->scratch);
	}
}

static void on_rx_pipe(struct loop_fd *lf, uint32_t events)
{
	(void)events;
	umad_io_dispatch(container_of(lf, struct umad_io, lf));
}

int umad_io_send(struct umad_io *io, enum umad_io_agent agent, const uint8_t *mad, size_t len,
		 uint16_t dlid, uint32_t dqpn, uint8_t sl, uint32_t qkey, unsigned timeout_ms)
{
	struct io_msg msg;

	if (!io || agent >= UMAD_IO_AGENTS || io->agents[agent] < 0)
		return -ENODEV;
	if (len > MAD_LEN)
		return -EMSGSIZE;
	memset(&msg, 0, sizeof(msg));
	msg.agent = agent;
	msg.lid = dlid;
	msg.qpn = dqpn;
	msg.qkey = qkey;
	msg.sl = sl & 0xf;
	msg.timeout_ms = timeout_ms;
	msg.len = (uint32_t)len;
	memcpy(msg.mad, mad, len);
	if (write(io->tx_pipe[1], &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		return errno == EAGAIN ? -EAGAIN : -EIO;
	return 0;
}

bool umad_io_has_agent(const struct umad_io *io, enum umad_io_agent agent)
{
	return io && agent < UMAD_IO_AGENTS && io->agents[agent] >= 0;
}

int umad_io_fd(const struct umad_io *io)
{
	return io->rx_pipe[0];
}

void umad_io_get_stats(const struct umad_io *io, struct umad_io_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!io)
		return;
	st->rx = atomic_load(&io->rx);
	st->rx_dropped = atomic_load(&io->rx_dropped);
	st->rx_errors = atomic_load(&io->rx_errors);
	st->tx = atomic_load(&io->tx);
	st->tx_errors = atomic_load(&io->tx_errors);
}

/* Join @t within JOIN_WAIT_MS. */
static bool join_bounded(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts); /* pthread_timedjoin_np takes CLOCK_REALTIME */
	ts.tv_sec += JOIN_WAIT_MS / 1000;
	ts.tv_nsec += (long)(JOIN_WAIT_MS % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

void umad_io_close(struct umad_io *io, struct loop *loop)
{
	bool joined = true;

	if (!io)
		return;
	atomic_store(&io->stop, true);
	if (io->tx_pipe[1] >= 0) {
		close(io->tx_pipe[1]); /* the sender sees EOF */
		io->tx_pipe[1] = -1;
	}
	if (io->tx_started)
		joined = join_bounded(io->tx_thread) && joined;
	if (io->rx_started)
		joined = join_bounded(io->rx_thread) && joined;
	if (io->lf.cb)
		loop_del_fd(loop, &io->lf);
	if (!joined) {
		/* a thread is stuck in libibumad (its simulator gone?): leave
		 * it its port and memory; the process is on its way out */
		log_warn("%s port %u: a umad thread did not stop within %u ms", io->dev, io->port,
			 JOIN_WAIT_MS);
		return;
	}
	for (int i = 0; i < UMAD_IO_AGENTS; i++)
		if (io->agents[i] >= 0)
			umad_unregister(io->portid, io->agents[i]);
	if (io->portid >= 0)
		umad_close_port(io->portid);
	for (int i = 0; i < 2; i++) {
		if (io->rx_pipe[i] >= 0)
			close(io->rx_pipe[i]);
		if (io->tx_pipe[i] >= 0)
			close(io->tx_pipe[i]);
	}
	free(io);
}

int umad_io_open(struct umad_io **out, const char *dev, unsigned port, struct loop *loop,
		 umad_io_recv_fn fn, void *arg)
{
	struct umad_io *io;
	int ret;

	*out = NULL;
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->portid = -1;
	io->rx_pipe[0] = io->rx_pipe[1] = io->tx_pipe[0] = io->tx_pipe[1] = -1;
	for (int i = 0; i < UMAD_IO_AGENTS; i++)
		io->agents[i] = -1;
	io->fn = fn;
	io->arg = arg;
	io->port = port;
	snprintf(io->dev, sizeof(io->dev), "%s", dev);

	/* receiver -> loop: both ends non-blocking (the receiver drops when
	 * the loop is behind); loop -> sender: the loop's end non-blocking */
	if (pipe2(io->rx_pipe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(io->tx_pipe, O_CLOEXEC) < 0 ||
	    fcntl(io->tx_pipe[1], F_SETFL, O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	io->portid = umad_open_port(io->dev, (int)port);
	if (io->portid < 0) {
		ret = io->portid;
		log_err("%s port %u: cannot open its umad device: %s", dev, port, strerror(-ret));
		goto err;
	}
	/* umad_register, not umad_register2: the simulator knows only the first */
	io->agents[UMAD_IO_SA] =
		umad_register(io->portid, MAD_CLASS_SA, MAD_SA_CLASS_VERSION, 0, NULL);
	if (io->agents[UMAD_IO_SA] < 0) {
		ret = -EIO;
		io->agents[UMAD_IO_SA] = -1;
		log_err("%s port %u: cannot register an SA agent", dev, port);
		goto err;
	}
	io->agents[UMAD_IO_SMI] =
		umad_register(io->portid, MAD_CLASS_SMI_DR, MAD_SMI_CLASS_VERSION, 0, NULL);
	if (io->agents[UMAD_IO_SMI] < 0) {
		io->agents[UMAD_IO_SMI] = -1;
		log_info("%s port %u: no SMI agent; port state comes from sysfs", dev, port);
	}
	ret = -pthread_create(&io->rx_thread, NULL, rx_main, io);
	if (ret)
		goto err;
	io->rx_started = true;
	ret = -pthread_create(&io->tx_thread, NULL, tx_main, io);
	if (ret)
		goto err;
	io->tx_started = true;
	io->lf.fd = io->rx_pipe[0];
	io->lf.cb = on_rx_pipe;
	ret = loop_add_fd(loop, &io->lf, EPOLLIN);
	if (ret) {
		io->lf.cb = NULL;
		goto err;
	}
	*out = io;
	return 0;
err:
	umad_io_close(io, loop);
	return ret;
}
