// SPDX-License-Identifier: MIT
/*
 * resolve.c - addresses to frames, cached.  Contract: see resolve.h.
 *
 * Layout of the work:
 *   module  one per build id: the file the finder gave, its PT_LOAD
 *           segments, its sorted function-symbol table, and the sources of
 *           answers its file has (linesrc.h: DWARF, dwarf_src.c; without
 *           DWARF units a Go binary's .gopclntab, gopcln_src.c), asked in
 *           order; the symbol table answers when none does.  A
 *           relocatable file (ET_REL: a kernel module) is opened through
 *           relobj.c, so its sections, symbols and DWARF are read in the
 *           layout libdwfl gave it.
 *   cache   res_cache.c: (module, vaddr) -> a copy of the frames.
 * Locking, so that requests for different modules run in parallel:
 *   r->lock      the module table and every module's state (absent ->
 *                loading -> ready), held only to find or reserve a slot;
 *                a module is loaded outside it (a request for that build id
 *                waits on r->loaded, every other request goes on), and a
 *                ready module is found without it through a per-thread hint
 *                (the last module the thread used, checked by id);
 *   m->lock      one per module: its sources (libdw is not thread safe per
 *                file), its string pool and its decoded units;
 *   the cache    its own shard locks.
 * Counters are atomic.  Strings in answers belong to their module (its
 * string pool, its mapped sections) and live until sp_resolver__free.
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

#include "addr_index.h"
#include "base/buildid.h"
#include "base/pin.h"
#include "dwarf_src.h"
#include "gopcln_src.h"
#include "grow.h"
#include "linesrc.h"
#include "plt.h"
#include "relobj.h"
#include "res_cache.h"
#include "resolve.h"
#include "strpool.h"

#define MODULES_DEFAULT 1024u
#define UNIT_BUDGET_DEFAULT (64ull << 20)
#define MAX_SOURCES 2

#define ADD(p, v) __atomic_add_fetch(&(p), (v), __ATOMIC_RELAXED)
#define LOAD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

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
	uint8_t rank;		/* binding: 0 global, 1 local (and PLT), 2 weak */
};

enum mod_state {
	MOD_ABSENT = 0,		/* reserved; nobody is loading it */
	MOD_LOADING,		/* one thread is loading it, unlocked */
	MOD_READY,		/* loaded (with or without a file) */
};

struct module {
	char id[SP_BUILDID_MAX_HEX + 1];
	enum mod_state state;	/* under r->lock; read atomically by the hint */
	pthread_mutex_t lock;	/* the fields below, once ready */
	/* from path on: what a load fills (module_clear resets it) */
	char *path;
	enum sp_debuginfo_source src;
	int fd;
	Elf *elf;
	Dwarf *dw;
	struct sp_relobj *rel;	/* ET_REL: owns elf and dw */
	size_t pinned;		/* rel's relocated bytes, in r->budget */
	struct sp_unit_budget *budget;	/* where pinned is charged */
	uint64_t text_lo, text_size;	/* .text as laid out; size 0: none */
	struct load_seg *loads;
	uint32_t n_loads;
	struct sym *syms;
	uint32_t n_syms;
	uint64_t *sym_lo;	/* syms[i].lo, searched through sym_idx */
	struct sp_addr_index sym_idx;
	struct sp_linesrc sources[MAX_SOURCES];
	uint32_t n_sources;
	uint32_t dwarf_units;
	struct sp_strpool pool;	/* demangled names, joined paths */
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
	struct sp_rcache cache;
	struct sp_unit_budget budget;
	struct sp_dwarf_counters dwc;
	struct sp_resolver_stats st;	/* atomic adds */
};

/* ------------------------------------------------------------ small helpers */

/* A build id this resolver takes: a GNU id (hex) or, for a Go binary
 * without one, its Go build id.  0 or -EINVAL. */
