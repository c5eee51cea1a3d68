/* SPDX-License-Identifier: MIT */
/*
 * sampling_opts.c - see sampling_opts.h.  The table below is the one place
 * a shared option is defined: its name, how its value is checked, the
 * error text, and its help line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/pipeline/cli.h"
#include "collector/pipeline/sampling_opts.h"
#include "collector/unwind/unwind_cli.h"
#include "collector/unwind/unwinder.h"
#include "spanprof/abi.h"

enum kind {
	K_FREQ,		/* uint32_t, prime (sp_cli__parse_freq) */
	K_SET,		/* bool, no argument: true */
	K_CLEAR,	/* bool, no argument: false */
	K_U32,		/* uint32_t in [min, max] */
	K_U64,		/* uint64_t in [min, max] */
	K_SIZE,		/* size_t bytes in [min, max] */
	K_POW2,		/* uint32_t bytes, a power of two in [min, max] */
	K_EVENT,	/* perf's -e: only the event sampled (cpu-clock) */
	K_CPUS,		/* uint64_t[SP_CLI_CPU_WORDS], perf's CPU list; sets cpu_filter */
	K_UNWIND,	/* bool unwind_fp from dwarf|fp (unwind_cli.h) */
	K_CALL_GRAPH,	/* bool unwind_fp from perf's fp|dwarf[,SIZE] */
	K_BUDGET,	/* uint64_t bytes with k/m/g (sp_unwinder__parse_budget) */
	K_WHEN,		/* uint32_t SP_UNWIND_BUILD_* from eager|lazy */
	K_NOOP,		/* accepted, nothing to set (perf's -g: always on) */
};

enum {
	F_OFF_CPU = 1,		/* an --off-cpu-* option: needs --off-cpu */
	F_ADAPTIVE = 2,		/* chooses adaptive off-CPU sampling (sample_n = 0) */
};

struct opt_def {
	const char *name;
	char short_name;	/* 0: long only */
	const char *arg;	/* argument name in --help; NULL: a flag */
	enum kind kind;
	size_t off;		/* of the field in struct sp_sampling_opts */
	unsigned long long min, max;
	/* After "--NAME VALUE: expected ": a printf format given (min, max),
	 * both unsigned long long, which it may use or not. */
	const char *expect;
	const char *help;	/* "\n" continues on the next help line */
	const char *zero;	/* text in the parentheses when the default is 0 */
	unsigned flags;
};

#define F(field) offsetof(struct sp_sampling_opts, field)

