// SPDX-License-Identifier: MIT
/*
 * cli.c - option groups, the getopt_long loop, refusals and --help
 * (contract: cli.h).
 *
 * getopt runs with opterr = 0 and a leading ':' in the short options, so
 * it reports instead of printing: '?' for an option not in this command's
 * table (optopt = the letter, or 0 for a long option, whose text is then
 * argv[optind - 1]), ':' for a missing value.  The refusal looks the
 * option up in every command's table to say who takes it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse_uint.h"
#include "symbolizer/cli/cli.h"

static const struct sp_cli_opt opts_always[] = {
	SP_CLI_OPT("quiet", no_argument, 'q', NULL, "no statistics on stderr"),
	SP_CLI_OPT("help", no_argument, 'h', NULL, "this help"),
	SP_CLI_OPT_END,
};

static const struct sp_cli_opt opts_debuginfo[] = {
	SP_CLI_OPT("debug-dir", required_argument, SP_OPT_DEBUG_DIR, "DIR",
	  "build-id directory (repeatable; default /usr/lib/debug)"),
	SP_CLI_OPT("no-debuginfod", no_argument, SP_OPT_NO_DEBUGINFOD, NULL,
	  "never ask debuginfod (DEBUGINFOD_URLS)"),
	SP_CLI_OPT_END,
};

static const struct sp_cli_opt opts_cache[] = {
	SP_CLI_OPT("cache-entries", required_argument, SP_OPT_CACHE, "N",
	  "address cache size (default 65536)"),
	SP_CLI_OPT("unit-budget", required_argument, SP_OPT_UNIT_BUDGET, "MIB",
	  "decoded debug info and relocated .ko debug info (default 64)"),
	SP_CLI_OPT_END,
};

static const struct sp_cli_opt opts_kallsyms[] = {
	SP_CLI_OPT("kallsyms", required_argument, SP_OPT_KALLSYMS, "FILE",
	  "kernel symbol snapshot (repeatable; matched by build id)"),
	SP_CLI_OPT("kallsyms-dir", required_argument, SP_OPT_KALLSYMS_DIR, "DIR",
	  "directory of BUILD_ID.kallsyms.gz files (repeatable)"),
	SP_CLI_OPT("store", required_argument, SP_OPT_STORE, "DIR",
	  "host-symbol store: kernel snapshots, vDSO, JIT perf maps (repeatable)"),
	SP_CLI_OPT_END,
};

static const struct sp_cli_opt opts_kallsyms_in[] = {
	SP_CLI_OPT("no-kallsyms", no_argument, SP_OPT_NO_KALLSYMS, NULL,
	  "do not load IN.kallsyms.gz (default: when present)"),
	SP_CLI_OPT("no-syms-dir", no_argument, SP_OPT_NO_SYMS_DIR, NULL,
	  "do not use the store IN.syms/ (default: when present)"),
	SP_CLI_OPT_END,
};

static const struct sp_cli_opt opts_privs[] = {
	SP_CLI_OPT("allow-root", no_argument, SP_OPT_ALLOW_ROOT, NULL,
	  "keep root (default: drop to --user)"),
	SP_CLI_OPT("user", required_argument, SP_OPT_USER, "NAME",
	  "the user to drop to as root (default nobody)"),
	SP_CLI_OPT_END,
};

static const struct {
	unsigned flag;
	const struct sp_cli_opt *opts;
} groups[] = {
	{ SP_OPTG_DEBUGINFO, opts_debuginfo },
	{ SP_OPTG_CACHE, opts_cache },
	{ SP_OPTG_KALLSYMS, opts_kallsyms },
	{ SP_OPTG_KALLSYMS_IN, opts_kallsyms_in },
	{ SP_OPTG_PRIVS, opts_privs },
};

#define N_GROUPS (sizeof(groups) / sizeof(groups[0]))

/* The lists of options cmd takes, in help order: its own, its groups',
 * then quiet and help.  Returns how many lists were stored (<= 2 +
 * N_GROUPS). */
static size_t option_lists(const struct sp_cmd *cmd, const struct sp_cli_opt **out)
{
	size_t n = 0;

	out[n++] = cmd->opts;
	for (size_t i = 0; i < N_GROUPS; i++)
		if (cmd->groups & groups[i].flag)
			out[n++] = groups[i].opts;
	out[n++] = opts_always;
	return n;
}

/* cmd's option named name (exact), or with short letter c when name is
 * NULL; NULL when it takes none. */
static const struct sp_cli_opt *find_opt(const struct sp_cmd *cmd, const char *name,
					 size_t name_len, int c)
{
	const struct sp_cli_opt *lists[2 + N_GROUPS];
	size_t n = option_lists(cmd, lists);

	for (size_t i = 0; i < n; i++)
		for (const struct sp_cli_opt *o = lists[i]; o->name; o++)
			if (name ? strlen(o->name) == name_len &&
					   !strncmp(o->name, name, name_len)
				 : o->val == c)
				return o;
	return NULL;
}

