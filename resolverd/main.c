// SPDX-License-Identifier: MIT
/* ibresd: command line, start-up, signals, reload and shutdown. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "ibres.h"
#include "daemon.h"
#include "os/hostdir_pub.h"
#include "fabric/fabric.h"
#include "core/hosts_file.h"
#include "core/log.h"
#include "os/netlink.h"
#include "os/privs.h"
#include "engine/resolver.h"
#include "ib/sa.h"
#include "frontend/kernel_paths.h"
#include "frontend/request.h"
#include "frontend/server.h"

#ifndef IBRES_SYSCONFDIR
#define IBRES_SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG IBRES_SYSCONFDIR "/ibres/ibresd.conf"

struct sigctx {
	struct loop_fd lf;
	struct ibresd *d;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ibresd [OPTIONS]\n"
		"InfiniBand name and path resolver daemon (nss-ib); speaks the ibacm client protocol.\n"
		"\n"
		"  -c, --config FILE    configuration file (default " DEFAULT_CONFIG ")\n"
		"  -s, --socket PATH    listen on PATH instead of the configured socket\n"
		"  -f, --foreground     stay in the foreground and log to stderr\n"
		"  -d, --debug          log at debug level (overrides log_level)\n"
		"      --check-config   parse the configuration and the hosts file, print the\n"
		"                       effective settings and exit (1 on the first error)\n"
		"  -h, --help           show this help and exit\n"
		"  -V, --version        show the version and exit\n"
		"\n"
		"Signals: SIGTERM/SIGINT shut down cleanly; SIGHUP reloads the configuration and\n"
		"the hosts file, keeping learned cache entries.\n"
		"Exit status: 0 clean shutdown, 1 configuration or start-up error, 2 usage error.\n"
		"See ibresd(8) and ibresd.conf(5).\n");
}

/* Load and check a config and its hosts file; report the first error on stderr/log. */
static int load_all(const char *path, const char *socket_override, struct ibres_config *cfg,
		    struct cfg_hosts *hosts, bool to_log)
{
	char err[CFG_ERR_MAX];
	int ret;

	memset(hosts, 0, sizeof(*hosts));
	config_defaults(cfg);
	ret = config_load(path, cfg, err, sizeof(err));
	if (!ret && socket_override[0])
		snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s", socket_override);
	if (!ret) {
		/* one shipped config serves every node: an unnamed endpoint takes
		 * this host's name */
		char host[IBRES_NAME_MAX + 1] = "";

		gethostname(host, sizeof(host) - 1);
		ret = config_default_names(cfg, host);
		if (ret)
			snprintf(err, sizeof(err), "%s: host name '%s' cannot name an endpoint",
				 path, host);
	}
	if (!ret)
		ret = config_validate(cfg, err, sizeof(err));
	if (!ret) {
		ret = fabric_check_config(cfg, err, sizeof(err));
		if (ret > 0) {
			if (to_log)
				log_warn("%s", err);
			else
				fprintf(stderr, "ibresd: warning: %s\n", err);
			ret = 0;
		}
	}
	if (!ret && cfg->hosts_file[0])
		ret = hosts_load(cfg->hosts_file, hosts, err, sizeof(err));
	if (!ret && request_bound_ms(cfg) >= IBRES_TIMEOUT_DEFAULT_MS) {
		/* not an error: clients that set IBRES_TIMEOUT_MS are served */
		snprintf(err, sizeof(err),
			 "timeout and retries let a lookup wait %llu ms, longer than ibresctl and"
			 " libibres wait by default (%u ms): set IBRES_TIMEOUT_MS above it for them",
			 (unsigned long long)request_bound_ms(cfg), IBRES_TIMEOUT_DEFAULT_MS);
		if (to_log)
			log_warn("%s", err);
		else
			fprintf(stderr, "ibresd: warning: %s\n", err);
	}
	if (ret) {
		if (to_log)
			log_err("%s", err);
		else
			fprintf(stderr, "ibresd: %s\n", err);
	}
	return ret;
}

