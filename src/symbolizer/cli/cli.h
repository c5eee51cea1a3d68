/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the symbolizer's command line: what a command is (the entry of
 * main.c's command table), the option groups several commands share, and
 * a getopt_long loop that refuses what a command does not take.
 *
 * A command (cmd_<name>.c) lists its own options (struct sp_cli_opt:
 * getopt's fields plus the help line) and the groups it takes (SP_OPTG_*;
 * -q/--quiet and -h/--help are in every command).  Its parser calls
 * sp_cli__next until SP_CLI_END and handles its own options' values; the
 * group options land in the struct sp_common_opts it passes.
 *
 * sp_cli__next returns:
 *   - one of the command's own options' val (its argument in optarg);
 *     group options are stored in *c and not returned;
 *   - SP_CLI_END when the options are done (operands: argv[optind..argc),
 *     GNU permutation, so options and operands mix);
 *   - SP_CLI_HELP after printing the command's usage on stdout (exit 0);
 *   - SP_CLI_USAGE after printing one line on stderr (exit 2): an option
 *     the command does not take, named with the command and, when it is
 *     one of theirs, the commands that take it; a missing value; a bad
 *     value of a group option.
 * sp_cli__operand: exactly one operand (the input file) into *out, else
 *   SP_CLI_USAGE.
 * sp_cli__bad / sp_cli__u32: the one-line message for a bad value or
 *   operand, "spanprof-symbolizer CMD: ...; see spanprof-symbolizer CMD
 *   --help"; they return SP_CLI_USAGE.
 *
 * Exit statuses of every command: 0 success, 1 runtime failure, 2 usage
 * error (lookup: 3 when a build id was not found).
 */
#ifndef SPANPROF_SYMBOLIZER_CLI_H
#define SPANPROF_SYMBOLIZER_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SP_CLI_PROG "spanprof-symbolizer"
#define SP_CLI_MAX_DIRS 16	/* per repeatable directory/file option */
#define SP_CLI_MAX_OPTS 48	/* own + group options of one command */

#define SP_CLI_EXIT_USAGE 2

enum {
	SP_CLI_END = -1,
	SP_CLI_HELP = -2,
	SP_CLI_USAGE = -3,
};

/* Option groups */
enum {
	SP_OPTG_DEBUGINFO = 1u << 0,	/* --debug-dir, --no-debuginfod */
	SP_OPTG_CACHE = 1u << 1,	/* --cache-entries, --unit-budget */
	SP_OPTG_KALLSYMS = 1u << 2,	/* --kallsyms, --kallsyms-dir, --store */
	SP_OPTG_KALLSYMS_IN = 1u << 3,	/* --no-kallsyms (IN.kallsyms.gz),
					 * --no-syms-dir (IN.syms/) */
	SP_OPTG_PRIVS = 1u << 4,	/* --allow-root, --user */
};

/* vals of the group options; a command's own long-only options start at
 * SP_OPT_CMD */
enum {
	SP_OPT_DEBUG_DIR = 256, SP_OPT_NO_DEBUGINFOD, SP_OPT_CACHE,
	SP_OPT_KALLSYMS, SP_OPT_KALLSYMS_DIR, SP_OPT_NO_KALLSYMS,
	SP_OPT_ALLOW_ROOT, SP_OPT_USER, SP_OPT_STORE, SP_OPT_NO_SYMS_DIR,
	SP_OPT_UNIT_BUDGET,
	SP_OPT_CMD = 512,
};

struct sp_cli_opt {
	const char *name;	/* long name; NULL ends a list */
	int has_arg;		/* no_argument or required_argument */
	int val;		/* a short option's letter, or SP_OPT_* */
	const char *arg;	/* the value's placeholder in help, or NULL */
	const char *help;	/* one line */
};

/* The group options' values, as one command received them. */
struct sp_common_opts {
	const char *dirs[SP_CLI_MAX_DIRS];	/* --debug-dir */
	size_t n_dirs;
	bool no_debuginfod;
	uint32_t cache_entries;			/* 0: the resolver's default */
	uint32_t unit_budget_mib;		/* 0: the resolver's default */
	const char *ks_files[SP_CLI_MAX_DIRS];	/* --kallsyms */
	size_t n_ks_files;
	const char *ks_dirs[SP_CLI_MAX_DIRS];	/* --kallsyms-dir */
	size_t n_ks_dirs;
	bool no_kallsyms;
	const char *stores[SP_CLI_MAX_DIRS];	/* --store */
	size_t n_stores;
	bool no_syms_dir;
	bool allow_root;
	const char *user;			/* NULL: nobody */
	bool quiet;
};

struct sp_cmd {
	const char *name;
	const char *operands;	/* "IN", "[ADDR...]", "" */
	const char *summary;	/* one line, for the overview */
	const char *about;	/* more lines for --help, or NULL */
	const struct sp_cli_opt *opts;	/* own options, ended by { NULL } */
	unsigned groups;	/* SP_OPTG_* */
	/* argv[0] is the command's name; all: the command table (NULL
	 * ended), for refusals that name the command an option belongs to */
	int (*run)(int argc, char **argv, const struct sp_cmd *const *all);
};

struct sp_cli {
	const struct sp_cmd *cmd;
	const struct sp_cmd *const *all;
	struct option longopts[SP_CLI_MAX_OPTS + 1];
	char shortopts[2 * SP_CLI_MAX_OPTS + 2];
};

void sp_cli__begin(struct sp_cli *p, const struct sp_cmd *cmd,
		   const struct sp_cmd *const *all);
int sp_cli__next(struct sp_cli *p, int argc, char **argv, struct sp_common_opts *c);
int sp_cli__operand(const struct sp_cli *p, int argc, char **argv, const char **out);

int sp_cli__bad(const struct sp_cli *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* arg as a decimal whole number in [min, max] into *out, else the message
 * "OPT ARG: want a whole number from MIN to MAX". */
int sp_cli__u32(const struct sp_cli *p, const char *opt, const char *arg,
		uint32_t min, uint32_t max, uint32_t *out);
/* arg as one of two words: *out = 0 for a, 1 for b, else the message
 * "OPT ARG: want A or B". */
int sp_cli__pick(const struct sp_cli *p, const char *opt, const char *arg, const char *a,
		 const char *b, int *out);

/* The command's --help text: usage line, about, its options with groups. */
void sp_cli__usage(const struct sp_cmd *cmd, FILE *f);

#endif /* SPANPROF_SYMBOLIZER_CLI_H */
