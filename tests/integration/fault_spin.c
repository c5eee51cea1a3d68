/* SPDX-License-Identifier: MIT */
/*
 * fault_spin.c - burns CPU in its own functions for MS milliseconds of
 * wall time, then exits (tests/integration/test_fault_*.py).  Compiled by
 * the tests with -DVARIANT=N: each variant is a different binary with a
 * different GNU build id, and names its hot function after the variant.
 * Usage: fault_spin MS
 */
#include <stdlib.h>
#include <time.h>

#ifndef VARIANT
#define VARIANT 0
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define HOT CAT(spin_variant_, VARIANT)

static volatile unsigned long sink;
const int fault_spin_variant = VARIANT;	/* makes the variants' bytes differ */

__attribute__((noinline)) void HOT(double ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i ^ (sink >> 5) ^ VARIANT;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
	HOT(argc > 1 ? atof(argv[1]) : 100);
	return 0;
}
