/* SPDX-License-Identifier: MIT */
/*
 * die_reader.h - a small reader of DWARF 2-5 debugging information entries
 * for the one walk the resolver repeats most: a function's tree of
 * DW_TAG_inlined_subroutine DIEs (their tag, address ranges, call site and
 * abstract origin), everything else skipped.
 *
 * Why not libdw for it: libdw finds each attribute by scanning the DIE's
 * attributes from the start (dwarf_attr), and each range, low and high pc
 * and call-site attribute is one such scan; over a large function's
 * inline tree that was half of a cold run's instructions.  Here a DIE is
 * read once, its abbreviation decoded once per unit with each form's size,
 * and a DIE whose forms all have a fixed size is skipped in one step.
 *
 * It is deliberately partial: no names (the walker asks libdw, once per
 * abstract origin), no location expressions.  A form or an encoding it does
 * not know, or a malformed unit, is -EINVAL and the caller falls back to
 * libdw for that function.  Input is untrusted: every read is bounded by
 * the unit and the section, attribute and abbreviation counts by the bytes
 * that hold them, recursion by the caller (SP_DWARF_MAX_DEPTH).
 */
#ifndef SPANPROF_SYMBOLIZER_DIE_READER_H
#define SPANPROF_SYMBOLIZER_DIE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sections a walk reads, borrowed (NULL, 0 when absent). */
struct sp_die_sections {
	const uint8_t *info;
	size_t info_len;
	const uint8_t *abbrev;
	size_t abbrev_len;
	const uint8_t *addr;		/* .debug_addr (DW_FORM_addrx*) */
	size_t addr_len;
	const uint8_t *rnglists;	/* DWARF 5 */
	size_t rnglists_len;
	const uint8_t *ranges;		/* DWARF 2-4 */
	size_t ranges_len;
};

struct sp_die_abbrev;

/* One unit: its header, its abbreviation table, the bases its unit DIE
 * gives (DW_AT_low_pc, DW_AT_addr_base, DW_AT_rnglists_base). */
struct sp_die_unit {
	uint64_t off, end;		/* [off, end) of .debug_info */
	uint64_t first_die;
	uint16_t version;
	uint8_t offset_size, addr_size;
	uint64_t base_addr, addr_base, rnglists_base;
	struct sp_die_abbrev *abbrevs;	/* by code, 1..n_abbrevs */
	uint32_t n_abbrevs;
	struct sp_die_attr *attrs;
	uint32_t n_attrs;
};

/* What one DIE says of the attributes a walk of inline trees needs. */
struct sp_die {
	uint64_t off;			/* section offset of the DIE */
	uint64_t next;			/* where its children, else its next
					 * sibling, start */
	uint64_t sibling;		/* DW_AT_sibling, 0 when absent */
	uint16_t tag;
	bool children;
	uint8_t pc;			/* 0 none, 1 low only, 2 low + high */
	uint64_t low_pc, high_pc;
	bool has_ranges;
	uint16_t ranges_form;
	uint64_t ranges;		/* offset, or rnglistx index */
	uint8_t origin;			/* 0 none, 1 in this file, 2 in the dwz alt file */
	uint64_t origin_off;		/* section offset of DW_AT_abstract_origin */
	uint64_t call_file, call_line, call_col;
};

/* 0 and *u, -EINVAL (not a unit this reader reads: the caller uses libdw),
 * -ENOMEM. */
int sp_die_unit__open(const struct sp_die_sections *s, uint64_t unit_off,
		      struct sp_die_unit *u);
size_t sp_die_unit__bytes(const struct sp_die_unit *u);
void sp_die_unit__free(struct sp_die_unit *u);	/* NULL-safe */

/* The DIE at off: 0, 1 for a null entry (end of a sibling list; *d->next
 * set), -EINVAL. */
int sp_die__read(const struct sp_die_sections *s, const struct sp_die_unit *u, uint64_t off,
		 struct sp_die *d);

/* The offset after d and all its children (its next sibling, or the null
 * entry ending its list): DW_AT_sibling when present, else a walk over the
 * children, at most depth levels deep.  0 or -EINVAL (-ELOOP past depth). */
int sp_die__after(const struct sp_die_sections *s, const struct sp_die_unit *u,
		  const struct sp_die *d, int depth, uint64_t *after);

/* Calls fn(ctx, lo, hi) for each address range of d (DW_AT_low_pc/high_pc
 * or DW_AT_ranges), empty ranges skipped.  0, -EINVAL, or fn's non-zero
 * return. */
int sp_die__ranges(const struct sp_die_sections *s, const struct sp_die_unit *u,
		   const struct sp_die *d, int (*fn)(void *ctx, uint64_t lo, uint64_t hi),
		   void *ctx);

#endif /* SPANPROF_SYMBOLIZER_DIE_READER_H */
