// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the HOST answer's items (the body after the header, as
 * lib/host.c hands it to hostrec_decode) as every client decodes them. A
 * record the decoder accepts must be one the daemon could have written
 * (hostrec_check), survive the writers' encodings, and be packed into a
 * hostent and gaih_addrtuple list at every buffer size from 0 up by
 * nss/pack.c (pack_check.c): -ERANGE below the size it needs, nothing
 * written outside the buffer (ASan). fuzz_answers.c sends answers through
 * the socket and the public calls; this one reaches every buffer size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostrec.h"
#include "pack_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ibres_hostrec rec;

	if (size > 65535) /* an answer's length is 16 bits */
		return 0;
	if (hostrec_decode(data, size, &rec))
		return 0;
	pack_check(&rec);
	return 0;
}
