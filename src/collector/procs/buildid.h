/* SPDX-License-Identifier: MIT */
/*
 * buildid.h - build ids of ELF files and the kernel: the GNU build id
 * (NT_GNU_BUILD_ID), or, for a Go binary without one (Go's own linker
 * before 1.24 writes none), its Go build id (note "Go", type 4, the string
 * `go tool buildid` prints).  A GNU id always wins when both are there.
 *
 * Reading is bounded: at most SP_BUILD_ID_MAX bytes of GNU id and
 * SP_GO_BUILD_ID_MAX characters of Go id, notes walked with every length
 * checked against the buffer.  Malformed or truncated files give -EINVAL
 * or -ENOENT (no build id note), never a crash.  A Go id that is not one
 * by sp_go_buildid__valid_n (base/go_buildid.h) is ignored (as if absent):
 * it becomes a profile string and a lookup key.
 */
#ifndef SPANPROF_BUILDID_H
#define SPANPROF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#include "base/go_buildid.h"	/* SP_GO_BUILD_ID_MAX, what a Go id is */

#define SP_BUILD_ID_MAX 64	/* GNU ids are 20 (sha1) or 16 (md5/uuid) */

enum sp_build_id_kind {
	SP_BUILD_ID_GNU = 0,	/* id holds len raw bytes */
	SP_BUILD_ID_GO = 1,	/* id holds len characters (no NUL) */
};

struct sp_build_id {
	uint8_t len;		/* 0 = none */
	uint8_t kind;		/* enum sp_build_id_kind */
	uint8_t id[SP_GO_BUILD_ID_MAX];
};

/* Walks an ELF note area (the contents of a PT_NOTE segment, a SHT_NOTE
 * section or /sys/kernel/notes) for a GNU build id, else a Go one.
 * Returns 0, -ENOENT if none, -EINVAL if a note header is malformed before
 * a GNU id is found (a Go id found before the bad header is kept). */
int sp_buildid__from_notes(const uint8_t *buf, size_t len, struct sp_build_id *out);

/* A Go build id note's desc as an id (out->len 0 when it is not one). */
void sp_buildid__go_from_desc(const uint8_t *desc, size_t n, struct sp_build_id *out);

/* Reads the build id of an open ELF file with libelf (PT_NOTE segments,
 * then SHT_NOTE sections).  The fd is not closed.  Returns 0, -ENOENT (no
 * id), -EINVAL (not ELF / malformed). */
int sp_buildid__from_fd(int fd, struct sp_build_id *out);
int sp_buildid__from_path(const char *path, struct sp_build_id *out);

/* The running kernel's build id from /sys/kernel/notes. */
int sp_buildid__kernel(struct sp_build_id *out);

/* A GNU id as lower-case hex, NUL-terminated; out needs
 * SP_BUILD_ID_TEXT_MAX bytes.  A Go id is copied as it is (text). */
#define SP_BUILD_ID_TEXT_MAX (2 * SP_BUILD_ID_MAX + 1)
_Static_assert(SP_GO_BUILD_ID_MAX < SP_BUILD_ID_TEXT_MAX, "a Go id fits the text buffer");
void sp_buildid__hex(const struct sp_build_id *b, char *out);

#endif
