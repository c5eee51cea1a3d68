// SPDX-License-Identifier: MIT
/*
 * gopclntab.c - see gopclntab.h (it has the byte layouts).
 *
 * Contract: sp_gopcln__open allocates one struct that points into the
 * ELF image (elf_rawfile) and copies nothing else; every access goes
 * through a bounds-checked reader over the sub-table it belongs to, with
 * 64-bit arithmetic, so no header field, however large, reads outside.
 * One cleanup path per function; errors are negative errno.
 */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/gopclntab.h"

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
#define GO_HDR_SIZE 72
#define GO_PCDATA_INLTREEINDEX 2
#define GO_FUNCDATA_INLTREE 3
#define GO_MAX_LOADS 16
#define GO_MAX_INLINE_STEPS 64	/* a longer chain is malformed */
#define GO_MD_WORDS 48		/* moduledata words examined */
#define GO_MD_GOFUNC_118 38	/* moduledata word of gofunc, 1.18-1.19 */
#define GO_MD_GOFUNC_120 40	/* 1.20+: covctrs, ecovctrs inserted before */

struct go_load {
	uint64_t vaddr, off, filesz;
	bool writable;
};

/* A sub-table: bytes the table owns, read with bounds checks only. */
struct go_span {
	const uint8_t *p;
	uint64_t len;
};

struct sp_gopcln {
	const uint8_t *img;
	uint64_t img_size;
	struct go_load loads[GO_MAX_LOADS];
	uint32_t n_loads;
	uint64_t tab_vaddr;
	struct go_span tab, funcname, cutab, filetab, pctab, pcln;
	uint32_t format;	/* 118, 120 */
	uint32_t quantum;	/* minLC */
	uint64_t nfunc;
	uint64_t text_start;
	uint32_t func_fixed;	/* bytes of _func before pcdata[] */
	uint64_t gofunc;	/* 0: unknown, no inlined frames */
	uint32_t inl_size, inl_name, inl_parentpc;
};

static bool rd(const struct go_span *s, uint64_t off, uint64_t n, const uint8_t **p)
{
	if (off > s->len || n > s->len - off)
		return false;
	*p = s->p + off;
	return true;
}

static bool rd32(const struct go_span *s, uint64_t off, uint32_t *v)
{
	const uint8_t *p;

	if (!rd(s, off, 4, &p))
		return false;
	memcpy(v, p, 4);
	return true;
}

/* A NUL-terminated string at off inside s, or NULL. */
static const char *str_at(const struct go_span *s, uint64_t off)
{
	if (off >= s->len || !memchr(s->p + off, 0, s->len - off))
		return NULL;
	return (const char *)s->p + off;
}

/* The bytes of the image at vaddr, n long, inside one PT_LOAD's file
 * part; false otherwise. */
static bool vaddr_span(const struct sp_gopcln *t, uint64_t vaddr, uint64_t n,
		       struct go_span *out)
{
	for (uint32_t i = 0; i < t->n_loads; i++) {
		const struct go_load *l = &t->loads[i];

		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz)
			continue;
		if (n > l->filesz - (vaddr - l->vaddr))
			return false;
		if (l->off + (vaddr - l->vaddr) + n > t->img_size)
			return false;
		out->p = t->img + l->off + (vaddr - l->vaddr);
		out->len = n;
		return true;
	}
	return false;
}

/* Bytes from vaddr to the end of its segment's file part. */
static bool vaddr_rest(const struct sp_gopcln *t, uint64_t vaddr, struct go_span *out)
{
	for (uint32_t i = 0; i < t->n_loads; i++) {
		const struct go_load *l = &t->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz)
			return vaddr_span(t, vaddr, l->filesz - (vaddr - l->vaddr), out);
	}
	return false;
}

/* ------------------------------------------------------------ header */

/* Sub-table [off, next higher offset or end of table). */
static int sub_table(struct sp_gopcln *t, const uint64_t offs[5], int i, struct go_span *out)
{
	uint64_t end = t->tab.len;

	if (offs[i] < GO_HDR_SIZE || offs[i] > t->tab.len)
		return -EINVAL;
	for (int j = 0; j < 5; j++)
		if (offs[j] > offs[i] && offs[j] < end)
			end = offs[j];
	out->p = t->tab.p + offs[i];
	out->len = end - offs[i];
	return 0;
}

