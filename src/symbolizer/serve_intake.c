/* SPDX-License-Identifier: MIT */
/*
 * serve_intake.c - see serve_intake.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/codec.h"
#include "profile/profile.h"
#include "symbolizer/serve_intake.h"

#define PIECE (64u << 10)	/* first buffer, and inflate's step */
#define MAX_DEPTH 32		/* as the OTLP decoder's nesting limit */

void sp_intake__init(struct sp_intake *in, struct sp_membudget *b, size_t max_body,
		     size_t max_plain, bool gzip)
{
	memset(in, 0, sizeof(*in));
	in->budget = b;
	in->max_body = max_body;
	in->max_plain = max_plain;
	in->gzip = gzip;
	sp_pbcost__init(&in->walk, (const ProtobufCMessageDescriptor *)sp_otlp__request_descriptor(),
			MAX_DEPTH);
	in->walk.max_msgs = SP_DECODE_MAX_ENTRIES;
}

void sp_intake__init_raw(struct sp_intake *in, struct sp_membudget *b, size_t max_body,
			 size_t max_plain, bool gzip)
{
	sp_intake__init(in, b, max_body, max_plain, gzip);
	in->raw = true;
}

void sp_intake__release(struct sp_intake *in)
{
	free(in->buf);
	in->buf = NULL;
	if (in->budget)		/* NULL: never initialized (not a profiles POST) */
		sp_membudget__give(in->budget, in->held);
	in->held = 0;
	in->len = in->cap = 0;
}

void sp_intake__refuse(struct sp_intake *in, enum sp_intake_verdict v, const char *why)
{
	if (in->verdict != SP_INTAKE_OK)
		return;
	in->verdict = v;
	in->why = why;
	sp_intake__release(in);	/* the memory goes back at once */
}

/* Grows *buf to at least need bytes (doubling from PIECE, at most max),
 * taking the growth from the budget first.  0, or the refusal. */
static int grow(struct sp_intake *in, uint8_t **buf, size_t *cap, uint64_t *held, size_t need,
		size_t max)
{
	size_t nc = *cap ? *cap : PIECE;
	uint8_t *q;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	if (nc > max)
		nc = max;
	/* what the intake would hold at once (the body, and the inflated
	 * bytes when those grow): past the whole budget it never fits */
	if (nc - *cap + *held + (held == &in->held ? 0 : in->held) > in->budget->limit) {
		sp_intake__refuse(in, SP_INTAKE_TOO_LARGE, "body larger than the memory budget");
		return -E2BIG;
	}
	if (!sp_membudget__take(in->budget, nc - *cap)) {
		sp_intake__refuse(in, SP_INTAKE_BUSY, "receiver memory budget in use; retry");
		return -EBUSY;
	}
	q = realloc(*buf, nc);
	if (!q) {
		sp_membudget__give(in->budget, nc - *cap);
		sp_intake__refuse(in, SP_INTAKE_BUSY, "out of memory; retry");
		return -ENOMEM;
	}
	*held += nc - *cap;
	*buf = q;
	*cap = nc;
	return 0;
}

/* The walk over plain[0, len): refuses a malformed body, or one whose
 * decode is already known not to fit (lower bound past the limit, the
 * bytes held counted). */
static int walk(struct sp_intake *in, const uint8_t *plain, size_t len, uint64_t held)
{
	int r;

	if (in->raw)
		return 0;
	r = sp_pbcost__feed(&in->walk, plain, len);
	if (r == -E2BIG) {
		sp_intake__refuse(in, SP_INTAKE_TOO_LARGE, "request over the decoder's table limits");
		return r;
	}
	if (r) {
		sp_intake__refuse(in, SP_INTAKE_MALFORMED, "malformed ExportProfilesServiceRequest");
		return r;
	}
	if (in->walk.bytes + held > in->budget->limit) {
		sp_intake__refuse(in, SP_INTAKE_TOO_LARGE,
				  "decoded request larger than the memory budget");
		return -E2BIG;
	}
	return 0;
}

void sp_intake__feed(struct sp_intake *in, const uint8_t *data, size_t n)
{
	if (in->verdict != SP_INTAKE_OK) {
		in->dropped += n;
		return;
	}
	if (n > in->max_body - in->len) {
		sp_intake__refuse(in, SP_INTAKE_TOO_LARGE, "body too large");
		in->dropped += n;
		return;
	}
	if (grow(in, &in->buf, &in->cap, &in->held, in->len + n, in->max_body))
		return;
	memcpy(in->buf + in->len, data, n);
	in->len += n;
	if (!in->gzip)
		walk(in, in->buf, in->len, in->held);
}

/* Inflates in->buf into *plain (*plain_cap bytes), piece by piece,
 * walking each. */
