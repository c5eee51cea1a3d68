/* SPDX-License-Identifier: MIT */
/*
 * parse_uint.h - the one strict reader of unsigned option values, used by
 * both binaries' command lines (collector/pipeline/cli.h, symbolizer/cli).
 *
 * strtoull alone accepts a sign ("-1" wraps around), leading white space
 * and trailing bytes; option values must not, so this takes digits only
 * (base 0: also a 0x prefix or a leading 0 for octal, as strtoull reads
 * them), all of the string, at most max.
 */
#ifndef SPANPROF_PARSE_UINT_H
#define SPANPROF_PARSE_UINT_H

#include <stdint.h>

/* s in base (10, or 0 for strtoull's prefixes) in [0, max] into *out.
 * 0, or -EINVAL (NULL, empty, sign, space, garbage, over max or
 * overflow); *out is untouched on failure. */
int sp_parse_uint(const char *s, int base, uint64_t max, uint64_t *out);

#endif
