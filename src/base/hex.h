/* SPDX-License-Identifier: MIT */
/*
 * hex.h - hex digits, shared by every parser of hex text (maps lines,
 * kallsyms, HTTP headers, build ids).
 */
#ifndef SPANPROF_HEX_H
#define SPANPROF_HEX_H

/* Value of one hex digit (either case), or -1. */
static inline int sp_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Lower-case hex of b[0..n) into out (2n + 1 bytes), NUL-terminated. */
static inline void sp_hex__encode(const unsigned char *b, unsigned long n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned long i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 0xf];
	}
	out[2 * n] = '\0';
}

#endif
