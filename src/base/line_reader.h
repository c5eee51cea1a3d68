/* SPDX-License-Identifier: MIT */
/*
 * line_reader.h - cuts a text stream (a descriptor read to its end, or a
 * buffer already in memory) into lines for a caller's line parser, with
 * one set of rules for every reader of /proc, sysfs and similar files.
 *
 * Contract (both forms):
 *   - Memory: __fd reads with read(2) into the caller's buffer buf of cap
 *     bytes (cap >= 2) and allocates nothing, whatever the input.  __buf
 *     copies nothing: lines point into the caller's text.
 *   - Lines: sink->line(ctx, line, len) once per line, in file order; line
 *     is the line without its '\n' (not NUL-terminated; it may hold NULs),
 *     valid only during the call.  An empty line is passed (len 0).  A last
 *     line without '\n' is passed like any other; a '\n' at the very end
 *     makes no extra empty line.
 *   - Over-long lines: a line of cap bytes or more (its '\n' not counted)
 *     is not passed.  It is counted once in st->overlong and, when
 *     sink->overlong is set, reported once by sink->overlong(ctx) at the
 *     point it is found (in file order with the lines around it); the
 *     rest of it up to its '\n' is dropped, and reading goes on after it.
 *     __buf applies the same bound (cap), so a text gives the same calls
 *     through either form (SIZE_MAX: no bound).
 *   - Stopping: a callback returns 0 to go on, a positive value to stop
 *     (not an error; it is returned as is), or a negative errno to stop and
 *     fail with it.  Nothing more is read after a stop.
 *   - Bound: with max_bytes non-zero, __fd fails -E2BIG as soon as more
 *     than max_bytes have been read (the lines of that last read are not
 *     passed).
 *   - Errors: -EBADF for fd < 0, -EINVAL for other bad arguments (cap
 *     below 2, no sink->line), -E2BIG as above, or -errno of
 *     read(2).  A read that fails with EINTR is retried; any other read
 *     error ends the call with its -errno (the lines passed before it
 *     stay passed, the incomplete line in the buffer is not).
 *   - Blocking: __fd does a plain blocking read(2) and takes no io
 *     deadline.  A caller whose file may hang (a FUSE or NFS path, another
 *     process's /proc under pressure) runs the whole call in an
 *     sp_io_deadline job (base/io_deadline.h), or reads the text there and
 *     cuts it with __buf (base/proc_read.h does this for maps).
 *   - st (may be NULL) is filled in every case: bytes read (__fd) or
 *     looked at (__buf), lines passed, over-long lines.
 */
#ifndef SPANPROF_BASE_LINE_READER_H
#define SPANPROF_BASE_LINE_READER_H

#include <stddef.h>
#include <stdint.h>

struct sp_line_sink {
	int (*line)(void *ctx, const char *line, size_t len);
	int (*overlong)(void *ctx);	/* may be NULL: then only counted */
	void *ctx;
};

struct sp_line_stats {
	uint64_t bytes;		/* read from the descriptor / looked at */
	uint64_t lines;		/* passed to sink->line */
	uint64_t overlong;	/* lines of cap bytes or more, skipped */
};

/* Reads fd from its current offset to the end (not closed). */
int sp_line_reader__fd(int fd, char *buf, size_t cap, uint64_t max_bytes,
		       const struct sp_line_sink *sink, struct sp_line_stats *st);

/* The same over text already in memory (len bytes, need not end in '\n'). */
int sp_line_reader__buf(const char *text, size_t len, size_t cap,
			const struct sp_line_sink *sink, struct sp_line_stats *st);

#endif /* SPANPROF_BASE_LINE_READER_H */
