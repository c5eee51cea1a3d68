/* SPDX-License-Identifier: MIT */
/*
 * exporter.c - the export queue and thread (contract: exporter.h).
 *
 * Threads: the submitter (any one thread) encodes and queues under the
 * mutex, never touching the network; the export thread pops one batch at a
 * time and delivers it outside the mutex (files first, then HTTP through
 * the sender, sender.h, which owns OTLP's retry rules and the request
 * counters).  The mutex is only held for queue operations and counter
 * updates, so submit, flush and stats never wait for I/O.
 *
 * A batch the sender fails (not retryable, or retries exhausted) is
 * dropped and counted in batches_dropped_failed; the sender logs one
 * stderr line for it, prefixed "spanprof export: ".
 *
 * Stopping: sp_exporter__free sets stop, signals the queue's condition
 * variable and wakes the sender (a backoff or a transfer in progress ends
 * at once); the export thread abandons its batch and exits.
 *
 * Memory: queued bytes <= queue_bytes, plus the one batch in flight, plus
 * the HTTP client's fixed 64 KiB response buffer.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/config.h"
#include "export/exporter.h"
#include "export/file_sink.h"
#include "export/monotonic.h"
#include "export/queue.h"
#include "export/sender.h"
#include "profile/codec.h"
#include "profile/profile.h"

#define LOG_PREFIX "spanprof export: "

struct sp_exporter {
	struct sp_export_config cfg;	/* defaults applied; strings not owned */
	char *url;
	struct sp_sender *sender;	/* NULL: no network export */
	struct sp_file_sink *files;	/* NULL: no files */

	pthread_mutex_t lock;
	pthread_cond_t work;		/* queue non-empty, or stop */
	pthread_cond_t idle;		/* queue empty and nothing in flight */
	bool sync_init;
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;

	struct sp_queue q;
	struct sp_batch *inflight;
	struct sp_export_stats st;	/* request counters live in the sender */
};

static void count_dropped_locked(struct sp_exporter *e, const struct sp_batch *b,
				 uint64_t *counter)
{
	(*counter)++;
	e->st.samples_dropped += b->n_samples;
}

/* Delivers b over HTTP.  true when b is exported or dropped (counted);
 * false when abandoned because the exporter is stopping
 * (sp_exporter__free reports it). */
static bool send_batch(struct sp_exporter *e, const struct sp_batch *b)
{
	enum sp_send_result r;
	char what[96];

	snprintf(what, sizeof(what), "batch of %zu bytes (%llu samples)", b->len,
		 (unsigned long long)b->n_samples);
	r = sp_sender__send(e->sender, b->data, b->len, what);
	if (r == SP_SEND_ABORTED)
		return false;
	pthread_mutex_lock(&e->lock);
	if (r == SP_SEND_DELIVERED)
		e->st.batches_exported++;
	else
		count_dropped_locked(e, b, &e->st.batches_dropped_failed);
	pthread_mutex_unlock(&e->lock);
	return true;
}

/* true when b is accounted for (exported or dropped) */
static bool deliver(struct sp_exporter *e, const struct sp_batch *b)
{
	char err[300];
	uint32_t removed = 0;
	int r = 0;

	if (e->files) {
		r = sp_file_sink__write(e->files, b->data, b->len, &removed, err, sizeof(err));
		pthread_mutex_lock(&e->lock);
		e->st.files_removed += removed;
		if (r)
			e->st.files_failed++;
		else
			e->st.files_written++;
		pthread_mutex_unlock(&e->lock);
		if (r)
			fprintf(stderr, LOG_PREFIX "%s\n", err);
	}
	if (e->sender)
		return send_batch(e, b);
	/* files only: the file decides */
	pthread_mutex_lock(&e->lock);
	if (r)
		count_dropped_locked(e, b, &e->st.batches_dropped_failed);
	else
		e->st.batches_exported++;
	pthread_mutex_unlock(&e->lock);
	return true;
}

static void *export_thread(void *arg)
{
	struct sp_exporter *e = arg;
	struct sp_batch *b;
	bool done;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!atomic_load(&e->stop) && !e->q.head) {
			pthread_cond_broadcast(&e->idle);
			pthread_cond_wait(&e->work, &e->lock);
		}
		if (atomic_load(&e->stop))
			break;
		b = sp_queue__pop(&e->q);
		e->inflight = b;
		pthread_mutex_unlock(&e->lock);

		done = deliver(e, b);

		pthread_mutex_lock(&e->lock);
		if (!done)
			break;	/* stopping: free() reports e->inflight */
		e->inflight = NULL;
		sp_batch__free(b);
	}
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

static int init_sync(struct sp_exporter *e)
{
	int r = -pthread_mutex_init(&e->lock, NULL);

	if (!r && (r = sp_mono__cond_init(&e->work)))
		pthread_mutex_destroy(&e->lock);
	if (!r && (r = sp_mono__cond_init(&e->idle))) {
		pthread_cond_destroy(&e->work);
		pthread_mutex_destroy(&e->lock);
	}
	if (!r)
		e->sync_init = true;
	return r;
}

