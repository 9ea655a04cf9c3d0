// SPDX-License-Identifier: MIT
/*
 * ud_send: send datagrams from a raw UD QP of a RoCE device, for the VM tests'
 * hostile senders. The QP gets Q_Key QP_QKEY (0 = leave it unset); every
 * datagram goes to DGID/DQPN with Q_Key WR_QKEY (a controlled one, high bit
 * set, makes the HCA use the QP's own).
 *
 *   ud_send DEVICE SGID_INDEX DGID DQPN QP_QKEY WR_QKEY COUNT HEXPAYLOAD
 *
 * Exit status: 0 all sent and completed; 1 a verbs call failed (the message
 * names it: "modify_qp(INIT): Operation not permitted" when an unprivileged
 * caller asks for a controlled Q_Key); 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "ud_send: %s: %s\n", what, strerror(err));
	return 1;
}

static int hexdecode(const char *hex, unsigned char *out, size_t max)
{
	size_t n = strlen(hex) / 2;

	if (strlen(hex) % 2 || n > max)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	static unsigned char buf[4096];
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp_attr attr;
	struct ibv_ah_attr ah_attr = {0};
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	unsigned long qp_qkey, wr_qkey, dqpn, count;
	int n, len, mask;

	if (argc != 9) {
		fprintf(stderr, "usage: ud_send DEVICE SGID_INDEX DGID DQPN QP_QKEY WR_QKEY COUNT "
				"HEXPAYLOAD\n");
		return 2;
	}
	dqpn = strtoul(argv[4], NULL, 0);
	qp_qkey = strtoul(argv[5], NULL, 0);
	wr_qkey = strtoul(argv[6], NULL, 0);
	count = strtoul(argv[7], NULL, 0);
	len = hexdecode(argv[8], buf, sizeof(buf));
	if (len < 0 || inet_pton(AF_INET6, argv[3], ah_attr.grh.dgid.raw) != 1) {
		fprintf(stderr, "ud_send: bad DGID or payload\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return fail("open_device", ENODEV);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!pd || !cq || !mr)
		return fail("pd/cq/mr", errno);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		return fail("create_qp", errno);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	attr.qkey = (uint32_t)qp_qkey;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | (qp_qkey ? IBV_QP_QKEY : 0);
	n = ibv_modify_qp(qp, &attr, mask);
	if (n)
		return fail("modify_qp(INIT)", n);
	attr.qp_state = IBV_QPS_RTR;
	if ((n = ibv_modify_qp(qp, &attr, IBV_QP_STATE)))
		return fail("modify_qp(RTR)", n);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if ((n = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)))
		return fail("modify_qp(RTS)", n);
	ah_attr.is_global = 1;
	ah_attr.grh.sgid_index = (uint8_t)strtoul(argv[2], NULL, 0);
	ah_attr.grh.hop_limit = 64;
	ah_attr.port_num = 1;
	ah = ibv_create_ah(pd, &ah_attr);
	if (!ah)
		return fail("create_ah", errno);
	for (unsigned long i = 0; i < count; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey};
		struct ibv_send_wr wr = {0}, *bad;
		struct ibv_wc wc;
		struct timespec start, now;

		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = (uint32_t)dqpn;
		wr.wr.ud.remote_qkey = (uint32_t)wr_qkey;
		if ((n = ibv_post_send(qp, &wr, &bad)))
			return fail("post_send", n);
		/* every wait bounded: 5 s for the completion */
		clock_gettime(CLOCK_MONOTONIC, &start);
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec > 5)
				return fail("send completion", ETIMEDOUT);
		}
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			return fail("send completion", EIO);
	}
	printf("sent %lu\n", count);
	return 0;
}
