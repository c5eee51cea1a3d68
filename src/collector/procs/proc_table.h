/* SPDX-License-Identifier: MIT */
/*
 * proc_table.h - what the collector knows about each process: its
 * executable mappings (from /proc/PID/maps) with GNU build ids, so that
 * every user frame becomes (mapping id, address).  It never symbolizes.
 * A maps read runs on a helper within file_timeout_ms (base/proc_read.h:
 * a process whose mmap lock a hung file system holds); past it the
 * process keeps what was known of it (maps_timed_out), and is not read
 * again until the stuck read returns (maps_skipped).
 *
 * Mappings are interned in a global registry: a mapping id (>= 1) names one
 * (path, build id, start, limit, file offset).  Id 0 means "unknown".  The
 * kernel has its own registry entry (path "[kernel.kallsyms]", the
 * kernel's build id), valid until __free.  A process's [vdso] is a "[vdso]"
 * entry with the vDSO image's build id (when the config gives it), and its
 * anonymous executable memory (JIT code) a per-process "[anon]" entry
 * (kind SP_MAP_ANON, pid set: a JIT symbol snapshot is per process); both
 * count as addr_anon resolutions, the latter also as unresolved frames
 * until a snapshot names them (pipeline/snapshot.h).
 *
 * Lifetimes: ingest is split into epochs (the agent: one per exported
 * aggregator).  An id handed out by __resolve during epoch E, and the
 * sp_proc_info of every pid sampled during E, stay valid at least until
 * sp_proc_table__release(t, E) - the owner calls it once everything
 * aggregated in epochs <= E has been snapshotted (or discarded).  After
 * that, ids no process maps any more are recycled and processes gone
 * before E are forgotten, so memory follows the live processes, not the
 * run's history.  Without __release (spanprof record) nothing is recycled
 * and every id stays valid until sp_proc_table__free.
 *
 * Bounds (fixed at creation, all memory preallocated or capped):
 * max_procs processes, max_mappings registry entries, max_maps_per_proc
 * executable mappings per process, buildid_cache_entries build ids cached by
 * (device, inode, mtime).  Hitting a bound is counted in the stats, never
 * fatal.
 *
 * When maps are (re)read: on first sight of a pid, on sp_proc_table__on_exec
 * (with lazy_exec: at the image's first sample instead, __sampled), on the
 * first resolve after sp_proc_table__on_exit (pid reuse; if /proc/PID is
 * really gone the old maps keep answering late samples), and on an address
 * miss, at most once per refresh_interval_ns per process (a freshly exec'd
 * process maps its libraries after the exec event).
 *
 * lazy_exec: most images a busy host execs (sh, sed, cat) are never sampled
 * at 97 Hz, and at exec time ld.so has not mapped their libraries yet, so
 * an exec-time read is mostly wasted and incomplete anyway.  The ring is
 * ordered: a sampled short-lived process's samples follow its exec event,
 * usually in the same drain, and at its first sample it is no less alive
 * than when its exec event was handled.  What is lost: an image sampled
 * only after it is gone (counted per sample by reason, sp_proc_info.unread);
 * the name (comm) of such an image is learned, and its next execs are read
 * at once while that pays: 8 execs of credit, each unsampled exit costs 1,
 * each sampled exec earns 4 (at most 64).
 *
 * Not thread safe: the caller serializes every call (the agent: the
 * consumer ingests and closes epochs, the export worker snapshots and
 * releases, both under one lock).
 */
#ifndef SPANPROF_PROC_TABLE_H
#define SPANPROF_PROC_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buildid.h"
#include "base/io_deadline.h"

