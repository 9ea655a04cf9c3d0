// SPDX-License-Identifier: MIT
/* Fuzz target: hostile MADs through every decoder of resolverd/ib/sa_mad.c;
 * whatever decodes must re-encode to the same record. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ib/sa_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t methods[] = {MAD_METHOD_GET, MAD_METHOD_SET, MAD_METHOD_DELETE};
	static const uint16_t attrs[] = {SA_ATTR_PATH_REC, SA_ATTR_MCMEMBER_REC, SMP_ATTR_PORT_INFO,
					 SMP_ATTR_NODE_INFO, SMP_ATTR_PKEY_TABLE};
	struct ibres_path_record pr;
	struct sa_mcmember m, m2;
	struct smp_port_info pi;
	struct smp_node_info ni;
	uint16_t pkeys[32];
	uint8_t out[MAD_LEN];
	struct mad_hdr h;

	if (mad_parse_hdr(data, size, &h) == MAD_OK) {
		for (size_t i = 0; i < sizeof(methods); i++)
			for (size_t j = 0; j < sizeof(attrs) / sizeof(attrs[0]); j++) {
				mad_check_response(&h, MAD_CLASS_SA, methods[i], attrs[j]);
				smp_check_response(data, size, &h, attrs[j]);
			}
		mad_status_errno(&h);
	}
	if (sa_decode_path(data, size, &pr) == MAD_OK) {
		sa_encode_path_get(out, 1, &pr, sa_path_comp_mask(&pr));
		if (memcmp(out + SA_HDR_LEN, data + SA_HDR_LEN, SA_PATH_REC_LEN))
			__builtin_trap();
	}
	if (sa_decode_mcmember(data, size, &m) == MAD_OK) {
		sa_encode_mcmember(out, MAD_METHOD_SET, 1, &m, sa_join_comp_mask());
		if (sa_decode_mcmember(out, sizeof(out), &m2) != MAD_OK ||
		    memcmp(&m, &m2, sizeof(m)))
			__builtin_trap();
	}
	if (smp_decode_port_info(data, size, &pi) == MAD_OK && pi.state > 15)
		__builtin_trap();
	smp_decode_node_info(data, size, &ni);
	smp_decode_pkeys(data, size, pkeys);
	return 0;
}
