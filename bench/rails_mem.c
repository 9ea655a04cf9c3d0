// SPDX-License-Identifier: MIT
/*
 * rails_mem: the memory a host costs in the daemon's host store plus the
 * shared host directory, for bench/directory-bench --parts rails-memory
 * (issue 20, "Scale and memory"). In process, no daemon, no network: the
 * daemon's own store and publisher (build/libibresd.a), one loop, as
 * test/unit/test_hostdir.c sets them up.
 *
 *   rails_mem --hosts N --rails R [--batch B] [--order host|rail] [--ttl S]
 *             [--settle-ms MS] [--prefix P]
 *
 * Host K (1..N) as the fabric teaches it: on each rail r (0..R-1) one
 * endpoint record, inserted as fabric.c's learn_store() does (origin FABRIC,
 * heard on local endpoint r: planes, one LID space per rail), with the names
 * nodeK and nodeK-ibr (--prefix: another word than node, up to 32 bytes),
 * one IPv4 and one IPv6 address, one GID
 * (fe80::2:c903:r:K: every plane keeps the default prefix), LID K (repeating
 * on every plane), QPN 1, P_Key 0xffff; every endpoint carries the rails
 * digest of the host's GIDs sorted ascending (rails_digest()). The addresses
 * live in this process's memory only; nothing is sent.
 *
 * The loop runs after every --batch endpoints (the publisher's zero-delay
 * timer ends each write section and grows the file when it is full), as the
 * daemon's loop turns between datagrams. Then, bounded by --settle-ms, the
 * loop runs until the published generation holds every host (each host's
 * canonical name and its last rail's GID found by the readers' own
 * ibdir_lookup() in a read-only mapping of the memfd). That is "grown": the
 * generation as learning left it. Then the publisher is stopped and started
 * again on the full store ("fresh": one generation sized for the store, as
 * hostdir_start() builds it at start-up), and measured the same way; then
 * written once more as the publisher does a minute after the directory
 * stopped growing ("compact": hostdir_compact(), after store_sweep() made
 * the store's key index compact too), and measured again.
 *
 * Prints one JSON object: the empty baseline (store and publisher started,
 * no host) and both phases, each with store_bytes() and its parts, the
 * generation's size (hostdir_fd() + fstat, st_blocks too), its tables and
 * record area, the record bytes the directory's records need (encoded as the
 * publisher encodes them: each endpoint's own record, each host's merged
 * record), the heap in use (mallinfo2(): uordblks + hblkhd, the blocks
 * malloc maps on their own included), VmRSS above the process before any
 * of it, and the phase's milliseconds ("ms": grown, inserting every endpoint
 * until the directory holds them all; fresh, from hostdir_start() until it
 * does). Last, what a reader's look-up by name costs in the fresh
 * generation (time_lookups()): a hit, a miss, and the loop's own floor; and
 * the daemon's own look-up in the store, alone and with the walk of the
 * host's endpoints a RESOLVE makes after it ("store_hit_ring_ns"), and its
 * eviction (time_store()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hostkey.h"
#include "core/hoststore.h"
#include "core/log.h"
#include "core/loop.h"
#include "hostdir.h"
#include "os/hostdir_pub.h"

#define HOSTS_MAX      49151u /* one LID each per plane */
#define RAILS_MAX      8u     /* one local endpoint bit and one alias each */
#define BATCH_DEFAULT  64u
#define TTL_DEFAULT    3600u  /* addr_ttl's default (ibresd.conf(5)) */
#define SETTLE_DEFAULT 30000u /* ms: the publisher must hold every host by then */
#define SETTLE_STEP_MS 20u

struct opts {
	unsigned hosts, rails, batch, ttl_s, settle_ms;
	bool rail_order;
	const char *prefix; /* of the host names (--prefix; default "node") */
};

#define PREFIX_MAX 32u

static struct loop loop_;
static struct host_store store_;
static struct hostdir_pub *pub_;

