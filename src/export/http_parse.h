/* SPDX-License-Identifier: MIT */
/*
 * http_parse.h - parsers for the HTTP values the exporter reads from
 * untrusted peers and from the environment.  Pure functions; fuzzed.
 */
#ifndef SPANPROF_HTTP_PARSE_H
#define SPANPROF_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Retry-After: delay-seconds or an HTTP-date (IMF-fixdate, and the obsolete
 * RFC 850 and asctime forms).  *delay_ms = how long to wait from now (0 for
 * a date in the past), capped at max_ms.  0 or -EINVAL. */
int sp_http__parse_retry_after(const char *value, size_t len, time_t now, uint64_t max_ms,
			       uint64_t *delay_ms);

/* Is this status retryable under OTLP/HTTP (429, 502, 503, 504)? */
int sp_http__status_retryable(long status);

/* OTEL_EXPORTER_OTLP_HEADERS: "k1=v1,k2=v2", values percent-decoded, keys
 * (RFC 9110 tokens) and values trimmed; empty entries are skipped.  Calls cb
 * for each pair; -EINVAL on a malformed entry (bad key, no '=', bad %XX, a
 * control character other than HTAB in the decoded value), -E2BIG past 64
 * entries or an entry over 8 KiB, or cb's negative return; nothing is
 * called after an error.  Strings passed to cb live until it returns. */
typedef int (*sp_header_cb)(const char *key, const char *value, void *ctx);
int sp_http__parse_headers(const char *s, sp_header_cb cb, void *ctx);

#endif
