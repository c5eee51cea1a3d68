// SPDX-License-Identifier: MIT
/*
 * test_unwind_store.c - the unwind store without BPF: the word allocator
 * (unwind_blob.h), the file-table cache with its budget and LRU eviction
 * (unwind_files.h) and the per-process ranges (unwind_procs.h), on a
 * backend of plain memory that counts chunks and can refuse to create
 * one (the "kernel out of memory" case).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collector/unwind/unwind_blob.h"
#include "collector/unwind/unwind_files.h"
#include "collector/unwind/unwind_procs.h"

#define Q SP_UNW_BLOB_QUARANTINE_NS

struct membe {
	uint64_t *chunks[SP_UNW_CHUNKS_MAX];
	int live, created, fail_next;
	struct sp_unw_file files[SP_UNW_FILES_MAX];
	uint64_t seq[SP_UNW_SEQ_SLOTS];
	struct sp_unw_proc procs[1024];
	bool have[1024];
	int proc_sets, proc_dels;
};

static struct membe *mb;

static uint64_t *m_map(void *ctx, uint32_t i)
{
	struct membe *m = ctx;

	if (m->fail_next) {
		m->fail_next--;
		errno = ENOMEM;
		return NULL;
	}
	m->chunks[i] = calloc(SP_UNW_CHUNK_WORDS, 8);
	m->live++;
	m->created++;
	return m->chunks[i];
}

static void m_unmap(void *ctx, uint32_t i)
{
	struct membe *m = ctx;

	free(m->chunks[i]);
	m->chunks[i] = NULL;
	m->live--;
}

static int m_set(void *ctx, uint32_t pid, const struct sp_unw_proc *p)
{
	struct membe *m = ctx;

	m->procs[pid % 1024] = *p;
	m->have[pid % 1024] = true;
	m->proc_sets++;
	return 0;
}

static int m_del(void *ctx, uint32_t pid)
{
	struct membe *m = ctx;

	m->have[pid % 1024] = false;
	m->proc_dels++;
	return 0;
}

static struct sp_unw_backend be;

static int setup(void **state)
{
	(void)state;
	mb = calloc(1, sizeof(*mb));
	be = (struct sp_unw_backend){
		.ctx = mb, .chunk_map = m_map, .chunk_unmap = m_unmap, .files = mb->files,
		.seq = mb->seq, .proc_set = m_set, .proc_del = m_del,
	};
	return mb ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < SP_UNW_CHUNKS_MAX; i++)
		free(mb->chunks[i]);
	free(mb);
	return 0;
}

/* ------------------------------------------------------------ blob */

static void test_blob_alloc_release(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, 4 * SP_UNW_CHUNK_BYTES);
	uint32_t a, c, d;

	(void)state;
	assert_non_null(b);
	assert_int_equal(sp_unw_blob__stats(b)->chunks_max, 4);
	assert_int_equal(mb->live, 0);		/* nothing until used */
	assert_int_equal(sp_unw_blob__alloc(b, 100, &a), 0);
	assert_int_equal(a, 1);			/* word 0 is never handed out */
	assert_int_equal(mb->live, 1);
	/* An extent across a chunk boundary creates the next chunk. */
	assert_int_equal(sp_unw_blob__alloc(b, SP_UNW_CHUNK_WORDS, &c), 0);
	assert_int_equal(c, 101);
	assert_int_equal(mb->live, 2);
	{
		uint64_t src[3] = { 7, 8, 9 };

		sp_unw_blob__write(b, SP_UNW_CHUNK_WORDS - 1, src, 3);
		assert_int_equal(sp_unw_blob__read(b, SP_UNW_CHUNK_WORDS - 1), 7);
		assert_int_equal(sp_unw_blob__read(b, SP_UNW_CHUNK_WORDS + 1), 9);
	}
	/* Released words are quarantined, then reusable and coalesced. */
	sp_unw_blob__release(b, a, 100, 1000);
	assert_int_equal(sp_unw_blob__stats(b)->words_quarantined, 100);
	sp_unw_blob__tick(b, 1000 + Q - 1);
	assert_int_equal(sp_unw_blob__alloc(b, 100, &d), 0);
	assert_int_not_equal(d, 1);		/* still quarantined */
	sp_unw_blob__release(b, d, 100, 2000);
	sp_unw_blob__tick(b, 2000 + Q);
	assert_int_equal(sp_unw_blob__stats(b)->words_quarantined, 0);
	assert_int_equal(sp_unw_blob__alloc(b, 100, &d), 0);
	assert_int_equal(d, 1);
	/* Everything released: chunks go back. */
	sp_unw_blob__release(b, d, 100, 3000);
	sp_unw_blob__release(b, c, SP_UNW_CHUNK_WORDS, 3000);
	sp_unw_blob__tick(b, 3000 + Q);
	assert_int_equal(mb->live, 0);
	assert_int_equal(sp_unw_blob__stats(b)->chunks, 0);
	assert_int_equal(sp_unw_blob__stats(b)->words_used, 0);
	/* After coalescing the whole budget is one extent again. */
	assert_int_equal(sp_unw_blob__alloc(b, 4 * SP_UNW_CHUNK_WORDS - 1, &a), 0);
	assert_int_equal(sp_unw_blob__alloc(b, 1, &c), -ENOSPC);
	sp_unw_blob__free_all(b);
	assert_int_equal(mb->live, 0);
}