static const struct opt_def defs[] = {
	{ "freq", 'F', "HZ", K_FREQ, F(hz), 0, 0, NULL,
	  "sampling frequency, must be prime", NULL, 0 },
	{ "event", 'e', "EVENT", K_EVENT, 0, 0, 0, NULL,
	  "cpu-clock only (perf's name for the timer sampled\n"
	  "at -F HZ); off-CPU waits: --off-cpu", NULL, 0 },
	{ "cpu", 'C', "CPUS", K_CPUS, F(cpus), 0, 0, NULL,
	  "sample only these CPUs, perf's list syntax (0,2-3)", NULL, 0 },
	{ "no-kernel", 0, NULL, K_CLEAR, F(kernel), 0, 0, NULL,
	  "user stacks only", NULL, 0 },
	{ "idle", 0, NULL, K_SET, F(idle), 0, 0, NULL,
	  "also write samples of idle CPUs (counted either way)", NULL, 0 },
	{ "no-trace-context", 0, NULL, K_CLEAR, F(trace_ctx), 0, 0, NULL,
	  "do not read the threads' trace context (OTEP 4947)\n"
	  "nor Go goroutines' pprof labels", NULL, 0 },
	{ "no-go-labels", 0, NULL, K_SET, F(no_go_labels), 0, 0, NULL,
	  "do not read Go goroutines' pprof labels", NULL, 0 },
	{ "no-jit", 0, NULL, K_CLEAR, F(jit), 0, 0, NULL,
	  "do not copy JIT perf maps (/tmp/perf-PID.map) or\n"
	  "jitdumps (jit-PID.dump) for the symbolizer", NULL, 0 },
	{ "no-process-env", 0, NULL, K_SET, F(no_process_env), 0, 0, NULL,
	  "do not read the processes' OTEL_SERVICE_NAME and\n"
	  "OTEL_RESOURCE_ATTRIBUTES (/proc/PID/environ)", NULL, 0 },
	{ "off-cpu", 0, NULL, K_SET, F(off_cpu), 0, 0, NULL,
	  "also record off-CPU waits (sleep, locks, I/O, run\n"
	  "queue) with stacks, trace context and blocked time", NULL, 0 },
	{ "off-cpu-min-us", 0, "N", K_U64, F(off_cpu_min_us), 0, 3600000000ull,
	  "microseconds, %llu..%llu",
	  "waits shorter than N us are counted, not written", NULL, F_OFF_CPU },
	{ "off-cpu-sample", 0, "N", K_U32, F(off_cpu_sample_n), 1, SP_OFFCPU_MAX_N,
	  "N in %llu..%llu (capture 1 wait in N)",
	  "capture 1 wait in N at random (1 = every wait),\nweighted by N",
	  "default: adaptive, see --off-cpu-rate", F_OFF_CPU },
	{ "off-cpu-rate", 0, "R", K_U32, F(off_cpu_rate), 1, 1000000,
	  "captures per second per CPU, %llu..%llu",
	  "adaptive sampling: about R captured waits per second\n"
	  "per CPU, weighted by the sampling factor", NULL, F_OFF_CPU | F_ADAPTIVE },
	{ "off-cpu-kernel-threads", 0, NULL, K_SET, F(off_cpu_kthreads), 0, 0, NULL,
	  "kernel threads' waits too", NULL, F_OFF_CPU },
	{ "off-cpu-goroutines", 0, NULL, K_SET, F(off_cpu_goroutines), 0, 0, NULL,
	  "Go programs: also the waits of goroutines that park\n"
	  "(mutex, sleep, channels, network), with their pprof\n"
	  "labels; two uprobes per park in Go executables", NULL, F_OFF_CPU },
	{ "off-cpu-max-pending", 0, "N", K_U32, F(off_cpu_max_pending), 1, 1u << 20,
	  "%llu..%llu captured waits",
	  "captured waits open at once; more are counted as\n"
	  "\"state full\" and not captured", "default 8192", F_OFF_CPU },
	{ "ctx-max-procs", 0, "N", K_U32, F(ctx_max_procs), 1, SP_TLS_DESCS_MAX,
	  "%llu..%llu processes",
	  "processes whose trace context BPF can read (the\n"
	  "tls_descs map); more are counted as \"bpf_map_full\"",
	  "default and maximum 16384", 0 },
	{ "ringbuf-size", 0, "B", K_POW2, F(ringbuf_bytes), 4096, 1u << 30,
	  "a power of two from 4096 to 1 GiB",
	  "BPF ring buffer bytes, a power of two", NULL, 0 },
	{ "poll-ms", 0, "MS", K_U32, F(poll_ms), 1, 10000, "%llu..%llu",
	  "drain the ring buffer at least every MS ms (every\n"
	  "10 ms for 250 ms after a maps read: an exec, or\n"
	  "with -a an image's first sample, which wakes us)",
	  "default 100; -a and the agent: 500", 0 },
	{ "agg-budget", 0, "B", K_SIZE, F(agg_budget), 64u << 10, 1ull << 40,
	  "bytes, at least %llu", "aggregator memory budget in bytes", NULL, 0 },
	{ "agg-entries", 0, "N", K_U32, F(agg_entries), 1, 1u << 26, "%llu..%llu",
	  "aggregator entry cap", "default: budget / 512, 1024..65536", 0 },
	{ "timestamps", 0, NULL, K_SET, F(timestamps), 0, 0, NULL,
	  "one timestamp per event in the samples (OTLP; off:\n"
	  "one aggregated value per stack, thread and span)", NULL, 0 },
	{ "unwind", 0, "MODE", K_UNWIND, F(unwind_fp), 0, 0, NULL,
	  "user stacks: dwarf (.eh_frame tables, frame pointers\n"
	  "where a frame has none; the default) or fp (frame\n"
	  "pointers only)", NULL, 0 },
	{ "call-graph", 0, "MODE", K_CALL_GRAPH, F(unwind_fp), 0, 0, NULL,
	  "perf's spelling: fp = --unwind fp, dwarf[,SIZE] =\n"
	  "--unwind dwarf (SIZE ignored: no stack is copied)", NULL, 0 },
	{ NULL, 'g', NULL, K_NOOP, 0, 0, 0, NULL,
	  "perf's \"record call graphs\": always done (the\n"
	  "default unwinding, not perf's frame pointers)", NULL, 0 },
	{ "unwind-budget", 0, "B", K_BUDGET, F(unwind_budget), 0, 0, NULL,
	  "BPF memory for unwind tables and process ranges\n"
	  "(k/m/g; least recently used files are evicted)", NULL, 0 },
	{ "unwind-build", 0, "WHEN", K_WHEN, F(unwind_build), 0, 0, NULL,
	  "when a file's unwind table is built: lazy (once a\n"
	  "sample has a frame in it; the default with -a and\n"
	  "for the agent) or eager (when a process maps it; the\n"
	  "default for a command or -p/-t)", NULL, 0 },
	{ "exec-maps", 0, "WHEN", K_WHEN, F(exec_maps), 0, 0, NULL,
	  "when a new image's maps are read: lazy (at its\n"
	  "first sample: an image never sampled is not read;\n"
	  "the default with -a and for the agent) or eager (at\n"
	  "its exec event; the default for a command, -p, -t)", NULL, 0 },
	{ "unwind-cpu", 0, "PCT", K_U32, F(unwind_cpu_pct), 1, 100, "%llu..%llu percent",
	  "CPU the unwind table builder thread may use, percent\n"
	  "of one CPU over time (a 1 s burst at start)", "default 25", 0 },
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))
/* getopt_long values of the shared long options: base + table index,
 * above any command's own (which are below 256 or just above). */
