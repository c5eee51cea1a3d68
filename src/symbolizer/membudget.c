/* SPDX-License-Identifier: MIT */
/*
 * membudget.c - see membudget.h.
 */
#include "symbolizer/membudget.h"

void sp_membudget__init(struct sp_membudget *b, uint64_t limit)
{
	b->limit = limit;
	atomic_init(&b->used, 0);
	atomic_init(&b->peak, 0);
	atomic_init(&b->refused, 0);
	atomic_init(&b->forced_bytes, 0);
}

static void note_peak(struct sp_membudget *b, uint64_t now)
{
	uint64_t p = atomic_load(&b->peak);

	while (now > p && !atomic_compare_exchange_weak(&b->peak, &p, now))
		;
}

bool sp_membudget__take(struct sp_membudget *b, uint64_t n)
{
	uint64_t cur = atomic_load(&b->used);

	if (!n)
		return true;
	do {
		if (n > b->limit || cur > b->limit - n) {
			atomic_fetch_add(&b->refused, 1);
			return false;
		}
	} while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
	note_peak(b, cur + n);
	return true;
}

void sp_membudget__force(struct sp_membudget *b, uint64_t n)
{
	uint64_t before = atomic_fetch_add(&b->used, n), after = before + n;

	if (after > b->limit)
		atomic_fetch_add(&b->forced_bytes, after - (before > b->limit ? before : b->limit));
	note_peak(b, after);
}

void sp_membudget__give(struct sp_membudget *b, uint64_t n)
{
	atomic_fetch_sub(&b->used, n);
}

uint64_t sp_membudget__used(const struct sp_membudget *b)
{
	return atomic_load(&((struct sp_membudget *)b)->used);
}

uint64_t sp_membudget__peak(const struct sp_membudget *b)
{
	return atomic_load(&((struct sp_membudget *)b)->peak);
}
