/* SPDX-License-Identifier: MIT */
/*
 * load_deep.c - the load for bench/unwind_cost.py: deep user stacks without
 * frame pointers (built by the script with gcc -O2 -fomit-frame-pointer,
 * as distributions build).  THREADS threads (default 2), each recursing
 * DEPTH levels (default 40) through eight functions, then sorting through
 * Debian libc's qsort with a comparator that does the work: about 55 user
 * frames per sample, none with a frame pointer, libc in the middle.
 * Usage: load_deep SECONDS [THREADS [DEPTH [plain]]] (wall seconds).
 * "plain": the bottom spins instead of sorting (no libc frames under the
 * recursion: with frame pointers, every walker then gets the whole chain).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEEP __attribute__((noinline, noipa))
#define N 2048

static volatile int stop;
static volatile uint32_t sink;
static int depth = 40;
static int plain;

KEEP static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	for (int i = 0; i < 16; i++) {
		x = (x ^ (x >> 13)) * 0x5bd1e995u + i;
		y = (y ^ (y >> 13)) * 0x5bd1e995u + i;
	}
	return x < y ? -1 : x > y;
}

KEEP static uint32_t bottom(uint32_t seed)
{
	static __thread uint32_t v[N];

	if (plain) {
		for (int i = 0; i < 400000; i++)
			seed = (seed ^ (seed >> 13)) * 0x5bd1e995u + i;
		return seed;
	}
	for (int i = 0; i < N; i++)
		v[i] = seed = seed * 1103515245u + 12345u;
	qsort(v, N, sizeof(v[0]), cmp);
	return v[0] + v[N - 1];
}

KEEP static uint32_t r0(int d, uint32_t s);
#define R(n, next) KEEP static uint32_t r##n(int d, uint32_t s) \
	{ uint32_t x = d ? next(d - 1, s + n) : bottom(s); return x ^ (uint32_t)d; }
R(7, r0) R(6, r7) R(5, r6) R(4, r5) R(3, r4) R(2, r3) R(1, r2)
KEEP static uint32_t r0(int d, uint32_t s)
{
	uint32_t x = d ? r1(d - 1, s) : bottom(s);

	return x + 1;
}

static void *worker(void *arg)
{
	uint32_t s = (uint32_t)(uintptr_t)arg;

	while (!stop)
		sink += r0(depth, s++);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t th[64];
	struct timespec ts;

	if (argc > 3)
		depth = atoi(argv[3]);
	plain = argc > 4 && argv[4][0] == 'p';
	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("%u\n", sink);
	return 0;
}
