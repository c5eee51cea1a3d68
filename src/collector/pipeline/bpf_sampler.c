/* SPDX-License-Identifier: MIT */
/*
 * bpf_sampler.c - see bpf_sampler.h.  The only file that touches the
 * skeleton of the on-CPU and process programs.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector/pipeline/bpf_sampler.h"
#include "collector/pipeline/cli.h"
#include "spanprof.skel.h"

struct sp_sampler {
	struct spanprof_bpf *skel;
	uint32_t freq_hz;
	uint32_t n_cpus;		/* possible CPUs: size of per-CPU values */
	uint32_t n_links;
	uint32_t n_sampled;		/* CPUs attached by the last __attach */
	struct bpf_link **links;	/* one per online CPU */
	struct bpf_link *prctl_link;	/* NULL: no tracefs, not watching */
	struct bpf_link *mmap_links[2];	/* PROT_EXEC mmap/mprotect (unwinder) */
	bool obi;			/* reading OBI's pinned map */
	struct bpf_link *offcpu_link;	/* NULL: off-CPU not asked or stopped */
	bool off_cpu;
	bool go_parks;			/* asked, and sampling not stopped */
	struct bpf_link *parks[SP_SAMPLER_GO_PARK_FILES][2];	/* park, resume */
	bool go_epoch;			/* GC epoch probes (sp_go_gc) wanted */
	struct bpf_link *gc_links[SP_SAMPLER_GO_GC_FILES];
	int *pfds;
	bool cpu_filter;		/* -C: only CPUs in cpus */
	uint64_t cpus[SP_CLI_CPU_WORDS];
	char *vstats;			/* SPANPROF_VERIFIER_STATS log buffers, during the load */
};

#define SP_VSTATS_PROGS 32		/* more than the object has */

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own diagnostics only with SPANPROF_DEBUG=1; our errors say
	 * what failed in one line. */
	if (level == LIBBPF_DEBUG || !getenv("SPANPROF_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * OBI's shared trace-context map, when pinned, replaces our placeholder so
 * the BPF programs read it directly.  A pinned map of another shape is
 * ignored with a note (it is not ours to fix); no map is the common case.
 */
/*
 * The pid and tid filter maps are preallocated hashes (perf_event programs
 * may use no other kind), so each costs its max_entries in kernel memory
 * whether used or not: 65536 entries are about 5 MiB each.  A map whose
 * filter is off is never written and, behind its rodata switch, never
 * read: one entry keeps it valid at next to no cost.
 */
static int size_filter_maps(struct sp_sampler *s, const struct sp_sampler_config *cfg)
{
	int err = 0;

	if (!cfg->filter_pids)
		err = bpf_map__set_max_entries(s->skel->maps.targets, 1);
	if (!err && !cfg->filter_tids)
		err = bpf_map__set_max_entries(s->skel->maps.target_tids, 1);
	if (!err && !cfg->exclude)
		err = bpf_map__set_max_entries(s->skel->maps.excluded, 1);
	return err;
}

static int use_obi_map(struct sp_sampler *s, char *err_msg, size_t err_len)
{
	struct bpf_map_info info = {};
	uint32_t len = sizeof(info);
	int fd, err;

	fd = bpf_obj_get(SP_OBI_MAP_PATH);
	if (fd < 0)
		return bpf_map__set_max_entries(s->skel->maps.obi_ctx, 1);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_MAP_TYPE_LRU_HASH ||
	    info.key_size != 8 || info.value_size != sizeof(struct sp_obi_ctx)) {
		fprintf(stderr, "spanprof: ignoring %s: not an LRU hash of u64 -> 24 bytes\n",
			SP_OBI_MAP_PATH);
		close(fd);
		return bpf_map__set_max_entries(s->skel->maps.obi_ctx, 1);
	}
	err = bpf_map__set_max_entries(s->skel->maps.obi_ctx, info.max_entries);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.obi_ctx, fd);
	close(fd);	/* reuse_fd keeps its own duplicate */
	if (err) {
		snprintf(err_msg, err_len, "cannot use OBI's map %s: %s", SP_OBI_MAP_PATH,
			 strerror(-err));
		return err;
	}
	s->skel->rodata->cfg_obi = 1;
	s->obi = true;
	return 0;
}

