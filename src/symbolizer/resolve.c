// SPDX-License-Identifier: MIT
/*
 * resolve.c - addresses to frames with libdw and libelf, cached.
 *
 * Contract: see resolve.h.  Layout of the work:
 *   module  one per build id: the file the finder gave, its PT_LOAD
 *           segments, a sorted function-symbol table, the Dwarf handle and
 *           a sorted table of compilation-unit address ranges.
 *   cu      indexed lazily: every DW_TAG_subprogram with code becomes a
 *           root (one per address range, sorted by start), and the
 *           DW_TAG_inlined_subroutine DIEs beneath it become scopes whose
 *           ranges sit in one contiguous slice per root (DFS order), each
 *           with its depth and parent scope.  A lookup binary-searches the
 *           roots, then scans that function's inlined ranges for the
 *           deepest one containing the address.
 *   cache   4-way set-associative, keyed by (module, vaddr); an entry owns
 *           a malloc'd copy of the frames (strings stay module-owned).
 * Locking: r->lock guards the module table, every module's state, the
 * cache, the counters, and the lazily built parts of ready modules (CU
 * indexes, owned names).  A module is loaded outside it: the first
 * request for a build id reserves its slot (MOD_ABSENT -> MOD_LOADING),
 * unlocks, asks the finder (which may download from debuginfod) and opens
 * the ELF/DWARF into the slot, relocks and publishes it (MOD_READY, or
 * back to MOD_ABSENT after -ENOMEM so a later request tries again), then
 * broadcasts r->loaded.  Requests for that build id wait on r->loaded;
 * every other request goes on.  Only the loading thread touches a
 * MOD_LOADING slot's fields.
 * DIE recursion is bounded (MAX_DIE_DEPTH) so hostile DWARF cannot blow
 * the stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include "base/buildid.h"
#include "base/gopclntab.h"
#include "base/pin.h"
#include "resolve.h"

#define CACHE_DEFAULT 65536u
#define CACHE_WAYS 4u
#define MODULES_DEFAULT 1024u
#define MAX_DIE_DEPTH 128

/* ------------------------------------------------------------ demangling */

static sp_demangle_fn demangler;

void sp_resolver__set_demangler(sp_demangle_fn fn)
{
	demangler = fn;
}

char *sp_demangle(const char *name)
{
	int status = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2) || !demangler)
		return NULL;
	d = demangler(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* ------------------------------------------------------------ types */

struct load_seg {
	uint64_t offset, filesz, vaddr, memsz;
};

struct sym {
	uint64_t lo, size;
	const char *name;
};

struct scope {
	const char *name;	/* display */
	const char *linkage;
	int32_t parent;		/* scope index, -1 for a root function */
	uint32_t call_file;	/* file index in the CU's table, 0 none */
	int32_t call_line, call_col;
	int32_t decl_line;
};

struct srange {
	uint64_t lo, hi;
	uint32_t scope;
	uint32_t depth;
};

struct root {
	uint64_t lo, hi;
	uint32_t scope;
	uint32_t desc_begin, desc_end;	/* slice of cu->desc */
};

struct cu {
	Dwarf_Die die;
	bool indexed, failed;
	struct scope *scopes;
	uint32_t n_scopes, cap_scopes;
	struct root *roots;
	uint32_t n_roots, cap_roots;
	struct srange *desc;
	uint32_t n_desc, cap_desc;
	Dwarf_Files *files;
	size_t n_files;
	const char *comp_dir;
	const char **abs_files;	/* lazily joined with comp_dir, per index */
};

struct cu_range {
	uint64_t lo, hi;
	uint32_t cu;
};

enum mod_state {
	MOD_ABSENT = 0,		/* reserved; nobody is loading it */
	MOD_LOADING,		/* one thread is loading it, unlocked */
	MOD_READY,		/* loaded (with or without a file) */
};

struct module {
	char id[SP_BUILDID_MAX_HEX + 1];
	enum mod_state state;	/* under r->lock */
	/* from path on: what a load fills (module_clear resets it) */
	char *path;
	enum sp_debuginfo_source src;
	int fd;
	Elf *elf;
	Dwarf *dw;
	struct load_seg *loads;
	uint32_t n_loads;
	struct sym *syms;
	uint32_t n_syms;
	struct cu *cus;
	uint32_t n_cus;
	struct cu_range *cu_ranges;
	uint32_t n_cu_ranges;
	struct sp_gopcln *gopcln;	/* a Go binary without DWARF: its table */
	char **owned;		/* demangled names */
	uint32_t n_owned, cap_owned;
};

struct centry {
	uint64_t vaddr;
	uint32_t module;	/* module index + 1; 0 = empty slot */
	uint32_t age;
	struct sp_frames *res;
};

struct sp_resolver {
	pthread_mutex_t lock;
	pthread_cond_t loaded;		/* a module left MOD_LOADING */
	struct sp_debuginfo *di;
	bool no_demangle;
	struct module **mods;
	uint32_t n_mods, max_mods;
	uint32_t *mod_hash;	/* open addressing: module index + 1 */
	uint32_t mod_hash_cap;
	struct centry *cache;
	uint32_t n_sets;
	uint32_t clock;
	struct sp_resolver_stats st;
};

/* ------------------------------------------------------------ small helpers */

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t nc;
	void *p;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint64_t hash_key(uint32_t mod, uint64_t vaddr)
{
	uint64_t h = vaddr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)mod << 32 | mod);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

