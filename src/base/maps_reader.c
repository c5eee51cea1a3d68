// SPDX-License-Identifier: MIT
/*
 * maps_reader.c - bounded line reader over sp_maps__parse_line (contract:
 * maps_reader.h).  The lines are cut by base/line_reader.h (a buffer of
 * SP_MAPS_LINE_MAX on the stack for a descriptor); what is here is the
 * line cap and the counting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/line_reader.h"
#include "base/maps_reader.h"

struct scan {
	sp_maps_line_fn fn;
	void *ctx;
	struct sp_maps_read_stats *st;
};

/* Counts one more line; false (and truncated) past the cap. */
static bool admit(struct scan *s)
{
	if (s->st->lines >= SP_MAPS_MAX_LINES) {
		s->st->truncated = true;
		return false;
	}
	s->st->lines++;
	return true;
}

/* One complete line: 0 go on, else stop with this value. */
static int take(void *ctx, const char *line, size_t len)
{
	struct scan *s = ctx;
	struct sp_map_entry e;

	if (!admit(s))
		return 1;
	if (sp_maps__parse_line(line, len, &e)) {
		s->st->malformed++;
		return 0;
	}
	return s->fn(&e, s->ctx);
}

/* A line of SP_MAPS_LINE_MAX bytes or more: longer than any valid line,
 * one malformed line. */
static int too_long(void *ctx)
{
	struct scan *s = ctx;

	if (!admit(s))
		return 1;
	s->st->malformed++;
	return 0;
}

static int scan_fd(int fd, struct scan *s)
{
	char buf[SP_MAPS_LINE_MAX];
	const struct sp_line_sink sink = { .line = take, .overlong = too_long, .ctx = s };
	int rc = sp_line_reader__fd(fd, buf, sizeof(buf), 0, &sink, NULL);

	return rc < 0 ? rc : 0;
}

int sp_maps_reader__scan(const char *proc_root, uint32_t pid, sp_maps_line_fn fn, void *ctx,
			 struct sp_maps_read_stats *st)
{
	struct sp_maps_read_stats tmp;
	struct scan s = { .fn = fn, .ctx = ctx, .st = st ? st : &tmp };
	char path[PATH_MAX];
	int n, fd, err;

	memset(s.st, 0, sizeof(*s.st));
	if (!proc_root || !fn)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = scan_fd(fd, &s);
	close(fd);
	return err;
}

int sp_maps_reader__scan_fd(int fd, sp_maps_line_fn fn, void *ctx, struct sp_maps_read_stats *st)
{
	struct sp_maps_read_stats tmp;
	struct scan s = { .fn = fn, .ctx = ctx, .st = st ? st : &tmp };

	memset(s.st, 0, sizeof(*s.st));
	if (fd < 0 || !fn)
		return fd < 0 ? -EBADF : -EINVAL;
	return scan_fd(fd, &s);
}

int sp_maps_reader__scan_buf(const char *buf, size_t len, sp_maps_line_fn fn, void *ctx,
			     struct sp_maps_read_stats *st)
{
	struct sp_maps_read_stats tmp;
	struct scan s = { .fn = fn, .ctx = ctx, .st = st ? st : &tmp };
	const struct sp_line_sink sink = { .line = take, .overlong = too_long, .ctx = &s };
	int rc;

	memset(s.st, 0, sizeof(*s.st));
	if ((!buf && len) || !fn)
		return -EINVAL;
	/* The bound scan_fd's buffer sets, so both see the same lines. */
	rc = sp_line_reader__buf(buf, len, SP_MAPS_LINE_MAX, &sink, NULL);
	return rc < 0 ? rc : 0;
}
