// SPDX-License-Identifier: MIT
/*
 * host_frames.c - kernel, module, boot and JIT frames (contract:
 * host_frames.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "base/elf_symtab.h"
#include "base/pin.h"
#include "host_frames.h"
#include "perf_map.h"

#define FN_BOOT SP_KALLSYMS_FN_BOOT
#define FN_MODULE SP_KALLSYMS_FN_MODULE
#define FN_PERF_MAP "[perf-map]"
#define FN_JITDUMP "[jitdump]"

void sp_host_frames__cache_init(struct sp_host_frames_cache *hc)
{
	memset(hc, 0, sizeof(*hc));
	hc->mapping = -1;
}

void sp_host_frames__cache_release(struct sp_host_frames_cache *hc)
{
	(void)hc;	/* everything in it is borrowed */
}

/* The value of symbol name (any type, defined) in the ELF file at path. */
static int elf_symbol(const char *path, const char *name, uint64_t *out)
{
	Elf *elf;
	GElf_Sym s;
	int fd = sp_pin__open(path, NULL), err = -ENOENT;

	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !sp_elf_symtab__find(elf, name, &s)) {
		*out = s.st_value;
		err = 0;
	}
	elf_end(elf);
	close(fd);
	return err;
}

/* vmlinux of build id found by the resolver, and its _text.  The
 * mapping's name is the hint: the finder then also looks for vmlinux by
 * name in the debug dirs' kernel trees (ktree.h). */
static bool vmlinux(const struct sp_symbolize_sources *src, const char *id, const char *fname,
		    struct sp_host_frames_cache *hc)
{
	const char *path = NULL;

	if (hc->vm_state)
		return hc->vm_state == 2;
	hc->vm_state = 1;
	if (!src->resolver || sp_resolver__load(src->resolver, id, fname) ||
	    sp_resolver__module_info(src->resolver, id, &path, NULL, NULL) || !path)
		return false;
	if (elf_symbol(path, "_text", &hc->vm_text) && elf_symbol(path, "_stext", &hc->vm_text))
		return false;
	hc->vm_state = 2;
	return true;
}

/* The frames of a module location from the module's own debug info
 * (ET_REL, found by the module's build id - in the debug dirs' kernel
 * trees by its name too, the mapping's name being the hint: ktree.h -
 * resolve.h, relobj.h), at its offset in .text.  The real function is named "fn [NAME]" as a snapshot
 * names it (system name: the bare symbol), so a frame is called the same
 * whichever source named it; inlined frames are DWARF's.  A line without
 * a DWARF function (assembler code whose unit has none) is taken with the
 * symbol's name.  A file without DWARF there (a stripped .ko keeps its
 * symbols) names the frame from its symbols only when no snapshot lists
 * the module (one would say the same and is what the frame is counted
 * against).  0 resolved, 1 not (counted
 * by why in st->module_dwarf_*: the snapshot is asked next), or -ENOMEM. */
static int module_dwarf(const struct sp_symbolize_sources *src, struct sp_profile *p,
			struct sp_location *loc, const char *id, const char *fname,
			struct sp_host_frames_cache *hc, struct sp_symbolize_stats *st)
{
	const char *mod = fname + sizeof(FN_MODULE) - 1;
	size_t mlen = strcspn(mod, "]");
	char name[2 * SP_KALLSYMS_MAX_NAME + 8];
	struct sp_mapping *m;
	struct sp_frames fr;
	bool lines;
	int err = -ENOENT;