static int validate_id(const char *id)
{
	if (!sp_buildid__validate(id) || !sp_buildid__validate_go(id))
		return 0;
	return -EINVAL;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Display name for a linkage name: demangled when possible (pooled). */
static const char *display_name(const struct sp_resolver *r, struct module *m,
				const char *linkage, const char *name)
{
	char *d;

	if (linkage && !r->no_demangle) {
		d = sp_demangle(linkage);
		if (d) {
			const char *o = sp_strpool__adopt(&m->pool, d);

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
		if (sp_grow((void **)&m->loads, &cap, m->n_loads + 1,
			 sizeof(*m->loads)))
			return -ENOMEM;
		m->loads[m->n_loads++] = (struct load_seg){
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
		};
	}
	return 0;
}

static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Several symbols at one address: the dedup below keeps the first, so
 * the order says which names the address, whatever the table's order.
 * perf's rules, so both name a sample alike: sized before unsized, not
 * weak before weak (the vDSO's __vdso_clock_gettime, not its weak alias
 * clock_gettime), global before local, fewer leading underscores, the
 * longer name (glibc's __memmove_avx_unaligned_erms, not its alias
 * __memcpy_avx_unaligned_erms), then the smaller name. */
static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	size_t ux, uy;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if ((x->size > 0) != (y->size > 0))
		return (y->size > 0) - (x->size > 0);
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	ux = underscores(x->name);
	uy = underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	ux = strlen(x->name);
	uy = strlen(y->name);
	if (ux != uy)
		return ux > uy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The address of a symbol: its value, or in a relocatable file its
 * value in its section plus where that section was laid out (relobj.h);
 * there only symbols of executable sections count.  false: skip it. */
static bool sym_addr(const struct module *m, const GElf_Sym *s, uint64_t *out)
{
	GElf_Shdr sh;

	if (!m->rel) {
		*out = s->st_value;
		return true;
	}
	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE ||
	    !gelf_getshdr(elf_getscn(m->elf, s->st_shndx), &sh) ||
	    !(sh.sh_flags & SHF_EXECINSTR))
		return false;
	*out = sh.sh_addr + s->st_value;
	return true;
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
		uint64_t lo;
		int t;

		if (!gelf_getsym(data, (int)i, &s))
			break;
		t = GELF_ST_TYPE(s.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
		    s.st_shndx == SHN_UNDEF || !sym_addr(m, &s, &lo) || !lo)
			continue;
		name = elf_strptr(m->elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (sp_grow((void **)&m->syms, cap, m->n_syms + 1,
			 sizeof(*m->syms)))
			return -ENOMEM;
		m->syms[m->n_syms++] = (struct sym){
			.lo = lo, .size = s.st_size, .name = name,
			.rank = GELF_ST_BIND(s.st_info) == STB_WEAK ? 2 :
				GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0 : 1,
		};
	}
	return 0;
}

/* "X@plt" symbols for the PLT stubs (plt.h), from the debug file or,
 * when its PLT has no contents (NOBITS), from the executable itself
 * (exec: its path when the load has found it already, else NULL). */
static int load_plt(struct sp_debuginfo *di, struct module *m, const char *hint,
		    const char *exec, uint32_t *cap)
{
	struct sp_plt_sym *ps = NULL;
	size_t n = 0;
	char *path = NULL;
	Elf *elf = NULL;
	int fd = -1, err;

	err = sp_plt__symbols(m->elf, &ps, &n);
	if (err == -ENODATA && (exec || !sp_debuginfo__find_exec(di, m->id, hint, &path)) &&
	    (fd = sp_pin__open(exec ? exec : path, NULL)) >= 0 &&
	    (elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) && elf_kind(elf) == ELF_K_ELF)
		err = sp_plt__symbols(elf, &ps, &n);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(path);
	if (err)
		return err == -ENOMEM ? err : 0;	/* no PLT names: not fatal */
	if (!n) {
		free(ps);
		return 0;
	}
	/* the names go into the module's pool: answers outlive ps */
	for (size_t i = 0; !err && i < n; i++) {
		const char *name = sp_strpool__intern(&m->pool, ps[i].name, strlen(ps[i].name));

		if (!name || sp_grow((void **)&m->syms, cap, m->n_syms + 1, sizeof(*m->syms)))
			err = -ENOMEM;
		else
			m->syms[m->n_syms++] = (struct sym){
				.lo = ps[i].addr, .size = ps[i].size, .name = name, .rank = 1,
			};
	}
	free(ps);
	return err;
}

static int load_symbols(struct sp_debuginfo *di, struct module *m, const char *hint,
			const char *exec)
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
	/* a relocatable file (a .ko) has no PLT: its relocation sections
	 * (megabytes of .rela.debug_* in a module) are not read for one */
	if (!err && !m->rel)
		err = load_plt(di, m, hint, exec, &cap);
	if (err || !m->n_syms)
		return err;
	qsort(m->syms, m->n_syms, sizeof(*m->syms), sym_cmp);
	for (uint32_t i = 0; i < m->n_syms; i++)
		if (!w || m->syms[w - 1].lo != m->syms[i].lo)
			m->syms[w++] = m->syms[i];
	m->n_syms = w;
	m->sym_lo = malloc((size_t)w * sizeof(*m->sym_lo));
	if (!m->sym_lo)
		return -ENOMEM;
	for (uint32_t i = 0; i < w; i++)
		m->sym_lo[i] = m->syms[i].lo;
	return sp_addr_index__build(&m->sym_idx, m->sym_lo, w);
}

