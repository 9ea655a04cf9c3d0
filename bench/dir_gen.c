// SPDX-License-Identifier: MIT
/*
 * dir_gen: N emulated peers of the fabric protocol on the ip transport, for
 * bench/directory-bench. Every datagram is encoded by the project's own
 * fw_encode() (resolverd/fabric/fabric_wire.c), as a peer's fabric.c would
 * send it: ANNOUNCE, the peer's whole identity (short name, FQDN alias, an
 * IPv4 from 198.18.0.0/16, an IPv6 from 2001:db8::/32, a GID, a LID, QPN,
 * P_Key, TTL) and its GROUP list. No cluster key: datagrams carry no HMAC.
 *
 *   dir_gen --mode learn|storm|rejoin --count N --ifname IF [options]
 *
 * learn   one periodic ANNOUNCE (flags 0) per peer, multicast, paced at --rate
 *         per second: N peers that were already up, as the daemon hears them
 *         in steady state.
 * storm   N peers boot at once: peer i is up at a random time in [0, --window)
 *         ms and sends --announces NEWCOMER announces (multicast, its burst id
 *         in the tid), the first when it is up, the next ones --settle/(K+1)
 *         ms (± 10 %, at least 50 ms) apart, as fabric.c's on_announce_timer.
 *         A peer that is up when the daemon's NEWCOMER announce arrives
 *         answers it with one unicast ANNOUNCE (once per burst, as
 *         newcomer_first()), unless its own announce went out while the
 *         daemon listened (the NEWCOMER's UP item; fabric.c heard_us()):
 *         with --announces 1 only, the protocol since the boot budget.
 * rejoin  the daemon (re)starts into a running cluster: all N peers are up and
 *         answer the daemon's first NEWCOMER announce by unicast.
 *
 * With --interval MS (storm and rejoin), every peer then announces itself
 * periodically (ANNOUNCE, flags 0, multicast), as fabric.c does every
 * announce_interval ± 10 %: in a storm the first one an interval after its
 * last start-up announce; in a rejoin at a random phase of the interval (the
 * peers have been up for a while). Each peer sends one periodic announce: the
 * benchmark does not wait longer than that.
 *
 * Storm mode: every ANNOUNCE carries a DIGEST item (0x106) as a settled peer
 * of the emulated cluster would send it: hosts and sum over the cluster (the
 * N peers, and the daemon once one of its datagrams was heard), each term the
 * project's host_digest_term() (resolverd/core/hostkey.c) of the lower-cased
 * canonical name; flags SETTLED | RANGES | PAST_SETTLE once the peer is past its
 * own settle time (its up time + --settle); RANGES always, as the daemon's
 * fabric_digest_put() sets it (--ranges-settled: only with SETTLED); the announce number
 * counts that peer's multicast ANNOUNCEs (dropped ones included), an answer
 * to a newcomer repeats it with UNICAST. --no-digest leaves it out.
 *
 * Every mode answers what the daemon's fetch sends (fabric_fetch.c): a
 * RANGE_QUERY to one peer gets that peer's RANGE_ANSWER computed over the
 * emulated cluster (SUMS per part, or the names, MORE when they do not fit,
 * as fabric_range.c; with the WHERE flag in ascending term from the range's
 * start, each with the peer's IPv4 address), and a REQUEST for a peer's
 * name or address, multicast or sent to that peer's address alone, gets
 * that peer's unicast REPLY (as fabric.c's on_request), once the peer is
 * up.
 *
 * --rails N --rail R: the peers are hosts of N rails (planes), and this
 * process is their rail R (one process a rail, each on the rail's own
 * interface, the same --seed: a peer boots at the same moment on every rail).
 * Rail R of peer K: the host name nodeK and its FQDN on every rail, the alias
 * nodeK-ibR, GID fe80::2:c903:R:K, LID K on every rail (each plane's SM
 * numbers from 1), IPv6 2001:db8:0:R::K (rail 0: 2001:db8::K), IPv4
 * 198.19.(32R + (K-1)/254).((K-1)%254 + 1) (rail 0: as below), and a RAILS
 * item listing the host's N GIDs, as fabric_tx.c sends it. At most
 * RAIL_PEERS_MAX peers then: the test addresses (198.18.0.0/15) have no room
 * for more endpoints of eight rails.
 *
 * --loss PCT (storm): each datagram a peer would send to the daemon
 * (announces, answers to its NEWCOMER, RANGE_ANSWERs, REPLYs) is dropped with
 * that probability, drawn from an RNG seeded by --seed apart from the
 * schedule's (the lossless run has the same schedule), and counted. Each
 * daemon NEWCOMER is missed by each peer up with that probability too: the
 * peer's first RANGE_ANSWER to the daemon then carries ASKER_NEW (it learns
 * the daemon from that query, or from a REQUEST), as fabric_range.c's.
 *
 * Every peer sends from its own address (IP_PKTINFO with IP_TRANSPARENT; the
 * namespace routes 198.18.0.0/16 to itself) and port --port, so the daemon's
 * unicast answers come back to that peer's address and are counted here.
 * --no-spoof sends everything from the generator's own address instead.
 *
 * Protocol on stdin/stdout: prints "ready" once its sockets are set up (and
 * the daemon's NEWCOMER announces are heard from then on); "go" on stdin
 * starts the schedule (time 0); "stop" (or EOF) ends it and prints one JSON
 * object with what was sent and received. --max-seconds bounds the run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/hostkey.h"
#include "fabric/fabric_wire.h"

#define BATCH		  64
#define RX_BATCH	  64
#define MAX_PEERS	  65024 /* 198.18.X.Y, X 0..255, Y 1..254 */
#define RAIL_PEERS_MAX	  8128	/* rail R >= 1: 198.19.(32R + X).Y, X 0..31 */
#define RAILS_MAX	  8
#define MAX_DAEMON_BURSTS 16
#define REPLY_Q		  8192 /* RANGE_ANSWERs and REPLYs due */

enum mode { LEARN, STORM, REJOIN };

struct peer {
	uint64_t burst;		 /* this peer's start-up burst id */
	uint64_t up_ns;		 /* storm: when it boots (after go) */
	uint64_t answered_burst; /* the daemon burst it answered; 0 none */
	uint32_t off_nc, off_plain;
	uint16_t len_nc, len_plain;
	uint16_t dig_nc, dig_plain; /* offset of the DIGEST value; 0 none */
	uint32_t seq;		    /* multicast ANNOUNCEs sent (dropped ones too) */
	uint32_t rx_ucast; /* unicast ANNOUNCEs the daemon sent to it */
	bool knows_daemon;  /* heard a NEWCOMER of it (--loss: each one lost for it
			     * with that probability), or a query */
	struct in_addr addr;
};

