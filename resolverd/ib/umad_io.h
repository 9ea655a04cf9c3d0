/* SPDX-License-Identifier: MIT */
/*
 * One InfiniBand port's management datagrams through libibumad, kept off the
 * event loop. The umad file descriptor cannot be polled everywhere (under
 * the ibsim simulator it is a fake number) and its writes may block, so two
 * helper threads own it: the receiver blocks in umad_recv() with a bounded
 * wait and hands every MAD to the loop through a pipe registered in epoll;
 * the sender takes MADs the loop queued on another pipe and calls
 * umad_send(). The loop never blocks: a full queue is an error it counts.
 *
 * The threads touch nothing but the umad port, the two pipes and their own
 * atomic counters; all protocol state stays with the loop (sa_query.c).
 */
#ifndef IBRESD_UMAD_IO_H
#define IBRESD_UMAD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "ib/sa_mad.h"

enum umad_io_agent {
	UMAD_IO_SA = 0,	 /* class 0x03 on QP1 */
	UMAD_IO_SMI = 1, /* class 0x81 (directed route) on QP0, for our own PortInfo */
	UMAD_IO_AGENTS
};

/* A MAD the receiver took. */
struct umad_io_rx {
	int agent;  /* enum umad_io_agent */
	int status; /* umad_status(): 0, or e.g. ETIMEDOUT for a send the kernel gave up */
	uint16_t slid;
	uint32_t len; /* bytes of mad[] that arrived */
	uint8_t mad[MAD_LEN];
};

struct umad_io_stats {
	uint64_t rx;	     /* MADs handed to the loop */
	uint64_t rx_dropped; /* the loop's pipe was full, or an unknown agent */
	uint64_t rx_errors;  /* umad_recv failures other than its own timeout */
	uint64_t tx;	     /* MADs umad_send() took */
	uint64_t tx_errors;  /* umad_send() failures */
};

struct umad_io;

typedef void (*umad_io_recv_fn)(void *arg, const struct umad_io_rx *rx);

/* Open @dev port @port, register the agents (SMI only if the kernel lets
 * us), start both threads and register the receive pipe with @loop; @fn
 * runs on the loop for every MAD received. 0 or a negative errno. */
int umad_io_open(struct umad_io **out, const char *dev, unsigned port, struct loop *loop,
		 umad_io_recv_fn fn, void *arg);

/* Stop the threads (each within its bounded wait), unregister, close. If a
 * thread does not stop in time its memory is left behind rather than freed
 * under it. Safe on NULL. */
void umad_io_close(struct umad_io *io, struct loop *loop);

/* Queue @mad for sending to @dlid/@dqpn on @sl with @qkey through @agent.
 * The kernel keeps the request outstanding for @timeout_ms so that it can
 * match the response (no retries: the daemon does its own). Never blocks:
 * -EAGAIN when the queue is full, -ENODEV when the agent is not there. */
int umad_io_send(struct umad_io *io, enum umad_io_agent agent, const uint8_t *mad, size_t len,
		 uint16_t dlid, uint32_t dqpn, uint8_t sl, uint32_t qkey, unsigned timeout_ms);

bool umad_io_has_agent(const struct umad_io *io, enum umad_io_agent agent);

/* For waits outside the loop (leaving groups at shutdown): the descriptor
 * that becomes readable when MADs arrived, and the call that hands them to
 * the callback. */
int umad_io_fd(const struct umad_io *io);
void umad_io_dispatch(struct umad_io *io);

void umad_io_get_stats(const struct umad_io *io, struct umad_io_stats *st);

#endif
