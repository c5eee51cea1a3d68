// SPDX-License-Identifier: MIT
/*
 * unwinder.c - see unwinder.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/maps_reader.h"
#include "base/pin.h"
#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_blob.h"
#include "collector/unwind/unwind_builder.h"
#include "collector/unwind/unwind_files.h"
#include "collector/unwind/unwind_prefetch.h"
#include "collector/unwind/unwind_procs.h"
#include "collector/unwind/unwind_table.h"
#include "collector/unwind/unwinder.h"

#define DEFER_MAX 1024
#define WANTED_PER_TICK 64
/* Lazy mode: how often the NEW files are looked at for BPF's stamp (each
 * drain, at most this often: on_exec_mapping also polls, several times
 * per new process). */
#define SAMPLED_SCAN_NS (10ull * 1000 * 1000)
#define RESERVE_TRIES 4
#define DEF_FILE_CPU_NS (10ull * 1000000000ull)
#define VDSO_MAX (1u << 20)
/* How long __free waits for the builder's running job: past the
 * prefetch's deadline (2 s), so a stall in progress ends counted. */
#define STOP_WAIT_MS 2500

struct defer {
	uint32_t pid;
	uint64_t due_ns;
};

struct sp_unwinder {
	pthread_mutex_t lock;
	struct sp_unwinder_config cfg;
	struct sp_unw_backend be;
	struct sp_proc_table *procs;
	struct sp_unw_blob *blob;
	struct sp_unw_files *files;
	struct sp_unw_procs *uprocs;
	struct sp_unw_builder *builder;
	struct sp_unw_prefetch *prefetch;	/* the builder's thread only */
	struct sp_unw_file_key vdso_key;
	bool have_vdso;
	bool pressure;
	bool closing;			/* __free has begun: the builder touches
					 * nothing but lock and counters */
	bool builder_started;		/* consumer's thread */
	struct sp_unw_range_in *rbuf;	/* SP_UNW_RANGES_MAX, listener only */
	struct sp_unw_job *jbuf;	/* SP_UNW_RANGES_MAX, listener only */
	struct defer defer[DEFER_MAX];
	uint32_t n_defer;
	uint64_t per_file_words;
	/* counters not kept by the parts */
	uint64_t malformed, unreadable, too_slow, stalled, rereads, paused, defer_full;
	uint64_t stalled_skipped;	/* of stalled: on a device marked before */
	uint64_t guard_cap;		/* bytes the memory guard allows ... */
	bool guard_capped;		/* ... once it has said */
	uint64_t guard_evicted, guard_evicted_bytes;
	uint64_t cfi_rows, eh_bytes;
	uint64_t sampled_scan_ns;	/* last sp_unw_files__sampled (consumer) */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------ building */

/* A readable fd on the job's file (base/pin.h: the pinned inode itself,
 * regular file), checked against its identity when it is reopened through
 * a process (the file may have been replaced since); *st its stat.  The
 * stat, the reopen and a reopen's build-id read run on the prefetch's
 * deadline-bound helper (unwind_prefetch.h): -ETIMEDOUT / -EBUSY when they
 * did not come back (a file system that went away), -ESRCH when the
 * process or the file is gone, else the reopen's errno. */
static int job_open(struct sp_unwinder *u, const struct sp_unw_job *job, struct stat *st)
{
	struct sp_unw_file_key key;
	struct sp_build_id b = { 0 };
	char path[96];
	int fd, err;

	/* The device it was seen on: an open that does not come back marks
	 * it, and the next file known to be there is skipped at once. */
	pthread_mutex_lock(&u->lock);
	err = u->closing ? -ESTALE : sp_unw_files__key(u->files, &job->req, &key);
	pthread_mutex_unlock(&u->lock);
	if (job->fd >= 0)
		return sp_unw_prefetch__open(u->prefetch, job->fd, NULL, err ? 0 : key.dev, st,
					     NULL);
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", job->pid,
		 (unsigned long long)job->start, (unsigned long long)job->end);
	fd = sp_unw_prefetch__open(u->prefetch, -1, path, err ? 0 : key.dev, st, &b);
	if (fd == -ETIMEDOUT || fd == -EBUSY)
		return fd;
	if (fd < 0)
		return -ESRCH;
	if (!err) {
		if (key.build_id.len) {
			if (b.len != key.build_id.len || memcmp(b.id, key.build_id.id, b.len))
				err = -ESRCH;
		} else if ((uint64_t)st->st_dev != key.dev || (uint64_t)st->st_ino != key.ino ||
			   (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec !=
				   key.mtime_ns) {
			err = -ESRCH;
		}
	}
	if (err) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* Extracts and compiles elf's table into *t.  0, -ENOENT (no CFI), -E2BIG
 * (too large), -EINVAL (malformed), -ETIME (too slow), other errnos. */
static int compile(struct sp_unwinder *u, Elf *elf, struct sp_unw_table *t)
{
	struct sp_unw_compiler_limits cl = {
		.max_rows = (uint32_t)(u->per_file_words * 2 > (1u << 24) ? (1u << 24)
							     : u->per_file_words * 2),
		.max_words = (uint32_t)(u->per_file_words > UINT32_MAX ? UINT32_MAX
							  : u->per_file_words),
	};
	struct sp_cfi_limits lim = {
		.max_rows = cl.max_rows,
		.max_cpu_ns = u->cfg.max_cpu_ns_per_file ? u->cfg.max_cpu_ns_per_file
							 : DEF_FILE_CPU_NS,
	};
	struct sp_unw_compiler *c = NULL;
	struct sp_cfi_stats st;
	int err;

	err = sp_unw_compiler__new(elf, &cl, &c);
	if (err)
		return err == -EINVAL ? -ENOENT : err;	/* no executable segment */
	err = sp_cfi__extract(elf, &lim, sp_unw_compiler__add_row, c, &st);
	if (!err)
		err = sp_unw_compiler__finish(c, t);
	pthread_mutex_lock(&u->lock);
	u->cfi_rows += st.rows;
	u->eh_bytes += st.eh_frame_bytes;
	pthread_mutex_unlock(&u->lock);
	sp_unw_compiler__free(c);
	return err;
}

static void build(const struct sp_unw_job *job, void *ctx)
{
	struct sp_unwinder *u = ctx;
	struct sp_unw_table t = { 0 };
	struct sp_unw_image img = { 0 };
	enum sp_unw_fstate why = SP_UNW_FS_FAILED;
	struct stat st;
	uint32_t base = 0;
	Elf *elf = NULL;
	int fd = -1, err;
	bool ok;

	pthread_mutex_lock(&u->lock);
	ok = !u->closing && sp_unw_files__begin(u->files, &job->req);
	pthread_mutex_unlock(&u->lock);
	if (!ok)
		return;		/* stale: the slot moved on */
	fd = job_open(u, job, &st);
	if (fd < 0) {
		pthread_mutex_lock(&u->lock);
		if (u->closing) {
			/* __free went on without us: touch nothing */
		} else if (fd == -ETIMEDOUT || fd == -EBUSY) {
			/* Its open or stat did not come back, or its device
			 * stalled before: as a read that stalls (below). */
			struct sp_unw_prefetch_stats ps;

			sp_unw_prefetch__stats(u->prefetch, &ps);
			u->stalled++;
			u->stalled_skipped = ps.marked_skipped;
			sp_unw_files__fail(u->files, &job->req, SP_UNW_FS_FAILED);
		} else if (job->fd < 0) {
			/* Its process is gone: wait for one that maps it. */
			sp_unw_files__lost_witness(u->files, &job->req);
		} else {
			u->unreadable++;
			sp_unw_files__fail(u->files, &job->req, SP_UNW_FS_FAILED);
		}
		pthread_mutex_unlock(&u->lock);
		return;
	}
	/* What libelf reads, read into memory on a deadline-bound helper:
	 * a file system that stops answering (at any of those reads) blocks
	 * the helper, and the file (and its device) is skipped, counted as
	 * stalled.  libelf parses the copy and reads nothing of the file. */
	err = sp_unw_prefetch__file(u->prefetch, fd, &st, &img);
	if (err == -ETIMEDOUT || err == -EBUSY) {
		struct sp_unw_prefetch_stats ps;

		sp_unw_prefetch__stats(u->prefetch, &ps);
		pthread_mutex_lock(&u->lock);
		u->stalled++;
		u->stalled_skipped = ps.marked_skipped;
		if (!u->closing)
			sp_unw_files__fail(u->files, &job->req, SP_UNW_FS_FAILED);
		pthread_mutex_unlock(&u->lock);
		close(fd);
		return;
	}
	/* From memory, not the file (nor an mmap of it: a file truncated
	 * or failing under us would be a SIGBUS). */
	elf = !err && img.base ? elf_memory((char *)img.base, img.size) : NULL;
	if (err == -E2BIG) {
		/* counted TOO_LARGE below */
	} else if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = err && err != -EINVAL ? err : -EINVAL;
	} else {
		err = compile(u, elf, &t);
	}
	/* The reads (the blocking part) are done.  From here on every step
	 * is under the lock and first asks whether __free has gone on
	 * without this thread (a read that blocked past its wait): then the
	 * files, the blob and the BPF maps may be gone. */
	if (!err) {
		for (int i = 0; i < RESERVE_TRIES; i++) {
			pthread_mutex_lock(&u->lock);
			err = u->closing ? -ESTALE
					 : sp_unw_files__reserve(u->files, &job->req, t.n_words,
								 mono_ns(), &base);
			pthread_mutex_unlock(&u->lock);
			if (err != -EAGAIN)
				break;
			/* Evicted for us; the words are ours after the
			 * quarantine. */
			usleep(SP_UNW_BLOB_QUARANTINE_NS / 1000 + 10000);
		}
		pthread_mutex_lock(&u->lock);
		if (u->closing) {
			/* nothing */
		} else if (err == -EAGAIN) {
			sp_unw_files__lost_witness(u->files, &job->req);
		} else if (!err) {
			/* Reserved words are ours alone; written under the
			 * lock only so that __free cannot unmap them under us
			 * (a memcpy of at most a quarter of the budget). */
			sp_unw_blob__write(u->blob, base, t.words, t.n_words);
			sp_unw_files__publish(u->files, &job->req, base, &t, mono_ns());
		}
		/* reserve() set TOO_LARGE / EVICTED itself on the others. */
		pthread_mutex_unlock(&u->lock);
	} else {
		pthread_mutex_lock(&u->lock);
		switch (err) {
		case -ENOENT:
			why = SP_UNW_FS_NO_CFI;
			break;
		case -E2BIG:
			why = SP_UNW_FS_TOO_LARGE;
			break;
		case -ETIME:
			u->too_slow++;
			break;
		case -EINVAL:
			u->malformed++;
			break;
		default:
			u->unreadable++;
		}
		if (!u->closing)
			sp_unw_files__fail(u->files, &job->req, why);
		pthread_mutex_unlock(&u->lock);
	}
	sp_unw_table__release(&t);
	if (elf)
		elf_end(elf);
	sp_unw_image__release(&img);
	close(fd);
}

/* Queues builds for w[0..n) (files QUEUED by unwind_files), reopened
 * through their witness process, in one hand-off; those that do not fit
 * go back.  Without the lock. */
static void queue_rebuilds(struct sp_unwinder *u, const struct sp_unw_rebuild *w, uint32_t n)
{
	struct sp_unw_job jobs[WANTED_PER_TICK];
	uint32_t pushed;

	if (!n)
		return;
	for (uint32_t i = 0; i < n && i < WANTED_PER_TICK; i++)
		jobs[i] = (struct sp_unw_job){
			.req = w[i].req, .fd = -1, .pid = w[i].pid, .start = w[i].start,
			.end = w[i].end,
		};
	pushed = sp_unw_builder__push_many(u->builder, jobs, n);
	if (pushed == n)
		return;
	pthread_mutex_lock(&u->lock);
	for (uint32_t i = pushed; i < n; i++)
		sp_unw_files__unqueue(u->files, &w[i].req);
	pthread_mutex_unlock(&u->lock);
}

/* Builder thread, about once a second: the blob's quarantine, and files
 * to (re)build. */
static void tick(void *ctx)
{
	struct sp_unwinder *u = ctx;
	struct sp_unw_rebuild w[WANTED_PER_TICK];
	uint32_t n = 0;

	pthread_mutex_lock(&u->lock);
	if (u->closing) {
		pthread_mutex_unlock(&u->lock);
		return;
	}
	sp_unw_blob__tick(u->blob, mono_ns());
	if (!u->pressure)
		n = sp_unw_files__wanted(u->files, w, WANTED_PER_TICK);
	pthread_mutex_unlock(&u->lock);
	queue_rebuilds(u, w, n);
}

/* ------------------------------------------------------------ vDSO */

struct vdso_seek {
	uint64_t start, end;
};

static int vdso_line(const struct sp_map_entry *e, void *ctx)
{
	struct vdso_seek *v = ctx;

	if (e->path_len != 6 || memcmp(e->path, "[vdso]", 6))
		return 0;
	v->start = e->start;
	v->end = e->end;
	return 1;	/* found: stop */
}

/* The collector's own [vdso] range from /proc/self/maps (self: right in
 * any pid namespace), read by the one maps reader (its line bounds, not a
 * fixed fgets buffer that would cut a long path line into pieces parsed
 * as lines of their own). */
static int vdso_range(uint64_t *start, uint64_t *end)
{
	struct vdso_seek v = { 0 };
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = sp_maps_reader__scan_fd(fd, vdso_line, &v, NULL);
	close(fd);
	if (err)
		return err;
	if (!v.end)
		return -ENOENT;
	*start = v.start;
	*end = v.end;
	return 0;
}

static void vdso_key_of(Elf *elf, struct sp_unw_file_key *key)
{
	size_t n = 0;

	memset(key, 0, sizeof(*key));
	key->mtime_ns = -1;	/* no file: an identity no file can have */
	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (d && sp_buildid__from_notes(d->d_buf, d->d_size, &key->build_id) == 0)
			return;
	}
}

