// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: fabric datagrams through the protocol core
 * (resolverd/fabric/fabric.c, the resolver, the host store) of a daemon in
 * process with a fake transport and a fake clock (daemon_fake.h).
 *
 * The first byte picks the daemon: with or without a cluster key (then
 * every datagram is signed and stamped), announcements on or off. The rest
 * is a program: ANNOUNCE, REQUEST (or RANGE_QUERY, RANGE_ANSWER), REPLY and
 * GOODBYE from a small universe
 * of peers whose identities the input bends (borrowed names, addresses and
 * GIDs, our own, a static host's), with stamps near the clock, far from it
 * or repeated; raw bytes; replays of earlier datagrams; lookups that send
 * REQUESTs; time steps; resyncs. Every datagram the daemon sent must decode
 * under its key, and store_check() must pass after every CHECK_EVERY-th step
 * and at the end of the input (a broken store stays broken, so a later check
 * still sees it; checking after every step took a third of the time). With a key,
 * a datagram taken once is never taken again: its replay is counted as
 * replayed, duplicate or stale and changes nothing in the store. Any
 * violation abort()s.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_fake.h"
#include "core/hoststore.h"
#include "engine/resolver.h"
#include "fabric/fabric_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PEERS 8
#define HISTORY 8
#define WAITERS 4
#define CHECK_EVERY 4
#define KEY "fuzzing-cluster-key-0123456789"

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_fabric.c:%d: check failed: %s\n", __LINE__, #cond);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

struct past {
	uint8_t buf[FW_MAX_LEN];
	size_t len;
	uint8_t from;
	bool taken; /* it passed every check up to the message's handler */
};

static struct {
	const uint8_t *p;
	size_t n;
	bool keyed;
	uint64_t last_stamp[PEERS + 1];
	struct past hist[HISTORY];
	unsigned n_hist;
	unsigned long checked_sent;
	struct lookup_waiter w[WAITERS];
} s;

static uint8_t take(void)
{
	if (!s.n)
		return 0;
	s.n--;
	return *s.p++;
}

static void waiter_done(struct lookup_waiter *w, int status)
{
	(void)w;
	(void)status;
}

/* Peer @n: nodeN, 198.18.0.N, 2001:db8::N, GID fe80::2:c903:0:N, LID N. */
static void peer_id(struct ibres_hostrec *h, unsigned n)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->names[0], sizeof(h->names[0]), "node%u", n);
	snprintf(h->names[1], sizeof(h->names[1]), "node%u.cluster.example", n);
	h->n_names = 2;
	h->v4[0].s_addr = htonl(0xc6120000u | n);
	h->n_v4 = 1;
	h->v6[0].s6_addr[0] = 0x20;
	h->v6[0].s6_addr[1] = 0x01;
	h->v6[0].s6_addr[2] = 0x0d;
	h->v6[0].s6_addr[3] = 0xb8;
	h->v6[0].s6_addr[15] = (uint8_t)n;
	h->n_v6 = 1;
	h->gids[0][0] = 0xfe;
	h->gids[0][1] = 0x80;
	h->gids[0][9] = 0x02;
	h->gids[0][10] = 0xc9;
	h->gids[0][11] = 0x03;
	h->gids[0][15] = (uint8_t)n;
	h->n_gids = 1;
	h->lid = (uint16_t)n;
	h->qpn = 0x100 + n;
	h->pkey = 0xffff;
	h->ttl = 3600;
}

/* Bend peer @n's identity as the input says: another peer's name, address
 * or GID, ours (node1 is us), a static host's, no alias, a short TTL. */
static void bend(struct ibres_hostrec *h)
{
	uint8_t how = take(), other = (uint8_t)(take() % (PEERS + 2));

	if (how & 1)
		snprintf(h->names[0], sizeof(h->names[0]), "node%u", other);
	if (how & 2)
		h->v4[0].s_addr = htonl(0xc6120000u | other);
	if (how & 4)
		h->gids[0][15] = other;
	if (how & 8)
		snprintf(h->names[1], sizeof(h->names[1]), "login1");
	if (how & 16)
		h->n_names = 1;
	if (how & 32)
		h->ttl = take();
	if (how & 64)
		h->lid = other;
	if (how & 128)
		h->n_v6 = 0;
}

/* Deliver @buf and remember it; was it taken (not dropped before its
 * handler)? */
static const struct fabric_counters *counters(void)
{
	return &fake_d.fabric->c;
}

/* Datagrams dropped before their handler, and those of them dropped as not
 * fresh. */
