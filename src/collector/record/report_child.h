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
 */
#ifndef SPANPROF_REPORT_CHILD_H
#define SPANPROF_REPORT_CHILD_H

/* Returns the child's exit status, or -1 when the report could not run
 * (a one-line note is printed; the profile itself is already written). */
int sp_report_child__run(const char *profile_path);

#endif
