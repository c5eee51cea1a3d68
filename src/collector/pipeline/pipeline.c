/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - see pipeline.h.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/host/hostsyms.h"
#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/bpf_sampler.h"
#include "collector/pipeline/clock.h"
#include "collector/pipeline/pipeline.h"
#include "collector/pipeline/service_name.h"
#include "collector/pipeline/snapshot.h"
#include "collector/pipeline/summary.h"
#include "collector/procs/otel_env.h"
#include "collector/procs/proc_env.h"
#include "collector/procs/proc_table.h"
#include "collector/tracectx/ctx_discovery.h"
#include "collector/unwind/unwind_bpf.h"
#include "collector/unwind/unwinder.h"

struct sp_pipeline {
	struct sp_pipeline_config cfg;
	struct sp_sampling_opts opts;
	struct sp_agg_config acfg;
	struct sp_sampler *sampler;
	struct sp_proc_table *procs;
	struct sp_ctx_discovery *disc;
	struct sp_hostsyms *hs;		/* NULL without cfg.hostsyms */
	bool hs_started;		/* consumer's thread */
	struct ring_buffer *rb;
	struct sp_unw_bpf *unw_bpf;	/* NULL with --unwind fp */
	struct sp_unwinder *unw;	/* NULL with --unwind fp */
	struct sp_consumer cons;	/* cons.agg is the current aggregator */
	pthread_mutex_t lock;		/* procs, disc, env (and what the hooks touch) */
	struct sp_proc_env *env;	/* NULL with --no-process-env */
	struct sp_otel_attrs common;	/* on every resource (identity_from_env) */
	char host_name[256];		/* "" = gethostname() at each snapshot */
	uint64_t attrs_dropped;		/* resources full (snapshot.h), lock held */
	uint64_t execs_seen;		/* consumer's thread */
	uint64_t reads_seen;		/* maps reads, consumer's thread */
	uint64_t publish_seen;		/* publications, consumer's thread */
	bool wake_unread;		/* BPF wakes us for unread processes */
	bool unwind_fallback;		/* the kernel refused the .eh_frame unwinder: fp */
	int wake_fd;			/* eventfd of sp_pipeline__wake; -1 none */
	bool took_env, took_exe;	/* companions of the maps read under way */
	uint64_t fast_until_ns;
	uint64_t pump_woken, pump_timed_out;	/* consumer's thread */
};

/* The consumer's process callback: discovery, then the command's hook. */
static void on_proc(uint32_t pid, enum sp_proc_why why, void *ctx)
{
	struct sp_pipeline *p = ctx;

	sp_ctx_discovery__on_proc(pid, why, p->disc);
	if (why == SP_PROC_FIRST_SIGHT || why == SP_PROC_EXEC)
		sp_proc_env__note(p->env, pid);
	if (p->cfg.on_proc)
		p->cfg.on_proc(pid, why, p->cfg.on_proc_ctx);
}

/* The process table's companions (proc_table.h): a new process's environ
 * (proc_env) and executable (ctx discovery's Go look) read with its
 * first maps, in one hand-off.  In that order in jobs[]. */
static uint32_t companions_take(uint32_t pid, struct sp_io_job **jobs, uint32_t max, void *ctx)
{
	struct sp_pipeline *p = ctx;
	uint32_t n = 0;

	p->took_env = p->took_exe = false;
	if (n < max && p->env && (jobs[n] = sp_proc_env__companion(p->env, pid))) {
		p->took_env = true;
		n++;
	}
	if (n < max && (jobs[n] = sp_ctx_discovery__companion(p->disc, pid))) {
		p->took_exe = true;
		n++;
	}
	return n;
}

static void companions_back(uint32_t pid, struct sp_io_job **jobs, uint32_t n, int rc,
			    void *ctx)
{
	struct sp_pipeline *p = ctx;
	uint32_t i = 0;

	(void)n;
	if (p->took_env) {
		sp_proc_env__companion_back(p->env, pid, jobs ? jobs[i] : NULL, rc);
		i++;
	}
	if (p->took_exe)
		sp_ctx_discovery__companion_back(p->disc, pid, jobs ? jobs[i] : NULL, rc);
	p->took_env = p->took_exe = false;
}

