// SPDX-License-Identifier: MIT
#include "confgen.h"
#include "hostrec.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ARPHRD_INFINIBAND_TYPE 32
/* Interfaces and ports read, those of every device and state: more than a
 * node has; at most ENDPOINTS_MAX of the active ones are written */
#define MAX_IFACES     128
#define MAX_ROCE_PORTS 64
/* ibresd's limit (ibresd.conf(5): 8 rails x 4 partitions); `config check`
 * refuses a file with more */
#define ENDPOINTS_MAX	 32
#define MAX_PKEY_ENTRIES 128 /* P_Key table entries looked at per port */
#define MAX_GID_ENTRIES 256 /* GID table entries looked at per port */
/* RoCE v2 headers inside the netdev's MTU (IP, UDP, BTH, DETH, ICRC), as
 * the kernel's iboe_get_mtu() counts them, roughly */
#define ROCE_HEADERS 80
#define IPOIB_HWADDR_LEN 20 /* 4 bytes QPN/flags, then the 16-byte port GID */

struct ipoib_if {
	char name[IF_NAMESIZE];
	char gid[INET6_ADDRSTRLEN];
	unsigned pkey;
	char device[64];
	unsigned port;
	unsigned lid; /* 0: unknown */
	int pkey_index; /* its P_Key's entry in the port's table; -ENOENT: not
			 * there; another -errno: the table could not be read */
	bool down;    /* the port's state is known and not ACTIVE */
};

/* The first line of a sysfs file, without its newline; -errno if unreadable. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *nl;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

/* "80:00:00:48:fe:80:...": the port GID is the last 16 bytes. */
static int gid_from_hwaddr(const char *hw, char *out, size_t len)
{
	uint8_t b[IPOIB_HWADDR_LEN];
	unsigned v, n = 0;
	const char *p = hw;

	while (n < IPOIB_HWADDR_LEN && sscanf(p, "%2x", &v) == 1) {
		b[n++] = (uint8_t)v;
		p += 2;
		if (*p != ':')
			break;
		p++;
	}
	if (n != IPOIB_HWADDR_LEN)
		return -EINVAL;
	return inet_ntop(AF_INET6, b + 4, out, (socklen_t)len) ? 0 : -EINVAL;
}

/* The HCA behind an IPoIB interface: sysfs net/X/device/infiniband/NAME. */
/* Is the port ACTIVE ("4: ACTIVE")? One whose state cannot be read is taken
 * as active. */
static bool port_active(const char *sysfs, const char *device, unsigned port)
{
	char path[PATH_MAX], buf[32];

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/state", sysfs, device, port);
	return read_line(path, buf, sizeof(buf)) || strstr(buf, "ACTIVE");
}

/* The entry of @pkey in the port's P_Key table (the one an endpoint's
 * pkey_index names): the same P_Key, else the same partition with the other
 * membership bit; -ENOENT when neither is there, or -errno when the table
 * cannot be read at all. */
static int pkey_index_of(const char *sysfs, const char *device, unsigned port, unsigned pkey)
{
	char path[PATH_MAX], buf[32];
	int partition = -ENOENT, read = 0;

	for (unsigned i = 0; i < MAX_PKEY_ENTRIES; i++) {
		unsigned v;

		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/pkeys/%u", sysfs,
			 device, port, i);
		if (read_line(path, buf, sizeof(buf)))
			continue;
		read++;
		v = (unsigned)strtoul(buf, NULL, 16);
		if (v == pkey)
			return (int)i;
		if (hostrec_same_partition((uint16_t)v, (uint16_t)pkey) && partition < 0)
			partition = (int)i;
	}
	return read ? partition : -EIO;
}

static void ipoib_device(const char *sysfs, struct ipoib_if *ifc)
{
	char path[PATH_MAX], buf[32];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/class/net/%s/device/infiniband", sysfs, ifc->name);
	dir = opendir(path);
	if (dir) {
		while ((de = readdir(dir))) {
			if (de->d_name[0] != '.' && strlen(de->d_name) < sizeof(ifc->device)) {
				strcpy(ifc->device, de->d_name);
				break;
			}
		}
		closedir(dir);
	}
	/* dev_port counts from 0, IB ports from 1 */
	snprintf(path, sizeof(path), "%s/class/net/%s/dev_port", sysfs, ifc->name);
	ifc->port = read_line(path, buf, sizeof(buf)) == 0 ? (unsigned)strtoul(buf, NULL, 0) + 1 : 1;
	if (!ifc->device[0])
		return;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/lid", sysfs, ifc->device,
		 ifc->port);
	if (read_line(path, buf, sizeof(buf)) == 0)
		ifc->lid = (unsigned)strtoul(buf, NULL, 16);
	ifc->down = !port_active(sysfs, ifc->device, ifc->port);
	ifc->pkey_index = pkey_index_of(sysfs, ifc->device, ifc->port, ifc->pkey);
}

