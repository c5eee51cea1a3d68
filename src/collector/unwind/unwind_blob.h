/* SPDX-License-Identifier: MIT */
/*
 * unwind_blob.h - the word store shared with BPF: an allocator of extents
 * of 64-bit words over chunks the backend creates on demand, bounded by a
 * byte budget.
 *
 * Allocation is first fit over a sorted, coalesced free list; chunks are
 * created when an extent first touches them and destroyed when no word of
 * theirs is allocated, so kernel memory follows what is in use (in 256 KiB
 * steps), never more than the budget.  A freed extent is quarantined for
 * SP_UNW_BLOB_QUARANTINE_NS before it can be reused: a BPF program that
 * read a descriptor just before it was withdrawn may still be reading the
 * old words for a few microseconds, and must not find another file's
 * rows there.
 *
 * Not thread safe (the unwinder's lock).  Memory: the free and quarantine
 * lists, bounded by the number of extents.
 */
#ifndef SPANPROF_UNWIND_BLOB_H
#define SPANPROF_UNWIND_BLOB_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/unwind/unwind_backend.h"

#define SP_UNW_BLOB_QUARANTINE_NS (50ull * 1000 * 1000)
#define SP_UNW_CHUNK_BYTES ((uint64_t)SP_UNW_CHUNK_WORDS * 8)

struct sp_unw_blob_stats {
	uint64_t words_used;		/* allocated, not yet freed */
	uint64_t words_quarantined;
	uint32_t chunks;		/* chunks that exist now */
	uint32_t chunks_live;		/* of them holding allocated words (the
					 * rest go at the next tick) */
	uint32_t chunks_max;		/* the budget, in chunks */
	uint64_t alloc_failed;		/* no extent fitted (or no memory) */
	uint64_t chunk_errors;		/* the backend could not create a chunk */
};

struct sp_unw_blob;

/* budget_bytes is rounded down to whole chunks (at least one, at most
 * SP_UNW_CHUNKS_MAX).  NULL with errno on failure. */
struct sp_unw_blob *sp_unw_blob__new(const struct sp_unw_backend *be, uint64_t budget_bytes);
void sp_unw_blob__free_all(struct sp_unw_blob *b);	/* NULL-safe; unmaps chunks */

/* An extent of n words: 0 and *base, -ENOSPC (nothing fits: the caller
 * evicts and retries), -ENOMEM (a chunk could not be created). */
int sp_unw_blob__alloc(struct sp_unw_blob *b, uint32_t n, uint32_t *base);
/* Returns an extent; reusable after the quarantine (see __tick). */
void sp_unw_blob__release(struct sp_unw_blob *b, uint32_t base, uint32_t n, uint64_t now_ns);
/* Ends quarantines older than SP_UNW_BLOB_QUARANTINE_NS and destroys
 * chunks left empty.  now_ns CLOCK_MONOTONIC. */
void sp_unw_blob__tick(struct sp_unw_blob *b, uint64_t now_ns);
/* Copies n words to [base, base + n) of an allocated extent. */
void sp_unw_blob__write(struct sp_unw_blob *b, uint32_t base, const uint64_t *src, uint32_t n);
/* Word w (tests). */
uint64_t sp_unw_blob__read(const struct sp_unw_blob *b, uint32_t w);
/* At most chunks chunks may exist (clamped to the budget; the memory
 * guard lowers it): no chunk is created while st.chunks >= the cap.
 * Chunks above the cap that exist stay until emptied (the caller evicts). */
void sp_unw_blob__set_cap(struct sp_unw_blob *b, uint32_t chunks);
uint32_t sp_unw_blob__cap(const struct sp_unw_blob *b);

const struct sp_unw_blob_stats *sp_unw_blob__stats(const struct sp_unw_blob *b);
/* Bytes of kernel memory the chunks hold (chunks x 256 KiB). */
uint64_t sp_unw_blob__bytes(const struct sp_unw_blob *b);

#endif