/* Heap in use: the arena's chunks and the blocks malloc maps on their own
 * (the store's key index, once it is large, is one of those). */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* VmRSS in bytes, 0 if unreadable. */
static uint64_t vm_rss(void)
{
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib * 1024;
}

static void gid_of(uint8_t gid[16], unsigned k, unsigned r)
{
	static const uint8_t pfx[8] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0 };

	memcpy(gid, pfx, 8);
	gid[8] = 0x00;
	gid[9] = 0x02;
	gid[10] = 0xc9;
	gid[11] = 0x03;
	gid[12] = (uint8_t)(r >> 8);
	gid[13] = (uint8_t)r;
	gid[14] = (uint8_t)(k >> 8);
	gid[15] = (uint8_t)k;
}

static int gid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static uint64_t digest_of(unsigned k, unsigned rails)
{
	uint8_t gids[RAILS_MAX][16];

	for (unsigned r = 0; r < rails; r++)
		gid_of(gids[r], k, r);
	qsort(gids, rails, 16, gid_cmp);
	return rails_digest((const uint8_t(*)[16])gids, rails);
}

static void endpoint_of(struct ibres_hostrec *rec, const char *prefix, unsigned k, unsigned r)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->names[0], sizeof(rec->names[0]), "%s%u", prefix, k);
	snprintf(rec->names[1], sizeof(rec->names[1]), "%s%u-ib%u", prefix, k, r);
	rec->n_names = 2;
	/* in-process only: any address of a rail's own subnet will do */
	rec->v4[0].s_addr = htonl(0x0a000000u | r << 16 | k);
	rec->n_v4 = 1;
	rec->v6[0].s6_addr[0] = 0x20;
	rec->v6[0].s6_addr[1] = 0x01;
	rec->v6[0].s6_addr[2] = 0x0d;
	rec->v6[0].s6_addr[3] = 0xb8;
	rec->v6[0].s6_addr[5] = (uint8_t)r;
	rec->v6[0].s6_addr[14] = (uint8_t)(k >> 8);
	rec->v6[0].s6_addr[15] = (uint8_t)k;
	rec->n_v6 = 1;
	gid_of(rec->gids[0], k, r);
	rec->n_gids = 1;
	rec->lid = (uint16_t)k;
	rec->qpn = 1;
	rec->pkey = 0xffff;
	rec->ttl = 0;
}

static int put(const struct opts *o, unsigned k, unsigned r, uint64_t digest)
{
	struct ibres_hostrec rec;
	int ret;

	endpoint_of(&rec, o->prefix, k, r);
	ret = store_insert(&store_, &rec,
			   &(struct store_put){ .origin = IBRES_ORIGIN_FABRIC,
						.heard_on = 1u << r,
						.rails = digest,
						.ttl_s = o->ttl_s },
			   now_ms(), NULL);
	if (ret)
		fprintf(stderr, "rails_mem: store_insert %s%u rail %u: %s\n", o->prefix, k, r,
			strerror(-ret));
	return ret;
}

static int fill(const struct opts *o)
{
	unsigned n = 0;
	int ret;

	if (o->rail_order) {
		/* rail by rail: every host's merged record grows over the whole run */
		for (unsigned r = 0; r < o->rails; r++)
			for (unsigned k = 1; k <= o->hosts; k++) {
				if ((ret = put(o, k, r, digest_of(k, o->rails))))
					return ret;
				if (++n % o->batch == 0)
					loop_run_due(&loop_);
			}
	} else {
		for (unsigned k = 1; k <= o->hosts; k++) {
			uint64_t d = digest_of(k, o->rails);

			for (unsigned r = 0; r < o->rails; r++) {
				if ((ret = put(o, k, r, d)))
					return ret;
				if (++n % o->batch == 0)
					loop_run_due(&loop_);
			}
		}
	}
	loop_run_due(&loop_);
	return 0;
}

/* Does the generation published now hold every host (its name, and its
 * last rail's GID), as a reader sees it? */
