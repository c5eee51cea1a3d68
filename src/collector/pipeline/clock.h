/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the collector's clocks.  BPF timestamps are bpf_ktime_get_ns(),
 * CLOCK_MONOTONIC; profiles want unix time.  vDSO clocks are slow on some
 * VMs: these are for per-interval and per-run use, never per event.
 */
#ifndef SPANPROF_CLOCK_H
#define SPANPROF_CLOCK_H

#include <stdint.h>

uint64_t sp_clock__mono_ns(void);
/* Add to a CLOCK_MONOTONIC time to get unix ns (one reading of both). */
int64_t sp_clock__mono_to_unix_ns(void);

#endif
