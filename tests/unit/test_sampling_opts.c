// SPDX-License-Identifier: MIT
/*
 * test_sampling_opts.c - the shared sampling options
 * (collector/pipeline/sampling_opts.h) through getopt_long, as the
 * commands use them.
 *
 * The command's own options reach its handler (and its refusals are
 * returned), the shared ones never do; parsing stops at the first operand;
 * unknown options and missing values are refused in one wording;
 * every shared option sets its field; bad values are refused with the
 * exact one-line texts the commands print; --off-cpu-rate returns to
 * adaptive sampling; --off-cpu-* without --off-cpu is refused; the entry
 * cap follows the budget when not given; --help lists every shared option
 * with the caller's defaults and fits 80 columns; tables too large are
 * refused; the user-stack options and perf's spellings of them map as
 * unwind_cli.h says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/pipeline/cli.h"
#include "collector/pipeline/sampling_opts.h"

static const struct sp_sampling_opts defaults = {
	.hz = 97, .kernel = true, .trace_ctx = true, .jit = true, .ringbuf_bytes = 4u << 20,
	.poll_ms = 100, .agg_budget = 64u << 20, .off_cpu_min_us = 10, .off_cpu_rate = 1000,
};

static const struct option own[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "mine", no_argument, NULL, 300 },
	{ 0 },
};

struct own_seen {
	int n;		/* the command's own options the handler saw */
	int refuse;	/* the handler refuses this option */
};

static int own_opt(int c, const char *arg, void *ctx, char *msg, size_t len)
{
	struct own_seen *seen = ctx;

	(void)arg;
	assert_true(c == 'o' || c == 300);
	seen->n++;
	if (c == seen->refuse)
		return sp_cli__refuse(msg, len, "--mine: refused by the command");
	return 0;
}

static const struct sp_command_opts cmd = { "cmd", "o:", own, own_opt, NULL };

/* Parses argv (NULL-terminated, argv[0] the command) as a command does:
 * the index of the first operand, or -EINVAL with msg. */
static int parse_seen(const char *const *args, struct sp_sampling_opts *o, char *msg,
		      size_t len, struct own_seen *seen)
{
	char *argv[32];
	int argc = 0;

	while (args[argc]) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	*o = defaults;
	return sp_sampling_opts__parse_argv(&cmd, seen, argc, argv, o, msg, len);
}

static int parse(const char *const *args, struct sp_sampling_opts *o, char *msg, size_t len,
		 int *own_seen)
{
	struct own_seen seen = { 0 };
	int rc = parse_seen(args, o, msg, len, &seen);

	*own_seen = seen.n;
	return rc < 0 ? rc : 0;
}

