/* SPDX-License-Identifier: MIT */
/*
 * retry.h - OTLP/HTTP retry policy as pure functions (private).
 *
 * sp_retry__classify: what to do with one attempt's outcome.
 *   2xx -> SP_RETRY_DONE; 429/502/503/504 and transport failures that a
 *   later attempt may not see (connect refused, timeout, reset, empty or
 *   non-HTTP reply) -> SP_RETRY_AGAIN; everything else (other statuses,
 *   1xx/3xx, TLS verification, bad options) -> SP_RETRY_FAIL.
 * sp_retry__backoff_ms: "full jitter": uniform in [0, min(max_ms,
 *   initial_ms * 2^(retry-1))] for the retry-th retry (1-based), computed
 *   without overflow.
 * sp_retry__rand: xorshift64* step; state must be non-zero.
 */
#ifndef SPANPROF_EXPORT_RETRY_H
#define SPANPROF_EXPORT_RETRY_H

#include <stdbool.h>
#include <stdint.h>

enum sp_retry_verdict {
	SP_RETRY_DONE = 0,
	SP_RETRY_AGAIN = 1,
	SP_RETRY_FAIL = 2,
};

/* status: HTTP status, 0 when no answer; transient: the transport failure
 * (status 0) is worth retrying. */
enum sp_retry_verdict sp_retry__classify(long status, bool transient);
uint64_t sp_retry__backoff_ms(uint32_t retry, uint32_t initial_ms, uint32_t max_ms,
			      uint64_t rnd);
uint64_t sp_retry__rand(uint64_t *state);

#endif