static void reload(struct ibresd *d)
{
	static struct ibres_config cfg; /* large: keep it off the stack */
	char err[CFG_ERR_MAX];
	struct cfg_hosts hosts;
	int ret;

	log_info("SIGHUP: reloading %s", d->config_path);
	sd_notify(0, "RELOADING=1");
	if (load_all(d->config_path, d->socket_override, &cfg, &hosts, true)) {
		log_err("reload failed; keeping the running configuration");
		goto out;
	}
	if (config_reload_check(d->opened, d->n_opened, &cfg, err, sizeof(err))) {
		log_err("reload refused: %s; keeping the running configuration", err);
		hosts_free(&hosts);
		goto out;
	}
	if (strcmp(cfg.socket_path, d->cfg.socket_path) ||
	    strcmp(cfg.acm_socket_path, d->cfg.acm_socket_path))
		log_warn("socket paths changed: they take effect at the next restart");
	snprintf(cfg.socket_path, sizeof(cfg.socket_path), "%s", d->cfg.socket_path);
	snprintf(cfg.acm_socket_path, sizeof(cfg.acm_socket_path), "%s", d->cfg.acm_socket_path);
	if (strcmp(cfg.user, d->cfg.user))
		log_warn("user changed: it takes effect at the next restart");
	snprintf(cfg.user, sizeof(cfg.user), "%s", d->cfg.user);
	if (strcmp(cfg.host_directory, d->cfg.host_directory))
		log_warn("host_directory changed: it takes effect at the next restart");
	snprintf(cfg.host_directory, sizeof(cfg.host_directory), "%s", d->cfg.host_directory);
	if (cfg.kernel_paths != d->cfg.kernel_paths)
		log_warn("kernel_paths changed: it takes effect at the next restart");
	cfg.kernel_paths = d->cfg.kernel_paths;
	ret = resolver_reload(&d->res, &cfg, &hosts);
	hosts_free(&hosts);
	if (ret) {
		log_err("reload failed: %s", strerror(-ret));
		goto out;
	}
	log_set_level(d->cfg.log_level);
	kernel_paths_reload(d);
	log_info("configuration reloaded: %u endpoints, %u static hosts", d->eps.n,
		 d->res.n_static_hosts);
out:
	sd_notify(0, "READY=1");
}

/* The shared host directory, unless [daemon] host_directory = none. Only no
 * memory stops the daemon; a generation that cannot be made (logged) leaves
 * clients on the socket. */
static int start_directory(struct ibresd *d)
{
	int ret;

	if (!d->cfg.host_directory[0])
		return 0;
	ret = hostdir_start(&d->dir, &d->loop, &d->store);
	if (ret) {
		log_err("host directory: %s", strerror(-ret));
		return ret;
	}
	resolver_publish(&d->res, d->dir);
	return 0;
}

static void on_signal(struct loop_fd *lf, uint32_t events)
{
	struct sigctx *sc = container_of(lf, struct sigctx, lf);
	struct signalfd_siginfo si;

	(void)events;
	while (read(lf->fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			reload(sc->d);
			break;
		case SIGTERM:
		case SIGINT:
			log_info("signal %u: shutting down", si.ssi_signo);
			loop_stop(&sc->d->loop);
			break;
		}
	}
}

