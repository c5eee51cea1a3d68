/* SPDX-License-Identifier: MIT */
/*
 * forward.h - POST a symbolized OTLP request to the next hop with OTLP/HTTP's
 * retry rules (libcurl).
 *
 * Contract:
 *   - The body is an already encoded (and gzip-compressed when gzip is set)
 *     ExportProfilesServiceRequest; it is sent with Content-Type
 *     application/x-protobuf.
 *   - Retryable answers are 429, 502, 503 and 504 and transport failures
 *     (connect, timeout); a Retry-After header (seconds) sets the delay,
 *     else the delay doubles from 500 ms up to 8 s.  At most max_attempts
 *     tries; any other status is a permanent failure.  *stop (may be NULL)
 *     cuts the waiting short when it becomes true.
 *   - Returns 0 on a 2xx, -EAGAIN when retries ran out, -EIO on a permanent
 *     failure, -ENOMEM.  *retries counts the extra attempts made.
 *   - Not thread safe per handle: one struct sp_forward per thread.
 * This belongs in src/export once that layer has an HTTP client; it lives
 * here until then.
 */
#ifndef SPANPROF_SYMBOLIZER_FORWARD_H
#define SPANPROF_SYMBOLIZER_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_forward;

int sp_forward__new(const char *url, uint32_t max_attempts,
		    struct sp_forward **out);
void sp_forward__free(struct sp_forward *f);	/* NULL-safe */

int sp_forward__post(struct sp_forward *f, const uint8_t *body, size_t len,
		     bool gzip, const volatile bool *stop, uint32_t *retries,
		     long *last_status);

#endif /* SPANPROF_SYMBOLIZER_FORWARD_H */
