/* SPDX-License-Identifier: MIT */
/*
 * dwarf_line.h - one DWARF line-number program (.debug_line, versions 2 to
 * 5) decoded into a compact, address-sorted table of rows: what the
 * resolver needs of a compilation unit's lines, and nothing it does not.
 *
 * Why not libdw's dwarf_getsrclines: libdw keeps every unit's decoded
 * lines until dwarf_end (its memory cannot be given back per unit, so a
 * byte-bounded cache of decoded units is impossible on top of it), stores
 * ~40 bytes a row and sorts every row of the unit; here a row is 16 bytes,
 * rows that cannot change an answer are dropped, and the table belongs to
 * the caller, who frees it when the unit leaves its cache.
 *
 * Input is untrusted (debug files come from debuginfod or disk): every read
 * is bounds-checked against the section and the unit, counts are bounded by
 * the bytes that hold them, nothing is trusted to terminate.  Errors:
 * -EINVAL malformed or unsupported (a form of the v5 header this decoder
 * does not read, e.g. strx: the caller may fall back), -E2BIG more rows than
 * SP_DLINE_MAX_ROWS, -ENOMEM.  On error *out is left empty.
 *
 * Semantics (those of libdw's dwarf_getsrc_die, which llvm-symbolizer
 * agrees with): rows are sorted by address, an end-of-sequence row before a
 * normal one at the same address, otherwise program order; the row of an
 * address is the last one at or below it, none when that is an end of
 * sequence.  Kept: of the rows at one address only the one that answers;
 * of consecutive rows with the same file, line and column only the first.
 *
 * Row layout (16 bytes, in two arrays so that the binary search reads only
 * addresses): address u64; line u32, column u16 (larger columns are
 * clamped to 65535 and counted in clamped), file u16 (bit 15 = end of
 * sequence; index 0x7fff = an index too large to keep, counted).
 *
 * File names: files[i] is file index i as the program uses it (v2-4: 1 is
 * the first entry, files[0] is empty; v5: 0 is the first).  Strings point
 * into the sections (checked NUL-terminated); sp_dline__path joins a file
 * with its directory and the unit's compilation directory the way
 * llvm-symbolizer prints it.
 */
#ifndef SPANPROF_SYMBOLIZER_DWARF_LINE_H
#define SPANPROF_SYMBOLIZER_DWARF_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "addr_index.h"

#define SP_DLINE_MAX_ROWS (1u << 24)
#define SP_DLINE_END 0x8000u		/* file field: end of sequence */
#define SP_DLINE_FILE_BIG 0x7fffu	/* file field: index not kept */

/* Section bytes, borrowed; a missing section is NULL, 0. */
struct sp_dline_sections {
	const uint8_t *line;
	size_t line_len;
	const uint8_t *line_str;	/* .debug_line_str: DW_FORM_line_strp */
	size_t line_str_len;
	const uint8_t *str;		/* .debug_str: DW_FORM_strp */
	size_t str_len;
};

struct sp_dline_row {
	uint32_t line;
	uint16_t col;
	uint16_t file;			/* | SP_DLINE_END */
};

struct sp_dline_file {
	const char *name;		/* NULL for v2-4's unused index 0 */
	uint32_t dir;
};

struct sp_dline_table {
	uint64_t *addrs;		/* n_rows, ascending */
	struct sp_dline_row *rows;	/* n_rows, the row of addrs[i] */
	uint32_t n_rows;
	struct sp_addr_index idx;	/* over addrs (sp_dline__index) */
	struct sp_dline_file *files;
	uint32_t n_files;
	const char **dirs;		/* v2-4: dirs[0] NULL = the unit's comp dir */
	uint32_t n_dirs;
	uint16_t version;
	uint32_t clamped;		/* rows with a clamped column or file */
};

/* Decodes the program at offset of s->line.  cu_addr_size is the unit's
 * address size (v2-4 headers do not carry one; v5 must agree): 4 or 8. */
int sp_dline__decode(const struct sp_dline_sections *s, uint64_t offset,
		     uint8_t cu_addr_size, struct sp_dline_table *out);

/* Builds t->idx for faster finds (decode does; a table filled by hand
 * calls it).  0 or -ENOMEM (finds still work, without the index). */
int sp_dline__index(struct sp_dline_table *t);

/* The row answering addr, or NULL. */
const struct sp_dline_row *sp_dline__find(const struct sp_dline_table *t, uint64_t addr);

/* Path of file index idx into buf (NUL-terminated, truncated to len), or
 * NULL when there is no such file.  comp_dir may be NULL; a comp_dir of
 * "." (what Go writes) joins nothing and leading "./" are dropped, so a
 * path reads as the Go toolchain's own (.gopclntab) does. */
const char *sp_dline__path(const struct sp_dline_table *t, uint32_t idx,
			   const char *comp_dir, char *buf, size_t len);

/* Heap bytes the table holds. */
size_t sp_dline__bytes(const struct sp_dline_table *t);

void sp_dline__free(struct sp_dline_table *t);	/* NULL-safe, leaves it empty */

#endif /* SPANPROF_SYMBOLIZER_DWARF_LINE_H */
