/* SPDX-License-Identifier: MIT */
/*
 * relobj.h - a relocatable ELF object (ET_REL: a kernel module's .ko, or
 * its separate debug file) made readable like a linked file, through
 * libdwfl's offline reporting (dwfl_report_offline).
 *
 * Why: in an ET_REL file every section sits at address 0 and its DWARF
 * is not final - addresses, and offsets into .debug_str and the other
 * debug sections, are left to relocations (.rela.debug_*), so the raw
 * bytes name the wrong functions at the wrong addresses.  libdwfl lays
 * the SHF_ALLOC sections out one after another (each at a distinct
 * address, aligned; the first past a 64 KiB red zone), writes each
 * section's new address into its section header in place, and applies
 * the debug sections' relocations in memory against that layout.  What
 * this gives back reads as a linked file would: sh_addr of every
 * allocated section is where it was placed, and every DWARF address
 * (aranges, unit and function ranges, line programs) is in that same
 * space.  An address inside a section is then sh_addr + offset in it, so
 * a module frame (offset in .text) is looked up at .text's sh_addr +
 * offset, and can only meet .text's DWARF (every other section lies
 * elsewhere).  Symbols keep their section-relative st_value: add their
 * section's sh_addr.
 *
 * Contract:
 *   - sp_relobj__open(fd, name, &o): fd is a readable descriptor of the
 *     file, consumed in every case (closed by the object's free, or before
 *     a failure returns).  0, -ENOEXEC (not an ELF ET_REL file, or libdwfl
 *     refused it), -ENOMEM.  A file without DWARF opens (its symbols still
 *     name addresses): sp_relobj__dwarf() is then NULL.
 *   - sp_relobj__elf(), sp_relobj__dwarf() are borrowed from the object:
 *     valid until sp_relobj__free() (NULL-safe), never ended by the caller.
 *   - The layout is checked at open: an allocated section with contents
 *     left at address 0 (libdwfl did not lay it out) refuses the file.
 *   - libdwfl is told to look for nothing itself (no debug file elsewhere,
 *     no debuginfod, no .gnu_debugaltlink file): the finder chose this
 *     file by build id (debuginfo.h).
 *   - Not thread safe: one user at a time (the resolver's module lock).
 *   - Cost: the relocations of every debug section are applied at open
 *     (libdwfl does them together), on copy-on-write pages of the
 *     file's private mapping.  sp_relobj__cost(elf, &bytes) says how
 *     much before anything is opened: the bytes of every relocation
 *     section and of the section it applies to (inflated, when
 *     compressed), what those pages and libdwfl's copies hold at most.
 *     0 or -ENOEXEC.  The resolver charges it to its decoded-unit budget
 *     (resolve.h).
 *   - sp_relobj__open_symbols(fd, &o): the file laid out without libdwfl
 *     and without any relocation (the same contract otherwise: fd
 *     consumed, sp_relobj__dwarf() NULL): its symbols, its sections and
 *     their bytes (unrelocated) are readable at the cost of its section
 *     headers.  For a file whose debug info the budget refused.
 */
#ifndef SPANPROF_SYMBOLIZER_RELOBJ_H
#define SPANPROF_SYMBOLIZER_RELOBJ_H

#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

struct sp_relobj;

int sp_relobj__open(int fd, const char *name, struct sp_relobj **out);
int sp_relobj__open_symbols(int fd, struct sp_relobj **out);
int sp_relobj__cost(Elf *elf, uint64_t *bytes);
void sp_relobj__free(struct sp_relobj *o);
Elf *sp_relobj__elf(const struct sp_relobj *o);
Dwarf *sp_relobj__dwarf(const struct sp_relobj *o);
#endif /* SPANPROF_SYMBOLIZER_RELOBJ_H */
