/* SPDX-License-Identifier: MIT */
/*
 * agent.c - `spanprof agent`: runs until stopped, exports every interval.
 *
 * Threads
 *   main      parses options, refuses setuid, loads and attaches BPF, drops
 *             capabilities (privs.h) before any other thread exists, then
 *             waits for signals and polls the memory guard (one pread
 *             of the cgroup's usage, 4 Hz from a quarter of the limit
 *             below --mem-high, else 1 Hz; every 2 s without a limit:
 *             memguard.h).
 *   consumer  drains the BPF ring buffer into the current aggregator; at
 *             each interval (default 10 s, +-10% jitter so a fleet does not
 *             export in lockstep) swaps it with the spare one.  It never
 *             touches the network and never waits on the export side.
 *   interval  ("export worker") takes the full aggregator: snapshot
 *             (profile model) + container.id -> sp_exporter__submit (encode
 *             + enqueue, no network) -> reset -> hands it back as the spare.
 *   exporter  sp_exporter's own thread: HTTP with OTLP's retry rules and/or
 *             rotating files (src/export).
 *   metrics   libmicrohttpd's thread: /metrics and /healthz.
 *
 * Buffers, all bounded by configuration
 *   BPF ring buffer (--ringbuf-size); two aggregators (--agg-budget and
 *   --agg-entries each, preallocated); one snapshot profile at a time (its
 *   size follows one aggregator's content); the exporter's queue
 *   (--queue-bytes) plus at most one batch in flight; process table and
 *   container-id cache (fixed entry counts); metrics (64 connections x 256
 *   KiB).
 *
 * Drop policies (each drop counted, see /metrics)
 *   ring buffer full      in BPF (ringbuf_dropped_samples_total);
 *   aggregator full       drop-tail in the current aggregator;
 *   interval overrun      when the swap is due but the worker still holds
 *                         the previous aggregator, the consumer keeps
 *                         aggregating into the current one: the interval
 *                         stretches (intervals_stretched_total) and the
 *                         aggregator's own bound applies; nothing waits;
 *   export queue full     sp_exporter's policy (--drop-policy oldest by
 *                         default, or newest);
 *   export failed         non-retryable status or retries exhausted;
 *   memory guard          above --mem-high of the cgroup limit the
 *                         consumer drains the ring and drops samples
 *                         (process events still go to the process table),
 *                         and a full aggregator reaching the worker while
 *                         engaged is discarded instead of snapshotted (a
 *                         snapshot allocates); aggregators are then
 *                         re-created so their pages return to the kernel.
 *
 * Process state follows live processes (proc_table.h, "Lifetimes"): each
 *   aggregator is one process-table epoch, closed at the swap; after the
 *   worker has snapshotted (or discarded) it, it releases that epoch, which
 *   recycles mapping ids no process maps any more and forgets processes
 *   gone for a whole interval, with their ctx-discovery state.
 *
 * Sampling, the ring, the consumer, the process table and trace-context
 * discovery are the pipeline's (collector/pipeline/pipeline.h), the same
 * one `spanprof record` runs; what is the agent's own is here: the
 * interval loop and swap, the export worker, the memory guard (a gate on
 * the pipeline's samples), container ids, metrics and privileges.
 *
 * Locking: the pipeline's lock covers the process table, ctx discovery and
 * the container-id cache (the pipeline takes it while draining,
 * snapshotting and releasing; the container-id hooks run under it);
 * xfer_lock the aggregator hand-over; stats_lock the counters the metrics
 * thread reads (published by their owners).  Order: xfer_lock before the
 * pipeline's lock (try_swap), never the other way.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/io_deadline.h"
#include "collector/agent/agent.h"
#include "collector/agent/memguard.h"
#include "collector/agent/metrics.h"
#include "collector/agent/metrics_syms.h"
#include "collector/agent/privs.h"
#include "collector/host/hostsyms.h"
#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/caps.h"
#include "collector/pipeline/cli.h"
#include "collector/pipeline/clock.h"
#include "collector/pipeline/counters.h"
#include "collector/pipeline/stat_rows.h"
#include "collector/pipeline/pipeline.h"
#include "collector/pipeline/sampling_opts.h"
#include "collector/pipeline/snapshot.h"
#include "collector/pipeline/summary.h"
#include "collector/procs/container_id.h"
#include "collector/unwind/unwinder.h"
#include "collector/procs/target_select.h"
#include "export/exporter.h"
#include "export/uploader.h"
#include "profile/profile.h"

#define AGENT_VERSION "0.1.0"
/* snapshot + encoding transient, in multiples of an aggregator's bytes */
#define SNAPSHOT_FACTOR 3
/* how long an interval's profile waits for its host symbols to be sent */
#define SYMBOLS_FLUSH_MS 2000

/* What sampling_opts.c parses, with the agent's defaults: 19 Hz (always
 * on, so cheap), two aggregators of 16 MiB and 16384 entries each,
 * off-CPU waits from 1 ms at about 200 captures per second per CPU. */
static const struct sp_sampling_opts agent_defaults = {
	.hz = 19, .kernel = true, .trace_ctx = true, .jit = true, .ringbuf_bytes = 4u << 20,
	.poll_ms = 0, .agg_budget = 16u << 20, .agg_entries = 16384, .off_cpu_min_us = 1000,
	.off_cpu_rate = 200,
};

struct agent_opts {
	struct sp_sampling_opts s;
	double interval_s;
	double jitter;			/* fraction, 0.1 = +-10% */
	double shutdown_timeout_s;
	double health_stall_s;		/* /healthz fails past this consumer stall */
	const char *endpoint;
	const char *output_dir;
	const char *metrics_addr;	/* NULL = none */
	const char *headers;
	int compression;		/* -1 = env/default, 0 none, 1 gzip */
	uint32_t timeout_ms;
	size_t queue_bytes;
	int drop_policy;		/* -1 = default */
	uint32_t max_files;
	size_t max_file_bytes;
	double mem_high, mem_low;
	bool upload_symbols;		/* ship host symbols to the endpoint (serve) */
	size_t symbols_queue_bytes;
	bool quiet;
	struct sp_target_select *sel;	/* --select-*: built while parsing */
};

struct published {		/* consumer -> metrics, under stats_lock */
	struct sp_summary sum;		/* sp_pipeline__fill_summary's fields */
	uint64_t memguard_dropped[2];	/* on-CPU, off-CPU */
	struct sp_target_select_stats sel;
	uint64_t select_dropped, select_bpf_full;
	uint64_t intervals;
	uint64_t intervals_stretched;
};

struct worker_stats {		/* worker -> metrics, under stats_lock */
	uint64_t batches;
	uint64_t samples_submitted;	/* handed to the exporter */
	uint64_t samples_memguard;	/* discarded buffers (guard engaged) */
	uint64_t samples_snapshot_failed;
	uint64_t samples_encode_failed;
	uint64_t snapshot_ns_sum;
	uint64_t last_resources;
	uint64_t agg_recreated;
};

struct agent {
	struct agent_opts o;
	struct sp_pipeline *pipe;	/* holds the current aggregator */
	struct sp_container_ids *cids;	/* under the pipeline's lock */
	struct sp_exporter *exp;
	struct sp_uploader *up;		/* host symbols to the endpoint, or NULL */
	char syms_dir[4096];		/* --output-dir DIR: DIR/syms */
	struct sp_metrics_server *metrics;
	size_t agg_fixed;		/* bytes_used of an empty aggregator */
	uint64_t interval_start;	/* consumer thread */

	pthread_mutex_t xfer_lock;
	pthread_cond_t xfer_cond;
	struct sp_agg *full;		/* for the worker, or NULL */
	uint64_t full_start, full_end;
	uint64_t full_epoch;		/* process-table epoch of full */
	bool full_is_last;
	struct sp_agg *spare;		/* for the consumer, or NULL */
	bool worker_quit;
	bool last_done;			/* the final interval was submitted */

	pthread_mutex_t stats_lock;
	struct published pub;
	struct worker_stats ws;
	uint64_t memguard_dropped[2];	/* consumer thread's own copy */
	uint64_t select_dropped;	/* consumer: samples of unselected processes */
	uint64_t select_bpf_full;	/* consumer: exclusions BPF's map refused */

