// SPDX-License-Identifier: MIT
/*
 * tls_elf.c - what one ELF file says about otel_thread_ctx_v1 (see
 * tls_elf.h for the contract).
 *
 * The file is untrusted: it is read through libelf (ELF_C_READ, so a file
 * truncated under us gives read errors, not SIGBUS), every table size comes
 * from libelf's bounds-checked section data, entry counts are capped, and
 * string lookups go through elf_strptr (which checks the string section).
 * A file that does not start with the ELF magic is "not defined here"
 * (-ENOENT): processes map fonts, locale archives and caches too.  A file
 * with the magic that libelf cannot walk is SP_TLS_FAIL_ELF.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "collector/tracectx/tls_elf.h"

#define MAX_SYMS (1u << 22)	/* entries scanned per symbol table */
#define MAX_RELAS (1u << 24)	/* entries scanned per relocation section */

#ifndef R_X86_64_TLSDESC
#define R_X86_64_TLSDESC 36
#endif

struct found_sym {
	size_t scn_ndx;		/* the symbol table's section index */
	size_t sym_ndx;
	GElf_Sym sym;
};

/* The next section of type sh_type after *scn (NULL: from the first) with
 * its header, data and entry count (entries of type t, at most max).
 * 1 found, 0 none left, -EINVAL malformed (a header or data libelf cannot
 * read, on any section on the way). */
static int next_table(Elf *elf, Elf_Scn **scn, GElf_Word sh_type, Elf_Type t, size_t max,
		      GElf_Shdr *sh, Elf_Data **d, size_t *n)
{
	size_t fsize = gelf_fsize(elf, t, 1, EV_CURRENT);

	if (fsize == 0)
		return -EINVAL;
	while ((*scn = elf_nextscn(elf, *scn)) != NULL) {
		if (!gelf_getshdr(*scn, sh))
			return -EINVAL;
		if (sh->sh_type != sh_type || sh->sh_type == SHT_NOBITS)
			continue;
		*d = elf_getdata(*scn, NULL);
		if (!*d)
			return -EINVAL;
		*n = (*d)->d_size / fsize;
		if (*n > max)
			*n = max;
		return 1;
	}
	return 0;
}

/* Searches the symbol tables of type sh_type.  0 found, -ENOENT absent,
 * -EINVAL malformed. */
static int find_symbol(Elf *elf, GElf_Word sh_type, struct found_sym *fs)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t n, i;
	int more;

	while ((more = next_table(elf, &scn, sh_type, ELF_T_SYM, MAX_SYMS, &sh, &d, &n)) == 1) {
		for (i = 1; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				return -EINVAL;
			if (s.st_name == 0 || s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || strcmp(name, SP_TLS_SYMBOL) != 0)
				continue;
			fs->scn_ndx = elf_ndxscn(scn);
			fs->sym_ndx = i;
			fs->sym = s;
			return 0;
		}
	}
	return more ? more : -ENOENT;
}

static int has_section(Elf *elf, GElf_Word sh_type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == sh_type)
			return 1;
	return 0;
}

/* Does this relocation name the variable?  By index (symbol found in the
 * table the section links to, addend 0) or by symbol 0 + addend. */
static int names_var(const struct sp_tls_elf_info *info, const struct found_sym *fs,
		     const GElf_Shdr *rsh, const GElf_Rela *r)
{
	size_t symi = GELF_R_SYM(r->r_info);

	if (symi == 0)
		return (uint64_t)r->r_addend == info->st_value;
	return info->in_dynsym && rsh->sh_link == fs->scn_ndx &&
	       symi == fs->sym_ndx && r->r_addend == 0;
}

static int scan_relocs(Elf *elf, const struct found_sym *fs, struct sp_tls_elf_info *info)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t n, i;
	int more;

	while ((more = next_table(elf, &scn, SHT_RELA, ELF_T_RELA, MAX_RELAS, &sh, &d, &n)) == 1) {
		for (i = 0; i < n; i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r))
				return -EINVAL;
			switch (GELF_R_TYPE(r.r_info)) {
			case R_X86_64_TLSDESC:
				if (!info->has_tlsdesc && names_var(info, fs, &sh, &r)) {
					info->has_tlsdesc = 1;
					info->tlsdesc_off = r.r_offset;
					info->tlsdesc_blk_off = info->st_value;
				}
				break;
			case R_X86_64_TPOFF64:
				if (!info->has_tpoff && names_var(info, fs, &sh, &r)) {
					info->has_tpoff = 1;
					info->tpoff_off = r.r_offset;
				}
				break;
			case R_X86_64_DTPMOD64:
				if (GELF_R_SYM(r.r_info) == 0) {
					if (!info->has_dtpmod_self) {
						info->has_dtpmod_self = 1;
						info->dtpmod_self_off = r.r_offset;
					}
				} else if (!info->has_dtpmod && names_var(info, fs, &sh, &r)) {
					info->has_dtpmod = 1;
					info->dtpmod_off = r.r_offset;
				}
				break;
			default:
				break;
			}
		}
	}
	return more;
}

