// SPDX-License-Identifier: MIT
/*
 * The logger is the one piece of process-wide state outside the daemon's
 * context: log calls come from every layer, and threading a context pointer
 * through each just to log would obscure every signature.
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

static struct {
	bool foreground;
	enum cfg_log_level level;
} logger = { true, LOG_LVL_INFO };

void log_open(bool foreground, enum cfg_log_level level)
{
	logger.foreground = foreground;
	logger.level = level;
	if (!foreground)
		openlog("ibresd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum cfg_log_level level)
{
	logger.level = level;
}

void log_msg(enum cfg_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	va_list ap;

	if (level > logger.level)
		return;
	va_start(ap, fmt);
	if (logger.foreground) {
		fprintf(stderr, "ibresd: %s: ", names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(prio[level], fmt, ap);
	}
	va_end(ap);
}
