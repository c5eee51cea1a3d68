/* SPDX-License-Identifier: MIT */
/*
 * monotonic.h - waiting by CLOCK_MONOTONIC in the export layer (private):
 * a wall-clock step (NTP, a VM resumed) must neither cut a backoff short
 * nor stretch a flush.
 *
 * sp_mono__ns: CLOCK_MONOTONIC now, in nanoseconds.
 * sp_mono__deadline: the absolute CLOCK_MONOTONIC time ms from now, for
 *   pthread_cond_timedwait on a condition variable from sp_mono__cond_init.
 * sp_mono__cond_init: pthread_cond_init with CLOCK_MONOTONIC; 0 or a
 *   negative errno.
 */
#ifndef SPANPROF_EXPORT_MONOTONIC_H
#define SPANPROF_EXPORT_MONOTONIC_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

uint64_t sp_mono__ns(void);
struct timespec sp_mono__deadline(uint64_t ms);
int sp_mono__cond_init(pthread_cond_t *c);

#endif