static void test_blob_budget_and_memory(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, 1);	/* rounds up to 1 chunk */
	uint32_t a;

	(void)state;
	assert_int_equal(sp_unw_blob__stats(b)->chunks_max, 1);
	assert_int_equal(sp_unw_blob__alloc(b, SP_UNW_CHUNK_WORDS, &a), -ENOSPC);
	mb->fail_next = 1;
	assert_int_equal(sp_unw_blob__alloc(b, 10, &a), -ENOMEM);
	assert_int_equal(sp_unw_blob__stats(b)->chunk_errors, 1);
	assert_int_equal(sp_unw_blob__alloc(b, 10, &a), 0);
	/* No new chunks while the memory guard holds. */
	sp_unw_blob__free_all(b);
	b = sp_unw_blob__new(&be, 2 * SP_UNW_CHUNK_BYTES);
	assert_int_equal(sp_unw_blob__alloc(b, 10, &a), 0);
	assert_int_equal(sp_unw_blob__stats(b)->chunks_live, 1);
	sp_unw_blob__set_cap(b, 1);
	assert_int_equal(sp_unw_blob__alloc(b, SP_UNW_CHUNK_WORDS, &a), -ENOSPC);
	assert_int_equal(sp_unw_blob__alloc(b, 10, &a), 0);	/* inside chunk 0 */
	sp_unw_blob__set_cap(b, 99);				/* clamped to 2 */
	assert_int_equal(sp_unw_blob__cap(b), 2);
	assert_int_equal(sp_unw_blob__alloc(b, SP_UNW_CHUNK_WORDS, &a), 0);
	assert_int_equal(sp_unw_blob__stats(b)->chunks_live, 2);
	/* A released extent stops counting as live at once; its chunk goes
	 * after the quarantine. */
	sp_unw_blob__release(b, a, SP_UNW_CHUNK_WORDS, 1000);
	assert_int_equal(sp_unw_blob__stats(b)->chunks_live, 1);
	assert_int_equal(sp_unw_blob__stats(b)->chunks, 2);
	sp_unw_blob__tick(b, 1000 + SP_UNW_BLOB_QUARANTINE_NS);
	assert_int_equal(sp_unw_blob__stats(b)->chunks, 1);
	sp_unw_blob__free_all(b);
}

/* ------------------------------------------------------------ files */

static struct sp_unw_file_key key_n(int n)
{
	struct sp_unw_file_key k = { 0 };

	k.build_id.len = 20;
	memset(k.build_id.id, n, 20);
	return k;
}

static struct sp_unw_table fake_table(uint32_t words)
{
	struct sp_unw_table t = { 0 };

	t.n_words = words;
	t.words = calloc(words, 8);
	t.desc.n_pages = 1;
	t.desc.page_shift = 12;
	t.desc.rows_off = 1;
	t.desc.rules_off = 2;
	t.desc.n_rules = 1;
	return t;
}

