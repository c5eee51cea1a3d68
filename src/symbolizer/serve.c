// SPDX-License-Identifier: MIT
/*
 * serve.c - the OTLP/HTTP receiver of spanprof-symbolizer: libmicrohttpd
 * with a thread per connection, one memory budget, a bounded work queue,
 * symbolizing workers that write files and forward; an answer says what
 * became of the profile (contract: serve.h).
 *
 * Threads.  libmicrohttpd gives each connection a thread (at most
 * max_connections, per_ip from one address): it reads the body into the
 * intake (serve_intake.h: budget, walk, inflate, decode), queues the
 * decoded profile as a job and waits on the job until a worker says what
 * became of it, then answers.  A connection busy decoding a hostile body
 * so only costs its own thread's time: the other connections' threads
 * are scheduled beside it (a pool of two threads served every connection
 * behind whichever was decoding).  Workers pop jobs, symbolize, encode,
 * write and forward (each with its own sender), and complete the job.
 * The connection guard (base/http_guard.h) cuts connections that trickle
 * their headers or body.  An optional admin daemon (one thread, its own
 * connection slots) answers /healthz and /metrics, which data
 * connections cannot reach.
 *
 * Shutdown (*stop): new requests are answered 503; jobs still queued are
 * answered 503 at once (refused: the sender keeps them); jobs being worked
 * on have shutdown_timeout_ms, then their forwards are aborted (503); the
 * daemons stop.  So serve exits within the grace period plus the time to
 * cut the connections, never waiting on a stuck next hop.
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
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/http_guard.h"
#include "base/metrics_text.h"
#include "base/rpc_status.h"
#include "base/symstore.h"
#include "export/sender.h"
#include "profile/codec.h"
#include "profile/profile.h"
#include "symbolizer/membudget.h"
#include "symbolizer/serve.h"
#include "symbolizer/serve_intake.h"
#include "symbolizer/store.h"
#include "symbolizer/symbolize.h"

#define PATH_PROFILES "/v1development/profiles"

enum ctr {
	C_REQUESTS, C_ACCEPTED, C_R400, C_R404, C_R405, C_R413, C_R415,
	C_R503_QUEUE, C_R503_BUDGET, C_R503_FORWARD_DOWN, C_R503_NOT_KEPT, C_R503_SHUTDOWN,
	C_SYMBOLIZED, C_FRAMES_RESOLVED,
	C_FRAMES_UNRESOLVED, C_FILES, C_FILE_ERRORS,
	/* C_FORWARDED..C_FORWARD_BYTES: summed from the senders */
	C_FORWARDED,
	C_FORWARD_FAILED, C_FORWARD_RETRIES, C_FORWARD_ABORTED,
	C_FORWARD_REQUESTS, C_FORWARD_REQUEST_FAILURES, C_FORWARD_PARTIAL,
	C_FORWARD_BYTES, C_ENCODE_ERRORS,
	C_KERNEL_RESOLVED, C_KERNEL_NO_BUILD_ID, C_KERNEL_NO_SNAPSHOT,
	C_KERNEL_MISMATCH, C_KERNEL_NOT_FOUND,
	C_MODULE_DWARF, C_MODULE_DWARF_MISSING, C_MODULE_DWARF_MISMATCH, C_MODULE_DWARF_NO_LINE,
	C_JIT_RESOLVED, C_JIT_LINES, C_JIT_NO_SNAPSHOT, C_JIT_NOT_FOUND, C_R503_STORE_NOT_OPEN,
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
	[C_R503_BUDGET] = "rejected_memory_budget_total",
	[C_R503_FORWARD_DOWN] = "rejected_forward_down_total",
	[C_R503_NOT_KEPT] = "rejected_not_kept_total",
	[C_R503_SHUTDOWN] = "rejected_shutdown_total",
	[C_SYMBOLIZED] = "profiles_symbolized_total",
	[C_FRAMES_RESOLVED] = "frames_resolved_total",
	[C_FRAMES_UNRESOLVED] = "frames_unresolved_total",
	[C_KERNEL_RESOLVED] = "kernel_frames_resolved_total",
	[C_KERNEL_NO_BUILD_ID] = "kernel_frames_unresolved_no_build_id_total",
	[C_KERNEL_NO_SNAPSHOT] = "kernel_frames_unresolved_no_snapshot_total",
	[C_KERNEL_MISMATCH] = "kernel_frames_unresolved_build_id_mismatch_total",
	[C_KERNEL_NOT_FOUND] = "kernel_frames_unresolved_not_found_total",
	[C_MODULE_DWARF] = "kernel_module_frames_debuginfo_total",
	[C_MODULE_DWARF_MISSING] = "kernel_module_frames_debuginfo_missing_total",
	[C_MODULE_DWARF_MISMATCH] = "kernel_module_frames_debuginfo_mismatch_total",
	[C_MODULE_DWARF_NO_LINE] = "kernel_module_frames_debuginfo_no_line_total",
	[C_JIT_RESOLVED] = "jit_frames_resolved_total",
	[C_JIT_LINES] = "jit_frames_with_line_total",
	[C_JIT_NO_SNAPSHOT] = "jit_frames_unresolved_no_snapshot_total",
	[C_JIT_NOT_FOUND] = "jit_frames_unresolved_not_found_total",
	[C_R503_STORE_NOT_OPEN] = "rejected_store_not_open_total",
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
	[C_ACCEPTED] = "Profiles answered 200 (written and/or forwarded) and host-symbol "
		       "uploads answered 200 (stored or already there)",
	[C_R400] = "Requests refused as malformed gzip or protobuf (400)",
	[C_R404] = "Requests for an unknown path (404)",
	[C_R405] = "Requests with a method the path does not take (405)",
	[C_R413] = "Requests that can never fit: over --max-body, the decompressed "
		   "limit, the decoder's limits or the whole memory budget (413)",
	[C_R415] = "Requests with an unsupported content type or encoding (415)",
	[C_R503_QUEUE] = "Requests refused because the work queue was full (503)",
	[C_R503_BUDGET] = "Requests refused because the memory budget was in use (503)",
	[C_R503_FORWARD_DOWN] =
		"Requests refused at once after a failed forward (--forward-down-hold-ms, 503)",
	[C_R503_NOT_KEPT] =
		"Profiles answered 503 because a file or the forward did not take them",
	[C_R503_SHUTDOWN] = "Requests and queued profiles refused during shutdown (503)",
	[C_SYMBOLIZED] = "Profiles symbolized by the workers",
	[C_FRAMES_RESOLVED] = "User-space frames given a function name",
	[C_FRAMES_UNRESOLVED] = "User-space frames left without a name",
	[C_KERNEL_RESOLVED] =
		"Kernel frames named from a kallsyms snapshot or vmlinux/module debug info",
	[C_KERNEL_NO_BUILD_ID] =
		"Kernel frames unnamed: the kernel mapping has no valid build id",
	[C_KERNEL_NO_SNAPSHOT] = "Kernel frames unnamed: no kallsyms snapshot is loaded",
	[C_KERNEL_MISMATCH] = "Kernel frames unnamed: no snapshot of that kernel build id",
	[C_KERNEL_NOT_FOUND] =
		"Kernel frames unnamed: the address is in no snapshot symbol",
	[C_MODULE_DWARF] = "Module frames named from the module's debug info found by its "
			   "build id (lines, inlined frames)",
	[C_MODULE_DWARF_MISSING] =
		"Module frames not named from debug info: no file of the module's build id",
	[C_MODULE_DWARF_MISMATCH] =
		"Module frames not named from debug info: only files of another build id",
	[C_MODULE_DWARF_NO_LINE] = "Module frames not named from debug info: the file "
				   "has no line for the offset (or cannot be read)",
	[C_JIT_RESOLVED] = "JIT frames named from a perf-map snapshot",
	[C_JIT_LINES] = "JIT frames also given a file:line (a jitdump's DEBUG_INFO)",
	[C_JIT_NO_SNAPSHOT] =
		"JIT frames unnamed: their perf-map snapshot is missing or refused",
	[C_JIT_NOT_FOUND] = "JIT frames unnamed: the address is in no perf-map entry",
	[C_R503_STORE_NOT_OPEN] =
		"Host-symbol uploads refused before the store was open (503)",
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

