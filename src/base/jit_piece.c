// SPDX-License-Identifier: MIT
/*
 * jit_piece.c - see jit_piece.h (the byte layout is there).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/hex.h"
#include "base/jit_piece.h"

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void id_of(const uint8_t *buf, size_t len, struct sp_jit_id *id)
{
	XXH128_hash_t h = XXH3_128bits(buf + 8, len - 8);

	put_le(id->b, h.high64, 8);
	put_le(id->b + 8, h.low64, 8);
}

int sp_jit_piece__encode(uint8_t source, uint32_t pid, const struct sp_jit_id *parent,
			 uint64_t offset, const uint8_t *data, size_t len, uint8_t **out,
			 size_t *out_len, struct sp_jit_id *id)
{
	uint8_t *b;

	*out = NULL;
	if ((source != SP_JIT_PERF_MAP && source != SP_JIT_JITDUMP) || !len ||
	    len > SP_JIT_PIECE_MAX_DATA || (!parent && offset))
		return -EINVAL;
	b = malloc(SP_JIT_PIECE_HDR + len);
	if (!b)
		return -ENOMEM;
	memset(b, 0, SP_JIT_PIECE_HDR);
	memcpy(b, SP_JIT_PIECE_MAGIC, 8);
	b[8] = source;
	put_le(b + 12, pid, 4);
	if (parent)
		memcpy(b + 16, parent->b, SP_JIT_ID_LEN);
	put_le(b + 32, offset, 8);
	put_le(b + 40, len, 8);
	memcpy(b + SP_JIT_PIECE_HDR, data, len);
	id_of(b, SP_JIT_PIECE_HDR + len, id);
	*out = b;
	*out_len = SP_JIT_PIECE_HDR + len;
	return 0;
}

int sp_jit_piece__decode(const uint8_t *buf, size_t len, const struct sp_jit_id *want,
			 struct sp_jit_piece *out)
{
	uint64_t n;

	if (len < SP_JIT_PIECE_HDR || memcmp(buf, SP_JIT_PIECE_MAGIC, 8) ||
	    (buf[8] != SP_JIT_PERF_MAP && buf[8] != SP_JIT_JITDUMP) || buf[9] || buf[10] ||
	    buf[11])
		return -EINVAL;
	n = get_le(buf + 40, 8);
	if (!n || n > SP_JIT_PIECE_MAX_DATA || n != len - SP_JIT_PIECE_HDR)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->source = buf[8];
	out->pid = (uint32_t)get_le(buf + 12, 4);
	memcpy(out->parent.b, buf + 16, SP_JIT_ID_LEN);
	out->offset = get_le(buf + 32, 8);
	out->len = n;
	out->data = buf + SP_JIT_PIECE_HDR;
	if (sp_jit_id__is_zero(&out->parent) ? out->offset != 0 : out->offset == 0)
		return -EINVAL;
	id_of(buf, len, &out->id);
	if (want && memcmp(want->b, out->id.b, SP_JIT_ID_LEN))
		return -EBADMSG;
	return 0;
}

int sp_jit_id__is_zero(const struct sp_jit_id *id)
{
	for (unsigned i = 0; i < SP_JIT_ID_LEN; i++)
		if (id->b[i])
			return 0;
	return 1;
}

void sp_jit_id__hex(const struct sp_jit_id *id, char out[SP_JIT_ID_HEX + 1])
{
	sp_hex__encode(id->b, SP_JIT_ID_LEN, out);
}

int sp_jit_id__parse(const char *hex, struct sp_jit_id *out)
{
	for (unsigned i = 0; i < SP_JIT_ID_HEX; i++)
		if (!hex[i] || sp_hex_digit(hex[i]) < 0 || (hex[i] >= 'A' && hex[i] <= 'F'))
			return -EINVAL;
	if (hex[SP_JIT_ID_HEX])
		return -EINVAL;
	for (unsigned i = 0; i < SP_JIT_ID_LEN; i++)
		out->b[i] = (uint8_t)(sp_hex_digit(hex[2 * i]) << 4 | sp_hex_digit(hex[2 * i + 1]));
	return 0;
}
