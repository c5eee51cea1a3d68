// SPDX-License-Identifier: MIT
/*
 * unwind_files.c - see unwind_files.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "collector/unwind/unwind_files.h"

#define GEN_MASK ((1u << SP_UNW_FILE_GEN_BITS) - 1)
#define HASH_SLOTS (2u * SP_UNW_FILES_MAX)	/* power of two */

struct fentry {
	struct sp_unw_file_key key;
	uint32_t hash;
	uint8_t state;		/* enum sp_unw_fstate */
	uint8_t ever_built;
	uint8_t pinned;		/* never evicted (the vDSO) */
	uint8_t in_pend;	/* on the lazy list (struct sp_unw_files.pend) */
	uint32_t gen;
	uint32_t refs;		/* process ranges naming it */
	uint32_t base, words;	/* extent while READY or BUILDING-with-space */
	uint64_t stamp_ns;	/* installed, or evicted / failed for space */
	uint32_t wpid;		/* a process that maps it (reopen for rebuilds) */
	uint64_t wstart, wend;
	uint32_t next_free;
};

struct sp_unw_files {
	struct sp_unw_backend be;
	struct sp_unw_blob *blob;
	uint64_t per_file_max_words;
	struct fentry *e;		/* [SP_UNW_FILES_MAX], [0] unused */
	uint32_t *slot_gen;		/* generation of each slot's last owner */
	uint32_t *index;		/* HASH_SLOTS, slot or 0 */
	uint32_t free_head;		/* 0 = none */
	/* One past the highest slot ever handed out: the scans (LRU, the
	 * tick's rebuilds) stop there, not at SP_UNW_FILES_MAX (slots are
	 * handed out from 1 up, and freed ones first again). */
	uint32_t hwm;
	bool lazy;
	/* Lazy mode: NEW files to look at in __sampled, as slot and
	 * generation; an entry whose slot moved on is dropped there.  Full
	 * (stale entries of reused slots): not added, the tick's __wanted
	 * finds the file instead. */
	struct sp_unw_build_req *pend;	/* [SP_UNW_FILES_MAX] */
	uint32_t n_pend;
	struct sp_unw_files_stats st;
};

static uint32_t key_hash(const struct sp_unw_file_key *k)
{
	uint64_t h;

	if (k->build_id.len)
		h = XXH3_64bits_withSeed(k->build_id.id, k->build_id.len, 1);
	else {
		uint64_t v[3] = { k->dev, k->ino, (uint64_t)k->mtime_ns };

		h = XXH3_64bits_withSeed(v, sizeof(v), 2);
	}
	return (uint32_t)h;
}

static bool key_eq(const struct sp_unw_file_key *a, const struct sp_unw_file_key *b)
{
	if (a->build_id.len || b->build_id.len)
		return a->build_id.len == b->build_id.len &&
		       !memcmp(a->build_id.id, b->build_id.id, a->build_id.len);
	return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns;
}

struct sp_unw_files *sp_unw_files__new(const struct sp_unw_backend *be, struct sp_unw_blob *blob,
				       uint64_t per_file_max_bytes)
{
	struct sp_unw_files *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->be = *be;
	f->blob = blob;
	if (!per_file_max_bytes)
		per_file_max_bytes = (uint64_t)sp_unw_blob__stats(blob)->chunks_max *
				     SP_UNW_CHUNK_BYTES / 4;
	f->per_file_max_words = per_file_max_bytes / 8;
	f->e = calloc(SP_UNW_FILES_MAX, sizeof(*f->e));
	f->index = calloc(HASH_SLOTS, sizeof(*f->index));
	f->slot_gen = calloc(SP_UNW_FILES_MAX, sizeof(*f->slot_gen));
	f->pend = calloc(SP_UNW_FILES_MAX, sizeof(*f->pend));
	if (!f->e || !f->index || !f->slot_gen || !f->pend) {
		sp_unw_files__free(f);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = SP_UNW_FILES_MAX - 1; i >= 1; i--) {
		f->e[i].next_free = f->free_head;
		f->free_head = i;
	}
	return f;
}