static bool complete(const struct opts *o)
{
	struct ibres_hostrec rec;
	uint64_t size;
	struct stat st;
	bool ok = true;
	int fd = hostdir_fd(pub_, &size);
	void *m;

	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != size)
		return false;
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return false;
	for (unsigned k = 1; ok && k <= o->hosts; k++) {
		char name[64];
		uint8_t gid[16];

		snprintf(name, sizeof(name), "%s%u", o->prefix, k);
		gid_of(gid, k, o->rails - 1);
		ok = !ibdir_lookup(m, size, now_ms(), IBRES_T_NAME, name, strlen(name), &rec) &&
		     rec.n_gids == o->rails &&
		     !ibdir_lookup(m, size, now_ms(), IBRES_T_GID, gid, 16, &rec);
	}
	munmap(m, size);
	return ok;
}

static int settle(const struct opts *o, const char *phase)
{
	uint64_t deadline = now_ms() + o->settle_ms;

	for (;;) {
		loop_run_due(&loop_);
		if (complete(o))
			return 0;
		if (now_ms() >= deadline)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = SETTLE_STEP_MS * 1000000L }, NULL);
	}
	fprintf(stderr, "rails_mem: %s: the directory does not hold every host after %u ms\n",
		phase, o->settle_ms);
	return -ETIMEDOUT;
}

/* The directory's record bytes, encoded, packed and aligned as
 * hostdir_write.c writes them: the own record of each endpoint that has one (a host alone,
 * or an endpoint of a host one record cannot hold), and a host of several
 * endpoints' record (written once, by its speaker: the whole host with its
 * endpoint sets, else the names they share and every endpoint's addresses). */
struct recs {
	uint64_t own, merged, n_own, n_merged;
	uint8_t plain[IBDIR_REC_MAX], enc[IBDIR_REC_MAX];
	struct ibres_hostrec r;
	struct hostrec_eps eps;
};

static void count_host(void *arg, struct host *h)
{
	struct recs *c = arg;
	bool whole;

	if (host_cookie(h, false)) {
		host_record(h, &c->r, 0);
		c->own += (ibdir_rec_pack(c->plain, ibdir_rec_encode(&c->r, 0, c->plain), c->enc) +
			   7) &
			  ~7ull;
		c->n_own++;
	}
	if (host_cookie(h, true)) {
		host_record_eps(h, &c->r, &c->eps, &whole, 0);
		c->merged += (ibdir_rec_pack(c->plain,
					     ibdir_rec_encode_eps(&c->r, whole ? &c->eps : NULL, 0,
								  c->plain),
					     c->enc) +
			      7) &
			     ~7ull;
		c->n_merged++;
	}
}

