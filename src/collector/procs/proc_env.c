/* SPDX-License-Identifier: MIT */
/*
 * proc_env.c - see proc_env.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/proc_read.h"
#include "collector/procs/proc_env.h"
#include "collector/procs/pid_slots.h"

/* A stored declaration: the struct, then its strings. */
struct decl {
	size_t bytes;
	struct sp_proc_env_ident id;
	char text[];
};

struct slot {
	uint32_t pid;		/* 0 = empty */
	struct decl *d;		/* NULL: read, nothing declared (or not stored) */
};

struct sp_proc_env {
	struct slot *slots;
	uint32_t mask;
	size_t budget, used;
	char proc_root[64];
	struct sp_proc_env_stats stats;
	char *buf;		/* SP_PROC_ENV_READ_MAX + 1, for reads; lent to
				 * each read's job, NULL after a timeout until
				 * the next read allocates another */
	struct sp_otel_identity scratch;
	struct sp_proc_read *pread;	/* environ reads off the caller's thread */
	/* The read run as a companion of pre_pid's first maps read
	 * (proc_table.h), for its next __note or __get: pre holds it
	 * (pre_rc 0), or it was abandoned (pre NULL, pre_rc -ETIMEDOUT). */
	struct env_job *pre;
	uint32_t pre_pid;
	int pre_rc;
};

/* One environ read on a helper (base/proc_read.h): owns its buffer. */
struct env_job {
	struct sp_io_job base;		/* first */
	char proc_root[64];
	uint32_t pid;
	char *buf;
	size_t got;
	bool truncated;
	int err;
};

static void env_job_run(struct sp_io_job *base)
{
	struct env_job *j = (struct env_job *)base;

	j->err = sp_proc_env__read(j->proc_root, j->pid, j->buf, &j->got, &j->truncated);
}

static void env_job_destroy(struct sp_io_job *base)
{
	struct env_job *j = (struct env_job *)base;

	free(j->buf);
	free(j);
}

struct sp_proc_env *sp_proc_env__new(uint32_t slots, size_t byte_budget, const char *proc_root)
{
	struct sp_proc_env *c = calloc(1, sizeof(*c));
	uint32_t n = sp_pid_slots__count(slots);

	if (!c)
		return NULL;
	c->slots = calloc(n, sizeof(*c->slots));
	c->buf = malloc(SP_PROC_ENV_READ_MAX + 1);
	c->pread = sp_proc_read__new(NULL);
	if (!c->slots || !c->buf || !c->pread) {
		sp_proc_env__free(c);
		return NULL;
	}
	c->mask = n - 1;
	c->budget = byte_budget ? byte_budget : 1u << 20;
	snprintf(c->proc_root, sizeof(c->proc_root), "%s", proc_root ? proc_root : "/proc");
	return c;
}

static void drop(struct sp_proc_env *c, struct slot *s)
{
	if (s->d) {
		c->used -= s->d->bytes;
		free(s->d);
	}
	s->d = NULL;
	s->pid = 0;
}

void sp_proc_env__free(struct sp_proc_env *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; c->slots && i <= c->mask; i++)
		free(c->slots[i].d);
	free(c->slots);
	free(c->buf);
	if (c->pre)
		env_job_destroy(&c->pre->base);
	sp_proc_read__free(c->pread);
	free(c);
}

static char *append(char **p, const char *s)
{
	size_t n = strlen(s) + 1;
	char *at = *p;

	memcpy(at, s, n);
	*p += n;
	return at;
}

/* The compact copy of c->scratch, or NULL (budget full, ENOMEM). */
static struct decl *store(struct sp_proc_env *c)
{
	const struct sp_otel_identity *x = &c->scratch;
	size_t bytes = sizeof(struct decl) + strlen(x->service_name) + 1;
	struct decl *d;
	char *p;

	for (uint32_t i = 0; i < x->attrs.n; i++)
		bytes += strlen(x->attrs.a[i].key) + strlen(x->attrs.a[i].value) + 2;
	if (c->used + bytes > c->budget) {
		c->stats.over_budget++;
		return NULL;
	}
	d = malloc(bytes);
	if (!d) {
		c->stats.over_budget++;
		return NULL;
	}
	d->bytes = bytes;
	p = d->text;
	d->id.service_name = x->service_name[0] ? append(&p, x->service_name) : NULL;
	d->id.n_attrs = x->attrs.n;
	for (uint32_t i = 0; i < x->attrs.n; i++) {
		d->id.keys[i] = append(&p, x->attrs.a[i].key);
		d->id.values[i] = append(&p, x->attrs.a[i].value);
	}
	c->used += bytes;
	return d;
}

int sp_proc_env__read(const char *proc_root, uint32_t pid, char *buf, size_t *len,
		      bool *truncated)
{
	char path[96];
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/environ", proc_root ? proc_root : "/proc", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < SP_PROC_ENV_READ_MAX &&
	       (n = read(fd, buf + got, SP_PROC_ENV_READ_MAX - got)) > 0)
		got += n;
	if (truncated) {
		char one;

		*truncated = got == SP_PROC_ENV_READ_MAX && read(fd, &one, 1) > 0;
	}
	close(fd);
	*len = got;
	return 0;
}

