// SPDX-License-Identifier: MIT
/*
 * ibacm's configuration into ibresd's. ibacm reads "name value" lines from
 * ibacm_opts.cfg (every option has a default), "address device port pkey"
 * lines from ibacm_addr.cfg (its endpoints; with none it serves every IB
 * port) and, with addr_preload acm_hosts, "address GID" lines from the hosts
 * data file. Each ibacm option has one row below: the ibresd key it becomes,
 * or why it has none; the output says which for every option.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibacm_import.h"
#include "ibenum.h"

#define LINE_MAX_LEN	1024    /* ibacm's own buffers are smaller */
#define LINES_MAX	1000000 /* per file: bounds a runaway or binary file */
#define VALUE_MAX	256
#define EP_MAX		64
#define EP_ADDRS_MAX	32
#define HOSTS_MAX	200000
#define HOST_KEYS_MAX	32 /* names and addresses of one GID */

enum sect { S_DAEMON, S_RESOLVE, S_ENDPOINT, S_COUNT };

struct imp;

struct opt {
	const char *name;
	const char *def; /* ibacm's default */
	enum sect sect;
	void (*map)(struct imp *m, FILE *f, const char *v);
	const char *why; /* no equivalent: why (map == NULL) */
};

struct endpoint {
	char device[64];
	unsigned port;
	unsigned pkey;
	unsigned n_addrs;
	char *addrs[EP_ADDRS_MAX];
};

struct hostent_acm {
	uint8_t gid[16];
	char *addr;
};

struct imp {
	const struct ibacm_import_args *a;
	FILE *err;
	char values[32][VALUE_MAX]; /* by index of opts[] */
	bool seen[32];
	FILE *s[S_COUNT];
	char *sbuf[S_COUNT];
	size_t slen[S_COUNT];
	unsigned mtu;     /* bytes, for the endpoints' group */
	char rate[16];    /* Gb/s text */
	bool ips_in_addr; /* support_ips_in_addr_cfg */
	bool preload;     /* addr_preload acm_hosts */
	bool cur_default; /* the option being noted is not in the file */
	struct endpoint ep[EP_MAX];
	unsigned n_ep;
};

/* "# ibacm NAME VALUE: what it became", saying when the value is ibacm's
 * default rather than the file's. */
static void note(const struct imp *m, FILE *f, const char *name, const char *v, const char *text)
{
	fprintf(f, "# ibacm %s %s%s: %s\n", name, v, m->cur_default ? " (default)" : "", text);
}

static bool parse_long(const char *v, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 0);
	return !errno && end != v && !*end && *out >= min && *out <= max;
}

static void map_log_level(struct imp *m, FILE *f, const char *v)
{
	static const char *const levels[] = { "warning", "info", "debug" };
	long n;

	(void)m;
	if (!parse_long(v, 0, 2, &n)) {
		note(m, f, "log_level", v, "not 0, 1 or 2; ibresd's default kept");
		return;
	}
	note(m, f, "log_level", v, "becomes log_level (0 errors, 1 verbose, 2 operations)");
	fprintf(f, "log_level = %s\n", levels[n]);
}

/* ibacm gave librdmacm a path for an address, so AF_IB entries first; ibresd does not by
 * default (nss-ib(8), RDMA_CM AND AF_IB): say so where the user reads the result. */
static void print_acm_socket(FILE *f)
{
	fprintf(f, "acm_socket = /run/ibacm-unix.sock\nacm_link = yes\n"
		   "# ibacm answered librdmacm's lookups by IP address with a path (AF_IB entries\n"
		   "# first); ibresd answers with the source address: \"yes\" for ibacm's answer,\n"
		   "# see RDMA_CM AND AF_IB in nss-ib(8)\n"
		   "acm_af_ib = no\n");
}

static void map_server_mode(struct imp *m, FILE *f, const char *v)
{
	(void)m;
	if (!strcmp(v, "unix")) {
		note(m, f, "server_mode", v,
		     "ibresd serves ibacm's clients (librdmacm, ib_acme) on ibacm's socket; "
		     "use ibresd-acm.socket instead of ibacm.socket");
		print_acm_socket(f);
		return;
	}
	note(m, f, "server_mode", v,
	     "no equivalent: ibresd serves clients on Unix sockets only (no TCP server_port); "
	     "librdmacm reaches it on ibacm's Unix socket");
	print_acm_socket(f);
}

