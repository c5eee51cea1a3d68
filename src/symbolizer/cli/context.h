/* SPDX-License-Identifier: MIT */
/*
 * context.h - what the commands build from their group options: the
 * debug-info finder, the resolver and the kernel symbol snapshots, and the
 * statistics lines they print on stderr.
 *
 * sp_sym_ctx__load_ksyms: every --kallsyms FILE (a failure is fatal, one
 *   line), every --kallsyms-dir DIR (searched later, per build id), and,
 *   unless --no-kallsyms or in is NULL or "-", IN.kallsyms.gz next to the
 *   input when it exists (a failure is a warning).  Loads before the
 *   privilege drop, like the input.  Also the host-symbol stores: every
 *   --store DIR and IN.syms/ (unless --no-syms-dir), each searched for
 *   kernel snapshots (as a --kallsyms-dir), ELF images by build id (as a
 *   --debug-dir: the vDSO) and JIT pieces.
 * sp_sym_ctx__open: the finder (--debug-dir, default /usr/lib/debug;
 *   --no-debuginfod) and the resolver (--cache-entries).
 * sp_sym_ctx__symbolize_input: what `file` and `report` do once their
 *   outputs are open, in this order: kernel snapshots (when symbolize), the
 *   privilege drop, a usable debuginfod cache, decoding the input, the
 *   resolver; then, when symbolize, every location of in->p resolved
 *   (sp_symbolize__run, counted in *ss).
 * All return 0 or a negative errno (reported on stderr); x is released by
 * sp_sym_ctx__close (NULL-safe fields).
 * sp_sym_ctx__print_stats: resolution (when ss), kernel, snapshot, cache
 *   and debug-info counters, one line each.
 */
#ifndef SPANPROF_SYMBOLIZER_CONTEXT_H
#define SPANPROF_SYMBOLIZER_CONTEXT_H

#include <stdbool.h>

#include "symbolizer/cli/cli.h"
#include "symbolizer/cli/input.h"
#include "symbolizer/debuginfo.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/resolve.h"
#include "symbolizer/symbolize.h"

struct sp_sym_ctx {
	struct sp_debuginfo *di;
	struct sp_resolver *res;
	struct sp_ksyms_set *ks;	/* NULL: no kernel snapshots */
	struct sp_jit_syms *jit;	/* JIT pieces of the stores */
	/* host-symbol stores (base/symstore.h): every --store, IN.syms/ */
	const char *stores[SP_CLI_MAX_DIRS + 1];
	size_t n_stores;
	char in_store[4096];		/* IN.syms when used */
};

/* The three sources for sp_symbolize__run. */
struct sp_symbolize_sources sp_sym_ctx__sources(const struct sp_sym_ctx *x);

int sp_sym_ctx__load_ksyms(struct sp_sym_ctx *x, const struct sp_common_opts *c,
			   const char *in);
int sp_sym_ctx__open(struct sp_sym_ctx *x, const struct sp_common_opts *c);
int sp_sym_ctx__symbolize_input(struct sp_sym_ctx *x, const struct sp_common_opts *c,
				bool symbolize, struct sp_input *in, const char *path,
				struct sp_symbolize_stats *ss);
void sp_sym_ctx__close(struct sp_sym_ctx *x);
/* The end of a command that read in and wrote to out: closes out (a
 * failure there is -EIO unless err already says), frees in, closes x;
 * returns the exit status, 1 when err, else 0. */
int sp_sym_ctx__finish(struct sp_sym_ctx *x, struct sp_input *in, FILE *out, int err);
void sp_sym_ctx__print_stats(struct sp_sym_ctx *x, const struct sp_symbolize_stats *ss);

#endif /* SPANPROF_SYMBOLIZER_CONTEXT_H */
