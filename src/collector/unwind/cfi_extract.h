/* SPDX-License-Identifier: MIT */
/*
 * cfi_extract.h - the call frame information of one ELF file (x86-64), as
 * rows the BPF unwinder can follow.
 *
 * Reads only call frame information: .eh_frame (found by section name, or
 * through PT_GNU_EH_FRAME when the file has no section headers) and
 * .debug_frame for code .eh_frame does not cover (through dwarf_begin_elf,
 * which loads the bytes of the .debug_* sections but parses none but
 * .debug_frame; not done when they exceed 64 MiB).  Never symbols, never
 * .debug_info: CFI says how to find a caller, not what a function is
 * called (docs/security.md, "what the collector reads").
 *
 * How: libdw (elfutils) interprets the CFA programs.  The CIE/FDE list is
 * walked with dwarf_next_cfi (each FDE's pc range decoded here, from the
 * CIE's augmentation), then every row of every FDE is asked of
 * dwarf_cfi_addrframe, starting at the FDE's first pc and continuing at the
 * end of the row it returns.  The libdw rule (DWARF expressions) becomes a
 * struct sp_unw_rule (abi.h): CFA = rsp/rbp + n, another register + n
 * (usable in the interrupted frame only), *(reg + n) + 8k, the PLT
 * expression, a signal frame (CIE augmentation "S"), "no caller" (return
 * address undefined); anything else is SP_UNW_OP_UNSUPPORTED and counted.
 *
 * Untrusted input: every length is checked; a malformed CIE/FDE list, an
 * FDE pc range out of the 64-bit space, or a row libdw refuses makes the
 * whole file fail (-EINVAL, counted as "malformed": a table built from
 * CFI that is partly wrong would unwind wrongly).  Work is bounded:
 * SP_CFI_MAX_FDES FDEs, max_rows rows, SP_CFI_MAX_FDE_ROWS rows per FDE
 * (the rest of a longer FDE is SP_UNW_OP_NONE: frame pointer), and an
 * optional CPU deadline checked every few hundred rows.  Fuzzed by
 * tests/fuzz/fuzz_cfi.c.
 */
#ifndef SPANPROF_CFI_EXTRACT_H
#define SPANPROF_CFI_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "spanprof/abi.h"

#define SP_CFI_MAX_FDES (4u << 20)
#define SP_CFI_MAX_FDE_ROWS 4096	/* largest seen here: 904 (libLLVM) */

/* One row: the rule for ELF virtual addresses [start, end). */
struct sp_cfi_row {
	uint64_t start;
	uint64_t end;
	struct sp_unw_rule rule;
};

struct sp_cfi_stats {
	uint64_t fdes;			/* FDEs with a non-empty pc range */
	uint64_t fdes_debug_frame;	/* ... of them from .debug_frame */
	uint64_t rows;			/* rows delivered */
	uint64_t rows_unsupported;	/* SP_UNW_OP_UNSUPPORTED rows */
	uint64_t rows_leaf_only;	/* REG, or DEREF on another register */
	uint64_t rows_capped;		/* FDEs cut at SP_CFI_MAX_FDE_ROWS */
	uint64_t eh_frame_bytes;
	uint64_t debug_frame_bytes;
	uint64_t debug_frame_skipped;	/* 1: the file's .debug_* sections are
					 * over 64 MiB (libdw would read them
					 * all): its .debug_frame is not used */
};

struct sp_cfi_limits {
	uint64_t max_rows;		/* 0: no limit; more: -E2BIG */
	uint64_t max_cpu_ns;		/* 0: none; thread CPU time, -ETIME */
};

/* Called per row in increasing pc order, rows never overlapping;
 * nonzero stops the walk and is returned. */
typedef int (*sp_cfi_row_fn)(const struct sp_cfi_row *row, void *ctx);

/* Rows of elf's CFI.  Returns 0, -ENOENT (no CFI at all), -EINVAL
 * (malformed), -E2BIG, -ETIME (limits), -ENOMEM, or fn's value.  lim and
 * st may be NULL. */
int sp_cfi__extract(Elf *elf, const struct sp_cfi_limits *lim, sp_cfi_row_fn fn, void *ctx,
		    struct sp_cfi_stats *st);

/* The rule a libdw-style description maps to; exposed for the unit tests
 * (which build rules from hand-written CFI bytes through libdw too). */
const char *sp_cfi__op_name(uint8_t op);

#endif
