/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.h - find the debug information of an ELF object by GNU build id.
 *
 * Contract:
 *   - A build id is accepted only as lower-case hex of even length 2..128
 *     (sp_buildid__validate, base/buildid.h).  Anything else is -EINVAL before any path is
 *     formed, so "../../etc" or "AB" can never reach the file system.
 *   - Search order for sp_debuginfo__find():
 *       1. every configured build-id directory DIR, in order:
 *          DIR/.build-id/ab/cdef....debug, then DIR/.build-id/ab/cdef....
 *          (the executable itself); DIR may also be given as the
 *          ".build-id" directory itself.  A candidate is accepted only
 *          when its own build id matches.
 *       1b. for a kernel mapping's hint ("[kernel.kallsyms]",
 *          "[module:NAME]": never used as a path), every DIR's kernel
 *          tree by name (ktree.h: DIR/lib/modules/RELEASE/.../NAME.ko,
 *          .../vmlinux, DIR/boot/vmlinux-RELEASE, as Debian's and
 *          Fedora's debug packages install them), the build id again
 *          deciding.
 *       2. the hint path (the mapping's file name), only when its build id
 *          matches and it carries DWARF; a matching but stripped hint is
 *          kept as the fallback (its .symtab/.dynsym) and returned only
 *          when debuginfod has nothing better;
 *       3. debuginfod through libdebuginfod (DEBUGINFOD_URLS, its cache,
 *          DEBUGINFOD_CACHE_PATH, timeouts), unless disabled; what it
 *          delivers is accepted only when its own build id matches too.
 *          A build id debuginfod could not deliver (or delivered with
 *          another id) is remembered in a bounded negative cache (FIFO
 *          eviction, optional TTL) and is not asked again.
 *   - A candidate of another build id (at DIR/.build-id/ab/cdef...[.debug],
 *     or from debuginfod) is counted in rejected_build_id; a lookup that
 *     found nothing else fails with -ENOENT and *src = SP_DI_MISMATCH, so
 *     a caller can tell "a wrong file is installed" from "nothing is".
 *   - Every lookup ends in exactly one of the counters found_dir,
 *     found_path, found_debuginfod, not_found; negative_hits counts lookups
 *     answered by the negative cache (these also count in not_found).
 *   - Thread safe: one mutex guards the counters and the negative cache.
 *     A debuginfod query runs outside it on a client of its own
 *     (libdebuginfod clients are not safe for concurrent use: idle ones
 *     are kept for reuse, so there are as many as concurrent queries), so
 *     a slow download delays only the lookup waiting for it.
 *   - Errors are negative errno: -EINVAL bad build id, -ENOENT not found,
 *     -ENOMEM.
 */
#ifndef SPANPROF_SYMBOLIZER_DEBUGINFO_H
#define SPANPROF_SYMBOLIZER_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buildid.h"	/* sp_buildid__validate, SP_BUILDID_MAX_HEX */


enum sp_debuginfo_source {
	SP_DI_NONE = 0,
	SP_DI_DIR,		/* a configured build-id directory */
	SP_DI_PATH,		/* the hint path (mapped file) */
	SP_DI_DEBUGINFOD,
	SP_DI_MISMATCH,		/* not found: only files of another build id */
};

struct sp_debuginfo_opts {
	const char *const *dirs;	/* build-id directories; may be NULL */
	size_t n_dirs;
	bool no_debuginfod;		/* never ask debuginfod */
	uint32_t neg_cache_entries;	/* 0 = default (4096) */
	uint32_t neg_ttl_s;		/* 0 = negative entries never expire */
};

struct sp_debuginfo_stats {
	uint64_t lookups;
	uint64_t found_dir;
	uint64_t found_path;
	uint64_t found_debuginfod;
	uint64_t not_found;
	uint64_t negative_hits;
	uint64_t debuginfod_queries;	/* calls into libdebuginfod */
	uint64_t invalid_build_id;
	uint64_t rejected_build_id;	/* candidates of another build id */
	uint64_t ktree_skipped;		/* kernel-tree files over the bound */
	uint64_t exec_found;		/* sp_debuginfo__find_exec */
	uint64_t exec_not_found;
};

struct sp_debuginfo;

int sp_debuginfo__new(const struct sp_debuginfo_opts *opts,
		      struct sp_debuginfo **out);
void sp_debuginfo__free(struct sp_debuginfo *d);	/* NULL-safe */

/* Finds a file holding the debug info (or at least the symbols) of
 * build_id.  hint_path may be NULL.  On success *path_out is a malloc'd
 * path the caller frees and *src says where it came from. */
int sp_debuginfo__find(struct sp_debuginfo *d, const char *build_id,
		       const char *hint_path, char **path_out,
		       enum sp_debuginfo_source *src);

/* Finds the executable (or shared object) itself, for its program headers
 * when the debug file's are unusable (objcopy --only-keep-debug zeroes
 * p_offset/p_filesz): DIR/.build-id/ab/cdef... (no .debug), the hint path
 * when its build id matches, then debuginfod_find_executable (with its own
 * negative cache entries).  Counted in exec_found / exec_not_found only. */
int sp_debuginfo__find_exec(struct sp_debuginfo *d, const char *build_id,
			    const char *hint_path, char **path_out);

void sp_debuginfo__stats(struct sp_debuginfo *d, struct sp_debuginfo_stats *st);
const char *sp_debuginfo__source_name(enum sp_debuginfo_source src);

#endif /* SPANPROF_SYMBOLIZER_DEBUGINFO_H */
