/* SPDX-License-Identifier: MIT */
/*
 * grow.h - the symbolizer's growable arrays: sp_grow() makes room for need
 * elements of elem bytes in *arr (capacity *cap, doubled from 16), so
 * callers append without a realloc per element.  0, or -ENOMEM with *arr
 * and *cap unchanged (the caller still owns and frees *arr).
 */
#ifndef SPANPROF_SYMBOLIZER_GROW_H
#define SPANPROF_SYMBOLIZER_GROW_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline int sp_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t nc;
	void *p;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

#endif /* SPANPROF_SYMBOLIZER_GROW_H */
