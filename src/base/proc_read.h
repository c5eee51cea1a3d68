/* SPDX-License-Identifier: MIT */
/*
 * proc_read.h - the one bounded way the collector looks into another
 * process: its /proc/PID/maps, its /proc/PID/mem and the files behind its
 * mappings, read on a helper thread with a time limit (base/io_deadline.h).
 *
 * Why: reading another process's maps or memory takes that process's
 * mmap lock (maps: its per-VMA locks, falling back to the mmap lock), and
 * a process whose thread waits on a hung file system (NFS hard mount, a
 * FUSE daemon that does not answer) while holding it stops every such
 * read for as long as the server stays away; a read of its memory or of
 * a mapped file on that file system waits on the file itself.  The
 * consumer must not.  Reproduced on Linux 6.18 with a FUSE daemon that
 * never answers (tests/integration/test_fault_hung_proc.py).
 *
 * Three shapes, keyed by pid:
 *   __maps  PROC_ROOT/PID/maps is read whole on the helper into a buffer
 *           the job owns (at most SP_PROC_READ_MAPS_MAX bytes: past it
 *           st->truncated, the partial last line dropped), then parsed
 *           here on the caller's thread, so fn runs where the caller's
 *           data lives (base/maps_reader.h's contract otherwise).
 *   __job   a caller's whole job (a TLS search, a process-context read:
 *           maps, ELF files and memory in one go) on the helper.
 *   __small one small file of the process (its status) read whole on the
 *           helper into a buffer the job owns, copied out on return.
 * After a timeout the pid is marked: every later read of it is skipped
 * at once (-EBUSY) until the stuck read returns, so one hung process
 * costs one helper thread and one wait of the limit, never the consumer,
 * and never more than max_stuck helpers in all (then every read is
 * skipped until one returns).
 *
 * Returns (both): what the read or job returned, or
 *   -ETIMEDOUT  not back within the limit: counted timed_out, abandoned
 *               (a __job's j is its helper's now), the pid marked;
 *   -EBUSY      not run: the pid's earlier read is still stuck, or every
 *               helper is (counted skipped; a __job's j is the caller's).
 *
 * Not thread safe: one owner thread.  NULL-safe destructor.
 */
#ifndef SPANPROF_BASE_PROC_READ_H
#define SPANPROF_BASE_PROC_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/io_deadline.h"
#include "base/maps_reader.h"

#define SP_PROC_READ_MAPS_MAX (32u << 20)	/* 65530 mappings with long paths */

struct sp_proc_read_stats {
	uint64_t runs;		/* reads and jobs back within the limit */
	uint64_t timed_out;	/* abandoned at the limit */
	uint64_t skipped;	/* not run: pid still stuck, or every helper */
	uint32_t stuck;		/* helpers still blocked (gauge) */
};

struct sp_proc_read;

/* limits may be NULL (250 ms, 4 stuck).  NULL with errno. */
struct sp_proc_read *sp_proc_read__new(const struct sp_io_deadline_config *limits);
void sp_proc_read__free(struct sp_proc_read *r);

int sp_proc_read__maps(struct sp_proc_read *r, const char *proc_root, uint32_t pid,
		       sp_maps_line_fn fn, void *ctx, struct sp_maps_read_stats *st);

/* __maps with up to SP_PROC_READ_EXTRAS other jobs of the same process
 * (its environ, its executable: what other readers want of a new
 * process) run on the same helper right after the maps read, in the same
 * hand-off: a process living a few milliseconds is read whole in one wait,
 * not gone by the third reader's turn (each hand-off costs the consumer
 * two thread wake-ups, milliseconds on a loaded machine).  The limit
 * covers all; when the maps read was done and an extra is what did not
 * come back, the maps are still parsed (the return says how that went).
 * *extras_rc and who owns the extras:
 *   0           they ran (whatever the maps read found): the caller's;
 *   -EBUSY      not run: the caller's;
 *   -ETIMEDOUT  abandoned: their helper's (freed with the maps job). */
#define SP_PROC_READ_EXTRAS 4

int sp_proc_read__maps_with(struct sp_proc_read *r, const char *proc_root, uint32_t pid,
			    struct sp_io_job *const *extras, uint32_t n_extras,
			    int *extras_rc, sp_maps_line_fn fn, void *ctx,
			    struct sp_maps_read_stats *st);

/* 0: j ran and is the caller's again (results in it). */
int sp_proc_read__job(struct sp_proc_read *r, uint32_t pid, struct sp_io_job *j);

/* base/small_file.h's sp_read_small of path (a small file of pid's:
 * PROC_ROOT/PID/status, ...) on the helper, keyed by pid: at most size - 1
 * bytes into buf, NUL-terminated (size >= 1, at most SP_PROC_READ_SMALL_MAX).
 * The bytes read, the read's negative errno, or -ETIMEDOUT / -EBUSY as
 * above (buf untouched then). */
#define SP_PROC_READ_SMALL_MAX (64u << 10)

ssize_t sp_proc_read__small(struct sp_proc_read *r, uint32_t pid, const char *path, char *buf,
			    size_t size);

/* Pins in the same hand-off: with __set_pin_exec(r, true), every maps
 * read also pins (base/pin.h's sp_pin__mapping) the file behind each
 * executable file mapping, on the helper, after the read and before the
 * extras (at most SP_PROC_READ_PINS of them; the pin of a caught
 * process's file waits on its mmap lock as its maps do: one wait).  From
 * fn, __take_pin(r, e, &st) hands over the pinned O_PATH descriptor of
 * e's mapping (the caller closes it), a negative errno when its pin
 * failed, -EBUSY when the pins hung (the maps read was done, the helper
 * stuck after it: skip the file, the pid is stuck), or -ENODATA when it
 * was not pinned here (none asked, past SP_PROC_READ_PINS: the caller
 * pins it itself).  Pins not taken are closed when the read returns. */
#define SP_PROC_READ_PINS 256

void sp_proc_read__set_pin_exec(struct sp_proc_read *r, bool on);
int sp_proc_read__take_pin(struct sp_proc_read *r, const struct sp_map_entry *e,
			   struct stat *st);

void sp_proc_read__stats(const struct sp_proc_read *r, struct sp_proc_read_stats *out);

#endif /* SPANPROF_BASE_PROC_READ_H */
