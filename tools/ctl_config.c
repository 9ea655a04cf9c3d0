// SPDX-License-Identifier: MIT
/*
 * ibresctl config: check a file with the daemon's own parser (ibresd
 * --check-config, in a child bounded in time), generate one for this node
 * from sysfs, or import ibacm's. See ibresctl(1).
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confgen.h"
#include "ibacm_import.h"

/* ---- config check ------------------------------------------------------- */

/* ibresd next to this program (build tree, or bin/ beside sbin/), else PATH. */
static void find_ibresd(char *buf, size_t len)
{
	static const char *const rel[] = {"/ibresd", "/../sbin/ibresd"};
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t i;
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
				if ((size_t)snprintf(buf, len, "%s%s", self, rel[i]) < len &&
				    !access(buf, X_OK))
					return;
			}
		}
	}
	snprintf(buf, len, "ibresd");
}

/* config generate [SYSFS]: a config for this node on stdout. */
static int config_generate(struct ctl *c, int argc, char **argv)
{
	const char *sysfs = "/sys";
	char host[256] = "localhost";
	int n;

	if (argc == 2)
		sysfs = argv[1];
	else if (argc != 1)
		return ctl_usage_error("%s", "usage: config generate [--device DEV] [--name NAME] "
					     "[SYSFS_DIR]");
	if (c->gen_name)
		snprintf(host, sizeof(host), "%s", c->gen_name);
	else if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		strcpy(host, "localhost");
	n = confgen_write(stdout, sysfs, host, c->gen_device);
	if (n < 0)
		return ctl_failed(c, "config generate", n, -1);
	if (n == 0 && c->gen_device) {
		fprintf(stderr,
			"ibresctl: config generate: no IPoIB interface or RoCE port of "
			"device '%s' found\n",
			c->gen_device);
		return EXIT_NEGATIVE;
	}
	if (n == 0)
		fprintf(stderr, "ibresctl: config generate: no IPoIB interface or RoCE port "
				"found; the endpoint is left to fill in\n");
	return 0;
}

/* config import-ibacm [DIR [SYSFS]]: ibacm's configuration as ibresd.conf. */
static int config_import_ibacm(struct ctl *c, int argc, char **argv)
{
	char host[256] = "localhost";
	struct ibacm_import_args a = {
		.dir = argc >= 2 ? argv[1] : "/etc/rdma",
		.sysfs = argc >= 3 ? argv[2] : "/sys",
		.hostname = host,
		.hosts_out = c->hosts_out,
	};
	int ret;

	if (argc > 3)
		return ctl_usage_error("%s", "usage: config import-ibacm [DIR [SYSFS_DIR]]");
	if (access(a.dir, X_OK)) {
		fprintf(stderr, "ibresctl: config import-ibacm: %s: %s\n", a.dir, strerror(errno));
		return EXIT_NEGATIVE;
	}
	if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		strcpy(host, "localhost");
	ret = ibacm_import(stdout, stderr, &a);
	return ret ? EXIT_NEGATIVE : 0;
}

int cmd_config(struct ctl *c, int argc, char **argv)
{
	char prog[PATH_MAX], out[16384];
	size_t used = 0;
	int fds[2], wstatus = 0, ms, pr, bound_ms;
	uint64_t deadline;
	pid_t pid;
	ssize_t n;

	if (argc >= 1 && !strcmp(argv[0], "generate"))
		return config_generate(c, argc, argv);
	if (argc >= 1 && !strcmp(argv[0], "import-ibacm"))
		return config_import_ibacm(c, argc, argv);
	if (argc != 2 || strcmp(argv[0], "check"))
		return ctl_usage_error("%s",
				       "usage: config check FILE | config generate [--device DEV] "
				       "[--name NAME] [SYSFS_DIR] | config import-ibacm [DIR "
				       "[SYSFS_DIR]]");
	if (c->hosts_out)
		return ctl_usage_error("%s", "--hosts-out is for 'config import-ibacm' only");
	find_ibresd(prog, sizeof(prog));
	if (pipe2(fds, O_CLOEXEC) < 0)
		return ctl_failed(c, "config check", -errno, -1);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return ctl_failed(c, "config check", -errno, -1);
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execlp(prog, prog, "--check-config", "--config", argv[1], (char *)NULL);
		fprintf(stderr, "cannot run %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	/* the parse takes milliseconds; bound it anyway */
	bound_ms = c->timeout_ms > 10000 ? c->timeout_ms : 10000;
	deadline = ibc_now_ns() + (uint64_t)bound_ms * 1000000u;
	for (;;) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		uint64_t now = ibc_now_ns();
		char sink[4096];

		ms = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;
		pr = ms ? poll(&p, 1, ms) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0) {
			kill(pid, SIGKILL);
			break;
		}
		/* keep what fits, drain the rest so that the child never blocks */
		if (used < sizeof(out) - 1)
			n = read(fds[0], out + used, sizeof(out) - 1 - used);
		else
			n = read(fds[0], sink, sizeof(sink));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (used < sizeof(out) - 1)
			used += (size_t)n;
	}
	out[used] = '\0';
	close(fds[0]);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;

	bool ran = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 127;
	bool valid = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;

	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_str(&c->j, "file", argv[1]);
		json_bool(&c->j, "valid", valid);
		json_str(&c->j, "checker", prog);
		json_str(&c->j, "output", out);
		json_obj_end(&c->j);
		json_end(&c->j);
	} else {
		fputs(out, valid ? stdout : stderr);
		if (valid)
			printf("%s: configuration OK\n", argv[1]);
	}
	if (!ran) {
		fprintf(stderr, "ibresctl: config check: could not run %s\n", prog);
		return EXIT_UNREACHABLE;
	}
	return valid ? 0 : EXIT_NEGATIVE;
}