/* ref + build + install of a table of `words` words; returns the word. */
static uint32_t install(struct sp_unw_files *f, struct sp_unw_blob *b, int n, uint32_t words,
			uint64_t now, int *err)
{
	struct sp_unw_file_key k = key_n(n);
	struct sp_unw_build_req req;
	struct sp_unw_table t = fake_table(words);
	uint32_t w, base;
	bool q;

	w = sp_unw_files__ref(f, &k, 100 + n, 0x1000, 0x2000, &q, &req);
	assert_true(q);
	assert_true(sp_unw_files__begin(f, &req));
	*err = sp_unw_files__reserve(f, &req, words, now, &base);
	if (!*err) {
		sp_unw_blob__write(b, base, t.words, words);
		sp_unw_files__publish(f, &req, base, &t, now);
	}
	sp_unw_table__release(&t);
	return w;
}

static void test_files_lifecycle(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, 4 * SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, 0);
	struct sp_unw_file_key k = key_n(1);
	struct sp_unw_build_req req;
	uint32_t w, w2, slot;
	bool q;
	int err;

	(void)state;
	w = install(f, b, 1, 1000, 10, &err);
	assert_int_equal(err, 0);
	slot = w >> SP_UNW_FILE_GEN_BITS;
	assert_int_equal(sp_unw_files__state(f, slot), SP_UNW_FS_READY);
	assert_int_equal(mb->files[slot].flags, SP_UNW_FILE_READY);
	assert_int_equal(mb->files[slot].gen & 0xfff, w & 0xfff);
	assert_int_not_equal(mb->files[slot].base, 0);
	assert_int_equal(sp_unw_files__stats(f)->built, 1);
	assert_int_equal(sp_unw_files__stats(f)->table_words, 1000);
	/* The same file from another process: the same table, no build. */
	w2 = sp_unw_files__ref(f, &k, 7, 0, 0, &q, &req);
	assert_int_equal(w2, w);
	assert_false(q);
	/* A file with no build id is keyed by dev/ino/mtime. */
	{
		struct sp_unw_file_key a = { .dev = 1, .ino = 2, .mtime_ns = 3 }, c = a;

		c.mtime_ns = 4;	/* rewritten in place: another file */
		w = sp_unw_files__ref(f, &a, 1, 0, 0, &q, &req);
		assert_true(q);
		sp_unw_files__unqueue(f, &req);
		w2 = sp_unw_files__ref(f, &c, 1, 0, 0, &q, &req);
		assert_int_not_equal(w, w2);
		assert_true(q);
		assert_true(sp_unw_files__begin(f, &req));
		sp_unw_files__fail(f, &req, SP_UNW_FS_NO_CFI);
		assert_int_equal(sp_unw_files__stats(f)->no_cfi, 1);
		/* Final: a later reference queues nothing. */
		sp_unw_files__ref(f, &c, 1, 0, 0, &q, &req);
		assert_false(q);
	}
	/* Too large: more than a quarter of the budget. */
	install(f, b, 2, SP_UNW_CHUNK_WORDS + 1, 20, &err);
	assert_int_equal(err, -E2BIG);
	assert_int_equal(sp_unw_files__stats(f)->too_large, 1);
	/* A stale request is refused. */
	req.gen ^= 1;
	assert_false(sp_unw_files__begin(f, &req));
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

/* Lazy mode: a file no sample has needed is never queued, however many
 * processes (and execs) map it; the first BPF stamp queues it once, and a
 * reference after that shares the table. */
