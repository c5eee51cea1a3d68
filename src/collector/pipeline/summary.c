/* SPDX-License-Identifier: MIT */
/*
 * summary.c - see summary.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "collector/pipeline/counters.h"
#include "collector/pipeline/stat_rows.h"
#include "collector/pipeline/summary.h"

static const char *const unw_end_names[SP_UNW_END__MAX] = {
	[SP_UNW_END_NONE] = "none",
	[SP_UNW_END_ROOT] = "root",
	[SP_UNW_END_ZERO] = "zero",
	[SP_UNW_END_NONCANON] = "noncanonical",
	[SP_UNW_END_NOT_EXEC] = "not_executable",
	[SP_UNW_END_READ] = "read_error",
	[SP_UNW_END_BAD_FP] = "bad_frame",
	[SP_UNW_END_LEAF_ONLY] = "leaf_only",
	[SP_UNW_END_TRUNC] = "truncated",
};

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * a / b : 0.0;
}

/* User stacks of the samples received, and the tables behind them. */
static void print_unwind(FILE *f, const struct sp_summary *s)
{
	const struct sp_consumer_stats *c = &s->consumer;
	const struct sp_unwinder_stats *u = &s->unw;
	const uint64_t *b = s->bpf;

	fprintf(f, "  user stacks (%s): %" PRIu64 " walked, %.1f%% reached the thread root; "
		"frames %" PRIu64 ", %.1f%% by frame pointer",
		s->unwind_fallback ? "frame pointers: the kernel refused the .eh_frame unwinder"
		: s->unwind_fp	   ? "frame pointers, --unwind fp"
				   : ".eh_frame, frame pointer where none",
		c->ustack_walked, pct(c->ustack_root, c->ustack_walked), c->ustack_frames,
		pct(c->ustack_frames_fp, c->ustack_frames));
	if (!s->unwind_fp)
		fprintf(f, " (no ranges %" PRIu64 ", no table %" PRIu64 ", no CFI %" PRIu64
			", unsupported %" PRIu64 ")", b[SP_CNT_UNW_FP_NO_PROC], b[SP_CNT_UNW_FP_NO_TABLE],
			b[SP_CNT_UNW_FP_NO_CFI], b[SP_CNT_UNW_FP_UNSUPPORTED]);
	fputs("; ended:", f);
	for (int i = SP_UNW_END_ZERO; i < SP_UNW_END__MAX; i++)
		if (c->ustack_end[i])
			fprintf(f, " %s %" PRIu64, unw_end_names[i], c->ustack_end[i]);
	fputc('\n', f);
	if (s->unwind_fp)
		return;
	fprintf(f, "  unwind tables: %" PRIu64 " built, %" PRIu64 " rebuilt, %" PRIu64
		" without CFI, %" PRIu64 " failed (malformed %" PRIu64 ", unreadable %" PRIu64
		", too slow %" PRIu64 ", stalled %" PRIu64 " (%" PRIu64 " skipped on a device that "
		"stalled)), %" PRIu64 " too large, %" PRIu64
		" evicted; %.1f of %.0f MiB "
		"in BPF (tables %.1f, ranges %.2f), %" PRIu64 " processes; builder %.0f ms CPU%s\n",
		u->built, u->rebuilt, u->no_cfi, u->failed, u->failed_malformed,
		u->failed_unreadable, u->failed_too_slow, u->failed_stalled, u->stalled_skipped,
		u->too_large, u->evicted + u->evicted_memguard,
		u->bytes_in_use / 1048576.0, u->budget_bytes / 1048576.0, u->table_bytes / 1048576.0,
		u->range_bytes / 1048576.0, u->procs, u->build_cpu_ns / 1e6,
		s->mmap_watch ? "" : "; new mappings seen by misses only (no tracefs)");
	fprintf(f, "    unwind builds: %s; %" PRIu64 " files known, %" PRIu64
		" left to a sample's demand, %" PRIu64 " of them queued by one, %" PRIu64
		" still unsampled; %" PRIu64 " hand-offs to the builder, %" PRIu64 " woke it\n",
		u->lazy ? "lazy (when a sample needs a table)" : "eager (when a file is mapped)",
		u->files, u->deferred, u->sample_queued, u->unsampled, u->builder_pushes,
		u->builder_wakeups);
	if (u->files_full || u->queue_full || u->procs_full || u->ranges_no_space ||
	    u->ranges_truncated || u->paused_builds)
		fprintf(f, "    unwind bounds: files full %" PRIu64 ", build queue full %" PRIu64
			", processes full %" PRIu64 ", ranges without room %" PRIu64
			", processes with too many mappings %" PRIu64 ", builds paused (memory) %"
			PRIu64 "\n", u->files_full, u->queue_full, u->procs_full, u->ranges_no_space,
			u->ranges_truncated, u->paused_builds);
}

