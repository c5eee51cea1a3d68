/* SPDX-License-Identifier: MIT */
/*
 * host_frames.h - frames whose names only the profiled host could give:
 * kernel frames (from kallsyms snapshots, or vmlinux and module debug info
 * found by build id) and JIT frames (from perf-map pieces).  symbolize.c asks here
 * first for every location; what is not a host frame goes on to the ELF
 * resolver.
 *
 * Mappings (docs/formats.md "Kernel frames", "JIT frames"):
 *   "[kernel.kallsyms]"  build id = the kernel's.  With memory_start =
 *       the link-time _text (the collector's kernel layout), the location
 *       is memory_start + offset from _text: looked up in vmlinux (build
 *       id, debug dirs or debuginfod) at vmlinux's own _text + offset, with
 *       lines and inlined frames, else in the kernel's snapshot at the
 *       snapshot's _text + offset - so any boot's snapshot of that build
 *       names it.  With memory_start at or below SP_KERNEL_LEGACY_START
 *       (profiles written before the layout, or by a collector without
 *       one: runtime addresses), the snapshot is asked for the address as
 *       is.
 *   "[module:NAME]"      build id = the module's; location = offset in its
 *       .text: looked up in the module's debug info found by that build id
 *       (the .ko, ET_REL, laid out and relocated by libdwfl: relobj.h) at
 *       its .text + offset, with lines and inlined frames, the real
 *       function named "fn [NAME]"; else at text + offset in a snapshot
 *       listing a module with that build id ("# module" line), in NAME's
 *       symbols.  Why the debug info did not name it is counted
 *       (module_dwarf_*).
 *   "[kernel.boot]"      build id field = the boot id; runtime address,
 *       looked up in a snapshot of that boot only.
 *   "[perf-map]", "[jitdump]"  build id field = a JIT chain's head piece;
 *       absolute address, looked up in that chain's perf-map text (a
 *       jitdump's code loads arrive converted to it by the collector).
 *
 * Kernel names are "symbol" or "symbol [module]" (system_name = the bare
 * symbol), one line, no file (snapshots) - or the DWARF chain (vmlinux, a
 * module's .ko).
 * JIT names are the perf map's text as it is ("JS:*fib /srv/app.js:1:13"),
 * with the file:line of the jitdump DEBUG_INFO row covering the address
 * when its code load had one (perf_map.h line rows).
 *
 * sp_host_frames__location: 0 resolved, 1 unresolved (counted by reason in
 * st), SP_HOST_FRAMES_NOT_MINE (not a host frame: nothing counted), or a
 * negative errno (-ENOMEM).  The cache remembers per-mapping lookups for
 * one profile (one thread).
 */
#ifndef SPANPROF_SYMBOLIZER_HOST_FRAMES_H
#define SPANPROF_SYMBOLIZER_HOST_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/kallsyms_format.h"
#include "profile/profile.h"
#include "symbolize.h"

#define SP_HOST_FRAMES_NOT_MINE 2
#define SP_KERNEL_LEGACY_START SP_KALLSYMS_LEGACY_START

struct sp_host_frames_cache {
	int32_t mapping;		/* -1: nothing cached */
	const struct sp_ksyms *k;
	const char *mod_name;		/* module mapping: its snapshot entry */
	uint64_t mod_text, mod_size;
	int vm_state;			/* 0 not tried, 1 no vmlinux, 2 vmlinux */
	uint64_t vm_text;
	enum {
		KO_UNKNOWN = 0,		/* module mapping: not looked up yet */
		KO_FILE,		/* its debug file is open */
		KO_MISSING,		/* none of its build id */
		KO_MISMATCH,		/* only files of another build id */
		KO_NO_LINE,		/* a file the resolver cannot read */
	} ko_miss;
};

void sp_host_frames__cache_init(struct sp_host_frames_cache *hc);
void sp_host_frames__cache_release(struct sp_host_frames_cache *hc);
int sp_host_frames__location(const struct sp_symbolize_sources *src, struct sp_profile *p,
			     struct sp_location *loc, struct sp_host_frames_cache *hc,
			     struct sp_symbolize_stats *st);

#endif /* SPANPROF_SYMBOLIZER_HOST_FRAMES_H */
