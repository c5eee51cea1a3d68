/* SPDX-License-Identifier: MIT */
/*
 * jit_maps.h - JIT symbol snapshots: the bytes of the perf maps that
 * runtimes publish (V8 --perf-basic-prof, `jcmd PID Compiler.perfmap`,
 * Python -X perf), copied while the process lives, or the code loads of
 * its jitdump (V8 --perf-prof, perf's JVMTI agent, Python 3.13 -X
 * perf_jit, .NET) converted to the same perf-map text (jitdump.h), as
 * content-addressed pieces (base/jit_piece.h) for the symbolizer.
 * Nothing here looks an address up (design invariant 2).
 *
 * Which jitdump: the file behind an executable mapping, in PROC/PID/maps,
 * whose name ends in "/jit-NSPID.dump" (runtimes map the dump's first page
 * PROT_EXEC for profilers to find it; perf finds it the same way), pinned
 * by the maps line's inode (base/pin.h sp_pin__mapping: map_files, or the
 * path inside the process's root).  A process with a jitdump is read from
 * it, not from its perf map (one chain per process; a process whose source
 * changes starts a new chain).  The same checks as a perf map apply
 * (regular, owner, staleness), the same bounds apply to the text it turns
 * into: max_bytes_per_proc of text per chain, max_read_per_check per check,
 * the total budget; the code bytes are skipped, never read.  A file whose
 * header is refused (another byte order, version or machine, a record size
 * that cannot be followed) is counted in jitdump_refused, once per change
 * of the file (the loads before the refusal stay shipped); records refused
 * inside it in jitdump_bad_records (jitdump.h says which).  A load's
 * DEBUG_INFO line table is shipped with it as text (jitdump.h), inside
 * the same bounds; tables and rows refused are counted by reason.
 *
 * Which file: PROC/PID/root/tmp/perf-NSPID.map, NSPID the pid as the
 * process's own pid namespace sees it (the last field of NSpid: in
 * PROC/PID/status), opened inside the process's root (RESOLVE_IN_ROOT via
 * base/pin.h: its /tmp, its symlinks, never ours) and accepted only when
 *   - it is a regular file (a FIFO, a device, a symlink to /dev/zero, a
 *     directory: refused before any open that could block) - not_regular;
 *   - its owner is the process's real or effective uid (perf's rule: any
 *     user can write /tmp/perf-N.map for a pid not theirs) - wrong_owner;
 *   - it was modified after the process started (a map left by an earlier
 *     process with the same pid is stale, PROC/PID/stat starttime against
 *     the file's mtime, 20 ms of slack) - stale.
 *
 * When: sp_jit_maps__note (the consumer, for a sample in a process's
 * anonymous executable memory) queues the pid, non-blocking (a full queue
 * drops the note, counted); the reader thread checks a pid at most once
 * per min_interval_ns (a stat: size, mtime, inode) and reads only when the
 * file changed.  A file that grew is read from where the chain ends, after
 * checking that its first and last SP_JIT_VERIFY_BYTES already shipped
 * are unchanged; a file replaced, truncated or rewritten (JDK's jcmd
 * rewrites it) starts a new chain.  Bytes after the last '\n' wait (a
 * runtime may be writing that line).  A process's chain stops at
 * max_bytes_per_proc (truncated, counted); one check reads at most
 * max_read_per_check (the rest comes next time); all processes together
 * read at most burst_bytes plus bytes_per_sec since (a token bucket: what
 * is over it is read at a later check, counted in over_budget), so the
 * copies on disk and on the network have a rate, not just a size.
 *
 * Where pieces go: cfg.sink, called on the reader thread with each piece
 * (encoded, with its id); the sink copies or writes it and returns 0, or
 * a negative errno when it could not take it (the chain is then broken
 * and the next change starts over with the whole file: sink_refused).
 *
 * The snapshot asks sp_jit_maps__head for a process's latest piece: the
 * mapping of its anonymous executable memory names it (snapshot.h).
 * Process state is kept until sp_jit_maps__forget (the process table's
 * release of a gone process), so samples of a process that has exited
 * still name its chain; at most max_procs processes are tracked (a new one
 * beyond is counted in procs_full).
 *
 * Bounds: a runtime may write its map or dump on a file system that stops
 * answering (a hung NFS hard mount, a FUSE daemon gone), and even a
 * process's /proc files can block behind its mmap lock.  So the reader
 * never touches a file itself: each check's status, stat, maps, pin and
 * reopen run in one job, and its reads in jobs of at least 1 MiB (the
 * small reads of a jitdump are served from the last one), on a helper of
 * base/proc_read.h keyed by pid, each waited for at most io_timeout_ms.
 * A job past it is abandoned (its helper frees it if it ever returns),
 * the check counted timed_out and the chain marked broken (shipped again
 * from its start once the file answers); later checks of that process
 * are skipped at once while its job stays stuck (skipped_stuck), and at
 * most io_max_stuck helpers are ever blocked.  Other processes' checks go
 * on, and __free never waits on a stuck file.
 *
 * Threads: every call may come from any thread; one mutex, never held
 * across file I/O.  Memory: max_procs small entries, a queue of
 * queue_len pids, one read buffer of SP_JIT_PIECE_MAX_DATA on the reader,
 * and per entry a table of SP_JITDUMP_SLOTS recent jitdump loads (16 bytes
 * each, for MOVE records; calloc'd at once, its pages touched only for
 * processes with a jitdump).
 */
#ifndef SPANPROF_COLLECTOR_JIT_MAPS_H
#define SPANPROF_COLLECTOR_JIT_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jit_piece.h"

#define SP_JIT_VERIFY_BYTES 256