static const char *const reason_names[SP_OFF_OTHER + 1] = {
	"none", "sleep", "io", "runq", "other",
};

/* Captured waits not closed by switch-in before the program was detached,
 * and whether both off-CPU identities hold. */
static void offcpu_balance(const uint64_t *b, uint64_t *pending, int *ok)
{
	uint64_t out = b[SP_CNT_OFFCPU_IDLE] + b[SP_CNT_OFFCPU_KTHREAD] +
		       b[SP_CNT_OFFCPU_FILTERED] + b[SP_CNT_OFFCPU_EXITING] +
		       b[SP_CNT_OFFCPU_SAMPLED_OUT] + b[SP_CNT_OFFCPU_STATE_FULL] +
		       b[SP_CNT_OFFCPU_CAPTURED];
	uint64_t closed = b[SP_CNT_OFFCPU_BELOW_MIN] + b[SP_CNT_RB_SENT_OFFCPU] +
			  b[SP_CNT_RB_DROP_OFFCPU] + b[SP_CNT_OFFCPU_UNCLOSED];

	*pending = b[SP_CNT_OFFCPU_CAPTURED] >= closed ? b[SP_CNT_OFFCPU_CAPTURED] - closed : 0;
	*ok = out == b[SP_CNT_OFFCPU_SWITCHES] && closed <= b[SP_CNT_OFFCPU_CAPTURED];
}

void sp_summary__status_line(FILE *f, const struct sp_consumer_stats *c, uint64_t elapsed_ns)
{
	fprintf(f, "\r\033[K[%6.1fs] samples %" PRIu64 "  written %" PRIu64 "  dropped %" PRIu64,
		elapsed_ns / 1e9, c->received_oncpu + c->received_offcpu, c->aggregated,
		c->agg_dropped);
	fflush(f);
}

static void print_offcpu(FILE *f, const struct sp_summary *s)
{
	const uint64_t *b = s->bpf;
	uint64_t pending, tot_ns = 0, tot_waits = 0;
	int ok;

	offcpu_balance(b, &pending, &ok);
	for (int r = 0; r <= SP_OFF_OTHER; r++) {
		tot_ns += s->offcpu_ns[r];
		tot_waits += s->offcpu_waits[r];
	}
	if (s->off_cpu_sample_n)
		fprintf(f, "  off-CPU: waits >= %.0f us, 1 in %u captured\n",
			s->off_cpu_min_ns / 1e3, s->off_cpu_sample_n);
	else
		fprintf(f, "  off-CPU: waits >= %.0f us, adaptive sampling (~%u captures/s per CPU)\n",
			s->off_cpu_min_ns / 1e3, s->off_cpu_rate);
	fprintf(f, "    switches %" PRIu64 ": idle %" PRIu64 ", kernel threads %" PRIu64
		", other processes %" PRIu64 ", exiting %" PRIu64 ", sampled out %" PRIu64
		", state full %" PRIu64 ", captured %" PRIu64 "\n",
		b[SP_CNT_OFFCPU_SWITCHES], b[SP_CNT_OFFCPU_IDLE], b[SP_CNT_OFFCPU_KTHREAD],
		b[SP_CNT_OFFCPU_FILTERED], b[SP_CNT_OFFCPU_EXITING], b[SP_CNT_OFFCPU_SAMPLED_OUT],
		b[SP_CNT_OFFCPU_STATE_FULL], b[SP_CNT_OFFCPU_CAPTURED]);
	fprintf(f, "    captured %" PRIu64 ": streamed %" PRIu64 ", below minimum %" PRIu64
		", ring buffer full %" PRIu64 ", switch-in not seen %" PRIu64
		", still blocked at stop %" PRIu64 "%s\n",
		b[SP_CNT_OFFCPU_CAPTURED], b[SP_CNT_RB_SENT_OFFCPU], b[SP_CNT_OFFCPU_BELOW_MIN],
		b[SP_CNT_RB_DROP_OFFCPU], b[SP_CNT_OFFCPU_UNCLOSED], pending,
		ok ? "" : " (COUNTERS DO NOT ADD UP)");
	fprintf(f, "    waits received %" PRIu64 ", written %" PRIu64 " = %.3f s estimated off-CPU:",
		s->consumer.received_offcpu, tot_waits, tot_ns / 1e9);
	for (int r = 1; r <= SP_OFF_OTHER; r++)
		fprintf(f, " %s %.3f s", reason_names[r], s->offcpu_ns[r] / 1e9);
	fputc('\n', f);
}

