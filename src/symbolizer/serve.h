/* SPDX-License-Identifier: MIT */
/*
 * serve.h - the OTLP/HTTP profiles receiver of spanprof-symbolizer.
 *
 * Contract:
 *   - POST /v1development/profiles with Content-Type
 *     application/x-protobuf (an ExportProfilesServiceRequest), identity or
 *     gzip Content-Encoding.  The body is decoded in the HTTP thread pool
 *     (so malformed input is answered at once) and the profile is queued
 *     for symbolization; the answer is 200 with an empty
 *     ExportProfilesServiceResponse once queued.
 *   - Refusals, each counted: 413 body over max_body (from Content-Length
 *     before the body when the client expects "100 Continue", else after
 *     reading and discarding it; or while reading) or decompressed over
 *     max_decompressed (gzip bomb) or decoded over the decoder's limits;
 *     400 malformed gzip or protobuf, with a google.rpc.Status body
 *     (code 3 INVALID_ARGUMENT); 415 other content types or encodings; 503
 *     with Retry-After when the queue is full or the bytes buffered by all
 *     connections would pass buffer_budget; 404 other paths; 405 other
 *     methods.  GET /metrics answers Prometheus text with every counter.
 *   - Workers take profiles from the bounded queue, symbolize them through
 *     the shared resolver (kernel frames through the shared kallsyms
 *     snapshot set, looked up by the kernel's build id) and then write them to output_dir as gzip'd OTLP
 *     (profile-SEQ.otlp.pb.gz, written to a temporary name and renamed)
 *     and/or forward them: each worker owns one sp_sender (export/sender.h:
 *     OTLP/HTTP's retry rules, headers, TLS, timeout, compression from
 *     o->forward), created after after_bind so its files are checked as
 *     the user serve runs as.  Every profile taken from the queue ends
 *     forwarded, failed or aborted, each counted; nothing blocks the HTTP
 *     threads.
 *   - Shutdown: when *stop becomes true the daemon stops accepting, the
 *     workers drain the queue (forwarding with the full retry rules) for
 *     up to shutdown_timeout_ms; then forwards still in progress or still
 *     to come are aborted (forward_aborted_total) and the workers finish.
 *   - Memory: at most max_connections connections, buffered request bytes
 *     under buffer_budget, at most queue_len decoded profiles waiting.
 *   - sp_serve__run() returns when *stop becomes true (the caller's signal
 *     handling), after draining the queue.  0 or a negative errno; every
 *     failure is reported on stderr in one line.
 */
#ifndef SPANPROF_SYMBOLIZER_SERVE_H
#define SPANPROF_SYMBOLIZER_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/exporter.h"
#include "kallsyms.h"
#include "resolve.h"

struct sp_serve_opts {
	const char *listen;		/* "HOST:PORT" or "[V6]:PORT" */
	/* the next hop (profiles_url, used as is), OTLP/HTTP settings; NULL:
	 * no forwarding.  Not owned; must outlive the call. */
	const struct sp_export_config *forward;
	const char *output_dir;		/* NULL: no files */
	struct sp_resolver *resolver;	/* required, shared, not owned */
	struct sp_ksyms_set *ksyms;	/* kernel snapshots; NULL none; not owned */
	uint32_t queue_len;		/* default 16 */
	uint32_t workers;		/* default 1 */
	uint32_t http_threads;		/* default 2 */
	uint32_t max_connections;	/* default 64 */
	size_t max_body;		/* default 16 MiB */
	size_t max_decompressed;	/* default SP_DECODE_MAX_BYTES */
	size_t buffer_budget;		/* default 64 MiB */
	uint32_t shutdown_timeout_ms;	/* drain deadline, default 10000 */
	bool quiet;
	/* called once the socket is bound (e.g. to drop privileges);
	 * non-zero aborts */
	int (*after_bind)(void *arg);
	void *after_bind_arg;
};

int sp_serve__run(const struct sp_serve_opts *o, volatile bool *stop);

#endif /* SPANPROF_SYMBOLIZER_SERVE_H */