/* A decoded profile waiting for, or in the hands of, a worker; its
 * connection's thread waits on done. */
struct job {
	struct sp_profile *p;
	uint64_t charge;		/* budget bytes p holds */
	bool done;
	unsigned int http;		/* the answer, once done */
	int rpc;
	const char *why;
};

struct server {
	const struct sp_serve_opts *o;
	_Atomic uint64_t ctr[C__MAX];
	_Atomic uint64_t seq;
	struct sp_membudget budget;
	struct sp_http_guard *guard, *admin_guard;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* workers: a job or closing */
	pthread_cond_t done_cond;	/* connections: a job done */
	struct job **ring;
	uint32_t head, len;
	uint32_t working;		/* jobs in workers' hands */
	bool closing;
	atomic_bool stopping;		/* *stop seen: refuse new work */
	_Atomic uint32_t inflight;	/* profiles POSTs not completed yet */
	_Atomic uint64_t forward_down_until_ms;
	struct worker *workers;		/* o->workers of them */
	/* set once every worker's sender exists: /metrics, answered from
	 * the daemon's threads, reads them only after */
	atomic_bool senders_ready;
	atomic_bool abort_forward;	/* the senders' stop: shutdown deadline */
	/* the upload store, set once after the privilege drop */
	struct sp_store *_Atomic store;
};

struct worker {
	struct server *s;
	struct sp_sender *fw;		/* NULL: no forwarding */
	pthread_t th;
};

