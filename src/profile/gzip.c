/* SPDX-License-Identifier: MIT */
/*
 * gzip.c - gzip helpers (zlib) and sp_profile__read_file().
 *
 * sp_gzip: whole buffer -> gzip member (RFC 1952); *out malloc'd.
 * sp_gunzip: gzip (one or more concatenated members) -> bytes.  The output
 *   buffer grows by doubling but never beyond max_out bytes; when the stream
 *   holds more than max_out bytes it stops with -E2BIG (a gzip bomb costs at
 *   most max_out bytes of memory).  Truncated or corrupt input -> -EINVAL,
 *   trailing bytes that are not another gzip member -> -EINVAL.
 * sp_is_gzip: 1 when the buffer starts with the gzip magic 1f 8b.
 *
 * sp_profile__read_file: reads at most SP_DECODE_MAX_BYTES (-E2BIG above),
 * gunzips when the gzip magic is present (again bounded by
 * SP_DECODE_MAX_BYTES), then picks the format from the top-level fields:
 *   an ExportProfilesServiceRequest only has fields 1 (resource_profiles)
 *   and 2 (dictionary), both length-delimited; a pprof Profile always has
 *   field 6 (string_table, whose [0] = "" is always written) and usually
 *   9..14 (varints).  So: when every top-level field is 1 or 2 with wire
 *   type LEN, the buffer is decoded as OTLP, otherwise as pprof.  An empty
 *   buffer is an empty OTLP request.  No fallback: a buffer that looks like
 *   OTLP and fails to decode is an error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/codec.h"
#include "profile/fileio.h"

int sp_is_gzip(const uint8_t *in, size_t len)
{
	return in && len >= 2 && in[0] == 0x1f && in[1] == 0x8b;
}

int sp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs;
	uint8_t *buf = NULL;
	uLong bound;
	int err, zr;

	if (!out || !out_len || (!in && len) || len > UINT32_MAX)
		return -EINVAL;
	*out = NULL;
	*out_len = 0;
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: gzip header and trailer */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, (uLong)len) + 32;
	err = -ENOMEM;
	buf = malloc(bound);
	if (!buf)
		goto out;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)bound;
	zr = deflate(&zs, Z_FINISH);
	err = -EIO;
	if (zr != Z_STREAM_END)
		goto out;
	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
	err = 0;
out:
	deflateEnd(&zs);
	free(buf);
	return err;
}

int sp_gunzip(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
	      size_t *out_len)
{
	z_stream zs;
	uint8_t *buf = NULL, scratch[1];
	size_t cap, have = 0;
	int err, zr;

	if (!out || !out_len || (!in && len) || len > UINT32_MAX)
		return -EINVAL;
	*out = NULL;
	*out_len = 0;
	if (!sp_is_gzip(in, len))
		return -EINVAL;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	cap = len < (1u << 16) ? (1u << 16) : len * 4;
	if (cap > max_out)
		cap = max_out;
	err = -ENOMEM;
	buf = malloc(cap ? cap : 1);
	if (!buf)
		goto out;

	for (;;) {
		if (have == cap && cap < max_out) {
			size_t ncap = cap > max_out / 2 ? max_out : cap * 2;
			uint8_t *n = realloc(buf, ncap);

			if (!n)
				goto out;
			buf = n;
			cap = ncap;
		}
		if (have < cap) {
			size_t room = cap - have;

			zs.next_out = buf + have;
			zs.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
		} else {
			/* full at max_out: any further byte means too big */
			zs.next_out = scratch;
			zs.avail_out = sizeof(scratch);
		}
		{
			uInt before = zs.avail_out;
			bool full = have == cap;

			zr = inflate(&zs, Z_NO_FLUSH);
			if (full && zs.avail_out != before) {
				err = -E2BIG;
				goto out;
			}
			if (!full)
				have += before - zs.avail_out;
		}
		if (zr == Z_STREAM_END) {
			if (!zs.avail_in)
				break;
			/* another member must follow */
			if (!sp_is_gzip(zs.next_in, zs.avail_in) ||
			    inflateReset(&zs) != Z_OK) {
				err = -EINVAL;
				goto out;
			}
			continue;
		}
		if (zr == Z_BUF_ERROR && zs.avail_in == 0) {
			err = -EINVAL;	/* truncated */
			goto out;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			goto out;
		}
	}
	*out = buf;
	*out_len = have;
	buf = NULL;
	err = 0;
out:
	inflateEnd(&zs);
	free(buf);
	return err;
}

/* Reads a varint at *pos; false when truncated or longer than 10 bytes. */
static bool varint(const uint8_t *b, size_t len, size_t *pos, uint64_t *v)
{
	unsigned int shift;

	*v = 0;
	for (shift = 0; shift < 64 && *pos < len; shift += 7) {
		uint8_t c = b[(*pos)++];

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* True when every top-level field is 1 or 2 with wire type 2 (LEN) and
 * every length fits: the shape of an ExportProfilesServiceRequest. */
static bool looks_like_otlp(const uint8_t *b, size_t len)
{
	size_t pos = 0;
	uint64_t tag, n;

	while (pos < len) {
		if (!varint(b, len, &pos, &tag))
			return false;
		if ((tag & 7) != 2 || ((tag >> 3) != 1 && (tag >> 3) != 2))
			return false;
		if (!varint(b, len, &pos, &n) || n > len - pos)
			return false;
		pos += n;
	}
	return true;
}

int sp_profile__read_file(const char *path, struct sp_profile **out)
{
	uint8_t *raw = NULL, *plain = NULL;
	size_t len = 0, plen;
	int err;

	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	err = sp_read_path(path, SP_DECODE_MAX_BYTES, &raw, &len);
	if (err)
		return err;
	if (sp_is_gzip(raw, len)) {
		err = sp_gunzip(raw, len, SP_DECODE_MAX_BYTES, &plain, &plen);
		if (err)
			goto out;
	} else {
		plain = raw;
		plen = len;
		raw = NULL;
	}
	if (looks_like_otlp(plain, plen))
		err = sp_otlp__decode(plain, plen, out);
	else
		err = sp_pprof__decode(plain, plen, out);
out:
	free(raw);
	free(plain);
	return err;
}
