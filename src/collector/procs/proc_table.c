// SPDX-License-Identifier: MIT
/*
 * proc_table.c - processes, their executable mappings and build ids.
 *
 * Contract (see proc_table.h for the API):
 *
 * Ownership.  The table owns everything it hands out: sp_proc_info and
 * sp_mapping_info pointers, path strings (refcounted, one heap block per
 * distinct path, freed with the last mapping that names it), exe paths (one
 * heap string per slot) and the per-process mapping arrays.  __free(NULL)
 * is a no-op.
 *
 * Memory.  Allocated at __new: the process slots and their pid hash, the
 * mapping registry (max_mappings + 1 entries) with its hash indexes, the
 * build-id cache and the scratch buffers used while reading maps.  Grown
 * only when maps are read (never per sample): a process's sorted array of
 * executable mappings (<= max_maps_per_proc entries, sized to what was
 * found), its exe path (<= PATH_MAX) and path strings (capped at str_cap
 * bytes in total).  So the worst case is fixed by the config; and with
 * __release called after every export (the agent), what is held follows
 * the live processes, not the history of the run:
 *
 * Lifetimes (epochs).  Ingest happens in epochs (one per aggregator the
 * agent exports); __next_epoch closes the current one.  Every sample
 * stamps its process slot with the current epoch (__resolve, __touch).
 *  - A registry id is referenced by every process map entry that names it
 *    (refs).  When refs drops to 0 the id is stamped dead_epoch = current
 *    epoch and queued (FIFO, so sorted by dead_epoch); only __resolve
 *    through a process's maps hands out ids, so no sample after that epoch
 *    can name it.  __release(N) frees it once dead_epoch <= N, and its id
 *    goes back to a LIFO free list (the registry's touched pages stay at
 *    the live high-water mark).  If a new process maps the same file at
 *    the same range first, the id is taken off the queue and reused as is.
 *  - A gone process (exit seen, or /proc/PID vanished) is kept for late
 *    samples and for the snapshot of the interval that holds its samples
 *    (pid -> comm, exe path).  __release(N) frees it when it went gone
 *    before epoch N (one whole epoch of grace for late samples) and has no
 *    sample newer than N; its map entries then drop their references.
 *  So the snapshot of epoch N (taken before __release(N)) sees every
 *  mapping and process any of its samples names.  Callers that never call
 *  __release (spanprof record) keep every id valid until __free.
 *
 * Failure.  Nothing on the resolve path is fatal: a bound that is hit, a
 * /proc file that vanished or cannot be read, a malformed maps line, a file
 * without a build id - each is counted in sp_proc_table_stats and resolve
 * returns 0 ("unknown") where it has no answer.  Only __new can fail
 * (NULL, errno set).
 *
 * Process lifecycle.  A pid's maps are read on first sight, on __on_exec,
 * and on an address miss at most once per refresh_interval_ns.  __on_exit
 * marks the slot gone (kept, evictable, oldest exit evicted first); the
 * next resolve for that pid re-reads once: if /proc/PID is back (pid reuse)
 * the new maps replace the old, otherwise the old maps keep answering late
 * samples of the dead process.  maps_gone counts processes that vanished
 * before any of their maps were read (their samples are lost).
 *
 * Per process only executable mappings are kept.  File-backed ones get a
 * registry id, and so do anonymous executable memory (a per-process
 * "[anon]" entry: JIT code) and [vdso] (with the vDSO's build id, when
 * configured); other named specials ([vsyscall], [anon:x], ...) are kept
 * as id-0 ranges so addresses in them count as addr_unmapped without
 * re-reading maps on every sample.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/maps.h"
#include "base/maps_reader.h"
#include "base/pin.h"
#include "base/proc_read.h"
#include "collector/procs/buildid_cache.h"
#include "collector/procs/buildid_read.h"
#include "collector/procs/proc_table.h"

#define PROC_DEF_MAX_PROCS 8192
#define PROC_DEF_MAX_MAPPINGS 65536
#define PROC_DEF_MAX_MAPS_PER_PROC 1024
#define PROC_DEF_BUILDID_CACHE 4096
#define PROC_DEF_REFRESH_NS (1000ULL * 1000 * 1000)	/* see resolve */
#define PROC_EARLY_REREADS 4	/* per exec; see sp_proc_table__resolve */
#define PROC_KERNEL_START 0xffff800000000000ULL
#define PROC_KERNEL_PATH "[kernel.kallsyms]"
#define PROC_ANON_PATH "[anon]"

#define PROC_NONE UINT32_MAX		/* end of an index chain */
#define PROC_STR_PER_MAPPING 128	/* path bytes cap = this * max_mappings */
#define PROC_STR_MIN_CAP (128 * 1024)
/* lazy_exec: image names (comm) whose deferred read found a process gone at
 * its first sample are read at exec again while they have credit: each
 * such exec that exits unsampled costs 1, each that is sampled earns
 * PROC_EAGER_EARN (up to PROC_EAGER_MAX), so a name sampled less than once
 * in PROC_EAGER_EARN + 1 execs (sh, sed, cat) goes back to lazy reads and
 * one sampled more often (a burst of short CPU-bound jobs) keeps them.  A
 * direct-mapped table of PROC_EAGER_SLOTS names. */
#define PROC_EAGER_SLOTS 256
#define PROC_EAGER_CREDIT 8
#define PROC_EAGER_EARN 4
#define PROC_EAGER_MAX 64

struct proc_eager {
	char comm[16];		/* a learned name; "" while the slot is free */
	uint32_t credit;
};

struct proc_map {
	uint64_t start;
	uint64_t end;
	uint32_t id;		/* 0: anonymous, or the registry was full */
};

