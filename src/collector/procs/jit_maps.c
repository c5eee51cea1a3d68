// SPDX-License-Identifier: MIT
/*
 * jit_maps.c - perf-map snapshots as chained pieces (contract: jit_maps.h).
 *
 * Layout: a fixed table of max_procs entries (pid hash with chains and a
 * free list), a ring of queued pids, and the reader thread.  The reader
 * copies what it needs of an entry under the mutex, does the I/O without
 * it, and writes the outcome back only if the entry is still the one it
 * read (gen): a pid forgotten or reused meanwhile keeps nothing of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/maps_reader.h"
#include "base/pin.h"
#include "base/proc_read.h"
#include "base/small_file.h"
#include "collector/procs/jit_maps.h"
#include "collector/procs/jitdump.h"

#define NONE UINT32_MAX
#define STALE_SLACK_NS (20ull * 1000 * 1000)
#define STATUS_MAX 8192
#define IO_WINDOW (1u << 20)		/* bytes one bounded read asks for at least */

struct jproc {
	uint32_t pid;
	uint32_t next;			/* hash chain or free list */
	bool used, queued;
	bool forgotten;			/* forgotten while queued */
	uint64_t gen;
	uint64_t last_note_ns;
	/* the chain (reader-owned fields, written back under the lock) */
	uint64_t dev, ino;
	int64_t mtime_ns;
	uint64_t size;			/* file size at the last read */
	uint64_t done;			/* bytes shipped (the chain's length) */
	uint64_t fdone;			/* file bytes taken: = done for a perf map,
					 * the next record's offset for a jitdump */
	uint8_t source;			/* enum sp_jit_source of the chain */
	struct sp_jitdump jd;		/* jitdump conversion state; its slot table
					 * is this entry's, in sp_jit_maps.slots */
	bool has_head, broken, truncated;
	bool more;			/* the last check stopped at max_read_per_check */
	struct sp_jit_id head;
	uint8_t first[SP_JIT_VERIFY_BYTES], last[SP_JIT_VERIFY_BYTES];
	uint32_t first_len, last_len;
};

struct sp_jit_maps {
	struct sp_jit_maps_config cfg;
	char *proc_root;
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	pthread_t thread;
	bool thread_started, stop, busy;
	struct jproc *procs;
	uint32_t *heads, mask, free_head;
	uint32_t *ring, ring_head, ring_len;
	uint8_t *buf;			/* SP_JIT_PIECE_MAX_DATA, the reader's */
	/* max_procs * SP_JITDUMP_SLOTS, one table per entry, touched only by
	 * the reader (calloc'd: pages of entries without a jitdump are never
	 * touched, so they cost address space, not memory) */
	struct sp_jitdump_slot *slots;
	/* The reader's bounded file access (base/proc_read.h, keyed by pid):
	 * every open, stat and read of a check runs on its helper within
	 * cfg.io_timeout_ms.  win: the last bounded read, a window of the
	 * file being checked that the next small reads are served from
	 * (dropped at the end of each check). */
	struct sp_proc_read *io;
	struct read_job *win;
	uint64_t budget;		/* bytes all processes may still copy */
	uint64_t budget_ns;		/* CLOCK_MONOTONIC of its last refill */
	struct sp_jit_maps_stats st;
};

/* ------------------------------------------------------------ table */

static uint32_t hash_pid(const struct sp_jit_maps *j, uint32_t pid)
{
	uint32_t h = pid * 0x9e3779b1u;

	return (h ^ (h >> 16)) & j->mask;
}

static struct jproc *find(struct sp_jit_maps *j, uint32_t pid)
{
	for (uint32_t i = j->heads[hash_pid(j, pid)]; i != NONE; i = j->procs[i].next)
		if (j->procs[i].pid == pid)
			return &j->procs[i];
	return NULL;
}

static struct jproc *insert(struct sp_jit_maps *j, uint32_t pid)
{
	uint32_t i = j->free_head, h;
	struct jproc *p;
	uint64_t gen;

	if (i == NONE) {
		j->st.procs_full++;
		return NULL;
	}
	p = &j->procs[i];
	j->free_head = p->next;
	gen = p->gen + 1;
	memset(p, 0, sizeof(*p));
	p->jd.slots = &j->slots[(size_t)i * SP_JITDUMP_SLOTS];
	p->gen = gen;
	p->pid = pid;
	p->used = true;
	h = hash_pid(j, pid);
	p->next = j->heads[h];
	j->heads[h] = i;
	j->st.procs++;
	return p;
}

static void remove_proc(struct sp_jit_maps *j, struct jproc *p)
{
	uint32_t i = (uint32_t)(p - j->procs), *link = &j->heads[hash_pid(j, p->pid)];

	while (*link != NONE && *link != i)
		link = &j->procs[*link].next;
	if (*link == i)
		*link = p->next;
	j->st.procs--;
	j->st.procs_with_map -= p->has_head;
	p->used = false;
	p->has_head = false;
	p->gen++;
	p->next = j->free_head;
	j->free_head = i;
}

