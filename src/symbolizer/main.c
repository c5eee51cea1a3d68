// SPDX-License-Identifier: MIT
/*
 * main.c - spanprof-symbolizer: symbolize profiles by build id and print
 * the reports people read.
 *
 *   spanprof-symbolizer file IN [-o OUT] [--format pprof|otlp]
 *       [--no-symbolize]
 *   spanprof-symbolizer report IN [--top N] [--collapsed]
 *       [--flamegraph OUT.html] [--by-span] [--trace-id HEX]
 *       [--span-id HEX] [--kind oncpu|offcpu] [-o OUT.txt]
 *   spanprof-symbolizer addr -e ELF [--offset] [ADDR...]   (stdin if none)
 *   spanprof-symbolizer lookup BUILD_ID... [--hint PATH]
 *   spanprof-symbolizer serve [--listen HOST:PORT] [--forward URL]
 *       [--output-dir DIR] [--queue N] [--workers N] [--max-body BYTES]
 * common options: --debug-dir DIR (repeatable; default /usr/lib/debug),
 *   --no-debuginfod, --cache-entries N, --allow-root, --user NAME,
 *   --quiet (no statistics on stderr), --kallsyms FILE (repeatable),
 *   --kallsyms-dir DIR (repeatable), --no-kallsyms.
 *
 * Contract:
 *   - Privileges: the symbolizer parses untrusted data (profiles, ELF,
 *     DWARF, debuginfod answers) and never needs privileges.  Started as
 *     root (the collector runs it as a child), it first reads its input
 *     and opens its outputs, then drops to --user (default "nobody"):
 *     setgroups(0), setgid, setuid, PR_SET_NO_NEW_PRIVS, and checks that
 *     root cannot be regained.  --allow-root keeps root instead.  After the
 *     drop, debug files must be readable by that user.  When
 *     DEBUGINFOD_URLS is set, DEBUGINFOD_CACHE_PATH is not, and we dropped
 *     privileges or the default cache ($XDG_CACHE_HOME or $HOME/.cache) is
 *     not writable, a private cache directory is made under $TMPDIR (or
 *     /tmp) and removed at exit.
 *   - Kernel symbol snapshots (kallsyms.h) are loaded before privileges
 *     are dropped, like the input: every --kallsyms FILE (a failure is
 *     fatal), and for file/report IN.kallsyms.gz next to the input when it
 *     exists (a failure is a warning) unless --no-kallsyms.  --kallsyms-dir
 *     directories are searched lazily per build id (serve: after the drop,
 *     so they must be readable by --user).
 *   - Input format (pprof or OTLP, gzip or not) is detected from the
 *     bytes; `file` writes the same format (and compression) unless
 *     --format says otherwise.
 *   - Exit status: 0 success, 1 runtime failure, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/codec.h"
#include "profile/fileio.h"
#include "profile/profile.h"
#include "debuginfo.h"
#include "kallsyms.h"
#include "report.h"
#include "resolve.h"
#include "serve.h"
#include "symbolize.h"

/* libstdc++'s demangler; the binary links -lstdc++ for it alone. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

#define MAX_DIRS 16

enum fmt { FMT_AUTO, FMT_PPROF, FMT_OTLP };

struct cli {
	const char *cmd;
	const char *in;
	const char *out;
	const char *flamegraph;
	const char *elf;
	const char *hint;
	const char *user;
	const char *title;
	const char *dirs[MAX_DIRS];
	size_t n_dirs;
	const char *ks_files[MAX_DIRS];
	size_t n_ks_files;
	const char *ks_dirs[MAX_DIRS];
	size_t n_ks_dirs;
	bool no_kallsyms;
	enum fmt format;
	uint32_t top;
	bool top_set, collapsed, by_span, allow_root, quiet, no_debuginfod;
	bool is_offset, no_symbolize;
	int kind;		/* -1 auto */
	uint32_t cache_entries;
	struct sp_report_opts ropts;
	char **args;		/* positional after IN (addr, lookup) */
	int n_args;
	const char *listen;	/* serve */
	const char *forward;
	const char *output_dir;
	uint32_t queue, workers, max_body;
};

static char *private_cache;
static bool dropped;		/* privileges were dropped by us */

