// SPDX-License-Identifier: MIT
/*
 * cmd_file.c - `spanprof-symbolizer file IN`: symbolize a pprof or OTLP
 * file (gzip or not) and write it back, in the same format and
 * compression unless --format says otherwise (--no-symbolize: convert
 * only; --no-timestamps: the compact form, every sample's per-event
 * timestamps dropped).  -o may be omitted when stdout is not a terminal.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/codec.h"
#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"

enum { OPT_FORMAT = SP_OPT_CMD, OPT_NO_SYMBOLIZE, OPT_NO_TIMESTAMPS };

struct file_opts {
	struct sp_common_opts c;
	const char *in;
	const char *out;
	enum sp_in_fmt format;	/* SP_FMT_AUTO: as the input */
	bool no_symbolize;
	bool no_timestamps;
};

#define F struct file_opts
static const struct sp_cli_opt file_options[] = {
	SP_CLI_STR_OPT(F, "output", 'o', "OUT", out, "where to write (default stdout)"),
	SP_CLI_OPT("format", required_argument, OPT_FORMAT, "pprof|otlp",
	  "output format (default: the input's)"),
	SP_CLI_FLAG_OPT(F, "no-symbolize", OPT_NO_SYMBOLIZE, no_symbolize, "convert only"),
	SP_CLI_FLAG_OPT(F, "no-timestamps", OPT_NO_TIMESTAMPS, no_timestamps,
			"drop per-event timestamps (OTLP: one value per stack, thread, span)"),
	SP_CLI_OPT_END,
};

static int option(struct sp_cli *p, int c, const char *arg, void *opts)
{
	struct file_opts *o = opts;
	int r, pick;

	(void)c;	/* --format, the one option not stored by its row */
	r = sp_cli__pick(p, "--format", arg, "pprof", "otlp", &pick);
	if (!r)
		o->format = pick ? SP_FMT_OTLP : SP_FMT_PPROF;
	return r;
}

static int check(struct sp_cli *p, int argc, char **argv, void *opts)
{
	struct file_opts *o = opts;
	int r = sp_cli__operand(p, argc, argv, &o->in);

	if (r)
		return r;
	if (!o->out && isatty(STDOUT_FILENO))
		return sp_cli__bad(p, "use -o OUT (stdout is a terminal)");
	return 0;
}

static int run(void *opts)
{
	struct file_opts o = *(struct file_opts *)opts;
	struct sp_symbolize_stats ss = { 0 };
	struct sp_input in = { 0 };
	struct sp_sym_ctx x = { 0 };
	uint8_t *enc = NULL, *gzb = NULL, *body;
	size_t enc_len = 0, gz_len = 0, len;
	enum sp_in_fmt out_fmt;
	FILE *out = NULL;
	int err;

	err = sp_input__read(&in, o.in);
	if (err)
		return 1;
	out = sp_output__open(o.out);
	if (!out) {
		err = -errno;
		goto out;
	}
	err = sp_sym_ctx__symbolize_input(&x, &o.c, !o.no_symbolize, &in, o.in, &ss);
	if (err)
		goto out;
	if (o.no_timestamps)
		sp_profile__drop_timestamps(in.p);
	out_fmt = o.format == SP_FMT_AUTO ? in.fmt : o.format;
	err = out_fmt == SP_FMT_OTLP ? sp_otlp__encode(in.p, &enc, &enc_len)
				     : sp_pprof__encode(in.p, &enc, &enc_len);
	if (err) {
		fprintf(stderr, SP_CLI_PROG ": encode: %s\n", strerror(-err));
		goto out;
	}
	body = enc;
	len = enc_len;
	if (in.gzip) {
		err = sp_gzip(enc, enc_len, &gzb, &gz_len);
		if (err)
			goto out;
		body = gzb;
		len = gz_len;
	}
	if (fwrite(body, 1, len, out) != len)
		err = -EIO;
	if (!o.c.quiet)
		sp_sym_ctx__print_stats(&x, &ss);
out:
	free(gzb);
	free(enc);
	return sp_sym_ctx__finish(&x, &in, out, err);
}

const struct sp_cmd sp_cmd_file = {
	.name = "file",
	.operands = "IN",
	.summary = "symbolize a pprof or OTLP file (gzip or not)",
	.about = "  Writes the same format and compression as IN unless --format says\n"
		 "  otherwise; IN.kallsyms.gz next to IN resolves kernel frames.\n",
	.opts = file_options,
	.groups = SP_OPTG_PROFILE_IN,
	.opts_size = sizeof(struct file_opts),
	.option = option,
	.check = check,
	.run = run,
};
