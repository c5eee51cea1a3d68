/* SPDX-License-Identifier: MIT */
/*
 * http_client.h - one OTLP/HTTP POST attempt on a reused libcurl handle
 * (private; no retries here: the exporter owns the policy).
 *
 * One client per thread: an easy handle inside a multi handle, so the
 * connection is reused across requests and a waiting transfer can be woken
 * by sp_http_client__wakeup from any thread (curl_multi_wakeup), which
 * aborts it as soon as *stop is true (also checked in the transfer's
 * progress callback).  Requests: POST url, Content-Type
 * application/x-protobuf (or opts.content_type), Content-Encoding: gzip when gzip, the custom
 * headers, User-Agent spanprof/0.1, no "Expect: 100-continue", no
 * redirects, http/https only, timeout_ms for the whole attempt, optional CA
 * bundle and client certificate/key.
 *
 * Bounds: the response body is kept up to SP_HTTP_BODY_MAX bytes (the
 * transfer is cut there, the status stays valid), the Retry-After and
 * Content-Type values up to 127 bytes; nothing else is stored per answer.
 */
#ifndef SPANPROF_EXPORT_HTTP_CLIENT_H
#define SPANPROF_EXPORT_HTTP_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_HTTP_BODY_MAX (64u << 10)
#define SP_HTTP_USER_AGENT "spanprof/0.1"

struct sp_http_client_opts {
	const char *url;		/* full URL, already validated */
	const char *headers;		/* OTEL_EXPORTER_OTLP_HEADERS syntax, or NULL */
	bool gzip;
	uint32_t timeout_ms;
	const char *ca_file;
	const char *client_cert;
	const char *client_key;
	const atomic_bool *stop;	/* abort transfers when true; may be NULL */
	const char *content_type;	/* NULL: application/x-protobuf */
};

struct sp_http_result {
	long status;		/* HTTP status, 0 when no answer */
	bool transient;		/* no answer, and worth retrying */
	bool aborted;		/* cut short by *stop */
	bool truncated;		/* body longer than SP_HTTP_BODY_MAX */
	bool has_retry_after;
	char retry_after[128];
	char content_type[128];
	char error[256];	/* transport error text, "" on an answer */
	const uint8_t *body;	/* valid until the next post */
	size_t body_len;
	uint64_t bytes_sent;	/* request body bytes uploaded */
	uint64_t latency_ns;
};

struct sp_http_client;

/* 0, or a negative errno with a one-line message in err. */
int sp_http_client__new(const struct sp_http_client_opts *o, struct sp_http_client **out,
			char *err, size_t err_len);
void sp_http_client__free(struct sp_http_client *c);	/* NULL-safe */
/* One attempt; always fills *r.  Returns 0 (see r) or -ENOMEM. */
int sp_http_client__post(struct sp_http_client *c, const uint8_t *body, size_t len,
			 struct sp_http_result *r);
/* Thread-safe: makes a transfer in progress re-check *stop now. */
void sp_http_client__wakeup(struct sp_http_client *c);

#endif
