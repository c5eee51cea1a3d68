// SPDX-License-Identifier: MIT
/*
 * dwarf_src.c - see dwarf_src.h.  Layout of the work:
 *   cus      every unit of .debug_info (header offset, unit DIE, address
 *            size) in offset order; ranges: (lo, hi, unit) sorted by lo,
 *            from .debug_aranges plus the unit DIE ranges of the units it
 *            does not list.
 *   unit     a decoded unit: its line table, its functions (fns, each with
 *            its DIE) and their address ranges (roots, sorted by lo), the
 *            joined file paths asked for so far, a cache of the names of
 *            abstract origins (an inlined function is named through its
 *            DW_AT_abstract_origin, and many inlined instances share one).
 *   fn       a function's inline tree once asked: scopes (0 = the function,
 *            then every inlined call with its parent scope, call site and
 *            names) and segments: [seg_lo[i], seg_lo[i + 1]) -> the
 *            innermost scope seg_scope[i] there (NO_SCOPE in a gap; the last segment is
 *            a terminator).  Built by painting every range, in DIE order,
 *            over the sorted range boundaries where it is deeper than what
 *            is there: the deepest range wins, the first in DIE order among
 *            equally deep ones (what a linear scan of the ranges gave).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "die_reader.h"
#include "dwarf_line.h"
#include "dwarf_src.h"
#include "grow.h"

#define NO_SCOPE UINT32_MAX
#define CHAIN_MAX 64

struct scope {
	const char *name;	/* display (demangled) */
	const char *linkage;
	int32_t parent;		/* -1: the function itself */
	uint32_t call_file;	/* file index of the unit's line table */
	int32_t call_line, call_col;
	int32_t decl_line;
};

struct fn {
	Dwarf_Die die;
	bool indexed, failed;
	struct scope *scopes;
	uint32_t n_scopes;
	uint64_t *seg_lo;	/* n_segs, ascending */
	uint32_t *seg_scope;	/* n_segs */
	uint32_t n_segs;
	struct sp_addr_index seg_idx;
};

struct root {
	uint64_t lo, hi;
	uint32_t fn;
};

struct origin {
	uint64_t off;		/* origin_key; 0 = empty slot */
	const char *name, *linkage;
	int32_t decl_line;
};

struct unit {
	uint32_t cu;
	uint64_t stamp;			/* last use, for the LRU choice */
	size_t bytes;
	const char *comp_dir;
	struct sp_dline_table lines;
	const char **paths;		/* lines.n_files, pooled, NULL = not yet */
	struct fn *fns;
	uint32_t n_fns, cap_fns;
	struct root *roots;
	uint32_t n_roots, cap_roots;
	bool nested_scanned;
	struct origin *origins;		/* open addressing on origin_key */
	uint32_t n_origins, cap_origins;
	struct sp_die_unit du;		/* die_reader's view, once opened */
	int8_t du_state;		/* 0 not tried, 1 open, -1 not readable */
};

struct cu {
	uint64_t off;
	Dwarf_Die die;
	uint8_t addr_size;
	bool bad;
	struct unit *u;
};

struct cu_range {
	uint64_t lo, hi;
	uint32_t cu;
};

struct dsrc {
	Dwarf *dw;
	Elf *elf;
	struct sp_strpool *pool;
	struct sp_unit_budget *budget;
	struct sp_dwarf_counters *ctr;
	bool no_demangle;
	struct sp_dline_sections secs;
	struct sp_die_sections dies;
	struct cu *cus;
	uint32_t n_cus;
	struct cu_range *ranges;
	uint32_t n_ranges;
	uint64_t clock;
	uint32_t n_units;		/* decoded now */
	size_t bytes;
};

#define ADD(p, v) __atomic_add_fetch(&(p), (v), __ATOMIC_RELAXED)

/* ------------------------------------------------------------ sections */

/* The bytes of section name (or its .zdebug_ spelling), decompressed;
 * NULL, 0 when absent. */
static const uint8_t *section(Elf *elf, const char *name, size_t *len)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*len = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || (strcmp(n, name) && !(n[0] == '.' && n[1] == 'z' &&
						  !strcmp(n + 2, name + 1))))
			continue;
		/* libdw decompresses the sections it reads when it opens the
		 * file; a section it did not is decompressed here */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return NULL;
		d = elf_getdata(scn, NULL);
		if (d && n[1] == 'z' && d->d_size >= 4 && d->d_buf &&
		    !memcmp(d->d_buf, "ZLIB", 4)) {
			if (elf_compress_gnu(scn, 0, 0) < 0)
				return NULL;
			d = elf_getdata(scn, NULL);
		}
		if (!d || !d->d_buf)
			return NULL;
		*len = d->d_size;
		return d->d_buf;
	}
	return NULL;
}

/* ------------------------------------------------------------ unit table */

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int add_range(struct dsrc *s, uint32_t *cap, uint64_t lo, uint64_t hi, uint32_t cu)
{
	if (hi <= lo)
		return 0;
	if (sp_grow((void **)&s->ranges, cap, s->n_ranges + 1, sizeof(*s->ranges)))
		return -ENOMEM;
	s->ranges[s->n_ranges++] = (struct cu_range){ lo, hi, cu };
	return 0;
}

