// SPDX-License-Identifier: MIT
/*
 * test_addr_index.c - src/symbolizer/addr_index.c against a plain binary
 * search: sorted arrays with duplicates, clustered and sparse addresses,
 * spans up to the whole 64-bit space, every element, its neighbours and
 * random probes; an array too short for an index; the bytes it reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbolizer/addr_index.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint32_t plain_upper(const uint64_t *v, uint32_t n, uint64_t a)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void check_probe(const struct sp_addr_index *x, const uint64_t *v, uint32_t n, uint64_t a)
{
	assert_int_equal(sp_addr_index__upper(x, v, n, a), plain_upper(v, n, a));
}

/* n elements: base + next() masked to span_bits, sorted; every few a
 * duplicate of its predecessor. */
static void one_case(uint32_t n, uint64_t base, unsigned span_bits)
{
	uint64_t mask = span_bits >= 64 ? UINT64_MAX : (1ull << span_bits) - 1;
	uint64_t *v = malloc((size_t)n * sizeof(*v));
	struct sp_addr_index x;

	assert_non_null(v);
	for (uint32_t i = 0; i < n; i++)
		v[i] = base + (next() & mask);
	qsort(v, n, sizeof(*v), u64_cmp);
	for (uint32_t i = 1; i < n; i += 5)
		v[i] = v[i - 1];
	assert_int_equal(sp_addr_index__build(&x, v, n), 0);
	if (n >= 16) {
		assert_true(x.n_buckets >= 1 && x.n_buckets <= n);
		assert_int_equal(sp_addr_index__bytes(&x), ((size_t)x.n_buckets + 1) * 4);
	} else {
		assert_int_equal(sp_addr_index__bytes(&x), 0);
	}
	for (uint32_t i = 0; i < n; i++) {
		check_probe(&x, v, n, v[i]);
		check_probe(&x, v, n, v[i] - 1);
		check_probe(&x, v, n, v[i] + 1);
	}
	check_probe(&x, v, n, 0);
	check_probe(&x, v, n, UINT64_MAX);
	for (int i = 0; i < 2000; i++) {
		check_probe(&x, v, n, base + (next() & mask));
		check_probe(&x, v, n, next());
	}
	sp_addr_index__free(&x);
	assert_int_equal(x.n_buckets, 0);
	free(v);
}

static void test_matches_binary_search(void **state)
{
	static const unsigned spans[] = { 4, 12, 20, 32, 48, 63, 64 };

	(void)state;
	for (size_t s = 0; s < sizeof(spans) / sizeof(spans[0]); s++) {
		one_case(1, 0x400000, spans[s]);
		one_case(15, 0x400000, spans[s]);
		one_case(16, 0x400000, spans[s]);
		one_case(1000, 0x7f0000000000ull, spans[s]);
		one_case(50000, 0, spans[s]);
	}
}

static void test_free_is_null_safe(void **state)
{
	(void)state;
	sp_addr_index__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_binary_search),
		cmocka_unit_test(test_free_is_null_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
