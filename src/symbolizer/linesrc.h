/* SPDX-License-Identifier: MIT */
/*
 * linesrc.h - what a module of the resolver asks a source of function and
 * line answers: the plug-in point between resolve.c and the readers of one
 * kind of debug information.
 *
 * A module (one build id, resolve.c) holds the sources its file has, in the
 * order they are asked: DWARF (dwarf_src.c), then, for a Go binary
 * without DWARF units, its .gopclntab (gopcln_src.c); another table can
 * be added as another struct sp_linesrc_ops without touching the others.
 * The module falls back to its ELF symbol table when no source answers.
 *
 * Contract of a source:
 *   - lookup(src, vaddr, out): 0 with out->n >= 1 frames, inlined callees
 *     first, the out-of-line function last; out->f[n - 1].function NULL
 *     when the source knows the line but not the function (the module names
 *     it from the symbol table).  -ENOENT when the address is not the
 *     source's, -ENOMEM.  Strings in out must stay valid until free() of
 *     the source (answers are cached after the source has forgotten how it
 *     found them).
 *   - Called under the module's lock: a source need not be thread safe,
 *     and two modules' sources run in parallel.
 *   - bytes(src): heap bytes of decoded state the source could give back
 *     (what the resolver's decoded-unit budget bounds), for statistics.
 */
#ifndef SPANPROF_SYMBOLIZER_LINESRC_H
#define SPANPROF_SYMBOLIZER_LINESRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolve.h"

struct sp_linesrc_ops {
	const char *name;		/* "dwarf", "gopclntab" */
	uint8_t source;			/* enum sp_res_source of its answers */
	bool symtab_names;		/* the outermost function takes the name of
					 * the ELF symbol covering the address
					 * (clone suffixes, as llvm-symbolizer) */
	int (*lookup)(void *src, uint64_t vaddr, struct sp_frames *out);
	size_t (*bytes)(const void *src);
	void (*free)(void *src);
};

/* One source of one module. */
struct sp_linesrc {
	const struct sp_linesrc_ops *ops;
	void *src;
};

#endif /* SPANPROF_SYMBOLIZER_LINESRC_H */
