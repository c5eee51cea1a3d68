/* SPDX-License-Identifier: MIT */
/*
 * retry.c - OTLP/HTTP retry policy (contract: retry.h).
 */
#include "export/http_parse.h"
#include "export/retry.h"

enum sp_retry_verdict sp_retry__classify(long status, bool transient)
{
	if (status == 0)
		return transient ? SP_RETRY_AGAIN : SP_RETRY_FAIL;
	if (status >= 200 && status < 300)
		return SP_RETRY_DONE;
	return sp_http__status_retryable(status) ? SP_RETRY_AGAIN : SP_RETRY_FAIL;
}

uint64_t sp_retry__backoff_ms(uint32_t retry, uint32_t initial_ms, uint32_t max_ms,
			      uint64_t rnd)
{
	uint64_t cap = initial_ms;

	if (retry == 0)
		retry = 1;
	for (uint32_t i = 1; i < retry && cap < max_ms; i++)
		cap *= 2;	/* cap < 2^32 before, so no overflow */
	if (cap > max_ms)
		cap = max_ms;
	return cap ? rnd % (cap + 1) : 0;
}

uint64_t sp_retry__rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}