static int parse_header(struct sp_gopcln *t)
{
	const uint8_t *h;
	uint64_t offs[5];
	uint32_t magic;
	int err;

	if (!rd(&t->tab, 0, GO_HDR_SIZE, &h))
		return -EINVAL;
	memcpy(&magic, h, 4);
	if (magic == GO_MAGIC_118) {
		t->format = 118;
	} else if (magic == GO_MAGIC_120) {
		t->format = 120;
	} else if (magic == 0xfffffffbu || magic == 0xfffffffau) {
		return -ENOTSUP;	/* Go 1.2-1.17 */
	} else {
		return -EINVAL;
	}
	if (h[4] || h[5] || (h[6] != 1 && h[6] != 2 && h[6] != 4) || h[7] != 8)
		return -EINVAL;
	t->quantum = h[6];
	memcpy(&t->nfunc, h + 8, 8);
	memcpy(&t->text_start, h + 24, 8);
	for (int i = 0; i < 5; i++)
		memcpy(&offs[i], h + 32 + 8 * i, 8);
	/* offs: funcname, cu, filetab, pctab, pcln */
	if ((err = sub_table(t, offs, 0, &t->funcname)) || (err = sub_table(t, offs, 1, &t->cutab)) ||
	    (err = sub_table(t, offs, 2, &t->filetab)) || (err = sub_table(t, offs, 3, &t->pctab)) ||
	    (err = sub_table(t, offs, 4, &t->pcln)))
		return err;
	if (!t->nfunc || t->nfunc >= t->pcln.len / 8)
		return -EINVAL;
	t->func_fixed = t->format >= 120 ? 44 : 40;
	if (t->format >= 120) {
		t->inl_size = 16;
		t->inl_name = 4;
		t->inl_parentpc = 8;
	} else {
		t->inl_size = 20;
		t->inl_name = 12;
		t->inl_parentpc = 16;
	}
	return 0;
}

/* ------------------------------------------------------------ locating */

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Value of a .symtab symbol (0 when there is no .symtab or no symbol). */
static uint64_t symtab_value(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name))
				return sym.st_value;
		}
	}
	return 0;
}

static bool header_ok(const struct sp_gopcln *t0, const uint8_t *p, uint64_t len)
{
	struct sp_gopcln t = *t0;

	t.tab.p = p;
	t.tab.len = len;
	return parse_header(&t) == 0;
}

/* Finds the table: sections by name, the runtime.pclntab symbol, else a
 * scan of read-only segments for a header that parses. */
static int locate(Elf *elf, struct sp_gopcln *t)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	static const uint8_t magics[2][4] = { { 0xf0, 0xff, 0xff, 0xff },
					      { 0xf1, 0xff, 0xff, 0xff } };
	GElf_Shdr sh;
	uint64_t va, end;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		Elf_Scn *scn = section_named(elf, names[i], &sh);

		if (scn && sh.sh_type != SHT_NOBITS && sh.sh_offset <= t->img_size &&
		    sh.sh_size <= t->img_size - sh.sh_offset) {
			t->tab.p = t->img + sh.sh_offset;
			t->tab.len = sh.sh_size;
			t->tab_vaddr = sh.sh_addr;
			return 0;
		}
	}
	va = symtab_value(elf, "runtime.pclntab");
	if (va && vaddr_rest(t, va, &t->tab)) {
		end = symtab_value(elf, "runtime.epclntab");
		if (end > va && end - va <= t->tab.len)
			t->tab.len = end - va;
		t->tab_vaddr = va;
		return 0;
	}
	for (uint32_t i = 0; i < t->n_loads; i++) {
		const struct go_load *l = &t->loads[i];
		uint64_t n = l->filesz < SP_GOPCLN_SCAN_MAX ? l->filesz : SP_GOPCLN_SCAN_MAX;

		if (l->writable || l->off > t->img_size || n > t->img_size - l->off)
			continue;
		for (uint64_t o = 0; o + GO_HDR_SIZE <= n; o += 8) {
			const uint8_t *p = t->img + l->off + o;

			if (memcmp(p, magics[0], 4) && memcmp(p, magics[1], 4))
				continue;
			if (!header_ok(t, p, l->filesz - o))
				continue;
			t->tab.p = p;
			t->tab.len = l->filesz - o;
			t->tab_vaddr = l->vaddr + o;
			return 0;
		}
	}
	return -ENOENT;
}

/* moduledata.gofunc: the symbol, else the moduledata (first word = the
 * header's address, second = its funcnametab's) in a writable segment. */