static int32_t cu_by_off(const struct dsrc *s, uint64_t off)
{
	uint32_t lo = 0, hi = s->n_cus;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->cus[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_cus && s->cus[lo].off == off ? (int32_t)lo : -1;
}

static uint64_t rd(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* .debug_aranges (DWARF 2-5 7.21): sets of unit_length (4, or 0xffffffff
 * + 8), version 2 (2), debug_info_offset (4/8), address_size (1),
 * segment_selector_size (1, must be 0), padding to a multiple of twice the
 * address size from the set's start, then (address, length) pairs ending
 * with (0, 0).  A malformed set ends the parse: its units are then found
 * through their own ranges.  covered[i] marks the units it lists. */
static int parse_aranges(struct dsrc *s, uint32_t *cap, uint8_t *covered)
{
	size_t len, pos = 0;
	const uint8_t *a = section(s->elf, ".debug_aranges", &len);

	while (a && len - pos >= 4) {
		const uint8_t *set = a + pos, *p, *end;
		uint64_t ulen = rd(set, 4), info_off;
		unsigned off_size = 4, hdr;
		uint8_t as;
		int32_t cu;

		if (ulen == 0xffffffffu) {
			if (len - pos < 12)
				break;
			ulen = rd(set + 4, 8);
			off_size = 8;
		} else if (ulen >= 0xfffffff0u) {
			break;
		}
		hdr = off_size == 8 ? 12 : 4;
		if (ulen > len - pos - hdr || ulen < 2 + off_size + 2)
			break;
		end = set + hdr + ulen;
		p = set + hdr;
		if (rd(p, 2) != 2)
			break;
		info_off = rd(p + 2, off_size);
		as = p[2 + off_size];
		if ((as != 4 && as != 8) || p[3 + off_size] != 0)
			break;
		p += 4 + off_size;
		p = set + ((size_t)(p - set) + 2 * as - 1) / (2 * as) * (2 * as);
		cu = cu_by_off(s, info_off);
		for (; p + 2 * as <= end; p += 2 * as) {
			uint64_t lo = rd(p, as), n = rd(p + as, as);

			if (!lo && !n)
				break;
			if (cu < 0)
				continue;
			if (add_range(s, cap, lo, lo + n < lo ? UINT64_MAX : lo + n, (uint32_t)cu))
				return -ENOMEM;
			covered[cu] = 1;
		}
		pos = (size_t)(end - a);
	}
	return 0;
}

static int build_units(struct dsrc *s)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t type, *covered = NULL;
	uint32_t cap = 0, rcap = 0;
	Dwarf_Die cudie, sub;
	int err = 0;

	while (dwarf_get_units(s->dw, cu, &next, &version, &type, &cudie, &sub) == 0) {
		uint8_t as = 8;
		Dwarf_Die tmp;

		cu = next;
		if (type != DW_UT_compile && type != DW_UT_partial)
			continue;	/* type units, split skeletons: no code here */
		if (sp_grow((void **)&s->cus, &cap, s->n_cus + 1, sizeof(*s->cus)))
			return -ENOMEM;
		dwarf_diecu(&cudie, &tmp, &as, NULL);
		s->cus[s->n_cus++] = (struct cu){
			.off = dwarf_dieoffset(&cudie) - dwarf_cuoffset(&cudie),
			.die = cudie, .addr_size = as };
	}
	if (!s->n_cus)
		return 0;
	covered = calloc(s->n_cus, 1);
	if (!covered)
		return -ENOMEM;
	err = parse_aranges(s, &rcap, covered);
	for (uint32_t i = 0; !err && i < s->n_cus; i++) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t ro = 0;

		if (covered[i])
			continue;
		while (!err && (ro = dwarf_ranges(&s->cus[i].die, ro, &base, &lo, &hi)) > 0)
			err = add_range(s, &rcap, lo, hi, i);
	}
	free(covered);
	if (!err && s->n_ranges)
		qsort(s->ranges, s->n_ranges, sizeof(*s->ranges), range_cmp);
	return err;
}

/* The number of elements of an array of n structs (stride bytes each)
 * whose uint64_t at byte off is <= a; the array ascends by it. */