void sp_unw_files__free(struct sp_unw_files *f)
{
	if (!f)
		return;
	free(f->e);
	free(f->index);
	free(f->slot_gen);
	free(f->pend);
	free(f);
}

void sp_unw_files__set_lazy(struct sp_unw_files *f, bool lazy)
{
	f->lazy = lazy;
}

static uint32_t index_find(const struct sp_unw_files *f, const struct sp_unw_file_key *k,
			   uint32_t h, uint32_t *pos)
{
	uint32_t i = h & (HASH_SLOTS - 1);

	for (;; i = (i + 1) & (HASH_SLOTS - 1)) {
		uint32_t s = f->index[i];

		if (!s || (f->e[s].hash == h && key_eq(&f->e[s].key, k))) {
			*pos = i;
			return s;
		}
	}
}

/* Removes slot s from the index (backward-shift deletion). */
static void index_del(struct sp_unw_files *f, uint32_t s)
{
	uint32_t i = f->e[s].hash & (HASH_SLOTS - 1), j, k;

	while (f->index[i] != s)
		i = (i + 1) & (HASH_SLOTS - 1);
	for (j = i;;) {
		j = (j + 1) & (HASH_SLOTS - 1);
		if (!f->index[j])
			break;
		k = f->e[f->index[j]].hash & (HASH_SLOTS - 1);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		f->index[i] = f->index[j];
		i = j;
	}
	f->index[i] = 0;
}

static struct sp_unw_file *desc(const struct sp_unw_files *f, uint32_t s)
{
	return &f->be.files[s];
}

/* BPF has stamped slot s's descriptor: a sample had a frame in the file
 * (bpf/unwind.bpf.c sp_unw_touch; the stamp is 0 from the slot's
 * assignment until then). */
static bool sampled(const struct sp_unw_files *f, uint32_t s)
{
	return __atomic_load_n(&desc(f, s)->last_used_ns, __ATOMIC_RELAXED) != 0;
}

/* Lazy mode: slot s is NEW, waiting for a sample. */
static void pend_add(struct sp_unw_files *f, uint32_t s)
{
	struct fentry *e = &f->e[s];

	if (!f->lazy || e->in_pend || f->n_pend == SP_UNW_FILES_MAX)
		return;
	f->pend[f->n_pend].slot = s;
	f->pend[f->n_pend].gen = e->gen;
	f->n_pend++;
	e->in_pend = 1;
}

/* Withdraws slot s's table from BPF and the blob. */
static void drop_table(struct sp_unw_files *f, uint32_t s, uint64_t now_ns)
{
	struct fentry *e = &f->e[s];

	__atomic_store_n(&desc(f, s)->flags, 0, __ATOMIC_RELEASE);
	if (e->words) {
		sp_unw_blob__release(f->blob, e->base, e->words, now_ns);
		if (e->state == SP_UNW_FS_READY) {
			f->st.ready--;
			f->st.table_words -= e->words;
		}
	}
	e->base = e->words = 0;
}

/* Frees slot s (no process maps it). */
static void slot_release(struct sp_unw_files *f, uint32_t s, uint64_t now_ns)
{
	struct fentry *e = &f->e[s];

	drop_table(f, s, now_ns);
	index_del(f, s);
	desc(f, s)->gen = 0;
	e->state = SP_UNW_FS_FREE;
	e->next_free = f->free_head;
	f->free_head = s;
	f->st.files--;
}

