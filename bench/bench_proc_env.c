// SPDX-License-Identifier: MIT
/*
 * bench_proc_env.c - CPU time of one environment read (procs/proc_env.h):
 * /proc/PID/environ read and scanned for OTEL_SERVICE_NAME /
 * OTEL_RESOURCE_ATTRIBUTES, what the collector does once per new process
 * image.
 *
 * N children (default 64) are forked with an environment like
 * bench/env_read_cost.py's (~3 KiB of ordinary variables plus the two
 * OTel ones) and wait; then, RUNS times, a fresh cache reads every child
 * once (sp_proc_env__get on an empty cache: read + parse + store).  CPU
 * time is this thread's (CLOCK_THREAD_CPUTIME_ID: what the consumer
 * thread would spend, other engineers' load excluded), also wall time.
 * Prints min and median us per read.  A child whose declaration is not
 * found is an error (the read must really happen).
 *
 *   make O=build build/bench/bench_proc_env && build/bench/bench_proc_env [children] [runs]
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/procs/proc_env.h"
#include "benchutil.h"

#define MAX_CHILDREN 1024
#define MAX_RUNS 101

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64, runs = argc > 2 ? atoi(argv[2]) : 21;
	static char vars[40][160];
	char *envp[41];
	pid_t kids[MAX_CHILDREN];
	uint64_t cpu[MAX_RUNS], wall[MAX_RUNS];
	size_t env_bytes = 0;
	int e = 0, rc = 0;

	if (n < 1 || n > MAX_CHILDREN || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench_proc_env [children 1..%d] [runs 1..%d]\n",
			MAX_CHILDREN, MAX_RUNS);
		return 2;
	}
	snprintf(vars[e++], 160, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin");
	snprintf(vars[e++], 160, "HOME=/home/app");
	snprintf(vars[e++], 160, "LANG=C.UTF-8");
	for (int i = 0; i < 6; i++)
		snprintf(vars[e++], 160, "LS_COLORS_%d=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;"
			 "35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41", i);
	for (int i = 0; i < 24; i++)
		snprintf(vars[e++], 160, "APP_SETTING_%02d=value-%02d-%048d", i, i, 0);
	snprintf(vars[e++], 160, "OTEL_SERVICE_NAME=checkout");
	snprintf(vars[e++], 160, "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,"
		 "team=payments,service.version=1.4.2,region=eu-west-1");
	for (int i = 0; i < e; i++) {
		envp[i] = vars[i];
		env_bytes += strlen(vars[i]) + 1;
	}
	envp[e] = NULL;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			char *args[] = { "sleep", "600", NULL };

			execve("/bin/sleep", args, envp);
			_exit(127);
		}
		if (kids[i] < 0) {
			perror("fork");
			n = i;
			rc = 1;
			goto out;
		}
	}
	usleep(200000);	/* every child has exec'd */
	for (int r = 0; r < runs; r++) {
		struct sp_proc_env *c = sp_proc_env__new((uint32_t)n * 4, 0, NULL);
		uint64_t c0, w0;

		if (!c) {
			rc = 1;
			goto out;
		}
		c0 = bench__ns(CLOCK_THREAD_CPUTIME_ID);
		w0 = bench__ns(CLOCK_MONOTONIC);
		for (int i = 0; i < n; i++) {
			const struct sp_proc_env_ident *id = sp_proc_env__get(c, (uint32_t)kids[i]);

			if (!id || !id->service_name || strcmp(id->service_name, "checkout")) {
				fprintf(stderr, "bench_proc_env: child %d: no declaration read\n",
					kids[i]);
				rc = 1;
			}
		}
		cpu[r] = bench__ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall[r] = bench__ns(CLOCK_MONOTONIC) - w0;
		sp_proc_env__free(c);
	}
	qsort(cpu, (size_t)runs, sizeof(cpu[0]), bench__cmp_u64);
	qsort(wall, (size_t)runs, sizeof(wall[0]), bench__cmp_u64);
	printf("environment %zu bytes, %d processes, %d runs: CPU per read min %.2f us, "
	       "median %.2f us; wall per read min %.2f us, median %.2f us\n", env_bytes, n, runs,
	       cpu[0] / 1e3 / n, cpu[runs / 2] / 1e3 / n, wall[0] / 1e3 / n,
	       wall[runs / 2] / 1e3 / n);
out:
	for (int i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	return rc;
}
