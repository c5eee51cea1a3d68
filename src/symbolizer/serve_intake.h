/* SPDX-License-Identifier: MIT */
/*
 * serve_intake.h - one request body of `serve`, from its first byte to a
 * decoded profile, inside the memory budget (membudget.h), refusing as
 * early and as cheaply as it can.
 *
 *   __feed     appends body bytes (the buffer's growth is taken from the
 *              budget first); an identity body is walked as it arrives
 *              (profile/pbcost.h), so a body whose decode could not fit
 *              is refused at the piece that shows it, and the rest is
 *              read and dropped without being kept;
 *   __finish   a gzip body is inflated piece by piece (each piece's room
 *              taken first) and walked the same way; then the decode's
 *              predicted peak (sp_otlp__cost) is taken, protobuf-c is
 *              capped at what was predicted for it, and the profile is
 *              decoded.  The raw and inflated bytes are given back; the
 *              profile keeps its footprint (sp_profile__footprint) taken,
 *              in *charge, for whoever holds it to give back.
 *
 * Raw intake (__init_raw, __finish_raw): the same budget, bounds and
 * inflating for a body that is bytes, not a profile (a host-symbol
 * upload): no walk, no decode; the plain bytes stay in the intake, taken
 * from the budget, until __release.
 *
 * Verdicts (sticky: after a refusal, __feed only counts bytes):
 *   SP_INTAKE_OK          *out and *charge set
 *   SP_INTAKE_TOO_LARGE   413: over max_body, max_plain, the decoder's
 *                         table caps, or a decode predicted larger than
 *                         the whole budget (it could never fit)
 *   SP_INTAKE_BUSY        503 + Retry-After: it would fit, not now
 *   SP_INTAKE_MALFORMED   400: gzip or protobuf
 * why names the cause for the answer's google.rpc.Status.
 */
#ifndef SPANPROF_SYMBOLIZER_SERVE_INTAKE_H
#define SPANPROF_SYMBOLIZER_SERVE_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/pbcost.h"
#include "symbolizer/membudget.h"

struct sp_profile;

enum sp_intake_verdict {
	SP_INTAKE_OK = 0,
	SP_INTAKE_TOO_LARGE,
	SP_INTAKE_BUSY,
	SP_INTAKE_MALFORMED,
};

struct sp_intake {
	struct sp_membudget *budget;	/* not owned */
	size_t max_body, max_plain;
	bool gzip;
	bool raw;			/* __init_raw: bytes, not a profile */
	enum sp_intake_verdict verdict;
	const char *why;
	uint8_t *buf;			/* the body as received */
	size_t len, cap;
	uint64_t held;			/* taken for buf */
	uint64_t dropped;		/* body bytes read after a refusal */
	struct sp_pbcost walk;		/* over the plain bytes */
};

void sp_intake__init(struct sp_intake *in, struct sp_membudget *b, size_t max_body,
		     size_t max_plain, bool gzip);
void sp_intake__init_raw(struct sp_intake *in, struct sp_membudget *b, size_t max_body,
			 size_t max_plain, bool gzip);
void sp_intake__feed(struct sp_intake *in, const uint8_t *data, size_t n);
/* Refuses at once (e.g. a Content-Length over max_body). */
void sp_intake__refuse(struct sp_intake *in, enum sp_intake_verdict v, const char *why);
enum sp_intake_verdict sp_intake__finish(struct sp_intake *in, struct sp_profile **out,
					 uint64_t *charge);
/* A raw intake's plain bytes (inflated when gzip), valid until
 * __release; the verdict. */
enum sp_intake_verdict sp_intake__finish_raw(struct sp_intake *in, const uint8_t **data,
					     size_t *len);
/* Gives back what the intake still holds (not the profile's charge). */
void sp_intake__release(struct sp_intake *in);

#endif /* SPANPROF_SYMBOLIZER_SERVE_INTAKE_H */
