// SPDX-License-Identifier: MIT
/* The opcode table: ibacm's opcodes and our extension opcodes, each with
 * the handler that starts it and, if it can wait, the one that finishes it. */
#include "frontend/handlers.h"
#include "frontend/request.h"

static const struct opcode_handler opcodes[] = {
	{ IBRES_OP_RESOLVE, resolve_start, resolve_finish },
	{ IBRES_OP_PERF_QUERY, perf_query, NULL },
	{ IBRES_OP_EP_QUERY, ep_query, NULL },
	{ IBRES_OP_HOST, host_start, host_finish },
	{ IBRES_OP_CACHE_LIST, cache_list, NULL },
	{ IBRES_OP_CACHE_FLUSH, cache_flush, NULL },
	{ IBRES_OP_STATS, stats_query, NULL },
	{ IBRES_OP_ENDPOINTS, endpoints_query, NULL },
	{ IBRES_OP_DIRECTORY, directory_query, NULL },
};

const struct opcode_handler *opcode_handler(uint8_t opcode)
{
	for (size_t i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++)
		if (opcodes[i].opcode == opcode)
			return &opcodes[i];
	return NULL;
}
