/* SPDX-License-Identifier: MIT */
/*
 * cli.c - see cli.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/pipeline/cli.h"
#include "collector/pipeline/prime.h"

#define SP_MAX_FREQ_HZ 100000

int sp_cli__parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int sp_cli__parse_freq(const char *s, uint32_t *hz, char *msg, size_t msg_len)
{
	uint64_t v, below, above;

	if (sp_cli__parse_u64(s, SP_MAX_FREQ_HZ, &v) || v == 0) {
		snprintf(msg, msg_len, "-F %s: expected a frequency in Hz (1..%d)", s ? s : "",
			 SP_MAX_FREQ_HZ);
		return -EINVAL;
	}
	if (!sp_is_prime(v)) {
		sp_nearest_primes(v, &below, &above);
		if (below)
			snprintf(msg, msg_len, "-F %llu is not prime: sampling could phase-lock "
				 "with periodic work; use %llu or %llu", (unsigned long long)v,
				 (unsigned long long)below, (unsigned long long)above);
		else
			snprintf(msg, msg_len, "-F %llu is not prime; use %llu",
				 (unsigned long long)v, (unsigned long long)above);
		return -EINVAL;
	}
	*hz = (uint32_t)v;
	return 0;
}

int sp_cli__refuse(char *msg, size_t msg_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msg_len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}
