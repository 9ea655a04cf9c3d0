/* SPDX-License-Identifier: MIT */
/*
 * The ip transport's pure parts, apart so that a unit test reaches them: the
 * kernel's socket drop count (SO_RXQ_OVFL) carried with a datagram, and the
 * same count asked of the socket (SO_MEMINFO).
 */
#ifndef IBRESD_TRANSPORT_IP_H
#define IBRESD_TRANSPORT_IP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* The SO_RXQ_OVFL count in @mh's control messages: the datagrams the
 * kernel had dropped at the socket when this one was queued. False: none
 * there (the kernel sends none while the socket dropped nothing). */
bool ip_rxq_ovfl(const struct msghdr *mh, uint32_t *count);
/* What the 32-bit count rose by since @last (modulo 2^32), and @last
 * becomes @now; 0 for a count not past @last (an older total, read after a
 * newer one), @last kept. */
uint32_t ip_ovfl_advance(uint32_t *last, uint32_t now);
/* The same count asked of the socket @fd itself (SO_MEMINFO), whether or
 * not a datagram came since the drops. False when the kernel does not
 * say. */
bool ip_sock_drops(int fd, uint32_t *count);

#endif
