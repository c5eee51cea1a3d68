/* SPDX-License-Identifier: MIT */
/*
 * sender.c - one message delivered with OTLP/HTTP's retry rules
 * (contract: sender.h).
 *
 * The attempt itself is http_client.c's; the verdict on each attempt is
 * retry.c's; Retry-After parsing is http_parse.c's.  This file is the loop
 * between them and the counters.  The mutex guards the counters and the
 * backoff wait (a timed wait on a condition variable that
 * sp_sender__wakeup signals); it is never held across I/O.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "export/config.h"
#include "export/http_client.h"
#include "export/http_parse.h"
#include "export/monotonic.h"
#include "export/otlp_response.h"
#include "export/retry.h"
#include "export/sender.h"

struct sp_sender {
	struct sp_export_config cfg;	/* defaults applied; strings not owned */
	char *url;
	const char *prefix;
	struct sp_http_client *http;
	const atomic_bool *stop;	/* may be NULL */
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* wakeup: a backoff re-checks *stop */
	bool sync_init;
	uint64_t rng;			/* the sending thread only */
	struct sp_sender_stats st;
};

const double sp_export_latency_bounds_s[SP_EXPORT_LATENCY_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static bool stopped(const struct sp_sender *s)
{
	return s->stop && atomic_load(s->stop);
}

/* Sleeps ms unless stopped first; true when stopped. */
static bool wait_or_stop(struct sp_sender *s, uint64_t ms)
{
	struct timespec dl = sp_mono__deadline(ms);
	bool stop;

	pthread_mutex_lock(&s->lock);
	while (!(stop = stopped(s)))
		if (pthread_cond_timedwait(&s->wake, &s->lock, &dl) == ETIMEDOUT)
			break;
	stop = stopped(s);
	pthread_mutex_unlock(&s->lock);
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

static unsigned latency_bucket(uint64_t ns)
{
	unsigned i = 0;

	while (i < SP_EXPORT_LATENCY_BUCKETS && (double)ns > sp_export_latency_bounds_s[i] * 1e9)
		i++;
	return i;
}

static void on_delivered(struct sp_sender *s, const char *what, const struct sp_http_result *res)
{
	char msg[200];
	int64_t rejected = 0;
	int r;

	r = sp_otlp_response__partial(res->body, res->body_len, &rejected, msg, sizeof(msg));
	pthread_mutex_lock(&s->lock);
	s->st.delivered++;
	s->st.latency_ns_sum += res->latency_ns;
	s->st.latency_buckets[latency_bucket(res->latency_ns)]++;
	if (res->latency_ns > s->st.latency_ns_max)
		s->st.latency_ns_max = res->latency_ns;
	if (!r && rejected > 0)
		s->st.partial_success_rejected += (uint64_t)rejected;
	pthread_mutex_unlock(&s->lock);
	if (!r && (rejected > 0 || msg[0]))
		fprintf(stderr, "%spartial success for %s: %lld profiles rejected%s%s\n", s->prefix,
			what, (long long)rejected, msg[0] ? ": " : "", msg);
}

static enum sp_send_result count_end(struct sp_sender *s, enum sp_send_result v)
{
	pthread_mutex_lock(&s->lock);
	if (v == SP_SEND_FAILED)
		s->st.failed++;
	else if (v == SP_SEND_ABORTED)
		s->st.aborted++;
	pthread_mutex_unlock(&s->lock);
	return v;
}

enum sp_send_result sp_sender__send(struct sp_sender *s, const uint8_t *body, size_t len,
				    const char *what)
{
	struct sp_http_result res;
	enum sp_retry_verdict v;
	char why[300], detail[220];
	uint32_t attempt;

	for (attempt = 1;; attempt++) {
		uint64_t delay;

		if (stopped(s))
			return count_end(s, SP_SEND_ABORTED);
		if (sp_http_client__post(s->http, body, len, &res) || res.aborted) {
			if (res.aborted)
				return count_end(s, SP_SEND_ABORTED);
			/* -ENOMEM before any I/O */
			fprintf(stderr, "%s%s dropped: out of memory\n", s->prefix, what);
			return count_end(s, SP_SEND_FAILED);
		}
		v = sp_retry__classify(res.status, res.transient);
		pthread_mutex_lock(&s->lock);
		s->st.requests++;
		s->st.bytes_sent += res.bytes_sent;
		if (v != SP_RETRY_DONE)
			s->st.request_failures++;
		pthread_mutex_unlock(&s->lock);
		if (v == SP_RETRY_DONE) {
			on_delivered(s, what, &res);
			return SP_SEND_DELIVERED;
		}
		if (res.status) {
			describe_answer(&res, detail, sizeof(detail));
			snprintf(why, sizeof(why), "HTTP %ld%s", res.status, detail);
		} else {
			snprintf(why, sizeof(why), "%s", res.error);
		}
		if (v == SP_RETRY_FAIL || attempt >= s->cfg.max_attempts) {
			fprintf(stderr, "%s%s dropped after %u attempt%s (%s): %s\n", s->prefix, what,
				attempt, attempt == 1 ? "" : "s",
				v == SP_RETRY_FAIL ? "not retryable" : "retries exhausted", why);
			return count_end(s, SP_SEND_FAILED);
		}
		if (!res.has_retry_after ||
		    sp_http__parse_retry_after(res.retry_after, strlen(res.retry_after),
					       time(NULL), s->cfg.max_backoff_ms, &delay))
			delay = sp_retry__backoff_ms(attempt, s->cfg.initial_backoff_ms,
						     s->cfg.max_backoff_ms,
						     sp_retry__rand(&s->rng));
		pthread_mutex_lock(&s->lock);
		s->st.retries++;
		pthread_mutex_unlock(&s->lock);
		if (wait_or_stop(s, delay))
			return count_end(s, SP_SEND_ABORTED);
	}
}

static int init_sync(struct sp_sender *s)
{
	int r = -pthread_mutex_init(&s->lock, NULL);

	if (!r && (r = sp_mono__cond_init(&s->wake)))
		pthread_mutex_destroy(&s->lock);
	if (!r)
		s->sync_init = true;
	return r;
}

int sp_sender__new(const struct sp_export_config *cfg, const char *log_prefix,
		   const atomic_bool *stop, struct sp_sender **out, char *err, size_t err_len)
{
	struct sp_http_client_opts ho = { 0 };
	struct sp_sender *s;
	int r;

	if (!out || !cfg || !err || !err_len)
		return -EINVAL;
	*out = NULL;
	err[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_len, "out of memory creating the HTTP sender");
		return -ENOMEM;
	}
	s->prefix = log_prefix ? log_prefix : "";
	s->stop = stop;
	r = sp_export_config__resolve(cfg, &s->cfg, &s->url, err, err_len);
	if (r)
		goto fail;
	if (!s->url) {
		snprintf(err, err_len, "no URL to send to: set an OTLP endpoint");
		r = -EINVAL;
		goto fail;
	}
	if (getrandom(&s->rng, sizeof(s->rng), GRND_NONBLOCK) != sizeof(s->rng))
		s->rng = sp_mono__ns();
	s->rng |= 1;
	ho.url = s->url;
	ho.headers = s->cfg.headers;
	ho.gzip = s->cfg.gzip;
	ho.timeout_ms = s->cfg.timeout_ms;
	ho.ca_file = s->cfg.ca_file;
	ho.client_cert = s->cfg.client_cert;
	ho.client_key = s->cfg.client_key;
	ho.stop = stop;
	ho.content_type = s->cfg.content_type;
	r = sp_http_client__new(&ho, &s->http, err, err_len);
	if (r)
		goto fail;
	r = init_sync(s);
	if (r) {
		snprintf(err, err_len, "HTTP sender: cannot initialise locks: %s", strerror(-r));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sp_sender__free(s);
	return r;
}

void sp_sender__free(struct sp_sender *s)
{
	if (!s)
		return;
	sp_http_client__free(s->http);
	if (s->sync_init) {
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->lock);
	}
	free(s->url);
	free(s);
}

void sp_sender__wakeup(struct sp_sender *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	sp_http_client__wakeup(s->http);
}

void sp_sender__stats(struct sp_sender *s, struct sp_sender_stats *out)
{
	if (!out)
		return;
	if (!s) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}
