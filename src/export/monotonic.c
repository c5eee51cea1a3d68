/* SPDX-License-Identifier: MIT */
/*
 * monotonic.c - CLOCK_MONOTONIC deadlines and condition variables
 * (contract: monotonic.h).
 */
#include "export/monotonic.h"

uint64_t sp_mono__ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct timespec sp_mono__deadline(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int sp_mono__cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int r;

	r = pthread_condattr_init(&ca);
	if (r)
		return -r;
	r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return -r;
}