/* Builds the vDSO's table synchronously (a few KiB) and pins it. */
static void build_vdso(struct sp_unwinder *u)
{
	uint64_t start = 0, end = 0, base_addr = getauxval(AT_SYSINFO_EHDR);
	struct sp_unw_table t = { 0 };
	struct sp_unw_build_req req;
	uint8_t *copy = NULL;
	uint32_t base, word;
	Elf *elf = NULL;
	bool queue;
	int err;

	if (!base_addr || vdso_range(&start, &end) || start != base_addr || end <= start ||
	    end - start > VDSO_MAX)
		return;
	copy = malloc(end - start);
	if (!copy)
		return;
	memcpy(copy, (const void *)start, end - start);
	elf = elf_memory((char *)copy, end - start);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	vdso_key_of(elf, &u->vdso_key);
	if (compile(u, elf, &t))
		goto out;
	pthread_mutex_lock(&u->lock);
	word = sp_unw_files__ref(u->files, &u->vdso_key, 0, 0, 0, &queue, &req);
	if (word && queue && sp_unw_files__begin(u->files, &req)) {
		err = sp_unw_files__reserve(u->files, &req, t.n_words, mono_ns(), &base);
		if (!err) {
			sp_unw_blob__write(u->blob, base, t.words, t.n_words);
			sp_unw_files__publish(u->files, &req, base, &t, mono_ns());
			sp_unw_files__pin(u->files, req.slot);
			u->have_vdso = true;
		}
	}
	/* The collector itself is not one of the referencing processes. */
	sp_unw_files__unref(u->files, word);
	pthread_mutex_unlock(&u->lock);
out:
	sp_unw_table__release(&t);
	if (elf)
		elf_end(elf);
	free(copy);
}

