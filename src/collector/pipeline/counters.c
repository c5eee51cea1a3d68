/* SPDX-License-Identifier: MIT */
/*
 * counters.c - see counters.h.  One row per enum sp_counter, in its order,
 * and the metrics generated from the rows.
 */
#include <stddef.h>

#include "collector/pipeline/counters.h"

const struct sp_counter_family_info sp_counter_families[SP_CF__MAX] = {
	[SP_CF_ONCPU_EVENTS] = { "spanprof_bpf_oncpu_events_total", NULL,
		"On-CPU perf events seen by BPF (= the sum of "
		"spanprof_bpf_oncpu_outcomes_total)" },
	[SP_CF_ONCPU_OUTCOMES] = { "spanprof_bpf_oncpu_outcomes_total", "outcome",
		"On-CPU perf events by outcome in BPF: idle (counted, not streamed), filtered "
		"(not a target), written to the ring buffer, or lost because it was full" },
	[SP_CF_STACK_ERRORS] = { "spanprof_bpf_stack_errors_total", "stack",
		"Stacks BPF could not read (kernel: bpf_get_stack failed; user: the first "
		"frame-pointer read faulted)" },
	[SP_CF_STACKS_TRUNCATED] = { "spanprof_bpf_stacks_truncated_total", "stack",
		"Stacks deeper than the frame limit, cut at the limit" },
	[SP_CF_SCRATCH_ERRORS] = { "spanprof_bpf_scratch_errors_total", NULL,
		"On-CPU samples lost because the per-CPU scratch buffer was not found "
		"(also counted as ringbuf_dropped)" },
	[SP_CF_PROC_RECORDS] = { "spanprof_bpf_proc_records_total", "outcome",
		"Process records (exec, exit, context publication) written to the ring "
		"buffer or lost because it was full" },
	[SP_CF_CTX_READS] = { "spanprof_bpf_trace_context_reads_total", "outcome",
		"Thread trace-context reads in BPF for processes with a descriptor: valid, "
		"NULL pointer, record not valid, or memory unreadable" },
	[SP_CF_CTX_OBI] = { "spanprof_bpf_trace_context_obi_total", NULL,
		"Samples whose trace context came from OBI's shared map (the fallback)" },
	[SP_CF_CTX_ATTRS] = { "spanprof_bpf_trace_attributes_total", "outcome",
		"Thread-record attributes cut at the size limit, or unreadable (the sample "
		"is kept without them)" },
	[SP_CF_OFFCPU_SWITCHES] = { "spanprof_bpf_offcpu_switches_total", NULL,
		"Context switches seen by the off-CPU program (= the sum of "
		"spanprof_bpf_offcpu_switch_outcomes_total)" },
	[SP_CF_OFFCPU_SWITCH_OUTCOMES] = { "spanprof_bpf_offcpu_switch_outcomes_total", "outcome",
		"Context switches by outcome: not a wait of interest (idle, kernel thread, "
		"not a target, exiting), sampled out, capture state full, or captured" },
	[SP_CF_OFFCPU_CAPTURED_OUTCOMES] = { "spanprof_bpf_offcpu_captured_outcomes_total",
		"outcome",
		"Captured waits by outcome at switch-in: shorter than the minimum, written to "
		"the ring buffer, lost because it was full, or never closed (the rest are "
		"still blocked)" },
	[SP_CF_OFFCPU_DELETE_ERRORS] = { "spanprof_bpf_offcpu_delete_errors_total", NULL,
		"Pending off-CPU records BPF failed to delete (reused by the next capture)" },
	[SP_CF_UNWIND_FRAMES] = { "spanprof_bpf_unwind_frames_total", "method",
		"User frames by how their caller was found: a CFI row from the file's "
		".eh_frame table, or the frame pointer" },
	[SP_CF_UNWIND_FP_REASONS] = { "spanprof_bpf_unwind_fp_fallback_frames_total", "reason",
		"Frames stepped by frame pointer, by reason (= the frame_pointer series of "
		"spanprof_bpf_unwind_frames_total): --unwind fp, the process's ranges not "
		"in BPF yet, the file without a table (pending, evicted, too large, failed, "
		"anonymous code), no CFI for the pc, a CFI rule the unwinder cannot follow" },
	[SP_CF_UNWIND_ENDS] = { "spanprof_bpf_unwind_stacks_total", "end",
		"User stacks by how they ended: root (the thread root: complete), a zero "
		"return address or frame pointer, a value that is not a canonical user "
		"address or in none of the process's executable mappings (never emitted), "
		"a failed read, a bad frame, a leaf-only rule in a caller, or truncated" },
	[SP_CF_UNWIND_STALE] = { "spanprof_bpf_unwind_stale_stacks_total", NULL,
		"User stacks walked while the process had a new executable mapping not "
		"read yet (a pc outside the known ranges stepped by frame pointer)" },
	[SP_CF_UNWIND_MMAP] = { "spanprof_bpf_unwind_mmap_records_total", NULL,
		"New executable mappings (PROT_EXEC mmap/mprotect) signalled to the "
		"collector, one per stale episode" },
	[SP_CF_GO_LABEL_READS] = { "spanprof_bpf_go_label_reads_total", "outcome",
		"Goroutine pprof-label reads in BPF for Go processes: trace and span ids "
		"found, no goroutine on the thread, no labels, labels without ids, ids not "
		"valid (dropped), or memory unreadable" },
	[SP_CF_GO_LABELS] = { "spanprof_bpf_go_labels_total", "outcome",
		"Label reads that left labels out: cut at the count, size or space bounds, "
		"or a label whose strings were unreadable" },
	[SP_CF_GO_LABEL_CACHE] = { "spanprof_bpf_go_label_cache_total", "result",
		"Goroutine label sets read in BPF: taken from the cache of parsed sets "
		"(hit), parsed and cached (miss: new set or a newer GC cycle), or parsed "
		"uncached (off: no GC epoch probe on the binary and no "
		"runtime.mheap_.sweepgen address)" },
	[SP_CF_GO_GC_CYCLES] = { "spanprof_bpf_go_gc_cycles_total", "process",
		"GC cycles seen by the GC epoch probe (uprobe on runtime.gcSweep): of a "
		"profiled Go process (its label-cache epoch bumped), or of another process "
		"running the same executable (ignored)" },
	[SP_CF_GO_PARKS] = { "spanprof_bpf_go_parks_total", NULL,
		"Goroutine parks seen by the park probes (--off-cpu-goroutines; = the sum "
		"of spanprof_bpf_go_park_outcomes_total)" },
	[SP_CF_GO_PARK_OUTCOMES] = { "spanprof_bpf_go_park_outcomes_total", "outcome",
		"Goroutine parks by outcome: sampled out, pending state full, or captured" },
	[SP_CF_GO_PARK_CAPTURED_OUTCOMES] = { "spanprof_bpf_go_park_captured_outcomes_total",
		"outcome",
		"Captured goroutine parks by outcome at resume: shorter than the minimum, "
		"written to the ring buffer, lost because it was full, or replaced by the "
		"goroutine's next park (the rest are still parked, or their process exited)" },
	[SP_CF_UNWIND_COPY] = { "spanprof_bpf_unwind_stack_copy_total", "outcome",
		"User-stack words and chunks of the per-walk stack copy: chunks copied (one "
		"read each), words taken from the copy, words read directly (copy off or a "
		"word not 8-aligned), chunk copies that failed (the word's page unreadable), "
		"and copied words that differed from a direct read (benchmark check only)" },
	[SP_CF_WAKE_UNREAD] = { "spanprof_bpf_wakeups_unread_total", NULL,
		"Samples that woke the collector because their process had no unwind ranges "
		"yet (its maps not read: a new image under lazy exec reads), at most one a "
		"second per process" },
	[SP_CF_VMA_NAMES] = { "spanprof_bpf_vma_names_total", "outcome",
		"prctl(PR_SET_VMA_ANON_NAME) calls of profiled processes: another name than "
		"OTEL_CTX (no record: Go names its heap mappings so), or an OTEP 4719 "
		"publication whose record woke the collector or, within 10 ms of the last "
		"that did, waited in the ring" },
	[SP_CF_UNWIND_ROWS] = { "spanprof_bpf_unwind_row_lookups_total", "source",
		"CFI rows the user-stack walk looked up, by where it found them: the per-CPU "
		"row cache, or a search of the file's table (a cache miss)" },
};

