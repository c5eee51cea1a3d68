/* SPDX-License-Identifier: MIT */
/*
 * unwind_builder.h - the worker thread that builds unwind tables, off the
 * ring-buffer consumer's thread, within a CPU budget.
 *
 * Jobs are queued by the consumer (sp_unw_builder__push never blocks: a
 * full queue is -ENOSPC, counted, and the caller gives the job up) and run
 * one at a time by fn on the builder's thread, within a CPU budget: a
 * token bucket that gains cpu_share ns per ns of wall time, holds at most
 * 1 s, and pays each job's CPU time (CLOCK_THREAD_CPUTIME_ID); with the
 * bucket empty the thread sleeps until it is positive again.  So the
 * builder uses at most cpu_share of one CPU over any long interval, plus
 * a burst of 1 s (a new recording's first files are built at once).
 * Every second, and when the queue runs empty (at most every 100 ms),
 * tick_fn runs (retries, rebuilds, the blob's quarantine).
 *
 * Ownership: a queued job's fd belongs to the queue until fn returns
 * (fn must not close it; the builder does, and closes the fds of jobs
 * never run at __free).
 */
#ifndef SPANPROF_UNWIND_BUILDER_H
#define SPANPROF_UNWIND_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/unwind/unwind_files.h"

struct sp_unw_job {
	struct sp_unw_build_req req;
	int fd;			/* O_PATH on the file, or -1: reopen from pid */
	uint32_t pid;		/* a process mapping it at [start, end) */
	uint64_t start, end;
};

typedef void (*sp_unw_build_fn)(const struct sp_unw_job *job, void *ctx);
typedef void (*sp_unw_tick_fn)(void *ctx);

struct sp_unw_builder_stats {
	uint64_t jobs;			/* run */
	uint64_t queue_full;		/* refused by __push */
	uint64_t cpu_ns;		/* builder thread CPU time, jobs and ticks */
	uint64_t throttle_ns;		/* slept to stay within the CPU share */
	uint64_t pushes;		/* __push / __push_many calls */
	uint64_t wakeups;		/* of them, that woke the idle builder */
	uint32_t queued;		/* gauge */
};

struct sp_unw_builder;

/* queue_max jobs at most (0: 1024); cpu_share in (0, 1] (0: 0.25).
 * Jobs can be queued at once; they run once __start has started the
 * thread.  NULL with errno. */
struct sp_unw_builder *sp_unw_builder__new(uint32_t queue_max, double cpu_share, sp_unw_build_fn fn,
					   sp_unw_tick_fn tick_fn, void *ctx);
/* Starts the thread (idempotent): it inherits the caller's credentials
 * and capabilities, so the agent starts it from its consumer thread, after
 * privileges are dropped.  0 or -EAGAIN. */
int sp_unw_builder__start(struct sp_unw_builder *b);
/* Stops the thread and frees: waits up to wait_ms for the running job to
 * finish, then 0.  A job still running then (its thread blocked in a read
 * from a file system that does not answer) is left behind: -EBUSY, the
 * thread is detached and frees the builder itself if its job ever
 * returns; fn's context must then stay valid for it (the unwinder keeps
 * its lock and a closing flag, unwinder.c).  Queued jobs' fds are closed
 * either way.  NULL-safe (0). */
int sp_unw_builder__free(struct sp_unw_builder *b, uint32_t wait_ms);

/* Queues jobs[0..n) in order, as many as fit: returns how many (the rest
 * are counted as queue_full, their fds stay the caller's).  The builder is
 * woken (one futex wake) only if it waits for work: a maps read that
 * finds several new files, or a drain that finds several sampled ones,
 * costs one hand-off, and a busy builder none. */
uint32_t sp_unw_builder__push_many(struct sp_unw_builder *b, const struct sp_unw_job *jobs,
				   uint32_t n);
/* One job: 0 or -ENOSPC. */
int sp_unw_builder__push(struct sp_unw_builder *b, const struct sp_unw_job *job);
/* Paused: queued jobs wait (memory guard engaged). */
void sp_unw_builder__set_paused(struct sp_unw_builder *b, bool paused);
/* Waits until the queue is empty and no job runs, or timeout_ms passes;
 * true when idle (tests, and record before its summary). */
bool sp_unw_builder__wait_idle(struct sp_unw_builder *b, uint32_t timeout_ms);
void sp_unw_builder__stats(struct sp_unw_builder *b, struct sp_unw_builder_stats *out);

#endif
