// SPDX-License-Identifier: MIT
/*
 * relobj.c - ET_REL files laid out and relocated by libdwfl.  Contract:
 * relobj.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "relobj.h"

struct sp_relobj {
	Dwfl *dwfl;
	Elf *elf;		/* the module's, owned by dwfl */
	Dwarf *dw;		/* likewise; NULL without DWARF */
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

void sp_relobj__free(struct sp_relobj *o)
{
	if (!o)
		return;
	dwfl_end(o->dwfl);
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
