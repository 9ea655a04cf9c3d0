// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the same bytes go through the config parser and the static
 * hosts file parser. A config that parses is also validated and printed,
 * and the printed form must parse back to the same settings. Nothing may
 * crash, leak or trip a sanitizer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/hosts_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ibres_config cfg, cfg2;

static void check_round_trip(void)
{
	char err[CFG_ERR_MAX];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return;
	config_print(&cfg, f);
	if (fclose(f)) {
		free(buf);
		return;
	}
	/* config_print is documented to produce a file that parses to the same
	 * settings: anything else is a bug worth a crash report */
	if (config_parse("printed", buf, len, &cfg2, err, sizeof(err)))
		abort();
	/* where it was read from is not configuration */
	memcpy(cfg2.source, cfg.source, sizeof(cfg.source));
	for (unsigned i = 0; i < cfg.n_eps && i < CFG_MAX_ENDPOINTS; i++)
		cfg2.eps[i].line = cfg.eps[i].line;
	if (memcmp(&cfg, &cfg2, sizeof(cfg)))
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	char err[CFG_ERR_MAX];
	struct cfg_hosts hosts;
	size_t n;

	if (!devnull)
		devnull = fopen("/dev/null", "w");

	if (!config_parse("fuzz.conf", (const char *)data, size, &cfg, err, sizeof(err))) {
		config_validate(&cfg, err, sizeof(err));
		config_default_names(&cfg, "fuzzhost.example");
		config_validate(&cfg, err, sizeof(err));
		if (devnull)
			config_print(&cfg, devnull);
		check_round_trip();
	}
	/* every message is NUL-terminated and within bounds */
	n = strnlen(err, sizeof(err));
	if (n == sizeof(err))
		abort();

	if (!hosts_parse("fuzz.hosts", (const char *)data, size, &hosts, err, sizeof(err))) {
		if (hosts.n_hosts && !hosts.hosts)
			abort();
		hosts_free(&hosts);
	} else if (hosts.hosts || hosts.n_hosts) {
		abort();
	}
	return 0;
}
