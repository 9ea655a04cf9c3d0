// SPDX-License-Identifier: MIT
/* Fuzz target: hostile ibacm configuration files through ibresctl's
 * `config import-ibacm` (tools/ibacm_import.c, compiled in here: it is not
 * part of the daemon's libraries). The input is split at 0xff bytes into
 * ibacm_opts.cfg, ibacm_addr.cfg and the hosts data file, written to a
 * scratch directory; the options file is made to preload the hosts file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tools/ibacm_import.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz_ibacm_XXXXXX";
static char path[3][sizeof(dir) + 32], hosts_out[sizeof(dir) + 32];
static FILE *sink;

static void cleanup(void)
{
	for (int i = 0; i < 3; i++)
		unlink(path[i]);
	unlink(hosts_out);
	rmdir(dir);
}

static void setup(void)
{
	static const char *const names[3] = { "ibacm_opts.cfg", "ibacm_addr.cfg", "hosts.data" };

	if (sink)
		return;
	if (!mkdtemp(dir))
		abort();
	for (int i = 0; i < 3; i++)
		snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
	snprintf(hosts_out, sizeof(hosts_out), "%s/hosts.out", dir);
	sink = fopen("/dev/null", "w");
	if (!sink)
		abort();
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibacm_import_args a;
	size_t start = 0;
	int part = 0, ret;

	setup();
	for (size_t i = 0; i <= size && part < 3; i++) {
		if (i < size && data[i] != 0xff)
			continue;
		FILE *f = fopen(path[part], "w");

		if (!f)
			abort();
		fwrite(data + start, 1, i - start, f);
		if (part == 0)
			fprintf(f, "\naddr_preload acm_hosts\naddr_data_file %s\n", path[2]);
		fclose(f);
		start = i + 1;
		part++;
	}
	for (; part < 3; part++)
		unlink(path[part]);
	a = (struct ibacm_import_args){ .dir = dir, .sysfs = dir, .hostname = "fuzz",
					.hosts_out = hosts_out };
	ret = ibacm_import(sink, sink, &a);
	if (ret > 0)
		__builtin_trap();
	return 0;
}