/* A free slot, reclaiming the least recently used unmapped file if none. */
static uint32_t slot_alloc(struct sp_unw_files *f, uint64_t now_ns)
{
	uint32_t s, best = 0;

	if (!f->free_head) {
		for (s = 1; s < SP_UNW_FILES_MAX; s++) {
			const struct fentry *e = &f->e[s];

			if (e->refs || e->pinned || e->state == SP_UNW_FS_QUEUED ||
			    e->state == SP_UNW_FS_BUILDING)
				continue;
			if (!best || desc(f, s)->last_used_ns < desc(f, best)->last_used_ns)
				best = s;
		}
		if (!best)
			return 0;
		slot_release(f, best, now_ns);
		f->st.slots_reclaimed++;
	}
	s = f->free_head;
	f->free_head = f->e[s].next_free;
	return s;
}

uint32_t sp_unw_files__ref(struct sp_unw_files *f, const struct sp_unw_file_key *key,
			   uint32_t pid, uint64_t start, uint64_t end, bool *build,
			   struct sp_unw_build_req *req)
{
	uint32_t h = key_hash(key), pos, s;
	struct fentry *e;
	bool created;

	*build = false;
	s = index_find(f, key, h, &pos);
	created = !s;
	if (!s) {
		s = slot_alloc(f, 0);
		if (!s) {
			f->st.files_full++;
			return 0;
		}
		index_find(f, key, h, &pos);	/* a reclaim may have moved entries */
		if (s >= f->hwm)
			f->hwm = s + 1;
		e = &f->e[s];
		memset(e, 0, sizeof(*e));
		e->key = *key;
		e->hash = h;
		e->state = SP_UNW_FS_NEW;
		/* A new generation per owner: a range naming the slot's
		 * previous file never matches this one. */
		f->slot_gen[s] = (f->slot_gen[s] + 1) & GEN_MASK ? f->slot_gen[s] + 1 : 1;
		e->gen = f->slot_gen[s];
		f->index[pos] = s;
		f->st.files++;
		memset(desc(f, s), 0, sizeof(*desc(f, s)));
		desc(f, s)->gen = e->gen;
	}
	e = &f->e[s];
	e->refs++;
	e->wpid = pid;
	e->wstart = start;
	e->wend = end;
	if (e->state == SP_UNW_FS_NEW && f->lazy && !sampled(f, s)) {
		/* No sample has needed it: wait for one (__sampled). */
		if (created)
			f->st.deferred++;
		pend_add(f, s);
	} else if (e->state == SP_UNW_FS_NEW) {
		e->state = SP_UNW_FS_QUEUED;
		*build = true;
		req->slot = s;
		req->gen = e->gen;
		if (f->lazy)
			f->st.sample_queued++;
	}
	return s << SP_UNW_FILE_GEN_BITS | (e->gen & GEN_MASK);
}

void sp_unw_files__unref(struct sp_unw_files *f, uint32_t word)
{
	uint32_t s = word >> SP_UNW_FILE_GEN_BITS;

	if (!s || s >= SP_UNW_FILES_MAX || (f->e[s].gen & GEN_MASK) != (word & GEN_MASK))
		return;
	if (f->e[s].refs)
		f->e[s].refs--;
}

static struct fentry *req_entry(struct sp_unw_files *f, const struct sp_unw_build_req *req)
{
	if (!req->slot || req->slot >= SP_UNW_FILES_MAX || f->e[req->slot].gen != req->gen ||
	    f->e[req->slot].state == SP_UNW_FS_FREE)
		return NULL;
	return &f->e[req->slot];
}

void sp_unw_files__unqueue(struct sp_unw_files *f, const struct sp_unw_build_req *req)
{
	struct fentry *e = req_entry(f, req);

	if (e && e->state == SP_UNW_FS_QUEUED) {
		e->state = e->ever_built ? SP_UNW_FS_EVICTED : SP_UNW_FS_NEW;
		if (e->state == SP_UNW_FS_NEW)
			pend_add(f, req->slot);
	}
}

bool sp_unw_files__begin(struct sp_unw_files *f, const struct sp_unw_build_req *req)
{
	struct fentry *e = req_entry(f, req);

	if (!e || e->state != SP_UNW_FS_QUEUED)
		return false;
	e->state = SP_UNW_FS_BUILDING;
	return true;
}