static uint32_t upper_by_lo(const void *base, uint32_t n, size_t stride, size_t off, uint64_t a)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t v;

		memcpy(&v, (const char *)base + (size_t)mid * stride + off, sizeof(v));
		if (v <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int32_t find_cu(const struct dsrc *s, uint64_t a)
{
	uint32_t lo = upper_by_lo(s->ranges, s->n_ranges, sizeof(*s->ranges),
				  offsetof(struct cu_range, lo), a);

	/* units do not overlap in sane DWARF; still, look back a little */
	for (uint32_t i = lo, k = 0; i > 0 && k < 8; i--, k++)
		if (a >= s->ranges[i - 1].lo && a < s->ranges[i - 1].hi)
			return (int32_t)s->ranges[i - 1].cu;
	return -1;
}

/* ------------------------------------------------------------ budget */

static void unit_free(struct unit *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->n_fns; i++) {
		free(u->fns[i].scopes);
		free(u->fns[i].seg_lo);
		free(u->fns[i].seg_scope);
		sp_addr_index__free(&u->fns[i].seg_idx);
	}
	free(u->fns);
	free(u->roots);
	free(u->paths);
	free(u->origins);
	sp_dline__free(&u->lines);
	sp_die_unit__free(&u->du);
	free(u);
}

static void evict(struct dsrc *s, struct unit *u)
{
	s->cus[u->cu].u = NULL;
	s->n_units--;
	s->bytes -= u->bytes;
	__atomic_sub_fetch(&s->budget->used, u->bytes, __ATOMIC_RELAXED);
	ADD(s->ctr->units_evicted, 1);
	unit_free(u);
}

/* The least recently used decoded unit other than keep, or NULL.  A scan
 * of the unit table, only when the budget is exceeded: cheaper than
 * keeping a list in order on every lookup. */
static struct unit *lru_victim(const struct dsrc *s, const struct unit *keep)
{
	struct unit *v = NULL;

	for (uint32_t i = 0; i < s->n_cus; i++) {
		struct unit *u = s->cus[i].u;

		if (u && u != keep && (!v || u->stamp < v->stamp))
			v = u;
	}
	return v;
}

/* u grew by delta bytes: count them, then give back this module's least
 * recently used units (never u) while the budget is exceeded. */
static void account(struct dsrc *s, struct unit *u, size_t delta)
{
	u->bytes += delta;
	s->bytes += delta;
	ADD(s->budget->used, delta);
	while (__atomic_load_n(&s->budget->used, __ATOMIC_RELAXED) > s->budget->limit) {
		struct unit *v = lru_victim(s, u);

		if (!v)
			break;
		evict(s, v);
	}
}

/* ------------------------------------------------------------ names */

static const char *pooled(struct dsrc *s, const char *str)
{
	return str ? sp_strpool__intern(s->pool, str, strlen(str)) : NULL;
}

/* Display and linkage names of die, following abstract origins and
 * specifications; display = demangled linkage name when there is one. */
static void die_names(struct dsrc *s, Dwarf_Die *die, const char **name, const char **linkage)
{
	Dwarf_Attribute at;
	const char *n = NULL, *l = NULL;
	char *d;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		l = dwarf_formstring(&at);
	if (dwarf_attr_integrate(die, DW_AT_name, &at))
		n = dwarf_formstring(&at);
	*linkage = l ? l : n;
	*name = n ? n : l;
	if (l && !s->no_demangle && (d = sp_demangle(l))) {
		const char *p = sp_strpool__adopt(s->pool, d);

		if (p)
			*name = p;
	}
}

/* The key of die's abstract origin in the unit's origin cache: its
 * section offset, bit 63 set when it lives in the dwz alternate file; 0
 * when it has none. */
#define ORIGIN_ALT (1ull << 63)

static uint64_t origin_key(const struct dsrc *s, Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Die od;
	uint64_t key;

	if (!dwarf_attr(die, DW_AT_abstract_origin, &at) || !dwarf_formref_die(&at, &od))
		return 0;
	key = dwarf_dieoffset(&od);
	if (dwarf_cu_getdwarf(od.cu) != s->dw)
		key |= ORIGIN_ALT;
	return key;
}

static uint32_t origin_slot(const struct unit *u, uint64_t key)
{
	return (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 40) & (u->cap_origins - 1);
}

/* Names and declaration line of an inlined call's function: from the
 * unit's origin cache when key (origin_key) is there, else from libdw on
 * die (the inlined DIE: dwarf_attr_integrate follows its origin), then
 * cached. */
static bool origin_cached(const struct unit *u, uint64_t key, struct scope *sc)
{
	if (!key || !u->cap_origins)
		return false;
	for (uint32_t i = origin_slot(u, key); u->origins[i].off;
	     i = (i + 1) & (u->cap_origins - 1)) {
		if (u->origins[i].off == key) {
			sc->name = u->origins[i].name;
			sc->linkage = u->origins[i].linkage;
			sc->decl_line = u->origins[i].decl_line;
			return true;
		}
	}
	return false;
}

static int origin_names(struct dsrc *s, struct unit *u, uint64_t key, Dwarf_Die *die,
			struct scope *sc)
{
	uint32_t i;
	int decl = 0;

