// SPDX-License-Identifier: MIT
/* Fuzz target: hostile fabric datagrams through fw_decode, with and without
 * a cluster key; whatever decodes must re-encode. */
#include <stddef.h>
#include <stdint.h>

#include "fabric/fabric_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[] = "fuzzing-cluster-key-0123";
	uint8_t out[FW_MAX_LEN];
	struct fw_msg m;

	if (fw_decode(data, size, NULL, 0, &m) == FW_OK &&
	    fw_encode(&m, NULL, 0, out, sizeof(out)) < 0)
		__builtin_trap();
	fw_decode(data, size, key, sizeof(key) - 1, &m);
	return 0;
}