struct sp_proc_table_config {
	uint32_t max_procs;		/* default 8192 */
	uint32_t max_mappings;		/* default 65536 */
	uint32_t max_maps_per_proc;	/* default 1024 */
	uint32_t buildid_cache_entries;	/* default 4096 */
	uint64_t refresh_interval_ns;	/* default 1 s: a miss in steady state is
					 * mostly a garbage frame from code built
					 * without frame pointers, and a maps read
					 * costs ~100 us; start-up misses are
					 * re-read at once (a few per exec) */
	/* Files behind mappings are pinned and read on a helper thread, waited
	 * for at most file_timeout_ms (default 250) each; a file past it is
	 * marked and skipped from then on, and at most file_max_stuck
	 * (default 4) helpers may be stuck at once (procs/buildid_read.h). */
	uint32_t file_timeout_ms;
	uint32_t file_max_stuck;
	const char *proc_root;		/* default "/proc"; tests point elsewhere */
	bool lazy_exec;			/* read a new image's maps at its first
					 * sample, not at its exec event */
	/* The vDSO image's build id and length (host/vdso.h); len 0: [vdso]
	 * mappings stay anonymous.  A process's [vdso] of another length (a
	 * 32-bit process's image) is not given this id. */
	struct sp_build_id vdso_build_id;
	uint64_t vdso_len;
};

enum sp_mapping_kind {
	SP_MAP_FILE = 0,	/* a mapped file, keyed by its build id */
	SP_MAP_KERNEL = 1,	/* the kernel (registry id 1) */
	SP_MAP_VDSO = 2,	/* a process's [vdso]: the vDSO image's build id */
	SP_MAP_ANON = 3,	/* anonymous executable memory of one process
				 * (JIT code): path "[anon]", pid set, no id */
};

struct sp_mapping_info {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	struct sp_build_id build_id;	/* len 0 = file had none / unreadable */
	const char *path;		/* owned by the table */
	bool kernel;
	uint8_t kind;			/* enum sp_mapping_kind */
	uint32_t pid;			/* SP_MAP_ANON: the process; else 0 */
};

/* Why a process's maps were never read (sp_proc_info.unread): it was gone
 * (or past exit_mm) at the read its samples needed. */
enum sp_proc_unread {
	SP_PROC_UNREAD_NONE = 0,	/* read, or not tried yet */
	SP_PROC_UNREAD_EXEC = 1,	/* gone at its exec event's read */
	SP_PROC_UNREAD_DEFERRED = 2,	/* lazy_exec: gone at its first sample */
	SP_PROC_UNREAD_NEW = 3,		/* no exec seen (a fork, or older than
					 * the recording): gone at first sight */
	SP_PROC_UNREAD__MAX
};

struct sp_proc_info {
	uint32_t pid;
	bool gone;			/* exit seen or /proc entry vanished */
	uint8_t unread;			/* enum sp_proc_unread */
	char comm[16];
	const char *exe_path;		/* readlink /proc/PID/exe; may be "" */
	bool has_otel_ctx;		/* last maps read saw an OTEP 4719
					 * OTEL_CTX mapping (anon, anon_shmem
					 * or memfd) */
};

