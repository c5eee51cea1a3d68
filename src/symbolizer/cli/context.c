// SPDX-License-Identifier: MIT
/*
 * context.c - finder, resolver, kernel snapshots and statistics for the
 * commands (contract: context.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/symstore.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/cli/privs.h"

static const char *ksyms_error(int err)
{
	return err == -EINVAL ? "not a spanprof-kallsyms v1 snapshot" : strerror(-err);
}

int sp_sym_ctx__load_ksyms(struct sp_sym_ctx *x, const struct sp_common_opts *c,
			   const char *in)
{
	char def[4096];
	int err;

	err = sp_ksyms_set__new(&x->ks);
	if (err)
		return err;
	for (size_t i = 0; i < c->n_ks_files; i++) {
		err = sp_ksyms_set__add_file(x->ks, c->ks_files[i]);
		if (err) {
			fprintf(stderr, SP_CLI_PROG ": --kallsyms %s: %s\n", c->ks_files[i],
				ksyms_error(err));
			return err;
		}
	}
	for (size_t i = 0; i < c->n_ks_dirs; i++) {
		err = sp_ksyms_set__add_dir(x->ks, c->ks_dirs[i]);
		if (err) {
			fprintf(stderr, SP_CLI_PROG ": --kallsyms-dir %s: %s\n", c->ks_dirs[i],
				strerror(-err));
			return err;
		}
	}
	err = sp_jit_syms__new(NULL, &x->jit);
	if (err)
		return err;
	for (size_t i = 0; i < c->n_stores; i++)
		x->stores[x->n_stores++] = c->stores[i];
	if (!c->no_syms_dir && in && strcmp(in, "-") &&
	    (size_t)snprintf(x->in_store, sizeof(x->in_store), "%s" SP_SYMS_DIR_SUFFIX, in) <
		    sizeof(x->in_store) &&
	    !access(x->in_store, F_OK))
		x->stores[x->n_stores++] = x->in_store;
	for (size_t i = 0; i < x->n_stores; i++) {
		err = sp_ksyms_set__add_dir(x->ks, x->stores[i]);
		if (!err)
			err = sp_jit_syms__add_dir(x->jit, x->stores[i]);
		if (err) {
			fprintf(stderr, SP_CLI_PROG ": --store %s: %s\n", x->stores[i],
				strerror(-err));
			return err;
		}
	}
	if (c->no_kallsyms || !in || !strcmp(in, "-") ||
	    (size_t)snprintf(def, sizeof(def), "%s" SP_KALLSYMS_SUFFIX, in) >= sizeof(def) ||
	    access(def, F_OK))
		return 0;
	for (size_t i = 0; i < c->n_ks_files; i++)
		if (!strcmp(c->ks_files[i], def))
			return 0;
	err = sp_ksyms_set__add_file(x->ks, def);
	if (err)
		fprintf(stderr, SP_CLI_PROG ": warning: %s: %s; kernel frames stay unresolved\n",
			def, ksyms_error(err));
	return 0;
}

int sp_sym_ctx__open(struct sp_sym_ctx *x, const struct sp_common_opts *c)
{
	const char *dirs[2 * SP_CLI_MAX_DIRS + 2];
	struct sp_debuginfo_opts dopts = {
		.dirs = dirs, .no_debuginfod = c->no_debuginfod,
	};
	struct sp_resolver_opts ropts = {
		.cache_entries = c->cache_entries,
		.unit_budget = (size_t)c->unit_budget_mib << 20,
	};
	int err;

	/* the stores hold ELF images (the vDSO) under .build-id/ too */
	for (size_t i = 0; i < c->n_dirs; i++)
		dirs[dopts.n_dirs++] = c->dirs[i];
	if (!c->n_dirs)
		dirs[dopts.n_dirs++] = "/usr/lib/debug";
	for (size_t i = 0; i < x->n_stores; i++)
		dirs[dopts.n_dirs++] = x->stores[i];
	err = sp_debuginfo__new(&dopts, &x->di);
	if (!err) {
		ropts.di = x->di;
		err = sp_resolver__new(&ropts, &x->res);
	}
	if (err)
		fprintf(stderr, SP_CLI_PROG ": cannot set up the resolver: %s\n",
			strerror(-err));
	return err;
}

