/* SPDX-License-Identifier: MIT */
/*
 * proc_read.c - see proc_read.h.
 *
 * A maps job owns its path and its buffer: abandoned, it may still be
 * reading after the caller has moved on or freed the reader.  A buffer
 * that comes back is kept as the spare for the next read (at most
 * SPARE_MAX of it), so a steady stream of maps reads allocates nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/pin.h"
#include "base/proc_read.h"
#include "base/small_file.h"

#define BUF_FIRST (64u << 10)
#define SPARE_MAX (1u << 20)

/* One read of a maps file: the text and how it went. */
struct maps_text {
	char *buf;
	size_t len, cap;
	bool truncated;
	bool done;		/* the read is over (err says how) */
	int err;
};

/* One mapping's pin, done on the helper (e.path: a copy, owned). */
struct pin {
	struct sp_map_entry e;
	int fd;			/* >= 0 pinned, else -errno (-ENODATA: none) */
	struct stat st;
};

/* The pins of one read (maps_job.pins; sp_proc_read.pins while its lines
 * are handed to fn). */
struct pins {
	struct pin *v;
	uint32_t n;
	uint32_t next;		/* where the next take looks first (maps order) */
};

/* What a late job had finished (maps_late). */
struct salvage {
	struct maps_text t;
	struct pins pins;
	bool pins_hung;		/* its pins were not done */
};

struct sp_proc_read {
	struct sp_io_deadline *io;
	char *spare;
	size_t spare_cap;
	uint64_t skipped;
	struct salvage salvaged;
	bool pin_exec;
	struct pins pins;		/* the read being parsed */
	bool pins_hung;			/* ... whose pins hung: none taken */
};