static const char *module_own(struct module *m, char *s)
{
	if (grow((void **)&m->owned, &m->cap_owned, m->n_owned + 1,
		 sizeof(*m->owned))) {
		free(s);
		return NULL;
	}
	m->owned[m->n_owned++] = s;
	return s;
}

/* Display name for a linkage name: demangled when possible. */
static const char *display_name(struct sp_resolver *r, struct module *m,
				const char *linkage, const char *name)
{
	char *d;

	if (linkage && !r->no_demangle) {
		d = sp_demangle(linkage);
		if (d) {
			const char *o = module_own(m, d);

			if (o)
				return o;
		}
	}
	return name ? name : linkage;
}

/* ------------------------------------------------------------ ELF */

/* PT_LOAD segments of elf.  *usable is false when they cannot map file
 * offsets: a separate debug file made by objcopy --only-keep-debug keeps
 * the program headers but zeroes p_offset and p_filesz. */
static int load_segments(struct module *m, Elf *elf, bool *usable)
{
	size_t n;
	uint32_t cap = 0;

	*usable = true;
	free(m->loads);
	m->loads = NULL;
	m->n_loads = 0;
	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if ((ph.p_flags & PF_X) && ph.p_memsz && !ph.p_filesz)
			*usable = false;
		if (grow((void **)&m->loads, &cap, m->n_loads + 1,
			 sizeof(*m->loads)))
			return -ENOMEM;
		m->loads[m->n_loads++] = (struct load_seg){
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
		};
	}
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* sized before unsized so the dedup below keeps the sized one */
	return (y->size > 0) - (x->size > 0);
}

static int load_symbols_from(struct module *m, Elf_Scn *scn, uint32_t *cap)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t n;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		int t;

		if (!gelf_getsym(data, (int)i, &s))
			break;
		t = GELF_ST_TYPE(s.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
		    s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(m->elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (grow((void **)&m->syms, cap, m->n_syms + 1,
			 sizeof(*m->syms)))
			return -ENOMEM;
		m->syms[m->n_syms++] = (struct sym){
			.lo = s.st_value, .size = s.st_size, .name = name,
		};
	}
	return 0;
}

