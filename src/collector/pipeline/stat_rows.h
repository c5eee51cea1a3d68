/* SPDX-License-Identifier: MIT */
/*
 * stat_rows.h - one name table for the collector's user-space statistics
 * (struct sp_summary's sections), from which both the record summary's JSON
 * and the agent's /metrics families are written, as counters.h is for the
 * BPF counters: a statistic given a row shows in both, under the names the
 * row gives, and cannot be forgotten on one side.
 *
 * A table is an array of rows in output order, each a uint64_t field at
 * an offset of one base struct (struct sp_summary for the sp_stat_*
 * tables below; another snapshot for other users, agent/metrics_syms.c):
 *   json    its key in the summary's JSON object, or NULL (metrics only);
 *   metric  its family on /metrics, or NULL (JSON only);
 *   help    non-NULL on the row that opens its family (# HELP, # TYPE);
 *           NULL: another series of the family opened above;
 *   label, value: the series' one label, or NULL for a one-series family;
 *   scale   0: the value as an integer; else written as value / scale
 *           (nanoseconds as seconds).
 * A family's rows stand together (JSON-only rows may stand between them).
 */
#ifndef SPANPROF_STAT_ROWS_H
#define SPANPROF_STAT_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/metrics_text.h"

struct sp_stat_row {
	const char *json;
	const char *metric;
	enum sp_metric_type type;	/* of the family, read on its opening row */
	const char *help;
	const char *label;
	const char *value;
	size_t off;		/* of a uint64_t in the base struct */
	double scale;
};

struct sp_stat_table {
	const struct sp_stat_row *rows;
	size_t n;
};

/* offsetof(base, field), and a compile error unless field is a uint64_t. */
#define SP_STAT_AT(base, field) (offsetof(base, field) + \
				 _Generic(((base *)0)->field, uint64_t: 0))

/* Every row with a metric, as Prometheus text. */
void sp_stat_rows__metrics(struct sp_metrics_buf *b, struct sp_stat_table t, const void *base);
/* Every row with a json key, as ", \"key\": value" (the first without the
 * leading ", " when first is true); returns false when nothing was written. */
bool sp_stat_rows__json(FILE *f, struct sp_stat_table t, const void *base, bool first);

/* struct sp_summary's sections (summary.h). */
extern const struct sp_stat_table sp_stat_consumer;	/* "consumer" */
extern const struct sp_stat_table sp_stat_procs;	/* "procs" */
extern const struct sp_stat_table sp_stat_ctx;		/* "ctx" */
extern const struct sp_stat_table sp_stat_go;		/* "go": before the failure reasons */
extern const struct sp_stat_table sp_stat_go_more;	/* "go": after them */
extern const struct sp_stat_table sp_stat_unwind;	/* "unwind": the unwinder's tables */

#endif
