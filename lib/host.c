// SPDX-License-Identifier: MIT
/* Handles and host lookups of libibres. */
#include "ibres.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "msg.h"
#include "hostdir.h"
#include "hostrec.h"
#include "tlv.h"

/* Room for the largest host record the daemon sends, with space to spare for
 * item types a newer daemon may add. */
#define HOST_ANSWER_MAX 4096

IBRES_EXPORT int ibres_open(struct ibres **hp, const char *socket_path, int timeout_ms)
{
	static const struct ibres init = IBC_INIT;
	struct ibres *h;

	if (!hp)
		return -EINVAL;
	if (socket_path && strlen(socket_path) >= IBC_PATH_MAX)
		return -EINVAL;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	memcpy(h, &init, sizeof(*h));
	if (socket_path)
		strcpy(h->path, socket_path);
	h->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	*hp = h;
	return 0;
}

IBRES_EXPORT void ibres_close(struct ibres *h)
{
	unsigned i;

	if (!h || h == &ibc_default)
		return;
	ibc_disconnect(h);
	ibc_dir_release(h);
	for (i = 0; i < IBC_SLOTS; i++)
		pthread_mutex_destroy(&h->slot[i].lock);
	free(h);
}

/* The daemon's answer to a HOST query: what the directory could not tell.
 * Out of the hit path's way: its buffers are kilobytes. */
static __attribute__((noinline)) int host_ask(struct ibres *h, uint16_t key_type, const void *key,
					      size_t key_len, uint32_t flags,
					      struct ibres_hostrec *rec, int *statusp)
{
	uint8_t body[4 + IBRES_NAME_MAX + 8], ans[HOST_ANSWER_MAX];
	struct tlv_writer w;
	const uint8_t *ab;
	size_t alen;
	uint8_t status;
	int ret;

	tlv_writer_init(&w, body, sizeof(body));
	tlv_put(&w, key_type, key, key_len);
	if (flags)
		tlv_put_u32(&w, IBRES_T_FLAGS, flags);
	if (w.overflow)
		return -EINVAL;
	ret = ibc_ext(h, IBRES_OP_HOST, body, w.len, ans, sizeof(ans), &status, &ab, &alen);
	if (ret)
		return ret;
	if (statusp)
		*statusp = status;
	if (status)
		return ibres_status_to_errno(status);
	return hostrec_decode(ab, alen, rec) ? -EBADMSG : 0;
}

int ibc_host_query(struct ibres *h, uint16_t key_type, const void *key, size_t key_len,
		   uint32_t flags, struct ibres_hostrec *rec, int *statusp)
{
	int ret;

	if (statusp)
		*statusp = -1;
	/* the shared directory first: a hit, or a "no such host" it can tell */
	ret = ibc_dir_query(h, key_type, key, key_len, rec);
	if (ret == 0 || ret == -ENODATA) {
		if (statusp)
			*statusp = ibres_errno_to_status(ret);
		return ret;
	}
	return host_ask(h, key_type, key, key_len, flags, rec, statusp);
}

/* A buffer for a record larger than the caller's: IBDIR_REC_MAX bytes
 * always suffice. The caller frees *@heap. */
static void *big_copy(void **heap)
{
	*heap = malloc(IBDIR_REC_MAX);
	return *heap;
}

/* The daemon's answer as a view: the record encoded as the directory's are,
 * so that one packer serves both; into a buffer of its own when it does not
 * fit @buf (asking the daemon once). */
static __attribute__((noinline)) int view_asked(struct ibres *h, uint16_t key_type, const void *key,
						size_t key_len, void *buf, size_t cap,
						struct ibdir_view *v, void **heap)
{
	struct ibres_hostrec *rec = malloc(sizeof(*rec));
	int ret;

	if (!rec)
		return -ENOMEM;
	ret = host_ask(h, key_type, key, key_len, 0, rec, NULL);
	if (ret)
		goto out;
	ret = -ENOMEM;
	if (ibdir_rec_size(rec) > (cap & ~(size_t)7) && !(buf = big_copy(heap)))
		goto out;
	ret = ibdir_view_init(buf, ibdir_rec_encode(rec, IBDIR_NEVER, buf), v) ? -EBADMSG : 0;
	v->ttl = rec->ttl;
out:
	free(rec);
	return ret;
}