/* ------------------------------------------------------------ listener */

static void defer_add(struct sp_unwinder *u, uint32_t pid, uint64_t due);

static void on_begin(uint32_t pid, void *ctx)
{
	struct sp_unwinder *u = ctx;

	pthread_mutex_lock(&u->lock);
	sp_unw_procs__begin(u->uprocs, pid);
	pthread_mutex_unlock(&u->lock);
}

static void key_of(const struct sp_proc_exec_map *m, struct sp_unw_file_key *k)
{
	memset(k, 0, sizeof(*k));
	if (m->build_id && m->build_id->len)
		k->build_id = *m->build_id;
	k->dev = m->dev;
	k->ino = m->ino;
	k->mtime_ns = m->mtime_ns;
}

static void on_maps(uint32_t pid, const struct sp_proc_exec_map *m, uint32_t n, bool truncated,
		    void *ctx)
{
	struct sp_unwinder *u = ctx;
	uint64_t now = mono_ns();
	uint32_t stale, nj = 0, pushed;

	if (n > SP_UNW_RANGES_MAX) {
		n = SP_UNW_RANGES_MAX;
		truncated = true;
	}
	pthread_mutex_lock(&u->lock);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_unw_range_in *r = &u->rbuf[i];
		struct sp_unw_build_req req;
		struct sp_unw_file_key key;
		bool queue = false;

		r->start = m[i].start;
		r->end = m[i].end;
		r->offset = m[i].offset;
		r->file = 0;
		if (m[i].vdso) {
			if (u->have_vdso)
				r->file = sp_unw_files__ref(u->files, &u->vdso_key, 0, 0, 0, &queue,
							    &req);
			continue;
		}
		if (m[i].fd < 0 || !m[i].path)
			continue;	/* anonymous (JIT) or unpinnable: no table */
		key_of(&m[i], &key);
		r->file = sp_unw_files__ref(u->files, &key, pid, m[i].start, m[i].end, &queue, &req);
		if (!queue)
			continue;
		if (u->pressure) {
			u->paused++;
			sp_unw_files__unqueue(u->files, &req);	/* the tick retries */
		} else {
			struct sp_unw_job *job = &u->jbuf[nj];

			*job = (struct sp_unw_job){
				.req = req, .pid = pid, .start = m[i].start, .end = m[i].end,
			};
			job->fd = fcntl(m[i].fd, F_DUPFD_CLOEXEC, 0);
			if (job->fd < 0)
				sp_unw_files__unqueue(u->files, &req);
			else
				nj++;
		}
	}
	/* One hand-off for all the new files of this read. */
	pushed = sp_unw_builder__push_many(u->builder, u->jbuf, nj);
	for (uint32_t i = pushed; i < nj; i++) {
		close(u->jbuf[i].fd);
		sp_unw_files__unqueue(u->files, &u->jbuf[i].req);
	}
	sp_unw_procs__set(u->uprocs, pid, u->rbuf, n, truncated, now);
	/* Stale as written (an exec'd process's loader still mapping its
	 * libraries): again in 10 ms, doubling to 6.4 s for a process that
	 * keeps mapping code. */
	stale = sp_unw_procs__stale_runs(u->uprocs, pid);
	if (stale)
		defer_add(u, pid, now + (SP_UNWINDER_STALE_NS << (stale < 10 ? stale - 1 : 9)));
	pthread_mutex_unlock(&u->lock);
}

