// SPDX-License-Identifier: MIT
#include "msg.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

static int length_host_order(const struct ibres_hdr *hdr)
{
	return (hdr->opcode & IBRES_OP_MASK) == IBRES_OP_RESOLVE;
}

uint16_t ibres_msg_get_length(const struct ibres_hdr *hdr)
{
	uint16_t len;

	memcpy(&len, &hdr->length, sizeof(len));
	return length_host_order(hdr) ? len : be16toh(len);
}

void ibres_msg_set_length(struct ibres_hdr *hdr, uint16_t len)
{
	if (!length_host_order(hdr))
		len = htobe16(len);
	memcpy(&hdr->length, &len, sizeof(len));
}

/* Status -> errno. Several statuses share an errno; the first row of an
 * errno is also the status it becomes (errno_to_status). */
static const struct {
	uint8_t status;
	int err;
} status_table[] = {
	{ IBRES_STATUS_SUCCESS, 0 },
	{ IBRES_STATUS_ENOMEM, -ENOMEM },
	{ IBRES_STATUS_EINVAL, -EINVAL },
	{ IBRES_STATUS_ESRCTYPE, -EINVAL },
	{ IBRES_STATUS_EDESTTYPE, -EINVAL },
	{ IBRES_STATUS_ENODATA, -ENODATA },
	{ IBRES_STATUS_ENOTCONN, -ENOTCONN },
	{ IBRES_STATUS_ETIMEDOUT, -ETIMEDOUT },
	{ IBRES_STATUS_ESRCADDR, -EADDRNOTAVAIL },
	{ IBRES_STATUS_EDESTADDR, -EADDRNOTAVAIL },
	{ IBRES_STATUS_EPERM, -EPERM },
	{ IBRES_STATUS_EAGAIN, -EAGAIN },
};

/* Errnos of the daemon's own work that mean another status's errno. */
static const struct {
	int err, as;
} errno_alias[] = {
	{ -ENOENT, -ENODATA },	  /* no such host */
	{ -ECANCELED, -ENODATA }, /* flushed while asked */
	{ -ENOSPC, -ENOMEM },	  /* a bound was reached */
};

int ibres_status_to_errno(uint8_t status)
{
	for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
		if (status_table[i].status == status)
			return status_table[i].err;
	return -EPROTO;
}

uint8_t ibres_errno_to_status(int err)
{
	for (size_t i = 0; i < sizeof(errno_alias) / sizeof(errno_alias[0]); i++)
		if (errno_alias[i].err == err)
			err = errno_alias[i].as;
	/* an address the daemon cannot use is never answered as an errno:
	 * the handlers say which end (ESRCADDR, EDESTADDR) themselves */
	if (err == -EADDRNOTAVAIL)
		return IBRES_STATUS_EINVAL;
	for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
		if (status_table[i].err == err)
			return status_table[i].status;
	return IBRES_STATUS_EINVAL;
}
