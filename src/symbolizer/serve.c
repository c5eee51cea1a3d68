// SPDX-License-Identifier: MIT
/*
 * serve.c - libmicrohttpd receiver, bounded work queue, symbolizing
 * workers that write files and/or forward.
 *
 * Contract: see serve.h.  Threads: libmicrohttpd's pool (http_threads)
 * runs the request handler: header checks, body buffering, gunzip and
 * decode; a decoded profile goes into a fixed ring (queue_len) under one
 * mutex.  Workers pop, symbolize, encode, write and forward (each with
 * its own sender, so forwards run in parallel on their own connections).
 * The main thread waits for *stop, stops the daemon, then lets the workers
 * drain the ring and joins them, aborting forwards past the shutdown
 * deadline.  The forward counters live in the senders and are summed into
 * ctr[] when /metrics or the final summary reads them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/metrics_text.h"
#include "base/rpc_status.h"
#include "export/sender.h"
#include "profile/codec.h"
#include "serve.h"
#include "symbolize.h"

#define PATH_PROFILES "/v1development/profiles"

enum ctr {
	C_REQUESTS, C_ACCEPTED, C_R400, C_R404, C_R405, C_R413, C_R415,
	C_R503_QUEUE, C_R503_BUDGET, C_SYMBOLIZED, C_FRAMES_RESOLVED,
	C_FRAMES_UNRESOLVED, C_FILES, C_FILE_ERRORS,
	/* C_FORWARDED..C_FORWARD_BYTES: summed from the senders */
	C_FORWARDED,
	C_FORWARD_FAILED, C_FORWARD_RETRIES, C_FORWARD_ABORTED,
	C_FORWARD_REQUESTS, C_FORWARD_REQUEST_FAILURES, C_FORWARD_PARTIAL,
	C_FORWARD_BYTES, C_ENCODE_ERRORS,
	C_KERNEL_RESOLVED, C_KERNEL_NO_BUILD_ID, C_KERNEL_NO_SNAPSHOT,
	C_KERNEL_MISMATCH, C_KERNEL_NOT_FOUND,
	C__MAX,
};

static const char *const ctr_names[C__MAX] = {
	[C_REQUESTS] = "requests_total",
	[C_ACCEPTED] = "accepted_total",
	[C_R400] = "rejected_malformed_total",
	[C_R404] = "rejected_not_found_total",
	[C_R405] = "rejected_method_total",
	[C_R413] = "rejected_too_large_total",
	[C_R415] = "rejected_content_type_total",
	[C_R503_QUEUE] = "rejected_queue_full_total",
	[C_R503_BUDGET] = "rejected_buffer_budget_total",
	[C_SYMBOLIZED] = "profiles_symbolized_total",
	[C_FRAMES_RESOLVED] = "frames_resolved_total",
	[C_FRAMES_UNRESOLVED] = "frames_unresolved_total",
	[C_KERNEL_RESOLVED] = "kernel_frames_resolved_total",
	[C_KERNEL_NO_BUILD_ID] = "kernel_frames_unresolved_no_build_id_total",
	[C_KERNEL_NO_SNAPSHOT] = "kernel_frames_unresolved_no_snapshot_total",
	[C_KERNEL_MISMATCH] = "kernel_frames_unresolved_build_id_mismatch_total",
	[C_KERNEL_NOT_FOUND] = "kernel_frames_unresolved_not_found_total",
	[C_FILES] = "files_written_total",
	[C_FILE_ERRORS] = "file_errors_total",
	[C_FORWARDED] = "forwarded_total",
	[C_FORWARD_FAILED] = "forward_failed_total",
	[C_FORWARD_RETRIES] = "forward_retries_total",
	[C_FORWARD_ABORTED] = "forward_aborted_total",
	[C_FORWARD_REQUESTS] = "forward_requests_total",
	[C_FORWARD_REQUEST_FAILURES] = "forward_request_failures_total",
	[C_FORWARD_PARTIAL] = "forward_partial_success_rejected_total",
	[C_FORWARD_BYTES] = "forward_bytes_sent_total",
	[C_ENCODE_ERRORS] = "encode_errors_total",
};

