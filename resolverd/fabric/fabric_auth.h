/* SPDX-License-Identifier: MIT */
/*
 * What a cluster key guards (doc/fabric-protocol.md, "Authentication"): the
 * key file (one key, or two during a key change) and the freshness of
 * authenticated datagrams: each carries a stamp, the sender's wall clock in
 * microseconds made strictly rising, and a receiver takes a stamp only if it
 * is within FRESH_WINDOW_US of its own clock and above the newest it took
 * from that sender. The per-sender memory is a fixed table.
 */
#ifndef IBRESD_FABRIC_AUTH_H
#define IBRESD_FABRIC_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define FABRIC_KEYS_MAX 2
#define FABRIC_KEY_MIN 16
#define FABRIC_KEY_MAX 128
#define FABRIC_KEY_FILE_MAX 1024 /* a larger file is not a key file */

/* The keys of cluster_key_file: key[0] signs what this node sends, every
 * key is accepted. */
struct fabric_keys {
	uint8_t key[FABRIC_KEYS_MAX][FABRIC_KEY_MAX];
	size_t len[FABRIC_KEYS_MAX];
	unsigned n;
};

/* Parse a key file's content: one key a line (LF or CRLF), 16 to 128 bytes
 * each, one or two keys, empty lines skipped. 0, or -EINVAL with a message
 * in @err. */
int fabric_keys_parse(struct fabric_keys *k, const uint8_t *text, size_t len, char *err,
		      size_t err_cap);

/* Read and parse @path (logged on error). 0 or a negative errno. */
int fabric_keys_load(struct fabric_keys *k, const char *path);

/* How far a stamp may be from the receiver's clock, either way: the clocks
 * of the nodes must agree this well, and a replay to a receiver that knows
 * nothing of the sender can be at most this old. */
#define FRESH_WINDOW_US (60ULL * 1000000)
/* A sender not heard for this long is forgotten: any stamp at most its
 * newest is outside the window by then (2 windows: its clock may have been
 * ahead of ours by one). */
#define FRESH_FORGET_MS (2 * FRESH_WINDOW_US / 1000)

/* Buckets of 8 senders (by port GID and P_Key): at least 16,384 (131,072
 * senders in 5.25 MiB), and room for every endpoint of a full cache twice over (the
 * hosts of cache_size times this node's endpoints: identical nodes have as
 * many rails). A full bucket forgets its least recently heard sender but
 * keeps its newest stamp as the bucket's floor, which every sender of that
 * bucket it does not know must exceed. */
#ifdef FRESH_BUCKETS /* fuzzing builds: a small table of that size, to reach its overflow */
#define FRESH_SIZED 0
#else
#define FRESH_BUCKETS 16384
#define FRESH_SIZED 1
#endif
#define FRESH_BUCKETS_MAX (1u << 22)
#define FRESH_WAYS 8

/* A sender is one endpoint, port GID and P_Key: a port's partitions send
 * on their own, and their datagrams may be read in another order than the
 * sender's (one socket each). */
struct fresh_sender {
	uint8_t gid[16];
	uint64_t stamp;   /* the newest taken; 0: a free slot */
	uint64_t seen_ms; /* when (monotonic) */
	uint32_t ports;	  /* the local ports (bits) that took the newest stamp */
	uint16_t pkey;
};

struct fresh_bucket {
	struct fresh_sender s[FRESH_WAYS];
	uint64_t floor; /* the newest stamp of a sender forgotten early; 0: none */
	uint64_t floor_ms;
};

struct freshness {
	struct fresh_bucket *b; /* mask + 1 of them */
	unsigned mask;
	uint64_t last_sent;     /* the last stamp this node sent */
};

enum fresh_verdict {
	FRESH_OK = 0,
	FRESH_STALE,     /* no stamp, or outside the window: clocks apart, or an old capture */
	FRESH_DUPLICATE, /* the newest stamp taken from that sender, again */
	FRESH_REPLAYED,  /* older than what was taken from that sender */
};

/* A table for about @senders senders (0: the fewest buckets). 0 or -ENOMEM. */
int fresh_init(struct freshness *fr, uint64_t senders);
void fresh_fini(struct freshness *fr);

/* May a datagram of the sender with port GID @gid and P_Key @pkey and stamp
 * @stamp, read on local port @port, be taken now (@wall_us: our wall clock,
 * @now_ms: our monotonic clock)? FRESH_OK records it: the same stamp is
 * taken once a port (one multicast heard on several ports of one subnet is
 * one copy each), never older than the newest taken. */
enum fresh_verdict fresh_check(struct freshness *fr, const uint8_t gid[16], uint16_t pkey,
			       unsigned port, uint64_t stamp, uint64_t wall_us, uint64_t now_ms);

/* The stamp of the next datagram sent: @wall_us, or one more than the last
 * if the clock did not move on (or stepped back). */
uint64_t fresh_stamp(struct freshness *fr, uint64_t wall_us);

#endif
