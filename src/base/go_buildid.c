// SPDX-License-Identifier: MIT
/*
 * go_buildid.c - see go_buildid.h.
 */
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "base/go_buildid.h"

bool sp_go_buildid__valid_n(const uint8_t *s, size_t n)
{
	bool slash = false;

	if (!s || n < 3 || n > SP_GO_BUILD_ID_MAX || s[0] == '/' || s[n - 1] == '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (c == '/')
			slash = true;
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			   (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '+' || c == '='))
			return false;
	}
	return slash;
}

bool sp_go_buildid__valid(const char *s)
{
	return s && sp_go_buildid__valid_n((const uint8_t *)s, strnlen(s, SP_GO_BUILD_ID_MAX + 1));
}

/* Walks one note area for the Go note (namesz 4, type 4, "Go\0\0"). */
static int walk(const uint8_t *p, uint64_t len, uint64_t align, char *out)
{
	uint64_t off = 0;

	align = align == 8 ? 8 : 4;
	while (off < len && len - off >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t desc_off;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		desc_off = (off + 12 + (uint64_t)namesz + align - 1) & ~(align - 1);
		if (off + 12 + (uint64_t)namesz > len || desc_off > len || descsz > len - desc_off)
			return -ENOENT;
		if (namesz == 4 && type == SP_GO_NOTE_TYPE && !memcmp(p + off + 12, "Go\0\0", 4)) {
			if (!sp_go_buildid__valid_n(p + desc_off, descsz))
				return -ENOENT;
			memcpy(out, p + desc_off, descsz);
			out[descsz] = '\0';
			return 0;
		}
		off = (desc_off + descsz + align - 1) & ~(align - 1);
	}
	return -ENOENT;
}

int sp_go_buildid__read_elf(Elf *elf, char *out)
{
	Elf_Scn *scn = NULL;
	size_t phnum, size;
	const uint8_t *img;

	out[0] = '\0';
	if (!elf || elf_kind(elf) != ELF_K_ELF || !(img = (const uint8_t *)elf_rawfile(elf, &size)))
		return -EINVAL;
	if (!elf_getphdrnum(elf, &phnum))
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
			    ph.p_offset <= size && ph.p_filesz <= size - ph.p_offset &&
			    !walk(img + ph.p_offset, ph.p_filesz, ph.p_align, out))
				return 0;
		}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE && sh.sh_offset <= size &&
		    sh.sh_size <= size - sh.sh_offset &&
		    !walk(img + sh.sh_offset, sh.sh_size, sh.sh_addralign, out))
			return 0;
	}
	return -ENOENT;
}