static void print_phase(const char *name, size_t heap0, uint64_t rss0, uint64_t ms, bool last)
{
	static struct recs c;
	struct hostdir_stats ds;
	struct ibdir_header hd = { 0 };
	uint64_t size = 0, slots = 0, idx, ids, negs;
	struct stat st = { 0 };
	int fd = hostdir_fd(pub_, &size);
	size_t heap = heap_in_use();
	uint64_t rss = vm_rss();

	memset(&c, 0, sizeof(c));
	store_foreach_host(&store_, count_host, &c);
	if (fd >= 0) {
		fstat(fd, &st);
		if (pread(fd, &hd, sizeof(hd), 0) != (ssize_t)sizeof(hd))
			memset(&hd, 0, sizeof(hd));
	}
	for (unsigned t = 0; t < IBDIR_TABLES; t++)
		slots += hd.tables[t].n_slots;
	hostdir_stats(pub_, &ds);
	idx = store_index_bytes(&store_);
	ids = (uint64_t)(store_.ident_mask + 1) * sizeof(*store_.idents);
	negs = (uint64_t)(store_.neg_mask + 1) * sizeof(void *);
	printf("  \"%s\": {\"store_bytes\": %zu, \"store_index_bytes\": %llu, "
	       "\"store_index_slots\": %u, \"store_keys\": %u, \"store_ident_bytes\": %llu, "
	       "\"store_neg_bytes\": %llu, \"store_endpoints\": %llu, "
	       "\"dir_bytes\": %llu, \"dir_alloc_bytes\": %llu, \"dir_table_slots\": %llu, "
	       "\"dir_slots_name\": %u, \"dir_slots_ipv4\": %u, \"dir_slots_ipv6\": %u, "
	       "\"dir_slots_gid\": %u, \"dir_rec_area\": %u, \"dir_own_rec_bytes\": %llu, "
	       "\"dir_own_recs\": %llu, \"dir_merged_rec_bytes\": %llu, \"dir_merged_recs\": %llu, "
	       "\"dir_rebuilds\": %llu, \"dir_failures\": %llu, "
	       "\"heap_bytes\": %llu, \"rss_bytes\": %llu, \"ms\": %llu}%s\n",
	       name, store_bytes(&store_), (unsigned long long)idx, store_.n_slots,
	       store_.n_keys, (unsigned long long)ids, (unsigned long long)negs,
	       (unsigned long long)store_.stats.hosts, (unsigned long long)size,
	       (unsigned long long)st.st_blocks * 512, (unsigned long long)slots,
	       hd.tables[IBDIR_TAB_NAME].n_slots, hd.tables[IBDIR_TAB_IPV4].n_slots,
	       hd.tables[IBDIR_TAB_IPV6].n_slots, hd.tables[IBDIR_TAB_GID].n_slots, hd.rec_size,
	       (unsigned long long)c.own, (unsigned long long)c.n_own,
	       (unsigned long long)c.merged, (unsigned long long)c.n_merged,
	       (unsigned long long)ds.rebuilds, (unsigned long long)ds.failures,
	       (unsigned long long)(heap > heap0 ? heap - heap0 : 0),
	       (unsigned long long)(rss > rss0 ? rss - rss0 : 0), (unsigned long long)ms,
	       last ? "" : ",");
}

/* ns a call of @calls, from @t0 to now. */
static double ns_per(const struct timespec *t0, unsigned calls)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec)) /
	       calls;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A reader's look-up in the generation published now (ibdir_find() by name,
 * as lib/dirmap.c calls it): LOOKUP_CALLS of a host drawn at random (a hit),
 * of a name no host has (a miss, authoritative), and the floor (the same
 * loop drawing and printing the name, no look-up), LOOKUP_ROUNDS rounds of
 * each in turn; the medians, ns a call, into @ns (hit, miss, floor). */
#define LOOKUP_CALLS  200000u
#define LOOKUP_ROUNDS 5u
static int time_lookups(const struct opts *o, double ns[3])
{
	static uint64_t buf[IBDIR_REC_MAX / 8];
	double t[3][LOOKUP_ROUNDS];
	struct ibdir_geom g;
	struct ibdir_view v;
	uint64_t size;
	unsigned rng = 12345;
	volatile unsigned sink = 0;
	int fd, ret = 0;
	void *m;

	hostdir_set_scope(pub_, 0, NULL, 0, 0); /* a miss is authoritative */
	loop_run_due(&loop_);
	fd = hostdir_fd(pub_, &size);
	if (fd < 0)
		return -EIO;
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (ibdir_geom_read(m, size, &g)) {
		munmap(m, size);
		return -EBADMSG;
	}
	for (unsigned r = 0; r < LOOKUP_ROUNDS && !ret; r++)
		for (unsigned kind = 0; kind < 3 && !ret; kind++) {
			struct timespec t0;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (unsigned i = 0; i < LOOKUP_CALLS; i++) {
				char name[64];
				unsigned k;
				int len, got;

				rng = rng * 1103515245u + 12345u;
				k = (rng >> 8) % o->hosts + 1 + (kind == 1 ? o->hosts : 0);
				len = snprintf(name, sizeof(name), "%s%u", o->prefix, k);
				if (kind == 2) {
					sink += (unsigned)name[len - 1];
					continue;
				}
				got = ibdir_find(m, size, &g, now_ms(), IBRES_T_NAME, name,
						 (size_t)len, buf, sizeof(buf), &v);
				if (got != (kind ? -ENODATA : 0)) {
					fprintf(stderr, "rails_mem: look-up of %s: %d\n", name, got);
					ret = -EIO;
					break;
				}
			}
			t[kind][r] = ns_per(&t0, LOOKUP_CALLS);
		}
	munmap(m, size);
	for (unsigned kind = 0; kind < 3; kind++) {
		qsort(t[kind], LOOKUP_ROUNDS, sizeof(double), dbl_cmp);
		ns[kind] = t[kind][LOOKUP_ROUNDS / 2];
	}
	return ret;
}

