/* SPDX-License-Identifier: MIT */
/*
 * unwind_cli.h - the user-stack options `record` and `agent` share, with
 * perf's spellings mapped onto them:
 *
 *   --unwind dwarf        the default: .eh_frame tables, frame pointer where
 *                         a frame has none ("eh-frame" and "cfi" are synonyms)
 *   --unwind fp           frame pointers only (the old walk)
 *   -g                    perf's "record call graphs": spanprof always does,
 *                         so it keeps the mode (it does NOT drop to frame
 *                         pointers, which lose the callers of Debian's libc)
 *   --call-graph fp       = --unwind fp
 *   --call-graph dwarf[,SIZE]
 *                         = --unwind dwarf; SIZE (perf's stack copy) is
 *                         accepted and ignored (no stack is copied, the
 *                         walk happens in the kernel, 127 frames); msg gets
 *                         a note saying so, which the shared options drop
 *   --call-graph lbr      refused: needs hardware branch records
 *   --unwind-budget B     bytes of BPF memory for tables and ranges (k/m/g
 *                         suffixes), default 64m
 *   --unwind-build WHEN   lazy (a table once a sample needs it) or eager
 *                         (when a file is mapped); parsed in sampling_opts.c,
 *                         default by what is recorded (pipeline.c)
 */
#ifndef SPANPROF_UNWIND_CLI_H
#define SPANPROF_UNWIND_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --unwind MODE: 0 and *fp, or -EINVAL with a one-line message. */
int sp_unwind_cli__mode(const char *arg, bool *fp, char *msg, size_t len);
/* --call-graph MODE: 0 and *fp (msg may hold a note to print), or
 * -EINVAL with the message. */
int sp_unwind_cli__call_graph(const char *arg, bool *fp, char *msg, size_t len);

#endif
