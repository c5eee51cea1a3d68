// SPDX-License-Identifier: MIT
/*
 * prime.c - primality for sampling frequencies.
 *
 * Contract (see prime.h):
 *   - sp_is_prime(n) is exact for every uint64_t: 0 and 1 are not prime,
 *     2 is.  Small n (below 2^20) use trial division by 6k+-1; larger n use
 *     Miller-Rabin with the first twelve primes as bases, which is
 *     deterministic for all n < 3.3e24 and therefore for all of uint64_t.
 *   - sp_nearest_primes(n, below, above): below = largest prime < n
 *     (0 when none, i.e. n <= 2); above = smallest prime > n (0 when none
 *     fits in uint64_t, i.e. n >= 2^64 - 59).  Either pointer may be NULL.
 */
#include <stddef.h>

#include "collector/pipeline/prime.h"

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
	return (uint64_t)((unsigned __int128)a * b % m);
}

static uint64_t powmod(uint64_t b, uint64_t e, uint64_t m)
{
	uint64_t r = 1;

	b %= m;
	while (e) {
		if (e & 1)
			r = mulmod(r, b, m);
		b = mulmod(b, b, m);
		e >>= 1;
	}
	return r;
}

/* One Miller-Rabin round: n odd > 3, n - 1 = d * 2^s with d odd. */
static bool mr_passes(uint64_t n, uint64_t d, unsigned int s, uint64_t base)
{
	uint64_t x = powmod(base, d, n);

	if (x == 1 || x == n - 1)
		return true;
	while (--s) {
		x = mulmod(x, x, n);
		if (x == n - 1)
			return true;
	}
	return false;
}

bool sp_is_prime(uint64_t n)
{
	static const uint64_t bases[] = {
		2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37,
	};
	uint64_t d;
	unsigned int s = 0;
	size_t i;

	if (n < 2)
		return false;
	if (n < 4)
		return true;
	if (n % 2 == 0 || n % 3 == 0)
		return false;
	if (n < (1u << 20)) {
		for (uint64_t f = 5; f * f <= n; f += 6)
			if (n % f == 0 || n % (f + 2) == 0)
				return false;
		return true;
	}
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (n % bases[i] == 0)
			return false;
	d = n - 1;
	while (!(d & 1)) {
		d >>= 1;
		s++;
	}
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (!mr_passes(n, d, s, bases[i]))
			return false;
	return true;
}

void sp_nearest_primes(uint64_t n, uint64_t *below, uint64_t *above)
{
	uint64_t b = 0, a = 0, c;

	for (c = n; c > 2;) {
		c--;
		if (sp_is_prime(c)) {
			b = c;
			break;
		}
	}
	for (c = n; c < UINT64_MAX;) {
		c++;
		if (sp_is_prime(c)) {
			a = c;
			break;
		}
	}
	if (below)
		*below = b;
	if (above)
		*above = a;
}