static void usage(FILE *f)
{
	fputs("usage: spanprof-symbolizer COMMAND [options]\n"
	      "  file IN [-o OUT] [--format pprof|otlp] [--no-symbolize]\n"
	      "      symbolize a pprof or OTLP file (gzip or not); writes the\n"
	      "      same format by default (--no-symbolize: convert only)\n"
	      "  report IN [--top N] [--collapsed] [--flamegraph OUT.html]\n"
	      "      [--by-span] [--trace-id HEX] [--span-id HEX]\n"
	      "      [--kind oncpu|offcpu] [--title TEXT] [-o OUT.txt]\n"
	      "      symbolize, then print reports (default: --top 20)\n"
	      "  addr -e ELF [--offset] [ADDR...]\n"
	      "      resolve ELF virtual addresses (file offsets with --offset)\n"
	      "      like llvm-symbolizer --inlining; reads stdin without ADDR\n"
	      "  lookup BUILD_ID... [--hint PATH]\n"
	      "      show where debug info for build ids is found\n"
	      "  serve [--listen HOST:PORT] [--forward URL] [--output-dir DIR]\n"
	      "      [--queue N] [--workers N] [--max-body BYTES]\n"
	      "      OTLP/HTTP receiver (POST /v1development/profiles, GET\n"
	      "      /metrics); default listen 127.0.0.1:4318\n"
	      "common options:\n"
	      "  --debug-dir DIR   build-id directory (repeatable; default\n"
	      "                    /usr/lib/debug)\n"
	      "  --no-debuginfod   never ask debuginfod (DEBUGINFOD_URLS)\n"
	      "  --cache-entries N (address cache size, default 65536)\n"
	      "  --allow-root      keep root privileges (default: drop to\n"
	      "                    --user, default nobody, when run as root)\n"
	      "  --user NAME       the user to drop to when run as root\n"
	      "  --quiet           no statistics on stderr\n"
	      "  --kallsyms FILE   kernel symbol snapshot (repeatable; used for\n"
	      "                    kernel frames whose build id matches; default\n"
	      "                    for file/report: IN.kallsyms.gz if present)\n"
	      "  --kallsyms-dir DIR  directory of BUILD_ID.kallsyms.gz snapshots\n"
	      "                    (repeatable; searched per kernel build id)\n"
	      "  --no-kallsyms     do not look for IN.kallsyms.gz\n", f);
}

/* ------------------------------------------------------------ privileges */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup_cache(void)
{
	if (private_cache) {
		nftw(private_cache, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(private_cache);
		private_cache = NULL;
	}
}

static int drop_privileges(const struct cli *c)
{
	const char *name = c->user ? c->user : "nobody";
	struct passwd *pw;

	if (geteuid() != 0 || c->allow_root)
		return 0;
	pw = getpwnam(name);
	if (!pw) {
		fprintf(stderr, "spanprof-symbolizer: running as root and user "
			"'%s' does not exist (use --user or --allow-root)\n",
			name);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr, "spanprof-symbolizer: --user %s is root; use "
			"--allow-root to run as root\n", name);
		return -EINVAL;
	}
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		fprintf(stderr, "spanprof-symbolizer: dropping to %s: %s\n",
			name, strerror(errno));
		return -EPERM;
	}
	if (setuid(0) == 0 || geteuid() == 0) {
		fprintf(stderr, "spanprof-symbolizer: could still regain root\n");
		return -EPERM;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (setenv("HOME", "/", 1))
		return -errno;
	dropped = true;
	return 0;
}

/* libdebuginfod's default cache: $XDG_CACHE_HOME/debuginfod_client or
 * $HOME/.cache/debuginfod_client; usable when it or its parent is
 * writable by us. */
static bool default_cache_usable(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char p[4096];

	if (xdg && *xdg)
		snprintf(p, sizeof(p), "%s", xdg);
	else if (home && *home)
		snprintf(p, sizeof(p), "%s/.cache", home);
	else
		return false;
	if (access(p, W_OK) == 0)
		return true;
	if (errno != ENOENT)
		return false;
	/* not there yet: the parent must be writable to create it */
	*strrchr(p, '/') = '\0';
	return *p && access(p, W_OK) == 0;
}

/* With privileges dropped (by us, or by a parent that left HOME pointing at
 * root's home), the default debuginfod cache is not ours: use a private one
 * unless the caller chose one. */
