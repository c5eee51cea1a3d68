/* SPDX-License-Identifier: MIT */
/*
 * fileio.h - bounded reads of whole inputs from outside (profiles, /proc
 * files, snapshots).  One loop for every reader, so the bound and the
 * EINTR/short-read handling are written once.
 */
#ifndef SPANPROF_FILEIO_H
#define SPANPROF_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Reads fd to its end into a new buffer (*out, free() it; one extra NUL
 * byte after the data, not counted).  Works on pipes and /proc files whose
 * size is not known in advance.  Returns 0, -E2BIG when there is more than
 * max_bytes, -ENOMEM, or the read errno.  fd is not closed. */
int sp_read_fd(int fd, size_t max_bytes, uint8_t **out, size_t *out_len);

/* The same for a path ("-" = standard input). */
int sp_read_path(const char *path, size_t max_bytes, uint8_t **out, size_t *out_len);

#endif
