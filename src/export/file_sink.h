/* SPDX-License-Identifier: MIT */
/*
 * file_sink.h - rotating profile files in one directory (private).
 *
 * Each batch becomes DIR/profile-<unix ns, 20 digits>.otlp.pb (".gz" when
 * the batch is gzip'd), written to DIR/.profile-<ns>.tmp and renamed, so a
 * reader never sees a partial file.  Names are strictly increasing within a
 * run and start after the newest file already there.  At most max_files
 * profile files are kept: after each write the oldest are removed (and at
 * start, files left by an earlier run count too; stale .tmp files are
 * removed).  A batch over max_file_bytes is refused (-EFBIG).  Failures
 * (ENOSPC, EIO, ...) leave no temp file behind.  Single-threaded.
 */
#ifndef SPANPROF_EXPORT_FILE_SINK_H
#define SPANPROF_EXPORT_FILE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_FILE_SINK_MAX_FILES 1000000u

struct sp_file_sink;

/* 0, or negative errno with a one-line message.  *removed = files removed
 * by the start-up rotation. */
int sp_file_sink__new(const char *dir, uint32_t max_files, size_t max_file_bytes, bool gzip,
		      struct sp_file_sink **out, uint32_t *removed, char *err, size_t err_len);
void sp_file_sink__free(struct sp_file_sink *s);	/* NULL-safe */
/* 0 or negative errno (message in err).  *removed += files rotated out. */
int sp_file_sink__write(struct sp_file_sink *s, const uint8_t *buf, size_t len,
			uint32_t *removed, char *err, size_t err_len);

#endif