static int find_ipoib(const char *sysfs, struct ipoib_if *ifs, unsigned max)
{
	char path[PATH_MAX], buf[128];
	struct dirent *de;
	unsigned n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/class/net", sysfs);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && n < max) {
		struct ipoib_if *ifc = &ifs[n];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(ifc->name))
			continue;
		snprintf(path, sizeof(path), "%s/class/net/%s/type", sysfs, de->d_name);
		if (read_line(path, buf, sizeof(buf)) || atoi(buf) != ARPHRD_INFINIBAND_TYPE)
			continue;
		memset(ifc, 0, sizeof(*ifc));
		strcpy(ifc->name, de->d_name);
		snprintf(path, sizeof(path), "%s/class/net/%s/address", sysfs, de->d_name);
		if (read_line(path, buf, sizeof(buf)) || gid_from_hwaddr(buf, ifc->gid, sizeof(ifc->gid)))
			continue;
		snprintf(path, sizeof(path), "%s/class/net/%s/pkey", sysfs, de->d_name);
		ifc->pkey = read_line(path, buf, sizeof(buf)) ? 0xffff : (unsigned)strtoul(buf, NULL, 16);
		ipoib_device(sysfs, ifc);
		n++;
	}
	closedir(dir);
	return (int)n;
}

/* A RoCE port: its device, port, RoCE v2 GID and the netdev behind it. */
struct roce_port {
	char device[64];
	unsigned port;
	char gid[INET6_ADDRSTRLEN];
	char ndev[IF_NAMESIZE];
	unsigned mtu;  /* bytes, an IB MTU the netdev carries */
	unsigned gbps; /* 0: unknown */
};

/* The port's RoCE v2 GID to send from: the first IPv4-mapped one, else the
 * first global one (gids/N with gid_attrs/types/N "RoCE v2"). */
static int roce_gid(const char *sysfs, struct roce_port *rp)
{
	char path[PATH_MAX], buf[128], ndev[IF_NAMESIZE] = "";
	int best_rank = 0;

	for (unsigned i = 0; i < MAX_GID_ENTRIES; i++) {
		struct in6_addr a;
		int rank;

		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/gid_attrs/types/%u",
			 sysfs, rp->device, rp->port, i);
		if (read_line(path, buf, sizeof(buf)))
			continue; /* an empty slot reads as an error */
		if (strcmp(buf, "RoCE v2"))
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/gids/%u", sysfs,
			 rp->device, rp->port, i);
		if (read_line(path, buf, sizeof(buf)) || inet_pton(AF_INET6, buf, &a) != 1)
			continue;
		rank = IN6_IS_ADDR_V4MAPPED(&a) ? 2 : (!IN6_IS_ADDR_LINKLOCAL(&a) &&
						       !IN6_IS_ADDR_UNSPECIFIED(&a));
		if (rank <= best_rank)
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u",
			 sysfs, rp->device, rp->port, i);
		if (read_line(path, ndev, sizeof(ndev)))
			continue;
		best_rank = rank;
		inet_ntop(AF_INET6, &a, rp->gid, sizeof(rp->gid));
		strcpy(rp->ndev, ndev);
	}
	return best_rank ? 0 : -ENOENT;
}

/* The largest IB MTU that fits the netdev's MTU; its rate in Gb/s. */
static void roce_limits(const char *sysfs, struct roce_port *rp)
{
	char path[PATH_MAX], buf[128];
	unsigned mtu = 1500;

	snprintf(path, sizeof(path), "%s/class/net/%s/mtu", sysfs, rp->ndev);
	if (read_line(path, buf, sizeof(buf)) == 0)
		mtu = (unsigned)strtoul(buf, NULL, 10);
	for (rp->mtu = 4096; rp->mtu > 256 && rp->mtu + ROCE_HEADERS > mtu; rp->mtu /= 2)
		;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/rate", sysfs, rp->device,
		 rp->port);
	rp->gbps = read_line(path, buf, sizeof(buf)) == 0 ? (unsigned)strtoul(buf, NULL, 10) : 0;
}