bool sp_unw_files__evict_lru(struct sp_unw_files *f, uint64_t now_ns)
{
	uint32_t best = 0;
	uint64_t best_t = 0;

	for (uint32_t s = 1; s < f->hwm; s++) {
		const struct fentry *e = &f->e[s];
		uint64_t t;

		if (e->state != SP_UNW_FS_READY || e->pinned)
			continue;
		t = desc(f, s)->last_used_ns > e->stamp_ns ? desc(f, s)->last_used_ns : e->stamp_ns;
		if (!best || t < best_t) {
			best = s;
			best_t = t;
		}
	}
	if (!best)
		return false;
	drop_table(f, best, now_ns);
	f->e[best].state = SP_UNW_FS_EVICTED;
	f->e[best].stamp_ns = now_ns;
	f->st.evicted++;
	return true;
}

int sp_unw_files__reserve(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			  uint32_t n, uint64_t now_ns, uint32_t *base)
{
	struct fentry *e = req_entry(f, req);
	int err;

	if (!e || e->state != SP_UNW_FS_BUILDING)
		return -ESTALE;
	if (n > f->per_file_max_words) {
		e->state = SP_UNW_FS_TOO_LARGE;
		f->st.too_large++;
		return -E2BIG;
	}
	sp_unw_blob__tick(f->blob, now_ns);
	err = sp_unw_blob__alloc(f->blob, n, base);
	if (err == -ENOSPC) {
		/* Evict least recently used tables worth n words; their words
		 * are reusable after the quarantine, so the caller waits and
		 * asks again (-EAGAIN).  Nothing left to evict: -ENOSPC. */
		uint64_t freed = 0, before = f->st.table_words;

		while (freed < n && sp_unw_files__evict_lru(f, now_ns))
			freed = before - f->st.table_words;
		if (freed)
			return -EAGAIN;
	}
	if (err) {
		e->state = SP_UNW_FS_EVICTED;	/* rebuilt when wanted and room */
		e->ever_built = 1;
		e->stamp_ns = now_ns;
		return err;
	}
	e->base = *base;
	e->words = n;
	return 0;
}

void sp_unw_files__publish(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			   uint32_t base, const struct sp_unw_table *t, uint64_t now_ns)
{
	struct fentry *e = req_entry(f, req);
	struct sp_unw_file *d;

	if (!e || e->state != SP_UNW_FS_BUILDING || e->base != base)
		return;
	d = desc(f, req->slot);
	d->base = base;
	d->first_page = t->desc.first_page;
	d->n_pages = t->desc.n_pages;
	d->rows_off = t->desc.rows_off;
	d->rules_off = t->desc.rules_off;
	d->n_rules = t->desc.n_rules;
	d->page_shift = t->desc.page_shift;
	d->gen = e->gen;
	/* Fields first, then the flag BPF tests (x86-64 keeps store order;
	 * the release stops the compiler from reordering). */
	__atomic_store_n(&d->flags, SP_UNW_FILE_READY, __ATOMIC_RELEASE);
	if (e->ever_built)
		f->st.rebuilt++;
	else
		f->st.built++;
	e->ever_built = 1;
	e->state = SP_UNW_FS_READY;
	e->stamp_ns = now_ns;
	f->st.ready++;
	f->st.table_words += e->words;
}

void sp_unw_files__fail(struct sp_unw_files *f, const struct sp_unw_build_req *req,
			enum sp_unw_fstate why)
{
	struct fentry *e = req_entry(f, req);

	if (!e || e->state != SP_UNW_FS_BUILDING)
		return;
	if (e->words) {
		sp_unw_blob__release(f->blob, e->base, e->words, e->stamp_ns);
		e->base = e->words = 0;
	}
	e->state = why;
	if (why == SP_UNW_FS_NO_CFI)
		f->st.no_cfi++;
	else if (why == SP_UNW_FS_TOO_LARGE)
		f->st.too_large++;
	else
		f->st.failed++;
}

