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

/* Writes a refusal into msg and returns -EINVAL (option handlers). */
int sp_cli__refuse(char *msg, size_t msg_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