/* One request on one connection. */
struct req {
	bool counted;			/* in s->inflight */
	bool started;			/* a profiles POST whose body is read */
	bool answered;			/* refused before its body: body discarded */
	unsigned int early_http;	/* the refusal to send at the end */
	int early_rpc;
	const char *early_why;
	bool upload;			/* POST SP_SYMSTORE_UPLOAD_PATH */
	struct sp_intake in;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

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
	sp_http_guard__answered(c);
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

#define METRICS_BUF (32u << 10)	/* the text is about 10 KiB */
#define METRIC_PREFIX "spanprof_symbolizer_"

static void metric(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
		   const char *help, uint64_t v)
{
	char full[128];

	snprintf(full, sizeof(full), METRIC_PREFIX "%s", name);
	sp_metrics__family(b, full, t, help);
	sp_metrics__u64(b, full, NULL, v);
}

static void metric_cuts(struct sp_metrics_buf *b, const char *name, const char *help,
			const struct sp_http_guard *g)
{
	char full[128];

	snprintf(full, sizeof(full), METRIC_PREFIX "%s", name);
	sp_metrics__family(b, full, SP_METRIC_COUNTER, help);
	for (int p = 0; p < SP_HTTP__PHASES; p++) {
		const char *labels[] = { "phase", sp_http_guard__phase_name(p), NULL };

		sp_metrics__u64(b, full, labels, sp_http_guard__cut(g, p));
	}
}

/* The upload store and the JIT lookups: what they hold and refused. */
static void metrics_store(struct server *s, struct sp_metrics_buf *b)
{
	static const char *const kinds[] = { "", "kallsyms", "elf", "jit" };
	static const char *const why[] = { "malformed", "mismatch", "too_large", "store_full",
					   "write_error" };
	const char *fam = METRIC_PREFIX "symbols_stored_total";
	struct sp_store_stats st;
	struct sp_jit_syms_stats js;

	sp_store__stats(atomic_load(&s->store), &st);
	metric(b, "symbols_uploads_total", SP_METRIC_COUNTER,
	       "Host-symbol uploads received (POST " SP_SYMSTORE_UPLOAD_PATH ")", st.uploads);
	sp_metrics__family(b, fam, SP_METRIC_COUNTER,
			   "Host-symbol blobs written to the store, by kind");
	for (int k = 1; k <= SP_SYMSTORE_KIND_MAX; k++) {
		const char *const l[] = { "kind", kinds[k], NULL };

		sp_metrics__u64(b, fam, l, st.stored[k]);
	}
	metric(b, "symbols_duplicates_total", SP_METRIC_COUNTER,
	       "Uploads of a blob already stored (content-addressed)", st.duplicates);
	fam = METRIC_PREFIX "symbols_refused_total";
	sp_metrics__family(b, fam, SP_METRIC_COUNTER, "Host-symbol uploads refused, by reason");
	{
		const uint64_t v[] = { st.refused_malformed, st.refused_mismatch,
				       st.refused_too_big, st.refused_full, st.write_errors };

		for (int i = 0; i < 5; i++) {
			const char *const l[] = { "reason", why[i], NULL };

			sp_metrics__u64(b, fam, l, v[i]);
		}
	}
	metric(b, "symbols_evicted_total", SP_METRIC_COUNTER,
	       "JIT pieces removed from the store to stay under --store-max-bytes", st.evicted);
	metric(b, "store_bytes", SP_METRIC_GAUGE, "Bytes in the host-symbol store", st.bytes);
	metric(b, "store_files", SP_METRIC_GAUGE, "Files in the host-symbol store", st.files);
	metric(b, "store_max_bytes", SP_METRIC_GAUGE, "The store's budget (--store-max-bytes)",
	       st.max_bytes);
	sp_jit_syms__stats(s->o->jit, &js);
	metric(b, "jit_cache_bytes", SP_METRIC_GAUGE, "Bytes of parsed perf maps held",
	       js.cache_bytes);
	metric(b, "jit_cache_maps", SP_METRIC_GAUGE, "Parsed perf maps held", js.cached);
	metric(b, "jit_cache_evictions_total", SP_METRIC_COUNTER,
	       "Parsed perf maps dropped to stay under the cache budget", js.evictions);
	metric(b, "jit_chains_refused_total", SP_METRIC_COUNTER,
	       "Perf-map chains refused: a malformed piece or one not its parent's child",
	       js.bad_piece);
	metric(b, "jit_lines_refused_total", SP_METRIC_COUNTER,
	       "Perf-map lines refused while parsing (bad hex, NUL bytes, bad ranges)",
	       js.lines_refused);
}

static enum MHD_Result reply_metrics(struct server *s,
				     struct MHD_Connection *c)
{
	struct sp_resolver_stats rs;
	struct sp_metrics_buf b;
	enum MHD_Result ret;
	uint32_t qlen, working;
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
	working = s->working;
	pthread_mutex_unlock(&s->lock);
	metric(&b, "queue_length", SP_METRIC_GAUGE,
	       "Decoded profiles waiting for a worker", qlen);
	metric(&b, "profiles_in_work", SP_METRIC_GAUGE,
	       "Profiles a worker is symbolizing, writing or forwarding", working);
	metric(&b, "memory_budget_bytes", SP_METRIC_GAUGE,
	       "The memory budget requests draw from (--memory-budget)", s->budget.limit);
	metric(&b, "memory_used_bytes", SP_METRIC_GAUGE,
	       "Budget bytes held by requests now: bodies, decoded profiles, work",
	       sp_membudget__used(&s->budget));
	metric(&b, "memory_peak_bytes", SP_METRIC_GAUGE,
	       "Highest budget use since start", sp_membudget__peak(&s->budget));
	metric(&b, "memory_refused_total", SP_METRIC_COUNTER,
	       "Budget takes refused (each ends in a 503 or a 413)",
	       atomic_load(&s->budget.refused));
	metric(&b, "memory_overrun_bytes_total", SP_METRIC_COUNTER,
	       "Bytes a symbolization grew a profile past the budget (measured after it)",
	       atomic_load(&s->budget.forced_bytes));
	metric(&b, "connections_open", SP_METRIC_GAUGE,
	       "Connections to the receiver now", sp_http_guard__open(s->guard));
	metric_cuts(&b, "connections_cut_total",
		    "Receiver connections cut at a deadline, by the phase they were in",
		    s->guard);
	metric_cuts(&b, "admin_connections_cut_total",
		    "Admin-port connections cut at a deadline, by phase", s->admin_guard);
	sp_resolver__stats(s->o->resolver, &rs);
	metric(&b, "cache_hits_total", SP_METRIC_COUNTER,
	       "Address lookups answered by the resolver cache", rs.cache_hits);
	metric(&b, "cache_misses_total", SP_METRIC_COUNTER,
	       "Address lookups the resolver cache did not hold", rs.cache_misses);
	metric(&b, "cache_evictions_total", SP_METRIC_COUNTER,
	       "Resolver cache entries evicted to make room", rs.cache_evictions);
	metric(&b, "unit_budget_bytes", SP_METRIC_GAUGE,
	       "Decoded debug info allowed, .ko debug info included (--unit-budget)",
	       rs.unit_budget);
	metric(&b, "unit_bytes", SP_METRIC_GAUGE,
	       "Decoded debug info held now, .ko debug info included", rs.unit_bytes);
	metric(&b, "units_evicted_total", SP_METRIC_COUNTER,
	       "Decoded units given back under the unit budget", rs.units_evicted);
	metric(&b, "module_debuginfo_bytes", SP_METRIC_GAUGE,
	       "Relocated .ko debug info held now (part of unit_bytes)", rs.ko_debug_bytes);
	metric(&b, "module_debuginfo_refused_total", SP_METRIC_COUNTER,
	       ".ko files whose debug info did not fit the unit budget (named from symbols)",
	       rs.ko_debug_refused);
	metrics_store(s, &b);
	ret = reply(c, MHD_HTTP_OK, b.p, b.len, "text/plain; version=0.0.4",
		    false);
	free(mem);
	return ret;
}

static enum MHD_Result reply_health(struct server *s, struct MHD_Connection *c)
{
	if (atomic_load(&s->stopping))
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "stopping\n", 9, "text/plain",
			     false);
	return reply(c, MHD_HTTP_OK, "ok\n", 3, "text/plain", false);
}

