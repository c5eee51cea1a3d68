/* SPDX-License-Identifier: MIT */
/*
 * test_arena.c - the encoders' bump allocator (src/profile/arena.c):
 * zeroed, aligned, distinct pointers (also for zero bytes), overflow and
 * out-of-range sizes refused without breaking the arena, outsized requests,
 * one free that leaves the arena reusable.  Run under ASan (unit-san) it
 * also proves no block leaks and no allocation overlaps another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "profile/arena.h"

static void test_zeroed_aligned_distinct(void **state)
{
	struct sp_arena a = { 0 };
	unsigned char *prev = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		size_t n = i % 37;
		unsigned char *p = sp_arena__array(&a, n, 3);
		size_t j;

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
		assert_true(p != prev);
		for (j = 0; j < n * 3; j++)
			assert_int_equal(p[j], 0);
		memset(p, 0xa5, n * 3);	/* ASan: stays inside what was handed out */
		prev = p;
	}
	sp_arena__free(&a);
	assert_null(a.head);
}

static void test_refuses_overflow(void **state)
{
	struct sp_arena a = { 0 };
	int *p;

	(void)state;
	assert_null(sp_arena__array(&a, SIZE_MAX / 2, 4));
	assert_null(sp_arena__array(&a, SIZE_MAX, 1));
	p = sp_arena__array(&a, 4, sizeof(int));	/* still usable */
	assert_non_null(p);
	p[3] = 1;
	sp_arena__free(&a);
}

static void test_outsized_and_reuse(void **state)
{
	struct sp_arena a = { 0 };
	unsigned char *small, *big, *after;

	(void)state;
	small = sp_arena__array(&a, 16, 1);
	big = sp_arena__array(&a, 8u << 20, 1);	/* larger than any block step */
	after = sp_arena__array(&a, 16, 1);
	assert_non_null(small);
	assert_non_null(big);
	assert_non_null(after);
	big[(8u << 20) - 1] = 1;
	/* the small block keeps filling after an outsized request */
	assert_true(after > small && after < small + (64u << 10));
	sp_arena__free(&a);
	sp_arena__free(&a);	/* idempotent */
	sp_arena__free(NULL);
	assert_non_null(sp_arena__array(&a, 1, 1));
	sp_arena__free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zeroed_aligned_distinct),
		cmocka_unit_test(test_refuses_overflow),
		cmocka_unit_test(test_outsized_and_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
