/* SPDX-License-Identifier: MIT */
/*
 * utf8.h - bytes from another process made into a valid UTF-8 string.
 *
 * Profiles carry strings that other programs decode as UTF-8 (proto3
 * `string` fields: a strict decoder refuses a message with one invalid
 * byte), yet some of those strings are a profiled process's bytes: its
 * thread-record attributes, the names in its perf map.
 *
 * sp_utf8__sanitize copies [s, s+n) into dst (room for n + 1 bytes): every
 * valid UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF) is kept, every invalid byte and every control character
 * (below 0x20, and DEL) becomes '?'.  Returns the length written (<= n);
 * dst is NUL-terminated.  No allocation.
 */
#ifndef SPANPROF_BASE_UTF8_H
#define SPANPROF_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

size_t sp_utf8__sanitize(const uint8_t *s, size_t n, char *dst);
/* The length (1..4) of the valid UTF-8 sequence at s[0..n), 0 when the
 * bytes there are not one. */
unsigned sp_utf8__seq(const uint8_t *s, size_t n);

#endif /* SPANPROF_BASE_UTF8_H */
