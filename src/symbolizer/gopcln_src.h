/* SPDX-License-Identifier: MIT */
/*
 * gopcln_src.h - a Go binary's .gopclntab as a source of a module's
 * answers (struct sp_linesrc_ops, linesrc.h): function, file, line and
 * inlined calls of an address (no columns), from the table every Go
 * binary keeps even when stripped (base/gopclntab.h reads it).
 *
 * The resolver adds this source only to a module without DWARF units:
 * when DWARF is there it says the same and more (columns, declaration
 * lines).  Nothing is decoded ahead or kept per address: the table is
 * read in place from the mapped ELF image, so bytes() is 0 and the unit
 * budget does not apply.  Answers are not named from the ELF symbol table
 * (a Go .symtab, when present, spells the same names).
 *
 * Strings in answers point into the ELF image the module keeps open until
 * the source is freed.
 */
#ifndef SPANPROF_SYMBOLIZER_GOPCLN_SRC_H
#define SPANPROF_SYMBOLIZER_GOPCLN_SRC_H

#include <libelf.h>

#include "linesrc.h"

/* The table of elf (borrowed; it must outlive the source) as a source in
 * *out.  0, -ENOENT (no Go table), -ENOTSUP (a table format not read),
 * -EINVAL (malformed), -ENOMEM. */
int sp_gopcln_src__open(Elf *elf, void **out);

extern const struct sp_linesrc_ops sp_gopcln_linesrc;

#endif /* SPANPROF_SYMBOLIZER_GOPCLN_SRC_H */
