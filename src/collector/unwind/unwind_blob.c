// SPDX-License-Identifier: MIT
/*
 * unwind_blob.c - see unwind_blob.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/unwind/unwind_blob.h"

struct blob_ext {
	uint32_t start;
	uint32_t len;
};

struct blob_q {
	uint32_t start;
	uint32_t len;
	uint64_t t_ns;
};

struct blob_chunk {
	uint64_t *words;	/* NULL: not created */
	uint32_t used;		/* words allocated or quarantined in it */
	uint32_t live;		/* of them allocated (not quarantined) */
};

struct sp_unw_blob {
	struct sp_unw_backend be;
	struct blob_chunk *chunks;
	uint32_t n_chunks;	/* the budget */
	struct blob_ext *free;	/* sorted by start, coalesced */
	uint32_t n_free, cap_free;
	struct blob_q *q;	/* FIFO by time */
	uint32_t q_head, q_n, cap_q;
	uint32_t cap;		/* chunks that may exist (<= n_chunks) */
	struct sp_unw_blob_stats st;
};

struct sp_unw_blob *sp_unw_blob__new(const struct sp_unw_backend *be, uint64_t budget_bytes)
{
	struct sp_unw_blob *b = calloc(1, sizeof(*b));
	uint64_t n = budget_bytes / SP_UNW_CHUNK_BYTES;

	if (!b)
		return NULL;
	if (n < 1)
		n = 1;
	if (n > SP_UNW_CHUNKS_MAX)
		n = SP_UNW_CHUNKS_MAX;
	b->be = *be;
	b->n_chunks = (uint32_t)n;
	b->chunks = calloc(n, sizeof(*b->chunks));
	b->cap_free = 64;
	b->free = malloc(b->cap_free * sizeof(*b->free));
	if (!b->chunks || !b->free) {
		sp_unw_blob__free_all(b);
		errno = ENOMEM;
		return NULL;
	}
	/* Word 0 is never handed out: base 0 can mean "none" elsewhere. */
	b->free[0].start = 1;
	b->free[0].len = (uint32_t)(n * SP_UNW_CHUNK_WORDS - 1);
	b->n_free = 1;
	b->st.chunks_max = (uint32_t)n;
	b->cap = (uint32_t)n;
	return b;
}

void sp_unw_blob__free_all(struct sp_unw_blob *b)
{
	if (!b)
		return;
	if (b->chunks)
		for (uint32_t i = 0; i < b->n_chunks; i++)
			if (b->chunks[i].words && b->be.chunk_unmap)
				b->be.chunk_unmap(b->be.ctx, i);
	free(b->chunks);
	free(b->free);
	free(b->q);
	free(b);
}

/* Adds (sign > 0) or takes (sign < 0) the words [start, start + len) to or
 * from the counts of the chunks they fall in: used with use, live with
 * live (an allocation counts in both, a release leaves used until the
 * quarantine ends).  Keeps st.chunks_live. */
static void chunks_count(struct sp_unw_blob *b, uint32_t start, uint32_t len, int sign, bool use,
			 bool live)
{
	uint32_t w = start, end = start + len;

	while (w < end) {
		uint32_t c = w >> SP_UNW_CHUNK_SHIFT;
		uint32_t cend = (c + 1) << SP_UNW_CHUNK_SHIFT;
		uint32_t k = (end < cend ? end : cend) - w;

		struct blob_chunk *ch = &b->chunks[c];

		if (use)
			ch->used = sign > 0 ? ch->used + k : ch->used - k;
		if (live) {
			bool was = ch->live > 0;

			ch->live = sign > 0 ? ch->live + k : ch->live - k;
			if (was != (ch->live > 0))
				b->st.chunks_live = was ? b->st.chunks_live - 1 : b->st.chunks_live + 1;
		}
		w += k;
	}
}

/* Creates every chunk [start, start + len) touches; on failure the ones
 * created here stay (empty chunks are destroyed at the next tick). */
static int chunks_map(struct sp_unw_blob *b, uint32_t start, uint32_t len)
{
	for (uint32_t c = start >> SP_UNW_CHUNK_SHIFT; c <= (start + len - 1) >> SP_UNW_CHUNK_SHIFT;
	     c++) {
		if (b->chunks[c].words)
			continue;
		if (b->st.chunks >= b->cap)
			return -ENOSPC;
		b->chunks[c].words = b->be.chunk_map(b->be.ctx, c);
		if (!b->chunks[c].words) {
			b->st.chunk_errors++;
			return -ENOMEM;
		}
		b->st.chunks++;
	}
	return 0;
}

static bool chunks_exist(const struct sp_unw_blob *b, uint32_t start, uint32_t len)
{
	for (uint32_t c = start >> SP_UNW_CHUNK_SHIFT; c <= (start + len - 1) >> SP_UNW_CHUNK_SHIFT;
	     c++)
		if (!b->chunks[c].words)
			return false;
	return true;
}