/* Ring callback: the gate sees samples first. */
static int on_event(void *ctx, void *data, size_t size)
{
	struct sp_pipeline *p = ctx;
	const struct sp_event *e = data;

	if (p->cfg.gate && size >= SP_EVENT_HDR_SIZE &&
	    (e->type == SP_EV_ONCPU || e->type == SP_EV_OFFCPU) &&
	    !p->cfg.gate(e, p->cfg.gate_ctx))
		return 0;
	return sp_consumer__handle(&p->cons, data, size);
}

/*
 * The collector's own resource identity, from its environment: the
 * attributes of OTEL_RESOURCE_ATTRIBUTES go on every resource (a key the
 * process declares itself wins; its OTEL_SERVICE_NAME and a service.name
 * there name the collector, not the processes, and are not used), and
 * the node's name: host.name from OTEL_RESOURCE_ATTRIBUTES, else
 * SP_NODE_NAME_ENV (the Kubernetes downward API's spec.nodeName, which
 * also becomes k8s.node.name; inside a pod gethostname() is the pod's
 * name), else gethostname().  A malformed OTEL_RESOURCE_ATTRIBUTES is
 * refused: a deployment's typo should not silently lose its attributes.
 */
static int identity_from_env(struct sp_pipeline *p, char *err, size_t err_len)
{
	const char *ra = getenv("OTEL_RESOURCE_ATTRIBUTES"), *node = getenv(SP_NODE_NAME_ENV);
	const char *host;
	uint32_t bad = 0;

	if (ra && sp_otel_env__parse_attrs(ra, strlen(ra), &p->common, &bad)) {
		snprintf(err, err_len, "OTEL_RESOURCE_ATTRIBUTES: entry %u is not key=value with a "
			 "token key and valid %%XX escapes; fix or unset it", bad);
		return -EINVAL;
	}
	if (p->common.dropped) {
		snprintf(err, err_len, "OTEL_RESOURCE_ATTRIBUTES: more than %d attributes, or a key "
			 "above %d or a value above %d bytes", SP_OTEL_ATTRS_MAX, SP_OTEL_KEY_MAX,
			 SP_OTEL_VALUE_MAX);
		return -EINVAL;
	}
	if (node && strlen(node) > 253) {
		snprintf(err, err_len, "%s: a node name has at most 253 bytes", SP_NODE_NAME_ENV);
		return -EINVAL;
	}
	host = sp_otel_env__get(&p->common, "host.name");
	if (!host && node && node[0])
		host = node;
	if (host)
		snprintf(p->host_name, sizeof(p->host_name), "%s", host);
	if (node && node[0] && !sp_otel_env__get(&p->common, "k8s.node.name")) {
		if (p->common.n == SP_OTEL_ATTRS_MAX) {
			snprintf(err, err_len, "OTEL_RESOURCE_ATTRIBUTES has %d attributes: no room "
				 "for k8s.node.name from %s", SP_OTEL_ATTRS_MAX, SP_NODE_NAME_ENV);
			return -EINVAL;
		}
		snprintf(p->common.a[p->common.n].key, sizeof(p->common.a[0].key), "k8s.node.name");
		snprintf(p->common.a[p->common.n].value, sizeof(p->common.a[0].value), "%s", node);
		p->common.n++;
	}
	return 0;
}

static const struct sp_proc_env_ident *env_ident(uint32_t pid, void *ctx)
{
	return sp_proc_env__get(ctx, pid);
}

/* A recording of named processes or threads, not the whole host. */
static bool targeted(const struct sp_pipeline *p)
{
	return p->cfg.filter_pids || p->cfg.filter_tids;
}

/* The whole host execs many images that are never sampled: their maps
 * wait for a first sample; a targeted recording wants every image of its
 * processes at once. */
static bool lazy_exec(const struct sp_pipeline *p)
{
	return p->opts.exec_maps == SP_UNWIND_BUILD_DEFAULT ? !targeted(p)
							    : p->opts.exec_maps == SP_UNWIND_BUILD_LAZY;
}

