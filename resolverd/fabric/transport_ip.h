/* SPDX-License-Identifier: MIT */
/*
 * The ip transport's pure parts, apart so that a unit test reaches them: the
 * kernel's socket drop count (SO_RXQ_OVFL) carried with a datagram.
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
/* What the 32-bit count rose by since @last (modulo 2^32); @last becomes
 * @now. */
uint32_t ip_ovfl_advance(uint32_t *last, uint32_t now);

#endif