static void test_files_lazy(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, 4 * SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, 0);
	struct sp_unw_file_key k = key_n(1), k2 = key_n(2), k3 = key_n(3);
	struct sp_unw_rebuild w[8];
	struct sp_unw_build_req req;
	struct sp_unw_table t = fake_table(100);
	uint32_t word, word2, slot, base;
	bool q;

	(void)state;
	sp_unw_files__set_lazy(f, true);
	/* 50 short-lived processes of one executable (two paths, one build
	 * id: one key), none sampled: one entry, nothing queued. */
	word = sp_unw_files__ref(f, &k, 100, 0x1000, 0x2000, &q, &req);
	assert_false(q);
	for (uint32_t pid = 101; pid < 150; pid++) {
		word2 = sp_unw_files__ref(f, &k, pid, 0x1000, 0x2000, &q, &req);
		assert_int_equal(word2, word);
		assert_false(q);
		sp_unw_files__unref(f, word2);
	}
	sp_unw_files__ref(f, &k2, 100, 0x3000, 0x4000, &q, &req);
	assert_false(q);
	assert_int_equal(sp_unw_files__stats(f)->files, 2);
	assert_int_equal(sp_unw_files__stats(f)->deferred, 2);
	assert_int_equal(sp_unw_files__sampled(f, w, 8), 0);
	assert_int_equal(sp_unw_files__stats(f)->unsampled, 2);
	/* The tick's backstop does not queue unsampled files either. */
	assert_int_equal(sp_unw_files__wanted(f, w, 8), 0);
	/* BPF stamps file 1 (a sample had a frame in it): queued once, with
	 * its latest process to reopen it from. */
	slot = word >> SP_UNW_FILE_GEN_BITS;
	mb->files[slot].last_used_ns = 5;
	assert_int_equal(sp_unw_files__sampled(f, w, 8), 1);
	assert_int_equal(w[0].req.slot, slot);
	assert_int_equal(w[0].pid, 149);
	assert_int_equal(sp_unw_files__state(f, slot), SP_UNW_FS_QUEUED);
	assert_int_equal(sp_unw_files__stats(f)->unsampled, 1);
	assert_int_equal(sp_unw_files__sampled(f, w, 8), 0);
	assert_true(sp_unw_files__begin(f, &w[0].req));
	assert_int_equal(sp_unw_files__reserve(f, &w[0].req, 100, 10, &base), 0);
	sp_unw_blob__write(b, base, t.words, 100);
	sp_unw_files__publish(f, &w[0].req, base, &t, 10);
	/* A re-exec of the same file: the same table, no build. */
	word2 = sp_unw_files__ref(f, &k, 200, 0x1000, 0x2000, &q, &req);
	assert_int_equal(word2, word);
	assert_false(q);
	assert_int_equal(sp_unw_files__stats(f)->built, 1);
	assert_int_equal(sp_unw_files__stats(f)->sample_queued, 1);
	/* A file already stamped when a process maps it is queued by that
	 * reference (with the reader's descriptor, as in eager mode). */
	word2 = sp_unw_files__ref(f, &k3, 300, 0x5000, 0x6000, &q, &req);
	assert_false(q);
	sp_unw_files__unref(f, word2);	/* its process exits ... */
	assert_int_equal(sp_unw_files__sampled(f, w, 8), 0);	/* ... off the list */
	mb->files[word2 >> SP_UNW_FILE_GEN_BITS].last_used_ns = 7;
	assert_int_equal(sp_unw_files__sampled(f, w, 8), 0);	/* nobody maps it */
	sp_unw_files__ref(f, &k3, 301, 0x5000, 0x6000, &q, &req);
	assert_true(q);
	assert_int_equal(req.slot, word2 >> SP_UNW_FILE_GEN_BITS);
	assert_int_equal(sp_unw_files__stats(f)->sample_queued, 2);
	sp_unw_table__release(&t);
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