int sp_exporter__new(const struct sp_export_config *cfg, struct sp_exporter **out,
		     char *err, size_t err_len)
{
	struct sp_exporter *e;
	sigset_t all, old;
	uint32_t removed = 0;
	int r;

	if (!out || !cfg || !err || !err_len)
		return -EINVAL;
	*out = NULL;
	err[0] = '\0';
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, err_len, "out of memory creating the exporter");
		return -ENOMEM;
	}
	r = sp_export_config__resolve(cfg, &e->cfg, &e->url, err, err_len);
	if (r)
		goto fail;
	sp_queue__init(&e->q, e->cfg.queue_bytes);
	atomic_init(&e->stop, false);

	if (e->cfg.output_dir) {
		r = sp_file_sink__new(e->cfg.output_dir, e->cfg.max_files, e->cfg.max_file_bytes,
				      e->cfg.gzip, &e->files, &removed, err, err_len);
		if (r)
			goto fail;
		e->st.files_removed = removed;
	}
	if (e->url) {
		r = sp_sender__new(&e->cfg, LOG_PREFIX, &e->stop, &e->sender, err, err_len);
		if (r)
			goto fail;
	}
	r = init_sync(e);
	if (r) {
		snprintf(err, err_len, "exporter: cannot initialise locks: %s", strerror(-r));
		goto fail;
	}
	/* the export thread takes no signals: they belong to the agent */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&e->thread, NULL, export_thread, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		snprintf(err, err_len, "exporter: cannot start the export thread: %s",
			 strerror(-r));
		goto fail;
	}
	e->thread_started = true;
	pthread_setname_np(e->thread, "sp-export");
	*out = e;
	return 0;
fail:
	sp_exporter__free(e);
	return r;
}

void sp_exporter__free(struct sp_exporter *e)
{
	struct sp_batch *left = NULL, *b;
	uint64_t n = 0, samples = 0;

	if (!e)
		return;
	if (e->thread_started) {
		pthread_mutex_lock(&e->lock);
		atomic_store(&e->stop, true);
		pthread_cond_broadcast(&e->work);
		pthread_mutex_unlock(&e->lock);
		sp_sender__wakeup(e->sender);
		pthread_join(e->thread, NULL);
	}
	left = sp_queue__take_all(&e->q);
	if (e->inflight) {
		e->inflight->next = left;
		left = e->inflight;
		e->inflight = NULL;
	}
	for (b = left; b; b = b->next) {
		n++;
		samples += b->n_samples;
	}
	if (n)
		fprintf(stderr, LOG_PREFIX "stopping: %llu batch(es) (%llu samples) not exported, dropped\n",
			(unsigned long long)n, (unsigned long long)samples);
	sp_batch__free_list(left);
	sp_sender__free(e->sender);
	sp_file_sink__free(e->files);
	if (e->sync_init) {
		pthread_cond_destroy(&e->idle);
		pthread_cond_destroy(&e->work);
		pthread_mutex_destroy(&e->lock);
	}
	free(e->url);
	free(e);
}

static uint64_t count_events(const struct sp_profile *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->n_samples; i++)
		n += p->samples[i].count > 0 ? (uint64_t)p->samples[i].count : 0;
	return n;
}

int sp_exporter__submit(struct sp_exporter *e, const struct sp_profile *p)
{
	struct sp_batch *b, *dropped = NULL, *d;
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len = 0, gz_len = 0;
	int r;

	if (!e || !p)
		return -EINVAL;
	r = sp_otlp__encode(p, &raw, &raw_len);
	if (r)
		return r;
	if (e->cfg.gzip) {
		r = sp_gzip(raw, raw_len, &gz, &gz_len);
		free(raw);
		if (r)
			return r;
		raw = gz;
		raw_len = gz_len;
	}
	b = sp_batch__new(raw, raw_len, count_events(p));
	if (!b) {
		free(raw);
		return -ENOMEM;
	}
	pthread_mutex_lock(&e->lock);
	e->st.batches_submitted++;
	r = sp_queue__push(&e->q, b, e->cfg.drop_policy, &dropped);
	if (r) {
		count_dropped_locked(e, b, &e->st.batches_dropped_queue_full);
	} else {
		for (d = dropped; d; d = d->next)
			count_dropped_locked(e, d, &e->st.batches_dropped_queue_full);
		pthread_cond_signal(&e->work);
	}
	pthread_mutex_unlock(&e->lock);
	if (r)
		sp_batch__free(b);
	sp_batch__free_list(dropped);
	return r;
}

int sp_exporter__flush(struct sp_exporter *e, uint32_t timeout_ms)
{
	struct timespec dl = sp_mono__deadline(timeout_ms);
	int r = 0;

	if (!e)
		return 0;
	pthread_mutex_lock(&e->lock);
	while ((e->q.head || e->inflight) && !atomic_load(&e->stop))
		if (pthread_cond_timedwait(&e->idle, &e->lock, &dl) == ETIMEDOUT) {
			r = (e->q.head || e->inflight) ? -ETIMEDOUT : 0;
			break;
		}
	pthread_mutex_unlock(&e->lock);
	return r;
}

void sp_exporter__stats(struct sp_exporter *e, struct sp_export_stats *out)
{
	struct sp_sender_stats ss;

	if (!out)
		return;
	if (!e) {
		memset(out, 0, sizeof(*out));
		return;
	}
	sp_sender__stats(e->sender, &ss);
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	out->requests = ss.requests;
	out->request_failures = ss.request_failures;
	out->retries = ss.retries;
	out->partial_success_rejected = ss.partial_success_rejected;
	out->bytes_sent = ss.bytes_sent;
	out->latency_ns_sum = ss.latency_ns_sum;
	out->latency_ns_max = ss.latency_ns_max;
	memcpy(out->latency_buckets, ss.latency_buckets, sizeof(out->latency_buckets));
	out->queue_bytes = e->q.bytes;
	out->queue_batches = e->q.n;
	out->inflight_bytes = e->inflight ? e->inflight->len : 0;
	pthread_mutex_unlock(&e->lock);
}
