/* SPDX-License-Identifier: MIT */
/*
 * A daemon in process for fuzz targets, built as main.c builds it (config,
 * loop, resolver, fabric; no server, netlink or SA) on a fake clock and a
 * fake transport that keeps what is sent: the seams test/unit/test_protocol.c
 * uses. A target that includes this links daemon_fake.c, whose now_ms(),
 * wall_us() and transport_for() replace the daemon's (core/clock.c,
 * fabric/transport_select.c).
 */
#ifndef FUZZ_DAEMON_FAKE_H
#define FUZZ_DAEMON_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "fabric/fabric_wire.h"

#define FAKE_START_MS 5000 /* small on purpose: a machine may have booted seconds ago */
#define FAKE_WALL_BASE_US 1790000000000000ULL /* the wall clock at fake time 0 (2026) */

/* The last datagrams sent (a ring), and how many were sent in all. */
#define FAKE_SENT_RING 16
struct fake_sent {
	bool ucast;
	size_t len;
	uint8_t buf[FW_MAX_LEN];
};

extern struct ibresd fake_d;
extern uint64_t fake_now;
extern struct fake_sent fake_sent[FAKE_SENT_RING];
extern unsigned long fake_n_sent;

/* Start the daemon from config text @conf (its endpoints with transport ip
 * get the fake transport) and static hosts text @hosts (NULL: none), at
 * FAKE_START_MS. 0, or -1 when the config does not parse or start (a fuzz
 * target's fixed config must: it abort()s then). */
int fake_daemon_start(const char *conf, const char *hosts);
void fake_daemon_stop(void);

/* Move the fake clock on by @ms, running every timer due on the way at its
 * own time. */
void fake_advance(uint64_t ms);

/* Hand a datagram to the (first) endpoint's transport, as received from
 * 198.18.0.@from on the fabric port. */
void fake_deliver(const uint8_t *buf, size_t len, uint8_t from);

#endif
