/* SPDX-License-Identifier: MIT */
/*
 * symstore.h - what only the profiled host has, as files a symbolizer
 * elsewhere reads: the kernel symbol snapshot, the vDSO image, JIT symbol
 * pieces.  One directory layout for all of it, written by `spanprof
 * record` (FILE.syms/), by `spanprof agent --output-dir` (DIR/syms/) and
 * by `spanprof-symbolizer serve` (--store-dir, from uploads), and read by
 * the symbolizer:
 *
 *   DIR/<kernel build id>.kallsyms.gz   kernel snapshot (the --kallsyms-dir
 *                                       layout, base/kallsyms_format.h)
 *   DIR/.build-id/ab/cdef...            an ELF image by GNU build id (the
 *                                       --debug-dir layout): the vDSO
 *   DIR/jit/<piece id>.piece            a JIT symbol piece (base/jit_piece.h)
 *
 * Every name is formed from a key validated as lower-case hex first, so
 * no key reaches the file system as a path.  Files are written to a
 * temporary name in the same directory and renamed (a reader never sees
 * half a file), mode 0644 (the symbolizer reads them as another user);
 * directories are made 0755 as needed.
 *
 * The upload (agent -> `spanprof-symbolizer serve`), one blob per POST to
 * SP_SYMSTORE_UPLOAD_PATH, Content-Type application/octet-stream, gzip
 * Content-Encoding allowed:
 *
 *   offset  size  field
 *   0       8     magic "SPSYMUP1"
 *   8       1     kind (enum sp_symstore_kind)
 *   9       1     key length K in bytes, 1..64
 *   10      6     reserved, 0
 *   16      K     key: the kernel's or the ELF image's GNU build id, or the
 *                 piece id; the receiver checks it against the payload
 *   16 + K  rest  payload: the file as it is stored
 */
#ifndef SPANPROF_BASE_SYMSTORE_H
#define SPANPROF_BASE_SYMSTORE_H

#include <stddef.h>
#include <stdint.h>

#define SP_SYMSTORE_UPLOAD_PATH "/spanprof/v1/symbols"
#define SP_SYMSTORE_UPLOAD_MAGIC "SPSYMUP1"
#define SP_SYMSTORE_UPLOAD_HDR 16
#define SP_SYMSTORE_KEY_MAX 64
#define SP_SYMSTORE_JIT_DIR "jit"
#define SP_SYMSTORE_PIECE_SUFFIX ".piece"
#define SP_SYMS_DIR_SUFFIX ".syms"	/* record: FILE.syms/ next to FILE */

enum sp_symstore_kind {
	SP_SYMSTORE_KALLSYMS = 1,	/* gzip'd kernel symbol snapshot */
	SP_SYMSTORE_ELF = 2,		/* an ELF image (the vDSO) */
	SP_SYMSTORE_JIT = 3,		/* a JIT symbol piece */
	SP_SYMSTORE_KIND_MAX = 3,
};

/* The path of (kind, key_hex) under dir.  0, -EINVAL (bad kind or key),
 * -ENAMETOOLONG. */
int sp_symstore__path(const char *dir, int kind, const char *key_hex, char *buf, size_t size);

/* Writes data as (kind, key_hex) under dir, atomically.  0 written,
 * -EEXIST already there (left alone: the name is the content), or a
 * negative errno. */
int sp_symstore__write(const char *dir, int kind, const char *key_hex, const void *data,
		       size_t len);

/* The upload body for (kind, key) + payload, malloc'd in *out. */
int sp_symstore__upload_encode(int kind, const uint8_t *key, size_t key_len, const void *payload,
			       size_t len, uint8_t **out, size_t *out_len);
/* Splits an upload body; pointers into buf.  0 or -EINVAL. */
int sp_symstore__upload_decode(const uint8_t *buf, size_t len, int *kind, const uint8_t **key,
			       size_t *key_len, const uint8_t **payload, size_t *payload_len);

#endif /* SPANPROF_BASE_SYMSTORE_H */
