/* SPDX-License-Identifier: MIT */
/*
 * arena.c - the bump allocator of arena.h.
 *
 * Block layout: [struct sp_arena_block][bytes ...]; used counts the bytes
 * handed out, each allocation rounded up to alignof(max_align_t).
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/arena.h"

#define ARENA_FIRST (64u << 10)
#define ARENA_MAX_STEP (4u << 20)
#define ARENA_ALIGN alignof(max_align_t)

struct sp_arena_block {
	struct sp_arena_block *next;
	size_t size;	/* usable bytes after the header */
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

void *sp_arena__array(struct sp_arena *a, size_t n, size_t size)
{
	struct sp_arena_block *b = a->head;
	size_t bytes, want;
	void *p;

	if (__builtin_mul_overflow(n, size, &bytes) ||
	    bytes > SIZE_MAX - ARENA_ALIGN - sizeof(*b))
		return NULL;
	/* round up; a zero-byte request still takes one slot so that every
	 * pointer handed out is distinct */
	bytes = bytes ? (bytes + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1) : ARENA_ALIGN;
	if (!b || b->size - b->used < bytes) {
		if (!a->next_size)
			a->next_size = ARENA_FIRST;
		want = bytes > a->next_size ? bytes : a->next_size;
		b = malloc(sizeof(*b) + want);
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		if (a->head && want == bytes && a->head->size - a->head->used >= ARENA_ALIGN) {
			/* an outsized request: keep filling the current block */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
		if (a->next_size < ARENA_MAX_STEP)
			a->next_size *= 2;
	}
	p = b->data + b->used;
	b->used += bytes;
	return memset(p, 0, bytes);
}

void sp_arena__free(struct sp_arena *a)
{
	struct sp_arena_block *b, *next;

	if (!a)
		return;
	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->next_size = 0;
}