	if (origin_cached(u, key, sc))
		return 0;
	die_names(s, die, &sc->name, &sc->linkage);
	dwarf_decl_line(die, &decl);
	sc->decl_line = decl;
	if (!key)
		return 0;
	if ((uint64_t)(u->n_origins + 1) * 2 > u->cap_origins) {
		uint32_t nc = u->cap_origins ? u->cap_origins * 2 : 64, old = u->cap_origins;
		struct origin *no = calloc(nc, sizeof(*no)), *prev = u->origins;

		if (!no)
			return -ENOMEM;
		u->origins = no;
		u->cap_origins = nc;
		for (uint32_t k = 0; k < old; k++) {
			if (!prev[k].off)
				continue;
			for (i = origin_slot(u, prev[k].off); no[i].off; i = (i + 1) & (nc - 1))
				;
			no[i] = prev[k];
		}
		free(prev);
		account(s, u, (size_t)(nc - old) * sizeof(*no));
	}
	for (i = origin_slot(u, key); u->origins[i].off; i = (i + 1) & (u->cap_origins - 1))
		;
	u->origins[i] = (struct origin){ key, sc->name, sc->linkage, sc->decl_line };
	u->n_origins++;
	return 0;
}

/* The joined path of file index idx of u's line table, or NULL. */
static const char *unit_path(struct dsrc *s, struct unit *u, uint32_t idx)
{
	char buf[4096];
	const char *p;

	if (idx >= u->lines.n_files)
		return NULL;
	if (!u->paths) {
		u->paths = calloc(u->lines.n_files, sizeof(*u->paths));
		if (!u->paths)
			return NULL;
		account(s, u, (size_t)u->lines.n_files * sizeof(*u->paths));
	}
	if (!u->paths[idx]) {
		p = sp_dline__path(&u->lines, idx, u->comp_dir, buf, sizeof(buf));
		u->paths[idx] = pooled(s, p);
	}
	return u->paths[idx];
}

/* ------------------------------------------------------------ functions */

/* A DW_TAG_subprogram with code becomes a function with one root per
 * address range. */
