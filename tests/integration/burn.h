/* SPDX-License-Identifier: MIT */
/*
 * burn.h - the CPU loop of the trace-context fixtures (ctx_worker.c,
 * ctx_exec.c): burns CPU in one function of its own for SECONDS of
 * CLOCK_MONOTONIC, so samples land in it.
 */
#ifndef SPANPROF_TEST_BURN_H
#define SPANPROF_TEST_BURN_H

#include <time.h>

static volatile unsigned long burn_sink;

__attribute__((noinline)) static void burn(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200000; i++)
			burn_sink += i ^ (burn_sink >> 3);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

#endif
