// SPDX-License-Identifier: MIT
/*
 * maps_reader.c - bounded line reader over sp_maps__parse_line (contract:
 * maps_reader.h).  One read(2) loop: bytes are appended to the line buffer,
 * complete lines are handed on, the incomplete tail is moved to the front.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
static int take(struct scan *s, const char *line, size_t len)
{
	struct sp_map_entry e;

	if (!admit(s))
		return 1;
	if (sp_maps__parse_line(line, len, &e)) {
		s->st->malformed++;
		return 0;
	}
	return s->fn(&e, s->ctx);
}

static int scan_fd(int fd, struct scan *s)
{
	char buf[SP_MAPS_LINE_MAX];
	size_t have = 0;
	bool skipping = false;	/* inside an overlong line */
	int rc = 0;

	while (!rc) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		size_t start = 0, j;

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) {
			if (have && !skipping)
				rc = take(s, buf, have);
			break;
		}
		have += (size_t)r;
		for (j = 0; j < have && !rc; j++) {
			if (buf[j] != '\n')
				continue;
			if (!skipping)
				rc = take(s, buf + start, j - start);
			skipping = false;
			start = j + 1;
		}
		if (rc)
			break;
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof(buf)) {
			/* Longer than any valid line: count once, drop to '\n'. */
			if (!skipping) {
				if (!admit(s))
					break;
				s->st->malformed++;
			}
			skipping = true;
			have = 0;
		}
	}
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
	size_t start = 0;
	int rc = 0;

	memset(s.st, 0, sizeof(*s.st));
	if ((!buf && len) || !fn)
		return -EINVAL;
	while (start < len && !rc) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) : len;

		if (end - start >= SP_MAPS_LINE_MAX) {
			/* As scan_fd: longer than any valid line, counted once. */
			if (!admit(&s))
				break;
			s.st->malformed++;
		} else {
			rc = take(&s, buf + start, end - start);
		}
		start = end + 1;
	}
	return rc < 0 ? rc : 0;
}
