// SPDX-License-Identifier: MIT
/*
 * plt.c - PLT stub names from the GOT slot each stub jumps through and
 * the dynamic relocation of that slot (contract: plt.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "plt.h"

#define R_JUMP_SLOT 7	/* R_X86_64_JUMP_SLOT */
#define R_GLOB_DAT 6	/* R_X86_64_GLOB_DAT */

struct slot {
	uint64_t got;		/* r_offset */
	const char *sym;	/* libelf-owned */
};

struct found {
	uint64_t addr, size;
	const char *sym;
};

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static const char *slot_find(const struct slot *s, size_t n, uint64_t got)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && s[lo].got == got ? s[lo].sym : NULL;
}

/* The named JUMP_SLOT / GLOB_DAT relocations of every SHT_RELA section. */
static int collect_slots(Elf *elf, struct slot **out, size_t *n_out)
{
	struct slot *s = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *rd, *sd;
		Elf_Scn *symscn;
		size_t nrel;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		if (!symscn || !gelf_getshdr(symscn, &symsh) ||
		    (symsh.sh_type != SHT_DYNSYM && symsh.sh_type != SHT_SYMTAB))
			continue;
		rd = elf_getdata(scn, NULL);
		sd = elf_getdata(symscn, NULL);
		if (!rd || !sd || !rd->d_buf || !sd->d_buf)
			continue;
		nrel = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < nrel; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			uint32_t t;

			if (!gelf_getrela(rd, (int)i, &r))
				break;
			t = (uint32_t)GELF_R_TYPE(r.r_info);
			if ((t != R_JUMP_SLOT && t != R_GLOB_DAT) || !GELF_R_SYM(r.r_info))
				continue;
			if (!gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			name = elf_strptr(elf, symsh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (n == SP_PLT_MAX)
				break;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 256;
				struct slot *q = realloc(s, nc * sizeof(*q));

				if (!q) {
					free(s);
					return -ENOMEM;
				}
				s = q;
				cap = nc;
			}
			s[n++] = (struct slot){ .got = r.r_offset, .sym = name };
		}
	}
	if (n > 1)
		qsort(s, n, sizeof(*s), slot_cmp);
	*out = s;
	*n_out = n;
	return 0;
}

/* The GOT slot an entry jumps through: the first ff 25 disp32 in it. */
static bool entry_slot(const uint8_t *e, uint64_t es, uint64_t addr, uint64_t *got)
{
	for (uint64_t i = 0; i + 6 <= es; i++)
		if (e[i] == 0xff && e[i + 1] == 0x25) {
			int32_t d;

			memcpy(&d, e + i + 2, 4);
			*got = addr + i + 6 + (uint64_t)(int64_t)d;
			return true;
		}
	return false;
}

int sp_plt__symbols(Elf *elf, struct sp_plt_sym **out, size_t *n_out)
{
	struct slot *slots = NULL;
	struct found *f = NULL;
	size_t n_slots = 0, n = 0, cap = 0, names = 0, shstr;
	struct sp_plt_sym *res = NULL;
	bool any = false, nobits = false;
	Elf_Scn *scn = NULL;
	char *p;
	int err;

	*out = NULL;
	*n_out = 0;
	if (elf_getshdrstrndx(elf, &shstr))
		return 0;
	err = collect_slots(elf, &slots, &n_slots);
	if (err)
		return err;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *nm;
		Elf_Data *d;
		uint64_t es;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		nm = elf_strptr(elf, shstr, sh.sh_name);
		if (!nm || (strcmp(nm, ".plt") && strcmp(nm, ".plt.sec") && strcmp(nm, ".plt.got")))
			continue;
		any = true;
		if (sh.sh_type == SHT_NOBITS) {
			nobits = true;
			continue;
		}
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		es = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize
							       : strcmp(nm, ".plt.got") ? 16 : 8;
		for (uint64_t off = 0; off + es <= d->d_size && n < SP_PLT_MAX; off += es) {
			const char *sym;
			uint64_t got;

			if (!entry_slot((const uint8_t *)d->d_buf + off, es, sh.sh_addr + off, &got))
				continue;
			sym = slot_find(slots, n_slots, got);
			if (!sym)
				continue;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 256;
				struct found *q = realloc(f, nc * sizeof(*q));

				if (!q) {
					err = -ENOMEM;
					goto out;
				}
				f = q;
				cap = nc;
			}
			f[n++] = (struct found){ .addr = sh.sh_addr + off, .size = es, .sym = sym };
			names += strlen(sym) + sizeof("@plt");
		}
	}
	if (!n) {
		err = any && nobits ? -ENODATA : 0;
		goto out;
	}
	res = malloc(n * sizeof(*res) + names);
	if (!res) {
		err = -ENOMEM;
		goto out;
	}
	p = (char *)(res + n);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(f[i].sym);

		memcpy(p, f[i].sym, l);
		memcpy(p + l, "@plt", sizeof("@plt"));
		res[i] = (struct sp_plt_sym){ .addr = f[i].addr, .size = f[i].size, .name = p };
		p += l + sizeof("@plt");
	}
	*out = res;
	*n_out = n;
out:
	free(f);
	free(slots);
	return err;
}