/* ------------------------------------------------------------ jobs */

static void complete(struct server *s, struct job *j, unsigned int http, int rpc,
		     const char *why)
{
	pthread_mutex_lock(&s->lock);
	j->http = http;
	j->rpc = rpc;
	j->why = why;
	j->done = true;
	pthread_cond_broadcast(&s->done_cond);
	pthread_mutex_unlock(&s->lock);
}

static int enqueue(struct server *s, struct job *j)
{
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (s->closing || atomic_load(&s->stopping))
		err = -ESHUTDOWN;
	else if (s->len == s->o->queue_len)
		err = -EBUSY;
	else {
		s->ring[(s->head + s->len) % s->o->queue_len] = j;
		s->len++;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* The connection's thread waits for a worker's verdict. */
static void wait_done(struct server *s, struct job *j)
{
	pthread_mutex_lock(&s->lock);
	while (!j->done)
		pthread_cond_wait(&s->done_cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static struct job *dequeue(struct server *s)
{
	struct job *j = NULL;

	pthread_mutex_lock(&s->lock);
	while (!s->len && !s->closing)
		pthread_cond_wait(&s->cond, &s->lock);
	if (s->len) {
		j = s->ring[s->head];
		s->head = (s->head + 1) % s->o->queue_len;
		s->len--;
		s->working++;
	}
	pthread_mutex_unlock(&s->lock);
	return j;
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

/* Refuses before the body: a client waiting for "100 Continue" is told at
 * once; any other is already sending, and closing on it would lose the
 * answer: its body is read and dropped, then the refusal is sent. */
static enum MHD_Result refuse_early(struct server *s, struct MHD_Connection *c,
				    struct req *r, enum ctr ctr, unsigned int http,
				    int rpc, const char *why)
{
	s->ctr[ctr]++;
	if (header_is(c, MHD_HTTP_HEADER_EXPECT, "100-continue")) {
		r->started = false;
		return reply_status(c, http, rpc, why);
	}
	r->answered = true;
	r->early_http = http;
	r->early_rpc = rpc;
	r->early_why = why;
	return MHD_YES;
}

static enum MHD_Result first_call(struct server *s, struct MHD_Connection *c,
				  const char *url, const char *method,
				  struct req *r)
{
	const char *cl, *ce;
	bool gzip = false;

	s->ctr[C_REQUESTS]++;
	sp_http_guard__body(c);
	if (!strcmp(method, "GET") && !strcmp(url, "/metrics"))
		return reply_metrics(s, c);
	if (!strcmp(method, "GET") && !strcmp(url, "/healthz"))
		return reply_health(s, c);
	r->upload = !strcmp(url, SP_SYMSTORE_UPLOAD_PATH) && s->o->store_dir;
	if (strcmp(url, PATH_PROFILES) && !r->upload) {
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
		       r->upload ? "application/octet-stream" : "application/x-protobuf")) {
		s->ctr[C_R415]++;
		return reply_status(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, 3,
				    r->upload ? "Content-Type must be application/octet-stream"
					      : "Content-Type must be application/x-protobuf");
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
		gzip = true;
	}
	r->started = true;
	r->counted = true;
	atomic_fetch_add(&s->inflight, 1);
	if (r->upload)	/* bytes, not a profile: the same budget, no decode */
		sp_intake__init_raw(&r->in, &s->budget, s->o->max_body,
				    SP_SYMSTORE_UPLOAD_HDR + SP_SYMSTORE_KEY_MAX + SP_STORE_MAX_PAYLOAD,
				    gzip);
	else
		sp_intake__init(&r->in, &s->budget, s->o->max_body, s->o->max_decompressed,
				gzip);
	if (atomic_load(&s->stopping))
		return refuse_early(s, c, r, C_R503_SHUTDOWN, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				    "receiver shutting down; retry");
	if (r->upload && !atomic_load(&s->store))
		return refuse_early(s, c, r, C_R503_STORE_NOT_OPEN, MHD_HTTP_SERVICE_UNAVAILABLE,
				    14, "store not open yet; retry");
	if (!r->upload && mono_ms() < atomic_load(&s->forward_down_until_ms))
		return refuse_early(s, c, r, C_R503_FORWARD_DOWN, MHD_HTTP_SERVICE_UNAVAILABLE,
				    14, "the next hop is not taking profiles; retry");
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > s->o->max_body)
		return refuse_early(s, c, r, C_R413, MHD_HTTP_CONTENT_TOO_LARGE, 8,
				    "body too large");
	return MHD_YES;
}

/* An intake's refusal, answered and counted. */
static enum MHD_Result reply_refused(struct server *s, struct MHD_Connection *c,
				     enum sp_intake_verdict v, const char *why)
{
	switch (v) {
	case SP_INTAKE_TOO_LARGE:
		s->ctr[C_R413]++;
		return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8, why);
	case SP_INTAKE_BUSY:
		s->ctr[C_R503_BUDGET]++;
		return reply_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, 14, why);
	default:
		s->ctr[C_R400]++;
		return reply_status(c, MHD_HTTP_BAD_REQUEST, 3, why);
	}
}

/* A host-symbol upload, whole and inflated by the intake (inside the
 * budget): into the store, on the connection's thread.  The store's
 * checks (a snapshot parsed, an image copied into a memfd) hold about the
 * body's size again: taken first.  Every byte goes back before the
 * answer (the client's next request may come before this connection
 * completes). */
static enum MHD_Result finish_upload(struct server *s, struct MHD_Connection *c,
				     struct req *r)
{
	struct sp_store *st = atomic_load(&s->store);
	enum sp_intake_verdict v;
	const uint8_t *body;
	size_t len;
	char why[160] = "";
	int err;

	v = sp_intake__finish_raw(&r->in, &body, &len);
	if (v != SP_INTAKE_OK)
		return reply_refused(s, c, v, r->in.why);
	if (r->in.held + len > s->budget.limit) {	/* could never fit: not a retry */
		sp_intake__release(&r->in);
		return reply_refused(s, c, SP_INTAKE_TOO_LARGE,
				     "upload and its checks larger than the memory budget");
	}
	if (!sp_membudget__take(&s->budget, len)) {
		sp_intake__release(&r->in);
		s->ctr[C_R503_BUDGET]++;
		return reply_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				    "receiver memory budget in use; retry");
	}
	err = sp_store__put(st, body, len, why, sizeof(why));
	sp_membudget__give(&s->budget, len);
	sp_intake__release(&r->in);
	if (err >= 0) {
		s->ctr[C_ACCEPTED]++;
		return reply(c, MHD_HTTP_OK, "", 0, "application/octet-stream", false);
	}
	if (err == -E2BIG) {
		s->ctr[C_R413]++;
		return reply_status(c, MHD_HTTP_CONTENT_TOO_LARGE, 8, why);
	}
	if (err == -ENOSPC)	/* counted by the store (refused_full) */
		return reply_status(c, MHD_HTTP_INSUFFICIENT_STORAGE, 8, why);
	if (err == -EINVAL) {
		s->ctr[C_R400]++;
		return reply_status(c, MHD_HTTP_BAD_REQUEST, 3, why);
	}
	/* counted by the store (write_errors) */
	return reply_status(c, MHD_HTTP_INTERNAL_SERVER_ERROR, 13, why[0] ? why : strerror(-err));
}