static const struct sym *find_sym(const struct module *m, uint64_t a)
{
	uint32_t lo = sp_addr_index__upper(&m->sym_idx, m->sym_lo, m->n_syms, a);
	const struct sym *s;

	if (!lo)
		return NULL;
	s = &m->syms[lo - 1];
	if (s->size && a >= s->lo + s->size)
		return NULL;
	return s;
}

/* ------------------------------------------------------------ modules */

/* Releases what a load put into m; m keeps its id and lock and can be
 * loaded again. */
/* Gives back what m's relocated .ko debug info holds of the budget. */
static void module_unpin(struct module *m)
{
	if (!m->pinned)
		return;
	__atomic_sub_fetch(&m->budget->pinned, m->pinned, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&m->budget->used, m->pinned, __ATOMIC_RELAXED);
	m->pinned = 0;
}

static void module_clear(struct module *m)
{
	module_unpin(m);
	for (uint32_t i = 0; i < m->n_sources; i++)
		m->sources[i].ops->free(m->sources[i].src);
	free(m->syms);
	free(m->sym_lo);
	sp_addr_index__free(&m->sym_idx);
	free(m->loads);
	sp_strpool__free(&m->pool);
	if (m->rel) {
		sp_relobj__free(m->rel);	/* its elf and dw with it */
	} else {
		if (m->dw)
			dwarf_end(m->dw);
		if (m->elf)
			elf_end(m->elf);
	}
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
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* What a load found, counted once it is published. */
struct load_result {
	bool no_debuginfo;	/* no file at all */
	bool dwarf;		/* DWARF units found */
	bool no_segments;	/* no usable program headers */
	bool ko_refused;	/* .ko debug info past the budget: symbols only */
	uint64_t ko_refused_bytes;	/* what it would have cost */
};

/* Program headers from the executable itself when the debug file's are
 * unusable; without them only virtual addresses can be resolved.  *exec
 * gets the executable's path when found (the caller frees it), so the
 * PLT names need no second lookup. */
static int exec_segments(struct sp_debuginfo *di, struct module *m,
			 const char *hint, struct load_result *lr, char **exec)
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
	*exec = path;
	return err;
}

