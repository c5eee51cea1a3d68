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
 *   - Kernel frames (frame_kind SP_FRAME_KERNEL, mapping "[kernel.kallsyms]"
 *     with the kernel's build id) are resolved with the kallsyms snapshot
 *     of that build id from ks (sp_symbolize__profile_ks; ks may be NULL):
 *     the runtime address is looked up as is (the snapshot and the profile
 *     come from the same boot, KASLR included).  The location gets one
 *     line whose Function is named after the symbol, "name [module]" for
 *     module symbols (system_name = the bare symbol), no file, line 0; the
 *     mapping gets has_functions.  Unresolved kernel frames are counted in
 *     unresolved_kernel and, by reason, in unresolved_kernel_*:
 *     no_build_id (no mapping or build id), no_snapshot (no snapshot at
 *     all), mismatch (snapshots are held, none with this build id),
 *     not_found (no symbol covers the address).
 *   - Only the location's lines, the mappings' flags, and the string and
 *     function tables change.  Returns 0 or a negative errno (-ENOMEM).
 */
#ifndef SPANPROF_SYMBOLIZER_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZER_SYMBOLIZE_H

#include <stdint.h>

#include "profile/profile.h"
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
	uint64_t unresolved_out_of_range;	/* address outside the mapping */
	uint64_t unresolved_not_found;	/* no debug info or no symbol */
	uint64_t unresolved_other;	/* -ENOSPC etc. */
	uint64_t inline_frames;		/* lines beyond the first */
};

int sp_symbolize__profile(struct sp_resolver *r, struct sp_profile *p,
			  struct sp_symbolize_stats *st);
int sp_symbolize__profile_ks(struct sp_resolver *r, struct sp_ksyms_set *ks,
			     struct sp_profile *p,
			     struct sp_symbolize_stats *st);

#endif /* SPANPROF_SYMBOLIZER_SYMBOLIZE_H */