/* Room for what the server may hold with max_clients, plus our own. */
static void raise_fd_limit(unsigned max_clients)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)server_fds_max(max_clients) + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
		log_warn("open file limit %lu is below the %lu that max_clients %u needs",
			 (unsigned long)rl.rlim_cur, (unsigned long)want, max_clients);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct ibresd d = { .kpath_fd = -1 }; /* large; one per process */
	struct sigctx sc = { .d = &d };
	bool check_only = false, debug = false;
	sigset_t mask;
	int opt, ret, status = 1;

	snprintf(d.config_path, sizeof(d.config_path), "%s", DEFAULT_CONFIG);
	while ((opt = getopt_long(argc, argv, "c:s:fdhV", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			snprintf(d.config_path, sizeof(d.config_path), "%s", optarg);
			break;
		case 's':
			if (strlen(optarg) >= sizeof(d.socket_override)) {
				fprintf(stderr, "ibresd: --socket: path too long (max %zu bytes)\n",
					sizeof(d.socket_override) - 1);
				return 2;
			}
			strcpy(d.socket_override, optarg);
			break;
		case 'f':
			d.foreground = true;
			break;
		case 'd':
			debug = true;
			break;
		case 'C':
			check_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ibresd %s\n", IBRES_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ibresd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	if (load_all(d.config_path, d.socket_override, &d.cfg, &d.static_hosts, false))
		return 1;
	d.n_opened = d.cfg.n_eps;
	memcpy(d.opened, d.cfg.eps, d.n_opened * sizeof(d.opened[0]));
	snprintf(d.run_as.name, sizeof(d.run_as.name), "%s", d.cfg.user);
	if (privs_lookup(&d.run_as)) {
		hosts_free(&d.static_hosts);
		return 1;
	}
	if (debug)
		d.cfg.log_level = LOG_LVL_DEBUG;
	if (check_only) {
		config_print(&d.cfg, stdout);
		printf("# %u endpoints, %u static hosts: configuration OK\n", d.cfg.n_eps,
		       d.static_hosts.n_hosts);
		hosts_free(&d.static_hosts);
		return 0;
	}

	log_open(d.foreground, d.cfg.log_level);
	d.start_ms = now_ms();
	d.scratch = malloc(IBRES_MSG_MAX);
	if (!d.scratch || loop_init(&d.loop) < 0) {
		log_err("out of memory");
		goto out_free;
	}
	raise_fd_limit(d.cfg.max_clients);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sc.lf.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	sc.lf.cb = on_signal;
	if (sc.lf.fd < 0 || loop_add_fd(&d.loop, &sc.lf, EPOLLIN) < 0) {
		log_err("signalfd: %s", strerror(errno));
		goto out_loop;
	}

	/* without it (logged): the configured addresses only */
	d.netlink = netlink_start(&d.loop, &d.cfg, &d.eps);
	ret = resolver_init(&d.res,
			    &(struct resolver_deps){ .cfg = &d.cfg, .loop = &d.loop, .store = &d.store,
						     .eps = &d.eps, .nl = d.netlink },
			    &d.static_hosts);
	if (ret) {
		log_err("cannot start the resolver: %s", strerror(-ret));
		goto out_sig;
	}
	ret = start_directory(&d);
	if (ret)
		goto out_resolver;
	/* before the server, which closes the passed descriptors it does not serve */
	kernel_paths_adopt(&d);
	ret = server_open(&d);
	if (ret)
		goto out_dir;
	/* IB ports first: they give endpoints their GID and LID */
	ret = sa_start(&d.sa, &(struct sa_deps){ .cfg = &d.cfg, .loop = &d.loop, .eps = &d.eps,
						 .store = &d.store, .nl = d.netlink });
	if (ret) {
		log_err("cannot start the SA client: %s", strerror(-ret));
		goto out_server;
	}
	resolver_attach(&d.res, d.sa, NULL);
	ret = fabric_start(&d.fabric,
			   &(struct fabric_deps){ .cfg = &d.cfg, .loop = &d.loop, .eps = &d.eps,
						  .store = &d.store, .sa = d.sa,
						  .ev = resolver_fabric_events(&d.res) });
	if (ret) {
		log_err("cannot start the fabric protocol: %s", strerror(-ret));
		goto out_sa;
	}
	resolver_attach(&d.res, d.sa, d.fabric);
	/* the endpoints have their ports' GIDs now: the kernel's queries can be answered */
	kernel_paths_start(&d);
	/* everything that needs root is open */
	if (privs_drop(&d.run_as, d.config_path, d.cfg.hosts_file, d.kpath != NULL))
		goto out_fabric;
	privs_net_admin(d.kpath != NULL);
	if (!d.foreground && daemon(0, 0) < 0) {
		log_err("daemon: %s", strerror(errno));
		goto out_fabric;
	}
	log_info("ibresd %s ready: %u endpoints, %u static hosts", IBRES_VERSION, d.eps.n,
		 d.res.n_static_hosts);
	sd_notify(0, "READY=1");

	ret = loop_run(&d.loop);
	if (ret)
		log_err("event loop: %s", strerror(-ret));
	else
		status = 0;
	sd_notify(0, "STOPPING=1");
	/* readers go to the socket first: the store is about to change a lot */
	resolver_publish(&d.res, NULL);
	hostdir_stop(d.dir);
	d.dir = NULL;

out_fabric:
	kernel_paths_stop(&d); /* the kernel asks the SA for what is in flight */
	resolver_attach(&d.res, d.sa, NULL);
	fabric_stop(d.fabric);
	d.fabric = NULL;
out_sa:
	resolver_attach(&d.res, NULL, NULL);
	sa_stop(d.sa); /* leave the IB groups */
	d.sa = NULL;
out_server:
	server_close(&d);
out_dir:
	resolver_publish(&d.res, NULL);
	hostdir_stop(d.dir);
	d.dir = NULL;
out_resolver:
	resolver_fini(&d.res);
out_sig:
	netlink_stop(d.netlink);
	d.netlink = NULL;
	close(sc.lf.fd);
out_loop:
	loop_fini(&d.loop);
out_free:
	free(d.scratch);
	hosts_free(&d.static_hosts);
	log_info("stopped");
	return status;
}
