// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `spanprof-symbolizer report IN`: symbolize, then print
 * the reports people read: top (flat and cumulative; the default, 20
 * rows), folded stacks, per span, a flame graph page.  Weights: on-CPU =
 * samples, off-CPU = blocked time; --kind picks one (default: on-CPU when
 * present).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/report.h"

enum {
	OPT_TOP = SP_OPT_CMD, OPT_COLLAPSED, OPT_FLAMEGRAPH, OPT_BY_SPAN, OPT_TRACE,
	OPT_SPAN, OPT_KIND, OPT_TITLE, OPT_GROUP_BY,
};

struct report_opts {
	struct sp_common_opts c;
	const char *in;
	const char *out;
	const char *flamegraph;
	const char *title;
	uint32_t top;
	bool top_set, collapsed, by_span;
	int kind;		/* -1: on-CPU when present, else off-CPU */
	struct sp_report_opts ropts;
};

#define R struct report_opts
static const struct sp_cli_opt report_options[] = {
	SP_CLI_OPT("top", required_argument, OPT_TOP, "N", "the N heaviest functions (default 20)"),
	SP_CLI_FLAG_OPT(R, "collapsed", OPT_COLLAPSED, collapsed,
			"folded stacks: root;...;leaf value"),
	SP_CLI_STR_OPT(R, "flamegraph", OPT_FLAMEGRAPH, "OUT.html", flamegraph,
		       "write a self-contained flame graph page"),
	SP_CLI_FLAG_OPT(R, "by-span", OPT_BY_SPAN, by_span,
			"per (trace id, span id): on-CPU, off-CPU by reason"),
	SP_CLI_OPT("trace-id", required_argument, OPT_TRACE, "HEX", "only samples of this trace"),
	SP_CLI_OPT("span-id", required_argument, OPT_SPAN, "HEX", "only samples of this span"),
	SP_CLI_OPT("kind", required_argument, OPT_KIND, "oncpu|offcpu", "which weight to report"),
	SP_CLI_STR_OPT(R, "title", OPT_TITLE, "TEXT", title, "the flame graph's title"),
	SP_CLI_OPT("group-by", required_argument, OPT_GROUP_BY, "process|thread|none",
	  "root frames of folded stacks and the flame graph (default: process when the "
	  "profile has more than one)"),
	SP_CLI_STR_OPT(R, "output", 'o', "OUT.txt", out, "where to print (default stdout)"),
	SP_CLI_OPT_END,
};

static void init(void *opts)
{
	((struct report_opts *)opts)->kind = -1;
}

/* The options not stored by their rows. */
static int option(struct sp_cli *p, int c, const char *arg, void *opts)
{
	struct report_opts *o = opts;
	int r, pick;

	switch (c) {
	case OPT_TOP:
		o->top_set = true;
		return sp_cli__u32(p, "--top", arg, 1, UINT32_MAX, &o->top);
	case OPT_TRACE:
		if (sp_report__parse_hex(arg, o->ropts.trace_id, 16))
			return sp_cli__bad(p, "--trace-id %s: want 32 hex digits", arg);
		o->ropts.filter_trace = true;
		return 0;
	case OPT_SPAN:
		if (sp_report__parse_hex(arg, o->ropts.span_id, 8))
			return sp_cli__bad(p, "--span-id %s: want 16 hex digits", arg);
		o->ropts.filter_span = true;
		return 0;
	case OPT_KIND:
		r = sp_cli__pick(p, "--kind", arg, "oncpu", "offcpu", &pick);
		if (!r)
			o->kind = pick ? SP_KIND_OFFCPU : SP_KIND_ONCPU;
		return r;
	case OPT_GROUP_BY:
		if (!strcmp(arg, "process"))
			o->ropts.group = SP_GROUP_PROCESS;
		else if (!strcmp(arg, "thread"))
			o->ropts.group = SP_GROUP_THREAD;
		else if (!strcmp(arg, "none"))
			o->ropts.group = SP_GROUP_NONE;
		else
			return sp_cli__bad(p, "--group-by %s: want process, thread or none", arg);
		return 0;
	default:	/* in the table, not handled: a bug */
		return sp_cli__bad(p, "option %d not handled", c);
	}
}