/* Reserves bytes of relocated .ko debug info in the budget: refused
 * (false) when the pinned bytes of every module would pass its limit.
 * Decoded units are not counted against it: they are evicted instead
 * (their modules give back their own units while used is past the limit,
 * dwarf_src.h), so units and pinned bytes together stay within the limit
 * plus one unit per module, as units alone did. */
static bool budget_pin(struct sp_unit_budget *b, size_t bytes)
{
	size_t cur = __atomic_load_n(&b->pinned, __ATOMIC_RELAXED);

	do {
		if (bytes > b->limit || cur > b->limit - bytes)
			return false;
	} while (!__atomic_compare_exchange_n(&b->pinned, &cur, cur + bytes, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	ADD(b->used, bytes);
	return true;
}

/* A relocatable file (a kernel module): m->elf, opened plainly, is
 * replaced by the same file laid out and relocated by libdwfl (relobj.h),
 * which takes m->fd.  What the relocation costs (sp_relobj__cost) is
 * pinned in the decoded-unit budget for the module's life; when it does
 * not fit, the file is laid out without its debug info (symbols only,
 * lr->ko_refused) and nothing is relocated.  Any other file is left as it
 * is.  0, -ENOEXEC (m then has no file), -ENOMEM. */
static int open_relocatable(struct sp_resolver *r, struct module *m, struct load_result *lr)
{
	GElf_Ehdr eh;
	uint64_t cost;
	int fd = m->fd, err;

	if (!gelf_getehdr(m->elf, &eh) || eh.e_type != ET_REL)
		return 0;
	err = sp_relobj__cost(m->elf, &cost);
	elf_end(m->elf);
	m->elf = NULL;
	m->fd = -1;
	if (err) {
		close(fd);
		return err;
	}
	if (cost > SIZE_MAX || !budget_pin(&r->budget, (size_t)cost)) {
		lr->ko_refused = true;
		lr->ko_refused_bytes = cost;
		err = sp_relobj__open_symbols(fd, &m->rel);
	} else {
		m->pinned = (size_t)cost;
		m->budget = &r->budget;
		err = sp_relobj__open(fd, m->path, &m->rel);
	}
	if (err)
		return err;	/* the caller gives the pin back */
	m->elf = sp_relobj__elf(m->rel);
	m->dw = sp_relobj__dwarf(m->rel);
	return 0;
}

/* Where the executable section name of elf is (as laid out, for a
 * relocatable file: relobj.h): true and its address and size. */
static bool section_range(Elf *elf, const char *name, uint64_t *lo, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name)) {
			*lo = sh.sh_addr;
			*size = sh.sh_size;
			return true;
		}
	}
	return false;
}

/* Where the file's .text is: what an offset in .text (a module frame) is
 * added to. */
static void text_range(struct module *m)
{
	if (!section_range(m->elf, ".text", &m->text_lo, &m->text_size))
		m->text_lo = m->text_size = 0;
}

/* Fills the reserved slot m with whatever the finder gives; a module
 * without any file still loads (it answers -ENOENT quickly).  Runs without
 * r->lock: touches only m, the finder (thread safe) and the resolver's
 * shared budget and counters (atomic).  0, or -ENOMEM with m cleared. */
static int module_load(struct sp_resolver *r, struct module *m, const char *hint,
		       struct load_result *lr)
{
	char *exec = NULL;
	bool usable;
	int err;