struct sp_proc_table_stats {
	uint64_t procs_seen;
	uint64_t procs_table_full;	/* a new pid found no slot */
	uint64_t maps_reads;
	uint64_t maps_gone;		/* /proc/PID vanished before maps read */
	uint64_t maps_unreadable;	/* EACCES and other open/read errors */
	uint64_t maps_malformed_lines;
	uint64_t maps_per_proc_full;
	uint64_t mappings_full;		/* registry at max_mappings */
	uint64_t no_build_id;		/* file-backed mapping without an id */
	uint64_t buildid_cache_hits;
	uint64_t buildid_cache_misses;
	uint64_t files_timed_out;	/* a file's pin or read past the limit:
					 * marked, mapping kept without an id */
	uint64_t files_skipped;		/* marked earlier, or every helper stuck */
	uint64_t maps_timed_out;	/* PID/maps not read within the limit
					 * (the process's mmap lock held by a
					 * thread stuck on a hung file system) */
	uint64_t maps_skipped;		/* its earlier read still stuck, or
					 * every helper: previous maps kept */
	uint64_t addr_unmapped;		/* address in no known mapping */
	uint64_t addr_anon;		/* address in anonymous executable memory */
	uint64_t procs_released;	/* gone processes forgotten by __release */
	/* lazy_exec: exec events whose read waited for a sample; of them,
	 * read at the image's first sample, and never needed (the image
	 * exited or exec'd again unsampled); the rest are pending. */
	uint64_t exec_reads_deferred;
	uint64_t exec_reads_on_sample;
	uint64_t exec_reads_saved;
	uint64_t rereads_pending;	/* re-reads asked for (unwinder) while a
					 * read waited for a sample: not done */
	uint64_t exec_names_learned;	/* image names whose deferred read found a
					 * process gone at its first sample: their
					 * next execs are read at once ... */
	uint64_t exec_reads_learned;	/* ... exec events read so (while the
					 * name's reads pay, proc_table.c) */
	uint64_t mappings_released;	/* registry ids recycled by __release */
	/* Gauges, current values. */
	uint64_t procs_tracked;		/* process slots in use (live + gone) */
	uint64_t mappings_tracked;	/* registry ids in use, kernel included */
};

struct sp_proc_table;

/*
 * A listener sees every successful maps read (the unwinder keeps each
 * process's executable ranges in BPF from it, without a second read of
 * /proc/PID/maps).  begin(pid) is called right before the file is opened,
 * maps(pid, m, n, truncated) after a successful read with the process's
 * executable mappings, sorted by start (truncated: more than
 * max_maps_per_proc).  Everything in m is borrowed for the call only: fd
 * is an O_PATH descriptor on the mapped file (-1 for anonymous memory,
 * [vdso] and files that could not be pinned); dup it to keep it.
 */
struct sp_proc_exec_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t dev;			/* st_dev, st_ino, st_mtim of the pinned */
	uint64_t ino;			/* file (0 when fd < 0) */
	int64_t mtime_ns;
	const struct sp_build_id *build_id;	/* NULL: no registry entry */
	const char *path;		/* NULL: anonymous */
	int fd;
	bool vdso;			/* the [vdso] mapping */
};

struct sp_proc_maps_listener {
	void (*begin)(uint32_t pid, void *ctx);
	void (*maps)(uint32_t pid, const struct sp_proc_exec_map *m, uint32_t n, bool truncated,
		     void *ctx);
	void *ctx;
};

/* cfg may be NULL for defaults; zero fields take defaults.  Reads the
 * kernel build id once.  Returns NULL with errno set on failure. */
struct sp_proc_table *sp_proc_table__new(const struct sp_proc_table_config *cfg);
void sp_proc_table__free(struct sp_proc_table *t);

/* Mapping id for a user address of pid, or 0 if unknown (counted).  May
 * read /proc/PID/maps as described above.  now_ns is CLOCK_MONOTONIC.
 * With lazy_exec the sample's __sampled comes first (the consumer's
 * sp_consumer__prepare, its one call site); __resolve does not do a read
 * still pending. */
uint32_t sp_proc_table__resolve(struct sp_proc_table *t, uint32_t pid,
				uint64_t addr, uint64_t now_ns);

/* Stamps pid's process (if known) as sampled in the current epoch, so it
 * outlives that epoch's export; true if the pid is known.  For samples that
 * may not call __resolve (kernel-only stacks). */
bool sp_proc_table__touch(struct sp_proc_table *t, uint32_t pid);

/* A sample of pid is about to be handled: with lazy_exec, reads the maps
 * its exec event left for this moment.  True when that read was tried now
 * (the caller then does what it does after an exec: sp_proc_info says
 * whether the process was still there); false otherwise (nothing pending,
 * pid unknown).  Idempotent within a sample. */
bool sp_proc_table__sampled(struct sp_proc_table *t, uint32_t pid, uint64_t now_ns);

