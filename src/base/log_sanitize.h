/* SPDX-License-Identifier: MIT */
/*
 * log_sanitize.h - text from a peer (an HTTP body, a google.rpc.Status
 * message) made safe for one log line.
 *
 * sp_log_sanitize copies [s, s+len) into out (always NUL-terminated when
 * out_len > 0): control characters and DEL become '?', so a peer cannot
 * forge log lines or terminal escapes; longer text is truncated and ends
 * in "..." (when out_len >= 4).  No allocation.
 */
#ifndef SPANPROF_BASE_LOG_SANITIZE_H
#define SPANPROF_BASE_LOG_SANITIZE_H

#include <stddef.h>

void sp_log_sanitize(const char *s, size_t len, char *out, size_t out_len);

#endif /* SPANPROF_BASE_LOG_SANITIZE_H */
