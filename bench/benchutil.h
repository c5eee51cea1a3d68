/* SPDX-License-Identifier: MIT */
/*
 * benchutil.h - what the C micro-benchmarks (bench/bench_*.c) share: a
 * clock read in nanoseconds and the comparator that sorts run times for
 * min and median.  Header-only (static inline).
 */
#ifndef SPANPROF_BENCH_BENCHUTIL_H
#define SPANPROF_BENCH_BENCHUTIL_H

#include <stdint.h>
#include <time.h>

/* Clock c (CLOCK_MONOTONIC: wall; CLOCK_THREAD_CPUTIME_ID: this thread's
 * CPU time) in nanoseconds. */
static inline uint64_t bench__ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* qsort comparator for uint64_t, ascending. */
static inline int bench__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* SPANPROF_BENCH_BENCHUTIL_H */