/* JIT perf maps: what was read, what was refused and why. */
static void print_jit(FILE *f, const struct sp_summary *s)
{
	const struct sp_jit_maps_stats *j = &s->jit;

	fprintf(f, "  JIT perf maps: processes %" PRIu64 " (with a map %" PRIu64 "), pieces %"
		PRIu64 " (%" PRIu64 " bytes), checks %" PRIu64 "; refused: no map %" PRIu64
		", not a regular file %" PRIu64 ", wrong owner %" PRIu64 ", stale %" PRIu64
		", unreadable %" PRIu64 ", truncated %" PRIu64 ", over the total budget %" PRIu64
		", not stored %" PRIu64 ", notes dropped %" PRIu64 "\n", j->procs,
		j->procs_with_map, j->pieces, j->piece_bytes, j->checks, j->no_map,
		j->not_regular, j->wrong_owner, j->stale, j->unreadable, j->truncated,
		j->over_budget, j->sink_refused, j->notes_dropped);
	if (j->timed_out || j->skipped_stuck)
		fprintf(f, "  JIT files that did not answer within the read limit: %" PRIu64
			" checks timed out, %" PRIu64 " skipped while one stays stuck (%" PRIu64
			" helper threads still blocked); the file system behind a runtime's map "
			"or dump is hung\n", j->timed_out, j->skipped_stuck, j->io_stuck);
	if (j->jitdump_checks)
		fprintf(f, "  JIT jitdumps: checks %" PRIu64 ", code loads %" PRIu64
			"; refused: files %" PRIu64 ", records %" PRIu64 ", moves of unknown code %"
			PRIu64 "; names cut %" PRIu64 ", records skipped (unwind info) %" PRIu64
			"; line tables %" PRIu64 " (%" PRIu64 " rows), refused: unused %" PRIu64
			", bad %" PRIu64 ", too big %" PRIu64 ", rows outside the code %" PRIu64
			"; rows whose file name is not text (written with none) %" PRIu64
			"\n", j->jitdump_checks, j->jitdump_loads, j->jitdump_refused,
			j->jitdump_bad_records, j->jitdump_moves_unknown, j->jitdump_names_cut,
			j->jitdump_skipped, j->jitdump_line_tables, j->jitdump_line_rows,
			j->jitdump_debug_unused, j->jitdump_debug_bad, j->jitdump_debug_too_big,
			j->jitdump_debug_rows_out, j->jitdump_debug_bad_names);
}

/* Go processes: descriptors, and what the label reads found (one outcome
 * per read, bpf/golabels.bpf.h). */
