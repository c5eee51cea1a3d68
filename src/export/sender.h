/* SPDX-License-Identifier: MIT */
/*
 * sender.h - the one OTLP/HTTP sender: delivers one encoded request with
 * OTLP/HTTP's retry rules.  The exporter's thread owns one; each of the
 * symbolizer's serve workers owns one (to forward).
 *
 * sp_sender__new: resolves cfg like the exporter does (defaults, URL from
 *   endpoint or profiles_url, headers, TLS files, timeout, gzip; queue and
 *   file fields are ignored) and opens a libcurl client.  A URL is
 *   required.  0, or a negative errno with a one-line message naming the
 *   cause and the fix in err.
 * sp_sender__send: POSTs body (already encoded, and gzip'd when cfg->gzip:
 *   then it is labelled Content-Encoding: gzip).  Retries 429/502/503/504
 *   and connection failures only (retry.h), waiting Retry-After (seconds or
 *   an HTTP-date, capped at max_backoff_ms) when the answer has a valid
 *   one, else a full-jitter exponential backoff; at most max_attempts
 *   attempts.  Any other answer (4xx, 500, 501, 3xx, TLS verification)
 *   fails at once.  A 2xx is delivered; its partial_success is counted and
 *   logged, never retried.  One stderr line per failed message (not per
 *   attempt): "<prefix><what> dropped after N attempts (...): <why>".
 *   Returns SP_SEND_DELIVERED, SP_SEND_FAILED (counted in failed), or
 *   SP_SEND_ABORTED when *stop became true (counted in aborted; the
 *   caller decides what an abandoned message means).
 * Stopping: *stop (may be NULL: never) is read before each attempt and
 *   during backoff and transfers; after setting it, call
 *   sp_sender__wakeup so a backoff ends and a transfer is cut at once
 *   (else within 1 s).
 *
 * Threads: one thread at a time calls send (it owns the connection,
 * reused across requests); wakeup and stats may be called from any thread.
 * Memory: the HTTP client's fixed 64 KiB response buffer; nothing per
 * message.
 */
#ifndef SPANPROF_EXPORT_SENDER_H
#define SPANPROF_EXPORT_SENDER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "export/exporter.h"

enum sp_send_result {
	SP_SEND_DELIVERED = 0,
	SP_SEND_FAILED = 1,
	SP_SEND_ABORTED = 2,
};

struct sp_sender_stats {
	uint64_t delivered;		/* messages answered 2xx */
	uint64_t failed;		/* not retryable, or retries exhausted */
	uint64_t aborted;		/* abandoned because *stop became true */
	uint64_t requests;		/* HTTP attempts */
	uint64_t request_failures;	/* attempts that did not get 2xx */
	uint64_t retries;
	uint64_t partial_success_rejected;	/* rejected_profiles reported */
	uint64_t bytes_sent;		/* request bytes uploaded, every attempt */
	uint64_t latency_ns_sum;	/* over delivered requests */
	uint64_t latency_ns_max;
	/* as sp_export_stats.latency_buckets: not cumulative */
	uint64_t latency_buckets[SP_EXPORT_LATENCY_BUCKETS + 1];
};

struct sp_sender;

/* log_prefix is kept (not copied): a string literal, e.g.
 * "spanprof export: ". */
int sp_sender__new(const struct sp_export_config *cfg, const char *log_prefix,
		   const atomic_bool *stop, struct sp_sender **out, char *err, size_t err_len);
void sp_sender__free(struct sp_sender *s);	/* NULL-safe */

/* what names the message in the log line ("batch of 812 bytes (40
 * samples)"). */
enum sp_send_result sp_sender__send(struct sp_sender *s, const uint8_t *body, size_t len,
				    const char *what);
void sp_sender__wakeup(struct sp_sender *s);	/* NULL-safe */
void sp_sender__stats(struct sp_sender *s, struct sp_sender_stats *out);	/* NULL: zeroes */

#endif
