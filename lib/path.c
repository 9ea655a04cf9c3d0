// SPDX-License-Identifier: MIT
/* Path resolution through the ibacm RESOLVE operation. */
#include "ibres.h"

#include <errno.h>
#include <infiniband/ib.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "msg.h"

/* RESOLVE answers are at most 592 bytes for ibacm clients; be lenient. */
#define RESOLVE_ANSWER_MAX  4096
#define RESOLVE_ENTRIES_MAX 3

_Static_assert(sizeof(struct ibres_ep_entry) == sizeof(struct ibv_path_data),
	       "an ACM entry overlays struct ibv_path_data");
_Static_assert(sizeof(struct ibres_path_record) == sizeof(struct ibv_path_record),
	       "path record layout");

int ibc_resolve(struct ibres *h, const struct ibres_ep_entry *ents, size_t n, struct ibc_route *rt,
		int *statusp)
{
	uint8_t req[IBRES_HDR_LEN + RESOLVE_ENTRIES_MAX * IBRES_EP_LEN];
	uint8_t ans[RESOLVE_ANSWER_MAX];
	struct ibres_hdr *hdr = (struct ibres_hdr *)req;
	const struct ibres_ep_entry *e;
	size_t i, cnt, first;
	ssize_t len;
	int ret;

	if (statusp)
		*statusp = -1;
	if (!n || n > RESOLVE_ENTRIES_MAX)
		return -EINVAL;
	memset(req, 0, sizeof(req));
	hdr->version = IBRES_ACM_VERSION;
	hdr->opcode = IBRES_OP_RESOLVE;
	ibres_msg_set_length(hdr, (uint16_t)(IBRES_HDR_LEN + n * IBRES_EP_LEN));
	memcpy(req + IBRES_HDR_LEN, ents, n * IBRES_EP_LEN);

	len = ibc_transact(h, req, IBRES_HDR_LEN + n * IBRES_EP_LEN, ans, sizeof(ans),
			   ibc_deadline(h));
	if (len < 0)
		return (int)len;
	if (statusp)
		*statusp = ((struct ibres_hdr *)ans)->status;
	ret = ibres_status_to_errno(((struct ibres_hdr *)ans)->status);
	if (ret)
		return ret;
	if ((len - IBRES_HDR_LEN) % IBRES_EP_LEN)
		return -EBADMSG;
	cnt = ((size_t)len - IBRES_HDR_LEN) / IBRES_EP_LEN;

	/* PATH entries come first and contiguous (librdmacm copies exactly those) */
	memset(rt, 0, sizeof(*rt));
	e = (const struct ibres_ep_entry *)(ans + IBRES_HDR_LEN);
	for (first = 0; first < cnt && e[first].type != IBRES_EP_TYPE_PATH; first++)
		;
	for (i = first; i < cnt && e[i].type == IBRES_EP_TYPE_PATH; i++)
		;
	rt->n_paths = i - first;
	for (i = 0; i < cnt; i++) {
		if (e[i].type != IBRES_EP_TYPE_PATH && (e[i].flags & IBRES_EP_FLAG_SOURCE) &&
		    !rt->has_source) {
			rt->source = e[i];
			rt->has_source = 1;
		}
	}
	if (!rt->n_paths)
		return -EBADMSG;
	rt->paths = calloc(rt->n_paths, sizeof(*rt->paths));
	if (!rt->paths)
		return -ENOMEM;
	for (i = 0; i < rt->n_paths; i++) {
		rt->paths[i].flags = e[first + i].flags;
		rt->paths[i].reserved = 0;
		memcpy(&rt->paths[i].path, &e[first + i].info.path, sizeof(rt->paths[i].path));
	}
	return 0;
}

static int ip_entry(const struct sockaddr *sa, uint32_t flags, struct ibres_ep_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->flags = flags;
	if (sa->sa_family == AF_INET) {
		e->type = IBRES_EP_TYPE_IP;
		memcpy(e->info.addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		e->type = IBRES_EP_TYPE_IP6;
		memcpy(e->info.addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
	return 1;
}

int ibc_path_entries(const struct sockaddr *src, const struct sockaddr *dst, uint32_t dst_flags,
		     struct ibres_ep_entry *ents)
{
	struct ibres_ep_entry path;
	int n = 0, use_path = 0;

	if (!dst)
		return -EINVAL;
	memset(&path, 0, sizeof(path));
	path.type = IBRES_EP_TYPE_PATH;
	path.info.path.reversible_numpath = IBV_PATH_RECORD_REVERSIBLE | 1;
	if (src) {
		switch (src->sa_family) {
		case AF_INET:
		case AF_INET6:
			n += ip_entry(src, IBRES_EP_FLAG_SOURCE, &ents[n]);
			break;
		case AF_IB:
			memcpy(path.info.path.sgid, &((const struct sockaddr_ib *)src)->sib_addr,
			       16);
			use_path = 1;
			break;
		default:
			return -EAFNOSUPPORT;
		}
	}
	switch (dst->sa_family) {
	case AF_INET:
	case AF_INET6:
		n += ip_entry(dst, IBRES_EP_FLAG_DEST | dst_flags, &ents[n]);
		break;
	case AF_IB:
		memcpy(path.info.path.dgid, &((const struct sockaddr_ib *)dst)->sib_addr, 16);
		use_path = 1;
		break;
	default:
		return -EAFNOSUPPORT;
	}
	if (use_path)
		ents[n++] = path;
	return n;
}

IBRES_EXPORT int ibres_resolve_path(struct ibres *h, const struct sockaddr *src,
				    const struct sockaddr *dst, unsigned flags,
				    struct ibv_path_data **pathsp, size_t *np)
{
	struct ibres_ep_entry ents[RESOLVE_ENTRIES_MAX];
	struct ibc_route rt;
	int n, ret;

	if (!pathsp || !np || (flags & ~(unsigned)IBRES_RESOLVE_NODELAY))
		return -EINVAL;
	n = ibc_path_entries(src, dst, flags & IBRES_RESOLVE_NODELAY ? IBRES_FLAG_NODELAY : 0,
			     ents);
	if (n < 0)
		return n;
	ret = ibc_resolve(h ? h : &ibc_default, ents, (size_t)n, &rt, NULL);
	if (ret)
		return ret;
	*pathsp = rt.paths;
	*np = rt.n_paths;
	return 0;
}