static uint64_t dropped(void)
{
	const struct fabric_counters *c = counters();

	return c->rx_malformed + c->rx_bad_version + c->rx_auth_failed + c->rx_self + c->rx_stale +
	       c->rx_replayed + c->rx_duplicate;
}

static uint64_t not_fresh(void)
{
	return counters()->rx_stale + counters()->rx_replayed + counters()->rx_duplicate;
}

static void deliver(const uint8_t *buf, size_t len, uint8_t from)
{
	uint64_t before = dropped(), after;
	struct past *h = &s.hist[s.n_hist++ % HISTORY];

	fake_deliver(buf, len, from);
	after = dropped();
	check(after - before <= 1);
	memcpy(h->buf, buf, len);
	h->len = len;
	h->from = from;
	h->taken = after == before;
}

/* The newest REQUEST's transaction id the daemon sent, else 0. */
static uint64_t sent_tid(void)
{
	for (unsigned long i = fake_n_sent; i > 0 && fake_n_sent - i < FAKE_SENT_RING; i--) {
		const struct fake_sent *f = &fake_sent[(i - 1) % FAKE_SENT_RING];
		struct fw_msg m;

		if (fw_decode(f->buf, f->len, s.keyed ? (const uint8_t *)KEY : NULL,
			      s.keyed ? strlen(KEY) : 0, &m) == FW_OK &&
		    m.type == FW_REQUEST)
			return m.tid;
	}
	return 0;
}

/* The newest RANGE_QUERY the daemon sent (its tid and range); false when
 * none is in the ring. */
static bool sent_range(struct fw_msg *q)
{
	for (unsigned long i = fake_n_sent; i > 0 && fake_n_sent - i < FAKE_SENT_RING; i--) {
		const struct fake_sent *f = &fake_sent[(i - 1) % FAKE_SENT_RING];

		if (fw_decode(f->buf, f->len, s.keyed ? (const uint8_t *)KEY : NULL,
			      s.keyed ? strlen(KEY) : 0, q) == FW_OK &&
		    q->type == FW_RANGE_QUERY)
			return true;
	}
	return false;
}

/* A REQUEST whose stamp byte has bit 2 set is a RANGE_QUERY instead (a
 * range, parts and flags from the input, malformed ones too), bit 3 a
 * RANGE_ANSWER: to the daemon's newest query when bit 4 is set too (its tid
 * and range), with sums or names from the input. Older inputs left those
 * bits clear in REQUESTs only by chance: they read differently now. */
static void range_items(struct fw_msg *m, uint8_t st)
{
	struct fw_msg q;

	m->has_target = false;
	if (!(st & 0x08)) {
		m->type = FW_RANGE_QUERY;
		m->has_range = true;
		m->range.lo = (uint64_t)take() << 56;
		m->range.hi = m->range.lo + ((uint64_t)take() << 48) + take();
		if (take() & 1)
			m->range.hi = UINT64_MAX;
		m->range.parts = take() % (FW_PARTS_MAX + 2);
		m->range.flags = take() & 7; /* NAMES, MORE, WHERE */
		return;
	}
	m->type = FW_RANGE_ANSWER;
	m->has_range = true;
	if ((st & 0x10) && sent_range(&q)) {
		m->tid = q.tid;
		m->range = q.range;
	} else {
		m->range = (struct fw_range){.lo = 0, .hi = UINT64_MAX, .parts = 16};
	}
	m->has_digest = true;
	{
		struct store_digest own;

		store_digest(&fake_d.store, &own);
		m->digest.hosts = (uint32_t)own.hosts + (take() & 3) - 1;
		m->digest.sum = (st & 0x20) ? own.sum : m->tid;
		m->digest.flags = (uint8_t)(take() & 0x0f);
	}
	if (m->range.flags & FW_RANGE_NAMES) {
		unsigned n = take() % 5;

		for (unsigned i = 0; i < n; i++) {
			char name[16];

			struct fw_where w = {.kind = (uint8_t)(take() % 5)};

			snprintf(name, sizeof(name), "%s%u", take() & 1 ? "node" : "other",
				 take() % (PEERS + 4));
			/* where the host is: a peer's address, or anything */
			w.addr[0] = 198;
			w.addr[1] = 18;
			w.addr[3] = (uint8_t)(take() % (PEERS + 2));
			w.lid = (uint16_t)take();
			w.qpn = take();
			fw_hint_add_at(m, name, &w);
		}
		m->range.flags |= take() & (FW_RANGE_MORE | FW_RANGE_WHERE);
	} else {
		m->n_sums = m->range.parts;
		for (unsigned i = 0; i < m->n_sums; i++)
			m->sums[i] = (struct fw_sum){.hosts = take() % 4, .sum = take()};
	}
}