static void map_timeout(struct imp *m, FILE *f, const char *v)
{
	long n;

	(void)m;
	if (!parse_long(v, 0, 1000000, &n)) {
		note(m, f, "timeout", v, "not a number of milliseconds; ibresd's default kept");
		return;
	}
	note(m, f, "timeout", v,
	     "becomes timeout, the wait per attempt (ibacm adds the subnet timeout)");
	fprintf(f, "timeout = %ldms\n", n < 10 ? 10 : n > 60000 ? 60000 : n);
}

static void map_retries(struct imp *m, FILE *f, const char *v)
{
	long n;

	(void)m;
	if (!parse_long(v, 0, 1000, &n)) {
		note(m, f, "retries", v, "not a number; ibresd's default kept");
		return;
	}
	note(m, f, "retries", v, n > 10 ? "becomes retries, at most 10" : "becomes retries");
	fprintf(f, "retries = %ld\n", n > 10 ? 10 : n);
}

/* ibacm's minutes, -1 for never; ibresd's TTLs are bounded by 30 days. */
static void map_ttl(const struct imp *m, FILE *f, const char *name, const char *key,
		    const char *v)
{
	long n;

	if (!parse_long(v, -1, 100000000, &n) || n == 0) {
		note(m, f, name, v, "not -1 or a number of minutes; ibresd's default kept");
		return;
	}
	if (n < 0 || n > 30 * 24 * 60) {
		note(m, f, name, v, "never expires in ibacm; ibresd keeps entries at most 30 days "
				 "(announcements refresh them)");
		fprintf(f, "%s = 30d\n", key);
		return;
	}
	note(m, f, name, v, "becomes the time to live, in minutes");
	fprintf(f, "%s = %ldm\n", key, n);
}

static void map_addr_timeout(struct imp *m, FILE *f, const char *v)
{
	map_ttl(m, f, "addr_timeout", "addr_ttl", v);
}

static void map_route_timeout(struct imp *m, FILE *f, const char *v)
{
	map_ttl(m, f, "route_timeout", "route_ttl", v);
}

static void map_route_prot(struct imp *m, FILE *f, const char *v)
{
	(void)m;
	if (!strcmp(v, "sa")) {
		note(m, f, "route_prot", v, "the same: path records from the SA, cached");
		fprintf(f, "route_prot = sa\n");
	} else if (!strcmp(v, "acm")) {
		note(m, f, "route_prot", v, "becomes mcast: paths built from the multicast group");
		fprintf(f, "route_prot = mcast\n");
	} else {
		note(m, f, "route_prot", v, "unknown to ibacm; ibresd's default kept");
	}
}

static void map_sa_depth(struct imp *m, FILE *f, const char *v)
{
	long n;

	(void)m;
	if (!parse_long(v, 1, 100000, &n)) {
		note(m, f, "sa_depth", v, "not a number; ibresd's default kept");
		return;
	}
	note(m, f, "sa_depth", v, "becomes sa_window, SA queries in flight per port (1..64)");
	fprintf(f, "sa_window = %ld\n", n > 64 ? 64 : n);
}

static void map_addr_prot(struct imp *m, FILE *f, const char *v)
{
	(void)m;
	note(m, f, "addr_prot", v,
	     strcmp(v, "acm") ? "unknown to ibacm; ibresd uses its fabric protocol"
			      : "ibresd resolves addresses with its own multicast protocol "
				"(transport ib below), ibacm's acm protocol generalised");
}

static void map_min_mtu(struct imp *m, FILE *f, const char *v)
{
	long n;

	if (!parse_long(v, 0, 4096, &n) || ib_mtu_from_bytes((unsigned)n) < 0) {
		note(m, f, "min_mtu", v, "not 256..4096 bytes; the group keeps mtu=2048");
		return;
	}
	m->mtu = (unsigned)n;
	note(m, f, "min_mtu", v, "becomes the mtu of each endpoint's multicast group");
}