static void print_go(FILE *f, const struct sp_summary *s)
{
	const struct sp_go_stats *g = &s->go;
	const struct sp_consumer_stats *c = &s->consumer;
	const uint64_t *b = s->bpf;
	uint64_t reads = b[SP_CNT_GO_IDS] + b[SP_CNT_GO_NO_GOROUTINE] + b[SP_CNT_GO_NO_LABELS] +
			 b[SP_CNT_GO_NO_IDS] + b[SP_CNT_GO_BAD_IDS] + b[SP_CNT_GO_READ_ERR];

	if (!g->procs && !g->procs_failed && !reads)
		return;
	fprintf(f, "  go: processes %" PRIu64 " (offsets from DWARF %" PRIu64
		", from the version table %" PRIu64 "), without a descriptor %" PRIu64,
		g->procs, g->procs_dwarf, g->procs_table, g->procs_failed);
	for (int i = 1; i < SP_GO_FAIL__MAX; i++)
		if (g->fail[i])
			fprintf(f, " (%s %" PRIu64 ")", sp_go_fail__name(i), g->fail[i]);
	if (g->bpf_map_full)
		fprintf(f, " (bpf_map_full %" PRIu64 ")", g->bpf_map_full);
	fprintf(f, "; label reads %" PRIu64 ": ids %" PRIu64 ", no goroutine %" PRIu64
		", no labels %" PRIu64 ", labels without ids %" PRIu64 ", bad ids %" PRIu64
		", unreadable %" PRIu64 "; labels cut %" PRIu64 ", unreadable labels %" PRIu64
		"; samples with labels %" PRIu64 " (invalid UTF-8 %" PRIu64 ", keys dropped %"
		PRIu64 ")\n", reads, b[SP_CNT_GO_IDS], b[SP_CNT_GO_NO_GOROUTINE],
		b[SP_CNT_GO_NO_LABELS], b[SP_CNT_GO_NO_IDS], b[SP_CNT_GO_BAD_IDS],
		b[SP_CNT_GO_READ_ERR], b[SP_CNT_GO_LABELS_CUT], b[SP_CNT_GO_LABEL_ERR],
		c->go_labels_samples, c->go_labels_bad_utf8, g->keys_dropped);
	fprintf(f, "  go label cache: hits %" PRIu64 ", misses %" PRIu64 ", uncached %" PRIu64
		"; processes by GC epoch %" PRIu64 ", by sweepgen %" PRIu64 ", uncached %" PRIu64
		"; epoch probes on %" PRIu64 " executables (no runtime.gcSweep %" PRIu64
		", attach failed %" PRIu64 ", entry failed %" PRIu64 "), GC cycles %" PRIu64
		" (other processes %" PRIu64 ")\n",
		b[SP_CNT_GO_CACHE_HIT], b[SP_CNT_GO_CACHE_MISS], b[SP_CNT_GO_CACHE_OFF],
		g->cache_epoch, g->cache_sweepgen, g->cache_off, g->gc_files, g->gc_unsupported,
		g->gc_failed, g->gc_track_failed, b[SP_CNT_GO_GC_EPOCH], b[SP_CNT_GO_GC_UNTRACKED]);
	if (g->parks_files || g->parks_unsupported || g->parks_failed || b[SP_CNT_GO_PARKS]) {
		uint64_t closed = b[SP_CNT_GO_PARK_BELOW_MIN] + b[SP_CNT_RB_SENT_GOPARK] +
				  b[SP_CNT_RB_DROP_GOPARK] + b[SP_CNT_GO_PARK_UNCLOSED] +
				  g->parks_gone;
		uint64_t cap = b[SP_CNT_GO_PARK_CAPTURED];

		fprintf(f, "  go parks: executables probed %" PRIu64 " (no known gopark %" PRIu64
			", attach failed %" PRIu64 "); parks %" PRIu64 ": sampled out %" PRIu64
			", state full %" PRIu64 ", captured %" PRIu64 " -> written %" PRIu64
			", below min %" PRIu64 ", ring full %" PRIu64 ", replaced %" PRIu64
			", process exited %" PRIu64 ", still parked %" PRIu64 "\n",
			g->parks_files, g->parks_unsupported, g->parks_failed, b[SP_CNT_GO_PARKS],
			b[SP_CNT_GO_PARK_SAMPLED_OUT], b[SP_CNT_GO_PARK_STATE_FULL], cap,
			b[SP_CNT_RB_SENT_GOPARK], b[SP_CNT_GO_PARK_BELOW_MIN],
			b[SP_CNT_RB_DROP_GOPARK], b[SP_CNT_GO_PARK_UNCLOSED], g->parks_gone,
			cap >= closed ? cap - closed : 0);
	}
}