/* A job reading pid's environ into c->buf (lent to it), or NULL. */
static struct env_job *env_job_new(struct sp_proc_env *c, uint32_t pid)
{
	struct env_job *j;

	if (!c->buf)
		c->buf = malloc(SP_PROC_ENV_READ_MAX + 1);
	j = calloc(1, sizeof(*j));
	if (!c->buf || !j) {
		free(j);
		return NULL;
	}
	j->base = (struct sp_io_job){ .run = env_job_run, .destroy = env_job_destroy };
	memcpy(j->proc_root, c->proc_root, sizeof(j->proc_root));
	j->pid = pid;
	j->buf = c->buf;
	c->buf = NULL;
	return j;
}

/* j's results, its buffer back to c->buf; j destroyed.  j->err. */
static int env_job_take(struct sp_proc_env *c, struct env_job *j, size_t *got, bool *truncated)
{
	int err = j->err;

	free(c->buf);
	c->buf = j->buf;
	j->buf = NULL;
	*got = j->got;
	*truncated = j->truncated;
	env_job_destroy(&j->base);
	return err;
}

static void drop_pre(struct sp_proc_env *c)
{
	if (c->pre)
		env_job_destroy(&c->pre->base);
	c->pre = NULL;
	c->pre_pid = 0;
}

struct sp_io_job *sp_proc_env__companion(struct sp_proc_env *c, uint32_t pid)
{
	struct env_job *j = c && pid ? env_job_new(c, pid) : NULL;

	return j ? &j->base : NULL;
}

void sp_proc_env__companion_back(struct sp_proc_env *c, uint32_t pid, struct sp_io_job *j, int rc)
{
	struct env_job *e = (struct env_job *)j;

	if (!c)
		return;
	drop_pre(c);
	if (rc == 0 && e) {
		c->pre = e;
	} else if (rc != -ETIMEDOUT) {
		size_t got;
		bool truncated;

		if (e)
			env_job_take(c, e, &got, &truncated);	/* not run: the buffer back */
		return;
	}
	c->pre_pid = pid;
	c->pre_rc = rc;
}

/* Reads pid's environ into c->buf on a helper, within the limit (or takes
 * the companion read just done): 0 (*got, *truncated set) or -errno,
 * -ETIMEDOUT / -EBUSY (counted). */
static int read_bounded(struct sp_proc_env *c, uint32_t pid, size_t *got, bool *truncated)
{
	struct env_job *j;
	int err;

	if (c->pre_pid == pid) {
		j = c->pre;
		err = c->pre_rc;
		c->pre = NULL;
		c->pre_pid = 0;
		if (j)
			return env_job_take(c, j, got, truncated);
		c->stats.timed_out++;
		return err;
	}
	j = env_job_new(c, pid);
	if (!j)
		return -ENOMEM;
	err = sp_proc_read__job(c->pread, pid, &j->base);
	if (err == -ETIMEDOUT) {
		c->stats.timed_out++;
		return err;	/* j and its buffer are the helper's */
	}
	if (err == -EBUSY) {
		c->stats.skipped++;
		env_job_take(c, j, got, truncated);
		return err;
	}
	return env_job_take(c, j, got, truncated);
}

/* Reads and parses pid's environment into the slot.  0, or -errno. */
static int read_env(struct sp_proc_env *c, uint32_t pid, struct slot *s)
{
	size_t got = 0;
	bool truncated = false;
	int err;

	c->stats.reads++;
	err = read_bounded(c, pid, &got, &truncated);
	if (err == -ETIMEDOUT || err == -EBUSY)
		return err;
	if (err) {
		c->stats.unreadable++;
		return err;
	}
	c->stats.truncated += truncated;
	/* A process can be denied (another user's under ptrace rules) or a
	 * zombie: both read as empty or fail; nothing to declare then. */
	if (s->pid && s->pid != pid)
		c->stats.evictions++;
	drop(c, s);
	s->pid = pid;
	if (!sp_otel_env__scan(c->buf, got, &c->scratch))
		return 0;
	c->stats.declared++;
	c->stats.invalid += c->scratch.invalid;
	c->stats.attrs_dropped += c->scratch.attrs.dropped;
	if (c->scratch.service_name[0] || c->scratch.attrs.n)
		s->d = store(c);
	return 0;
}

static struct slot *slot_of(struct sp_proc_env *c, uint32_t pid)
{
	return &c->slots[sp_pid_slots__index(pid, c->mask)];
}

void sp_proc_env__note(struct sp_proc_env *c, uint32_t pid)
{
	if (c && pid)
		read_env(c, pid, slot_of(c, pid));
}

const struct sp_proc_env_ident *sp_proc_env__get(struct sp_proc_env *c, uint32_t pid)
{
	struct slot *s;

	if (!c || !pid)
		return NULL;
	s = slot_of(c, pid);
	if (s->pid != pid && read_env(c, pid, s))
		return NULL;
	return s->d ? &s->d->id : NULL;
}

void sp_proc_env__forget(struct sp_proc_env *c, uint32_t pid)
{
	struct slot *s;

	if (!c || !pid)
		return;
	if (c->pre_pid == pid)
		drop_pre(c);
	s = slot_of(c, pid);
	if (s->pid == pid)
		drop(c, s);
}

const struct sp_proc_env_stats *sp_proc_env__stats(const struct sp_proc_env *c)
{
	return &c->stats;
}
