/* SPDX-License-Identifier: MIT */
/*
 * pid_slots.h - the shape of the small direct-mapped per-pid caches
 * (proc_env, container_id): a power-of-two slot count and the slot of a
 * pid.  A collision replaces the older entry (the caches are hints that
 * are read again, so a miss costs one read, never a wrong answer: the
 * slot keeps its pid and the caller compares).
 */
#ifndef SPANPROF_PID_SLOTS_H
#define SPANPROF_PID_SLOTS_H

#include <stdint.h>

#define SP_PID_SLOTS_DEFAULT 4096u
#define SP_PID_SLOTS_MAX (1u << 24)

/* want rounded up to a power of two (0: SP_PID_SLOTS_DEFAULT), at most
 * SP_PID_SLOTS_MAX. */
static inline uint32_t sp_pid_slots__count(uint32_t want)
{
	uint32_t n = 1;

	if (!want)
		want = SP_PID_SLOTS_DEFAULT;
	while (n < want && n < SP_PID_SLOTS_MAX)
		n <<= 1;
	return n;
}

/* The slot of pid in a table of mask + 1 slots (Knuth's multiplicative
 * hash: consecutive pids spread over the table). */
static inline uint32_t sp_pid_slots__index(uint32_t pid, uint32_t mask)
{
	return (pid * 2654435761u) & mask;
}

#endif