static int inflate_walked(struct sp_intake *in, uint8_t **plain, size_t *plain_len,
			  size_t *plain_cap, uint64_t *plain_held)
{
	size_t cap = 0, have = 0;
	z_stream zs;
	int zr, err = 0;

	*plain = NULL;
	memset(&zs, 0, sizeof(zs));
	if (!sp_is_gzip(in->buf, in->len) || inflateInit2(&zs, 15 + 16) != Z_OK) {
		sp_intake__refuse(in, SP_INTAKE_MALFORMED, "malformed gzip body");
		return -EINVAL;
	}
	zs.next_in = in->buf;
	zs.avail_in = (uInt)in->len;
	for (;;) {
		if (have == cap) {
			if (cap >= in->max_plain) {
				sp_intake__refuse(in, SP_INTAKE_TOO_LARGE,
						  "decompressed body too large");
				err = -E2BIG;
				break;
			}
			err = grow(in, plain, &cap, plain_held, cap + 1, in->max_plain);
			if (err)
				break;
		}
		zs.next_out = *plain + have;
		zs.avail_out = (uInt)(cap - have > PIECE ? PIECE : cap - have);
		zr = inflate(&zs, Z_NO_FLUSH);
		have = (size_t)(zs.next_out - *plain);
		if (zr == Z_STREAM_END) {
			/* concatenated members: go on while input remains */
			if (!zs.avail_in)
				break;
			if (!sp_is_gzip(zs.next_in, zs.avail_in) || inflateReset(&zs) != Z_OK) {
				sp_intake__refuse(in, SP_INTAKE_MALFORMED, "malformed gzip body");
				err = -EINVAL;
				break;
			}
			continue;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			sp_intake__refuse(in, SP_INTAKE_MALFORMED, "malformed gzip body");
			err = -EINVAL;
			break;
		}
		if (zr == Z_BUF_ERROR && zs.avail_out) {	/* input ran out mid-stream */
			sp_intake__refuse(in, SP_INTAKE_MALFORMED, "truncated gzip body");
			err = -EINVAL;
			break;
		}
		err = walk(in, *plain, have, in->held + *plain_held);
		if (err)
			break;
	}
	inflateEnd(&zs);
	if (!err)
		err = walk(in, *plain, have, in->held + *plain_held);
	*plain_len = have;
	*plain_cap = cap;
	return err;
}

enum sp_intake_verdict sp_intake__finish(struct sp_intake *in, struct sp_profile **out,
					 uint64_t *charge)
{
	uint8_t *plain = NULL;
	size_t plain_len = 0, plain_cap = 0;
	uint64_t plain_held = 0, predicted = 0, fp;
	struct sp_profile *p = NULL;
	int err;

	*out = NULL;
	*charge = 0;
	if (in->verdict != SP_INTAKE_OK)
		goto out;
	if (in->gzip && inflate_walked(in, &plain, &plain_len, &plain_cap, &plain_held))
		goto out;
	if (sp_pbcost__finish(&in->walk, plain ? plain : in->buf, plain ? plain_len : in->len)) {
		sp_intake__refuse(in, in->walk.err == -E2BIG ? SP_INTAKE_TOO_LARGE : SP_INTAKE_MALFORMED,
				  in->walk.err == -E2BIG ? "request over the decoder's table limits"
							 : "malformed ExportProfilesServiceRequest");
		goto out;
	}
	predicted = sp_otlp__cost(&in->walk);
	if (predicted + in->held + plain_held > in->budget->limit) {
		sp_intake__refuse(in, SP_INTAKE_TOO_LARGE,
				  "decoded request larger than the memory budget");
		predicted = 0;
		goto out;
	}
	if (!sp_membudget__take(in->budget, predicted)) {
		sp_intake__refuse(in, SP_INTAKE_BUSY, "receiver memory budget in use; retry");
		predicted = 0;
		goto out;
	}
	err = sp_otlp__decode_capped(plain ? plain : in->buf, plain ? plain_len : in->len,
				     in->walk.bytes, &p);
	if (err) {
		sp_intake__refuse(in, err == -E2BIG ? SP_INTAKE_TOO_LARGE : SP_INTAKE_MALFORMED,
				  err == -E2BIG ? "request over the decoder's limits"
						: "malformed ExportProfilesServiceRequest");
		goto out;
	}
	/* The profile keeps what it holds; the prediction's rest goes back. */
	fp = sp_profile__footprint(p);
	if (fp > predicted)
		sp_membudget__force(in->budget, fp - predicted);
	else
		sp_membudget__give(in->budget, predicted - fp);
	predicted = 0;
	*out = p;
	*charge = fp;
out:
	sp_membudget__give(in->budget, predicted);
	free(plain);
	sp_membudget__give(in->budget, plain_held);
	sp_intake__release(in);
	return in->verdict;
}

enum sp_intake_verdict sp_intake__finish_raw(struct sp_intake *in, const uint8_t **data,
					     size_t *len)
{
	uint8_t *plain = NULL;
	size_t plain_len = 0, plain_cap = 0;
	uint64_t plain_held = 0;

	*data = NULL;
	*len = 0;
	if (in->verdict != SP_INTAKE_OK)
		return in->verdict;
	if (in->gzip) {
		if (inflate_walked(in, &plain, &plain_len, &plain_cap, &plain_held)) {
			free(plain);
			sp_membudget__give(in->budget, plain_held);
			return in->verdict;
		}
		/* the inflated bytes replace the body (given back now) */
		sp_intake__release(in);
		in->buf = plain;
		in->len = plain_len;
		in->cap = plain_cap;
		in->held = plain_held;
	}
	*data = in->buf;
	*len = in->len;
	return in->verdict;
}