/* ------------------------------------------------------------ /proc */

struct pinfo {
	uint32_t ruid, euid, nspid;
	uint64_t start_real_ns;		/* 0: unknown */
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* On the helper (find_run). */
static int proc_info(const char *proc_root, uint32_t pid, struct pinfo *pi, char *buf)
{
	char path[PATH_MAX + 32];
	const char *s;
	unsigned long long start = 0;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;

	memset(pi, 0, sizeof(*pi));
	snprintf(path, sizeof(path), "%s/%u/status", proc_root, pid);
	n = sp_read_small(path, buf, STATUS_MAX);
	if (n < 0)
		return (int)n;
	s = strstr(buf, "\nUid:");
	if (!s || sscanf(s + 5, "%u %u", &pi->ruid, &pi->euid) != 2)
		return -EINVAL;
	pi->nspid = pid;
	s = strstr(buf, "\nNSpid:");
	if (s) {
		/* the last field: the pid in the process's own namespace */
		const char *e = strchr(s + 7, '\n'), *q = e ? e : s + strlen(s);
		unsigned v;

		while (q > s + 7 && (q[-1] == ' ' || q[-1] == '\t'))
			q--;
		while (q > s + 7 && q[-1] >= '0' && q[-1] <= '9')
			q--;
		if (sscanf(q, "%u", &v) == 1 && v)
			pi->nspid = v;
	}
	snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
	if (sp_read_small(path, buf, STATUS_MAX) >= 0 && (s = strrchr(buf, ')')) && hz > 0) {
		/* fields after comm: state is 3rd, starttime the 22nd */
		int f = 2;

		for (s++; *s && f < 22; s++)
			if (*s == ' ')
				f++;
		if (f == 22 && sscanf(s, "%llu", &start) == 1) {
			uint64_t boot_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME);

			pi->start_real_ns = boot_real + start * (1000000000ull / (uint64_t)hz);
		}
	}
	return 0;
}

/* ------------------------------------------------------------ reading */

/* What the reader works on: a copy of the entry, written back after. */
struct work {
	uint32_t pid;
	uint64_t gen;
	struct jproc c;			/* chain fields */
	int outcome;			/* which counter, see check() */
};

/* The file a check reads, through the reader's bounded access: fd stays
 * the check's (each read job reads a duplicate of it).  io_err: the first
 * -ETIMEDOUT or -EBUSY met (the check's outcome says which). */
struct jfile {
	struct sp_jit_maps *j;
	uint32_t pid;
	int fd;
	uint64_t size;			/* at the check's stat: reads stop there */
	int io_err;
};

/* One bounded read: its own duplicate of the descriptor and its own
 * buffer (an abandoned job outlives the check). */
struct read_job {
	struct sp_io_job base;		/* first */
	int fd;
	uint64_t off;
	size_t len, got;
	int err;
	uint8_t buf[];			/* len bytes */
};

static void read_run(struct sp_io_job *base)
{
	struct read_job *r = (struct read_job *)base;

	while (r->got < r->len) {
		ssize_t n = pread(r->fd, r->buf + r->got, r->len - r->got, (off_t)(r->off + r->got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->err = -errno;
			return;
		}
		if (n == 0)
			return;		/* the end of the file */
		r->got += (size_t)n;
	}
}

static void read_destroy(struct sp_io_job *base)
{
	struct read_job *r = (struct read_job *)base;

	if (r)
		close(r->fd);
	free(r);
}

static void win_drop(struct sp_jit_maps *j)
{
	if (j->win)
		read_destroy(&j->win->base);
	j->win = NULL;
}

/* len bytes at off into buf: from the window of the last read when it
 * holds them, else one bounded read of at least IO_WINDOW bytes (never
 * past the file's size at the check) that becomes the window.  0,
 * -ENODATA (the file is shorter: shrank under us), a read's negative
 * errno, or -ETIMEDOUT / -EBUSY (base/proc_read.h: the read did not come
 * back within the limit, or the pid's earlier one is still stuck). */
static int jread(struct jfile *f, uint8_t *buf, size_t len, uint64_t off)
{
	struct sp_jit_maps *j = f->j;
	struct read_job *r = j->win;
	size_t want = len;
	int rc;

	if (r && off >= r->off && off + len <= r->off + r->got) {
		memcpy(buf, r->buf + (off - r->off), len);
		return 0;
	}
	if (f->io_err)
		return f->io_err;	/* one stuck read ends the check */
	if (want < IO_WINDOW)
		want = f->size > off && f->size - off < IO_WINDOW ? (size_t)(f->size - off)
								  : IO_WINDOW;
	if (want < len)
		want = len;
	r = malloc(sizeof(*r) + want);
	if (!r)
		return -ENOMEM;
	*r = (struct read_job){ .base = { .run = read_run, .destroy = read_destroy },
				.off = off, .len = want };
	r->fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0) {
		rc = -errno;
		free(r);
		return rc;
	}
	rc = sp_proc_read__job(j->io, f->pid, &r->base);
	if (rc == -ETIMEDOUT || rc == -EBUSY) {
		if (rc == -EBUSY)
			read_destroy(&r->base);	/* not run: still ours */
		f->io_err = rc;			/* else r is its helper's */
		return rc;
	}
	if (rc || r->err) {
		rc = rc ? rc : r->err;
		read_destroy(&r->base);
		return rc;
	}
	win_drop(j);
	j->win = r;
	if (r->got < len)
		return -ENODATA;
	memcpy(buf, r->buf, len);
	return 0;
}