static enum MHD_Result finish(struct server *s, struct MHD_Connection *c,
			      struct req *r)
{
	struct job j = { 0 };
	enum sp_intake_verdict v;
	int err;

	if (r->answered)
		return reply_status(c, r->early_http, r->early_rpc, r->early_why);
	if (r->upload)
		return finish_upload(s, c, r);
	v = sp_intake__finish(&r->in, &j.p, &j.charge);
	if (v != SP_INTAKE_OK)
		return reply_refused(s, c, v, r->in.why);
	err = enqueue(s, &j);
	if (err) {
		sp_profile__free(j.p);
		sp_membudget__give(&s->budget, j.charge);
		s->ctr[err == -EBUSY ? C_R503_QUEUE : C_R503_SHUTDOWN]++;
		return reply_status(c, MHD_HTTP_SERVICE_UNAVAILABLE, 14,
				    err == -EBUSY ? "symbolization queue full; retry"
						  : "receiver shutting down; retry");
	}
	sp_http_guard__working(c);
	wait_done(s, &j);	/* the worker freed the profile and its charge */
	if (j.http == MHD_HTTP_OK) {
		s->ctr[C_ACCEPTED]++;
		return reply(c, MHD_HTTP_OK, "", 0, "application/x-protobuf", false);
	}
	return reply_status(c, j.http, j.rpc, j.why);
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
		if (!r->answered)
			sp_intake__feed(&r->in, (const uint8_t *)upload_data, *upload_data_size);
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
	if (r->counted)
		atomic_fetch_sub(&s->inflight, 1);
	sp_intake__release(&r->in);
	free(r);
	*con_cls = NULL;
}

/* The admin port: /healthz and /metrics only. */
static enum MHD_Result admin_handler(void *cls, struct MHD_Connection *c, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_data_size,
				     void **con_cls)
{
	static int marker;
	struct server *s = cls;

	(void)version;
	(void)upload_data;
	if (!*con_cls) {
		*con_cls = &marker;
		sp_http_guard__body(c);
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET"))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n", 9, "text/plain",
			     false);
	if (!strcmp(url, "/healthz"))
		return reply_health(s, c);
	if (!strcmp(url, "/metrics"))
		return reply_metrics(s, c);
	return reply(c, MHD_HTTP_NOT_FOUND, "not found\n", 10, "text/plain", false);
}

/* ------------------------------------------------------------ workers */

static int write_file(struct server *s, const uint8_t *gz, size_t len)
{
	char tmp[4096], dst[4096];
	uint64_t seq = ++s->seq;
	int fd, err = 0;

	snprintf(dst, sizeof(dst), "%s/profile-%06" PRIu64 ".otlp.pb.gz",
		 s->o->output_dir, seq);
	snprintf(tmp, sizeof(tmp), "%s/.profile-%06" PRIu64 ".tmp",
		 s->o->output_dir, seq);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, gz + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	/* kept means on disk: the answer is 200 only after this */
	if (!err && fdatasync(fd) && errno != EINVAL)
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, dst))
		err = -errno;
	if (err) {
		unlink(tmp);
		goto fail;
	}
	s->ctr[C_FILES]++;
	return 0;
