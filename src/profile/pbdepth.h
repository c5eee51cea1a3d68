/* SPDX-License-Identifier: MIT */
/*
 * pbdepth.h - a nesting-depth check for protobuf input, run before
 * protobuf-c unpacks it.
 *
 * protobuf-c's unpacker recurses once per nested message, without a limit,
 * so untrusted input of recursive types (OpenTelemetry's AnyValue nests
 * through ArrayValue and KeyValueList) can exhaust the stack with a few
 * megabytes (a few kilobytes gzipped).  The walker below knows, per message
 * kind, which length-delimited fields are sub-messages (a schema given as
 * edges), walks the wire format iteratively over fields and recursively
 * over depth only up to max_depth, and rejects deeper or malformed input.
 */
#ifndef SPANPROF_PBDEPTH_H
#define SPANPROF_PBDEPTH_H

#include <stddef.h>
#include <stdint.h>

/* A length-delimited field `field` of message kind `kind` is a message of
 * kind `sub`.  Kinds are small non-zero numbers chosen by the caller. */
struct sp_pb_edge {
	uint8_t kind;
	uint8_t field;
	uint8_t sub;
};

/* 0, or -EBADMSG when buf is not well-formed wire format or nests deeper
 * than max_depth along the edges. */
int sp_pb__check_depth(const uint8_t *buf, size_t len, uint8_t root,
		       const struct sp_pb_edge *edges, size_t n_edges, int max_depth);

/* The OTLP ExportProfilesServiceRequest's recursive paths (to AnyValue). */
extern const struct sp_pb_edge sp_pb_otlp_request_edges[];
extern const size_t sp_pb_otlp_request_n_edges;
#define SP_PB_OTLP_REQUEST 1

#endif
