/* SPDX-License-Identifier: MIT */
/*
 * spanprof_demo.c - build/spanprof-demo: an instrumented multi-threaded
 * service for spanprof's quick start and attribution tests.
 *
 * Contract: N worker threads handle a paced stream of synthetic requests.
 * Each request is one trace published through libspanctx:
 *
 *   handle_request            kind request  root span, attrs http.route,
 *   |                                       demo.worker, demo.request
 *   +- parse_payload          kind cpu      --parse-ms of CPU
 *   |  +- compute_checksum    kind cpu      --checksum-ms of CPU
 *   +- update_inventory       kind lock     waits for a mutex that a holder
 *   |                                       thread holds --lock-hold-ms, then
 *   |                                       releases for 1 ms (and the other
 *   |                                       workers contend), then spins
 *   |                                       --lock-ms of CPU while holding it
 *   +- sleep_backoff          kind sleep    nanosleep --sleep-ms
 *   +- call_backend           kind io       pipe round trip to a backend
 *   |                                       thread that answers after --io-ms
 *   +- render_response        kind cpu      --render-ms of CPU
 *
 * Every span is the function of the same name (noinline), so the stacks
 * the profiler takes inside a span end in that function.  CPU phases spin a
 * calibrated number of iterations (no clock reads inside), so their CPU
 * time is fixed whatever the scheduling.
 *
 * Ground truth (--truth FILE): one JSON line per span, written when it
 * ends.  The start timestamps are taken after the span's context is
 * published and the end timestamps before it is withdrawn, so every
 * instant in [start, end] of a span is covered by its context.  The
 * publication itself happened in [pre_start_mono_ns, start_mono_ns] and the
 * withdrawal in [end_mono_ns, post_end_mono_ns]: a reader judging a sample
 * taken in those windows cannot know which side it fell on (on a VM a
 * window can last milliseconds when the vCPU is descheduled):
 *   {"trace_id":"<32 hex>","span_id":"<16 hex>","parent_span_id":"<16 hex>"
 *    |null,"name":"...","kind":"...","tid":N,"start_mono_ns":N,
 *    "end_mono_ns":N,"start_real_ns":N,"end_real_ns":N,"worker":N,
 *    "request":N,"pre_start_mono_ns":N,"post_end_mono_ns":N}
 * Lines are buffered per thread and flushed under a mutex between
 * requests.  Clocks are read only at span boundaries.
 *
 * Exits cleanly at the end of --duration or on SIGINT/SIGTERM (the
 * requests in flight finish) and prints a one-line summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spanctx.h"

#define MAX_THREADS 256
#define TRUTH_BUF 65536
#define TRUTH_FLUSH_AT (TRUTH_BUF - 4096)

enum { KEY_ROUTE, KEY_WORKER, KEY_REQUEST };
static const char *const attr_keys[] = { "http.route", "demo.worker",
					 "demo.request" };

struct opts {
	double duration_s;	/* 0 = until a signal */
	int threads;
	double rps;		/* requests per second, all workers; 0 = flat out */
	const char *truth;
	const char *service;
	double parse_ms, checksum_ms, lock_ms, lock_hold_ms, sleep_ms, io_ms,
	       render_ms;
};

struct worker {
	int id;
	pthread_t thr, backend_thr;
	int req_pipe[2], resp_pipe[2];
	int tid;
	uint64_t cur_request;
	uint64_t requests, spans;
	size_t tlen;
	char tbuf[TRUTH_BUF];
};

struct span {
	struct spanctx_scope scope;
	struct spanctx_context ctx;
	uint8_t parent[SPANCTX_SPAN_ID_SIZE];
	bool has_parent;
	const char *name, *kind;
	struct timespec pre_start_mono, start_mono, start_real;
};

static struct opts opt = {
	.duration_s = 10, .threads = 4, .rps = 50,
	.parse_ms = 3, .checksum_ms = 2, .lock_ms = 1, .lock_hold_ms = 3,
	.sleep_ms = 4, .io_ms = 3, .render_ms = 2,
};