/* ------------------------------------------------------------ API */

int sp_unwinder__new(const struct sp_unwinder_config *cfg, const struct sp_unw_backend *be,
		     struct sp_proc_table *procs, struct sp_unwinder **out, char *err,
		     size_t err_len)
{
	struct sp_proc_maps_listener l;
	struct sp_unwinder *u;
	int e = -ENOMEM;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(err, err_len, "out of memory for the unwinder");
		return -ENOMEM;
	}
	pthread_mutex_init(&u->lock, NULL);
	if (cfg)
		u->cfg = *cfg;
	if (!u->cfg.budget_bytes)
		u->cfg.budget_bytes = SP_UNWINDER_DEFAULT_BUDGET;
	if (!u->cfg.cpu_share)
		u->cfg.cpu_share = SP_UNWINDER_DEFAULT_CPU;
	u->be = *be;
	u->procs = procs;
	elf_version(EV_CURRENT);
	u->blob = sp_unw_blob__new(&u->be, u->cfg.budget_bytes);
	if (!u->blob)
		goto fail;
	u->files = sp_unw_files__new(&u->be, u->blob, 0);
	if (!u->files)
		goto fail;
	u->per_file_words = (uint64_t)sp_unw_blob__stats(u->blob)->chunks_max * SP_UNW_CHUNK_WORDS / 4;
	u->uprocs = sp_unw_procs__new(&u->be, u->blob, u->files, u->cfg.max_procs);
	u->rbuf = calloc(SP_UNW_RANGES_MAX, sizeof(*u->rbuf));
	u->jbuf = calloc(SP_UNW_RANGES_MAX, sizeof(*u->jbuf));
	if (!u->uprocs || !u->rbuf || !u->jbuf)
		goto fail;
	u->prefetch = sp_unw_prefetch__new(0, 0);
	if (!u->prefetch)
		goto fail;
	build_vdso(u);
	sp_unw_files__set_lazy(u->files, u->cfg.lazy);
	u->builder = sp_unw_builder__new(0, u->cfg.cpu_share, build, tick, u);
	if (!u->builder) {
		e = -errno;
		snprintf(err, err_len, "cannot start the unwind table builder: %s", strerror(-e));
		goto fail_msg;
	}
	l = (struct sp_proc_maps_listener){ .begin = on_begin, .maps = on_maps, .ctx = u };
	e = sp_proc_table__set_listener(procs, &l);
	if (e)
		goto fail;
	*out = u;
	return 0;
