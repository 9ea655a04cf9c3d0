// SPDX-License-Identifier: MIT
/*
 * dir_probe: the client side of bench/directory-bench, through libibres's
 * own request code (lib/conn.c) on one persistent connection.
 *
 *   dir_probe verify SOCKET N DOMAIN [RAILS]
 *	HOST lookup (cache only: never a fabric query) of node1 .. nodeN by
 *	name; a host counts as found when its record is the one the benchmark
 *	made (canonical name, FQDN alias nodeK.DOMAIN, IPv4 of rail 0 first,
 *	LID), as partial when it is host K's but lacks rail 0 (every address
 *	one of host K's RAILS rails: an endpoint not heard yet). Prints
 *	"found F wrong W missing M errors E seconds S partial P".
 *   dir_probe latency SOCKET N CALLS SEED host|resolve
 *	CALLS timed lookups, after CALLS/10 warm-up ones, each of a host drawn
 *	at random from node1 .. nodeN: "host" is libibres's HOST query by name
 *	(what libnss_ib sends), "resolve" the ibacm protocol's RESOLVE by name
 *	(what librdmacm sends; the answer carries a path record). Every answer
 *	is checked. Prints "mean_ns p50_ns p99_ns failures".
 *   dir_probe watch SOCKET N SEED MAX_SECONDS [RATE [RAILS]]
 *	At RATE hosts a second (default 1000; 0: as fast as it goes), from now until "stop" on stdin (or EOF, or MAX_SECONDS), looks up hosts
 *	drawn at random from node1 .. nodeN by name, each twice: first through
 *	the shared directory, then through the daemon's socket (libibres's HOST query as libnss_ib sends it, not cache
 *	only; the shared directory off on that handle) and through the shared
 *	directory alone (ibc_dir_query, lib/dirmap.c, what the NSS module reads
 *	first). Every one of them is live: an answer "not found" (ENODATA) is a
 *	false NOT FOUND. Prints one JSON object: lookups, found, not found,
 *	wrong records, other errors (ETIMEDOUT: TRYAGAIN, not NOTFOUND) by
 *	socket; hits, not found and "ask the daemon" by directory; the seconds
 *	(from the start) of the first and last false NOT FOUND; partial
 *	answers (as verify's) apart from wrong ones.
 *
 * Host K has the addresses test/fabric/emulate gives node K (198.18.X.Y,
 * Y in 1..254) and LID K; with RAILS R > 1 (bench/dir_gen.c --rails) its
 * rail r >= 1 has 198.19.(32r + X).Y too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "hostrec.h"
#include "ibres.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned n_rails = 1;

/* Host K's IPv4 address on rail @r (bench/dir_gen.c's peer_v4()). */
static uint32_t rail_v4(unsigned k, unsigned r)
{
	unsigned x = (k - 1) / 254, y = (k - 1) % 254 + 1;

	return htonl(r ? 0xc6130000u | (32 * r + x) << 8 | y : 0xc6120000u | x << 8 | y);
}

static uint32_t peer_v4(unsigned k)
{
	return rail_v4(k, 0);
}

