/* SPDX-License-Identifier: MIT */
/*
 * exporter.c - the export queue and thread (contract: exporter.h).
 *
 * Threads: the submitter (any one thread) encodes and queues under the
 * mutex, never touching the network; the export thread pops one batch at a
 * time and delivers it outside the mutex (files first, then HTTP with the
 * retry policy of retry.h).  The mutex is only held for queue operations
 * and counter updates, so submit, flush and stats never wait for I/O.
 *
 * Retries: a retryable outcome (429/502/503/504, connection failure or
 * timeout) waits Retry-After when the answer had a valid one (capped at
 * max_backoff_ms), else a full-jitter exponential backoff, then tries
 * again, up to max_attempts attempts; then the batch is dropped
 * (batches_dropped_failed).  Any other status drops the batch at once.  A
 * 2xx is exported; its partial_success is counted and logged, never
 * retried.  One stderr line per failed batch (not per attempt), prefixed
 * "spanprof export:".
 *
 * Stopping: sp_exporter__free sets stop, signals the condition variables
 * (a backoff is a timed wait on one) and wakes curl's poll; the export
 * thread abandons its batch and exits.
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
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "export/config.h"
#include "export/exporter.h"
#include "export/file_sink.h"
#include "export/http_client.h"
#include "export/http_parse.h"
#include "export/otlp_response.h"
#include "export/queue.h"
#include "export/retry.h"
#include "profile/codec.h"
#include "profile/profile.h"

#define LOG_PREFIX "spanprof export: "

struct sp_exporter {
	struct sp_export_config cfg;	/* defaults applied; strings not owned */
	char *url;
	struct sp_http_client *http;	/* NULL: no network export */
	struct sp_file_sink *files;	/* NULL: no files */

	pthread_mutex_t lock;
	pthread_cond_t work;		/* queue non-empty, or stop */
	pthread_cond_t idle;		/* queue empty and nothing in flight */
	pthread_cond_t stopc;		/* stop (wakes a backoff) */
	bool sync_init;
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;

	struct sp_queue q;
	struct sp_batch *inflight;
	struct sp_export_stats st;
	uint64_t rng;			/* export thread only */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec deadline_in(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static void count_dropped_locked(struct sp_exporter *e, const struct sp_batch *b,
				 uint64_t *counter)
{
	(*counter)++;
	e->st.samples_dropped += b->n_samples;
}

static void drop_failed(struct sp_exporter *e, const struct sp_batch *b)
{
	pthread_mutex_lock(&e->lock);
	count_dropped_locked(e, b, &e->st.batches_dropped_failed);
	pthread_mutex_unlock(&e->lock);
}

/* Sleeps ms unless stopped first; true when stopped. */
static bool wait_or_stop(struct sp_exporter *e, uint64_t ms)
{
	struct timespec dl = deadline_in(ms);
	bool stop;

	pthread_mutex_lock(&e->lock);
	while (!(stop = atomic_load(&e->stop)))
		if (pthread_cond_timedwait(&e->stopc, &e->lock, &dl) == ETIMEDOUT)
			break;
	stop = atomic_load(&e->stop);
	pthread_mutex_unlock(&e->lock);
	return stop;
}

/* What the server said, for the log line: google.rpc.Status's message
 * when the body is protobuf, else the start of a text body. */
static void describe_answer(const struct sp_http_result *res, char *out, size_t out_len)
{
	char msg[200];
	int32_t code;

	out[0] = '\0';
	if (!res->body_len)
		return;
	if (!strncasecmp(res->content_type, "application/x-protobuf", 22) ||
	    !strncasecmp(res->content_type, "application/protobuf", 20)) {
		if (!sp_rpc_status__decode(res->body, res->body_len, &code, msg, sizeof(msg)) &&
		    msg[0])
			snprintf(out, out_len, ": %s", msg);
		return;
	}
	if (!strncasecmp(res->content_type, "text/", 5) ||
	    !strncasecmp(res->content_type, "application/json", 16)) {
		sp_log_sanitize((const char *)res->body, res->body_len, msg, sizeof(msg));
		snprintf(out, out_len, ": %s", msg);
	}
}

const double sp_export_latency_bounds_s[SP_EXPORT_LATENCY_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static unsigned latency_bucket(uint64_t ns)
{
	unsigned i = 0;

	while (i < SP_EXPORT_LATENCY_BUCKETS && (double)ns > sp_export_latency_bounds_s[i] * 1e9)
		i++;
	return i;
}

static void on_exported(struct sp_exporter *e, const struct sp_batch *b,
			const struct sp_http_result *res)
{
	char msg[200];
	int64_t rejected = 0;
	int r;

	r = sp_otlp_response__partial(res->body, res->body_len, &rejected, msg, sizeof(msg));
	pthread_mutex_lock(&e->lock);
	e->st.batches_exported++;
	e->st.latency_ns_sum += res->latency_ns;
	e->st.latency_buckets[latency_bucket(res->latency_ns)]++;
	if (res->latency_ns > e->st.latency_ns_max)
		e->st.latency_ns_max = res->latency_ns;
	if (!r && rejected > 0)
		e->st.partial_success_rejected += (uint64_t)rejected;
	pthread_mutex_unlock(&e->lock);
	if (!r && (rejected > 0 || msg[0]))
		fprintf(stderr, LOG_PREFIX "partial success for a batch of %zu bytes: %lld profiles rejected%s%s\n",
			b->len, (long long)rejected, msg[0] ? ": " : "", msg);
}

/* Delivers b over HTTP with the retry policy.  true when b is exported or
 * dropped (counted); false when abandoned because the exporter is stopping
 * (sp_exporter__free reports it). */
static bool send_batch(struct sp_exporter *e, const struct sp_batch *b)
{
	struct sp_http_result res;
	enum sp_retry_verdict v;
	char why[300], detail[220];
	uint32_t attempt;

	for (attempt = 1;; attempt++) {
		uint64_t delay;

		if (sp_http_client__post(e->http, b->data, b->len, &res) || res.aborted) {
			if (!res.aborted) {	/* -ENOMEM before any I/O */
				fprintf(stderr, LOG_PREFIX "batch of %zu bytes (%llu samples) dropped: out of memory\n",
					b->len, (unsigned long long)b->n_samples);
				drop_failed(e, b);
				return true;
			}
			return false;
		}
		v = sp_retry__classify(res.status, res.transient);
		pthread_mutex_lock(&e->lock);
		e->st.requests++;
		e->st.bytes_sent += res.bytes_sent;
		if (v != SP_RETRY_DONE)
			e->st.request_failures++;
		pthread_mutex_unlock(&e->lock);
		if (v == SP_RETRY_DONE) {
			on_exported(e, b, &res);
			return true;
		}
		if (res.status) {
			describe_answer(&res, detail, sizeof(detail));
			snprintf(why, sizeof(why), "HTTP %ld%s", res.status, detail);
		} else {
			snprintf(why, sizeof(why), "%s", res.error);
		}
		if (v == SP_RETRY_FAIL || attempt >= e->cfg.max_attempts) {
			fprintf(stderr, LOG_PREFIX "batch of %zu bytes (%llu samples) dropped after %u attempt%s (%s): %s\n",
				b->len, (unsigned long long)b->n_samples, attempt,
				attempt == 1 ? "" : "s",
				v == SP_RETRY_FAIL ? "not retryable" : "retries exhausted", why);
			drop_failed(e, b);
			return true;
		}
		if (!res.has_retry_after ||
		    sp_http__parse_retry_after(res.retry_after, strlen(res.retry_after),
					       time(NULL), e->cfg.max_backoff_ms, &delay))
			delay = sp_retry__backoff_ms(attempt, e->cfg.initial_backoff_ms,
						     e->cfg.max_backoff_ms,
						     sp_retry__rand(&e->rng));
		pthread_mutex_lock(&e->lock);
		e->st.retries++;
		pthread_mutex_unlock(&e->lock);
		if (wait_or_stop(e, delay))
			return false;
	}
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
	if (e->http)
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
	pthread_condattr_t ca;
	int r;

	r = pthread_condattr_init(&ca);
	if (r)
		return -r;
	r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_mutex_init(&e->lock, NULL);
	if (!r && (r = pthread_cond_init(&e->work, &ca)))
		pthread_mutex_destroy(&e->lock);
	if (!r && (r = pthread_cond_init(&e->idle, &ca))) {
		pthread_cond_destroy(&e->work);
		pthread_mutex_destroy(&e->lock);
	}
	if (!r && (r = pthread_cond_init(&e->stopc, &ca))) {
		pthread_cond_destroy(&e->idle);
		pthread_cond_destroy(&e->work);
		pthread_mutex_destroy(&e->lock);
	}
	pthread_condattr_destroy(&ca);
	if (!r)
		e->sync_init = true;
	return -r;
}

int sp_exporter__new(const struct sp_export_config *cfg, struct sp_exporter **out,
		     char *err, size_t err_len)
{
	struct sp_http_client_opts ho = { 0 };
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
	if (getrandom(&e->rng, sizeof(e->rng), GRND_NONBLOCK) != sizeof(e->rng))
		e->rng = mono_ns();
	e->rng |= 1;

	if (e->cfg.output_dir) {
		r = sp_file_sink__new(e->cfg.output_dir, e->cfg.max_files, e->cfg.max_file_bytes,
				      e->cfg.gzip, &e->files, &removed, err, err_len);
		if (r)
			goto fail;
		e->st.files_removed = removed;
	}
	if (e->url) {
		ho.url = e->url;
		ho.headers = e->cfg.headers;
		ho.gzip = e->cfg.gzip;
		ho.timeout_ms = e->cfg.timeout_ms;
		ho.ca_file = e->cfg.ca_file;
		ho.client_cert = e->cfg.client_cert;
		ho.client_key = e->cfg.client_key;
		ho.stop = &e->stop;
		r = sp_http_client__new(&ho, &e->http, err, err_len);
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
		pthread_cond_broadcast(&e->stopc);
		pthread_mutex_unlock(&e->lock);
		sp_http_client__wakeup(e->http);
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
	sp_http_client__free(e->http);
	sp_file_sink__free(e->files);
	if (e->sync_init) {
		pthread_cond_destroy(&e->stopc);
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
	struct timespec dl = deadline_in(timeout_ms);
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
	if (!out)
		return;
	if (!e) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	out->queue_bytes = e->q.bytes;
	out->queue_batches = e->q.n;
	out->inflight_bytes = e->inflight ? e->inflight->len : 0;
	pthread_mutex_unlock(&e->lock);
}