static void test_files_lru(void **state)
{
	/* 2 chunks = 65535 usable words; tables of 20000 words: 3 fit. */
	struct sp_unw_blob *b = sp_unw_blob__new(&be, 2 * SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, 2 * SP_UNW_CHUNK_BYTES);
	struct sp_unw_rebuild rb[4];
	uint32_t w[5];
	int err;

	(void)state;
	for (int i = 0; i < 3; i++) {
		w[i] = install(f, b, 10 + i, 20000, 100 + i, &err);
		assert_int_equal(err, 0);
	}
	/* BPF used file 0 recently, file 1 long ago, file 2 not at all. */
	mb->files[w[0] >> 12].last_used_ns = 5000;
	mb->files[w[1] >> 12].last_used_ns = 50;
	/* The fourth evicts the least recently used (file 1: used at 50,
	 * installed at 101) and must wait for the quarantine. */
	w[3] = install(f, b, 13, 20000, 6000, &err);
	assert_int_equal(err, -EAGAIN);
	assert_int_equal(sp_unw_files__stats(f)->evicted, 1);
	assert_int_equal(sp_unw_files__state(f, w[1] >> 12), SP_UNW_FS_EVICTED);
	assert_int_equal(mb->files[w[1] >> 12].flags, 0);	/* withdrawn from BPF */
	assert_int_equal(sp_unw_files__state(f, w[0] >> 12), SP_UNW_FS_READY);
	{
		struct sp_unw_build_req req = { w[3] >> 12, w[3] & 0xfff };
		uint32_t base;

		assert_int_equal(sp_unw_files__reserve(f, &req, 20000, 6000 + Q, &base), 0);
	}
	/* Not wanted while BPF has not touched it since the eviction... */
	assert_int_equal(sp_unw_files__wanted(f, rb, 4), 0);
	/* ... then rebuilt from the process recorded for it. */
	mb->files[w[1] >> 12].last_used_ns = 7000;
	assert_int_equal(sp_unw_files__wanted(f, rb, 4), 1);
	assert_int_equal(rb[0].req.slot, w[1] >> 12);
	assert_int_equal(rb[0].pid, 111);
	assert_int_equal(sp_unw_files__state(f, w[1] >> 12), SP_UNW_FS_QUEUED);
	/* Nothing evictable left for something bigger than the budget. */
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

/* A slot given to another file gets another generation. */
static void test_files_slot_reuse(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, 0);
	struct sp_unw_build_req req;
	uint32_t first = 0, w;
	bool q;

	(void)state;
	/* Fill every slot with files no process maps any more. */
	for (int i = 1; i < SP_UNW_FILES_MAX; i++) {
		struct sp_unw_file_key k = { .dev = 9, .ino = (uint64_t)i, .mtime_ns = 1 };

		w = sp_unw_files__ref(f, &k, 1, 0, 0, &q, &req);
		assert_int_not_equal(w, 0);
		sp_unw_files__unqueue(f, &req);
		sp_unw_files__unref(f, w);
		if (i == 1)
			first = w;
	}
	assert_int_equal(sp_unw_files__stats(f)->files, SP_UNW_FILES_MAX - 1);
	{
		struct sp_unw_file_key k = { .dev = 9, .ino = 999999, .mtime_ns = 1 };

		w = sp_unw_files__ref(f, &k, 1, 0, 0, &q, &req);
	}
	assert_int_not_equal(w, 0);
	assert_int_equal(sp_unw_files__stats(f)->slots_reclaimed, 1);
	if ((w >> 12) == (first >> 12))
		assert_int_not_equal(w & 0xfff, first & 0xfff);
	/* All referenced: a new file finds no slot, counted. */
	for (int i = 1; i < SP_UNW_FILES_MAX; i++) {
		struct sp_unw_file_key k = { .dev = 10, .ino = (uint64_t)i, .mtime_ns = 1 };

		w = sp_unw_files__ref(f, &k, 1, 0, 0, &q, &req);
		if (q)
			sp_unw_files__unqueue(f, &req);
	}
	assert_true(sp_unw_files__stats(f)->files_full >= 1);
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

/* ------------------------------------------------------------ procs */

static void test_procs_ranges(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, 0);
	struct sp_unw_procs *p = sp_unw_procs__new(&be, b, f, 0);
	struct sp_unw_range_in r[3] = {
		{ 0x1000, 0x2000, 0x0, 0 },
		{ 0x5000, 0x9000, 0x3000, (7u << 12) | 3 },
		{ 0x7f0000, 0x7f2000, 0, 0 },
	};
	struct sp_unw_proc *v = &mb->procs[42];
	uint32_t base;

	(void)state;
	mb->seq[42] = 5;
	sp_unw_procs__begin(p, 42);
	mb->seq[42] = 6;		/* an mmap during the maps read */
	sp_unw_procs__set(p, 42, r, 3, false, 100);
	assert_true(mb->have[42]);
	assert_int_equal(v->n, 3);
	assert_int_equal(v->seq, 5);	/* the value before the read: stale */
	assert_true(sp_unw_procs__stale(p, 42));
	base = v->base;
	assert_int_equal(sp_unw_blob__read(b, base + 3), 0x5000);
	assert_int_equal(sp_unw_blob__read(b, base + 4), 0x9000);
	assert_int_equal(sp_unw_blob__read(b, base + 5), (3ull << 32) | (7u << 12) | 3);
	/* Re-read: new list, the old extent quarantined. */
	sp_unw_procs__begin(p, 42);
	sp_unw_procs__set(p, 42, r, 2, true, 200);
	assert_int_equal(v->n, 2);
	assert_int_equal(v->seq, 6);
	assert_int_equal(v->flags, SP_UNW_PROC_TRUNC);
	assert_false(sp_unw_procs__stale(p, 42));
	assert_int_not_equal(v->base, base);
	assert_int_equal(sp_unw_procs__stats(p)->truncated, 1);
	assert_int_equal(sp_unw_blob__stats(b)->words_quarantined, 9);
	sp_unw_procs__exit(p, 42, 300);
	assert_false(mb->have[42]);
	assert_int_equal(sp_unw_procs__stats(p)->procs, 0);
	assert_int_equal(sp_unw_blob__stats(b)->words_used, 0);
	sp_unw_procs__free(p);
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

/* Ranges evict tables when the blob is full, and come back later. */
static void test_procs_evict_for_ranges(void **state)
{
	struct sp_unw_blob *b = sp_unw_blob__new(&be, SP_UNW_CHUNK_BYTES);
	struct sp_unw_files *f = sp_unw_files__new(&be, b, SP_UNW_CHUNK_BYTES);
	struct sp_unw_procs *p = sp_unw_procs__new(&be, b, f, 0);
	struct sp_unw_range_in r[4] = { { 0x1000, 0x2000, 0, 0 } };
	uint32_t pids[4];
	int err;

	(void)state;
	install(f, b, 1, SP_UNW_CHUNK_WORDS - 1, 10, &err);	/* the whole blob */
	assert_int_equal(err, 0);
	sp_unw_procs__set(p, 7, r, 1, false, 1000);
	assert_false(mb->have[7]);		/* withdrawn for now */
	assert_int_equal(sp_unw_files__stats(f)->evicted, 1);
	assert_int_equal(sp_unw_procs__take_retry(p, pids, 4), 1);
	assert_int_equal(pids[0], 7);
	sp_unw_blob__tick(b, 1000 + Q);
	sp_unw_procs__set(p, 7, r, 1, false, 1000 + Q);
	assert_true(mb->have[7]);
	assert_int_equal(mb->procs[7].n, 1);
	/* Nothing left to evict: no ranges, counted.  A second store needs
	 * its own backend (the fake maps chunk i to one slot per backend). */
	{
		struct membe *mb2 = calloc(1, sizeof(*mb2));
		struct sp_unw_backend be2;
		struct sp_unw_blob *b2;
		struct sp_unw_files *f2;
		struct sp_unw_procs *p2;
		static struct sp_unw_range_in big[SP_UNW_RANGES_MAX];
		uint32_t a;

		assert_non_null(mb2);
		be2 = be;
		be2.ctx = mb2;
		be2.files = mb2->files;
		be2.seq = mb2->seq;
		b2 = sp_unw_blob__new(&be2, SP_UNW_CHUNK_BYTES);
		f2 = sp_unw_files__new(&be2, b2, 0);
		p2 = sp_unw_procs__new(&be2, b2, f2, 2);
		assert_int_equal(sp_unw_blob__alloc(b2, SP_UNW_CHUNK_WORDS - 100, &a), 0);
		sp_unw_procs__set(p2, 8, big, SP_UNW_RANGES_MAX, false, 1);
		assert_int_equal(sp_unw_procs__stats(p2)->no_space, 1);
		assert_false(mb2->have[8]);
		/* max_procs 2: the third process is counted, not published */
		sp_unw_procs__set(p2, 9, r, 1, false, 1);
		sp_unw_procs__set(p2, 10, r, 1, false, 1);
		sp_unw_procs__set(p2, 11, r, 1, false, 1);
		assert_int_equal(sp_unw_procs__stats(p2)->procs_full, 1);
		sp_unw_procs__free(p2);
		sp_unw_files__free(f2);
		sp_unw_blob__free_all(b2);
		assert_int_equal(mb2->live, 0);
		free(mb2);
	}
	sp_unw_procs__free(p);
	sp_unw_files__free(f);
	sp_unw_blob__free_all(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_blob_alloc_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blob_budget_and_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files_lru, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files_lazy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files_slot_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procs_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procs_evict_for_ranges, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
