/* SPDX-License-Identifier: MIT */
/*
 * write_all.h - writes a whole buffer to a file descriptor: the one loop
 * for EINTR and short writes (profiles, snapshots, store files).
 */
#ifndef SPANPROF_BASE_WRITE_ALL_H
#define SPANPROF_BASE_WRITE_ALL_H

#include <stddef.h>
#include <stdint.h>

/* 0 when all len bytes are written, else the write's negative errno
 * (some bytes may be written then).  fd is not closed. */
int sp_write_all(int fd, const void *buf, size_t len);

#endif
