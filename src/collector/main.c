/* SPDX-License-Identifier: MIT */
/*
 * main.c - the spanprof command: dispatches to its subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "collector/agent/agent.h"
#include "collector/record/record.h"

#define SPANPROF_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
"usage: spanprof <command> [options]\n"
"\n"
"commands:\n"
"  record     sample stacks (and trace context) into a pprof or OTLP file\n"
"  agent      profile continuously, export OTLP Profiles every interval\n"
"  version    print the version\n"
"\n"
"spanprof <command> --help shows a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return sp_record__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return sp_agent__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("spanprof %s\n", SPANPROF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "spanprof: unknown command '%s'; see spanprof --help\n", argv[1]);
	return 2;
}
