// SPDX-License-Identifier: MIT
/*
 * go_binary.c - see go_binary.h (it has the byte layouts).
 *
 * Contract: one libelf handle per call, ended before returning; libdw only
 * when the file has DWARF; the .gopclntab reader (base/gopclntab.h) only
 * to find runtime.stackcheck when .symtab lacks it.  Nothing allocated
 * outlives the call.  The file is untrusted: sizes and offsets checked
 * before use.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#include "base/buildid.h"
#include "base/elf_symtab.h"
#include "base/gopclntab.h"
#include "collector/tracectx/go_binary.h"
#include "collector/tracectx/go_offsets.h"

#define GO_BUILDINFO_MAGIC "\xff Go buildinf:"
#define GO_BUILDINFO_MAGIC_LEN 14
#define GO_BUILDINFO_HDR 32
#define GO_BUILDINFO_SCAN 65536	/* bytes of a writable segment searched */
#define GO_TLS_DEFAULT (-8)	/* runtime·settls: "ELF wants to use -8(FS)" */

static const char *const fail_names[SP_GO_FAIL__MAX] = {
	[SP_GO_FAIL_NONE] = "none",
	[SP_GO_FAIL_NO_VERSION] = "no_version",
	[SP_GO_FAIL_UNKNOWN_VERSION] = "unknown_version",
	[SP_GO_FAIL_DWARF_LAYOUT] = "dwarf_layout",
	[SP_GO_FAIL_TLS] = "tls_unknown",
	[SP_GO_FAIL_ELF] = "elf",
};

const char *sp_go_fail__name(enum sp_go_fail f)
{
	return (unsigned)f < SP_GO_FAIL__MAX ? fail_names[f] : "?";
}

/* ------------------------------------------------------------ buildinfo */

static int uvarint(const uint8_t *p, size_t len, size_t *off, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= len)
			return -EINVAL;
		b = p[(*off)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EINVAL;
}