static void sampler_config(const struct sp_pipeline *p, struct sp_sampler_config *c)
{
	const struct sp_sampling_opts *o = &p->opts;

	*c = (struct sp_sampler_config){
		.freq_hz = o->hz, .ringbuf_bytes = o->ringbuf_bytes,
		.filter_pids = p->cfg.filter_pids || p->cfg.filter_tids,
		.filter_tids = p->cfg.filter_tids, .exclude = p->cfg.exclude, .cpus = o->cpu_filter ? o->cpus : NULL,
		.stream_idle = o->idle,
		.kernel_stacks = o->kernel, .read_trace_ctx = o->trace_ctx,
		.off_cpu = o->off_cpu, .off_cpu_min_ns = o->off_cpu_min_us * 1000,
		.off_cpu_sample_n = o->off_cpu_sample_n, .off_cpu_rate = o->off_cpu_rate,
		.off_cpu_max_pending = o->off_cpu_max_pending,
		.off_cpu_kthreads = o->off_cpu_kthreads, .tls_descs_max = o->ctx_max_procs,
		.unwind_fp = o->unwind_fp, .wake_unread = p->wake_unread,
		.no_go_labels = o->no_go_labels, .go_parks = o->off_cpu_goroutines,
	};
}

/* The .eh_frame unwinder on the sampler's maps, listening to the process
 * table's maps reads (not with --unwind fp: frame pointers only). */
static int start_unwinder(struct sp_pipeline *p, char *err, size_t err_len)
{
	/* The whole host: most processes, and most files of the others, are
	 * never sampled, so tables wait for a sample that needs them; a
	 * targeted recording wants every process it names. */
	struct sp_unwinder_config ucfg = {
		.budget_bytes = p->opts.unwind_budget,
		.cpu_share = p->opts.unwind_cpu_pct / 100.0,
		.lazy = p->opts.unwind_build == SP_UNWIND_BUILD_DEFAULT
				? !targeted(p)
				: p->opts.unwind_build == SP_UNWIND_BUILD_LAZY,
	};
	struct sp_sampler_unwind_maps um;
	struct sp_unw_backend be;
	int rc;

	if (p->opts.unwind_fp)
		return 0;
	rc = sp_sampler__unwind_maps(p->sampler, &um);
	if (rc) {
		snprintf(err, err_len, "the BPF object has no unwinder maps: %s", strerror(-rc));
		return rc;
	}
	rc = sp_unw_bpf__new(&um, &p->unw_bpf, &be, err, err_len);
	if (!rc)
		rc = sp_unwinder__new(&ucfg, &be, p->procs, &p->unw, err, err_len);
	if (rc) {
		size_t n = strlen(err);

		snprintf(err + n, err_len - n, " (--unwind fp walks frame pointers without tables)");
		return rc;
	}
	p->cons.unwinder = p->unw;
	return 0;
}

/*
 * The BPF programs' verification (~0.3 s of sp_oncpu alone) runs in the
 * kernel on the loading thread, and the host symbols' first read of
 * /proc/kallsyms (0.1-0.2 s of kernel time formatting 5 MB) on this one:
 * with cfg.overlap_load the load runs on a thread of its own, beside it.
 */
struct sampler_load {
	struct sp_sampler_config cfg;
	struct sp_sampler *s;
	int rc;
	char err[512];
};

static void *sampler_load_run(void *arg)
{
	struct sampler_load *l = arg;

	l->rc = sp_sampler__open_load(&l->cfg, &l->s, l->err, sizeof(l->err));
	return NULL;
}