static void pins_close(struct pins *p)
{
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
		free((char *)p->v[i].e.path);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

struct maps_job {
	struct sp_io_job base;		/* first */
	char path[PATH_MAX];
	struct maps_text t;
	struct sp_io_job *extras[SP_PROC_READ_EXTRAS];	/* owned until handed back */
	uint32_t n_extras;
	bool extras_ran;
	struct salvage *salvage;	/* the reader's, for maps_late */
	bool pin_exec;
	char proc_root[PATH_MAX];	/* for the pins */
	uint32_t pid;
	struct pins pins;		/* owned until handed back */
};

/* Grows j->t.buf to hold more; false at SP_PROC_READ_MAPS_MAX or without
 * memory (j->t.err then says which). */
static bool maps_grow(struct maps_job *j)
{
	size_t cap = j->t.cap ? j->t.cap * 2 : BUF_FIRST;
	char *p;

	if (j->t.cap >= SP_PROC_READ_MAPS_MAX) {
		j->t.truncated = true;
		return false;
	}
	if (cap > SP_PROC_READ_MAPS_MAX)
		cap = SP_PROC_READ_MAPS_MAX;
	p = realloc(j->t.buf, cap);
	if (!p) {
		j->t.err = -ENOMEM;
		return false;
	}
	j->t.buf = p;
	j->t.cap = cap;
	return true;
}

static void maps_run(struct sp_io_job *base)
{
	struct maps_job *j = (struct maps_job *)base;
	int fd = open(j->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		j->t.err = -errno;
		return;
	}
	for (;;) {
		ssize_t n;

		if (j->t.len == j->t.cap && !maps_grow(j))
			break;
		n = read(fd, j->t.buf + j->t.len, j->t.cap - j->t.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			j->t.err = -errno;
			break;
		}
		if (n == 0)
			break;
		j->t.len += (size_t)n;
	}
	close(fd);
	if (j->t.truncated) {
		/* The cut line is not a line. */
		char *nl = memrchr(j->t.buf, '\n', j->t.len);

		j->t.len = nl ? (size_t)(nl - j->t.buf) + 1 : 0;
	}
}

/* On the helper: notes an executable file mapping to pin, with a copy
 * of its line's path (sp_maps_line_fn: the text is not the job's once it
 * has staged). */
static int pin_line(const struct sp_map_entry *e, void *ctx)
{
	struct maps_job *j = ctx;
	struct pin *p;
	char *path;

	if (!(e->perms & SP_MAP_X) || !e->path_len || e->path[0] == '[')
		return 0;
	if (j->pins.n == SP_PROC_READ_PINS || !(path = strndup(e->path, e->path_len)))
		return 1;	/* the rest are pinned by the caller */
	p = &j->pins.v[j->pins.n++];
	p->e = *e;
	p->e.path = path;
	p->fd = -ENODATA;
	return 0;
}

static void maps_run_all(struct sp_io_job *base)
{
	struct maps_job *j = (struct maps_job *)base;
	struct sp_maps_read_stats st;

	maps_run(base);	/* first: what the caller waits for most */
	j->t.done = true;
	if (j->pin_exec && !j->t.err &&
	    (j->pins.v = calloc(SP_PROC_READ_PINS, sizeof(*j->pins.v))))
		sp_maps_reader__scan_buf(j->t.buf, j->t.len, pin_line, j, &st);
	sp_io_job__stage(base);		/* 1: j->t is not touched from here */
	for (uint32_t i = 0; i < j->pins.n; i++)
		j->pins.v[i].fd = sp_pin__mapping(j->proc_root, j->pid, &j->pins.v[i].e,
						  &j->pins.v[i].st);
	sp_io_job__stage(base);		/* 2: nor j->pins */
	for (uint32_t i = 0; i < j->n_extras; i++)
		j->extras[i]->run(j->extras[i]);
	j->extras_ran = true;
}

/* Abandoned after its maps read was done (an extra hangs): the text is
 * the reader's, parsed as if the job had come back. */
static void maps_late(struct sp_io_job *base)
{
	struct maps_job *j = (struct maps_job *)base;

	j->salvage->t = j->t;
	memset(&j->t, 0, sizeof(j->t));
	j->salvage->pins_hung = j->pin_exec && base->stages < 2;
	if (!j->salvage->pins_hung) {
		j->salvage->pins = j->pins;
		memset(&j->pins, 0, sizeof(j->pins));
	}
}

/* Parses what a read brought (or returns its error) and keeps its buffer
 * as the next read's spare. */
static int maps_parse(struct sp_proc_read *r, struct maps_text *t, struct pins *pins,
		      sp_maps_line_fn fn, void *ctx, struct sp_maps_read_stats *st)
{
	int rc = t->err;

	if (pins)
		r->pins = *pins;	/* for __take_pin, until the scan ends */
	if (rc == 0) {
		rc = sp_maps_reader__scan_buf(t->buf, t->len, fn, ctx, st);
		st->truncated |= t->truncated;
	}
	pins_close(&r->pins);
	if (t->cap <= SPARE_MAX && !r->spare) {
		r->spare = t->buf;
		r->spare_cap = t->cap;
	} else {
		free(t->buf);
	}
	return rc;
}

static void maps_destroy(struct sp_io_job *base)
{
	struct maps_job *j = (struct maps_job *)base;

	for (uint32_t i = 0; i < j->n_extras; i++)
		j->extras[i]->destroy(j->extras[i]);
	pins_close(&j->pins);
	free(j->t.buf);
	free(j);
}

struct sp_proc_read *sp_proc_read__new(const struct sp_io_deadline_config *limits)
{
	struct sp_proc_read *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->io = sp_io_deadline__new(limits);
	if (!r->io) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void sp_proc_read__free(struct sp_proc_read *r)
{
	if (!r)
		return;
	sp_io_deadline__free(r->io);
	free(r->spare);
	free(r);
}

int sp_proc_read__job(struct sp_proc_read *r, uint32_t pid, struct sp_io_job *j)
{
	int rc;

	j->key = pid;
	if (sp_io_deadline__stuck_on(r->io, pid)) {
		r->skipped++;
		return -EBUSY;
	}
	rc = sp_io_deadline__run(r->io, j);
	if (rc == -EBUSY || rc == -EAGAIN) {
		r->skipped++;
		return -EBUSY;
	}
	return rc;
}

/* One small file read on the helper: its own copy of the path and its
 * own buffer (an abandoned job outlives the caller's). */
struct small_job {
	struct sp_io_job base;		/* first */
	char path[PATH_MAX];
	size_t size;
	ssize_t n;			/* sp_read_small's */
	char buf[];			/* size bytes */
};

static void small_run(struct sp_io_job *base)
{
	struct small_job *j = (struct small_job *)base;

	j->n = sp_read_small(j->path, j->buf, j->size);
}

static void small_destroy(struct sp_io_job *base)
{
	free(base);
}

ssize_t sp_proc_read__small(struct sp_proc_read *r, uint32_t pid, const char *path, char *buf,
			    size_t size)
{
	struct small_job *j;
	ssize_t n;
	int rc;

	if (!r || !path || !buf || !size || size > SP_PROC_READ_SMALL_MAX)
		return -EINVAL;
	if (strlen(path) >= sizeof(j->path))
		return -ENAMETOOLONG;
	j = malloc(sizeof(*j) + size);
	if (!j)
		return -ENOMEM;
	j->base = (struct sp_io_job){ .run = small_run, .destroy = small_destroy };
	strcpy(j->path, path);
	j->size = size;
	j->n = -EIO;
	rc = sp_proc_read__job(r, pid, &j->base);
	if (rc == -ETIMEDOUT)
		return rc;	/* j is its helper's */
	n = rc ? rc : j->n;
	if (n >= 0)
		memcpy(buf, j->buf, (size_t)n + 1);
	small_destroy(&j->base);
	return n;
}

int sp_proc_read__maps(struct sp_proc_read *r, const char *proc_root, uint32_t pid,
		       sp_maps_line_fn fn, void *ctx, struct sp_maps_read_stats *st)
{
	return sp_proc_read__maps_with(r, proc_root, pid, NULL, 0, NULL, fn, ctx, st);
}

int sp_proc_read__maps_with(struct sp_proc_read *r, const char *proc_root, uint32_t pid,
			    struct sp_io_job *const *extras, uint32_t n_extras,
			    int *extras_rc, sp_maps_line_fn fn, void *ctx,
			    struct sp_maps_read_stats *st)
{
	struct sp_maps_read_stats tmp;
	struct maps_job *j;
	struct maps_text text;
	struct pins pins;
	int n, rc;

	if (!st)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	if (extras_rc)
		*extras_rc = -EBUSY;
	if (!proc_root || !fn || n_extras > SP_PROC_READ_EXTRAS || (n_extras && !extras))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->base = (struct sp_io_job){ .run = maps_run_all, .destroy = maps_destroy,
				      .late = maps_late };
	n = snprintf(j->path, sizeof(j->path), "%s/%u/maps", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(j->path)) {
		maps_destroy(&j->base);
		return -ENAMETOOLONG;
	}
	if (n_extras)
		memcpy(j->extras, extras, n_extras * sizeof(*extras));
	j->n_extras = n_extras;
	j->pin_exec = r->pin_exec;
	j->pid = pid;
	if (r->pin_exec && snprintf(j->proc_root, sizeof(j->proc_root), "%s", proc_root) >=
				   (int)sizeof(j->proc_root))
		j->pin_exec = false;
	j->t.buf = r->spare;
	j->t.cap = r->spare_cap;
	r->spare = NULL;
	r->spare_cap = 0;
	memset(&r->salvaged, 0, sizeof(r->salvaged));
	j->salvage = &r->salvaged;
	rc = sp_proc_read__job(r, pid, &j->base);
	if (rc == -ETIMEDOUT) {
		/* j and its extras are its helper's; the maps text too unless
		 * the read itself was done (an extra is what hung). */
		if (extras_rc)
			*extras_rc = -ETIMEDOUT;
		if (!r->salvaged.t.done)
			return rc;
		text = r->salvaged.t;
		pins = r->salvaged.pins;
		r->pins_hung = r->salvaged.pins_hung;
		memset(&r->salvaged, 0, sizeof(r->salvaged));
		rc = maps_parse(r, &text, &pins, fn, ctx, st);
		r->pins_hung = false;
		return rc;
	}
	/* Back to the caller, ran or not. */
	if (extras_rc)
		*extras_rc = j->extras_ran ? 0 : -EBUSY;
	j->n_extras = 0;
	text = j->t;
	memset(&j->t, 0, sizeof(j->t));
	pins = j->pins;
	memset(&j->pins, 0, sizeof(j->pins));
	maps_destroy(&j->base);
	if (rc)
		text.err = rc;	/* not run: -EBUSY */
	return maps_parse(r, &text, &pins, fn, ctx, st);
}

void sp_proc_read__set_pin_exec(struct sp_proc_read *r, bool on)
{
	if (r)
		r->pin_exec = on;
}

int sp_proc_read__take_pin(struct sp_proc_read *r, const struct sp_map_entry *e,
			   struct stat *st)
{
	struct pins *p = &r->pins;

	if (r->pins_hung)
		return -EBUSY;
	/* fn sees the lines in the order they were pinned: look from the
	 * last hit on, then from the start. */
	for (uint32_t k = 0; k < p->n; k++) {
		uint32_t i = (p->next + k) % p->n;
		struct pin *x = &p->v[i];
		int fd = x->fd;

		if (x->e.start != e->start || x->e.end != e->end)
			continue;
		if (fd == -ENODATA)
			return -ENODATA;	/* taken already */
		*st = x->st;
		x->fd = -ENODATA;
		p->next = i + 1;
		return fd;
	}
	return -ENODATA;
}

void sp_proc_read__stats(const struct sp_proc_read *r, struct sp_proc_read_stats *out)
{
	struct sp_io_deadline_stats d;

	sp_io_deadline__stats(r->io, &d);
	out->runs = d.runs;
	out->timed_out = d.timeouts;
	out->skipped = r->skipped;
	out->stuck = d.stuck;
}