static int copy_version(const uint8_t *s, uint64_t n, char out[SP_GO_VERSION_MAX + 1])
{
	if (!n || n > SP_GO_VERSION_MAX)
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static uint64_t word(const uint8_t *p, int ptr_size, bool big)
{
	uint64_t v = 0;

	for (int i = 0; i < ptr_size; i++)
		v |= (uint64_t)p[i] << (8 * (big ? ptr_size - 1 - i : i));
	return v;
}

int sp_go_binary__buildinfo_version(const uint8_t *buf, size_t len, sp_go_read_at_fn read_at,
				    void *ctx, char out[SP_GO_VERSION_MAX + 1])
{
	uint8_t hdr[16], s[SP_GO_VERSION_MAX];
	uint64_t n, vaddr;
	size_t off = GO_BUILDINFO_HDR;
	int ptr_size;
	bool big;

	out[0] = '\0';
	if (!buf || len < GO_BUILDINFO_HDR || memcmp(buf, GO_BUILDINFO_MAGIC, GO_BUILDINFO_MAGIC_LEN))
		return -ENOENT;
	ptr_size = buf[14];
	big = buf[15] & 1;
	if (buf[15] & 2) {
		/* Go 1.18+: the version string is right here */
		if (uvarint(buf, len, &off, &n) || n > len - off)
			return -EINVAL;
		return copy_version(buf + off, n, out);
	}
	if ((ptr_size != 4 && ptr_size != 8) || !read_at)
		return -EINVAL;
	/* Go < 1.18: *(string header at ptr 0) */
	vaddr = word(buf + 16, ptr_size, big);
	if (read_at(ctx, vaddr, hdr, 2 * ptr_size))
		return -EINVAL;
	vaddr = word(hdr, ptr_size, big);
	n = word(hdr + ptr_size, ptr_size, big);
	if (!n || n > sizeof(s) || read_at(ctx, vaddr, s, n))
		return -EINVAL;
	return copy_version(s, n, out);
}

/* ------------------------------------------------------------ ELF helpers */

struct elf_view {
	Elf *elf;
	int fd;
	const uint8_t *img;
	size_t size;
	size_t shstrndx;
	bool has_shstr;
};

/* Copies n bytes at virtual address vaddr from a PT_LOAD's file part. */
static int view_read_at(void *ctx, uint64_t vaddr, void *dst, size_t n)
{
	struct elf_view *v = ctx;
	size_t phnum;

	if (elf_getphdrnum(v->elf, &phnum))
		return -EINVAL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(v->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (n > ph.p_filesz - (vaddr - ph.p_vaddr) ||
		    ph.p_offset + (vaddr - ph.p_vaddr) + n > v->size)
			return -EINVAL;
		memcpy(dst, v->img + ph.p_offset + (vaddr - ph.p_vaddr), n);
		return 0;
	}
	return -ENOENT;
}

static Elf_Scn *view_section(struct elf_view *v, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	if (!v->has_shstr)
		return NULL;
	while ((scn = elf_nextscn(v->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(v->elf, v->shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static bool view_bytes(struct elf_view *v, uint64_t off, uint64_t n, const uint8_t **p)
{
	if (off > v->size || n > v->size - off)
		return false;
	*p = v->img + off;
	return true;
}

/* The version: .go.buildinfo, else a scan of writable segments.  0 or
 * -ENOENT (no buildinfo), -EINVAL (buildinfo, no readable version). */
static int read_version(struct elf_view *v, char out[SP_GO_VERSION_MAX + 1])
{
	const uint8_t *p;
	GElf_Shdr sh;
	size_t phnum;
	int err = -ENOENT;

	if (view_section(v, ".go.buildinfo", &sh) && sh.sh_type != SHT_NOBITS &&
	    view_bytes(v, sh.sh_offset, sh.sh_size, &p))
		return sp_go_binary__buildinfo_version(p, sh.sh_size, view_read_at, v, out) ? -EINVAL : 0;
	if (elf_getphdrnum(v->elf, &phnum))
		return -ENOENT;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t n;

		if (!gelf_getphdr(v->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_W))
			continue;
		n = ph.p_filesz < GO_BUILDINFO_SCAN ? ph.p_filesz : GO_BUILDINFO_SCAN;
		if (!view_bytes(v, ph.p_offset, n, &p))
			continue;
		for (uint64_t o = 0; o + GO_BUILDINFO_HDR <= n; o += 16) {
			if (memcmp(p + o, GO_BUILDINFO_MAGIC, GO_BUILDINFO_MAGIC_LEN))
				continue;
			err = sp_go_binary__buildinfo_version(p + o, n - o, view_read_at, v, out);
			return err ? -EINVAL : 0;
		}
	}
	return err;
}

/* True when the file's build id is a Go one (a Go build id note and no
 * GNU id: a cgo binary with both is found by its .go.buildinfo). */
static bool has_go_note(struct elf_view *v)
{
	struct sp_build_id b;

	return sp_buildid__from_fd(v->fd, &b) == 0 && b.kind == SP_BUILD_ID_GO;
}

/* A .symtab symbol's value and size (false when absent or undefined). */
static bool symtab_find(struct elf_view *v, const char *name, GElf_Sym *out)
{
	return sp_elf_symtab__find(v->elf, name, out) == 0;
}

/* ------------------------------------------------------------ TLS */

int sp_go_binary__decode_tls(const uint8_t *c, size_t n, int32_t *off)
{
	int32_t d;

	/* mov %fs:disp32, %reg   (64) REX.W 8B ModRM(mod 00, rm 100) SIB 25 */
	if (n >= 9 && c[0] == 0x64 && (c[1] & 0xf8) == 0x48 && c[2] == 0x8b &&
	    (c[3] & 0xc7) == 0x04 && c[4] == 0x25) {
		memcpy(&d, c + 5, 4);
		*off = d;
		return 0;
	}
	/* mov $imm32, %reg; mov %fs:(%reg), %reg2
	 *   REX.W C7 ModRM(11 000 r) imm32; 64 REX.W 8B ModRM(00 x r) */
	if (n >= 11 && (c[0] & 0xf8) == 0x48 && c[1] == 0xc7 && (c[2] & 0xf8) == 0xc0 &&
	    c[7] == 0x64 && (c[8] & 0xf8) == 0x48 && c[9] == 0x8b &&
	    (c[10] & 0xc0) == 0 && (c[10] & 7) == (c[2] & 7) && (c[2] & 7) != 4 &&
	    (c[2] & 7) != 5 && !((c[0] ^ c[8]) & 1)) {
		memcpy(&d, c + 3, 4);
		*off = d;
		return 0;
	}
	return -ENOENT;
}

int sp_go_binary__park_points(const uint8_t *c, size_t n, uint64_t entry, uint64_t mcall,
			      uint64_t *park, uint64_t *resume)
{
	size_t i, hits = 0;

	*park = *resume = 0;
	for (i = 0; i + 5 <= n && i < 32; i++) {
		if (c[i] == 0x48 && c[i + 1] == 0x8d && c[i + 2] == 0x6c && c[i + 3] == 0x24) {
			*park = entry + i + 5;	/* lea disp8(%rsp),%rbp */
			break;
		}
		if (i + 8 <= n && c[i] == 0x48 && c[i + 1] == 0x8d && c[i + 2] == 0xac &&
		    c[i + 3] == 0x24) {
			*park = entry + i + 8;	/* lea disp32(%rsp),%rbp */
			break;
		}
	}
	for (i = 0; i + 5 <= n; i++) {
		int32_t rel;

		if (c[i] != 0xe8)
			continue;
		memcpy(&rel, c + i + 1, 4);
		if (entry + i + 5 + (int64_t)rel == mcall) {
			*resume = entry + i + 5;
			hits++;
		}
	}
	if (!*park || hits != 1) {
		*park = *resume = 0;
		return -ENOENT;
	}
	return 0;
}

/* Entry and end of a runtime function: .symtab, else .gopclntab (tab is
 * opened on first need and left to the caller to free). */
static bool func_range(struct elf_view *v, struct sp_gopcln **tab, const char *name,
		       uint64_t *entry, uint64_t *end)
{
	GElf_Sym sym;

	if (symtab_find(v, name, &sym) && sym.st_value && sym.st_size) {
		*entry = sym.st_value;
		*end = sym.st_value + sym.st_size;
		return true;
	}
	if (!*tab && sp_gopcln__open(v->elf, tab))
		return false;
	return !sp_gopcln__find_func(*tab, name, entry, end);
}

/* File offset of a virtual address inside an executable PT_LOAD. */
static uint64_t file_offset(struct elf_view *v, uint64_t vaddr)
{
	size_t phnum;

	if (elf_getphdrnum(v->elf, &phnum))
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(v->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static void find_park_points(struct elf_view *v, struct sp_go_binary *out)
{
	struct sp_gopcln *tab = NULL;
	uint64_t entry, end, mcall, mend, park, resume;
	const uint8_t *code;

	if (func_range(v, &tab, "runtime.gopark", &entry, &end) &&
	    func_range(v, &tab, "runtime.mcall", &mcall, &mend) && end > entry &&
	    end - entry <= 4096 && file_offset(v, entry) &&
	    view_bytes(v, file_offset(v, entry), end - entry, &code) &&
	    !sp_go_binary__park_points(code, end - entry, entry, mcall, &park, &resume)) {
		out->park_off = file_offset(v, park);
		out->resume_off = file_offset(v, resume);
		if (!out->park_off || !out->resume_off)
			out->park_off = out->resume_off = 0;
	}
	sp_gopcln__free(tab);
}

/* The GC epoch probe's point (bpf/gogc.bpf.c): the entry of
 * runtime.gcSweep (bpf/golabels.bpf.h says why that function), by
 * .symtab or, stripped, .gopclntab. */
static void find_gc_point(struct elf_view *v, struct sp_go_binary *out)
{
	struct sp_gopcln *tab = NULL;
	uint64_t entry, end;

	if (func_range(v, &tab, "runtime.gcSweep", &entry, &end) && end > entry)
		out->gc_off = file_offset(v, entry);
	sp_gopcln__free(tab);
}

/* Bytes at a virtual address of a PT_LOAD's file part. */
static bool view_code(struct elf_view *v, uint64_t vaddr, size_t n, uint8_t *dst)
{
	return view_read_at(v, vaddr, dst, n) == 0;
}

static int find_tls(struct elf_view *v, int32_t *off)
{
	struct sp_gopcln *tab = NULL;
	uint64_t entry = 0, end;
	uint8_t code[16];
	GElf_Phdr tls = { 0 };
	GElf_Sym sym;
	size_t phnum;
	bool have_tls = false;
	int err = -ENOENT;

	/* the instruction the runtime itself uses, when we can find it */
	if (symtab_find(v, "runtime.stackcheck.abi0", &sym) ||
	    symtab_find(v, "runtime.stackcheck", &sym))
		entry = sym.st_value;
	else if (sp_gopcln__open(v->elf, &tab) ||
		 sp_gopcln__find_func(tab, "runtime.stackcheck", &entry, &end))
		entry = 0;
	sp_gopcln__free(tab);
	if (entry && view_code(v, entry, sizeof(code), code) &&
	    !sp_go_binary__decode_tls(code, sizeof(code), off))
		return 0;
	if (!elf_getphdrnum(v->elf, &phnum))
		for (size_t i = 0; i < phnum; i++)
			if (gelf_getphdr(v->elf, (int)i, &tls) && tls.p_type == PT_TLS) {
				have_tls = true;
				break;
			}
	if (!have_tls) {
		*off = GO_TLS_DEFAULT;
		return 0;
	}
	/* cgo: runtime.tlsg is a static-TLS variable of the executable */
	if (symtab_find(v, "runtime.tlsg", &sym) && GELF_ST_TYPE(sym.st_info) == STT_TLS) {
		uint64_t a = tls.p_align ? tls.p_align : 1;
		uint64_t block = (tls.p_memsz + a - 1) & ~(a - 1);

		if (sym.st_value < block && block <= INT32_MAX) {
			*off = (int32_t)((int64_t)sym.st_value - (int64_t)block);
			err = 0;
		}
	}
	return err;
}

/* ------------------------------------------------------------ DWARF */

struct dw_want {
	int g_m, g_labels, m_curg;		/* -1 until found */
	int g_status;				/* g.atomicstatus, -1 until found */
	int hmap[5];				/* count, flags, B, buckets, oldbuckets */
	int bucket_keys, bucket_values, bucket_overflow;
	int label_layout;			/* 0 unknown, SP_GO_LABELS_* */
	int mheap_sweepgen;			/* offsetof(runtime.mheap, sweepgen) */
	bool have_g, have_m, have_hmap, have_bucket, have_mheap;
};

/* offsetof(st, name), at most limit; -1 when absent or larger. */
static int member_offset_upto(Dwarf_Die *st, const char *name, Dwarf_Word limit)
{
	Dwarf_Die m;
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (dwarf_child(st, &m))
		return -1;
	do {
		const char *n;

		if (dwarf_tag(&m) != DW_TAG_member || !(n = dwarf_diename(&m)) || strcmp(n, name))
			continue;
		if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &v) ||
		    v > limit)
			return -1;
		return (int)v;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/* The offsets the descriptor holds in a u16. */
static int member_offset(Dwarf_Die *st, const char *name)
{
	return member_offset_upto(st, name, 0xffff);
}

static void dw_struct(struct dw_want *w, Dwarf_Die *d, const char *name)
{
	static const char *const hm[5] = { "count", "flags", "B", "buckets", "oldbuckets" };

	if (!strcmp(name, "runtime.g") && !w->have_g) {
		w->have_g = true;
		w->g_m = member_offset(d, "m");
		w->g_labels = member_offset(d, "labels");
		w->g_status = member_offset(d, "atomicstatus");
	} else if (!strcmp(name, "runtime.m") && !w->have_m) {
		w->have_m = true;
		w->m_curg = member_offset(d, "curg");
	} else if (!strcmp(name, "runtime.mheap") && !w->have_mheap) {
		w->have_mheap = true;
		/* behind pageAlloc's 64 KiB of chunk pointers (65848 in 1.19) */
		w->mheap_sweepgen = member_offset_upto(d, "sweepgen", 1 << 24);
	} else if (!strcmp(name, "runtime.hmap") && !w->have_hmap) {
		w->have_hmap = true;
		for (int i = 0; i < 5; i++)
			w->hmap[i] = member_offset(d, hm[i]);
	} else if (!strcmp(name, "bucket<string,string>") && !w->have_bucket) {
		w->have_bucket = true;
		w->bucket_keys = member_offset(d, "keys");
		w->bucket_values = member_offset(d, "values");
		if (w->bucket_values < 0)
			w->bucket_values = member_offset(d, "elems");
		w->bucket_overflow = member_offset(d, "overflow");
	} else if (!strcmp(name, "runtime/pprof.labelMap")) {
		w->label_layout = SP_GO_LABELS_SLICE;
	}
}

/* Walks every CU's top-level DIEs for the types wanted.  1 when runtime.g
 * and runtime.m were found, 0 when not (no usable DWARF). */
static int dw_read(Elf *elf, struct dw_want *w)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next;
	size_t hsize;
	int found = 0;

	if (!dw)
		return 0;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				int tag = dwarf_tag(&d);
				const char *n;

				if ((tag != DW_TAG_structure_type && tag != DW_TAG_typedef) ||
				    !(n = dwarf_diename(&d)))
					continue;
				if (tag == DW_TAG_typedef) {
					if (!strcmp(n, "runtime/pprof.labelMap"))
						w->label_layout = SP_GO_LABELS_MAP;
					continue;
				}
				dw_struct(w, &d, n);
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		if (w->have_g && w->have_m && w->have_hmap && w->have_bucket && w->label_layout &&
		    w->have_mheap)
			break;
		off = next;
	}
	found = w->have_g && w->have_m && w->g_m >= 0 && w->m_curg >= 0 && w->g_labels >= 0;
	dwarf_end(dw);
	return found;
}

/* The map layout the BPF reader assumes (abi.h), as this DWARF has it. */
static bool dw_map_layout_ok(const struct dw_want *w)
{
	static const int want[5] = { SP_GO_HMAP_COUNT, SP_GO_HMAP_FLAGS, SP_GO_HMAP_B,
				     SP_GO_HMAP_BUCKETS, SP_GO_HMAP_OLDBUCKETS };

	if (w->have_hmap)
		for (int i = 0; i < 5; i++)
			if (w->hmap[i] != want[i])
				return false;
	return !w->have_bucket ||
	       (w->bucket_keys == SP_GO_BUCKET_KEYS && w->bucket_values == SP_GO_BUCKET_VALUES &&
		w->bucket_overflow == SP_GO_BUCKET_OVERFLOW);
}

/* ------------------------------------------------------------ the file */

/*
 * Where runtime.mheap_.sweepgen is in the process (the label cache's GC
 * cycle, bpf/golabels.bpf.h): .symtab's runtime.mheap_ plus the field's
 * DWARF offset, in a fixed-address executable only.  0 (labels read
 * uncached, counted) for a PIE (its address would need the load bias),
 * without .symtab or DWARF (stripped: no version table holds mheap's
 * layout, whose pageAlloc ahead of sweepgen changes between releases).
 */
static uint64_t sweepgen_addr(struct elf_view *v, const GElf_Ehdr *eh, int off)
{
	GElf_Sym sym;

	if (eh->e_type != ET_EXEC || off < 0 || !symtab_find(v, "runtime.mheap_", &sym) ||
	    !sym.st_value || (uint64_t)off + 4 > sym.st_size)
		return 0;
	return sym.st_value + (uint64_t)off;
}

static int read_elf(int fd, Elf *elf, struct sp_go_binary *out, enum sp_go_fail *why)
{
	struct dw_want w = { .g_m = -1, .g_labels = -1, .m_curg = -1, .g_status = -1,
			     .mheap_sweepgen = -1 };
	struct elf_view v = { .elf = elf, .fd = fd };
	struct sp_go_desc table = { 0 };
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t size;
	bool go, dwarf = false, in_table;
	int32_t tls;
	int err;

	v.img = (const uint8_t *)elf_rawfile(elf, &size);
	v.size = size;
	if (!v.img || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		*why = SP_GO_FAIL_ELF;
		return -EINVAL;
	}
	if (eh.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64)
		return -ENOENT;	/* the BPF reader is x86-64 only */
	v.has_shstr = elf_getshdrstrndx(elf, &v.shstrndx) == 0;
	err = read_version(&v, out->version);
	go = err != -ENOENT || has_go_note(&v);
	if (!go)
		return -ENOENT;
	if (err || sp_go_offsets__parse_version(out->version, &out->minor)) {
		*why = SP_GO_FAIL_NO_VERSION;
		return -ENOTSUP;
	}
	out->desc.go_minor = out->minor;
	in_table = sp_go_offsets__for(out->minor, &table);
	if (view_section(&v, ".debug_info", &sh))
		dwarf = dw_read(elf, &w);
	if (dwarf) {
		out->desc.g_m = w.g_m;
		out->desc.m_curg = w.m_curg;
		out->desc.g_labels = w.g_labels;
		/* DWARF only: the version table has no verified row for it
		 * (then a labelled goroutine's cgo calls carry no ids) */
		out->desc.g_status = w.g_status > 0 ? (uint16_t)w.g_status : 0;
		out->desc.layout = w.label_layout ? w.label_layout
				   : in_table	   ? table.layout
				   : out->minor >= 24 ? SP_GO_LABELS_SLICE : SP_GO_LABELS_MAP;
		out->offsets_from = SP_GO_FROM_DWARF;
		if (out->desc.layout == SP_GO_LABELS_MAP && !dw_map_layout_ok(&w)) {
			*why = SP_GO_FAIL_DWARF_LAYOUT;
			return -ENOTSUP;
		}
	} else if (in_table) {
		out->desc.g_m = table.g_m;
		out->desc.m_curg = table.m_curg;
		out->desc.g_labels = table.g_labels;
		out->desc.layout = table.layout;
		out->offsets_from = SP_GO_FROM_TABLE;
	} else {
		*why = SP_GO_FAIL_UNKNOWN_VERSION;
		return -ENOTSUP;
	}
	if (find_tls(&v, &tls)) {
		*why = SP_GO_FAIL_TLS;
		return -ENOTSUP;
	}
	out->desc.tls_g = tls;
	out->desc.sweepgen = dwarf ? sweepgen_addr(&v, &eh, w.mheap_sweepgen) : 0;
	find_park_points(&v, out);
	find_gc_point(&v, out);
	return 0;
}

int sp_go_binary__read_fd(int fd, struct sp_go_binary *out, enum sp_go_fail *why)
{
	enum sp_go_fail dummy;
	Elf *elf;
	int err;

	if (!why)
		why = &dummy;
	*why = SP_GO_FAIL_NONE;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE) {
		*why = SP_GO_FAIL_ELF;
		return -EINVAL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);	/* not mmap: an I/O error is a SIGBUS there */
	if (!elf) {
		*why = SP_GO_FAIL_ELF;
		return -EINVAL;
	}
	err = read_elf(fd, elf, out, why);
	elf_end(elf);
	return err;
}
