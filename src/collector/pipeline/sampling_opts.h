/* SPDX-License-Identifier: MIT */
/*
 * sampling_opts.h - the options `spanprof record` and `spanprof agent`
 * share: what is sampled and the pipeline's bounds.  One struct, one table
 * (sampling_opts.c), one parser, one set of error texts and help lines;
 * each command brings only its defaults (record: 97 Hz, 64 MiB; agent:
 * 19 Hz, 16 MiB per aggregator, ...).
 *
 * Adding a shared option: a field here and one row in sampling_opts.c's
 * table (name, argument, kind, field, bounds, error text, help); the
 * pipeline reads the field (pipeline.c, sampler_config).  Both commands
 * then accept it, document it in --help and refuse bad values alike.
 *
 * Use: a command passes its own options (short string, long table, and a
 * handler) to sp_sampling_opts__parse_argv, which runs getopt_long over
 * both, parses the shared ones into struct sp_sampling_opts, hands the
 * command's own to the handler, refuses unknown ones in one wording, and
 * finishes with the cross-option checks.
 * Messages carry no "spanprof CMD: " prefix; the command adds it.
 */
#ifndef SPANPROF_SAMPLING_OPTS_H
#define SPANPROF_SAMPLING_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/pipeline/cli.h"

struct sp_sampling_opts {
	uint32_t hz;			/* -F, prime */
	bool kernel;			/* kernel stacks (--no-kernel clears) */
	bool idle;			/* also stream idle-CPU samples */
	bool trace_ctx;			/* read OTEP 4947 contexts (--no-trace-context) */
	bool jit;			/* copy JIT perf maps for the symbolizer (--no-jit) */
	bool no_go_labels;		/* do not read Go goroutines' pprof labels */
	bool no_process_env;		/* --no-process-env: no /proc/PID/environ reads */
	uint32_t ringbuf_bytes;		/* power of two */
	uint32_t poll_ms;		/* drain period; 10 ms for 250 ms after a maps read */
	size_t agg_budget;		/* bytes per aggregator */
	uint32_t agg_entries;		/* 0: derived from agg_budget */
	bool timestamps;		/* per-event timestamps in the samples (the
					 * aggregator keeps its event log) */
	bool off_cpu;
	uint64_t off_cpu_min_us;
	uint32_t off_cpu_sample_n;	/* 1 in N; 0 = adaptive (off_cpu_rate) */
	uint32_t off_cpu_rate;		/* adaptive: captures per second per CPU */
	bool off_cpu_kthreads;
	bool off_cpu_goroutines;	/* goroutine parks (bpf/goparks.bpf.h) */
	uint32_t off_cpu_max_pending;	/* 0 = the sampler's default (8192) */
	uint32_t ctx_max_procs;		/* 0 = SP_TLS_DESCS_MAX */
	bool unwind_fp;			/* --unwind fp: frame pointers only */
	bool unwind_asked;		/* parser state: --unwind or --call-graph given */
	uint64_t unwind_budget;		/* --unwind-budget; 0 = the default (64 MiB) */
	uint32_t unwind_cpu_pct;	/* --unwind-cpu; 0 = the default (25) */
	uint32_t unwind_build;		/* --unwind-build: SP_UNWIND_BUILD_* */
	uint32_t exec_maps;		/* --exec-maps: SP_UNWIND_BUILD_* (eager|lazy) */
	bool off_cpu_tuned;		/* parser state: an --off-cpu-* option was given */
	bool cpu_filter;		/* -C given: sample only the CPUs in cpus */
	uint64_t cpus[SP_CLI_CPU_WORDS];	/* -C's set (cli.h), online when parsed */
};

/* When unwind tables are built (--unwind-build), and when a new image's
 * maps are read (--exec-maps: lazy = at its first sample). */
enum {
	SP_UNWIND_BUILD_DEFAULT = 0,	/* lazy for the whole host, eager when
					 * targeted (record -- CMD, -p, -t) */
	SP_UNWIND_BUILD_EAGER = 1,	/* at the first maps read naming the file */
	SP_UNWIND_BUILD_LAZY = 2,	/* once a sample has a frame in the file */
};

/* A command's own option: getopt_long's value c and its argument (or
 * NULL).  0, or -EINVAL with a one-line message in msg. */
typedef int (*sp_own_opt_fn)(int c, const char *arg, void *ctx, char *msg, size_t msg_len);

/* A command's own options.  Their getopt values must not collide with the
 * shared ones: not 'h', not a shared short option ('F'), below 0x1000. */
struct sp_command_opts {
	const char *name;		/* "record": in "see spanprof record --help" */
	const char *short_opts;		/* the command's own, getopt syntax */
	const struct option *long_opts;	/* the command's own, zero-terminated */
	sp_own_opt_fn own;
	void (*usage)(FILE *f);		/* -h, --help: printed to stdout, exit 0 */
};

/* Parses argv[1..] up to the first operand (getopt's "+": record's
 * "-- COMMAND"): shared options into o (which holds the command's
 * defaults), the command's own through cmd->own(ctx), -h/--help (the
 * command's usage on stdout, then exit(0), as argp does), then
 * sp_sampling_opts__finish.  Returns the index of the first operand
 * (argc when none), or -EINVAL with a one-line message in msg: a refused
 * value ("--NAME VALUE: expected ..."), an unknown option or a missing
 * value ("unknown option or missing value: ARG; see spanprof NAME
 * --help"), what the command's handler said, or a cross-option check
 * ("--off-cpu-* options need --off-cpu").  Without --agg-entries the
 * entry cap follows the budget (sp_sampling_opts__default_entries). */
int sp_sampling_opts__parse_argv(const struct sp_command_opts *cmd, void *ctx, int argc,
				 char **argv, struct sp_sampling_opts *o, char *msg,
				 size_t msg_len);

/* The shared options' help lines, with the command's defaults. */
void sp_sampling_opts__usage(FILE *f, const struct sp_sampling_opts *defaults);

/* The entry cap that follows a budget when --agg-entries is not given. */
uint32_t sp_sampling_opts__default_entries(size_t agg_budget);

#endif