fail:
	s->ctr[C_FILE_ERRORS]++;
	{
		static _Atomic uint64_t last_log_ms;
		uint64_t now = mono_ms(), last = atomic_load(&last_log_ms);

		/* one line per 10 s at most: a full disk fails every profile */
		if (now - last >= 10000 && atomic_compare_exchange_strong(&last_log_ms, &last, now))
			fprintf(stderr, "spanprof-symbolizer: serve: cannot write %s: %s "
				"(answering 503 until it works)\n", dst, strerror(-err));
	}
	return err;
}

static void count_symbolized(struct server *s, const struct sp_symbolize_stats *st)
{
	s->ctr[C_SYMBOLIZED]++;
	s->ctr[C_FRAMES_RESOLVED] += st->resolved;
	s->ctr[C_FRAMES_UNRESOLVED] += st->unresolved;
	s->ctr[C_KERNEL_RESOLVED] += st->resolved_kernel;
	s->ctr[C_KERNEL_NO_BUILD_ID] += st->unresolved_kernel_no_build_id;
	s->ctr[C_KERNEL_NO_SNAPSHOT] += st->unresolved_kernel_no_snapshot;
	s->ctr[C_KERNEL_MISMATCH] += st->unresolved_kernel_mismatch;
	s->ctr[C_KERNEL_NOT_FOUND] += st->unresolved_kernel_not_found;
	s->ctr[C_MODULE_DWARF] += st->resolved_module_dwarf;
	s->ctr[C_MODULE_DWARF_MISSING] += st->module_dwarf_missing;
	s->ctr[C_MODULE_DWARF_MISMATCH] += st->module_dwarf_mismatch;
	s->ctr[C_MODULE_DWARF_NO_LINE] += st->module_dwarf_no_line;
	s->ctr[C_JIT_RESOLVED] += st->resolved_jit;
	s->ctr[C_JIT_LINES] += st->resolved_jit_lines;
	s->ctr[C_JIT_NO_SNAPSHOT] += st->unresolved_jit_no_snapshot;
	s->ctr[C_JIT_NOT_FOUND] += st->unresolved_jit_not_found;
}

/* Symbolize, encode, write, forward; the verdict goes to the job.  Every
 * stage's memory is taken from the budget before it (the symbolizer's
 * growth is measured after: it adds functions and names as it finds
 * them; beyond its estimate it is forced and counted). */
static void work(struct worker *w, struct job *j)
{
	struct server *s = w->s;
	bool fw_gzip = w->fw && s->o->forward->gzip;
	struct sp_symbolize_sources src = {
		.resolver = s->o->resolver, .ksyms = s->o->ksyms, .jit = s->o->jit,
	};
	struct sp_symbolize_stats st;
	uint8_t *enc = NULL, *gz = NULL;
	size_t enc_len = 0, gz_len = 0;
	uint64_t est, fp, enc_res = 0;
	unsigned int http = MHD_HTTP_OK;
	const char *why = NULL;

	est = (uint64_t)j->p->n_locations * 160 + (1u << 20);
	if (!sp_membudget__take(&s->budget, est)) {
		s->ctr[C_R503_BUDGET]++;
		http = MHD_HTTP_SERVICE_UNAVAILABLE;
		why = "receiver memory budget in use; retry";
		goto out;
	}
	if (sp_symbolize__run(&src, j->p, &st) == 0)
		count_symbolized(s, &st);
	fp = sp_profile__footprint(j->p);
	if (fp > j->charge + est)
		sp_membudget__force(&s->budget, fp - j->charge - est);
	else
		sp_membudget__give(&s->budget, j->charge + est - fp);
	j->charge = fp;
	/* the encoder's tree, its output and the gzip copy: each at most
	 * about the model's size */
	enc_res = 3 * fp + (1u << 20);
	if (!sp_membudget__take(&s->budget, enc_res)) {
		enc_res = 0;
		s->ctr[C_R503_BUDGET]++;
		http = MHD_HTTP_SERVICE_UNAVAILABLE;
		why = "receiver memory budget in use; retry";
		goto out;
	}
	if (sp_otlp__encode(j->p, &enc, &enc_len) ||
	    ((s->o->output_dir || fw_gzip) && sp_gzip(enc, enc_len, &gz, &gz_len))) {
		s->ctr[C_ENCODE_ERRORS]++;
		http = MHD_HTTP_INTERNAL_SERVER_ERROR;
		why = "could not encode the symbolized profile";
		goto out;
	}
	/* the model is not needed any more: its memory goes back before
	 * the slow part (writing, forwarding) */
	sp_profile__free(j->p);
	j->p = NULL;
	sp_membudget__give(&s->budget, j->charge);
	j->charge = 0;
	if (s->o->output_dir && write_file(s, gz, gz_len)) {
		http = MHD_HTTP_SERVICE_UNAVAILABLE;
		why = "could not write the profile to the output directory; retry";
		s->ctr[C_R503_NOT_KEPT]++;
		goto out;
	}
	if (w->fw) {
		char what[64];
		enum sp_send_result sr;

		snprintf(what, sizeof(what), "profile of %zu bytes", fw_gzip ? gz_len : enc_len);
		sr = sp_sender__send(w->fw, fw_gzip ? gz : enc, fw_gzip ? gz_len : enc_len, what);
		if (sr != SP_SEND_DELIVERED) {
			if (sr == SP_SEND_FAILED && s->o->forward_down_hold_ms)
				atomic_store(&s->forward_down_until_ms,
					     mono_ms() + s->o->forward_down_hold_ms);
			s->ctr[sr == SP_SEND_ABORTED ? C_R503_SHUTDOWN : C_R503_NOT_KEPT]++;
			http = MHD_HTTP_SERVICE_UNAVAILABLE;
			why = sr == SP_SEND_ABORTED ? "receiver shutting down; retry"
						    : "the next hop did not take the profile; retry";
			goto out;
		}
		atomic_store(&s->forward_down_until_ms, 0);
	}
out:
	free(enc);
	free(gz);
	sp_membudget__give(&s->budget, enc_res);
	sp_profile__free(j->p);
	j->p = NULL;
	sp_membudget__give(&s->budget, j->charge);
	j->charge = 0;
	pthread_mutex_lock(&s->lock);
	s->working--;
	pthread_mutex_unlock(&s->lock);
	complete(s, j, http, http == MHD_HTTP_OK ? 0 : 14, why);
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct job *j;

	while ((j = dequeue(w->s)))
		work(w, j);
	return NULL;
}

