// SPDX-License-Identifier: MIT
/*
 * load_mixed.c - the benchmark load: THREADS busy threads (one per CPU to
 * keep busy) with realistic user stacks and some kernel time.
 *
 * Each thread picks, per round, one of 64 call paths and recurses through
 * two alternating frame types to a depth of 10..30 frames; at the bottom it
 * either computes (about 3/4 of the rounds) or reads 64 KiB from /dev/zero
 * and writes it to /dev/null 32 times (about 1/4), so a share of the
 * samples interrupt kernel mode (read -> clear_user, write) under a deep
 * user stack.  Not a file of bench/bench_*.c, so bench/build.mk does not
 * build it: the bench scripts compile it with clang and frame pointers,
 * like the test fixtures:
 *
 *   clang -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
 *         -fno-inline -fno-optimize-sibling-calls -o load_mixed \
 *         bench/load_mixed.c -lpthread
 *   load_mixed SECONDS THREADS
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double seconds = 10;
static int zero_fd, null_fd;

__attribute__((noinline)) static void step(int depth, unsigned path);

__attribute__((noinline)) static void leaf_compute(unsigned path)
{
	for (int i = 0; i < 20000; i++)
		sink += i ^ (sink >> 3) ^ path;
}

__attribute__((noinline)) static void leaf_syscalls(void)
{
	static __thread char buf[65536];

	for (int i = 0; i < 32; i++) {
		if (read(zero_fd, buf, sizeof(buf)) < 0 ||
		    write(null_fd, buf, sizeof(buf)) < 0)
			abort();
	}
}

__attribute__((noinline)) static void step_a(int depth, unsigned path)
{
	step(depth - 1, path);
	sink++;
}

__attribute__((noinline)) static void step_b(int depth, unsigned path)
{
	step(depth - 1, path);
	sink += 2;
}

/* Every level is two frames (step + step_a/b): depth d gives ~2d frames. */
__attribute__((noinline)) static void step(int depth, unsigned path)
{
	if (depth <= 0) {
		if ((path & 3) == 0)
			leaf_syscalls();
		else
			leaf_compute(path);
		return;
	}
	if ((path >> (depth % 6)) & 1)
		step_a(depth, path);
	else
		step_b(depth, path);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(unsigned long)arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200; i++) {
			seed = seed * 1103515245u + 12345u;
			unsigned path = (seed >> 16) & 63;
			/* 5..14 levels -> 10..28 user frames plus main/worker */
			step(5 + (path % 10), path);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = 2;

	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		n = atoi(argv[2]);
	if (n < 1 || n > 256 || seconds <= 0) {
		fprintf(stderr, "usage: load_mixed SECONDS THREADS\n");
		return 2;
	}
	zero_fd = open("/dev/zero", O_RDONLY);
	null_fd = open("/dev/null", O_WRONLY);
	if (zero_fd < 0 || null_fd < 0) {
		perror("open");
		return 1;
	}
	pthread_t th[256];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)(unsigned long)(i * 7919 + 1));
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