fail:
	snprintf(err, err_len, "cannot set up the unwinder: %s", strerror(-e));
fail_msg:
	sp_unwinder__free(u);
	return e;
}

void sp_unwinder__free(struct sp_unwinder *u)
{
	bool stuck;

	if (!u)
		return;
	if (u->procs)
		sp_proc_table__set_listener(u->procs, NULL);
	pthread_mutex_lock(&u->lock);
	u->closing = true;
	pthread_mutex_unlock(&u->lock);
	stuck = sp_unw_builder__free(u->builder, STOP_WAIT_MS) != 0;
	if (stuck)
		fprintf(stderr, "spanprof: the unwind table builder is blocked reading a file "
			"(a file system that does not answer?): not waiting for it\n");
	sp_unw_procs__free(u->uprocs);
	sp_unw_files__free(u->files);
	sp_unw_blob__free_all(u->blob);
	free(u->rbuf);
	free(u->jbuf);
	if (stuck)
		return;	/* the builder thread may still use u->lock and
			 * u->prefetch: they stay */
	sp_unw_prefetch__free(u->prefetch);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void sp_unwinder__on_exit(struct sp_unwinder *u, uint32_t pid, uint64_t now_ns)
{
	(void)now_ns;
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	sp_unw_procs__exit(u->uprocs, pid, mono_ns());
	for (uint32_t i = 0; i < u->n_defer; i++)
		if (u->defer[i].pid == pid)
			u->defer[i] = u->defer[--u->n_defer];
	pthread_mutex_unlock(&u->lock);
}

/* Adds pid to the deferred re-reads (lock held). */
static void defer_add(struct sp_unwinder *u, uint32_t pid, uint64_t due)
{
	for (uint32_t i = 0; i < u->n_defer; i++)
		if (u->defer[i].pid == pid)
			return;
	if (u->n_defer == DEFER_MAX) {
		u->defer_full++;
		return;
	}
	u->defer[u->n_defer].pid = pid;
	u->defer[u->n_defer].due_ns = due;
	u->n_defer++;
}

void sp_unwinder__on_exec_mapping(struct sp_unwinder *u, uint32_t pid, uint64_t now_ns)
{
	uint64_t now = mono_ns(), last;

	(void)now_ns;
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	last = sp_unw_procs__read_ns(u->uprocs, pid);
	defer_add(u, pid, last && now - last < SP_UNWINDER_REREAD_NS ? last + SP_UNWINDER_REREAD_NS
								     : now);
	pthread_mutex_unlock(&u->lock);
	sp_unwinder__poll(u, now_ns);
}

void sp_unwinder__poll(struct sp_unwinder *u, uint64_t now_ns)
{
	uint32_t due[DEFER_MAX], retry[SP_UNW_PROCS_RETRY], n = 0, nr, ns = 0;
	struct sp_unw_rebuild w[WANTED_PER_TICK];
	uint64_t now = mono_ns();

	if (!u)
		return;
	/* The builder thread starts here, on the consumer's thread: after the
	 * agent has dropped its capabilities (threads keep their own). */
	if (!u->builder_started && sp_unw_builder__start(u->builder) == 0)
		u->builder_started = true;
	pthread_mutex_lock(&u->lock);
	nr = sp_unw_procs__take_retry(u->uprocs, retry, SP_UNW_PROCS_RETRY);
	for (uint32_t i = 0; i < nr; i++)
		defer_add(u, retry[i], now + SP_UNW_BLOB_QUARANTINE_NS + 10000000ull);
	for (uint32_t i = 0; i < u->n_defer;) {
		if (u->defer[i].due_ns <= now) {
			due[n++] = u->defer[i].pid;
			u->defer[i] = u->defer[--u->n_defer];
		} else {
			i++;
		}
	}
	u->rereads += n;
	/* Lazy mode: files a sample has needed since the last drain. */
	if (!u->pressure && !u->closing && u->cfg.lazy && now - u->sampled_scan_ns >= SAMPLED_SCAN_NS) {
		u->sampled_scan_ns = now;
		ns = sp_unw_files__sampled(u->files, w, WANTED_PER_TICK);
	}
	pthread_mutex_unlock(&u->lock);
	queue_rebuilds(u, w, ns);
	/* Unlocked: the re-read calls back into the listener. */
	for (uint32_t i = 0; i < n; i++)
		sp_proc_table__reread(u->procs, due[i], now_ns);
}

void sp_unwinder__set_pressure(struct sp_unwinder *u, bool on)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	u->pressure = on;
	if (on)		/* no growth until the guard says how much */
		sp_unw_blob__set_cap(u->blob, sp_unw_blob__stats(u->blob)->chunks);
	pthread_mutex_unlock(&u->lock);
	sp_unw_builder__set_paused(u->builder, on);
}

