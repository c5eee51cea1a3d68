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

#endif
