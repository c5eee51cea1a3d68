// SPDX-License-Identifier: MIT
/*
 * fp_floor.c - loader of bench/fp_floor.bpf.c's floor probes for
 * bench/bpf_floor.py.  A benchmark instrument, not part of spanprof.
 *
 *   fp_floor [-F HZ] [-d SECONDS] [-p PID] [PROG...]
 *                                  PROG: empty, fp_walk, kstack (default all)
 *
 * -p PID: fp_walk and kstack return at once on other processes' samples.
 * Opens one PERF_COUNT_SW_CPU_CLOCK event per online CPU at HZ (default 97,
 * sp_oncpu's event exactly) for each program asked, attaches the program,
 * prints "ready" on stdout once all are attached, and stays until SIGINT or
 * SIGTERM (or SECONDS have passed: a bench that dies leaves no probe
 * running); then prints, per probe with a buffer, "NAME samples N frames M"
 * (summed over CPUs).  Costs are read by the bench from bpftool
 * (kernel.bpf_stats_enabled), by program name (floor_*).
 *
 * Exit 1 with one line on stderr when an event cannot be opened or a
 * program cannot load or attach.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fp_floor.skel.h"

#define FLOOR_CPUS_MAX 256

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int open_clock(unsigned hz, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = hz,
		.freq = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Sums the samples and frames fields of a floor buffer over CPUs. */
static void print_buf(const char *name, struct bpf_map *m)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long s = 0, f = 0;
	__u32 zero = 0;
	__u64 *v;
	size_t vsz = bpf_map__value_size(m);

	if (ncpu <= 0)
		return;
	v = calloc(ncpu, vsz);
	if (!v)
		return;
	if (bpf_map__lookup_elem(m, &zero, sizeof(zero), v, ncpu * vsz, 0) == 0) {
		for (int c = 0; c < ncpu; c++) {
			s += v[c * vsz / 8];
			f += v[c * vsz / 8 + 1];
		}
		printf("%s samples %llu frames %llu\n", name, s, f);
	}
	free(v);
}

int main(int argc, char **argv)
{
	struct fp_floor_bpf *skel = NULL;
	static const char *const all[] = { "empty", "fp_walk", "kstack" };
	struct bpf_program *want[3] = { 0 };
	unsigned hz = 97, secs = 0, pid = 0;
	int ncpu, nwant = 0, rc = 1, opt;

	while ((opt = getopt(argc, argv, "F:d:p:")) != -1) {
		if (opt == 'p') {
			pid = strtoul(optarg, NULL, 10);
		} else if (opt == 'd') {
			secs = strtoul(optarg, NULL, 10);
		} else if (opt != 'F' || (hz = strtoul(optarg, NULL, 10)) == 0) {
			fprintf(stderr, "usage: fp_floor [-F HZ] [-d SECONDS] [-p PID] [empty|fp_walk|kstack...]\n");
			return 2;
		}
	}
	skel = fp_floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "fp_floor: opening the floor probes failed: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->target_tgid = pid;
	opt = fp_floor_bpf__load(skel);
	if (opt) {
		fprintf(stderr, "fp_floor: loading the floor probes failed: %s\n", strerror(-opt));
		goto out;
	}
	if (optind == argc) {
		argv = (char **)all;
		argc = 3;
		optind = 0;
	}
	for (int i = optind; i < argc; i++) {
		struct bpf_program *p = !strcmp(argv[i], "empty")   ? skel->progs.floor_empty
					: !strcmp(argv[i], "fp_walk") ? skel->progs.floor_fp_walk
					: !strcmp(argv[i], "kstack")  ? skel->progs.floor_kstack
								      : NULL;

		for (int w = 0; p && w < nwant; w++)
			if (want[w] == p)
				p = NULL;
		if (!p) {
			fprintf(stderr, "fp_floor: unknown or repeated probe '%s' (empty, fp_walk, kstack)\n",
				argv[i]);
			goto out;
		}
		want[nwant++] = p;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu > FLOOR_CPUS_MAX)
		ncpu = FLOOR_CPUS_MAX;
	for (int w = 0; w < nwant; w++) {
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd = open_clock(hz, cpu);

			if (fd < 0) {
				if (errno == ENODEV || errno == ENOENT)
					continue;	/* CPU offline */
				fprintf(stderr, "fp_floor: perf_event_open on CPU %d at %u Hz: %s\n", cpu, hz,
					strerror(errno));
				goto out;
			}
			/* The link and its event live until exit. */
			if (!bpf_program__attach_perf_event(want[w], fd)) {
				fprintf(stderr, "fp_floor: attaching %s on CPU %d: %s\n",
					bpf_program__name(want[w]), cpu, strerror(errno));
				goto out;
			}
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGALRM, on_signal);
	alarm(secs);
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		pause();
	print_buf("fp_walk", skel->maps.floor_fp_buf);
	print_buf("kstack", skel->maps.floor_k_buf);
	rc = 0;
out:
	fp_floor_bpf__destroy(skel);
	return rc;
}