static void map_min_rate(struct imp *m, FILE *f, const char *v)
{
	if (ib_rate_from_gbps(v) < 0) {
		note(m, f, "min_rate", v, "not a rate in Gb/s; the group keeps rate=10");
		return;
	}
	snprintf(m->rate, sizeof(m->rate), "%s", v);
	note(m, f, "min_rate", v, "becomes the rate of each endpoint's multicast group");
}

static void map_ips_in_addr(struct imp *m, FILE *f, const char *v)
{
	long n;

	m->ips_in_addr = parse_long(v, 0, 1, &n) && n;
	note(m, f, "support_ips_in_addr_cfg", v,
	     m->ips_in_addr ? "IP addresses in ibacm_addr.cfg become endpoint addresses"
			    : "IP addresses in ibacm_addr.cfg are ignored, as by ibacm");
}

static void map_addr_preload(struct imp *m, FILE *f, const char *v)
{
	m->preload = !strcmp(v, "acm_hosts");
	if (!m->preload && strcmp(v, "none"))
		note(m, f, "addr_preload", v, "unknown to ibacm; nothing preloaded");
	else
		note(m, f, "addr_preload", v,
		     m->preload ? "the hosts data file becomes ibresd's hosts_file (see below)"
				: "nothing preloaded");
}

static void map_addr_data_file(struct imp *m, FILE *f, const char *v)
{
	if (!m->preload) {
		note(m, f, "addr_data_file", v, "not read: addr_preload is not acm_hosts");
		return;
	}
	if (!m->a->hosts_out) {
		note(m, f, "addr_data_file", v,
		     "not converted: run again with --hosts-out FILE to write ibresd's hosts "
		     "file and name it here");
		fprintf(f, "hosts_file = none\n");
		return;
	}
	note(m, f, "addr_data_file", v, "converted into hosts_file");
	fprintf(f, "hosts_file = %s\n", m->a->hosts_out);
}

