/* SPDX-License-Identifier: MIT */
/* Daemon logging: stderr in the foreground, syslog (the journal) otherwise. */
#ifndef IBRESD_LOG_H
#define IBRESD_LOG_H

#include "core/config.h"

void log_open(bool foreground, enum cfg_log_level level);
void log_set_level(enum cfg_log_level level);
void log_msg(enum cfg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