static void setup_debuginfod_cache(const struct cli *c)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (c->no_debuginfod || getenv("DEBUGINFOD_CACHE_PATH") ||
	    !getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return;
	if (!dropped && default_cache_usable())
		return;
	if (asprintf(&dir, "%s/spanprof-symbolizer-XXXXXX",
		     tmp && *tmp ? tmp : "/tmp") < 0)
		return;
	if (!mkdtemp(dir)) {
		free(dir);
		return;
	}
	private_cache = dir;
	atexit(cleanup_cache);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
}

/* ------------------------------------------------------------ input */

/* strerror(E2BIG) says "Argument list too long": name the limit instead. */
_Static_assert(SP_DECODE_MAX_BYTES == 64u << 20, "input_error names 64 MiB");
static const char *input_error(int err, bool decoding)
{
	if (err != -E2BIG)
		return strerror(-err);
	return decoding ? "over the decoder's limits (64 MiB limit on the decompressed "
			  "input, 1048576 entries per table)"
			: "larger than the 64 MiB input limit";
}

/* OTLP's ExportProfilesServiceRequest has fields 1 and 2 only at the top
 * level; a pprof Profile always carries string_table (field 6). */
static enum fmt detect_format(const uint8_t *b, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint64_t key = 0, v = 0;
		unsigned sh = 0;

		do {
			if (i >= len || sh > 63)
				return FMT_PPROF;
			key |= (uint64_t)(b[i] & 0x7f) << sh;
			sh += 7;
		} while (b[i++] & 0x80);
		if ((key >> 3) >= 3)
			return FMT_PPROF;
		switch (key & 7) {
		case 0:
		case 2:
			sh = 0;
			do {
				if (i >= len || sh > 63)
					return FMT_PPROF;
				v |= (uint64_t)(b[i] & 0x7f) << sh;
				sh += 7;
			} while (b[i++] & 0x80);
			if ((key & 7) == 2) {
				if (v > len - i)
					return FMT_PPROF;
				i += v;
			}
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		default:
			return FMT_PPROF;
		}
	}
	return len ? FMT_OTLP : FMT_PPROF;
}

static int decode_input(uint8_t *raw, size_t raw_len, struct sp_profile **p,
			enum fmt *fmt, bool *gz)
{
	uint8_t *plain = raw;
	size_t len = raw_len;
	int err;

	*gz = sp_is_gzip(raw, raw_len);
	if (*gz) {
		err = sp_gunzip(raw, raw_len, SP_DECODE_MAX_BYTES, &plain, &len);
		if (err)
			return err;
	}
	*fmt = detect_format(plain, len);
	if (*fmt == FMT_OTLP)
		err = sp_otlp__decode(plain, len, p);
	else
		err = sp_pprof__decode(plain, len, p);
	if (plain != raw)
		free(plain);
	return err;
}

/* ------------------------------------------------------------ statistics */

static void print_stats(const struct sp_symbolize_stats *ss,
			struct sp_resolver *r, struct sp_debuginfo *di,
			struct sp_ksyms_set *ks)
{
	struct sp_ksyms_set_stats ks_st;

	struct sp_resolver_stats rs;
	struct sp_debuginfo_stats ds;