	if (src->resolver && hc->ko_miss == KO_UNKNOWN) {
		enum sp_debuginfo_source where = SP_DI_NONE;

		if (sp_resolver__load(src->resolver, id, fname) == -ENOMEM)
			return -ENOMEM;
		if (!sp_resolver__module_info(src->resolver, id, NULL, &where, NULL))
			hc->ko_miss = KO_FILE;
		else if (where == SP_DI_NONE)
			hc->ko_miss = KO_MISSING;
		else
			hc->ko_miss = where == SP_DI_MISMATCH ? KO_MISMATCH : KO_NO_LINE;
	}
	if (hc->ko_miss == KO_FILE)
		err = sp_resolver__resolve_text(src->resolver, id, fname, loc->address, &fr);
	if (err == -ENOMEM)
		return err;
	lines = !err && fr.n && fr.f[0].file && fr.f[0].line > 0;
	if (!lines) {
		if (hc->ko_miss == KO_MISMATCH)
			st->module_dwarf_mismatch++;
		else if (hc->ko_miss == KO_FILE || hc->ko_miss == KO_NO_LINE)
			st->module_dwarf_no_line++;
		else
			st->module_dwarf_missing++;
		if (err || hc->k || !fr.n || !fr.f[fr.n - 1].function)
			return 1;
	}
	if (fr.f[fr.n - 1].function) {
		snprintf(name, sizeof(name), "%s [%.*s]", fr.f[fr.n - 1].function, (int)mlen, mod);
		if (!fr.f[fr.n - 1].linkage)
			fr.f[fr.n - 1].linkage = fr.f[fr.n - 1].function;
		fr.f[fr.n - 1].function = name;
	}
	err = sp_symbolize__fill_location(p, loc, &fr);
	if (err)
		return err;
	m = &p->mappings[loc->mapping];
	m->has_functions = true;
	if (!lines)
		return 0;
	m->has_filenames = m->has_line_numbers = true;
	m->has_inline_frames |= fr.source == SP_RES_DWARF;
	st->resolved_module_dwarf++;
	return 0;
}

/* One line named after a snapshot symbol. */
static int fill_ksym(struct sp_profile *p, struct sp_location *loc, const struct sp_ksym *sym)
{
	char name[2 * SP_KALLSYMS_MAX_NAME + 8];
	struct sp_frames fr = { .n = 1, .source = SP_RES_SYMTAB };

	if (sym->module)
		snprintf(name, sizeof(name), "%s [%s]", sym->name, sym->module);
	else
		snprintf(name, sizeof(name), "%s", sym->name);
	fr.f[0] = (struct sp_frame){ .function = name, .linkage = sym->name };
	return sp_symbolize__fill_location(p, loc, &fr);
}

/* Why no snapshot answered: none held at all, or none of this key. */
static void count_missing(const struct sp_symbolize_sources *src, struct sp_symbolize_stats *st)
{
	struct sp_ksyms_set_stats ss;

	sp_ksyms_set__stats(src->ksyms, &ss);
	if (ss.loaded)
		st->unresolved_kernel_mismatch++;
	else
		st->unresolved_kernel_no_snapshot++;
}

static int kernel_location(const struct sp_symbolize_sources *src, struct sp_profile *p,
			   struct sp_location *loc, struct sp_host_frames_cache *hc,
			   struct sp_symbolize_stats *st)
{
	struct sp_mapping *m;
	const char *id, *fname;
	struct sp_ksym sym;
	uint64_t rt;
	bool legacy, module, boot;
	int err;

