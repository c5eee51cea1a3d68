// SPDX-License-Identifier: MIT
/*
 * metrics_syms.c - host-symbol families on the agent's /metrics (see
 * metrics_syms.h).
 *
 * One table of stat_rows.h rows, one per sample line, in the order they
 * are written (a row with a help text opens its family; a row without a
 * label is a family of one sample), over one snapshot of the four modules'
 * statistics.
 */
#include <stddef.h>
#include <stdint.h>

#include "collector/agent/metrics_syms.h"
#include "collector/pipeline/stat_rows.h"
#include "collector/host/hostsyms.h"
#include "export/uploader.h"

struct syms_snapshot {
	struct sp_jit_maps_stats j;
	struct sp_hostsyms_stats h;
	struct sp_kernel_layout_stats k;
	struct sp_uploader_stats u;
};

/* Rows of stat_rows.h over struct syms_snapshot (metrics only: the record
 * summary writes its "jit" and "kernel_layout" objects itself). */
#define AT(field) SP_STAT_AT(struct syms_snapshot, field)
#define ONE(name, type, help, field) \
	{ NULL, name, SP_METRIC_##type, help, NULL, NULL, AT(field), 0 }
#define FAMILY(name, type, help, label, value, field) \
	{ NULL, name, SP_METRIC_##type, help, label, value, AT(field), 0 }
#define MORE(name, label, value, field) \
	{ NULL, name, SP_METRIC_COUNTER, NULL, label, value, AT(field), 0 }

#define JR "spanprof_jit_maps_refused_total"
#define JD "spanprof_jitdump_refused_total"
#define UO "spanprof_symbols_upload_blobs_total"

static const struct sp_stat_row rows[] = {
	ONE("spanprof_jit_maps_checks_total", COUNTER,
	    "Checks of a process's perf map (a stat, at most one per process per second)",
	    j.checks),
	ONE("spanprof_jit_maps_pieces_total", COUNTER,
	    "Perf-map pieces copied (content-addressed, for the symbolizer)", j.pieces),
	ONE("spanprof_jit_maps_bytes_total", COUNTER, "Perf-map bytes copied", j.bytes_read),
	FAMILY(JR, COUNTER, "Perf maps not copied, by reason (no_map: the process has none)",
	       "reason", "no_map", j.no_map),
	MORE(JR, "reason", "not_regular", j.not_regular),
	MORE(JR, "reason", "wrong_owner", j.wrong_owner),
	MORE(JR, "reason", "stale", j.stale),
	MORE(JR, "reason", "unreadable", j.unreadable),
	MORE(JR, "reason", "truncated", j.truncated),
	MORE(JR, "reason", "over_budget", j.over_budget),
	MORE(JR, "reason", "not_shipped", j.sink_refused),
	MORE(JR, "reason", "table_full", j.procs_full),
	MORE(JR, "reason", "timed_out", j.timed_out),
	MORE(JR, "reason", "skipped_stuck", j.skipped_stuck),
	ONE("spanprof_jit_maps_notes_dropped_total", COUNTER,
	    "Samples in JIT code whose perf-map check was not queued (queue full)",
	    j.notes_dropped),
	ONE("spanprof_jit_maps_restarts_total", COUNTER,
	    "Perf maps shipped again from their start (replaced, rewritten, or a lost upload)",
	    j.restarts),
	ONE("spanprof_jit_maps_io_stuck", GAUGE,
	    "Helper threads still blocked on a JIT map or dump that did not answer", j.io_stuck),
	ONE("spanprof_jit_maps_processes", GAUGE, "Processes whose perf map is followed",
	    j.procs_with_map),
	ONE("spanprof_jitdump_checks_total", COUNTER,
	    "Checks that found a process's jitdump (jit-PID.dump mapped executable)",
	    j.jitdump_checks),
	ONE("spanprof_jitdump_code_loads_total", COUNTER,
	    "Jitdump code loads and moves turned into perf-map lines", j.jitdump_loads),
	FAMILY(JD, COUNTER, "Jitdump content not used, by reason",
	       "reason", "file_refused", j.jitdump_refused),
	MORE(JD, "reason", "bad_record", j.jitdump_bad_records),
	MORE(JD, "reason", "move_unknown", j.jitdump_moves_unknown),
	MORE(JD, "reason", "name_cut", j.jitdump_names_cut),
	MORE(JD, "reason", "info_skipped", j.jitdump_skipped),
	MORE(JD, "reason", "line_table_unused", j.jitdump_debug_unused),
	MORE(JD, "reason", "line_table_bad", j.jitdump_debug_bad),
	MORE(JD, "reason", "line_table_too_big", j.jitdump_debug_too_big),
	MORE(JD, "reason", "line_row_outside_code", j.jitdump_debug_rows_out),
	MORE(JD, "reason", "line_file_not_text", j.jitdump_debug_bad_names),
	ONE("spanprof_jitdump_line_tables_total", COUNTER,
	    "Jitdump DEBUG_INFO line tables shipped with their code load",
	    j.jitdump_line_tables),
	ONE("spanprof_jitdump_line_rows_total", COUNTER,
	    "Rows of the jitdump line tables shipped (address to file:line)",
	    j.jitdump_line_rows),

	ONE("spanprof_kernel_modules", GAUGE, "Loadable modules mapped for kernel frames",
	    k.modules),
	ONE("spanprof_kernel_module_sections", GAUGE,
	    "Executable module sections besides .text mapped for kernel frames",
	    k.module_sections),
	ONE("spanprof_kernel_module_sections_skipped", GAUGE,
	    "Executable module sections left out at the last module read (name, bound)",
	    k.module_sections_skipped),
	ONE("spanprof_kernel_boot_frames_total", COUNTER,
	    "Kernel frames outside the image and modules (BPF, trampolines): boot-specific",
	    k.boot_frames),

	ONE("spanprof_symbols_store_writes_total", COUNTER,
	    "Host-symbol files written to --output-dir DIR/syms", h.store_writes),
	ONE("spanprof_symbols_store_errors_total", COUNTER,
	    "Host-symbol files that could not be written", h.store_errors),
	FAMILY(UO, COUNTER, "Host-symbol blobs for the symbolizer, by outcome",
	       "outcome", "queued", u.submitted),
	MORE(UO, "outcome", "known", u.known),
	MORE(UO, "outcome", "delivered", u.delivered),
	MORE(UO, "outcome", "failed", u.failed),
	MORE(UO, "outcome", "dropped_queue_full", u.dropped_queue_full),
	MORE(UO, "outcome", "dropped_shutdown", u.dropped_shutdown),
	ONE("spanprof_symbols_upload_requests_total", COUNTER,
	    "HTTP attempts uploading host symbols", u.sender.requests),
	ONE("spanprof_symbols_upload_retries_total", COUNTER, "Host-symbol upload retries",
	    u.sender.retries),
	ONE("spanprof_symbols_upload_sent_bytes_total", COUNTER,
	    "Host-symbol request bytes uploaded, every attempt", u.sender.bytes_sent),
	ONE("spanprof_symbols_upload_queue_bytes", GAUGE,
	    "Encoded host-symbol bytes waiting for upload (in flight included)", u.queue_bytes),
	ONE("spanprof_symbols_upload_queue_limit_bytes", GAUGE,
	    "Host-symbol upload queue cap (--symbols-queue-bytes)", u.queue_limit_bytes),
};

void sp_agent_metrics__syms(struct sp_metrics_buf *b, struct sp_hostsyms *hs,
			    struct sp_uploader *up)
{
	struct syms_snapshot s;

	sp_jit_maps__stats(sp_hostsyms__jit(hs), &s.j);
	sp_hostsyms__stats(hs, &s.h);
	sp_kernel_layout__stats(sp_hostsyms__kernel(hs), &s.k);
	sp_uploader__stats(up, &s.u);

	sp_stat_rows__metrics(b, (struct sp_stat_table){ rows, sizeof(rows) / sizeof(rows[0]) },
			      &s);
}
