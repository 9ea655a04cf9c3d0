// SPDX-License-Identifier: MIT
/* Fuzz target: hostile datagrams on the NETLINK_RDMA local-service socket,
 * walked message by message as resolverd/os/kpath.c does, through
 * kpath_decode(); whatever decodes as a query must be answerable: our
 * records for its path use are ones the kernel accepts, and every answer
 * fits KPATH_MSG_MAX. */
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "os/kpath_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[65536] __attribute__((aligned(4)));
	size_t len = size < sizeof(buf) ? size : sizeof(buf), off = 0, mlen;
	uint8_t out[KPATH_MSG_MAX];

	/* aligned, as recv() gives it */
	memcpy(buf, data, len);
	for (; off < len && (mlen = kpath_msg_len(buf + off, len - off));
	     off += NLMSG_ALIGN(mlen)) {
		const struct nlmsghdr *h = (const void *)(buf + off);

		struct ibres_path_record fwd;
		struct kpath_record recs[KPATH_RECORDS_MAX];
		struct kpath_query q;
		uint32_t flags[KPATH_RECORDS_MAX];
		unsigned n;
		int ret = kpath_decode(h, mlen, &q);

		if (ret != KPATH_QUERY) {
			if (ret < 0 && q.refusable && !kpath_encode_refusal(out, sizeof(out), q.op, q.seq, 1))
				__builtin_trap();
			continue;
		}
		if (q.op == KPATH_OP_IP_RESOLVE) {
			if (!kpath_encode_gid(out, sizeof(out), q.seq, 1, q.dgid))
				__builtin_trap();
			continue;
		}
		if (q.op != KPATH_OP_RESOLVE || q.path_use >= KPATH_USE_MAX || !q.device[0])
			__builtin_trap();
		memset(&fwd, 0, sizeof(fwd));
		memcpy(fwd.dgid, q.dgid, 16);
		memcpy(fwd.sgid, q.sgid, 16);
		n = kpath_records_for(q.path_use, &fwd, recs);
		for (unsigned i = 0; i < n; i++)
			flags[i] = recs[i].flags;
		if (!n || !kpath_kernel_accepts(q.path_use, flags, n) ||
		    !kpath_encode_paths(out, sizeof(out), q.seq, 1, recs, n))
			__builtin_trap();
	}
	return 0;
}