uint64_t sp_unwinder__limit(struct sp_unwinder *u, int64_t delta_bytes)
{
	const struct sp_unw_blob_stats *bs;
	const struct sp_unw_files_stats *fs;
	uint64_t now = mono_ns(), freed = 0;
	int64_t cap;

	if (!u)
		return 0;
	pthread_mutex_lock(&u->lock);
	/* Quarantines over: chunks still charged but empty go first, so the
	 * count below is what the cgroup will hold. */
	sp_unw_blob__tick(u->blob, now);
	bs = sp_unw_blob__stats(u->blob);
	fs = sp_unw_files__stats(u->files);
	/* Against what exists now, under the lock: the builder may have
	 * added a chunk since the caller read the usage. */
	if (delta_bytes >= (int64_t)((uint64_t)bs->chunks_max * SP_UNW_CHUNK_BYTES))
		cap = bs->chunks_max;
	else
		cap = (int64_t)bs->chunks + delta_bytes / (int64_t)SP_UNW_CHUNK_BYTES;
	if (cap < 0)
		cap = 0;
	if (cap > bs->chunks_max)
		cap = bs->chunks_max;
	u->guard_cap = (uint64_t)cap * SP_UNW_CHUNK_BYTES;
	u->guard_capped = true;
	sp_unw_blob__set_cap(u->blob, (uint32_t)cap);
	/* Least recently used first, until the chunks still holding words
	 * fit (a table may share its chunks with others: a chunk's memory
	 * returns only once all of it is free). */
	while ((int64_t)bs->chunks_live > cap) {
		uint64_t before = fs->table_words;

		if (!sp_unw_files__evict_lru(u->files, now))
			break;
		freed += (before - fs->table_words) * 8;
		u->guard_evicted++;
	}
	u->guard_evicted_bytes += freed;
	/* Chunks emptied earlier than the quarantine go now; these at the
	 * next call (the guard polls every 250 ms) or the builder's tick. */
	sp_unw_blob__tick(u->blob, now);
	pthread_mutex_unlock(&u->lock);
	return freed;
}