uint32_t sp_unw_files__wanted(struct sp_unw_files *f, struct sp_unw_rebuild *out, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t s = 1; s < f->hwm && n < max; s++) {
		struct fentry *e = &f->e[s];

		/* Never built (its queueing failed, or in lazy mode a sample
		 * has needed it since) and mapped, or evicted and touched by
		 * BPF since. */
		if (!e->wpid || !(e->state == SP_UNW_FS_NEW ? e->refs > 0 && (!f->lazy || sampled(f, s)) :
				  e->state == SP_UNW_FS_EVICTED &&
				  desc(f, s)->last_used_ns > e->stamp_ns))
			continue;
		if (e->state == SP_UNW_FS_NEW && f->lazy)
			f->st.sample_queued++;
		e->state = SP_UNW_FS_QUEUED;
		out[n].req.slot = s;
		out[n].req.gen = e->gen;
		out[n].pid = e->wpid;
		out[n].start = e->wstart;
		out[n].end = e->wend;
		n++;
	}
	return n;
}

void sp_unw_files__lost_witness(struct sp_unw_files *f, const struct sp_unw_build_req *req)
{
	struct fentry *e = req_entry(f, req);

	if (!e || (e->state != SP_UNW_FS_BUILDING && e->state != SP_UNW_FS_QUEUED))
		return;
	e->state = e->ever_built ? SP_UNW_FS_EVICTED : SP_UNW_FS_NEW;
	e->wpid = 0;
	if (e->state == SP_UNW_FS_NEW)
		pend_add(f, req->slot);
}

uint32_t sp_unw_files__sampled(struct sp_unw_files *f, struct sp_unw_rebuild *out, uint32_t max)
{
	uint32_t n = 0, waiting = 0;

	if (!f->lazy)
		return 0;
	for (uint32_t i = 0; i < f->n_pend;) {
		uint32_t s = f->pend[i].slot;
		struct fentry *e = &f->e[s];
		/* Unmapped files leave the list too (their next reference
		 * puts them back): it holds what live processes map. */
		bool keep = e->gen == f->pend[i].gen && e->state == SP_UNW_FS_NEW && e->refs;

		if (keep && n < max && e->wpid && sampled(f, s)) {
			e->state = SP_UNW_FS_QUEUED;
			out[n].req = f->pend[i];
			out[n].pid = e->wpid;
			out[n].start = e->wstart;
			out[n].end = e->wend;
			n++;
			f->st.sample_queued++;
			keep = false;
		}
		if (keep) {
			waiting++;
			i++;
			continue;
		}
		/* Queued now, or its slot moved on: off the list (a file that
		 * becomes NEW again is put back). */
		if (e->gen == f->pend[i].gen)
			e->in_pend = 0;
		f->pend[i] = f->pend[--f->n_pend];
	}
	f->st.unsampled = waiting;
	return n;
}

int sp_unw_files__key(const struct sp_unw_files *f, const struct sp_unw_build_req *req,
		      struct sp_unw_file_key *key)
{
	if (!req->slot || req->slot >= SP_UNW_FILES_MAX || f->e[req->slot].gen != req->gen ||
	    f->e[req->slot].state == SP_UNW_FS_FREE)
		return -ESTALE;
	*key = f->e[req->slot].key;
	return 0;
}

void sp_unw_files__pin(struct sp_unw_files *f, uint32_t slot)
{
	if (slot && slot < SP_UNW_FILES_MAX)
		f->e[slot].pinned = 1;
}

enum sp_unw_fstate sp_unw_files__state(const struct sp_unw_files *f, uint32_t slot)
{
	return slot && slot < SP_UNW_FILES_MAX ? f->e[slot].state : SP_UNW_FS_FREE;
}

const struct sp_unw_files_stats *sp_unw_files__stats(const struct sp_unw_files *f)
{
	return &f->st;
}
