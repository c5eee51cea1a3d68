/* SPDX-License-Identifier: MIT */
/*
 * kallsyms_want.h - which kernel addresses a profile's kernel frames are
 * looked up at, found the way the symbolizer finds them
 * (src/symbolizer/host_frames.c, docs/formats.md "Kernel frames"), so that
 * `spanprof record` writes only the kernel symbols its profile needs
 * (kallsyms.h sp_kallsyms__capture_want).
 *
 * For each location of frame kind kernel:
 *   [kernel.kallsyms], memory_start above SP_KALLSYMS_LEGACY_START: the
 *       offset from _text (location - memory_start; a location below
 *       memory_start names nothing and is left out);
 *   [kernel.kallsyms] at or below it, and [kernel.boot]: the location as
 *       a runtime address;
 *   [module:NAME]: the module of mods with the mapping's build id (as the
 *       symbolizer matches "# module" lines): text + location when the
 *       location is inside its size; that module's line is kept.  A
 *       module without a build id is never looked up, so never kept.
 *   [module-section:NAME:SECTION]: the same with that module's section
 *       SECTION (sp_kmod__section): its address + location; the module's
 *       line and its "# module-section" lines are kept.
 * Other frames are not the kernel's.  Nothing is read but the profile.
 *
 * Contract: 0 and *w filled (empty when the profile has no kernel frame:
 * sp_kallsyms_want__empty), or -ENOMEM with *w empty.  *w owns its arrays;
 * sp_kallsyms_want__release frees them (NULL-safe, idempotent).  Memory:
 * 8 bytes per kernel location and one sp_kmod per module with frames.
 */
#ifndef SPANPROF_COLLECTOR_KALLSYMS_WANT_H
#define SPANPROF_COLLECTOR_KALLSYMS_WANT_H

#include <stdbool.h>
#include <stddef.h>

#include "collector/host/kallsyms.h"
#include "collector/host/kernel_layout.h"
#include "profile/profile.h"

int sp_kallsyms_want__of_profile(const struct sp_profile *p, const struct sp_kmod *mods,
				 size_t n_mods, struct sp_kallsyms_want *w);
bool sp_kallsyms_want__empty(const struct sp_kallsyms_want *w);
void sp_kallsyms_want__release(struct sp_kallsyms_want *w);

#endif /* SPANPROF_COLLECTOR_KALLSYMS_WANT_H */
