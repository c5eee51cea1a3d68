/* SPDX-License-Identifier: MIT */
/*
 * unwind_table.h - compiles CFI rows (cfi_extract.h) into the compact
 * per-file table the BPF unwinder reads (layout: include/spanprof/abi.h,
 * "User-stack unwinding"; docs/formats.md), and looks a pc up in one the
 * way bpf/unwind.bpf.h does (tests, benchmarks).
 *
 * The format, chosen by measurement (docs/benchmarks.md, "Unwind tables"):
 * 4 bytes per row (pc within its page, index into the file's own rule
 * dictionary), a page directory of 4 bytes per page, and 8 bytes per
 * distinct rule.  Adjacent rows with the same rule are merged; a gap
 * between FDEs becomes one SP_UNW_OP_NONE row, except alignment padding
 * (< 16 bytes) after a row whose rule is the frameless CFA = rsp + 8,
 * which that row simply covers (it is also right for any frameless code
 * there).  Page size is chosen per
 * file, the smallest of 4..64 KiB whose directory costs at most an eighth
 * of the rows (sparse CFI, e.g. chromium's, gets larger pages); a lookup is
 * then one directory read and a binary search over the rows of one page.
 *
 * Addresses are file offsets: rows arrive as ELF virtual addresses and are
 * mapped through the file's executable PT_LOAD segments; rows outside them
 * are dropped (counted).
 *
 * Memory: the compiler holds 8 bytes per row while compiling and the
 * result (sp_unw_table.words) until the caller frees it; max_rows and
 * max_words bound both (-E2BIG, "too large").  Not thread safe per
 * compiler; independent compilers may run in parallel.
 */
#ifndef SPANPROF_UNWIND_TABLE_H
#define SPANPROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <libelf.h>

#include "spanprof/abi.h"

#define SP_UNW_TABLE_SEGS 16

struct sp_unw_table {
	uint64_t *words;		/* n_words, owned; base 0 */
	uint32_t n_words;
	struct sp_unw_file desc;	/* base 0, gen 0, flags 0, last_used 0 */
	uint32_t n_rows;		/* rows in the table (after merging) */
	uint64_t rows_in;		/* rows given to __add */
	uint64_t rows_dropped;		/* outside the executable segments */
	uint64_t fo_lo, fo_hi;		/* file offsets covered [lo, hi) */
};

struct sp_unw_compiler;

struct sp_unw_compiler_limits {
	uint32_t max_rows;		/* after merging; 0: 1 << 24 */
	uint32_t max_words;		/* 0: no limit */
	uint8_t page_shift;		/* 0: chosen per file; else forced
					 * (bench_unwind_tables' format study) */
};

/* Executable PT_LOAD segments of elf, for vaddr -> file offset.  Returns
 * 0 or -EINVAL (no executable segment). */
int sp_unw_compiler__new(Elf *elf, const struct sp_unw_compiler_limits *lim,
			 struct sp_unw_compiler **out);
/* Same with explicit segments (vaddr, size, file offset): tests, vDSO. */
int sp_unw_compiler__new_segs(const uint64_t (*segs)[3], int n_segs,
			      const struct sp_unw_compiler_limits *lim,
			      struct sp_unw_compiler **out);
void sp_unw_compiler__free(struct sp_unw_compiler *c);	/* NULL-safe */

/* Adds the rule for ELF vaddrs [start, end).  Rows must come in
 * increasing, non-overlapping order (cfi_extract delivers them so); an
 * out-of-order row is -EINVAL.  -E2BIG past max_rows, -ENOMEM. */
int sp_unw_compiler__add(struct sp_unw_compiler *c, uint64_t start, uint64_t end,
			 const struct sp_unw_rule *rule);
/* Suitable as a cfi_extract row callback (ctx = the compiler). */
struct sp_cfi_row;
int sp_unw_compiler__add_row(const struct sp_cfi_row *row, void *ctx);

/* The table.  -ENOENT: no rows; -E2BIG: over max_words or more distinct
 * rules than the page size leaves bits for. */
int sp_unw_compiler__finish(struct sp_unw_compiler *c, struct sp_unw_table *out);

void sp_unw_table__release(struct sp_unw_table *t);	/* frees words */

/* The rule for file offset fo in a table whose word w is words[w - base]
 * (n_words words): 0 and *rule, or -ENOENT (no CFI there).  Mirrors
 * bpf/unwind.bpf.c sp_unw_rule(); probes counts word reads if not NULL. */
int sp_unw_table__lookup(const uint64_t *words, uint32_t n_words, const struct sp_unw_file *d,
			 uint64_t fo, struct sp_unw_rule *rule, uint32_t *probes);

#endif