struct proc_slot {
	uint32_t pid;
	uint32_t used;
	uint32_t hash_next;	/* pid hash chain, or free list when !used */
	uint32_t gone_prev;	/* gone list (oldest first) */
	uint32_t gone_next;
	bool in_gone_list;
	bool exited;		/* on_exit seen, re-read not yet tried */
	bool have_maps;		/* maps read successfully at least once */
	bool have_comm;		/* comm given by the caller or read */
	bool gone_counted;	/* maps_gone already counted for this pid */
	bool exec_pending;	/* lazy_exec: maps wait for the first sample */
	bool exec_learned;	/* lazy_exec: read at exec, its name learned */
	bool sampled;		/* a sample since its exec (or first sight) */
	uint8_t read_why;	/* enum sp_proc_unread if this read finds it gone */
	uint64_t last_read_ns;	/* caller's clock (event time) of the last read */
	uint64_t read_at_ns;	/* CLOCK_MONOTONIC when the last read happened */
	uint32_t early_rereads;	/* misses re-read since exec, see resolve */
	uint64_t last_epoch;	/* epoch of the newest sample (resolve, touch) */
	uint64_t gone_epoch;	/* epoch it joined the gone list */
	bool otel_ctx_seen;	/* during a read: an OTEL_CTX line passed */
	struct proc_map *maps;
	uint32_t n_maps;
	char *exe;		/* heap, or NULL */
	struct sp_proc_info info;
};

/* An interned path: one per distinct string, freed with its last user. */
struct proc_str {
	uint32_t refs;		/* registry entries naming it */
	uint32_t hash;		/* for index deletion */
	size_t len;
	char s[];
};

/* A registry entry; id = index.  Free when info.path == NULL. */
struct proc_mapping {
	struct sp_mapping_info info;
	struct proc_str *str;	/* owns info.path */
	uint64_t dead_epoch;	/* epoch refs last dropped to 0 */
	uint32_t refs;		/* process map entries naming it (+1: kernel) */
	uint32_t hash;		/* for index deletion */
	uint32_t prev, next;	/* dead queue when refs == 0; free list uses next */
	bool queued;		/* on the dead queue */
};

struct sp_proc_table {
	struct sp_proc_table_config cfg;
	char *proc_root;
	struct sp_proc_table_stats stats;

	struct proc_slot *slots;	/* max_procs */
	uint32_t *pid_heads;		/* pid_mask + 1 */
	uint32_t pid_mask;
	uint32_t free_head;
	uint32_t gone_head, gone_tail;

	uint64_t epoch;			/* current ingest epoch, from 1 */

	struct proc_mapping *mappings;	/* index = id; [0] unused */
	uint32_t n_mappings;		/* high-water mark: ids 1..n touched */
	uint32_t map_free;		/* LIFO of freed ids, 0 = empty */
	uint32_t dead_head, dead_tail;	/* FIFO of refs == 0 ids, PROC_NONE */
	uint32_t *map_index;		/* open addressing: ids, 0 = empty */
	uint32_t map_mask;
	struct proc_str **str_index;	/* open addressing: interned paths */
	uint32_t str_mask;
	size_t str_bytes, str_cap;

	/* lazy_exec: names read at exec (see PROC_EAGER_CREDIT) */
	struct proc_eager eager[PROC_EAGER_SLOTS];

	struct sp_buildid_cache *bcache;
	struct sp_buildid_read *bread;	/* file reads off this thread */
	struct sp_proc_read *pread;	/* maps reads off this thread */
	struct sp_proc_companions companions;	/* run with fresh maps reads */

	/* listener (unwinder) and what it is given per maps read */
	struct sp_proc_maps_listener listener;
	struct sp_proc_exec_map *lscratch;	/* max_maps_per_proc, if listening */
	uint32_t ln;

	/* scratch for one maps read */
	struct proc_map *scratch;	/* max_maps_per_proc */
	char *pathbuf;			/* PATH_MAX */
};

static const char proc_empty[] = "";

/* ------------------------------------------------------------- helpers */

static uint32_t proc_pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p > (1ULL << 31) ? 1U << 31 : (uint32_t)p;
}

static uint32_t proc_pid_hash(uint32_t pid)
{
	uint32_t h = pid * 0x9e3779b1U;

	return h ^ (h >> 16);
}

/* ------------------------------------------------------------- hashing */

/* Empties slot i0 of a linear-probing table by shifting later members of
 * its cluster back (no tombstones, so probe lengths follow the live
 * entries, not the history).  empty(j): slot j is free; home(j): the ideal
 * slot of the entry at j; move(to, from) copies; clear(j) empties. */
#define PROC_BACKSHIFT(i0, mask, empty, home, move, clear)			\
	do {									\
		uint32_t _i = (i0), _j = (i0), _k;				\
		for (;;) {							\
			_j = (_j + 1) & (mask);					\
			if (empty(_j))						\
				break;						\
			_k = home(_j);						\
			/* stays if its home is cyclically in (_i, _j] */	\
			if (_i <= _j ? (_i < _k && _k <= _j)			\
				     : (_i < _k || _k <= _j))			\
				continue;					\
			move(_i, _j);						\
			_i = _j;						\
		}								\
		clear(_i);							\
	} while (0)

/* ------------------------------------------------------------- strings */

#define STR_EMPTY(j) (!t->str_index[j])
#define STR_HOME(j) (t->str_index[j]->hash & t->str_mask)
#define STR_MOVE(to, from) (t->str_index[to] = t->str_index[from])
#define STR_CLEAR(j) (t->str_index[j] = NULL)

/* The interned copy of s[0..n) with one more reference, or NULL when the
 * path bytes are at their cap or memory is short (the caller counts). */
static struct proc_str *proc_str_get(struct sp_proc_table *t, const char *s, size_t n)
{
	uint32_t h = (uint32_t)XXH3_64bits(s, n), i = h & t->str_mask;
	struct proc_str *p;

	for (;; i = (i + 1) & t->str_mask) {
		p = t->str_index[i];
		if (!p)
			break;
		if (p->len == n && !memcmp(p->s, s, n)) {
			p->refs++;
			return p;
		}
	}
	/* Distinct strings <= live mappings < index size: never full. */
	if (t->str_bytes + sizeof(*p) + n + 1 > t->str_cap)
		return NULL;
	p = malloc(sizeof(*p) + n + 1);
	if (!p)
		return NULL;
	p->refs = 1;
	p->hash = h;
	p->len = n;
	memcpy(p->s, s, n);
	p->s[n] = '\0';
	t->str_bytes += sizeof(*p) + n + 1;
	t->str_index[i] = p;
	return p;
}

static void proc_str_put(struct sp_proc_table *t, struct proc_str *p)
{
	uint32_t i;

	if (!p || --p->refs)
		return;
	for (i = p->hash & t->str_mask; t->str_index[i] != p; i = (i + 1) & t->str_mask)
		;
	PROC_BACKSHIFT(i, t->str_mask, STR_EMPTY, STR_HOME, STR_MOVE, STR_CLEAR);
	t->str_bytes -= sizeof(*p) + p->len + 1;
	free(p);
}

