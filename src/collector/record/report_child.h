/* SPDX-License-Identifier: MIT */
/*
 * report_child.h - after a recording, run spanprof-symbolizer (found next to
 * the spanprof binary) as a separate, unprivileged process to print the top
 * of the report and write a flame graph next to the profile.
 *
 * The collector never symbolizes: it only forks, drops to the invoking
 * user (SUDO_UID/SUDO_GID) or to nobody, and execs the symbolizer.  The
 * flame graph file is created by the collector and handed over by
 * ownership, so the unprivileged child can write it.
 *
 * Bounds: the child runs with RLIMIT_DATA at mem_mib (its heap and
 * private mappings: a profile or a debug file that would take more makes
 * its allocations fail, and it exits with an error) and is waited for at
 * most timeout_s (a binary or debug file on a hung file system, or a
 * profile too big to symbolize in time): past it the child is killed
 * (SIGKILL) and waited for 2 s more to be reaped (a FUSE request its
 * daemon has read is waited out even on SIGKILL: then it is left to end
 * when that file system answers, reparented to init).  Either way the
 * profile stays on disk as written: only its report is missing.
 */
#ifndef SPANPROF_REPORT_CHILD_H
#define SPANPROF_REPORT_CHILD_H

#include <stdint.h>
#include <stdio.h>

struct sp_report_limits {
	uint32_t timeout_s;	/* 0: SP_REPORT_TIMEOUT_S */
	uint32_t mem_mib;	/* 0: SP_REPORT_MEM_MIB */
};

#define SP_REPORT_TIMEOUT_S 120
#define SP_REPORT_MEM_MIB 4096

/* lim may be NULL (the defaults).  Returns the child's exit status (0:
 * the report was printed), 128 + N when signal N killed it (as shells
 * say), -ETIMEDOUT when it was killed at the limit, or -1 when the report
 * could not run (a one-line note is printed). */
int sp_report_child__run(const char *profile_path, const struct sp_report_limits *lim);

/* One line on f for a report that did not succeed (rc from __run, not 0 or
 * -1): what happened, that the profile is kept, and what to do. */
void sp_report_child__explain(FILE *f, int rc, const char *profile_path,
			      const struct sp_report_limits *lim);

#endif
