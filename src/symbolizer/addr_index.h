/* SPDX-License-Identifier: MIT */
/*
 * addr_index.h - a bucket index over a sorted array of addresses, so that
 * finding the last element at or below an address reads two or three cache
 * lines instead of the dozen a binary search over the whole array does
 * (the symbolizer's cold lookups are bound by those misses: a unit's line
 * addresses, a function's inline segments).
 *
 * The address span [first, last] is cut into n_buckets equal buckets of
 * 2^shift bytes, n_buckets at most the number of elements (so the index
 * costs at most 4 bytes an element), and start[b] is the number of
 * elements below bucket b's first address.  An upper bound for a is then
 * searched only between start[b] and start[b + 1].
 */
#ifndef SPANPROF_SYMBOLIZER_ADDR_INDEX_H
#define SPANPROF_SYMBOLIZER_ADDR_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct sp_addr_index {
	uint64_t base;
	uint32_t *start;	/* n_buckets + 1 */
	uint32_t n_buckets;
	uint8_t shift;
};

/* Builds the index of v[0..n) (ascending).  0 or -ENOMEM (the index is
 * then empty and lookups fall back to a plain binary search). */
int sp_addr_index__build(struct sp_addr_index *x, const uint64_t *v, uint32_t n);

/* The number of elements <= a (upper bound). */
uint32_t sp_addr_index__upper(const struct sp_addr_index *x, const uint64_t *v, uint32_t n,
			      uint64_t a);

size_t sp_addr_index__bytes(const struct sp_addr_index *x);
void sp_addr_index__free(struct sp_addr_index *x);	/* NULL-safe, leaves it empty */

#endif /* SPANPROF_SYMBOLIZER_ADDR_INDEX_H */