	sp_resolver__stats(r, &rs);
	sp_debuginfo__stats(di, &ds);
	if (ss)
		fprintf(stderr,
			"spanprof-symbolizer: locations %" PRIu64
			": resolved %" PRIu64 " (dwarf %" PRIu64
			", symtab %" PRIu64 ", inlined frames %" PRIu64
			", kernel %" PRIu64 "), unresolved %" PRIu64
			" (kernel %" PRIu64
			", no mapping %" PRIu64 ", no build id %" PRIu64
			", bad build id %" PRIu64 ", out of range %" PRIu64
			", not found %" PRIu64 ", other %" PRIu64
			"), already symbolized %" PRIu64 "\n",
			ss->locations, ss->resolved, ss->resolved_dwarf,
			ss->resolved_symtab, ss->inline_frames,
			ss->resolved_kernel, ss->unresolved,
			ss->unresolved_kernel, ss->unresolved_no_mapping,
			ss->unresolved_no_build_id, ss->unresolved_bad_build_id,
			ss->unresolved_out_of_range, ss->unresolved_not_found,
			ss->unresolved_other, ss->already);
	if (ss && (ss->resolved_kernel || ss->unresolved_kernel))
		fprintf(stderr,
			"spanprof-symbolizer: kernel: resolved %" PRIu64
			", unresolved %" PRIu64 " (no snapshot %" PRIu64
			", build id mismatch %" PRIu64 ", not found %" PRIu64
			", no build id %" PRIu64 ")\n",
			ss->resolved_kernel, ss->unresolved_kernel,
			ss->unresolved_kernel_no_snapshot,
			ss->unresolved_kernel_mismatch,
			ss->unresolved_kernel_not_found,
			ss->unresolved_kernel_no_build_id);
	sp_ksyms_set__stats(ks, &ks_st);
	if (ks_st.loaded || ks_st.load_failed || ks_st.dir_lookups)
		fprintf(stderr,
			"spanprof-symbolizer: kallsyms snapshots %u, load failed %"
			PRIu64 ", dir lookups %" PRIu64 " (misses %" PRIu64
			"), refused %" PRIu64 ", duplicate build id %" PRIu64 "\n",
			ks_st.loaded, ks_st.load_failed, ks_st.dir_lookups,
			ks_st.dir_misses, ks_st.refused,
			ks_st.duplicate_build_id);
	fprintf(stderr,
		"spanprof-symbolizer: cache hits %" PRIu64 " misses %" PRIu64
		" evictions %" PRIu64 " used %u/%u; modules %u (dwarf %u, "
		"no debug info %u)\n",
		rs.cache_hits, rs.cache_misses, rs.cache_evictions,
		rs.cache_used, rs.cache_capacity, rs.modules, rs.modules_dwarf,
		rs.modules_no_debuginfo);
	fprintf(stderr,
		"spanprof-symbolizer: debuginfo lookups %" PRIu64
		" found_dir %" PRIu64 " found_path %" PRIu64
		" found_debuginfod %" PRIu64 " not_found %" PRIu64
		" negative_hits %" PRIu64 " debuginfod_queries %" PRIu64
		" exec_found %" PRIu64 " exec_not_found %" PRIu64 "\n",
		ds.lookups, ds.found_dir, ds.found_path, ds.found_debuginfod,
		ds.not_found, ds.negative_hits, ds.debuginfod_queries,
		ds.exec_found, ds.exec_not_found);
}

/* ------------------------------------------------------------ commands */

struct ctx {
	struct sp_debuginfo *di;
	struct sp_resolver *res;
	struct sp_ksyms_set *ks;
};

/* Kernel symbol snapshots: explicit files (fatal when unreadable), the
 * default IN.kallsyms.gz (a warning), directories (searched later). */