#define OPT_BASE 0x1000

_Static_assert(SP_TLS_DESCS_MAX == 16384, "ctx-max-procs help names the maximum");

static const struct opt_def *def_of(int c)
{
	if (c >= OPT_BASE && c < OPT_BASE + (int)N_DEFS)
		return &defs[c - OPT_BASE];
	for (size_t i = 0; i < N_DEFS; i++)
		if (defs[i].short_name && defs[i].short_name == c)
			return &defs[i];
	return NULL;
}

/*
 * perf's -e.  spanprof samples one event: the CPU-clock software timer in
 * frequency mode (bpf_sampler.c), which perf calls cpu-clock (perf list:
 * "cpu-clock [Software event]"; also the event perf falls back to where
 * there is no PMU, as in VMs).  Every other event -- hardware counters
 * (cycles, instructions), task-clock, tracepoints -- would sample
 * something else under the same name, so it is refused, naming the fix.
 */
static int parse_event(const char *arg, char *msg, size_t msg_len)
{
	if (!strcmp(arg, "cpu-clock"))
		return 0;
	if (strstr(arg, "sched_switch") || strstr(arg, "sched:"))
		return sp_cli__refuse(msg, msg_len, "-e %s: spanprof samples only cpu-clock; "
				      "for off-CPU waits use --off-cpu", arg);
	return sp_cli__refuse(msg, msg_len, "-e %s: spanprof samples only cpu-clock (a timer "
			      "at -F HZ); use -e cpu-clock or no -e, or perf record -e %s", arg,
			      arg);
}