static void test_every_option(void **state)
{
	const char *const args[] = {
		"cmd", "-o", "x", "--mine", "-F", "997", "--no-kernel", "--idle",
		"--no-trace-context", "--no-jit", "--no-process-env", "--off-cpu", "--off-cpu-min-us",
		"5", "--off-cpu-sample", "3",
		"--off-cpu-kernel-threads", "--off-cpu-max-pending", "4", "--ctx-max-procs", "8",
		"--ringbuf-size", "65536", "--poll-ms", "7", "--agg-budget", "1048576",
		"--agg-entries", "99", NULL,
	};
	struct sp_sampling_opts o;
	char msg[256] = "";
	int own_seen;

	(void)state;
	assert_int_equal(parse(args, &o, msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(own_seen, 2);
	assert_int_equal(o.hz, 997);
	assert_false(o.kernel);
	assert_true(o.idle);
	assert_false(o.trace_ctx);
	assert_false(o.jit);
	assert_true(o.no_process_env);
	assert_true(o.off_cpu);
	assert_int_equal(o.off_cpu_min_us, 5);
	assert_int_equal(o.off_cpu_sample_n, 3);
	assert_int_equal(o.off_cpu_rate, 1000);
	assert_true(o.off_cpu_kthreads);
	assert_int_equal(o.off_cpu_max_pending, 4);
	assert_int_equal(o.ctx_max_procs, 8);
	assert_int_equal(o.ringbuf_bytes, 65536);
	assert_int_equal(o.poll_ms, 7);
	assert_int_equal(o.agg_budget, 1048576);
	assert_int_equal(o.agg_entries, 99);
}

static void test_operands_unknown_refused(void **state)
{
	const char *const ops[] = { "cmd", "-F", "97", "--", "sh", "-c", "x", NULL };
	const char *const first[] = { "cmd", "sh", "--idle", NULL };
	const char *const unknown[] = { "cmd", "--bogus", NULL };
	const char *const missing[] = { "cmd", "--poll-ms", NULL };
	const char *const mine[] = { "cmd", "--mine", NULL };
	struct own_seen seen = { 0 };
	struct sp_sampling_opts o;
	char msg[256];

	(void)state;
	assert_int_equal(parse_seen(ops, &o, msg, sizeof(msg), &seen), 4);	/* "sh" */
	assert_int_equal(parse_seen(first, &o, msg, sizeof(msg), &seen), 1);
	assert_false(o.idle);		/* after the first operand: the command's */
	assert_int_equal(parse_seen(unknown, &o, msg, sizeof(msg), &seen), -EINVAL);
	assert_string_equal(msg, "unknown option or missing value: --bogus; see spanprof cmd "
			    "--help");
	assert_int_equal(parse_seen(missing, &o, msg, sizeof(msg), &seen), -EINVAL);
	assert_string_equal(msg, "unknown option or missing value: --poll-ms; see spanprof cmd "
			    "--help");
	seen.refuse = 300;
	assert_int_equal(parse_seen(mine, &o, msg, sizeof(msg), &seen), -EINVAL);
	assert_string_equal(msg, "--mine: refused by the command");
}

static void test_defaults_and_derived(void **state)
{
	const char *const none[] = { "cmd", NULL };
	const char *const budget[] = { "cmd", "--agg-budget", "1048576", NULL };
	const char *const rate[] = { "cmd", "--off-cpu", "--off-cpu-sample", "3",
				     "--off-cpu-rate", "50", NULL };
	struct sp_sampling_opts o;
	char msg[256];
	int own_seen;

	(void)state;
	assert_int_equal(parse(none, &o, msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.hz, 97);
	assert_true(o.kernel && o.trace_ctx && o.jit && !o.idle && !o.off_cpu);
	assert_int_equal(o.agg_entries, 65536);		/* 64 MiB / 512 */
	assert_int_equal(parse(budget, &o, msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.agg_entries, 2048);
	assert_int_equal(sp_sampling_opts__default_entries(1 << 16), 1024);
	assert_int_equal(sp_sampling_opts__default_entries(1ull << 40), 65536);
	/* the last of --off-cpu-sample / --off-cpu-rate wins */
	assert_int_equal(parse(rate, &o, msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.off_cpu_sample_n, 0);
	assert_int_equal(o.off_cpu_rate, 50);
}

static void expect_refused(const char *const *args, const char *text)
{
	struct sp_sampling_opts o;
	char msg[256] = "";
	int own_seen;

	assert_int_equal(parse(args, &o, msg, sizeof(msg), &own_seen), -EINVAL);
	if (strcmp(msg, text))
		fail_msg("%s %s: got \"%s\", want \"%s\"", args[1], args[2] ? args[2] : "", msg,
			 text);
}

static void test_error_texts(void **state)
{
	(void)state;
	expect_refused((const char *const[]){ "c", "-F", "100", NULL },
		       "-F 100 is not prime: sampling could phase-lock with periodic work; "
		       "use 97 or 101");
	expect_refused((const char *const[]){ "c", "-F", "abc", NULL },
		       "-F abc: expected a frequency in Hz (1..100000)");
	expect_refused((const char *const[]){ "c", "--ringbuf-size", "12288", NULL },
		       "--ringbuf-size 12288: expected a power of two from 4096 to 1 GiB");
	expect_refused((const char *const[]){ "c", "--ringbuf-size", "2048", NULL },
		       "--ringbuf-size 2048: expected a power of two from 4096 to 1 GiB");
	expect_refused((const char *const[]){ "c", "--poll-ms", "0", NULL },
		       "--poll-ms 0: expected 1..10000");
	expect_refused((const char *const[]){ "c", "--agg-budget", "-1", NULL },
		       "--agg-budget -1: expected bytes, at least 65536");
	expect_refused((const char *const[]){ "c", "--agg-entries", "67108865", NULL },
		       "--agg-entries 67108865: expected 1..67108864");
	expect_refused((const char *const[]){ "c", "--off-cpu", "--off-cpu-min-us", "1e3", NULL },
		       "--off-cpu-min-us 1e3: expected microseconds, 0..3600000000");
	expect_refused((const char *const[]){ "c", "--off-cpu", "--off-cpu-sample", "65537",
					      NULL },
		       "--off-cpu-sample 65537: expected N in 1..65536 (capture 1 wait in N)");
	expect_refused((const char *const[]){ "c", "--off-cpu", "--off-cpu-rate", "0", NULL },
		       "--off-cpu-rate 0: expected captures per second per CPU, 1..1000000");
	expect_refused((const char *const[]){ "c", "--off-cpu", "--off-cpu-max-pending", "0",
					      NULL },
		       "--off-cpu-max-pending 0: expected 1..1048576 captured waits");
	expect_refused((const char *const[]){ "c", "--ctx-max-procs", "16385", NULL },
		       "--ctx-max-procs 16385: expected 1..16384 processes");
	expect_refused((const char *const[]){ "c", "--off-cpu-kernel-threads", NULL },
		       "--off-cpu-* options need --off-cpu");
}

/* perf's -e and -C: cpu-clock is the one event; CPU lists in perf's and
 * sysfs's syntax, bounded and strict. */
static void test_perf_spellings(void **state)
{
	const char *const ok[] = { "cmd", "-e", "cpu-clock", "-C", "0", NULL };
	uint64_t m[SP_CLI_CPU_WORDS];
	struct sp_sampling_opts o;
	char msg[256];
	uint32_t n = 0;
	int own_seen;

	(void)state;
	assert_int_equal(parse(ok, &o, msg, sizeof(msg), &own_seen), 0);
	assert_true(o.cpu_filter);
	assert_true(sp_cli__cpu_isset(o.cpus, 0));
	assert_false(sp_cli__cpu_isset(o.cpus, 1));
	assert_int_equal(sp_cli__parse_cpu_list("0,2-3,64", m, &n), 0);
	assert_int_equal(n, 65);
	assert_int_equal(m[0], 0xdu);
	assert_int_equal(m[1], 1u);
	assert_int_equal(sp_cli__parse_cpu_list("0-1\n", m, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(sp_cli__parse_cpu_list("4095", m, &n), 0);
	assert_true(sp_cli__cpu_isset(m, 4095));
	assert_false(sp_cli__cpu_isset(m, 4096));	/* out of range: not set */
	static const char *const bad[] = { "", "\n", "1-0", "-1", "1,", ",1", "1,,2", "1-",
					   "4096", "0-4096", "a", "1 2", "+1", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sp_cli__parse_cpu_list(bad[i], m, &n) != -EINVAL)
			fail_msg("CPU list \"%s\" was accepted", bad[i]);
	expect_refused((const char *const[]){ "c", "-e", "cycles", NULL },
		       "-e cycles: spanprof samples only cpu-clock (a timer at -F HZ); use -e "
		       "cpu-clock or no -e, or perf record -e cycles");
	expect_refused((const char *const[]){ "c", "-C", "2-1", NULL },
		       "-C 2-1: expected a CPU list such as 0,2-3 (CPUs below 4096)");
	expect_refused((const char *const[]){ "c", "-C", "0", "--off-cpu", NULL },
		       "-C restricts on-CPU sampling only: drop --off-cpu or -C");
}

/* --unwind, perf's -g and --call-graph, --unwind-budget, --unwind-cpu (unwind_cli.h). */
static void test_unwind_options(void **state)
{
	const char *const g[] = { "cmd", "-g", NULL };
	const char *const fp_then_g[] = { "cmd", "--unwind", "fp", "-g", NULL };
	const char *const cg_fp[] = { "cmd", "--call-graph", "fp", NULL };
	const char *const cg_dwarf[] = { "cmd", "--unwind", "fp", "--call-graph", "dwarf,8192", NULL };
	const char *const synonyms[] = { "cmd", "--unwind", "fp", "--unwind", "eh-frame", NULL };
	const char *const budget[] = { "cmd", "--unwind-budget", "512k", NULL };
	struct sp_sampling_opts o;
	char msg[256];
	int own_seen;

	(void)state;
	/* -g: call graphs are always taken; it keeps the default (.eh_frame) */
	assert_int_equal(parse(g, &o, msg, sizeof(msg), &own_seen), 0);
	assert_false(o.unwind_fp);
	assert_int_equal(o.unwind_budget, 0);	/* 0 = the default */
	assert_int_equal(parse(fp_then_g, &o, msg, sizeof(msg), &own_seen), 0);
	assert_true(o.unwind_fp);
	assert_int_equal(parse(cg_fp, &o, msg, sizeof(msg), &own_seen), 0);
	assert_true(o.unwind_fp);
	/* perf's stack size is accepted and ignored; the last option wins */
	assert_int_equal(parse(cg_dwarf, &o, msg, sizeof(msg), &own_seen), 0);
	assert_false(o.unwind_fp);
	assert_string_equal(msg, "");
	assert_int_equal(parse(synonyms, &o, msg, sizeof(msg), &own_seen), 0);
	assert_false(o.unwind_fp);
	assert_int_equal(parse(budget, &o, msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.unwind_budget, 512 << 10);
	expect_refused((const char *const[]){ "c", "--unwind", "lbr", NULL },
		       "--unwind lbr: expected dwarf (.eh_frame tables, the default) or fp "
		       "(frame pointers only)");
	expect_refused((const char *const[]){ "c", "--call-graph", "lbr", NULL },
		       "--call-graph lbr: not supported (it needs hardware branch records); use "
		       "dwarf (the default) or fp");
	expect_refused((const char *const[]){ "c", "--call-graph", "dwarfish", NULL },
		       "--call-graph dwarfish: expected fp or dwarf[,SIZE] (perf's spellings; the "
		       "same as --unwind fp|dwarf)");
	expect_refused((const char *const[]){ "c", "--unwind-budget", "100k", NULL },
		       "--unwind-budget 100k: expected bytes (k/m/g suffixes) from 256k to 1g");
	expect_refused((const char *const[]){ "c", "--unwind-budget", "2g", NULL },
		       "--unwind-budget 2g: expected bytes (k/m/g suffixes) from 256k to 1g");
	expect_refused((const char *const[]){ "c", "--unwind-budget", "64mb", NULL },
		       "--unwind-budget 64mb: expected bytes (k/m/g suffixes) from 256k to 1g");
	assert_int_equal(parse((const char *const[]){ "c", "--unwind-cpu", "10", NULL }, &o, msg,
			       sizeof(msg), &own_seen), 0);
	assert_int_equal(o.unwind_cpu_pct, 10);
	expect_refused((const char *const[]){ "c", "--unwind-cpu", "0", NULL },
		       "--unwind-cpu 0: expected 1..100 percent");
	/* --unwind-build: unset means "by what is recorded" (pipeline.c). */
	assert_int_equal(parse((const char *const[]){ "c", NULL }, &o, msg, sizeof(msg),
			       &own_seen), 0);
	assert_int_equal(o.unwind_build, SP_UNWIND_BUILD_DEFAULT);
	assert_int_equal(parse((const char *const[]){ "c", "--unwind-build", "lazy", NULL }, &o,
			       msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.unwind_build, SP_UNWIND_BUILD_LAZY);
	assert_int_equal(parse((const char *const[]){ "c", "--unwind-build", "eager", NULL }, &o,
			       msg, sizeof(msg), &own_seen), 0);
	assert_int_equal(o.unwind_build, SP_UNWIND_BUILD_EAGER);
	expect_refused((const char *const[]){ "c", "--unwind-build", "sometimes", NULL },
		       "--unwind-build sometimes: expected eager or lazy");
}

static void test_usage_and_table(void **state)
{
	static const char *const names[] = {
		"freq", "event", "cpu", "no-process-env", "no-kernel", "idle", "no-trace-context",
		"no-jit", "off-cpu", "off-cpu-min-us",
		"off-cpu-sample", "off-cpu-rate", "off-cpu-kernel-threads", "off-cpu-max-pending",
		"ctx-max-procs", "ringbuf-size", "poll-ms", "agg-budget", "agg-entries",
		"unwind", "call-graph", "unwind-budget",
	};
	struct option many[70];
	struct own_seen seen = { 0 };
	const struct sp_command_opts big = { "big", "", many, own_opt, NULL };
	struct sp_sampling_opts o = defaults;
	char *text = NULL, msg[256], *argv[] = { "big", NULL };
	size_t len = 0;
	FILE *f;

	(void)state;
	for (int i = 0; i < 60; i++)
		many[i] = (struct option){ "x", no_argument, NULL, 'x' };
	many[60] = (struct option){ 0 };
	assert_int_equal(sp_sampling_opts__parse_argv(&big, &seen, 1, argv, &o, msg, sizeof(msg)),
			 -EINVAL);
	assert_string_equal(msg, "internal error: big's option tables are too large");
	f = open_memstream(&text, &len);
	assert_non_null(f);
	sp_sampling_opts__usage(f, &defaults);
	fclose(f);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char name[64];

		snprintf(name, sizeof(name), "--%s", names[i]);
		if (!strstr(text, name))
			fail_msg("%s not in the help:\n%s", name, text);
	}
	assert_non_null(strstr(text, "(default 97)"));
	assert_non_null(strstr(text, "(default 64 MiB)"));
	assert_non_null(strstr(text, "(default 4 MiB)"));
	for (char *l = text; *l; l = strchr(l, '\n') + 1)
		assert_true(strchr(l, '\n') - l <= 80);	/* fits a terminal */
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_option),
		cmocka_unit_test(test_operands_unknown_refused),
		cmocka_unit_test(test_defaults_and_derived),
		cmocka_unit_test(test_error_texts),
		cmocka_unit_test(test_perf_spellings),
		cmocka_unit_test(test_unwind_options),
		cmocka_unit_test(test_usage_and_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
