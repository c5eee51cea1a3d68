/* SPDX-License-Identifier: MIT */
/*
 * summary.h - the end-of-recording account: every sample taken is written
 * or dropped for a named reason.  Printed for people, written as JSON for
 * tests and scripts.
 *
 *   taken     = BPF on-CPU events
 *             = idle (counted, not streamed) + other processes (filtered)
 *               + streamed
 *   streamed  = ring sent + ring full (dropped)
 *   ring sent = received by user space (+ malformed)
 *   received  = written (aggregated) + aggregator full (dropped)
 *
 * Off-CPU (--off-cpu), one outcome per context switch (bpf/offcpu.bpf.c):
 *   switches  = idle + kernel threads + other processes + exiting
 *               + sampled out + state full + captured
 *   captured  = below min + ring sent + ring full + switch-in not seen
 *               + still blocked at stop
 * ("still blocked" is derived: captured minus the others, never negative
 * unless a counter is wrong, which the JSON's offcpu.identity_ok says).
 * Off-CPU records received by user space go through the same aggregator
 * as on-CPU samples (written / aggregator full above count both kinds).
 */
#ifndef SPANPROF_SUMMARY_H
#define SPANPROF_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/consumer.h"
#include "collector/host/hostsyms.h"
#include "collector/host/kernel_layout.h"
#include "collector/procs/jit_maps.h"
#include "collector/procs/proc_env.h"
#include "collector/procs/proc_table.h"
#include "collector/unwind/unwinder.h"
#include "collector/tracectx/go_discovery.h"
#include "spanprof/abi.h"

struct sp_summary {
	uint32_t hz;
	uint32_t n_cpus;
	uint64_t duration_ns;
	int64_t mono_to_unix_ns;
	const char *output;
	const char *format;
	const char *command;		/* record -- COMMAND, or NULL */
	int command_status;		/* its wait status (waitpid) */
	uint64_t bpf[SP_CNT__MAX];
	struct sp_consumer_stats consumer;
	/* the pump's waits (pipeline.c): ended by a ring wakeup, or timed out
	 * (the drain period, or a fast drain's 10 ms) */
	uint64_t pump_woken;
	uint64_t pump_timed_out;
	struct sp_agg_stats agg;
	struct sp_proc_table_stats procs;
	/* trace-context discovery (ctx_discovery.c) */
	uint64_t ctx_procs_resolved;
	uint64_t ctx_procs_failed;
	uint64_t ctx_publish_rereads;	/* late publications re-read at once */
	uint64_t ctx_publish_coalesced;	/* ... or folded into a later re-read */
	uint64_t ctx_publish_deferred;	/* re-reads at the end of a coalesced burst */
	uint64_t ctx_examined;		/* process contexts read (a maps read each) */
	uint64_t ctx_skipped;		/* not read: the table's maps show no OTEL_CTX, or it is gone */
	bool obi_map;			/* OBI's pinned map read as a fallback */
	/* resource identity from the processes' environments (proc_env.h) */
	bool process_env;		/* false: --no-process-env */
	struct sp_proc_env_stats env;
	uint64_t res_attrs_dropped;	/* resources already had SP_RES_ATTRS_MAX */
	bool publish_watch;		/* prctl tracepoint attached */
	uint64_t ctx_fail[16];
	const char *ctx_fail_names[16];
	uint32_t n_ctx_fail;
	struct sp_go_stats go;			/* Go processes (go_discovery.h) */
	/* off-CPU (--off-cpu) */
	bool off_cpu;
	uint64_t off_cpu_min_ns;
	uint32_t off_cpu_sample_n;		/* 0 = adaptive */
	uint32_t off_cpu_rate;
	uint64_t offcpu_ns[SP_OFF_OTHER + 1];	/* estimated ns written, by reason */
	uint64_t offcpu_waits[SP_OFF_OTHER + 1];	/* captured waits written */
	/* host symbol data: JIT perf maps, store writes */
	struct sp_jit_maps_stats jit;
	struct sp_hostsyms_stats hostsyms;
	struct sp_kernel_layout_stats klayout;	/* zero without a kernel layout */
	/* user-stack unwinding */
	bool unwind_fp;			/* --unwind fp, or the fallback to it */
	bool unwind_fallback;		/* the kernel refused the .eh_frame unwinder */
	bool mmap_watch;		/* PROT_EXEC mmap/mprotect watched */
	struct sp_unwinder_stats unw;	/* zero with --unwind fp */
};

void sp_summary__print(FILE *f, const struct sp_summary *s);
int sp_summary__write_json(const char *path, const struct sp_summary *s);
void sp_summary__status_line(FILE *f, const struct sp_consumer_stats *c, uint64_t elapsed_ns);

#endif
