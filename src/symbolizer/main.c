// SPDX-License-Identifier: MIT
/*
 * main.c - spanprof-symbolizer: symbolize profiles by build id and print
 * the reports people read.  The command table; each command lives in
 * cli/cmd_<name>.c with its own options and parser (cli/cli.h).
 *
 *   spanprof-symbolizer COMMAND [options]      COMMAND --help for its own
 *   spanprof-symbolizer help [COMMAND]
 *
 * Contract:
 *   - Privileges: the symbolizer parses untrusted data (profiles, ELF,
 *     DWARF, debuginfod answers) and never needs privileges.  Started as
 *     root (the collector runs it as a child), a command first reads its
 *     input and opens its outputs, then drops to --user (cli/privs.h);
 *     --allow-root keeps root.
 *   - Kernel symbol snapshots are loaded before privileges are dropped,
 *     like the input (cli/context.h).
 *   - An option a command does not take is refused in one line that names
 *     the option and the command.
 *   - Exit status: 0 success, 1 runtime failure, 2 usage error (lookup: 3
 *     when a build id was not found).
 */
#include <stdio.h>
#include <string.h>

#include "symbolizer/cli/cmds.h"
#include "symbolizer/resolve.h"

/* libstdc++'s demangler; the binary links -lstdc++ for it alone. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

static const struct sp_cmd *const cmds[] = {
	&sp_cmd_file, &sp_cmd_report, &sp_cmd_addr, &sp_cmd_lookup, &sp_cmd_serve,
	NULL,
};

static const struct sp_cmd *find_cmd(const char *name)
{
	for (const struct sp_cmd *const *c = cmds; *c; c++)
		if (!strcmp((*c)->name, name))
			return *c;
	return NULL;
}

static void overview(FILE *f)
{
	fputs("usage: " SP_CLI_PROG " COMMAND [options]\n", f);
	for (const struct sp_cmd *const *c = cmds; *c; c++)
		fprintf(f, "  %-8s %s\n", (*c)->name, (*c)->summary);
	fputs(SP_CLI_PROG " COMMAND --help (or help COMMAND) lists its options\n", f);
}

int main(int argc, char **argv)
{
	const struct sp_cmd *cmd;

	if (argc < 2) {
		overview(stderr);
		return SP_CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2 && !strcmp(argv[1], "help") && (cmd = find_cmd(argv[2]))) {
			sp_cli__usage(cmd, stdout);
			return 0;
		}
		overview(stdout);
		return argc > 2 ? SP_CLI_EXIT_USAGE : 0;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		fprintf(stderr, SP_CLI_PROG ": unknown command '%s'; commands:", argv[1]);
		for (const struct sp_cmd *const *c = cmds; *c; c++)
			fprintf(stderr, " %s", (*c)->name);
		fputs(" (see " SP_CLI_PROG " --help)\n", stderr);
		return SP_CLI_EXIT_USAGE;
	}
	sp_resolver__set_demangler(__cxa_demangle);
	return sp_cli__main(cmd, cmds, argc - 1, argv + 1);
}
