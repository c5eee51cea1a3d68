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
 * Use (getopt_long underneath, the command's own options first):
 *   struct sp_optparse op;
 *   sp_optparse__init(&op, "ap:", own_longopts);
 *   while ((c = sp_optparse__next(&op, argc, argv, &o, msg, len)) != -1)
 *     SP_OPT_REFUSED: a shared option's value is refused, msg holds
 *       "--NAME VALUE: expected ..."; else the command's own option
 *       (or '?' for an unknown one): shared ones never come back
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

#define SP_OPT_REFUSED (-2)	/* sp_optparse__next: a bad value, see msg */

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

struct sp_optparse {
	struct option longopts[64];	/* the command's own, then the shared ones */
	char shortopts[64];
};

/* Merges the command's short options and own[] (terminated by a zero
 * entry) with the shared ones and resets getopt (optind = 1; opterr = 0:
 * the command words its own message for an unknown option).  0, or -ENOSPC
 * when the tables do not fit. */
int sp_optparse__init(struct sp_optparse *p, const char *own_short, const struct option *own);

/* The next option that is the command's own (getopt_long's value; '?' for
 * an unknown option or a missing value), -1 after the last, or
 * SP_OPT_REFUSED with msg.  Shared options are parsed into o on the way. */
int sp_optparse__next(struct sp_optparse *p, int argc, char **argv, struct sp_sampling_opts *o,
		      char *msg, size_t msg_len);

/* Takes one getopt_long result (what __next does for each): 1 when c is
 * not a shared option, 0 when parsed into o, -EINVAL with a one-line
 * message naming the option, the value and what is expected. */
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