static int prepare(struct sp_sym_ctx *x, const struct sp_common_opts *c, bool kernel,
		   struct sp_input *in, const char *path)
{
	int err;

	if (kernel) {
		err = sp_sym_ctx__load_ksyms(x, c, path);
		if (err)
			return err;
	}
	err = sp_privs__drop(c);
	if (err)
		return err;
	err = sp_input__decode(in, path);
	if (err)
		return err;
	return sp_sym_ctx__open(x, c);
}

int sp_sym_ctx__symbolize_input(struct sp_sym_ctx *x, const struct sp_common_opts *c,
				bool symbolize, struct sp_input *in, const char *path,
				struct sp_symbolize_stats *ss)
{
	struct sp_symbolize_sources src;
	int err = prepare(x, c, symbolize, in, path);

	if (err || !symbolize)
		return err;
	src = sp_sym_ctx__sources(x);
	return sp_symbolize__run(&src, in->p, ss);
}

int sp_sym_ctx__finish(struct sp_sym_ctx *x, struct sp_input *in, FILE *out, int err)
{
	if (sp_output__close(out) && !err)
		err = -EIO;
	sp_input__free(in);
	sp_sym_ctx__close(x);
	return err ? 1 : 0;
}

void sp_sym_ctx__close(struct sp_sym_ctx *x)
{
	sp_resolver__free(x->res);
	sp_debuginfo__free(x->di);
	sp_ksyms_set__free(x->ks);
	sp_jit_syms__free(x->jit);
	x->res = NULL;
	x->di = NULL;
	x->ks = NULL;
	x->jit = NULL;
}

struct sp_symbolize_sources sp_sym_ctx__sources(const struct sp_sym_ctx *x)
{
	return (struct sp_symbolize_sources){ .resolver = x->res, .ksyms = x->ks,
					      .jit = x->jit };
}

