/* SPDX-License-Identifier: MIT */
/*
 * stat_rows.c - see stat_rows.h: the writers, and struct sp_summary's
 * tables.
 */
#include <inttypes.h>
#include <string.h>

#include "collector/pipeline/stat_rows.h"
#include "collector/pipeline/summary.h"

void sp_stat_rows__metrics(struct sp_metrics_buf *b, struct sp_stat_table t, const void *base)
{
	for (size_t i = 0; i < t.n; i++) {
		const struct sp_stat_row *r = &t.rows[i];
		const char *const labels[] = { r->label, r->value, NULL };
		uint64_t v;

		if (!r->metric)
			continue;
		memcpy(&v, (const char *)base + r->off, sizeof(v));
		if (r->help)
			sp_metrics__family(b, r->metric, r->type, r->help);
		if (r->scale)
			sp_metrics__f64(b, r->metric, r->label ? labels : NULL, v / r->scale);
		else
			sp_metrics__u64(b, r->metric, r->label ? labels : NULL, v);
	}
}

bool sp_stat_rows__json(FILE *f, struct sp_stat_table t, const void *base, bool first)
{
	bool any = false;

	for (size_t i = 0; i < t.n; i++) {
		const struct sp_stat_row *r = &t.rows[i];
		uint64_t v;

		if (!r->json)
			continue;
		memcpy(&v, (const char *)base + r->off, sizeof(v));
		fprintf(f, "%s\"%s\": %" PRIu64, first && !any ? "" : ", ", r->json, v);
		any = true;
	}
	return any;
}

#define AT(field) SP_STAT_AT(struct sp_summary, field)
/* JSON only; a family of one series (with its JSON key or NULL); a family's
 * first labelled series; the next ones. */