/* Queued jobs no worker has taken: refused (503), so their senders keep
 * them. */
static void refuse_queued(struct server *s)
{
	for (;;) {
		struct job *j = NULL;

		pthread_mutex_lock(&s->lock);
		if (s->len) {
			j = s->ring[s->head];
			s->head = (s->head + 1) % s->o->queue_len;
			s->len--;
		}
		pthread_mutex_unlock(&s->lock);
		if (!j)
			return;
		sp_profile__free(j->p);
		j->p = NULL;
		sp_membudget__give(&s->budget, j->charge);
		j->charge = 0;
		s->ctr[C_R503_SHUTDOWN]++;
		complete(s, j, MHD_HTTP_SERVICE_UNAVAILABLE, 14, "receiver shutting down; retry");
	}
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
	fprintf(stderr, "spanprof-symbolizer: shutdown: work not done after %u ms; "
		"aborting forwards in progress (their senders are answered 503)\n",
		s->o->shutdown_timeout_ms);
	atomic_store(&s->abort_forward, true);
	for (uint32_t k = 0; k < s->o->workers; k++)
		sp_sender__wakeup(s->workers[k].fw);
	for (; i < started; i++)
		pthread_join(s->workers[i].th, NULL);
}

/* ------------------------------------------------------------ run */

int sp_serve__parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon = spec ? strrchr(spec, ':') : NULL;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
					      AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	unsigned long port;
	char *end;
	size_t hl;

	if (!colon || colon == spec)
		return -EINVAL;
	/* getaddrinfo takes any number and keeps its low 16 bits */
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || colon[1] < '0' || colon[1] > '9' ||
	    port > 65535)
		return -ERANGE;
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

static uint16_t bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : 0;
}

/* The output directory, as the user serve runs as: a file can be made,
 * written, synced and removed there. */
static int check_output_dir(const char *dir)
{
	char path[4096];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/.spanprof-write-check.%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		err = -errno;
	else if (write(fd, "x", 1) != 1 || fdatasync(fd))
		err = errno ? -errno : -EIO;
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	if (err)
		fprintf(stderr, "spanprof-symbolizer: serve: --output-dir %s is not writable by "
			"uid %u: %s; give that user write access (or choose another directory "
			"or --user)\n", dir, (unsigned)geteuid(), strerror(-err));
	return err;
}

/* A listening socket on ss (bound before the privilege drop: a port
 * below 1024 may need root), or -errno. */
static int listen_on(const struct sockaddr_storage *ss, socklen_t sl)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, sl) || listen(fd, 128)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* MHD on a socket of listen_on (MHD owns it from here, even on failure:
 * *lfd is set to -1). */
static struct MHD_Daemon *start_daemon(int *lfd, unsigned int flags,
				       MHD_AccessHandlerCallback h, struct server *s,
				       struct sp_http_guard *g, unsigned int conns,
				       unsigned int per_ip, bool data)
{
	struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, h, s,
						MHD_OPTION_LISTEN_SOCKET, (MHD_socket)*lfd,
						MHD_OPTION_CONNECTION_LIMIT, conns,
						MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
						MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
						MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512u << 10),
						MHD_OPTION_NOTIFY_CONNECTION, sp_http_guard__notify, g,
						MHD_OPTION_NOTIFY_COMPLETED, data ? completed : NULL, s,
						MHD_OPTION_END);

	if (!d)
		close(*lfd);
	*lfd = -1;
	return d;
}

