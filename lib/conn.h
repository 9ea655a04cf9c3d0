/* SPDX-License-Identifier: MIT */
/*
 * Client side of the daemon's socket: framing, deadlines, and a handle that
 * caches a few connections. Shared by libibres, libnss_ib and ibresctl
 * (internal; nothing here is exported).
 *
 * A handle owns IBC_SLOTS slots, each a mutex and at most one connected
 * socket. A call takes the first slot whose mutex it can get without waiting
 * and reuses that slot's connection; when every slot is busy it makes a
 * one-off connection. So threads never queue behind each other, and a mutex
 * left locked by a thread that vanished in fork() costs one slot, never a
 * deadlock. A slot's connection is dropped after any error or timeout (an
 * answer may still be in flight) and when the pid changed (after fork()).
 * A process with privileges it did not start with (AT_SECURE) keeps none:
 * each call connects and closes.
 */
#ifndef IBRES_CONN_H
#define IBRES_CONN_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include <infiniband/sa.h>
#include <sys/socket.h>

#include "hostdir.h"
#include "ibres_proto.h"

/* Marks the functions libibres.so exports (the build hides everything else). */
#define IBRES_EXPORT __attribute__((visibility("default")))

#define IBC_SLOTS    4
#define IBC_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct ibc_slot {
	pthread_mutex_t lock;
	int fd;	   /* -1 when not connected */
	pid_t pid; /* process that made fd */
	uint64_t tid;
};

/* The shared host directory as one handle maps it (lib/dirmap.c). The
 * places live in the handle itself, beside the pointer a look-up follows:
 * a hit touches no heap page of ours. */
#define IBC_DIR_RETIRED 16
#define IBC_DIR_MAPS	(IBC_DIR_RETIRED + 2) /* and the current one, and a new one */
struct ibc_dirmap {
	const uint8_t *base; /* NULL: a free place */
	size_t size;
	struct ibdir_geom geom; /* read once, when mapped */
	uint64_t retired_ms;	/* 0: current (or being set up); else when replaced */
};
struct ibc_dir {
	int mode;		  /* atomic: 0 not decided, 1 on, -1 off */
	struct ibc_dirmap *cur;	  /* atomic; NULL: none mapped */
	uint64_t next_try_ms;	  /* atomic: no mapping attempt before */
	pthread_mutex_t lock;	  /* taken with trylock only: mapping anew */
	struct ibc_dirmap maps[IBC_DIR_MAPS];
};

struct ibres {
	struct ibc_slot slot[IBC_SLOTS];
	char path[IBC_PATH_MAX]; /* "" = $IBRES_SOCKET, else the default */
	int timeout_ms;		 /* <= 0: $IBRES_TIMEOUT_MS, else default_ms */
	int default_ms;		 /* <= 0: IBRES_TIMEOUT_DEFAULT_MS */
	struct ibc_dir dir;
};

#define IBC_SLOT_INIT                                                                              \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, -1, 0, 0                                                \
	}
/* A handle whose bound, unless $IBRES_TIMEOUT_MS says otherwise, is @ms. */
#define IBC_INIT_BOUND(ms)                                                                         \
	{                                                                                          \
		.slot = {IBC_SLOT_INIT, IBC_SLOT_INIT, IBC_SLOT_INIT, IBC_SLOT_INIT}, .path = "",  \
		.timeout_ms = 0, .default_ms = (ms), .dir = {.lock = PTHREAD_MUTEX_INITIALIZER },  \
	}
#define IBC_INIT IBC_INIT_BOUND(0)

/* The process-wide handle used when a public call gets h == NULL. */
extern struct ibres ibc_default;

/* Monotonic time in nanoseconds, and the deadline @h gives a call started now. */
uint64_t ibc_now_ns(void);
uint64_t ibc_deadline(const struct ibres *h);
/* The timeout in ms a handle uses: its own, else $IBRES_TIMEOUT_MS, else its
 * default_ms, else IBRES_TIMEOUT_DEFAULT_MS. */