/* Index order matters: addr_preload before addr_data_file. */
static const struct opt opts[] = {
	{ "log_file", "/var/log/ibacm.log", S_DAEMON, NULL,
	  "no equivalent: ibresd logs to standard error, which systemd sends to the journal" },
	{ "log_level", "0", S_DAEMON, map_log_level, NULL },
	{ "umad_debug_level", "0", S_DAEMON, NULL,
	  "no equivalent: libibumad's own debug output is not exposed" },
	{ "lock_file", "/run/ibacm.pid", S_DAEMON, NULL,
	  "no equivalent: systemd and the sockets ensure a single instance" },
	{ "server_port", "6125", S_DAEMON, NULL,
	  "no equivalent: no TCP server; clients use Unix sockets" },
	{ "server_mode", "unix", S_DAEMON, map_server_mode, NULL },
	{ "acme_plus_kernel_only", "no", S_DAEMON, NULL,
	  "no equivalent: every local user may query; changes need root (SO_PEERCRED)" },
	{ "addr_prot", "acm", S_RESOLVE, map_addr_prot, NULL },
	{ "addr_timeout", "1440", S_RESOLVE, map_addr_timeout, NULL },
	{ "route_prot", "sa", S_RESOLVE, map_route_prot, NULL },
	{ "route_timeout", "-1", S_RESOLVE, map_route_timeout, NULL },
	{ "loopback_prot", "local", S_RESOLVE, NULL,
	  "no equivalent: ibresd always answers for its own endpoints locally" },
	{ "timeout", "2000", S_RESOLVE, map_timeout, NULL },
	{ "retries", "2", S_RESOLVE, map_retries, NULL },
	{ "resolve_depth", "1", S_RESOLVE, NULL,
	  "no equivalent: queries are not queued; one query per key, later lookups join it" },
	{ "sa_depth", "1", S_RESOLVE, map_sa_depth, NULL },
	{ "send_depth", "1", S_RESOLVE, NULL,
	  "no equivalent: the transport sizes its send queue itself" },
	{ "recv_depth", "1024", S_RESOLVE, NULL,
	  "not carried over: each ib endpoint's recv_depth (16384 by default) sizes its UD "
	  "QP's receive queue for a whole cluster booting at once" },
	{ "route_preload", "none", S_RESOLVE, NULL,
	  "no equivalent: paths come from the SA once and are cached, or are built from the "
	  "multicast group; an OpenSM path dump is not read" },
	{ "route_data_file", "/etc/rdma/ibacm_route.data", S_RESOLVE, NULL,
	  "no equivalent: see route_preload" },
	{ "addr_preload", "none", S_RESOLVE, map_addr_preload, NULL },
	{ "addr_data_file", "/etc/rdma/ibacm_hosts.data", S_RESOLVE, map_addr_data_file, NULL },
	{ "provider_lib_path", "/usr/lib/ibacm", S_RESOLVE, NULL,
	  "no equivalent: ibresd has no provider plug-ins" },
	{ "provider", "ibacmp default", S_RESOLVE, NULL,
	  "no equivalent: one resolver protocol for every subnet" },
	{ "min_mtu", "2048", S_ENDPOINT, map_min_mtu, NULL },
	{ "min_rate", "10", S_ENDPOINT, map_min_rate, NULL },
	{ "support_ips_in_addr_cfg", "0", S_ENDPOINT, map_ips_in_addr, NULL },
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(N_OPTS <= 32, "values[] holds every option");

/* One line of at most LINE_MAX_LEN bytes, trimmed; 0 at the end, <0 on error. */
static int read_line(FILE *f, char *buf, unsigned *lineno, FILE *err, const char *path)
{
	size_t n;

	if (!fgets(buf, LINE_MAX_LEN, f))
		return ferror(f) ? -EIO : 0;
	if (++*lineno > LINES_MAX) {
		fprintf(err, "ibresctl: %s: more than %u lines\n", path, LINES_MAX);
		return -EFBIG;
	}
	n = strlen(buf);
	if (n == LINE_MAX_LEN - 1 && buf[n - 1] != '\n' && !feof(f)) {
		fprintf(err, "ibresctl: %s:%u: line longer than %d bytes\n", path, *lineno,
			LINE_MAX_LEN - 2);
		return -EINVAL;
	}
	return 1;
}

/* The words of @buf (space-separated, up to a '#'), at most @max. */
static int words(char *buf, char **w, int max)
{
	int n = 0;
	char *save = NULL, *t;

	buf[strcspn(buf, "#\r\n")] = '\0';
	for (t = strtok_r(buf, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	return t ? -1 : n;
}

static int read_opts(struct imp *m, bool *found)
{
	char path[4096], line[LINE_MAX_LEN], *w[3];
	unsigned lineno = 0;
	FILE *f;
	int ret, n;
	size_t i;

	snprintf(path, sizeof(path), "%s/ibacm_opts.cfg", m->a->dir);
	f = fopen(path, "re");
	*found = f != NULL;
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((ret = read_line(f, line, &lineno, m->err, path)) > 0) {
		n = words(line, w, 3);
		if (n == 0)
			continue;
		/* ibacm reads "%s%s": a third word is ignored there too */
		for (i = 0; i < N_OPTS; i++)
			if (!strcmp(w[0], opts[i].name))
				break;
		if (i == N_OPTS) {
			fprintf(m->s[S_DAEMON], "# ibacm %s (line %u): unknown to ibacm, ignored\n",
				w[0], lineno);
			continue;
		}
		if (n < 2)
			continue; /* ibacm keeps the default */
		snprintf(m->values[i], VALUE_MAX, "%s", w[1]);
		m->seen[i] = true;
	}
	fclose(f);
	return ret;
}

static const char *opt_value(const struct imp *m, const char *name)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (!strcmp(opts[i].name, name))
			return m->seen[i] ? m->values[i] : opts[i].def;
	return "";
}

static struct endpoint *endpoint_of(struct imp *m, const char *dev, unsigned port, unsigned pkey)
{
	struct endpoint *e;

	for (unsigned i = 0; i < m->n_ep; i++) {
		e = &m->ep[i];
		if (!strcmp(e->device, dev) && e->port == port && e->pkey == pkey)
			return e;
	}
	if (m->n_ep == EP_MAX)
		return NULL;
	e = &m->ep[m->n_ep++];
	snprintf(e->device, sizeof(e->device), "%s", dev);
	e->port = port;
	e->pkey = pkey;
	return e;
}

static bool is_ip(const char *s)
{
	uint8_t b[16];

	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* ibacm_addr.cfg: "address device port pkey|default". */
static int read_addrs(struct imp *m, FILE *notes)
{
	char path[4096], line[LINE_MAX_LEN], *w[5];
	unsigned lineno = 0;
	struct endpoint *e;
	long port, pkey;
	FILE *f;
	int ret, n;

	snprintf(path, sizeof(path), "%s/ibacm_addr.cfg", m->a->dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((ret = read_line(f, line, &lineno, m->err, path)) > 0) {
		n = words(line, w, 5);
		if (n == 0)
			continue;
		if (n != 4 || strlen(w[1]) >= sizeof(e->device) || !parse_long(w[2], 1, 254, &port) ||
		    (strcmp(w[3], "default") && !parse_long(w[3], 0, 0xffff, &pkey))) {
			fprintf(notes, "# ibacm_addr.cfg line %u: not 'address device port pkey', "
				       "skipped as by ibacm\n", lineno);
			continue;
		}
		if (!strcmp(w[3], "default"))
			pkey = 0xffff;
		if (is_ip(w[0]) && !m->ips_in_addr) {
			fprintf(notes, "# ibacm_addr.cfg line %u: address %s ignored "
				       "(support_ips_in_addr_cfg is 0)\n", lineno, w[0]);
			continue;
		}
		e = endpoint_of(m, w[1], (unsigned)port, (unsigned)pkey);
		if (!e || e->n_addrs == EP_ADDRS_MAX) {
			fprintf(notes, "# ibacm_addr.cfg line %u: more than %d endpoints or %d "
				       "addresses on one, skipped\n", lineno, EP_MAX, EP_ADDRS_MAX);
			continue;
		}
		e->addrs[e->n_addrs] = strdup(w[0]);
		if (!e->addrs[e->n_addrs]) {
			ret = -ENOMEM;
			break;
		}
		e->n_addrs++;
	}
	fclose(f);
	return ret;
}

/* With no endpoint in ibacm_addr.cfg ibacm serves every IB port: so do we. */
static void find_ports(struct imp *m)
{
	char path[4096], ll[64];
	struct dirent *d, *p;
	DIR *dd, *pd;
	FILE *f;
	long port;

	snprintf(path, sizeof(path), "%s/class/infiniband", m->a->sysfs);
	dd = opendir(path);
	if (!dd)
		return;
	while ((d = readdir(dd)) && m->n_ep < EP_MAX) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= sizeof(m->ep[0].device))
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", m->a->sysfs,
			 d->d_name);
		pd = opendir(path);
		if (!pd)
			continue;
		while ((p = readdir(pd)) && m->n_ep < EP_MAX) {
			if (!parse_long(p->d_name, 1, 254, &port))
				continue;
			snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%ld/link_layer",
				 m->a->sysfs, d->d_name, port);
			f = fopen(path, "re");
			if (!f)
				continue;
			if (fgets(ll, sizeof(ll), f) && !strncmp(ll, "InfiniBand", 10))
				endpoint_of(m, d->d_name, (unsigned)port, 0xffff);
			fclose(f);
		}
		closedir(pd);
	}
	closedir(dd);
}

