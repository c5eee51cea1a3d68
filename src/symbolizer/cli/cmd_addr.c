// SPDX-License-Identifier: MIT
/*
 * cmd_addr.c - `spanprof-symbolizer addr -e ELF [ADDR...]`: resolve ELF
 * virtual addresses (file offsets with --offset) and print them like
 * `llvm-symbolizer --inlining`: function, then file:line:column, inlined
 * callees first, a blank line after each address ("??" when unknown).
 * Without ADDR, one address per line of stdin, each answered at once when
 * stdin is a pipe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/cli/privs.h"

enum { OPT_OFFSET = SP_OPT_CMD };

struct addr_opts {
	struct sp_common_opts c;
	const char *elf;
	bool is_offset;
	char **addrs;
	int n_addrs;
};

static const struct sp_cli_opt addr_options[] = {
	{ "exe", required_argument, 'e', "ELF", "the ELF file the addresses belong to" },
	{ "offset", no_argument, OPT_OFFSET, NULL,
	  "the addresses are file offsets, not virtual addresses" },
	{ NULL, 0, 0, NULL, NULL },
};

static int parse(int argc, char **argv, const struct sp_cmd *const *all, struct addr_opts *o)
{
	struct sp_cli p;
	int c;

	memset(o, 0, sizeof(*o));
	sp_cli__begin(&p, &sp_cmd_addr, all);
	while ((c = sp_cli__next(&p, argc, argv, &o->c)) != SP_CLI_END) {
		switch (c) {
		case SP_CLI_HELP:
		case SP_CLI_USAGE:
			return c;
		case 'e':
			o->elf = optarg;
			break;
		case OPT_OFFSET:
			o->is_offset = true;
			break;
		default:	/* in the table, not handled: a bug */
			return sp_cli__bad(&p, "option %d not handled", c);
		}
	}
	if (!o->elf)
		return sp_cli__bad(&p, "needs -e ELF");
	o->addrs = argv + optind;
	o->n_addrs = argc - optind;
	return 0;
}

static void print_frames(const struct sp_frames *fr, int rc)
{
	if (rc || !fr->n) {
		fputs("??\n??:0:0\n\n", stdout);
		return;
	}
	for (uint8_t i = 0; i < fr->n; i++)
		printf("%s\n%s:%" PRId64 ":%" PRId64 "\n",
		       fr->f[i].function ? fr->f[i].function : "??",
		       fr->f[i].file ? fr->f[i].file : "??", fr->f[i].line,
		       fr->f[i].column);
	fputc('\n', stdout);
}

static int addr_one(const struct addr_opts *o, struct sp_sym_ctx *x, const char *id,
		    const char *s)
{
	struct sp_frames fr;
	char *end;
	uint64_t a;
	int rc;

	errno = 0;
	a = strtoull(s, &end, 0);
	if (errno || end == s) {
		fputs("??\n??:0:0\n\n", stdout);
		return 0;
	}
	rc = o->is_offset ? sp_resolver__resolve(x->res, id, o->elf, a, &fr)
			  : sp_resolver__resolve_vaddr(x->res, id, o->elf, a, &fr);
	if (rc == -ENOMEM)
		return rc;
	print_frames(&fr, rc);
	return 0;
}

static int run(int argc, char **argv, const struct sp_cmd *const *all)
{
	char id[SP_BUILDID_MAX_HEX + 1], line[256];
	struct sp_sym_ctx x = { 0 };
	struct addr_opts o;
	int err;

	err = parse(argc, argv, all, &o);
	if (err)
		return err == SP_CLI_HELP ? 0 : SP_CLI_EXIT_USAGE;
	err = sp_privs__drop(&o.c);
	if (err)
		return 1;
	sp_privs__debuginfod_cache(&o.c);
	err = sp_buildid__read_file(o.elf, id, sizeof(id));
	if (err) {
		fprintf(stderr, SP_CLI_PROG ": %s: no GNU build id (%s)\n", o.elf,
			strerror(-err));
		return 1;
	}
	err = sp_sym_ctx__open(&x, &o.c);
	if (err)
		goto out;
	if (o.n_addrs) {
		for (int i = 0; i < o.n_addrs && !err; i++)
			err = addr_one(&o, &x, id, o.addrs[i]);
	} else {
		struct stat st;
		/* answer each line at once when driven through a pipe (as
		 * llvm-symbolizer is); a file on stdin needs no flushing */
		bool flush = fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode);

		while (!err && fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\r\n")] = '\0';
			err = addr_one(&o, &x, id, line);
			if (flush)
				fflush(stdout);
		}
	}
	if (!o.c.quiet)
		sp_sym_ctx__print_stats(&x, NULL);
out:
	sp_sym_ctx__close(&x);
	return err ? 1 : 0;
}

const struct sp_cmd sp_cmd_addr = {
	.name = "addr",
	.operands = "-e ELF [ADDR...]",
	.summary = "resolve addresses of one ELF file like llvm-symbolizer --inlining",
	.about = "  Reads one address per line from stdin when no ADDR is given.\n",
	.opts = addr_options,
	.groups = SP_OPTG_DEBUGINFO | SP_OPTG_CACHE | SP_OPTG_PRIVS,
	.run = run,
};
