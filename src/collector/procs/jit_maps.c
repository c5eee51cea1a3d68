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
#include "base/small_file.h"
#include "collector/procs/jit_maps.h"
#include "collector/procs/jitdump.h"

#define NONE UINT32_MAX
#define STALE_SLACK_NS (20ull * 1000 * 1000)
#define STATUS_MAX 8192

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

static int proc_info(const struct sp_jit_maps *j, uint32_t pid, struct pinfo *pi, char *buf)
{
	char path[256];
	const char *s;
	unsigned long long start = 0;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;

	memset(pi, 0, sizeof(*pi));
	snprintf(path, sizeof(path), "%s/%u/status", j->proc_root, pid);
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
	snprintf(path, sizeof(path), "%s/%u/stat", j->proc_root, pid);
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

static int pread_all(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA;	/* shrank under us */
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* The bytes already shipped are still the file's (first and last few). */
static bool unchanged(struct sp_jit_maps *j, int fd, const struct jproc *c)
{
	uint8_t *b = j->buf;

	if (c->first_len && (pread_all(fd, b, c->first_len, 0) || memcmp(b, c->first, c->first_len)))
		return false;
	if (c->last_len && (pread_all(fd, b, c->last_len, c->fdone - c->last_len) ||
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
static int ship_map(struct sp_jit_maps *j, struct work *w, int fd, uint64_t limit)
{
	struct jproc *c = &w->c;

	while (c->done < limit) {
		uint64_t want = limit - c->done;
		size_t n = want > SP_JIT_PIECE_MAX_DATA ? SP_JIT_PIECE_MAX_DATA : (size_t)want;
		bool first = !c->done;
		int err;

		err = pread_all(fd, j->buf, n, c->done);
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

static int read_fd(void *ctx, uint8_t *buf, size_t len, uint64_t off)
{
	return pread_all(*(int *)ctx, buf, len, off);
}

/* Converts the jitdump's records from c->fdone on into perf-map text
 * (jitdump.h) and ships at most max_text bytes of it; *more: stopped at
 * max_text with records left.  0, or a negative errno: the file refused
 * (counted by the caller) or a read or the sink failed (the chain is
 * then broken). */
static int ship_jitdump(struct sp_jit_maps *j, struct work *w, int fd, uint64_t size,
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
		err = sp_jitdump__convert(&c->jd, read_fd, &fd, size, (char *)j->buf, cap, &n, &js);
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
		e = pread_all(fd, c->first, c->first_len, 0);
		if (!e)
			e = pread_all(fd, c->last, c->last_len, f - c->last_len);
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
static int check_jitdump(struct sp_jit_maps *j, struct work *w, int fd)
{
	struct jproc *c = &w->c;
	uint64_t room = c->done < j->cfg.max_bytes_per_proc ? j->cfg.max_bytes_per_proc - c->done : 0;
	uint64_t want = room < j->cfg.max_read_per_check ? room : j->cfg.max_read_per_check;
	uint64_t avail = budget_take(j, want), before = c->done;
	bool more;
	int err;

	err = ship_jitdump(j, w, fd, c->size, avail, &more);
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

static void check(struct sp_jit_maps *j, struct work *w)
{
	struct jproc *c = &w->c;
	char path[256], *sbuf = (char *)j->buf;
	struct dump_find df = { .proc_root = j->proc_root, .pid = w->pid, .fd = -ENOENT };
	uint8_t source = SP_JIT_PERF_MAP;
	struct pinfo pi;
	struct stat st;
	uint64_t limit, before, avail;
	int64_t mtime;
	int rootfd, pfd = -1, fd = -1, err;

	w->outcome = O_UNREADABLE;
	if (proc_info(j, w->pid, &pi, sbuf))
		return;
	df.name_len = (size_t)snprintf(df.name, sizeof(df.name), "/jit-%u.dump", pi.nspid);
	sp_maps_reader__scan(j->proc_root, w->pid, dump_line, &df, NULL);
	if (df.fd != -ENOENT) {
		source = SP_JIT_JITDUMP;
		pfd = df.fd;
		st = df.st;
		pthread_mutex_lock(&j->lock);
		j->st.jitdump_checks++;
		pthread_mutex_unlock(&j->lock);
	} else {
		snprintf(path, sizeof(path), "%s/%u/root", j->proc_root, w->pid);
		rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return;
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", pi.nspid);
		pfd = sp_pin__path(rootfd, path, 0, &st);
		close(rootfd);
	}
	if (pfd < 0) {
		w->outcome = pfd == -ENOENT ? O_NO_MAP : pfd == -EINVAL ? O_NOT_REGULAR
									 : O_UNREADABLE;
		return;
	}
	if (st.st_uid != pi.ruid && st.st_uid != pi.euid) {
		w->outcome = O_WRONG_OWNER;
		goto out;
	}
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	if (pi.start_real_ns && (uint64_t)mtime + STALE_SLACK_NS < pi.start_real_ns) {
		w->outcome = O_STALE;
		goto out;
	}
	w->outcome = O_NONE;
	if (c->source == source && c->dev == (uint64_t)st.st_dev &&
	    c->ino == (uint64_t)st.st_ino && c->mtime_ns == mtime &&
	    c->size == (uint64_t)st.st_size && !c->broken && !c->more)
		goto out;	/* nothing new */
	fd = sp_pin__reopen(pfd, &st, NULL);
	if (fd < 0) {
		w->outcome = O_UNREADABLE;
		goto out;
	}
	/* a jitdump refused at its header is read again from the start when it
	 * changes (nothing of it was kept to compare) */
	if (c->source != source || c->dev != (uint64_t)st.st_dev ||
	    c->ino != (uint64_t)st.st_ino || c->broken || (uint64_t)st.st_size < c->fdone ||
	    (c->jd.state < 0 && !c->jd.off) || !unchanged(j, fd, c)) {
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
		err = check_jitdump(j, w, fd);
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
	err = ship_map(j, w, fd, limit);
	budget_return(j, avail - (c->done - before));	/* a tail left for later */
shipped:
	if (err) {
		c->broken = true;
		w->outcome = O_UNREADABLE;
	} else if (c->done > before) {
		w->outcome = O_READ;
	}
out:
	if (fd >= 0)
		close(fd);
	close(pfd);
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
	if (!j->proc_root || !j->heads || !j->procs || !j->ring || !j->buf || !j->slots) {
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
	if (!j) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&j->lock);
	*st = j->st;
	pthread_mutex_unlock(&j->lock);
}
