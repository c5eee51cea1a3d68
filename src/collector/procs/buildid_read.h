/* SPDX-License-Identifier: MIT */
/*
 * buildid_read.h - the build id behind one mapping of a process, read off
 * the caller's thread with a time limit (base/io_deadline.h), so that a
 * file whose open, stat or read never returns (hung NFS hard mount, a
 * FUSE daemon that does not answer) costs the consumer at most the limit,
 * once.
 *
 * Steps: pin the file (base/pin.h, on a helper), look its identity up in
 * the cache (here), on a miss reopen and read its notes (on a helper).  A
 * read past the limit marks the file (the maps line's device and inode):
 * its later mappings, in any process, get no build id without waiting
 * (SP_BUILDID_READ_SKIPPED), until SP_BUILDID_READ_MARKS newer marks push
 * it out.  A pin past the limit marks the process instead: its other
 * mappings are skipped until the pin returns (the pin looks the file up
 * through PID/map_files, under the process's mmap lock: a lock held for
 * good would otherwise cost one helper per file).  While every helper allowed
 * is stuck, every read is skipped.
 * The mapping is still registered (path, addresses): its samples keep
 * their addresses.
 *
 * Not thread safe: one owner (the process table).  proc_root is copied.
 */
#ifndef SPANPROF_BUILDID_READ_H
#define SPANPROF_BUILDID_READ_H

#include <stdint.h>
#include <sys/stat.h>

#include "base/buildid.h"
#include "base/io_deadline.h"
#include "base/maps.h"

struct sp_buildid_cache;

#define SP_BUILDID_READ_MARKS 64

enum sp_buildid_read_result {
	SP_BUILDID_READ_HIT,		/* from the cache (b may be empty: none) */
	SP_BUILDID_READ_MISS,		/* not cached: read (b empty when none or unreadable) */
	SP_BUILDID_READ_FAILED,		/* the pin failed (or no memory): empty */
	SP_BUILDID_READ_TIMEOUT,	/* past the limit now: empty, file marked */
	SP_BUILDID_READ_SKIPPED,	/* marked earlier, or helpers stuck: empty */
};

struct sp_buildid_read;

/* cache is the caller's (used, not owned).  NULL with errno. */
struct sp_buildid_read *sp_buildid_read__new(const char *proc_root, struct sp_buildid_cache *cache,
					     const struct sp_io_deadline_config *limits);
void sp_buildid_read__free(struct sp_buildid_read *r);	/* NULL-safe */

/* The pinned file a read leaves to its caller (the unwinder's listener
 * entry): fd is the caller's to close, -1 when the read did not end in a
 * HIT or a MISS (nothing pinned, or the descriptor is a stuck helper's). */
struct sp_buildid_pinned {
	int fd;
	struct stat st;
};

/* keep: NULL, or where the pinned descriptor and its identity go. */
enum sp_buildid_read_result sp_buildid_read__get(struct sp_buildid_read *r, uint32_t pid,
						 const struct sp_map_entry *e,
						 struct sp_build_id *b,
						 struct sp_buildid_pinned *keep);

/* __get for a file pinned already (pfd: an O_PATH descriptor from
 * base/pin.h, st its stat; both taken over, closed or left in keep): the
 * cache, then on a miss the read on a helper.  The pin of a new process's
 * files comes with its maps read (base/proc_read.h), in one hand-off. */
enum sp_buildid_read_result sp_buildid_read__get_pinned(struct sp_buildid_read *r, uint32_t pid,
							const struct sp_map_entry *e, int pfd,
							const struct stat *st,
							struct sp_build_id *b,
							struct sp_buildid_pinned *keep);

void sp_buildid_read__stats(const struct sp_buildid_read *r, struct sp_io_deadline_stats *out);

#endif
