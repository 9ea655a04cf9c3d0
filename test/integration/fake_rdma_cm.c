// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD: the kernel side of librdmacm, for a machine without RDMA, so that the real
 * librdmacm's rdma_getaddrinfo() runs to the end: one InfiniBand device in
 * ibv_get_device_list(), and /dev/infiniband/rdma_cm answered in process (its write()
 * commands: the kernel copies each answer to a pointer inside the command, which no
 * character device in user space, CUSE included, can do from outside the process).
 *
 * librdmacm decides AF_IB support itself (ucma_set_af_ib_support() in ucma_init(): an
 * RDMA_PS_IB id bound to an AF_IB address); this file only answers that bind the way the
 * kernel would: accepted (every kernel since 3.11, RDMA_USER_CM_CMD_BIND), or refused with
 * EINVAL as an older kernel refuses a command it lacks (FAKE_RDMA_CM_AF_IB=0). Each bind is
 * reported on stderr so that a test sees the probe happen.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_user_cm.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CM_PATH "/dev/infiniband/rdma_cm"
#define FAKE_GUID 0x0002c90300000001ULL /* big-endian as read; only compared */

static struct ibv_device fake_dev = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = "fake_ib0",
	.dev_name = "uverbs0",
};
static int cm_fd = -1;
static uint32_t next_id = 1;

struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &fake_dev;
	if (num)
		*num = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

__be64 ibv_get_device_guid(struct ibv_device *dev)
{
	(void)dev;
	return (__be64)FAKE_GUID;
}

int ibv_get_device_index(struct ibv_device *dev)
{
	(void)dev;
	return 0;
}

static int real_open(const char *path, int flags, mode_t mode)
{
	int (*fn)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT,
										    "open");

	return fn(path, flags, mode);
}

static int open_common(const char *path, int flags, va_list ap)
{
	mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;

	if (strcmp(path, CM_PATH))
		return real_open(path, flags, mode);
	/* a character device standing for it (librdmacm checks S_ISCHR); its commands never
	 * reach /dev/null. librdmacm opens one per event channel: ucma_init's probe opens,
	 * uses and closes one, and rdma_getaddrinfo() opens none. */
	cm_fd = real_open("/dev/null", O_RDWR | O_CLOEXEC, 0);
	return cm_fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int ret;

	va_start(ap, flags);
	ret = open_common(path, flags, ap);
	va_end(ap);
	return ret;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	int ret;

	va_start(ap, flags);
	ret = open_common(path, flags, ap);
	va_end(ap);
	return ret;
}

int close(int fd)
{
	int (*fn)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (fd == cm_fd && fd >= 0)
		cm_fd = -1;
	return fn(fd);
}

/* The answer to a command, @out bytes at the address the command carries. */
static void *answer(const void *cmd, size_t out)
{
	uint64_t at;

	memcpy(&at, cmd, sizeof(at));
	memset((void *)(uintptr_t)at, 0, out);
	return (void *)(uintptr_t)at;
}

static ssize_t cm_write(const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;
	const void *cmd = (const char *)buf + sizeof(*hdr);
	const char *env = getenv("FAKE_RDMA_CM_AF_IB");
	struct rdma_ucm_create_id_resp *cr;
	struct rdma_ucm_bind bind;

	if (len < sizeof(*hdr) || len - sizeof(*hdr) < hdr->in) {
		errno = EINVAL;
		return -1;
	}
	switch (hdr->cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		cr = answer((const char *)cmd + 8, hdr->out); /* after uid */
		cr->id = next_id++;
		return (ssize_t)len;
	case RDMA_USER_CM_CMD_BIND:
		memcpy(&bind, cmd, sizeof(bind));
		if (bind.addr.ss_family == 27 /* AF_IB */ && env && !strcmp(env, "0")) {
			fprintf(stderr, "fake-rdma_cm: bind family 27 refused\n");
			errno = EINVAL;
			return -1;
		}
		fprintf(stderr, "fake-rdma_cm: bind family %u accepted\n", bind.addr.ss_family);
		return (ssize_t)len;
	case RDMA_USER_CM_CMD_BIND_IP:
		return (ssize_t)len;
	case RDMA_USER_CM_CMD_QUERY: /* no device bound: node_guid 0, no addresses */
	case RDMA_USER_CM_CMD_DESTROY_ID: /* no event reported */
		answer(cmd, hdr->out);
		return (ssize_t)len;
	default:
		fprintf(stderr, "fake-rdma_cm: command %u not emulated\n", hdr->cmd);
		errno = ENOSYS;
		return -1;
	}
}

ssize_t write(int fd, const void *buf, size_t len)
{
	ssize_t (*fn)(int, const void *, size_t) =
		(ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

	if (fd == cm_fd && fd >= 0)
		return cm_write(buf, len);
	return fn(fd, buf, len);
}