static void find_gofunc(Elf *elf, struct sp_gopcln *t)
{
	uint64_t v = symtab_value(elf, t->format >= 120 ? "go:func.*" : "go.func.*");
	uint64_t want_names = t->tab_vaddr + (uint64_t)(t->funcname.p - t->tab.p);
	struct go_span probe;

	if (v) {
		t->gofunc = v;
		return;
	}
	for (uint32_t i = 0; i < t->n_loads; i++) {
		const struct go_load *l = &t->loads[i];

		if (!l->writable || l->off > t->img_size || l->filesz > t->img_size - l->off)
			continue;
		for (uint64_t o = 0; o + GO_MD_WORDS * 8 <= l->filesz; o += 8) {
			const uint8_t *p = t->img + l->off + o;
			uint64_t w0, w1, g;

			memcpy(&w0, p, 8);
			if (w0 != t->tab_vaddr)
				continue;
			memcpy(&w1, p + 8, 8);
			if (w1 != want_names)
				continue;
			memcpy(&g, p + 8 * (t->format >= 120 ? GO_MD_GOFUNC_120 : GO_MD_GOFUNC_118), 8);
			if (vaddr_span(t, g, 1, &probe))
				t->gofunc = g;
			return;
		}
	}
}

int sp_gopcln__open(Elf *elf, struct sp_gopcln **out)
{
	struct sp_gopcln *t = NULL;
	size_t phnum, size;
	char *img;
	int err;

	*out = NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64)
		return -EINVAL;
	img = elf_rawfile(elf, &size);
	if (!img || elf_getphdrnum(elf, &phnum))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->img = (const uint8_t *)img;
	t->img_size = size;
	for (size_t i = 0; i < phnum && t->n_loads < GO_MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->loads[t->n_loads++] = (struct go_load){
			.vaddr = ph.p_vaddr, .off = ph.p_offset, .filesz = ph.p_filesz,
			.writable = (ph.p_flags & PF_W) != 0,
		};
	}
	err = locate(elf, t);
	if (!err)
		err = parse_header(t);
	if (err)
		goto fail;
	if (!t->text_start) {
		/* Go 1.26 writes 0: the table is relative to .text's start. */
		GElf_Shdr sh;

		if (section_named(elf, ".text", &sh))
			t->text_start = sh.sh_addr;
	}
	find_gofunc(elf, t);
	*out = t;
	return 0;
fail:
	free(t);
	return err;
}

void sp_gopcln__free(struct sp_gopcln *t)
{
	free(t);
}

uint32_t sp_gopcln__format(const struct sp_gopcln *t)
{
	return t ? t->format : 0;
}

int sp_gopcln__has_inline(const struct sp_gopcln *t)
{
	return t && t->gofunc != 0;
}

/* ------------------------------------------------------------ lookups */

struct go_func {
	uint64_t entry, end;
	uint64_t off;		/* of the _func record inside pcln */
	uint32_t nameoff, pcfile, pcln, npcdata, cu;
	uint8_t nfuncdata;
};

static bool func_entry(const struct sp_gopcln *t, uint64_t i, uint64_t *entry, uint32_t *funcoff)
{
	uint32_t e;

	if (!rd32(&t->pcln, 8 * i, &e) || (funcoff && !rd32(&t->pcln, 8 * i + 4, funcoff)))
		return false;
	*entry = t->text_start + e;
	return true;
}

static bool func_at(const struct sp_gopcln *t, uint64_t i, struct go_func *f)
{
	uint32_t funcoff, nameoff;
	const uint8_t *p;

	if (!func_entry(t, i, &f->entry, &funcoff) || !func_entry(t, i + 1, &f->end, NULL))
		return false;
	f->off = funcoff;
	if (!rd(&t->pcln, f->off, t->func_fixed, &p))
		return false;
	memcpy(&nameoff, p + 4, 4);
	f->nameoff = nameoff;
	memcpy(&f->pcfile, p + 20, 4);
	memcpy(&f->pcln, p + 24, 4);
	memcpy(&f->npcdata, p + 28, 4);
	memcpy(&f->cu, p + 32, 4);
	f->nfuncdata = p[t->func_fixed - 1];
	return f->npcdata <= 1024;
}

/* pc-value table at off for f at pc: the value, or -1 (no table, pc not
 * covered, malformed). */
static int64_t pcvalue(const struct sp_gopcln *t, const struct go_func *f, uint32_t off,
		       uint64_t pc)
{
	uint64_t p = off, cur = f->entry;
	int64_t val = -1;

	if (!off)
		return -1;
	while (p < t->pctab.len) {
		uint64_t uv = 0, pcd = 0;
		int shift;

		for (shift = 0; shift < 35 && p < t->pctab.len; shift += 7) {
			uint8_t b = t->pctab.p[p++];

			uv |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
		}
		if (shift >= 35)
			return -1;
		if (uv == 0 && cur != f->entry)
			return -1;	/* end of table before pc */
		val += (int64_t)(int32_t)(-(uint32_t)(uv & 1) ^ (uint32_t)(uv >> 1));
		for (shift = 0; shift < 35 && p < t->pctab.len; shift += 7) {
			uint8_t b = t->pctab.p[p++];

			pcd |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
		}
		if (shift >= 35)
			return -1;
		cur += pcd * t->quantum;
		if (pc < cur)
			return val;
	}
	return -1;
}

