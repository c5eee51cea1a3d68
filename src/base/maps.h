/* SPDX-License-Identifier: MIT */
/*
 * maps.h - parser for one line of /proc/PID/maps (untrusted input).
 *
 *   start-end perms offset major:minor inode [path]
 *   7f12a000-7f12c000 r-xp 00002000 fd:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6
 *
 * Pure function: no I/O, no allocation; fuzzed (tests/fuzz).
 */
#ifndef SPANPROF_MAPS_H
#define SPANPROF_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sp_map_perm {
	SP_MAP_R = 1 << 0,
	SP_MAP_W = 1 << 1,
	SP_MAP_X = 1 << 2,
	SP_MAP_P = 1 << 3,	/* private (p) as opposed to shared (s) */
};

struct sp_map_entry {
	uint64_t start;
	uint64_t end;		/* exclusive */
	uint64_t offset;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t inode;
	uint8_t perms;		/* enum sp_map_perm bits */
	const char *path;	/* points into the line; not NUL-terminated */
	size_t path_len;	/* 0 = anonymous */
	int deleted;		/* path ends in " (deleted)" (stripped from path_len) */
};

/* Parses one line (without or with its trailing '\n').  Returns 0, or
 * -EINVAL when the line is malformed (bad hex, start >= end, missing field,
 * numbers overflowing 64 bits). */
int sp_maps__parse_line(const char *line, size_t len, struct sp_map_entry *out);

/* True when e is an OTEP 4719 process-context mapping, by any name a
 * publisher can give it: "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or
 * "/memfd:OTEL_CTX" (" (deleted)" already stripped by the parser). */
bool sp_maps__is_otel_ctx(const struct sp_map_entry *e);

#endif