	memset(lr, 0, sizeof(*lr));
	err = sp_debuginfo__find(r->di, m->id, hint, &m->path, &m->src);
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
	err = open_relocatable(r, m, lr);
	if (err == -ENOMEM)
		goto fail;
	if (err) {
		module_unpin(m);
		return 0;	/* an ET_REL file libdwfl refused: as no file */
	}
	text_range(m);
	err = load_segments(m, m->elf, &usable);
	if (err == -ENOMEM)
		goto fail;
	if (!usable) {
		err = exec_segments(r->di, m, hint, lr, &exec);
		if (err == -ENOMEM)
			goto fail;
	}
	err = load_symbols(r->di, m, hint, exec);
	if (err)
		goto fail;
	if (!m->rel)
		m->dw = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	if (m->dw) {
		struct sp_dwarf_src_opts o = {
			.dw = m->dw, .elf = m->elf, .pool = &m->pool, .budget = &r->budget,
			.ctr = &r->dwc, .no_demangle = r->no_demangle,
		};
		void *src;

		err = sp_dwarf_src__open(&o, &src);
		if (err)
			goto fail;
		m->sources[m->n_sources++] = (struct sp_linesrc){ &sp_dwarf_linesrc, src };
		m->dwarf_units = sp_dwarf_src__units(src);
		lr->dwarf = m->dwarf_units > 0;
	}
	/* A stripped Go binary still has its own table; DWARF, when there,
	 * says the same and more (columns).  A file with no table, or one of
	 * a format not read here, just has no such source. */
	if (!lr->dwarf) {
		void *src;

		err = sp_gopcln_src__open(m->elf, &src);
		if (err == -ENOMEM)
			goto fail;
		if (!err)
			m->sources[m->n_sources++] =
				(struct sp_linesrc){ &sp_gopcln_linesrc, src };
	}
	free(exec);
	return 0;
fail:
	free(exec);
	module_clear(m);
	return err;
}

/* Which module the calling thread used last (see the header comment). */
static __thread struct {
	const struct sp_resolver *r;
	uint32_t index;
} hint_tls;

/* The ready module of build id id, loading it first when no one has.
 * Takes r->lock only when the thread's hint misses; unlocks it while
 * loading, and waits while another thread loads the same build id. */
static int get_module(struct sp_resolver *r, const char *id, const char *hint,
		      struct module **out, uint32_t *index)
{
	uint32_t mask = r->mod_hash_cap - 1, i, mi = 0;
	struct load_result lr;
	struct module *m = NULL;
	int err = 0;

	if (hint_tls.r == r && hint_tls.index < LOAD(r->n_mods)) {
		m = r->mods[hint_tls.index];
		if (m && __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == MOD_READY &&
		    !strcmp(m->id, id)) {
			*out = m;
			*index = hint_tls.index;
			return 0;
		}
	}
	/* the hint's id was valid; any other is checked before it is used */
	if (validate_id(id))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	m = NULL;
	for (i = (uint32_t)hash_str(id) & mask;; i = (i + 1) & mask) {
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
			ADD(r->st.modules_refused, 1);
			err = -ENOSPC;
			goto out;
		}
		m = calloc(1, sizeof(*m));
		if (!m) {
			err = -ENOMEM;
			goto out;
		}
		m->fd = -1;
		pthread_mutex_init(&m->lock, NULL);
		snprintf(m->id, sizeof(m->id), "%s", id);
		mi = r->n_mods;
		r->mods[mi] = m;
		__atomic_store_n(&r->n_mods, mi + 1, __ATOMIC_RELEASE);
		r->mod_hash[i] = mi + 1;
	}
	while (m->state == MOD_LOADING)
		pthread_cond_wait(&r->loaded, &r->lock);
	if (m->state == MOD_ABSENT) {
		m->state = MOD_LOADING;
		pthread_mutex_unlock(&r->lock);
		err = module_load(r, m, hint, &lr);
		pthread_mutex_lock(&r->lock);
		__atomic_store_n(&m->state, err ? MOD_ABSENT : MOD_READY, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&r->loaded);
		if (err)
			goto out;
		ADD(r->st.modules, 1);
		ADD(r->st.modules_no_debuginfo, lr.no_debuginfo);
		ADD(r->st.modules_dwarf, lr.dwarf);
		ADD(r->st.modules_no_segments, lr.no_segments);
		ADD(r->st.ko_debug_refused, lr.ko_refused);
		ADD(r->st.ko_debug_refused_bytes, lr.ko_refused_bytes);
	}
	*out = m;
	*index = mi;
	hint_tls.r = r;
	hint_tls.index = mi;