/* HELP text of each counter on /metrics (promtool wants one per family). */
static const char *const ctr_help[C__MAX] = {
	[C_REQUESTS] = "HTTP requests received, on any path",
	[C_ACCEPTED] = "Profiles accepted into the work queue (200)",
	[C_R400] = "Requests refused as malformed gzip or protobuf (400)",
	[C_R404] = "Requests for an unknown path (404)",
	[C_R405] = "Requests with a method the path does not take (405)",
	[C_R413] = "Requests over --max-body or the decompressed limit (413)",
	[C_R415] = "Requests with an unsupported content type or encoding (415)",
	[C_R503_QUEUE] = "Requests refused because the work queue was full (503)",
	[C_R503_BUDGET] =
		"Requests refused because the body buffer budget was spent (503)",
	[C_SYMBOLIZED] = "Profiles symbolized by the workers",
	[C_FRAMES_RESOLVED] = "User-space frames given a function name",
	[C_FRAMES_UNRESOLVED] = "User-space frames left without a name",
	[C_KERNEL_RESOLVED] = "Kernel frames named from a kallsyms snapshot",
	[C_KERNEL_NO_BUILD_ID] =
		"Kernel frames unnamed: the kernel mapping has no valid build id",
	[C_KERNEL_NO_SNAPSHOT] = "Kernel frames unnamed: no kallsyms snapshot is loaded",
	[C_KERNEL_MISMATCH] = "Kernel frames unnamed: no snapshot of that kernel build id",
	[C_KERNEL_NOT_FOUND] =
		"Kernel frames unnamed: the address is in no snapshot symbol",
	[C_FILES] = "Symbolized profiles written to --output-dir",
	[C_FILE_ERRORS] = "Symbolized profiles that could not be written",
	[C_FORWARDED] = "Symbolized profiles forwarded to the next hop",
	[C_FORWARD_FAILED] =
		"Symbolized profiles the next hop did not take (after retries)",
	[C_FORWARD_RETRIES] = "Retried forwarding attempts",
	[C_FORWARD_ABORTED] = "Forwards abandoned at the shutdown deadline",
	[C_FORWARD_REQUESTS] = "HTTP requests made to the next hop, retries included",
	[C_FORWARD_REQUEST_FAILURES] = "HTTP requests to the next hop not answered 2xx",
	[C_FORWARD_PARTIAL] =
		"Profiles the next hop reported rejected in a partial success",
	[C_FORWARD_BYTES] = "Request bytes sent to the next hop, every attempt",
	[C_ENCODE_ERRORS] = "Symbolized profiles that could not be encoded",
};

struct server {
	const struct sp_serve_opts *o;
	_Atomic uint64_t ctr[C__MAX];
	_Atomic uint64_t buffered;	/* bytes held by all connections */
	_Atomic uint64_t seq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sp_profile **ring;
	uint32_t head, len;
	bool closing;
	struct worker *workers;		/* o->workers of them */
	/* set once every worker's sender exists: /metrics, answered from
	 * the daemon's threads, reads them only after */
	atomic_bool senders_ready;
	atomic_bool abort_forward;	/* the senders' stop: shutdown deadline */
};

struct worker {
	struct server *s;
	struct sp_sender *fw;		/* NULL: no forwarding */
	pthread_t th;
};

struct req {
	uint8_t *buf;
	size_t len, cap;
	bool started;
	bool too_big;
	bool over_budget;
	bool gzip;
};

/* The forward counters are the senders' own; ctr[] gets their sum. */
static void forward_totals(struct server *s)
{
	uint64_t sum[C__MAX] = { 0 };

	if (!atomic_load(&s->senders_ready))
		return;
	for (uint32_t i = 0; i < s->o->workers; i++) {
		struct sp_sender_stats st;

		sp_sender__stats(s->workers[i].fw, &st);
		sum[C_FORWARDED] += st.delivered;
		sum[C_FORWARD_FAILED] += st.failed;
		sum[C_FORWARD_ABORTED] += st.aborted;
		sum[C_FORWARD_RETRIES] += st.retries;
		sum[C_FORWARD_REQUESTS] += st.requests;
		sum[C_FORWARD_REQUEST_FAILURES] += st.request_failures;
		sum[C_FORWARD_PARTIAL] += st.partial_success_rejected;
		sum[C_FORWARD_BYTES] += st.bytes_sent;
	}
	for (int i = C_FORWARDED; i <= C_FORWARD_BYTES; i++)
		s->ctr[i] = sum[i];
}

