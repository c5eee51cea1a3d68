/* SPDX-License-Identifier: MIT */
/*
 * small_file.h - one read of a small kernel-made file (/proc/PID/status,
 * /proc/PID/stat, sysfs attributes): procfs and sysfs return such a file
 * whole to one read of its size.
 */
#ifndef SPANPROF_BASE_SMALL_FILE_H
#define SPANPROF_BASE_SMALL_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* At most size - 1 bytes of path into buf, NUL-terminated (size >= 1).
 * The bytes read, or a negative errno (buf untouched then).  No retry on a
 * short read: a longer file is cut, which callers bound by size. */
ssize_t sp_read_small(const char *path, char *buf, size_t size);

#endif