/* Is @a one of host K's addresses, on any rail? */
static int host_v4(unsigned k, uint32_t a)
{
	for (unsigned r = 0; r < n_rails; r++)
		if (a == rail_v4(k, r))
			return 1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 1 the right record, 2 host K's without rail 0 (an endpoint not heard yet:
 * every address one of its rails'), 0 another one, negative errno when not
 * found. */
static int host_ok(struct ibres *h, unsigned k, const char *domain, uint32_t flags)
{
	struct ibres_hostrec rec;
	char name[64], fqdn[300];
	int ret;

	snprintf(name, sizeof(name), "node%u", k);
	ret = ibc_host_query(h, IBRES_T_NAME, name, strlen(name), flags, &rec, NULL);
	if (ret)
		return ret;
	if (strcmp(rec.names[0], name) || !rec.n_v4 || rec.lid != k)
		return 0;
	for (unsigned i = 0; i < rec.n_v4; i++)
		if (!host_v4(k, rec.v4[i].s_addr))
			return 0;
	if (domain) {
		snprintf(fqdn, sizeof(fqdn), "node%u.%s", k, domain);
		if (!hostrec_has_name(&rec, fqdn))
			return 0;
	}
	return rec.v4[0].s_addr == peer_v4(k) ? 1 : 2;
}

static int resolve_ok(struct ibres *h, unsigned k)
{
	struct ibres_ep_entry e;
	struct ibc_route rt;
	int ret;

	memset(&e, 0, sizeof(e));
	e.flags = IBRES_EP_FLAG_DEST;
	e.type = IBRES_EP_TYPE_NAME;
	snprintf(e.info.name, sizeof(e.info.name), "node%u", k);
	ret = ibc_resolve(h, &e, 1, &rt, NULL);
	if (ret)
		return ret;
	/* the path leads to host K's LID */
	ret = rt.n_paths && ntohs(rt.paths[0].path.dlid) == k;
	free(rt.paths);
	return ret;
}

static int verify(struct ibres *h, unsigned n, const char *domain)
{
	unsigned found = 0, wrong = 0, missing = 0, errors = 0, partial = 0;
	uint64_t t0 = now_ns();

	for (unsigned k = 1; k <= n; k++) {
		int r = host_ok(h, k, domain, IBRES_HOST_CACHE_ONLY);

		if (r == 1)
			found++;
		else if (r == 2)
			partial++;
		else if (r == 0)
			wrong++;
		else if (r == -ENODATA)
			missing++;
		else
			errors++;
	}
	printf("found %u wrong %u missing %u errors %u seconds %.3f partial %u\n", found, wrong,
	       missing, errors, (now_ns() - t0) / 1e9, partial);
	return 0;
}

static int latency(struct ibres *h, unsigned n, long calls, unsigned seed, int resolve)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL ^ seed, *t, sum = 0;
	long fails = 0, warm = calls / 10 + 1, done = 0;

	t = calloc((size_t)calls, sizeof(*t));
	if (!t)
		return 1;
	for (long i = -warm; i < calls; i++) {
		unsigned k;
		uint64_t t0, dt;
		int ok;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		k = (unsigned)((x * 0x2545F4914F6CDD1DULL) >> 33) % n + 1;
		t0 = now_ns();
		ok = resolve ? resolve_ok(h, k) : host_ok(h, k, NULL, 0);
		dt = now_ns() - t0;
		if (ok != 1) {
			fails++;
			continue;
		}
		if (i >= 0) {
			t[done++] = dt;
			sum += dt;
		}
	}
	if (!done) {
		printf("0 0 0 %ld\n", fails);
		return 1;
	}
	qsort(t, (size_t)done, sizeof(*t), cmp_u64);
	printf("%llu %llu %llu %ld\n", (unsigned long long)(sum / (uint64_t)done),
	       (unsigned long long)t[done / 2], (unsigned long long)t[done * 99 / 100], fails);
	free(t);
	return 0;
}

struct tally {
	unsigned long n, found, notfound, wrong, other, partial;
	double first_nf, last_nf; /* seconds from the start; -1 none */
};

static void nf_at(struct tally *t, double s)
{
	t->notfound++;
	if (t->first_nf < 0)
		t->first_nf = s;
	t->last_nf = s;
}

static void tally_json(const char *key, const struct tally *t, const char *other)
{
	printf("\"%s\": {\"lookups\": %lu, \"found\": %lu, \"notfound\": %lu, \"wrong\": %lu, "
	       "\"partial\": %lu, \"%s\": %lu, \"first_notfound_s\": %.3f, \"last_notfound_s\": %.3f}",
	       key, t->n, t->found, t->notfound, t->wrong, t->partial, other, t->other, t->first_nf,
	       t->last_nf);
}

