// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `spanprof-symbolizer report IN`: symbolize, then print
 * the reports people read: top (flat and cumulative; the default, 20
 * rows), folded stacks, per span, a flame graph page.  Weights: on-CPU =
 * samples, off-CPU = blocked time; --kind picks one (default: on-CPU when
 * present).
 */
#include <errno.h>
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

static const struct sp_cli_opt report_options[] = {
	{ "top", required_argument, OPT_TOP, "N", "the N heaviest functions (default 20)" },
	{ "collapsed", no_argument, OPT_COLLAPSED, NULL,
	  "folded stacks: root;...;leaf value" },
	{ "flamegraph", required_argument, OPT_FLAMEGRAPH, "OUT.html",
	  "write a self-contained flame graph page" },
	{ "by-span", no_argument, OPT_BY_SPAN, NULL,
	  "per (trace id, span id): on-CPU, off-CPU by reason" },
	{ "trace-id", required_argument, OPT_TRACE, "HEX", "only samples of this trace" },
	{ "span-id", required_argument, OPT_SPAN, "HEX", "only samples of this span" },
	{ "kind", required_argument, OPT_KIND, "oncpu|offcpu", "which weight to report" },
	{ "title", required_argument, OPT_TITLE, "TEXT", "the flame graph's title" },
	{ "group-by", required_argument, OPT_GROUP_BY, "process|thread|none",
	  "root frames of folded stacks and the flame graph (default: process when the "
	  "profile has more than one)" },
	{ "output", required_argument, 'o', "OUT.txt", "where to print (default stdout)" },
	{ NULL, 0, 0, NULL, NULL },
};

static int parse(int argc, char **argv, const struct sp_cmd *const *all,
		 struct report_opts *o)
{
	struct sp_cli p;
	int c, r, pick;

	memset(o, 0, sizeof(*o));
	o->kind = -1;
	sp_cli__begin(&p, &sp_cmd_report, all);
	while ((c = sp_cli__next(&p, argc, argv, &o->c)) != SP_CLI_END) {
		switch (c) {
		case SP_CLI_HELP:
		case SP_CLI_USAGE:
			return c;
		case 'o':
			o->out = optarg;
			break;
		case OPT_TOP:
			r = sp_cli__u32(&p, "--top", optarg, 1, UINT32_MAX, &o->top);
			if (r)
				return r;
			o->top_set = true;
			break;
		case OPT_COLLAPSED:
			o->collapsed = true;
			break;
		case OPT_FLAMEGRAPH:
			o->flamegraph = optarg;
			break;
		case OPT_BY_SPAN:
			o->by_span = true;
			break;
		case OPT_TRACE:
			if (sp_report__parse_hex(optarg, o->ropts.trace_id, 16))
				return sp_cli__bad(&p, "--trace-id %s: want 32 hex digits", optarg);
			o->ropts.filter_trace = true;
			break;
		case OPT_SPAN:
			if (sp_report__parse_hex(optarg, o->ropts.span_id, 8))
				return sp_cli__bad(&p, "--span-id %s: want 16 hex digits", optarg);
			o->ropts.filter_span = true;
			break;
		case OPT_KIND:
			r = sp_cli__pick(&p, "--kind", optarg, "oncpu", "offcpu", &pick);
			if (r)
				return r;
			o->kind = pick ? SP_KIND_OFFCPU : SP_KIND_ONCPU;
			break;
		case OPT_TITLE:
			o->title = optarg;
			break;
		case OPT_GROUP_BY:
			if (!strcmp(optarg, "process"))
				o->ropts.group = SP_GROUP_PROCESS;
			else if (!strcmp(optarg, "thread"))
				o->ropts.group = SP_GROUP_THREAD;
			else if (!strcmp(optarg, "none"))
				o->ropts.group = SP_GROUP_NONE;
			else
				return sp_cli__bad(&p, "--group-by %s: want process, thread or none",
						   optarg);
			break;
		default:	/* in the table, not handled: a bug */
			return sp_cli__bad(&p, "option %d not handled", c);
		}
	}
	r = sp_cli__operand(&p, argc, argv, &o->in);
	if (r)
		return r;
	return 0;
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

static int run(int argc, char **argv, const struct sp_cmd *const *all)
{
	struct sp_symbolize_stats ss;
	struct sp_report *rep = NULL;
	struct sp_input in = { 0 };
	struct sp_sym_ctx x = { 0 };
	struct report_opts o;
	FILE *out = NULL, *fgf = NULL;
	int err;

	err = parse(argc, argv, all, &o);
	if (err)
		return err == SP_CLI_HELP ? 0 : SP_CLI_EXIT_USAGE;
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
	if (sp_output__close(out) && !err)
		err = -EIO;
	if (sp_output__close(fgf) && !err)
		err = -EIO;
	sp_report__free(rep);
	sp_input__free(&in);
	sp_sym_ctx__close(&x);
	return err ? 1 : 0;
}

const struct sp_cmd sp_cmd_report = {
	.name = "report",
	.operands = "IN",
	.summary = "symbolize, then print reports (default: --top 20)",
	.about = "  Folded stacks weigh samples (on-CPU) or microseconds (off-CPU);\n"
		 "  --by-span shows per-span on-CPU time and off-CPU waits by reason.\n",
	.opts = report_options,
	.groups = SP_OPTG_DEBUGINFO | SP_OPTG_CACHE | SP_OPTG_KALLSYMS |
		  SP_OPTG_KALLSYMS_IN | SP_OPTG_PRIVS,
	.run = run,
};