out:
	pthread_mutex_unlock(&r->lock);
	return err;
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

/* ------------------------------------------------------------ resolution */

/* Resolution of one vaddr in a module, no caching; under m->lock.  The
 * sources in order; an answer with a function takes the covering ELF
 * symbol's name for its out-of-line function when the source asks for it
 * (clones keep their suffix: foo.isra.0, foo.cold, as llvm-symbolizer and
 * perf print); a line without a function, or no answer, is named by the
 * symbol.  0, or -ENOMEM. */
static int resolve_one(struct sp_resolver *r, struct module *m, uint64_t a,
		       struct sp_frames *out)
{
	const struct sp_linesrc_ops *ops = NULL;
	const struct sym *s;
	int rc = -ENOENT;

	for (uint32_t i = 0; i < m->n_sources && rc; i++) {
		ops = m->sources[i].ops;
		rc = ops->lookup(m->sources[i].src, a, out);
		if (rc == -ENOMEM)
			return rc;
	}
	if (rc) {
		out->n = 0;
		out->source = SP_RES_NONE;
	}
	s = find_sym(m, a);
	if (!rc && out->f[out->n - 1].function) {
		if (ops->symtab_names && s) {
			out->f[out->n - 1].linkage = s->name;
			out->f[out->n - 1].function = display_name(r, m, s->name, s->name);
		}
		return 0;
	}
	if (!s)
		return 0;	/* the line alone, or nothing */
	if (rc)
		out->f[0] = (struct sp_frame){ 0 };
	out->n = 1;
	out->source = SP_RES_SYMTAB;
	out->f[0].linkage = s->name;
	out->f[0].function = display_name(r, m, s->name, s->name);
	return 0;
}

/* ------------------------------------------------------------ API */

int sp_resolver__new(const struct sp_resolver_opts *opts,
		     struct sp_resolver **out)
{
	struct sp_resolver *r;

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
	r->budget.limit = opts->unit_budget ? opts->unit_budget : UNIT_BUDGET_DEFAULT;
	r->max_mods = opts->max_modules ? opts->max_modules : MODULES_DEFAULT;
	r->mod_hash_cap = 16;
	while (r->mod_hash_cap < r->max_mods * 2)
		r->mod_hash_cap *= 2;
	r->mods = calloc(r->max_mods, sizeof(*r->mods));
	r->mod_hash = calloc(r->mod_hash_cap, sizeof(*r->mod_hash));
	if (!r->mods || !r->mod_hash || sp_rcache__init(&r->cache, opts->cache_entries)) {
		sp_resolver__free(r);
		return -ENOMEM;
	}
	r->st.cache_capacity = sp_rcache__capacity(&r->cache);
	*out = r;
	return 0;
}

