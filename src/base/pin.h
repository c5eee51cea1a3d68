/* SPDX-License-Identifier: MIT */
/*
 * pin.h - opening files whose names come from untrusted input.
 *
 * Who needs it: the process table and TLS resolution open the files behind
 * another process's mappings (the names in /proc/PID/maps are that
 * process's to choose, inside its own mount namespace); the symbolizer
 * opens files named by a profile.  A FIFO at such a name would block an
 * O_RDONLY open for ever, a device would run its driver's open, and a file
 * replaced since it was mapped would give another file's build id.
 *
 * How: the name is first *pinned* with O_PATH (no open side effects, never
 * blocks), the pinned inode is checked, and only then is the very same
 * inode reopened for reading through /proc/self/fd/N.
 *
 * Contract (the same for every caller):
 *   - Checked at pin time, in this order: the name resolves (symlinks are
 *     followed; with a root they are resolved inside it, see below); it is
 *     a regular file; when the caller gives an expected inode, st_ino is
 *     that inode.
 *   - Checked at reopen time: the reopened descriptor is a regular file
 *     with the pinned file's st_dev and st_ino (so a /proc that is not
 *     this process's, or the no-/proc fallback racing a rename, cannot hand
 *     back another file).
 *   - The device is compared only between the pinned and the reopened
 *     descriptor, never against a /proc/PID/maps line: maps prints the
 *     superblock's device, which is not what stat(2) reports on btrfs
 *     subvolumes or through overlayfs (containers), so such a check would
 *     refuse good files.  Inode numbers do agree there.
 *   - Errors (negative errno, nothing left open):
 *       -ENOENT  nothing at that name (also: a mapping of a deleted file or
 *                of no file, when only its name is left to try);
 *       -EINVAL  something there that is not a regular file (FIFO, device,
 *                directory, socket): refused before any open with side
 *                effects;
 *       -ESTALE  a regular file, but not the expected one (another inode:
 *                replaced since it was mapped), or the reopened descriptor
 *                is not the pinned file;
 *       -ELOOP   a /proc magic link on the way (RESOLVE_NO_MAGICLINKS);
 *       -ENAMETOOLONG, -EACCES, -EPERM, ... from the kernel, as they are.
 *   - Reopened descriptors are O_RDONLY | O_CLOEXEC | O_NOCTTY |
 *     O_NONBLOCK; pinned ones O_PATH | O_CLOEXEC.  The caller owns and
 *     closes every descriptor returned.  No allocation; thread safe.
 */
#ifndef SPANPROF_BASE_PIN_H
#define SPANPROF_BASE_PIN_H

#include <stdint.h>
#include <sys/stat.h>

#include "base/maps.h"

/* Pins path.  rootfd < 0: path as given (relative to the working
 * directory, symlinks followed).  rootfd >= 0: path resolved inside rootfd
 * as if it were "/" (RESOLVE_IN_ROOT: absolute symlinks and ".." stay in
 * it) with magic links refused; a leading '/' is allowed.  want_ino 0 =
 * any inode.  Returns an O_PATH fd and fills *st, or a negative errno. */
int sp_pin__path(int rootfd, const char *path, uint64_t want_ino, struct stat *st);

/* Reopens a pinned file (*pinned: what sp_pin__path filled) for reading.
 * Without /proc/self/fd, path (may be NULL: then -ENOENT) is opened again,
 * non-blocking, and accepted only when it is the pinned inode.  The pinned
 * fd stays open (the caller's).  Returns the new fd or a negative errno. */
int sp_pin__reopen(int pinned_fd, const struct stat *pinned, const char *path);

/* Pins and reopens: the one call for a plain untrusted path.  Fills *st
 * when st is not NULL. */
int sp_pin__open(const char *path, struct stat *st);

/* Pins the file behind mapping e of process pid: first
 * PROC_ROOT/PID/map_files/START-END (the mapped file itself, deleted or
 * in another mount namespace; needs CAP_SYS_ADMIN), else e's path inside
 * PROC_ROOT/PID/root, unless the maps line says the file was deleted.
 * Both ways the file must be regular with the maps line's inode (e->inode;
 * 0 = not checked).  Returns an O_PATH fd and fills *st, or a negative
 * errno (the last way tried decides). */
int sp_pin__mapping(const char *proc_root, uint32_t pid, const struct sp_map_entry *e,
		    struct stat *st);

#endif /* SPANPROF_BASE_PIN_H */
