// SPDX-License-Identifier: MIT
/*
 * Test helper: libibres's public API, linked against build/libibres.so and
 * librdmacm. Lists are freed with librdmacm's rdma_freeaddrinfo() (or with
 * ibres_freeaddrinfo() given --own-free) so that valgrind can tell whether
 * they are allocated the way librdmacm expects.
 *
 *   nss_libibres host NAME
 *   nss_libibres addr AF ADDR             AF 2, 10 or 27 (ADDR a GID)
 *   nss_libibres path DST [SRC]           IPv4/IPv6 literals, or gid:GID
 *   nss_libibres gai [--own-free] NODE SERVICE FLAGS FAMILY [SRC]
 *                                         FLAGS: letters p(assive) n(umeric)
 *                                         r (noroute) f (family), or "-";
 *                                         SRC: the hints' source, as path's
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibres.h"

static void gid_text(const void *gid, char *buf)
{
	inet_ntop(AF_INET6, gid, buf, 64);
}

static void print_sa(const char *what, const struct sockaddr *sa, socklen_t len)
{
	char b[64];

	if (!sa) {
		printf("%s=none\n", what);
		return;
	}
	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, b, sizeof(b));
		printf("%s=inet/%s/%u/len%u\n", what, b,
		       ntohs(((const struct sockaddr_in *)sa)->sin_port), len);
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, b, sizeof(b));
		printf("%s=inet6/%s/%u/len%u\n", what, b,
		       ntohs(((const struct sockaddr_in6 *)sa)->sin6_port), len);
		break;
	case AF_IB: {
		const struct sockaddr_ib *sib = (const struct sockaddr_ib *)sa;

		gid_text(&sib->sib_addr, b);
		printf("%s=ib/%s/pkey0x%04x/sid0x%016llx/mask0x%016llx/len%u\n", what, b,
		       be16toh(sib->sib_pkey), (unsigned long long)be64toh(sib->sib_sid),
		       (unsigned long long)be64toh(sib->sib_sid_mask), len);
		break;
	}
	default:
		printf("%s=family%d\n", what, sa->sa_family);
	}
}

static void print_path(const struct ibv_path_data *p)
{
	char d[64], s[64];

	gid_text(&p->path.dgid, d);
	gid_text(&p->path.sgid, s);
	printf("path=flags0x%x/dgid%s/sgid%s/dlid%u/slid%u/pkey0x%04x/mtu%u/rate%u\n", p->flags, d,
	       s, be16toh(p->path.dlid), be16toh(p->path.slid), be16toh(p->path.pkey),
	       p->path.mtu & 0x3f, p->path.rate & 0x3f);
}

static int host(struct ibres_host *h, int ret)
{
	char b[64];
	size_t i;

	printf("ret=%d\n", ret);
	if (ret)
		return 0;
	printf("name=%s\naliases=", h->name);
	for (i = 0; h->aliases[i]; i++)
		printf("%s%s", i ? "," : "", h->aliases[i]);
	printf("\nipv4=");
	for (i = 0; i < h->n_ipv4; i++)
		printf("%s%s", i ? "," : "", inet_ntop(AF_INET, &h->ipv4[i], b, sizeof(b)));
	printf("\nipv6=");
	for (i = 0; i < h->n_ipv6; i++)
		printf("%s%s", i ? "," : "", inet_ntop(AF_INET6, &h->ipv6[i], b, sizeof(b)));
	printf("\ngids=");
	for (i = 0; i < h->n_gids; i++) {
		gid_text(&h->gids[i], b);
		printf("%s%s", i ? "," : "", b);
	}
	printf("\nlid=%u\nqpn=%u\npkey=0x%04x\nttl=%u\n", h->lid, h->qpn, h->pkey, h->ttl);
	ibres_host_free(h);
	return 0;
}

static int parse_sa(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!strncmp(text, "gid:", 4)) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

		sib->sib_family = AF_IB;
		return inet_pton(AF_INET6, text + 4, &sib->sib_addr) == 1 ? 0 : -1;
	}
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		return 0;
	}
	return -1;
}

static int path(const char *dst, const char *src)
{
	struct sockaddr_storage d, s;
	struct ibv_path_data *paths;
	size_t n, i;
	int ret;

	if (parse_sa(dst, &d) || (src && parse_sa(src, &s)))
		return 2;
	ret = ibres_resolve_path(NULL, src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, 0,
				 &paths, &n);
	printf("ret=%d\n", ret);
	if (ret)
		return 0;
	printf("count=%zu\n", n);
	for (i = 0; i < n; i++)
		print_path(&paths[i]);
	free(paths);
	return 0;
}

static int gai(int own_free, const char *node, const char *service, const char *flags, int family,
	       const char *src)
{
	struct rdma_addrinfo hints, *res, *ai;
	struct sockaddr_storage ss;
	int ret;

	memset(&hints, 0, sizeof(hints));
	if (src) {
		if (parse_sa(src, &ss))
			return 2;
		hints.ai_src_addr = (struct sockaddr *)&ss;
		hints.ai_src_len = ss.ss_family == AF_INET    ? sizeof(struct sockaddr_in)
				   : ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							      : sizeof(struct sockaddr_ib);
	}
	hints.ai_family = family;
	hints.ai_flags = (strchr(flags, 'p') ? RAI_PASSIVE : 0) |
			 (strchr(flags, 'n') ? RAI_NUMERICHOST : 0) |
			 (strchr(flags, 'r') ? RAI_NOROUTE : 0) |
			 (strchr(flags, 'f') ? RAI_FAMILY : 0);
	ret = ibres_getaddrinfo(strcmp(node, "-") ? node : NULL,
				strcmp(service, "-") ? service : NULL, &hints, &res);
	printf("ret=%d\n", ret);
	if (ret)
		return 0;
	for (ai = res; ai; ai = ai->ai_next) {
		printf("entry family=%d qp_type=%d port_space=0x%x flags=%d\n", ai->ai_family,
		       ai->ai_qp_type, ai->ai_port_space, ai->ai_flags);
		print_sa("dst", ai->ai_dst_addr, ai->ai_dst_len);
		print_sa("src", ai->ai_src_addr, ai->ai_src_len);
		printf("canon=%s\n", ai->ai_dst_canonname   ? ai->ai_dst_canonname
				     : ai->ai_src_canonname ? ai->ai_src_canonname
							    : "none");
		printf("route_len=%zu\nconnect_len=%zu\n", ai->ai_route_len, ai->ai_connect_len);
		for (size_t i = 0; i < ai->ai_route_len / sizeof(struct ibv_path_data); i++)
			print_path((const struct ibv_path_data *)ai->ai_route + i);
	}
	if (own_free)
		ibres_freeaddrinfo(res);
	else
		rdma_freeaddrinfo(res);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibres_host *h = NULL;
	unsigned char addr[16];
	int af, own = 0;

	if (argc >= 2 && !strcmp(argv[1], "gai") && argc >= 3 && !strcmp(argv[2], "--own-free")) {
		own = 1;
		argv[2] = argv[1];
		argv++;
		argc--;
	}
	if (argc == 3 && !strcmp(argv[1], "host"))
		return host(h, ibres_host_by_name(NULL, argv[2], 0, &h));
	if (argc == 4 && !strcmp(argv[1], "addr")) {
		af = atoi(argv[2]);
		if (inet_pton(af == AF_INET ? AF_INET : AF_INET6, argv[3], addr) != 1)
			return 2;
		return host(h, ibres_host_by_addr(NULL, af, addr, af == AF_INET ? 4 : 16, 0, &h));
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "path"))
		return path(argv[2], argc == 4 ? argv[3] : NULL);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "gai"))
		return gai(own, argv[2], argv[3], argv[4], atoi(argv[5]),
			   argc == 7 ? argv[6] : NULL);
	fprintf(stderr, "usage: see the comment at the top of nss_libibres.c\n");
	return 2;
}
