/* SPDX-License-Identifier: MIT */
/*
 * vdso.h - the vDSO image, copied as bytes for the symbolizer.
 *
 * The kernel maps one vDSO ELF image into every 64-bit process (per
 * kernel build, with its own GNU build id).  It has no file a symbolizer
 * could fetch, so the collector copies it once, from its own [vdso]
 * mapping (the same image every 64-bit process maps), and ships it like
 * the kernel snapshot (base/symstore.h: an ELF image by build id); frames
 * in a process's [vdso] then carry a "[vdso]" mapping with that build id
 * (proc_table.h) and are named from the image's symbols.  No symbol is
 * read here (design invariant 2): only the build-id note.
 *
 * sp_vdso__read: the image (at most SP_VDSO_MAX bytes, the length of the
 *   [vdso] line of /proc/self/maps) and its build id; 0, -ENOENT (no
 *   [vdso]: vdso=0 on the kernel command line), -EINVAL (no build id or
 *   not ELF), -E2BIG, -ENOMEM.  The caller frees v->image.
 */
#ifndef SPANPROF_COLLECTOR_VDSO_H
#define SPANPROF_COLLECTOR_VDSO_H

#include <stddef.h>
#include <stdint.h>

#include "base/buildid.h"

#define SP_VDSO_MAX (1u << 20)

struct sp_vdso {
	uint8_t *image;
	size_t len;
	struct sp_build_id build_id;
};

int sp_vdso__read(struct sp_vdso *v);
void sp_vdso__release(struct sp_vdso *v);	/* frees the image; NULL-safe */

#endif /* SPANPROF_COLLECTOR_VDSO_H */
