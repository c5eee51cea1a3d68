// SPDX-License-Identifier: MIT
/*
 * test_prime.c - sp_is_prime and sp_nearest_primes (collector/prime.h).
 *
 * Checks every n below 200 against a table, the sampling defaults (19, 97),
 * large primes and composites (including strong pseudoprimes to small
 * bases), and the nearest-prime edges (2 has no prime below it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "collector/pipeline/prime.h"

static const uint64_t primes_below_200[] = {
	2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61,
	67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131, 137,
	139, 149, 151, 157, 163, 167, 173, 179, 181, 191, 193, 197, 199,
};

static void test_table_below_200(void **state)
{
	size_t j = 0;

	(void)state;
	for (uint64_t n = 0; n < 200; n++) {
		bool want = j < sizeof(primes_below_200) / sizeof(uint64_t) &&
			    primes_below_200[j] == n;

		if (want)
			j++;
		if (sp_is_prime(n) != want)
			fail_msg("sp_is_prime(%llu) != %d", (unsigned long long)n, want);
	}
	assert_int_equal(j, 46);
}

static void test_small_edges(void **state)
{
	(void)state;
	assert_false(sp_is_prime(0));
	assert_false(sp_is_prime(1));
	assert_true(sp_is_prime(2));
	assert_true(sp_is_prime(19));
	assert_true(sp_is_prime(97));
	assert_true(sp_is_prime(101));
	assert_false(sp_is_prime(100));
	assert_false(sp_is_prime(250));	/* CONFIG_HZ */
}

static void test_large(void **state)
{
	(void)state;
	assert_true(sp_is_prime(9999991));		/* largest below 10^7 */
	assert_false(sp_is_prime(9999991ull * 3));
	assert_true(sp_is_prime(1000000007));
	assert_true(sp_is_prime(2147483647));		/* 2^31 - 1 */
	assert_true(sp_is_prime(2305843009213693951ull));	/* 2^61 - 1 */
	assert_true(sp_is_prime(18446744073709551557ull));	/* 2^64 - 59 */
	assert_false(sp_is_prime(18446744073709551615ull));
	assert_false(sp_is_prime(1000000007ull * 1000000009ull));
	assert_false(sp_is_prime(3215031751ull));	/* spsp to 2,3,5,7 */
	assert_false(sp_is_prime(3825123056546413051ull)); /* spsp to 2..23 */
	assert_false(sp_is_prime(561));			/* Carmichael */
	assert_false(sp_is_prime(1048576));		/* 2^20 */
	assert_true(sp_is_prime(1048573));		/* just below 2^20 */
	assert_true(sp_is_prime(1048583));		/* just above 2^20 */
}

static void test_nearest(void **state)
{
	uint64_t b = 1, a = 1;

	(void)state;
	sp_nearest_primes(100, &b, &a);
	assert_int_equal(b, 97);
	assert_int_equal(a, 101);

	sp_nearest_primes(2, &b, &a);
	assert_int_equal(b, 0);
	assert_int_equal(a, 3);

	sp_nearest_primes(0, &b, &a);
	assert_int_equal(b, 0);
	assert_int_equal(a, 2);

	sp_nearest_primes(3, &b, &a);
	assert_int_equal(b, 2);
	assert_int_equal(a, 5);

	/* n prime: strictly below and above */
	sp_nearest_primes(19, &b, &a);
	assert_int_equal(b, 17);
	assert_int_equal(a, 23);

	sp_nearest_primes(250, &b, &a);
	assert_int_equal(b, 241);
	assert_int_equal(a, 251);

	sp_nearest_primes(18446744073709551557ull, &b, &a);
	assert_int_equal(a, 0);
	sp_nearest_primes(UINT64_MAX, &b, &a);
	assert_true(b == 18446744073709551557ull);
	assert_int_equal(a, 0);

	/* NULL outputs are allowed */
	sp_nearest_primes(100, NULL, &a);
	assert_int_equal(a, 101);
	sp_nearest_primes(100, &b, NULL);
	assert_int_equal(b, 97);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_below_200),
		cmocka_unit_test(test_small_edges),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_nearest),
	};

	return cmocka_run_group_tests_name("prime", tests, NULL, NULL);
}
