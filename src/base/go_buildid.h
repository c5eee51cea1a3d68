/* SPDX-License-Identifier: MIT */
/*
 * go_buildid.h - Go build ids: the note Go's linker writes into every
 * executable (section .note.go.buildid, in the first page):
 *
 *   offset size field
 *   0      4    n_namesz = 4
 *   4      4    n_descsz = length of the id
 *   8      4    n_type   = 4 (ELF_NOTE_GOBUILDID_TAG, cmd/link elf.go)
 *   12     4    name     "Go\0\0"
 *   16     n    desc     the id as `go tool buildid` prints it, e.g. 83
 *                        characters "actionID/actionID/contentID/contentID"
 *                        (base64url parts), no NUL
 *
 * Go before 1.24 writes no GNU build id unless asked (-B), so this is the
 * key of such a binary: profiles carry it as their mapping's build id
 * (OTLP attribute process.executable.build_id.go) and the symbolizer
 * finds the file by it.  An id is accepted only as go build writes one:
 * 3..SP_GO_BUILD_ID_MAX characters of base64 (A-Z a-z 0-9 _ - + =) in
 * parts joined by '/' (at least two parts, none empty at either end); so
 * it never reads as a GNU id (no '/' there) or a path ("." is refused).
 * A custom `-ldflags=-buildid=X` without a '/' is no id here.  It is a
 * lookup key, never a path component.
 */
#ifndef SPANPROF_BASE_GO_BUILDID_H
#define SPANPROF_BASE_GO_BUILDID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#define SP_GO_BUILD_ID_MAX 128
#define SP_GO_NOTE_TYPE 4

/* True when s (NUL-terminated) is a Go build id as defined above. */
bool sp_go_buildid__valid(const char *s);
/* The same for desc[0..n) (a note's desc, not NUL-terminated). */
bool sp_go_buildid__valid_n(const uint8_t *desc, size_t n);

/* The Go build id of an ELF image (PT_NOTE segments, then SHT_NOTE
 * sections, every length checked) into out[SP_GO_BUILD_ID_MAX + 1].
 * 0, -ENOENT (none, or not a valid id), -EINVAL (not ELF). */
int sp_go_buildid__read_elf(Elf *elf, char *out);

#endif
