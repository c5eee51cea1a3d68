// SPDX-License-Identifier: MIT
/*
 * addr_index.c - see addr_index.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addr_index.h"

int sp_addr_index__build(struct sp_addr_index *x, const uint64_t *v, uint32_t n)
{
	uint64_t span;
	uint32_t nb, k = 0;
	uint8_t shift = 0;

	memset(x, 0, sizeof(*x));
	if (n < 16)
		return 0;		/* a binary search is as good */
	span = v[n - 1] - v[0];
	while (shift < 63 && (span >> shift) >= n)
		shift++;
	nb = (uint32_t)(span >> shift) + 1;
	x->start = malloc(((size_t)nb + 1) * sizeof(*x->start));
	if (!x->start)
		return -ENOMEM;
	x->base = v[0];
	x->shift = shift;
	x->n_buckets = nb;
	for (uint32_t b = 0; b < nb; b++) {
		uint64_t lo = (uint64_t)b << shift;	/* relative to base: no overflow */

		while (k < n && v[k] - x->base < lo)
			k++;
		x->start[b] = k;
	}
	x->start[nb] = n;
	return 0;
}

uint32_t sp_addr_index__upper(const struct sp_addr_index *x, const uint64_t *v, uint32_t n,
			      uint64_t a)
{
	uint32_t lo = 0, hi = n;

	if (x->n_buckets) {
		uint64_t b;

		if (a < x->base)
			return 0;
		b = (a - x->base) >> x->shift;
		if (b >= x->n_buckets)
			return n;	/* past the last element */
		lo = x->start[b];
		hi = x->start[b + 1];
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t sp_addr_index__bytes(const struct sp_addr_index *x)
{
	return x->n_buckets ? ((size_t)x->n_buckets + 1) * sizeof(*x->start) : 0;
}

void sp_addr_index__free(struct sp_addr_index *x)
{
	if (!x)
		return;
	free(x->start);
	memset(x, 0, sizeof(*x));
}