static int add_fn(struct unit *u, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t ro = 0;
	uint32_t first = u->n_roots;

	while ((ro = dwarf_ranges(die, ro, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (sp_grow((void **)&u->roots, &u->cap_roots, u->n_roots + 1, sizeof(*u->roots)))
			return -ENOMEM;
		u->roots[u->n_roots++] = (struct root){ lo, hi, u->n_fns };
	}
	if (u->n_roots == first)
		return 0;	/* a declaration or an abstract instance */
	if (sp_grow((void **)&u->fns, &u->cap_fns, u->n_fns + 1, sizeof(*u->fns)))
		return -ENOMEM;
	memset(&u->fns[u->n_fns], 0, sizeof(u->fns[0]));
	u->fns[u->n_fns++].die = *die;
	return 0;
}

/* The functions under parent.  Top level (nested false): into namespaces,
 * types and blocks, never into a function (DW_AT_sibling skips it).
 * nested: everything, adding only the functions inside functions. */
static int scan_fns(struct unit *u, Dwarf_Die *parent, int level, bool nested, bool in_fn)
{
	Dwarf_Die child;
	int rc, err = 0;

	if (level > SP_DWARF_MAX_DEPTH)
		return -ELOOP;
	rc = dwarf_child(parent, &child);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			if (nested == in_fn)
				err = add_fn(u, &child);
			if (!err && nested)
				err = scan_fns(u, &child, level + 1, nested, true);
			break;
		case DW_TAG_inlined_subroutine:
			if (nested)
				err = scan_fns(u, &child, level + 1, nested, in_fn);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			err = scan_fns(u, &child, level + 1, nested, in_fn);
			break;
		default:
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

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static const struct root *find_root(const struct unit *u, uint64_t a)
{
	uint32_t lo = upper_by_lo(u->roots, u->n_roots, sizeof(*u->roots),
				  offsetof(struct root, lo), a);

	/* nested functions may overlap their parent: look back a little */
	for (uint32_t i = lo, k = 0; i > 0 && k < 4; i--, k++)
		if (a >= u->roots[i - 1].lo && a < u->roots[i - 1].hi)
			return &u->roots[i - 1];
	return NULL;
}

/* ------------------------------------------------------------ inline trees */

struct rng {
	uint64_t lo, hi;
	uint32_t scope, depth;
};

struct fwalk {
	struct dsrc *s;
	struct unit *u;
	struct fn *f;
	uint32_t cap_scopes;
	struct rng *r;
	uint32_t n_r, cap_r;
};

static int add_rng(struct fwalk *w, uint64_t lo, uint64_t hi, uint32_t scope, uint32_t depth)
{
	if (hi <= lo)
		return 0;
	if (sp_grow((void **)&w->r, &w->cap_r, w->n_r + 1, sizeof(*w->r)))
		return -ENOMEM;
	w->r[w->n_r++] = (struct rng){ lo, hi, scope, depth };
	return 0;
}

static int64_t attr_int(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute at;
	Dwarf_Word v;

	if (!dwarf_attr(die, name, &at) || dwarf_formudata(&at, &v))
		return 0;
	return (int64_t)v;
}

static int walk_inlines(struct fwalk *w, Dwarf_Die *parent, int32_t cur, uint32_t depth,
			int level)
{
	Dwarf_Die child;
	int rc, err = 0;

	if (level > SP_DWARF_MAX_DEPTH)
		return -ELOOP;
	rc = dwarf_child(parent, &child);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_inlined_subroutine: {
			struct scope sc = { .parent = cur };
			Dwarf_Addr base, lo, hi;
			ptrdiff_t ro = 0;
			uint32_t idx = w->f->n_scopes, before = w->n_r;

			err = origin_names(w->s, w->u, origin_key(w->s, &child), &child, &sc);
			if (err)
				break;
			sc.call_file = (uint32_t)attr_int(&child, DW_AT_call_file);
			sc.call_line = (int32_t)attr_int(&child, DW_AT_call_line);
			sc.call_col = (int32_t)attr_int(&child, DW_AT_call_column);
			while (!err && (ro = dwarf_ranges(&child, ro, &base, &lo, &hi)) > 0)
				err = add_rng(w, lo, hi, idx, depth + 1);
			if (err || w->n_r == before)
				break;	/* no code of its own: nothing under it either */
			if (sp_grow((void **)&w->f->scopes, &w->cap_scopes, idx + 1,
				 sizeof(*w->f->scopes))) {
				err = -ENOMEM;
				break;
			}
			w->f->scopes[w->f->n_scopes++] = sc;
			err = walk_inlines(w, &child, (int32_t)idx, depth + 1, level + 1);
			break;
		}
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			err = walk_inlines(w, &child, cur, depth, level + 1);
			break;
		default:	/* a nested function is a function of its own */
			break;
		}
		if (err)
			return err;
		rc = dwarf_siblingof(&child, &child);
	} while (rc == 0);
	return rc < 0 ? -EINVAL : 0;
}

/* The same walk with die_reader (see its header for why): children of the
 * DIE at off.  -EINVAL / -ELOOP when it cannot read the tree (the caller
 * then walks it with libdw), -ENOMEM. */
struct fast_rng {
	struct fwalk *w;
	uint32_t scope, depth;
};

static int fast_add(void *ctx, uint64_t lo, uint64_t hi)
{
	struct fast_rng *f = ctx;

	return add_rng(f->w, lo, hi, f->scope, f->depth);
}

static int fast_inlines(struct fwalk *w, const struct sp_die *parent, int32_t cur,
			uint32_t depth, int level)
{
	const struct sp_die_sections *ds = &w->s->dies;
	const struct sp_die_unit *du = &w->u->du;
	uint64_t p = parent->next;

	if (level > SP_DWARF_MAX_DEPTH)
		return -ELOOP;
	if (!parent->children)
		return 0;
	for (;;) {
		struct sp_die d;
		int rc = sp_die__read(ds, du, p, &d), err = 0;

		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0;	/* the end of the children */
		if (d.tag == DW_TAG_inlined_subroutine) {
			struct scope sc = { .parent = cur };
			uint32_t idx = w->f->n_scopes, before = w->n_r;
			struct fast_rng fr = { w, idx, depth + 1 };

			err = sp_die__ranges(ds, du, &d, fast_add, &fr);
			if (err)
				return err;
			if (w->n_r > before) {
				Dwarf_Die die;
				uint64_t key = d.origin == 1 ? d.origin_off :
					       d.origin == 2 ? d.origin_off | ORIGIN_ALT : 0;

				if (!origin_cached(w->u, key, &sc)) {
					if (!dwarf_offdie(w->s->dw, d.off, &die))
						return -EINVAL;
					err = origin_names(w->s, w->u, key, &die, &sc);
					if (err)
						return err;
				}
				sc.call_file = d.call_file > UINT32_MAX ? 0 : (uint32_t)d.call_file;
				sc.call_line = (int32_t)d.call_line;
				sc.call_col = (int32_t)d.call_col;
				if (sp_grow((void **)&w->f->scopes, &w->cap_scopes, idx + 1,
					 sizeof(*w->f->scopes)))
					return -ENOMEM;
				w->f->scopes[w->f->n_scopes++] = sc;
				err = fast_inlines(w, &d, (int32_t)idx, depth + 1, level + 1);
			}
		} else if (d.tag == DW_TAG_lexical_block || d.tag == DW_TAG_try_block ||
			   d.tag == DW_TAG_catch_block) {
			err = fast_inlines(w, &d, cur, depth, level + 1);
		}
		if (err)
			return err;
		err = sp_die__after(ds, du, &d, SP_DWARF_MAX_DEPTH - level, &p);
		if (err)
			return err;
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The segments of f from its ranges (see the header comment). */
static int build_segs(struct fn *f, const struct rng *r, uint32_t n)
{
	uint64_t *b = malloc((size_t)2 * n * sizeof(*b) + 1);
	uint32_t *sc = NULL, *dep = NULL, m = 0, w = 0;
	int err = -ENOMEM;

	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		b[m++] = r[i].lo;
		b[m++] = r[i].hi;
	}
	qsort(b, m, sizeof(*b), u64_cmp);
	for (uint32_t i = 0; i < m; i++)
		if (!w || b[w - 1] != b[i])
			b[w++] = b[i];
	m = w;
	sc = malloc((size_t)m * sizeof(*sc) + 1);
	dep = malloc((size_t)m * sizeof(*dep) + 1);
	f->seg_lo = malloc((size_t)(m + 1) * sizeof(*f->seg_lo));
	f->seg_scope = malloc((size_t)(m + 1) * sizeof(*f->seg_scope));
	if (!sc || !dep || !f->seg_lo || !f->seg_scope)
		goto out;
	for (uint32_t i = 0; i < m; i++) {
		sc[i] = NO_SCOPE;
		dep[i] = 0;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t lo = 0, hi = m;

		while (lo < hi) {		/* first boundary >= r[k].lo */
			uint32_t mid = lo + (hi - lo) / 2;

			if (b[mid] < r[k].lo)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t i = lo; i + 1 < m && b[i] < r[k].hi; i++)
			if (sc[i] == NO_SCOPE || r[k].depth > dep[i]) {
				sc[i] = r[k].scope;
				dep[i] = r[k].depth;
			}
	}
	f->n_segs = 0;
	for (uint32_t i = 0; i + 1 < m; i++)
		if (!f->n_segs || f->seg_scope[f->n_segs - 1] != sc[i]) {
			f->seg_lo[f->n_segs] = b[i];
			f->seg_scope[f->n_segs++] = sc[i];
		}
	if (m) {
		f->seg_lo[f->n_segs] = b[m - 1];
		f->seg_scope[f->n_segs++] = NO_SCOPE;
	}
	err = sp_addr_index__build(&f->seg_idx, f->seg_lo, f->n_segs);
out:
	free(b);
	free(sc);
	free(dep);
	return err;
}

/* The inline tree of w->f: die_reader when it can read the unit, else (or
 * when it gives up on this function) libdw. */
static int fast_walk(struct dsrc *s, struct unit *u, struct fwalk *w)
{
	uint32_t n_r = w->n_r;
	struct sp_die fd;
	int err;

	if (!u->du_state) {
		err = sp_die_unit__open(&s->dies, s->cus[u->cu].off, &u->du);
		if (err == -ENOMEM)
			return err;
		u->du_state = err ? -1 : 1;
		if (!err)
			account(s, u, sp_die_unit__bytes(&u->du));
	}
	if (u->du_state > 0) {
		err = sp_die__read(&s->dies, &u->du, dwarf_dieoffset(&w->f->die), &fd);
		if (!err && fd.tag == DW_TAG_subprogram)
			err = fast_inlines(w, &fd, 0, 0, 0);
		else if (!err)
			err = -EINVAL;
		if (err != -EINVAL && err != -ELOOP)
			return err;
		/* start over with libdw */
		w->n_r = n_r;
		w->f->n_scopes = 1;
	}
	ADD(s->ctr->inline_walks_libdw, 1);
	return walk_inlines(w, &w->f->die, 0, 0, 0);
}

static int index_fn(struct dsrc *s, struct unit *u, struct fn *f)
{
	struct fwalk w = { .s = s, .u = u, .f = f };
	struct scope root = { .parent = -1 };
	Dwarf_Addr base, lo, hi;
	ptrdiff_t ro = 0;
	int decl = 0, err;

	f->indexed = true;
	die_names(s, &f->die, &root.name, &root.linkage);
	dwarf_decl_line(&f->die, &decl);
	root.decl_line = decl;
	err = sp_grow((void **)&f->scopes, &w.cap_scopes, 1, sizeof(*f->scopes));
	if (err)
		goto out;
	f->scopes[f->n_scopes++] = root;
	while (!err && (ro = dwarf_ranges(&f->die, ro, &base, &lo, &hi)) > 0)
		err = add_rng(&w, lo, hi, 0, 0);
	if (!err)
		err = fast_walk(s, u, &w);
	if (!err)
		err = build_segs(f, w.r, w.n_r);
out:
	free(w.r);
	if (err == -ENOMEM) {		/* not indexed: the next lookup tries again */
		free(f->scopes);
		free(f->seg_lo);
		free(f->seg_scope);
		sp_addr_index__free(&f->seg_idx);
		f->scopes = NULL;
		f->seg_lo = NULL;
		f->seg_scope = NULL;
		f->n_scopes = f->n_segs = 0;
		f->indexed = false;
		return err;
	}
	if (err) {
		f->failed = true;
		ADD(s->ctr->functions_bad, 1);
	} else {
		ADD(s->ctr->functions_indexed, 1);
	}
	account(s, u, (size_t)w.cap_scopes * sizeof(*f->scopes) +
		      (size_t)f->n_segs * (sizeof(*f->seg_lo) + sizeof(*f->seg_scope)) +
		      sp_addr_index__bytes(&f->seg_idx));
	return err;
}

/* The innermost scope of a in f. */
static uint32_t find_scope(const struct fn *f, uint64_t a)
{
	uint32_t lo = sp_addr_index__upper(&f->seg_idx, f->seg_lo, f->n_segs, a);

	if (!lo || f->seg_scope[lo - 1] == NO_SCOPE)
		return 0;	/* the function itself */
	return f->seg_scope[lo - 1];
}

/* ------------------------------------------------------------ units */

/* What the function list holds (their inline trees are counted apart). */
static size_t fns_bytes(const struct unit *u)
{
	return (size_t)u->cap_fns * sizeof(*u->fns) + (size_t)u->cap_roots * sizeof(*u->roots);
}

/* The rows of libdw's line table into t (files as libdw joins them), for
 * a table the decoder here does not read. */
static int lines_from_libdw(Dwarf_Die *cudie, struct sp_dline_table *t)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t n, nf;
	uint32_t w = 0;

	memset(t, 0, sizeof(*t));
	if (dwarf_getsrclines(cudie, &lines, &n) || dwarf_getsrcfiles(cudie, &files, &nf))
		return -EINVAL;
	if (n > SP_DLINE_MAX_ROWS || nf > SP_DLINE_FILE_BIG)
		return -E2BIG;
	t->version = 5;		/* paths are whole already: no directory 0 rule */
	t->addrs = malloc(n * sizeof(*t->addrs) + 1);
	t->rows = malloc(n * sizeof(*t->rows) + 1);
	t->files = calloc(nf + 1, sizeof(*t->files));
	if (!t->addrs || !t->rows || !t->files) {
		sp_dline__free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf; i++)
		t->files[i] = (struct sp_dline_file){ dwarf_filesrc(files, i, NULL, NULL),
						       UINT32_MAX };
	t->n_files = (uint32_t)nf;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *ln = dwarf_onesrcline(lines, i);
		Dwarf_Addr a = 0;
		Dwarf_Files *lf;
		size_t fi = SP_DLINE_FILE_BIG;
		int line = 0, col = 0;
		bool end = false;

		if (!ln)
			continue;
		dwarf_lineaddr(ln, &a);
		dwarf_lineno(ln, &line);
		dwarf_linecol(ln, &col);
		dwarf_lineendsequence(ln, &end);
		if (dwarf_line_file(ln, &lf, &fi) || lf != files || fi >= SP_DLINE_FILE_BIG)
			fi = SP_DLINE_FILE_BIG;
		/* libdw's order already; keep the row that answers */
		if (w && t->addrs[w - 1] == a && (end && !(t->rows[w - 1].file & SP_DLINE_END)))
			continue;
		if (w && t->addrs[w - 1] == a)
			w--;
		t->addrs[w] = a;
		t->rows[w++] = (struct sp_dline_row){
			.line = (uint32_t)line,
			.col = col > 0xffff ? 0xffff : (uint16_t)(col < 0 ? 0 : col),
			.file = (uint16_t)(fi | (end ? SP_DLINE_END : 0)) };
	}
	t->n_rows = w;
	return sp_dline__index(t);
}