int ibc_host_view_rest(struct ibres *h, int ret, uint16_t key_type, const void *key, size_t key_len,
		       void *buf, size_t cap, struct ibdir_view *v, void **heap)
{
	if (ret == -EMSGSIZE) {
		/* a record on the way is larger than @buf: again, with room */
		if (!big_copy(heap))
			return -ENOMEM;
		ret = ibc_dir_find(h, key_type, key, key_len, *heap, IBDIR_REC_MAX, v);
		if (ret == 0 || ret == -ENODATA)
			return ret;
		free(*heap);
		*heap = NULL;
	}
	return view_asked(h, key_type, key, key_len, buf, cap, v, heap);
}

/* Copy a decoded record, one hostrec_check() accepts, into one allocation
 * laid out as [struct][alias pointers][gids][ipv6][ipv4][strings]. */
static struct ibres_host *host_from_rec(const struct ibres_hostrec *rec)
{
	size_t n_alias, size, strs = 0;
	struct ibres_host *host;
	uint8_t *p;
	char *s;
	unsigned i;

	_Static_assert(alignof(union ibv_gid) <= alignof(char *), "layout");
	_Static_assert(sizeof(union ibv_gid) == 16, "layout");
	n_alias = rec->n_names - 1; /* n_names >= 1: checked by the caller */
	for (i = 0; i < rec->n_names; i++)
		strs += strlen(rec->names[i]) + 1;
	size = sizeof(*host) + (n_alias + 1) * sizeof(char *) + rec->n_gids * 16u +
	       rec->n_v6 * 16u + rec->n_v4 * 4u + strs;
	host = calloc(1, size);
	if (!host)
		return NULL;
	p = (uint8_t *)(host + 1);
	host->aliases = (char **)p;
	p += (n_alias + 1) * sizeof(char *);
	host->gids = (union ibv_gid *)p;
	host->n_gids = rec->n_gids;
	memcpy(p, rec->gids, rec->n_gids * 16u);
	p += rec->n_gids * 16u;
	host->ipv6 = (struct in6_addr *)p;
	host->n_ipv6 = rec->n_v6;
	memcpy(p, rec->v6, rec->n_v6 * 16u);
	p += rec->n_v6 * 16u;
	host->ipv4 = (struct in_addr *)p;
	host->n_ipv4 = rec->n_v4;
	memcpy(p, rec->v4, rec->n_v4 * 4u);
	p += rec->n_v4 * 4u;
	s = (char *)p;
	for (i = 0; i < rec->n_names; i++) {
		size_t l = strlen(rec->names[i]) + 1;

		memcpy(s, rec->names[i], l);
		if (i)
			host->aliases[i - 1] = s;
		else
			host->name = s;
		s += l;
	}
	host->aliases[n_alias] = NULL;
	host->lid = rec->lid;
	host->qpn = rec->qpn;
	host->pkey = rec->pkey;
	host->ttl = rec->ttl;
	return host;
}

static int host_lookup(struct ibres *h, uint16_t type, const void *key, size_t len, unsigned flags,
		       struct ibres_host **hostp)
{
	struct ibres_hostrec *rec;
	uint32_t wire_flags = 0;
	int ret;

	if (!hostp || (flags & ~(unsigned)IBRES_LOOKUP_CACHE_ONLY))
		return -EINVAL;
	if (flags & IBRES_LOOKUP_CACHE_ONLY)
		wire_flags |= IBRES_HOST_CACHE_ONLY;
	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	ret = ibc_host_query(h ? h : &ibc_default, type, key, len, wire_flags, rec, NULL);
	/* its counts size and index the copy: checked here, whatever the source */
	if (!ret && hostrec_check(rec))
		ret = -EBADMSG;
	if (!ret) {
		*hostp = host_from_rec(rec);
		if (!*hostp)
			ret = -ENOMEM;
	}
	free(rec);
	return ret;
}

IBRES_EXPORT int ibres_host_by_name(struct ibres *h, const char *name, unsigned flags,
				    struct ibres_host **hostp)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (!len || len > IBRES_NAME_MAX)
		return -EINVAL;
	return host_lookup(h, IBRES_T_NAME, name, len, flags, hostp);
}

IBRES_EXPORT int ibres_host_by_addr(struct ibres *h, int af, const void *addr, size_t len,
				    unsigned flags, struct ibres_host **hostp)
{
	uint16_t type;
	int ret = hostrec_addr_type(af, len, &type);

	if (ret)
		return ret;
	if (!addr)
		return -EINVAL;
	return host_lookup(h, type, addr, len, flags, hostp);
}

IBRES_EXPORT void ibres_host_free(struct ibres_host *host)
{
	free(host);
}
