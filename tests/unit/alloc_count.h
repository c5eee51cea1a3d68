/*
 * alloc_count.h - counts heap allocations in a test executable, to prove a
 * hot path allocates nothing.  Defines malloc/calloc/realloc/free for the
 * whole executable (glibc resolves the program's own definitions first) and
 * forwards to glibc's __libc_* entry points.  Include it from exactly one
 * file of a test binary.
 *
 * Under ASan the sanitizer owns malloc: HAVE_ALLOC_COUNT is 0 and tests must
 * skip() their counting checks (reported as skipped, not passed).
 */
#ifndef SPANPROF_TEST_ALLOC_COUNT_H
#define SPANPROF_TEST_ALLOC_COUNT_H

#include <stddef.h>

#ifdef __SANITIZE_ADDRESS__
#define HAVE_ALLOC_COUNT 0
#else
#define HAVE_ALLOC_COUNT 1
#endif

static volatile int alloc_counting;
static volatile unsigned long alloc_calls;

#if HAVE_ALLOC_COUNT
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t sz);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	if (alloc_counting)
		alloc_calls++;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t sz)
{
	if (alloc_counting)
		alloc_calls++;
	return __libc_calloc(n, sz);
}

void *realloc(void *p, size_t n)
{
	if (alloc_counting)
		alloc_calls++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

#endif
