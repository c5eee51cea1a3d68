// SPDX-License-Identifier: MIT
/*
 * line_reader.c - streamed and in-memory line cutting (contract:
 * line_reader.h).  __fd is one read(2) loop: bytes are appended to the
 * caller's buffer, complete lines are passed on, the incomplete tail is
 * moved to the front; a tail that fills the whole buffer is an over-long
 * line, dropped up to its '\n'.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "base/line_reader.h"

static int pass(const struct sp_line_sink *sink, struct sp_line_stats *st, const char *l,
		size_t len)
{
	st->lines++;
	return sink->line(sink->ctx, l, len);
}

static int overlong(const struct sp_line_sink *sink, struct sp_line_stats *st)
{
	st->overlong++;
	return sink->overlong ? sink->overlong(sink->ctx) : 0;
}

int sp_line_reader__fd(int fd, char *buf, size_t cap, uint64_t max_bytes,
		       const struct sp_line_sink *sink, struct sp_line_stats *st)
{
	struct sp_line_stats tmp;
	size_t have = 0;	/* bytes in buf, none of them a '\n' between reads */
	bool skipping = false;	/* inside an over-long line: drop up to '\n' */
	int rc = 0;

	if (!st)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	if (fd < 0)
		return -EBADF;
	if (!buf || cap < 2 || !sink || !sink->line)
		return -EINVAL;
	while (!rc) {
		ssize_t r = read(fd, buf + have, cap - have);
		size_t start = 0, from = have;	/* what is before from has no '\n' */

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) {
			if (have && !skipping)
				rc = pass(sink, st, buf, have);
			break;
		}
		st->bytes += (uint64_t)r;
		if (max_bytes && st->bytes > max_bytes)
			return -E2BIG;
		have += (size_t)r;
		while (!rc) {
			const char *nl = memchr(buf + from, '\n', have - from);
			size_t end;

			if (!nl)
				break;
			end = (size_t)(nl - buf);
			if (!skipping)
				rc = pass(sink, st, buf + start, end - start);
			skipping = false;
			start = from = end + 1;
		}
		if (rc)
			break;
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == cap) {
			/* No '\n' in cap bytes: over-long, reported once. */
			if (!skipping)
				rc = overlong(sink, st);
			skipping = true;
			have = 0;
		}
	}
	return rc;
}

int sp_line_reader__buf(const char *text, size_t len, size_t cap,
			const struct sp_line_sink *sink, struct sp_line_stats *st)
{
	struct sp_line_stats tmp;
	size_t start = 0;
	int rc = 0;

	if (!st)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	if ((!text && len) || cap < 2 || !sink || !sink->line)
		return -EINVAL;
	while (start < len && !rc) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - text) : len;

		/* The bound __fd's buffer sets: cap bytes without a '\n'. */
		if (end - start >= cap)
			rc = overlong(sink, st);
		else
			rc = pass(sink, st, text + start, end - start);
		start = end + 1;
	}
	st->bytes = start < len ? start : len;
	return rc;
}