void sp_resolver__free(struct sp_resolver *r)
{
	if (!r)
		return;
	sp_rcache__free(&r->cache);
	for (uint32_t i = 0; i < r->n_mods; i++)
		module_free(r->mods[i]);
	free(r->mods);
	free(r->mod_hash);
	pthread_cond_destroy(&r->loaded);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void copy_frames(struct sp_frames *dst, const struct sp_frames *src)
{
	memcpy(dst, src, offsetof(struct sp_frames, f) + (size_t)src->n * sizeof(src->f[0]));
}

/* What an address given to the API is. */
enum addr_kind {
	ADDR_VADDR,		/* an ELF virtual address */
	ADDR_FILE_OFFSET,	/* a file offset, through the PT_LOAD segments */
	ADDR_TEXT,		/* an offset in .text (as laid out) */
};

/* The virtual address of addr in a ready module.  0 or -ENOENT. */
static int to_vaddr(const struct module *m, uint64_t addr, enum addr_kind kind, uint64_t *va)
{
	switch (kind) {
	case ADDR_FILE_OFFSET:
		return offset_to_vaddr(m, addr, va);
	case ADDR_TEXT:
		if (addr >= m->text_size)
			return -ENOENT;
		*va = m->text_lo + addr;
		return 0;
	default:
		*va = addr;
		return 0;
	}
}

static int resolve_common(struct sp_resolver *r, const char *build_id,
			  const char *hint, uint64_t addr, enum addr_kind kind,
			  struct sp_frames *out)
{
	struct sp_frames tmp;
	struct module *m;
	uint32_t mi;
	uint64_t va;
	int err;

	out->n = 0;
	out->source = SP_RES_NONE;
	ADD(r->st.requests, 1);
	err = get_module(r, build_id, hint, &m, &mi);
	if (err) {
		ADD(r->st.unresolved, 1);
		return err;
	}
	/* a module without a file may be forgotten and loaded again while a
	 * thread that found it through its hint is here
	 * (sp_resolver__forget_missing): a file seen before the module is
	 * ready again is not used */
	if (!LOAD(m->elf) || __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != MOD_READY ||
	    to_vaddr(m, addr, kind, &va)) {
		ADD(r->st.unresolved, 1);
		return -ENOENT;
	}
	if (sp_rcache__get(&r->cache, mi, va, out)) {
		ADD(r->st.cache_hits, 1);
		return out->n ? 0 : -ENOENT;
	}
	ADD(r->st.cache_misses, 1);
	pthread_mutex_lock(&m->lock);
	err = resolve_one(r, m, va, &tmp);
	pthread_mutex_unlock(&m->lock);
	if (err)
		return err;
	if (!tmp.n)
		ADD(r->st.unresolved, 1);
	else if (tmp.source == SP_RES_DWARF)
		ADD(r->st.resolved_dwarf, 1);
	else if (tmp.source == SP_RES_GOPCLNTAB)
		ADD(r->st.resolved_gopclntab, 1);
	else
		ADD(r->st.resolved_symtab, 1);
	sp_rcache__put(&r->cache, mi, va, &tmp);
	copy_frames(out, &tmp);
	return tmp.n ? 0 : -ENOENT;
}

int sp_resolver__resolve(struct sp_resolver *r, const char *build_id,
			 const char *hint_path, uint64_t file_offset,
			 struct sp_frames *out)
{
	return resolve_common(r, build_id, hint_path, file_offset, ADDR_FILE_OFFSET, out);
}

int sp_resolver__resolve_vaddr(struct sp_resolver *r, const char *build_id,
			       const char *hint_path, uint64_t vaddr,
			       struct sp_frames *out)
{
	return resolve_common(r, build_id, hint_path, vaddr, ADDR_VADDR, out);
}

int sp_resolver__resolve_text(struct sp_resolver *r, const char *build_id,
			      const char *hint_path, uint64_t text_offset,
			      struct sp_frames *out)
{
	return resolve_common(r, build_id, hint_path, text_offset, ADDR_TEXT, out);
}

int sp_resolver__section(struct sp_resolver *r, const char *build_id, const char *hint_path,
			 const char *section, uint64_t *lo, uint64_t *size)
{
	struct module *m;
	uint32_t mi;
	bool found;
	int err;

	if (sp_buildid__validate(build_id))
		return -EINVAL;
	err = get_module(r, build_id, hint_path, &m, &mi);
	if (err)
		return err;
	if (!LOAD(m->elf))
		return -ENOENT;
	pthread_mutex_lock(&m->lock);
	found = section_range(m->elf, section, lo, size);
	pthread_mutex_unlock(&m->lock);
	return found ? 0 : -ENOENT;
}

int sp_resolver__load(struct sp_resolver *r, const char *build_id, const char *hint_path)
{
	struct module *m;
	uint32_t mi;
	int err;

	if (sp_buildid__validate(build_id))
		return -EINVAL;
	/* get_module takes r->lock itself; a ready module's file is fixed
	 * (forget_missing only clears modules without one) */
	err = get_module(r, build_id, hint_path, &m, &mi);
	if (!err && !LOAD(m->elf))
		err = -ENOENT;
	return err;
}

void sp_resolver__forget_missing(struct sp_resolver *r, const char *build_id)
{
	if (sp_buildid__validate(build_id))
		return;
	pthread_mutex_lock(&r->lock);
	for (uint32_t i = 0; i < r->n_mods; i++) {
		struct module *m = r->mods[i];

		/* a module found without any file answers nothing: safe to
		 * load again (no string of it can be held anywhere).  Under
		 * m->lock too: a thread that found m through its hint may be
		 * about to look in it (lock order: r->lock, then m->lock) */
		if (m->state == MOD_READY && !m->elf && !strcmp(m->id, build_id)) {
			pthread_mutex_lock(&m->lock);
			__atomic_store_n(&m->state, MOD_ABSENT, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&r->st.modules, 1, __ATOMIC_RELAXED);
			__atomic_sub_fetch(&r->st.modules_no_debuginfo, !m->path, __ATOMIC_RELAXED);
			module_clear(m);
			pthread_mutex_unlock(&m->lock);
		}
	}
	pthread_mutex_unlock(&r->lock);
}

int sp_resolver__module_info(struct sp_resolver *r, const char *build_id,
			     const char **path, enum sp_debuginfo_source *src,
			     bool *has_dwarf)
{
	int err = -ENOENT;

	if (validate_id(build_id))
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
			*has_dwarf = m->dw && m->dwarf_units;
		err = m->elf ? 0 : -ENOENT;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

void sp_resolver__stats(struct sp_resolver *r, struct sp_resolver_stats *st)
{
	const struct sp_dwarf_counters *d = &r->dwc;

	*st = (struct sp_resolver_stats){
		.requests = LOAD(r->st.requests),
		.cache_hits = LOAD(r->st.cache_hits),
		.cache_misses = LOAD(r->st.cache_misses),
		.cache_evictions = LOAD(r->cache.evictions),
		.cache_capacity = r->st.cache_capacity,
		.cache_used = LOAD(r->cache.used),
		.resolved_dwarf = LOAD(r->st.resolved_dwarf),
		.resolved_symtab = LOAD(r->st.resolved_symtab),
		.resolved_gopclntab = LOAD(r->st.resolved_gopclntab),
		.unresolved = LOAD(r->st.unresolved),
		.inline_truncated = LOAD(d->inline_truncated),
		.modules = LOAD(r->st.modules),
		.modules_no_debuginfo = LOAD(r->st.modules_no_debuginfo),
		.modules_dwarf = LOAD(r->st.modules_dwarf),
		.modules_refused = LOAD(r->st.modules_refused),
		.bad_dwarf_units = LOAD(d->units_bad) + LOAD(d->functions_bad),
		.modules_no_segments = LOAD(r->st.modules_no_segments),
		.units_decoded = LOAD(d->units_decoded),
		.units_evicted = LOAD(d->units_evicted),
		.unit_bytes = LOAD(r->budget.used),
		.unit_budget = r->budget.limit,
		.ko_debug_bytes = LOAD(r->budget.pinned),
		.ko_debug_refused = LOAD(r->st.ko_debug_refused),
		.ko_debug_refused_bytes = LOAD(r->st.ko_debug_refused_bytes),
		.lines_libdw = LOAD(d->lines_libdw),
		.lines_clamped = LOAD(d->lines_clamped),
		.functions_indexed = LOAD(d->functions_indexed),
		.inline_walks_libdw = LOAD(d->inline_walks_libdw),
		.nested_scans = LOAD(d->nested_scans),
	};
}