static int free_insert(struct sp_unw_blob *b, uint32_t start, uint32_t len)
{
	uint32_t lo = 0, hi = b->n_free, i;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b->free[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	/* Coalesce with the extent before and/or after. */
	if (i > 0 && b->free[i - 1].start + b->free[i - 1].len == start) {
		b->free[i - 1].len += len;
		if (i < b->n_free && start + len == b->free[i].start) {
			b->free[i - 1].len += b->free[i].len;
			memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof(*b->free));
			b->n_free--;
		}
		return 0;
	}
	if (i < b->n_free && start + len == b->free[i].start) {
		b->free[i].start = start;
		b->free[i].len += len;
		return 0;
	}
	if (b->n_free == b->cap_free) {
		uint32_t cap = 2 * b->cap_free;
		struct blob_ext *f = realloc(b->free, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		b->free = f;
		b->cap_free = cap;
	}
	memmove(&b->free[i + 1], &b->free[i], (b->n_free - i) * sizeof(*b->free));
	b->free[i].start = start;
	b->free[i].len = len;
	b->n_free++;
	return 0;
}

int sp_unw_blob__alloc(struct sp_unw_blob *b, uint32_t n, uint32_t *base)
{
	int err;

	if (!n)
		return -EINVAL;
	for (uint32_t i = 0; i < b->n_free; i++) {
		struct blob_ext *f = &b->free[i];
		uint32_t start = f->start;

		if (f->len < n)
			continue;
		if (b->st.chunks >= b->cap && !chunks_exist(b, start, n))
			continue;
		err = chunks_map(b, start, n);
		if (err) {
			b->st.alloc_failed++;
			return err;
		}
		f->start += n;
		f->len -= n;
		if (!f->len) {
			memmove(f, f + 1, (b->n_free - i - 1) * sizeof(*f));
			b->n_free--;
		}
		chunks_count(b, start, n, 1, true, true);
		b->st.words_used += n;
		*base = start;
		return 0;
	}
	b->st.alloc_failed++;
	return -ENOSPC;
}

void sp_unw_blob__release(struct sp_unw_blob *b, uint32_t base, uint32_t n, uint64_t now_ns)
{
	if (!b || !n)
		return;
	if (b->q_n == b->cap_q) {
		uint32_t cap = b->cap_q ? 2 * b->cap_q : 64;
		struct blob_q *q = malloc(cap * sizeof(*q));

		if (!q) {
			/* No memory for the queue: keep the words allocated
			 * (a leak of budget, not of safety), counted. */
			b->st.alloc_failed++;
			return;
		}
		for (uint32_t i = 0; i < b->q_n; i++)
			q[i] = b->q[(b->q_head + i) % (b->cap_q ? b->cap_q : 1)];
		free(b->q);
		b->q = q;
		b->q_head = 0;
		b->cap_q = cap;
	}
	b->q[(b->q_head + b->q_n) % b->cap_q] = (struct blob_q){ base, n, now_ns };
	b->q_n++;
	chunks_count(b, base, n, -1, false, true);
	b->st.words_used -= n;
	b->st.words_quarantined += n;
}

void sp_unw_blob__tick(struct sp_unw_blob *b, uint64_t now_ns)
{
	if (!b)
		return;
	while (b->q_n) {
		struct blob_q *q = &b->q[b->q_head];

		if (now_ns - q->t_ns < SP_UNW_BLOB_QUARANTINE_NS && now_ns >= q->t_ns)
			break;
		if (free_insert(b, q->start, q->len))
			break;	/* no memory: try at the next tick */
		chunks_count(b, q->start, q->len, -1, true, false);
		b->st.words_quarantined -= q->len;
		b->q_head = (b->q_head + 1) % b->cap_q;
		b->q_n--;
	}
	for (uint32_t i = 0; i < b->n_chunks; i++) {
		if (b->chunks[i].words && !b->chunks[i].used) {
			b->be.chunk_unmap(b->be.ctx, i);
			b->chunks[i].words = NULL;
			b->st.chunks--;
		}
	}
}

void sp_unw_blob__write(struct sp_unw_blob *b, uint32_t base, const uint64_t *src, uint32_t n)
{
	uint32_t w = base, end = base + n;

	while (w < end) {
		uint32_t c = w >> SP_UNW_CHUNK_SHIFT, off = w & (SP_UNW_CHUNK_WORDS - 1);
		uint32_t k = SP_UNW_CHUNK_WORDS - off;

		if (k > end - w)
			k = end - w;
		if (b->chunks[c].words)
			memcpy(b->chunks[c].words + off, src + (w - base), (size_t)k * 8);
		w += k;
	}
}

uint64_t sp_unw_blob__read(const struct sp_unw_blob *b, uint32_t w)
{
	uint32_t c = w >> SP_UNW_CHUNK_SHIFT;

	if (c >= b->n_chunks || !b->chunks[c].words)
		return 0;
	return b->chunks[c].words[w & (SP_UNW_CHUNK_WORDS - 1)];
}

void sp_unw_blob__set_cap(struct sp_unw_blob *b, uint32_t chunks)
{
	b->cap = chunks < b->n_chunks ? chunks : b->n_chunks;
}

uint32_t sp_unw_blob__cap(const struct sp_unw_blob *b)
{
	return b->cap;
}

const struct sp_unw_blob_stats *sp_unw_blob__stats(const struct sp_unw_blob *b)
{
	return &b->st;
}

uint64_t sp_unw_blob__bytes(const struct sp_unw_blob *b)
{
	return (uint64_t)b->st.chunks * SP_UNW_CHUNK_BYTES;
}