static struct unit *unit_load(struct dsrc *s, uint32_t ci)
{
	struct cu *c = &s->cus[ci];
	struct unit *u = calloc(1, sizeof(*u));
	Dwarf_Attribute at;
	Dwarf_Word stmt;
	int err = -EINVAL;

	if (!u)
		return NULL;
	u->cu = ci;
	if (dwarf_attr(&c->die, DW_AT_comp_dir, &at))
		u->comp_dir = dwarf_formstring(&at);
	if (dwarf_attr(&c->die, DW_AT_stmt_list, &at) && !dwarf_formudata(&at, &stmt)) {
		err = sp_dline__decode(&s->secs, stmt, c->addr_size, &u->lines);
		if (err && err != -ENOMEM) {
			err = lines_from_libdw(&c->die, &u->lines);
			if (!err)
				ADD(s->ctr->lines_libdw, 1);
		}
		if (err == -ENOMEM)
			goto fail;
	}
	/* a unit without lines can still name its functions */
	ADD(s->ctr->lines_clamped, u->lines.clamped);
	err = scan_fns(u, &c->die, 0, false, false);
	if (err == -ENOMEM)
		goto fail;
	if (err) {
		c->bad = true;
		ADD(s->ctr->units_bad, 1);
		goto fail;
	}
	if (u->n_roots)
		qsort(u->roots, u->n_roots, sizeof(*u->roots), root_cmp);
	c->u = u;
	s->n_units++;
	u->stamp = ++s->clock;
	ADD(s->ctr->units_decoded, 1);
	account(s, u, sizeof(*u) + sp_dline__bytes(&u->lines) + fns_bytes(u));
	return u;
fail:
	unit_free(u);
	return NULL;
}