static int load_ksyms(const struct cli *c, struct ctx *x)
{
	char def[4096];
	int err;

	err = sp_ksyms_set__new(&x->ks);
	if (err)
		return err;
	for (size_t i = 0; i < c->n_ks_files; i++) {
		err = sp_ksyms_set__add_file(x->ks, c->ks_files[i]);
		if (err) {
			fprintf(stderr, "spanprof-symbolizer: --kallsyms %s: %s\n",
				c->ks_files[i],
				err == -EINVAL ? "not a spanprof-kallsyms v1 "
						 "snapshot" : strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; i < c->n_ks_dirs; i++) {
		err = sp_ksyms_set__add_dir(x->ks, c->ks_dirs[i]);
		if (err)
			return err;
	}
	if (c->no_kallsyms || !c->in || !strcmp(c->in, "-") ||
	    (size_t)snprintf(def, sizeof(def), "%s.kallsyms.gz", c->in) >=
		    sizeof(def) || access(def, F_OK))
		return 0;
	for (size_t i = 0; i < c->n_ks_files; i++)
		if (!strcmp(c->ks_files[i], def))
			return 0;
	err = sp_ksyms_set__add_file(x->ks, def);
	if (err)
		fprintf(stderr, "spanprof-symbolizer: warning: %s: %s; kernel "
			"frames stay unresolved\n", def,
			err == -EINVAL ? "not a spanprof-kallsyms v1 snapshot"
				       : strerror(-err));
	return 0;
}

static int ctx_init(const struct cli *c, struct ctx *x)
{
	struct sp_debuginfo_opts dopts = {
		.dirs = c->dirs, .n_dirs = c->n_dirs,
		.no_debuginfod = c->no_debuginfod,
	};
	struct sp_resolver_opts ropts = { .cache_entries = c->cache_entries };
	static const char *const def_dirs[] = { "/usr/lib/debug" };
	int err;

	if (!c->n_dirs) {
		dopts.dirs = def_dirs;
		dopts.n_dirs = 1;
	}
	sp_resolver__set_demangler(__cxa_demangle);
	err = sp_debuginfo__new(&dopts, &x->di);
	if (err)
		return err;
	ropts.di = x->di;
	return sp_resolver__new(&ropts, &x->res);
}

static void ctx_fini(struct ctx *x)
{
	sp_resolver__free(x->res);
	sp_debuginfo__free(x->di);
	sp_ksyms_set__free(x->ks);
}

static FILE *open_out(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return stdout;
	return fopen(path, "w");
}

static int close_out(FILE *f)
{
	int err = 0;

	if (!f)
		return 0;
	if (fflush(f) || ferror(f))
		err = -EIO;
	if (f != stdout && fclose(f))
		err = -EIO;
	return err;
}

/*
 * What `file` and `report` do once their outputs are open, in this order:
 * kernel symbol snapshots (when symbolizing), the privilege drop, a usable
 * debuginfod cache, decoding the input (a failure is reported here), and
 * the resolver.  Returns 0 or a negative errno; x is released by ctx_fini.
 */
static int prepare(const struct cli *c, struct ctx *x, bool kernel, uint8_t *raw,
		   size_t raw_len, struct sp_profile **p, enum fmt *in_fmt, bool *gz)
{
	int err;

	if (kernel) {
		err = load_ksyms(c, x);
		if (err)
			return err;
	}
	err = drop_privileges(c);
	if (err)
		return err;
	setup_debuginfod_cache(c);
	err = decode_input(raw, raw_len, p, in_fmt, gz);
	if (err) {
		fprintf(stderr, "spanprof-symbolizer: %s: cannot decode: %s\n",
			c->in, input_error(err, true));
		return err;
	}
	return ctx_init(c, x);
}

static int cmd_file(struct cli *c)
{
	struct sp_symbolize_stats ss;
	struct sp_profile *p = NULL;
	struct ctx x = { 0 };
	uint8_t *raw = NULL, *enc = NULL, *gzb = NULL;
	size_t raw_len = 0, enc_len = 0, gz_len = 0;
	enum fmt in_fmt, out_fmt;
	FILE *out = NULL;
	bool gz;
	int err;

	if (!c->out && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "spanprof-symbolizer: file: use -o OUT (stdout "
			"is a terminal)\n");
		return 2;
	}
	err = sp_read_path(c->in, SP_DECODE_MAX_BYTES, &raw, &raw_len);
	if (err) {
		fprintf(stderr, "spanprof-symbolizer: %s: %s\n", c->in,
			input_error(err, false));
		return 1;
	}
	out = open_out(c->out);
	if (!out) {
		fprintf(stderr, "spanprof-symbolizer: %s: %s\n", c->out,
			strerror(errno));
		err = -errno;
		goto out;
	}
	err = prepare(c, &x, !c->no_symbolize, raw, raw_len, &p, &in_fmt, &gz);
	if (err)
		goto out;
	if (c->no_symbolize)
		memset(&ss, 0, sizeof(ss));
	else
		err = sp_symbolize__profile_ks(x.res, x.ks, p, &ss);
	if (err)
		goto out;
	out_fmt = c->format == FMT_AUTO ? in_fmt : c->format;
	err = out_fmt == FMT_OTLP ? sp_otlp__encode(p, &enc, &enc_len)
				  : sp_pprof__encode(p, &enc, &enc_len);
	if (err) {
		fprintf(stderr, "spanprof-symbolizer: encode: %s\n",
			strerror(-err));
		goto out;
	}
	if (gz) {
		err = sp_gzip(enc, enc_len, &gzb, &gz_len);
		if (err)
			goto out;
	}
	if (fwrite(gz ? gzb : enc, 1, gz ? gz_len : enc_len, out) !=
	    (gz ? gz_len : enc_len))
		err = -EIO;
	if (!c->quiet)
		print_stats(&ss, x.res, x.di, x.ks);
out:
	if (close_out(out) && !err)
		err = -EIO;
	free(gzb);
	free(enc);
	free(raw);
	sp_profile__free(p);
	ctx_fini(&x);
	return err ? 1 : 0;
}

static int cmd_report(struct cli *c)
{
	struct sp_symbolize_stats ss;
	struct sp_profile *p = NULL;
	struct sp_report *rep = NULL;
	struct ctx x = { 0 };
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	FILE *out = NULL, *fgf = NULL;
	enum fmt in_fmt;
	int err, kind;
	bool gz, any;

	err = sp_read_path(c->in, SP_DECODE_MAX_BYTES, &raw, &raw_len);
	if (err) {
		fprintf(stderr, "spanprof-symbolizer: %s: %s\n", c->in,
			input_error(err, false));
		return 1;
	}
	out = open_out(c->out);
	if (!out) {
		err = -errno;
		fprintf(stderr, "spanprof-symbolizer: %s: %s\n", c->out,
			strerror(errno));
		goto out;
	}
	if (c->flamegraph) {
		fgf = fopen(c->flamegraph, "w");
		if (!fgf) {
			err = -errno;
			fprintf(stderr, "spanprof-symbolizer: %s: %s\n",
				c->flamegraph, strerror(errno));
			goto out;
		}
	}
	err = prepare(c, &x, true, raw, raw_len, &p, &in_fmt, &gz);
	if (err)
		goto out;
	err = sp_symbolize__profile_ks(x.res, x.ks, p, &ss);
	if (err)
		goto out;
	err = sp_report__new(p, &c->ropts, &rep);
	if (err)
		goto out;
	kind = c->kind;
	if (kind < 0)
		kind = sp_report__has_kind(rep, SP_KIND_ONCPU) ||
			       !sp_report__has_kind(rep, SP_KIND_OFFCPU) ?
			       SP_KIND_ONCPU : SP_KIND_OFFCPU;
	any = c->top_set || c->collapsed || c->by_span || c->flamegraph;
	if (c->top_set || !any) {
		err = sp_report__top(rep, kind, c->top_set ? c->top : 20, out);
		if (err)
			goto out;
	}
	if (c->collapsed) {
		err = sp_report__collapsed(rep, kind, out);
		if (err)
			goto out;
	}
	if (c->by_span) {
		if (c->top_set || !any)
			fputc('\n', out);
		err = sp_report__by_span(rep, 3, out);
		if (err)
			goto out;
	}
	if (fgf) {
		err = sp_report__flamegraph(rep, c->title ? c->title : c->in,
					    fgf);
		if (err)
			goto out;
		if (!c->quiet)
			fprintf(stderr, "spanprof-symbolizer: flame graph: %s\n",
				c->flamegraph);
	}
	if (!c->quiet)
		print_stats(&ss, x.res, x.di, x.ks);
out:
	if (close_out(out) && !err)
		err = -EIO;
	if (close_out(fgf) && !err)
		err = -EIO;
	sp_report__free(rep);
	free(raw);
	sp_profile__free(p);
	ctx_fini(&x);
	return err ? 1 : 0;
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

static int addr_one(struct cli *c, struct ctx *x, const char *id,
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
	rc = c->is_offset ? sp_resolver__resolve(x->res, id, c->elf, a, &fr)
			  : sp_resolver__resolve_vaddr(x->res, id, c->elf, a,
						       &fr);
	if (rc == -ENOMEM)
		return rc;
	print_frames(&fr, rc);
	return 0;
}

static int cmd_addr(struct cli *c)
{
	char id[SP_BUILDID_MAX_HEX + 1];
	struct ctx x = { 0 };
	char line[256];
	int err;

	if (!c->elf) {
		fprintf(stderr, "spanprof-symbolizer: addr needs -e ELF\n");
		return 2;
	}
	err = drop_privileges(c);
	if (err)
		return 1;
	setup_debuginfod_cache(c);
	err = sp_buildid__read_file(c->elf, id, sizeof(id));
	if (err) {
		fprintf(stderr, "spanprof-symbolizer: %s: no GNU build id (%s)\n",
			c->elf, strerror(-err));
		return 1;
	}
	err = ctx_init(c, &x);
	if (err)
		goto out;
	if (c->n_args) {
		for (int i = 0; i < c->n_args && !err; i++)
			err = addr_one(c, &x, id, c->args[i]);
	} else {
		struct stat st;
		/* answer each line at once when driven through a pipe (as
		 * llvm-symbolizer is); a file on stdin needs no flushing */
		bool flush = fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode);

		while (!err && fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\r\n")] = '\0';
			err = addr_one(c, &x, id, line);
			if (flush)
				fflush(stdout);
		}
	}
	if (!c->quiet)
		print_stats(NULL, x.res, x.di, x.ks);
out:
	ctx_fini(&x);
	return err ? 1 : 0;
}

static int cmd_lookup(struct cli *c)
{
	struct ctx x = { 0 };
	int err, found = 0;

	err = drop_privileges(c);
	if (err)
		return 1;
	setup_debuginfod_cache(c);
	err = ctx_init(c, &x);
	if (err)
		goto out;
	for (int i = 0; i < c->n_args; i++) {
		enum sp_debuginfo_source src;
		char *path = NULL;
		int rc = sp_debuginfo__find(x.di, c->args[i], c->hint, &path,
					    &src);

		if (rc)
			printf("%s not-found %s\n", c->args[i], strerror(-rc));
		else
			printf("%s %s %s\n", c->args[i],
			       sp_debuginfo__source_name(src), path);
		found += !rc;
		free(path);
	}
	if (!c->quiet)
		print_stats(NULL, x.res, x.di, x.ks);
out:
	ctx_fini(&x);
	if (err)
		return 1;
	return found == c->n_args ? 0 : 3;
}

static volatile bool stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = true;
}

