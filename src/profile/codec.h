/* SPDX-License-Identifier: MIT */
/*
 * codec.h - wire formats for struct sp_profile.
 *
 * Encoders produce an owned heap buffer (*out, *out_len; free() it) and
 * return 0 or a negative errno.  Decoders take untrusted bytes: they bound
 * every count and index by the input, never trust a length field, validate
 * the result with sp_profile__validate(), and return 0 with *out set or a
 * negative errno (-EINVAL malformed, -E2BIG over limits, -ENOMEM) with *out
 * NULL.
 *
 * pprof: google/pprof profile.proto.  One pprof file holds every resource;
 * pid, tid, thread name, trace_id, span_id and service.name go out as labels.
 * Value columns: [samples/count, cpu/nanoseconds], and when any off-CPU
 * sample is present two more, [off_cpu_waits/count, off_cpu/nanoseconds];
 * an on-CPU sample has zeros in the off-CPU columns and vice versa, so one
 * file holds a span's whole wall-clock time (go tool pprof -sample_index=
 * picks the column).  The decoder maps the columns back to kinds.
 *
 * OTLP: opentelemetry-proto v1.11.0 profiles v1development
 * ExportProfilesServiceRequest, one ResourceProfiles per resource, one
 * Profile per sample kind present, one dictionary for the request.
 */
#ifndef SPANPROF_CODEC_H
#define SPANPROF_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define SP_DECODE_MAX_BYTES (64u << 20)	/* decompressed input limit */
#define SP_DECODE_MAX_ENTRIES (1u << 20)	/* per decoded table, and samples */

int sp_pprof__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len);
int sp_pprof__decode(const uint8_t *buf, size_t len, struct sp_profile **out);

int sp_otlp__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len);
int sp_otlp__decode(const uint8_t *buf, size_t len, struct sp_profile **out);

/* Memory a decode takes, predicted before it (profile/pbcost.h): walk the
 * request with sp_pbcost rooted at sp_otlp__request_descriptor(), then
 * sp_otlp__cost() is the walk's unpack bytes plus the profile model
 * sp_otlp__decode builds from such a request (tables at their doubling
 * capacity, dedup indexes, strings, timestamps, the decoder's maps, one
 * table's growth transient): an upper bound for valid input, checked
 * against the real footprint by test_pbcost.  sp_otlp__decode_capped is
 * sp_otlp__decode with protobuf-c's allocations stopped at unpack_budget
 * bytes (-E2BIG past it; 0: the default 48 x len + 1 MiB). */
struct ProtobufCMessageDescriptor;
struct sp_pbcost;
const struct ProtobufCMessageDescriptor *sp_otlp__request_descriptor(void);
uint64_t sp_otlp__cost(const struct sp_pbcost *w);
int sp_otlp__decode_capped(const uint8_t *buf, size_t len, size_t unpack_budget,
			   struct sp_profile **out);

/* gzip helpers (zlib).  gunzip stops with -E2BIG past max_out bytes. */
int sp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);
int sp_gunzip(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
	      size_t *out_len);
int sp_is_gzip(const uint8_t *in, size_t len);

/* Reads a file (gzip or not, pprof or OTLP detected by content) into a
 * profile.  Returns 0 or negative errno. */
int sp_profile__read_file(const char *path, struct sp_profile **out);

#endif /* SPANPROF_CODEC_H */
