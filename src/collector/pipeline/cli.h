/* SPDX-License-Identifier: MIT */
/*
 * cli.h - option values shared by the spanprof commands (record, agent):
 * parsed strictly, and refused with one line that names the fix.
 */
#ifndef SPANPROF_CLI_H
#define SPANPROF_CLI_H

#include <stddef.h>
#include <stdint.h>

/* Unsigned decimal (or 0x hex) in [0, max]; no sign, no trailing bytes.
 * 0 or -EINVAL. */
int sp_cli__parse_u64(const char *s, uint64_t max, uint64_t *out);

/* A sampling frequency for -F: 1..100000 and prime (non-prime frequencies
 * phase-lock with the scheduler tick and periodic work).  0, or -EINVAL
 * with a message for `-F VALUE` in msg, naming the nearest primes. */
int sp_cli__parse_freq(const char *s, uint32_t *hz, char *msg, size_t msg_len);

/* CPU sets: bit c of words[c / 64] for CPU c, c < SP_CLI_MAX_CPUS. */
#define SP_CLI_MAX_CPUS 4096
#define SP_CLI_CPU_WORDS (SP_CLI_MAX_CPUS / 64)

/* A CPU list in the kernel's and perf's syntax ("0,2-3", as
 * /sys/devices/system/cpu/online and perf -C write it; a trailing newline
 * is allowed) into mask (cleared first, SP_CLI_CPU_WORDS words).  *n_end
 * (may be NULL) gets one past the highest CPU.  0, or -EINVAL for an
 * empty list, a reversed range, garbage or a CPU >= SP_CLI_MAX_CPUS. */
int sp_cli__parse_cpu_list(const char *s, uint64_t *mask, uint32_t *n_end);

/* The online CPUs (/sys/devices/system/cpu/online) into mask.  0 or a
 * negative errno. */
int sp_cli__online_cpus(uint64_t *mask, uint32_t *n_end);

static inline int sp_cli__cpu_isset(const uint64_t *mask, uint32_t cpu)
{
	return cpu < SP_CLI_MAX_CPUS && (mask[cpu / 64] >> (cpu % 64)) & 1;
}

/* Writes a refusal into msg and returns -EINVAL (option handlers). */
int sp_cli__refuse(char *msg, size_t msg_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
