/* SPDX-License-Identifier: MIT */
/*
 * buildid.h - build ids of ELF files and the kernel, the one note parser of
 * both binaries: the collector reads them from the files processes map, the
 * symbolizer from the files it is given or finds (and validates the ids
 * profiles carry before any path is formed).
 *
 * A file's id is its GNU build id (NT_GNU_BUILD_ID), or, for a Go binary
 * without one (Go's linker writes none before 1.24 unless asked), its Go
 * build id, the string `go tool buildid` prints, from the note Go's linker
 * writes into every executable (.note.go.buildid, in the first page):
 *
 *   offset size field
 *   0      4    n_namesz = 4
 *   4      4    n_descsz = length of the id (83 from go build)
 *   8      4    n_type   = 4 (ELF_NOTE_GOBUILDID_TAG, cmd/link elf.go)
 *   12     4    name     "Go\0\0"
 *   16     n    desc     "actionID/actionID/contentID/contentID" (base64url
 *                        parts), no NUL
 *
 * A GNU id always wins when both are there (cgo binaries, Go 1.24+).
 * Profiles carry a Go id as the mapping's build id (OTLP attribute
 * process.executable.build_id.go); it is accepted only as go build writes
 * one (sp_buildid__validate_go), so it never reads as a GNU id or a path.
 *
 * Reading is bounded: at most SP_BUILD_ID_MAX bytes of GNU id and
 * SP_GO_BUILD_ID_MAX characters of Go id, notes walked with every length
 * checked against the buffer.  Malformed or truncated files give -EINVAL or
 * -ENOENT (no build id note), never a crash.  Files named by a path are
 * opened with sp_pin__open (base/pin.h): a FIFO or device there is -EINVAL,
 * never opened.
 */
#ifndef SPANPROF_BUILDID_H
#define SPANPROF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define SP_BUILD_ID_MAX 64	/* GNU ids are 20 (sha1) or 16 (md5/uuid) */
#define SP_BUILDID_MAX_HEX (2 * SP_BUILD_ID_MAX)	/* as hex, without the NUL */
#define SP_GO_BUILD_ID_MAX 128	/* Go ids: characters */
#define SP_GO_NOTE_TYPE 4

enum sp_build_id_kind {
	SP_BUILD_ID_GNU = 0,	/* id holds len raw bytes */
	SP_BUILD_ID_GO = 1,	/* id holds len characters (no NUL) */
};

struct sp_build_id {
	uint8_t len;		/* 0 = none */
	uint8_t kind;		/* enum sp_build_id_kind */
	uint8_t id[SP_GO_BUILD_ID_MAX];
};

_Static_assert(SP_GO_BUILD_ID_MAX <= SP_BUILDID_MAX_HEX, "either id fits the text buffers");

/* Walks an ELF note area (the contents of a PT_NOTE segment, a SHT_NOTE
 * section or /sys/kernel/notes) for a GNU build id, else a Go one.
 * Returns 0, -ENOENT if none, -EINVAL if a note header is malformed before
 * a GNU id is found (a Go id found before the bad header is kept). */
int sp_buildid__from_notes(const uint8_t *buf, size_t len, struct sp_build_id *out);

/* Reads the build id of an open ELF file with libelf (PT_NOTE segments,
 * then SHT_NOTE sections).  The fd is not closed.  Returns 0, -ENOENT (no
 * id), -EINVAL (not ELF / malformed). */
int sp_buildid__from_fd(int fd, struct sp_build_id *out);
int sp_buildid__from_path(const char *path, struct sp_build_id *out);

/* The running kernel's build id from /sys/kernel/notes. */
int sp_buildid__kernel(struct sp_build_id *out);

/* The id as profiles carry it, NUL-terminated: a GNU id as lower-case hex,
 * a Go id as it is; out needs SP_BUILDID_MAX_HEX + 1 bytes. */
void sp_buildid__hex(const struct sp_build_id *b, char *out);

/* The build id of the ELF file at path as sp_buildid__hex writes it, in out
 * (at least SP_BUILDID_MAX_HEX + 1 bytes, else -EINVAL).  Results as
 * sp_buildid__from_path. */
int sp_buildid__read_file(const char *path, char *out, size_t out_size);

/* 0 when hex is a build id as profiles carry it: lower-case hex of even
 * length 2..SP_BUILDID_MAX_HEX; else -EINVAL.  Checked before any path is
 * formed from one, so "../../etc" or "AB" never reach the file system. */
int sp_buildid__validate(const char *hex);

/* 0 when s is a Go build id as go build writes one: 3..SP_GO_BUILD_ID_MAX
 * characters of base64 (A-Z a-z 0-9 _ - + =) in parts joined by '/', at
 * least two, none empty at either end; else -EINVAL.  "." is refused, so
 * it is never a path; a '/' is required, so it never reads as GNU hex (a
 * custom -ldflags=-buildid=X without one is no id here).  It is a lookup
 * key, never a path component. */
int sp_buildid__validate_go(const char *s);
/* The same for desc[0..n) (a note's desc, not NUL-terminated). */
int sp_buildid__validate_go_n(const uint8_t *desc, size_t n);

#endif