	atomic_bool stopping;
	atomic_bool consumer_alive;
	_Atomic uint64_t consumer_advanced_ns;	/* mono time of its last loop */
	atomic_bool guard_engaged;
	atomic_uint_fast64_t guard_usage, guard_limit, guard_engagements, guard_releases;
	struct sp_memguard guard;	/* main thread */
	uint64_t deadline_ns;		/* shutdown deadline, set before stopping */
	double start_unix_s;	/* CLOCK_REALTIME at start, sub-second */
	uint32_t seed;
};

static void abs_deadline(struct timespec *ts, uint64_t mono_deadline)
{
	ts->tv_sec = mono_deadline / 1000000000ull;
	ts->tv_nsec = mono_deadline % 1000000000ull;
}

/* ------------------------------------------------------------ options */

static void usage(FILE *f)
{
	fprintf(f,
"usage: spanprof agent [-F HZ] [--interval SEC] [--endpoint URL] [--output-dir DIR]\n"
"                      [--metrics-addr HOST:PORT|none] [options]\n"
"\n"
"Profiles the whole machine until stopped and exports every interval as\n"
"OTLP Profiles over HTTP (POST {endpoint}/v1development/profiles) and/or as\n"
"rotating files.  Unset options come from OTEL_EXPORTER_OTLP_* variables.\n"
"\n"
"      --interval SEC        reporting interval (default 10; +-10%% jitter)\n"
"      --jitter FRAC         interval jitter fraction (default 0.1)\n"
"      --endpoint URL        OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT)\n"
"      --headers K=V,...     extra HTTP headers (OTEL_EXPORTER_OTLP_HEADERS)\n"
"      --compression C       gzip (default) or none\n"
"      --timeout-ms MS       per request (default 10000)\n"
"      --output-dir DIR      also write rotating files there\n"
"      --max-files N         files kept in --output-dir (default 100)\n"
"      --max-file-bytes B    largest file (default 64 MiB)\n"
"      --queue-bytes B       export queue cap in bytes (default 16 MiB)\n"
"      --drop-policy P       oldest (default) or newest: what a full queue drops\n"
"      --metrics-addr A      Prometheus /metrics and /healthz (default\n"
"                            127.0.0.1:9464; none to disable)\n"
"      --shutdown-timeout S  SIGTERM/SIGINT flush budget (default 5)\n"
"      --health-stall S      /healthz fails once the consumer has not come round\n"
"                            its loop for S seconds (default 10)\n"
"      --mem-high PCT        memory guard: stop ingesting at PCT%% of the cgroup\n"
"                            limit (default 75)\n"
"      --mem-low PCT         resume below PCT%% (default 60)\n"
"      --upload-symbols      also POST host symbols (kernel snapshot, vDSO, JIT\n"
"                            maps) to {endpoint}/spanprof/v1/symbols: for an\n"
"                            endpoint that is spanprof-symbolizer serve\n"
"                            --store-dir\n"
"      --symbols-queue-bytes B  host symbols waiting for upload (default 32 MiB)\n"
"      --select-cgroup PATH  profile only processes whose cgroup path starts with\n"
"                            PATH (any hierarchy; e.g. /kubepods/burstable/pod<uid>)\n"
"      --select-exe EXE      ... or whose executable is EXE (full path or name)\n"
"      --select-service NAME ... or whose service.name is NAME, as its resources\n"
"                            get it: OTEL_SERVICE_NAME, service.name in\n"
"                            OTEL_RESOURCE_ATTRIBUTES (not with --no-process-env),\n"
"                            then the OTEP 4719 process context (a process with\n"
"                            no name yet is asked again for 2 s);\n"
"                            repeatable, up to 16 each; the others are counted\n"
"                            and dropped in BPF after their first sample\n"
"  -q, --quiet               fewer log lines\n"
"\n"
"Sampling (the same options as spanprof record, with the agent's defaults;\n"
"the agent has two aggregators of --agg-budget and --agg-entries each):\n");
	sp_sampling_opts__usage(f, &agent_defaults);
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

enum {
	OPT_INTERVAL = 256, OPT_JITTER, OPT_ENDPOINT, OPT_HEADERS, OPT_COMPRESSION, OPT_TIMEOUT,
	OPT_OUTPUT_DIR, OPT_MAX_FILES, OPT_MAX_FILE_BYTES, OPT_QUEUE_BYTES, OPT_DROP_POLICY,
	OPT_METRICS_ADDR, OPT_SHUTDOWN, OPT_MEM_HIGH, OPT_MEM_LOW, OPT_HEALTH_STALL,
	OPT_UPLOAD_SYMBOLS, OPT_SYMBOLS_QUEUE,
	OPT_SELECT_CGROUP, OPT_SELECT_EXE, OPT_SELECT_SERVICE,
};

#define BAD(...) do { fprintf(stderr, "spanprof agent: " __VA_ARGS__); return -EINVAL; } while (0)

/* The agent's own options (sp_own_opt_fn). */
static int own_opt(int c, const char *arg, void *ctx, char *msg, size_t len)
{
	struct agent_opts *o = ctx;
	uint64_t v;
	double d;

	switch (c) {
	case 'q':
		o->quiet = true;
		break;
	case OPT_INTERVAL:
		if (parse_double(arg, 0.2, 86400, &o->interval_s))
			return sp_cli__refuse(msg, len,
					      "--interval %s: expected seconds, 0.2..86400", arg);
		break;
	case OPT_JITTER:
		if (parse_double(arg, 0, 0.5, &o->jitter))
			return sp_cli__refuse(msg, len,
					      "--jitter %s: expected a fraction, 0..0.5", arg);
		break;
	case OPT_ENDPOINT:
		o->endpoint = arg;
		break;
	case OPT_HEADERS:
		o->headers = arg;
		break;
	case OPT_COMPRESSION:
		if (!strcmp(arg, "gzip"))
			o->compression = 1;
		else if (!strcmp(arg, "none"))
			o->compression = 0;
		else
			return sp_cli__refuse(msg, len,
					      "--compression %s: expected gzip or none", arg);
		break;
	case OPT_TIMEOUT:
		if (sp_cli__parse_u64(arg, 600000, &v) || v == 0)
			return sp_cli__refuse(msg, len,
					      "--timeout-ms %s: expected 1..600000", arg);
		o->timeout_ms = v;
		break;
	case OPT_OUTPUT_DIR:
		o->output_dir = arg;
		break;
	case OPT_MAX_FILES:
		if (sp_cli__parse_u64(arg, 1000000, &v) || v == 0)
			return sp_cli__refuse(msg, len,
					      "--max-files %s: expected 1..1000000", arg);
		o->max_files = v;
		break;
	case OPT_MAX_FILE_BYTES:
		if (sp_cli__parse_u64(arg, 1ull << 34, &v) || v < 4096)
			return sp_cli__refuse(msg, len,
					      "--max-file-bytes %s"
					      ": expected bytes, at least 4096", arg);
		o->max_file_bytes = v;
		break;
	case OPT_QUEUE_BYTES:
		if (sp_cli__parse_u64(arg, 1ull << 34, &v) || v < 4096)
			return sp_cli__refuse(msg, len,
					      "--queue-bytes %s"
					      ": expected bytes, at least 4096", arg);
		o->queue_bytes = v;
		break;
	case OPT_DROP_POLICY:
		if (!strcmp(arg, "oldest"))
			o->drop_policy = SP_DROP_OLDEST;
		else if (!strcmp(arg, "newest"))
			o->drop_policy = SP_DROP_NEWEST;
		else
			return sp_cli__refuse(msg, len,
					      "--drop-policy %s: expected oldest or newest", arg);
		break;
	case OPT_METRICS_ADDR:
		o->metrics_addr = strcmp(arg, "none") ? arg : NULL;
		break;
	case OPT_SHUTDOWN:
		if (parse_double(arg, 0.1, 600, &o->shutdown_timeout_s))
			return sp_cli__refuse(msg, len,
					      "--shutdown-timeout %s"
					      ": expected seconds, 0.1..600", arg);
		break;
	case OPT_HEALTH_STALL:
		if (parse_double(arg, 1, 3600, &o->health_stall_s))
			return sp_cli__refuse(msg, len,
					      "--health-stall %s: expected seconds, 1..3600", arg);
		break;
	case OPT_MEM_HIGH:
		if (parse_double(arg, 1, 100, &d))
			return sp_cli__refuse(msg, len,
					      "--mem-high %s: expected a percentage, 1..100", arg);
		o->mem_high = d / 100;
		break;
	case OPT_MEM_LOW:
		if (parse_double(arg, 1, 100, &d))
			return sp_cli__refuse(msg, len,
					      "--mem-low %s: expected a percentage, 1..100", arg);
		o->mem_low = d / 100;
		break;
	case OPT_UPLOAD_SYMBOLS:
		o->upload_symbols = true;
		break;
	case OPT_SYMBOLS_QUEUE:
		if (sp_cli__parse_u64(arg, 1ull << 34, &v) || v < (1u << 20))
			return sp_cli__refuse(msg, len,
					      "--symbols-queue-bytes %s"
					      ": expected bytes, at least 1048576", arg);
		o->symbols_queue_bytes = v;
		break;
	case OPT_SELECT_CGROUP:
	case OPT_SELECT_EXE:
	case OPT_SELECT_SERVICE: {
		static const char *const names[] = { "--select-cgroup", "--select-exe",
						     "--select-service" };
		static const char *const want[] = { "a path starting with /",
						    "an executable path or name", "a service name" };
		int k = c - OPT_SELECT_CGROUP;

		if (!o->sel && !(o->sel = sp_target_select__new(NULL)))
			return sp_cli__refuse(msg, len, "out of memory");
		if (k == 0 ? sp_target_select__add_cgroup(o->sel, arg) :
		    k == 1 ? sp_target_select__add_exe(o->sel, arg) :
			     sp_target_select__add_service(o->sel, arg))
			return sp_cli__refuse(msg, len, "%s %s: expected %s (at most %d, each "
					      "below %d bytes)", names[k], arg, want[k],
					      SP_SELECT_MAX, SP_SELECT_LEN);
		break;
	}
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct agent_opts *o)
{
	static const struct option own[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "jitter", required_argument, NULL, OPT_JITTER },
		{ "endpoint", required_argument, NULL, OPT_ENDPOINT },
		{ "headers", required_argument, NULL, OPT_HEADERS },
		{ "compression", required_argument, NULL, OPT_COMPRESSION },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
		{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
		{ "max-files", required_argument, NULL, OPT_MAX_FILES },
		{ "max-file-bytes", required_argument, NULL, OPT_MAX_FILE_BYTES },
		{ "queue-bytes", required_argument, NULL, OPT_QUEUE_BYTES },
		{ "drop-policy", required_argument, NULL, OPT_DROP_POLICY },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
		{ "shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN },
		{ "mem-high", required_argument, NULL, OPT_MEM_HIGH },
		{ "mem-low", required_argument, NULL, OPT_MEM_LOW },
		{ "health-stall", required_argument, NULL, OPT_HEALTH_STALL },
		{ "upload-symbols", no_argument, NULL, OPT_UPLOAD_SYMBOLS },
		{ "symbols-queue-bytes", required_argument, NULL, OPT_SYMBOLS_QUEUE },
		{ "select-cgroup", required_argument, NULL, OPT_SELECT_CGROUP },
		{ "select-exe", required_argument, NULL, OPT_SELECT_EXE },
		{ "select-service", required_argument, NULL, OPT_SELECT_SERVICE },
		{ 0 },
	};
	static const struct sp_command_opts cmd = { "agent", "q", own, own_opt, usage };
	char msg[256];
	int first;

	*o = (struct agent_opts){
		.s = agent_defaults, .interval_s = 10, .jitter = 0.1, .shutdown_timeout_s = 5,
		.health_stall_s = 10,
		.metrics_addr = "127.0.0.1:9464", .compression = -1, .drop_policy = -1,
		.mem_high = 0.75, .mem_low = 0.60,
	};
	first = sp_sampling_opts__parse_argv(&cmd, o, argc, argv, &o->s, msg, sizeof(msg));
	if (first < 0)
		BAD("%s\n", msg);
	if (first < argc)
		BAD("unexpected argument %s (the agent profiles the whole machine)\n", argv[first]);
	if (!(o->mem_low < o->mem_high))
		BAD("--mem-low must be below --mem-high\n");
	return 0;
}

/* ----------------------------------------------------------- consumer */

/* Pipeline hook (pipeline's lock held): a new image may be a new container. */
static void on_proc(uint32_t pid, enum sp_proc_why why, void *ctx)
{
	struct agent *a = ctx;

	if (why == SP_PROC_FIRST_SIGHT || why == SP_PROC_EXEC)
		sp_container_ids__note(a->cids, pid);
	if (why == SP_PROC_EXEC || why == SP_PROC_EXEC_LAZY || why == SP_PROC_EXIT)
		sp_target_select__forget(a->o.sel, pid);	/* decided again */
}

/* hostsyms' sink: host symbols to the uploader (the reader thread's JIT
 * pieces and the worker's kernel snapshot and vDSO). */
static int upload_sink(void *ctx, int kind, const uint8_t *key, size_t key_len,
		       const uint8_t *data, size_t len)
{
	struct agent *a = ctx;
	int r;

	if (!a->up)
		return 0;	/* no endpoint to ship to: the store (if any) has it */
	r = sp_uploader__submit(a->up, kind, key, key_len, data, len);
	return r > 0 ? 0 : r;	/* already delivered or queued: taken */
}

static void upload_lost(void *ctx, int kind, const uint8_t *key, size_t key_len)
{
	struct agent *a = ctx;

	(void)key;
	(void)key_len;
	sp_hostsyms__lost(sp_pipeline__hostsyms(a->pipe), kind);
}

/* --select-service's names: the resources' own (the gate runs with the
 * pipeline's lock held, as sp_pipeline__service_name requires). */
static const char *select_service(uint32_t pid, bool look_again, void *ctx)
{
	return sp_pipeline__service_name(ctx, pid, look_again);
}

/* Pipeline gate: while the memory guard is engaged, samples are drained
 * and dropped (process events still pass: they keep the process table
 * right and cost no aggregator space). */
static bool admit(const struct sp_event *e, void *ctx)
{
	struct agent *a = ctx;
	bool fresh;

	/* Target selection: a process not selected is told to BPF at its
	 * first sample; what was already in the ring is dropped here. */
	if (a->o.sel)
		sp_pipeline__prepare(a->pipe, e);	/* a deferred exec read first */
	if (a->o.sel && !sp_target_select__wants(a->o.sel, e->pid, e->ts_ns / 1000000u, &fresh)) {
		if (fresh && sp_pipeline__exclude(a->pipe, e->pid))
			a->select_bpf_full++;
		a->select_dropped++;
		return false;
	}
	if (!atomic_load_explicit(&a->guard_engaged, memory_order_relaxed))
		return true;
	a->memguard_dropped[e->type == SP_EV_OFFCPU]++;
	return false;
}

static void publish(struct agent *a)
{
	struct sp_summary sum = { 0 };

	sp_pipeline__fill_summary(a->pipe, &sum);
	pthread_mutex_lock(&a->stats_lock);
	a->pub.sum = sum;
	a->pub.memguard_dropped[0] = a->memguard_dropped[0];
	a->pub.memguard_dropped[1] = a->memguard_dropped[1];
	if (a->o.sel)
		a->pub.sel = *sp_target_select__stats(a->o.sel);
	a->pub.select_dropped = a->select_dropped;
	a->pub.select_bpf_full = a->select_bpf_full;
	pthread_mutex_unlock(&a->stats_lock);
}

static uint64_t next_interval_ns(struct agent *a)
{
	double j = a->o.jitter * (2.0 * rand_r(&a->seed) / RAND_MAX - 1.0);

	return (uint64_t)(a->o.interval_s * (1.0 + j) * 1e9);
}

/* Hands the current aggregator to the worker if it has returned the spare;
 * never waits.  Returns true when swapped.  The process-table epoch is
 * closed by the swap while xfer_lock is held, so the worker, which may
 * start at once, releases exactly the epoch of what it exported. */
static bool try_swap(struct agent *a, uint64_t now, bool last)
{
	bool swapped = false;

	pthread_mutex_lock(&a->xfer_lock);
	if (a->spare && !a->full) {
		a->full = sp_pipeline__swap(a->pipe, a->spare, &a->full_epoch);
		a->full_start = a->interval_start;
		a->full_end = now;
		a->full_is_last = last;
		a->spare = NULL;
		a->interval_start = now;
		swapped = true;
		pthread_cond_broadcast(&a->xfer_cond);
	}
	pthread_mutex_unlock(&a->xfer_lock);
	return swapped;
}

static void count_interval(struct agent *a, bool swapped)
{
	pthread_mutex_lock(&a->stats_lock);
	if (swapped)
		a->pub.intervals++;
	else
		a->pub.intervals_stretched++;
	pthread_mutex_unlock(&a->stats_lock);
}

static void *consumer_main(void *arg)
{
	struct agent *a = arg;
	uint64_t now = sp_clock__mono_ns(), next_swap = now + next_interval_ns(a);
	bool stretched = false;
	char err[256];

	a->interval_start = now;
	while (!atomic_load(&a->stopping)) {
		uint64_t wake_by;

		atomic_store(&a->consumer_advanced_ns, sp_clock__mono_ns());
		/* awake for the interval's end; while it is stretched (the
		 * worker busy), for a retry at the default period */
		wake_by = stretched ? sp_clock__mono_ns() + SP_PIPELINE_POLL_MS * 1000000ull
				    : next_swap;
		if (sp_pipeline__pump(a->pipe, wake_by, err, sizeof(err))) {
			fprintf(stderr, "spanprof agent: %s\n", err);
			break;
		}
		now = sp_clock__mono_ns();
		if (now >= next_swap) {
			if (try_swap(a, now, false)) {
				next_swap = now + next_interval_ns(a);
				stretched = false;
				count_interval(a, true);
			} else if (!stretched) {
				stretched = true;	/* counted once per interval */
				count_interval(a, false);
			}
		}
		publish(a);
	}
	if (atomic_load(&a->stopping)) {
		/* Final interval: stop sampling, take every record left, and hand
		 * the buffer over as soon as the worker is free (bounded by the
		 * shutdown deadline). */
		struct timespec dl;

		sp_pipeline__stop(a->pipe, NULL);
		publish(a);
		abs_deadline(&dl, a->deadline_ns);
		pthread_mutex_lock(&a->xfer_lock);
		while (!(a->spare && !a->full) && sp_clock__mono_ns() < a->deadline_ns)
			if (pthread_cond_timedwait(&a->xfer_cond, &a->xfer_lock, &dl) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&a->xfer_lock);
		if (!try_swap(a, sp_clock__mono_ns(), true))
			fprintf(stderr, "spanprof agent: shutdown: the export worker is still "
				"busy; the last interval is not exported\n");
		else
			count_interval(a, true);
		publish(a);
	}
	atomic_store(&a->consumer_alive, false);
	return NULL;
}

/* ------------------------------------------------------------- worker */

struct count_ctx {
	uint64_t n;
};

static int count_entry(const struct sp_agg_entry *e, void *ctx)
{
	((struct count_ctx *)ctx)->n += e->count;
	return 0;
}

static uint64_t agg_samples(struct sp_agg *g)
{
	struct count_ctx c = { 0 };

	sp_agg__foreach(g, count_entry, &c);
	return c.n;
}

/* container.id on each resource, from the cgroup of its pid (the
 * snapshot builder fills the other resource attributes). */
static const char *container_id_of(uint32_t pid, void *ctx)
{
	return sp_container_ids__get(ctx, pid);
}

/* Under memory pressure an aggregator's touched pages are given back by
 * re-creating it (one mmap each); on failure the old one is kept. */
static struct sp_agg *recreate(struct agent *a, struct sp_agg *g)
{
	struct sp_agg *n;

	sp_agg__free(g);
	n = sp_pipeline__new_agg(a->pipe);
	malloc_trim(0);
	pthread_mutex_lock(&a->stats_lock);
	a->ws.agg_recreated++;
	pthread_mutex_unlock(&a->stats_lock);
	return n;
}

/* Returns true when memory pressure made it discard the buffer. */
static bool export_one(struct agent *a, struct sp_agg *g, uint64_t start, uint64_t end)
{
	struct sp_profile *prof = NULL;
	struct sp_snapshot_opts so = {
		.mono_to_unix_ns = sp_clock__mono_to_unix_ns(),
		.start_mono_ns = start,
		.end_mono_ns = end,
		.container_id = container_id_of,
		.container_id_ctx = a->cids,
	};
	uint64_t n = 0, t0, limit, need;
	int err;

	/* A snapshot allocates about as much as the aggregator holds, and the
	 * encoder as much again: when that would cross the high watermark
	 * the buffer is discarded (counted) rather than risk the OOM killer. */
	limit = atomic_load(&a->guard_limit);
	need = sp_agg__stats(g)->bytes_used;
	need = SNAPSHOT_FACTOR * (need > a->agg_fixed ? need - a->agg_fixed : 0);
	if (atomic_load(&a->guard_engaged) ||
	    (limit && (double)(atomic_load(&a->guard_usage) + need) >=
		      a->o.mem_high * (double)limit)) {
		n = agg_samples(g);
		fprintf(stderr, "spanprof agent: memory guard: interval of %llu samples discarded "
			"(a snapshot needs ~%llu bytes; cgroup usage %llu of %llu)\n",
			(unsigned long long)n, (unsigned long long)need,
			(unsigned long long)atomic_load(&a->guard_usage), (unsigned long long)limit);
		pthread_mutex_lock(&a->stats_lock);
		a->ws.samples_memguard += n;
		pthread_mutex_unlock(&a->stats_lock);
		return true;
	}
	t0 = sp_clock__mono_ns();
	err = sp_pipeline__snapshot(a->pipe, g, &so, &prof);
	if (err) {
		n = agg_samples(g);
		fprintf(stderr, "spanprof agent: snapshot failed (%s): %llu samples dropped\n",
			strerror(-err), (unsigned long long)n);
		pthread_mutex_lock(&a->stats_lock);
		a->ws.samples_snapshot_failed += n;
		pthread_mutex_unlock(&a->stats_lock);
		return err == -ENOMEM;
	}
	for (uint32_t i = 0; i < prof->n_samples; i++)
		n += prof->samples[i].count;
	/* the symbols a symbolizer needs for this profile go first */
	sp_hostsyms__ship_kernel(sp_pipeline__hostsyms(a->pipe));
	if (sp_hostsyms__profile_uses_vdso(prof))
		sp_hostsyms__ship_vdso(sp_pipeline__hostsyms(a->pipe));
	sp_uploader__flush(a->up, SYMBOLS_FLUSH_MS);
	err = prof->n_samples ? sp_exporter__submit(a->exp, prof) : 0;
	pthread_mutex_lock(&a->stats_lock);
	a->ws.snapshot_ns_sum += sp_clock__mono_ns() - t0;
	a->ws.last_resources = prof->n_resources;
	if (prof->n_samples)
		a->ws.batches++;
	if (!err || err == -ENOSPC)
		a->ws.samples_submitted += n;	/* -ENOSPC: counted by the exporter */
	else
		a->ws.samples_encode_failed += n;
	pthread_mutex_unlock(&a->stats_lock);
	if (err && err != -ENOSPC)
		fprintf(stderr, "spanprof agent: encoding the profile failed (%s): %llu samples "
			"dropped\n", strerror(-err), (unsigned long long)n);
	sp_profile__free(prof);
	return err == -ENOMEM;
}

static void *worker_main(void *arg)
{
	struct agent *a = arg;

	for (;;) {
		struct sp_agg *g;
		uint64_t start, end, epoch;
		bool last, pressure;

		pthread_mutex_lock(&a->xfer_lock);
		while (!a->full && !a->worker_quit)
			pthread_cond_wait(&a->xfer_cond, &a->xfer_lock);
		if (!a->full) {
			pthread_mutex_unlock(&a->xfer_lock);
			break;
		}
		g = a->full;
		start = a->full_start;
		end = a->full_end;
		epoch = a->full_epoch;
		last = a->full_is_last;
		pthread_mutex_unlock(&a->xfer_lock);

		pressure = atomic_load(&a->guard_engaged);
		pressure |= export_one(a, g, start, end);
		/* Exported or discarded: nothing refers to the epoch any more. */
		sp_pipeline__release(a->pipe, epoch);
		if (pressure || atomic_load(&a->guard_engaged)) {
			struct sp_agg *n = recreate(a, g);

			g = n ? n : sp_pipeline__new_agg(a->pipe);
		} else {
			sp_agg__reset(g);
		}
		pthread_mutex_lock(&a->xfer_lock);
		a->full = NULL;
		a->spare = g;		/* NULL only if re-creation failed twice */
		if (last)
			a->last_done = true;
		pthread_cond_broadcast(&a->xfer_cond);
		pthread_mutex_unlock(&a->xfer_lock);
	}
	return NULL;
}

/* ------------------------------------------------------------ metrics */

static void own_usage(uint64_t *rss, uint64_t *hwm, double *cpu_s)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	struct rusage ru;

	*rss = *hwm = 0;
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
				*rss = kb * 1024;
			else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
				*hwm = kb * 1024;
		}
		fclose(f);
	}
	getrusage(RUSAGE_SELF, &ru);
	*cpu_s = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void m_counter(struct sp_metrics_buf *b, const char *name, const char *help, uint64_t v)
{
	sp_metrics__family(b, name, SP_METRIC_COUNTER, help);
	sp_metrics__u64(b, name, NULL, v);
}

/* Go processes (ctx_discovery's Go half, go_discovery.h), from the
 * summary's tables (stat_rows.h); the failure family's reasons by name
 * between them. */
static void go_metrics(struct sp_metrics_buf *b, const struct sp_summary *s)
{
	sp_stat_rows__metrics(b, sp_stat_go, s);
	for (int i = 1; i < SP_GO_FAIL__MAX; i++)
		sp_metrics__u64(b, "spanprof_go_process_failures_total",
				L("reason", sp_go_fail__name(i)), s->go.fail[i]);
	sp_stat_rows__metrics(b, sp_stat_go_more, s);
}

static void m_gauge(struct sp_metrics_buf *b, const char *name, const char *help, double v)
{
	sp_metrics__family(b, name, SP_METRIC_GAUGE, help);
	sp_metrics__f64(b, name, NULL, v);
}

/* The unwinder's tables and its BPF memory (its BPF counters are in
 * sp_counters__write_metrics), from the summary's table.  Nothing with
 * --unwind fp. */
static void render_unwind(struct sp_metrics_buf *b, struct sp_unwinder *unw, struct sp_summary *s)
{
	if (!unw)
		return;
	sp_unwinder__stats(unw, &s->unw);
	sp_stat_rows__metrics(b, sp_stat_unwind, s);
	m_gauge(b, "spanprof_unwind_build_queue", "Unwind table builds waiting",
		(double)s->unw.queued);
}

static void render(struct sp_metrics_buf *b, void *ctx)
{
	struct agent *a = ctx;
	struct published p;
	struct worker_stats w;
	struct sp_export_stats x;
	uint64_t bpf[SP_CNT__MAX] = { 0 }, rss, hwm, cum = 0;
	double cpu;

	pthread_mutex_lock(&a->stats_lock);
	p = a->pub;
	w = a->ws;
	pthread_mutex_unlock(&a->stats_lock);
	sp_exporter__stats(a->exp, &x);
	sp_pipeline__read_counters(a->pipe, bpf);
	own_usage(&rss, &hwm, &cpu);

	sp_metrics__family(b, "spanprof_agent_info", SP_METRIC_GAUGE,
			   "Agent version, sampling frequency and memory cgroup version");
	{
		char hz[16];

		snprintf(hz, sizeof(hz), "%u", a->o.s.hz);
		sp_metrics__u64(b, "spanprof_agent_info",
				L("version", AGENT_VERSION, "hz", hz, "off_cpu",
				  a->o.s.off_cpu ? "true" : "false", "cgroup",
				  sp_memguard__version_name(a->guard.version)), 1);
	}
	sp_metrics__family(b, "spanprof_bpf_samples_total", SP_METRIC_COUNTER,
			   "Samples taken in BPF by type (on-CPU: perf events; off-CPU: "
			   "waits captured)");
	sp_metrics__u64(b, "spanprof_bpf_samples_total", L("type", "oncpu"),
			bpf[SP_CNT_ONCPU_EVENTS]);
	sp_metrics__u64(b, "spanprof_bpf_samples_total", L("type", "offcpu"),
			bpf[SP_CNT_OFFCPU_CAPTURED]);
	sp_metrics__family(b, "spanprof_samples_skipped_total", SP_METRIC_COUNTER,
			   "Samples not streamed by design (idle CPU, off-CPU waits below the "
			   "minimum or sampled out)");
	sp_metrics__u64(b, "spanprof_samples_skipped_total", L("reason", "idle"),
			bpf[SP_CNT_IDLE_SKIPPED]);
	sp_metrics__u64(b, "spanprof_samples_skipped_total", L("reason", "offcpu_below_min"),
			bpf[SP_CNT_OFFCPU_BELOW_MIN]);
	sp_metrics__u64(b, "spanprof_samples_skipped_total", L("reason", "offcpu_sampled_out"),
			bpf[SP_CNT_OFFCPU_SAMPLED_OUT]);
	sp_metrics__family(b, "spanprof_samples_received_total", SP_METRIC_COUNTER,
			   "Samples read from the ring buffer by type");
	sp_metrics__u64(b, "spanprof_samples_received_total", L("type", "oncpu"),
			p.sum.consumer.received_oncpu + p.memguard_dropped[0]);
	sp_metrics__u64(b, "spanprof_samples_received_total", L("type", "offcpu"),
			p.sum.consumer.received_offcpu + p.memguard_dropped[1]);
	m_counter(b, "spanprof_samples_submitted_total",
		  "Samples handed to the exporter (encoded and queued, or dropped by the "
		  "queue policy and counted there)", w.samples_submitted);
	sp_metrics__family(b, "spanprof_dropped_samples_total", SP_METRIC_COUNTER,
			   "Samples lost, by reason");
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "ringbuf_full"),
			bpf[SP_CNT_RB_DROP_ONCPU] + bpf[SP_CNT_RB_DROP_OFFCPU]);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "malformed"),
			p.sum.consumer.malformed);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "aggregator_full"),
			p.sum.consumer.agg_dropped);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "memguard"),
			p.memguard_dropped[0] + p.memguard_dropped[1] + w.samples_memguard);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "snapshot_failed"),
			w.samples_snapshot_failed);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "encode_failed"),
			w.samples_encode_failed);
	sp_metrics__u64(b, "spanprof_dropped_samples_total", L("reason", "export"),
			x.samples_dropped);
	m_counter(b, "spanprof_ringbuf_dropped_samples_total",
		  "Samples lost because the BPF ring buffer was full (on-CPU + off-CPU)",
		  bpf[SP_CNT_RB_DROP_ONCPU] + bpf[SP_CNT_RB_DROP_OFFCPU]);
	m_counter(b, "spanprof_ringbuf_dropped_records_total",
		  "Process lifecycle records (exec/exit) lost because the ring buffer was full",
		  bpf[SP_CNT_RB_DROP_PROC]);
	m_counter(b, "spanprof_perf_event_lost_total",
		  "Always 0: samples go through a BPF ring buffer, not perf buffers, so "
		  "there are no PERF_RECORD_LOST records; ring-buffer losses are "
		  "spanprof_ringbuf_dropped_samples_total", 0);
	m_counter(b, "spanprof_memguard_dropped_samples_total",
		  "Samples drained and dropped, or discarded buffers, while the memory guard "
		  "was engaged", p.memguard_dropped[0] + p.memguard_dropped[1] + w.samples_memguard);
	/* Every BPF counter, from the table the record summary uses. */
	sp_counters__write_metrics(b, bpf);
	sp_stat_rows__metrics(b, sp_stat_consumer, &p.sum);

	m_counter(b, "spanprof_intervals_total", "Reporting intervals handed to export",
		  p.intervals);
	m_counter(b, "spanprof_intervals_stretched_total",
		  "Intervals extended because the export worker still held the previous "
		  "buffer", p.intervals_stretched);
	m_gauge(b, "spanprof_aggregator_bytes", "Bytes used in the current aggregator",
		(double)p.sum.agg.bytes_used);
	m_gauge(b, "spanprof_aggregator_reserved_bytes",
		"Bytes reserved by one aggregator (there are two)", (double)p.sum.agg.bytes_reserved);
	m_gauge(b, "spanprof_aggregator_entries", "Entries in the current aggregator",
		(double)p.sum.agg.entries);
	m_counter(b, "spanprof_aggregator_recreated_total",
		  "Aggregators re-created to return memory under memory pressure",
		  w.agg_recreated);
	sp_stat_rows__metrics(b, sp_stat_procs, &p.sum);
	sp_metrics__family(b, "spanprof_target_selection_total", SP_METRIC_COUNTER,
			   "Process images decided by --select-cgroup/--select-exe/--select-service "
			   "(deferred: no service.name yet at the first sample, decided later), "
			   "samples of excluded ones dropped before BPF stopped them, exclusions "
			   "BPF refused");
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "included"),
			p.sel.included);
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "excluded"),
			p.sel.excluded);
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "unreadable"),
			p.sel.unreadable);
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "deferred"),
			p.sel.deferred);
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "samples_dropped"),
			p.select_dropped);
	sp_metrics__u64(b, "spanprof_target_selection_total", L("outcome", "bpf_map_full"),
			p.select_bpf_full);
	sp_metrics__family(b, "spanprof_process_env_total", SP_METRIC_COUNTER,
			   "Resource identity read from the processes' /proc/PID/environ "
			   "(OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), and what was not kept "
			   "(timed_out: not read within 250 ms; skipped: its earlier read still stuck)");
	{
		static const char *const ev[] = { "read", "declared", "unreadable", "truncated",
						  "invalid", "attrs_dropped", "over_budget",
						  "timed_out", "skipped" };
		const uint64_t v[] = { p.sum.env.reads, p.sum.env.declared, p.sum.env.unreadable,
				       p.sum.env.truncated, p.sum.env.invalid,
				       p.sum.env.attrs_dropped + p.sum.res_attrs_dropped,
				       p.sum.env.over_budget, p.sum.env.timed_out,
				       p.sum.env.skipped };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			sp_metrics__u64(b, "spanprof_process_env_total", L("event", ev[i]), v[i]);
	}
	m_gauge(b, "spanprof_last_profile_resources",
		"Processes (resources) in the last exported profile", (double)w.last_resources);
	sp_stat_rows__metrics(b, sp_stat_ctx, &p.sum);
	sp_metrics__family(b, "spanprof_ctx_failures_total", SP_METRIC_COUNTER,
			   "Processes publishing a context that could not be read, by reason "
			   "(bpf_map_full: the tls_descs map is full)");
	for (uint32_t i = 0; i < p.sum.n_ctx_fail; i++)
		sp_metrics__u64(b, "spanprof_ctx_failures_total",
				L("reason", p.sum.ctx_fail_names[i]), p.sum.ctx_fail[i]);
	go_metrics(b, &p.sum);

	sp_metrics__family(b, "spanprof_export_batches_total", SP_METRIC_COUNTER,
			   "Export batches by outcome");
	sp_metrics__u64(b, "spanprof_export_batches_total", L("outcome", "submitted"),
			x.batches_submitted);
	sp_metrics__u64(b, "spanprof_export_batches_total", L("outcome", "exported"),
			x.batches_exported);
	sp_metrics__u64(b, "spanprof_export_batches_total", L("outcome", "dropped_queue_full"),
			x.batches_dropped_queue_full);
	sp_metrics__u64(b, "spanprof_export_batches_total", L("outcome", "dropped_failed"),
			x.batches_dropped_failed);
	m_counter(b, "spanprof_export_requests_total", "HTTP export attempts", x.requests);
	m_counter(b, "spanprof_export_request_failures_total",
		  "HTTP export attempts without a 2xx answer", x.request_failures);
	m_counter(b, "spanprof_export_retries_total", "HTTP export retries", x.retries);
	m_counter(b, "spanprof_export_partial_success_rejected_total",
		  "Profiles the endpoint reported as rejected (partial success)",
		  x.partial_success_rejected);
	m_counter(b, "spanprof_export_sent_bytes_total", "Request bytes uploaded", x.bytes_sent);
	sp_metrics__family(b, "spanprof_export_request_duration_seconds", SP_METRIC_HISTOGRAM,
			   "Latency of successful export requests");
	for (unsigned i = 0; i <= SP_EXPORT_LATENCY_BUCKETS; i++) {
		char le[32];

		cum += x.latency_buckets[i];
		if (i < SP_EXPORT_LATENCY_BUCKETS)
			snprintf(le, sizeof(le), "%g", sp_export_latency_bounds_s[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		sp_metrics__u64(b, "spanprof_export_request_duration_seconds_bucket",
				L("le", le), cum);
	}
	sp_metrics__f64(b, "spanprof_export_request_duration_seconds_sum", NULL,
			x.latency_ns_sum / 1e9);
	sp_metrics__u64(b, "spanprof_export_request_duration_seconds_count", NULL, cum);
	m_gauge(b, "spanprof_export_request_duration_max_seconds",
		"Slowest successful export request", x.latency_ns_max / 1e9);
	m_gauge(b, "spanprof_export_queue_bytes", "Encoded bytes waiting in the export queue",
		(double)x.queue_bytes);
	m_gauge(b, "spanprof_export_queue_limit_bytes", "Export queue cap",
		(double)(a->o.queue_bytes ? a->o.queue_bytes : 16u << 20));
	m_gauge(b, "spanprof_export_queue_batches", "Batches waiting in the export queue",
		(double)x.queue_batches);
	m_gauge(b, "spanprof_export_inflight_bytes", "Bytes of the batch being sent",
		(double)x.inflight_bytes);
	sp_metrics__family(b, "spanprof_export_files_total", SP_METRIC_COUNTER,
			   "Rotating files by outcome");
	sp_metrics__u64(b, "spanprof_export_files_total", L("outcome", "written"),
			x.files_written);
	sp_metrics__u64(b, "spanprof_export_files_total", L("outcome", "failed"), x.files_failed);
	sp_metrics__u64(b, "spanprof_export_files_total", L("outcome", "removed"),
			x.files_removed);
	sp_agent_metrics__syms(b, sp_pipeline__hostsyms(a->pipe), a->up);

	m_gauge(b, "spanprof_memguard_engaged",
		"1 while the memory guard stops ingestion (usage above the high watermark)",
		atomic_load(&a->guard_engaged) ? 1 : 0);
	m_gauge(b, "spanprof_memguard_limit_bytes", "Cgroup memory limit (0 = none: guard off)",
		(double)atomic_load(&a->guard_limit));
	m_gauge(b, "spanprof_memguard_usage_bytes",
		"Cgroup memory usage minus inactive file cache", (double)atomic_load(&a->guard_usage));
	m_counter(b, "spanprof_memguard_engagements_total", "Times the memory guard engaged",
		  atomic_load(&a->guard_engagements));
	m_counter(b, "spanprof_memguard_releases_total", "Times the memory guard released",
		  atomic_load(&a->guard_releases));

	m_counter(b, "spanprof_metrics_connections_cut_total",
		  "Connections to this server cut at a deadline (trickling or idle clients)",
		  sp_metrics_server__cut(a->metrics));
	m_gauge(b, "spanprof_consumer_stalled_seconds",
		"Seconds since the consumer thread last came round its loop",
		(double)(sp_clock__mono_ns() - atomic_load(&a->consumer_advanced_ns)) / 1e9);
	render_unwind(b, sp_pipeline__unwinder(a->pipe), &p.sum);

	m_gauge(b, "process_resident_memory_bytes", "Resident set size of the agent",
		(double)rss);
	m_gauge(b, "spanprof_process_peak_resident_memory_bytes",
		"Peak resident set size of the agent (VmHWM)", (double)hwm);
	sp_metrics__family(b, "process_cpu_seconds_total", SP_METRIC_COUNTER,
			   "User and system CPU time of the agent");
	sp_metrics__f64(b, "process_cpu_seconds_total", NULL, cpu);
	m_gauge(b, "process_start_time_seconds", "Start time of the agent (unix seconds)",
		a->start_unix_s);
}

/* Healthy while the consumer thread runs and has come round its loop
 * within --health-stall seconds (it does every poll-ms when nothing
 * blocks it: a consumer stuck in the kernel, on a file or a lock, stops
 * advancing and the probe says so). */
static bool healthy(void *ctx, char *why, size_t why_len)
{
	struct agent *a = ctx;
	uint64_t last = atomic_load(&a->consumer_advanced_ns), now = sp_clock__mono_ns();

	if (!atomic_load(&a->consumer_alive)) {
		snprintf(why, why_len, "unhealthy: the consumer thread is not running");
		return false;
	}
	if (now > last && now - last > (uint64_t)(a->o.health_stall_s * 1e9)) {
		snprintf(why, why_len, "unhealthy: the consumer has not advanced for %.1f s "
			 "(limit --health-stall %.1f s)", (double)(now - last) / 1e9,
			 a->o.health_stall_s);
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- main */

static void second_signal(int sig)
{
	static const char msg[] = "spanprof agent: second signal: exiting now\n";

	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	_exit(128 + sig);
}

static void guard_poll(struct agent *a, bool quiet)
{
	struct sp_unwinder *unw = sp_pipeline__unwinder(a->pipe);
	struct sp_unwinder_stats us;
	int r = sp_memguard__poll(&a->guard);

	atomic_store(&a->guard_usage, a->guard.usage);
	atomic_store(&a->guard_limit, a->guard.limit);
	atomic_store(&a->guard_engagements, a->guard.engagements);
	atomic_store(&a->guard_releases, a->guard.releases);
	if (r == 1) {
		atomic_store(&a->guard_engaged, a->guard.engaged);
		/* The unwinder's BPF memory is the cgroup's too: no builds
		 * while engaged. */
		sp_unwinder__set_pressure(unw, a->guard.engaged);
	}
	/* Its tables are the one part of the agent's fixed memory the
	 * guard can take back: engaged, it evicts them (least recently
	 * used first) until usage can fall below the release line; else
	 * they grow only into the room under the watermarks' midpoint
	 * (sp_memguard__reclaim_delta). */
	if (unw && r >= 0 && a->guard.version != SP_MEMGUARD_NONE)
		sp_unwinder__limit(unw, sp_memguard__reclaim_delta(&a->guard));
	sp_unwinder__stats(unw, &us);
	if (r == 1) {
		fprintf(stderr, "spanprof agent: memory guard %s: cgroup usage %llu of %llu bytes "
			"(%.0f%%; %s at %.0f%%, resume below %.0f%%; unwind tables and ranges "
			"%.1f MiB of it%s)\n",
			a->guard.engaged ? "ENGAGED, dropping samples" : "released, ingesting again",
			(unsigned long long)a->guard.usage, (unsigned long long)a->guard.limit,
			100.0 * a->guard.usage / (a->guard.limit ? a->guard.limit : 1),
			"stop", a->guard.high * 100, a->guard.low * 100, us.bytes_in_use / 1048576.0,
			a->guard.engaged && us.bytes_in_use ? ", evicting the least recently used" : "");
	} else if (r < 0 && !quiet && a->guard.read_errors == 1) {
		fprintf(stderr, "spanprof agent: memory guard: cannot read %s: %s\n",
			a->guard.dir, strerror(-r));
	}
}

static int build_exporter(struct agent *a, char *err, size_t err_len)
{
	struct sp_export_config c;
	int rc;

	sp_export_config__init(&c);
	c.endpoint = a->o.endpoint;
	c.headers = a->o.headers;
	c.timeout_ms = a->o.timeout_ms;
	c.queue_bytes = a->o.queue_bytes;
	c.output_dir = a->o.output_dir;
	c.max_files = a->o.max_files;
	c.max_file_bytes = a->o.max_file_bytes;
	if (a->o.drop_policy >= 0)
		c.drop_policy = a->o.drop_policy;
	rc = sp_export_config__from_env(&c, err, err_len);
	if (rc)
		return rc;
	if (a->o.compression >= 0)
		c.gzip = a->o.compression == 1;
	if (!c.endpoint && !c.profiles_url && !c.output_dir) {
		snprintf(err, err_len, "nowhere to export: give --endpoint URL (or set "
			 "OTEL_EXPORTER_OTLP_ENDPOINT) and/or --output-dir DIR");
		return -EINVAL;
	}
	rc = sp_exporter__new(&c, &a->exp, err, err_len);
	if (rc || !a->o.upload_symbols)
		return rc;
	if (!c.endpoint && !c.profiles_url) {
		snprintf(err, err_len, "--upload-symbols needs --endpoint URL (spanprof-symbolizer "
			 "serve --store-dir)");
		return -EINVAL;
	}
	return sp_uploader__new(&c, a->o.symbols_queue_bytes, upload_lost, a, &a->up, err,
				err_len);
}

int sp_agent__main(int argc, char **argv)
{
	struct agent *a;
	char err[512] = "", names[256];
	pthread_t consumer_th, worker_th;
	bool consumer_started = false, worker_started = false;
	struct sp_pipeline_config pcfg;
	struct sp_hostsyms_config hcfg;
	struct sp_memguard_config gcfg;
	bool ship;
	sigset_t sigs;
	struct timespec now;
	uint64_t eff = 0, perm = 0;
	uint32_t stuck;
	int rc = 1, sig = 0;

	/* A fixed mmap threshold: every large buffer is its own mapping and
	 * goes back to the kernel when freed.  glibc's default raises the
	 * threshold after a large free (here: reading /proc/kallsyms at
	 * start), after which large buffers come from the heap and stay
	 * resident: the agent's idle RSS went from 6 to 32 MB, and the
	 * memory guard could not release (test_agent_memguard.py). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "spanprof agent: out of memory\n");
		return 1;
	}
	if (parse_opts(argc, argv, &a->o)) {
		free(a);
		return 2;
	}
	pthread_mutex_init(&a->xfer_lock, NULL);
	pthread_mutex_init(&a->stats_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->xfer_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	clock_gettime(CLOCK_REALTIME, &now);
	a->start_unix_s = (double)now.tv_sec + now.tv_nsec / 1e9;
	if (getrandom(&a->seed, sizeof(a->seed), 0) != sizeof(a->seed))
		a->seed = (uint32_t)(getpid() ^ sp_clock__mono_ns());

	if (sp_privs__refuse_setuid(err, sizeof(err)) ||
	    !sp_caps__can_profile(err, sizeof(err))) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}
	gcfg = (struct sp_memguard_config){ .high = a->o.mem_high, .low = a->o.mem_low };
	sp_memguard__init(&a->guard, &gcfg);

	/* Signals go to the main thread only: block them before any thread.
	 * SIGHUP (a closed terminal) flushes like SIGTERM; SIGPIPE (stderr
	 * on a closed pipe) is ignored: the write fails, the data is kept. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	a->cids = sp_container_ids__new(0, NULL);
	if (!a->cids) {
		fprintf(stderr, "spanprof agent: out of memory\n");
		goto out;
	}
	/* Host symbols go somewhere only with --upload-symbols or an output
	 * directory: else none are copied.  The kernel snapshot is taken now,
	 * before the privilege drop (kernel addresses need it). */
	ship = a->o.upload_symbols || a->o.output_dir;
	hcfg = (struct sp_hostsyms_config){
		.keep_kernel_snapshot = ship, .no_jit = !ship, .sink = upload_sink,
		.sink_ctx = a, .log_prefix = "spanprof agent: ",
		.jit = { .min_interval_ns = 1000000000ull },
	};
	if (a->o.output_dir &&
	    (size_t)snprintf(a->syms_dir, sizeof(a->syms_dir), "%s/syms", a->o.output_dir) <
		    sizeof(a->syms_dir))
		hcfg.store_dir = a->syms_dir;
	pcfg = (struct sp_pipeline_config){ .opts = &a->o.s, .on_proc = on_proc, .on_proc_ctx = a,
					    .gate = admit, .gate_ctx = a, .hostsyms = &hcfg,
					    .exclude = sp_target_select__active(a->o.sel) };
	if (sp_pipeline__new(&pcfg, &a->pipe, err, sizeof(err))) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}
	if (a->o.sel)
		sp_target_select__set_service(a->o.sel, select_service, a->pipe);
	a->spare = sp_pipeline__new_agg(a->pipe);
	if (!a->spare) {
		fprintf(stderr, "spanprof agent: cannot allocate the second aggregator (%s): lower "
			"--agg-budget or --agg-entries\n", strerror(errno));
		goto out;
	}
	a->agg_fixed = sp_agg__stats(a->spare)->bytes_used;
	if (sp_pipeline__attach(a->pipe, err, sizeof(err))) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}

	/* Attached: from here on only /proc reads, BPF map updates and the
	 * goroutine park probes of new Go executables need privileges.
	 * Capabilities are per thread (capset and prctl change the caller
	 * only), and a thread blocked in a read cannot be made to drop them:
	 * so the drop comes before any read of another process's files (the
	 * scan below), while this is the only thread.  Helpers of our own
	 * start-up reads (/proc/self, /sys: base/io_deadline.h) end first;
	 * one still blocked there refuses the start (it would keep the
	 * start-up set). */
	stuck = sp_io_deadline__retire_all();
	if (stuck) {
		fprintf(stderr, "spanprof agent: %u start-up read(s) of /proc or /sys still blocked "
			"at the privilege drop: their threads would keep every capability; not "
			"starting (restart the agent once the system answers)\n", stuck);
		goto out;
	}
	if (sp_privs__drop(sp_privs__needed(a->o.s.off_cpu_goroutines), err, sizeof(err)) < 0) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}
	if (err[0] && !a->o.quiet)
		fprintf(stderr, "spanprof agent: %s\n", err);
	/* Threads started from here inherit the dropped set. */
	sp_pipeline__scan(a->pipe, NULL, 0);
	sp_caps__current(&eff, &perm);
	sp_privs__names(perm, names, sizeof(names));

	if (build_exporter(a, err, sizeof(err))) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}
	/* /metrics has every series from its first scrape (/healthz says ok
	 * as soon as the consumer runs, before its first publish). */
	publish(a);
	atomic_store(&a->consumer_advanced_ns, sp_clock__mono_ns());
	atomic_store(&a->consumer_alive, true);
	if (pthread_create(&worker_th, NULL, worker_main, a)) {
		fprintf(stderr, "spanprof agent: cannot start the export worker\n");
		goto out;
	}
	worker_started = true;
	if (pthread_create(&consumer_th, NULL, consumer_main, a)) {
		atomic_store(&a->consumer_alive, false);
		fprintf(stderr, "spanprof agent: cannot start the consumer thread\n");
		goto out;
	}
	consumer_started = true;
	/* Named: an operator (and test_agent_health_stall.py) finds the
	 * thread --health-stall watches. */
	pthread_setname_np(consumer_th, "sp-consumer");
	if (a->o.metrics_addr &&
	    sp_metrics_server__start(a->o.metrics_addr, 0, render, healthy, a, &a->metrics, err,
				     sizeof(err))) {
		fprintf(stderr, "spanprof agent: %s\n", err);
		goto out;
	}
	guard_poll(a, a->o.quiet);
	fprintf(stderr, "spanprof agent: sampling %u CPUs at %u Hz%s, interval %.1f s, "
		"metrics %s (port %u), memory guard %s%s, capabilities kept: %s\n",
		sp_pipeline__n_cpus(a->pipe), a->o.s.hz, a->o.s.off_cpu ? " + off-CPU" : "",
		a->o.interval_s, a->o.metrics_addr ? a->o.metrics_addr : "off",
		sp_metrics_server__port(a->metrics), sp_memguard__version_name(a->guard.version),
		a->guard.limit ? "" : " (no limit: off)", names);

	for (;;) {
		uint32_t ms = sp_memguard__poll_ms(&a->guard);
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
		siginfo_t si;

		sig = sigtimedwait(&sigs, &si, &ts);
		if (sig > 0)
			break;
		guard_poll(a, a->o.quiet);
		if (!atomic_load(&a->consumer_alive)) {
			fprintf(stderr, "spanprof agent: the consumer thread stopped; exiting\n");
			goto out;
		}
	}

	/* Shutdown: the deadline bounds every step; a second signal exits. */
	a->deadline_ns = sp_clock__mono_ns() + (uint64_t)(a->o.shutdown_timeout_s * 1e9);
	signal(SIGINT, second_signal);
	signal(SIGTERM, second_signal);
	signal(SIGHUP, second_signal);
	pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
	fprintf(stderr, "spanprof agent: %s: flushing the last interval (up to %.1f s)\n",
		strsignal(sig), a->o.shutdown_timeout_s);
	atomic_store(&a->stopping, true);
	sp_pipeline__wake(a->pipe);
	pthread_join(consumer_th, NULL);
	consumer_started = false;
	{
		struct timespec dl;
		bool done;
		uint64_t now;
		int64_t left_ms;

		abs_deadline(&dl, a->deadline_ns);
		pthread_mutex_lock(&a->xfer_lock);
		while (!a->last_done && sp_clock__mono_ns() < a->deadline_ns)
			if (pthread_cond_timedwait(&a->xfer_cond, &a->xfer_lock, &dl) == ETIMEDOUT)
				break;
		done = a->last_done;
		pthread_mutex_unlock(&a->xfer_lock);
		now = sp_clock__mono_ns();
		left_ms = now < a->deadline_ns ? (int64_t)((a->deadline_ns - now) / 1000000) : 0;
		if (!done || sp_exporter__flush(a->exp, left_ms > 0 ? left_ms : 1) == -ETIMEDOUT)
			fprintf(stderr, "spanprof agent: shutdown timeout (%.1f s): what is not "
				"delivered yet is dropped and counted\n", a->o.shutdown_timeout_s);
	}
	rc = 0;
