/* SPDX-License-Identifier: MIT */
/*
 * buildid.h - GNU build ids (NT_GNU_BUILD_ID) of ELF files and the kernel,
 * the one note parser of both binaries: the collector reads them from the
 * files processes map, the symbolizer from the files it is given or finds
 * (and validates the hex ids profiles carry before any path is formed).
 *
 * Reading is bounded: at most SP_BUILD_ID_MAX bytes of id, notes walked with
 * every length checked against the buffer.  Malformed or truncated files
 * give -EINVAL or -ENOENT (no build id note), never a crash.  Files named
 * by a path are opened with sp_pin__open (base/pin.h): a FIFO or device
 * there is -EINVAL, never opened.
 */
#ifndef SPANPROF_BUILDID_H
#define SPANPROF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define SP_BUILD_ID_MAX 64	/* GNU ids are 20 (sha1) or 16 (md5/uuid) */
#define SP_BUILDID_MAX_HEX (2 * SP_BUILD_ID_MAX)	/* as hex, without the NUL */

struct sp_build_id {
	uint8_t len;		/* 0 = none */
	uint8_t id[SP_BUILD_ID_MAX];
};

/* Walks an ELF note area (the contents of a PT_NOTE segment, a SHT_NOTE
 * section or /sys/kernel/notes) for a GNU build id.  Returns 0, -ENOENT if
 * none, -EINVAL if a note header is malformed before one is found. */
int sp_buildid__from_notes(const uint8_t *buf, size_t len, struct sp_build_id *out);

/* Reads the build id of an open ELF file with libelf (PT_NOTE segments,
 * then SHT_NOTE sections).  The fd is not closed.  Returns 0, -ENOENT (no
 * id), -EINVAL (not ELF / malformed). */
int sp_buildid__from_fd(int fd, struct sp_build_id *out);
int sp_buildid__from_path(const char *path, struct sp_build_id *out);

/* The running kernel's build id from /sys/kernel/notes. */
int sp_buildid__kernel(struct sp_build_id *out);

/* Lower-case hex, NUL-terminated; out needs 2 * SP_BUILD_ID_MAX + 1 bytes. */
void sp_buildid__hex(const struct sp_build_id *b, char *out);

/* The build id of the ELF file at path as lower-case hex in out (at least
 * SP_BUILDID_MAX_HEX + 1 bytes, else -EINVAL).  Results as
 * sp_buildid__from_path. */
int sp_buildid__read_file(const char *path, char *out, size_t out_size);

/* 0 when hex is a build id as profiles carry it: lower-case hex of even
 * length 2..SP_BUILDID_MAX_HEX; else -EINVAL.  Checked before any path is
 * formed from one, so "../../etc" or "AB" never reach the file system. */
int sp_buildid__validate(const char *hex);

#endif