/* An address in no listed function: walk the unit once for functions
 * nested inside functions. */
static void scan_nested(struct dsrc *s, struct unit *u)
{
	size_t before = fns_bytes(u);

	u->nested_scanned = true;
	ADD(s->ctr->nested_scans, 1);
	if (scan_fns(u, &s->cus[u->cu].die, 0, true, false) == 0 && u->n_roots)
		qsort(u->roots, u->n_roots, sizeof(*u->roots), root_cmp);
	account(s, u, fns_bytes(u) - before);
}

/* ------------------------------------------------------------ lookup */

static int dwarf_lookup(void *src, uint64_t a, struct sp_frames *out)
{
	struct dsrc *s = src;
	const struct sp_dline_row *row = NULL;
	const struct root *rt;
	const char *lfile = NULL;
	int64_t lline = 0, lcol = 0;
	uint32_t chain[CHAIN_MAX], n_chain = 0;
	struct unit *u;
	int32_t ci;

	memset(out, 0, offsetof(struct sp_frames, f));
	ci = find_cu(s, a);
	if (ci < 0 || s->cus[ci].bad)
		return -ENOENT;
	u = s->cus[ci].u;
	if (!u && !(u = unit_load(s, (uint32_t)ci)))
		return s->cus[ci].bad ? -ENOENT : -ENOMEM;
	u->stamp = ++s->clock;
	row = sp_dline__find(&u->lines, a);
	if (row) {
		lfile = unit_path(s, u, row->file & ~SP_DLINE_END);
		lline = row->line;
		lcol = row->col;
	}
	rt = find_root(u, a);
	if (!rt && !u->nested_scanned) {
		scan_nested(s, u);
		rt = find_root(u, a);
	}
	if (rt) {
		struct fn *f = &u->fns[rt->fn];

		if (!f->indexed && index_fn(s, u, f) == -ENOMEM) {
			f->indexed = false;
			return -ENOMEM;
		}
		if (!f->failed)
			for (int32_t sc = (int32_t)find_scope(f, a); sc >= 0 && n_chain < CHAIN_MAX;
			     sc = f->scopes[sc].parent)
				chain[n_chain++] = (uint32_t)sc;
	}
	if (n_chain) {
		const char *file = lfile;
		int64_t line = lline, col = lcol;
		struct fn *f = &u->fns[rt->fn];

		for (uint32_t i = 0; i < n_chain; i++) {
			const struct scope *sc = &f->scopes[chain[i]];
			struct sp_frame *fr;

			/* too deep: keep the innermost frames and the real
			 * function, drop the middle */
			if (out->n == SP_RES_MAX_FRAMES - 1 && i != n_chain - 1) {
				if (i == SP_RES_MAX_FRAMES - 1)
					ADD(s->ctr->inline_truncated, 1);
			} else {
				fr = &out->f[out->n++];
				fr->function = sc->name;
				fr->linkage = sc->linkage;
				fr->file = file;
				fr->line = line;
				fr->column = col;
				fr->decl_line = sc->decl_line;
			}
			file = unit_path(s, u, sc->call_file);
			line = sc->call_line;
			col = sc->call_col;
		}
		out->source = SP_RES_DWARF;
		return 0;
	}
	if (!lfile)
		return -ENOENT;
	/* the line without a function: the module names it */
	out->n = 1;
	out->source = SP_RES_DWARF;
	out->f[0] = (struct sp_frame){ .file = lfile, .line = lline, .column = lcol };
	return 0;
}