/* ------------------------------------------------------------- registry */

#define MAP_EMPTY(j) (!t->map_index[j])
#define MAP_HOME(j) (t->mappings[t->map_index[j]].hash & t->map_mask)
#define MAP_MOVE(to, from) (t->map_index[to] = t->map_index[from])
#define MAP_CLEAR(j) (t->map_index[j] = 0)

static uint32_t proc_mapping_hash(const char *path, size_t path_len,
				  const struct sp_build_id *b, uint64_t start,
				  uint64_t limit, uint64_t offset, uint32_t pid)
{
	uint64_t h = XXH3_64bits_withSeed(path, path_len, pid);

	h ^= XXH3_64bits_withSeed(b->id, b->len, b->len);
	h = XXH3_64bits_withSeed(&start, sizeof(start), h);
	h = XXH3_64bits_withSeed(&limit, sizeof(limit), h);
	return (uint32_t)XXH3_64bits_withSeed(&offset, sizeof(offset), h);
}

static void proc_dead_del(struct sp_proc_table *t, uint32_t id)
{
	struct proc_mapping *m = &t->mappings[id];

	if (!m->queued)
		return;
	if (m->prev != PROC_NONE)
		t->mappings[m->prev].next = m->next;
	else
		t->dead_head = m->next;
	if (m->next != PROC_NONE)
		t->mappings[m->next].prev = m->prev;
	else
		t->dead_tail = m->prev;
	m->queued = false;
}

/* Drops one process map entry's reference to id (0 = none). */
static void proc_mapping_put(struct sp_proc_table *t, uint32_t id)
{
	struct proc_mapping *m;

	if (!id)
		return;
	m = &t->mappings[id];
	if (--m->refs)
		return;
	m->dead_epoch = t->epoch;
	m->next = PROC_NONE;
	m->prev = t->dead_tail;
	if (t->dead_tail != PROC_NONE)
		t->mappings[t->dead_tail].next = id;
	else
		t->dead_head = id;
	t->dead_tail = id;
	m->queued = true;
}

static void proc_maps_put(struct sp_proc_table *t, const struct proc_map *maps, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		proc_mapping_put(t, maps[i].id);
}

/* Returns an unreferenced, dequeued id to the free list. */
static void proc_mapping_free(struct sp_proc_table *t, uint32_t id)
{
	struct proc_mapping *m = &t->mappings[id];
	uint32_t i;

	for (i = m->hash & t->map_mask; t->map_index[i] != id; i = (i + 1) & t->map_mask)
		;
	PROC_BACKSHIFT(i, t->map_mask, MAP_EMPTY, MAP_HOME, MAP_MOVE, MAP_CLEAR);
	proc_str_put(t, m->str);
	memset(m, 0, sizeof(*m));
	m->next = t->map_free;
	t->map_free = id;
	t->stats.mappings_tracked--;
	t->stats.mappings_released++;
}

/* Id of (path, build id, start, limit, offset, pid) with one more
 * reference (the caller's map entry), registering it if new; 0 when the
 * registry or its path bytes are full (counted).  pid is 0 except for
 * SP_MAP_ANON. */
static uint32_t proc_register(struct sp_proc_table *t, const char *path, size_t path_len,
			      const struct sp_build_id *b, uint64_t start,
			      uint64_t limit, uint64_t offset, uint8_t kind, uint32_t pid)
{
	uint32_t h = proc_mapping_hash(path, path_len, b, start, limit, offset, pid);
	struct proc_mapping *m;
	struct proc_str *str;
	uint32_t i, id;

	for (i = h & t->map_mask;; i = (i + 1) & t->map_mask) {
		id = t->map_index[i];
		if (!id)
			break;
		m = &t->mappings[id];
		if (m->hash == h && m->str->len == path_len &&
		    !memcmp(m->str->s, path, path_len) && m->info.start == start &&
		    m->info.limit == limit && m->info.offset == offset &&
		    m->info.pid == pid && m->info.build_id.len == b->len &&
		    m->info.build_id.kind == b->kind &&
		    !memcmp(m->info.build_id.id, b->id, b->len)) {
			if (!m->refs++)
				proc_dead_del(t, id);	/* back in use as is */
			return id;
		}
	}
	if (!t->map_free && t->n_mappings >= t->cfg.max_mappings) {
		t->stats.mappings_full++;
		return 0;
	}
	str = proc_str_get(t, path, path_len);
	if (!str) {
		t->stats.mappings_full++;
		return 0;
	}
	if (t->map_free) {
		id = t->map_free;
		t->map_free = t->mappings[id].next;
	} else {
		id = ++t->n_mappings;
	}
	m = &t->mappings[id];
	memset(m, 0, sizeof(*m));
	m->info.start = start;
	m->info.limit = limit;
	m->info.offset = offset;
	m->info.build_id = *b;
	m->info.path = str->s;
	m->info.kernel = kind == SP_MAP_KERNEL;
	m->info.kind = kind;
	m->info.pid = pid;
	m->str = str;
	m->refs = 1;
	m->hash = h;
	m->prev = m->next = PROC_NONE;
	t->map_index[i] = id;
	t->stats.mappings_tracked++;
	return id;
}

/* ------------------------------------------------------------- slots */

static struct proc_slot *proc_find(struct sp_proc_table *t, uint32_t pid)
{
	uint32_t i = t->pid_heads[proc_pid_hash(pid) & t->pid_mask];

	while (i != PROC_NONE) {
		if (t->slots[i].pid == pid)
			return &t->slots[i];
		i = t->slots[i].hash_next;
	}
	return NULL;
}

static uint32_t proc_idx(const struct sp_proc_table *t, const struct proc_slot *p)
{
	return (uint32_t)(p - t->slots);
}

static void proc_gone_add(struct sp_proc_table *t, struct proc_slot *p)
{
	uint32_t i = proc_idx(t, p);

	if (p->in_gone_list)
		return;
	p->gone_epoch = t->epoch;
	p->gone_next = PROC_NONE;
	p->gone_prev = t->gone_tail;
	if (t->gone_tail != PROC_NONE)
		t->slots[t->gone_tail].gone_next = i;
	else
		t->gone_head = i;
	t->gone_tail = i;
	p->in_gone_list = true;
}

