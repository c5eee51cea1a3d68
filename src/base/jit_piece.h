/* SPDX-License-Identifier: MIT */
/*
 * jit_piece.h - a JIT symbol snapshot as the collector ships it: the bytes
 * of a process's perf map (or jitdump), cut into content-addressed pieces
 * that chain, so a file that grows is shipped once, its growth after.
 *
 * The collector never reads names out of these bytes (design invariant 2):
 * it copies them, bounded, and the symbolizer parses them.  One piece:
 *
 *   offset  size  field
 *   0       8     magic "SPJITPC1"
 *   8       1     source: 1 perf map (/tmp/perf-PID.map), 2 jitdump (its
 *                 code loads as perf-map text, converted by the collector:
 *                 collector/procs/jitdump.h); one source per chain
 *   9       3     reserved, 0
 *   12      4     pid the collector read it from (host pid; informational)
 *   16      16    parent: id of the piece holding the bytes before these
 *                 (all zero: the first piece of the file)
 *   32      8     offset: where data[0] sits in the file (= the parent
 *                 chain's total length; 0 with no parent)
 *   40      8     data length N (1..SP_JIT_PIECE_MAX_DATA)
 *   48      N     data: the file's bytes [offset, offset + N), cut after a
 *                 complete line (both sources are perf-map text)
 *
 * All integers little-endian.  id = XXH3-128 of bytes [8, 48 + N): the
 * piece with its parent's id, so a head id commits to the whole chain.
 * Written as 32 lower-case hex digits (high 64 bits first); a mapping in a
 * profile names the head piece of its process's chain in its build-id
 * field (docs/formats.md).
 *
 * sp_jit_piece__encode: fills a header + data into a malloc'd buffer and
 *   its id.  sp_jit_piece__decode: checks magic, reserved bytes, source,
 *   lengths (against len exactly) and the id when want is not NULL;
 *   0 or -EINVAL / -EBADMSG (id mismatch).  No allocation: *out points
 *   into buf.
 */
#ifndef SPANPROF_BASE_JIT_PIECE_H
#define SPANPROF_BASE_JIT_PIECE_H

#include <stddef.h>
#include <stdint.h>

#define SP_JIT_PIECE_MAGIC "SPJITPC1"
#define SP_JIT_PIECE_HDR 48
#define SP_JIT_PIECE_MAX_DATA (4u << 20)
#define SP_JIT_ID_LEN 16
#define SP_JIT_ID_HEX (2 * SP_JIT_ID_LEN)

enum sp_jit_source {
	SP_JIT_PERF_MAP = 1,
	SP_JIT_JITDUMP = 2,
};

struct sp_jit_id {
	uint8_t b[SP_JIT_ID_LEN];
};

struct sp_jit_piece {
	uint8_t source;
	uint32_t pid;
	struct sp_jit_id parent;	/* zero: none */
	uint64_t offset;
	uint64_t len;
	const uint8_t *data;
	struct sp_jit_id id;		/* decode: computed */
};

int sp_jit_piece__encode(uint8_t source, uint32_t pid, const struct sp_jit_id *parent,
			 uint64_t offset, const uint8_t *data, size_t len, uint8_t **out,
			 size_t *out_len, struct sp_jit_id *id);
int sp_jit_piece__decode(const uint8_t *buf, size_t len, const struct sp_jit_id *want,
			 struct sp_jit_piece *out);

int sp_jit_id__is_zero(const struct sp_jit_id *id);
/* 32 hex digits + NUL */
void sp_jit_id__hex(const struct sp_jit_id *id, char out[SP_JIT_ID_HEX + 1]);
/* 0, or -EINVAL unless hex is exactly 32 lower-case hex digits */
int sp_jit_id__parse(const char *hex, struct sp_jit_id *out);

#endif /* SPANPROF_BASE_JIT_PIECE_H */