static atomic_bool stop;
static atomic_uint_fast64_t next_request;
static struct timespec t0_mono;
static uint64_t iters_per_ms;
static volatile uint64_t sink;

static pthread_mutex_t inventory_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;
static int truth_fd = -1;
static atomic_uint_fast64_t truth_errors;

/* ------------------------------------------------------------ helpers */

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static struct timespec ns_ts(uint64_t ns)
{
	struct timespec t = { .tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull) };
	return t;
}

static void sleep_ms(double ms)
{
	struct timespec t = ns_ts((uint64_t)(ms * 1e6));

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* The CPU work itself, inlined into each named phase function so that the
 * leaf frame of a sample is that function. */
static inline __attribute__((always_inline)) uint64_t spin(uint64_t iters,
							   uint64_t x)
{
	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static uint64_t iters_for(double ms)
{
	return (uint64_t)(ms * (double)iters_per_ms);
}

static __attribute__((noinline)) void calibrate(void)
{
	const uint64_t n = 2000000;
	uint64_t best = UINT64_MAX;

	for (int round = 0; round < 5; round++) {
		struct timespec a, b;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		sink += spin(n, 88172645463325252ull + (uint64_t)round);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		if (ts_ns(&b) - ts_ns(&a) < best)
			best = ts_ns(&b) - ts_ns(&a);
	}
	if (best == 0)
		best = 1;
	iters_per_ms = n * 1000000ull / best;
	if (iters_per_ms == 0)
		iters_per_ms = 1;
}

/* ------------------------------------------------------------ truth */

static void truth_flush(struct worker *w)
{
	size_t off = 0;

	if (truth_fd < 0 || w->tlen == 0)
		return;
	pthread_mutex_lock(&truth_lock);
	while (off < w->tlen) {
		ssize_t n = write(truth_fd, w->tbuf + off, w->tlen - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_fetch_add(&truth_errors, 1);
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&truth_lock);
	w->tlen = 0;
}

static void truth_append(struct worker *w, const struct span *s,
			 const struct timespec *end_mono,
			 const struct timespec *end_real,
			 const struct timespec *post_end_mono)
{
	char trace[33], span[17], parent[17 + 2];
	int n;

	if (truth_fd < 0)
		return;
	if (w->tlen > TRUTH_FLUSH_AT)
		truth_flush(w);	/* only when a request is huge */
	spanctx_trace_id_hex(s->ctx.trace_id, trace);
	spanctx_span_id_hex(s->ctx.span_id, span);
	if (s->has_parent) {
		parent[0] = '"';
		spanctx_span_id_hex(s->parent, parent + 1);
		parent[17] = '"';
		parent[18] = '\0';
	} else {
		strcpy(parent, "null");
	}
	n = snprintf(w->tbuf + w->tlen, TRUTH_BUF - w->tlen,
		     "{\"trace_id\":\"%s\",\"span_id\":\"%s\","
		     "\"parent_span_id\":%s,\"name\":\"%s\",\"kind\":\"%s\","
		     "\"tid\":%d,\"start_mono_ns\":%" PRIu64
		     ",\"end_mono_ns\":%" PRIu64 ",\"start_real_ns\":%" PRIu64
		     ",\"end_real_ns\":%" PRIu64 ",\"worker\":%d,"
		     "\"request\":%" PRIu64 ",\"pre_start_mono_ns\":%" PRIu64
		     ",\"post_end_mono_ns\":%" PRIu64 "}\n",
		     trace, span, parent, s->name, s->kind, w->tid,
		     ts_ns(&s->start_mono), ts_ns(end_mono),
		     ts_ns(&s->start_real), ts_ns(end_real), w->id,
		     w->cur_request, ts_ns(&s->pre_start_mono),
		     ts_ns(post_end_mono));
	if (n > 0 && (size_t)n < TRUTH_BUF - w->tlen)
		w->tlen += (size_t)n;
	else
		atomic_fetch_add(&truth_errors, 1);
}

/* ------------------------------------------------------------ spans */

static void span_begin(struct span *s, const char *name, const char *kind,
		       bool root)
{
	struct spanctx_context parent;
	int err;

	s->name = name;
	s->kind = kind;
	s->has_parent = !root && spanctx_capture(&parent) == 0;
	if (s->has_parent)
		memcpy(s->parent, parent.span_id, SPANCTX_SPAN_ID_SIZE);
	clock_gettime(CLOCK_MONOTONIC, &s->pre_start_mono);
	err = root ? spanctx_span_enter_root(&s->scope, SPANCTX_FLAG_SAMPLED)
		   : spanctx_span_enter_child(&s->scope);
	if (err || spanctx_capture(&s->ctx) != 0)
		memset(&s->ctx, 0, sizeof(s->ctx));
	/* Published first, timed second: [start, end] is fully covered. */
	clock_gettime(CLOCK_MONOTONIC, &s->start_mono);
	clock_gettime(CLOCK_REALTIME, &s->start_real);
}

static void span_end(struct worker *w, struct span *s)
{
	struct timespec end_mono, end_real, post_end_mono;

	clock_gettime(CLOCK_REALTIME, &end_real);
	clock_gettime(CLOCK_MONOTONIC, &end_mono);
	spanctx_span_leave(&s->scope);
	clock_gettime(CLOCK_MONOTONIC, &post_end_mono);
	w->spans++;
	truth_append(w, s, &end_mono, &end_real, &post_end_mono);
}

/* ------------------------------------------------------------ phases */

static __attribute__((noinline, noclone)) void compute_checksum(struct worker *w)
{
	struct span s;

	span_begin(&s, "compute_checksum", "cpu", false);
	sink += spin(iters_for(opt.checksum_ms), w->cur_request * 2 + 1);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void parse_payload(struct worker *w)
{
	struct span s;

	span_begin(&s, "parse_payload", "cpu", false);
	sink += spin(iters_for(opt.parse_ms), w->cur_request * 3 + 1);
	compute_checksum(w);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void update_inventory(struct worker *w)
{
	struct span s;

	span_begin(&s, "update_inventory", "lock", false);
	pthread_mutex_lock(&inventory_lock);
	sink += spin(iters_for(opt.lock_ms), w->cur_request * 5 + 1);
	pthread_mutex_unlock(&inventory_lock);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void sleep_backoff(struct worker *w)
{
	struct span s;

	span_begin(&s, "sleep_backoff", "sleep", false);
	sleep_ms(opt.sleep_ms);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void call_backend(struct worker *w)
{
	char req[64] = "GET /inventory", resp[64];
	struct span s;
	ssize_t n;

	span_begin(&s, "call_backend", "io", false);
	do
		n = write(w->req_pipe[1], req, sizeof(req));
	while (n < 0 && errno == EINTR);
	do
		n = read(w->resp_pipe[0], resp, sizeof(resp));
	while (n < 0 && errno == EINTR);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void render_response(struct worker *w)
{
	struct span s;

	span_begin(&s, "render_response", "cpu", false);
	sink += spin(iters_for(opt.render_ms), w->cur_request * 7 + 1);
	span_end(w, &s);
}

static __attribute__((noinline, noclone)) void handle_request(struct worker *w)
{
	char num[24];
	struct span s;

	span_begin(&s, "handle_request", "request", true);
	spanctx_span_set_attr_str(KEY_ROUTE, "/api/checkout");
	snprintf(num, sizeof(num), "%d", w->id);
	spanctx_span_set_attr_str(KEY_WORKER, num);
	snprintf(num, sizeof(num), "%" PRIu64, w->cur_request);
	spanctx_span_set_attr_str(KEY_REQUEST, num);
	parse_payload(w);
	update_inventory(w);
	sleep_backoff(w);
	call_backend(w);
	render_response(w);
	span_end(w, &s);
	w->requests++;
}

/* ------------------------------------------------------------ threads */

/* Sleeps until the monotonic instant `due` (ns); false if told to stop. */
static bool wait_until(uint64_t due)
{
	for (;;) {
		struct timespec now;
		uint64_t left, step;

		if (atomic_load(&stop))
			return false;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ts_ns(&now) >= due)
			return true;
		left = due - ts_ns(&now);
		step = left < 100000000ull ? left : 100000000ull;
		struct timespec t = ns_ts(step);

		nanosleep(&t, NULL);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[32];

	snprintf(name, sizeof(name), "demo-worker-%d", w->id);
	spanctx_set_thread_name(name);
	w->tid = gettid();
	while (!atomic_load(&stop)) {
		uint64_t i = atomic_fetch_add(&next_request, 1);

		if (opt.rps > 0 &&
		    !wait_until(ts_ns(&t0_mono) + (uint64_t)((double)i * 1e9 / opt.rps)))
			break;
		w->cur_request = i;
		handle_request(w);
		truth_flush(w);		/* between requests, outside spans */
	}
	truth_flush(w);
	close(w->req_pipe[1]);	/* the backend sees EOF and exits */
	w->req_pipe[1] = -1;
	return NULL;
}

static void *backend_main(void *arg)
{
	struct worker *w = arg;
	char name[32], buf[64];

	snprintf(name, sizeof(name), "demo-backend-%d", w->id);
	spanctx_set_thread_name(name);
	for (;;) {
		ssize_t n = read(w->req_pipe[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sleep_ms(opt.io_ms);
		while (write(w->resp_pipe[1], "ok", 2) < 0 && errno == EINTR)
			;
	}
	return NULL;
}

static void *lock_holder_main(void *arg)
{
	(void)arg;
	spanctx_set_thread_name("demo-lockholder");
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&inventory_lock);
		sleep_ms(opt.lock_hold_ms);	/* holds it while off-CPU */
		pthread_mutex_unlock(&inventory_lock);
		sleep_ms(1);
	}
	return NULL;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: spanprof-demo [options]\n"
		"  --duration SEC          run time, 0 = until SIGINT/SIGTERM (10)\n"
		"  --threads N             worker threads (4)\n"
		"  --requests-per-sec R    request rate over all workers, 0 = flat out (50)\n"
		"  --truth FILE            write one JSON line per span (ground truth)\n"
		"  --service-name NAME     service.name (default $OTEL_SERVICE_NAME or program)\n"
		"  --parse-ms MS           CPU in parse_payload (3)\n"
		"  --checksum-ms MS        CPU in compute_checksum (2)\n"
		"  --lock-ms MS            CPU while holding the lock in update_inventory (1)\n"
		"  --lock-hold-ms MS       lock holder holds MS, releases 1 ms (3)\n"
		"  --sleep-ms MS           nanosleep in sleep_backoff (4)\n"
		"  --io-ms MS              backend latency seen by call_backend (3)\n"
		"  --render-ms MS          CPU in render_response (2)\n");
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "requests-per-sec", required_argument, NULL, 'r' },
		{ "truth", required_argument, NULL, 'T' },
		{ "service-name", required_argument, NULL, 's' },
		{ "parse-ms", required_argument, NULL, 1 },
		{ "checksum-ms", required_argument, NULL, 2 },
		{ "lock-ms", required_argument, NULL, 3 },
		{ "lock-hold-ms", required_argument, NULL, 4 },
		{ "sleep-ms", required_argument, NULL, 5 },
		{ "io-ms", required_argument, NULL, 6 },
		{ "render-ms", required_argument, NULL, 7 },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double *ms[] = { NULL, &opt.parse_ms, &opt.checksum_ms, &opt.lock_ms,
			 &opt.lock_hold_ms, &opt.sleep_ms, &opt.io_ms,
			 &opt.render_ms };
	double v;
	int c;

	while ((c = getopt_long(argc, argv, "d:t:r:T:s:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (parse_num(optarg, 0, 1e7, &opt.duration_s))
				goto bad;
			break;
		case 't':
			if (parse_num(optarg, 1, MAX_THREADS, &v) || v != (int)v)
				goto bad;
			opt.threads = (int)v;
			break;
		case 'r':
			if (parse_num(optarg, 0, 1e6, &opt.rps))
				goto bad;
			break;
		case 'T':
			opt.truth = optarg;
			break;
		case 's':
			opt.service = optarg;
			break;
		case 1: case 2: case 3: case 4: case 5: case 6: case 7:
			if (parse_num(optarg, 0, 60000, ms[c]))
				goto bad;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "spanprof-demo: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	return 0;
bad:
	for (const struct option *o = lo; o->name; o++)
		if (o->val == c)
			fprintf(stderr, "spanprof-demo: bad value '%s' for --%s\n",
				optarg, o->name);
	return -1;
}

int main(int argc, char **argv)
{
	struct worker *workers = NULL;
	pthread_t holder;
	bool holder_up = false;
	int started = 0, rc = 1, err;
	struct timespec t_end;
	uint64_t requests = 0, spans = 0;
	sigset_t sigs;
	double elapsed;

	if (parse_args(argc, argv))
		return 2;
	err = spanctx_init(opt.service, attr_keys,
			   sizeof(attr_keys) / sizeof(attr_keys[0]));
	if (err)
		fprintf(stderr, "spanprof-demo: process context not published: %s\n",
			strerror(-err));
	if (opt.truth) {
		truth_fd = open(opt.truth, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				0644);
		if (truth_fd < 0) {
			fprintf(stderr, "spanprof-demo: %s: %s\n", opt.truth,
				strerror(errno));
			return 1;
		}
	}
	calibrate();

	/* Signals are taken synchronously by main; threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	workers = calloc((size_t)opt.threads, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "spanprof-demo: out of memory\n");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0_mono);
	if (pthread_create(&holder, NULL, lock_holder_main, NULL) == 0)
		holder_up = true;
	for (; started < opt.threads; started++) {
		struct worker *w = &workers[started];

		w->id = started;
		if (pipe2(w->req_pipe, O_CLOEXEC) || pipe2(w->resp_pipe, O_CLOEXEC)) {
			fprintf(stderr, "spanprof-demo: pipe: %s\n", strerror(errno));
			break;
		}
		if (pthread_create(&w->backend_thr, NULL, backend_main, w)) {
			fprintf(stderr, "spanprof-demo: cannot start backend thread\n");
			break;
		}
		if (pthread_create(&w->thr, NULL, worker_main, w)) {
			fprintf(stderr, "spanprof-demo: cannot start worker thread\n");
			close(w->req_pipe[1]);
			pthread_join(w->backend_thr, NULL);
			break;
		}
	}
	if (started == opt.threads) {
		struct timespec timeout = ns_ts((uint64_t)(opt.duration_s * 1e9));

		rc = 0;
		if (opt.duration_s > 0)
			sigtimedwait(&sigs, NULL, &timeout);
		else
			sigwaitinfo(&sigs, NULL);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < started; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thr, NULL);
		pthread_join(w->backend_thr, NULL);
		close(w->req_pipe[0]);
		close(w->resp_pipe[0]);
		close(w->resp_pipe[1]);
		requests += w->requests;
		spans += w->spans;
	}
	if (holder_up)
		pthread_join(holder, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t_end);
	elapsed = (double)(ts_ns(&t_end) - ts_ns(&t0_mono)) / 1e9;
	printf("spanprof-demo: pid=%d threads=%d elapsed=%.2fs requests=%" PRIu64
	       " spans=%" PRIu64 " rate=%.1f/s truth=%s truth_errors=%" PRIu64 "\n",
	       (int)getpid(), started, elapsed, requests, spans,
	       elapsed > 0 ? (double)requests / elapsed : 0.0,
	       opt.truth ? opt.truth : "-",
	       (uint64_t)atomic_load(&truth_errors));
	if (atomic_load(&truth_errors))
		rc = 1;
out:
	if (truth_fd >= 0)
		close(truth_fd);
	free(workers);
	spanctx_shutdown();
	return rc;
}