const struct sp_counter_info sp_counters[SP_CNT__MAX] = {
	[SP_CNT_ONCPU_EVENTS] = { "oncpu_events", SP_CF_ONCPU_EVENTS, NULL },
	[SP_CNT_IDLE_SKIPPED] = { "idle_skipped", SP_CF_ONCPU_OUTCOMES, "idle" },
	[SP_CNT_FILTERED] = { "filtered", SP_CF_ONCPU_OUTCOMES, "filtered" },
	[SP_CNT_RB_SENT_ONCPU] = { "ringbuf_sent_oncpu", SP_CF_ONCPU_OUTCOMES, "ringbuf_sent" },
	[SP_CNT_RB_DROP_ONCPU] = { "ringbuf_dropped_oncpu", SP_CF_ONCPU_OUTCOMES,
				   "ringbuf_dropped" },
	[SP_CNT_KSTACK_ERR] = { "kstack_errors", SP_CF_STACK_ERRORS, "kernel" },
	[SP_CNT_USTACK_ERR] = { "ustack_errors", SP_CF_STACK_ERRORS, "user" },
	[SP_CNT_KSTACK_TRUNC] = { "kstack_truncated", SP_CF_STACKS_TRUNCATED, "kernel" },
	[SP_CNT_USTACK_TRUNC] = { "ustack_truncated", SP_CF_STACKS_TRUNCATED, "user" },
	[SP_CNT_RB_SENT_PROC] = { "ringbuf_sent_proc", SP_CF_PROC_RECORDS, "ringbuf_sent" },
	[SP_CNT_RB_DROP_PROC] = { "ringbuf_dropped_proc", SP_CF_PROC_RECORDS, "ringbuf_dropped" },
	[SP_CNT_SCRATCH_ERR] = { "scratch_errors", SP_CF_SCRATCH_ERRORS, NULL },
	[SP_CNT_CTX_OK] = { "ctx_ok", SP_CF_CTX_READS, "ok" },
	[SP_CNT_CTX_NULL] = { "ctx_null", SP_CF_CTX_READS, "null" },
	[SP_CNT_CTX_INVALID] = { "ctx_invalid", SP_CF_CTX_READS, "invalid" },
	[SP_CNT_CTX_READ_ERR] = { "ctx_read_errors", SP_CF_CTX_READS, "read_error" },
	[SP_CNT_OFFCPU_SWITCHES] = { "offcpu_switches", SP_CF_OFFCPU_SWITCHES, NULL },
	[SP_CNT_OFFCPU_BELOW_MIN] = { "offcpu_below_min", SP_CF_OFFCPU_CAPTURED_OUTCOMES,
				      "below_min" },
	[SP_CNT_OFFCPU_SAMPLED_OUT] = { "offcpu_sampled_out", SP_CF_OFFCPU_SWITCH_OUTCOMES,
					"sampled_out" },
	[SP_CNT_RB_SENT_OFFCPU] = { "ringbuf_sent_offcpu", SP_CF_OFFCPU_CAPTURED_OUTCOMES,
				    "ringbuf_sent" },
	[SP_CNT_RB_DROP_OFFCPU] = { "ringbuf_dropped_offcpu", SP_CF_OFFCPU_CAPTURED_OUTCOMES,
				    "ringbuf_dropped" },
	[SP_CNT_OFFCPU_STATE_FULL] = { "offcpu_state_full", SP_CF_OFFCPU_SWITCH_OUTCOMES,
				       "state_full" },
	[SP_CNT_OFFCPU_IDLE] = { "offcpu_idle", SP_CF_OFFCPU_SWITCH_OUTCOMES, "idle" },
	[SP_CNT_OFFCPU_KTHREAD] = { "offcpu_kthread", SP_CF_OFFCPU_SWITCH_OUTCOMES,
				    "kernel_thread" },
	[SP_CNT_OFFCPU_FILTERED] = { "offcpu_filtered", SP_CF_OFFCPU_SWITCH_OUTCOMES,
				     "filtered" },
	[SP_CNT_OFFCPU_EXITING] = { "offcpu_exiting", SP_CF_OFFCPU_SWITCH_OUTCOMES, "exiting" },
	[SP_CNT_OFFCPU_CAPTURED] = { "offcpu_captured", SP_CF_OFFCPU_SWITCH_OUTCOMES,
				     "captured" },
	[SP_CNT_OFFCPU_DELETE_ERR] = { "offcpu_delete_errors", SP_CF_OFFCPU_DELETE_ERRORS, NULL },
	[SP_CNT_OFFCPU_UNCLOSED] = { "offcpu_unclosed", SP_CF_OFFCPU_CAPTURED_OUTCOMES,
				     "unclosed" },
	[SP_CNT_CTX_OBI] = { "ctx_obi", SP_CF_CTX_OBI, NULL },
	[SP_CNT_CTX_ATTRS_TRUNC] = { "ctx_attrs_truncated", SP_CF_CTX_ATTRS, "truncated" },
	[SP_CNT_CTX_ATTRS_ERR] = { "ctx_attrs_errors", SP_CF_CTX_ATTRS, "read_error" },
	[SP_CNT_UNW_FRAMES_CFI] = { "unwind_frames_cfi", SP_CF_UNWIND_FRAMES, "cfi" },
	[SP_CNT_UNW_FRAMES_FP] = { "unwind_frames_fp", SP_CF_UNWIND_FRAMES, "frame_pointer" },
	[SP_CNT_UNW_FP_MODE] = { "unwind_fp_mode", SP_CF_UNWIND_FP_REASONS, "mode_fp" },
	[SP_CNT_UNW_FP_NO_PROC] = { "unwind_fp_no_ranges", SP_CF_UNWIND_FP_REASONS, "no_ranges" },
	[SP_CNT_UNW_FP_NO_TABLE] = { "unwind_fp_no_table", SP_CF_UNWIND_FP_REASONS, "no_table" },
	[SP_CNT_UNW_FP_NO_CFI] = { "unwind_fp_no_cfi", SP_CF_UNWIND_FP_REASONS, "no_cfi" },
	[SP_CNT_UNW_FP_UNSUPPORTED] = { "unwind_fp_unsupported", SP_CF_UNWIND_FP_REASONS,
					"unsupported" },
	[SP_CNT_UNW_END_ROOT] = { "unwind_end_root", SP_CF_UNWIND_ENDS, "root" },
	[SP_CNT_UNW_END_ZERO] = { "unwind_end_zero", SP_CF_UNWIND_ENDS, "zero" },
	[SP_CNT_UNW_END_NONCANON] = { "unwind_end_noncanonical", SP_CF_UNWIND_ENDS,
				      "noncanonical" },
	[SP_CNT_UNW_END_NOT_EXEC] = { "unwind_end_not_executable", SP_CF_UNWIND_ENDS,
				      "not_executable" },
	[SP_CNT_UNW_END_READ] = { "unwind_end_read_error", SP_CF_UNWIND_ENDS, "read_error" },
	[SP_CNT_UNW_END_BAD_FP] = { "unwind_end_bad_frame", SP_CF_UNWIND_ENDS, "bad_frame" },
	[SP_CNT_UNW_END_LEAF_ONLY] = { "unwind_end_leaf_only", SP_CF_UNWIND_ENDS, "leaf_only" },
	[SP_CNT_UNW_END_TRUNC] = { "unwind_end_truncated", SP_CF_UNWIND_ENDS, "truncated" },
	[SP_CNT_UNW_STALE] = { "unwind_stale_ranges", SP_CF_UNWIND_STALE, NULL },
	[SP_CNT_UNW_MMAP_EVENTS] = { "unwind_mmap_events", SP_CF_UNWIND_MMAP, NULL },
	[SP_CNT_GO_IDS] = { "go_ids", SP_CF_GO_LABEL_READS, "ids" },
	[SP_CNT_GO_NO_GOROUTINE] = { "go_no_goroutine", SP_CF_GO_LABEL_READS, "no_goroutine" },
	[SP_CNT_GO_NO_LABELS] = { "go_no_labels", SP_CF_GO_LABEL_READS, "no_labels" },
	[SP_CNT_GO_NO_IDS] = { "go_no_ids", SP_CF_GO_LABEL_READS, "no_ids" },
	[SP_CNT_GO_BAD_IDS] = { "go_bad_ids", SP_CF_GO_LABEL_READS, "bad_ids" },
	[SP_CNT_GO_READ_ERR] = { "go_read_errors", SP_CF_GO_LABEL_READS, "read_error" },
	[SP_CNT_GO_SWITCHING] = { "go_switching", SP_CF_GO_LABEL_READS, "switching" },
	[SP_CNT_GO_LABELS_CUT] = { "go_labels_cut", SP_CF_GO_LABELS, "cut" },
	[SP_CNT_GO_LABEL_ERR] = { "go_label_errors", SP_CF_GO_LABELS, "read_error" },
	[SP_CNT_GO_CACHE_HIT] = { "go_label_cache_hits", SP_CF_GO_LABEL_CACHE, "hit" },
	[SP_CNT_GO_CACHE_MISS] = { "go_label_cache_misses", SP_CF_GO_LABEL_CACHE, "miss" },
	[SP_CNT_GO_CACHE_OFF] = { "go_label_cache_off", SP_CF_GO_LABEL_CACHE, "off" },
	[SP_CNT_GO_GC_EPOCH] = { "go_gc_epoch_bumps", SP_CF_GO_GC_CYCLES, "tracked" },
	[SP_CNT_GO_GC_UNTRACKED] = { "go_gc_untracked", SP_CF_GO_GC_CYCLES, "untracked" },
	[SP_CNT_GO_PARKS] = { "go_parks", SP_CF_GO_PARKS, NULL },
	[SP_CNT_GO_PARK_SAMPLED_OUT] = { "go_park_sampled_out", SP_CF_GO_PARK_OUTCOMES,
					 "sampled_out" },
	[SP_CNT_GO_PARK_STATE_FULL] = { "go_park_state_full", SP_CF_GO_PARK_OUTCOMES,
					"state_full" },
	[SP_CNT_GO_PARK_CAPTURED] = { "go_park_captured", SP_CF_GO_PARK_OUTCOMES, "captured" },
	[SP_CNT_GO_PARK_BELOW_MIN] = { "go_park_below_min", SP_CF_GO_PARK_CAPTURED_OUTCOMES,
				       "below_min" },
	[SP_CNT_RB_SENT_GOPARK] = { "ringbuf_sent_gopark", SP_CF_GO_PARK_CAPTURED_OUTCOMES,
				    "ringbuf_sent" },
	[SP_CNT_RB_DROP_GOPARK] = { "ringbuf_dropped_gopark", SP_CF_GO_PARK_CAPTURED_OUTCOMES,
				    "ringbuf_dropped" },
	[SP_CNT_GO_PARK_UNCLOSED] = { "go_park_unclosed", SP_CF_GO_PARK_CAPTURED_OUTCOMES,
				      "unclosed" },
	[SP_CNT_UNW_COPY_CHUNKS] = { "unwind_copy_chunks", SP_CF_UNWIND_COPY, "chunk_copied" },
	[SP_CNT_UNW_COPY_WORDS] = { "unwind_copy_words", SP_CF_UNWIND_COPY, "word_cached" },
	[SP_CNT_UNW_COPY_DIRECT] = { "unwind_copy_direct", SP_CF_UNWIND_COPY, "word_direct" },
	[SP_CNT_UNW_COPY_FAIL] = { "unwind_copy_failed", SP_CF_UNWIND_COPY, "copy_failed" },
	[SP_CNT_UNW_COPY_MISMATCH] = { "unwind_copy_mismatch", SP_CF_UNWIND_COPY, "mismatch" },
	[SP_CNT_UNW_ROW_CACHED] = { "unwind_rows_cached", SP_CF_UNWIND_ROWS, "cache" },
	[SP_CNT_UNW_ROW_SEARCHED] = { "unwind_rows_searched", SP_CF_UNWIND_ROWS, "table" },
	[SP_CNT_WAKE_UNREAD] = { "wakeups_unread", SP_CF_WAKE_UNREAD, NULL },
	[SP_CNT_VMA_NAME_OTHER] = { "vma_name_other", SP_CF_VMA_NAMES, "other_name" },
	[SP_CNT_PUBLISH_WOKE] = { "publish_woke", SP_CF_VMA_NAMES, "publication_woke" },
	[SP_CNT_PUBLISH_QUIET] = { "publish_quiet", SP_CF_VMA_NAMES, "publication_quiet" },
};

/* A counter added to abi.h moves SP_CNT__MAX: give it a row above (and,
 * if it starts a new family, a family), then move this line. */
_Static_assert(SP_CNT_PUBLISH_QUIET + 1 == SP_CNT__MAX, "a row for every BPF counter");

void sp_counters__write_metrics(struct sp_metrics_buf *b, const uint64_t bpf[SP_CNT__MAX])
{
	for (int f = 0; f < SP_CF__MAX; f++) {
		const struct sp_counter_family_info *fam = &sp_counter_families[f];

		sp_metrics__family(b, fam->metric, SP_METRIC_COUNTER, fam->help);
		for (int i = 0; i < SP_CNT__MAX; i++) {
			const struct sp_counter_info *c = &sp_counters[i];
			const char *labels[] = { fam->label, c->value, NULL };

			if (c->family != (enum sp_counter_family)f)
				continue;
			sp_metrics__u64(b, fam->metric, fam->label ? labels : NULL, bpf[i]);
		}
	}
}
