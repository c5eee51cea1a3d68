/* SPDX-License-Identifier: MIT */
/*
 * maps_reader.h - reads a process's /proc/PID/maps through the line parser
 * (base/maps.h), with one set of bounds for every caller.
 *
 * Contract:
 *   - PROC_ROOT/PID/maps is read with read(2) into a fixed buffer of
 *     SP_MAPS_LINE_MAX bytes on the stack: no allocation, whatever the
 *     input.  A line longer than that is skipped whole (up to its '\n') and
 *     counted as malformed once; a line the parser refuses is skipped and
 *     counted as malformed; a last line without '\n' is parsed like any
 *     other.
 *   - At most SP_MAPS_MAX_LINES lines are looked at (the kernel's default
 *     vm.max_map_count is 65530); the rest is not read and st->truncated
 *     is set (the caller decides whether a partial view will do).
 *   - fn is called once per parsed line, in file order; e->path points into
 *     the buffer and is valid only during the call.  fn returns 0 to go on,
 *     a positive value to stop early (not an error), or a negative errno to
 *     stop and fail with it.
 *   - Returns 0, fn's negative errno, or -errno of open/read: -ENOENT when
 *     the process is gone, -EACCES/-EPERM when its maps may not be read.
 *     st (may be NULL) is filled in every case.
 */
#ifndef SPANPROF_BASE_MAPS_READER_H
#define SPANPROF_BASE_MAPS_READER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/maps.h"

#define SP_MAPS_LINE_MAX (PATH_MAX + 256)	/* path + the fields before it */
#define SP_MAPS_MAX_LINES (1u << 17)

struct sp_maps_read_stats {
	uint32_t lines;		/* lines looked at, malformed ones included */
	uint32_t malformed;	/* refused by the parser or over SP_MAPS_LINE_MAX */
	bool truncated;		/* stopped at SP_MAPS_MAX_LINES */
};

typedef int (*sp_maps_line_fn)(const struct sp_map_entry *e, void *ctx);

int sp_maps_reader__scan(const char *proc_root, uint32_t pid, sp_maps_line_fn fn, void *ctx,
			 struct sp_maps_read_stats *st);

/* The same over an open descriptor, read from its current offset to the
 * end (not closed; the fuzz target feeds it a memfd). */
int sp_maps_reader__scan_fd(int fd, sp_maps_line_fn fn, void *ctx, struct sp_maps_read_stats *st);

/* The same over a maps text already in memory (base/proc_read.h reads
 * it on a helper thread): lines as above, one of SP_MAPS_LINE_MAX bytes
 * or more counted malformed and skipped; buf need not end in '\n'. */
int sp_maps_reader__scan_buf(const char *buf, size_t len, sp_maps_line_fn fn, void *ctx,
			     struct sp_maps_read_stats *st);

#endif /* SPANPROF_BASE_MAPS_READER_H */