static void send_msg(uint8_t type)
{
	uint8_t peer = (uint8_t)(take() % PEERS + 1), buf[FW_MAX_LEN], st = take();
	struct fw_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	m.type = type;
	peer_id(&m.sender, peer);
	bend(&m.sender);
	m.groups[0] = (struct fw_group){ 4, 3 };
	m.groups[1] = (struct fw_group){ 5, 7 };
	m.n_groups = take() % 3;
	m.flags = take() & (FW_FLAG_NEWCOMER | FW_FLAG_ANNOUNCES | FW_FLAG_SAYS_ANNOUNCES);
	m.tid = take();
	/* a NEWCOMER's UP: listening since before or after our announces */
	if ((m.flags & FW_FLAG_NEWCOMER) && (take() & 1)) {
		m.has_up = true;
		m.up_ms = (uint32_t)take() * 100;
	}
	if (type == FW_REQUEST) {
		char name[16];

		m.has_target = true;
		snprintf(name, sizeof(name), "node%u", take() % (PEERS + 2));
		host_key_name(&m.target, name);
		if (st & 0x0c)
			range_items(&m, st);
	}
	if (type == FW_REPLY) {
		m.has_chosen = true;
		m.chosen = m.groups[take() & 1];
		if (st & 0x80)
			m.tid = sent_tid();
	}
	/* a directory digest (from bits already taken, so that older inputs
	 * read as before): more, as many or fewer hosts than ours, settled or
	 * not, numbers that jump or restart */
	if (type == FW_ANNOUNCE && (st & 0x04)) {
		struct store_digest own;

		store_digest(&fake_d.store, &own);
		m.has_digest = true;
		m.digest.hosts = (uint32_t)own.hosts + (st >> 3 & 3) - 1;
		m.digest.sum = (st & 0x20) ? own.sum : m.tid;
		m.digest.flags = (uint8_t)(st >> 6);
		/* a peer that answers range queries, past its settle time */
		if (m.tid & 0x80)
			m.digest.flags |= FW_DIGEST_RANGES | FW_DIGEST_PAST_SETTLE;
		m.digest.seq = (uint32_t)(m.tid & 7);
	}
	/* hosts it heard say goodbye (from bits already taken, as above): a
	 * peer, ourselves, one we never held; the daemon shortens those it holds */
	if (type == FW_ANNOUNCE && (m.tid & 0x300)) {
		for (unsigned i = 0; i < (m.tid >> 8 & 3); i++) {
			char name[16];

			snprintf(name, sizeof(name), "node%u",
				 (unsigned)((m.tid >> 10) + i) % (PEERS + 2));
			fw_gone_add(&m, name);
		}
	}
	/* the stamp: the peer's next (strictly rising, as a node sends), or
	 * now give or take up to 127 s, or none */
	if (s.keyed && (st & 3) != 3) {
		m.has_stamp = true;
		if ((st & 3) == 0) {
			uint64_t now = wall_us();

			m.stamp = s.last_stamp[peer] < now ? now : s.last_stamp[peer] + 1;
			s.last_stamp[peer] = m.stamp;
		} else {
			m.stamp = wall_us() + (uint64_t)((int64_t)(int8_t)take() * 1000000);
		}
	}
	len = fw_encode(&m, s.keyed ? (const uint8_t *)KEY : NULL, s.keyed ? strlen(KEY) : 0,
			buf, sizeof(buf));
	if (len > 0)
		deliver(buf, (size_t)len, peer);
}

static void replay(void)
{
	const struct past *h;
	struct store_stats before;
	uint64_t refused;

	if (!s.n_hist)
		return;
	h = &s.hist[take() % (s.n_hist < HISTORY ? s.n_hist : HISTORY)];
	if (!s.keyed || !h->taken) {
		deliver(h->buf, h->len, h->from);
		return;
	}
	/* taken once: never again, and nothing changes */
	before = fake_d.store.stats;
	refused = not_fresh();
	fake_deliver(h->buf, h->len, h->from);
	check(not_fresh() == refused + 1);
	check(fake_d.store.stats.inserts == before.inserts);
	check(fake_d.store.stats.hosts == before.hosts);
	check(fake_d.store.stats.keys == before.keys);
}

