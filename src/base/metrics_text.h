/* SPDX-License-Identifier: MIT */
/*
 * metrics_text.h - Prometheus text exposition format 0.0.4, the one writer
 * behind every /metrics (the agent's and spanprof-symbolizer serve's).
 *
 * Contract:
 *   - The writer fills a fixed-capacity buffer the caller owns; nothing is
 *     allocated.  sp_metrics__family writes a family's "# HELP" and
 *     "# TYPE" lines (every family has both: promtool check metrics wants
 *     them), sp_metrics__u64 / sp_metrics__f64 one sample line
 *     "name{labels} value".
 *   - Names are checked against [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 *     against [a-zA-Z_][a-zA-Z0-9_]*, counter family names must end in
 *     "_total"; a bad name writes nothing, returns -EINVAL and sets
 *     bad_name.  Help text is escaped (\\ and newline), label values too
 *     (\\ \" newline).
 *   - A line is assembled whole before it is appended: when the buffer is
 *     full the text ends at the last complete line, truncated is set and
 *     every later call returns -ENOSPC; a reader never sees half a line.
 *     A single line over 1 KiB is -E2BIG (nothing written).
 */
#ifndef SPANPROF_BASE_METRICS_TEXT_H
#define SPANPROF_BASE_METRICS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_metrics_buf {
	char *p;
	size_t len;
	size_t cap;
	bool truncated;
	bool bad_name;		/* a name failed validation (nothing written) */
};

enum sp_metric_type {
	SP_METRIC_COUNTER,
	SP_METRIC_GAUGE,
	SP_METRIC_SUMMARY,
	SP_METRIC_HISTOGRAM,
};

void sp_metrics_buf__init(struct sp_metrics_buf *b, char *mem, size_t cap);

/* "# HELP name help\n# TYPE name type\n".  help: backslash and newline
 * are escaped.  Counter names must end in "_total" (-EINVAL otherwise). */
int sp_metrics__family(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
		       const char *help);
/* "name{k1="v1",k2="v2"} value\n".  labels: NULL-terminated array of
 * key, value pairs, or NULL. */
int sp_metrics__u64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    uint64_t v);
int sp_metrics__f64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    double v);

/* A family of one unlabelled sample: __family then __u64. */
int sp_metrics__single_u64(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
			   const char *help, uint64_t v);
/* A finite double as the shortest decimal that reads back exactly (at most
 * 17 significant digits; out: at least 32 bytes).  sp_metrics__f64 uses it
 * for every finite value. */
void sp_metrics__format_f64(double v, char *out, size_t len);

bool sp_metrics__valid_name(const char *name);

#endif /* SPANPROF_BASE_METRICS_TEXT_H */
