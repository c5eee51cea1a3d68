// SPDX-License-Identifier: MIT
/*
 * metrics_syms.c - host-symbol families on the agent's /metrics (see
 * metrics_syms.h).
 */
#include "collector/agent/metrics_syms.h"
#include "collector/host/hostsyms.h"
#include "export/uploader.h"

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

#define counter(b, name, help, v) sp_metrics__single_u64(b, name, SP_METRIC_COUNTER, help, v)
#define gauge(b, name, help, v) sp_metrics__single_u64(b, name, SP_METRIC_GAUGE, help, v)

void sp_agent_metrics__syms(struct sp_metrics_buf *b, struct sp_hostsyms *hs,
			    struct sp_uploader *up)
{
	static const char jr[] = "spanprof_jit_maps_refused_total";
	static const char uo[] = "spanprof_symbols_upload_blobs_total";
	static const char jd[] = "spanprof_jitdump_refused_total";
	struct sp_jit_maps_stats j;
	struct sp_hostsyms_stats h;
	struct sp_kernel_layout_stats k;
	struct sp_uploader_stats u;

	sp_jit_maps__stats(sp_hostsyms__jit(hs), &j);
	sp_hostsyms__stats(hs, &h);
	sp_kernel_layout__stats(sp_hostsyms__kernel(hs), &k);
	sp_uploader__stats(up, &u);

	counter(b, "spanprof_jit_maps_checks_total",
		"Checks of a process's perf map (a stat, at most one per process per second)",
		j.checks);
	counter(b, "spanprof_jit_maps_pieces_total",
		"Perf-map pieces copied (content-addressed, for the symbolizer)", j.pieces);
	counter(b, "spanprof_jit_maps_bytes_total", "Perf-map bytes copied", j.bytes_read);
	sp_metrics__family(b, jr, SP_METRIC_COUNTER,
			   "Perf maps not copied, by reason (no_map: the process has none)");
	sp_metrics__u64(b, jr, L("reason", "no_map"), j.no_map);
	sp_metrics__u64(b, jr, L("reason", "not_regular"), j.not_regular);
	sp_metrics__u64(b, jr, L("reason", "wrong_owner"), j.wrong_owner);
	sp_metrics__u64(b, jr, L("reason", "stale"), j.stale);
	sp_metrics__u64(b, jr, L("reason", "unreadable"), j.unreadable);
	sp_metrics__u64(b, jr, L("reason", "truncated"), j.truncated);
	sp_metrics__u64(b, jr, L("reason", "over_budget"), j.over_budget);
	sp_metrics__u64(b, jr, L("reason", "not_shipped"), j.sink_refused);
	sp_metrics__u64(b, jr, L("reason", "table_full"), j.procs_full);
	counter(b, "spanprof_jit_maps_notes_dropped_total",
		"Samples in JIT code whose perf-map check was not queued (queue full)",
		j.notes_dropped);
	counter(b, "spanprof_jit_maps_restarts_total",
		"Perf maps shipped again from their start (replaced, rewritten, or a lost upload)",
		j.restarts);
	gauge(b, "spanprof_jit_maps_processes", "Processes whose perf map is followed",
	      j.procs_with_map);
	counter(b, "spanprof_jitdump_checks_total",
		"Checks that found a process's jitdump (jit-PID.dump mapped executable)",
		j.jitdump_checks);
	counter(b, "spanprof_jitdump_code_loads_total",
		"Jitdump code loads and moves turned into perf-map lines", j.jitdump_loads);
	sp_metrics__family(b, jd, SP_METRIC_COUNTER,
			   "Jitdump content not used, by reason");
	sp_metrics__u64(b, jd, L("reason", "file_refused"), j.jitdump_refused);
	sp_metrics__u64(b, jd, L("reason", "bad_record"), j.jitdump_bad_records);
	sp_metrics__u64(b, jd, L("reason", "move_unknown"), j.jitdump_moves_unknown);
	sp_metrics__u64(b, jd, L("reason", "name_cut"), j.jitdump_names_cut);
	sp_metrics__u64(b, jd, L("reason", "info_skipped"), j.jitdump_skipped);

	gauge(b, "spanprof_kernel_modules", "Loadable modules mapped for kernel frames",
	      k.modules);
	counter(b, "spanprof_kernel_boot_frames_total",
		"Kernel frames outside the image and modules (BPF, trampolines): boot-specific",
		k.boot_frames);

	counter(b, "spanprof_symbols_store_writes_total",
		"Host-symbol files written to --output-dir DIR/syms", h.store_writes);
	counter(b, "spanprof_symbols_store_errors_total",
		"Host-symbol files that could not be written", h.store_errors);
	sp_metrics__family(b, uo, SP_METRIC_COUNTER,
			   "Host-symbol blobs for the symbolizer, by outcome");
	sp_metrics__u64(b, uo, L("outcome", "queued"), u.submitted);
	sp_metrics__u64(b, uo, L("outcome", "known"), u.known);
	sp_metrics__u64(b, uo, L("outcome", "delivered"), u.delivered);
	sp_metrics__u64(b, uo, L("outcome", "failed"), u.failed);
	sp_metrics__u64(b, uo, L("outcome", "dropped_queue_full"), u.dropped_queue_full);
	sp_metrics__u64(b, uo, L("outcome", "dropped_shutdown"), u.dropped_shutdown);
	counter(b, "spanprof_symbols_upload_requests_total",
		"HTTP attempts uploading host symbols", u.sender.requests);
	counter(b, "spanprof_symbols_upload_retries_total", "Host-symbol upload retries",
		u.sender.retries);
	counter(b, "spanprof_symbols_upload_sent_bytes_total",
		"Host-symbol request bytes uploaded, every attempt", u.sender.bytes_sent);
	gauge(b, "spanprof_symbols_upload_queue_bytes",
	      "Encoded host-symbol bytes waiting for upload (in flight included)",
	      u.queue_bytes);
	gauge(b, "spanprof_symbols_upload_queue_limit_bytes",
	      "Host-symbol upload queue cap (--symbols-queue-bytes)", u.queue_limit_bytes);
}