static void write_endpoints(struct imp *m, FILE *out, bool from_sysfs)
{
	for (unsigned i = 0; i < m->n_ep; i++) {
		const struct endpoint *e = &m->ep[i];

		fprintf(out, "\n[endpoint %s-%u", e->device, e->port);
		if (e->pkey != 0xffff)
			fprintf(out, "-%04x", e->pkey);
		fprintf(out, "]\n");
		if (from_sysfs) {
			if (i == 0)
				fprintf(out, "name = %s\n", m->a->hostname);
			else
				fprintf(out, "name = %s-%s-%u\n", m->a->hostname, e->device, e->port);
		}
		for (unsigned k = 0; k < e->n_addrs; k++)
			fprintf(out, "%s = %s\n", is_ip(e->addrs[k]) ? "address" : "name",
				e->addrs[k]);
		fprintf(out, "device = %s\nport_num = %u\npkey = 0x%04x\ntransport = ib\n"
			     "group = 239.255.73.1 mtu=%u rate=%s\n",
			e->device, e->port, e->pkey, m->mtu, m->rate);
	}
	if (!m->n_ep)
		fprintf(out, "\n# ibacm_addr.cfg lists no endpoint and %s/class/infiniband has no\n"
			     "# InfiniBand port: fill one in by hand, for example\n"
			     "#[endpoint mlx5_0-1]\n#name = %s\n#device = mlx5_0\n#port_num = 1\n"
			     "#transport = ib\n#group = 239.255.73.1 mtu=%u rate=%s\n",
			m->a->sysfs, m->a->hostname, m->mtu, m->rate);
}

