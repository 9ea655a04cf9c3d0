/* SPDX-License-Identifier: MIT */
/*
 * libibres: the client library of nss-ib. It asks the local ibresd for host
 * records (name, aliases, IPoIB addresses, GIDs, LID, QPN, P_Key) and for
 * InfiniBand path records, and builds librdmacm-compatible address lists.
 *
 * Conventions (see libibres(3)):
 *  - every function that can fail returns 0 or a negative errno value;
 *  - every call is bounded by the handle's timeout (CLOCK_MONOTONIC);
 *  - a NULL handle means the library's implicit handle: socket from
 *    $IBRES_SOCKET (else IBRES_DEFAULT_SOCKET), timeout from
 *    $IBRES_TIMEOUT_MS (else IBRES_TIMEOUT_DEFAULT_MS);
 *  - handles are thread-safe and fork-safe; each keeps a few persistent
 *    connections to the daemon and re-makes them after fork();
 *  - host look-ups answer from the daemon's shared host directory (a
 *    sealed memfd the daemon passes over its socket, mapped read-only) with
 *    no system call when it holds the answer, and ask the daemon otherwise;
 *    $IBRES_DIRECTORY=off turns that off;
 *  - a handle talks only to a daemon whose socket's listener is root or, in
 *    a process without privileges (euid not 0, no AT_SECURE), the caller.
 *
 * struct ibv_path_data comes from <infiniband/sa.h>; struct rdma_addrinfo
 * from <rdma/rdma_cma.h> (librdmacm-dev). libibres does not link librdmacm.
 */
#ifndef IBRES_H
#define IBRES_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/sa.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdma_addrinfo;

/* Default bound on one call, in milliseconds: above the longest ibresd makes
 * a lookup wait with its default timeout and retries (8.2 s), so that a
 * caller gets the daemon's own answer (its -ETIMEDOUT once the fabric stayed
 * silent) rather than giving up first. */
#define IBRES_TIMEOUT_DEFAULT_MS 10000
/* Environment variables read by the implicit handle (and libnss_ib). */
#define IBRES_TIMEOUT_ENV "IBRES_TIMEOUT_MS"
#ifndef IBRES_SOCKET_ENV
#define IBRES_SOCKET_ENV "IBRES_SOCKET"
#endif
#ifndef IBRES_DEFAULT_SOCKET
#define IBRES_DEFAULT_SOCKET "/run/ibres/ibresd.sock"
#endif
/* The shared host directory: "off" (or "none", "0") not to use it; unset or
 * anything else: the one the daemon passes over its socket. */
#define IBRES_DIRECTORY_ENV "IBRES_DIRECTORY"

/* A connection handle to ibresd. Opaque. */
struct ibres;

/*
 * ibres_open - create a handle.
 * @hp: where the new handle is stored.
 * @socket_path: the daemon's Unix socket; NULL for $IBRES_SOCKET or the default.
 * @timeout_ms: bound on every call made through the handle; 0 or negative for
 *	$IBRES_TIMEOUT_MS or IBRES_TIMEOUT_DEFAULT_MS.
 * No connection is made until the first call. Returns 0, -EINVAL (path too
 * long for a Unix socket) or -ENOMEM.
 */
int ibres_open(struct ibres **hp, const char *socket_path, int timeout_ms);

/*
 * ibres_close - close a handle's connections and free it. NULL is ignored.
 * The handle must not be in use by another thread.
 */
void ibres_close(struct ibres *h);

/* A host as the daemon knows it. One allocation: free with ibres_host_free(). */
struct ibres_host {
	char *name;	      /* canonical name */
	char **aliases;	      /* NULL-terminated list, never NULL */
	struct in_addr *ipv4; /* IPoIB IPv4 addresses */
	size_t n_ipv4;
	struct in6_addr *ipv6; /* IPoIB IPv6 addresses */
	size_t n_ipv6;
	union ibv_gid *gids; /* port GIDs; gids[0] is the one paths use */
	size_t n_gids;
	uint16_t lid;  /* host byte order; 0 = unknown */
	uint32_t qpn;  /* the daemon's UD QPN on that host; 0 = unknown */
	uint16_t pkey; /* host byte order */
	uint32_t ttl;  /* seconds the answer stays valid; 0 = unknown */
};

/* Flags of ibres_host_by_name() and ibres_host_by_addr(). */
enum {
	IBRES_LOOKUP_CACHE_ONLY = 1u << 0, /* answer from the daemon's cache only */
};