/* The bytes already shipped are still the file's (first and last few). */
static bool unchanged(struct jfile *f, const struct jproc *c)
{
	uint8_t *b = f->j->buf;

	if (c->first_len && (jread(f, b, c->first_len, 0) || memcmp(b, c->first, c->first_len)))
		return false;
	if (c->last_len && (jread(f, b, c->last_len, c->fdone - c->last_len) ||
			    memcmp(b, c->last, c->last_len)))
		return false;
	return true;
}

static void restart(struct jproc *c)
{
	c->done = 0;
	c->fdone = 0;
	sp_jitdump__reset(&c->jd);
	c->has_head = false;
	c->broken = false;
	c->truncated = false;
	c->first_len = c->last_len = 0;
	memset(&c->head, 0, sizeof(c->head));
}

/* Hands data[0, n) to the sink as the chain's next piece.  0, or a
 * negative errno (the chain is then broken). */
static int emit(struct sp_jit_maps *j, struct work *w, const uint8_t *data, size_t n)
{
	struct jproc *c = &w->c;
	struct sp_jit_id id;
	uint8_t *piece;
	size_t plen;
	int err;

	err = sp_jit_piece__encode(c->source, w->pid, c->has_head ? &c->head : NULL, c->done,
				   data, n, &piece, &plen, &id);
	if (err)
		return err;
	err = j->cfg.sink(j->cfg.sink_ctx, &id, piece, plen);
	free(piece);
	pthread_mutex_lock(&j->lock);
	if (err) {
		j->st.sink_refused++;
	} else {
		j->st.pieces++;
		j->st.piece_bytes += plen;
		j->st.bytes_read += n;
	}
	pthread_mutex_unlock(&j->lock);
	if (err)
		return err;
	c->head = id;
	c->has_head = true;
	c->done += n;
	return 0;
}

/* Ships the perf map's bytes [c->done, limit), cut after the last '\n'.
 * 0, or a negative errno (the chain is then broken). */
static int ship_map(struct sp_jit_maps *j, struct work *w, struct jfile *f, uint64_t limit)
{
	struct jproc *c = &w->c;

	while (c->done < limit) {
		uint64_t want = limit - c->done;
		size_t n = want > SP_JIT_PIECE_MAX_DATA ? SP_JIT_PIECE_MAX_DATA : (size_t)want;
		bool first = !c->done;
		int err;

		err = jread(f, j->buf, n, c->done);
		if (err)
			return err;
		if (c->done + n == limit) {
			/* the tail: a line without '\n' may still be written */
			while (n && j->buf[n - 1] != '\n')
				n--;
			if (!n)
				return 0;
		}
		err = emit(j, w, j->buf, n);
		if (err)
			return err;
		if (first) {
			c->first_len = n < SP_JIT_VERIFY_BYTES ? (uint32_t)n : SP_JIT_VERIFY_BYTES;
			memcpy(c->first, j->buf, c->first_len);
		}
		c->last_len = n < SP_JIT_VERIFY_BYTES ? (uint32_t)n : SP_JIT_VERIFY_BYTES;
		memcpy(c->last, j->buf + n - c->last_len, c->last_len);
		c->fdone = c->done;
	}
	return 0;
}

static int read_jfile(void *ctx, uint8_t *buf, size_t len, uint64_t off)
{
	return jread(ctx, buf, len, off);
}

/* Converts the jitdump's records from c->fdone on into perf-map text
 * (jitdump.h) and ships at most max_text bytes of it; *more: stopped at
 * max_text with records left.  0, or a negative errno: the file refused
 * (counted by the caller) or a read or the sink failed (the chain is
 * then broken). */
