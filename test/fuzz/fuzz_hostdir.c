// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the shared host directory's reader (lib/hostdir.c):
 * the input is a file image (after one byte that picks the keys asked). The
 * heartbeat is set to now, so that the fuzzer reaches past the staleness
 * check. Whatever the image, a look-up must not crash, and an answer it
 * gives must be a record that holds the key asked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ask(const uint8_t *img, size_t n, uint64_t now, uint16_t type, const void *key,
		size_t len)
{
	struct ibres_hostrec rec;
	int ret = ibdir_lookup(img, n, now, type, key, len, &rec);

	if (ret == 0 && !hostrec_has_key(&rec, ibdir_key_type((unsigned)ibdir_table_of(type)), key, len))
		__builtin_trap();
	if (ret && ret != -ENODATA && ret != -EAGAIN && ret != -ESTALE && ret != -EBADMSG)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t v4[4] = { 198, 18, 0, 2 }, v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t gid[16] = { 0xfe, 0x80, [9] = 2, 0xc9, 3, [15] = 2 };
	static const char *const names[] = { "node1", "node2", "NODE3", "login1", "www.example.com" };
	uint64_t now = mono_ms();
	uint8_t *img;
	size_t n;

	if (size < 1 || size > (1u << 22))
		return 0;
	n = size - 1;
	/* a mapping is page aligned: so is the copy */
	img = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!img)
		return 0;
	memcpy(img, data + 1, n);
	if (n >= sizeof(struct ibdir_header))
		memcpy(img + offsetof(struct ibdir_header, heartbeat_ms), &now, sizeof(now));
	ibdir_header_check(img, n);
	ask(img, n, now, IBRES_T_NAME, names[data[0] % 5], strlen(names[data[0] % 5]));
	ask(img, n, now, IBRES_T_IPV4, v4, 4);
	ask(img, n, now, IBRES_T_IPV6, v6, 16);
	ask(img, n, now, IBRES_T_GID, gid, 16);
	free(img);
	return 0;
}
