/* SPDX-License-Identifier: MIT */
/*
 * jit_syms.h - names for JIT frames from the perf-map pieces a collector
 * shipped (base/jit_piece.h), looked up by the head piece a profile's
 * "[perf-map]" or "[jitdump]" mapping names in its build-id field (both
 * sources carry perf-map text; a chain's pieces must all be of one).
 *
 * Contract:
 *   - Pieces are files DIR/jit/<id>.piece in the store directories given
 *     (base/symstore.h), untrusted: each is opened through base/pin.h,
 *     read bounded (SP_JIT_PIECE_HDR + SP_JIT_PIECE_MAX_DATA), decoded and
 *     checked against the id it was asked for (a file under one name
 *     holding another piece is refused: bad_piece).  A chain is followed
 *     from its head to the first piece (no parent), each piece's offset
 *     being where its parent's bytes end; at most max_chain_pieces pieces
 *     and max_chain_bytes bytes (too_big), no cycles (a cycle cannot be
 *     built from hashes, and the piece count bounds it anyway).  The bytes
 *     are concatenated and parsed (perf_map.h).
 *   - A chain missing a piece is "no snapshot" (missing); it is tried
 *     again after SP_JIT_RETRY_S seconds or after sp_jit_syms__changed
 *     (serve calls it when a piece arrives).
 *   - Parsed maps are cached by head id, least recently used evicted past
 *     cache_bytes (the bytes each parsed map holds).
 *   - Thread safe; a chain is loaded outside the lock (two threads may
 *     load one chain at once; one copy is kept).  Names are copied out.
 *   - Returns 0, -EINVAL (head is not a piece id), -ENOENT (chain
 *     missing or broken), -ERANGE (no entry covers the address), -ENOMEM.
 *   - A jitdump's line rows (perf_map.h "@" lines) give the entry's
 *     file:line at the address (sp_jit_syms__resolve_line).
 */
#ifndef SPANPROF_SYMBOLIZER_JIT_SYMS_H
#define SPANPROF_SYMBOLIZER_JIT_SYMS_H

#include <stddef.h>
#include <stdint.h>

#define SP_JIT_SYMS_MAX_DIRS 16
#define SP_JIT_RETRY_S 5

struct sp_jit_syms_opts {
	size_t cache_bytes;		/* default 256 MiB */
	uint64_t max_chain_bytes;	/* default 256 MiB */
	uint32_t max_chain_pieces;	/* default 4096 */
};

struct sp_jit_syms_stats {
	uint64_t lookups;
	uint64_t resolved;
	uint64_t not_covered;		/* address in no entry of the map */
	uint64_t missing;		/* a piece of the chain is not there */
	uint64_t bad_piece;		/* refused: malformed, wrong id, broken chain */
	uint64_t too_big;
	uint64_t chains_loaded;
	uint64_t cache_hits;
	uint64_t evictions;
	uint64_t lines_refused;		/* perf-map lines refused while parsing */
	uint64_t rows_refused;		/* line rows refused while parsing */
	uint64_t with_line;		/* resolved with a file:line */
	uint64_t cache_bytes;		/* gauge */
	uint64_t cached;		/* gauge: parsed maps held */
};

struct sp_jit_syms;

int sp_jit_syms__new(const struct sp_jit_syms_opts *o, struct sp_jit_syms **out);
void sp_jit_syms__free(struct sp_jit_syms *js);	/* NULL-safe */
/* -E2BIG past SP_JIT_SYMS_MAX_DIRS */
int sp_jit_syms__add_dir(struct sp_jit_syms *js, const char *dir);
int sp_jit_syms__has_dirs(struct sp_jit_syms *js);

/* The name of the entry covering addr in the chain headed by head_hex,
 * copied into name (NUL-terminated, cut to name_len). */
int sp_jit_syms__resolve(struct sp_jit_syms *js, const char *head_hex, uint64_t addr,
			 char *name, size_t name_len);
/* The same, and the covering line row's file (copied into file, cut to
 * file_len; "" none), *line (0: no row covers addr) and *first_line
 * (perf_map.h sp_perf_map__line). */
int sp_jit_syms__resolve_line(struct sp_jit_syms *js, const char *head_hex, uint64_t addr,
			      char *name, size_t name_len, char *file, size_t file_len,
			      uint32_t *line, uint32_t *first_line);
/* New pieces may have arrived: chains found missing are tried again. */
void sp_jit_syms__changed(struct sp_jit_syms *js);
void sp_jit_syms__stats(struct sp_jit_syms *js, struct sp_jit_syms_stats *st);

#endif /* SPANPROF_SYMBOLIZER_JIT_SYMS_H */