static int ship_jitdump(struct sp_jit_maps *j, struct work *w, struct jfile *fl, uint64_t size,
			uint64_t max_text, bool *more)
{
	struct jproc *c = &w->c;
	struct sp_jitdump_stats js = { 0 };
	uint64_t left = max_text;
	int err = 0;

	*more = false;
	for (;;) {
		size_t cap = left < SP_JIT_PIECE_MAX_DATA ? (size_t)left : SP_JIT_PIECE_MAX_DATA;
		size_t n = 0;
		uint64_t before = c->jd.off;

		if (cap < SP_JITDUMP_LINE_MAX) {
			*more = c->jd.state == 0 && c->jd.off < size;
			break;
		}
		err = sp_jitdump__convert(&c->jd, read_jfile, fl, size, (char *)j->buf, cap, &n, &js);
		if (n) {	/* lines before a refusal are good ones */
			int e = emit(j, w, j->buf, n);

			if (e) {
				err = e;
				break;
			}
			left -= n;
		}
		if (err)
			break;
		if (c->jd.off == before || n == 0)
			break;	/* all there is, for now */
	}
	if ((!err || err == c->jd.state) && c->jd.off) {
		/* what identifies the bytes taken: the header, the last record's end */
		uint64_t f = c->jd.off;
		int e;

		c->first_len = f < SP_JIT_VERIFY_BYTES ? (uint32_t)f : SP_JIT_VERIFY_BYTES;
		c->last_len = c->first_len;
		e = jread(fl, c->first, c->first_len, 0);
		if (!e)
			e = jread(fl, c->last, c->last_len, f - c->last_len);
		if (e)
			err = e;	/* a read error: the chain breaks */
		else
			c->fdone = f;
	}
	pthread_mutex_lock(&j->lock);
	j->st.jitdump_loads += js.loads + js.moves;
	j->st.jitdump_moves_unknown += js.moves_unknown;
	j->st.jitdump_bad_records += js.bad_record + js.bad_range + js.bad_name;
	j->st.jitdump_skipped += js.skipped;
	j->st.jitdump_line_tables += js.debug_info;
	j->st.jitdump_line_rows += js.debug_rows;
	j->st.jitdump_debug_unused += js.debug_unused;
	j->st.jitdump_debug_bad += js.debug_bad;
	j->st.jitdump_debug_too_big += js.debug_too_big;
	j->st.jitdump_debug_rows_out += js.debug_rows_out;
	j->st.jitdump_debug_bad_names += js.debug_bad_names;
	j->st.jitdump_names_cut += js.names_cut;
	pthread_mutex_unlock(&j->lock);
	return err;
}

/* Up to want bytes of the total budget (refilled at bytes_per_sec, up to
 * burst_bytes); returns what may be read. */
static uint64_t budget_take(struct sp_jit_maps *j, uint64_t want)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), got;

	pthread_mutex_lock(&j->lock);
	if (j->cfg.bytes_per_sec && now > j->budget_ns) {
		uint64_t add = (now - j->budget_ns) / 1000 * j->cfg.bytes_per_sec / 1000000;

		if (add) {
			j->budget = j->budget + add > j->cfg.burst_bytes ? j->cfg.burst_bytes
									   : j->budget + add;
			j->budget_ns = now;
		}
	}
	got = want < j->budget ? want : j->budget;
	j->budget -= got;
	pthread_mutex_unlock(&j->lock);
	return got;
}

static void budget_return(struct sp_jit_maps *j, uint64_t n)
{
	pthread_mutex_lock(&j->lock);
	j->budget = j->budget + n > j->cfg.burst_bytes ? j->cfg.burst_bytes : j->budget + n;
	pthread_mutex_unlock(&j->lock);
}

enum outcome {
	O_NONE, O_NO_MAP, O_NOT_REGULAR, O_WRONG_OWNER, O_STALE, O_UNREADABLE, O_READ,
	O_TIMED_OUT,	/* an open or read not back within io_timeout_ms */
	O_STUCK,	/* not tried: the process's earlier one is still stuck */
};

/* The process's jitdump: an executable mapping of a file whose name ends
 * in "/jit-NSPID.dump" (the runtime maps the dump's first page PROT_EXEC
 * so that profilers find it, as perf does), pinned through
 * sp_pin__mapping (map_files or the path inside the process's root, the
 * maps line's inode either way).  fd stays -ENOENT when there is none. */
struct dump_find {
	const char *proc_root;
	uint32_t pid;
	char name[32];
	size_t name_len;
	int fd;
	struct stat st;
};

static int dump_line(const struct sp_map_entry *e, void *ctx)
{
	struct dump_find *f = ctx;

	if (!(e->perms & SP_MAP_X) || e->path_len < f->name_len ||
	    memcmp(e->path + e->path_len - f->name_len, f->name, f->name_len))
		return 0;
	f->fd = sp_pin__mapping(f->proc_root, f->pid, e, &f->st);
	return 1;
}

/* Text of a jitdump: at most max_bytes_per_proc in the chain, at most
 * max_read_per_check per check, within the total budget.  A file refused
 * (jitdump.h: header, byte order, an unusable record size) is counted and
 * is not an error: what was shipped before stays the chain, the refusal
 * is sticky until the file is replaced, and it is counted again only when
 * the file changes (the check before it skips an unchanged file).  0, or
 * a negative errno of a read or the sink (the chain is then broken). */
