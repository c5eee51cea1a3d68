/* SPDX-License-Identifier: MIT */
/*
 * record.h - `spanprof record`: a one-off recording of the whole machine,
 * some processes, or a command, written as one pprof or OTLP file.
 */
#ifndef SPANPROF_RECORD_H
#define SPANPROF_RECORD_H

/* Returns the process exit code: 0 ok, 1 runtime failure, 2 usage error. */
int sp_record__main(int argc, char **argv);

#endif
