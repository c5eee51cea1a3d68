/* SPDX-License-Identifier: MIT */
/*
 * unwinder.h - user-stack unwinding from .eh_frame for `record` and
 * `agent`: ties the process table's maps reads to the BPF unwinder's
 * tables and ranges.
 *
 *   process table maps read --listener--> per-process ranges (unwind_procs)
 *                                     \-> file tables (unwind_files): a new
 *                                         file is queued for the builder
 *   builder thread (unwind_builder): open the pinned file and read what
 *     libelf will read, both on a deadline-bound helper (unwind_prefetch:
 *     a stalled file system costs a helper, not the builder), extract CFI
 *     (cfi_extract, libdw), compile (unwind_table), reserve space in the
 *     budget (LRU eviction), write, publish - within a CPU share
 *   BPF (bpf/unwind.bpf.h) reads it all; a file without a table (yet)
 *     is walked by frame pointer, counted
 *
 * The ring-buffer consumer never waits for a build: the listener only
 * looks files up, queues jobs (never blocking) and writes the process's
 * range list (a few hundred bytes and one map update).
 *
 * When tables are built: eagerly (a file's table is queued at the first
 * maps read that finds it; `record -- CMD` / `-p`: every process recorded
 * is wanted) or lazily (`record -a` and the agent: queued once BPF has
 * had a sample with a frame in the file, unwind_files.h; the frames of
 * such samples before the table is in are walked by frame pointer,
 * counted as no_table).  Either way a table is keyed by build id, shared
 * by every process and every exec of the file, and built once while it
 * stays in the budget.
 *
 * The vDSO: every process maps the same kernel image, so its table is
 * built once, at __new, from the collector's own [vdso] (copied from
 * memory), and never evicted.
 *
 * Threads: the listener and __on_* / __poll run on the consumer's thread
 * (under the caller's process-table lock in the agent); builds and the
 * builder's ticks on the builder's; __stats from any.  One internal mutex.
 */
#ifndef SPANPROF_UNWINDER_H
#define SPANPROF_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/procs/proc_table.h"
#include "collector/unwind/unwind_backend.h"

/* A typical host's sampled executables fit (Debian's libraries take 76-137
 * KiB of table per MiB of text: a few hundred distinct libraries and
 * binaries are 20-40 MiB; one libLLVM is 5 MiB), and memory is only taken
 * as tables are built, in 256 KiB chunks. */
#define SP_UNWINDER_DEFAULT_BUDGET (64ull << 20)
#define SP_UNWINDER_MIN_BUDGET (256ull << 10)
#define SP_UNWINDER_MAX_BUDGET (1ull << 30)
#define SP_UNWINDER_DEFAULT_CPU 0.25
#define SP_UNWINDER_REREAD_NS (100ull * 1000 * 1000)	/* per process */
#define SP_UNWINDER_STALE_NS (10ull * 1000 * 1000)	/* first re-read of
							 * ranges stale as written */

struct sp_unwinder_config {
	uint64_t budget_bytes;		/* 0: default */
	double cpu_share;		/* builder CPU, fraction of one CPU; 0: default */
	uint32_t max_procs;		/* 0: SP_UNW_PROCS_MAX */
	uint64_t max_cpu_ns_per_file;	/* 0: 10 s; more is "too slow" (failed) */
	bool lazy;			/* build on a sample's demand, see above */
};

