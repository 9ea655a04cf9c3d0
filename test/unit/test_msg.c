// SPDX-License-Identifier: MIT
/* lib/msg.c: the length rule and the status <-> errno mapping that the
 * daemon and every client share. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "msg.h"

static void test_length_rule(void **state)
{
	struct ibres_hdr h;
	uint8_t raw[2];

	(void)state;
	memset(&h, 0, sizeof(h));
	h.opcode = IBRES_OP_RESOLVE;
	ibres_msg_set_length(&h, 0x0158);
	memcpy(raw, &h.length, 2);
	/* host order (little-endian here), as ibacm writes it */
	assert_int_equal(raw[0] | raw[1] << 8, 0x0158);
	assert_int_equal(ibres_msg_get_length(&h), 0x0158);
	h.opcode = IBRES_OP_RESOLVE | IBRES_OP_ACK;
	assert_int_equal(ibres_msg_get_length(&h), 0x0158);

	h.opcode = IBRES_OP_PERF_QUERY;
	ibres_msg_set_length(&h, 0x0158);
	memcpy(raw, &h.length, 2);
	assert_int_equal(raw[0] << 8 | raw[1], 0x0158); /* network order */
	assert_int_equal(ibres_msg_get_length(&h), 0x0158);
}

static void test_status_round_trip(void **state)
{
	static const uint8_t exact[] = {
		IBRES_STATUS_SUCCESS,	IBRES_STATUS_ENOMEM,  IBRES_STATUS_EINVAL,
		IBRES_STATUS_ENODATA,	IBRES_STATUS_ENOTCONN, IBRES_STATUS_ETIMEDOUT,
		IBRES_STATUS_EPERM,	IBRES_STATUS_EAGAIN,
	};

	(void)state;
	/* what the daemon says, a client reads back as the same status */
	for (size_t i = 0; i < sizeof(exact); i++)
		assert_int_equal(ibres_errno_to_status(ibres_status_to_errno(exact[i])), exact[i]);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_ESRCADDR), -EADDRNOTAVAIL);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_EDESTADDR), -EADDRNOTAVAIL);
	assert_int_equal(ibres_status_to_errno(IBRES_STATUS_ESRCTYPE), -EINVAL);
	assert_int_equal(ibres_status_to_errno(200), -EPROTO);
}

static void test_daemon_errnos(void **state)
{
	(void)state;
	assert_int_equal(ibres_errno_to_status(0), IBRES_STATUS_SUCCESS);
	assert_int_equal(ibres_errno_to_status(-ENODATA), IBRES_STATUS_ENODATA);
	assert_int_equal(ibres_errno_to_status(-ENOENT), IBRES_STATUS_ENODATA);
	assert_int_equal(ibres_errno_to_status(-ECANCELED), IBRES_STATUS_ENODATA);
	assert_int_equal(ibres_errno_to_status(-ETIMEDOUT), IBRES_STATUS_ETIMEDOUT);
	assert_int_equal(ibres_errno_to_status(-ENOMEM), IBRES_STATUS_ENOMEM);
	assert_int_equal(ibres_errno_to_status(-ENOSPC), IBRES_STATUS_ENOMEM);
	assert_int_equal(ibres_errno_to_status(-ENOTCONN), IBRES_STATUS_ENOTCONN);
	assert_int_equal(ibres_errno_to_status(-EAGAIN), IBRES_STATUS_EAGAIN);
	assert_int_equal(ibres_errno_to_status(-EADDRNOTAVAIL), IBRES_STATUS_EINVAL);
	assert_int_equal(ibres_errno_to_status(-EIO), IBRES_STATUS_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_length_rule),
		cmocka_unit_test(test_status_round_trip),
		cmocka_unit_test(test_daemon_errnos),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