void sp_summary__print(FILE *f, const struct sp_summary *s)
{
	const uint64_t *b = s->bpf;
	const struct sp_consumer_stats *c = &s->consumer;
	uint64_t streamed = b[SP_CNT_RB_SENT_ONCPU] + b[SP_CNT_RB_DROP_ONCPU];
	uint64_t received = c->received_oncpu;
	uint64_t in_transit = b[SP_CNT_RB_SENT_ONCPU] > received ?
			      b[SP_CNT_RB_SENT_ONCPU] - received : 0;

	fprintf(f, "spanprof: %.1f s on %u CPUs at %u Hz%s -> %s (%s)\n",
		s->duration_ns / 1e9, s->n_cpus, s->hz, s->off_cpu ? " + off-CPU" : "",
		s->output, s->format);
	fprintf(f, "  samples taken %" PRIu64 ": idle %" PRIu64 " (counted, not written), "
		"other processes %" PRIu64 ", streamed %" PRIu64 "\n",
		b[SP_CNT_ONCPU_EVENTS], b[SP_CNT_IDLE_SKIPPED], b[SP_CNT_FILTERED], streamed);
	fprintf(f, "  written %" PRIu64 ", dropped %" PRIu64 ": ring buffer full %" PRIu64
		", aggregator full %" PRIu64 ", malformed %" PRIu64 ", lost in transit %" PRIu64 "\n",
		c->aggregated, b[SP_CNT_RB_DROP_ONCPU] + c->agg_dropped + c->malformed + in_transit,
		b[SP_CNT_RB_DROP_ONCPU], c->agg_dropped, c->malformed, in_transit);
	if (s->agg.timestamps_dropped)
		fprintf(f, "  %" PRIu64 " samples written without their timestamp (raise "
			"--agg-budget for per-event timestamps)\n", s->agg.timestamps_dropped);
	fprintf(f, "  stacks: kernel truncated %" PRIu64 ", user truncated %" PRIu64
		", user empty %" PRIu64 "; frames %" PRIu64 ", unresolved user frames %" PRIu64
		" (in anonymous executable memory %" PRIu64 ")\n",
		c->kstack_truncated, c->ustack_truncated, c->ustack_empty, c->frames,
		c->frames_unresolved, c->frames_anon);
	if (s->jit.notes)
		print_jit(f, s);
	if (s->klayout.modules || s->klayout.boot_frames)
		fprintf(f, "  kernel: modules %" PRIu64 ", their sections besides .text %" PRIu64
			" (left out %" PRIu64 ": frames there are boot frames), boot frames %" PRIu64
			"\n", s->klayout.modules, s->klayout.module_sections,
			s->klayout.module_sections_skipped, s->klayout.boot_frames);
	fprintf(f, "  processes %" PRIu64 ": maps read %" PRIu64 ", gone before read %" PRIu64
		", unreadable %" PRIu64 ", mappings without build id %" PRIu64 "\n",
		s->procs.procs_seen, s->procs.maps_reads, s->procs.maps_gone,
		s->procs.maps_unreadable, s->procs.no_build_id);
	if (s->procs.exec_reads_deferred)
		fprintf(f, "  exec maps reads deferred to the first sample %" PRIu64 ": read then %"
			PRIu64 ", never needed %" PRIu64 " (exited or exec'd unsampled), pending %"
			PRIu64 "; re-reads left to that sample %" PRIu64 "; read at exec by a "
			"name whose process was gone at its first sample %" PRIu64 " (%" PRIu64
			" names)\n",
			s->procs.exec_reads_deferred, s->procs.exec_reads_on_sample,
			s->procs.exec_reads_saved,
			s->procs.exec_reads_deferred - s->procs.exec_reads_on_sample -
				s->procs.exec_reads_saved,
			s->procs.rereads_pending, s->procs.exec_reads_learned,
			s->procs.exec_names_learned);
	if (c->samples_unread[SP_PROC_UNREAD_EXEC] || c->samples_unread[SP_PROC_UNREAD_DEFERRED] ||
	    c->samples_unread[SP_PROC_UNREAD_NEW])
		fprintf(f, "  samples of processes gone before their maps were read %" PRIu64
			" (user frames unresolved): at the exec event %" PRIu64 ", at the first "
			"sample %" PRIu64 ", at first sight %" PRIu64 "\n",
			c->samples_unread[SP_PROC_UNREAD_EXEC] +
				c->samples_unread[SP_PROC_UNREAD_DEFERRED] +
				c->samples_unread[SP_PROC_UNREAD_NEW],
			c->samples_unread[SP_PROC_UNREAD_EXEC],
			c->samples_unread[SP_PROC_UNREAD_DEFERRED],
			c->samples_unread[SP_PROC_UNREAD_NEW]);
	if (s->procs.files_timed_out || s->procs.files_skipped)
		fprintf(f, "  files that did not answer within the limit %" PRIu64 " (skipped "
			"since: %" PRIu64 "): their mappings have no build id (a hung file "
			"system?)\n", s->procs.files_timed_out, s->procs.files_skipped);
	if (s->procs.maps_timed_out || s->procs.maps_skipped)
		fprintf(f, "  processes whose maps did not answer within the limit %" PRIu64
			" (skipped since: %" PRIu64 "): their earlier maps kept (a thread stuck "
			"on a hung file system holding the process's mmap lock?)\n",
			s->procs.maps_timed_out, s->procs.maps_skipped);
	fprintf(f, "  trace context: samples with ids %" PRIu64 " (with attributes %" PRIu64
		"); processes resolved %" PRIu64 ", failed %" PRIu64, c->ctx_samples,
		c->attrs_samples, s->ctx_procs_resolved, s->ctx_procs_failed);
	for (uint32_t i = 0; i < s->n_ctx_fail; i++)
		if (s->ctx_fail[i])
			fprintf(f, " (%s %" PRIu64 ")", s->ctx_fail_names[i], s->ctx_fail[i]);
	if (s->ctx_publish_rereads || s->ctx_publish_coalesced)
		fprintf(f, "; late publications re-read %" PRIu64 ", coalesced %" PRIu64
			" (+ %" PRIu64 " deferred re-reads; at most one per process per 100 ms)",
			s->ctx_publish_rereads, s->ctx_publish_coalesced, s->ctx_publish_deferred);
	if (s->obi_map)
		fprintf(f, "; from OBI's map %" PRIu64, s->bpf[SP_CNT_CTX_OBI]);
	if (s->bpf[SP_CNT_CTX_ATTRS_TRUNC] || s->bpf[SP_CNT_CTX_ATTRS_ERR] || c->attrs_dropped)
		fprintf(f, "; attributes truncated %" PRIu64 ", unreadable %" PRIu64
			", entries dropped %" PRIu64, s->bpf[SP_CNT_CTX_ATTRS_TRUNC],
			s->bpf[SP_CNT_CTX_ATTRS_ERR], c->attrs_dropped);
	if (!s->publish_watch)
		fputs("; late publication not watched (no tracefs)", f);
	fputc('\n', f);
	if (s->process_env)
		fprintf(f, "  resource identity from environments: read %" PRIu64 ", declaring %"
			PRIu64 ", unreadable %" PRIu64 ", truncated %" PRIu64 ", invalid %" PRIu64
			", attributes dropped %" PRIu64 ", over budget %" PRIu64 ", timed out %"
			PRIu64 " (skipped since %" PRIu64 ")\n", s->env.reads,
			s->env.declared, s->env.unreadable, s->env.truncated, s->env.invalid,
			s->env.attrs_dropped + s->res_attrs_dropped, s->env.over_budget,
			s->env.timed_out, s->env.skipped);
	print_unwind(f, s);
	print_go(f, s);
	if (s->off_cpu)
		print_offcpu(f, s);
	if (s->command && WIFEXITED(s->command_status))
		fprintf(f, "  command %s exited with status %d\n", s->command,
			WEXITSTATUS(s->command_status));
	else if (s->command && WIFSIGNALED(s->command_status))
		fprintf(f, "  command %s was killed by signal %d (%s)\n", s->command,
			WTERMSIG(s->command_status), strsignal(WTERMSIG(s->command_status)));
}

