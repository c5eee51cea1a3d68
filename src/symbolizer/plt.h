/* SPDX-License-Identifier: MIT */
/*
 * plt.h - names for PLT stubs ("memcpy@plt"), as perf, gdb and objdump
 * give them.  A PLT stub has no symbol of its own: without this a sample
 * in one is named after whatever symbol comes before the PLT (often
 * _init), or not at all.
 *
 * How (x86-64): every stub of .plt, .plt.sec (IBT) and .plt.got jumps
 * through one GOT slot (ff 25 disp32, "jmp *disp(%rip)", after an
 * optional endbr64 / bnd prefix); the dynamic relocation that fills that
 * slot (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn for
 * .plt.got) names the symbol.  The stub is named "SYMBOL@plt" and spans
 * its entry (sh_entsize, else 16 bytes; 8 for .plt.got).  Stubs whose slot
 * has no named relocation (the first .plt entry, PLT0) get no symbol.
 *
 * Input is untrusted: every section offset and size, relocation and
 * symbol index is checked against the data libelf gives; at most
 * SP_PLT_MAX stubs.
 *
 * sp_plt__symbols: 0 and *out (an array the caller frees with one free();
 *   names point into the same block), *n may be 0; -ENODATA when the PLT
 *   sections have no contents here (a separate debug file: NOBITS) - then
 *   ask the executable itself; -ENOMEM.
 */
#ifndef SPANPROF_SYMBOLIZER_PLT_H
#define SPANPROF_SYMBOLIZER_PLT_H

#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#define SP_PLT_MAX (1u << 20)

struct sp_plt_sym {
	uint64_t addr, size;
	const char *name;	/* "SYMBOL@plt" */
};

int sp_plt__symbols(Elf *elf, struct sp_plt_sym **out, size_t *n);

#endif /* SPANPROF_SYMBOLIZER_PLT_H */
