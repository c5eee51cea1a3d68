/* SPDX-License-Identifier: MIT */
/*
 * buildid_read.c - see buildid_read.h.
 *
 * A job carries copies of everything its step needs (proc root, the maps
 * entry and its path) and owns the pinned descriptor: an abandoned job
 * may run on after the caller has moved on, or gone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/pin.h"
#include "collector/procs/buildid_cache.h"
#include "collector/procs/buildid_read.h"

struct mark {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

struct sp_buildid_read {
	char *proc_root;
	struct sp_buildid_cache *cache;
	struct sp_io_deadline *io;
	struct mark marks[SP_BUILDID_READ_MARKS];	/* ring */
	uint32_t n_marks, next_mark;
};

enum step { STEP_PIN, STEP_READ };

struct bid_job {
	struct sp_io_job base;		/* first */
	enum step step;
	char *proc_root;
	uint32_t pid;
	struct sp_map_entry e;		/* e.path -> path */
	char *path;
	int pfd;			/* pinned, owned by the job */
	struct stat st;
	bool reopened;
	int err;
	struct sp_build_id b;
};

static void job_run(struct sp_io_job *base)
{
	struct bid_job *j = (struct bid_job *)base;
	int rfd;

	if (j->step == STEP_PIN) {
		j->pfd = sp_pin__mapping(j->proc_root, j->pid, &j->e, &j->st);
		j->err = j->pfd < 0 ? j->pfd : 0;
		return;
	}
	rfd = sp_pin__reopen(j->pfd, &j->st, NULL);
	j->reopened = rfd >= 0;
	j->err = rfd < 0 ? rfd : sp_buildid__from_fd(rfd, &j->b);
	if (rfd >= 0)
		close(rfd);
}

static void job_destroy(struct sp_io_job *base)
{
	struct bid_job *j = (struct bid_job *)base;

	if (j->pfd >= 0)
		close(j->pfd);
	free(j->path);
	free(j->proc_root);
	free(j);
}

static struct bid_job *job_new(const struct sp_buildid_read *r, uint32_t pid,
			       const struct sp_map_entry *e)
{
	struct bid_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->base = (struct sp_io_job){ .run = job_run, .destroy = job_destroy };
	j->pfd = -1;
	j->pid = pid;
	j->e = *e;
	j->proc_root = strdup(r->proc_root);
	j->path = strndup(e->path, e->path_len);
	if (!j->proc_root || !j->path) {
		job_destroy(&j->base);
		return NULL;
	}
	j->e.path = j->path;
	return j;
}

static bool marked(const struct sp_buildid_read *r, const struct sp_map_entry *e)
{
	for (uint32_t i = 0; i < r->n_marks; i++)
		if (r->marks[i].inode == e->inode && r->marks[i].dev_major == e->dev_major &&
		    r->marks[i].dev_minor == e->dev_minor)
			return true;
	return false;
}

static void mark(struct sp_buildid_read *r, const struct sp_map_entry *e)
{
	r->marks[r->next_mark] = (struct mark){ e->dev_major, e->dev_minor, e->inode };
	r->next_mark = (r->next_mark + 1) % SP_BUILDID_READ_MARKS;
	if (r->n_marks < SP_BUILDID_READ_MARKS)
		r->n_marks++;
}

