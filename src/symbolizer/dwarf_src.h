/* SPDX-License-Identifier: MIT */
/*
 * dwarf_src.h - the DWARF source of a module's answers (struct
 * sp_linesrc_ops, linesrc.h): function, file, line, column and the chain of
 * inlined calls of an address, decoding only what the address needs.
 *
 * Up front (sp_dwarf_src__open): the table of compilation units and their
 * address ranges, from .debug_aranges (parsed here, a few bytes per unit)
 * and, for units it does not list, from the unit DIE's own ranges; the unit
 * headers are walked once (libdw's dwarf_get_units), nothing below them.
 *
 * On the first address of a unit: its line table (dwarf_line.c; libdw's
 * dwarf_getsrclines when the table uses a form that decoder does not read)
 * and its list of functions (the DW_TAG_subprogram DIEs with code, found
 * without descending into them, through DW_AT_sibling).  On the first
 * address of a function: its tree of DW_TAG_inlined_subroutine DIEs,
 * flattened into disjoint address segments each naming the innermost
 * inlined call, so an address is two binary searches and a walk up its
 * chain.  An address in no listed function (a nested function) makes the
 * unit's whole DIE tree walked once for nested DW_TAG_subprogram.
 *
 * Decoded units are kept under a byte budget shared by every module of a
 * resolver (struct sp_unit_budget): a module that decodes past the budget
 * evicts its own least recently used units (never the one it is answering
 * from; each unit carries the stamp of its last use, and the victim is
 * found by a scan of the unit table only then), so the total stays within
 * the budget plus one unit per module.  What libdw itself keeps per unit (its
 * unit header and abbreviation table) is bounded by the file, not by the
 * load.  Names and paths handed out live in the module's string pool
 * (strpool.h) and survive the eviction of their unit.
 *
 * libdw is used for DIEs (forms, abstract origins, specifications, ranges,
 * dwz alternate files), not for line tables.  Not thread safe: the module's
 * lock covers every call (libdw's per-file state is not thread safe
 * either).  DIE recursion is bounded (SP_DWARF_MAX_DEPTH).
 */
#ifndef SPANPROF_SYMBOLIZER_DWARF_SRC_H
#define SPANPROF_SYMBOLIZER_DWARF_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

#include "linesrc.h"
#include "strpool.h"

#define SP_DWARF_MAX_DEPTH 128

/* Shared by the modules of one resolver; updated with atomics.  used
 * also holds what relocated .ko debug sections cost (pinned, never
 * evicted: resolve.c), so decoded units give way to them. */
struct sp_unit_budget {
	size_t limit;			/* bytes of decoded units, all modules */
	size_t used;
	size_t pinned;			/* of used: relocated .ko debug info */
};

/* Counters shared by the modules of one resolver (atomic adds). */
struct sp_dwarf_counters {
	uint64_t units_decoded;		/* line table + function list built */
	uint64_t units_evicted;		/* given back under the budget */
	uint64_t units_bad;		/* could not be decoded (counted once) */
	uint64_t lines_libdw;		/* line tables read by libdw instead */
	uint64_t lines_clamped;		/* rows with a clamped column or file */
	uint64_t functions_indexed;	/* inline trees built */
	uint64_t functions_bad;		/* inline trees that could not be built */
	uint64_t inline_walks_libdw;	/* inline trees die_reader gave up on */
	uint64_t nested_scans;		/* whole-unit walks for nested functions */
	uint64_t inline_truncated;	/* chains longer than SP_RES_MAX_FRAMES */
};

struct sp_dwarf_src_opts {
	Dwarf *dw;			/* borrowed: the module's */
	Elf *elf;			/* the ELF dw reads */
	struct sp_strpool *pool;	/* the module's */
	struct sp_unit_budget *budget;
	struct sp_dwarf_counters *ctr;
	bool no_demangle;
};

/* 0 and *out (possibly with no unit: then every lookup is -ENOENT),
 * -ENOMEM. */
int sp_dwarf_src__open(const struct sp_dwarf_src_opts *o, void **out);
uint32_t sp_dwarf_src__units(const void *src);

extern const struct sp_linesrc_ops sp_dwarf_linesrc;

#endif /* SPANPROF_SYMBOLIZER_DWARF_SRC_H */
