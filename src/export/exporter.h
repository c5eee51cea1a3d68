/* SPDX-License-Identifier: MIT */
/*
 * exporter.h - ships profiles off the host without ever blocking the
 * caller on the network.
 *
 * sp_exporter__submit encodes a profile (OTLP ExportProfilesServiceRequest,
 * gzip when configured) on the caller's thread and queues the bytes; one
 * export thread sends them with OTLP/HTTP's rules (POST
 * {endpoint}/v1development/profiles, retries only for 429/502/503/504 and
 * connection failures, Retry-After honoured, else exponential backoff with
 * jitter, partial success logged not retried) and/or writes rotating files.
 *
 * Bounds: the queue holds at most queue_bytes of encoded requests; when a
 * new batch does not fit, the drop policy removes the oldest queued batches
 * (default) or refuses the new one, and every dropped batch and its sample
 * count are counted.  Besides the queue, the export thread holds at most
 * one batch in flight (stats.inflight_bytes) and a 64 KiB response buffer.
 * Nothing else allocates without bound.
 *
 * Thread safety: submit, flush, stats may be called from any one thread
 * (the agent's interval thread); the export thread is internal.
 */
#ifndef SPANPROF_EXPORTER_H
#define SPANPROF_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_profile;

enum sp_drop_policy {
	SP_DROP_OLDEST = 0,	/* make room by dropping the oldest queued batch */
	SP_DROP_NEWEST = 1,	/* refuse the batch being submitted */
};

struct sp_export_config {
	/* OTLP/HTTP; NULL = no network export.  Base URL as in
	 * OTEL_EXPORTER_OTLP_ENDPOINT; the signal path is appended
	 * ("http://h:4318/base" -> "http://h:4318/base/v1development/profiles"). */
	const char *endpoint;
	/* Full URL used as is, as in OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT (an
	 * empty path becomes "/"); wins over endpoint. */
	const char *profiles_url;
	const char *headers;		/* "k=v,k2=v2" (OTEL_EXPORTER_OTLP_HEADERS) */
	bool gzip;			/* Content-Encoding: gzip (default on) */
	uint32_t timeout_ms;		/* per request (default 10000) */
	const char *ca_file;		/* https: extra CA bundle */
	const char *client_cert;	/* https: mTLS */
	const char *client_key;
	uint32_t max_attempts;		/* per batch, default 5 */
	const char *content_type;	/* NULL: application/x-protobuf (the
					 * uploader's host-symbol blobs say
					 * application/octet-stream) */
	uint32_t initial_backoff_ms;	/* default 1000 */
	uint32_t max_backoff_ms;	/* default 30000 */
	size_t queue_bytes;		/* default 16 MiB */
	enum sp_drop_policy drop_policy;
	/* Rotating files; NULL = none.  Files are written atomically
	 * (temp + rename); at most max_files are kept (oldest removed), each
	 * at most max_file_bytes (larger batches are dropped, counted). */
	const char *output_dir;
	uint32_t max_files;		/* default 100 */
	size_t max_file_bytes;		/* default 64 MiB */
};

/* Upper bounds, in seconds, of the export latency histogram (Prometheus
 * `le` values; +Inf is implied). */
#define SP_EXPORT_LATENCY_BUCKETS 11
extern const double sp_export_latency_bounds_s[SP_EXPORT_LATENCY_BUCKETS];

struct sp_export_stats {
	uint64_t batches_submitted;
	uint64_t batches_exported;	/* accepted by the endpoint (2xx) */
	uint64_t batches_dropped_queue_full;
	uint64_t batches_dropped_failed;	/* non-retryable or retries exhausted */
	uint64_t samples_dropped;	/* events (sum of sample counts) in dropped batches */
	uint64_t requests;		/* HTTP attempts */
	uint64_t request_failures;	/* attempts that did not get 2xx */
	uint64_t retries;
	uint64_t partial_success_rejected;	/* rejected_profiles reported */
	uint64_t bytes_sent;		/* request bytes uploaded, every attempt */
	uint64_t latency_ns_sum;	/* over successful requests */
	uint64_t latency_ns_max;
	/* Successful requests by latency: [i] counts those above bound i-1
	 * and at most bound i (sp_export_latency_bounds_s); the last slot
	 * those above every bound.  Not cumulative. */
	uint64_t latency_buckets[SP_EXPORT_LATENCY_BUCKETS + 1];
	uint64_t files_written;
	uint64_t files_failed;		/* write errors (disk full, ...) */
	uint64_t files_removed;		/* rotation */
	size_t queue_bytes;		/* now; <= cfg queue_bytes */
	uint32_t queue_batches;		/* now */
	size_t inflight_bytes;		/* now: the batch the export thread holds
					 * (outside the queue's cap, at most one) */
};

struct sp_exporter;

/* Validates the configuration (URL scheme, header syntax, directory
 * writable, CA/cert/key files readable, at least one of endpoint,
 * profiles_url, output_dir; headers that frame the request such as
 * Content-Type or Host are refused) and starts the export thread.
 * Exported means 2xx from the endpoint; with only output_dir, a file
 * written.  Returns 0 and *out, or a negative errno with a one-line message
 * naming the cause and the fix in err. */
int sp_exporter__new(const struct sp_export_config *cfg, struct sp_exporter **out,
		     char *err, size_t err_len);
/* Stops the thread promptly, also mid-request or mid-backoff; queued and
 * in-flight batches are dropped and reported in one stderr line.  NULL-safe. */
void sp_exporter__free(struct sp_exporter *e);

/* Encodes and queues.  0, or -ENOSPC when dropped by policy (counted), or
 * an encoding error (not counted as submitted).  The batch's event count
 * (sum of sample counts) is recorded for drop accounting. */
int sp_exporter__submit(struct sp_exporter *e, const struct sp_profile *p);

/* Waits until the queue is empty and nothing is in flight, or timeout_ms
 * passes (then returns -ETIMEDOUT; what is left stays counted as queued). */
int sp_exporter__flush(struct sp_exporter *e, uint32_t timeout_ms);

void sp_exporter__stats(struct sp_exporter *e, struct sp_export_stats *out);

/* Zeroes cfg and sets the defaults that zero cannot express (gzip on,
 * SP_DROP_OLDEST).  Zero numeric fields mean "default" to
 * sp_exporter__new. */
void sp_export_config__init(struct sp_export_config *cfg);

/* Fills cfg fields that are unset from the standard OTEL_EXPORTER_OTLP_*
 * variables (ENDPOINT, PROFILES_ENDPOINT, HEADERS, COMPRESSION, TIMEOUT,
 * CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY; the OTEL_EXPORTER_OTLP_PROFILES_*
 * form of each wins over the generic one).  PROFILES_ENDPOINT fills
 * profiles_url (used as is), ENDPOINT fills endpoint (path appended), only
 * when neither is set.  gzip has no "unset" state: it is set when
 * COMPRESSION is present ("gzip" or "none").  TIMEOUT is in milliseconds.
 * Strings point into the environment.  Returns 0 or -EINVAL with a message
 * for a bad value. */
int sp_export_config__from_env(struct sp_export_config *cfg, char *err, size_t err_len);

#endif
