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
 * An error answer's google.rpc.Status body is read with base/rpc_status.h
 * and raw text with base/log_sanitize.h (both included here: they are
 * the rest of "what an endpoint answered").
 */
#ifndef SPANPROF_EXPORT_OTLP_RESPONSE_H
#define SPANPROF_EXPORT_OTLP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/log_sanitize.h"
#include "base/rpc_status.h"

int sp_otlp_response__partial(const uint8_t *buf, size_t len, int64_t *rejected,
			      char *msg, size_t msg_len);

#endif