struct sp_unwinder_stats {
	uint64_t budget_bytes;
	uint64_t cap_bytes;		/* what the memory guard allows (<= budget) */
	uint64_t bytes_in_use;		/* kernel memory of the chunks */
	uint64_t table_bytes;		/* of it, file tables */
	uint64_t range_bytes;		/* of it, process range lists */
	uint64_t fixed_bytes;		/* descriptor and sequence arrays */
	uint64_t files;			/* files known */
	uint64_t tables;		/* tables in BPF */
	uint64_t procs;			/* processes with ranges in BPF */
	/* outcomes */
	uint64_t built;
	uint64_t rebuilt;
	uint64_t no_cfi;
	uint64_t failed;		/* = malformed + unreadable + too_slow +
					 * stalled + other */
	uint64_t failed_malformed;
	uint64_t failed_unreadable;
	uint64_t failed_too_slow;
	uint64_t failed_stalled;	/* an open, stat or read did not return in
					 * time (a file system that stopped
					 * answering), or its device did so
					 * before: skipped */
	uint64_t stalled_skipped;	/* of failed_stalled: skipped at once, on
					 * a device where an open or read had
					 * stalled (no helper spent on it) */
	uint64_t too_large;
	uint64_t evicted;		/* for space (the budget, or the cap) */
	uint64_t evicted_memguard;	/* to bring the memory guard's usage down */
	uint64_t evicted_memguard_bytes;	/* table bytes of those */
	uint64_t files_full;
	uint64_t queue_full;
	uint64_t procs_full;
	uint64_t ranges_no_space;
	uint64_t ranges_truncated;
	uint64_t rereads;		/* maps re-read after a new executable mapping */
	uint64_t paused_builds;		/* builds deferred by memory pressure */
	/* lazy mode */
	bool lazy;
	uint64_t deferred;		/* new files left unbuilt until sampled */
	uint64_t sample_queued;		/* builds queued because a sample needed one */
	uint64_t unsampled;		/* gauge: known files no sample has needed */
	/* builder */
	uint64_t build_cpu_ns;
	uint64_t build_throttle_ns;
	uint64_t builder_pushes;	/* hand-offs to the builder (batches) */
	uint64_t builder_wakeups;	/* of them, that had to wake it */
	uint64_t cfi_rows;		/* CFI rows read */
	uint64_t eh_frame_bytes;	/* .eh_frame read */
	uint32_t queued;
	bool vdso_table;		/* the vDSO's table is in BPF */
};

struct sp_unwinder;

/* Installs itself as procs' maps listener.  be: the store's backend
 * (unwind_bpf.c), borrowed.  Returns 0 or a negative errno with a message
 * in err. */
int sp_unwinder__new(const struct sp_unwinder_config *cfg, const struct sp_unw_backend *be,
		     struct sp_proc_table *procs, struct sp_unwinder **out, char *err,
		     size_t err_len);
/* Stops the builder, removes the listener, withdraws nothing from BPF
 * (the maps die with the sampler).  NULL-safe. */
void sp_unwinder__free(struct sp_unwinder *u);

/* The process exited (its ranges are withdrawn and freed). */
void sp_unwinder__on_exit(struct sp_unwinder *u, uint32_t pid, uint64_t now_ns);
/* BPF saw a new executable mapping (SP_EV_MMAP_EXEC): read the maps again,
 * at once or, within SP_UNWINDER_REREAD_NS of the last read, at a later
 * __poll.  (Ranges that were stale already when written, which BPF does
 * not signal, are read again by the unwinder itself, after 10 ms, then
 * backing off to 5.1 s for a process that keeps mapping code.) */
void sp_unwinder__on_exec_mapping(struct sp_unwinder *u, uint32_t pid, uint64_t now_ns);
/* Deferred re-reads (consumer thread, with the process table's lock).
 * The first call starts the builder thread (threads keep their own
 * capabilities: the agent's consumer thread runs after the drop). */
void sp_unwinder__poll(struct sp_unwinder *u, uint64_t now_ns);
/* Memory guard engaged: no builds, no new chunks (evicting instead). */
void sp_unwinder__set_pressure(struct sp_unwinder *u, bool on);
/* The memory guard's cap on the unwinder's BPF memory (tables and process
 * ranges; it is charged to the cgroup): the chunks that exist now plus
 * delta_bytes (negative: less; INT64_MAX: no cap but the budget), rounded
 * down to 256 KiB chunks, may be held.  Above it, least recently used
 * tables are evicted (counted as evicted_memguard) until the chunks that
 * still hold words fit; emptied chunks are freed after the quarantine
 * (SP_UNW_BLOB_QUARANTINE_NS), at a later call or the builder's tick.
 * Evicted tables BPF still wants are rebuilt once the cap leaves room.
 * Returns the table bytes evicted by this call.  Any thread. */
uint64_t sp_unwinder__limit(struct sp_unwinder *u, int64_t delta_bytes);

/* Waits up to timeout_ms for queued builds (tests; record's end). */
bool sp_unwinder__wait_idle(struct sp_unwinder *u, uint32_t timeout_ms);

void sp_unwinder__stats(struct sp_unwinder *u, struct sp_unwinder_stats *out);

/* Parses a byte count with an optional k/m/g (KiB/MiB/GiB) suffix into
 * [SP_UNWINDER_MIN_BUDGET, SP_UNWINDER_MAX_BUDGET]; -EINVAL. */
int sp_unwinder__parse_budget(const char *s, uint64_t *out);

#endif