void sp_cli__begin(struct sp_cli *p, const struct sp_cmd *cmd,
		   const struct sp_cmd *const *all)
{
	const struct sp_cli_opt *lists[2 + N_GROUPS];
	size_t n = option_lists(cmd, lists), k = 0, s = 0;

	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->all = all;
	p->shortopts[s++] = ':';
	for (size_t i = 0; i < n; i++)
		for (const struct sp_cli_opt *o = lists[i]; o->name; o++) {
			if (k == SP_CLI_MAX_OPTS)
				abort();	/* a programming error: raise the cap */
			p->longopts[k++] = (struct option){ o->name, o->has_arg, NULL,
							    o->val };
			if (o->val < 256) {
				p->shortopts[s++] = (char)o->val;
				if (o->has_arg == required_argument)
					p->shortopts[s++] = ':';
			}
		}
	optind = 1;
	opterr = 0;
}

int sp_cli__bad(const struct sp_cli *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, SP_CLI_PROG " %s: ", p->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see " SP_CLI_PROG " %s --help\n", p->cmd->name);
	return SP_CLI_USAGE;
}

/* The commands other than p's that take the option, "a, b"; "" if none. */
static void takers(const struct sp_cli *p, const char *name, size_t len, int c,
		   char *out, size_t out_len)
{
	size_t used = 0;

	out[0] = '\0';
	for (const struct sp_cmd *const *x = p->all; x && *x; x++) {
		int w;

		if (*x == p->cmd || !find_opt(*x, name, len, c))
			continue;
		w = snprintf(out + used, out_len - used, "%s%s", used ? ", " : "",
			     (*x)->name);
		if (w < 0 || (size_t)w >= out_len - used)
			break;
		used += (size_t)w;
	}
}

/* How many of p's options start with name[0, len). */
static unsigned prefix_matches(const struct sp_cli *p, const char *name, size_t len)
{
	unsigned n = 0;

	for (const struct option *o = p->longopts; o->name; o++)
		n += !strncmp(o->name, name, len);
	return n;
}

static int refuse(const struct sp_cli *p, const char *text)
{
	char who[128], shown[64];
	const char *name = NULL;
	size_t len = 0;
	int c = 0;

	if (text[0] == '-' && text[1] == '-') {
		name = text + 2;
		len = strcspn(name, "=");
		snprintf(shown, sizeof(shown), "--%.*s", (int)(len < 40 ? len : 40), name);
		if (prefix_matches(p, name, len) > 1)
			return sp_cli__bad(p, "%s is ambiguous: spell the option out", shown);
	} else {
		c = (unsigned char)text[1];
		snprintf(shown, sizeof(shown), "-%c", c);
	}
	takers(p, name, len, c, who, sizeof(who));
	if (who[0])
		return sp_cli__bad(p, "%s is not an option of %s (%s %s it)", shown,
				   p->cmd->name, who, strchr(who, ',') ? "take" : "takes");
	return sp_cli__bad(p, "unknown option %s", shown);
}

/* 0 when val is a group option (stored in *c), 1 when it is the command's
 * own, SP_CLI_USAGE for a bad value. */
static int group_opt(const struct sp_cli *p, struct sp_common_opts *c, int val,
		     const char *arg);

int sp_cli__next(struct sp_cli *p, int argc, char **argv, struct sp_common_opts *com)
{
	char text[4];
	int c, r;

again:
	c = getopt_long(argc, argv, p->shortopts, p->longopts, NULL);
	switch (c) {
	case -1:
		return SP_CLI_END;
	case 'h':
		sp_cli__usage(p->cmd, stdout);
		return SP_CLI_HELP;
	case '?': {
		const struct sp_cli_opt *o = optopt ? find_opt(p->cmd, NULL, 0, optopt) : NULL;

		if (o)	/* "--quiet=1": a known option that takes no value */
			return sp_cli__bad(p, "--%s takes no value", o->name);
		if (optopt) {
			snprintf(text, sizeof(text), "-%c", optopt);
			return refuse(p, text);
		}
		return refuse(p, argv[optind - 1]);
	}
	case ':': {
		const struct sp_cli_opt *o = find_opt(p->cmd, NULL, 0, optopt);

		if (o && o->val >= 256)
			return sp_cli__bad(p, "--%s needs a value (%s)", o->name, o->arg);
		return sp_cli__bad(p, "-%c needs a value", optopt);
	}
	default:
		r = group_opt(p, com, c, optarg);
		if (r == 0)
			goto again;
		return r < 0 ? r : c;
	}
}

int sp_cli__operand(const struct sp_cli *p, int argc, char **argv, const char **out)
{
	if (optind != argc - 1)
		return sp_cli__bad(p, "want one input file, got %d", argc - optind);
	*out = argv[optind];
	return 0;
}

int sp_cli__u32(const struct sp_cli *p, const char *opt, const char *arg,
		uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (sp_parse_uint(arg, 10, max, &v) || v < min)
		return sp_cli__bad(p, "%s %s: want a whole number from %u to %u", opt, arg,
				   min, max);
	*out = (uint32_t)v;
	return 0;
}