typedef int (*sp_jit_sink_fn)(void *ctx, const struct sp_jit_id *id, const uint8_t *piece,
			      size_t len);

struct sp_jit_maps_config {
	const char *proc_root;		/* default "/proc" */
	uint64_t min_interval_ns;	/* per process, default 250 ms */
	uint64_t max_bytes_per_proc;	/* default 64 MiB */
	uint64_t max_read_per_check;	/* default 16 MiB */
	uint32_t max_procs;		/* default 1024 */
	/* In total, all processes: a budget of burst_bytes (default 256 MiB)
	 * refilled at bytes_per_sec (default 4 MiB/s; no_refill: never) */
	uint64_t burst_bytes;
	uint64_t bytes_per_sec;
	bool no_refill;			/* tests: the burst is all there is */
	uint32_t queue_len;		/* default 256 */
	bool no_thread;			/* tests: sp_jit_maps__run_pending does the work */
	/* Each check's opens (one hand-off) and each read of at least 1 MiB
	 * run on a helper within io_timeout_ms (default 1000), at most
	 * io_max_stuck (default 4) helpers blocked at once: see Bounds. */
	uint32_t io_timeout_ms;
	uint32_t io_max_stuck;
	sp_jit_sink_fn sink;		/* required */
	void *sink_ctx;
};

struct sp_jit_maps_stats {
	uint64_t notes;			/* samples in anonymous exec memory noted */
	uint64_t notes_dropped;		/* queue full */
	uint64_t checks;		/* stat of a process's map */
	uint64_t no_map;		/* no perf map for the process */
	uint64_t not_regular;		/* FIFO, device, symlink to one, dir */
	uint64_t wrong_owner;
	uint64_t stale;			/* older than the process */
	uint64_t unreadable;		/* process gone, no access, read errors */
	uint64_t reads;			/* checks that read bytes */
	uint64_t bytes_read;
	uint64_t pieces;		/* handed to the sink */
	uint64_t piece_bytes;
	uint64_t restarts;		/* file replaced or rewritten: new chain */
	uint64_t truncated;		/* chains stopped at max_bytes_per_proc */
	uint64_t over_budget;		/* checks that read less (or nothing): the
					 * total budget was spent; the rest later */
	uint64_t sink_refused;
	uint64_t procs_full;
	uint64_t jitdump_checks;	/* checks that found a jitdump mapping */
	uint64_t jitdump_loads;		/* code loads (and moves) turned into lines */
	uint64_t jitdump_refused;	/* files refused: header, byte order, sizes */
	uint64_t jitdump_bad_records;	/* records refused (sizes, names, ranges) */
	uint64_t jitdump_skipped;	/* UNWINDING_INFO, unknown ids */
	uint64_t jitdump_line_tables;	/* DEBUG_INFO tables shipped with their load */
	uint64_t jitdump_line_rows;	/* ... their rows */
	uint64_t jitdump_debug_unused;	/* DEBUG_INFO no load of its address took */
	uint64_t jitdump_debug_bad;	/* DEBUG_INFO refused: sizes, NULs, no entry */
	uint64_t jitdump_debug_too_big;	/* ... refused: entries, file name, text */
	uint64_t jitdump_debug_rows_out;	/* rows outside their load's code */
	uint64_t jitdump_debug_bad_names;	/* rows whose file is not text: none */
	uint64_t jitdump_moves_unknown;	/* MOVE of a load no longer remembered */
	uint64_t jitdump_names_cut;	/* names over SP_JITDUMP_NAME_MAX */
	uint64_t timed_out;		/* checks whose open or read did not come back
					 * within io_timeout_ms */
	uint64_t skipped_stuck;		/* checks not tried: that process's earlier
					 * one is still stuck, or every helper is */
	uint64_t io_stuck;		/* gauge: helpers still blocked */
	uint64_t procs;			/* gauge: processes tracked */
	uint64_t procs_with_map;	/* gauge: ... whose chain has a head */
};

struct sp_jit_maps;

/* Allocates; no thread runs until __start (notes queue up meanwhile). */
int sp_jit_maps__new(const struct sp_jit_maps_config *cfg, struct sp_jit_maps **out);
/* Starts the reader thread (it inherits the calling thread's capabilities
 * and runs with every signal blocked); idempotent, nothing with no_thread.
 * 0 or a negative errno.  Until started, __drain runs the queue itself. */
int sp_jit_maps__start(struct sp_jit_maps *j);
void sp_jit_maps__free(struct sp_jit_maps *j);	/* stops the thread; NULL-safe */

void sp_jit_maps__note(struct sp_jit_maps *j, uint32_t pid, uint64_t now_ns);
/* The head of pid's chain: 0 and *source, *id; -ENOENT none. */
int sp_jit_maps__head(struct sp_jit_maps *j, uint32_t pid, uint8_t *source, struct sp_jit_id *id);
void sp_jit_maps__forget(struct sp_jit_maps *j, uint32_t pid);
/* A piece already handed to the sink was lost after all (an upload that
 * failed): every chain is shipped again from its start at its next check
 * (the head a profile names then leads to pieces that exist). */
void sp_jit_maps__restart_all(struct sp_jit_maps *j);
/* Waits until the queue is empty and the reader idle, at most timeout_ms;
 * 0 or -ETIMEDOUT.  With no_thread, runs the queue itself. */
int sp_jit_maps__drain(struct sp_jit_maps *j, uint32_t timeout_ms);
/* Runs every queued check now, on the caller's thread (no_thread). */
void sp_jit_maps__run_pending(struct sp_jit_maps *j, uint64_t now_ns);
void sp_jit_maps__stats(struct sp_jit_maps *j, struct sp_jit_maps_stats *st);

#endif /* SPANPROF_COLLECTOR_JIT_MAPS_H */
