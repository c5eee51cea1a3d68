/* SPDX-License-Identifier: MIT */
/*
 * unwind_procs.h - each process's executable ranges, as the BPF unwinder
 * reads them (abi.h: a range list in the blob + struct sp_unw_proc in the
 * unwind_procs map), kept current from the process table's maps reads.
 *
 * A range names the file table of its mapping (slot and generation from
 * unwind_files) and the file offset of its start; anonymous executable
 * memory (JIT code) and mappings without a table are ranges too (file 0),
 * so that "in none of the process's executable mappings" is exact.
 *
 * Freshness: __begin(pid) is called before /proc/PID/maps is opened and
 * remembers the process's staleness sequence (unwind_seq, which BPF bumps
 * on exec and PROT_EXEC mmap/mprotect); the published sp_unw_proc carries
 * it, so a change during or after the read leaves the ranges marked stale
 * in BPF until the next read.
 *
 * Space: a range list takes 3 words per range from the blob; when the
 * blob is full the least recently used file tables are evicted for it
 * (ranges are small and every frame of the process needs them).  Evicted
 * words are reusable only after the blob's quarantine, so the process is
 * withdrawn for now and handed back by __take_retry (the unwinder reads
 * its maps again a little later); when nothing is left to evict it stays
 * without ranges (counted) and its stacks fall back to frame pointers.  At most max_procs processes; more
 * are counted and not published.  Not thread safe (the unwinder's lock).
 */
#ifndef SPANPROF_UNWIND_PROCS_H
#define SPANPROF_UNWIND_PROCS_H

#define SP_UNW_PROCS_RETRY 256

#include <stdbool.h>
#include <stdint.h>

#include "collector/unwind/unwind_blob.h"
#include "collector/unwind/unwind_files.h"

struct sp_unw_range_in {
	uint64_t start;
	uint64_t end;
	uint64_t offset;	/* file offset of start */
	uint32_t file;		/* range word from sp_unw_files__ref, or 0; the
				 * reference passes to the process */
};

struct sp_unw_procs_stats {
	uint64_t published;		/* range lists written */
	uint64_t no_space;		/* ... that found no room even after evicting */
	uint64_t procs_full;		/* processes over max_procs */
	uint64_t truncated;		/* more than SP_UNW_RANGES_MAX ranges */
	uint64_t bpf_errors;		/* map updates that failed */
	uint64_t exits;
	/* gauges */
	uint64_t procs;			/* processes with ranges in BPF */
	uint64_t range_words;
};

struct sp_unw_procs;

struct sp_unw_procs *sp_unw_procs__new(const struct sp_unw_backend *be, struct sp_unw_blob *blob,
				       struct sp_unw_files *files, uint32_t max_procs);
void sp_unw_procs__free(struct sp_unw_procs *p);	/* NULL-safe */

void sp_unw_procs__begin(struct sp_unw_procs *p, uint32_t pid);
/* Replaces pid's ranges (sorted by start, non-overlapping); takes over the
 * file references in r (dropped on failure too).  truncated: the maps had
 * more executable mappings than given. */
void sp_unw_procs__set(struct sp_unw_procs *p, uint32_t pid, const struct sp_unw_range_in *r,
		       uint32_t n, bool truncated, uint64_t now_ns);
/* The process is gone: withdraw and free its ranges. */
void sp_unw_procs__exit(struct sp_unw_procs *p, uint32_t pid, uint64_t now_ns);
/* Processes withdrawn for lack of room whose space has been freed since:
 * up to max pids, to read again after the quarantine. */
uint32_t sp_unw_procs__take_retry(struct sp_unw_procs *p, uint32_t *pids, uint32_t max);
/* Publishes of pid in a row that were stale as they were written (0: the
 * last one was fresh); the caller then reads the maps again later. */
uint32_t sp_unw_procs__stale_runs(const struct sp_unw_procs *p, uint32_t pid);
/* When pid's ranges were last set (0: never / not published). */
uint64_t sp_unw_procs__read_ns(const struct sp_unw_procs *p, uint32_t pid);
/* True when BPF has bumped pid's sequence since its ranges were read. */
bool sp_unw_procs__stale(const struct sp_unw_procs *p, uint32_t pid);

const struct sp_unw_procs_stats *sp_unw_procs__stats(const struct sp_unw_procs *p);

#endif