int sp_cli__pick(const struct sp_cli *p, const char *opt, const char *arg, const char *a,
		 const char *b, int *out)
{
	if (strcmp(arg, a) && strcmp(arg, b))
		return sp_cli__bad(p, "%s %s: want %s or %s", opt, arg, a, b);
	*out = strcmp(arg, a) ? 1 : 0;
	return 0;
}

static int add_path(const struct sp_cli *p, const char *opt, const char **arr, size_t *n,
		    const char *arg)
{
	if (*n == SP_CLI_MAX_DIRS)
		return sp_cli__bad(p, "%s given more than %d times", opt, SP_CLI_MAX_DIRS);
	arr[(*n)++] = arg;
	return 0;
}

static int group_opt(const struct sp_cli *p, struct sp_common_opts *c, int val,
		     const char *arg)
{
	switch (val) {
	case 'q':
		c->quiet = true;
		return 0;
	case SP_OPT_DEBUG_DIR:
		return add_path(p, "--debug-dir", c->dirs, &c->n_dirs, arg);
	case SP_OPT_NO_DEBUGINFOD:
		c->no_debuginfod = true;
		return 0;
	case SP_OPT_CACHE:
		return sp_cli__u32(p, "--cache-entries", arg, 0, UINT32_MAX, &c->cache_entries);
	case SP_OPT_UNIT_BUDGET:
		return sp_cli__u32(p, "--unit-budget", arg, 1, 1u << 20, &c->unit_budget_mib);
	case SP_OPT_KALLSYMS:
		return add_path(p, "--kallsyms", c->ks_files, &c->n_ks_files, arg);
	case SP_OPT_KALLSYMS_DIR:
		return add_path(p, "--kallsyms-dir", c->ks_dirs, &c->n_ks_dirs, arg);
	case SP_OPT_NO_KALLSYMS:
		c->no_kallsyms = true;
		return 0;
	case SP_OPT_STORE:
		return add_path(p, "--store", c->stores, &c->n_stores, arg);
	case SP_OPT_NO_SYMS_DIR:
		c->no_syms_dir = true;
		return 0;
	case SP_OPT_ALLOW_ROOT:
		c->allow_root = true;
		return 0;
	case SP_OPT_USER:
		c->user = arg;
		return 0;
	default:
		return 1;
	}
}

static void usage_opt(const struct sp_cli_opt *o, FILE *f)
{
	char left[64];

	if (o->val < 256)
		snprintf(left, sizeof(left), "-%c, --%s%s%s", o->val, o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
	if (strlen(left) > 24)
		fprintf(f, "  %s\n  %-24s  %s\n", left, "", o->help);
	else
		fprintf(f, "  %-24s  %s\n", left, o->help);
}

void sp_cli__usage(const struct sp_cmd *cmd, FILE *f)
{
	const struct sp_cli_opt *lists[2 + N_GROUPS];
	size_t n = option_lists(cmd, lists);

	fprintf(f, "usage: " SP_CLI_PROG " %s%s%s [options]\n  %s\n", cmd->name,
		cmd->operands[0] ? " " : "", cmd->operands, cmd->summary);
	if (cmd->about)
		fputs(cmd->about, f);
	fputs("options:\n", f);
	for (size_t i = 0; i < n; i++)
		for (const struct sp_cli_opt *o = lists[i]; o->name; o++)
			usage_opt(o, f);
}

/* An own option by its table row: stored at its offset, or handed to the
 * command's option(). */
static int own_opt(struct sp_cli *p, int val, const char *arg, void *o)
{
	const struct sp_cli_opt *r = p->cmd->opts;
	char name[64];

	while (r->name && r->val != val)
		r++;
	switch (r->name ? r->kind : SP_CLI_OWN) {
	case SP_CLI_FLAG:
		*(bool *)((char *)o + r->off) = true;
		return 0;
	case SP_CLI_STR:
		*(const char **)((char *)o + r->off) = arg;
		return 0;
	case SP_CLI_U32:
		snprintf(name, sizeof(name), "--%s", r->name);
		return sp_cli__u32(p, name, arg, r->min, r->max, (uint32_t *)((char *)o + r->off));
	case SP_CLI_OWN:
	default:
		if (r->name && p->cmd->option)
			return p->cmd->option(p, val, arg, o);
		return sp_cli__bad(p, "option %d not handled", val);	/* a bug */
	}
}

int sp_cli__main(const struct sp_cmd *cmd, const struct sp_cmd *const *all, int argc,
		 char **argv)
{
	void *o = calloc(1, cmd->opts_size);
	struct sp_cli p;
	int c, r = 0;

	if (!o) {
		fprintf(stderr, SP_CLI_PROG " %s: out of memory\n", cmd->name);
		return 1;
	}
	if (cmd->init)
		cmd->init(o);
	sp_cli__begin(&p, cmd, all);
	while (!r && (c = sp_cli__next(&p, argc, argv, o)) != SP_CLI_END)
		r = c == SP_CLI_HELP || c == SP_CLI_USAGE ? c : own_opt(&p, c, optarg, o);
	if (!r)
		r = cmd->check(&p, argc, argv, o);
	if (!r)
		r = cmd->run(o);
	else
		r = r == SP_CLI_HELP ? 0 : SP_CLI_EXIT_USAGE;
	free(o);
	return r;
}