static int check(struct sp_cli *p, int argc, char **argv, void *opts)
{
	return sp_cli__operand(p, argc, argv, &((struct report_opts *)opts)->in);
}

/* The reports asked for, in a fixed order: top, folded, per span, page. */
/* The page, with a picker of the FG_SPANS heaviest spans: one report each,
 * kept to that span. */
#define FG_SPANS 20

static int flamegraph(const struct report_opts *o, const struct sp_profile *p,
		      struct sp_report *rep, FILE *fgf)
{
	struct sp_report *spans[FG_SPANS] = { 0 };
	struct sp_link links[FG_SPANS];
	uint32_t n = sp_report__top_spans(rep, links, FG_SPANS), k = 0;
	int err = 0;

	for (; k < n && !err; k++) {
		struct sp_report_opts so = o->ropts;

		so.filter_trace = so.filter_span = true;
		memcpy(so.trace_id, links[k].trace_id, 16);
		memcpy(so.span_id, links[k].span_id, 8);
		err = sp_report__new(p, &so, &spans[k]);
	}
	if (!err)
		err = sp_report__flamegraph_spans(rep, o->title ? o->title : o->in, spans, n, fgf);
	for (uint32_t i = 0; i < FG_SPANS; i++)
		sp_report__free(spans[i]);
	return err;
}

static int print_reports(const struct report_opts *o, const struct sp_profile *p,
			 struct sp_report *rep, FILE *out, FILE *fgf)
{
	bool any = o->top_set || o->collapsed || o->by_span || o->flamegraph;
	int kind = o->kind, err = 0;

	if (kind < 0)
		kind = sp_report__has_kind(rep, SP_KIND_ONCPU) ||
			       !sp_report__has_kind(rep, SP_KIND_OFFCPU) ?
			       SP_KIND_ONCPU : SP_KIND_OFFCPU;
	if (o->top_set || !any)
		err = sp_report__top(rep, kind, o->top_set ? o->top : 20, out);
	if (!err && o->collapsed)
		err = sp_report__collapsed(rep, kind, out);
	if (!err && o->by_span) {
		if (o->top_set || !any)
			fputc('\n', out);
		err = sp_report__by_span(rep, 3, out);
	}
	if (!err && fgf) {
		err = flamegraph(o, p, rep, fgf);
		if (!err && !o->c.quiet)
			fprintf(stderr, SP_CLI_PROG ": flame graph: %s\n", o->flamegraph);
	}
	return err;
}

static int run(void *opts)
{
	struct report_opts o = *(struct report_opts *)opts;
	struct sp_symbolize_stats ss;
	struct sp_report *rep = NULL;
	struct sp_input in = { 0 };
	struct sp_sym_ctx x = { 0 };
	FILE *out = NULL, *fgf = NULL;
	int err;

	err = sp_input__read(&in, o.in);
	if (err)
		return 1;
	out = sp_output__open(o.out);
	if (!out) {
		err = -errno;
		goto out;
	}
	if (o.flamegraph) {
		fgf = sp_output__open(o.flamegraph);
		if (!fgf) {
			err = -errno;
			goto out;
		}
	}
	err = sp_sym_ctx__symbolize_input(&x, &o.c, true, &in, o.in, &ss);
	if (err)
		goto out;
	err = sp_report__new(in.p, &o.ropts, &rep);
	if (err)
		goto out;
	err = print_reports(&o, in.p, rep, out, fgf);
	if (!err && !o.c.quiet)
		sp_sym_ctx__print_stats(&x, &ss);
out:
	if (sp_output__close(fgf) && !err)
		err = -EIO;
	sp_report__free(rep);
	return sp_sym_ctx__finish(&x, &in, out, err);
}

const struct sp_cmd sp_cmd_report = {
	.name = "report",
	.operands = "IN",
	.summary = "symbolize, then print reports (default: --top 20)",
	.about = "  Folded stacks weigh samples (on-CPU) or microseconds (off-CPU);\n"
		 "  --by-span shows per-span on-CPU time and off-CPU waits by reason.\n",
	.opts = report_options,
	.groups = SP_OPTG_PROFILE_IN,
	.opts_size = sizeof(struct report_opts),
	.init = init,
	.option = option,
	.check = check,
	.run = run,
};