struct sp_buildid_read *sp_buildid_read__new(const char *proc_root, struct sp_buildid_cache *cache,
					     const struct sp_io_deadline_config *limits)
{
	struct sp_buildid_read *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cache = cache;
	r->proc_root = strdup(proc_root);
	r->io = sp_io_deadline__new(limits);
	if (!r->proc_root || !r->io) {
		sp_buildid_read__free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void sp_buildid_read__free(struct sp_buildid_read *r)
{
	if (!r)
		return;
	sp_io_deadline__free(r->io);
	free(r->proc_root);
	free(r);
}

/* Runs j's current step: 0 (j still the caller's), or the result that ends
 * the read (j destroyed or given away). */
static int step(struct sp_buildid_read *r, struct bid_job *j, const struct sp_map_entry *e)
{
	/* A pin is keyed by pid: it goes through PID/map_files, whose lookup
	 * takes the process's mmap lock (held for good by a process a hung
	 * file system caught), so its other files wait for the stuck one,
	 * and the file is not marked (a libc marked for every process for
	 * one process's lock).  A read is the file's own: marked. */
	bool pin = j->step == STEP_PIN;
	int rc;

	j->base.key = pin ? j->pid : 0;
	rc = sp_io_deadline__run(r->io, &j->base);
	if (rc == 0)
		return 0;
	if (rc == -ETIMEDOUT) {
		if (!pin)
			mark(r, e);	/* j is its helper's now */
		return SP_BUILDID_READ_TIMEOUT;
	}
	job_destroy(&j->base);
	return SP_BUILDID_READ_SKIPPED;
}

/* Ends a HIT or a MISS: the pinned descriptor goes to keep, if wanted. */
static void job_finish(struct bid_job *j, struct sp_buildid_pinned *keep)
{
	if (keep) {
		keep->fd = j->pfd;
		keep->st = j->st;
		j->pfd = -1;
	}
	job_destroy(&j->base);
}

static enum sp_buildid_read_result after_pin(struct sp_buildid_read *r, struct bid_job *j,
					     const struct sp_map_entry *e,
					     struct sp_build_id *b,
					     struct sp_buildid_pinned *keep);

enum sp_buildid_read_result sp_buildid_read__get(struct sp_buildid_read *r, uint32_t pid,
						 const struct sp_map_entry *e,
						 struct sp_build_id *b,
						 struct sp_buildid_pinned *keep)
{
	struct bid_job *j;
	int rc;

	memset(b, 0, sizeof(*b));
	if (keep)
		keep->fd = -1;
	if (marked(r, e) || sp_io_deadline__stuck_on(r->io, pid))
		return SP_BUILDID_READ_SKIPPED;
	j = job_new(r, pid, e);
	if (!j)
		return SP_BUILDID_READ_FAILED;
	j->step = STEP_PIN;
	rc = step(r, j, e);
	if (rc)
		return rc;
	return after_pin(r, j, e, b, keep);
}

enum sp_buildid_read_result sp_buildid_read__get_pinned(struct sp_buildid_read *r, uint32_t pid,
							const struct sp_map_entry *e, int pfd,
							const struct stat *st,
							struct sp_build_id *b,
							struct sp_buildid_pinned *keep)
{
	struct bid_job *j;

	memset(b, 0, sizeof(*b));
	if (keep)
		keep->fd = -1;
	if (marked(r, e)) {
		close(pfd);
		return SP_BUILDID_READ_SKIPPED;
	}
	j = job_new(r, pid, e);
	if (!j) {
		close(pfd);
		return SP_BUILDID_READ_FAILED;
	}
	j->pfd = pfd;
	j->st = *st;
	return after_pin(r, j, e, b, keep);
}

/* The cache, then (on a miss) the read, of a pinned file (j->err: the
 * pin's).  Consumes j. */
static enum sp_buildid_read_result after_pin(struct sp_buildid_read *r, struct bid_job *j,
					     const struct sp_map_entry *e,
					     struct sp_build_id *b,
					     struct sp_buildid_pinned *keep)
{
	struct sp_buildid_cache_key key;
	int rc;

	if (j->err) {
		job_destroy(&j->base);
		return SP_BUILDID_READ_FAILED;
	}
	memset(&key, 0, sizeof(key));
	key.dev = (uint64_t)j->st.st_dev;
	key.ino = (uint64_t)j->st.st_ino;
	key.mtime_ns = (int64_t)j->st.st_mtim.tv_sec * 1000000000LL + j->st.st_mtim.tv_nsec;
	if (sp_buildid_cache__lookup(r->cache, &key, b)) {
		job_finish(j, keep);
		return SP_BUILDID_READ_HIT;
	}
	j->step = STEP_READ;
	rc = step(r, j, e);
	if (rc)
		return rc;
	/* Cache what the file says (an id, or none: -ENOENT/-EINVAL), not a
	 * transient failure to reopen or read it. */
	if (j->reopened && (j->err == 0 || j->err == -ENOENT || j->err == -EINVAL))
		sp_buildid_cache__insert(r->cache, &key, j->err ? NULL : &j->b);
	if (!j->err)
		*b = j->b;
	job_finish(j, keep);
	return SP_BUILDID_READ_MISS;
}

void sp_buildid_read__stats(const struct sp_buildid_read *r, struct sp_io_deadline_stats *out)
{
	sp_io_deadline__stats(r->io, out);
}
