/* SPDX-License-Identifier: MIT */
/*
 * cli.c - see cli.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse_uint.h"
#include "collector/pipeline/cli.h"
#include "collector/pipeline/prime.h"

#define SP_MAX_FREQ_HZ 100000

int sp_cli__parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	return sp_parse_uint(s, 0, max, out);
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

int sp_cli__parse_cpu_list(const char *s, uint64_t *mask, uint32_t *n_end)
{
	const char *p = s;
	uint32_t end = 0;

	memset(mask, 0, SP_CLI_CPU_WORDS * sizeof(*mask));
	if (!s || !*s || *s == '\n')
		return -EINVAL;
	for (;;) {
		uint64_t a, b;
		char *e;

		/* strtoull would accept a sign or spaces: digits only. */
		if (*p < '0' || *p > '9')
			return -EINVAL;
		a = strtoull(p, &e, 10);
		b = a;
		p = e;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			b = strtoull(p, &e, 10);
			p = e;
		}
		if (a >= SP_CLI_MAX_CPUS || b >= SP_CLI_MAX_CPUS || b < a)
			return -EINVAL;
		for (uint64_t c = a; c <= b; c++)
			mask[c / 64] |= 1ull << (c % 64);
		if (b + 1 > end)
			end = (uint32_t)b + 1;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '\n')
			p++;
		if (*p)
			return -EINVAL;
		break;
	}
	if (n_end)
		*n_end = end;
	return 0;
}

int sp_cli__online_cpus(uint64_t *mask, uint32_t *n_end)
{
	char buf[1024];
	size_t len;
	FILE *f;

	f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	return sp_cli__parse_cpu_list(buf, mask, n_end);
}

int sp_cli__refuse(char *msg, size_t msg_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msg_len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}
