/* SPDX-License-Identifier: MIT */
/*
 * memguard.h - the agent's memory guard: watches its own cgroup's memory
 * limit and usage and says when to stop ingesting.
 *
 * Where: the memory cgroup of this process, found from /proc/self/cgroup
 * (v1 "N:...memory...:/path", else v2 "0::/path") and the matching mount in
 * /proc/self/mountinfo (cgroup with the "memory" option, or cgroup2; the
 * mount's root is stripped from the path, as inside a container).
 *
 * What: limit = v1 min(memory.limit_in_bytes, memory.stat
 * hierarchical_memory_limit); v2 the smallest memory.max of the cgroup and
 * its ancestors up to the mount.  "max", or a value >= 2^60 (v1's "no
 * limit" is 0x7ffffffffffff000), means no limit: the guard is off.
 * usage = v1 memory.usage_in_bytes / v2 memory.current, minus inactive file
 * cache (memory.stat total_inactive_file / inactive_file: reclaimable page
 * cache, e.g. of the files the agent writes; the kernel drops it before it
 * OOM-kills, so it is not counted as pressure - the same "working set" a
 * kubelet uses).
 *
 * State: engaged when usage >= high (default 75%) of the limit, released
 * when usage < low (default 60%).  Between the two the state holds
 * (hysteresis).  Transitions are counted and returned so the caller logs
 * them.  No allocation after sp_memguard__init; poll reads three small
 * files.  Not thread safe: one poller; readers use a copy of the state.
 * Cost: the usage file is kept open from init and read with one pread
 * per poll (0.5 us here, against 6 us to open, read and close it); the
 * limit and memory.stat (inactive_file; 8-15 us, the kernel formats every
 * counter) are read again at most every refresh_ms, or at once when the
 * usage read with the last inactive_file would change the state, so a
 * decision is always taken on fresh figures.  Between two such reads a
 * limit changed by an operator, or inactive cache turned active, is seen
 * up to refresh_ms late.  sp_memguard__close closes the file.
 */
#ifndef SPANPROF_MEMGUARD_H
#define SPANPROF_MEMGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_MEMGUARD_NO_LIMIT (1ull << 60)
#define SP_MEMGUARD_RECLAIM_MARGIN 0.05	/* of the limit, below low */

enum sp_memguard_version {
	SP_MEMGUARD_NONE = 0,	/* no memory cgroup found: guard off */
	SP_MEMGUARD_V1 = 1,
	SP_MEMGUARD_V2 = 2,
};

struct sp_memguard_config {
	double high;			/* fraction of the limit, default 0.75 */
	double low;			/* default 0.60; must be < high */
	const char *proc_cgroup;	/* default "/proc/self/cgroup" */
	const char *mountinfo;		/* default "/proc/self/mountinfo" */
	uint32_t refresh_ms;		/* limit and memory.stat at most this
					 * often between decisions; default 2000 */
};

struct sp_memguard {
	double high, low;
	enum sp_memguard_version version;
	char dir[512];			/* the cgroup's directory, "" if none */
	char mount[256];		/* its hierarchy's mount point */
	uint64_t limit;			/* bytes; 0 = no limit (guard off) */
	uint64_t usage;			/* working set, bytes */
	bool engaged;
	uint64_t engagements;		/* transitions to engaged */
	uint64_t releases;		/* transitions back */
	uint64_t read_errors;		/* polls that could not read the files */
	int usage_fd;			/* the usage file, open from init; -1: none */
	uint64_t refresh_ns;
	uint64_t inactive;		/* inactive file cache at the last full read */
	uint64_t full_ns;		/* CLOCK_MONOTONIC of the last full read, 0: due */
	uint64_t full_reads;		/* polls that read the limit and memory.stat too */
};

/* Finds the cgroup; never fails (a missing cgroup leaves the guard off,
 * version NONE).  cfg may be NULL.  Returns -EINVAL for bad watermarks. */
int sp_memguard__init(struct sp_memguard *g, const struct sp_memguard_config *cfg);

/* Reads usage (and, when due, limit and inactive cache) and updates the
 * state.  Returns 1 when the state changed (engaged or released: the
 * caller logs it), 0 when not, or a negative errno when the files could
 * not be read (counted; state kept). */
int sp_memguard__poll(struct sp_memguard *g);
/* How long the poller may wait before the next poll: 250 ms once the
 * working set is within SP_MEMGUARD_POLL_NEAR of the limit below the high
 * watermark (from 50% at the default 75%) or the guard is engaged, 1 s
 * below that, the refresh period without a limit (the guard is off until
 * one appears).  Each wakeup of the poller costs tens of microseconds on
 * a VM, more than the poll itself (docs/benchmarks.md). */
#define SP_MEMGUARD_POLL_NEAR 0.25
#define SP_MEMGUARD_POLL_NEAR_MS 250
#define SP_MEMGUARD_POLL_FAR_MS 1000
uint32_t sp_memguard__poll_ms(const struct sp_memguard *g);
/* The next poll reads the limit and memory.stat whatever the time. */
void sp_memguard__refresh(struct sp_memguard *g);
/* Closes the usage file.  g may be NULL, or zeroed and never initialised
 * (version NONE: nothing to close).  Safe to call twice. */
void sp_memguard__close(struct sp_memguard *g);

/* How much the agent's reclaimable memory (its unwind tables: BPF maps
 * charged to the same cgroup, so part of usage) may change now, in bytes:
 * engaged, minus the excess over a target SP_MEMGUARD_RECLAIM_MARGIN of
 * the limit below the low watermark (so that giving it back lets the
 * guard release); released, plus the room under the midpoint of the two
 * watermarks (tables grow only into memory the rest of the agent leaves,
 * and stop short of the high mark); 0 between the midpoint and high, and
 * without a limit (see SP_MEMGUARD_NO_CAP).  Pure: the caller evicts or
 * grows, against what it holds at that moment. */
#define SP_MEMGUARD_NO_CAP INT64_MAX
int64_t sp_memguard__reclaim_delta(const struct sp_memguard *g);

/* The hysteresis alone (what poll applies after reading). */
int sp_memguard__update(struct sp_memguard *g, uint64_t usage, uint64_t limit);

/* Parsers, exposed for the unit tests. */

/* A limit file's text ("max\n", "1048576\n"): *out = bytes, or 0 for no
 * limit ("max" or >= SP_MEMGUARD_NO_LIMIT).  -EINVAL for anything else. */
int sp_memguard__parse_limit(const char *text, uint64_t *out);
/* The value of "key N" in a memory.stat text, or -ENOENT. */
int sp_memguard__parse_stat(const char *text, const char *key, uint64_t *out);
/* From /proc/self/cgroup and /proc/self/mountinfo texts: the memory
 * cgroup's directory (v1 preferred when a v1 memory hierarchy is mounted,
 * else v2) and its mount point.  Returns the version, or 0 (NONE). */
int sp_memguard__locate(const char *proc_cgroup, const char *mountinfo, char *dir,
			size_t dir_len, char *mount, size_t mount_len);

const char *sp_memguard__version_name(enum sp_memguard_version v);

#endif