/* perf's -C list; every CPU in it must be online now. */
static int parse_cpus(const char *arg, uint64_t *mask, char *msg, size_t msg_len)
{
	uint64_t online[SP_CLI_CPU_WORDS];
	uint32_t n = 0, n_online = 0;
	char list[128];
	FILE *f;

	if (sp_cli__parse_cpu_list(arg, mask, &n))
		return sp_cli__refuse(msg, msg_len, "-C %s: expected a CPU list such as 0,2-3 "
				      "(CPUs below %d)", arg, SP_CLI_MAX_CPUS);
	if (sp_cli__online_cpus(online, &n_online))
		return sp_cli__refuse(msg, msg_len, "-C %s: cannot read the online CPUs from "
				      "/sys/devices/system/cpu/online", arg);
	for (uint32_t c = 0; c < n; c++) {
		if (!sp_cli__cpu_isset(mask, c) || sp_cli__cpu_isset(online, c))
			continue;
		list[0] = 0;
		f = fopen("/sys/devices/system/cpu/online", "re");
		if (f) {
			if (!fgets(list, sizeof(list), f))
				list[0] = 0;
			fclose(f);
		}
		list[strcspn(list, "\n")] = 0;
		return sp_cli__refuse(msg, msg_len, "-C %s: CPU %u is not online (online: %s)",
				      arg, c, list[0] ? list : "?");
	}
	return 0;
}

/* One getopt_long result: 1 when c is not a shared option, 0 when parsed
 * into o, -EINVAL with msg. */
static int parse_one(struct sp_sampling_opts *o, int c, const char *arg, char *msg,
		     size_t msg_len)
{
	const struct opt_def *d = def_of(c);
	char *field;
	uint64_t v = 0;
	bool bad;

	if (!d)
		return 1;
	field = (char *)o + d->off;
	switch (d->kind) {
	case K_FREQ:
		if (sp_cli__parse_freq(arg, (uint32_t *)field, msg, msg_len))
			return -EINVAL;
		break;
	case K_SET:
	case K_CLEAR:
		*(bool *)field = d->kind == K_SET;
		break;
	case K_EVENT:
		return parse_event(arg, msg, msg_len);
	case K_CPUS:
		if (parse_cpus(arg, (uint64_t *)field, msg, msg_len))
			return -EINVAL;
		o->cpu_filter = true;
		break;
	case K_NOOP:
		break;
	case K_UNWIND:
	case K_CALL_GRAPH:
		if ((d->kind == K_UNWIND ? sp_unwind_cli__mode : sp_unwind_cli__call_graph)(
			    arg, (bool *)field, msg, msg_len))
			return -EINVAL;
		msg[0] = '\0';	/* a note (an ignored SIZE) is not an error */
		o->unwind_asked = true;
		break;
	case K_WHEN:
		if (arg && !strcmp(arg, "eager")) {
			*(uint32_t *)field = SP_UNWIND_BUILD_EAGER;
		} else if (arg && !strcmp(arg, "lazy")) {
			*(uint32_t *)field = SP_UNWIND_BUILD_LAZY;
		} else {
			snprintf(msg, msg_len, "--%s %s: expected eager or lazy", d->name,
				 arg ? arg : "");
			return -EINVAL;
		}
		break;
	case K_BUDGET:
		if (sp_unwinder__parse_budget(arg, (uint64_t *)field)) {
			snprintf(msg, msg_len, "--%s %s: expected bytes (k/m/g suffixes) from "
				 "256k to 1g", d->name, arg ? arg : "");
			return -EINVAL;
		}
		break;
	default:
		bad = sp_cli__parse_u64(arg, d->max, &v) || v < d->min ||
		      (d->kind == K_POW2 && (v & (v - 1)));
		if (bad) {
			int n = snprintf(msg, msg_len, "--%s %s: expected ", d->name,
					 arg ? arg : "");

			if (n >= 0 && (size_t)n < msg_len)
				snprintf(msg + n, msg_len - n, d->expect, d->min, d->max);
			return -EINVAL;
		}
		if (d->kind == K_U64)
			*(uint64_t *)field = v;
		else if (d->kind == K_SIZE)
			*(size_t *)field = v;
		else
			*(uint32_t *)field = (uint32_t)v;
	}
	if (d->flags & F_ADAPTIVE)
		o->off_cpu_sample_n = 0;
	if (d->flags & F_OFF_CPU)
		o->off_cpu_tuned = true;
	return 0;
}

