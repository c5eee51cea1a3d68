/* SPDX-License-Identifier: MIT */
/*
 * parse_uint.c - see parse_uint.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/parse_uint.h"

int sp_parse_uint(const char *s, int base, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}
