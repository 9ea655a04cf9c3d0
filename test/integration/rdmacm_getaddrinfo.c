// SPDX-License-Identifier: MIT
/*
 * rdmacm_getaddrinfo NODE SERVICE [numeric]: librdmacm's rdma_getaddrinfo() for
 * an active RDMA_PS_TCP endpoint, as a connecting program calls it, and every entry of its
 * answer as key=value lines, one entry per line:
 *   family=2|10|27 src=ADDR dst=ADDR route_len=N connect_len=N
 *   [path_dgid=GID path_dlid=N] [connect_ip=4|6 connect_src=IP connect_dst=IP]
 * An AF_IB address prints as its GID, with sid=HEX. Exit 0, or 2 with the error.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/ib.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void print_addr(const char *key, const struct sockaddr *sa, socklen_t len)
{
	char buf[INET6_ADDRSTRLEN];
	const struct sockaddr_ib *sib;

	if (!sa || !len) {
		printf(" %s=-", key);
		return;
	}
	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, sizeof(buf));
		printf(" %s=%s", key, buf);
		return;
	case AF_INET6:
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
			  sizeof(buf));
		printf(" %s=%s", key, buf);
		return;
	case AF_IB:
		sib = (const struct sockaddr_ib *)sa;
		inet_ntop(AF_INET6, &sib->sib_addr, buf, sizeof(buf));
		printf(" %s=%s %s_sid=%llx", key, buf, key,
		       (unsigned long long)be64toh(sib->sib_sid));
		return;
	default:
		printf(" %s=family%u", key, sa->sa_family);
	}
}

/* The CM's private data header librdmacm puts in ai_connect (the kernel's struct cma_hdr:
 * version, IP version in the high nibble, port, then source and destination, IPv4 in the
 * last 4 bytes of each 16). */
static void print_connect(const uint8_t *hdr, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	unsigned ver;

	if (len < 36)
		return;
	ver = hdr[1] >> 4;
	if (ver == 4) {
		inet_ntop(AF_INET, hdr + 4 + 12, src, sizeof(src));
		inet_ntop(AF_INET, hdr + 20 + 12, dst, sizeof(dst));
	} else {
		inet_ntop(AF_INET6, hdr + 4, src, sizeof(src));
		inet_ntop(AF_INET6, hdr + 20, dst, sizeof(dst));
	}
	printf(" connect_ip=%u connect_src=%s connect_dst=%s", ver, src, dst);
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res, *ai;
	char gid[INET6_ADDRSTRLEN];

	if (argc < 3) {
		fprintf(stderr, "usage: %s NODE SERVICE [numeric]\n", argv[0]);
		return 2;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (argc > 3 && !strcmp(argv[3], "numeric"))
		hints.ai_flags |= RAI_NUMERICHOST;
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 2;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		printf("family=%d", ai->ai_family);
		print_addr("src", ai->ai_src_addr, ai->ai_src_len);
		print_addr("dst", ai->ai_dst_addr, ai->ai_dst_len);
		printf(" route_len=%zu connect_len=%zu", ai->ai_route_len, ai->ai_connect_len);
		if (ai->ai_route_len >= sizeof(struct ibv_path_data)) {
			const struct ibv_path_data *p = ai->ai_route;

			inet_ntop(AF_INET6, &p->path.dgid, gid, sizeof(gid));
			printf(" path_dgid=%s path_dlid=%u", gid, be16toh(p->path.dlid));
		}
		if (ai->ai_connect_len)
			print_connect(ai->ai_connect, ai->ai_connect_len);
		printf("\n");
	}
	rdma_freeaddrinfo(res);
	return 0;
}