uint32_t sp_sampling_opts__default_entries(size_t agg_budget)
{
	/* Entry headers and hash slots cost ~112 B per entry, so 1 per 512 B
	 * of budget keeps them near a fifth of it (65536 at 64 MiB). */
	size_t n = agg_budget / 512;

	return n < 1024 ? 1024 : n > 65536 ? 65536 : (uint32_t)n;
}

static int finish(struct sp_sampling_opts *o, char *msg, size_t msg_len)
{
	if (o->cpu_filter && o->off_cpu) {
		/* A wait starts on one CPU and ends on another: -C has no
		 * clear meaning for it, so the two are not combined. */
		snprintf(msg, msg_len, "-C restricts on-CPU sampling only: drop --off-cpu or -C");
		return -EINVAL;
	}
	if (o->off_cpu_tuned && !o->off_cpu) {
		snprintf(msg, msg_len, "--off-cpu-* options need --off-cpu");
		return -EINVAL;
	}
	if (!o->agg_entries)
		o->agg_entries = sp_sampling_opts__default_entries(o->agg_budget);
	return 0;
}

/* getopt's tables: the command's own options, then the shared ones. */
struct tables {
	struct option longopts[64];
	char shortopts[64];
};

static int merge(const struct sp_command_opts *cmd, struct tables *t)
{
	const size_t cap = sizeof(t->longopts) / sizeof(t->longopts[0]);
	size_t n = 0, len = 1, own;
	int w;

	/* "+": stop at the first operand (record's "-- COMMAND"); h: help. */
	t->shortopts[0] = '+';
	t->shortopts[len++] = 'h';
	for (size_t i = 0; i < N_DEFS; i++)
		if (defs[i].short_name) {
			t->shortopts[len++] = defs[i].short_name;
			if (defs[i].arg)
				t->shortopts[len++] = ':';
		}
	w = snprintf(t->shortopts + len, sizeof(t->shortopts) - len, "%s",
		     cmd->short_opts ? cmd->short_opts : "");
	if (w < 0 || (size_t)w >= sizeof(t->shortopts) - len)
		return -ENOSPC;
	for (own = 0; cmd->long_opts && cmd->long_opts[own].name; own++) {
		if (n >= cap)
			return -ENOSPC;
		t->longopts[n++] = cmd->long_opts[own];
	}
	if (n + N_DEFS + 2 > cap)
		return -ENOSPC;
	t->longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	for (size_t i = 0; i < N_DEFS; i++)
		if (defs[i].name)	/* NULL: a short option only (-g) */
			t->longopts[n++] = (struct option){ defs[i].name,
							    defs[i].arg ? required_argument
									: no_argument,
							    NULL, OPT_BASE + (int)i };
	t->longopts[n] = (struct option){ 0 };
	return 0;
}