int sp_serve__run(const struct sp_serve_opts *in, volatile bool *stop)
{
	struct sp_serve_opts o = *in;
	struct sockaddr_storage ss, as;
	struct MHD_Daemon *d = NULL, *admin = NULL;
	int lfd = -1, afd = -1;
	struct server *s;
	uint32_t started = 0;
	socklen_t sl, al;
	unsigned int flags;
	int err;

	if (!o.resolver || !o.listen || sp_serve__parse_listen(o.listen, &ss, &sl)) {
		fprintf(stderr, "spanprof-symbolizer: serve: bad --listen %s: want "
			"HOST:PORT (port 0..65535) or [V6]:PORT with a numeric address\n",
			o.listen ? o.listen : "(none)");
		return -EINVAL;
	}
	if (o.admin_listen && sp_serve__parse_listen(o.admin_listen, &as, &al)) {
		fprintf(stderr, "spanprof-symbolizer: serve: bad --admin-listen %s: want "
			"HOST:PORT (port 0..65535) or [V6]:PORT with a numeric address\n",
			o.admin_listen);
		return -EINVAL;
	}
	if (!o.queue_len)
		o.queue_len = 16;
	if (!o.workers)
		o.workers = 1;
	if (!o.max_connections)
		o.max_connections = 256;
	if (!o.per_ip)
		o.per_ip = 32;
	if (!o.max_body)
		o.max_body = 16u << 20;
	if (!o.max_decompressed)
		o.max_decompressed = SP_DECODE_MAX_BYTES;
	if (!o.memory_budget)
		o.memory_budget = SP_SERVE_DEFAULT_BUDGET;
	if (!o.shutdown_timeout_ms)
		o.shutdown_timeout_ms = 10000;
	/* Capabilities (and no_new_privs) are per thread; setuid is
	 * broadcast by the C library, prctl and the bounding set are not.
	 * So the sockets are bound here, the privileges dropped (after_bind),
	 * and only then is any thread started (the guards' reapers, MHD's
	 * threads, the workers): each inherits the dropped set. */
	lfd = listen_on(&ss, sl);
	if (lfd < 0) {
		fprintf(stderr, "spanprof-symbolizer: serve: cannot listen on %s: %s\n",
			o.listen, strerror(-lfd));
		return -EADDRINUSE;
	}
	if (o.admin_listen) {
		afd = listen_on(&as, al);
		if (afd < 0) {
			fprintf(stderr, "spanprof-symbolizer: serve: cannot listen on "
				"--admin-listen %s: %s\n", o.admin_listen, strerror(-afd));
			close(lfd);
			return -EADDRINUSE;
		}
	}
	if (o.after_bind && o.after_bind(o.after_bind_arg)) {
		close(lfd);
		if (afd >= 0)
			close(afd);
		return -EPERM;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(lfd);
		if (afd >= 0)
			close(afd);
		return -ENOMEM;
	}
	s->o = &o;
	sp_membudget__init(&s->budget, o.memory_budget);
	atomic_init(&s->abort_forward, false);
	atomic_init(&s->senders_ready, false);
	atomic_init(&s->stopping, false);
	atomic_init(&s->forward_down_until_ms, 0);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->done_cond, NULL);
	s->ring = calloc(o.queue_len, sizeof(*s->ring));
	s->workers = calloc(o.workers, sizeof(*s->workers));
	s->guard = sp_http_guard__new(&(struct sp_http_guard_config){
		.header_ms = o.header_timeout_ms, .body_ms = o.body_timeout_ms,
		.idle_ms = o.header_timeout_ms, .max_conns = o.max_connections });
	s->admin_guard = sp_http_guard__new(&(struct sp_http_guard_config){
		.header_ms = 5000, .body_ms = 5000, .idle_ms = 10000, .max_conns = 16 });
	if (!s->ring || !s->workers || !s->guard || !s->admin_guard) {
		err = -ENOMEM;
		goto out;
	}
	flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_ERROR_LOG;
	d = start_daemon(&lfd, flags, handler, s, s->guard, o.max_connections, o.per_ip, true);
	if (!d) {
		fprintf(stderr, "spanprof-symbolizer: serve: cannot start the HTTP server on %s\n",
			o.listen);
		err = -EADDRINUSE;
		goto out;
	}
	if (o.admin_listen) {
		admin = start_daemon(&afd, MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
				     MHD_USE_ERROR_LOG, admin_handler, s, s->admin_guard, 16, 4,
				     false);
		if (!admin) {
			fprintf(stderr, "spanprof-symbolizer: serve: cannot start the HTTP server "
				"on --admin-listen %s\n", o.admin_listen);
			err = -EADDRINUSE;
			goto out;
		}
	}
	if (o.output_dir && check_output_dir(o.output_dir)) {
		err = -EACCES;
		goto out;
	}
	if (o.store_dir) {
		struct sp_store_opts sto = {
			.dir = o.store_dir, .max_bytes = o.store_max_bytes, .ksyms = o.ksyms,
			.resolver = o.resolver, .jit = o.jit,
		};
		struct sp_store *st = NULL;
		char serr[300] = "";

		err = sp_store__open(&sto, &st, serr, sizeof(serr));
		if (err) {
			fprintf(stderr, "spanprof-symbolizer: serve: --store-dir: %s\n", serr);
			goto out;
		}
		atomic_store(&s->store, st);
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
	if (!o.quiet) {
		fprintf(stderr, "spanprof-symbolizer: listening on %s (port %u), memory budget "
			"%zu MiB", o.listen, bound_port(d), o.memory_budget >> 20);
		if (admin)
			fprintf(stderr, ", admin %s (port %u)", o.admin_listen, bound_port(admin));
		fputc('\n', stderr);
	}
	if (o.on_listening)
		o.on_listening(bound_port(d), admin ? bound_port(admin) : 0, o.on_listening_arg);
	while (!*stop) {
		struct timespec ts = { 0, 100 * 1000000L };

		nanosleep(&ts, NULL);
	}
	err = 0;
out:
	atomic_store(&s->stopping, true);	/* new requests: 503 */
	refuse_queued(s);
	pthread_mutex_lock(&s->lock);
	s->closing = true;		/* workers finish what they hold, then exit */
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	join_workers(s, started);
	refuse_queued(s);		/* what came in meanwhile */
	/* every job has its verdict: let the connections send their answers
	 * (a second at most: a client that does not read is cut) */
	for (int i = 0; i < 100 && atomic_load(&s->inflight); i++) {
		struct timespec ts = { 0, 10 * 1000000L };

		nanosleep(&ts, NULL);
		refuse_queued(s);
	}
	if (d)
		MHD_stop_daemon(d);
	if (admin)
		MHD_stop_daemon(admin);
	if (lfd >= 0)
		close(lfd);
	if (afd >= 0)
		close(afd);
	forward_totals(s);
	if (!o.quiet && !err)	/* a start-up failure is its one line */
		for (int i = 0; i < C__MAX; i++)
			fprintf(stderr, "spanprof-symbolizer: %s %" PRIu64 "\n",
				ctr_names[i], (uint64_t)s->ctr[i]);
	for (uint32_t i = 0; s->workers && i < o.workers; i++)
		sp_sender__free(s->workers[i].fw);
	sp_store__free(atomic_load(&s->store));
	sp_http_guard__free(s->guard);
	sp_http_guard__free(s->admin_guard);
	free(s->workers);
	free(s->ring);
	pthread_cond_destroy(&s->done_cond);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}