/*
 * Benchmark knobs of the user-stack copy (bpf/unwind.bpf.c, "Stack copy"):
 * SPANPROF_BENCH_UCOPY=BYTES[xSLOTS] (BYTES 0: off, else a power of two
 * in 64..4096; SLOTS a power of two in 1..4) and
 * SPANPROF_BENCH_UCOPY_VERIFY=1.  Unset: the defaults in maps.bpf.h.
 */
static int set_ucopy(struct sp_sampler *s, char *err_msg, size_t err_len)
{
	const char *v = getenv("SPANPROF_BENCH_UCOPY");
	unsigned long bytes, slots = s->skel->rodata->cfg_ucopy_slots;
	char *end;

	s->skel->rodata->cfg_ucopy_verify = getenv("SPANPROF_BENCH_UCOPY_VERIFY") != NULL;
	if (!v)
		return 0;
	errno = 0;
	bytes = strtoul(v, &end, 10);
	if (!errno && *end == 'x')
		slots = strtoul(end + 1, &end, 10);
	if (errno || *end || end == v ||
	    (bytes && (bytes < 64 || bytes > 4096 || (bytes & (bytes - 1)))) || !slots ||
	    slots > 4 || (slots & (slots - 1))) {
		snprintf(err_msg, err_len, "SPANPROF_BENCH_UCOPY=%s: want BYTES[xSLOTS], BYTES 0 "
			 "(off) or a power of two in 64..4096, SLOTS a power of two in 1..4", v);
		return -EINVAL;
	}
	s->skel->rodata->cfg_ucopy_bytes = (uint32_t)bytes;
	s->skel->rodata->cfg_ucopy_slots = (uint32_t)slots;
	return 0;
}

bool sp_sampler__uses_obi(const struct sp_sampler *s)
{
	return s->obi;
}

/*
 * SPANPROF_VERIFIER_STATS=1: each program's verifier statistics (level 4:
 * instructions processed against the kernel's 1M limit, states, stack
 * depth per subprogram) on stderr after the load, one line a program,
 * whether the load passed or not.  tests/integration/test_bpf_verifier_budget.py
 * keeps the programs well inside the limit with it: the verifier's cost of
 * one program differs between kernel builds (a 6.18 build took sp_oncpu
 * past the limit when the unwinder's step was inlined in its loop).
 */
#define SP_VSTATS_BYTES 4096	/* level 4 writes ~3 lines; a full buffer fails the load (ENOSPC) */

static void vstats_arm(struct sp_sampler *s)
{
	struct bpf_program *p;
	size_t i = 0;

	if (!getenv("SPANPROF_VERIFIER_STATS"))
		return;
	s->vstats = calloc(SP_VSTATS_PROGS, SP_VSTATS_BYTES);
	if (!s->vstats)
		return;		/* a diagnostic: without it the load goes on */
	bpf_object__for_each_program(p, s->skel->obj) {
		if (i == SP_VSTATS_PROGS)
			break;
		bpf_program__set_log_buf(p, s->vstats + i++ * SP_VSTATS_BYTES, SP_VSTATS_BYTES);
		bpf_program__set_log_level(p, 4);
	}
}

/* The stats line's fields, NUL-free and on one line. */
static void vstats_field(const char *log, const char *key, char *out, size_t len)
{
	const char *f = strstr(log, key);
	size_t n;

	if (!f) {
		snprintf(out, len, "?");
		return;
	}
	f += strlen(key);
	n = strcspn(f, "\n");
	snprintf(out, len, "%.*s", (int)n, f);
}

