/* SPDX-License-Identifier: MIT */
/*
 * clock.c - see clock.h.
 */
#include <time.h>

#include "collector/pipeline/clock.h"

uint64_t sp_clock__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int64_t sp_clock__mono_to_unix_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (int64_t)(r.tv_sec - m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}
