/* SPDX-License-Identifier: MIT */
/*
 * counters.h - the one name table of the BPF counters (enum sp_counter in
 * spanprof/abi.h): for each counter its name in the record summary's JSON
 * ("bpf": {...}) and where it goes on the agent's /metrics (a metric
 * family and, in families of several counters, one label value).  The
 * summary and the metrics are both generated from it, so a counter added
 * to abi.h and given its row here shows in both; a counter without a row
 * fails the build (the _Static_assert in counters.c) and
 * tests/unit/test_counters.c.
 *
 * Families partition the counters so that a family's series add up where
 * the BPF accounting says they do (abi.h, summary.h): e.g.
 *   spanprof_bpf_oncpu_events_total
 *     = sum(spanprof_bpf_oncpu_outcomes_total{outcome=...})
 *   spanprof_bpf_offcpu_switches_total
 *     = sum(spanprof_bpf_offcpu_switch_outcomes_total{outcome=...})
 *   spanprof_bpf_unwind_frames_total{method="frame_pointer"}
 *     = sum(spanprof_bpf_unwind_fp_fallback_frames_total{reason=...})
 * A family of one counter has no label (label == NULL, value == NULL).
 *
 * sp_counters__write_metrics writes them as Prometheus text
 * (base/metrics_text.h): one family per sp_counter_families row, in the
 * table's order, its HELP and TYPE once, then one series per counter of
 * that family.
 */
#ifndef SPANPROF_COUNTERS_H
#define SPANPROF_COUNTERS_H

#include <stdint.h>

#include "base/metrics_text.h"
#include "spanprof/abi.h"

enum sp_counter_family {
	SP_CF_ONCPU_EVENTS,
	SP_CF_ONCPU_OUTCOMES,
	SP_CF_STACK_ERRORS,
	SP_CF_STACKS_TRUNCATED,
	SP_CF_SCRATCH_ERRORS,
	SP_CF_PROC_RECORDS,
	SP_CF_CTX_READS,
	SP_CF_CTX_OBI,
	SP_CF_CTX_ATTRS,
	SP_CF_OFFCPU_SWITCHES,
	SP_CF_OFFCPU_SWITCH_OUTCOMES,
	SP_CF_OFFCPU_CAPTURED_OUTCOMES,
	SP_CF_OFFCPU_DELETE_ERRORS,
	SP_CF_UNWIND_FRAMES,
	SP_CF_UNWIND_FP_REASONS,
	SP_CF_UNWIND_ENDS,
	SP_CF_UNWIND_STALE,
	SP_CF_UNWIND_MMAP,
	SP_CF_GO_LABEL_READS,
	SP_CF_GO_LABELS,
	SP_CF_GO_LABEL_CACHE,
	SP_CF_GO_GC_CYCLES,
	SP_CF_GO_PARKS,
	SP_CF_GO_PARK_OUTCOMES,
	SP_CF_GO_PARK_CAPTURED_OUTCOMES,
	SP_CF_UNWIND_COPY,
	SP_CF_UNWIND_ROWS,
	SP_CF_WAKE_UNREAD,
	SP_CF_VMA_NAMES,
	SP_CF__MAX,
};

struct sp_counter_family_info {
	const char *metric;	/* Prometheus counter name, ends in _total */
	const char *label;	/* label key, or NULL for a one-counter family */
	const char *help;
};

struct sp_counter_info {
	const char *name;	/* summary JSON key */
	enum sp_counter_family family;
	const char *value;	/* label value, NULL in a one-counter family */
};

extern const struct sp_counter_family_info sp_counter_families[SP_CF__MAX];
extern const struct sp_counter_info sp_counters[SP_CNT__MAX];

void sp_counters__write_metrics(struct sp_metrics_buf *b, const uint64_t bpf[SP_CNT__MAX]);

#endif
