// SPDX-License-Identifier: MIT
/*
 * elf_symtab.c - a defined symbol by name from .symtab (contract:
 * elf_symtab.h).
 */
#include <errno.h>
#include <string.h>

#include "base/elf_symtab.h"

int sp_elf_symtab__find(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;

	if (!elf || !name || !out)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *s;

			if (!gelf_getsym(d, (int)i, out))
				break;
			s = elf_strptr(elf, sh.sh_link, out->st_name);
			if (s && !strcmp(s, name) && out->st_shndx != SHN_UNDEF)
				return 0;
		}
	}
	return -ENOENT;
}