int sp_pipeline__new(const struct sp_pipeline_config *cfg, struct sp_pipeline **out, char *err,
		     size_t err_len)
{
	struct sampler_load load = { .rc = -EINVAL };
	struct sp_proc_table_config pc = { 0 };
	struct sp_pipeline *p;
	struct sp_agg *agg = NULL;
	pthread_t load_th;
	bool loading = false;
	int rc = -ENOMEM;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	p->cfg = *cfg;
	p->opts = *cfg->opts;
	p->cfg.opts = &p->opts;
	pthread_mutex_init(&p->lock, NULL);
	p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->wake_fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot create an eventfd: %s", strerror(errno));
		goto fail;
	}
	p->acfg = (struct sp_agg_config){ .byte_budget = p->opts.agg_budget,
					  .max_entries = p->opts.agg_entries,
					  .keep_timestamps = p->opts.timestamps };
	rc = identity_from_env(p, err, err_len);
	if (rc)
		goto fail;
	/* Only the unwinder's ranges tell BPF which processes are unread. */
	p->wake_unread = lazy_exec(p) && !p->opts.unwind_fp;
	sampler_config(p, &load.cfg);
	loading = cfg->overlap_load && !pthread_create(&load_th, NULL, sampler_load_run, &load);
	if (cfg->hostsyms) {
		struct sp_hostsyms_config hc = *cfg->hostsyms;

		hc.kernel = p->opts.kernel;
		hc.no_jit = hc.no_jit || !p->opts.jit;
		rc = sp_hostsyms__new(&hc, &p->hs);
		if (rc) {
			snprintf(err, err_len, "cannot set up the host symbols: %s", strerror(-rc));
			goto fail;
		}
		sp_hostsyms__proc_config(p->hs, &pc);
	}
	p->cfg.hostsyms = NULL;		/* not ours to keep */
	rc = -ENOMEM;
	pc.lazy_exec = lazy_exec(p);
	p->procs = sp_proc_table__new(&pc);
	if (!p->opts.no_process_env)
		p->env = sp_proc_env__new(0, 0, NULL);
	agg = sp_agg__new(&p->acfg);
	if (!p->procs || !agg || (!p->opts.no_process_env && !p->env)) {
		snprintf(err, err_len, "cannot allocate the process table or the aggregator (%s): "
			 "lower --agg-budget or --agg-entries", strerror(errno ? errno : ENOMEM));
		goto fail;
	}
	sp_consumer__init(&p->cons, p->procs, agg);
	agg = NULL;
	p->cons.on_proc = on_proc;
	p->cons.on_proc_ctx = p;
	sp_hostsyms__consumer(p->hs, &p->cons);
	if (loading)
		pthread_join(load_th, NULL);
	else
		sampler_load_run(&load);
	loading = false;
	p->sampler = load.s;
	rc = load.rc;
	if (rc == -E2BIG && !p->opts.unwind_fp && !p->opts.unwind_asked) {
		/* The default unwinder did not pass this kernel's verifier:
		 * frame pointers still give stacks (short through code built
		 * without them), where failing would give none.  Asked for by
		 * name (--unwind dwarf), it is an error. */
		fprintf(stderr, "spanprof: the .eh_frame unwinder did not load (%s); falling back "
			"to --unwind fp (stacks through code without frame pointers end early; "
			"--unwind dwarf makes this an error)\n", load.err);
		p->opts.unwind_fp = true;
		p->unwind_fallback = true;
		p->wake_unread = lazy_exec(p) && !p->opts.unwind_fp;
		sampler_config(p, &load.cfg);
		sampler_load_run(&load);
		p->sampler = load.s;
		rc = load.rc;
	}
	if (rc) {
		snprintf(err, err_len, "%s", load.err);
		goto fail;
	}
	rc = -ENOMEM;
	p->disc = sp_ctx_discovery__new(p->sampler, NULL);
	if (!p->disc) {
		snprintf(err, err_len, "out of memory");
		goto fail;
	}
	/* First sight and exec reuse the maps the table has just read. */
	sp_ctx_discovery__set_procs(p->disc, p->procs);
	sp_proc_table__set_companions(p->procs, &(struct sp_proc_companions){
		.take = companions_take, .back = companions_back, .ctx = p });
	rc = start_unwinder(p, err, err_len);
	if (rc)
		goto fail;
	rc = -ENOMEM;
	p->cons.go_key = sp_ctx_discovery__go_key;	/* Go label keys, by process */
	p->cons.go_key_ctx = p->disc;
	p->rb = ring_buffer__new(sp_sampler__ring_fd(p->sampler), on_event, p, NULL);
	if (!p->rb) {
		rc = -errno;
		snprintf(err, err_len, "cannot map the BPF ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (loading) {
		pthread_join(load_th, NULL);
		sp_sampler__destroy(load.s);
	}
	sp_agg__free(agg);
	sp_pipeline__free(p);
	return rc < 0 ? rc : -EINVAL;
}

