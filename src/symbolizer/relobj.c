// SPDX-License-Identifier: MIT
/*
 * relobj.c - ET_REL files laid out and relocated by libdwfl.  Contract:
 * relobj.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "relobj.h"

struct sp_relobj {
	Dwfl *dwfl;		/* NULL: laid out here (sp_relobj__open_symbols) */
	Elf *elf;		/* the module's, owned by dwfl (or by this) */
	Dwarf *dw;		/* likewise; NULL without DWARF */
	int fd;			/* without dwfl: the file's, else -1 */
};

/* libdwfl asks for a separate debug file (and a dwz alternate file) when
 * the file has no DWARF of its own: there is none to look for here. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Every allocated section with contents got an address of its own. */
static bool laid_out(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return false;
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_size && !sh.sh_addr)
			return false;
	}
	return true;
}

int sp_relobj__open(int fd, const char *name, struct sp_relobj **out)
{
	struct sp_relobj *o;
	Dwfl_Module *mod;
	GElf_Ehdr eh;
	Dwarf_Addr bias;

	*out = NULL;
	o = calloc(1, sizeof(*o));
	if (!o) {
		close(fd);
		return -ENOMEM;
	}
	o->fd = -1;
	o->dwfl = dwfl_begin(&callbacks);
	if (!o->dwfl) {
		close(fd);
		free(o);
		return -ENOMEM;
	}
	/* consumes fd on success only */
	mod = dwfl_report_offline(o->dwfl, name, name, fd);
	if (!mod)
		close(fd);
	if (!mod || dwfl_report_end(o->dwfl, NULL, NULL))
		goto bad;
	/* relocates the debug sections (all of them, now) */
	o->dw = dwfl_module_getdwarf(mod, &bias);
	o->elf = dwfl_module_getelf(mod, &bias);
	if (!o->elf || !gelf_getehdr(o->elf, &eh) || eh.e_type != ET_REL || bias ||
	    !laid_out(o->elf))
		goto bad;
	if (o->dw && dwarf_getelf(o->dw) != o->elf)
		o->dw = NULL;	/* DWARF of another file: not the one chosen */
	*out = o;
	return 0;
bad:
	sp_relobj__free(o);
	return -ENOEXEC;
}

/* Bytes of one section as libelf hands it out: a compressed one
 * (SHF_COMPRESSED) is inflated before it is relocated. */
static uint64_t section_bytes(Elf_Scn *scn, const GElf_Shdr *sh)
{
	GElf_Chdr ch;

	if (sh->sh_type == SHT_NOBITS)
		return 0;
	if ((sh->sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
		return ch.ch_size;
	return sh->sh_size;
}

int sp_relobj__cost(Elf *elf, uint64_t *bytes)
{
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;

	*bytes = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, tsh;
		Elf_Scn *t;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type != SHT_REL && sh.sh_type != SHT_RELA)
			continue;
		t = elf_getscn(elf, sh.sh_info);
		if (!t || !gelf_getshdr(t, &tsh))
			continue;	/* libdwfl skips it too */
		sum += section_bytes(scn, &sh) + section_bytes(t, &tsh);
	}
	*bytes = sum;
	return 0;
}

/* Gives every allocated section with a size an address of its own, one
 * after another from 64 KiB, each aligned as it asks: the same kind of
 * layout libdwfl makes (relobj.h), not necessarily the same addresses -
 * every lookup reads sh_addr back from this file, so only distinctness
 * matters. */
static int lay_out(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t at = 0x10000;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		uint64_t al;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (!(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		al = sh.sh_addralign > 1 ? sh.sh_addralign : 1;
		if (al & (al - 1) || al > (1ull << 20) || sh.sh_size > (1ull << 40))
			return -ENOEXEC;	/* not a module's */
		at = (at + al - 1) & ~(al - 1);
		if (sh.sh_size > UINT64_MAX - at)
			return -ENOEXEC;
		sh.sh_addr = at;
		at += sh.sh_size;
		if (!gelf_update_shdr(scn, &sh))
			return -ENOEXEC;
	}
	return 0;
}

int sp_relobj__open_symbols(int fd, struct sp_relobj **out)
{
	struct sp_relobj *o;
	GElf_Ehdr eh;
	int err = -ENOEXEC;

	*out = NULL;
	o = calloc(1, sizeof(*o));
	if (!o) {
		close(fd);
		return -ENOMEM;
	}
	o->fd = fd;
	/* private: the section headers are written, the file never is */
	o->elf = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &eh) ||
	    eh.e_type != ET_REL)
		goto bad;
	err = lay_out(o->elf);
	if (err || !laid_out(o->elf))
		goto bad;
	*out = o;
	return 0;
bad:
	sp_relobj__free(o);
	return err ? err : -ENOEXEC;
}

void sp_relobj__free(struct sp_relobj *o)
{
	if (!o)
		return;
	if (o->dwfl) {
		dwfl_end(o->dwfl);
	} else {
		elf_end(o->elf);
		if (o->fd >= 0)
			close(o->fd);
	}
	free(o);
}

Elf *sp_relobj__elf(const struct sp_relobj *o)
{
	return o->elf;
}

Dwarf *sp_relobj__dwarf(const struct sp_relobj *o)
{
	return o->dw;
}