/* Every port whose link layer is Ethernet and that has a RoCE v2 GID. */
static int find_roce(const char *sysfs, const char *device, struct roce_port *rps, unsigned max)
{
	char path[PATH_MAX], buf[64];
	struct dirent *de, *pe;
	unsigned n = 0;
	DIR *dir, *pdir;

	snprintf(path, sizeof(path), "%s/class/infiniband", sysfs);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir)) && n < max) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(rps->device))
			continue;
		if (device && strcmp(device, de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", sysfs, de->d_name);
		pdir = opendir(path);
		if (!pdir)
			continue;
		while ((pe = readdir(pdir)) && n < max) {
			struct roce_port *rp = &rps[n];

			if (pe->d_name[0] == '.')
				continue;
			memset(rp, 0, sizeof(*rp));
			strcpy(rp->device, de->d_name);
			rp->port = (unsigned)strtoul(pe->d_name, NULL, 10);
			snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/link_layer",
				 sysfs, rp->device, rp->port);
			if (!rp->port || read_line(path, buf, sizeof(buf)) || strcmp(buf, "Ethernet"))
				continue;
			if (roce_gid(sysfs, rp) || !port_active(sysfs, rp->device, rp->port))
				continue;
			roce_limits(sysfs, rp);
			n++;
		}
		closedir(pdir);
	}
	closedir(dir);
	return (int)n;
}

/* The interface's addresses, as the config's `address` lines. */
static void write_addresses(FILE *out, const char *ifname)
{
	struct ifaddrs *ifa, *i;
	char buf[INET6_ADDRSTRLEN];

	if (getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const void *a;

		if (!i->ifa_addr || strcmp(i->ifa_name, ifname))
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			const struct in6_addr *a6 = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

			if (IN6_IS_ADDR_LINKLOCAL(a6))
				continue;
			a = a6;
		} else {
			continue;
		}
		if (inet_ntop(i->ifa_addr->sa_family, a, buf, sizeof(buf)))
			fprintf(out, "address = %s\n", buf);
	}
	freeifaddrs(ifa);
}

static void write_header(FILE *out, const char *hostname)
{
	fprintf(out,
		"# ibresd.conf for %s, written by `ibresctl config generate`.\n"
		"# Every setting is explained in ibresd.conf(5); check with\n"
		"# `ibresctl config check FILE`.\n"
		"\n"
		"[daemon]\n"
		"socket = /run/ibres/ibresd.sock\n"
		"log_level = info\n"
		"\n"
		"[resolve]\n"
		"route_prot = mcast\n"
		"# Only names like these are ever asked on the fabric; adjust to the\n"
		"# cluster's naming scheme.\n"
		"#name_pattern = node*\n"
		"settle_time = 3s\n"
		"announce_interval = 60s\n",
		hostname);
}

/* Stable order, so that identical nodes get identical files: by device,
 * port, P_Key (the default partition first; then interface name), never
 * readdir's order. */
/* The default partition (the port's own interface) first, then by P_Key,
 * membership bit aside. */
static unsigned pkey_rank(unsigned pkey)
{
	return (pkey & 0x7fff) == 0x7fff ? 0 : (pkey & 0x7fff) + 1;
}

