/* SPDX-License-Identifier: MIT */
/*
 * tls_elf.h - private helper of tls_resolve.c: what one ELF file says about
 * the OTEP 4947 symbol otel_thread_ctx_v1.  Pure function of the file's
 * bytes (no process memory), so malformed files can be tested directly.
 *
 * sp_tls_elf__inspect() looks the symbol up in the requested table(s),
 * and when the file defines it as STT_TLS collects everything the resolver
 * needs: the PT_TLS segment, the PT_LOAD segments (for the load bias) and
 * the dynamic relocations that name the variable:
 *
 *   R_X86_64_TLSDESC   {resolver, arg} descriptor (gnu2 dialect)
 *   R_X86_64_TPOFF64   GOT word holding the TP offset (initial-exec in a .so)
 *   R_X86_64_DTPMOD64  GOT word holding the module id (general dynamic)
 *
 * A relocation names the variable either by symbol index (symbol found in
 * .dynsym, relocation section linked to it) or, for a symbol local to the
 * file, by symbol 0 with r_addend == st_value (TLSDESC, TPOFF64).  A
 * DTPMOD64 against symbol 0 is the file's own module id and is kept as a
 * fallback.  Relocation offsets are link-time virtual addresses.
 *
 * Returns 0 (symbol is STT_TLS and defined here), -ENOENT (not defined in
 * the searched tables), or another negative errno with *why set:
 * SP_TLS_FAIL_NOT_TLS, SP_TLS_FAIL_NO_PT_TLS, SP_TLS_FAIL_ELF.
 */
#ifndef SPANPROF_TLS_ELF_H
#define SPANPROF_TLS_ELF_H

#include <stdint.h>

#include "collector/tracectx/tls_resolve.h"

#define SP_TLS_SYMBOL "otel_thread_ctx_v1"
#define SP_TLS_ELF_MAX_LOADS 16

enum sp_tls_elf_tables {
	SP_TLS_ELF_DYNSYM = 1 << 0,
	SP_TLS_ELF_SYMTAB = 1 << 1,
};

struct sp_tls_elf_load {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct sp_tls_elf_info {
	int e_type;			/* ET_EXEC, ET_DYN */
	int sym_found;			/* symbol defined here (even on failure) */
	int has_symtab;			/* file has a .symtab (set when searched
					 * only .dynsym and missed) */
	int in_dynsym;			/* found in .dynsym (else .symtab) */
	uint64_t st_value;		/* offset inside the TLS segment */
	uint64_t st_size;
	uint64_t tls_memsz;		/* PT_TLS */
	uint64_t tls_align;		/* PT_TLS p_align, >= 1 */
	uint32_t n_loads;
	struct sp_tls_elf_load loads[SP_TLS_ELF_MAX_LOADS];
	/* relocations naming the variable; has_* = 0 when absent */
	int has_tlsdesc;
	uint64_t tlsdesc_off;
	uint64_t tlsdesc_blk_off;	/* offset in the TLS block it names */
	int has_tpoff;
	uint64_t tpoff_off;
	int has_dtpmod;			/* DTPMOD64 against the symbol */
	uint64_t dtpmod_off;
	int has_dtpmod_self;		/* DTPMOD64 against symbol 0 */
	uint64_t dtpmod_self_off;
};

int sp_tls_elf__inspect(int fd, unsigned tables, struct sp_tls_elf_info *out,
			enum sp_tls_fail *why);

#endif