void sp_pipeline__free(struct sp_pipeline *p)
{
	if (!p)
		return;
	ring_buffer__free(p->rb);
	sp_unwinder__free(p->unw);	/* before the table it listens to */
	sp_unw_bpf__free(p->unw_bpf);	/* before the maps it maps */
	sp_sampler__destroy(p->sampler);
	sp_ctx_discovery__free(p->disc);
	sp_agg__free(p->cons.agg);
	sp_proc_table__free(p->procs);
	sp_hostsyms__free(p->hs);
	sp_proc_env__free(p->env);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int sp_pipeline__add_target_tid(struct sp_pipeline *p, uint32_t tid)
{
	return sp_sampler__add_target_tid(p->sampler, tid);
}

const char *sp_pipeline__service_name(struct sp_pipeline *p, uint32_t pid, bool look_again)
{
	const struct sp_proc_env_ident *env = p->env ? sp_proc_env__get(p->env, pid) : NULL;

	sp_ctx_discovery__on_proc(pid, look_again ? SP_PROC_PUBLISH : SP_PROC_FIRST_SIGHT,
				  p->disc);
	return sp_service_name__resolve(env, sp_ctx_discovery__service_name(pid, p->disc));
}

void sp_pipeline__prepare(struct sp_pipeline *p, const struct sp_event *e)
{
	sp_consumer__prepare(&p->cons, e);
}

int sp_pipeline__exclude(struct sp_pipeline *p, uint32_t pid)
{
	return sp_sampler__exclude(p->sampler, pid);
}

int sp_pipeline__add_target(struct sp_pipeline *p, uint32_t pid, bool at_exec)
{
	return sp_sampler__add_target(p->sampler, pid, at_exec);
}

int sp_pipeline__attach(struct sp_pipeline *p, char *err, size_t err_len)
{
	return sp_sampler__attach(p->sampler, err, err_len);
}

void sp_pipeline__scan(struct sp_pipeline *p, const uint32_t *pids, uint32_t n)
{
	pthread_mutex_lock(&p->lock);
	sp_ctx_discovery__scan(p->disc, !p->cfg.filter_pids, pids, n);
	pthread_mutex_unlock(&p->lock);
}

int sp_pipeline__start(struct sp_pipeline *p, const uint32_t *pids, uint32_t n, char *err,
		       size_t err_len)
{
	int rc = sp_pipeline__attach(p, err, err_len);

	if (!rc)
		sp_pipeline__scan(p, pids, n);
	return rc;
}

static void drain(struct sp_pipeline *p)
{
	pthread_mutex_lock(&p->lock);
	ring_buffer__consume(p->rb);
	sp_ctx_discovery__tick(p->disc);
	sp_unwinder__poll(p->unw, sp_clock__mono_ns());
	pthread_mutex_unlock(&p->lock);
}

/* --poll-ms, or its default: long when nothing needs the timer soon.  A
 * whole-host profile with wake_unread is woken by BPF for what needs low
 * latency (an unread process's first sample), and each timer wakeup
 * costs ~70 us (docs/benchmarks.md), so 500 ms; otherwise 100. */
static int poll_period_ms(const struct sp_pipeline *p)
{
	if (p->opts.poll_ms)
		return (int)p->opts.poll_ms;
	if (p->wake_unread && !targeted(p))
		return SP_PIPELINE_POLL_LAZY_MS;
	return SP_PIPELINE_POLL_MS;
}

void sp_pipeline__wake(struct sp_pipeline *p)
{
	uint64_t one = 1;

	if (p && write(p->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, a wakeup is pending anyway */
	}
}

int sp_pipeline__pump(struct sp_pipeline *p, uint64_t wake_by_ns, char *err, size_t err_len)
{
	struct pollfd pfd[2] = { { .fd = ring_buffer__epoll_fd(p->rb), .events = POLLIN },
				 { .fd = p->wake_fd, .events = POLLIN } };
	int timeout = poll_period_ms(p), n;
	uint64_t now, woken;

	if (!p->hs_started) {
		int rc = sp_hostsyms__start(p->hs);

		if (rc) {
			snprintf(err, err_len, "cannot start the perf-map reader: %s",
				 strerror(-rc));
			return rc;
		}
		p->hs_started = true;
	}

	/* Samples do not wake us (see bpf/stack.bpf.h): poll returns on
	 * process events, a filling ring, or the timeout.  Right after a
	 * maps read the timeout is short, so a process that lives tens of
	 * milliseconds has the re-reads its loader's mappings ask for done
	 * while it is alive; otherwise every wakeup (~70 us here,
	 * docs/benchmarks.md) would cost more than the samples it drains.
	 * With eager exec reads, an exec is such a read.  With wake_unread,
	 * an exec read waits for the image's first sample, and that sample
	 * wakes us itself (bpf/unwind.bpf.h): the execs of images never
	 * sampled cost no drains.  After a context publication too: BPF
	 * wakes us for one per 10 ms, the others wait in the ring
	 * (bpf/proc.bpf.c), and the fast drain takes them soon. */
	now = sp_clock__mono_ns();
	if (p->wake_unread) {
		uint64_t reads;

		pthread_mutex_lock(&p->lock);
		reads = sp_proc_table__stats(p->procs)->maps_reads;
		pthread_mutex_unlock(&p->lock);
		if (reads != p->reads_seen) {
			p->reads_seen = reads;
			p->fast_until_ns = now + SP_PIPELINE_FAST_DRAIN_NS;
		}
	} else if (p->cons.stats.received_exec != p->execs_seen) {
		p->execs_seen = p->cons.stats.received_exec;
		p->fast_until_ns = now + SP_PIPELINE_FAST_DRAIN_NS;
	}
	if (p->cons.stats.received_publish != p->publish_seen) {
		p->publish_seen = p->cons.stats.received_publish;
		p->fast_until_ns = now + SP_PIPELINE_FAST_DRAIN_NS;
	}
	if (p->fast_until_ns && now < p->fast_until_ns)
		timeout = SP_PIPELINE_FAST_DRAIN_MS;
	else
		p->fast_until_ns = 0;
	if (wake_by_ns) {
		uint64_t left_ms = wake_by_ns > now ? (wake_by_ns - now + 999999) / 1000000 : 0;

		if (left_ms < (uint64_t)timeout)
			timeout = (int)left_ms;
	}
	n = poll(pfd, 2, timeout);
	if (n < 0 && errno != EINTR) {
		int e = errno;

		snprintf(err, err_len, "polling the BPF ring buffer failed: %s", strerror(e));
		return -e;
	}
	p->pump_woken += n > 0 && (pfd[0].revents & POLLIN);
	p->pump_timed_out += n == 0;
	if ((pfd[1].revents & POLLIN) && read(p->wake_fd, &woken, sizeof(woken)) < 0) {
		/* EAGAIN: another pump took it; nothing to undo: the wakeup
		 * it would clear has done its work */
	}
	drain(p);
	return 0;
}

void sp_pipeline__stop(struct sp_pipeline *p, uint64_t bpf[SP_CNT__MAX])
{
	sp_sampler__stop(p->sampler);
	drain(p);
	if (bpf)
		sp_sampler__read_counters(p->sampler, bpf);
	drain(p);
	sp_jit_maps__drain(sp_hostsyms__jit(p->hs), SP_PIPELINE_JIT_DRAIN_MS);
}

struct sp_agg *sp_pipeline__swap(struct sp_pipeline *p, struct sp_agg *next, uint64_t *epoch)
{
	struct sp_agg *prev;

	/* One critical section: a worker that starts on prev at once
	 * releases exactly the epoch prev's samples belong to. */
	pthread_mutex_lock(&p->lock);
	prev = p->cons.agg;
	p->cons.agg = next;
	if (epoch)
		*epoch = sp_proc_table__next_epoch(p->procs);
	pthread_mutex_unlock(&p->lock);
	return prev;
}

struct sp_agg *sp_pipeline__new_agg(const struct sp_pipeline *p)
{
	return sp_agg__new(&p->acfg);
}

struct sp_agg *sp_pipeline__agg(const struct sp_pipeline *p)
{
	return p->cons.agg;
}

int sp_pipeline__snapshot(struct sp_pipeline *p, struct sp_agg *g, struct sp_snapshot_opts *so,
			  struct sp_profile **out)
{
	int rc;

	so->period_ns = 1000000000ull / p->opts.hz;
	so->service_name = sp_ctx_discovery__service_name;
	so->service_name_ctx = p->disc;
	so->attr_key = sp_ctx_discovery__attr_key;
	so->attr_key_ctx = p->disc;
	sp_hostsyms__snapshot_opts(p->hs, so);
	so->env_ident = p->env ? env_ident : NULL;
	so->env_ident_ctx = p->env;
	so->common_attrs = &p->common;
	so->host_name = p->host_name[0] ? p->host_name : NULL;
	so->attrs_dropped = &p->attrs_dropped;
	pthread_mutex_lock(&p->lock);
	sp_kernel_layout__refresh(sp_hostsyms__kernel(p->hs),
				  sp_clock__mono_ns() / 1000000000ull);
	rc = sp_snapshot__build(g, p->procs, so, out);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static void on_release(uint32_t pid, void *ctx)
{
	struct sp_pipeline *p = ctx;

	sp_ctx_discovery__forget(p->disc, pid);
	sp_jit_maps__forget(sp_hostsyms__jit(p->hs), pid);
	sp_proc_env__forget(p->env, pid);
}

void sp_pipeline__release(struct sp_pipeline *p, uint64_t epoch)
{
	pthread_mutex_lock(&p->lock);
	sp_proc_table__release(p->procs, epoch, on_release, p);
	pthread_mutex_unlock(&p->lock);
}

void sp_pipeline__fill_summary(struct sp_pipeline *p, struct sp_summary *s)
{
	const struct sp_sampling_opts *o = &p->opts;

	s->hz = o->hz;
	s->n_cpus = sp_sampler__n_sampled_cpus(p->sampler);
	s->off_cpu = o->off_cpu;
	s->off_cpu_min_ns = o->off_cpu_min_us * 1000;
	s->off_cpu_sample_n = o->off_cpu_sample_n;
	s->off_cpu_rate = o->off_cpu_rate;
	s->obi_map = sp_sampler__uses_obi(p->sampler);
	s->publish_watch = sp_sampler__watches_publish(p->sampler);
	s->unwind_fp = o->unwind_fp;
	s->unwind_fallback = p->unwind_fallback;
	s->mmap_watch = sp_sampler__watches_mmap(p->sampler);
	sp_unwinder__stats(p->unw, &s->unw);
	s->consumer = p->cons.stats;
	s->pump_woken = p->pump_woken;
	s->pump_timed_out = p->pump_timed_out;
	if (p->cons.agg)
		s->agg = *sp_agg__stats(p->cons.agg);
	/* The release path changes these on another thread. */
	pthread_mutex_lock(&p->lock);
	s->procs = *sp_proc_table__stats(p->procs);
	sp_ctx_discovery__fill_summary(p->disc, s);
	s->process_env = p->env != NULL;
	if (p->env)
		s->env = *sp_proc_env__stats(p->env);
	s->res_attrs_dropped = p->attrs_dropped;
	sp_kernel_layout__stats(sp_hostsyms__kernel(p->hs), &s->klayout);	/* refresh: p->lock */
	pthread_mutex_unlock(&p->lock);
	sp_jit_maps__stats(sp_hostsyms__jit(p->hs), &s->jit);
	sp_hostsyms__stats(p->hs, &s->hostsyms);
}

int sp_pipeline__read_counters(const struct sp_pipeline *p, uint64_t out[SP_CNT__MAX])
{
	return sp_sampler__read_counters(p->sampler, out);
}

const struct sp_consumer_stats *sp_pipeline__consumer_stats(const struct sp_pipeline *p)
{
	return &p->cons.stats;
}

struct sp_unwinder *sp_pipeline__unwinder(const struct sp_pipeline *p)
{
	return p->unw;
}

uint32_t sp_pipeline__n_cpus(const struct sp_pipeline *p)
{
	return sp_sampler__n_cpus(p->sampler);
}

struct sp_hostsyms *sp_pipeline__hostsyms(const struct sp_pipeline *p)
{
	return p->hs;
}
