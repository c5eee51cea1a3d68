/* SPDX-License-Identifier: MIT */
/*
 * elf_symtab.h - one symbol by name from an ELF file's symbol table, for
 * the handful of fixed names the binaries look up once per file (Go's
 * runtime.tlsg / runtime.mheap_ / runtime.stackcheck in the collector,
 * vmlinux's _text in the symbolizer).
 *
 * Contract:
 *   - A linear scan of every SHT_SYMTAB section in file order (no index:
 *     a caller asks a few names of a file once); .dynsym is not read.
 *   - The first symbol named name that is defined (st_shndx !=
 *     SHN_UNDEF: an undefined reference's value 0 is no address) wins.
 *   - Untrusted input: a section with sh_entsize 0 or without data is
 *     skipped; a symbol libelf cannot read ends its section's scan; names
 *     come from elf_strptr, which checks them against the string table.
 *   - Returns 0 with *out, -ENOENT when there is no such symbol, -EINVAL
 *     for a NULL argument.  elf stays the caller's.
 */
#ifndef SPANPROF_BASE_ELF_SYMTAB_H
#define SPANPROF_BASE_ELF_SYMTAB_H

#include <gelf.h>

int sp_elf_symtab__find(Elf *elf, const char *name, GElf_Sym *out);

#endif /* SPANPROF_BASE_ELF_SYMTAB_H */