int sp_sampling_opts__parse_argv(const struct sp_command_opts *cmd, void *ctx, int argc,
				 char **argv, struct sp_sampling_opts *o, char *msg,
				 size_t msg_len)
{
	struct tables t;
	int c, rc;

	if (merge(cmd, &t)) {
		snprintf(msg, msg_len, "internal error: %s's option tables are too large",
			 cmd->name);
		return -EINVAL;
	}
	optind = 1;
	opterr = 0;	/* one message of our own, naming the option */
	while ((c = getopt_long(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
		if (c == '?') {
			snprintf(msg, msg_len, "unknown option or missing value: %s; see spanprof "
				 "%s --help", argv[optind - 1], cmd->name);
			return -EINVAL;
		}
		if (c == 'h') {
			cmd->usage(stdout);
			exit(0);
		}
		rc = parse_one(o, c, optarg, msg, msg_len);
		if (rc > 0)
			rc = cmd->own(c, optarg, ctx, msg, msg_len);
		if (rc)
			return -EINVAL;
	}
	if (finish(o, msg, msg_len))
		return -EINVAL;
	return optind;
}

static void show_bytes(char *buf, size_t len, unsigned long long v)
{
	if (v && v % (1u << 20) == 0)
		snprintf(buf, len, "%llu MiB", v >> 20);
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%llu KiB", v >> 10);
	else
		snprintf(buf, len, "%llu", v);
}

/* "default X" for d's field in defaults, or "" for flags. */
static void show_default(const struct opt_def *d, const struct sp_sampling_opts *defaults,
			 char *buf, size_t len)
{
	const char *field = (const char *)defaults + d->off;
	unsigned long long v;

	buf[0] = 0;
	switch (d->kind) {
	case K_SET:
	case K_CLEAR:
	case K_EVENT:
	case K_CPUS:
	case K_NOOP:
	case K_CALL_GRAPH:
		return;
	case K_UNWIND:
		snprintf(buf, len, "default %s", *(const bool *)field ? "fp" : "dwarf");
		return;
	case K_WHEN:
		return;	/* the help line says what the default depends on */
	case K_BUDGET:
		v = *(const uint64_t *)field ? *(const uint64_t *)field : SP_UNWINDER_DEFAULT_BUDGET;
		show_bytes(buf + 8, len - 8, v);
		memcpy(buf, "default ", 8);
		return;
	case K_U64:
		v = *(const uint64_t *)field;
		break;
	case K_SIZE:
		v = *(const size_t *)field;
		break;
	default:
		v = *(const uint32_t *)field;
	}
	if (!v && d->zero) {
		snprintf(buf, len, "%s", d->zero);
	} else if (d->kind == K_SIZE || d->kind == K_POW2) {
		char b[32];

		show_bytes(b, sizeof(b), v);
		snprintf(buf, len, "default %s", b);
	} else {
		snprintf(buf, len, "default %llu", v);
	}
}

#define HELP_COL 28

void sp_sampling_opts__usage(FILE *f, const struct sp_sampling_opts *defaults)
{
	for (size_t i = 0; i < N_DEFS; i++) {
		const struct opt_def *d = &defs[i];
		char left[64], dflt[64];
		const char *h = d->help, *nl;
		int n;

		if (d->short_name && !d->name)
			n = snprintf(left, sizeof(left), "  -%c", d->short_name);
		else if (d->short_name)
			n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", d->short_name, d->name,
				     d->arg ? " " : "", d->arg ? d->arg : "");
		else
			n = snprintf(left, sizeof(left), "      --%s%s%s", d->name,
				     d->arg ? " " : "", d->arg ? d->arg : "");
		show_default(d, defaults, dflt, sizeof(dflt));
		if (n >= HELP_COL - 1)
			fprintf(f, "%s\n%*s", left, HELP_COL, "");
		else
			fprintf(f, "%-*s", HELP_COL, left);
		while ((nl = strchr(h, '\n'))) {
			fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
			h = nl + 1;
		}
		if (!dflt[0])
			fprintf(f, "%s\n", h);
		else if (HELP_COL + strlen(h) + strlen(dflt) + 3 > 80)
			fprintf(f, "%s\n%*s(%s)\n", h, HELP_COL, "", dflt);
		else
			fprintf(f, "%s (%s)\n", h, dflt);
	}
}
