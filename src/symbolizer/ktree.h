/* SPDX-License-Identifier: MIT */
/*
 * ktree.h - kernel debug files where distributions install them, by name:
 * the index the finder (debuginfo.c) asks when a build id has no
 * DIR/.build-id/ab/cdef... entry.
 *
 * Why: Debian's linux-image-*-dbg links only the vDSO into .build-id; its
 * vmlinux and every module's .ko sit at
 *   DIR/lib/modules/RELEASE/vmlinux, DIR/boot/vmlinux-RELEASE,
 *   DIR/lib/modules/RELEASE/kernel/.../NAME.ko
 * (Fedora's kernel-debuginfo: .../NAME.ko.debug, DIR/lib/modules/RELEASE/
 * vmlinux).  A profile names a kernel frame's file only as its mapping:
 * "[kernel.kallsyms]" or "[module:NAME]", with the build id; which release
 * is not known (the profile may come from another host), so every
 * release's tree is indexed and each candidate's build id decides.
 *
 * Contract:
 *   - sp_ktree__hint_name(hint, buf, len): the name a mapping hint asks
 *     for - "vmlinux" for "[kernel.kallsyms]", NAME for "[module:NAME]"
 *     and "[module-section:NAME:SECTION]"
 *     (with '-' as '_', as the kernel spells module names) - true; false
 *     for any other hint (a path: the finder uses it as one).
 *   - sp_ktree__build(dir, &t): walks every DIR/lib/modules/RELEASE/ (at
 *     most SP_KTREE_DEPTH directories deep, symbolic links not followed)
 *     and DIR/boot/vmlinux-RELEASE, keeping regular files named vmlinux, NAME.ko or
 *     NAME.ko.debug; at most SP_KTREE_MAX_FILES (the rest are counted in
 *     sp_ktree__skipped).  A directory that is not there gives an empty
 *     index.  0 or -ENOMEM.
 *   - sp_ktree__next(t, name, &it): the paths indexed under name, one per
 *     call (it starts at 0), then NULL.  Strings belong to t.
 *   - An index is read-only once built: thread safe to read; the finder
 *     builds each directory's once, under its lock.
 */
#ifndef SPANPROF_SYMBOLIZER_KTREE_H
#define SPANPROF_SYMBOLIZER_KTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_KTREE_MAX_FILES 65536
#define SP_KTREE_DEPTH 8
#define SP_KTREE_NAME_MAX 64

struct sp_ktree;

bool sp_ktree__hint_name(const char *hint, char *buf, size_t len);
int sp_ktree__build(const char *dir, struct sp_ktree **out);
void sp_ktree__free(struct sp_ktree *t);	/* NULL-safe */
const char *sp_ktree__next(const struct sp_ktree *t, const char *name, size_t *it);
uint64_t sp_ktree__skipped(const struct sp_ktree *t);

#endif /* SPANPROF_SYMBOLIZER_KTREE_H */
