/* SPDX-License-Identifier: MIT */
/*
 * stackgen.c - a CPU-bound fixture whose every sample is a new stack: the
 * call chain spells the bits of a counter (bit set: via one(), clear: via
 * zero()), 16 calls deep, so the profile's aggregated size grows for as
 * long as it runs (test_record_lifecycle.py: a recording whose output
 * needs ever more space).  Usage: stackgen SECONDS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static void walk(unsigned int bits, int depth);

__attribute__((noinline)) static void one(unsigned int bits, int depth)
{
	walk(bits, depth);
	sink++;
}

__attribute__((noinline)) static void zero(unsigned int bits, int depth)
{
	walk(bits, depth);
	sink++;
}

__attribute__((noinline)) static void walk(unsigned int bits, int depth)
{
	if (depth == 0) {
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i;
		return;
	}
	if (bits & 1)
		one(bits >> 1, depth - 1);
	else
		zero(bits >> 1, depth - 1);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;
	unsigned int n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* an odd multiplier visits every 16-bit pattern in turn */
		walk((n++ * 40503u) & 0xffffu, 16);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