void sp_sym_ctx__print_stats(struct sp_sym_ctx *x, const struct sp_symbolize_stats *ss)
{
	struct sp_ksyms_set_stats ks_st;
	struct sp_resolver_stats rs;
	struct sp_debuginfo_stats ds;

	sp_resolver__stats(x->res, &rs);
	sp_debuginfo__stats(x->di, &ds);
	if (ss)
		fprintf(stderr,
			SP_CLI_PROG ": locations %" PRIu64
			": resolved %" PRIu64 " (dwarf %" PRIu64
			", symtab %" PRIu64 ", gopclntab %" PRIu64 ", inlined frames %" PRIu64
			", kernel %" PRIu64 ", jit %" PRIu64 "), unresolved %" PRIu64
			" (kernel %" PRIu64 ", jit %" PRIu64
			", no mapping %" PRIu64 ", no build id %" PRIu64
			", bad build id %" PRIu64 ", out of range %" PRIu64
			", not found %" PRIu64 ", other %" PRIu64
			"), already symbolized %" PRIu64 "\n",
			ss->locations, ss->resolved, ss->resolved_dwarf,
			ss->resolved_symtab, ss->resolved_gopclntab, ss->inline_frames,
			ss->resolved_kernel, ss->resolved_jit, ss->unresolved,
			ss->unresolved_kernel, ss->unresolved_jit, ss->unresolved_no_mapping,
			ss->unresolved_no_build_id, ss->unresolved_bad_build_id,
			ss->unresolved_out_of_range, ss->unresolved_not_found,
			ss->unresolved_other, ss->already);
	if (ss && (ss->resolved_kernel || ss->unresolved_kernel))
		fprintf(stderr,
			SP_CLI_PROG ": kernel: resolved %" PRIu64
			", unresolved %" PRIu64 " (no snapshot %" PRIu64
			", build id mismatch %" PRIu64 ", not found %" PRIu64
			", no build id %" PRIu64 "); from vmlinux debug info %" PRIu64
			", from module debug info %" PRIu64 " (not from it: no debug file %" PRIu64
			", build id mismatch %" PRIu64 ", no line %" PRIu64 ")\n",
			ss->resolved_kernel, ss->unresolved_kernel,
			ss->unresolved_kernel_no_snapshot,
			ss->unresolved_kernel_mismatch,
			ss->unresolved_kernel_not_found,
			ss->unresolved_kernel_no_build_id, ss->resolved_kernel_dwarf,
			ss->resolved_module_dwarf, ss->module_dwarf_missing,
			ss->module_dwarf_mismatch, ss->module_dwarf_no_line);
	if (ss && (ss->resolved_jit || ss->unresolved_jit)) {
		struct sp_jit_syms_stats js;

		sp_jit_syms__stats(x->jit, &js);
		fprintf(stderr,
			SP_CLI_PROG ": jit: resolved %" PRIu64 " (with file:line %" PRIu64
			"), unresolved %" PRIu64 " (no snapshot %" PRIu64 ", not found %" PRIu64
			"); perf-map chains %" PRIu64 " (missing %" PRIu64 ", refused %" PRIu64
			", too big %" PRIu64 ", lines refused %" PRIu64 ", line rows refused %"
			PRIu64 ")\n",
			ss->resolved_jit, ss->resolved_jit_lines, ss->unresolved_jit,
			ss->unresolved_jit_no_snapshot, ss->unresolved_jit_not_found,
			js.chains_loaded, js.missing, js.bad_piece, js.too_big, js.lines_refused,
			js.rows_refused);
	}
	sp_ksyms_set__stats(x->ks, &ks_st);
	if (ks_st.loaded || ks_st.load_failed || ks_st.dir_lookups)
		fprintf(stderr,
			SP_CLI_PROG ": kallsyms snapshots %u, load failed %"
			PRIu64 ", dir lookups %" PRIu64 " (misses %" PRIu64
			"), refused %" PRIu64 ", duplicate build id %" PRIu64 "\n",
			ks_st.loaded, ks_st.load_failed, ks_st.dir_lookups,
			ks_st.dir_misses, ks_st.refused,
			ks_st.duplicate_build_id);
	fprintf(stderr,
		SP_CLI_PROG ": cache hits %" PRIu64 " misses %" PRIu64
		" evictions %" PRIu64 " used %u/%u; modules %u (dwarf %u, "
		"no debug info %u)\n",
		rs.cache_hits, rs.cache_misses, rs.cache_evictions,
		rs.cache_used, rs.cache_capacity, rs.modules, rs.modules_dwarf,
		rs.modules_no_debuginfo);
	fprintf(stderr,
		SP_CLI_PROG ": units decoded %" PRIu64 " evicted %" PRIu64 " holding %" PRIu64
		"/%" PRIu64 " bytes; functions indexed %" PRIu64 " (through libdw %" PRIu64
		"), nested scans %" PRIu64
		", line tables through libdw %" PRIu64 ", bad units %" PRIu64 "\n",
		rs.units_decoded, rs.units_evicted, rs.unit_bytes, rs.unit_budget,
		rs.functions_indexed, rs.inline_walks_libdw, rs.nested_scans, rs.lines_libdw, rs.bad_dwarf_units);
	fprintf(stderr,
		SP_CLI_PROG ": module debug info (.ko) holding %" PRIu64 " bytes of the unit "
		"budget; refused %" PRIu64 " (%" PRIu64 " bytes: named from symbols; raise "
		"--unit-budget)\n",
		rs.ko_debug_bytes, rs.ko_debug_refused, rs.ko_debug_refused_bytes);
	fprintf(stderr,
		SP_CLI_PROG ": debuginfo lookups %" PRIu64
		" found_dir %" PRIu64 " found_path %" PRIu64
		" found_debuginfod %" PRIu64 " not_found %" PRIu64
		" negative_hits %" PRIu64 " debuginfod_queries %" PRIu64
		" exec_found %" PRIu64 " exec_not_found %" PRIu64
		" rejected_build_id %" PRIu64 " kernel_tree_skipped %" PRIu64 "\n",
		ds.lookups, ds.found_dir, ds.found_path, ds.found_debuginfod,
		ds.not_found, ds.negative_hits, ds.debuginfod_queries,
		ds.exec_found, ds.exec_not_found, ds.rejected_build_id, ds.ktree_skipped);
}
