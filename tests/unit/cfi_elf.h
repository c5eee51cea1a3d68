/* SPDX-License-Identifier: MIT */
/*
 * cfi_elf.h - writes a minimal x86-64 ELF image around hand-made .eh_frame
 * bytes, for the CFI tests (test_cfi_extract.c) and the CFI fuzz target
 * (tests/fuzz/fuzz_cfi.c).  Header-only; test code, not product.
 *
 * Layout: one PT_LOAD (R+X, offset 0 = vaddr 0) covering the file;
 * .text at CFI_TEXT (CFI_TEXT_LEN zero bytes), .eh_frame at CFI_EH, then
 * .shstrtab and the section headers.
 *
 * The .eh_frame writer (struct cfi_buf): cfi_cie() / cfi_fde() append one
 * entry with its length and padding; FDEs use pcrel|sdata4 addresses
 * (augmentation "zR", encoding 0x1b) like GCC's.
 */
#ifndef SPANPROF_TEST_CFI_ELF_H
#define SPANPROF_TEST_CFI_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CFI_TEXT 0x200u
#define CFI_TEXT_LEN 0x1000u
#define CFI_EH (CFI_TEXT + CFI_TEXT_LEN)
#define CFI_EH_MAX 0x20000u
#define CFI_IMAGE_MAX (CFI_EH + CFI_EH_MAX + 0x400)

struct cfi_buf {
	uint8_t b[CFI_EH_MAX];
	size_t n;
};

static inline void cfi_put(struct cfi_buf *c, const void *p, size_t n)
{
	if (!n)
		return;		/* p may be NULL then (memcpy's contract) */
	if (c->n + n <= sizeof(c->b)) {
		memcpy(c->b + c->n, p, n);
		c->n += n;
	} else {
		c->n = sizeof(c->b) + 1;	/* overflow marker: callers check */
	}
}

static inline void cfi_u32(struct cfi_buf *c, uint32_t v)
{
	cfi_put(c, &v, 4);
}

/* Appends a CIE (aug e.g. "zR" or "zRS"); returns its offset. */
static inline size_t cfi_cie(struct cfi_buf *c, const char *aug, const uint8_t *ins, size_t n_ins)
{
	size_t start = c->n, len;
	uint8_t hdr[] = { 1 };				/* version */
	uint8_t tail[] = { 1, 0x78, 16, 1, 0x1b };	/* code 1, data -8, RA 16, augdata 1, R */

	cfi_u32(c, 0);		/* length, patched */
	cfi_u32(c, 0);		/* CIE id */
	cfi_put(c, hdr, 1);
	cfi_put(c, aug, strlen(aug) + 1);
	cfi_put(c, tail, sizeof(tail));
	cfi_put(c, ins, n_ins);
	while ((c->n - start) % 8)
		cfi_put(c, "\0", 1);	/* DW_CFA_nop */
	if (c->n > sizeof(c->b))
		return start;
	len = c->n - start - 4;
	memcpy(c->b + start, &(uint32_t){ (uint32_t)len }, 4);
	return start;
}

/* Appends an FDE for [pc, pc + range) against the CIE at cie_off. */
static inline size_t cfi_fde(struct cfi_buf *c, size_t cie_off, uint32_t pc, uint32_t range,
			     const uint8_t *ins, size_t n_ins)
{
	size_t start = c->n, len;
	int32_t rel;

	cfi_u32(c, 0);
	cfi_u32(c, (uint32_t)(c->n - cie_off));	/* CIE pointer: back from here */
	rel = (int32_t)(pc - (CFI_EH + (uint32_t)c->n));
	cfi_put(c, &rel, 4);
	cfi_put(c, &range, 4);
	cfi_put(c, "\0", 1);			/* augmentation data length */
	cfi_put(c, ins, n_ins);
	while ((c->n - start) % 8)
		cfi_put(c, "\0", 1);
	if (c->n > sizeof(c->b))
		return start;
	len = c->n - start - 4;
	memcpy(c->b + start, &(uint32_t){ (uint32_t)len }, 4);
	return start;
}

static inline void cfi_end(struct cfi_buf *c)
{
	cfi_u32(c, 0);
}

/* The ELF image around eh[0..n) (n <= CFI_EH_MAX) into out (at least
 * CFI_IMAGE_MAX bytes); returns its size. */
static inline size_t cfi_elf(const uint8_t *eh, size_t n, uint8_t *out)
{
	static const char shstr[] = "\0.text\0.eh_frame\0.shstrtab";
	size_t str_off = CFI_EH + n, sh_off = (str_off + sizeof(shstr) + 7) & ~(size_t)7;
	size_t total = sh_off + 4 * sizeof(Elf64_Shdr);
	Elf64_Ehdr *e = (Elf64_Ehdr *)out;
	Elf64_Phdr *p = (Elf64_Phdr *)(out + sizeof(*e));
	Elf64_Shdr *s = (Elf64_Shdr *)(out + sh_off);

	memset(out, 0, total);
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_DYN;
	e->e_machine = EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_phoff = sizeof(*e);
	e->e_shoff = sh_off;
	e->e_ehsize = sizeof(*e);
	e->e_phentsize = sizeof(*p);
	e->e_phnum = 1;
	e->e_shentsize = sizeof(*s);
	e->e_shnum = 4;
	e->e_shstrndx = 3;
	p->p_type = PT_LOAD;
	p->p_flags = PF_R | PF_X;
	p->p_filesz = p->p_memsz = total;
	p->p_align = 0x1000;
	memcpy(out + CFI_EH, eh, n);
	memcpy(out + str_off, shstr, sizeof(shstr));
	s[1].sh_name = 1;
	s[1].sh_type = SHT_PROGBITS;
	s[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	s[1].sh_addr = s[1].sh_offset = CFI_TEXT;
	s[1].sh_size = CFI_TEXT_LEN;
	s[1].sh_addralign = 16;
	s[2].sh_name = 7;
	s[2].sh_type = SHT_PROGBITS;
	s[2].sh_flags = SHF_ALLOC;
	s[2].sh_addr = s[2].sh_offset = CFI_EH;
	s[2].sh_size = n;
	s[2].sh_addralign = 8;
	s[3].sh_name = 17;
	s[3].sh_type = SHT_STRTAB;
	s[3].sh_offset = str_off;
	s[3].sh_size = sizeof(shstr);
	s[3].sh_addralign = 1;
	return total;
}

/* The initial instructions of GCC's CIE: CFA = rsp + 8, RA at CFA - 8. */
static const uint8_t CFI_CIE_INS[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

#endif
