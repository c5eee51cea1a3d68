// SPDX-License-Identifier: MIT
/*
 * unwind_procs.c - see unwind_procs.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/unwind/unwind_procs.h"

struct uproc {
	uint32_t pid;		/* 0: empty */
	uint32_t base, n;	/* extent: n ranges = 3n words; base 0: none */
	uint32_t seq;
	uint64_t read_ns;	/* when its ranges were last set */
	uint32_t stale_runs;	/* publishes in a row already stale */
	uint32_t *files;	/* range words held (for unref) */
	uint32_t n_files;
};

struct sp_unw_procs {
	struct sp_unw_backend be;
	struct sp_unw_blob *blob;
	struct sp_unw_files *files;
	struct uproc *t;	/* open addressing, mask + 1 entries */
	uint32_t mask, used, max_procs;
	uint32_t begin_pid, begin_seq;	/* the read in progress */
	bool have_begin;
	uint64_t *buf;		/* SP_UNW_RANGES_MAX * 3 words */
	uint32_t retry[SP_UNW_PROCS_RETRY];	/* to publish again (space freed) */
	uint32_t n_retry;
	struct sp_unw_procs_stats st;
};

static uint32_t pid_hash(uint32_t pid)
{
	uint32_t h = pid * 0x9e3779b1u;

	return h ^ (h >> 15);
}

struct sp_unw_procs *sp_unw_procs__new(const struct sp_unw_backend *be, struct sp_unw_blob *blob,
				       struct sp_unw_files *files, uint32_t max_procs)
{
	struct sp_unw_procs *p = calloc(1, sizeof(*p));
	uint32_t size = 1;