static void vstats_print(struct sp_sampler *s)
{
	struct bpf_program *p;
	size_t i = 0;

	if (!s->vstats)
		return;
	bpf_object__for_each_program(p, s->skel->obj) {
		const char *log = s->vstats + i * SP_VSTATS_BYTES;
		char processed[160], depth[80], vtime[32];

		if (i++ == SP_VSTATS_PROGS)
			break;
		if (!bpf_program__autoload(p))
			continue;
		vstats_field(log, "processed ", processed, sizeof(processed));
		vstats_field(log, "stack depth ", depth, sizeof(depth));
		vstats_field(log, "verification time ", vtime, sizeof(vtime));
		fprintf(stderr, "spanprof: verifier: %s %s: processed %s; stack depth %s; "
			"time %s\n", bpf_program__name(p),
			bpf_program__fd(p) >= 0 ? "loaded" : "not loaded", processed, depth,
			vtime);
	}
	free(s->vstats);
	s->vstats = NULL;
}

/* The first program the kernel refused (libbpf loads them in order and
 * stops there), or NULL. */
static const char *refused_program(const struct sp_sampler *s)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, s->skel->obj) {
		if (bpf_program__autoload(p) && bpf_program__fd(p) < 0)
			return bpf_program__name(p);
	}
	return NULL;
}

