/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the symbolizer's command line: what a command is (the entry of
 * main.c's command table), the option groups several commands share, and
 * a getopt_long loop that refuses what a command does not take.
 *
 * A command (cmd_<name>.c) is one struct sp_cmd: its options struct (its
 * struct sp_common_opts first), its own options in one table (struct
 * sp_cli_opt: getopt's fields, the help line, and where the value goes),
 * the groups it takes (SP_OPTG_*; -q/--quiet and -h/--help are in every
 * command), a check of the operands and of the whole, and run.
 * sp_cli__main parses argv into a zeroed options struct: a table row of
 * kind SP_CLI_FLAG, _STR or _U32 stores its value at its offset by
 * itself; a row of kind SP_CLI_OWN goes to the command's option(); the
 * group options land in the struct sp_common_opts.  Then check(), then
 * run() (its return is the exit status); --help exits 0 and a usage error
 * 2, before run.
 *
 * The loop under it, for a parser of its own: sp_cli__begin, then
 * sp_cli__next until SP_CLI_END.
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
	/* the groups of a command that symbolizes a profile file (file, report) */
	SP_OPTG_PROFILE_IN = SP_OPTG_DEBUGINFO | SP_OPTG_CACHE | SP_OPTG_KALLSYMS |
			     SP_OPTG_KALLSYMS_IN | SP_OPTG_PRIVS,
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

/* Where an own option's value goes. */
enum sp_cli_kind {
	SP_CLI_OWN = 0,		/* the command's option() handles it */
	SP_CLI_FLAG,		/* bool at off := true */
	SP_CLI_STR,		/* const char * at off := the value */
	SP_CLI_U32,		/* uint32_t at off := a whole number in [min, max] */
};

struct sp_cli_opt {
	const char *name;	/* long name; NULL ends a list */
	int has_arg;		/* no_argument or required_argument */
	int val;		/* a short option's letter, or SP_OPT_* */
	const char *arg;	/* the value's placeholder in help, or NULL */
	const char *help;	/* one line */
	enum sp_cli_kind kind;
	size_t off;		/* in the command's options struct */
	uint32_t min, max;	/* SP_CLI_U32 */
};

/* A row the command's option() handles (or a group's), and the end. */
#define SP_CLI_OPT(name, has_arg, val, arg, help) \
	{ name, has_arg, val, arg, help, SP_CLI_OWN, 0, 0, 0 }
#define SP_CLI_OPT_END { NULL, 0, 0, NULL, NULL, SP_CLI_OWN, 0, 0, 0 }

/* Table rows that store by themselves (T: the options struct; a compile
 * error unless the field has the kind's type). */
#define SP_CLI_FLAG_OPT(T, name, val, field, help) \
	{ name, no_argument, val, NULL, help, SP_CLI_FLAG, \
	  offsetof(T, field) + _Generic(((T *)0)->field, bool: 0), 0, 0 }
#define SP_CLI_STR_OPT(T, name, val, arg, field, help) \
	{ name, required_argument, val, arg, help, SP_CLI_STR, \
	  offsetof(T, field) + _Generic(((T *)0)->field, const char *: 0), 0, 0 }
#define SP_CLI_U32_OPT(T, name, val, arg, field, lo, hi, help) \
	{ name, required_argument, val, arg, help, SP_CLI_U32, \
	  offsetof(T, field) + _Generic(((T *)0)->field, uint32_t: 0), lo, hi }

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

struct sp_cli;

struct sp_cmd {
	const char *name;
	const char *operands;	/* "IN", "[ADDR...]", "" */
	const char *summary;	/* one line, for the overview */
	const char *about;	/* more lines for --help, or NULL */
	const struct sp_cli_opt *opts;	/* own options, ended by { NULL } */
	unsigned groups;	/* SP_OPTG_* */
	size_t opts_size;	/* its options struct; struct sp_common_opts first */
	void (*init)(void *o);	/* defaults other than zero, or NULL */
	/* An SP_CLI_OWN option's value (NULL for a flag): 0, or SP_CLI_USAGE
	 * from sp_cli__bad and the like.  NULL when the table has none. */
	int (*option)(struct sp_cli *p, int val, const char *arg, void *o);
	/* After the options: the operands argv[optind..argc) and the whole;
	 * 0 or SP_CLI_USAGE. */
	int (*check)(struct sp_cli *p, int argc, char **argv, void *o);
	int (*run)(void *o);	/* the exit status */
};

/* The command's options from argv (argv[0]: its name), then its run.
 * all: the command table (NULL ended), for refusals that name the command
 * an option belongs to.  Returns the exit status. */
int sp_cli__main(const struct sp_cmd *cmd, const struct sp_cmd *const *all, int argc,
		 char **argv);

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