static int serve_after_bind(void *arg)
{
	const struct cli *c = arg;
	int err = drop_privileges(c);

	if (!err)
		setup_debuginfod_cache(c);
	return err;
}

static int cmd_serve(struct cli *c)
{
	struct sp_serve_opts o = {
		.listen = c->listen ? c->listen : "127.0.0.1:4318",
		.forward_url = c->forward,
		.output_dir = c->output_dir,
		.queue_len = c->queue,
		.workers = c->workers,
		.max_body = c->max_body,
		.quiet = c->quiet,
		.after_bind = serve_after_bind,
		.after_bind_arg = c,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct ctx x = { 0 };
	int err;

	if (!c->forward && !c->output_dir) {
		fprintf(stderr, "spanprof-symbolizer: serve needs --forward URL "
			"and/or --output-dir DIR\n");
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = load_ksyms(c, &x);
	if (err)
		goto out;
	err = ctx_init(c, &x);
	if (err)
		goto out;
	o.resolver = x.res;
	o.ksyms = x.ks;
	err = sp_serve__run(&o, &stop_flag);
	if (!c->quiet)
		print_stats(NULL, x.res, x.di, x.ks);
out:
	ctx_fini(&x);
	if (err == -EINVAL)
		fprintf(stderr, "spanprof-symbolizer: serve: bad --listen\n");
	return err ? 1 : 0;
}

/* ------------------------------------------------------------ parsing */

enum {
	OPT_FORMAT = 256, OPT_TOP, OPT_COLLAPSED, OPT_FLAMEGRAPH, OPT_BY_SPAN,
	OPT_TRACE, OPT_SPAN, OPT_KIND, OPT_DEBUG_DIR, OPT_NO_DEBUGINFOD,
	OPT_CACHE, OPT_ALLOW_ROOT, OPT_USER, OPT_QUIET, OPT_HINT, OPT_OFFSET,
	OPT_TITLE, OPT_LISTEN, OPT_FORWARD, OPT_OUTPUT_DIR, OPT_QUEUE,
	OPT_WORKERS, OPT_MAX_BODY, OPT_NO_SYMBOLIZE, OPT_KALLSYMS,
	OPT_KALLSYMS_DIR, OPT_NO_KALLSYMS,
};

static const struct option long_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "collapsed", no_argument, NULL, OPT_COLLAPSED },
	{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
	{ "by-span", no_argument, NULL, OPT_BY_SPAN },
	{ "trace-id", required_argument, NULL, OPT_TRACE },
	{ "span-id", required_argument, NULL, OPT_SPAN },
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
	{ "cache-entries", required_argument, NULL, OPT_CACHE },
	{ "allow-root", no_argument, NULL, OPT_ALLOW_ROOT },
	{ "user", required_argument, NULL, OPT_USER },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "hint", required_argument, NULL, OPT_HINT },
	{ "offset", no_argument, NULL, OPT_OFFSET },
	{ "no-symbolize", no_argument, NULL, OPT_NO_SYMBOLIZE },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "forward", required_argument, NULL, OPT_FORWARD },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "kallsyms", required_argument, NULL, OPT_KALLSYMS },
	{ "kallsyms-dir", required_argument, NULL, OPT_KALLSYMS_DIR },
	{ "no-kallsyms", no_argument, NULL, OPT_NO_KALLSYMS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
	int opt;

	memset(c, 0, sizeof(*c));
	c->kind = -1;
	if (argc < 2)
		return -EINVAL;
	c->cmd = argv[1];
	argc--;
	argv++;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:e:hq", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			c->out = optarg;
			break;
		case 'e':
			c->elf = optarg;
			break;
		case 'q':
		case OPT_QUIET:
			c->quiet = true;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "pprof"))
				c->format = FMT_PPROF;
			else if (!strcmp(optarg, "otlp"))
				c->format = FMT_OTLP;
			else
				return -EINVAL;
			break;
		case OPT_TOP:
			if (parse_u32(optarg, &c->top) || !c->top)
				return -EINVAL;
			c->top_set = true;
			break;
		case OPT_COLLAPSED:
			c->collapsed = true;
			break;
		case OPT_FLAMEGRAPH:
			c->flamegraph = optarg;
			break;
		case OPT_BY_SPAN:
			c->by_span = true;
			break;
		case OPT_TRACE:
			if (sp_report__parse_hex(optarg, c->ropts.trace_id, 16))
				return -EINVAL;
			c->ropts.filter_trace = true;
			break;
		case OPT_SPAN:
			if (sp_report__parse_hex(optarg, c->ropts.span_id, 8))
				return -EINVAL;
			c->ropts.filter_span = true;
			break;
		case OPT_KIND:
			if (!strcmp(optarg, "oncpu"))
				c->kind = SP_KIND_ONCPU;
			else if (!strcmp(optarg, "offcpu"))
				c->kind = SP_KIND_OFFCPU;
			else
				return -EINVAL;
			break;
		case OPT_TITLE:
			c->title = optarg;
			break;
		case OPT_DEBUG_DIR:
			if (c->n_dirs == MAX_DIRS)
				return -E2BIG;
			c->dirs[c->n_dirs++] = optarg;
			break;
		case OPT_KALLSYMS:
			if (c->n_ks_files == MAX_DIRS)
				return -E2BIG;
			c->ks_files[c->n_ks_files++] = optarg;
			break;
		case OPT_KALLSYMS_DIR:
			if (c->n_ks_dirs == MAX_DIRS)
				return -E2BIG;
			c->ks_dirs[c->n_ks_dirs++] = optarg;
			break;
		case OPT_NO_KALLSYMS:
			c->no_kallsyms = true;
			break;
		case OPT_NO_DEBUGINFOD:
			c->no_debuginfod = true;
			break;
		case OPT_CACHE:
			if (parse_u32(optarg, &c->cache_entries))
				return -EINVAL;
			break;
		case OPT_ALLOW_ROOT:
			c->allow_root = true;
			break;
		case OPT_USER:
			c->user = optarg;
			break;
		case OPT_HINT:
			c->hint = optarg;
			break;
		case OPT_OFFSET:
			c->is_offset = true;
			break;
		case OPT_NO_SYMBOLIZE:
			c->no_symbolize = true;
			break;
		case OPT_LISTEN:
			c->listen = optarg;
			break;
		case OPT_FORWARD:
			c->forward = optarg;
			break;
		case OPT_OUTPUT_DIR:
			c->output_dir = optarg;
			break;
		case OPT_QUEUE:
			if (parse_u32(optarg, &c->queue) || !c->queue)
				return -EINVAL;
			break;
		case OPT_WORKERS:
			if (parse_u32(optarg, &c->workers) || !c->workers ||
			    c->workers > 64)
				return -EINVAL;
			break;
		case OPT_MAX_BODY:
			if (parse_u32(optarg, &c->max_body) || !c->max_body)
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (!strcmp(c->cmd, "file") || !strcmp(c->cmd, "report")) {
		if (optind != argc - 1)
			return -EINVAL;
		c->in = argv[optind];
	} else {
		c->args = argv + optind;
		c->n_args = argc - optind;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "help"))) {
		usage(stdout);
		return 0;
	}
	if (parse_args(argc, argv, &c)) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(c.cmd, "file"))
		return cmd_file(&c);
	if (!strcmp(c.cmd, "report"))
		return cmd_report(&c);
	if (!strcmp(c.cmd, "addr"))
		return cmd_addr(&c);
	if (!strcmp(c.cmd, "serve")) {
		if (c.n_args) {
			usage(stderr);
			return 2;
		}
		return cmd_serve(&c);
	}
	if (!strcmp(c.cmd, "lookup")) {
		if (!c.n_args) {
			usage(stderr);
			return 2;
		}
		return cmd_lookup(&c);
	}
	fprintf(stderr, "spanprof-symbolizer: unknown command '%s'\n", c.cmd);
	usage(stderr);
	return 2;
}
