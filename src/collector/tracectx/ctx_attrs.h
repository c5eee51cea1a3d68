/* SPDX-License-Identifier: MIT */
/*
 * ctx_attrs.h - the attributes of an OTEP 4947 thread record, as the BPF
 * sampler copies them (raw, at most SP_CTX_ATTRS_MAX bytes) after a
 * sample's frames.
 *
 * Wire format (the application's bytes, untrusted):
 *
 *   offset  size  field
 *   0       1     key_index   index into the process's
 *                             threadlocal.attribute_key_map (OTEP 4719)
 *   1       1     len         value bytes that follow
 *   2       len   value       bytes (UTF-8 expected, not guaranteed)
 *   ... repeated; decoding stops at the first entry that does not fit in
 *   the bytes given; for a repeated key_index the last entry wins.
 *
 * sp_ctx_attrs__canon turns raw bytes into the canonical form that the
 * aggregator keys on: whole entries only, one per key (last value wins,
 * in order of first appearance), at most SP_CTX_ATTRS_KEYS entries.  Two
 * records that mean the same attributes canonicalize to the same bytes.
 * Pure functions, no allocation; fuzzed (tests/fuzz/fuzz_ctx_attrs.c).
 */
#ifndef SPANPROF_CTX_ATTRS_H
#define SPANPROF_CTX_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spanprof/abi.h"

/* Distinct keys kept per sample: with the off-CPU reason they fill
 * SP_MAX_LABELS (src/profile/profile.h) labels. */
#define SP_CTX_ATTRS_KEYS 15

struct sp_ctx_attr {
	uint8_t key;		/* key_index */
	uint8_t len;
	const uint8_t *value;	/* points into the buffer decoded */
};

/*
 * Decodes buf[0..len) into out[0..SP_CTX_ATTRS_KEYS): returns the number of
 * attributes.  *dropped (may be NULL) gets the entries not represented:
 * overwritten duplicates are not drops; entries beyond the key limit and a
 * trailing partial entry are.
 */
uint32_t sp_ctx_attrs__decode(const uint8_t *buf, size_t len,
			      struct sp_ctx_attr out[SP_CTX_ATTRS_KEYS], uint32_t *dropped);

/* Writes the canonical encoding of buf[0..len) into dst (room for
 * SP_CTX_ATTRS_MAX bytes; never more than len bytes are written, so dst may
 * not alias buf).  Returns its length; *dropped as for decode. */
uint32_t sp_ctx_attrs__canon(const uint8_t *buf, size_t len, uint8_t dst[SP_CTX_ATTRS_MAX],
			     uint32_t *dropped);

/*
 * Go pprof labels as the BPF reader copies them (abi.h, ctx_status
 * SP_CTX_GO / SP_CTX_GO_LABELS; the goroutine's bytes, untrusted):
 *
 *   offset  size  field
 *   0       1     klen        key bytes (1..SP_GO_KEY_MAX)
 *   1       1     vlen        value bytes (<= SP_GO_VALUE_MAX; a longer
 *                             value was cut to that)
 *   2       klen  key
 *   2+klen  vlen  value
 *   ... repeated; decoding stops at the first entry that does not fit.
 *
 * sp_ctx_attrs__canon_go turns them into the canonical form above: each
 * key becomes the index key_index() gives it (the process's Go label key
 * table; < 0 drops the label, counted), entries are sorted by index (a Go
 * map's bucket order differs between equal label sets; a sorted form makes
 * them one aggregation key), a repeated key keeps its last value, and a
 * value cut at SP_GO_VALUE_MAX loses a trailing partial UTF-8 sequence.
 * *dropped as for decode; *bad_utf8 (may be NULL) counts labels whose key
 * or value is not valid UTF-8 (kept; sp_ctx_attrs__string mends them).
 */
typedef int (*sp_ctx_attrs_key_fn)(const uint8_t *key, uint8_t len, void *ctx);

uint32_t sp_ctx_attrs__canon_go(const uint8_t *buf, size_t len, sp_ctx_attrs_key_fn key_index,
				void *ctx, uint8_t dst[SP_CTX_ATTRS_MAX], uint32_t *dropped,
				uint32_t *bad_utf8);

/* True when s[0..n) is valid UTF-8 (RFC 3629). */
bool sp_ctx_attrs__utf8_valid(const uint8_t *s, size_t n);

/*
 * Copies a value as a NUL-terminated string that is valid UTF-8 and has no
 * control characters (each byte of an invalid sequence or a control
 * character becomes '?'), so it can go into protobuf string fields.
 * dst needs 256 bytes (a value is at most 255).
 */
void sp_ctx_attrs__string(const struct sp_ctx_attr *a, char dst[256]);

#endif