struct ev {
	uint64_t t_ns;
	uint32_t peer;
	bool newcomer;
};

struct opts {
	enum mode mode;
	unsigned count;
	const char *ifname;
	const char *group;
	unsigned port;
	double rate;
	unsigned window_ms, settle_ms, announces, interval_ms;
	unsigned mtu_enum, rate_enum, ttl;
	const char *domain;
	unsigned seed;
	bool spoof;
	double max_seconds;
	double loss; /* 0..1 */
	bool digest;
	bool ranges_settled; /* RANGES only with SETTLED */
	unsigned rail, rails; /* this process's rail of the hosts' rails */
};

/* A datagram due to the daemon that is not an announce: a RANGE_ANSWER or a REPLY. */
struct due {
	uint8_t type;
	uint32_t peer;
	uint64_t tid;
	struct fw_range range;
	struct sockaddr_in to;
};

struct term {
	uint64_t t;
	uint32_t k; /* peer index + 1 */
};

static struct peer *peers;
static uint8_t *pool;
static struct ev *evs;
static size_t n_evs, next_ev;
static uint32_t *answer_q; /* peers whose answer is due, FIFO */
static size_t aq_head, aq_tail;
static struct sockaddr_in answer_to; /* the daemon's address, from its NEWCOMER */
static int fd;
static struct sockaddr_in group_sa;
static uint64_t go_ns;
static bool going;
static uint64_t rng_state, loss_state;
static struct term *terms; /* the peers' digest terms, ascending */
static uint64_t *prefix;  /* prefix[i]: sum of terms[0..i-1] mod 2^64 */
static uint64_t peers_sum;
static bool have_daemon;
static uint64_t daemon_term;
static char daemon_name[IBRES_NAME_MAX + 1];
static struct due *due_q;
static size_t dq_head, dq_tail;
static const struct opts *gopts;
static unsigned rail_no; /* gopts->rail, for the addressing helpers */

static struct {
	uint64_t mcast_sent, ucast_sent, send_retries, send_failed, newcomer_sent, periodic_sent;
	uint64_t rx, rx_malformed, rx_other, rx_mcast_newcomer, rx_mcast_other, rx_ucast,
		rx_ucast_unknown;
	uint64_t first_round_last_ns; /* storm: when the last peer's first announce went */
	uint64_t first_round_target_ns;
	uint64_t schedule_done_ns;
	uint64_t daemon_newcomer_ns[MAX_DAEMON_BURSTS]; /* relative to go (signed) */
	uint64_t daemon_bursts[MAX_DAEMON_BURSTS];
	unsigned n_daemon_newcomers;
	uint64_t answers_queued;
	uint64_t last_answer_sent_ns;
	uint64_t bytes_nc, bytes_plain; /* encoded sizes, summed over the peers */
	uint64_t rx_ucast_bytes, rx_mcast_bytes;
	uint64_t lost_announce, lost_answer, lost_range, lost_reply;
	uint64_t rx_range_query, rx_range_names, range_answers, range_unknown_peer;
	uint64_t rx_request, rx_request_unicast, rx_request_ours, rx_request_down, replies;
	uint64_t due_overflow, encode_failed;
	uint64_t first_range_query_ns, last_range_query_ns, first_request_ns, last_request_ns;
} st;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd64(void)
{
	/* xorshift64*: reproducible from --seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/* fabric.c's jitter(): @base ± 10 %. */
static uint64_t jitter(uint64_t base)
{
	uint64_t span = base / 5;

	return span ? base - base / 10 + (rnd64() >> 32) % span : base;
}

/* Peer K's IPv4 address on this process's rail. Rail 0: the same
 * addressing as test/fabric/emulate, 198.18.X.Y, Y in 1..254; rail R >= 1:
 * 198.19.(32R + X).Y, X in 0..31. */
static struct in_addr peer_v4(unsigned k)
{
	unsigned x = (k - 1) / 254, y = (k - 1) % 254 + 1;
	struct in_addr a = {htonl(rail_no ? 0xc6130000u | (32 * rail_no + x) << 8 | y
					  : 0xc6120000u | x << 8 | y)};

	return a;
}

static long peer_of_v4(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);
	unsigned x = (h >> 8) & 0xff, y = h & 0xff;

	if (rail_no) {
		if ((h & 0xffff0000u) != 0xc6130000u || x / 32 != rail_no)
			return -1;
		x %= 32;
	} else if ((h & 0xffff0000u) != 0xc6120000u) {
		return -1;
	}
	if (y < 1 || y > 254)
		return -1;
	return (long)x * 254 + y;
}

/* Peer K's GID on rail @r: fe80::2:c903:R:K. */
static void peer_gid(unsigned k, unsigned r, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[9] = 0x02;
	gid[10] = 0xc9;
	gid[11] = 0x03;
	gid[13] = (uint8_t)r;
	gid[14] = (uint8_t)(k >> 8);
	gid[15] = (uint8_t)k;
}

/* The RAILS item of peer K's datagrams: its GIDs on every rail, ascending
 * (rail order is GID order here), as fabric_tx.c; none on one rail. */
static void peer_rails(const struct opts *o, unsigned k, struct fw_msg *m)
{
	m->n_rails = o->rails > 1 ? o->rails : 0;
	for (unsigned r = 0; r < m->n_rails; r++)
		peer_gid(k, r, m->rails[r]);
}

static void identity(const struct opts *o, unsigned k, struct ibres_hostrec *h)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->names[0], sizeof(h->names[0]), "node%u", k);
	snprintf(h->names[1], sizeof(h->names[1]), "node%u.%s", k, o->domain);
	h->n_names = 2;
	if (o->rails > 1)
		snprintf(h->names[h->n_names++], sizeof(h->names[0]), "node%u-ib%u", k, o->rail);
	h->v4[0] = peer_v4(k);
	h->n_v4 = 1;
	/* 2001:db8:0:R::K */
	h->v6[0].s6_addr[0] = 0x20;
	h->v6[0].s6_addr[1] = 0x01;
	h->v6[0].s6_addr[2] = 0x0d;
	h->v6[0].s6_addr[3] = 0xb8;
	h->v6[0].s6_addr[7] = (uint8_t)o->rail;
	h->v6[0].s6_addr[14] = (uint8_t)(k >> 8);
	h->v6[0].s6_addr[15] = (uint8_t)k;
	h->n_v6 = 1;
	/* fe80::2:c903:R:K */
	peer_gid(k, o->rail, h->gids[0]);
	h->n_gids = 1;
	h->lid = (uint16_t)k;
	h->qpn = 1;
	h->pkey = 0xffff;
	h->ttl = o->ttl; /* a peer announces its addr_ttl */
}