static void proc_gone_del(struct sp_proc_table *t, struct proc_slot *p)
{
	if (!p->in_gone_list)
		return;
	if (p->gone_prev != PROC_NONE)
		t->slots[p->gone_prev].gone_next = p->gone_next;
	else
		t->gone_head = p->gone_next;
	if (p->gone_next != PROC_NONE)
		t->slots[p->gone_next].gone_prev = p->gone_prev;
	else
		t->gone_tail = p->gone_prev;
	p->in_gone_list = false;
}

static void proc_mark_gone(struct sp_proc_table *t, struct proc_slot *p)
{
	p->info.gone = true;
	proc_gone_add(t, p);
}

static void proc_slot_release(struct sp_proc_table *t, struct proc_slot *p)
{
	uint32_t *link = &t->pid_heads[proc_pid_hash(p->pid) & t->pid_mask];
	uint32_t i = proc_idx(t, p);

	while (*link != PROC_NONE && *link != i)
		link = &t->slots[*link].hash_next;
	if (*link == i)
		*link = p->hash_next;
	proc_gone_del(t, p);
	proc_maps_put(t, p->maps, p->n_maps);
	free(p->maps);
	free(p->exe);
	memset(p, 0, sizeof(*p));
	p->hash_next = t->free_head;
	t->free_head = i;
	t->stats.procs_tracked--;
}

/* A fresh slot for pid, evicting the oldest gone process if needed; NULL
 * (counted) when every slot holds a live process. */
static struct proc_slot *proc_alloc(struct sp_proc_table *t, uint32_t pid)
{
	struct proc_slot *p;
	uint32_t i, h;

	if (t->free_head == PROC_NONE) {
		if (t->gone_head == PROC_NONE) {
			t->stats.procs_table_full++;
			return NULL;
		}
		proc_slot_release(t, &t->slots[t->gone_head]);
	}
	i = t->free_head;
	p = &t->slots[i];
	t->free_head = p->hash_next;
	memset(p, 0, sizeof(*p));
	p->used = 1;
	p->pid = pid;
	p->gone_prev = p->gone_next = PROC_NONE;
	p->info.pid = pid;
	p->info.exe_path = proc_empty;
	p->read_why = SP_PROC_UNREAD_NEW;
	h = proc_pid_hash(pid) & t->pid_mask;
	p->hash_next = t->pid_heads[h];
	t->pid_heads[h] = i;
	t->stats.procs_seen++;
	t->stats.procs_tracked++;
	return p;
}

/* ------------------------------------------------------------- /proc */