static int cmp_ipoib(const void *a, const void *b)
{
	const struct ipoib_if *x = a, *y = b;
	int c = strcmp(x->device, y->device);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (pkey_rank(x->pkey) != pkey_rank(y->pkey))
		return pkey_rank(x->pkey) < pkey_rank(y->pkey) ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_roce(const void *a, const void *b)
{
	const struct roce_port *x = a, *y = b;
	int c = strcmp(x->device, y->device);

	return c ? c : x->port < y->port ? -1 : x->port > y->port;
}

/* The names of one endpoint of a host of @total: the host name on every one
 * (one host), and with several, an alias naming this rail. */
static void write_names(FILE *out, const char *hostname, const char *rail, int total)
{
	fprintf(out, "name = %s\n", hostname);
	if (total > 1)
		fprintf(out, "name = %s-%s\n", hostname, rail);
}

/* A RoCE port's endpoint, one of @total. */
static void write_roce(FILE *out, const struct roce_port *rp, const char *hostname, int total)
{
	fprintf(out, "\n[endpoint %s]\n", rp->device);
	write_names(out, hostname, rp->device, total);
	fprintf(out, "# RoCE v2 on %s: GRH-routed, no LID, no Subnet Administrator\n", rp->ndev);
	fprintf(out, "device = %s\nport_num = %u\n", rp->device, rp->port);
	fprintf(out, "gid = %s\n", rp->gid);
	fprintf(out, "pkey = 0xffff\nmtu = %u\n", rp->mtu);
	if (rp->gbps)
		fprintf(out, "rate = %u\n", rp->gbps);
	write_addresses(out, rp->ndev);
	fprintf(out, "transport = ib\ninterface = %s\n", rp->ndev);
	fprintf(out, "group = 239.255.73.1 mtu=%u rate=%u\n", rp->mtu, rp->gbps ? rp->gbps : 10);
}

/* An IPoIB interface's endpoint, one of @total. */
static void write_ipoib(FILE *out, const struct ipoib_if *ifc, const char *hostname, int total)
{
	fprintf(out, "\n[endpoint %s]\n", ifc->name);
	/* one host: its name on every rail, and each rail's own */
	write_names(out, hostname, ifc->name, total);
	fprintf(out, "gid = %s\n", ifc->gid);
	if (ifc->device[0]) {
		fprintf(out, "device = %s\nport_num = %u\n", ifc->device, ifc->port);
		/* the port gives the P_Key, from this entry of its table */
		if (ifc->pkey_index >= 0)
			fprintf(out, "pkey_index = %d\n", ifc->pkey_index);
		else
			fprintf(out,
				"# the port's P_Key table could not be read: set pkey_index to\n"
				"# the entry of P_Key 0x%04x\n",
				ifc->pkey & 0xffff);
	}
	if (ifc->lid)
		fprintf(out, "lid = 0x%x\n", ifc->lid);
	else
		fprintf(out, "# the Subnet Manager assigns the LID: set it here\n#lid = 1\n");
	fprintf(out, "pkey = 0x%04x\n", ifc->pkey & 0xffff);
	write_addresses(out, ifc->name);
	fprintf(out,
		"transport = ip\ninterface = %s\n"
		"group = 239.255.73.1 mtu=2048 rate=10\n",
		ifc->name);
}

/* Is @ifc's partition one its port has (a child interface whose P_Key the
 * Subnet Manager did not give the port carries nothing)? */
static bool ipoib_usable(const struct ipoib_if *ifc)
{
	return !ifc->device[0] || ifc->pkey_index != -ENOENT;
}

int confgen_write(FILE *out, const char *sysfs, const char *hostname, const char *device)
{
	struct ipoib_if ifs[MAX_IFACES];
	struct roce_port rps[MAX_ROCE_PORTS];
	int n = find_ipoib(sysfs, ifs, MAX_IFACES), m, kept = 0, written = 0, total = 0;

	/* only the chosen device's interfaces, on active ports */
	for (int i = 0; i < n; i++)
		if ((!device || !strcmp(ifs[i].device, device)) && !ifs[i].down)
			ifs[kept++] = ifs[i];
	if (n >= 0)
		n = kept;
	m = find_roce(sysfs, device, rps, MAX_ROCE_PORTS);
	if (n > 0)
		qsort(ifs, (size_t)n, sizeof(ifs[0]), cmp_ipoib);
	if (m > 0)
		qsort(rps, (size_t)m, sizeof(rps[0]), cmp_roce);
	for (int i = 0; i < n; i++)
		total += ipoib_usable(&ifs[i]);
	total += m > 0 ? m : 0;
	if (total > ENDPOINTS_MAX)
		total = ENDPOINTS_MAX;
	write_header(out, hostname);
	if (n <= 0 && m <= 0) {
		fprintf(out,
			"\n# No IPoIB interface or RoCE port was found under %s/class. Fill in an\n"
			"# endpoint by hand, for example:\n"
			"#[endpoint ib0]\n#name = %s\n#gid = fe80::2:c903:0:1\n#lid = 1\n"
			"#transport = ip\n#interface = ib0\n#group = 239.255.73.1 mtu=2048 rate=10\n",
			sysfs, hostname);
		return n < 0 && n != -ENOENT ? n : 0;
	}
	if (n < 0)
		n = 0;
	if (m < 0)
		m = 0;
	for (int i = 0; i < n + m; i++) {
		const char *label = i < n ? ifs[i].name : rps[i - n].device;

		if (i < n && !ipoib_usable(&ifs[i])) {
			fprintf(out, "\n# %s left out: P_Key 0x%04x is not in %s port %u's table\n",
				label, ifs[i].pkey & 0xffff, ifs[i].device, ifs[i].port);
		} else if (written == ENDPOINTS_MAX) {
			fprintf(out, "\n# %s left out: ibresd takes %d endpoints at most\n", label,
				ENDPOINTS_MAX);
		} else if (i < n) {
			write_ipoib(out, &ifs[i], hostname, total);
			written++;
		} else {
			write_roce(out, &rps[i - n], hostname, total);
			written++;
		}
	}
	return written;
}
