// SPDX-License-Identifier: MIT
#include "frontend/acm.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "msg.h"

#define ACM_MAX_ENTRIES 8 /* what fits a client's 592-byte receive buffer */

int msg_frame_length(const struct ibres_hdr *h, size_t *len)
{
	uint16_t l = ibres_msg_get_length(h);

	if (l < IBRES_HDR_LEN || l > ACM_REQ_MAX)
		return -EBADMSG;
	*len = l;
	return 0;
}

size_t msg_error(void *out, const struct ibres_hdr *req, uint8_t status)
{
	struct ibres_hdr h = *req;

	h.opcode |= IBRES_OP_ACK;
	h.status = status;
	memset(h.data, 0, sizeof(h.data));
	ibres_msg_set_length(&h, IBRES_HDR_LEN);
	memcpy(out, &h, sizeof(h));
	return IBRES_HDR_LEN;
}

/* Address entries: NAME (NUL inside the 64 bytes), IP, IP6. */
static int check_addr_entry(const struct ibres_ep_entry *e, uint8_t bad_type)
{
	switch (e->type) {
	case IBRES_EP_TYPE_NAME:
		if (!memchr(e->info.name, '\0', sizeof(e->info.name)) || !e->info.name[0])
			return IBRES_STATUS_EINVAL;
		return 0;
	case IBRES_EP_TYPE_IP:
	case IBRES_EP_TYPE_IP6:
		return 0;
	default:
		return bad_type;
	}
}

int acm_parse_resolve(const void *msg, size_t len, struct acm_resolve_req *r)
{
	const struct ibres_ep_entry *e = (const void *)((const uint8_t *)msg + IBRES_HDR_LEN);
	size_t body = len - IBRES_HDR_LEN;
	int ret;

	memset(r, 0, sizeof(*r));
	if (len < IBRES_HDR_LEN || body % IBRES_EP_LEN)
		return IBRES_STATUS_EINVAL;
	r->n_entries = body / IBRES_EP_LEN;
	if (r->n_entries == 0 || r->n_entries > ACM_MAX_ENTRIES)
		return IBRES_STATUS_EINVAL;

	/* A PATH entry anywhere makes this a path lookup (the first one). An
	 * address entry beside it says what the path leaves blank: librdmacm
	 * puts the IP source of a path to a GID before it, libibres the
	 * destination of a path from a GID. */
	for (unsigned i = 0; i < r->n_entries && !r->path; i++) {
		if (e[i].type == IBRES_EP_TYPE_PATH) {
			r->is_path = true;
			r->path = &e[i];
			r->query_sa = e[i].flags & IBRES_FLAG_QUERY_SA;
		}
	}

	for (unsigned i = 0; i < r->n_entries; i++) {
		if (e[i].type == IBRES_EP_TYPE_PATH)
			continue;
		if (e[i].flags & IBRES_EP_FLAG_SOURCE) {
			if (r->src)
				return IBRES_STATUS_ESRCADDR;
			ret = check_addr_entry(&e[i], IBRES_STATUS_ESRCTYPE);
			if (ret)
				return ret;
			r->src = &e[i];
		} else if (e[i].flags & IBRES_EP_FLAG_DEST) {
			if (r->dst)
				return IBRES_STATUS_EDESTADDR;
			ret = check_addr_entry(&e[i], IBRES_STATUS_EDESTTYPE);
			if (ret)
				return ret;
			r->dst = &e[i];
			r->dst_flags = e[i].flags;
		} else if (!r->is_path) {
			return IBRES_STATUS_EINVAL;
		}
	}
	if (r->is_path)
		return 0;
	if (!r->dst)
		return IBRES_STATUS_EDESTADDR;
	return 0;
}