static size_t dwarf_bytes(const void *src)
{
	return ((const struct dsrc *)src)->bytes;
}

static void dwarf_free(void *src)
{
	struct dsrc *s = src;

	if (!s)
		return;
	for (uint32_t i = 0; i < s->n_cus; i++)
		if (s->cus[i].u)
			evict(s, s->cus[i].u);
	free(s->cus);
	free(s->ranges);
	free(s);
}

const struct sp_linesrc_ops sp_dwarf_linesrc = {
	.name = "dwarf",
	.source = SP_RES_DWARF,
	.symtab_names = true,
	.lookup = dwarf_lookup,
	.bytes = dwarf_bytes,
	.free = dwarf_free,
};

int sp_dwarf_src__open(const struct sp_dwarf_src_opts *o, void **out)
{
	struct dsrc *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->dw = o->dw;
	s->elf = o->elf;
	s->pool = o->pool;
	s->budget = o->budget;
	s->ctr = o->ctr;
	s->no_demangle = o->no_demangle;
	s->secs.line = section(o->elf, ".debug_line", &s->secs.line_len);
	s->secs.line_str = section(o->elf, ".debug_line_str", &s->secs.line_str_len);
	s->secs.str = section(o->elf, ".debug_str", &s->secs.str_len);
	s->dies.info = section(o->elf, ".debug_info", &s->dies.info_len);
	s->dies.abbrev = section(o->elf, ".debug_abbrev", &s->dies.abbrev_len);
	s->dies.addr = section(o->elf, ".debug_addr", &s->dies.addr_len);
	s->dies.rnglists = section(o->elf, ".debug_rnglists", &s->dies.rnglists_len);
	s->dies.ranges = section(o->elf, ".debug_ranges", &s->dies.ranges_len);
	err = build_units(s);
	if (err) {
		dwarf_free(s);
		return err;
	}
	*out = s;
	return 0;
}

uint32_t sp_dwarf_src__units(const void *src)
{
	return src ? ((const struct dsrc *)src)->n_cus : 0;
}