out:
	if (a->deadline_ns == 0)
		a->deadline_ns = sp_clock__mono_ns();	/* an error: no final flush wait */
	atomic_store(&a->stopping, true);
	sp_pipeline__wake(a->pipe);
	if (consumer_started)
		pthread_join(consumer_th, NULL);
	sp_metrics_server__stop(a->metrics);
	if (worker_started) {
		pthread_mutex_lock(&a->xfer_lock);
		a->worker_quit = true;
		pthread_cond_broadcast(&a->xfer_cond);
		pthread_mutex_unlock(&a->xfer_lock);
		pthread_join(worker_th, NULL);
	}
	if (a->exp) {
		struct sp_export_stats x;
		struct published p;
		struct worker_stats w;

		sp_exporter__stats(a->exp, &x);
		p = a->pub;
		w = a->ws;
		fprintf(stderr, "spanprof agent: received %llu samples, aggregated %llu, "
			"submitted %llu; exported %llu of %llu batches; dropped: aggregator full "
			"%llu, memory guard %llu, export %llu\n",
			(unsigned long long)(p.sum.consumer.received_oncpu +
					     p.sum.consumer.received_offcpu +
					     p.memguard_dropped[0] + p.memguard_dropped[1]),
			(unsigned long long)p.sum.consumer.aggregated,
			(unsigned long long)w.samples_submitted,
			(unsigned long long)x.batches_exported,
			(unsigned long long)x.batches_submitted,
			(unsigned long long)p.sum.consumer.agg_dropped,
			(unsigned long long)(p.memguard_dropped[0] + p.memguard_dropped[1] +
					     w.samples_memguard),
			(unsigned long long)x.samples_dropped);
	}
	sp_memguard__close(&a->guard);
	/* the perf-map reader stops before the uploader it feeds, the uploader
	 * (whose losses go back to the host symbols) before the pipeline */
	if (a->pipe)
		sp_hostsyms__stop_jit(sp_pipeline__hostsyms(a->pipe));
	sp_uploader__free(a->up);
	sp_exporter__free(a->exp);
	sp_pipeline__free(a->pipe);
	sp_agg__free(a->spare);
	sp_agg__free(a->full);
	sp_container_ids__free(a->cids);
	sp_target_select__free(a->o.sel);
	pthread_cond_destroy(&a->xfer_cond);
	pthread_mutex_destroy(&a->xfer_lock);
	pthread_mutex_destroy(&a->stats_lock);
	free(a);
	return rc;
}
