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
 * Use with getopt_long:
 *   n = sp_sampling_opts__longopts(own_longopts, table, cap);
 *   getopt_long(argc, argv, "+" SP_SAMPLING_SHORTOPTS "...", table, NULL)
 *   for each option: rc = sp_sampling_opts__parse(&o, c, optarg, msg, len);
 *     rc 1: not a shared option (the command's own), 0: taken,
 *     -EINVAL: refused, msg holds "--NAME VALUE: expected ..."
 *   after the loop: sp_sampling_opts__finish(&o, msg, len)
 * Messages carry no "spanprof CMD: " prefix; the command adds it.
 */
#ifndef SPANPROF_SAMPLING_OPTS_H
#define SPANPROF_SAMPLING_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SP_SAMPLING_SHORTOPTS "F:"
/* getopt_long values of the shared long options: base + table index. */
#define SP_SAMPLING_OPT_BASE 0x1000

struct sp_sampling_opts {
	uint32_t hz;			/* -F, prime */
	bool kernel;			/* kernel stacks (--no-kernel clears) */
	bool idle;			/* also stream idle-CPU samples */
	bool trace_ctx;			/* read OTEP 4947 contexts (--no-trace-context clears) */
	uint32_t ringbuf_bytes;		/* power of two */
	uint32_t poll_ms;		/* drain period; 10 ms for 250 ms after an exec */
	size_t agg_budget;		/* bytes per aggregator */
	uint32_t agg_entries;		/* 0: derived from agg_budget by __finish */
	bool off_cpu;
	uint64_t off_cpu_min_us;
	uint32_t off_cpu_sample_n;	/* 1 in N; 0 = adaptive (off_cpu_rate) */
	uint32_t off_cpu_rate;		/* adaptive: captures per second per CPU */
	bool off_cpu_kthreads;
	uint32_t off_cpu_max_pending;	/* 0 = the sampler's default (8192) */
	uint32_t ctx_max_procs;		/* 0 = SP_TLS_DESCS_MAX */
	bool off_cpu_tuned;		/* parser state: an --off-cpu-* option was given */
};

/* Copies own (terminated by a zero entry) followed by the shared options
 * and a zero entry into out[cap].  Returns the entries written without the
 * terminator, or -ENOSPC. */
int sp_sampling_opts__longopts(const struct option *own, struct option *out, size_t cap);

/* Takes one getopt_long result: 1 when c is not a shared option, 0 when
 * parsed into o, -EINVAL with a one-line message naming the option, the
 * value and what is expected. */
int sp_sampling_opts__parse(struct sp_sampling_opts *o, int c, const char *arg, char *msg,
			    size_t msg_len);

/* After the last option: refuses --off-cpu-* without --off-cpu and
 * derives agg_entries when 0 (one per 512 bytes of budget, 1024..65536).
 * 0 or -EINVAL with msg. */
int sp_sampling_opts__finish(struct sp_sampling_opts *o, char *msg, size_t msg_len);

/* The shared options' help lines, with the command's defaults. */
void sp_sampling_opts__usage(FILE *f, const struct sp_sampling_opts *defaults);

/* The entry cap that follows a budget when --agg-entries is not given. */
uint32_t sp_sampling_opts__default_entries(size_t agg_budget);

#endif
