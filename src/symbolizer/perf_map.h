/* SPDX-License-Identifier: MIT */
/*
 * perf_map.h - a JIT runtime's perf map (the text of /tmp/perf-PID.map, as
 * the collector copied it) parsed into an address index.
 *
 * Input is untrusted (any process can write a perf map):
 *   - One entry per '\n'-terminated line: START SIZE NAME.  START and SIZE
 *     are hex, 1..16 digits, with or without a 0x/0X prefix (V8 and Python
 *     write none, JDK 17's jcmd Compiler.perfmap writes 0x and 16 digits);
 *     fields are separated by runs of spaces or tabs; NAME is the rest of
 *     the line (spaces included, trailing blanks and '\r' dropped),
 *     1..SP_PERF_MAP_MAX_NAME bytes (longer names are cut, counted), made
 *     valid UTF-8 (base/utf8.h).  A last line without '\n' is not read (a
 *     runtime may be writing it).
 *   - Refused and counted, never fatal: bad hex or missing fields
 *     (malformed), a NUL byte anywhere in the line (nul), SIZE 0 or
 *     START + SIZE past 2^64 (bad_range).
 *   - At most SP_PERF_MAP_MAX_ENTRIES entries (more: -E2BIG), input at most
 *     SP_PERF_MAP_MAX_BYTES (-EFBIG).
 *   - Overlaps: the later line wins where lines overlap (code freed and
 *     reused, a tier replacing another: the newest description is the one
 *     in force), as Parca's perf-map reader decides; what is left of an
 *     earlier entry still answers for its own addresses.
 *   - Line rows (a jitdump's DEBUG_INFO, as the collector writes it:
 *     collector/procs/jitdump.h): "@F [FILE]" sets the file of the rows
 *     after it ("@F" alone: none; cut to SP_PERF_MAP_MAX_NAME), "@L OFF
 *     LINE" (hex) is a row from START + OFF on; the rows before an
 *     entry's line are that entry's (the file is reset after each entry).
 *     A row at or past the entry's SIZE, rows followed by a line that is
 *     refused or by none, and malformed "@" lines are refused
 *     (rows_refused); of rows at one offset the later wins.  At most
 *     SP_PERF_MAP_MAX_ROWS rows (more: -E2BIG).
 *   - Built once, immutable after: resolve is thread safe.  Memory: 40
 *     bytes per segment (at most 2 per entry), 24 per row, + the names
 *     and files; building takes O(n log n) whatever the overlaps.
 */
#ifndef SPANPROF_SYMBOLIZER_PERF_MAP_H
#define SPANPROF_SYMBOLIZER_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>

#define SP_PERF_MAP_MAX_NAME 4096
#define SP_PERF_MAP_MAX_ENTRIES (8u << 20)
#define SP_PERF_MAP_NAME_BUF (SP_PERF_MAP_MAX_NAME + 1)
#define SP_PERF_MAP_MAX_BYTES (1024ull << 20)
#define SP_PERF_MAP_MAX_ROWS (16u << 20)

struct sp_perf_map_stats {
	uint64_t lines;
	uint64_t entries;		/* accepted */
	uint64_t malformed;
	uint64_t nul;
	uint64_t bad_range;
	uint64_t long_names;		/* cut to SP_PERF_MAP_MAX_NAME */
	uint64_t partial_tail;		/* bytes after the last '\n' */
	uint64_t overlaps;		/* entries (partly) hidden by a later one */
	uint64_t segments;
	uint64_t rows;			/* line rows taken by an entry */
	uint64_t rows_refused;
};

struct sp_perf_map;

int sp_perf_map__parse(const uint8_t *buf, size_t len, struct sp_perf_map **out,
		       struct sp_perf_map_stats *st);
void sp_perf_map__free(struct sp_perf_map *m);	/* NULL-safe */

/* The entry covering addr: 0 and *name (valid while m lives), *start;
 * -ERANGE when none does. */
int sp_perf_map__resolve(const struct sp_perf_map *m, uint64_t addr, const char **name,
			 uint64_t *start);
/* The line row covering addr in the entry that covers it (the last row at
 * or below it): 0 and *file (NULL: none; valid while m lives), *line, and
 * when first_line is not NULL the line of the entry's first row (its
 * lowest offset: where the code starts, the function's own line) when
 * that row is of the same file, else 0; -ENOENT when the entry has no row
 * there (or the row's line is 0), -ERANGE when no entry covers addr. */
int sp_perf_map__line(const struct sp_perf_map *m, uint64_t addr, const char **file,
		      uint32_t *line, uint32_t *first_line);
size_t sp_perf_map__bytes(const struct sp_perf_map *m);	/* memory held */

#endif /* SPANPROF_SYMBOLIZER_PERF_MAP_H */
