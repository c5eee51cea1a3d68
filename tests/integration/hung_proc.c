/* SPDX-License-Identifier: MIT */
/*
 * hung_proc.c - a process that a hung file system has caught, three ways,
 * for test_fault_hung_proc.py (hangfs.c serves FILE, whose reads never
 * return).  Every mode first publishes an OTEP 4719 process context
 * (libspanctx: the collector then looks into it for a TLS descriptor),
 * maps FILE read-only without touching it, sets the trap, prints "ready"
 * and burns CPU on its main thread (which touches no memory map) for
 * SECONDS, so it keeps being sampled.
 *
 *   lock  the process's mmap lock is held for good, and one of its VMAs
 *         write-locked: thread A faults on a page of FILE (the read
 *         hangs, the page stays locked); thread B opens FILE again with
 *         O_SYNC (hangfs answers it with direct_io) and maps it
 *         MAP_FIXED over an anonymous mapping: the kernel's FUSE mmap
 *         invalidates the file's cache, waiting on A's page, with the
 *         mmap lock held for writing and the replaced VMA write-locked.
 *         Reading /proc/PID/maps then blocks (on 6.18 too, whose maps
 *         reads otherwise go by per-VMA locks), as do mem, environ.
 *   mem   thread A reads its own /proc/self/mem at a page of FILE (the
 *         kernel holds the mmap lock for reading while it waits for the
 *         page); thread B calls mmap and queues for writing.  New
 *         readers of the lock wait behind B: /proc/PID/mem and environ
 *         block; maps too, on kernels without per-VMA maps reads.
 *   elf   no trap in the process: FILE is one of its mapped files, so
 *         the TLS search opens and reads it (its ELF header), and that
 *         read never returns.
 *
 * Usage: hung_proc MODE FILE SECONDS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "spanctx.h"

#define FILE_LEN (1 << 20)
#define VICTIM_LEN (1 << 16)

static const char *path;
static char *file_map, *victim;
static volatile unsigned long sink;

static void *fault_on_file(void *arg)
{
	(void)arg;
	sink += (unsigned char)file_map[9 * 4096];	/* never returns while hung */
	return NULL;
}

static void *remap_direct(void *arg)
{
	int fd = open(path, O_RDONLY | O_SYNC);

	(void)arg;
	if (fd >= 0)
		mmap(victim, VICTIM_LEN, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	return NULL;
}

static void *read_own_mem(void *arg)
{
	int fd = open("/proc/self/mem", O_RDONLY);
	char c;

	(void)arg;
	if (fd >= 0 && pread(fd, &c, 1, (off_t)(uintptr_t)(file_map + 11 * 4096)) == 1)
		sink += (unsigned char)c;
	return NULL;
}

static void *map_anon(void *arg)
{
	(void)arg;
	usleep(300000);		/* after read_own_mem holds the lock */
	mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return NULL;
}

/* Starts fn; wait_us later it is taken to have reached its wait. */
static void start(void *(*fn)(void *), unsigned wait_us)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL)) {
		fprintf(stderr, "hung_proc: pthread_create failed\n");
		exit(1);
	}
	usleep(wait_us);
}

int main(int argc, char **argv)
{
	static const char *const keys[] = { "test.key" };
	struct timespec t0, t;
	double secs;
	int fd;

	if (argc != 4)
		return 2;
	path = argv[2];
	secs = atof(argv[3]);
	printf("starting\n");	/* stdio's buffer is allocated before any trap */
	fflush(stdout);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 3;
	file_map = mmap(NULL, FILE_LEN, PROT_READ, MAP_PRIVATE, fd, 0);
	victim = mmap(NULL, VICTIM_LEN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (file_map == MAP_FAILED || victim == MAP_FAILED)
		return 4;
	if (spanctx_init("hung-proc", keys, 1))
		return 5;
	if (!strcmp(argv[1], "lock")) {
		start(fault_on_file, 300000);
		start(remap_direct, 300000);
	} else if (!strcmp(argv[1], "mem")) {
		/* Both threads exist before the lock is taken: creating one
		 * afterwards would map its stack, and wait. */
		start(map_anon, 0);
		start(read_own_mem, 600000);
	} else if (strcmp(argv[1], "elf")) {
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200000; i++)
			sink += i ^ (sink >> 3);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