int sp_sampler__open_load(const struct sp_sampler_config *cfg, struct sp_sampler **out,
			  char *err_msg, size_t err_len)
{
	struct sp_sampler *s;
	bool refuse;
	int err, ncpu;

	*out = NULL;
	libbpf_set_print(libbpf_quiet);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err_msg, err_len, "kernel BTF not found at /sys/kernel/btf/vmlinux: "
			 "spanprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOENT;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		snprintf(err_msg, err_len, "cannot count CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->freq_hz = cfg->freq_hz;
	s->n_cpus = ncpu;
	s->links = calloc(ncpu, sizeof(*s->links));
	s->pfds = malloc(ncpu * sizeof(*s->pfds));
	if (!s->links || !s->pfds) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < ncpu; i++)
		s->pfds[i] = -1;

	s->skel = spanprof_bpf__open();
	if (!s->skel) {
		err = -errno;
		snprintf(err_msg, err_len, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	s->skel->rodata->cfg_filter_pids = cfg->filter_pids;
	s->skel->rodata->cfg_stream_idle = cfg->stream_idle;
	s->skel->rodata->cfg_kernel_stacks = cfg->kernel_stacks;
	s->skel->rodata->cfg_read_ctx = cfg->read_trace_ctx;
	s->skel->rodata->cfg_read_go = !cfg->no_go_labels;
	s->off_cpu = cfg->off_cpu;
	s->cpu_filter = cfg->cpus != NULL;
	if (cfg->cpus)
		memcpy(s->cpus, cfg->cpus, sizeof(s->cpus));
	s->skel->rodata->cfg_filter_tids = cfg->filter_tids;
	s->skel->rodata->cfg_exclude = cfg->exclude;
	s->skel->rodata->cfg_offcpu_min_ns = cfg->off_cpu_min_ns;
	s->skel->rodata->cfg_offcpu_sample_n = cfg->off_cpu_sample_n;
	s->skel->rodata->cfg_offcpu_rate = cfg->off_cpu_rate ? cfg->off_cpu_rate : 1;
	s->skel->rodata->cfg_offcpu_max_pending = cfg->off_cpu_max_pending ?
						   cfg->off_cpu_max_pending : 8192;
	s->skel->rodata->cfg_offcpu_kthreads = cfg->off_cpu_kthreads;
	s->skel->rodata->cfg_unwind_fp = cfg->unwind_fp;
	s->skel->rodata->cfg_wake_unread = cfg->wake_unread;
	s->go_parks = cfg->off_cpu && cfg->go_parks;
	err = bpf_map__set_max_entries(s->skel->maps.go_park_pending,
				       s->skel->rodata->cfg_offcpu_max_pending);
	if (err) {
		snprintf(err_msg, err_len, "go_park_pending map size rejected: %s",
			 strerror(-err));
		goto fail;
	}
	/* A benchmark instrument, not a feature: bench/ctx_cost.py times the
	 * trace-context read inside sp_oncpu (map ctx_timing).  Off, the
	 * verifier removes the timing code. */
	s->skel->rodata->cfg_time_ctx = getenv("SPANPROF_BENCH_CTX_TIMING") != NULL;
	/* benchmark (bench/ctx_cost.py): the Go label read without its cache */
	s->skel->rodata->cfg_go_cache = getenv("SPANPROF_BENCH_NO_GO_CACHE") == NULL;
	/* benchmark (bench/ctx_cost.py): the cache's GC cycle from sweepgen, as
	 * before the epoch probe (no probe attached, no epoch entries) */
	s->go_epoch = !cfg->no_go_labels && getenv("SPANPROF_BENCH_NO_GO_EPOCH") == NULL;
	s->skel->rodata->cfg_go_epoch = s->go_epoch;
	/* Likewise bench/unwind_cost.py: the user-stack walk alone. */
	s->skel->rodata->cfg_time_unwind = getenv("SPANPROF_BENCH_UNWIND_TIMING") != NULL;
	err = set_ucopy(s, err_msg, err_len);
	if (err)
		goto fail;
	err = use_obi_map(s, err_msg, err_len);
	if (err)
		goto fail;
	/* Needs tracefs; attached by hand in attach() so its absence is not
	 * fatal. */
	bpf_program__set_autoattach(s->skel->progs.sp_prctl, false);
	bpf_program__set_autoattach(s->skel->progs.sp_mmap, false);
	bpf_program__set_autoattach(s->skel->progs.sp_mprotect, false);
	/* Runs on every context switch: attached only when asked, in attach()
	 * after the process tracepoints. */
	bpf_program__set_autoattach(s->skel->progs.sp_offcpu_switch, false);
	/* Per Go executable, by go_discovery (attach_go_parks). */
	bpf_program__set_autoattach(s->skel->progs.sp_go_park, false);
	bpf_program__set_autoattach(s->skel->progs.sp_go_unpark, false);
	bpf_program__set_autoattach(s->skel->progs.sp_go_gc, false);
	if (!s->go_epoch)
		bpf_program__set_autoload(s->skel->progs.sp_go_gc, false);
	/* The off-CPU and goroutine-park programs each hold the whole
	 * unwinder, and verifying each takes about half as long as sp_oncpu
	 * (0.24-0.26 s of a record start's 1.1 s under load): loaded only
	 * when they will be attached. */
	if (!cfg->off_cpu)
		bpf_program__set_autoload(s->skel->progs.sp_offcpu_switch, false);
	if (!s->go_parks) {
		bpf_program__set_autoload(s->skel->progs.sp_go_park, false);
		bpf_program__set_autoload(s->skel->progs.sp_go_unpark, false);
	}
	err = size_filter_maps(s, cfg);
	if (err) {
		snprintf(err_msg, err_len, "pid filter map size rejected: %s", strerror(-err));
		goto fail;
	}
	err = bpf_map__set_max_entries(s->skel->maps.events, cfg->ringbuf_bytes);
	if (err) {
		snprintf(err_msg, err_len, "ring buffer size %u rejected: it must be a power "
			 "of two and at least the page size", cfg->ringbuf_bytes);
		goto fail;
	}
	if (cfg->tls_descs_max) {
		err = bpf_map__set_max_entries(s->skel->maps.tls_descs, cfg->tls_descs_max);
		if (!err)
			err = bpf_map__set_max_entries(s->skel->maps.go_descs, cfg->tls_descs_max);
		if (err) {
			snprintf(err_msg, err_len, "tls_descs map size %u rejected: %s",
				 cfg->tls_descs_max, strerror(-err));
			goto fail;
		}
	}
	vstats_arm(s);
	/* A test knob (test_unwind_fallback.py): a kernel whose verifier
	 * refuses the .eh_frame unwinder cannot be had on demand, so its
	 * refusal of sp_oncpu is made here, instead of the load, as the
	 * kernel gives it. */
	refuse = !cfg->unwind_fp && getenv("SPANPROF_TEST_REFUSE_DWARF");
	err = refuse ? -E2BIG : spanprof_bpf__load(s->skel);
	vstats_print(s);
	if (err) {
		const char *prog = refuse ? "sp_oncpu" : refused_program(s);

		if (err == -EPERM || err == -EACCES)
			snprintf(err_msg, err_len, "the kernel refused to load BPF programs (%s): "
				 "run as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE "
				 "(or CAP_SYS_ADMIN)", strerror(-err));
		else if (err == -E2BIG)
			snprintf(err_msg, err_len, "loading the BPF programs failed: %s is too "
				 "complex for this kernel's verifier (over its instruction limit); "
				 "--unwind fp loads a smaller program (SPANPROF_DEBUG=1 shows the "
				 "verifier log; please report the kernel version)",
				 prog ? prog : "a program");
		else
			snprintf(err_msg, err_len, "loading the BPF programs failed%s%s: %s "
				 "(SPANPROF_DEBUG=1 shows the verifier log)", prog ? " at " : "",
				 prog ? prog : "", strerror(-err));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sp_sampler__destroy(s);
	return err;
}


static int perf_event_open_clock(uint32_t freq, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq,
		.freq = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The prctl tracepoint is found through tracefs, which is often not
 * mounted (it is not on this project's CI machines).  Mount it where the
 * kernel documents it, once, and say so.  Without it, late publication is
 * not detected (counted as publish_watch=0 in the summary). */
static void attach_prctl(struct sp_sampler *s)
{
	struct bpf_link *l = bpf_program__attach(s->skel->progs.sp_prctl);

	if (!l && access("/sys/kernel/tracing/events", F_OK) != 0 &&
	    access("/sys/kernel/debug/tracing/events", F_OK) != 0 &&
	    mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		fprintf(stderr, "spanprof: mounted tracefs at /sys/kernel/tracing "
			"(for the prctl tracepoint)\n");
		l = bpf_program__attach(s->skel->progs.sp_prctl);
	}
	s->prctl_link = l;
	/* Same tracefs; without it a dlopen()ed library is found by the first
	 * sample whose leaf is in it (process-table miss), not at once. */
	if (l) {
		s->mmap_links[0] = bpf_program__attach(s->skel->progs.sp_mmap);
		s->mmap_links[1] = bpf_program__attach(s->skel->progs.sp_mprotect);
	}
}

bool sp_sampler__watches_mmap(const struct sp_sampler *s)
{
	return s->mmap_links[0] && s->mmap_links[1];
}

int sp_sampler__unwind_maps(const struct sp_sampler *s, struct sp_sampler_unwind_maps *out)
{
	out->chunks = bpf_map__fd(s->skel->maps.unwind_chunks);
	out->files = bpf_map__fd(s->skel->maps.unwind_files);
	out->procs = bpf_map__fd(s->skel->maps.unwind_procs);
	out->seq = bpf_map__fd(s->skel->maps.unwind_seq);
	return out->chunks < 0 || out->files < 0 || out->procs < 0 || out->seq < 0 ? -EBADF : 0;
}

bool sp_sampler__watches_publish(const struct sp_sampler *s)
{
	return s->prctl_link != NULL;
}

int sp_sampler__attach(struct sp_sampler *s, char *err_msg, size_t err_len)
{
	uint64_t online[SP_CLI_CPU_WORDS];
	uint32_t n_online = 0;
	int err;

	err = spanprof_bpf__attach(s->skel);
	if (err) {
		snprintf(err_msg, err_len, "attaching the process tracepoints failed: %s "
			 "(tp_btf needs kernel 5.5+ with BTF)", strerror(-err));
		return err;
	}
	attach_prctl(s);
	if (s->off_cpu) {
		s->offcpu_link = bpf_program__attach(s->skel->progs.sp_offcpu_switch);
		if (!s->offcpu_link) {
			err = -errno;
			snprintf(err_msg, err_len, "attaching the off-CPU program to "
				 "tp_btf/sched_switch failed: %s (needs kernel 5.18+ with BTF)",
				 strerror(-err));
			return err;
		}
	}
	err = sp_cli__online_cpus(online, &n_online);
	if (err) {
		snprintf(err_msg, err_len, "cannot read /sys/devices/system/cpu/online: %s",
			 strerror(-err));
		return err;
	}
	for (int cpu = 0; cpu < (int)n_online && cpu < (int)s->n_cpus; cpu++) {
		struct bpf_link *l;
		int fd;

		/* -C: only the CPUs asked for (checked online by the parser;
		 * one gone offline since is skipped like any offline CPU). */
		if (!sp_cli__cpu_isset(online, cpu) ||
		    (s->cpu_filter && !sp_cli__cpu_isset(s->cpus, cpu)))
			continue;
		fd = perf_event_open_clock(s->freq_hz, cpu);
		if (fd < 0) {
			err = -errno;
			if (err == -EINVAL)
				snprintf(err_msg, err_len, "perf_event_open at %u Hz refused: above "
					 "kernel.perf_event_max_sample_rate? lower -F", s->freq_hz);
			else
				snprintf(err_msg, err_len, "perf_event_open on CPU %d failed: %s "
					 "(needs CAP_PERFMON or kernel.perf_event_paranoid <= -1)",
					 cpu, strerror(-err));
			goto out;
		}
		s->pfds[cpu] = fd;
		l = bpf_program__attach_perf_event(s->skel->progs.sp_oncpu, fd);
		if (!l) {
			err = -errno;
			snprintf(err_msg, err_len, "attaching the sampler to CPU %d failed: %s",
				 cpu, strerror(-err));
			goto out;
		}
		s->links[cpu] = l;
		s->n_links++;
	}
	s->n_sampled = s->n_links;
	err = 0;
out:
	return err;
}

void sp_sampler__stop(struct sp_sampler *s)
{
	if (!s)
		return;
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
	for (int i = 0; i < SP_SAMPLER_GO_PARK_FILES; i++)
		sp_sampler__detach_go_parks(s, i);
	s->go_parks = false;
	for (uint32_t i = 0; i < s->n_cpus; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
		if (s->pfds[i] >= 0)
			close(s->pfds[i]);
		s->pfds[i] = -1;
	}
	s->n_links = 0;
	/* Last: while any program that reads labels could run, every GC of
	 * a process using epochs must be counted (bpf/golabels.bpf.h). */
	for (int i = 0; i < SP_SAMPLER_GO_GC_FILES; i++) {
		bpf_link__destroy(s->gc_links[i]);
		s->gc_links[i] = NULL;
	}
	s->go_epoch = false;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

/*
 * Releasing a perf tracepoint event waits for the tracepoint's RCU grace
 * periods (tracepoint_synchronize_unregister): about 70 ms each here, so
 * the three syscall tracepoints one after another were 0.2 s of every
 * record's exit.  Released on threads of their own, the waits overlap; a
 * thread that cannot start leaves its link to this one.
 */
static void destroy_links_together(struct bpf_link *links[3])
{
	pthread_t th[3];
	bool started[3] = { false };

	for (int i = 1; i < 3; i++)
		if (links[i])
			started[i] = !pthread_create(&th[i], NULL, destroy_link, links[i]);
	for (int i = 0; i < 3; i++)
		if (!started[i])
			bpf_link__destroy(links[i]);
	for (int i = 1; i < 3; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

void sp_sampler__destroy(struct sp_sampler *s)
{
	if (!s)
		return;
	if (s->links && s->pfds)
		sp_sampler__stop(s);
	destroy_links_together((struct bpf_link *[3]){ s->prctl_link, s->mmap_links[0],
						       s->mmap_links[1] });
	spanprof_bpf__destroy(s->skel);
	free(s->vstats);
	free(s->links);
	free(s->pfds);
	free(s);
}

int sp_sampler__add_target(struct sp_sampler *s, uint32_t pid, bool at_exec)
{
	uint8_t state = at_exec ? SP_TARGET_AT_EXEC : SP_TARGET_ON;

	return bpf_map__update_elem(s->skel->maps.targets, &pid, sizeof(pid), &state,
				    sizeof(state), BPF_ANY);
}

int sp_sampler__exclude(struct sp_sampler *s, uint32_t pid)
{
	uint8_t one = 1;

	return bpf_map__update_elem(s->skel->maps.excluded, &pid, sizeof(pid), &one,
				    sizeof(one), BPF_ANY);
}

int sp_sampler__add_target_tid(struct sp_sampler *s, uint32_t tid)
{
	uint8_t one = 1;

	return bpf_map__update_elem(s->skel->maps.target_tids, &tid, sizeof(tid), &one,
				    sizeof(one), BPF_ANY);
}

int sp_sampler__set_tls_desc(struct sp_sampler *s, uint32_t pid, const struct sp_tls_desc *d)
{
	return bpf_map__update_elem(s->skel->maps.tls_descs, &pid, sizeof(pid), d,
				    sizeof(*d), BPF_ANY);
}

int sp_sampler__del_tls_desc(struct sp_sampler *s, uint32_t pid)
{
	return bpf_map__delete_elem(s->skel->maps.tls_descs, &pid, sizeof(pid), 0);
}

int sp_sampler__set_go_desc(struct sp_sampler *s, uint32_t pid, const struct sp_go_desc *d)
{
	return bpf_map__update_elem(s->skel->maps.go_descs, &pid, sizeof(pid), d,
				    sizeof(*d), BPF_ANY);
}

int sp_sampler__del_go_desc(struct sp_sampler *s, uint32_t pid)
{
	return bpf_map__delete_elem(s->skel->maps.go_descs, &pid, sizeof(pid), 0);
}

bool sp_sampler__go_parks(const struct sp_sampler *s)
{
	return s && s->go_parks;
}

int sp_sampler__attach_go_parks(struct sp_sampler *s, const char *path, uint64_t park_off,
				uint64_t resume_off)
{
	struct bpf_link *park, *resume;
	int i, err;

	if (!s || !s->go_parks)
		return -EPERM;
	for (i = 0; i < SP_SAMPLER_GO_PARK_FILES && s->parks[i][0]; i++)
		;
	if (i == SP_SAMPLER_GO_PARK_FILES)
		return -ENOSPC;
	/* pid -1: every process that maps the file; the programs keep only
	 * target processes with a Go descriptor. */
	park = bpf_program__attach_uprobe(s->skel->progs.sp_go_park, false, -1, path, park_off);
	if (!park)
		return -errno;
	resume = bpf_program__attach_uprobe(s->skel->progs.sp_go_unpark, false, -1, path,
					    resume_off);
	if (!resume) {
		err = -errno;
		bpf_link__destroy(park);
		return err;
	}
	s->parks[i][0] = park;
	s->parks[i][1] = resume;
	return i;
}

void sp_sampler__detach_go_parks(struct sp_sampler *s, int i)
{
	if (!s || i < 0 || i >= SP_SAMPLER_GO_PARK_FILES)
		return;
	bpf_link__destroy(s->parks[i][0]);
	bpf_link__destroy(s->parks[i][1]);
	s->parks[i][0] = s->parks[i][1] = NULL;
}

bool sp_sampler__go_epoch(const struct sp_sampler *s)
{
	return s && s->go_epoch;
}

int sp_sampler__attach_go_gc(struct sp_sampler *s, const char *path, uint64_t off)
{
	struct bpf_link *l;
	int i;

	if (!s || !s->go_epoch)
		return -EPERM;
	for (i = 0; i < SP_SAMPLER_GO_GC_FILES && s->gc_links[i]; i++)
		;
	if (i == SP_SAMPLER_GO_GC_FILES)
		return -ENOSPC;
	/* pid -1: every process that maps the file (bpf/gogc.bpf.c says why) */
	l = bpf_program__attach_uprobe(s->skel->progs.sp_go_gc, false, -1, path, off);
	if (!l)
		return -errno;
	s->gc_links[i] = l;
	return 0;
}

int sp_sampler__track_go_gc(struct sp_sampler *s, uint32_t pid)
{
	uint64_t zero = 0;
	int err;

	if (!s || !s->go_epoch)
		return -EPERM;
	/* NOEXIST: an epoch already counting (the same process described
	 * again) must never go back */
	err = bpf_map__update_elem(s->skel->maps.go_gc_epochs, &pid, sizeof(pid), &zero,
				   sizeof(zero), BPF_NOEXIST);
	return err == -EEXIST ? 0 : err;
}

void sp_sampler__untrack_go_gc(struct sp_sampler *s, uint32_t pid)
{
	if (s)
		bpf_map__delete_elem(s->skel->maps.go_gc_epochs, &pid, sizeof(pid), 0);
}

uint32_t sp_sampler__drop_go_parks(struct sp_sampler *s, uint32_t pid)
{
	struct { uint32_t tgid, pad; uint64_t g; } key, next, *prev = NULL;
	int fd = s ? bpf_map__fd(s->skel->maps.go_park_pending) : -1;
	uint32_t n = 0, seen = 0;

	if (fd < 0)
		return 0;
	/* Bounded by the map's size; a deleted key restarts the walk from
	 * the last one kept, which is still there. */
	while (seen++ <= s->skel->rodata->cfg_offcpu_max_pending &&
	       !bpf_map_get_next_key(fd, prev, &next)) {
		if (next.tgid == pid && !bpf_map_delete_elem(fd, &next)) {
			n++;
			continue;
		}
		key = next;
		prev = &key;
	}
	if (n)
		__atomic_fetch_sub(&s->skel->bss->sp_gopark_live, n, __ATOMIC_RELAXED);
	return n;
}

int sp_sampler__ring_fd(const struct sp_sampler *s)
{
	return bpf_map__fd(s->skel->maps.events);
}

uint32_t sp_sampler__n_sampled_cpus(const struct sp_sampler *s)
{
	return s->n_sampled;
}

uint32_t sp_sampler__n_cpus(const struct sp_sampler *s)
{
	return s->n_cpus;
}

int sp_sampler__read_counters(const struct sp_sampler *s, uint64_t out[SP_CNT__MAX])
{
	uint64_t *vals;
	int err = 0;

	vals = calloc(s->n_cpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < SP_CNT__MAX; k++) {
		out[k] = 0;
		err = bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
					   s->n_cpus * sizeof(*vals), 0);
		if (err)
			break;
		for (uint32_t c = 0; c < s->n_cpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return err;
}

static uint32_t prog_id(const struct bpf_program *p)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return 0;
	return info.id;
}

uint32_t sp_sampler__oncpu_prog_id(const struct sp_sampler *s)
{
	return prog_id(s->skel->progs.sp_oncpu);
}

uint32_t sp_sampler__offcpu_prog_id(const struct sp_sampler *s)
{
	return prog_id(s->skel->progs.sp_offcpu_switch);
}
