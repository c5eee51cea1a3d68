/* SPDX-License-Identifier: MIT */
/*
 * io_deadline.h - blocking file-system calls run on a helper thread, waited
 * for at most a time limit.
 *
 * Why: the collector's consumer reads the files behind other processes'
 * mappings (build ids, ELF headers).  A file on a hung NFS hard mount or on
 * a FUSE file system whose daemon never answers blocks read(2) (and even
 * open or stat) for as long as the server stays away, in a sleep only a
 * fatal signal ends.  Run on the consumer's thread that stops sampling of
 * every process.  Here the call runs on a helper: the caller waits at most
 * timeout_ms; a call still blocked then is abandoned (its helper stays
 * blocked, and frees the job if the call ever returns) and the next call
 * gets a new helper.  At most max_stuck helpers may be abandoned at once;
 * past that every call is refused at once (-EBUSY) until one comes back,
 * so a sick file system costs a bounded number of threads and a bounded
 * wait per call, never a stopped consumer.
 *
 * Jobs: the caller embeds struct sp_io_job at the start of a heap object
 * holding everything run() needs (copies, never pointers into the
 * caller's memory: an abandoned job outlives the call and maybe the
 * caller's objects) and a destroy() that frees it (closing what it holds).
 *
 * Ownership of a job across sp_io_deadline__run:
 *   0           run() has returned; the caller owns the job again (results
 *               are in it) and destroys it;
 *   -ETIMEDOUT  still running: the job belongs to its helper, which
 *               destroys it when run() returns; the caller forgets it;
 *   -EBUSY      max_stuck helpers are stuck: not run, the caller owns it;
 *   -EAGAIN     a helper thread could not be started: not run, the
 *               caller owns it.
 *
 * Threads: one caller thread per sp_io_deadline (the consumer).  Helpers
 * block every signal.  __free joins the idle helper; abandoned ones are
 * detached and end when their call returns (or with the process: the
 * waits of FUSE and NFS hard mounts end on a fatal signal).
 */
#ifndef SPANPROF_BASE_IO_DEADLINE_H
#define SPANPROF_BASE_IO_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

struct sp_io_job {
	void (*run)(struct sp_io_job *j);	/* on the helper: results into *j */
	void (*destroy)(struct sp_io_job *j);	/* frees j and what it holds */
	uint64_t key;	/* what it touches (a pid, ...), 0 = none: see __stuck_on */
	/* Optional: a job whose first parts may be of use without the rest
	 * calls sp_io_job__stage(j) from run() as each part is done (and
	 * no longer touched by run); if it is then abandoned at the limit,
	 * late(j) runs first, on the caller's thread, j still alive and
	 * j->stages the number of parts done, to move them out (what it
	 * moves must not be freed by destroy then). */
	void (*late)(struct sp_io_job *j);
	uint32_t stages;
	void *helper;	/* io_deadline's, while it runs */
};

/* From run(): one more part is done (see late). */
void sp_io_job__stage(struct sp_io_job *j);

#define SP_IO_DEADLINE_MAX_STUCK 64

struct sp_io_deadline_config {
	uint32_t timeout_ms;	/* default 250 */
	uint32_t max_stuck;	/* default 4, at most SP_IO_DEADLINE_MAX_STUCK */
};

struct sp_io_deadline_stats {
	uint64_t runs;		/* jobs that returned within the limit */
	uint64_t timeouts;	/* jobs abandoned at the limit */
	uint64_t refused;	/* -EBUSY / -EAGAIN: not run */
	uint32_t stuck;		/* helpers abandoned and not back yet (gauge) */
};

struct sp_io_deadline;

/* cfg may be NULL (defaults).  NULL with errno on failure.  No thread is
 * started before the first run. */
struct sp_io_deadline *sp_io_deadline__new(const struct sp_io_deadline_config *cfg);
void sp_io_deadline__free(struct sp_io_deadline *d);	/* NULL-safe */

/* Runs j->run(j) on a helper within the limit; see the ownership table. */
int sp_io_deadline__run(struct sp_io_deadline *d, struct sp_io_job *j);

/* True while a job with this key (non-zero) was abandoned and has not
 * returned yet: a caller asks before starting another job on the same
 * thing (one stuck process costs one helper, not max_stuck). */
bool sp_io_deadline__stuck_on(const struct sp_io_deadline *d, uint64_t key);

void sp_io_deadline__stats(const struct sp_io_deadline *d, struct sp_io_deadline_stats *out);

/* Ends every idle helper of every deadline object in the process (each
 * object's next run starts a new one), and returns how many abandoned
 * helpers are still blocked.  Why: capabilities are per thread, and a
 * thread inherits its creator's; a program that drops its capabilities
 * after start-up reads (the agent: privs.h) calls this right before the
 * drop, so that no helper keeps the start-up set; a stuck one would keep
 * it until its call returns (the agent refuses to start then).  Only
 * while no other thread runs jobs (one-threaded start-up). */
uint32_t sp_io_deadline__retire_all(void);

#endif /* SPANPROF_BASE_IO_DEADLINE_H */