/* ------------------------------------------------------------ responses */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code,
			     const void *body, size_t len, const char *type,
			     bool retry_after)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (retry_after)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* An error answer: google.rpc.Status (base/rpc_status.h) as OTLP wants. */
static enum MHD_Result reply_status(struct MHD_Connection *c,
				    unsigned int http, int rpc_code,
				    const char *msg)
{
	uint8_t buf[512];
	size_t n = sp_rpc_status__encode(rpc_code, msg, buf, sizeof(buf));

	return reply(c, http, buf, n, "application/x-protobuf",
		     http == MHD_HTTP_SERVICE_UNAVAILABLE);
}

#define METRICS_BUF (32u << 10)	/* the text is about 8 KiB */
#define METRIC_PREFIX "spanprof_symbolizer_"

static void metric(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
		   const char *help, uint64_t v)
{
	char full[128];

	snprintf(full, sizeof(full), METRIC_PREFIX "%s", name);
	sp_metrics__family(b, full, t, help);
	sp_metrics__u64(b, full, NULL, v);
}

static enum MHD_Result reply_metrics(struct server *s,
				     struct MHD_Connection *c)
{
	struct sp_resolver_stats rs;
	struct sp_metrics_buf b;
	enum MHD_Result ret;
	uint32_t qlen;
	char *mem = malloc(METRICS_BUF);

	if (!mem)
		return MHD_NO;
	sp_metrics_buf__init(&b, mem, METRICS_BUF);
	forward_totals(s);
	for (int i = 0; i < C__MAX; i++)
		metric(&b, ctr_names[i], SP_METRIC_COUNTER, ctr_help[i],
		       (uint64_t)s->ctr[i]);
	pthread_mutex_lock(&s->lock);
	qlen = s->len;
	pthread_mutex_unlock(&s->lock);
	metric(&b, "queue_length", SP_METRIC_GAUGE,
	       "Decoded profiles waiting for a worker", qlen);
	metric(&b, "buffered_bytes", SP_METRIC_GAUGE,
	       "Request body bytes held by all connections", (uint64_t)s->buffered);
	sp_resolver__stats(s->o->resolver, &rs);
	metric(&b, "cache_hits_total", SP_METRIC_COUNTER,
	       "Address lookups answered by the resolver cache", rs.cache_hits);
	metric(&b, "cache_misses_total", SP_METRIC_COUNTER,
	       "Address lookups the resolver cache did not hold", rs.cache_misses);
	metric(&b, "cache_evictions_total", SP_METRIC_COUNTER,
	       "Resolver cache entries evicted to make room", rs.cache_evictions);
	ret = reply(c, MHD_HTTP_OK, b.p, b.len, "text/plain; version=0.0.4",
		    false);
	free(mem);
	return ret;
}

/* ------------------------------------------------------------ queue */