#define JSON(key, field) { key, NULL, SP_METRIC_COUNTER, NULL, NULL, NULL, AT(field), 0 }
#define ONE(key, name, type, help, field) \
	{ key, name, SP_METRIC_##type, help, NULL, NULL, AT(field), 0 }
#define FAMILY(key, name, type, help, label, value, field) \
	{ key, name, SP_METRIC_##type, help, label, value, AT(field), 0 }
#define MORE(key, name, label, value, field) \
	{ key, name, SP_METRIC_COUNTER, NULL, label, value, AT(field), 0 }
#define TABLE(name, rows) \
	const struct sp_stat_table name = { rows, sizeof(rows) / sizeof(rows[0]) }

#define SE "spanprof_stack_events_total"
static const struct sp_stat_row consumer_rows[] = {
	JSON("received_oncpu", consumer.received_oncpu),
	JSON("received_offcpu", consumer.received_offcpu),
	JSON("received_exec", consumer.received_exec),
	JSON("received_exit", consumer.received_exit),
	JSON("received_publish", consumer.received_publish),
	JSON("malformed", consumer.malformed),
	ONE("aggregated", "spanprof_samples_aggregated_total", COUNTER,
	    "Samples accepted by the aggregator", consumer.aggregated),
	JSON("agg_dropped", consumer.agg_dropped),
	FAMILY("kstack_truncated", SE, COUNTER,
	       "Stack quality: truncated and empty stacks, frames in no known mapping",
	       "event", "kernel_truncated", consumer.kstack_truncated),
	MORE("ustack_truncated", SE, "event", "user_truncated", consumer.ustack_truncated),
	MORE("ustack_empty", SE, "event", "user_empty", consumer.ustack_empty),
	JSON("frames", consumer.frames),
	MORE("frames_unresolved", SE, "event", "frame_unresolved", consumer.frames_unresolved),
	JSON("frames_anon", consumer.frames_anon),
	ONE("ctx_samples", "spanprof_trace_context_samples_total", COUNTER,
	    "Samples carrying a trace id and span id", consumer.ctx_samples),
	ONE("attrs_samples", "spanprof_trace_attributes_samples_total", COUNTER,
	    "Samples carrying thread-record attributes", consumer.attrs_samples),
	ONE("attrs_dropped", "spanprof_trace_attributes_dropped_total", COUNTER,
	    "Thread-record attribute entries not kept (partial, or over the per-sample key "
	    "limit)", consumer.attrs_dropped),
	JSON("go_samples", consumer.go_samples),
	JSON("go_labels_samples", consumer.go_labels_samples),
	JSON("go_labels_bad_utf8", consumer.go_labels_bad_utf8),
	FAMILY("pump_woken", "spanprof_collector_wakeups_total", COUNTER,
	       "Waits of the collector's main thread for BPF records, by what ended them: a "
	       "record that woke it, or the timeout (the drain period, a fast drain)",
	       "cause", "ring", pump_woken),
	MORE("pump_timed_out", "spanprof_collector_wakeups_total", "cause", "timeout",
	     pump_timed_out),
};
TABLE(sp_stat_consumer, consumer_rows);

#define PE "spanprof_process_events_total"
#define MU "spanprof_samples_maps_unread_total"
static const struct sp_stat_row procs_rows[] = {
	ONE("procs_seen", "spanprof_processes_seen_total", COUNTER,
	    "Processes seen by the process table", procs.procs_seen),
	ONE(NULL, "spanprof_processes_tracked", GAUGE,
	    "Processes held by the process table (live, and gone ones until the interval "
	    "that may hold their samples is exported)", procs.procs_tracked),
	ONE(NULL, "spanprof_mappings_tracked", GAUGE,
	    "Mapping ids held by the process table's registry (kernel included)",
	    procs.mappings_tracked),
	ONE(NULL, "spanprof_processes_released_total", COUNTER,
	    "Gone processes forgotten after their last interval was exported",
	    procs.procs_released),
	ONE(NULL, "spanprof_mappings_released_total", COUNTER,
	    "Mapping ids recycled after their last interval was exported",
	    procs.mappings_released),
	FAMILY("maps_reads", PE, COUNTER,
	       "Process table events and bounds hit (file_timed_out: a mapped file did not "
	       "answer within 250 ms; file_skipped: such a file met again, or every reading "
	       "helper stuck; maps_timed_out: a process's maps did not answer within 250 ms; "
	       "maps_skipped: its earlier read still stuck, or every helper)",
	       "event", "maps_read", procs.maps_reads),
	MORE("maps_gone", PE, "event", "gone_before_read", procs.maps_gone),
	MORE("maps_unreadable", PE, "event", "maps_unreadable", procs.maps_unreadable),
	MORE("procs_table_full", PE, "event", "table_full", procs.procs_table_full),
	MORE("mappings_full", PE, "event", "mappings_full", procs.mappings_full),
	MORE("files_timed_out", PE, "event", "file_timed_out", procs.files_timed_out),
	MORE("files_skipped", PE, "event", "file_skipped", procs.files_skipped),
	MORE("maps_timed_out", PE, "event", "maps_timed_out", procs.maps_timed_out),
	MORE("maps_skipped", PE, "event", "maps_skipped", procs.maps_skipped),
	MORE("exec_reads_deferred", PE, "event", "exec_read_deferred", procs.exec_reads_deferred),
	MORE("exec_reads_on_sample", PE, "event", "exec_read_on_sample",
	     procs.exec_reads_on_sample),
	MORE("exec_reads_saved", PE, "event", "exec_read_saved", procs.exec_reads_saved),
	MORE("rereads_pending", PE, "event", "reread_pending", procs.rereads_pending),
	MORE("exec_reads_learned", PE, "event", "exec_read_learned", procs.exec_reads_learned),
	MORE("exec_names_learned", PE, "event", "exec_name_learned", procs.exec_names_learned),
	JSON("no_build_id", procs.no_build_id),
	JSON("addr_unmapped", procs.addr_unmapped),
	JSON("addr_anon", procs.addr_anon),
	/* In the JSON as the nested "samples_unread" object (summary.c). */
	FAMILY(NULL, MU, COUNTER,
	       "Samples with user frames of a process gone before its maps were read (frames "
	       "unresolved), by when the read was tried: exec (its exec event), first_sample "
	       "(a deferred exec read), first_sight",
	       "reason", "exec", consumer.samples_unread[SP_PROC_UNREAD_EXEC]),
	MORE(NULL, MU, "reason", "first_sample", consumer.samples_unread[SP_PROC_UNREAD_DEFERRED]),
	MORE(NULL, MU, "reason", "first_sight", consumer.samples_unread[SP_PROC_UNREAD_NEW]),
};
TABLE(sp_stat_procs, procs_rows);

#define CP "spanprof_ctx_publications_total"
#define CC "spanprof_ctx_process_checks_total"
static const struct sp_stat_row ctx_rows[] = {
	ONE("procs_resolved", "spanprof_ctx_processes_resolved_total", COUNTER,
	    "Processes whose trace context BPF reads (descriptor in the tls_descs map)",
	    ctx_procs_resolved),
	JSON("procs_failed", ctx_procs_failed),
	FAMILY("publish_rereads", CP, COUNTER,
	       "Late context publications (prctl PR_SET_VMA): re-read, or coalesced into a "
	       "later re-read (at most one per process per 100 ms)",
	       "outcome", "reread", ctx_publish_rereads),
	MORE("publish_coalesced", CP, "outcome", "coalesced", ctx_publish_coalesced),
	ONE("publish_deferred", "spanprof_ctx_deferred_rereads_total", COUNTER,
	    "Re-reads done when a burst of coalesced publications went quiet",
	    ctx_publish_deferred),
	FAMILY("examined", CC, COUNTER,
	       "Processes checked for a published context: examined (the process context "
	       "read, one /proc/PID/maps read), or skipped because the maps the process table "
	       "had just read show no OTEL_CTX mapping",
	       "outcome", "examined", ctx_examined),
	MORE("skipped", CC, "outcome", "skipped", ctx_skipped),
};
TABLE(sp_stat_ctx, ctx_rows);

#define GP "spanprof_go_processes_total"
#define GF "spanprof_go_process_failures_total"
#define GK "spanprof_go_park_probes_total"
#define GL "spanprof_go_label_fixups_total"
/* The failure family goes on after this table with one series per
 * enum sp_go_fail reason (written by the caller, sp_go_fail__name). */
static const struct sp_stat_row go_rows[] = {
	JSON("procs", go.procs),
	FAMILY("procs_dwarf", GP, COUNTER,
	       "Go processes given a descriptor (their pprof labels are read in BPF), by where "
	       "the runtime offsets came from", "offsets", "dwarf", go.procs_dwarf),
	MORE("procs_table", GP, "offsets", "table", go.procs_table),
	JSON("procs_failed", go.procs_failed),
	FAMILY("bpf_map_full", GF, COUNTER,
	       "Go processes left without a descriptor, by reason (counted, never guessed)",
	       "reason", "bpf_map_full", go.bpf_map_full),
	JSON("files_read", go.files_read),
	JSON("cache_hits", go.cache_hits),
	JSON("keys_dropped", go.keys_dropped),
	JSON("parks_files", go.parks_files),
	JSON("parks_unsupported", go.parks_unsupported),
	JSON("parks_failed", go.parks_failed),
	JSON("parks_gone", go.parks_gone),
	MORE("exe_timed_out", GF, "reason", "exe_timed_out", go.exe_timed_out),
	MORE("exe_skipped", GF, "reason", "exe_skipped", go.exe_skipped),
	JSON("label_cache_epoch", go.cache_epoch),
	JSON("label_cache_sweepgen", go.cache_sweepgen),
	JSON("label_cache_off", go.cache_off),
	JSON("gc_files", go.gc_files),
	JSON("gc_unsupported", go.gc_unsupported),
	JSON("gc_failed", go.gc_failed),
	JSON("gc_track_failed", go.gc_track_failed),
};
TABLE(sp_stat_go, go_rows);

static const struct sp_stat_row go_more_rows[] = {
	FAMILY(NULL, GK, COUNTER,
	       "Go executables and goroutine park probes (--off-cpu-goroutines): attached, "
	       "gopark not recognised, attach failed", "outcome", "attached", go.parks_files),
	MORE(NULL, GK, "outcome", "unsupported", go.parks_unsupported),
	MORE(NULL, GK, "outcome", "failed", go.parks_failed),
	FAMILY(NULL, "spanprof_go_gc_probes_total", COUNTER,
	       "Go executables and the label cache's GC epoch probe (uprobe on runtime.gcSweep): "
	       "attached, no runtime.gcSweep, attach failed", "outcome", "attached", go.gc_files),
	MORE(NULL, "spanprof_go_gc_probes_total", "outcome", "unsupported", go.gc_unsupported),
	MORE(NULL, "spanprof_go_gc_probes_total", "outcome", "failed", go.gc_failed),
	ONE(NULL, "spanprof_go_parks_gone_total", COUNTER,
	    "Captured goroutine parks of processes that exited before the goroutine ran",
	    go.parks_gone),
	FAMILY(NULL, GL, COUNTER,
	       "Go labels the collector dropped (key_dropped: the process's key table full, or "
	       "a key with a NUL) or kept with invalid UTF-8 mended to '?' (bad_utf8)",
	       "outcome", "key_dropped", go.keys_dropped),
	MORE(NULL, GL, "outcome", "bad_utf8", consumer.go_labels_bad_utf8),
};
TABLE(sp_stat_go_more, go_more_rows);

#define UT "spanprof_unwind_tables_total"
#define UB "spanprof_unwind_bounds_total"
#define UM "spanprof_unwind_bpf_bytes"
static const struct sp_stat_row unwind_rows[] = {
	FAMILY("budget_bytes", UM, GAUGE,
	       "BPF memory of the unwinder, charged to the cgroup (so in the memory guard's "
	       "usage): budget, the part of it the memory guard allows now (memguard_cap), in "
	       "use (tables and ranges, in 256 KiB chunks), of it tables and ranges, and the "
	       "fixed arrays", "kind", "budget", unw.budget_bytes),
	{ NULL, UM, SP_METRIC_GAUGE, NULL, "kind", "memguard_cap", AT(unw.cap_bytes), 0 },
	{ "bytes_in_use", UM, SP_METRIC_GAUGE, NULL, "kind", "in_use", AT(unw.bytes_in_use), 0 },
	{ "table_bytes", UM, SP_METRIC_GAUGE, NULL, "kind", "tables", AT(unw.table_bytes), 0 },
	{ "range_bytes", UM, SP_METRIC_GAUGE, NULL, "kind", "ranges", AT(unw.range_bytes), 0 },
	{ "fixed_bytes", UM, SP_METRIC_GAUGE, NULL, "kind", "fixed", AT(unw.fixed_bytes), 0 },
	ONE("files", "spanprof_unwind_files", GAUGE, "Executable files the unwinder knows",
	    unw.files),
	ONE("tables", "spanprof_unwind_tables", GAUGE, "Unwind tables in BPF", unw.tables),
	ONE("procs", "spanprof_unwind_processes", GAUGE,
	    "Processes with executable ranges in BPF", unw.procs),
	FAMILY("built", UT, COUNTER, "Unwind table builds by outcome, and evictions",
	       "outcome", "built", unw.built),
	MORE("rebuilt", UT, "outcome", "rebuilt", unw.rebuilt),
	MORE("no_cfi", UT, "outcome", "no_cfi", unw.no_cfi),
	JSON("failed", unw.failed),
	MORE("failed_malformed", UT, "outcome", "malformed", unw.failed_malformed),
	MORE("failed_unreadable", UT, "outcome", "unreadable", unw.failed_unreadable),
	MORE("failed_too_slow", UT, "outcome", "too_slow", unw.failed_too_slow),
	MORE("failed_stalled", UT, "outcome", "stalled", unw.failed_stalled),
	MORE("too_large", UT, "outcome", "too_large", unw.too_large),
	MORE("evicted", UT, "outcome", "evicted", unw.evicted),
	MORE(NULL, UT, "outcome", "evicted_memguard", unw.evicted_memguard),
	ONE("stalled_skipped", "spanprof_unwind_stalled_skipped_total", COUNTER,
	    "Of the stalled builds, those skipped at once: their device had stalled an open "
	    "or read before", unw.stalled_skipped),
	FAMILY("files_full", UB, COUNTER,
	       "Unwinder bounds hit (each leaves some stacks to frame pointers)",
	       "bound", "files_full", unw.files_full),
	MORE("queue_full", UB, "bound", "queue_full", unw.queue_full),
	MORE("procs_full", UB, "bound", "procs_full", unw.procs_full),
	MORE("ranges_no_space", UB, "bound", "ranges_no_space", unw.ranges_no_space),
	MORE("ranges_truncated", UB, "bound", "too_many_mappings", unw.ranges_truncated),
	MORE("paused_builds", UB, "bound", "paused_by_memguard", unw.paused_builds),
	ONE("rereads", "spanprof_unwind_rereads_total", COUNTER,
	    "Maps re-read for the unwinder after a new executable mapping", unw.rereads),
	{ "build_cpu_ns", "spanprof_unwind_builder_cpu_seconds_total", SP_METRIC_COUNTER,
	  "CPU time of the unwind table builder thread", NULL, NULL, AT(unw.build_cpu_ns), 1e9 },
	JSON("build_throttle_ns", unw.build_throttle_ns),
	JSON("cfi_rows", unw.cfi_rows),
	JSON("eh_frame_bytes", unw.eh_frame_bytes),
	ONE(NULL, "spanprof_unwind_memguard_evicted_bytes_total", COUNTER,
	    "Unwind table bytes evicted to bring the memory guard's usage down",
	    unw.evicted_memguard_bytes),
	ONE("deferred", "spanprof_unwind_deferred_files_total", COUNTER,
	    "New files whose table waits for a sample with a frame in them (lazy builds)",
	    unw.deferred),
	ONE("sample_queued", "spanprof_unwind_sample_queued_total", COUNTER,
	    "Unwind table builds queued because a sample had a frame in the file",
	    unw.sample_queued),
	ONE("unsampled", "spanprof_unwind_unsampled_files", GAUGE,
	    "Known files no sample has needed yet (lazy builds: no table built)",
	    unw.unsampled),
	ONE("builder_pushes", "spanprof_unwind_builder_handoffs_total", COUNTER,
	    "Hand-offs of builds to the builder thread (one per batch)", unw.builder_pushes),
	ONE("builder_wakeups", "spanprof_unwind_builder_wakeups_total", COUNTER,
	    "Hand-offs that had to wake the idle builder thread", unw.builder_wakeups),
};
/* (spanprof_unwind_build_queue, a uint32_t, is written by the agent.) */
TABLE(sp_stat_unwind, unwind_rows);