int sp_summary__write_json(const char *path, const struct sp_summary *s)
{
	const struct sp_consumer_stats *c = &s->consumer;
	FILE *f = fopen(path, "we");
	int err = 0;

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"hz\": %u, \"n_cpus\": %u, \"duration_ns\": %" PRIu64
		", \"mono_to_unix_ns\": %" PRId64 ",\n  \"bpf\": {", s->hz, s->n_cpus,
		s->duration_ns, s->mono_to_unix_ns);
	for (int i = 0; i < SP_CNT__MAX; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", sp_counters[i].name, s->bpf[i]);
	fputs("},\n  \"consumer\": {", f);
	sp_stat_rows__json(f, sp_stat_consumer, s, true);
	fputs("},\n", f);
	fprintf(f, "  \"jit\": {\"notes\": %" PRIu64 ", \"notes_dropped\": %" PRIu64
		", \"checks\": %" PRIu64 ", \"no_map\": %" PRIu64 ", \"not_regular\": %" PRIu64
		", \"wrong_owner\": %" PRIu64 ", \"stale\": %" PRIu64 ", \"unreadable\": %" PRIu64
		", \"reads\": %" PRIu64 ", \"bytes_read\": %" PRIu64 ", \"pieces\": %" PRIu64
		", \"piece_bytes\": %" PRIu64 ", \"restarts\": %" PRIu64 ", \"truncated\": %" PRIu64
		", \"over_budget\": %" PRIu64
		", \"sink_refused\": %" PRIu64 ", \"procs_full\": %" PRIu64 ", \"procs\": %" PRIu64
		", \"procs_with_map\": %" PRIu64 ", \"jitdump_checks\": %" PRIu64
		", \"jitdump_loads\": %" PRIu64 ", \"jitdump_refused\": %" PRIu64
		", \"jitdump_bad_records\": %" PRIu64 ", \"jitdump_skipped\": %" PRIu64
		", \"jitdump_moves_unknown\": %" PRIu64 ", \"jitdump_names_cut\": %" PRIu64
		", \"jitdump_line_tables\": %" PRIu64 ", \"jitdump_line_rows\": %" PRIu64
		", \"jitdump_debug_unused\": %" PRIu64 ", \"jitdump_debug_bad\": %" PRIu64
		", \"jitdump_debug_too_big\": %" PRIu64 ", \"jitdump_debug_rows_out\": %" PRIu64
		", \"jitdump_debug_bad_names\": %" PRIu64
		", \"timed_out\": %" PRIu64 ", \"skipped_stuck\": %" PRIu64
		", \"io_stuck\": %" PRIu64 ", \"store_writes\": %" PRIu64
		", \"store_errors\": %" PRIu64 "},\n",
		s->jit.notes, s->jit.notes_dropped, s->jit.checks, s->jit.no_map,
		s->jit.not_regular, s->jit.wrong_owner, s->jit.stale, s->jit.unreadable,
		s->jit.reads, s->jit.bytes_read, s->jit.pieces, s->jit.piece_bytes,
		s->jit.restarts, s->jit.truncated, s->jit.over_budget, s->jit.sink_refused,
		s->jit.procs_full,
		s->jit.procs, s->jit.procs_with_map, s->jit.jitdump_checks, s->jit.jitdump_loads,
		s->jit.jitdump_refused, s->jit.jitdump_bad_records, s->jit.jitdump_skipped,
		s->jit.jitdump_moves_unknown, s->jit.jitdump_names_cut, s->jit.jitdump_line_tables,
		s->jit.jitdump_line_rows, s->jit.jitdump_debug_unused, s->jit.jitdump_debug_bad,
		s->jit.jitdump_debug_too_big, s->jit.jitdump_debug_rows_out,
		s->jit.jitdump_debug_bad_names, s->jit.timed_out,
		s->jit.skipped_stuck, s->jit.io_stuck, s->hostsyms.store_writes,
		s->hostsyms.store_errors);
	fprintf(f, "  \"kernel_layout\": {\"modules\": %" PRIu64 ", \"module_sections\": %" PRIu64
		", \"module_sections_skipped\": %" PRIu64 ", \"boot_frames\": %" PRIu64 "},\n",
		s->klayout.modules, s->klayout.module_sections, s->klayout.module_sections_skipped,
		s->klayout.boot_frames);
	fprintf(f, "  \"aggregator\": {\"added\": %" PRIu64 ", \"accepted\": %" PRIu64
		", \"dropped_entries_full\": %" PRIu64 ", \"dropped_bytes_full\": %" PRIu64
		", \"timestamps_dropped\": %" PRIu64 ", \"entries\": %u, \"bytes_used\": %zu"
		", \"bytes_reserved\": %zu},\n", s->agg.added, s->agg.accepted,
		s->agg.dropped_entries_full, s->agg.dropped_bytes_full,
		s->agg.timestamps_dropped, s->agg.entries, s->agg.bytes_used,
		s->agg.bytes_reserved);
	fputs("  \"procs\": {", f);
	sp_stat_rows__json(f, sp_stat_procs, s, true);
	fprintf(f, ", \"samples_unread\": {\"exec\": %" PRIu64 ", \"first_sample\": %" PRIu64
		", \"first_sight\": %" PRIu64 "}},\n",
		s->consumer.samples_unread[SP_PROC_UNREAD_EXEC],
		s->consumer.samples_unread[SP_PROC_UNREAD_DEFERRED],
		s->consumer.samples_unread[SP_PROC_UNREAD_NEW]);
	fprintf(f, "  \"ctx\": {\"obi_map\": %s, \"publish_watch\": %s",
		s->obi_map ? "true" : "false", s->publish_watch ? "true" : "false");
	sp_stat_rows__json(f, sp_stat_ctx, s, false);
	for (uint32_t i = 0; i < s->n_ctx_fail; i++)
		fprintf(f, ", \"%s\": %" PRIu64, s->ctx_fail_names[i], s->ctx_fail[i]);
	fprintf(f, "},\n");
	fputs("  \"go\": {", f);
	sp_stat_rows__json(f, sp_stat_go, s, true);
	for (int i = 1; i < SP_GO_FAIL__MAX; i++)
		fprintf(f, ", \"%s\": %" PRIu64, sp_go_fail__name(i), s->go.fail[i]);
	fprintf(f, "},\n");
	fprintf(f, "  \"env\": {\"enabled\": %s, \"reads\": %" PRIu64 ", \"declared\": %" PRIu64
		", \"unreadable\": %" PRIu64 ", \"truncated\": %" PRIu64 ", \"invalid\": %" PRIu64
		", \"attrs_dropped\": %" PRIu64 ", \"res_attrs_dropped\": %" PRIu64
		", \"over_budget\": %" PRIu64 ", \"evictions\": %" PRIu64
		", \"timed_out\": %" PRIu64 ", \"skipped\": %" PRIu64 "},\n",
		s->process_env ? "true" : "false", s->env.reads, s->env.declared, s->env.unreadable,
		s->env.truncated, s->env.invalid, s->env.attrs_dropped, s->res_attrs_dropped,
		s->env.over_budget, s->env.evictions, s->env.timed_out, s->env.skipped);
	{
		const struct sp_unwinder_stats *u = &s->unw;

		fprintf(f, "  \"unwind\": {\"mode\": \"%s\", \"fallback\": %s, \"mmap_watch\": %s, "
			"\"walked\": %" PRIu64 ", \"root\": %" PRIu64 ", \"frames\": %" PRIu64
			", \"frames_fp\": %" PRIu64,
			s->unwind_fp ? "fp" : "dwarf", s->unwind_fallback ? "true" : "false",
			s->mmap_watch ? "true" : "false",
			c->ustack_walked, c->ustack_root, c->ustack_frames, c->ustack_frames_fp);
		for (int i = 0; i < SP_UNW_END__MAX; i++)
			fprintf(f, ", \"end_%s\": %" PRIu64, unw_end_names[i], c->ustack_end[i]);
		sp_stat_rows__json(f, sp_stat_unwind, s, false);
		fprintf(f, ", \"lazy\": %s, \"vdso_table\": %s},\n", u->lazy ? "true" : "false",
			u->vdso_table ? "true" : "false");
	}
	{
		uint64_t pending;
		int ok;

		offcpu_balance(s->bpf, &pending, &ok);
		fprintf(f, "  \"offcpu\": {\"enabled\": %s, \"min_ns\": %" PRIu64
			", \"sample_n\": %u, \"rate\": %u, \"pending_at_stop\": %" PRIu64
			", \"identity_ok\": %s", s->off_cpu ? "true" : "false",
			s->off_cpu_min_ns, s->off_cpu_sample_n, s->off_cpu_rate, pending,
			ok ? "true" : "false");
		for (int r = 1; r <= SP_OFF_OTHER; r++)
			fprintf(f, ", \"%s_ns\": %" PRIu64 ", \"%s_waits\": %" PRIu64,
				reason_names[r], s->offcpu_ns[r], reason_names[r],
				s->offcpu_waits[r]);
		fprintf(f, "}");
	}
	/* The command's end: exit status, or 128 + signal as a shell says. */
	if (s->command)
		fprintf(f, ",\n  \"command_exit\": %d",
			WIFEXITED(s->command_status) ? WEXITSTATUS(s->command_status) :
			WIFSIGNALED(s->command_status) ? 128 + WTERMSIG(s->command_status) : -1);
	fprintf(f, "\n}\n");
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}
