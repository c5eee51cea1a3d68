/* SPDX-License-Identifier: MIT */
/*
 * proc_env.h - the OpenTelemetry identity a process declares in its
 * environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; otel_env.h),
 * read from /proc/PID/environ and cached by pid.
 *
 * Reading: once on first sight and on exec (the consumer's process hook,
 * while the process is alive), at most SP_PROC_ENV_READ_MAX bytes
 * (more: "truncated", the variables are looked for in what was read).
 * The block is the process's own bytes, parsed under otel_env.h's bounds.
 * A process that cannot be read (gone, or hidepid/ptrace rules deny it)
 * is counted "unreadable" and has no identity here.  The read runs on a
 * helper thread within 250 ms (base/proc_read.h: reading environ takes
 * the process's mmap lock, which a thread stuck on a hung file system
 * can hold for good): past it "timed_out", and the process's later
 * reads "skipped" until the stuck one returns; both leave it without an
 * identity for now (the next note or get reads again).
 *
 * Cache: direct-mapped by pid (like container_id.h), fixed slot count; a
 * process that declares something gets one compact heap copy, all copies
 * together bounded by a byte budget (more: "over budget", not stored).  A
 * collision replaces the older entry (counted); a miss reads the file at
 * lookup.  Not thread safe: the caller serializes (the pipeline's lock).
 */
#ifndef SPANPROF_PROC_ENV_H
#define SPANPROF_PROC_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/procs/otel_env.h"

#define SP_PROC_ENV_READ_MAX (256u << 10)

/* One process's declaration; strings live as long as its cache entry. */
struct sp_proc_env_ident {
	const char *service_name;	/* NULL: none declared */
	uint32_t n_attrs;
	const char *keys[SP_OTEL_ATTRS_MAX];
	const char *values[SP_OTEL_ATTRS_MAX];
};

struct sp_proc_env_stats {
	uint64_t reads;		/* /proc/PID/environ reads */
	uint64_t declared;	/* ... that found OTEL_SERVICE_NAME or _RESOURCE_ATTRIBUTES */
	uint64_t unreadable;	/* gone or denied */
	uint64_t timed_out;	/* not read within the limit (its mmap lock
				 * held by a thread stuck on a hung file
				 * system: base/proc_read.h) */
	uint64_t skipped;	/* not read: its earlier read still stuck */
	uint64_t truncated;	/* larger than SP_PROC_ENV_READ_MAX */
	uint64_t invalid;	/* OTEL_RESOURCE_ATTRIBUTES discarded (otel_env.h) */
	uint64_t attrs_dropped;	/* over otel_env.h's bounds */
	uint64_t over_budget;	/* declarations not stored: byte budget full */
	uint64_t evictions;
};

struct sp_proc_env;

/* Reads proc_root/PID/environ (proc_root NULL = "/proc") into buf
 * (SP_PROC_ENV_READ_MAX bytes); *len its length, *truncated (may be NULL)
 * whether more was there.  0 or -errno (gone, denied). */
int sp_proc_env__read(const char *proc_root, uint32_t pid, char *buf, size_t *len,
		      bool *truncated);

/* slots rounded up to a power of two (0: 4096); byte_budget for the
 * stored declarations (0: 1 MiB); proc_root NULL = "/proc".  NULL on
 * ENOMEM. */
struct sp_proc_env *sp_proc_env__new(uint32_t slots, size_t byte_budget, const char *proc_root);
void sp_proc_env__free(struct sp_proc_env *c);	/* NULL-safe */
void sp_proc_env__note(struct sp_proc_env *c, uint32_t pid);
/* pid's declaration, or NULL (none / unknown).  Valid until the next
 * note, get or forget. */
const struct sp_proc_env_ident *sp_proc_env__get(struct sp_proc_env *c, uint32_t pid);
void sp_proc_env__forget(struct sp_proc_env *c, uint32_t pid);
/* pid's environ read as a companion of its first maps read (one hand-off
 * for a new process: proc_table.h), NULL without memory; and the job
 * back (rc and ownership as sp_proc_companions' back): what it read is
 * kept for pid's next __note or __get, which then reads nothing. */
struct sp_io_job;
struct sp_io_job *sp_proc_env__companion(struct sp_proc_env *c, uint32_t pid);
void sp_proc_env__companion_back(struct sp_proc_env *c, uint32_t pid, struct sp_io_job *j, int rc);

const struct sp_proc_env_stats *sp_proc_env__stats(const struct sp_proc_env *c);

#endif
