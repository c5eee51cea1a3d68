/* SPDX-License-Identifier: MIT */
/*
 * gopclntab.h - Go's own symbol table, .gopclntab, which every Go binary
 * keeps even when stripped (`-ldflags=-s -w` drops .symtab and DWARF, not
 * this: the runtime needs it for tracebacks).  It maps a pc to function
 * name, file, line and inlined calls, and names to entry points.  Shared
 * by the symbolizer (stripped Go frames) and the collector (the entry of
 * a few runtime functions, e.g. for the g TLS offset).
 *
 * Formats read: the 1.18 header (magic 0xfffffff0, Go 1.18-1.19) and the
 * 1.20 one (0xfffffff1, Go 1.20 and later); older tables (1.2-1.17) are
 * -ENOTSUP.  Layout (golang/go src/runtime/symtab.go, runtime2.go; checked
 * here against go1.19.8):
 *
 *   pcHeader (at the table start)
 *   0   4  magic          8   8  nfunc        16  8 nfiles
 *   4   2  0, 0           24  8  textStart (0 from 1.26: .text's address)
 *   6   1  minLC (1)      32  8  funcnameOffset  40 8 cuOffset
 *   7   1  ptrSize (8)    48  8  filetabOffset   56 8 pctabOffset
 *                         64  8  pclnOffset  (all offsets from the header)
 *   functab at pcln: nfunc+1 {u32 entryoff, u32 funcoff}, sorted by pc;
 *     entry = textStart + entryoff; the last entry only ends the last func.
 *   _func at pcln + funcoff:
 *     0 entryoff u32, 4 nameoff i32 (into funcnametab), 8 args, 12 deferreturn,
 *     16 pcsp, 20 pcfile, 24 pcln (u32 offsets into pctab), 28 npcdata u32,
 *     32 cuOffset u32, [1.20+: 36 startLine i32], then funcID u8, flag u8,
 *     pad u8, nfuncdata u8 (fixed part 40 bytes, 44 from 1.20), then
 *     npcdata u32 pctab offsets, then nfuncdata u32 offsets from
 *     moduledata.gofunc (~0 = none).
 *   pc tables (pctab): pairs of uvarint (zig-zag value delta, pc delta *
 *     minLC) from value -1 at the entry; a zero value delta after the
 *     first pair ends the table.
 *   file: cutab[cuOffset + pcfile value] = offset into filetab (~0 none).
 *   inlining: PCDATA 2 (InlTreeIndex) at pc = index into FUNCDATA 3
 *     (InlTree); entry = inlinedCall, 1.18-1.19: {i16 parent, u8 funcID,
 *     pad, i32 file, i32 line, i32 nameoff, i32 parentPc} (20 bytes);
 *     1.20+: {u8 funcID, pad[3], i32 nameoff, i32 parentPc, i32 startLine}
 *     (16 bytes).  The inlined function's name is nameoff; file and line
 *     come from pcfile/pcln at pc; its caller's position from the same
 *     tables at entry + parentPc, whose own index continues the chain.
 *   moduledata.gofunc (for FUNCDATA): symbol go.func.* / go:func.* when
 *     there is a .symtab, else the moduledata found by its first word (the
 *     header's address) in the data: gofunc is its word 38 (1.18-1.19) or
 *     40 (1.20+: covctrs, ecovctrs came before it).  Without it, no
 *     inlined frames (the real function and its lines still resolve).
 *
 * Where the table is: section .gopclntab (internal link, non-PIE cgo),
 * .data.rel.ro.gopclntab (internal PIE), symbol runtime.pclntab (external
 * link), else a scan of the read-only segments for a valid header (at most
 * SP_GOPCLN_SCAN_MAX bytes).
 *
 * Untrusted input: every offset and length is checked against the bytes
 * the table owns; a function name or file without a NUL inside its table
 * reads as NULL, a pc table that runs off its end as "no value".  Strings
 * returned point into the ELF image and live as long as it (the caller
 * keeps the Elf open).  Read-only after open: safe to share between
 * threads.
 */
#ifndef SPANPROF_BASE_GOPCLNTAB_H
#define SPANPROF_BASE_GOPCLNTAB_H

#include <stdint.h>

#include <libelf.h>

#define SP_GOPCLN_SCAN_MAX (128u << 20)

struct sp_gopcln;

struct sp_gopcln_frame {
	const char *function;	/* NULL: unknown */
	const char *file;	/* NULL: unknown */
	int64_t line;		/* 0: unknown */
};

/* Opens the table of an ELF image (elf stays owned by the caller and must
 * outlive the table).  0, -ENOENT (no Go table), -ENOTSUP (a Go table of
 * a format not read here), -EINVAL (malformed), -ENOMEM. */
int sp_gopcln__open(Elf *elf, struct sp_gopcln **out);
void sp_gopcln__free(struct sp_gopcln *t);	/* NULL-safe */

/* Go version family of the table: 118 (1.18-1.19) or 120 (1.20+). */
uint32_t sp_gopcln__format(const struct sp_gopcln *t);
/* True when inlined frames can be expanded (gofunc found). */
int sp_gopcln__has_inline(const struct sp_gopcln *t);

/* pc (link-time virtual address) -> frames, inlined callees first and the
 * real function last, at most max (the real function is always kept as
 * the last one).  *n frames written; *entry (may be NULL) = the real
 * function's entry.  0, or -ENOENT when no function covers pc. */
int sp_gopcln__resolve(const struct sp_gopcln *t, uint64_t pc, struct sp_gopcln_frame *out,
		       uint32_t max, uint32_t *n, uint64_t *entry);

/* The function named name (exact, as the table spells it: "runtime.mcall",
 * "main.(*T).Run"): [*entry, *end).  0 or -ENOENT. */
int sp_gopcln__find_func(const struct sp_gopcln *t, const char *name, uint64_t *entry,
			 uint64_t *end);

#endif