static int watch(const char *sock, unsigned n, unsigned seed, double max_s, double rate)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL ^ seed, t0 = now_ns();
	struct tally ts = {.first_nf = -1, .last_nf = -1}, td = {.first_nf = -1, .last_nf = -1};
	struct ibres *hs, *hd;
	unsigned long last_errno = 0;
	char buf[64];

	if (ibres_open(&hs, sock, 10000))
		return 2;
	if (ibres_open(&hd, sock, 10000)) {
		ibres_close(hs);
		return 2;
	}
	ibc_dir_disable(hs); /* this handle asks the daemon, every time */
	for (;;) {
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		struct ibres_hostrec rec;
		char name[32];
		unsigned k;
		double s = (now_ns() - t0) / 1e9;
		int r;

		if (s > max_s)
			break;
		if (rate > 0 && ts.n > s * rate) {
			struct timespec ns = {0, (long)((ts.n - s * rate) / rate * 1e9)};

			if (ns.tv_nsec > 999999999)
				ns.tv_nsec = 999999999;
			nanosleep(&ns, NULL);
			continue;
		}
		if (poll(&pfd, 1, 0) > 0) {
			if (!fgets(buf, sizeof(buf), stdin) || !strncmp(buf, "stop", 4))
				break;
		}
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		k = (unsigned)((x * 0x2545F4914F6CDD1DULL) >> 33) % n + 1;
		/* the directory first, as libnss_ib reads it: the socket's lookup
		 * may teach the daemon the host */
		snprintf(name, sizeof(name), "node%u", k);
		td.n++;
		r = ibc_dir_query(hd, IBRES_T_NAME, name, strlen(name), &rec);
		if (r == 0 && !strcmp(rec.names[0], name))
			td.found++;
		else if (r == 0)
			td.wrong++;
		else if (r == -ENODATA)
			nf_at(&td, (now_ns() - t0) / 1e9);
		else
			td.other++;
		ts.n++;
		r = host_ok(hs, k, NULL, 0);
		if (r == 1)
			ts.found++;
		else if (r == 2)
			ts.partial++;
		else if (r == 0)
			ts.wrong++;
		else if (r == -ENODATA)
			nf_at(&ts, s);
		else {
			ts.other++;
			last_errno = (unsigned long)-r;
		}
	}
	printf("{\"seconds\": %.3f, ", (now_ns() - t0) / 1e9);
	tally_json("socket", &ts, "other_errors");
	printf(", \"socket_last_errno\": %lu, ", last_errno);
	tally_json("directory", &td, "ask_daemon");
	printf("}\n");
	fflush(stdout);
	ibres_close(hs);
	ibres_close(hd);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibres *h;
	unsigned n;
	int ret;

	if (argc < 5) {
		fprintf(stderr, "usage: dir_probe verify SOCKET N DOMAIN [RAILS]\n"
				"       dir_probe latency SOCKET N CALLS SEED host|resolve\n"
				"       dir_probe watch SOCKET N SEED MAX_SECONDS [RATE [RAILS]]\n");
		return 2;
	}
	n = (unsigned)strtoul(argv[3], NULL, 0);
	if (!strcmp(argv[1], "watch") && argc == 8)
		n_rails = (unsigned)strtoul(argv[7], NULL, 0);
	if (!strcmp(argv[1], "verify") && argc == 6)
		n_rails = (unsigned)strtoul(argv[5], NULL, 0);
	if (!n_rails || n_rails > 8)
		return 2;
	if (!strcmp(argv[1], "watch") && argc >= 6 && argc <= 8 && n)
		return watch(argv[2], n, (unsigned)strtoul(argv[4], NULL, 0), atof(argv[5]),
			     argc >= 7 ? atof(argv[6]) : 1000);
	if (!n || ibres_open(&h, argv[2], 10000))
		return 2;
	if (!strcmp(argv[1], "verify"))
		ret = verify(h, n, argv[4]);
	else if (!strcmp(argv[1], "latency") && argc == 7)
		ret = latency(h, n, atol(argv[4]), (unsigned)strtoul(argv[5], NULL, 0),
			      !strcmp(argv[6], "resolve"));
	else
		ret = 2;
	ibres_close(h);
	return ret;
}