static int check_jitdump(struct sp_jit_maps *j, struct work *w, struct jfile *f)
{
	struct jproc *c = &w->c;
	uint64_t room = c->done < j->cfg.max_bytes_per_proc ? j->cfg.max_bytes_per_proc - c->done : 0;
	uint64_t want = room < j->cfg.max_read_per_check ? room : j->cfg.max_read_per_check;
	uint64_t avail = budget_take(j, want), before = c->done;
	bool more;
	int err;

	err = ship_jitdump(j, w, f, c->size, avail, &more);
	budget_return(j, avail - (c->done - before));
	c->more = false;
	pthread_mutex_lock(&j->lock);
	if (err == -EINVAL || err == -EPROTO || err == -EBADMSG) {
		j->st.jitdump_refused++;
		err = 0;
	}
	if (more && avail < want) {
		j->st.over_budget++;
		c->more = true;
	} else if (more && want == room && !c->truncated) {
		j->st.truncated++;	/* the chain stops here */
		c->truncated = true;
	} else if (more && want < room) {
		c->more = true;		/* the rest at the next check */
	}
	pthread_mutex_unlock(&j->lock);
	return err;
}

/* A check's opens, in one hand-off (a file system that stopped answering
 * blocks open and stat as well as read): the process's status and stat,
 * its maps (for its jitdump), the pin of the jitdump or of its perf map,
 * the owner and staleness checks, and the reopen when the file changed.
 * The job's own copies in, its descriptors out (closed by destroy unless
 * taken: an abandoned job outlives the check). */
struct find_job {
	struct sp_io_job base;		/* first */
	char proc_root[PATH_MAX];
	uint32_t pid;
	struct jproc prev;		/* the chain as last seen: its identity fields
					 * only are read (jd.slots is the caller's) */
	char buf[STATUS_MAX];
	int outcome;			/* O_NONE: go on with fd (or nothing new) */
	bool dump;			/* found a jitdump mapping */
	bool nothing_new;
	uint8_t source;
	int pfd, fd;
	struct stat st;
	int64_t mtime;
};

static void find_run(struct sp_io_job *base)
{
	struct find_job *f = (struct find_job *)base;
	struct dump_find df = { .proc_root = f->proc_root, .pid = f->pid, .fd = -ENOENT };
	const struct jproc *c = &f->prev;
	char path[PATH_MAX + 32];
	struct pinfo pi;
	int rootfd;

	f->outcome = O_UNREADABLE;
	if (proc_info(f->proc_root, f->pid, &pi, f->buf))
		return;
	df.name_len = (size_t)snprintf(df.name, sizeof(df.name), "/jit-%u.dump", pi.nspid);
	sp_maps_reader__scan(f->proc_root, f->pid, dump_line, &df, NULL);
	if (df.fd != -ENOENT) {
		f->source = SP_JIT_JITDUMP;
		f->dump = true;
		f->pfd = df.fd;
		f->st = df.st;
	} else {
		snprintf(path, sizeof(path), "%s/%u/root", f->proc_root, f->pid);
		rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return;
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", pi.nspid);
		f->pfd = sp_pin__path(rootfd, path, 0, &f->st);
		close(rootfd);
	}
	if (f->pfd < 0) {
		f->outcome = f->pfd == -ENOENT ? O_NO_MAP : f->pfd == -EINVAL ? O_NOT_REGULAR
									      : O_UNREADABLE;
		return;
	}
	if (f->st.st_uid != pi.ruid && f->st.st_uid != pi.euid) {
		f->outcome = O_WRONG_OWNER;
		return;
	}
	f->mtime = (int64_t)f->st.st_mtim.tv_sec * 1000000000LL + f->st.st_mtim.tv_nsec;
	if (pi.start_real_ns && (uint64_t)f->mtime + STALE_SLACK_NS < pi.start_real_ns) {
		f->outcome = O_STALE;
		return;
	}
	f->outcome = O_NONE;
	if (c->source == f->source && c->dev == (uint64_t)f->st.st_dev &&
	    c->ino == (uint64_t)f->st.st_ino && c->mtime_ns == f->mtime &&
	    c->size == (uint64_t)f->st.st_size && !c->broken && !c->more) {
		f->nothing_new = true;
		return;
	}
	f->fd = sp_pin__reopen(f->pfd, &f->st, NULL);
	if (f->fd < 0)
		f->outcome = O_UNREADABLE;
}

