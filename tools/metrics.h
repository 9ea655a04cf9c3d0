/* SPDX-License-Identifier: MIT */
/* `ibresctl stats --format prometheus`: the daemon's named statistics in the
 * Prometheus text exposition format (for node_exporter's textfile collector). */
#ifndef IBRESCTL_METRICS_H
#define IBRESCTL_METRICS_H

#include <stdint.h>
#include <stdio.h>

enum metric_kind { METRIC_COUNTER, METRIC_GAUGE };

struct metric_desc {
	const char *stat;   /* the name in the daemon's STATS answer */
	enum metric_kind kind;
	const char *prom;   /* Prometheus name without "ibresd_" and "_total" */
	const char *help;
};

/* The description of the daemon statistic @stat, or NULL if unknown. */
const struct metric_desc *metric_find(const char *stat);

/* Write the statistic @stat = @value as one metric family: HELP, TYPE and
 * the sample. A statistic this table does not know is written as "untyped"
 * under its own name (made a valid metric name), so nothing is lost. */
void metric_write_prom(FILE *f, const char *stat, uint64_t value);

#endif