int ibc_timeout_ms(const struct ibres *h);

/*
 * Send one request and receive its answer. @req is a whole message whose
 * header has version, opcode and length set; its tid is overwritten. The
 * answer (header included) goes to @ans; it must echo the tid and have
 * opcode equal to the request's, or'ed with IBRES_OP_ACK or not. Returns the
 * answer's length, or a negative errno: connection errors as connect(2)
 * gives them, -ETIMEDOUT at @deadline_ns, -EMSGSIZE if the answer exceeds
 * @cap, -EBADMSG/-EPROTO for a malformed answer, -EDEADLK when the socket is
 * served by the calling process itself (ibresd resolving through NSS).
 */
ssize_t ibc_transact(struct ibres *h, void *req, size_t req_len, void *ans, size_t cap,
		     uint64_t deadline_ns);


/*
 * An extension request: header + @body (TLV items). On return 0 the
 * answer's status is in *@status (not yet turned into an errno) and its TLV
 * body is *@abody / *@alen (inside @ans). Negative errno for transport and
 * framing errors only.
 */
int ibc_ext(struct ibres *h, uint8_t op, const void *body, size_t len, void *ans, size_t cap,
	    uint8_t *status, const uint8_t **abody, size_t *alen);

/*
 * Ask the daemon for the shared host directory (IBRES_OP_DIRECTORY) on a
 * connection of its own: 0 with the descriptor it passed in *@fd (ours to
 * close; nothing about it checked yet) and the size it says in *@size, or a
 * negative errno (-ENODATA: it publishes none; -EACCES: the socket's owner
 * is not to be believed, see conn_open).
 */
int ibc_directory_fd(struct ibres *h, int *fd, uint64_t *size);
/* Close every slot's connection (the caller owns @h exclusively). */
void ibc_disconnect(struct ibres *h);

struct ibres_hostrec;
struct ibdir_view;

/* The socket path @h uses: its own, $IBRES_SOCKET, or the default. */
const char *ibc_socket_path(const struct ibres *h);

/*
 * Answer a host key from the shared host directory, with no system call
 * once it is mapped. 0: found (@rec filled, rec->ttl the seconds left);
 * -ENODATA: the directory says no such host. Anything else: ask the
 * daemon (no directory, $IBRES_DIRECTORY=off, a miss it cannot judge, an
 * expired record, a damaged or stale file).
 */
int ibc_dir_query(struct ibres *h, uint16_t type, const void *key, size_t len,
		  struct ibres_hostrec *rec);
/* The same, the record given as a view over a copy of its bytes in @buf
 * (@cap bytes, 8-byte aligned; ibdir_find()): -EMSGSIZE when a record on
 * the way is larger than @cap (look again with IBDIR_REC_MAX bytes). */
int ibc_dir_find(struct ibres *h, uint16_t type, const void *key, size_t len, void *buf, size_t cap,
		 struct ibdir_view *v);
/* Never use the shared directory through @h (ibresctl asks the daemon). */
void ibc_dir_disable(struct ibres *h);
/* Unmap what @h mapped (the caller owns @h exclusively). */
void ibc_dir_release(struct ibres *h);

/*
 * A HOST query: @key_type is IBRES_T_NAME, IBRES_T_IPV4, IBRES_T_IPV6 or
 * IBRES_T_GID; @flags IBRES_HOST_* bits. Fills @rec on 0; otherwise a
 * negative errno (the answer status through ibres_status_to_errno() (msg.h), or a
 * transport error). If @statusp is not NULL it gets the answer's status,
 * or -1 when no answer arrived.
 */
int ibc_host_query(struct ibres *h, uint16_t key_type, const void *key, size_t key_len,
		   uint32_t flags, struct ibres_hostrec *rec, int *statusp);