static void find_destroy(struct sp_io_job *base)
{
	struct find_job *f = (struct find_job *)base;

	if (f->pfd >= 0)
		close(f->pfd);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

/* Runs the find job of w's process: O_NONE with *fd (the caller's; -1 when
 * nothing is new), or the outcome that ends the check. */
static int find_file(struct sp_jit_maps *j, struct work *w, int *fd, struct stat *st,
		     int64_t *mtime, uint8_t *source)
{
	struct find_job *f = malloc(sizeof(*f));
	int rc, outcome;

	*fd = -1;
	if (!f)
		return O_UNREADABLE;
	f->base = (struct sp_io_job){ .run = find_run, .destroy = find_destroy };
	snprintf(f->proc_root, sizeof(f->proc_root), "%s", j->proc_root);
	f->pid = w->pid;
	f->prev = w->c;
	f->outcome = O_UNREADABLE;
	f->dump = f->nothing_new = false;
	f->source = SP_JIT_PERF_MAP;
	f->pfd = f->fd = -1;
	rc = sp_proc_read__job(j->io, w->pid, &f->base);
	if (rc == -ETIMEDOUT)
		return O_TIMED_OUT;	/* f is its helper's */
	if (rc) {
		find_destroy(&f->base);
		return rc == -EBUSY ? O_STUCK : O_UNREADABLE;
	}
	if (f->dump) {
		pthread_mutex_lock(&j->lock);
		j->st.jitdump_checks++;
		pthread_mutex_unlock(&j->lock);
	}
	outcome = f->outcome;
	*st = f->st;
	*mtime = f->mtime;
	*source = f->source;
	*fd = f->fd;
	f->fd = -1;
	find_destroy(&f->base);
	return outcome;
}

static void check(struct sp_jit_maps *j, struct work *w)
{
	struct jproc *c = &w->c;
	struct jfile f = { .j = j, .pid = w->pid, .fd = -1 };
	uint8_t source = SP_JIT_PERF_MAP;
	struct stat st;
	uint64_t limit, before = c->done, avail;
	int64_t mtime = 0;
	int err = 0;

	w->outcome = find_file(j, w, &f.fd, &st, &mtime, &source);
	if (w->outcome != O_NONE || f.fd < 0)
		goto out;
	f.size = (uint64_t)st.st_size;
	/* a jitdump refused at its header is read again from the start when it
	 * changes (nothing of it was kept to compare) */
	if (c->source != source || c->dev != (uint64_t)st.st_dev ||
	    c->ino != (uint64_t)st.st_ino || c->broken || (uint64_t)st.st_size < c->fdone ||
	    (c->jd.state < 0 && !c->jd.off) || !unchanged(&f, c)) {
		if (f.io_err)
			goto shipped;	/* the check of what was shipped did not come back */
		if (c->has_head || c->broken) {
			pthread_mutex_lock(&j->lock);
			j->st.restarts++;
			pthread_mutex_unlock(&j->lock);
		}
		restart(c);
		c->source = source;
	}
	c->dev = (uint64_t)st.st_dev;
	c->ino = (uint64_t)st.st_ino;
	c->mtime_ns = mtime;
	c->size = (uint64_t)st.st_size;
	before = c->done;
	if (source == SP_JIT_JITDUMP) {
		err = check_jitdump(j, w, &f);
		goto shipped;
	}
	limit = c->size;
	if (limit > j->cfg.max_bytes_per_proc) {
		limit = j->cfg.max_bytes_per_proc;
		if (!c->truncated) {
			c->truncated = true;
			pthread_mutex_lock(&j->lock);
			j->st.truncated++;
			pthread_mutex_unlock(&j->lock);
		}
	}
	c->more = limit > c->done + j->cfg.max_read_per_check;
	if (c->more)
		limit = c->done + j->cfg.max_read_per_check;
	/* the total budget: what is over it waits for the refill */
	avail = budget_take(j, limit - c->done);
	if (c->done + avail < limit) {
		limit = c->done + avail;
		c->more = true;
		pthread_mutex_lock(&j->lock);
		j->st.over_budget++;
		pthread_mutex_unlock(&j->lock);
	}
	err = ship_map(j, w, &f, limit);
	budget_return(j, avail - (c->done - before));	/* a tail left for later */
shipped:
	if (f.io_err) {
		/* a read that did not come back: the chain starts over once the
		 * file answers again (what was shipped stays shipped) */
		c->broken = true;
		w->outcome = f.io_err == -ETIMEDOUT ? O_TIMED_OUT : O_STUCK;
	} else if (err) {
		c->broken = true;
		w->outcome = O_UNREADABLE;
	} else if (c->done > before) {
		w->outcome = O_READ;
	}
out:
	win_drop(j);
	if (f.fd >= 0)
		close(f.fd);
}

/* Writes a finished check back (lock held). */
static void apply(struct sp_jit_maps *j, const struct work *w)
{
	struct jproc *p = find(j, w->pid);

	j->st.checks++;
	switch (w->outcome) {
	case O_NO_MAP: j->st.no_map++; break;
	case O_NOT_REGULAR: j->st.not_regular++; break;
	case O_WRONG_OWNER: j->st.wrong_owner++; break;
	case O_STALE: j->st.stale++; break;
	case O_UNREADABLE: j->st.unreadable++; break;
	case O_READ: j->st.reads++; break;
	case O_TIMED_OUT: j->st.timed_out++; break;
	case O_STUCK: j->st.skipped_stuck++; break;
	default: break;
	}
	if (!p || p->gen != w->gen)
		return;
	j->st.procs_with_map -= p->has_head;
	p->dev = w->c.dev;
	p->ino = w->c.ino;
	p->mtime_ns = w->c.mtime_ns;
	p->size = w->c.size;
	p->done = w->c.done;
	p->fdone = w->c.fdone;
	p->source = w->c.source;
	p->jd = w->c.jd;
	p->has_head = w->c.has_head;
	p->broken = w->c.broken;
	p->truncated = w->c.truncated;
	p->more = w->c.more;
	p->head = w->c.head;
	memcpy(p->first, w->c.first, sizeof(p->first));
	memcpy(p->last, w->c.last, sizeof(p->last));
	p->first_len = w->c.first_len;
	p->last_len = w->c.last_len;
	j->st.procs_with_map += p->has_head;
}

/* One queued pid: takes it off the ring (lock held), checks it (unlocked),
 * writes back.  Returns with the lock held. */
static void run_one(struct sp_jit_maps *j)
{
	struct work w = { 0 };
	struct jproc *p;

	w.pid = j->ring[j->ring_head];
	j->ring_head = (j->ring_head + 1) % j->cfg.queue_len;
	j->ring_len--;
	p = find(j, w.pid);
	if (!p)
		return;
	p->queued = false;
	if (p->forgotten) {
		remove_proc(j, p);
		return;
	}
	w.gen = p->gen;
	w.c = *p;
	j->busy = true;
	pthread_mutex_unlock(&j->lock);
	check(j, &w);
	pthread_mutex_lock(&j->lock);
	j->busy = false;
	apply(j, &w);
}

static void *reader(void *arg)
{
	struct sp_jit_maps *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (!j->stop && !j->ring_len) {
			pthread_cond_broadcast(&j->idle);
			pthread_cond_wait(&j->work, &j->lock);
		}
		if (j->stop)
			break;
		run_one(j);
	}
	pthread_cond_broadcast(&j->idle);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* ------------------------------------------------------------ API */

int sp_jit_maps__new(const struct sp_jit_maps_config *cfg, struct sp_jit_maps **out)
{
	struct sp_jit_maps *j;
	uint32_t n = 16;

	*out = NULL;
	if (!cfg || !cfg->sink)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->work, NULL);
	pthread_cond_init(&j->idle, NULL);
	j->cfg = *cfg;
	if (!j->cfg.min_interval_ns)
		j->cfg.min_interval_ns = 250ull * 1000 * 1000;
	if (!j->cfg.max_bytes_per_proc)
		j->cfg.max_bytes_per_proc = 64ull << 20;
	if (!j->cfg.max_read_per_check)
		j->cfg.max_read_per_check = 16ull << 20;
	if (!j->cfg.max_procs)
		j->cfg.max_procs = 1024;
	if (!j->cfg.queue_len)
		j->cfg.queue_len = 256;
	if (!j->cfg.burst_bytes)
		j->cfg.burst_bytes = 256ull << 20;
	if (!j->cfg.bytes_per_sec && !j->cfg.no_refill)
		j->cfg.bytes_per_sec = 4ull << 20;
	if (!j->cfg.io_timeout_ms)
		j->cfg.io_timeout_ms = 1000;
	if (!j->cfg.io_max_stuck)
		j->cfg.io_max_stuck = 4;
	j->io = sp_proc_read__new(&(struct sp_io_deadline_config){
		.timeout_ms = j->cfg.io_timeout_ms, .max_stuck = j->cfg.io_max_stuck });
	j->budget = j->cfg.burst_bytes;
	j->budget_ns = clock_ns(CLOCK_MONOTONIC);
	j->proc_root = strdup(cfg->proc_root ? cfg->proc_root : "/proc");
	while (n < j->cfg.max_procs)
		n <<= 1;
	j->mask = n - 1;
	j->heads = malloc(n * sizeof(*j->heads));
	j->procs = calloc(j->cfg.max_procs, sizeof(*j->procs));
	j->ring = calloc(j->cfg.queue_len, sizeof(*j->ring));
	j->buf = malloc(SP_JIT_PIECE_MAX_DATA > STATUS_MAX ? SP_JIT_PIECE_MAX_DATA : STATUS_MAX);
	j->slots = calloc((size_t)j->cfg.max_procs * SP_JITDUMP_SLOTS, sizeof(*j->slots));
	if (!j->proc_root || !j->heads || !j->procs || !j->ring || !j->buf || !j->slots || !j->io) {
		sp_jit_maps__free(j);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		j->heads[i] = NONE;
	for (uint32_t i = 0; i < j->cfg.max_procs; i++)
		j->procs[i].next = i + 1 < j->cfg.max_procs ? i + 1 : NONE;
	j->free_head = 0;
	*out = j;
	return 0;
}

int sp_jit_maps__start(struct sp_jit_maps *j)
{
	sigset_t all, old;
	int err;

	if (!j || j->cfg.no_thread || j->thread_started)
		return 0;
	/* Signals stay with the command's own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&j->thread, NULL, reader, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return err;
	j->thread_started = true;
	pthread_setname_np(j->thread, "sp-jit-maps");
	return 0;
}

void sp_jit_maps__free(struct sp_jit_maps *j)
{
	if (!j)
		return;
	if (j->thread_started) {
		pthread_mutex_lock(&j->lock);
		j->stop = true;
		pthread_cond_broadcast(&j->work);
		pthread_mutex_unlock(&j->lock);
		pthread_join(j->thread, NULL);
	}
	pthread_cond_destroy(&j->idle);
	pthread_cond_destroy(&j->work);
	pthread_mutex_destroy(&j->lock);
	win_drop(j);
	sp_proc_read__free(j->io);	/* stuck helpers free their own jobs */
	free(j->slots);
	free(j->buf);
	free(j->ring);
	free(j->procs);
	free(j->heads);
	free(j->proc_root);
	free(j);
}

void sp_jit_maps__note(struct sp_jit_maps *j, uint32_t pid, uint64_t now_ns)
{
	struct jproc *p;

	if (!j || !pid)
		return;
	pthread_mutex_lock(&j->lock);
	j->st.notes++;
	p = find(j, pid);
	if (p && p->forgotten) {
		remove_proc(j, p);	/* a new process with that pid */
		p = NULL;
	}
	if (!p)
		p = insert(j, pid);
	if (!p || p->queued ||
	    (p->last_note_ns && now_ns - p->last_note_ns < j->cfg.min_interval_ns))
		goto out;
	if (j->ring_len == j->cfg.queue_len) {
		j->st.notes_dropped++;
		goto out;
	}
	p->last_note_ns = now_ns ? now_ns : 1;
	p->queued = true;
	j->ring[(j->ring_head + j->ring_len) % j->cfg.queue_len] = pid;
	j->ring_len++;
	pthread_cond_signal(&j->work);
out:
	pthread_mutex_unlock(&j->lock);
}

int sp_jit_maps__head(struct sp_jit_maps *j, uint32_t pid, uint8_t *source, struct sp_jit_id *id)
{
	struct jproc *p;
	int err = -ENOENT;

	if (!j)
		return -ENOENT;
	pthread_mutex_lock(&j->lock);
	p = find(j, pid);
	if (p && p->has_head && !p->forgotten) {
		*source = p->source;
		*id = p->head;
		err = 0;
	}
	pthread_mutex_unlock(&j->lock);
	return err;
}

void sp_jit_maps__forget(struct sp_jit_maps *j, uint32_t pid)
{
	struct jproc *p;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	p = find(j, pid);
	if (p && p->queued)
		p->forgotten = true;	/* the reader drops it when it comes */
	else if (p)
		remove_proc(j, p);	/* a check in flight finds another gen */
	pthread_mutex_unlock(&j->lock);
}

void sp_jit_maps__restart_all(struct sp_jit_maps *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	for (uint32_t i = 0; i < j->cfg.max_procs; i++)
		if (j->procs[i].used && j->procs[i].has_head)
			j->procs[i].broken = true;
	pthread_mutex_unlock(&j->lock);
}

void sp_jit_maps__run_pending(struct sp_jit_maps *j, uint64_t now_ns)
{
	(void)now_ns;
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	while (j->ring_len)
		run_one(j);
	pthread_mutex_unlock(&j->lock);
}

int sp_jit_maps__drain(struct sp_jit_maps *j, uint32_t timeout_ms)
{
	struct timespec dl;
	int err = 0;

	if (!j)
		return 0;
	if (!j->thread_started) {
		sp_jit_maps__run_pending(j, 0);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->lock);
	while ((j->ring_len || j->busy) && !err)
		if (pthread_cond_timedwait(&j->idle, &j->lock, &dl) == ETIMEDOUT)
			err = -ETIMEDOUT;
	pthread_mutex_unlock(&j->lock);
	return err;
}

void sp_jit_maps__stats(struct sp_jit_maps *j, struct sp_jit_maps_stats *st)
{
	struct sp_proc_read_stats io;

	if (!j) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&j->lock);
	*st = j->st;
	pthread_mutex_unlock(&j->lock);
	sp_proc_read__stats(j->io, &io);	/* its gauge is atomic */
	st->io_stuck = io.stuck;
}