/* The daemon's side: its own look-up of a host by name in the store
 * (store_lookup() counted, as a client's query makes it: the host becomes
 * the most recently used), LOOKUP_ROUNDS rounds of LOOKUP_CALLS against the
 * floor of time_lookups(), the median into ns[0]; then what eviction costs,
 * ns a host, into ns[1]: the bound lowered by a tenth of the hosts
 * (store_set_max_hosts(), the publisher told of every endpoint that goes,
 * as a reload lowering cache_size does; each host goes as a boot storm's
 * newcomer over the bound would make it go). Last: it empties a tenth of
 * the store. */
/* Median ns of a counted store look-up by a random host's name; @ring: and
 * the walk of its host's endpoints a RESOLVE makes next (host_key_shared(),
 * as resolver_on_rail() asks it). */
static int time_hits(const struct opts *o, bool ring, double *ns)
{
	double t[LOOKUP_ROUNDS];
	struct timespec t0;
	unsigned rng = 54321;
	int ret = 0;

	for (unsigned r = 0; r < LOOKUP_ROUNDS && !ret; r++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned i = 0; i < LOOKUP_CALLS; i++) {
			struct host_key k;
			struct host *h;
			char name[64];

			rng = rng * 1103515245u + 12345u;
			snprintf(name, sizeof(name), "%s%u", o->prefix, (rng >> 8) % o->hosts + 1);
			if (host_key_name(&k, name) ||
			    !(h = store_lookup(&store_, &k, now_ms(), true)) ||
			    (ring && o->rails > 1 && !host_key_shared(h, &k))) {
				fprintf(stderr, "rails_mem: store look-up of %s failed\n", name);
				ret = -EIO;
				break;
			}
		}
		t[r] = ns_per(&t0, LOOKUP_CALLS);
	}
	qsort(t, LOOKUP_ROUNDS, sizeof(double), dbl_cmp);
	*ns = t[LOOKUP_ROUNDS / 2];
	return ret;
}