/*
 * ibres_host_by_name - look a host up by name (canonical name or alias).
 * @h: handle or NULL.
 * @name: host name, 1 to 255 bytes.
 * @flags: IBRES_LOOKUP_* bits.
 * @hostp: the result, to be freed with ibres_host_free().
 * Returns 0, -ENODATA (no such host), -ETIMEDOUT (the daemon or the fabric
 * did not answer in time), -EINVAL, -ENOMEM, or the errno of a failed
 * connection (-ENOENT, -ECONNREFUSED, -EACCES...) or -EPROTO/-EBADMSG for a
 * malformed answer.
 */
int ibres_host_by_name(struct ibres *h, const char *name, unsigned flags,
		       struct ibres_host **hostp);

/*
 * ibres_host_by_addr - look a host up by address.
 * @af: AF_INET (@addr is a struct in_addr), AF_INET6 (struct in6_addr) or
 *	AF_IB (a 16-byte GID, union ibv_gid).
 * @len: length of @addr: 4, 16 or 16.
 * Other arguments and results as ibres_host_by_name(); -EAFNOSUPPORT for
 * another family, -EINVAL for a wrong length.
 */
int ibres_host_by_addr(struct ibres *h, int af, const void *addr, size_t len, unsigned flags,
		       struct ibres_host **hostp);

/* ibres_host_free - free a host returned by a lookup. NULL is ignored. */
void ibres_host_free(struct ibres_host *host);

/* Flags of ibres_resolve_path(). */
enum {
	/* Do not wait for the fabric: -ENODATA unless the answer is cached
	 * (the daemon keeps resolving in the background; ibacm's NODELAY). */
	IBRES_RESOLVE_NODELAY = 1u << 0,
};

/*
 * ibres_resolve_path - path records from a source to a destination.
 * @src: NULL (the daemon picks a local endpoint), or a struct sockaddr_in,
 *	sockaddr_in6 or sockaddr_ib (<infiniband/ib.h>; sib_addr = source GID).
 * @dst: struct sockaddr_in, sockaddr_in6 or sockaddr_ib (sib_addr = GID).
 * @flags: IBRES_RESOLVE_* bits.
 * @pathsp, @np: on success a malloc'd array of *@np (at least one) path
 *	records, primary first, as librdmacm puts them into ai_route; free()
 *	it. Flags and every multi-byte field of the records are as in
 *	<infiniband/sa.h> (path fields big-endian).
 * Returns 0, -ENODATA (no such destination or no path), -EADDRNOTAVAIL
 * (unknown source or destination address), -EAFNOSUPPORT, -ETIMEDOUT, or a
 * connection/protocol error as ibres_host_by_name().
 */
int ibres_resolve_path(struct ibres *h, const struct sockaddr *src, const struct sockaddr *dst,
		       unsigned flags, struct ibv_path_data **pathsp, size_t *np);

/*
 * ibres_getaddrinfo - rdma_getaddrinfo(3) through ibresd.
 * @node: host name, IPv4/IPv6 literal, or (with hints ai_family AF_IB,
 *	RAI_FAMILY and RAI_NUMERICHOST) a GID literal; NULL with RAI_PASSIVE
 *	for the wildcard address.
 * @service: decimal port number or service name; may be NULL.
 * @hints: NULL or ai_flags (RAI_PASSIVE, RAI_NUMERICHOST, RAI_NOROUTE,
 *	RAI_FAMILY), ai_family (0, AF_INET, AF_INET6, AF_IB), ai_qp_type,
 *	ai_port_space (default RDMA_PS_TCP, or RDMA_PS_UDP for a UD QP) and
 *	ai_src_addr/ai_src_len (source for path resolution).
 * @res: the list: an AF_IB entry (struct sockaddr_ib, path records in
 *	ai_route) first when the destination's GID is known, then the IP
 *	entry. Every pointer field is a separate allocation, so both
 *	ibres_freeaddrinfo() and librdmacm's rdma_freeaddrinfo() free it.
 * Uses the implicit handle. Returns 0 or a negative errno: -ENODATA (no such
 * host, or no address of the requested family: EAI_NONAME), -EAFNOSUPPORT
 * (EAI_FAMILY), -EINVAL (bad arguments or service: EAI_SERVICE/EAI_BADFLAGS),
 * -ENOMEM (EAI_MEMORY), -ETIMEDOUT (EAI_AGAIN), or a connection error
 * (EAI_SYSTEM).
 */
int ibres_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		      struct rdma_addrinfo **res);

/* ibres_freeaddrinfo - free a list from ibres_getaddrinfo(). NULL is ignored. */
void ibres_freeaddrinfo(struct rdma_addrinfo *res);

#ifdef __cplusplus
}
#endif

#endif /* IBRES_H */
