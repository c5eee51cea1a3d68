/* SPDX-License-Identifier: MIT */
/*
 * unwind_files.h - the unwind tables of executable files, keyed by file
 * identity and shared by every process that maps the file, inside one
 * byte budget with least-recently-used eviction.
 *
 * Identity: the GNU build id when the file has one (two paths, or two
 * containers' copies, of one build share a table), else (st_dev, st_ino,
 * st_mtim).  Each known file holds a slot of the BPF descriptor array
 * (unwind_files) with a generation; process ranges name slot and
 * generation (abi.h), so a slot given to another file is never read as
 * the old one's.
 *
 * Life of a file: NEW (slot assigned, a build to be queued) -> QUEUED ->
 * BUILDING -> READY (its table in the blob, descriptor published), or
 * NO_CFI / FAILED / TOO_LARGE (kept as such: not retried while the entry
 * lives).  A READY table may be EVICTED when space is needed by another
 * table or by process ranges: the least recently used goes first, "used"
 * being the latest sample with a frame in the file (BPF stamps the
 * descriptor) or its installation.  An evicted file BPF still wants (a
 * stamp after the eviction) is rebuilt (sp_unw_files__wanted).  A file no
 * process maps any more keeps its table until the space or its slot is
 * needed.
 *
 * Lazy mode (sp_unw_files__set_lazy; `record -a` and the agent by
 * default): a new file stays NEW, with no build, until BPF has stamped
 * its descriptor (last_used_ns != 0: a sample had a frame in one of its
 * ranges, and fell back to frame pointers there, counted as no_table).
 * On a busy host most executables of most processes are never sampled
 * (a short-lived process is gone before the 97 Hz timer finds it, a
 * daemon sleeps), so their tables are never built.  sp_unw_files__sampled
 * hands out the NEW files BPF has stamped, from a list of NEW files (not
 * a scan of every slot: it runs on each consumer drain); a reference to a
 * NEW file already stamped queues it at once, as in eager mode.
 *
 * Every outcome is counted (struct sp_unw_files_stats).  Not thread safe:
 * the unwinder's lock.  Memory: SP_UNW_FILES_MAX entries (~200 B each)
 * allocated at __new.
 */
#ifndef SPANPROF_UNWIND_FILES_H
#define SPANPROF_UNWIND_FILES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buildid.h"
#include "collector/unwind/unwind_blob.h"
#include "collector/unwind/unwind_table.h"

enum sp_unw_fstate {
	SP_UNW_FS_FREE = 0,
	SP_UNW_FS_NEW,
	SP_UNW_FS_QUEUED,
	SP_UNW_FS_BUILDING,
	SP_UNW_FS_READY,
	SP_UNW_FS_EVICTED,
	SP_UNW_FS_NO_CFI,	/* the file has no usable CFI */
	SP_UNW_FS_FAILED,	/* unreadable, malformed, or too slow */
	SP_UNW_FS_TOO_LARGE,	/* more than the per-file share of the budget */
};

struct sp_unw_file_key {
	struct sp_build_id build_id;	/* len 0: use dev/ino/mtime */
	uint64_t dev;
	uint64_t ino;
	int64_t mtime_ns;
};

struct sp_unw_files_stats {
	uint64_t built;			/* tables installed (first time) */
	uint64_t rebuilt;		/* ... again after an eviction */
	uint64_t no_cfi;
	uint64_t failed;
	uint64_t too_large;
	uint64_t evicted;		/* tables dropped for space (LRU) */
	uint64_t files_full;		/* no slot for a new file */
	uint64_t slots_reclaimed;	/* unmapped files forgotten for a slot */
	uint64_t deferred;		/* lazy: new files left NEW until a sample
					 * needs them */
	uint64_t sample_queued;		/* lazy: of those, queued because a sample
					 * had a frame in them */
	/* gauges */
	uint64_t unsampled;		/* lazy: NEW files no sample has needed yet
					 * (as of the last __sampled) */
	uint64_t files;			/* slots in use */
	uint64_t ready;			/* tables in the blob */
	uint64_t table_words;		/* words of those tables */
};

/* A build request (the caller queues it): slot and generation. */
struct sp_unw_build_req {
	uint32_t slot;
	uint32_t gen;
};

