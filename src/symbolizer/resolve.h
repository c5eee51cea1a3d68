/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - (build id, address) -> function, file, line, column, with
 * inlined frames, from DWARF (libdw) or, without DWARF, a Go binary's
 * .gopclntab (base/gopclntab.h: function, file, line, inlined calls; no
 * columns) or ELF symbol tables.  Build ids are GNU ids (hex) or, for Go
 * binaries without one, Go build ids (base/buildid.h).
 *
 * Contract:
 *   - Addresses are either a file offset inside the mapped ELF file
 *     (sp_resolver__resolve: what a profile Location gives after
 *     addr - memory_start + file_offset), an ELF virtual address
 *     (sp_resolver__resolve_vaddr: what llvm-symbolizer and eu-addr2line
 *     take), or an offset in the file's .text section
 *     (sp_resolver__resolve_text: a kernel module frame).  A file offset
 *     becomes a virtual address through the PT_LOAD segment that contains
 *     it: vaddr = off - p_offset + p_vaddr; a .text offset through .text's
 *     sh_addr (an offset at or past .text's size: -ENOENT).
 *   - A relocatable file (ET_REL: a kernel module's .ko, or its debug
 *     file) is read as libdwfl lays it out (relobj.h): sections at
 *     distinct addresses, symbols at their section's address plus value,
 *     DWARF relocated.  Its virtual addresses are that layout's, so
 *     sp_resolver__resolve_text is the way to ask it.
 *   - A result is a chain of frames, inlined callees first, the real
 *     (out-of-line) function last: frame 0 has the line of the address
 *     itself, frame i+1 the call site (DW_AT_call_file/line/column) of
 *     frame i.  Chains longer than SP_RES_MAX_FRAMES keep the innermost
 *     SP_RES_MAX_FRAMES - 1 frames and the real function (so stacks stay
 *     connected), drop the middle and count inline_truncated.
 *   - Every module's function symbols include its PLT stubs, named
 *     "X@plt" (plt.h).
 *   - Modules (one per build id) are opened once through the debug-info
 *     finder and kept for the resolver's life; at most max_modules of them
 *     (further build ids resolve to -ENOSPC, counted); stats.modules
 *     counts those loaded.  Every string in a result is owned by its
 *     module and stays valid until sp_resolver__free().
 *   - Nothing is decoded up front but the table of compilation units and
 *     their ranges (.debug_aranges, unit headers): an address decodes its
 *     unit's line table and function list, then its function's inline
 *     tree, once (dwarf_src.h).  Decoded units are kept under a byte
 *     budget (unit_budget, all modules together), least recently used
 *     first out; stats.unit_bytes is what they hold now.
 *   - Results, including failures, are cached per (build id, address) in a
 *     fixed-size 4-way set-associative cache with LRU replacement inside a
 *     set (res_cache.h); hits, misses and evictions are counted.  A hit is
 *     one hash lookup under one of 64 shard locks.
 *   - C++ linkage names are demangled by the function the binary installs
 *     with sp_resolver__set_demangler() (main.c installs __cxa_demangle
 *     from libstdc++, so this library itself needs no C++ runtime); with
 *     none installed names stay mangled.
 *   - Thread safe, without a lock shared by all requests: a module is
 *     loaded (finder lookup, which may download from debuginfod, and
 *     ELF/DWARF setup) outside the module table's lock, once per build id;
 *     a request for a build id being loaded waits for that load only.
 *     Lookups in a loaded module run under that module's lock, so requests
 *     for different modules run in parallel; cache hits take only a cache
 *     shard's lock.  A load that fails with -ENOMEM is tried again by the
 *     next request.
 *   - Returns 0, or a negative errno: -EINVAL
 *     bad build id, -ENOENT nothing found (no debug info, no symbol,
 *     offset outside every PT_LOAD), -ENOSPC too many modules, -ENOMEM.
 *     On -ENOENT out->n is 0.
 */
#ifndef SPANPROF_SYMBOLIZER_RESOLVE_H
#define SPANPROF_SYMBOLIZER_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "debuginfo.h"

#define SP_RES_MAX_FRAMES 16

enum sp_res_source {
	SP_RES_NONE = 0,
	SP_RES_SYMTAB = 1,	/* function name from .symtab/.dynsym only */
	SP_RES_DWARF = 2,	/* function and lines from DWARF */
	SP_RES_GOPCLNTAB = 3,	/* function, file, line, inlined calls from a Go
				 * binary's .gopclntab (no DWARF) */
};

struct sp_frame {
	const char *function;	/* display name (demangled); NULL unknown */
	const char *linkage;	/* linkage (mangled) name; NULL unknown */
	const char *file;	/* source path; NULL unknown */
	int64_t line;		/* 0 unknown */
	int64_t column;		/* 0 unknown */
	int64_t decl_line;	/* the function's own first line; 0 unknown */
};

struct sp_frames {
	uint8_t n;
	uint8_t source;		/* enum sp_res_source */
	struct sp_frame f[SP_RES_MAX_FRAMES];
};

struct sp_resolver_opts {
	struct sp_debuginfo *di;	/* required, not owned */
	uint32_t cache_entries;		/* 0 = default (65536) */
	uint32_t max_modules;		/* 0 = default (1024) */
	size_t unit_budget;		/* decoded-unit bytes; 0 = default (64 MiB) */
	bool no_demangle;
};

struct sp_resolver_stats {
	uint64_t requests;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint64_t cache_evictions;
	uint32_t cache_capacity;
	uint32_t cache_used;
	uint64_t resolved_dwarf;	/* misses resolved from DWARF */
	uint64_t resolved_symtab;	/* misses resolved from symbols only */
	uint64_t resolved_gopclntab;	/* misses resolved from .gopclntab */
	uint64_t unresolved;		/* misses with nothing found */
	uint64_t inline_truncated;
	uint32_t modules;		/* opened (found or not) */
	uint32_t modules_no_debuginfo;	/* build ids with no file at all */
	uint32_t modules_dwarf;		/* modules with DWARF */
	uint64_t modules_refused;	/* -ENOSPC */
	uint64_t bad_dwarf_units;	/* CUs whose index could not be built */
	uint32_t modules_no_segments;	/* no usable program headers found */
	uint64_t units_decoded;		/* units decoded (again after an eviction) */
	uint64_t units_evicted;		/* given back under the unit budget */
	uint64_t unit_bytes;		/* held by decoded units now */
	uint64_t unit_budget;
	uint64_t ko_debug_bytes;	/* of unit_bytes: relocated .ko debug
					 * info held now (never evicted) */
	uint64_t ko_debug_refused;	/* .ko files opened for symbols only:
					 * their debug info passed the budget */
	uint64_t ko_debug_refused_bytes;	/* what those would have cost */
	uint64_t lines_libdw;		/* line tables read through libdw */
	uint64_t lines_clamped;		/* line rows with a clamped column */
	uint64_t functions_indexed;	/* inline trees built */
	uint64_t inline_walks_libdw;	/* of them, walked through libdw */
	uint64_t nested_scans;		/* whole-unit walks for nested functions */
};

struct sp_resolver;

int sp_resolver__new(const struct sp_resolver_opts *opts,
		     struct sp_resolver **out);
void sp_resolver__free(struct sp_resolver *r);	/* NULL-safe */

int sp_resolver__resolve(struct sp_resolver *r, const char *build_id,
			 const char *hint_path, uint64_t file_offset,
			 struct sp_frames *out);
int sp_resolver__resolve_vaddr(struct sp_resolver *r, const char *build_id,
			       const char *hint_path, uint64_t vaddr,
			       struct sp_frames *out);
int sp_resolver__resolve_text(struct sp_resolver *r, const char *build_id,
			      const char *hint_path, uint64_t text_offset,
			      struct sp_frames *out);
/* Where the executable section named section (SHF_ALLOC|SHF_EXECINSTR)
 * of build_id's file is in the virtual addresses sp_resolver__resolve_vaddr
 * takes (a relocatable file: libdwfl's layout, relobj.h): 0 and its
 * address and size, -ENOENT (no file, no such section), -EINVAL, -ENOMEM.
 * An offset in that section (a "[module-section:NAME:SECTION]" frame)
 * is then asked at lo + offset when below size. */
int sp_resolver__section(struct sp_resolver *r, const char *build_id, const char *hint_path,
			 const char *section, uint64_t *lo, uint64_t *size);

/* Opens the module of build_id now (as a resolve would): 0 when a file
 * was found, -ENOENT when none, -ENOSPC, -ENOMEM. */
int sp_resolver__load(struct sp_resolver *r, const char *build_id, const char *hint_path);

/* A build id found without any file may have one now (serve stored an
 * uploaded image): the next request looks again.  Modules that loaded a
 * file are left alone. */
void sp_resolver__forget_missing(struct sp_resolver *r, const char *build_id);

/* Where a build id's module came from (after a resolve call opened it):
 * 0 and *path (module-owned) / *src / *has_dwarf, or -ENOENT.  A module
 * loaded without a file also fills them before its -ENOENT: *src is then
 * SP_DI_NONE (none found), SP_DI_MISMATCH (only files of another build id
 * found) or where the file came from (found, but not a file it can read). */
int sp_resolver__module_info(struct sp_resolver *r, const char *build_id,
			     const char **path, enum sp_debuginfo_source *src,
			     bool *has_dwarf);

void sp_resolver__stats(struct sp_resolver *r, struct sp_resolver_stats *st);

/* __cxa_demangle's signature.  Process-wide; set it before resolving. */
typedef char *(*sp_demangle_fn)(const char *mangled, char *buf, size_t *len,
				int *status);
void sp_resolver__set_demangler(sp_demangle_fn fn);

/* Demangles a C++ (Itanium) name; returns a malloc'd string or NULL when
 * name is not mangled or no demangler is installed. */
char *sp_demangle(const char *name);

#endif /* SPANPROF_SYMBOLIZER_RESOLVE_H */
