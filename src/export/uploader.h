/* SPDX-License-Identifier: MIT */
/*
 * uploader.h - ships host-symbol blobs (base/symstore.h: kernel snapshots,
 * the vDSO, JIT perf-map pieces) to `spanprof-symbolizer serve` next to
 * the profiles, without ever blocking the caller on the network.
 *
 * Where: the profiles endpoint's sibling path SP_SYMSTORE_UPLOAD_PATH
 * (endpoint http://h:4318 -> http://h:4318/spanprof/v1/symbols; a full
 * profiles URL ending in /v1development/profiles has that suffix replaced,
 * any other gets the path appended), with the same headers, TLS files,
 * timeout and compression; one sp_sender (sender.h: OTLP/HTTP's retry
 * rules and counters) on its own thread.
 *
 * sp_uploader__submit copies one blob into the queue (the upload
 * envelope, gzip'd when the configuration says so) and returns at once: 0
 * queued, 1 already delivered or already queued (content-addressed: the
 * key names the content; at most SP_UPLOADER_KNOWN keys remembered, the
 * oldest forgotten first), -ENOSPC when the queue (queue_bytes of encoded
 * blobs) is full (counted, nothing queued), -ENOMEM.
 * When a blob fails for good (not retryable, retries exhausted, or
 * dropped at shutdown) on_lost(ctx, kind, key, key_len) is called on the
 * upload thread, so the producer can offer it again (a kernel snapshot)
 * or start a JIT chain over.
 * sp_uploader__flush waits until everything queued has been tried, at
 * most timeout_ms (-ETIMEDOUT): the agent flushes before it submits an
 * interval's profile, so the symbolizer has a profile's symbols first.
 *
 * Memory: queue_bytes + one blob in flight + the HTTP client's buffer +
 * SP_UPLOADER_KNOWN keys.
 */
#ifndef SPANPROF_EXPORT_UPLOADER_H
#define SPANPROF_EXPORT_UPLOADER_H

#include <stddef.h>
#include <stdint.h>

#include "export/exporter.h"
#include "export/sender.h"

#define SP_UPLOADER_KNOWN 8192

typedef void (*sp_uploader_lost_fn)(void *ctx, int kind, const uint8_t *key, size_t key_len);

struct sp_uploader_stats {
	uint64_t submitted;		/* queued */
	uint64_t known;			/* submits skipped: delivered or queued already */
	uint64_t delivered;
	uint64_t failed;		/* not taken after the retry rules */
	uint64_t dropped_queue_full;
	uint64_t dropped_shutdown;
	uint64_t queue_bytes;		/* gauge */
	uint64_t queue_limit_bytes;
	struct sp_sender_stats sender;	/* requests, retries, bytes, latency */
};

struct sp_uploader;

/* cfg: the agent's export configuration (endpoint or profiles_url
 * required); queue_bytes 0 = 32 MiB. */
int sp_uploader__new(const struct sp_export_config *cfg, size_t queue_bytes,
		     sp_uploader_lost_fn on_lost, void *ctx, struct sp_uploader **out, char *err,
		     size_t err_len);
void sp_uploader__free(struct sp_uploader *u);	/* NULL-safe; drops what is queued */

int sp_uploader__submit(struct sp_uploader *u, int kind, const uint8_t *key, size_t key_len,
			const uint8_t *data, size_t len);
int sp_uploader__flush(struct sp_uploader *u, uint32_t timeout_ms);
void sp_uploader__stats(struct sp_uploader *u, struct sp_uploader_stats *st);
const char *sp_uploader__url(const struct sp_uploader *u);

#endif /* SPANPROF_EXPORT_UPLOADER_H */