/* Closes the current epoch and returns its number (epochs count from 1);
 * ingest after this call belongs to the next one. */
uint64_t sp_proc_table__next_epoch(struct sp_proc_table *t);

/* Called with each pid __release forgets (e.g. to drop per-pid state kept
 * elsewhere for the snapshot). */
typedef void (*sp_proc_table_release_fn)(uint32_t pid, void *ctx);

/* Everything ingested in epochs <= closed has been exported: free gone
 * processes that went gone before closed and have no later sample (fn is
 * called for each), and recycle registry ids no process has mapped since
 * an epoch <= closed.  Call in increasing order of closed.  Pointers from
 * __proc and __mapping for what is freed become invalid. */
void sp_proc_table__release(struct sp_proc_table *t, uint64_t closed,
			    sp_proc_table_release_fn fn, void *ctx);

/* Mapping id of the kernel (always valid, >= 1). */
uint32_t sp_proc_table__kernel_mapping(const struct sp_proc_table *t);

/* The process exec'd: forget its old mappings and read them again now, or
 * (lazy_exec) at its first sample: true when the read was deferred. */
bool sp_proc_table__on_exec(struct sp_proc_table *t, uint32_t pid, const char *comm,
			    uint64_t now_ns);
/* The process exited: keep its info (samples still refer to it), mark it
 * gone: __release frees it once its epochs are exported, and a new pid
 * finding the table full evicts the oldest gone one.  No /proc read
 * happens unless samples for the pid keep arriving (see above). */
void sp_proc_table__on_exit(struct sp_proc_table *t, uint32_t pid);

/* NULL if pid was never seen.  Valid until the next call that mutates t. */
const struct sp_proc_info *sp_proc_table__proc(struct sp_proc_table *t, uint32_t pid);

/* NULL for 0, an id never handed out, or a recycled id not reused yet. */
const struct sp_mapping_info *sp_proc_table__mapping(const struct sp_proc_table *t,
						     uint32_t id);
/* Highest id handed out so far: every valid id is in 1..n. */
uint32_t sp_proc_table__n_mappings(const struct sp_proc_table *t);

const struct sp_proc_table_stats *sp_proc_table__stats(const struct sp_proc_table *t);

/*
 * Companions: the other reads a new process needs at once (its environ,
 * its executable), run with its first maps read (exec, first sight) on
 * the same helper in one hand-off (base/proc_read.h's __maps_with), so
 * that a process living milliseconds is not gone by the next reader's
 * turn.  take(pid, jobs, max) gives up to max jobs (owned by the table
 * until back); back(pid, jobs, n, rc) returns them: rc 0 they ran
 * (results in them), -EBUSY they did not, both with jobs the callee's
 * again; -ETIMEDOUT they were abandoned with the maps read (jobs NULL:
 * their helper frees them).  Called on the table's thread.
 */
struct sp_proc_companions {
	uint32_t (*take)(uint32_t pid, struct sp_io_job **jobs, uint32_t max, void *ctx);
	void (*back)(uint32_t pid, struct sp_io_job **jobs, uint32_t n, int rc, void *ctx);
	void *ctx;
};

/* Installs (c != NULL) or removes the companions. */
void sp_proc_table__set_companions(struct sp_proc_table *t, const struct sp_proc_companions *c);

/* Installs (l != NULL) or removes the maps listener; -ENOMEM. */
int sp_proc_table__set_listener(struct sp_proc_table *t, const struct sp_proc_maps_listener *l);
/* Reads pid's maps now (the caller rate-limits: the unwinder after a new
 * executable mapping).  A refresh only: a process found gone is not
 * marked gone here (its exit event does that, in order with its samples).
 * 0, -ENOENT (pid unknown, gone, or vanished), or an errno. */
int sp_proc_table__reread(struct sp_proc_table *t, uint32_t pid, uint64_t now_ns);

#endif