struct sp_unw_files;

/* per_file_max_bytes: a table above it is TOO_LARGE (0: a quarter of the
 * budget).  be->files must outlive the cache.  NULL with errno. */
struct sp_unw_files *sp_unw_files__new(const struct sp_unw_backend *be, struct sp_unw_blob *blob,
				       uint64_t per_file_max_bytes);
void sp_unw_files__free(struct sp_unw_files *f);	/* NULL-safe */

/* Lazy mode on or off (default off: every new file is queued at its first
 * reference).  Set before the first reference. */
void sp_unw_files__set_lazy(struct sp_unw_files *f, bool lazy);

/* A process maps the file: its range word (slot << 12 | gen) with one
 * more reference, or 0 when no slot is free (counted).  *build is set
 * (and the file becomes QUEUED) when a build should be queued now: the
 * caller then queues *req or calls __unqueue if it cannot.  Records
 * (pid, start, end) as a way to reopen the file later (rebuilds). */
uint32_t sp_unw_files__ref(struct sp_unw_files *f, const struct sp_unw_file_key *key,
			   uint32_t pid, uint64_t start, uint64_t end, bool *build,
			   struct sp_unw_build_req *req);
void sp_unw_files__unref(struct sp_unw_files *f, uint32_t word);
/* A queued build could not be queued after all: back to NEW (or
 * EVICTED), so a later reference queues it again. */
void sp_unw_files__unqueue(struct sp_unw_files *f, const struct sp_unw_build_req *req);

/* The builder starts req; false when the slot moved on (stale request). */
bool sp_unw_files__begin(struct sp_unw_files *f, const struct sp_unw_build_req *req);
/* Space for a built table of n words.  0 and *base (the file is then
 * being written: not evictable); -EAGAIN: least recently used tables were
 * evicted to make room, ask again after SP_UNW_BLOB_QUARANTINE_NS;
 * -E2BIG: TOO_LARGE (final); -ENOSPC / -ENOMEM: nothing left to evict / no
 * kernel memory (EVICTED: rebuilt when wanted). */
int sp_unw_files__reserve(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			  uint32_t n, uint64_t now_ns, uint32_t *base);
/* The table is written at base: publish the descriptor (READY). */
void sp_unw_files__publish(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			   uint32_t base, const struct sp_unw_table *t, uint64_t now_ns);
/* The build ended without a table: state SP_UNW_FS_NO_CFI / _FAILED. */
void sp_unw_files__fail(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			enum sp_unw_fstate why);

/* Drops the least recently used READY table; false if there is none. */
bool sp_unw_files__evict_lru(struct sp_unw_files *f, uint64_t now_ns);

/* Files to (re)build now: never built but mapped (their first queueing
 * failed), or evicted and touched by BPF since.  Up to max build requests
 * (each becomes QUEUED), with the pid/start/end to reopen the file from.
 * Returns how many. */
struct sp_unw_rebuild {
	struct sp_unw_build_req req;
	uint32_t pid;
	uint64_t start, end;
};
uint32_t sp_unw_files__wanted(struct sp_unw_files *f, struct sp_unw_rebuild *out, uint32_t max);
/* Lazy mode: NEW files, mapped by a live process, that BPF has stamped
 * since (a sample had a frame in them): up to max build requests (each
 * becomes QUEUED), as __wanted.  Costs one look per NEW file on the
 * list; 0 outside lazy mode. */
uint32_t sp_unw_files__sampled(struct sp_unw_files *f, struct sp_unw_rebuild *out, uint32_t max);

/* The file could not be reopened from its recorded process: wait for
 * the next reference (which records a live one). */
void sp_unw_files__lost_witness(struct sp_unw_files *f, const struct sp_unw_build_req *req);
/* The identity of req's file; -ESTALE. */
int sp_unw_files__key(const struct sp_unw_files *f, const struct sp_unw_build_req *req,
		      struct sp_unw_file_key *key);
/* Never evict slot's table (the vDSO's). */
void sp_unw_files__pin(struct sp_unw_files *f, uint32_t slot);
enum sp_unw_fstate sp_unw_files__state(const struct sp_unw_files *f, uint32_t slot);
const struct sp_unw_files_stats *sp_unw_files__stats(const struct sp_unw_files *f);

#endif
