/* SPDX-License-Identifier: MIT */
/*
 * otlp_response.h - reading what an OTLP/HTTP endpoint answered (private).
 *
 * Inputs are untrusted bytes (already capped by the HTTP client).  Messages
 * are copied into the caller's buffer, truncated to fit, and sanitized for
 * a log line (control characters become '?').
 *
 * sp_otlp_response__partial: ExportProfilesServiceResponse; *rejected and
 *   msg from partial_success (0 and "" when absent).  0 or -EINVAL.
 * sp_rpc_status__decode: google.rpc.Status {1 code int32, 2 message
 *   string, 3 details (skipped)}.  0 or -EINVAL (malformed, or a field of
 *   the wrong wire type).
 * sp_log_sanitize: copies [s, s+len) into out (NUL-terminated), control
 *   characters replaced, truncated with "..." when longer than out_len-1.
 */
#ifndef SPANPROF_EXPORT_OTLP_RESPONSE_H
#define SPANPROF_EXPORT_OTLP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

int sp_otlp_response__partial(const uint8_t *buf, size_t len, int64_t *rejected,
			      char *msg, size_t msg_len);
int sp_rpc_status__decode(const uint8_t *buf, size_t len, int32_t *code, char *msg,
			  size_t msg_len);
void sp_log_sanitize(const char *s, size_t len, char *out, size_t out_len);

#endif