static int time_store(const struct opts *o, double ns[3])
{
	struct timespec t0;
	unsigned gone;
	int ret = time_hits(o, false, &ns[0]);

	if (!ret)
		ret = time_hits(o, true, &ns[2]);
	gone = o->hosts / 10;
	if (ret || !gone)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	store_set_max_hosts(&store_, o->hosts - gone);
	ns[1] = ns_per(&t0, gone);
	return store_.stats.learned == o->hosts - gone ? 0 : -EIO;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rails_mem --hosts N --rails R [--batch B] [--order host|rail] "
		"[--ttl S] [--settle-ms MS] [--prefix P]\n"
		"  N 1..%u, R 1..%u, B endpoints between two loop turns (default %u),\n"
		"  P the host names' first part (default node, at most %u bytes)\n",
		HOSTS_MAX, RAILS_MAX, BATCH_DEFAULT, PREFIX_MAX);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {{"hosts", required_argument, NULL, 'n'},
					   {"rails", required_argument, NULL, 'r'},
					   {"batch", required_argument, NULL, 'b'},
					   {"order", required_argument, NULL, 'o'},
					   {"ttl", required_argument, NULL, 't'},
					   {"settle-ms", required_argument, NULL, 's'},
					   {"prefix", required_argument, NULL, 'p'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int c;

	*o = (struct opts){.batch = BATCH_DEFAULT,
			   .ttl_s = TTL_DEFAULT,
			   .settle_ms = SETTLE_DEFAULT,
			   .prefix = "node"};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end;
		unsigned long v = 0;

		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?')
			return -EINVAL;
		if (c == 'p') {
			if (!*optarg || strlen(optarg) > PREFIX_MAX)
				return -EINVAL;
			o->prefix = optarg;
			continue;
		}
		if (c == 'o') {
			if (strcmp(optarg, "host") && strcmp(optarg, "rail"))
				return -EINVAL;
			o->rail_order = !strcmp(optarg, "rail");
			continue;
		}
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno || *end || !*optarg || v > UINT32_MAX)
			return -EINVAL;
		switch (c) {
		case 'n': o->hosts = (unsigned)v; break;
		case 'r': o->rails = (unsigned)v; break;
		case 'b': o->batch = (unsigned)v; break;
		case 't': o->ttl_s = (unsigned)v; break;
		case 's': o->settle_ms = (unsigned)v; break;
		}
	}
	if (optind != argc || o->hosts < 1 || o->hosts > HOSTS_MAX || o->rails < 1 ||
	    o->rails > RAILS_MAX || o->batch < 1 || o->settle_ms < 1 || o->settle_ms > 600000)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	size_t heap0;
	uint64_t rss0, t0;
	int ret;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	log_open(true, LOG_LVL_WARN);
	heap0 = heap_in_use();
	rss0 = vm_rss();
	if (loop_init(&loop_) || store_init(&store_, HOSTS_MAX) ||
	    hostdir_start(&pub_, &loop_, &store_)) {
		fprintf(stderr, "rails_mem: loop, store or directory: out of memory\n");
		return 1;
	}
	ret = settle(
		&(struct opts){
			.hosts = 0, .rails = 1, .settle_ms = o.settle_ms, .prefix = o.prefix},
		"empty");
	printf("{\"hosts\": %u, \"rails\": %u, \"order\": \"%s\", \"batch\": %u,\n", o.hosts,
	       o.rails, o.rail_order ? "rail" : "host", o.batch);
	print_phase("empty", heap0, rss0, 0, false);
	t0 = now_ms();
	if (!ret)
		ret = fill(&o);
	if (!ret)
		ret = settle(&o, "grown");
	if (!ret) {
		print_phase("grown", heap0, rss0, now_ms() - t0, false);
		hostdir_stop(pub_);
		t0 = now_ms();
		ret = hostdir_start(&pub_, &loop_, &store_);
	}
	if (!ret)
		ret = settle(&o, "fresh");
	if (!ret)
		print_phase("fresh", heap0, rss0, now_ms() - t0, false);
	if (!ret) {
		/* a minute without growth, as store_sweep() sees it: the key
		 * index made compact too */
		t0 = now_ms();
		store_sweep(&store_, t0);
		store_sweep(&store_, t0 + STORE_COMPACT_AFTER_MS);
		ret = hostdir_compact(pub_);
	}
	if (!ret)
		ret = settle(&o, "compact");
	if (!ret)
		print_phase("compact", heap0, rss0, now_ms() - t0, false);
	if (!ret) {
		double ns[3], sns[3] = {0, 0, 0};

		ret = time_lookups(&o, ns);
		if (!ret)
			ret = time_store(&o, sns);
		if (!ret)
			printf("  \"lookup_hit_ns\": %.1f, \"lookup_miss_ns\": %.1f, "
			       "\"lookup_floor_ns\": %.1f, \"store_hit_ns\": %.1f, "
			       "\"store_hit_ring_ns\": %.1f, \"store_evict_ns\": %.1f\n",
			       ns[0], ns[1], ns[2], sns[0], sns[2], sns[1]);
	}
	printf("}\n");
	hostdir_stop(pub_);
	store_fini(&store_);
	loop_fini(&loop_);
	return ret ? 1 : 0;
}
