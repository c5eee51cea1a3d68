/*
 * alloc_count.h - counts heap allocations in a test executable, to prove a
 * hot path allocates nothing.  Defines malloc/calloc/realloc/free for the
 * whole executable (glibc resolves the program's own definitions first) and
 * forwards to glibc's __libc_* entry points.  Include it from exactly one
 * file of a test binary.
 *
 * While counting, alloc_fail_at = N (1-based) makes the N-th allocation
 * fail (NULL), and alloc_live counts blocks allocated and not yet freed, so
 * a test can prove an error path frees everything it took.
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
static volatile unsigned long alloc_fail_at;	/* 0 = never */
static volatile long alloc_live;

#if HAVE_ALLOC_COUNT
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t sz);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* Counts one allocation; false when it is the one to fail. */
static int alloc_count__take(void)
{
	if (!alloc_counting)
		return 1;
	alloc_calls++;
	return alloc_calls != alloc_fail_at;
}

void *malloc(size_t n)
{
	void *r = alloc_count__take() ? __libc_malloc(n) : NULL;

	if (r && alloc_counting)
		alloc_live++;
	return r;
}

void *calloc(size_t n, size_t sz)
{
	void *r = alloc_count__take() ? __libc_calloc(n, sz) : NULL;

	if (r && alloc_counting)
		alloc_live++;
	return r;
}

void *realloc(void *p, size_t n)
{
	void *r = alloc_count__take() ? __libc_realloc(p, n) : NULL;

	if (r && !p && alloc_counting)
		alloc_live++;
	return r;
}

void free(void *p)
{
	if (p && alloc_counting)
		alloc_live--;
	__libc_free(p);
}
#endif

#endif