static int cmp_host(const void *a, const void *b)
{
	const struct hostent_acm *x = a, *y = b;
	int c = memcmp(x->gid, y->gid, 16);

	return c ? c : strcmp(x->addr, y->addr);
}

/* ibacm's hosts data, "address GID" lines, one host per GID. ibacm stores
 * no LID there; ibresd's hosts file needs one, so hosts are written as
 * commented lines to complete (the fabric protocol finds them meanwhile). */
static int write_hosts(struct imp *m, const char *data_path)
{
	char line[LINE_MAX_LEN], *w[3], gidtxt[INET6_ADDRSTRLEN];
	struct hostent_acm *h = NULL;
	unsigned lineno = 0;
	size_t n = 0, cap = 0, i, j, hosts = 0;
	FILE *f, *out = NULL;
	int ret, k;

	f = fopen(data_path, "re");
	if (!f) {
		ret = -errno;
		fprintf(m->err, "ibresctl: config import-ibacm: %s: %s\n", data_path,
			strerror(errno));
		return ret;
	}
	while ((ret = read_line(f, line, &lineno, m->err, data_path)) > 0) {
		uint8_t gid[16];

		k = words(line, w, 3);
		if (k == 0)
			continue;
		if (k != 2 || inet_pton(AF_INET6, w[1], gid) != 1) {
			fprintf(m->err, "ibresctl: %s:%u: not 'address GID', skipped\n", data_path,
				lineno);
			continue;
		}
		if (n == HOSTS_MAX) {
			fprintf(m->err, "ibresctl: %s: more than %d entries\n", data_path,
				HOSTS_MAX);
			ret = -EFBIG;
			goto out;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct hostent_acm *nh = realloc(h, ncap * sizeof(*h));

			if (!nh) {
				ret = -ENOMEM;
				goto out;
			}
			h = nh;
			cap = ncap;
		}
		memcpy(h[n].gid, gid, 16);
		h[n].addr = strdup(w[0]);
		if (!h[n].addr) {
			ret = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (ret < 0)
		goto out;
	if (n)
		qsort(h, n, sizeof(*h), cmp_host);
	out = fopen(m->a->hosts_out, "we");
	if (!out) {
		ret = -errno;
		fprintf(m->err, "ibresctl: config import-ibacm: %s: %s\n", m->a->hosts_out,
			strerror(errno));
		goto out;
	}
	fprintf(out, "# ibresd hosts file (ibresd.conf(5), HOSTS FILE) imported from ibacm's\n"
		     "# %s by ibresctl config import-ibacm.\n"
		     "# ibacm maps addresses to GIDs only; ibresd's hosts need a LID and a\n"
		     "# host name too. Each host below is commented out until you replace\n"
		     "# LID by its LID (saquery -N, ibhosts) and give it a name first; until\n"
		     "# then ibresd finds these hosts with its fabric protocol.\n"
		     "#   GID  LID  NAME [NAME | ADDRESS ...]\n", data_path);
	for (i = 0; i < n; i = j) {
		bool named = false;

		for (j = i; j < n && !memcmp(h[j].gid, h[i].gid, 16); j++)
			named |= !is_ip(h[j].addr);
		inet_ntop(AF_INET6, h[i].gid, gidtxt, sizeof(gidtxt));
		fprintf(out, "#%s LID%s", gidtxt, named ? "" : " NAME");
		/* names first: the first becomes the canonical name */
		for (size_t x = i; x < j && x - i < HOST_KEYS_MAX; x++)
			if (!is_ip(h[x].addr))
				fprintf(out, " %s", h[x].addr);
		for (size_t x = i; x < j && x - i < HOST_KEYS_MAX; x++)
			if (is_ip(h[x].addr))
				fprintf(out, " %s", h[x].addr);
		fputc('\n', out);
		hosts++;
	}
	if (fclose(out)) {
		ret = -errno;
		fprintf(m->err, "ibresctl: %s: %s\n", m->a->hosts_out, strerror(errno));
		goto out;
	}
	fprintf(m->err, "ibresctl: config import-ibacm: %zu host%s from %s written to %s as "
			"lines to complete with their LIDs\n", hosts, hosts == 1 ? "" : "s",
		data_path, m->a->hosts_out);
	ret = 0;
out:
	for (i = 0; h && i < n; i++)
		free(h[i].addr);
	free(h);
	fclose(f);
	return ret;
}

int ibacm_import(FILE *out, FILE *err, const struct ibacm_import_args *a)
{
	static struct imp m; /* large; one import per process */
	bool found;
	size_t i;
	int ret;

	memset(&m, 0, sizeof(m));
	m.a = a;
	m.err = err;
	m.mtu = 2048;
	strcpy(m.rate, "10");
	ret = -ENOMEM;
	for (i = 0; i < S_COUNT; i++) {
		m.s[i] = open_memstream(&m.sbuf[i], &m.slen[i]);
		if (!m.s[i])
			goto out;
	}
	ret = read_opts(&m, &found);
	if (ret < 0) {
		fprintf(err, "ibresctl: config import-ibacm: %s/ibacm_opts.cfg: %s\n", a->dir,
			strerror(-ret));
		goto out;
	}
	if (!found)
		fprintf(err, "ibresctl: config import-ibacm: no %s/ibacm_opts.cfg: "
			     "ibacm's defaults imported\n", a->dir);
	for (i = 0; i < N_OPTS; i++) {
		const char *v = m.seen[i] ? m.values[i] : opts[i].def;

		m.cur_default = !m.seen[i];
		if (opts[i].map)
			opts[i].map(&m, m.s[opts[i].sect], v);
		else
			note(&m, m.s[opts[i].sect], opts[i].name, v, opts[i].why);
	}
	ret = read_addrs(&m, m.s[S_ENDPOINT]);
	if (ret < 0) {
		fprintf(err, "ibresctl: config import-ibacm: %s/ibacm_addr.cfg: %s\n", a->dir,
			strerror(-ret));
		goto out;
	}
	bool from_sysfs = !m.n_ep;

	if (from_sysfs)
		find_ports(&m);
	if (m.preload && a->hosts_out) {
		const char *data = opt_value(&m, "addr_data_file");

		ret = write_hosts(&m, data);
		if (ret < 0)
			goto out;
	} else if (m.preload) {
		fprintf(err, "ibresctl: config import-ibacm: ibacm preloads hosts; add "
			     "--hosts-out FILE to convert them\n");
	}
	for (i = 0; i < S_COUNT; i++)
		if (fflush(m.s[i]))
			goto out;
	fprintf(out, "# ibresd.conf(5) imported from ibacm's configuration in %s\n"
		     "# by ibresctl config import-ibacm. Every ibacm option is listed in a\n"
		     "# comment with what it became. Review, then check with\n"
		     "#   ibresctl config check FILE\n"
		     "\n[daemon]\n%s\n[resolve]\n%s",
		a->dir, m.sbuf[S_DAEMON], m.sbuf[S_RESOLVE]);
	fprintf(out, "\n# The endpoints (ibacm_addr.cfg, or every InfiniBand port as ibacm does\n"
		     "# when it lists none), each on the fabric protocol's transport ib:\n%s",
		m.sbuf[S_ENDPOINT]);
	write_endpoints(&m, out, from_sysfs);
	if (!m.n_ep)
		fprintf(err, "ibresctl: config import-ibacm: no endpoint in ibacm_addr.cfg and "
			     "no InfiniBand port under %s: fill one in\n", a->sysfs);
	ret = 0;
out:
	for (i = 0; i < S_COUNT; i++) {
		if (m.s[i])
			fclose(m.s[i]);
		free(m.sbuf[i]);
	}
	for (i = 0; i < m.n_ep; i++)
		for (unsigned k = 0; k < m.ep[i].n_addrs; k++)
			free(m.ep[i].addrs[k]);
	return ret;
}
