// SPDX-License-Identifier: MIT
/* The cluster key file and the freshness of authenticated datagrams
 * (fabric_auth.h; the reasons are in doc/fabric-protocol.md). */
#include "fabric/fabric_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

static int key_error(char *err, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int key_error(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fabric_keys_parse(struct fabric_keys *k, const uint8_t *text, size_t len, char *err,
		      size_t err_cap)
{
	size_t pos = 0;
	unsigned line = 0;

	memset(k, 0, sizeof(*k));
	if (len > FABRIC_KEY_FILE_MAX)
		return key_error(err, err_cap, "larger than %d bytes: not a key file",
				 FABRIC_KEY_FILE_MAX);
	while (pos < len) {
		const uint8_t *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len, n = end - pos;

		line++;
		if (n && text[pos + n - 1] == '\r')
			n--;
		if (n) {
			if (k->n == FABRIC_KEYS_MAX)
				return key_error(err, err_cap,
						 "line %u: a third key (one, or two during a change)",
						 line);
			if (n < FABRIC_KEY_MIN || n > FABRIC_KEY_MAX)
				return key_error(err, err_cap,
						 "line %u: a key has %d to %d bytes, this one %zu",
						 line, FABRIC_KEY_MIN, FABRIC_KEY_MAX, n);
			memcpy(k->key[k->n], text + pos, n);
			k->len[k->n++] = n;
		}
		pos = end + 1;
	}
	if (!k->n)
		return key_error(err, err_cap, "no key");
	return 0;
}

int fabric_keys_load(struct fabric_keys *k, const char *path)
{
	uint8_t buf[FABRIC_KEY_FILE_MAX + 1];
	char err[128];
	size_t len = 0;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		log_err("cluster_key_file %s: %s", path, strerror(-ret));
		return ret;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			close(fd);
			log_err("cluster_key_file %s: %s", path, strerror(-ret));
			return ret;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	ret = fabric_keys_parse(k, buf, len, err, sizeof(err));
	explicit_bzero(buf, sizeof(buf));
	if (ret)
		log_err("cluster_key_file %s: %s", path, err);
	return ret;
}

int fresh_init(struct freshness *fr, uint64_t senders)
{
	uint64_t n = FRESH_BUCKETS;

	/* half full at most */
	while (FRESH_SIZED && n * FRESH_WAYS < senders * 2 && n < FRESH_BUCKETS_MAX)
		n <<= 1;
	fr->last_sent = 0;
	fr->mask = (unsigned)n - 1;
	fr->b = calloc(n, sizeof(*fr->b));
	return fr->b ? 0 : -ENOMEM;
}

void fresh_fini(struct freshness *fr)
{
	free(fr->b);
	fr->b = NULL;
}

static struct fresh_bucket *bucket_of(struct freshness *fr, const uint8_t gid[16], uint16_t pkey)
{
	uint64_t hash = 1469598103934665603ULL;

	/* only key holders can name a sender: no need for a keyed hash */
	for (unsigned i = 0; i < 16; i++)
		hash = (hash ^ gid[i]) * 1099511628211ULL;
	hash = (hash ^ pkey) * 1099511628211ULL;
	return &fr->b[hash & fr->mask];
}

static bool forgotten(uint64_t seen_ms, uint64_t now_ms)
{
	return now_ms - seen_ms > FRESH_FORGET_MS; /* seen_ms <= now_ms */
}

enum fresh_verdict fresh_check(struct freshness *fr, const uint8_t gid[16], uint16_t pkey,
			       unsigned port, uint64_t stamp, uint64_t wall_us, uint64_t now_ms)
{
	struct fresh_bucket *b = bucket_of(fr, gid, pkey);
	uint32_t bit = port < 32 ? 1u << port : 0;
	struct fresh_sender *s, *slot = NULL;

	if (!bit)
		return FRESH_REPLAYED; /* no local port past 31: never taken */
	if (!stamp || stamp > wall_us + FRESH_WINDOW_US ||
	    (wall_us > FRESH_WINDOW_US && stamp < wall_us - FRESH_WINDOW_US))
		return FRESH_STALE;
	for (unsigned i = 0; i < FRESH_WAYS; i++) {
		s = &b->s[i];
		if (!s->stamp || forgotten(s->seen_ms, now_ms)) {
			s->stamp = 0;
			if (!slot)
				slot = s;
			continue;
		}
		if (s->pkey != pkey || memcmp(s->gid, gid, 16))
			continue;
		if (stamp == s->stamp && (s->ports & bit))
			return FRESH_DUPLICATE;
		if (stamp < s->stamp)
			return FRESH_REPLAYED;
		/* newer, or the newest's copy on another port */
		s->ports = stamp == s->stamp ? s->ports | bit : bit;
		s->stamp = stamp;
		s->seen_ms = now_ms;
		return FRESH_OK;
	}
	/* a sender we do not know (any more) */
	if (b->floor && forgotten(b->floor_ms, now_ms))
		b->floor = 0;
	if (b->floor && stamp <= b->floor)
		return FRESH_REPLAYED;
	if (!slot) {
		/* a full bucket: forget the one heard least recently, keep its stamp */
		slot = &b->s[0];
		for (unsigned i = 1; i < FRESH_WAYS; i++)
			if (b->s[i].seen_ms < slot->seen_ms)
				slot = &b->s[i];
		if (slot->stamp > b->floor)
			b->floor = slot->stamp;
		b->floor_ms = now_ms;
	}
	memcpy(slot->gid, gid, 16);
	slot->pkey = pkey;
	slot->ports = bit;
	slot->stamp = stamp;
	slot->seen_ms = now_ms;
	return FRESH_OK;
}

uint64_t fresh_stamp(struct freshness *fr, uint64_t wall_us)
{
	fr->last_sent = wall_us > fr->last_sent ? wall_us : fr->last_sent + 1;
	return fr->last_sent;
}