static int proc_path(struct sp_proc_table *t, char *buf, size_t size, uint32_t pid,
		     const char *leaf)
{
	int n = snprintf(buf, size, "%s/%u/%s", t->proc_root, pid, leaf);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void proc_read_comm(struct sp_proc_table *t, struct proc_slot *p)
{
	char path[PATH_MAX];
	char buf[sizeof(p->info.comm)];
	ssize_t n;
	int fd;

	if (proc_path(t, path, sizeof(path), p->pid, "comm"))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	memset(p->info.comm, 0, sizeof(p->info.comm));
	memcpy(p->info.comm, buf, (size_t)n);
	p->have_comm = true;
}

static void proc_set_comm(struct proc_slot *p, const char *comm)
{
	memset(p->info.comm, 0, sizeof(p->info.comm));
	memcpy(p->info.comm, comm, strnlen(comm, sizeof(p->info.comm) - 1));
	p->have_comm = true;
}

static void proc_read_exe(struct sp_proc_table *t, struct proc_slot *p)
{
	static const char deleted[] = " (deleted)";
	char path[PATH_MAX];
	char *buf = t->pathbuf;
	ssize_t n;
	char *s;

	if (proc_path(t, path, sizeof(path), p->pid, "exe"))
		return;
	n = readlink(path, buf, PATH_MAX - 1);
	if (n <= 0)
		return;
	if ((size_t)n > sizeof(deleted) - 1 &&
	    !memcmp(buf + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1))
		n -= sizeof(deleted) - 1;
	s = strndup(buf, (size_t)n);
	if (!s)
		return;
	free(p->exe);
	p->exe = s;
	p->info.exe_path = s;
}

/* The build id of a mapped file.  The consumer never waits on a file
 * system for longer than cfg.file_timeout_ms per file (buildid_read.h).
 * With lm (a listener entry), the pinned fd and the file's identity are
 * left there for the unwinder (-1 when the read timed out or was skipped:
 * the builder is not given a file that did not answer). */
static void proc_build_id(struct sp_proc_table *t, uint32_t pid,
			  const struct sp_map_entry *e, struct sp_build_id *b,
			  struct sp_proc_exec_map *lm)
{
	struct sp_buildid_pinned pin;
	enum sp_buildid_read_result res;
	struct stat st;
	int fd = sp_proc_read__take_pin(t->pread, e, &st);

	/* Pinned with the maps read (one hand-off) or not (pin it now); a
	 * pin that hung there: skipped, as buildid_read skips a stuck pid. */
	if (fd >= 0)
		res = sp_buildid_read__get_pinned(t->bread, pid, e, fd, &st, b,
						  lm ? &pin : NULL);
	else if (fd == -ENODATA)
		res = sp_buildid_read__get(t->bread, pid, e, b, lm ? &pin : NULL);
	else if (fd == -EBUSY)
		res = SP_BUILDID_READ_SKIPPED;
	else
		res = SP_BUILDID_READ_FAILED;
	if (fd < 0 && fd != -ENODATA) {
		memset(b, 0, sizeof(*b));
		pin.fd = -1;
	}
	switch (res) {
	case SP_BUILDID_READ_HIT:
		t->stats.buildid_cache_hits++;
		break;
	case SP_BUILDID_READ_MISS:
		t->stats.buildid_cache_misses++;
		break;
	case SP_BUILDID_READ_TIMEOUT:
		t->stats.files_timed_out++;
		break;
	case SP_BUILDID_READ_SKIPPED:
		t->stats.files_skipped++;
		break;
	case SP_BUILDID_READ_FAILED:
		break;
	}
	if (lm && pin.fd >= 0) {
		lm->fd = pin.fd;
		lm->dev = (uint64_t)pin.st.st_dev;
		lm->ino = (uint64_t)pin.st.st_ino;
		lm->mtime_ns = (int64_t)pin.st.st_mtim.tv_sec * 1000000000LL +
			       pin.st.st_mtim.tv_nsec;
	}
}

static void proc_listener_close(struct sp_proc_table *t)
{
	for (uint32_t i = 0; i < t->ln; i++)
		if (t->lscratch[i].fd >= 0)
			close(t->lscratch[i].fd);
	t->ln = 0;
}

static int proc_exec_map_cmp(const void *a, const void *b)
{
	const struct sp_proc_exec_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int proc_map_cmp(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* What one maps read collects (sp_maps_reader__scan's ctx). */
struct proc_scan {
	struct sp_proc_table *t;
	struct proc_slot *p;
	uint32_t n;		/* scratch entries used */
	bool full;		/* more executable mappings than max_maps_per_proc */
};

/* One maps line -> maybe one scratch entry. */
static int proc_take_line(const struct sp_map_entry *e, void *ctx)
{
	struct proc_scan *sc = ctx;
	struct sp_proc_table *t = sc->t;
	struct sp_proc_exec_map *lm = NULL;
	struct sp_build_id b;
	struct proc_map *m;

	if (sp_maps__is_otel_ctx(e))
		sc->p->otel_ctx_seen = true;
	if (!(e->perms & SP_MAP_X))
		return 0;
	if (sc->n >= t->cfg.max_maps_per_proc) {
		sc->full = true;
		return 0;
	}
	m = &t->scratch[sc->n++];
	m->start = e->start;
	m->end = e->end;
	m->id = 0;
	if (t->listener.maps) {
		lm = &t->lscratch[t->ln++];
		memset(lm, 0, sizeof(*lm));
		lm->start = e->start;
		lm->end = e->end;
		lm->offset = e->offset;
		lm->fd = -1;
		lm->path = e->path_len ? "" : NULL;
		if (e->path_len == 6 && !memcmp(e->path, "[vdso]", 6))
			lm->vdso = true;
	}
	if (e->path_len == 0) {
		/* JIT code lives here: one entry per process and range */
		memset(&b, 0, sizeof(b));
		m->id = proc_register(t, PROC_ANON_PATH, sizeof(PROC_ANON_PATH) - 1, &b,
				      e->start, e->end, 0, SP_MAP_ANON, sc->p->pid);
		return 0;
	}
	if (e->path_len == 6 && !memcmp(e->path, "[vdso]", 6) && t->cfg.vdso_len &&
	    e->end - e->start == t->cfg.vdso_len) {
		m->id = proc_register(t, e->path, e->path_len, &t->cfg.vdso_build_id,
				      e->start, e->end, 0, SP_MAP_VDSO, 0);
		return 0;
	}
	/* Other named specials ([vsyscall], [anon:x], ...) have no file. */
	if (e->path[0] == '[')
		return 0;
	proc_build_id(t, sc->p->pid, e, &b, lm);
	if (!b.len)
		t->stats.no_build_id++;
	m->id = proc_register(t, e->path, e->path_len, &b, e->start, e->end, e->offset,
			      SP_MAP_FILE, 0);
	if (lm && m->id) {
		lm->path = t->mappings[m->id].info.path;
		lm->build_id = &t->mappings[m->id].info.build_id;
	}
	return 0;
}

/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns(): event timestamps can be
 * compared with it.  Called once per maps read, never per sample. */
static uint64_t proc_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* lazy_exec's names read at exec: the slot of comm. */
static uint32_t proc_eager_slot(const char *comm)
{
	return (uint32_t)XXH3_64bits(comm, strnlen(comm, 16)) & (PROC_EAGER_SLOTS - 1);
}

/* The learned entry of comm (its slot holds that very name), or NULL: an
 * empty name is never learned. */
static struct proc_eager *proc_eager_find(struct sp_proc_table *t, const char *comm)
{
	struct proc_eager *e = &t->eager[proc_eager_slot(comm)];

	return comm[0] && !strncmp(e->comm, comm, 16) ? e : NULL;
}

/* p's deferred read came too late (gone at its first sample): its name's
 * next execs are read at once, the process being likely as short. */
static void proc_eager_learn(struct sp_proc_table *t, struct proc_slot *p)
{
	struct proc_eager *e;

	if (!p->info.comm[0])
		return;
	e = proc_eager_find(t, p->info.comm);
	if (!e || !e->credit)
		t->stats.exec_names_learned++;
	if (!e)	/* the slot goes to this name */
		e = &t->eager[proc_eager_slot(p->info.comm)];
	memcpy(e->comm, p->info.comm, 16);
	e->credit = PROC_EAGER_CREDIT;
}

/* Whether an exec of comm is read at once (a name learned, credit left). */
static bool proc_eager_wanted(struct sp_proc_table *t, const char *comm)
{
	const struct proc_eager *e = proc_eager_find(t, comm);

	return e && e->credit;
}

/* An exec read at once because of its name exited: unsampled, one credit
 * less (a name that stops being sampled goes back to lazy reads). */
static void proc_eager_exited(struct sp_proc_table *t, struct proc_slot *p)
{
	struct proc_eager *e = proc_eager_find(t, p->info.comm);

	if (p->exec_learned && !p->sampled && e && e->credit)
		e->credit--;
	p->exec_learned = false;
}

/* An exec read at once because of its name was sampled: the read paid. */
static void proc_eager_earned(struct sp_proc_table *t, struct proc_slot *p)
{
	struct proc_eager *e = proc_eager_find(t, p->info.comm);

	if (e)
		e->credit = e->credit + PROC_EAGER_EARN > PROC_EAGER_MAX
				    ? PROC_EAGER_MAX
				    : e->credit + PROC_EAGER_EARN;
}

/* Reads PID/maps into p.  0, or -ENOENT (gone) / other negative errno
 * (unreadable); on failure p keeps its previous maps.  fresh: the
 * process's first read since exec or first sight, with the companions. */
static int proc_read_maps_how(struct sp_proc_table *t, struct proc_slot *p, uint64_t now_ns,
			      bool soft, bool fresh);

static int proc_read_maps(struct sp_proc_table *t, struct proc_slot *p, uint64_t now_ns)
{
	return proc_read_maps_how(t, p, now_ns, false, false);
}

/* __maps_with the companions' jobs of a fresh read; hands them back. */
static int proc_scan_maps(struct sp_proc_table *t, uint32_t pid, bool fresh,
			  struct proc_scan *sc, struct sp_maps_read_stats *rs)
{
	struct sp_io_job *jobs[SP_PROC_READ_EXTRAS];
	uint32_t n = 0;
	int err, xrc = -EBUSY;

	if (fresh && t->companions.take)
		n = t->companions.take(pid, jobs, SP_PROC_READ_EXTRAS, t->companions.ctx);
	err = sp_proc_read__maps_with(t->pread, t->proc_root, pid, jobs, n, &xrc,
				      proc_take_line, sc, rs);
	if (n)
		t->companions.back(pid, xrc == -ETIMEDOUT ? NULL : jobs, n, xrc,
				   t->companions.ctx);
	return err;
}

/* soft: a process found gone is left as it was (its exit event, or the
 * next resolve, decides); the read is only a refresh. */
static int proc_read_maps_how(struct sp_proc_table *t, struct proc_slot *p, uint64_t now_ns,
			      bool soft, bool fresh)
{
	struct proc_scan sc = { .t = t, .p = p };
	struct sp_maps_read_stats rs;
	uint32_t n, i;
	bool sorted = true;
	struct proc_map *maps;
	int err;

	p->last_read_ns = now_ns;
	p->read_at_ns = proc_mono_ns();
	p->otel_ctx_seen = false;
	p->exited = false;
	t->stats.maps_reads++;
	t->ln = 0;
	if (t->listener.begin)
		t->listener.begin(p->pid, t->listener.ctx);
	err = proc_scan_maps(t, p->pid, fresh, &sc, &rs);
	t->stats.maps_malformed_lines += rs.malformed;
	n = sc.n;
	if (err) {
		proc_maps_put(t, t->scratch, n);
		proc_listener_close(t);
		goto fail;
	}

	if (n == 0) {
		/* A user process always maps something (its executable, stack,
		 * vdso): an empty read is a process past exit_mm(), whose late
		 * samples still need the maps it had.  Treated as gone. */
		proc_listener_close(t);
		err = -ESRCH;
		goto fail;
	}
	if (sc.full || rs.truncated)
		t->stats.maps_per_proc_full++;
	for (i = 1; i < n; i++) {
		if (t->scratch[i - 1].start > t->scratch[i].start) {
			sorted = false;
			break;
		}
	}
	if (!sorted)
		qsort(t->scratch, n, sizeof(*t->scratch), proc_map_cmp);
	maps = NULL;
	if (n) {
		maps = malloc((size_t)n * sizeof(*maps));
		if (!maps) {
			proc_maps_put(t, t->scratch, n);
			proc_listener_close(t);
			err = -ENOMEM;
			goto fail;
		}
		memcpy(maps, t->scratch, (size_t)n * sizeof(*maps));
	}
	/* New references were taken first: a mapping in both reads never
	 * reaches the dead queue. */
	proc_maps_put(t, p->maps, p->n_maps);
	free(p->maps);
	p->maps = maps;
	p->n_maps = n;
	p->have_maps = true;
	p->info.unread = SP_PROC_UNREAD_NONE;
	p->info.has_otel_ctx = p->otel_ctx_seen;
	p->info.gone = false;
	proc_gone_del(t, p);
	if (t->listener.maps) {
		if (!sorted)
			qsort(t->lscratch, t->ln, sizeof(*t->lscratch), proc_exec_map_cmp);
		t->listener.maps(p->pid, t->lscratch, t->ln, sc.full || rs.truncated,
				 t->listener.ctx);
		proc_listener_close(t);
	}
	return 0;
fail:
	if (err == -ETIMEDOUT || err == -EBUSY) {
		/* Its maps did not answer in time (base/proc_read.h): what
		 * was known stays; read again once the stuck read is back. */
		if (err == -ETIMEDOUT)
			t->stats.maps_timed_out++;
		else
			t->stats.maps_skipped++;
		return err;
	}
	if ((err == -ENOENT || err == -ESRCH) && soft)
		return -ENOENT;
	if (err == -ENOENT || err == -ESRCH) {
		if (!p->have_maps && !p->gone_counted) {
			t->stats.maps_gone++;
			p->gone_counted = true;
			p->info.unread = p->read_why;
			if (p->read_why == SP_PROC_UNREAD_DEFERRED)
				proc_eager_learn(t, p);
		}
		proc_mark_gone(t, p);
		return -ENOENT;
	}
	t->stats.maps_unreadable++;
	return err;
}

/* (Re)reads everything about a process we learn from /proc.  When the
 * process is gone, what we knew about it stays. */
static void proc_refresh_all(struct sp_proc_table *t, struct proc_slot *p, uint64_t now_ns)
{
	if (proc_read_maps_how(t, p, now_ns, false, true) == -ENOENT)
		return;
	if (!p->have_comm)
		proc_read_comm(t, p);
	free(p->exe);
	p->exe = NULL;
	p->info.exe_path = proc_empty;
	proc_read_exe(t, p);
}

/* Binary search: the entry containing addr, or NULL. */
static const struct proc_map *proc_lookup(const struct proc_slot *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->n_maps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

/* ------------------------------------------------------------- API */

struct sp_proc_table *sp_proc_table__new(const struct sp_proc_table_config *cfg)
{
	struct sp_proc_table *t;
	struct sp_build_id kb;
	uint32_t i;
	int err = -ENOMEM;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (cfg)
		t->cfg = *cfg;
	if (!t->cfg.max_procs)
		t->cfg.max_procs = PROC_DEF_MAX_PROCS;
	if (!t->cfg.max_mappings)
		t->cfg.max_mappings = PROC_DEF_MAX_MAPPINGS;
	if (!t->cfg.max_maps_per_proc)
		t->cfg.max_maps_per_proc = PROC_DEF_MAX_MAPS_PER_PROC;
	if (!t->cfg.buildid_cache_entries)
		t->cfg.buildid_cache_entries = PROC_DEF_BUILDID_CACHE;
	if (!t->cfg.refresh_interval_ns)
		t->cfg.refresh_interval_ns = PROC_DEF_REFRESH_NS;
	if (!t->cfg.proc_root || !t->cfg.proc_root[0])
		t->cfg.proc_root = "/proc";
	if (t->cfg.max_procs >= (1U << 30) || t->cfg.max_mappings >= (1U << 30)) {
		err = -EINVAL;
		goto fail;
	}
	t->proc_root = strdup(t->cfg.proc_root);
	if (!t->proc_root)
		goto fail;
	t->cfg.proc_root = t->proc_root;

	t->slots = calloc(t->cfg.max_procs, sizeof(*t->slots));
	t->pid_mask = proc_pow2_at_least(t->cfg.max_procs) - 1;
	t->pid_heads = malloc(((size_t)t->pid_mask + 1) * sizeof(*t->pid_heads));
	/* [0] is "unknown"; the kernel takes id 1, one of max_mappings. */
	t->mappings = calloc((size_t)t->cfg.max_mappings + 1, sizeof(*t->mappings));
	t->epoch = 1;
	t->dead_head = t->dead_tail = PROC_NONE;
	t->map_mask = proc_pow2_at_least(2ULL * t->cfg.max_mappings + 2) - 1;
	t->map_index = calloc((size_t)t->map_mask + 1, sizeof(*t->map_index));
	t->str_mask = t->map_mask;
	t->str_index = calloc((size_t)t->str_mask + 1, sizeof(*t->str_index));
	t->pathbuf = malloc(PATH_MAX);
	t->scratch = calloc(t->cfg.max_maps_per_proc, sizeof(*t->scratch));
	t->bcache = sp_buildid_cache__new(t->cfg.buildid_cache_entries);
	if (t->bcache) {
		struct sp_io_deadline_config io = { .timeout_ms = t->cfg.file_timeout_ms,
						    .max_stuck = t->cfg.file_max_stuck };

		t->bread = sp_buildid_read__new(t->proc_root, t->bcache, &io);
		t->pread = sp_proc_read__new(&io);
		sp_proc_read__set_pin_exec(t->pread, true);
	}
	if (!t->slots || !t->pid_heads || !t->mappings || !t->map_index ||
	    !t->str_index || !t->pathbuf || !t->scratch || !t->bcache ||
	    !t->bread || !t->pread)
		goto fail;
	t->str_cap = (size_t)t->cfg.max_mappings * PROC_STR_PER_MAPPING;
	if (t->str_cap < PROC_STR_MIN_CAP)
		t->str_cap = PROC_STR_MIN_CAP;

	for (i = 0; i <= t->pid_mask; i++)
		t->pid_heads[i] = PROC_NONE;
	for (i = 0; i < t->cfg.max_procs; i++)
		t->slots[i].hash_next = i + 1 < t->cfg.max_procs ? i + 1 : PROC_NONE;
	t->free_head = 0;
	t->gone_head = t->gone_tail = PROC_NONE;

	/* No kernel build id (no /sys/kernel/notes) is not fatal: the
	 * mapping still exists, with len 0. */
	if (sp_buildid__kernel(&kb))
		memset(&kb, 0, sizeof(kb));
	if (proc_register(t, PROC_KERNEL_PATH, strlen(PROC_KERNEL_PATH), &kb,
			  PROC_KERNEL_START, UINT64_MAX, 0, SP_MAP_KERNEL, 0) != 1) {
		err = -ENOMEM;
		goto fail;
	}
	return t;
fail:
	sp_proc_table__free(t);
	errno = -err;
	return NULL;
}

void sp_proc_table__free(struct sp_proc_table *t)
{
	uint32_t i;

	if (!t)
		return;
	if (t->slots) {
		for (i = 0; i < t->cfg.max_procs; i++) {
			free(t->slots[i].maps);
			free(t->slots[i].exe);
		}
	}
	if (t->str_index)
		for (i = 0; i <= t->str_mask; i++)
			free(t->str_index[i]);
	sp_buildid_read__free(t->bread);
	sp_proc_read__free(t->pread);
	sp_buildid_cache__free(t->bcache);
	free(t->scratch);
	free(t->lscratch);
	free(t->pathbuf);
	free(t->str_index);
	free(t->map_index);
	free(t->mappings);
	free(t->pid_heads);
	free(t->slots);
	free(t->proc_root);
	free(t);
}

uint32_t sp_proc_table__resolve(struct sp_proc_table *t, uint32_t pid,
				uint64_t addr, uint64_t now_ns)
{
	const struct proc_map *m;
	struct proc_slot *p;
	bool fresh = false;

	if (!t)
		return 0;
	p = proc_find(t, pid);
	if (!p) {
		p = proc_alloc(t, pid);
		if (!p)
			return 0;
		proc_refresh_all(t, p, now_ns);
		fresh = true;
	} else if (p->exited) {
		/* First sample after on_exit: pid reuse or a late sample. */
		p->have_comm = false;
		p->gone_counted = false;
		proc_refresh_all(t, p, now_ns);
		fresh = true;
	}
	m = proc_lookup(p, addr);
	/* Miss: re-read at most once per interval.  Gone processes too,
	 * since that is how a reused pid (without exec) is noticed.  Also,
	 * a few times per exec, whenever the sample is newer than the last
	 * read: a freshly exec'd process maps its libraries right after the
	 * exec event, and a process living 30 ms cannot wait for the
	 * interval (1 s by default: in steady state most misses are garbage
	 * frames from code without frame pointers, not new mappings).  A miss on a sample older than the read is a real hole
	 * (JIT, unmapped since) and waits for the interval. */
	if (!m && !fresh && now_ns >= p->last_read_ns &&
	    (now_ns - p->last_read_ns >= t->cfg.refresh_interval_ns ||
	     (now_ns > p->read_at_ns && p->early_rereads < PROC_EARLY_REREADS))) {
		if (now_ns - p->last_read_ns < t->cfg.refresh_interval_ns)
			p->early_rereads++;
		proc_read_maps(t, p, now_ns);
		m = proc_lookup(p, addr);
	}
	p->last_epoch = t->epoch;
	if (!m || !m->id) {
		t->stats.addr_unmapped++;
		return 0;
	}
	if (t->mappings[m->id].info.kind == SP_MAP_ANON)
		t->stats.addr_anon++;
	return m->id;
}

uint32_t sp_proc_table__kernel_mapping(const struct sp_proc_table *t)
{
	return t ? 1 : 0;
}

bool sp_proc_table__on_exec(struct sp_proc_table *t, uint32_t pid, const char *comm,
			    uint64_t now_ns)
{
	struct proc_slot *p;

	if (!t)
		return false;
	p = proc_find(t, pid);
	if (!p) {
		p = proc_alloc(t, pid);
		if (!p)
			return false;
	}
	proc_maps_put(t, p->maps, p->n_maps);
	free(p->maps);
	p->maps = NULL;
	p->n_maps = 0;
	p->have_maps = false;
	p->have_comm = false;
	p->gone_counted = false;
	p->early_rereads = 0;
	p->exited = false;
	p->info.gone = false;
	p->info.unread = SP_PROC_UNREAD_NONE;
	proc_gone_del(t, p);
	if (p->exec_pending)
		t->stats.exec_reads_saved++;	/* the previous image: unsampled */
	p->exec_pending = false;
	proc_eager_exited(t, p);	/* by the old image's name */
	p->sampled = false;
	if (comm && comm[0])
		proc_set_comm(p, comm);
	if (t->cfg.lazy_exec && proc_eager_wanted(t, p->info.comm)) {
		p->exec_learned = true;
		t->stats.exec_reads_learned++;
	} else if (t->cfg.lazy_exec) {
		/* What the old image's read knew is not this image's. */
		free(p->exe);
		p->exe = NULL;
		p->info.exe_path = proc_empty;
		p->info.has_otel_ctx = false;
		p->exec_pending = true;
		p->read_why = SP_PROC_UNREAD_DEFERRED;
		t->stats.exec_reads_deferred++;
		return true;
	}
	p->read_why = SP_PROC_UNREAD_EXEC;
	proc_refresh_all(t, p, now_ns);
	return false;
}

bool sp_proc_table__sampled(struct sp_proc_table *t, uint32_t pid, uint64_t now_ns)
{
	struct proc_slot *p = t ? proc_find(t, pid) : NULL;

	if (!p || !p->exec_pending)
		return false;
	p->exec_pending = false;
	t->stats.exec_reads_on_sample++;
	proc_refresh_all(t, p, now_ns);
	return true;
}

void sp_proc_table__on_exit(struct sp_proc_table *t, uint32_t pid)
{
	struct proc_slot *p;

	if (!t)
		return;
	p = proc_find(t, pid);
	if (!p)
		return;
	p->exited = true;
	if (p->exec_pending)
		t->stats.exec_reads_saved++;	/* exited before any sample */
	p->exec_pending = false;
	proc_eager_exited(t, p);
	proc_mark_gone(t, p);
}

const struct sp_proc_info *sp_proc_table__proc(struct sp_proc_table *t, uint32_t pid)
{
	struct proc_slot *p;

	if (!t)
		return NULL;
	p = proc_find(t, pid);
	return p ? &p->info : NULL;
}

const struct sp_mapping_info *sp_proc_table__mapping(const struct sp_proc_table *t,
						     uint32_t id)
{
	if (!t || id == 0 || id > t->n_mappings || !t->mappings[id].info.path)
		return NULL;
	return &t->mappings[id].info;
}

uint32_t sp_proc_table__n_mappings(const struct sp_proc_table *t)
{
	return t ? t->n_mappings : 0;
}

const struct sp_proc_table_stats *sp_proc_table__stats(const struct sp_proc_table *t)
{
	return t ? &t->stats : NULL;
}

bool sp_proc_table__touch(struct sp_proc_table *t, uint32_t pid)
{
	struct proc_slot *p = t ? proc_find(t, pid) : NULL;

	if (!p)
		return false;
	p->last_epoch = t->epoch;
	if (!p->sampled && p->exec_learned)
		proc_eager_earned(t, p);
	p->sampled = true;
	return true;
}

uint64_t sp_proc_table__next_epoch(struct sp_proc_table *t)
{
	return t ? t->epoch++ : 0;
}

void sp_proc_table__release(struct sp_proc_table *t, uint64_t closed,
			    sp_proc_table_release_fn fn, void *ctx)
{
	struct proc_slot *p;
	uint32_t pid, id;

	if (!t)
		return;
	/* Gone list: oldest gone_epoch first.  One sent back to the tail
	 * gets the current epoch (> closed), so the walk ends there. */
	while (t->gone_head != PROC_NONE) {
		p = &t->slots[t->gone_head];
		if (p->gone_epoch >= closed)
			break;
		if (p->last_epoch > closed) {
			/* Late samples in an epoch not yet exported. */
			proc_gone_del(t, p);
			proc_gone_add(t, p);
			continue;
		}
		pid = p->pid;
		proc_slot_release(t, p);
		t->stats.procs_released++;
		if (fn)
			fn(pid, ctx);
	}
	/* Dead queue: oldest dead_epoch first.  Mappings of the processes
	 * released just now are stamped with the current epoch: next time. */
	while (t->dead_head != PROC_NONE) {
		id = t->dead_head;
		if (t->mappings[id].dead_epoch > closed)
			break;
		proc_dead_del(t, id);
		proc_mapping_free(t, id);
	}
}

void sp_proc_table__set_companions(struct sp_proc_table *t, const struct sp_proc_companions *c)
{
	if (!t)
		return;
	if (c && c->take && c->back)
		t->companions = *c;
	else
		memset(&t->companions, 0, sizeof(t->companions));
}

int sp_proc_table__set_listener(struct sp_proc_table *t, const struct sp_proc_maps_listener *l)
{
	struct sp_proc_exec_map *ls = NULL;

	if (!t)
		return -EINVAL;
	if (l && l->maps && !t->lscratch) {
		ls = calloc(t->cfg.max_maps_per_proc, sizeof(*ls));
		if (!ls)
			return -ENOMEM;
		t->lscratch = ls;
	}
	if (l)
		t->listener = *l;
	else
		memset(&t->listener, 0, sizeof(t->listener));
	return 0;
}

int sp_proc_table__reread(struct sp_proc_table *t, uint32_t pid, uint64_t now_ns)
{
	struct proc_slot *p = t ? proc_find(t, pid) : NULL;

	if (!p || p->info.gone)
		return -ENOENT;
	if (p->exec_pending) {
		t->stats.rereads_pending++;	/* its first sample reads them */
		return -ENOENT;
	}
	return proc_read_maps_how(t, p, now_ns, true, false);
}