static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

/* The loss draw: an RNG of its own, so that --loss leaves the schedule as it is. */
static bool lost(const struct opts *o)
{
	if (o->loss <= 0)
		return false;
	loss_state ^= loss_state >> 12;
	loss_state ^= loss_state << 25;
	loss_state ^= loss_state >> 27;
	return (double)((loss_state * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0 < o->loss;
}

/* The DIGEST term of a canonical name (doc/fabric-protocol.md), by the
 * daemon's own code: SipHash-2-4 under the protocol key of the NAME key. */
static uint64_t name_term(const char *name)
{
	struct host_key k;

	if (host_key_name(&k, name))
		return 0;
	return host_digest_term(&k);
}

static int cmp_term(const void *a, const void *b)
{
	const struct term *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

static int build_terms(const struct opts *o)
{
	char name[32];

	terms = calloc(o->count, sizeof(*terms));
	prefix = calloc((size_t)o->count + 1, sizeof(*prefix));
	if (!terms || !prefix)
		return -ENOMEM;
	for (unsigned k = 1; k <= o->count; k++) {
		snprintf(name, sizeof(name), "node%u", k);
		terms[k - 1] = (struct term){name_term(name), k};
		peers_sum += terms[k - 1].t;
	}
	qsort(terms, o->count, sizeof(*terms), cmp_term);
	for (unsigned i = 0; i < o->count; i++)
		prefix[i + 1] = prefix[i] + terms[i].t;
	return 0;
}

static bool peer_up(const struct opts *o, const struct peer *p, uint64_t t)
{
	if (o->mode != STORM)
		return true;
	return going && p->up_ns <= t - go_ns;
}

/* Past its own settle time: its burst checked, the cluster known (a
 * settled peer of the emulated cluster). Learn and rejoin peers were up
 * long before. */
static bool peer_settled(const struct opts *o, const struct peer *p, uint64_t t)
{
	if (o->mode != STORM)
		return true;
	return going && p->up_ns + (uint64_t)o->settle_ms * 1000000ull <= t - go_ns;
}

static void fill_digest(const struct opts *o, const struct peer *p, bool unicast, uint64_t t,
			struct fw_digest *d)
{
	d->hosts = o->count + have_daemon;
	d->sum = peers_sum + (have_daemon ? daemon_term : 0);
	/* RANGES always, as fabric_digest_put() (a peer answers range queries
	 * from its start); SETTLED and PAST_SETTLE once past its settle time */
	d->flags = o->ranges_settled ? 0 : FW_DIGEST_RANGES;
	if (peer_settled(o, p, t))
		d->flags |= FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE | FW_DIGEST_RANGES;
	if (unicast)
		d->flags |= FW_DIGEST_UNICAST;
	/* hosts of several rails: what this rail heard, as a daemon of today
	 * sends it (every peer is on every rail: the same count and sum) */
	if (o->rails > 1)
		d->flags |= FW_DIGEST_FABRIC;
	d->seq = p->seq;
}

/* The DIGEST item's value in an encoded datagram: its offset, 0 none. */
static unsigned find_item(const uint8_t *b, unsigned len, uint16_t type)
{
	unsigned off = FW_HDR_LEN;

	while (off + 4 <= len) {
		uint16_t t = (uint16_t)(b[off] << 8 | b[off + 1]);
		uint16_t l = (uint16_t)(b[off + 2] << 8 | b[off + 3]);

		if (t == type)
			return off + 4;
		off += 4 + l;
	}
	return 0;
}

static void patch_digest(uint8_t *b, unsigned off, const struct fw_digest *d)
{
	put32(b + off, d->hosts);
	b[off + 4] = d->flags;
	put64(b + off + 8, d->sum);
	put32(b + off + 16, d->seq);
}

/* Part @i of lo..hi in @parts (doc/fabric-protocol.md): false when empty. */
static bool range_part(const struct fw_range *r, unsigned i, uint64_t *a, uint64_t *b)
{
	unsigned parts = r->parts ? r->parts : 1;
	unsigned __int128 w, x, y;

	if (r->hi < r->lo)
		return false;
	w = (unsigned __int128)((r->hi - r->lo) / parts) + 1;
	x = (unsigned __int128)r->lo + i * w;
	if (x > r->hi)
		return false;
	y = i + 1 == parts ? r->hi : x + w - 1;
	if (y > r->hi)
		y = r->hi;
	*a = (uint64_t)x;
	*b = (uint64_t)y;
	return true;
}

/* First index whose term is >= @t. */
static size_t lower(uint64_t t)
{
	size_t lo = 0, hi = gopts->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (terms[mid].t < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First index whose term is > @t. */
static size_t upper(uint64_t t)
{
	return t == UINT64_MAX ? gopts->count : lower(t + 1);
}

/* A peer's identity and group list into @m, as fabric_msg_init(). */
static void msg_init(const struct opts *o, unsigned k, struct fw_msg *m, uint8_t type, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->tid = tid;
	identity(o, k, &m->sender);
	peer_rails(o, k, m);
	m->groups[0].mtu = (uint8_t)o->mtu_enum;
	m->groups[0].rate = (uint8_t)o->rate_enum;
	m->n_groups = 1;
}

/* The RANGE_ANSWER peer @k gives to @d, over the emulated cluster (as
 * fabric_range.c over its store), into @buf: its length, or negative. */
static int range_answer(const struct opts *o, const struct due *d, uint64_t t, uint8_t *buf)
{
	static struct fw_msg m;
	const struct peer *p = &peers[d->peer];
	uint64_t a, b;

	msg_init(o, d->peer + 1, &m, FW_RANGE_ANSWER, d->tid);
	m.has_range = true;
	m.range = d->range;
	/* names in term order with where each peer is (fabric_range.c) */
	m.range.flags &= FW_RANGE_NAMES | FW_RANGE_ASKER_NEW | FW_RANGE_FABRIC |
			 (d->range.flags & FW_RANGE_NAMES ? FW_RANGE_WHERE : 0);
	m.has_digest = true;
	fill_digest(o, p, true, t, &m.digest);
	/* the answer's digest is of what the query asked: this rail's, or the
	 * whole directory's (fabric_range.c) */
	if (!(d->range.flags & FW_RANGE_FABRIC))
		m.digest.flags &= (uint8_t)~FW_DIGEST_FABRIC;
	if (d->range.flags & FW_RANGE_NAMES) {
		struct fw_range whole = d->range;
		int base = fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
		size_t room = 0;
		char name[32];

		if (base < 0)
			return base;
		if ((size_t)base + FW_HMAC_LEN + 12 < FW_MAX_LEN)
			room = FW_MAX_LEN - (size_t)base - FW_HMAC_LEN - 12;
		whole.parts = 1;
		if (range_part(&whole, 0, &a, &b)) {
			size_t i = lower(a), end = upper(b);
			bool more = false;

			for (; i < end && !more; i++) {
				struct fw_where w = {0};
				size_t need;

				snprintf(name, sizeof(name), "node%u", terms[i].k);
				if (m.range.flags & FW_RANGE_WHERE) {
					struct in_addr v4 = peer_v4(terms[i].k);

					w.kind = FW_WHERE_IPV4;
					memcpy(w.addr, &v4, 4);
				}
				need = 4 + fw_where_len(&w) + strlen(name);
				if (need > room || fw_hint_add_at(&m, name, &w) < 0)
					more = true;
				else
					room -= need;
			}
			/* the daemon itself: not in term order, so only in an
			 * answer that need not be (it does not lack itself) */
			if (!more && have_daemon && daemon_term >= a && daemon_term <= b &&
			    !(m.range.flags & FW_RANGE_WHERE)) {
				if (4 + strlen(daemon_name) > room || fw_hint_add(&m, daemon_name) < 0)
					more = true;
			}
			if (more)
				m.range.flags |= FW_RANGE_MORE;
		}
	} else {
		for (unsigned i = 0; i < m.range.parts && i < FW_PARTS_MAX; i++) {
			struct fw_sum *s = &m.sums[i];

			*s = (struct fw_sum){0, 0};
			if (range_part(&m.range, i, &a, &b)) {
				size_t lo = lower(a), hi = upper(b);

				s->hosts = (uint32_t)(hi - lo);
				s->sum = prefix[hi] - prefix[lo];
				if (have_daemon && daemon_term >= a && daemon_term <= b) {
					s->hosts++;
					s->sum += daemon_term;
				}
			}
			m.n_sums = i + 1;
		}
	}
	return fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
}

/* The REPLY the owner @k of a REQUEST's target gives, as fabric.c's on_request. */
static int reply(const struct opts *o, const struct due *d, uint8_t *buf)
{
	static struct fw_msg m;

	msg_init(o, d->peer + 1, &m, FW_REPLY, d->tid);
	m.has_chosen = true;
	m.chosen = m.groups[0];
	return fw_encode(&m, NULL, 0, buf, FW_MAX_LEN);
}

/* The peer (index + 1) a REQUEST's TARGET names, or -1. */
static long target_peer(const struct opts *o, const struct host_key *k)
{
	static const uint8_t gid[12] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03};
	static const uint8_t v6[14] = {0x20, 0x01, 0x0d, 0xb8};
	long n = -1;

	switch (k->type) {
	case IBRES_KEY_NAME: {
		char s[HOST_KEY_MAX + 1];
		size_t dl = strlen(o->domain);
		char *end;

		memcpy(s, k->data, k->len);
		s[k->len] = 0;
		if (strncmp(s, "node", 4) || s[4] < '1' || s[4] > '9')
			return -1;
		n = strtol(s + 4, &end, 10);
		if (*end && !(*end == '.' && strlen(end + 1) == dl && !strcasecmp(end + 1, o->domain)) &&
		    !(o->rails > 1 && !strncmp(end, "-ib", 3) && end[3] == (char)('0' + o->rail) &&
		      !end[4]))
			return -1;
		break;
	}
	case IBRES_KEY_IPV4: {
		struct in_addr a;

		memcpy(&a, k->data, 4);
		n = peer_of_v4(a);
		break;
	}
	case IBRES_KEY_IPV6:
		if (k->len == 16 && !memcmp(k->data, v6, 7) && k->data[7] == o->rail &&
		    !memcmp(k->data + 8, v6 + 8, 6))
			n = k->data[14] << 8 | k->data[15];
		break;
	case IBRES_KEY_GID:
		if (k->len == 16 && !memcmp(k->data, gid, 12) && !k->data[12] &&
		    k->data[13] == o->rail)
			n = k->data[14] << 8 | k->data[15];
		break;
	}
	return n >= 1 && (unsigned long)n <= o->count ? n : -1;
}

static void queue_due(const struct opts *o, uint8_t type, long k, uint64_t tid,
		      const struct fw_range *r, const struct sockaddr_in *to)
{
	struct due *d;

	(void)o;
	if (dq_tail - dq_head >= REPLY_Q) {
		st.due_overflow++;
		return;
	}
	d = &due_q[dq_tail++ % REPLY_Q];
	d->type = type;
	d->peer = (uint32_t)(k - 1);
	d->tid = tid;
	if (r)
		d->range = *r;
	d->to = *to;
}

static int encode_all(const struct opts *o)
{
	/* two datagrams a peer, its RAILS item in each */
	size_t cap = (size_t)o->count * 2 * (256 + 16 * o->rails), used = 0;
	uint8_t buf[FW_MAX_LEN];
	struct fw_msg m;

	pool = malloc(cap);
	if (!pool)
		return -ENOMEM;
	for (unsigned k = 1; k <= o->count; k++) {
		struct peer *p = &peers[k - 1];

		memset(&m, 0, sizeof(m));
		m.type = FW_ANNOUNCE;
		identity(o, k, &m.sender);
		peer_rails(o, k, &m);
		m.groups[0].mtu = (uint8_t)o->mtu_enum;
		m.groups[0].rate = (uint8_t)o->rate_enum;
		m.n_groups = 1;
		m.has_digest = o->digest;
		p->addr = m.sender.v4[0];
		p->burst = rnd64() | 1;
		for (int v = 0; v < 2; v++) {
			int len;

			/* v 0: NEWCOMER (start-up, tid = burst id); 1: plain (periodic
			 * announce, or the answer to a newcomer: flags 0, tid 0) */
			m.flags = v == 0 ? FW_FLAG_NEWCOMER : 0;
			m.tid = v == 0 ? p->burst : 0;
			len = fw_encode(&m, NULL, 0, buf, sizeof(buf));
			if (len < 0 || used + (size_t)len > cap) {
				fprintf(stderr, "dir_gen: cannot encode peer %u: %d\n", k, len);
				return -EINVAL;
			}
			memcpy(pool + used, buf, (size_t)len);
			if (o->digest) {
				unsigned off = find_item(buf, (unsigned)len, FW_T_DIGEST);

				if (!off || off + FW_DIGEST_LEN > (unsigned)len) {
					fprintf(stderr, "dir_gen: no DIGEST in peer %u's announce\n", k);
					return -EINVAL;
				}
				if (v == 0)
					p->dig_nc = (uint16_t)off;
				else
					p->dig_plain = (uint16_t)off;
			}
			if (v == 0) {
				p->off_nc = (uint32_t)used;
				p->len_nc = (uint16_t)len;
				st.bytes_nc += (uint64_t)len;
			} else {
				p->off_plain = (uint32_t)used;
				p->len_plain = (uint16_t)len;
				st.bytes_plain += (uint64_t)len;
			}
			used += (size_t)len;
		}
	}
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static int schedule(const struct opts *o)
{
	unsigned per = o->mode == STORM ? o->announces : o->mode == LEARN ? 1 : 0;

	evs = calloc((size_t)o->count * (per + 1), sizeof(*evs));
	if (!evs)
		return -ENOMEM;
	for (unsigned i = 0; i < o->count; i++) {
		struct peer *p = &peers[i];

		if (o->mode == LEARN) {
			evs[n_evs++] = (struct ev){(uint64_t)(i / o->rate * 1e9), i, false};
		} else if (o->mode == REJOIN && o->interval_ms) {
			/* up for a while: its next periodic announce at any phase */
			uint64_t t = (rnd64() >> 32) % ((uint64_t)o->interval_ms * 1000) * 1000;

			evs[n_evs++] = (struct ev){t, i, false};
		} else if (o->mode == STORM) {
			uint64_t gap = (uint64_t)o->settle_ms / (o->announces + 1);
			uint64_t t;

			if (gap < 50)
				gap = 50; /* as fabric.c */
			t = o->window_ms ? (rnd64() >> 32) % ((uint64_t)o->window_ms * 1000) * 1000
					 : 0;
			p->up_ns = t;
			for (unsigned a = 0; a < o->announces; a++) {
				evs[n_evs++] = (struct ev){t, i, true};
				if (a + 1 < o->announces)
					t += jitter(gap) * 1000000ull;
			}
			/* then the period, counted from the last start-up announce */
			if (o->interval_ms)
				evs[n_evs++] = (struct ev){t + jitter(o->interval_ms) * 1000000ull,
							   i, false};
		}
	}
	qsort(evs, n_evs, sizeof(*evs), cmp_ev);
	if (o->mode == STORM)
		st.first_round_target_ns = (uint64_t)o->window_ms * 1000000ull;
	return 0;
}

static int open_socket(const struct opts *o)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	unsigned ifindex = if_nametoindex(o->ifname);
	struct ip_mreqn mr = {.imr_ifindex = (int)ifindex};
	int one = 1, zero = 0, ttl = 1, big = 64 << 20;

	if (!ifindex) {
		fprintf(stderr, "dir_gen: no interface %s\n", o->ifname);
		return -1;
	}
	group_sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = sa.sin_port};
	if (inet_pton(AF_INET, o->group, &group_sa.sin_addr) != 1) {
		fprintf(stderr, "dir_gen: bad group %s\n", o->group);
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto err;
	/* the daemon's answers to 48k peers must not be lost here: we count them */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    (o->spoof && setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0) ||
	    /* one process a rail, each on its interface: none hears another's
	     * unicast or groups */
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->ifname, (socklen_t)strlen(o->ifname)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto err;
	mr.imr_multiaddr = group_sa.sin_addr;
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
		goto err;
	return 0;
err:
	perror("dir_gen: socket setup");
	return -1;
}

struct out {
	struct sockaddr_in to;
	struct iovec iov;
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl;
	uint8_t data[FW_MAX_LEN];
};

/* @len bytes in ob->data, from @src (the peer's own address) to @to. */
static void fill_raw(struct mmsghdr *mh, struct out *ob, const struct opts *o, struct in_addr src,
		     const struct sockaddr_in *to, size_t len)
{
	struct cmsghdr *c;
	struct in_pktinfo pi = {0};

	ob->to = *to;
	ob->iov.iov_base = ob->data;
	ob->iov.iov_len = len;
	memset(mh, 0, sizeof(*mh));
	mh->msg_hdr.msg_name = &ob->to;
	mh->msg_hdr.msg_namelen = sizeof(ob->to);
	mh->msg_hdr.msg_iov = &ob->iov;
	mh->msg_hdr.msg_iovlen = 1;
	if (!o->spoof)
		return;
	/* the peer's own source address, as if it sent from its own node */
	memset(&ob->ctl, 0, sizeof(ob->ctl));
	mh->msg_hdr.msg_control = ob->ctl.buf;
	mh->msg_hdr.msg_controllen = sizeof(ob->ctl.buf);
	c = CMSG_FIRSTHDR(&mh->msg_hdr);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	pi.ipi_spec_dst = src;
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
}

/* A peer's announce: NEWCOMER or plain, its digest as of @t (@unicast: an
 * answer to the daemon's NEWCOMER). */
static void fill(struct mmsghdr *mh, struct out *ob, const struct opts *o, const struct peer *p,
		 const struct sockaddr_in *to, bool newcomer, bool unicast, uint64_t t)
{
	size_t len = newcomer ? p->len_nc : p->len_plain;
	unsigned off = newcomer ? p->dig_nc : p->dig_plain;

	memcpy(ob->data, pool + (newcomer ? p->off_nc : p->off_plain), len);
	if (off) {
		struct fw_digest d;

		fill_digest(o, p, unicast, t, &d);
		patch_digest(ob->data, off, &d);
	}
	fill_raw(mh, ob, o, p->addr, to, len);
}

/* Send @n prepared messages; each is one peer's datagram on its own
 * machine, so a local ENOBUFS/EAGAIN is retried, not counted as lost. */
static void send_batch(struct mmsghdr *mh, unsigned n)
{
	unsigned done = 0, tries = 0;

	while (done < n) {
		int r = sendmmsg(fd, mh + done, n - done, 0);

		if (r > 0) {
			done += (unsigned)r;
			tries = 0;
			continue;
		}
		if (r < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) &&
		    tries++ < 1000) {
			struct timespec ts = {0, 50000};

			st.send_retries++;
			nanosleep(&ts, NULL);
			continue;
		}
		if (r < 0) {
			static bool said;

			if (!said) {
				perror("dir_gen: sendmmsg");
				said = true;
			}
		}
		st.send_failed++;
		done++; /* give that one up */
	}
}

static void on_daemon_newcomer(const struct opts *o, const struct fw_msg *m,
			       const struct sockaddr_in *from, uint64_t t)
{
	if (st.n_daemon_newcomers < MAX_DAEMON_BURSTS) {
		st.daemon_bursts[st.n_daemon_newcomers] = m->tid;
		st.daemon_newcomer_ns[st.n_daemon_newcomers] = t;
	}
	st.n_daemon_newcomers++;
	if (o->mode == LEARN)
		return; /* steady-state peers only: nobody answers */
	answer_to = *from;
	/* who heard it: with --loss, each peer up misses it with that
	 * probability (its first range answer then says ASKER_NEW) */
	for (unsigned i = 0; i < o->count; i++) {
		struct peer *p = &peers[i];

		if (!p->knows_daemon && (o->mode != STORM || (going && p->up_ns <= t - go_ns)) &&
		    !lost(o))
			p->knows_daemon = true;
	}
	/* every peer that is up answers once per burst (fabric.c newcomer_first),
	 * unless the daemon heard its announce: it went out (when the peer came
	 * up) while the daemon listened, as the NEWCOMER's UP says (fabric.c
	 * heard_us; peers of the protocol before it, --announces > 1, answer) */
	for (unsigned i = 0; i < o->count; i++) {
		struct peer *p = &peers[i];
		bool up = o->mode == REJOIN || (going && p->up_ns <= t - go_ns);

		if (!up || p->answered_burst == m->tid)
			continue;
		if (o->mode == STORM && o->announces == 1 && m->has_up &&
		    go_ns + p->up_ns >= t - (uint64_t)m->up_ms * 1000000u)
			continue;
		p->answered_burst = m->tid;
		answer_q[aq_tail++ % o->count] = i;
		st.answers_queued++;
	}
}

static void receive(const struct opts *o)
{
	static uint8_t bufs[RX_BATCH][2048];
	static union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[RX_BATCH];
	struct sockaddr_in from[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct mmsghdr mh[RX_BATCH];

	for (;;) {
		int n;
		uint64_t t;

		for (int i = 0; i < RX_BATCH; i++) {
			iov[i] = (struct iovec){bufs[i], sizeof(bufs[i])};
			mh[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &from[i],
							     .msg_namelen = sizeof(from[i]),
							     .msg_iov = &iov[i],
							     .msg_iovlen = 1,
							     .msg_control = ctl[i].buf,
							     .msg_controllen = sizeof(ctl[i].buf)}};
		}
		n = recvmmsg(fd, mh, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		t = now_ns();
		for (int i = 0; i < n; i++) {
			struct in_addr dst = {0};
			struct cmsghdr *c;
			struct fw_msg m;

			st.rx++;
			for (c = CMSG_FIRSTHDR(&mh[i].msg_hdr); c;
			     c = CMSG_NXTHDR(&mh[i].msg_hdr, c))
				if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
					dst = ((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr;
			if (fw_decode(bufs[i], mh[i].msg_len, NULL, 0, &m) != FW_OK) {
				st.rx_malformed++;
				continue;
			}
			if (!have_daemon && m.sender.n_names) {
				/* the daemon's host is one of the cluster's */
				snprintf(daemon_name, sizeof(daemon_name), "%s", m.sender.names[0]);
				daemon_term = name_term(daemon_name);
				have_daemon = true;
			}
			if (dst.s_addr == group_sa.sin_addr.s_addr) {
				st.rx_mcast_bytes += mh[i].msg_len;
				if (m.type == FW_ANNOUNCE && (m.flags & FW_FLAG_NEWCOMER)) {
					st.rx_mcast_newcomer++;
					on_daemon_newcomer(o, &m, &from[i], t);
				} else if (m.type == FW_REQUEST && m.has_target) {
					long k = target_peer(o, &m.target);

					st.rx_request++;
					if (!st.first_request_ns)
						st.first_request_ns = t;
					st.last_request_ns = t;
					if (k < 0)
						continue;
					st.rx_request_ours++;
					if (!peer_up(o, &peers[k - 1], t)) {
						st.rx_request_down++;
						continue;
					}
					queue_due(o, FW_REPLY, k, m.tid, NULL, &from[i]);
				} else {
					st.rx_mcast_other++;
				}
				continue;
			}
			if (m.type == FW_RANGE_QUERY && m.has_range) {
				long k = o->spoof ? peer_of_v4(dst) : -1;

				st.rx_range_query++;
				st.rx_range_names += !!(m.range.flags & FW_RANGE_NAMES);
				if (!st.first_range_query_ns)
					st.first_range_query_ns = t;
				st.last_range_query_ns = t;
				if (k < 1 || (unsigned long)k > o->count) {
					st.range_unknown_peer++;
					continue;
				}
				/* the first it hears of the daemon: says so */
				if (!peers[k - 1].knows_daemon)
					m.range.flags |= FW_RANGE_ASKER_NEW;
				peers[k - 1].knows_daemon = true;
				queue_due(o, FW_RANGE_ANSWER, k, m.tid, &m.range, &from[i]);
				continue;
			}
			if (m.type == FW_REQUEST && m.has_target) {
				/* a REQUEST sent to one peer's address alone (a
				 * hint's, fabric_fetch.c): that peer answers if
				 * it is the target and up */
				long k = o->spoof ? peer_of_v4(dst) : -1;

				st.rx_request++;
				st.rx_request_unicast++;
				if (!st.first_request_ns)
					st.first_request_ns = t;
				st.last_request_ns = t;
				if (k < 1 || (unsigned long)k > o->count ||
				    target_peer(o, &m.target) != k)
					continue;
				st.rx_request_ours++;
				if (!peer_up(o, &peers[k - 1], t)) {
					st.rx_request_down++;
					continue;
				}
				peers[k - 1].knows_daemon = true; /* a requester is learned */
				queue_due(o, FW_REPLY, k, m.tid, NULL, &from[i]);
				continue;
			}
			if (m.type != FW_ANNOUNCE) {
				st.rx_other++;
				continue;
			}
			st.rx_ucast++;
			st.rx_ucast_bytes += mh[i].msg_len;
			{
				long k = o->spoof ? peer_of_v4(dst) : -1;

				if (k >= 1 && (unsigned long)k <= o->count) {
					peers[k - 1].rx_ucast++;
					/* the daemon's answer to its NEWCOMER: it
					 * learns the daemon (unless --loss drops it) */
					if (!lost(o))
						peers[k - 1].knows_daemon = true;
				} else {
					st.rx_ucast_unknown++;
				}
			}
		}
		if (n < RX_BATCH)
			return;
	}
}

/* Send what is due: answers first (they are late already), then the
 * schedule. Each datagram to the daemon is lost with probability --loss. */
static void send_due(const struct opts *o)
{
	static struct mmsghdr mh[BATCH];
	static struct out ob[BATCH];
	uint64_t t = now_ns();
	unsigned n = 0;

	while (aq_head < aq_tail && n < BATCH) {
		const struct peer *p = &peers[answer_q[aq_head++ % o->count]];

		st.ucast_sent++;
		if (lost(o)) {
			st.lost_answer++;
			continue;
		}
		fill(&mh[n], &ob[n], o, p, &answer_to, false, true, t);
		n++;
	}
	if (n && aq_head == aq_tail)
		st.last_answer_sent_ns = t;
	while (dq_head < dq_tail && n < BATCH) {
		const struct due *d = &due_q[dq_head++ % REPLY_Q];
		int len = d->type == FW_REPLY ? reply(o, d, ob[n].data)
					      : range_answer(o, d, t, ob[n].data);

		if (len < 0) {
			st.encode_failed++;
			continue;
		}
		if (d->type == FW_REPLY)
			st.replies++;
		else
			st.range_answers++;
		if (lost(o)) {
			if (d->type == FW_REPLY)
				st.lost_reply++;
			else
				st.lost_range++;
			continue;
		}
		fill_raw(&mh[n], &ob[n], o, peers[d->peer].addr, &d->to, (size_t)len);
		n++;
	}
	while (going && next_ev < n_evs && n < BATCH && evs[next_ev].t_ns <= t - go_ns) {
		const struct ev *e = &evs[next_ev++];
		struct peer *p = &peers[e->peer];

		st.mcast_sent++;
		p->seq++;
		if (e->newcomer)
			st.newcomer_sent++;
		else
			st.periodic_sent++;
		if (o->mode == STORM && e->newcomer && e->t_ns == p->up_ns)
			st.first_round_last_ns = t - go_ns;
		if (next_ev == n_evs)
			st.schedule_done_ns = t - go_ns;
		if (lost(o)) {
			st.lost_announce++;
			continue;
		}
		fill(&mh[n], &ob[n], o, p, &group_sa, e->newcomer, false, t);
		n++;
	}
	if (n)
		send_batch(mh, n);
}

static void report(const struct opts *o, uint64_t end)
{
	unsigned answered = 0, max_per = 0;
	uint64_t total = 0;

	for (unsigned i = 0; i < o->count; i++) {
		answered += peers[i].rx_ucast > 0;
		total += peers[i].rx_ucast;
		if (peers[i].rx_ucast > max_per)
			max_per = peers[i].rx_ucast;
	}
	printf("{\"newcomer_sent\": %llu, \"periodic_sent\": %llu, ",
	       (unsigned long long)st.newcomer_sent, (unsigned long long)st.periodic_sent);
	printf("\"loss\": %g, \"digest\": %s, \"lost_announce\": %llu, \"lost_answer\": %llu, "
	       "\"lost_range\": %llu, \"lost_reply\": %llu, \"rx_range_query\": %llu, "
	       "\"rx_range_names\": %llu, \"range_answers\": %llu, \"range_unknown_peer\": %llu, "
	       "\"rx_request\": %llu, \"rx_request_unicast\": %llu, \"rx_request_ours\": %llu, "
	       "\"rx_request_down\": %llu, "
	       "\"replies\": %llu, \"due_overflow\": %llu, \"encode_failed\": %llu, "
	       "\"daemon_name\": \"%s\", \"range_queries_ms\": [%.1f, %.1f], "
	       "\"requests_ms\": [%.1f, %.1f], ",
	       o->loss * 100, o->digest ? "true" : "false", (unsigned long long)st.lost_announce,
	       (unsigned long long)st.lost_answer, (unsigned long long)st.lost_range,
	       (unsigned long long)st.lost_reply, (unsigned long long)st.rx_range_query,
	       (unsigned long long)st.rx_range_names, (unsigned long long)st.range_answers,
	       (unsigned long long)st.range_unknown_peer, (unsigned long long)st.rx_request,
	       (unsigned long long)st.rx_request_unicast,
	       (unsigned long long)st.rx_request_ours, (unsigned long long)st.rx_request_down,
	       (unsigned long long)st.replies, (unsigned long long)st.due_overflow,
	       (unsigned long long)st.encode_failed, have_daemon ? daemon_name : "",
	       st.first_range_query_ns && go_ns ? ((double)st.first_range_query_ns - (double)go_ns) / 1e6 : -1.0,
	       st.last_range_query_ns && go_ns ? ((double)st.last_range_query_ns - (double)go_ns) / 1e6 : -1.0,
	       st.first_request_ns && go_ns ? ((double)st.first_request_ns - (double)go_ns) / 1e6 : -1.0,
	       st.last_request_ns && go_ns ? ((double)st.last_request_ns - (double)go_ns) / 1e6 : -1.0);
	printf("\"mode\": \"%s\", \"count\": %u, \"spoof\": %s, \"mcast_sent\": %llu, "
	       "\"ucast_sent\": %llu, \"send_retries\": %llu, \"send_failed\": %llu, "
	       "\"schedule_done_ms\": %.1f, \"first_round_ms\": %.1f, "
	       "\"first_round_target_ms\": %.1f, \"rx\": %llu, \"rx_malformed\": %llu, "
	       "\"rx_other\": %llu, \"rx_mcast_newcomer\": %llu, \"rx_mcast_other\": %llu, "
	       "\"rx_ucast\": %llu, \"rx_ucast_unknown\": %llu, \"peers_answered\": %u, "
	       "\"answers_max_per_peer\": %u, \"answers_queued\": %llu, "
	       "\"last_answer_sent_ms\": %.1f, \"run_ms\": %.1f, \"bytes_newcomer\": %.1f, "
	       "\"bytes_plain\": %.1f, \"rx_ucast_bytes\": %llu, \"rx_mcast_bytes\": %llu, "
	       "\"daemon_newcomers_ms\": [",
	       o->mode == LEARN	  ? "learn"
	       : o->mode == STORM ? "storm"
				  : "rejoin",
	       o->count, o->spoof ? "true" : "false", (unsigned long long)st.mcast_sent,
	       (unsigned long long)st.ucast_sent, (unsigned long long)st.send_retries,
	       (unsigned long long)st.send_failed, st.schedule_done_ns / 1e6,
	       st.first_round_last_ns / 1e6, st.first_round_target_ns / 1e6,
	       (unsigned long long)st.rx, (unsigned long long)st.rx_malformed,
	       (unsigned long long)st.rx_other, (unsigned long long)st.rx_mcast_newcomer,
	       (unsigned long long)st.rx_mcast_other, (unsigned long long)total,
	       (unsigned long long)st.rx_ucast_unknown, answered, max_per,
	       (unsigned long long)st.answers_queued,
	       st.last_answer_sent_ns && go_ns
		       ? ((double)st.last_answer_sent_ns - (double)go_ns) / 1e6
		       : -1.0,
	       go_ns ? (end - go_ns) / 1e6 : 0.0, (double)st.bytes_nc / o->count,
	       (double)st.bytes_plain / o->count, (unsigned long long)st.rx_ucast_bytes,
	       (unsigned long long)st.rx_mcast_bytes);
	for (unsigned i = 0; i < st.n_daemon_newcomers && i < MAX_DAEMON_BURSTS; i++) {
		double rel = go_ns ? ((double)st.daemon_newcomer_ns[i] - (double)go_ns) / 1e6 : 0;

		printf("%s%.1f", i ? ", " : "", rel);
	}
	printf("]}\n");
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: dir_gen --mode learn|storm|rejoin --count N --ifname IF [--group ADDR]\n"
		   "       [--port P] [--rate PER_S] [--window MS] [--settle MS] [--announces K]\n"
		   "       [--interval MS]\n"
		   "       [--mtu-enum E] [--rate-enum E] [--ttl S] [--domain D] [--seed S]\n"
		   "       [--no-spoof] [--max-seconds S] [--loss PCT] [--no-digest]\n"
		   "       [--ranges-settled] [--rails N --rail R]\n"
		   "Prints \"ready\"; \"go\" on stdin starts the schedule, \"stop\" or EOF ends\n"
		   "it and prints a JSON summary.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"mode", required_argument, NULL, 'm'},
		{"count", required_argument, NULL, 'n'},
		{"ifname", required_argument, NULL, 'i'},
		{"group", required_argument, NULL, 'g'},
		{"port", required_argument, NULL, 'p'},
		{"rate", required_argument, NULL, 'r'},
		{"window", required_argument, NULL, 'w'},
		{"settle", required_argument, NULL, 's'},
		{"announces", required_argument, NULL, 'a'},
		{"interval", required_argument, NULL, 'I'},
		{"mtu-enum", required_argument, NULL, 'M'},
		{"rate-enum", required_argument, NULL, 'R'},
		{"ttl", required_argument, NULL, 't'},
		{"domain", required_argument, NULL, 'd'},
		{"seed", required_argument, NULL, 'S'},
		{"no-spoof", no_argument, NULL, 'N'},
		{"max-seconds", required_argument, NULL, 'x'},
		{"loss", required_argument, NULL, 'L'},
		{"no-digest", no_argument, NULL, 'D'},
		{"ranges-settled", no_argument, NULL, 'P'},
		{"rails", required_argument, NULL, 'K'},
		{"rail", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.mode = LEARN,
			 .group = "239.255.73.1",
			 .rails = 1,
			 .port = 4790,
			 .rate = 20000,
			 .window_ms = 100,
			 .settle_ms = 3000,
			 .announces = 3,
			 .mtu_enum = 4,
			 .rate_enum = 3,
			 .ttl = 3600,
			 .domain = "cluster.example",
			 .seed = 1,
			 .spoof = true,
			 .max_seconds = 600,
			 .digest = true};
	char line[64];
	uint64_t deadline;
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "learn"))
				o.mode = LEARN;
			else if (!strcmp(optarg, "storm"))
				o.mode = STORM;
			else if (!strcmp(optarg, "rejoin"))
				o.mode = REJOIN;
			else
				return usage(stderr), 2;
			break;
		case 'n':
			o.count = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			o.ifname = optarg;
			break;
		case 'g':
			o.group = optarg;
			break;
		case 'p':
			o.port = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o.rate = atof(optarg);
			break;
		case 'w':
			o.window_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.settle_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			o.announces = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'I':
			o.interval_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'M':
			o.mtu_enum = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'R':
			o.rate_enum = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.ttl = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			o.domain = optarg;
			break;
		case 'S':
			o.seed = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'N':
			o.spoof = false;
			break;
		case 'x':
			o.max_seconds = atof(optarg);
			break;
		case 'L':
			o.loss = atof(optarg) / 100;
			break;
		case 'D':
			o.digest = false;
			break;
		case 'P':
			o.ranges_settled = true;
			break;
		case 'K':
			o.rails = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.rail = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!o.count || o.count > MAX_PEERS || !o.ifname || o.rate <= 0 ||
	    (o.mode == STORM && !o.announces) || o.loss < 0 || o.loss > 1 ||
	    (o.mode != STORM && o.loss > 0) || !o.rails || o.rails > RAILS_MAX ||
	    o.rail >= o.rails || (o.rails > 1 && o.count > RAIL_PEERS_MAX)) {
		usage(stderr);
		return 2;
	}
	if (o.mode != STORM)
		o.digest = false; /* the digest is the storm's (steady-state peers keep today's) */
	rng_state = 0x9E3779B97F4A7C15ULL ^ o.seed;
	loss_state = 0xD1B54A32D192ED03ULL ^ ((uint64_t)o.seed << 1 | 1);
	gopts = &o;
	rail_no = o.rail;
	peers = calloc(o.count, sizeof(*peers));
	answer_q = calloc(o.count, sizeof(*answer_q));
	due_q = calloc(REPLY_Q, sizeof(*due_q));
	if (!peers || !answer_q || !due_q || build_terms(&o) || encode_all(&o) || schedule(&o) ||
	    open_socket(&o))
		return 1;
	printf("ready\n");
	fflush(stdout);

	deadline = now_ns() + (uint64_t)(o.max_seconds * 1e9);
	for (;;) {
		struct pollfd pfd[2] = {{.fd = fd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
		uint64_t t = now_ns();
		int timeout = 100;

		if (t > deadline) {
			fprintf(stderr, "dir_gen: --max-seconds reached\n");
			break;
		}
		if (aq_head < aq_tail || dq_head < dq_tail)
			timeout = 0;
		else if (going && next_ev < n_evs) {
			uint64_t due = go_ns + evs[next_ev].t_ns;

			timeout = due <= t ? 0 : (int)((due - t) / 1000000);
		}
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			if (!fgets(line, sizeof(line), stdin))
				break;
			if (!strncmp(line, "go", 2) && !going) {
				going = true;
				go_ns = now_ns();
			} else if (!strncmp(line, "stop", 4)) {
				break;
			}
		}
		receive(&o);
		send_due(&o);
	}
	receive(&o);
	report(&o, now_ns());
	return 0;
}