bool sp_unwinder__wait_idle(struct sp_unwinder *u, uint32_t timeout_ms)
{
	return u ? sp_unw_builder__wait_idle(u->builder, timeout_ms) : true;
}

void sp_unwinder__stats(struct sp_unwinder *u, struct sp_unwinder_stats *o)
{
	struct sp_unw_builder_stats bs;
	const struct sp_unw_files_stats *fs;
	const struct sp_unw_procs_stats *ps;

	memset(o, 0, sizeof(*o));
	if (!u)
		return;
	sp_unw_builder__stats(u->builder, &bs);
	pthread_mutex_lock(&u->lock);
	fs = sp_unw_files__stats(u->files);
	ps = sp_unw_procs__stats(u->uprocs);
	o->budget_bytes = (uint64_t)sp_unw_blob__stats(u->blob)->chunks_max * SP_UNW_CHUNK_BYTES;
	o->bytes_in_use = sp_unw_blob__bytes(u->blob);
	o->table_bytes = fs->table_words * 8;
	o->range_bytes = ps->range_words * 8;
	o->fixed_bytes = (uint64_t)SP_UNW_FILES_MAX * sizeof(struct sp_unw_file) +
			 (uint64_t)SP_UNW_SEQ_SLOTS * 8;
	o->files = fs->files;
	o->tables = fs->ready;
	o->procs = ps->procs;
	o->built = fs->built;
	o->rebuilt = fs->rebuilt;
	o->no_cfi = fs->no_cfi;
	o->failed = fs->failed;
	o->failed_malformed = u->malformed;
	o->failed_unreadable = u->unreadable;
	o->failed_too_slow = u->too_slow;
	o->failed_stalled = u->stalled;
	o->stalled_skipped = u->stalled_skipped;
	o->too_large = fs->too_large;
	o->evicted = fs->evicted - u->guard_evicted;
	o->evicted_memguard = u->guard_evicted;
	o->evicted_memguard_bytes = u->guard_evicted_bytes;
	o->cap_bytes = u->guard_capped ? u->guard_cap : o->budget_bytes;
	o->files_full = fs->files_full;
	o->queue_full = bs.queue_full;
	o->procs_full = ps->procs_full;
	o->ranges_no_space = ps->no_space;
	o->ranges_truncated = ps->truncated;
	o->rereads = u->rereads;
	o->paused_builds = u->paused;
	o->lazy = u->cfg.lazy;
	o->deferred = fs->deferred;
	o->sample_queued = fs->sample_queued;
	o->unsampled = fs->unsampled;
	o->builder_pushes = bs.pushes;
	o->builder_wakeups = bs.wakeups;
	o->build_cpu_ns = bs.cpu_ns;
	o->build_throttle_ns = bs.throttle_ns;
	o->cfi_rows = u->cfi_rows;
	o->eh_frame_bytes = u->eh_bytes;
	o->queued = bs.queued;
	o->vdso_table = u->have_vdso;
	pthread_mutex_unlock(&u->lock);
}

int sp_unwinder__parse_budget(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	else if (*end)
		return -EINVAL;
	if (*end && end[1])
		return -EINVAL;
	if (v > SP_UNWINDER_MAX_BUDGET / mul)
		return -EINVAL;
	v *= mul;
	if (v < SP_UNWINDER_MIN_BUDGET || v > SP_UNWINDER_MAX_BUDGET)
		return -EINVAL;
	*out = v;
	return 0;
}