	if (!p)
		return NULL;
	if (!max_procs || max_procs > SP_UNW_PROCS_MAX)
		max_procs = SP_UNW_PROCS_MAX;
	while (size < 2 * max_procs)
		size <<= 1;
	p->be = *be;
	p->blob = blob;
	p->files = files;
	p->max_procs = max_procs;
	p->mask = size - 1;
	p->t = calloc(size, sizeof(*p->t));
	p->buf = malloc((size_t)SP_UNW_RANGES_MAX * SP_UNW_RANGE_WORDS * sizeof(*p->buf));
	if (!p->t || !p->buf) {
		sp_unw_procs__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void sp_unw_procs__free(struct sp_unw_procs *p)
{
	if (!p)
		return;
	if (p->t)
		for (uint32_t i = 0; i <= p->mask; i++)
			free(p->t[i].files);
	free(p->t);
	free(p->buf);
	free(p);
}

static struct uproc *find(const struct sp_unw_procs *p, uint32_t pid)
{
	for (uint32_t i = pid_hash(pid) & p->mask;; i = (i + 1) & p->mask) {
		if (p->t[i].pid == pid)
			return &p->t[i];
		if (!p->t[i].pid)
			return NULL;
	}
}

static struct uproc *insert(struct sp_unw_procs *p, uint32_t pid)
{
	uint32_t i;

	if (p->used >= p->max_procs)
		return NULL;
	for (i = pid_hash(pid) & p->mask; p->t[i].pid; i = (i + 1) & p->mask)
		;
	memset(&p->t[i], 0, sizeof(p->t[i]));
	p->t[i].pid = pid;
	p->used++;
	return &p->t[i];
}

/* Removes entry e (backward shift) after its resources are dropped. */
static void erase(struct sp_unw_procs *p, struct uproc *e)
{
	uint32_t i = (uint32_t)(e - p->t), j, k;

	for (j = i;;) {
		j = (j + 1) & p->mask;
		if (!p->t[j].pid)
			break;
		k = pid_hash(p->t[j].pid) & p->mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		p->t[i] = p->t[j];
		i = j;
	}
	memset(&p->t[i], 0, sizeof(p->t[i]));
	p->used--;
}

static void drop(struct sp_unw_procs *p, struct uproc *e, uint64_t now_ns)
{
	if (e->base) {
		sp_unw_blob__release(p->blob, e->base, e->n * SP_UNW_RANGE_WORDS, now_ns);
		p->st.range_words -= e->n * SP_UNW_RANGE_WORDS;
		p->st.procs--;
	}
	for (uint32_t i = 0; i < e->n_files; i++)
		sp_unw_files__unref(p->files, e->files[i]);
	free(e->files);
	e->files = NULL;
	e->n_files = 0;
	e->base = e->n = 0;
}

void sp_unw_procs__begin(struct sp_unw_procs *p, uint32_t pid)
{
	p->begin_pid = pid;
	p->begin_seq = (uint32_t)p->be.seq[pid & (SP_UNW_SEQ_SLOTS - 1)];
	p->have_begin = true;
}

static void unref_all(struct sp_unw_procs *p, const struct sp_unw_range_in *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sp_unw_files__unref(p->files, r[i].file);
}

void sp_unw_procs__set(struct sp_unw_procs *p, uint32_t pid, const struct sp_unw_range_in *r,
		       uint32_t n, bool truncated, uint64_t now_ns)
{
	struct sp_unw_proc v = { 0 };
	struct uproc *e;
	uint32_t base = 0, *held = NULL, seq;
	int err = 0;

	/* Without a begin for this pid the sequence is read now: a change
	 * between the read and now is then missed (never happens: the
	 * process table always calls begin). */
	seq = p->have_begin && p->begin_pid == pid ? p->begin_seq
						   : (uint32_t)p->be.seq[pid & (SP_UNW_SEQ_SLOTS - 1)];
	p->have_begin = false;
	if (n > SP_UNW_RANGES_MAX) {
		unref_all(p, r + SP_UNW_RANGES_MAX, n - SP_UNW_RANGES_MAX);
		n = SP_UNW_RANGES_MAX;
		truncated = true;
	}
	if (truncated)
		p->st.truncated++;
	e = find(p, pid);
	if (!e) {
		e = insert(p, pid);
		if (!e) {
			p->st.procs_full++;
			unref_all(p, r, n);
			return;
		}
	}
	if (n) {
		held = malloc(n * sizeof(*held));
		if (!held) {
			err = -ENOMEM;
			goto fail;
		}
		err = sp_unw_blob__alloc(p->blob, n * SP_UNW_RANGE_WORDS, &base);
		if (err == -ENOSPC) {
			sp_unw_blob__tick(p->blob, now_ns);
			err = sp_unw_blob__alloc(p->blob, n * SP_UNW_RANGE_WORDS, &base);
		}
		if (err == -ENOSPC) {
			/* Room for ranges comes first: evict tables worth them.
			 * Their words are reusable after the quarantine, so
			 * the process is published again then (__retry). */
			const struct sp_unw_files_stats *fs = sp_unw_files__stats(p->files);
			uint64_t before = fs->table_words;

			while (before - fs->table_words < n * SP_UNW_RANGE_WORDS &&
			       sp_unw_files__evict_lru(p->files, now_ns))
				;
			if (before != fs->table_words && p->n_retry < SP_UNW_PROCS_RETRY)
				p->retry[p->n_retry++] = pid;
			else
				p->st.no_space++;
		}
		if (err)
			goto fail;
		for (uint32_t i = 0; i < n; i++) {
			p->buf[3 * i] = r[i].start;
			p->buf[3 * i + 1] = r[i].end;
			p->buf[3 * i + 2] = (r[i].offset >> 12) << 32 | r[i].file;
			held[i] = r[i].file;
		}
		sp_unw_blob__write(p->blob, base, p->buf, n * SP_UNW_RANGE_WORDS);
	}
	v.base = base;
	v.n = n;
	v.seq = seq;
	v.flags = truncated ? SP_UNW_PROC_TRUNC : 0;
	/* The new list is complete in the blob before BPF can see it; the
	 * old one is released after (quarantined). */
	if (p->be.proc_set(p->be.ctx, pid, &v)) {
		p->st.bpf_errors++;
		if (base)
			sp_unw_blob__release(p->blob, base, n * SP_UNW_RANGE_WORDS, now_ns);
		base = 0;
		err = -EIO;
		goto fail;
	}
	drop(p, e, now_ns);
	e->base = base;
	e->n = n;
	e->seq = seq;
	e->read_ns = now_ns;
	e->files = held;
	e->n_files = n;
	if (base) {
		p->st.procs++;
		p->st.range_words += n * SP_UNW_RANGE_WORDS;
	}
	p->st.published++;
	/* Stale already (an exec'd process's loader mapping its libraries
	 * while we read): BPF sends no event for it, since the ranges never
	 * were fresh, so the caller reads again later (backing off for
	 * processes that keep mapping code, like JITs). */
	if (seq != (uint32_t)p->be.seq[pid & (SP_UNW_SEQ_SLOTS - 1)]) {
		if (e->stale_runs < 16)
			e->stale_runs++;
	} else {
		e->stale_runs = 0;
	}
	return;
fail:
	free(held);
	unref_all(p, r, n);
	/* Whatever was there is wrong now: no ranges (frame pointers) beats
	 * old ranges (stacks ended at the new code). */
	p->be.proc_del(p->be.ctx, pid);
	drop(p, e, now_ns);
	erase(p, e);
	(void)err;
}

void sp_unw_procs__exit(struct sp_unw_procs *p, uint32_t pid, uint64_t now_ns)
{
	struct uproc *e = find(p, pid);

	if (!e)
		return;
	p->be.proc_del(p->be.ctx, pid);
	drop(p, e, now_ns);
	erase(p, e);
	p->st.exits++;
}

uint32_t sp_unw_procs__stale_runs(const struct sp_unw_procs *p, uint32_t pid)
{
	const struct uproc *e = find(p, pid);

	return e ? e->stale_runs : 0;
}

uint64_t sp_unw_procs__read_ns(const struct sp_unw_procs *p, uint32_t pid)
{
	const struct uproc *e = find(p, pid);

	return e ? e->read_ns : 0;
}

bool sp_unw_procs__stale(const struct sp_unw_procs *p, uint32_t pid)
{
	const struct uproc *e = find(p, pid);

	return !e || e->seq != (uint32_t)p->be.seq[pid & (SP_UNW_SEQ_SLOTS - 1)];
}

uint32_t sp_unw_procs__take_retry(struct sp_unw_procs *p, uint32_t *pids, uint32_t max)
{
	uint32_t n = p->n_retry < max ? p->n_retry : max;

	memcpy(pids, p->retry, n * sizeof(*pids));
	memmove(p->retry, p->retry + n, (p->n_retry - n) * sizeof(*pids));
	p->n_retry -= n;
	return n;
}

const struct sp_unw_procs_stats *sp_unw_procs__stats(const struct sp_unw_procs *p)
{
	return &p->st;
}
