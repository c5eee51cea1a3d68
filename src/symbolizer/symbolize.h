/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - fill a profile's Function and Line tables from a resolver.
 *
 * Contract:
 *   - For every location (index >= 1) that has no lines yet, a user-space
 *     frame with a mapping that carries a build id is resolved at the file
 *     offset address - memory_start + file_offset, and its lines[] are
 *     filled, inlined callees first, the real function last (at most
 *     SP_MAX_INLINE).  Functions are added deduplicated (name = display
 *     name, system_name = linkage name, filename, start_line).
 *   - A mapping gets has_functions / has_filenames / has_line_numbers /
 *     has_inline_frames once any of its locations resolved that way
 *     (has_inline_frames: DWARF was used, so inlined frames are expanded).
 *   - Frames that cannot be resolved keep their address and mapping and are
 *     counted by reason; nothing is dropped.
 *   - Kernel frames (frame_kind SP_FRAME_KERNEL) and JIT frames (a
 *     "[perf-map]" mapping) are resolved by host_frames.h: kernel image,
 *     module and boot mappings from the kallsyms snapshots (and vmlinux or
 *     the module's debug info by build id, with lines and inlined frames,
 *     when the resolver finds one), JIT frames from the perf-map pieces.
 *     Counted in resolved_kernel / unresolved_kernel_*, resolved_*_dwarf,
 *     module_dwarf_* and resolved_jit / unresolved_jit_*.
 *   - Only the location's lines, the mappings' flags, and the string and
 *     function tables change.  Returns 0 or a negative errno (-ENOMEM).
 */
#ifndef SPANPROF_SYMBOLIZER_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZER_SYMBOLIZE_H

#include <stdint.h>

#include "profile/profile.h"
#include "jit_syms.h"
#include "kallsyms.h"
#include "resolve.h"

struct sp_symbolize_stats {
	uint64_t locations;		/* examined (index >= 1) */
	uint64_t already;		/* had lines already: left alone */
	uint64_t resolved;
	uint64_t resolved_dwarf;
	uint64_t resolved_symtab;
	uint64_t resolved_gopclntab;	/* Go frames from .gopclntab */
	uint64_t resolved_kernel;	/* from a kallsyms snapshot */
	uint64_t unresolved;		/* sum of the reasons below */
	uint64_t unresolved_no_mapping;
	uint64_t unresolved_no_build_id;
	uint64_t unresolved_bad_build_id;
	uint64_t unresolved_kernel;	/* sum of the four below */
	uint64_t unresolved_kernel_no_build_id;
	uint64_t unresolved_kernel_no_snapshot;
	uint64_t unresolved_kernel_mismatch;	/* build id mismatch */
	uint64_t unresolved_kernel_not_found;
	uint64_t resolved_kernel_dwarf;	/* ... of them from vmlinux debug info */
	uint64_t resolved_module_dwarf;	/* ... of them from a module's debug info */
	/* module frames not named from the module's debug info (then from a
	 * snapshot, or unresolved), by why: */
	uint64_t module_dwarf_missing;	/* no file of that build id found */
	uint64_t module_dwarf_mismatch;	/* only files of another build id */
	uint64_t module_dwarf_no_line;	/* a file, but no DWARF line for the
					 * offset (no DWARF, refused by libdwfl,
					 * or the offset is past its .text) */
	uint64_t resolved_jit;		/* from a JIT perf-map snapshot */
	uint64_t resolved_jit_lines;	/* ... with a file:line (jitdump DEBUG_INFO) */
	uint64_t unresolved_jit;	/* sum of the two below */
	uint64_t unresolved_jit_no_snapshot;	/* chain missing or broken */
	uint64_t unresolved_jit_not_found;	/* address in no entry */
	uint64_t unresolved_out_of_range;	/* address outside the mapping */
	uint64_t unresolved_not_found;	/* no debug info or no symbol */
	uint64_t unresolved_other;	/* -ENOSPC etc. */
	uint64_t inline_frames;		/* lines beyond the first */
};

/* Where names come from; any may be NULL (its frames stay unresolved). */
struct sp_symbolize_sources {
	struct sp_resolver *resolver;	/* ELF/DWARF by build id (and vmlinux) */
	struct sp_ksyms_set *ksyms;	/* kernel symbol snapshots */
	struct sp_jit_syms *jit;	/* JIT perf-map pieces */
};

int sp_symbolize__run(const struct sp_symbolize_sources *src, struct sp_profile *p,
		      struct sp_symbolize_stats *st);
int sp_symbolize__profile(struct sp_resolver *r, struct sp_profile *p,
			  struct sp_symbolize_stats *st);
int sp_symbolize__profile_ks(struct sp_resolver *r, struct sp_ksyms_set *ks,
			     struct sp_profile *p,
			     struct sp_symbolize_stats *st);

/* loc's lines from a resolver's frames (inlined first), functions added
 * deduplicated; for host_frames.c.  0 or -ENOMEM. */
int sp_symbolize__fill_location(struct sp_profile *p, struct sp_location *loc,
				const struct sp_frames *fr);

#endif /* SPANPROF_SYMBOLIZER_SYMBOLIZE_H */