static int load_symbols(struct module *m)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	uint32_t cap = 0, w = 0;
	int err;

	while ((scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	err = load_symbols_from(m, symtab ? symtab : dynsym, &cap);
	if (err || !m->n_syms)
		return err;
	qsort(m->syms, m->n_syms, sizeof(*m->syms), sym_cmp);
	for (uint32_t i = 0; i < m->n_syms; i++)
		if (!w || m->syms[w - 1].lo != m->syms[i].lo)
			m->syms[w++] = m->syms[i];
	m->n_syms = w;
	return 0;
}

static const struct sym *find_sym(const struct module *m, uint64_t a)
{
	uint32_t lo = 0, hi = m->n_syms;
	const struct sym *s;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &m->syms[lo - 1];
	if (s->size && a >= s->lo + s->size)
		return NULL;
	return s;
}

/* ------------------------------------------------------------ DWARF units */

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

static int load_units(struct module *m)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	uint32_t cap = 0, rcap = 0;

	while (dwarf_nextcu(m->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t ro = 0;
		uint32_t idx;

		if (!dwarf_offdie(m->dw, off + hsize, &die)) {
			off = next;
			continue;
		}
		off = next;
		if (grow((void **)&m->cus, &cap, m->n_cus + 1, sizeof(*m->cus)))
			return -ENOMEM;
		idx = m->n_cus++;
		memset(&m->cus[idx], 0, sizeof(m->cus[idx]));
		m->cus[idx].die = die;
		while ((ro = dwarf_ranges(&die, ro, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (grow((void **)&m->cu_ranges, &rcap,
				 m->n_cu_ranges + 1, sizeof(*m->cu_ranges)))
				return -ENOMEM;
			m->cu_ranges[m->n_cu_ranges++] =
				(struct cu_range){ lo, hi, idx };
		}
	}
	if (m->n_cu_ranges)	/* a CU-less file leaves the array NULL */
		qsort(m->cu_ranges, m->n_cu_ranges, sizeof(*m->cu_ranges),
		      cu_range_cmp);
	return 0;
}

static struct cu *find_cu(struct module *m, uint64_t a)
{
	uint32_t lo = 0, hi = m->n_cu_ranges;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->cu_ranges[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of different units do not overlap in sane DWARF; still,
	 * look back a little for one that contains a */
	for (uint32_t i = lo, k = 0; i > 0 && k < 8; i--, k++)
		if (a >= m->cu_ranges[i - 1].lo && a < m->cu_ranges[i - 1].hi)
			return &m->cus[m->cu_ranges[i - 1].cu];
	return NULL;
}

static void die_names(struct sp_resolver *r, struct module *m, Dwarf_Die *die,
		      const char **name, const char **linkage)
{
	Dwarf_Attribute at;
	const char *n = NULL, *l = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		l = dwarf_formstring(&at);
	if (dwarf_attr_integrate(die, DW_AT_name, &at))
		n = dwarf_formstring(&at);
	*linkage = l ? l : n;
	*name = display_name(r, m, l, n);
}

static int add_scope(struct cu *cu, const struct scope *s, uint32_t *idx)
{
	if (grow((void **)&cu->scopes, &cu->cap_scopes, cu->n_scopes + 1,
		 sizeof(*cu->scopes)))
		return -ENOMEM;
	*idx = cu->n_scopes;
	cu->scopes[cu->n_scopes++] = *s;
	return 0;
}

static int64_t attr_int(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (!dwarf_attr(die, name, &at) || dwarf_formudata(&at, &w))
		return 0;
	return (int64_t)w;
}

struct walk {
	struct sp_resolver *r;
	struct module *m;
	struct cu *cu;
	int32_t cur;		/* enclosing scope, -1 outside functions */
	uint32_t depth;		/* inlined depth of cur */
};

static int walk_children(struct walk *w, Dwarf_Die *parent, int level);

static int index_subprogram(struct walk *w, Dwarf_Die *die, int level)
{
	struct cu *cu = w->cu;
	struct scope sc = { .parent = -1 };
	Dwarf_Addr base, lo, hi;
	ptrdiff_t ro = 0;
	uint32_t idx, first_root = cu->n_roots, begin;
	struct walk sub = *w;
	int decl = 0, err;

	while ((ro = dwarf_ranges(die, ro, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (grow((void **)&cu->roots, &cu->cap_roots, cu->n_roots + 1,
			 sizeof(*cu->roots)))
			return -ENOMEM;
		cu->roots[cu->n_roots++] = (struct root){ .lo = lo, .hi = hi };
	}
	if (cu->n_roots == first_root)
		return 0;	/* no code: a declaration or abstract instance */
	die_names(w->r, w->m, die, &sc.name, &sc.linkage);
	dwarf_decl_line(die, &decl);
	sc.decl_line = decl;
	err = add_scope(cu, &sc, &idx);
	if (err)
		return err;
	begin = cu->n_desc;
	sub.cur = (int32_t)idx;
	sub.depth = 0;
	err = walk_children(&sub, die, level + 1);
	if (err)
		return err;
	for (uint32_t i = first_root; i < cu->n_roots; i++) {
		cu->roots[i].scope = idx;
		cu->roots[i].desc_begin = begin;
		cu->roots[i].desc_end = cu->n_desc;
	}
	return 0;
}

static int index_inlined(struct walk *w, Dwarf_Die *die, int level)
{
	struct cu *cu = w->cu;
	struct scope sc = { .parent = w->cur };
	Dwarf_Addr base, lo, hi;
	ptrdiff_t ro = 0;
	struct walk sub = *w;
	uint32_t idx;
	int decl = 0, err;
	bool any = false;

	if (w->cur < 0)
		return walk_children(w, die, level + 1);
	die_names(w->r, w->m, die, &sc.name, &sc.linkage);
	dwarf_decl_line(die, &decl);
	sc.decl_line = decl;
	sc.call_file = (uint32_t)attr_int(die, DW_AT_call_file);
	sc.call_line = (int32_t)attr_int(die, DW_AT_call_line);
	sc.call_col = (int32_t)attr_int(die, DW_AT_call_column);
	err = add_scope(cu, &sc, &idx);
	if (err)
		return err;
	while ((ro = dwarf_ranges(die, ro, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (grow((void **)&cu->desc, &cu->cap_desc, cu->n_desc + 1,
			 sizeof(*cu->desc)))
			return -ENOMEM;
		cu->desc[cu->n_desc++] = (struct srange){
			.lo = lo, .hi = hi, .scope = idx, .depth = w->depth + 1,
		};
		any = true;
	}
	if (!any)
		return 0;
	sub.cur = (int32_t)idx;
	sub.depth = w->depth + 1;
	return walk_children(&sub, die, level + 1);
}

static int walk_children(struct walk *w, Dwarf_Die *parent, int level)
{
	Dwarf_Die child;
	int rc, err;

	if (level > MAX_DIE_DEPTH)
		return -ELOOP;
	rc = dwarf_child(parent, &child);
	if (rc < 0)
		return -EINVAL;
	if (rc > 0)
		return 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			err = index_subprogram(w, &child, level);
			break;
		case DW_TAG_inlined_subroutine:
			err = index_inlined(w, &child, level);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			err = walk_children(w, &child, level + 1);
			break;
		default:
			err = 0;
			break;
		}
		if (err)
			return err;
		rc = dwarf_siblingof(&child, &child);
	} while (rc == 0);
	return rc < 0 ? -EINVAL : 0;
}

static int root_cmp(const void *a, const void *b)
{
	const struct root *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

static int index_cu(struct sp_resolver *r, struct module *m, struct cu *cu)
{
	struct walk w = { .r = r, .m = m, .cu = cu, .cur = -1 };
	int err;

	if (cu->indexed)
		return cu->failed ? -EINVAL : 0;
	cu->indexed = true;
	err = walk_children(&w, &cu->die, 0);
	if (err) {
		cu->failed = true;
		r->st.bad_dwarf_units++;
		return err;
	}
	if (cu->n_roots)
		qsort(cu->roots, cu->n_roots, sizeof(*cu->roots), root_cmp);
	if (dwarf_getsrcfiles(&cu->die, &cu->files, &cu->n_files))
		cu->files = NULL, cu->n_files = 0;
	else {
		Dwarf_Attribute at;

		if (dwarf_attr(&cu->die, DW_AT_comp_dir, &at))
			cu->comp_dir = dwarf_formstring(&at);
	}
	return 0;
}

static const struct root *find_root(const struct cu *cu, uint64_t a)
{
	uint32_t lo = 0, hi = cu->n_roots;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cu->roots[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* nested functions may overlap their parent: look back a little */
	for (uint32_t i = lo, k = 0; i > 0 && k < 4; i--, k++)
		if (a >= cu->roots[i - 1].lo && a < cu->roots[i - 1].hi)
			return &cu->roots[i - 1];
	return NULL;
}

/* File idx of the CU's table as an absolute path when the unit records
 * its compilation directory (what llvm-symbolizer prints). */
static const char *cu_file(struct module *m, struct cu *cu, size_t idx)
{
	const char *f;
	char *j;

	if (!cu->files || idx >= cu->n_files)
		return NULL;
	if (cu->abs_files && cu->abs_files[idx])
		return cu->abs_files[idx];
	f = dwarf_filesrc(cu->files, idx, NULL, NULL);
	if (!f || f[0] == '/' || !cu->comp_dir)
		return f;
	/* comp_dir "." (Go writes it) adds nothing but "./" */
	if (!strcmp(cu->comp_dir, ".")) {
		while (f[0] == '.' && f[1] == '/')
			f += 2;
		return f;
	}
	if (!cu->abs_files) {
		cu->abs_files = calloc(cu->n_files, sizeof(*cu->abs_files));
		if (!cu->abs_files)
			return f;
	}
	if (asprintf(&j, "%s/%s", cu->comp_dir, f) < 0)
		return f;
	cu->abs_files[idx] = module_own(m, j);
	return cu->abs_files[idx] ? cu->abs_files[idx] : f;
}

static const char *line_file(struct module *m, struct cu *cu, Dwarf_Line *ln)
{
	Dwarf_Files *files;
	size_t idx;

	if (cu->files && !dwarf_line_file(ln, &files, &idx) &&
	    files == cu->files)
		return cu_file(m, cu, idx);
	return dwarf_linesrc(ln, NULL, NULL);
}

/* A pc of a Go binary from its .gopclntab: the same chain shape as
 * DWARF's, inlined callees first. */
static void resolve_go(struct module *m, uint64_t a, struct sp_frames *out)
{
	struct sp_gopcln_frame gf[SP_RES_MAX_FRAMES];
	uint32_t n = 0;

	if (sp_gopcln__resolve(m->gopcln, a, gf, SP_RES_MAX_FRAMES, &n, NULL))
		return;
	for (uint32_t i = 0; i < n; i++)
		out->f[i] = (struct sp_frame){
			.function = gf[i].function, .linkage = gf[i].function,
			.file = gf[i].file, .line = gf[i].line,
		};
	out->n = (uint8_t)n;
	out->source = SP_RES_GOPCLNTAB;
}

/* Resolution of one vaddr in a module, no caching. */
static void resolve_one(struct sp_resolver *r, struct module *m, uint64_t a,
			struct sp_frames *out)
{
	struct cu *cu = m->dw ? find_cu(m, a) : NULL;
	const struct sym *s;
	const char *lfile = NULL;
	int lline = 0, lcol = 0;
	int32_t chain[64];
	uint32_t n_chain = 0;

	memset(out, 0, sizeof(*out));
	if (m->gopcln) {
		resolve_go(m, a, out);
		if (out->n)
			return;
	}
	if (cu && !index_cu(r, m, cu)) {
		const struct root *rt = find_root(cu, a);
		Dwarf_Line *ln = dwarf_getsrc_die(&cu->die, a);

		if (ln) {
			lfile = line_file(m, cu, ln);
			dwarf_lineno(ln, &lline);
			dwarf_linecol(ln, &lcol);
		}
		if (rt) {
			int32_t best = (int32_t)rt->scope;
			uint32_t best_depth = 0;

			for (uint32_t i = rt->desc_begin; i < rt->desc_end; i++) {
				const struct srange *d = &cu->desc[i];

				if (a >= d->lo && a < d->hi &&
				    d->depth > best_depth) {
					best = (int32_t)d->scope;
					best_depth = d->depth;
				}
			}
			for (int32_t s = best; s >= 0 && n_chain < 64;
			     s = cu->scopes[s].parent)
				chain[n_chain++] = s;
		}
		if (n_chain) {
			const char *file = lfile;
			int64_t line = lline, col = lcol;

			for (uint32_t i = 0; i < n_chain; i++) {
				const struct scope *sc = &cu->scopes[chain[i]];
				struct sp_frame *f;

				/* too deep: keep the innermost frames and the
				 * real function, drop the middle */
				if (out->n == SP_RES_MAX_FRAMES - 1 &&
				    i != n_chain - 1) {
					if (i == SP_RES_MAX_FRAMES - 1)
						r->st.inline_truncated++;
					file = cu_file(m, cu, sc->call_file);
					line = sc->call_line;
					col = sc->call_col;
					continue;
				}
				f = &out->f[out->n++];
				f->function = sc->name;
				f->linkage = sc->linkage;
				f->file = file;
				f->line = line;
				f->column = col;
				f->decl_line = sc->decl_line;
				file = cu_file(m, cu, sc->call_file);
				line = sc->call_line;
				col = sc->call_col;
			}
			/* The out-of-line function is named by the symbol
			 * table when a symbol covers the address, as
			 * llvm-symbolizer and perf do: clones keep their
			 * suffix (foo.isra.0, foo.cold). */
			s = find_sym(m, a);
			if (s) {
				out->f[out->n - 1].linkage = s->name;
				out->f[out->n - 1].function =
					display_name(r, m, s->name, s->name);
			}
			out->source = SP_RES_DWARF;
			return;
		}
	}
	s = find_sym(m, a);
	if (!s && !lfile)
		return;
	out->n = 1;
	out->source = s ? SP_RES_SYMTAB : SP_RES_DWARF;
	if (s) {
		out->f[0].linkage = s->name;
		out->f[0].function = display_name(r, m, s->name, s->name);
	}
	out->f[0].file = lfile;
	out->f[0].line = lline;
	out->f[0].column = lcol;
}

/* ------------------------------------------------------------ modules */

/* Releases what a load put into m; m keeps its id and can be loaded
 * again. */
static void module_clear(struct module *m)
{
	for (uint32_t i = 0; i < m->n_cus; i++) {
		free(m->cus[i].scopes);
		free(m->cus[i].roots);
		free(m->cus[i].desc);
		free(m->cus[i].abs_files);
	}
	free(m->cus);
	free(m->cu_ranges);
	free(m->syms);
	free(m->loads);
	sp_gopcln__free(m->gopcln);
	for (uint32_t i = 0; i < m->n_owned; i++)
		free(m->owned[i]);
	free(m->owned);
	if (m->dw)
		dwarf_end(m->dw);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	free(m->path);
	memset((char *)m + offsetof(struct module, path), 0,
	       sizeof(*m) - offsetof(struct module, path));
	m->fd = -1;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	module_clear(m);
	free(m);
}

/* What a load found, counted under the lock once it is published. */
struct load_result {
	bool no_debuginfo;	/* no file at all */
	bool dwarf;		/* DWARF units found */
	bool no_segments;	/* no usable program headers */
};

/* Program headers from the executable itself when the debug file's are
 * unusable; without them only virtual addresses can be resolved. */
static int exec_segments(struct sp_debuginfo *di, struct module *m,
			 const char *hint, struct load_result *lr)
{
	char *path = NULL;
	bool usable;
	Elf *elf = NULL;
	int fd = -1, err;

	err = sp_debuginfo__find_exec(di, m->id, hint, &path);
	if (err)
		goto out;
	fd = sp_pin__open(path, NULL);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	err = load_segments(m, elf, &usable);
	if (!err && !usable)
		err = -ENOEXEC;
out:
	if (err && err != -ENOMEM) {
		free(m->loads);	/* no usable segments: offsets unresolvable */
		m->loads = NULL;
		m->n_loads = 0;
		lr->no_segments = true;
	}
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(path);
	return err;
}

/* Fills the reserved slot m with whatever the finder gives; a module
 * without any file still loads (it answers -ENOENT quickly).  Runs without
 * r->lock: touches only m and the finder (thread safe).  0, or -ENOMEM
 * with m cleared. */
static int module_load(struct sp_debuginfo *di, struct module *m,
		       const char *hint, struct load_result *lr)
{
	bool usable;
	int err;

	memset(lr, 0, sizeof(*lr));
	err = sp_debuginfo__find(di, m->id, hint, &m->path, &m->src);
	if (err == -ENOMEM)
		goto fail;
	if (err) {
		lr->no_debuginfo = true;
		return 0;
	}
	m->fd = sp_pin__open(m->path, NULL);
	if (m->fd < 0)
		return 0;
	m->elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF)
		return 0;
	err = load_segments(m, m->elf, &usable);
	if (err == -ENOMEM)
		goto fail;
	if (!usable) {
		err = exec_segments(di, m, hint, lr);
		if (err == -ENOMEM)
			goto fail;
	}
	err = load_symbols(m);
	if (err)
		goto fail;
	m->dw = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	if (m->dw) {
		err = load_units(m);
		if (err)
			goto fail;
		lr->dwarf = m->n_cus > 0;
	}
	/* A stripped Go binary still has its own table; DWARF, when there,
	 * says the same and more (columns). */
	if (!lr->dwarf) {
		err = sp_gopcln__open(m->elf, &m->gopcln);
		if (err == -ENOMEM)
			goto fail;
	}
	return 0;
fail:
	module_clear(m);
	return err;
}

/* The ready module of build id id, loading it first when no one has.
 * Called and returns with r->lock held; unlocks while loading, and waits
 * while another thread loads the same build id. */
static int get_module(struct sp_resolver *r, const char *id, const char *hint,
		      struct module **out, uint32_t *index)
{
	uint32_t mask = r->mod_hash_cap - 1;
	uint32_t i = (uint32_t)hash_str(id) & mask, mi;
	struct load_result lr;
	struct module *m = NULL;
	int err;

	for (;; i = (i + 1) & mask) {
		uint32_t v = r->mod_hash[i];

		if (!v)
			break;
		if (!strcmp(r->mods[v - 1]->id, id)) {
			m = r->mods[v - 1];
			mi = v - 1;
			break;
		}
	}
	if (!m) {
		if (r->n_mods >= r->max_mods) {
			r->st.modules_refused++;
			return -ENOSPC;
		}
		m = calloc(1, sizeof(*m));
		if (!m)
			return -ENOMEM;
		m->fd = -1;
		snprintf(m->id, sizeof(m->id), "%s", id);
		mi = r->n_mods++;
		r->mods[mi] = m;
		r->mod_hash[i] = mi + 1;
	}
	while (m->state == MOD_LOADING)
		pthread_cond_wait(&r->loaded, &r->lock);
	if (m->state == MOD_ABSENT) {
		m->state = MOD_LOADING;
		pthread_mutex_unlock(&r->lock);
		err = module_load(r->di, m, hint, &lr);
		pthread_mutex_lock(&r->lock);
		m->state = err ? MOD_ABSENT : MOD_READY;
		pthread_cond_broadcast(&r->loaded);
		if (err)
			return err;
		r->st.modules++;
		r->st.modules_no_debuginfo += lr.no_debuginfo;
		r->st.modules_dwarf += lr.dwarf;
		r->st.modules_no_segments += lr.no_segments;
	}
	*out = m;
	*index = mi;
	return 0;
}

static int offset_to_vaddr(const struct module *m, uint64_t off, uint64_t *va)
{
	for (uint32_t i = 0; i < m->n_loads; i++) {
		const struct load_seg *s = &m->loads[i];
		uint64_t size = s->filesz ? s->filesz : s->memsz;

		if (off >= s->offset && off - s->offset < size) {
			*va = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* ------------------------------------------------------------ cache */

static struct sp_frames *cache_get(struct sp_resolver *r, uint32_t mod,
				   uint64_t va)
{
	struct centry *set = &r->cache[(hash_key(mod, va) & (r->n_sets - 1)) *
				       CACHE_WAYS];

	for (uint32_t w = 0; w < CACHE_WAYS; w++)
		if (set[w].module == mod + 1 && set[w].vaddr == va) {
			set[w].age = ++r->clock;
			return set[w].res;
		}
	return NULL;
}

static void cache_put(struct sp_resolver *r, uint32_t mod, uint64_t va,
		      const struct sp_frames *fr)
{
	struct centry *set = &r->cache[(hash_key(mod, va) & (r->n_sets - 1)) *
				       CACHE_WAYS];
	struct centry *victim = &set[0];
	size_t sz = offsetof(struct sp_frames, f) +
		    (size_t)fr->n * sizeof(fr->f[0]);
	struct sp_frames *copy;

	for (uint32_t w = 0; w < CACHE_WAYS; w++) {
		if (!set[w].module) {
			victim = &set[w];
			break;
		}
		if ((int32_t)(set[w].age - victim->age) < 0)
			victim = &set[w];
	}
	copy = malloc(sz);
	if (!copy)
		return;		/* not cached; the answer is still right */
	memcpy(copy, fr, sz);
	if (victim->module) {
		r->st.cache_evictions++;
		free(victim->res);
	} else {
		r->st.cache_used++;
	}
	victim->module = mod + 1;
	victim->vaddr = va;
	victim->age = ++r->clock;
	victim->res = copy;
}

/* ------------------------------------------------------------ API */

int sp_resolver__new(const struct sp_resolver_opts *opts,
		     struct sp_resolver **out)
{
	struct sp_resolver *r;
	uint32_t entries, sets = 1;

	*out = NULL;
	if (!opts || !opts->di)
		return -EINVAL;
	elf_version(EV_CURRENT);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->loaded, NULL);
	r->di = opts->di;
	r->no_demangle = opts->no_demangle;
	entries = opts->cache_entries ? opts->cache_entries : CACHE_DEFAULT;
	if (entries < CACHE_WAYS)
		entries = CACHE_WAYS;
	while (sets * 2 * CACHE_WAYS <= entries && sets < (1u << 28))
		sets *= 2;
	r->n_sets = sets;
	r->st.cache_capacity = sets * CACHE_WAYS;
	r->max_mods = opts->max_modules ? opts->max_modules : MODULES_DEFAULT;
	r->mod_hash_cap = 16;
	while (r->mod_hash_cap < r->max_mods * 2)
		r->mod_hash_cap *= 2;
	r->cache = calloc((size_t)sets * CACHE_WAYS, sizeof(*r->cache));
	r->mods = calloc(r->max_mods, sizeof(*r->mods));
	r->mod_hash = calloc(r->mod_hash_cap, sizeof(*r->mod_hash));
	if (!r->cache || !r->mods || !r->mod_hash) {
		sp_resolver__free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void sp_resolver__free(struct sp_resolver *r)
{
	if (!r)
		return;
	if (r->cache)
		for (uint32_t i = 0; i < r->n_sets * CACHE_WAYS; i++)
			free(r->cache[i].res);
	free(r->cache);
	for (uint32_t i = 0; i < r->n_mods; i++)
		module_free(r->mods[i]);
	free(r->mods);
	free(r->mod_hash);
	pthread_cond_destroy(&r->loaded);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static int resolve_common(struct sp_resolver *r, const char *build_id,
			  const char *hint, uint64_t addr, bool is_offset,
			  struct sp_frames *out)
{
	struct sp_frames *hit, tmp;
	struct module *m;
	uint32_t mi;
	uint64_t va = addr;
	int err;

	out->n = 0;
	out->source = SP_RES_NONE;
	if (sp_buildid__validate(build_id) && sp_buildid__validate_go(build_id))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->st.requests++;
	err = get_module(r, build_id, hint, &m, &mi);
	if (err) {
		r->st.unresolved++;
		goto out;
	}
	if (!m->elf) {
		r->st.unresolved++;
		err = -ENOENT;
		goto out;
	}
	if (is_offset && offset_to_vaddr(m, addr, &va)) {
		r->st.unresolved++;
		err = -ENOENT;
		goto out;
	}
	hit = cache_get(r, mi, va);
	if (hit) {
		r->st.cache_hits++;
		memcpy(out, hit, offsetof(struct sp_frames, f) +
				 (size_t)hit->n * sizeof(hit->f[0]));
		err = out->n ? 0 : -ENOENT;
		goto out;
	}
	r->st.cache_misses++;
	resolve_one(r, m, va, &tmp);
	if (!tmp.n)
		r->st.unresolved++;
	else if (tmp.source == SP_RES_DWARF)
		r->st.resolved_dwarf++;
	else if (tmp.source == SP_RES_GOPCLNTAB)
		r->st.resolved_gopclntab++;
	else
		r->st.resolved_symtab++;
	cache_put(r, mi, va, &tmp);
	memcpy(out, &tmp, offsetof(struct sp_frames, f) +
			  (size_t)tmp.n * sizeof(tmp.f[0]));
	err = tmp.n ? 0 : -ENOENT;
out:
	pthread_mutex_unlock(&r->lock);
	return err;
}

int sp_resolver__resolve(struct sp_resolver *r, const char *build_id,
			 const char *hint_path, uint64_t file_offset,
			 struct sp_frames *out)
{
	return resolve_common(r, build_id, hint_path, file_offset, true, out);
}

int sp_resolver__resolve_vaddr(struct sp_resolver *r, const char *build_id,
			       const char *hint_path, uint64_t vaddr,
			       struct sp_frames *out)
{
	return resolve_common(r, build_id, hint_path, vaddr, false, out);
}

int sp_resolver__module_info(struct sp_resolver *r, const char *build_id,
			     const char **path, enum sp_debuginfo_source *src,
			     bool *has_dwarf)
{
	int err = -ENOENT;

	if (sp_buildid__validate(build_id) && sp_buildid__validate_go(build_id))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	for (uint32_t i = 0; i < r->n_mods; i++) {
		struct module *m = r->mods[i];

		if (strcmp(m->id, build_id))
			continue;
		if (m->state != MOD_READY)
			break;	/* being loaded: its fields are not ours */
		if (path)
			*path = m->path;
		if (src)
			*src = m->src;
		if (has_dwarf)
			*has_dwarf = m->dw && m->n_cus;
		err = m->elf ? 0 : -ENOENT;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

void sp_resolver__stats(struct sp_resolver *r, struct sp_resolver_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	pthread_mutex_unlock(&r->lock);
}