static void lookup(void)
{
	struct lookup_waiter *w = &s.w[take() % WAITERS];
	uint8_t which = take();
	struct host_key k;
	struct host *h;
	char name[16];

	if (w->node.next && w->node.next != &w->node)
		return; /* still waiting */
	memset(w, 0, sizeof(*w));
	w->done = waiter_done;
	snprintf(name, sizeof(name), "node%u", which % (PEERS + 2));
	if (which & 0x80) {
		uint8_t a[4] = { 198, 18, 0, (uint8_t)(which % (PEERS + 2)) };

		host_key_addr(&k, IBRES_KEY_IPV4, a);
	} else {
		host_key_name(&k, name);
	}
	resolver_lookup(&fake_d.res, w, &k, which & 0x40, &h);
}

static void raw(void)
{
	uint8_t buf[FW_MAX_LEN + 1];
	size_t len = take() * 6u;

	if (len > s.n)
		len = s.n;
	if (len > sizeof(buf))
		len = sizeof(buf);
	memcpy(buf, s.p, len);
	s.p += len;
	s.n -= len;
	deliver(buf, len, (uint8_t)(take() % PEERS + 1));
}

/* Every datagram sent since the last step decodes under our key. */
static void check_sent(void)
{
	for (; s.checked_sent < fake_n_sent; s.checked_sent++) {
		const struct fake_sent *f = &fake_sent[s.checked_sent % FAKE_SENT_RING];
		struct fw_msg m;

		if (fake_n_sent - s.checked_sent > FAKE_SENT_RING)
			continue; /* overwritten in the ring */
		check(fw_decode(f->buf, f->len, s.keyed ? (const uint8_t *)KEY : NULL,
				s.keyed ? strlen(KEY) : 0, &m) == FW_OK);
		check(m.has_stamp == s.keyed);
		/* every ANNOUNCE says what its sender holds */
		check(m.type != FW_ANNOUNCE || m.has_digest);
		/* range queries and answers go to one peer, answers with our digest */
		check((m.type != FW_RANGE_QUERY && m.type != FW_RANGE_ANSWER) || f->ucast);
		check(m.type != FW_RANGE_ANSWER || (m.has_digest && m.has_range));
	}
}

static char key_file[64];

static void remove_key_file(void)
{
	unlink(key_file);
}

static const char *key_path(void)
{
	FILE *f;

	if (key_file[0])
		return key_file;
	snprintf(key_file, sizeof(key_file), "/tmp/fuzz_fabric.%d.key", (int)getpid());
	f = fopen(key_file, "w");
	check(f && fputs(KEY "\n", f) >= 0 && fclose(f) == 0);
	atexit(remove_key_file);
	return key_file;
}

static void start(uint8_t mode)
{
	static char conf[2048];

	snprintf(conf, sizeof(conf),
		 "[daemon]\nlog_level = error\n[resolve]\ntimeout = 100ms\nretries = 2\n"
		 "negative_ttl = 5s\naddr_ttl = 60s\nsettle_time = 2s\n"
		 "name_pattern = node* login*\nannounce_interval = %s\ncache_size = 16\n"
		 "cluster_key_file = %s\n"
		 "[endpoint ib0]\nname = node1\naddress = 198.18.0.1\ngid = fe80::2:c903:0:1\n"
		 "lid = 1\nqpn = 1\npkey = 0xffff\ntransport = ip\ninterface = ib0\n"
		 "udp_port = 4790\ngroup = 239.255.73.1 mtu=2048 rate=10\n"
		 "group = 239.255.73.2 mtu=4096 rate=40\n",
		 mode & 2 ? "10s" : "0", s.keyed ? key_path() : "none");
	check(fake_daemon_start(conf, "fe80::2:c903:0:10 16 login1 198.18.1.1\n") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned steps = 0;
	uint8_t mode;

	if (!size)
		return 0;
	memset(&s, 0, sizeof(s));
	s.p = data;
	s.n = size;
	mode = take();
	s.keyed = mode & 1;
	start(mode);
	while (s.n) {
		switch (take() % 10) {
		case 0:
			send_msg(FW_ANNOUNCE);
			break;
		case 1:
			send_msg(FW_REQUEST);
			break;
		case 2:
			send_msg(FW_REPLY);
			break;
		case 3:
			send_msg(FW_GOODBYE);
			break;
		case 4:
			raw();
			break;
		case 5:
			replay();
			break;
		case 6:
			fake_advance((uint64_t)take() * take() * 4);
			break;
		case 7:
			lookup();
			break;
		case 8:
			fabric_resync(fake_d.fabric);
			break;
		case 9:
			store_flush(&fake_d.store, NULL);
			break;
		}
		if (++steps % CHECK_EVERY == 0 || !s.n)
			check(store_check(&fake_d.store) == 0);
		check_sent();
	}
	for (unsigned i = 0; i < WAITERS; i++)
		lookup_waiter_cancel(&s.w[i]);
	fake_daemon_stop();
	return 0;
}