static int enqueue(struct server *s, struct sp_profile *p)
{
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (s->closing || s->len == s->o->queue_len) {
		err = -EBUSY;
	} else {
		s->ring[(s->head + s->len) % s->o->queue_len] = p;
		s->len++;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static struct sp_profile *dequeue(struct server *s)
{
	struct sp_profile *p = NULL;

	pthread_mutex_lock(&s->lock);
	while (!s->len && !s->closing)
		pthread_cond_wait(&s->cond, &s->lock);
	if (s->len) {
		p = s->ring[s->head];
		s->head = (s->head + 1) % s->o->queue_len;
		s->len--;
	}
	pthread_mutex_unlock(&s->lock);
	return p;
}

/* ------------------------------------------------------------ handler */

static bool header_is(struct MHD_Connection *c, const char *name,
		      const char *want)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
	size_t n = strlen(want);

	return v && !strncasecmp(v, want, n) &&
	       (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

static enum MHD_Result first_call(struct server *s, struct MHD_Connection *c,
				  const char *url, const char *method,
				  struct req *r)
{
	const char *cl, *ce;

	s->ctr[C_REQUESTS]++;
	if (!strcmp(method, "GET") && !strcmp(url, "/metrics"))
		return reply_metrics(s, c);
	if (strcmp(url, PATH_PROFILES)) {
		s->ctr[C_R404]++;
		return reply(c, MHD_HTTP_NOT_FOUND, "not found\n", 10,
			     "text/plain", false);
	}
	if (strcmp(method, "POST")) {
		s->ctr[C_R405]++;
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only\n", 10,
			     "text/plain", false);
	}
	if (!header_is(c, MHD_HTTP_HEADER_CONTENT_TYPE,
		       "application/x-protobuf")) {
		s->ctr[C_R415]++;
		return reply_status(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, 3,
				    "Content-Type must be application/x-protobuf");
	}
	ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_ENCODING);
	if (ce && strcasecmp(ce, "identity")) {
		if (strcasecmp(ce, "gzip")) {
			s->ctr[C_R415]++;
			return reply_status(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
					    3, "Content-Encoding must be gzip "
					    "or identity");
		}
		r->gzip = true;
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	r->started = true;
	if (cl && strtoull(cl, NULL, 10) > s->o->max_body) {
		/* A client waiting for "100 Continue" is told at once; any
		 * other is already sending, and closing on it would lose our
		 * answer: its body is read and discarded, then 413. */
		if (header_is(c, MHD_HTTP_HEADER_EXPECT, "100-continue")) {
			r->started = false;
			s->ctr[C_R413]++;
			return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8,
					    "body too large");
		}
		r->too_big = true;
	}
	return MHD_YES;
}

static void absorb(struct server *s, struct req *r, const char *data,
		   size_t n)
{
	size_t need = r->len + n;

	if (r->too_big || r->over_budget)
		return;
	if (need > s->o->max_body) {
		r->too_big = true;
		goto drop;
	}
	if (need > r->cap) {
		size_t nc = r->cap ? r->cap : 64 * 1024, add;
		void *q;

		while (nc < need)
			nc *= 2;
		if (nc > s->o->max_body)
			nc = s->o->max_body;
		add = nc - r->cap;
		if (s->buffered + add > s->o->buffer_budget) {
			r->over_budget = true;
			goto drop;
		}
		q = realloc(r->buf, nc);
		if (!q) {
			r->over_budget = true;
			goto drop;
		}
		s->buffered += add;
		r->buf = q;
		r->cap = nc;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	return;
drop:
	/* keep reading and discarding; give the memory back now */
	s->buffered -= r->cap;
	free(r->buf);
	r->buf = NULL;
	r->cap = r->len = 0;
}

static enum MHD_Result finish(struct server *s, struct MHD_Connection *c,
			      struct req *r)
{
	struct sp_profile *p = NULL;
	uint8_t *plain = NULL;
	size_t plain_len = 0;
	int err;

	if (r->too_big) {
		s->ctr[C_R413]++;
		return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8,
				    "body too large");
	}
	if (r->over_budget) {
		s->ctr[C_R503_BUDGET]++;
		return reply_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				    "receiver busy");
	}
	if (r->gzip) {
		err = sp_gunzip(r->buf, r->len, s->o->max_decompressed, &plain,
				&plain_len);
		if (err == -E2BIG) {
			s->ctr[C_R413]++;
			return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8,
					    "decompressed body too large");
		}
		if (err) {
			s->ctr[C_R400]++;
			return reply_status(c, MHD_HTTP_BAD_REQUEST, 3,
					    "malformed gzip body");
		}
	}
	err = sp_otlp__decode(plain ? plain : r->buf, plain ? plain_len : r->len,
			      &p);
	free(plain);
	if (err == -E2BIG) {
		s->ctr[C_R413]++;
		return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8,
				    "request over the decoder's limits");
	}
	if (err) {
		s->ctr[C_R400]++;
		return reply_status(c, MHD_HTTP_BAD_REQUEST, 3,
				    "malformed ExportProfilesServiceRequest");
	}
	if (enqueue(s, p)) {
		sp_profile__free(p);
		s->ctr[C_R503_QUEUE]++;
		return reply_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				    "symbolization queue full");
	}
	s->ctr[C_ACCEPTED]++;
	return reply(c, MHD_HTTP_OK, "", 0, "application/x-protobuf", false);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct server *s = cls;
	struct req *r = *con_cls;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		return first_call(s, c, url, method, r);
	}
	if (!r->started)
		return MHD_YES;	/* answered already */
	if (*upload_data_size) {
		absorb(s, r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	r->started = false;
	return finish(s, c, r);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct req *r = *con_cls;

	(void)c;
	(void)toe;
	if (!r)
		return;
	s->buffered -= r->cap;
	free(r->buf);
	free(r);
	*con_cls = NULL;
}

/* ------------------------------------------------------------ workers */

static void write_file(struct server *s, const uint8_t *gz, size_t len)
{
	char tmp[4096], dst[4096];
	uint64_t seq = ++s->seq;
	FILE *f;

	snprintf(dst, sizeof(dst), "%s/profile-%06" PRIu64 ".otlp.pb.gz",
		 s->o->output_dir, seq);
	snprintf(tmp, sizeof(tmp), "%s/.profile-%06" PRIu64 ".tmp",
		 s->o->output_dir, seq);
	f = fopen(tmp, "wx");
	if (!f) {
		s->ctr[C_FILE_ERRORS]++;
		return;
	}
	if (fwrite(gz, 1, len, f) != len || fclose(f)) {
		unlink(tmp);
		s->ctr[C_FILE_ERRORS]++;
		return;
	}
	if (rename(tmp, dst)) {
		unlink(tmp);
		s->ctr[C_FILE_ERRORS]++;
		return;
	}
	s->ctr[C_FILES]++;
}

static void forward(struct worker *w, const uint8_t *body, size_t len)
{
	char what[64];

	snprintf(what, sizeof(what), "profile of %zu bytes", len);
	sp_sender__send(w->fw, body, len, what);	/* counted by the sender */
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	bool fw_gzip = w->fw && s->o->forward->gzip;
	struct sp_profile *p;

	while ((p = dequeue(s))) {
		struct sp_symbolize_stats st;
		uint8_t *enc = NULL, *gz = NULL;
		size_t enc_len = 0, gz_len = 0;

		if (sp_symbolize__profile_ks(s->o->resolver, s->o->ksyms, p,
					     &st) == 0) {
			s->ctr[C_SYMBOLIZED]++;
			s->ctr[C_FRAMES_RESOLVED] += st.resolved;
			s->ctr[C_FRAMES_UNRESOLVED] += st.unresolved;
			s->ctr[C_KERNEL_RESOLVED] += st.resolved_kernel;
			s->ctr[C_KERNEL_NO_BUILD_ID] +=
				st.unresolved_kernel_no_build_id;
			s->ctr[C_KERNEL_NO_SNAPSHOT] +=
				st.unresolved_kernel_no_snapshot;
			s->ctr[C_KERNEL_MISMATCH] += st.unresolved_kernel_mismatch;
			s->ctr[C_KERNEL_NOT_FOUND] += st.unresolved_kernel_not_found;
		}
		if (sp_otlp__encode(p, &enc, &enc_len) ||
		    ((s->o->output_dir || fw_gzip) &&
		     sp_gzip(enc, enc_len, &gz, &gz_len))) {
			s->ctr[C_ENCODE_ERRORS]++;
			goto next;
		}
		if (s->o->output_dir)
			write_file(s, gz, gz_len);
		if (w->fw)
			forward(w, fw_gzip ? gz : enc, fw_gzip ? gz_len : enc_len);
next:
		free(enc);
		free(gz);
		sp_profile__free(p);
	}
	return NULL;
}

/* One sender per worker, made after the privilege drop (CA, certificate
 * and key files must be readable by the user serve runs as). */
static int make_senders(struct server *s)
{
	char err[320];
	int r;

	for (uint32_t i = 0; s->o->forward && i < s->o->workers; i++) {
		r = sp_sender__new(s->o->forward, "spanprof-symbolizer: forward: ",
				   &s->abort_forward, &s->workers[i].fw, err,
				   sizeof(err));
		if (r) {
			fprintf(stderr, "spanprof-symbolizer: serve: --forward: %s\n",
				err);
			return r;
		}
	}
	return 0;
}

/* Joins the workers; past the deadline, forwards are aborted first. */
static void join_workers(struct server *s, uint32_t started)
{
	struct timespec dl;
	uint32_t i = 0;

	clock_gettime(CLOCK_REALTIME, &dl);	/* pthread_timedjoin_np's clock */
	dl.tv_sec += s->o->shutdown_timeout_ms / 1000;
	dl.tv_nsec += (long)(s->o->shutdown_timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	for (; i < started; i++)
		if (pthread_timedjoin_np(s->workers[i].th, NULL, &dl))
			break;
	if (i == started)
		return;
	fprintf(stderr, "spanprof-symbolizer: shutdown: queue not drained after %u ms; "
		"aborting forwards in progress (counted in forward_aborted_total)\n",
		s->o->shutdown_timeout_ms);
	atomic_store(&s->abort_forward, true);
	for (uint32_t k = 0; k < s->o->workers; k++)
		sp_sender__wakeup(s->workers[k].fw);
	for (; i < started; i++)
		pthread_join(s->workers[i].th, NULL);
}

/* ------------------------------------------------------------ run */

static int parse_listen(const char *spec, struct sockaddr_storage *ss,
			socklen_t *len)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
					      AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	size_t hl;

	if (!colon || colon == spec)
		return -EINVAL;
	hl = (size_t)(colon - spec);
	if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']') {
		spec++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int sp_serve__run(const struct sp_serve_opts *in, volatile bool *stop)
{
	struct sp_serve_opts o = *in;
	struct sockaddr_storage ss;
	struct MHD_Daemon *d = NULL;
	struct server *s;
	uint32_t started = 0;
	socklen_t sl;
	unsigned int flags;
	int err;

	if (!o.resolver || !o.listen || parse_listen(o.listen, &ss, &sl)) {
		fprintf(stderr, "spanprof-symbolizer: serve: bad --listen %s: want "
			"HOST:PORT or [V6]:PORT with a numeric address\n",
			o.listen ? o.listen : "(none)");
		return -EINVAL;
	}
	if (!o.queue_len)
		o.queue_len = 16;
	if (!o.workers)
		o.workers = 1;
	if (!o.http_threads)
		o.http_threads = 2;
	if (!o.max_connections)
		o.max_connections = 64;
	if (!o.max_body)
		o.max_body = 16u << 20;
	if (!o.max_decompressed)
		o.max_decompressed = SP_DECODE_MAX_BYTES;
	if (!o.buffer_budget)
		o.buffer_budget = 64u << 20;
	if (!o.shutdown_timeout_ms)
		o.shutdown_timeout_ms = 10000;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = &o;
	atomic_init(&s->abort_forward, false);
	atomic_init(&s->senders_ready, false);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->ring = calloc(o.queue_len, sizeof(*s->ring));
	s->workers = calloc(o.workers, sizeof(*s->workers));
	if (!s->ring || !s->workers) {
		err = -ENOMEM;
		goto out;
	}
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)o.http_threads,
			     MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned int)o.max_connections,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
			     MHD_OPTION_NOTIFY_COMPLETED, completed, s,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "spanprof-symbolizer: cannot listen on %s\n",
			o.listen);
		err = -EADDRINUSE;
		goto out;
	}
	if (o.after_bind && o.after_bind(o.after_bind_arg)) {
		err = -EPERM;
		goto out;
	}
	err = make_senders(s);
	if (err)
		goto out;
	atomic_store(&s->senders_ready, true);
	for (; started < o.workers; started++) {
		s->workers[started].s = s;
		if (pthread_create(&s->workers[started].th, NULL, worker,
				   &s->workers[started])) {
			fprintf(stderr, "spanprof-symbolizer: serve: cannot start "
				"worker %u\n", started + 1);
			err = -EAGAIN;
			goto out;
		}
	}
	if (!o.quiet)
		fprintf(stderr, "spanprof-symbolizer: listening on %s\n",
			o.listen);
	while (!*stop) {
		struct timespec ts = { 0, 100 * 1000000L };

		nanosleep(&ts, NULL);
	}
	err = 0;
out:
	if (d)
		MHD_stop_daemon(d);	/* no new requests from here on */
	pthread_mutex_lock(&s->lock);
	s->closing = true;		/* workers drain the ring, then exit */
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	join_workers(s, started);
	while (s->len) {
		sp_profile__free(s->ring[s->head]);
		s->head = (s->head + 1) % o.queue_len;
		s->len--;
	}
	forward_totals(s);
	if (!o.quiet)
		for (int i = 0; i < C__MAX; i++)
			fprintf(stderr, "spanprof-symbolizer: %s %" PRIu64 "\n",
				ctr_names[i], (uint64_t)s->ctr[i]);
	for (uint32_t i = 0; s->workers && i < o.workers; i++)
		sp_sender__free(s->workers[i].fw);
	free(s->workers);
	free(s->ring);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}