static const char *func_file(const struct sp_gopcln *t, const struct go_func *f, int64_t fileno)
{
	uint32_t off;

	if (fileno < 0 || !rd32(&t->cutab, 4 * ((uint64_t)f->cu + (uint64_t)fileno), &off) ||
	    off == UINT32_MAX)
		return NULL;
	return str_at(&t->filetab, off);
}

static int64_t pcdata(const struct sp_gopcln *t, const struct go_func *f, uint32_t table,
		      uint64_t pc)
{
	uint32_t off;

	if (table >= f->npcdata || !rd32(&t->pcln, f->off + t->func_fixed + 4 * table, &off))
		return -1;
	return pcvalue(t, f, off, pc);
}

/* The inline tree entry ix: *nameoff and *parentpc.  false without one. */
static bool inl_entry(const struct sp_gopcln *t, const struct go_func *f, int64_t ix,
		      uint32_t *nameoff, int32_t *parentpc)
{
	struct go_span e;
	uint32_t fd;

	if (!t->gofunc || ix < 0 || f->nfuncdata <= GO_FUNCDATA_INLTREE ||
	    !rd32(&t->pcln, f->off + t->func_fixed + 4 * (uint64_t)f->npcdata +
			       4 * GO_FUNCDATA_INLTREE, &fd) ||
	    fd == UINT32_MAX ||
	    !vaddr_span(t, t->gofunc + fd + (uint64_t)ix * t->inl_size, t->inl_size, &e))
		return false;
	memcpy(nameoff, e.p + t->inl_name, 4);
	memcpy(parentpc, e.p + t->inl_parentpc, 4);
	return true;
}

/* Index of the function covering pc, or -1. */
static int64_t find_index(const struct sp_gopcln *t, uint64_t pc)
{
	uint64_t lo = 0, hi = t->nfunc, e;

	if (!func_entry(t, 0, &e, NULL) || pc < e || !func_entry(t, t->nfunc, &e, NULL) || pc >= e)
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!func_entry(t, mid, &e, NULL))
			return -1;
		if (e <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

int sp_gopcln__resolve(const struct sp_gopcln *t, uint64_t pc, struct sp_gopcln_frame *out,
		       uint32_t max, uint32_t *n, uint64_t *entry)
{
	struct go_func f;
	uint64_t cur = pc;
	int64_t i, ix;
	uint32_t k = 0;

	*n = 0;
	if (!t || !out || !max)
		return -EINVAL;
	i = find_index(t, pc);
	if (i < 0 || !func_at(t, (uint64_t)i, &f) || pc >= f.end)
		return -ENOENT;
	if (entry)
		*entry = f.entry;
	ix = pcdata(t, &f, GO_PCDATA_INLTREEINDEX, cur);
	for (int step = 0; step < GO_MAX_INLINE_STEPS; step++) {
		uint32_t nameoff;
		int32_t parentpc;

		if (ix < 0 || !inl_entry(t, &f, ix, &nameoff, &parentpc))
			break;
		/* keep room for the real function */
		if (k + 1 < max) {
			out[k].function = str_at(&t->funcname, nameoff);
			out[k].file = func_file(t, &f, pcvalue(t, &f, f.pcfile, cur));
			out[k].line = pcvalue(t, &f, f.pcln, cur);
			if (out[k].line < 0)
				out[k].line = 0;
			k++;
		}
		if (parentpc < 0 || f.entry + (uint64_t)parentpc >= f.end)
			break;
		cur = f.entry + (uint64_t)parentpc;
		ix = pcdata(t, &f, GO_PCDATA_INLTREEINDEX, cur);
	}
	out[k].function = str_at(&t->funcname, f.nameoff);
	out[k].file = func_file(t, &f, pcvalue(t, &f, f.pcfile, cur));
	out[k].line = pcvalue(t, &f, f.pcln, cur);
	if (out[k].line < 0)
		out[k].line = 0;
	*n = k + 1;
	return 0;
}

int sp_gopcln__find_func(const struct sp_gopcln *t, const char *name, uint64_t *entry,
			 uint64_t *end)
{
	struct go_func f;

	if (!t || !name)
		return -EINVAL;
	for (uint64_t i = 0; i < t->nfunc; i++) {
		const char *s;

		if (!func_at(t, i, &f))
			continue;
		s = str_at(&t->funcname, f.nameoff);
		if (s && !strcmp(s, name)) {
			*entry = f.entry;
			*end = f.end;
			return 0;
		}
	}
	return -ENOENT;
}
