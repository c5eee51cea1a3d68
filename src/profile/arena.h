/* SPDX-License-Identifier: MIT */
/*
 * arena.h - a bump allocator for memory that lives exactly as long as one
 * operation (an encoder's protobuf-c message tree): many allocations, one
 * free.  Private to src/profile.
 *
 * Contract: sp_arena__array() returns zeroed memory for n elements of size
 * bytes, aligned for any type (max_align_t), or NULL when n * size
 * overflows or memory runs out (the arena stays usable, what it handed out
 * stays valid).  n == 0 returns a valid, unique, non-NULL pointer to no
 * bytes.  Nothing is freed before sp_arena__free(), which releases every
 * block at once; it is NULL-safe and leaves the arena empty and reusable.
 * A zero-initialised struct sp_arena is an empty arena.
 *
 * Blocks grow geometrically (64 KiB first, doubling up to 4 MiB; a larger
 * request gets a block of its own), so an encoder's few dozen tables cost a
 * handful of mallocs.
 */
#ifndef SPANPROF_PROFILE_ARENA_H
#define SPANPROF_PROFILE_ARENA_H

#include <stddef.h>

struct sp_arena_block;

struct sp_arena {
	struct sp_arena_block *head;	/* newest block first */
	size_t next_size;		/* size of the next block to allocate */
};

void *sp_arena__array(struct sp_arena *a, size_t n, size_t size);
void sp_arena__free(struct sp_arena *a);

#endif /* SPANPROF_PROFILE_ARENA_H */