static int read_phdrs(Elf *elf, struct sp_tls_elf_info *info, enum sp_tls_fail *why)
{
	size_t phnum, i;
	int have_tls = 0;

	if (elf_getphdrnum(elf, &phnum) != 0) {
		*why = SP_TLS_FAIL_ELF;
		return -EINVAL;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			*why = SP_TLS_FAIL_ELF;
			return -EINVAL;
		}
		if (ph.p_type == PT_TLS && !have_tls) {
			have_tls = 1;
			info->tls_memsz = ph.p_memsz;
			info->tls_align = ph.p_align ? ph.p_align : 1;
		} else if (ph.p_type == PT_LOAD && info->n_loads < SP_TLS_ELF_MAX_LOADS) {
			struct sp_tls_elf_load *l = &info->loads[info->n_loads++];

			l->vaddr = ph.p_vaddr;
			l->offset = ph.p_offset;
			l->filesz = ph.p_filesz;
		}
	}
	if (!have_tls) {
		*why = SP_TLS_FAIL_NO_PT_TLS;
		return -EINVAL;
	}
	/* p_align must be a power of two; memsz and the symbol must be sane. */
	if ((info->tls_align & (info->tls_align - 1)) != 0 ||
	    info->tls_align > (1ull << 30) || info->tls_memsz > (1ull << 31) ||
	    info->st_value >= info->tls_memsz) {
		*why = SP_TLS_FAIL_ELF;
		return -EINVAL;
	}
	return 0;
}

int sp_tls_elf__inspect(int fd, unsigned tables, struct sp_tls_elf_info *out,
			enum sp_tls_fail *why)
{
	enum sp_tls_fail dummy;
	struct found_sym fs;
	Elf *elf = NULL;
	GElf_Ehdr eh;
	char ident[SELFMAG];
	int err;

	if (!why)
		why = &dummy;
	*why = SP_TLS_FAIL_NONE;
	if (!out || fd < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memset(&fs, 0, sizeof(fs));

	/* Not an ELF file at all: it cannot define the symbol. */
	if (pread(fd, ident, SELFMAG, 0) != SELFMAG || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		*why = SP_TLS_FAIL_NO_SYMBOL;
		return -ENOENT;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*why = SP_TLS_FAIL_ELF;
		return -EINVAL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		*why = SP_TLS_FAIL_ELF;
		err = -EINVAL;
		goto out;
	}
	out->e_type = eh.e_type;

	err = -ENOENT;
	if (tables & SP_TLS_ELF_DYNSYM) {
		err = find_symbol(elf, SHT_DYNSYM, &fs);
		if (err == 0)
			out->in_dynsym = 1;
	}
	if (err == -ENOENT && (tables & SP_TLS_ELF_SYMTAB))
		err = find_symbol(elf, SHT_SYMTAB, &fs);
	if (err == -ENOENT) {
		*why = SP_TLS_FAIL_NO_SYMBOL;
		out->has_symtab = has_section(elf, SHT_SYMTAB);
		goto out;
	}
	if (err) {
		*why = SP_TLS_FAIL_ELF;
		goto out;
	}
	out->sym_found = 1;
	if (GELF_ST_TYPE(fs.sym.st_info) != STT_TLS) {
		*why = SP_TLS_FAIL_NOT_TLS;
		err = -EINVAL;
		goto out;
	}
	out->st_value = fs.sym.st_value;
	out->st_size = fs.sym.st_size;

	err = read_phdrs(elf, out, why);
	if (err)
		goto out;
	err = scan_relocs(elf, &fs, out);
	if (err) {
		*why = SP_TLS_FAIL_ELF;
		goto out;
	}
out:
	elf_end(elf);
	return err;
}
