// SPDX-License-Identifier: MIT
/*
 * bench_maps_reader.c - ns per line of sp_maps_reader__scan / __scan_fd.
 *
 * The collector reads /proc/PID/maps on every exec and first sight of a
 * process (docs/benchmarks.md: a third of the consumer's own time on a
 * busy host), so the reader's line splitting and parsing are on the hot
 * path.  This maps NMAPS small anonymous and file-backed regions with
 * alternating protections (so the kernel cannot merge them) to get a
 * large real maps file, then times:
 *   proc:  sp_maps_reader__scan("/proc", getpid()) - the real thing, the
 *          kernel's text generation included;
 *   file:  sp_maps_reader__scan_fd over a copy of that text in a memfd -
 *          only the reader (splitting + parsing), no kernel generation.
 * Prints min and median ns per line over the runs, wall clock and the
 * thread's CPU time (user + system: on a shared, loaded machine the CPU
 * time is the steadier figure, as it leaves out the time the thread
 * waited for a core).  A scan that fails or sees fewer lines than mapped
 * is an error.
 *
 * Half the lines carry this program's own path, so two builds compared
 * must run from paths of the same length (copy both to /tmp under names
 * of equal length), or the longer path's lines cost more to make and parse.
 *
 *   make O=build build/bench/bench_maps_reader && build/bench/bench_maps_reader [runs]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/maps_reader.h"
#include "benchutil.h"

#define NMAPS	20000
#define MAXRUNS	101

static int sum_cb(const struct sp_map_entry *e, void *ctx)
{
	*(uint64_t *)ctx += e->start ^ e->offset ^ e->path_len;
	return 0;
}

/* Many distinct mappings: every other page of one reserved range made
 * read-only, half of them backed by the executable (a path per line). */
static int make_maps(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)pg * 2 * NMAPS;
	char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (base == MAP_FAILED || fd < 0)
		return -errno;
	for (size_t i = 0; i < NMAPS; i++) {
		char *p = base + i * 2 * (size_t)pg;

		if (i & 1) {
			if (mmap(p, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
				return -errno;
		} else if (mprotect(p, (size_t)pg, PROT_READ)) {
			return -errno;
		}
	}
	close(fd);
	return 0;
}

/* /proc/self/maps copied into a memfd (rewound before each scan). */
static int copy_maps(void)
{
	int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), out = memfd_create("maps", 0);
	char buf[1 << 16];
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return n < 0 ? -1 : out;
}

static int bench(const char *what, int fd, int runs)
{
	uint64_t ns[MAXRUNS], cpu[MAXRUNS], sink = 0;
	struct sp_maps_read_stats st;
	int r, rc;

	for (r = 0; r < runs; r++) {
		uint64_t t0, c0;

		if (fd >= 0 && lseek(fd, 0, SEEK_SET) != 0)
			return 1;
		t0 = bench__ns(CLOCK_MONOTONIC);
		c0 = bench__ns(CLOCK_THREAD_CPUTIME_ID);
		rc = fd >= 0 ? sp_maps_reader__scan_fd(fd, sum_cb, &sink, &st)
			     : sp_maps_reader__scan("/proc", (uint32_t)getpid(), sum_cb, &sink, &st);
		cpu[r] = bench__ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		ns[r] = bench__ns(CLOCK_MONOTONIC) - t0;
		if (rc || st.lines < NMAPS || st.truncated) {
			fprintf(stderr, "%s: scan: %s, %u lines (want >= %d)\n", what,
				strerror(rc < 0 ? -rc : 0), st.lines, NMAPS);
			return 1;
		}
	}
	qsort(ns, (size_t)runs, sizeof(ns[0]), bench__cmp_u64);
	qsort(cpu, (size_t)runs, sizeof(cpu[0]), bench__cmp_u64);
	printf("%-5s %6u lines  ns/line: wall min %6.1f median %6.1f  cpu min %6.1f median %6.1f"
	       "  (%d runs, sink %llx)\n", what, st.lines, (double)ns[0] / st.lines,
	       (double)ns[runs / 2] / st.lines, (double)cpu[0] / st.lines,
	       (double)cpu[runs / 2] / st.lines, runs, (unsigned long long)(sink & 0xf));
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 31, fd, err;

	if (runs < 1 || runs > MAXRUNS) {
		fprintf(stderr, "usage: %s [runs, 1..%d]\n", argv[0], MAXRUNS);
		return 2;
	}
	err = make_maps();
	if (err) {
		fprintf(stderr, "mapping %d regions: %s\n", NMAPS, strerror(-err));
		return 1;
	}
	fd = copy_maps();
	if (fd < 0) {
		fprintf(stderr, "copying /proc/self/maps: %s\n", strerror(errno));
		return 1;
	}
	err = bench("proc", -1, runs) || bench("file", fd, runs);
	close(fd);
	return err;
}
