/* SPDX-License-Identifier: MIT */
/*
 * report.h - what a person reads: top functions, folded stacks, a flame
 * graph, and a per-span table, from a (symbolized) profile.
 *
 * Contract:
 *   - sp_report__new() walks the profile once: it keeps the samples that
 *     pass the filters (trace id, span id), turns each stack into frame
 *     names (leaf first; a location's inlined lines expand in place,
 *     callee first) and builds, per sample kind, a call tree (root first)
 *     plus self/cumulative totals per function name.  The profile is only
 *     read and may be freed afterwards.
 *   - Weights: on-CPU counts samples (sp_sample.count); off-CPU weighs
 *     blocked nanoseconds (sp_sample.value_ns).  Cumulative counts a
 *     function once per sample even when it recurses.
 *   - Frame names: the function name; an unresolved frame is
 *     "[unknown] FILE+0xOFFSET" (mapping base name and file offset) or
 *     "[unknown] 0xADDR" without a mapping; an unresolved kernel frame is
 *     "[kernel] 0xADDR".  ';' in names becomes ':' in folded output.
 *   - Off-CPU reasons come from a sample label "off_cpu_reason" (also
 *     "off_cpu.reason" or "reason"): a string (sleep, io, runq, ...) or
 *     the number of enum sp_offcpu_reason.
 *   - Output functions write to a FILE and return 0 or a negative errno.
 *     Nothing here allocates per output line beyond the report's tables.
 *   - Not thread safe: building and sorting use file-scope comparator
 *     context.  One report at a time per process.
 */
#ifndef SPANPROF_SYMBOLIZER_REPORT_H
#define SPANPROF_SYMBOLIZER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* Root frames above each stack (collapsed output, flame graph): AUTO is
 * PROCESS for a profile of more than one process, else NONE. */
enum sp_report_group {
	SP_GROUP_AUTO = 0,
	SP_GROUP_PROCESS,	/* "exe-pid" (flamegraph.pl's stackcollapse --pid) */
	SP_GROUP_THREAD,	/* "exe-pid", then "thread-tid" */
	SP_GROUP_NONE,
};

struct sp_report_opts {
	enum sp_report_group group;
	bool filter_trace;
	uint8_t trace_id[16];
	bool filter_span;
	uint8_t span_id[8];
};

struct sp_report;

int sp_report__new(const struct sp_profile *p, const struct sp_report_opts *o,
		   struct sp_report **out);
void sp_report__free(struct sp_report *r);	/* NULL-safe */

/* Kinds with at least one kept sample. */
bool sp_report__has_kind(const struct sp_report *r, enum sp_sample_kind k);
uint64_t sp_report__samples(const struct sp_report *r);

/* Top n functions by self weight, then by cumulative weight. */
int sp_report__top(const struct sp_report *r, enum sp_sample_kind k,
		   uint32_t n, FILE *out);
/* "root;caller;leaf value" lines, value = samples (on-CPU) or
 * microseconds (off-CPU), sorted by path; kernel frames end in "_[k]"
 * (flamegraph.pl's convention, which colours them apart). */
int sp_report__collapsed(const struct sp_report *r, enum sp_sample_kind k,
			 FILE *out);
/* Per (trace id, span id): on-CPU samples and ms, off-CPU waits and ms
 * (total, then sleep / io / runq / other) and the top leaf frames by
 * time; spans sorted by total time, the no-span row last. */
int sp_report__by_span(const struct sp_report *r, uint32_t top_frames,
		       FILE *out);
/* One self-contained HTML file (inline CSS and JS, no fetches). */
int sp_report__flamegraph(const struct sp_report *r, const char *title,
			  FILE *out);
/* The same page with a span picker: spans[i] (n of them) are reports of
 * the same profile kept to one (trace id, span id) each (sp_report_opts'
 * filters), offered as "TRACE/SPAN" next to "all spans". */
int sp_report__flamegraph_spans(const struct sp_report *r, const char *title,
				struct sp_report *const *spans, uint32_t n, FILE *out);
/* The links of the n heaviest spans (on-CPU + off-CPU time), heaviest
 * first, into out; returns how many (spans without ids not counted). */
uint32_t sp_report__top_spans(const struct sp_report *r, struct sp_link *out, uint32_t n);

/* Parses lower/upper-case hex of exactly 2*n digits into out. */
int sp_report__parse_hex(const char *s, uint8_t *out, size_t n);

#endif /* SPANPROF_SYMBOLIZER_REPORT_H */