	st->unresolved_kernel++;
	if (loc->mapping <= 0 || (uint32_t)loc->mapping >= p->n_mappings) {
		st->unresolved_kernel_no_build_id++;
		return 1;
	}
	m = &p->mappings[loc->mapping];
	id = sp_profile__str(p, m->build_id);
	fname = sp_profile__str(p, m->filename);
	if (!*id || sp_buildid__validate(id)) {
		st->unresolved_kernel_no_build_id++;
		return 1;
	}
	boot = !strcmp(fname, FN_BOOT);
	module = !strncmp(fname, FN_MODULE, sizeof(FN_MODULE) - 1);
	legacy = !boot && !module && m->memory_start <= SP_KERNEL_LEGACY_START;
	if (hc->mapping != loc->mapping) {
		hc->mapping = loc->mapping;
		hc->vm_state = 0;
		hc->ko_miss = KO_UNKNOWN;
		hc->mod_name = NULL;
		if (boot)
			hc->k = sp_ksyms_set__get_boot(src->ksyms, id);
		else if (module)
			hc->k = sp_ksyms_set__get_module(src->ksyms, id, &hc->mod_name,
							 &hc->mod_text, &hc->mod_size);
		else
			hc->k = sp_ksyms_set__get(src->ksyms, id);
	}
	if (!boot && !module && !legacy && loc->address >= m->memory_start &&
	    vmlinux(src, id, fname, hc)) {
		struct sp_frames fr;

		if (!sp_resolver__resolve_vaddr(src->resolver, id, fname,
						hc->vm_text + (loc->address - m->memory_start), &fr)) {
			err = sp_symbolize__fill_location(p, loc, &fr);
			if (err)
				return err;
			m = &p->mappings[loc->mapping];
			m->has_functions = m->has_filenames = m->has_line_numbers = true;
			m->has_inline_frames = true;
			st->resolved_kernel_dwarf++;
			goto resolved;
		}
	}
	if (module) {
		err = module_dwarf(src, p, loc, id, fname, hc, st);
		if (err <= 0) {
			if (err)
				return err;
			goto resolved;
		}
	}
	if (!hc->k) {
		count_missing(src, st);
		return 1;
	}
	if (boot || legacy) {
		rt = loc->address;
	} else if (module) {
		if (loc->address >= hc->mod_size) {
			st->unresolved_kernel_not_found++;
			return 1;
		}
		rt = hc->mod_text + loc->address;
	} else {
		if (loc->address < m->memory_start || !sp_ksyms__text(hc->k)) {
			st->unresolved_kernel_not_found++;
			return 1;
		}
		rt = sp_ksyms__text(hc->k) + (loc->address - m->memory_start);
	}
	if (sp_ksyms__resolve(hc->k, rt, &sym) ||
	    (module && (!sym.module || strcmp(sym.module, hc->mod_name)))) {
		st->unresolved_kernel_not_found++;
		return 1;
	}
	err = fill_ksym(p, loc, &sym);
	if (err)
		return err;
	p->mappings[loc->mapping].has_functions = true;
resolved:
	st->unresolved_kernel--;
	st->resolved_kernel++;
	return 0;
}

static int jit_location(const struct sp_symbolize_sources *src, struct sp_profile *p,
			struct sp_location *loc, struct sp_symbolize_stats *st)
{
	struct sp_frames fr = { .n = 1, .source = SP_RES_SYMTAB };
	char name[SP_PERF_MAP_NAME_BUF], file[SP_PERF_MAP_NAME_BUF];
	const char *id = sp_profile__str(p, p->mappings[loc->mapping].build_id);
	uint32_t line = 0, first = 0;
	int err;

	st->unresolved_jit++;
	err = src->jit ? sp_jit_syms__resolve_line(src->jit, id, loc->address, name, sizeof(name),
						   file, sizeof(file), &line, &first)
		       : -ENOENT;
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err == -ERANGE)
			st->unresolved_jit_not_found++;
		else
			st->unresolved_jit_no_snapshot++;
		return 1;
	}
	/* the code's first row stands for the function's own line (the
	 * report's "file:line" hint), as DWARF's decl_line does */
	fr.f[0] = (struct sp_frame){ .function = name, .file = line && *file ? file : NULL,
				     .line = line, .decl_line = first };
	err = sp_symbolize__fill_location(p, loc, &fr);
	if (err)
		return err;
	p->mappings[loc->mapping].has_functions = true;
	if (line) {
		p->mappings[loc->mapping].has_filenames |= *file != 0;
		p->mappings[loc->mapping].has_line_numbers = true;
		st->resolved_jit_lines++;
	}
	st->unresolved_jit--;
	st->resolved_jit++;
	return 0;
}

int sp_host_frames__location(const struct sp_symbolize_sources *src, struct sp_profile *p,
			     struct sp_location *loc, struct sp_host_frames_cache *hc,
			     struct sp_symbolize_stats *st)
{
	if (loc->frame_kind == SP_FRAME_KERNEL)
		return kernel_location(src, p, loc, hc, st);
	if (loc->mapping > 0 && (uint32_t)loc->mapping < p->n_mappings) {
		const char *fn = sp_profile__str(p, p->mappings[loc->mapping].filename);

		if (!strcmp(fn, FN_PERF_MAP) || !strcmp(fn, FN_JITDUMP))
			return jit_location(src, p, loc, st);
	}
	return SP_HOST_FRAMES_NOT_MINE;
}
