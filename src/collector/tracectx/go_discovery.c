// SPDX-License-Identifier: MIT
/*
 * go_discovery.c - see go_discovery.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc_read.h"
#include "collector/pipeline/bpf_sampler.h"
#include "collector/tracectx/go_discovery.h"

struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

struct file_entry {
	struct file_key key;
	uint64_t used;		/* LRU clock; 0 = empty */
	int rc;			/* sp_go_binary__read_fd's */
	enum sp_go_fail why;
	struct sp_go_binary bin;
	bool parks_tried;	/* park probes attached (or failed) once */
	int parks;		/* the sampler's handle, -1 none */
	bool gc_tried, gc_ok;	/* GC epoch probe looked for / attached */
	/* The last pid described from this file, 0 after it exited: the
	 * same pid again is the same process (an exec event read after the
	 * start-up scan already saw the new image, or a re-exec of the same
	 * binary), described again but not counted again. */
	uint32_t last_pid;
};

struct sp_go_discovery {
	struct sp_sampler *sampler;
	const char *proc_root;
	struct file_entry files[SP_GO_FILE_CACHE];
	uint64_t clock;
	uint32_t desc_seq;	/* descriptors given to BPF so far (sp_go_desc.seq) */
	struct sp_go_stats st;
	/* Files with the GC epoch probe: kept until the sampler stops, not
	 * with the file cache's entries, since a descriptor that uses the
	 * epoch may outlive its file's entry (bpf/gogc.bpf.c). */
	struct file_key gc_files[SP_SAMPLER_GO_GC_FILES];
	uint32_t n_gc_files;
	struct sp_proc_read *pread;	/* the exe's open and read, off this thread */
	/* Step 1 run as a companion of pre_pid's first maps read
	 * (proc_table.h): pre holds it (pre_rc 0), or it was abandoned (pre
	 * NULL, pre_rc -ETIMEDOUT). */
	struct exe_job *pre;
	uint32_t pre_pid;
	int pre_rc;
};

/* PID/exe opened and stat'ed (step 1), then, on a cache miss, read
 * (step 2), on a helper within the limit (base/proc_read.h: an
 * executable on a hung file system).  Owns its descriptor. */
struct exe_job {
	struct sp_io_job base;		/* first */
	char path[PATH_MAX];
	bool read;			/* step 2 */
	int fd;
	struct stat st;
	int err;			/* step 1: -errno; step 2: read_fd's */
	enum sp_go_fail why;
	struct sp_go_binary bin;
};

static void exe_run(struct sp_io_job *base)
{
	struct exe_job *j = (struct exe_job *)base;

	if (j->read) {
		j->err = sp_go_binary__read_fd(j->fd, &j->bin, &j->why);
		return;
	}
	j->fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	j->err = j->fd < 0 ? -errno : fstat(j->fd, &j->st) ? -errno : 0;
}

