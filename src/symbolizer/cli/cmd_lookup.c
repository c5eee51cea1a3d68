// SPDX-License-Identifier: MIT
/*
 * cmd_lookup.c - `spanprof-symbolizer lookup BUILD_ID...`: where the debug
 * information of each build id is found.  Prints "ID SOURCE PATH" (source:
 * dir, path, debuginfod) or "ID not-found REASON", one line each; exits 3
 * when any was not found.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/cli/privs.h"

enum { OPT_HINT = SP_OPT_CMD };

struct lookup_opts {
	struct sp_common_opts c;
	const char *hint;
	char **ids;
	int n_ids;
};

static const struct sp_cli_opt lookup_options[] = {
	SP_CLI_STR_OPT(struct lookup_opts, "hint", OPT_HINT, "PATH", hint,
		       "the mapped file, used when its build id matches"),
	SP_CLI_OPT_END,
};

static int check(struct sp_cli *p, int argc, char **argv, void *opts)
{
	struct lookup_opts *o = opts;

	if (optind == argc)
		return sp_cli__bad(p, "needs at least one BUILD_ID");
	o->ids = argv + optind;
	o->n_ids = argc - optind;
	return 0;
}

static int run(void *opts)
{
	struct lookup_opts o = *(struct lookup_opts *)opts;
	struct sp_sym_ctx x = { 0 };
	int err, found = 0;

	err = sp_privs__drop(&o.c);
	if (err)
		return 1;
	err = sp_sym_ctx__open(&x, &o.c);
	if (err)
		goto out;
	for (int i = 0; i < o.n_ids; i++) {
		enum sp_debuginfo_source src;
		char *path = NULL;
		int rc = sp_debuginfo__find(x.di, o.ids[i], o.hint, &path, &src);

		if (rc)
			printf("%s not-found %s\n", o.ids[i],
			       src == SP_DI_MISMATCH ? "(only files of another build id)"
						     : strerror(-rc));
		else
			printf("%s %s %s\n", o.ids[i], sp_debuginfo__source_name(src), path);
		found += !rc;
		free(path);
	}
	if (!o.c.quiet)
		sp_sym_ctx__print_stats(&x, NULL);
out:
	sp_sym_ctx__close(&x);
	if (err)
		return 1;
	return found == o.n_ids ? 0 : 3;
}

const struct sp_cmd sp_cmd_lookup = {
	.name = "lookup",
	.operands = "BUILD_ID...",
	.summary = "show where the debug info of build ids is found",
	.about = "  Exits 3 when a build id was not found.\n",
	.opts = lookup_options,
	.groups = SP_OPTG_DEBUGINFO | SP_OPTG_PRIVS,
	.opts_size = sizeof(struct lookup_opts),
	.check = check,
	.run = run,
};