/*
 * A HOST query (no flags) whose answer is a view over the record's bytes in
 * @buf (@cap bytes, 8-byte aligned): from the shared directory as
 * ibc_dir_find(), else the daemon's answer encoded as the directory's
 * records are (ibdir_rec_encode()). A record larger than @cap is put in a
 * buffer of its own instead, *@heap, which the caller frees (always set:
 * NULL when @buf held it). 0 (v->ttl the seconds left, 0 when unknown), or
 * as ibc_host_query(). ibc_host_view_rest() is its part after a directory
 * look-up that gave neither (@ret its result).
 */
int ibc_host_view_rest(struct ibres *h, int ret, uint16_t key_type, const void *key,
		       size_t key_len, void *buf, size_t cap, struct ibdir_view *v, void **heap);
static inline int ibc_host_view(struct ibres *h, uint16_t key_type, const void *key,
				size_t key_len, void *buf, size_t cap, struct ibdir_view *v,
				void **heap)
{
	/* a hit or the directory's "no such host" returns here, with no
	 * call of its own between the caller and the directory */
	int ret = ibc_dir_find(h, key_type, key, key_len, buf, cap, v);

	*heap = NULL;
	if (ret == 0 || ret == -ENODATA)
		return ret;
	return ibc_host_view_rest(h, ret, key_type, key, key_len, buf, cap, v, heap);
}

/* The outcome of an ACM RESOLVE (ibc_resolve). */
struct ibc_route {
	struct ibv_path_data *paths; /* malloc'd, n_paths >= 1 */
	size_t n_paths;
	struct ibres_ep_entry source; /* the source the daemon chose, if has_source */
	int has_source;
};

/*
 * ACM RESOLVE with @n wire entries @ents (SOURCE/DEST entries of type NAME,
 * IP or IP6, and/or a PATH entry with sgid/dgid), at most 3. On 0 @rt holds
 * the path records (free rt->paths). Negative errno otherwise (an answer
 * status through ibres_status_to_errno() (msg.h)); @statusp as for ibc_host_query().
 */
int ibc_resolve(struct ibres *h, const struct ibres_ep_entry *ents, size_t n, struct ibc_route *rt,
		int *statusp);

/*
 * Append the wire entries for @src (may be NULL) and @dst to @ents (room for
 * 3): AF_INET/AF_INET6 give SOURCE/DEST entries; AF_IB (struct sockaddr_ib)
 * gives one PATH entry carrying the sgid and/or dgid. Returns the number of
 * entries, or -EAFNOSUPPORT / -EINVAL.
 */
int ibc_path_entries(const struct sockaddr *src, const struct sockaddr *dst, uint32_t dst_flags,
		     struct ibres_ep_entry *ents);

struct rdma_addrinfo;

/* What ibres_getaddrinfo() learned, ready to become a result list. */
struct ibc_gai {
	int passive;	      /* addresses are sources (RAI_PASSIVE) */
	int flags;	      /* ai_flags of every entry */
	int want_ib, want_ip; /* which entries to build */
	int qp_type, port_space;
	uint16_t port;			/* host order */
	const char *canon;		/* canonical name or NULL */
	struct sockaddr_storage ip;	/* the IP form (dst, or src when passive) */
	socklen_t ip_len;		/* 0: none */
	struct sockaddr_storage ip_src; /* active: the source IP, if known */
	socklen_t ip_src_len;
	uint8_t gid[16]; /* dst GID (src when passive), if have_gid */
	int have_gid;
	uint16_t pkey;			   /* big-endian, with have_gid */
	const struct ibv_path_data *paths; /* n_paths records; override gid/pkey */
	size_t n_paths;
};

/* Build the result list (AF_IB entry first, then the IP entry). 0,
 * -ENODATA when nothing would be returned, -ENOMEM. */
int ibc_gai_build(const struct ibc_gai *g, struct rdma_addrinfo **res);

#endif