static void exe_destroy(struct sp_io_job *base)
{
	struct exe_job *j = (struct exe_job *)base;

	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

struct sp_go_keys {
	uint32_t n;
	char *names[SP_GO_PROC_KEYS];
};

struct sp_go_discovery *sp_go_discovery__new(struct sp_sampler *s, const char *proc_root)
{
	struct sp_go_discovery *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->sampler = s;
	g->proc_root = proc_root ? proc_root : "/proc";
	g->pread = sp_proc_read__new(NULL);
	if (!g->pread) {
		free(g);
		return NULL;
	}
	return g;
}

void sp_go_discovery__free(struct sp_go_discovery *g)
{
	if (!g)
		return;
	if (g->pre)
		exe_destroy(&g->pre->base);
	sp_proc_read__free(g->pread);
	free(g);
}

/* A step-1 job for pid's executable, or NULL. */
static struct exe_job *exe_job_new(const struct sp_go_discovery *g, uint32_t pid)
{
	struct exe_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->base = (struct sp_io_job){ .run = exe_run, .destroy = exe_destroy };
	j->fd = -1;
	if (snprintf(j->path, sizeof(j->path), "%s/%u/exe", g->proc_root, pid) >=
	    (int)sizeof(j->path)) {
		exe_destroy(&j->base);
		return NULL;
	}
	return j;
}

struct sp_io_job *sp_go_discovery__companion(struct sp_go_discovery *g, uint32_t pid)
{
	struct exe_job *j = g && pid ? exe_job_new(g, pid) : NULL;

	return j ? &j->base : NULL;
}

void sp_go_discovery__companion_back(struct sp_go_discovery *g, uint32_t pid,
				     struct sp_io_job *j, int rc)
{
	if (!g)
		return;
	if (g->pre)
		exe_destroy(&g->pre->base);
	g->pre = NULL;
	g->pre_pid = 0;
	if (rc != 0 && rc != -ETIMEDOUT) {
		if (j)
			exe_destroy(j);	/* not run */
		return;
	}
	g->pre = rc == 0 ? (struct exe_job *)j : NULL;
	g->pre_pid = pid;
	g->pre_rc = rc;
}

static bool exe_step(struct sp_go_discovery *g, uint32_t pid, struct exe_job *j);

/* Step 1 for pid: the companion's result when there is one, else run
 * now.  NULL when it did not come back (counted). */
static struct exe_job *exe_opened(struct sp_go_discovery *g, uint32_t pid)
{
	struct exe_job *j;

	if (g->pre_pid == pid) {
		j = g->pre;
		g->pre = NULL;
		g->pre_pid = 0;
		if (!j)
			g->st.exe_timed_out++;
		return j;
	}
	j = exe_job_new(g, pid);
	return j && exe_step(g, pid, j) ? j : NULL;
}

/* Runs j's step for pid: true when it came back (j still ours); false
 * when it did not (timed out: j is its helper's; skipped: j destroyed),
 * counted. */
static bool exe_step(struct sp_go_discovery *g, uint32_t pid, struct exe_job *j)
{
	int rc = sp_proc_read__job(g->pread, pid, &j->base);

	if (rc == 0)
		return true;
	if (rc == -ETIMEDOUT) {
		g->st.exe_timed_out++;
		return false;
	}
	g->st.exe_skipped++;
	exe_destroy(&j->base);
	return false;
}

/* The cache entry of pid's executable, read now if it is not cached;
 * NULL when it could not be opened or did not answer in time. */
static struct file_entry *file_info(struct sp_go_discovery *g, uint32_t pid)
{
	struct file_entry *victim = &g->files[0];
	struct file_key k = { 0 };
	struct exe_job *j = exe_opened(g, pid);
	struct stat st;

	if (!j)
		return NULL;
	st = j->st;
	if (j->err || !S_ISREG(st.st_mode)) {
		exe_destroy(&j->base);
		return NULL;	/* gone, a kernel thread, or not ours to read */
	}
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	k.size = (uint64_t)st.st_size;
	k.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	for (int i = 0; i < SP_GO_FILE_CACHE; i++) {
		struct file_entry *e = &g->files[i];

		if (e->used && !memcmp(&e->key, &k, sizeof(k))) {
			e->used = ++g->clock;
			g->st.cache_hits++;
			exe_destroy(&j->base);
			return e;
		}
		if (e->used < victim->used)
			victim = e;
	}
	j->read = true;
	if (!exe_step(g, pid, j))
		return NULL;	/* read again at its next exec or sight */
	if (victim->used && victim->parks >= 0)
		sp_sampler__detach_go_parks(g->sampler, victim->parks);
	memset(victim, 0, sizeof(*victim));
	victim->parks = -1;
	victim->key = k;
	victim->used = ++g->clock;
	victim->rc = j->err;
	victim->why = j->why;
	victim->bin = j->bin;
	g->st.files_read++;
	exe_destroy(&j->base);
	return victim;
}

/* Goroutine park probes on the file, once, when asked (go_parks): through
 * the process's exe link, which names the file even if it was replaced. */
static void attach_parks(struct sp_go_discovery *g, struct file_entry *e, const char *exe)
{
	if (e->parks_tried || !sp_sampler__go_parks(g->sampler))
		return;
	e->parks_tried = true;
	if (!e->bin.park_off) {
		g->st.parks_unsupported++;
		return;
	}
	e->parks = sp_sampler__attach_go_parks(g->sampler, exe, e->bin.park_off,
					       e->bin.resume_off);
	if (e->parks < 0) {
		/* the first failure only; all are counted (summary, /metrics) */
		if (!g->st.parks_failed++)
			fprintf(stderr, "spanprof: cannot attach the goroutine park probes to the Go "
				"executable of %s (%s): parked goroutines' waits are not recorded; "
				"uprobes need CAP_SYS_ADMIN\n", exe,
				strerror(-e->parks));
	} else
		g->st.parks_files++;
}

/* The GC epoch probe on e's file, once per file: true when attached
 * (now or before).  Not attached: the label cache of its processes falls
 * back to sweepgen, else is off (counted). */
static bool gc_probe(struct sp_go_discovery *g, struct file_entry *e, const char *exe)
{
	int rc;

	if (!sp_sampler__go_epoch(g->sampler))
		return false;
	if (e->gc_tried)
		return e->gc_ok;
	e->gc_tried = true;
	for (uint32_t i = 0; i < g->n_gc_files; i++)
		if (!memcmp(&g->gc_files[i], &e->key, sizeof(e->key)))
			return e->gc_ok = true;
	if (!e->bin.gc_off) {
		g->st.gc_unsupported++;
		return false;
	}
	rc = g->n_gc_files < SP_SAMPLER_GO_GC_FILES ?
		     sp_sampler__attach_go_gc(g->sampler, exe, e->bin.gc_off) : -ENOSPC;
	if (rc) {
		if (!g->st.gc_failed++)
			fprintf(stderr, "spanprof: cannot attach the GC epoch probe to the Go "
				"executable of %s (%s): its label sets are cached by sweepgen "
				"when the binary has its address, else read uncached (slower); "
				"uprobes need CAP_SYS_ADMIN\n", exe, strerror(-rc));
		return false;
	}
	g->gc_files[g->n_gc_files++] = e->key;
	g->st.gc_files++;
	return e->gc_ok = true;
}

/* d into BPF for pid under a new seq: a number of its own, never 0, not
 * reused before 2^32 descriptors: the label cache keys on it, so entries
 * of an earlier image, of an earlier process with this pid or of another
 * GC-cycle source (gc_epoch) can never be hit (bpf/golabels.bpf.h). */
static int install_desc(struct sp_go_discovery *g, uint32_t pid, struct sp_go_desc *d)
{
	int rc;

	if (!++g->desc_seq)
		++g->desc_seq;
	d->seq = g->desc_seq;
	rc = g->sampler ? sp_sampler__set_go_desc(g->sampler, pid, d) : 0;
	if (rc) {
		g->st.procs_failed++;
		g->st.bpf_map_full++;
	}
	return rc;
}

int sp_go_discovery__examine(struct sp_go_discovery *g, uint32_t pid)
{
	struct sp_go_desc desc;
	struct file_entry *e;
	char path[PATH_MAX];
	enum sp_go_fail why;
	int rc;

	if (!g || !pid)
		return 0;
	if (snprintf(path, sizeof(path), "%s/%u/exe", g->proc_root, pid) >= (int)sizeof(path))
		return 0;
	e = file_info(g, pid);
	if (!e || e->rc == -ENOENT)
		return 0;
	if (e->rc) {
		why = e->rc == -ENOTSUP ? e->why : SP_GO_FAIL_ELF;
		g->st.procs_failed++;
		g->st.fail[why < SP_GO_FAIL__MAX ? why : SP_GO_FAIL_ELF]++;
		return -ENOTSUP;
	}
	desc = e->bin.desc;
	desc.gc_epoch = 0;
	/* A file's first process: its descriptor goes in before the probe's
	 * attach (milliseconds: breakpoints in every process mapping the
	 * file), so its labels are read meanwhile (sweepgen or uncached),
	 * then again with the epoch under a new seq. */
	if (g->sampler && sp_sampler__go_epoch(g->sampler) && !e->gc_tried) {
		rc = install_desc(g, pid, &desc);
		if (rc)
			return rc;
	}
	/* The epoch entry exists before a descriptor says to use it, and
	 * the probe before the entry: no GC of the process goes uncounted
	 * while a cache entry of this descriptor can exist. */
	if (g->sampler && gc_probe(g, e, path)) {
		if (!sp_sampler__track_go_gc(g->sampler, pid))
			desc.gc_epoch = 1;
		else
			g->st.gc_track_failed++;
	}
	rc = install_desc(g, pid, &desc);
	if (rc)
		return rc;
	attach_parks(g, e, path);
	if (e->last_pid != pid) {
		g->st.procs++;
		if (e->bin.offsets_from == SP_GO_FROM_DWARF)
			g->st.procs_dwarf++;
		else
			g->st.procs_table++;
		if (desc.gc_epoch)
			g->st.cache_epoch++;
		else if (desc.sweepgen)
			g->st.cache_sweepgen++;
		else
			g->st.cache_off++;
	}
	e->last_pid = pid;
	return 1;
}

void sp_go_discovery__drop(struct sp_go_discovery *g, uint32_t pid)
{
	if (!g || !g->sampler)
		return;
	/* the descriptor first: a read that still finds it and then no epoch
	 * entry reads uncached */
	sp_sampler__del_go_desc(g->sampler, pid);
	sp_sampler__untrack_go_gc(g->sampler, pid);
}

void sp_go_discovery__exited(struct sp_go_discovery *g, uint32_t pid)
{
	if (!g)
		return;
	for (int i = 0; i < SP_GO_FILE_CACHE; i++)
		if (g->files[i].last_pid == pid)
			g->files[i].last_pid = 0;	/* a reused pid is a new process */
	if (!g->sampler)
		return;
	sp_sampler__del_go_desc(g->sampler, pid);
	sp_sampler__untrack_go_gc(g->sampler, pid);
	if (sp_sampler__go_parks(g->sampler))
		g->st.parks_gone += sp_sampler__drop_go_parks(g->sampler, pid);
}

const struct sp_go_stats *sp_go_discovery__stats(const struct sp_go_discovery *g)
{
	return &g->st;
}

int sp_go_keys__index(struct sp_go_discovery *g, struct sp_go_keys **keys, const uint8_t *key,
		      uint8_t len)
{
	struct sp_go_keys *k = *keys;
	char *name;

	if (k)
		for (uint32_t i = 0; i < k->n; i++)
			if (strlen(k->names[i]) == len && !memcmp(k->names[i], key, len))
				return SP_GO_KEY_BASE + (int)i;
	if (memchr(key, 0, len))
		goto full;	/* a NUL in a key cannot be named: drop it */
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			goto full;
		*keys = k;
	}
	if (k->n >= SP_GO_PROC_KEYS || !(name = strndup((const char *)key, len)))
		goto full;
	k->names[k->n] = name;
	return SP_GO_KEY_BASE + (int)k->n++;
full:
	if (g)
		g->st.keys_dropped++;
	return -1;
}

const char *sp_go_keys__name(const struct sp_go_keys *keys, uint32_t idx)
{
	if (!keys || idx < SP_GO_KEY_BASE || idx - SP_GO_KEY_BASE >= keys->n)
		return NULL;
	return keys->names[idx - SP_GO_KEY_BASE];
}

void sp_go_keys__free(struct sp_go_keys *keys)
{
	if (!keys)
		return;
	for (uint32_t i = 0; i < keys->n; i++)
		free(keys->names[i]);
	free(keys);
}
