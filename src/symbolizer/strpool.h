/* SPDX-License-Identifier: MIT */
/*
 * strpool.h - a set of owned strings, each kept once: the names and paths a
 * module hands out in its answers (demangled names, file paths joined with
 * their directories).
 *
 * Answers sit in the resolver's cache after the unit that produced them has
 * left the decoded-unit cache, so their strings cannot belong to the unit:
 * they live here until the module is freed.  Interning the same string
 * again returns the first copy, so a unit decoded, evicted and decoded
 * again adds nothing: the pool is bounded by the distinct strings of the
 * file, not by the load.  Not thread safe (the module's lock covers it).
 */
#ifndef SPANPROF_SYMBOLIZER_STRPOOL_H
#define SPANPROF_SYMBOLIZER_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

struct sp_strpool {
	char **slots;		/* open addressing, NULL = empty */
	uint32_t cap, n;	/* cap a power of two, n <= cap / 2 */
	size_t bytes;		/* string bytes held */
};

/* The pooled copy of s[0..len), or NULL on -ENOMEM. */
const char *sp_strpool__intern(struct sp_strpool *p, const char *s, size_t len);
/* Takes ownership of malloc'd s (freed when already pooled); NULL on
 * -ENOMEM (s is freed). */
const char *sp_strpool__adopt(struct sp_strpool *p, char *s);
void sp_strpool__free(struct sp_strpool *p);	/* NULL-safe, leaves it empty */

#endif /* SPANPROF_SYMBOLIZER_STRPOOL_H */
