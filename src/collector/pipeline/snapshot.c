/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - see snapshot.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buildid.h"
#include "collector/host/kernel_layout.h"
#include "collector/pipeline/service_name.h"
#include "collector/pipeline/aggregator.h"
#include "collector/procs/jit_maps.h"
#include "collector/tracectx/ctx_attrs.h"
#include "collector/procs/proc_env.h"
#include "collector/procs/proc_table.h"
#include "profile/profile.h"
#include "collector/pipeline/snapshot.h"
#include "spanprof/abi.h"

struct pid_slot {
	uint32_t pid;
	int32_t resource;	/* -1 = empty */
};

struct builder {
	struct sp_profile *p;
	struct sp_proc_table *procs;
	const struct sp_snapshot_opts *o;
	int32_t *map_index;		/* registry id -> profile mapping, 0 = not yet,
					 * MAP_NONE = none */
	uint32_t n_map_index;
	int32_t *kslot_index;		/* kernel layout slot -> profile mapping */
	uint32_t n_kslots;
	struct pid_slot *pids;		/* open addressing, power of two */
	uint32_t pid_mask;
	int32_t host_name;
	int32_t reason_key;
	int32_t reason_str[SP_OFF_OTHER + 1];
	int32_t locs[2 * SP_MAX_FRAMES];
};

static const char *const reason_names[] = {
	[SP_OFF_NONE] = "none",
	[SP_OFF_SLEEP] = "sleep",
	[SP_OFF_IO] = "io",
	[SP_OFF_RUNQ] = "runqueue",
	[SP_OFF_OTHER] = "other",
};

#define MAP_NONE INT32_MIN

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Adds key = value to r unless key is fixed or already there; counts what
 * does not fit.  0 or -ENOMEM. */
static int add_attr(struct builder *b, struct sp_resource *r, const char *key, const char *value)
{
	int32_t k, v;

	if (!value[0] || sp_profile__resource_key_fixed(key))
		return 0;
	for (uint32_t i = 0; i < r->n_attrs; i++)
		if (!strcmp(b->p->strings[r->attrs[i].key], key))
			return 0;
	if (r->n_attrs == SP_RES_ATTRS_MAX) {
		if (b->o->attrs_dropped)
			(*b->o->attrs_dropped)++;
		return 0;
	}
	k = sp_profile__intern(b->p, key);
	v = sp_profile__intern(b->p, value);
	if (k < 0 || v < 0)
		return -ENOMEM;
	r->attrs[r->n_attrs++] = (struct sp_res_attr){ k, v };
	return 0;
}

/* The collector's attributes first (a few, set by the operator: the node,
 * the cluster; they must not be crowded out), except those the process
 * declares itself, whose value wins; then the process's, up to the
 * bound. */
static int add_attrs(struct builder *b, struct sp_resource *r, const struct sp_proc_env_ident *env)
{
	const struct sp_otel_attrs *c = b->o->common_attrs;

	for (uint32_t i = 0; c && i < c->n; i++)
		if (!(env && sp_service_name__env_value(env, c->a[i].key)) &&
		    add_attr(b, r, c->a[i].key, c->a[i].value))
			return -ENOMEM;
	for (uint32_t i = 0; env && i < env->n_attrs; i++)
		if (add_attr(b, r, env->keys[i], env->values[i]))
			return -ENOMEM;
	return 0;
}

static int32_t resource_for(struct builder *b, uint32_t pid, const char *comm)
{
	uint32_t h = (pid * 2654435761u) & b->pid_mask;
	struct sp_resource r = { .pid = pid, .host_name = b->host_name };
	const struct sp_proc_info *pi;
	const struct sp_proc_env_ident *env = NULL;
	const char *svc = NULL, *cid;
	int32_t idx;

	while (b->pids[h].resource >= 0) {
		if (b->pids[h].pid == pid)
			return b->pids[h].resource;
		h = (h + 1) & b->pid_mask;
	}
	pi = sp_proc_table__proc(b->procs, pid);
	if (pi && pi->exe_path && pi->exe_path[0]) {
		r.exe_path = sp_profile__intern(b->p, pi->exe_path);
		r.exe_name = sp_profile__intern(b->p, base_name(pi->exe_path));
	} else {
		r.exe_name = sp_profile__intern(b->p, pid ? comm : "swapper");
	}
	if (b->o->env_ident)
		env = b->o->env_ident(pid, b->o->env_ident_ctx);
	/* service.name in service_name.h's order (the agent's --select-service
	 * takes the same) */
	svc = sp_service_name__resolve(env, b->o->service_name ?
				       b->o->service_name(pid, b->o->service_name_ctx) : NULL);
	if (svc) {
		r.service_name = sp_profile__intern(b->p, svc);
	} else if (r.exe_name >= 0) {
		char unknown[300];

		snprintf(unknown, sizeof(unknown), "unknown_service:%s", b->p->strings[r.exe_name]);
		r.service_name = sp_profile__intern(b->p, unknown);
	}
	if (b->o->container_id && (cid = b->o->container_id(pid, b->o->container_id_ctx)))
		r.container_id = sp_profile__intern(b->p, cid);
	if (r.exe_path < 0 || r.exe_name < 0 || r.service_name < 0 || r.container_id < 0)
		return -ENOMEM;
	if (add_attrs(b, &r, env))
		return -ENOMEM;
	idx = sp_profile__add_resource(b->p, &r);
	if (idx < 0)
		return idx;
	b->pids[h].pid = pid;
	b->pids[h].resource = idx;
	return idx;
}

static int32_t add_mapping(struct builder *b, const char *path, const char *hex,
			   uint64_t start, uint64_t limit, uint64_t offset)
{
	struct sp_mapping m = { 0 };

	m.memory_start = start;
	m.memory_limit = limit;
	m.file_offset = offset;
	m.filename = sp_profile__intern(b->p, path ? path : "");
	if (hex && hex[0])
		m.build_id = sp_profile__intern(b->p, hex);
	if (m.filename < 0 || m.build_id < 0)
		return -ENOMEM;
	return sp_profile__add_mapping(b->p, &m);
}

/* Anonymous executable memory: a "[perf-map]" mapping naming the head of
 * the process's JIT chain, or none. */
static int32_t jit_mapping(struct builder *b, const struct sp_mapping_info *mi)
{
	char hex[SP_JIT_ID_HEX + 1];
	struct sp_jit_id head;
	uint8_t source;

	if (sp_jit_maps__head(b->o->jit, mi->pid, &source, &head))
		return MAP_NONE;
	sp_jit_id__hex(&head, hex);
	return add_mapping(b, source == SP_JIT_JITDUMP ? "[jitdump]" : "[perf-map]", hex,
			   mi->start, mi->limit, 0);
}

static int32_t mapping_for(struct builder *b, uint32_t id)
{
	const struct sp_mapping_info *mi;
	char hex[2 * SP_BUILD_ID_MAX + 1];
	int32_t idx;

	if (!id || id >= b->n_map_index)
		return 0;
	if (b->map_index[id])
		return b->map_index[id] == MAP_NONE ? 0 : b->map_index[id];
	mi = sp_proc_table__mapping(b->procs, id);
	if (!mi)
		return 0;
	if (mi->kind == SP_MAP_ANON) {
		idx = jit_mapping(b, mi);
	} else {
		sp_buildid__hex(&mi->build_id, hex);
		idx = add_mapping(b, mi->path, hex, mi->start, mi->limit, mi->offset);
	}
	if (idx > 0 || idx == MAP_NONE)
		b->map_index[id] = idx;
	return idx == MAP_NONE ? 0 : idx;
}

/* A kernel frame through the layout: its slot's mapping and location. */
static int32_t kernel_frame(struct builder *b, uint64_t addr, uint64_t *loc)
{
	uint32_t slot = sp_kernel_layout__map(b->o->kernel, addr, loc);
	const struct sp_kernel_slot *ks;
	char hex[2 * SP_BUILD_ID_MAX + 1];
	int32_t idx;

	if (slot >= b->n_kslots)
		return 0;
	if (b->kslot_index[slot])
		return b->kslot_index[slot];
	ks = sp_kernel_layout__slot(b->o->kernel, slot);
	sp_buildid__hex(&ks->build_id, hex);
	idx = add_mapping(b, ks->filename, hex, ks->start, ks->limit, ks->offset);
	if (idx > 0)
		b->kslot_index[slot] = idx;
	return idx;
}

/*
 * The thread record's attributes become string labels named by the
 * process's attribute key map (OTEP 4719 threadlocal.attribute_key_map via
 * the attr_key hook); a key index with no name is exported as "attr.N"
 * rather than dropped, and one named like a fixed field
 * (sp_profile__label_reserved) as "attr.NAME".  The consumer already
 * capped them at SP_CTX_ATTRS_KEYS, which with the off-CPU reason fits
 * SP_MAX_LABELS.
 */
static int add_attr_labels(struct builder *b, uint32_t pid, const uint8_t *raw, uint32_t len,
			   struct sp_sample *s)
{
	struct sp_ctx_attr at[SP_CTX_ATTRS_KEYS];
	uint32_t n = sp_ctx_attrs__decode(raw, len, at, NULL);
	char name[160], safe_name[256], value[256];

	for (uint32_t i = 0; i < n && s->n_labels < SP_MAX_LABELS; i++) {
		const char *key = b->o->attr_key ? b->o->attr_key(pid, at[i].key,
								  b->o->attr_key_ctx) : NULL;
		struct sp_label *l = &s->labels[s->n_labels];

		struct sp_ctx_attr kn;

		if (!key)
			snprintf(name, sizeof(name), "attr.%u", at[i].key);
		else if (sp_profile__label_reserved(key))
			snprintf(name, sizeof(name), "attr.%.128s", key);
		else
			snprintf(name, sizeof(name), "%.128s", key);
		/* The key map is the process's bytes too: valid UTF-8 only. */
		kn = (struct sp_ctx_attr){ .len = (uint8_t)strlen(name),
					   .value = (const uint8_t *)name };
		sp_ctx_attrs__string(&kn, safe_name);
		sp_ctx_attrs__string(&at[i], value);
		l->key = sp_profile__intern(b->p, safe_name);
		l->str = sp_profile__intern(b->p, value);
		l->num = 0;
		if (l->key < 0 || l->str < 0)
			return -ENOMEM;
		s->n_labels++;
	}
	return 0;
}

static int add_entry(const struct sp_agg_entry *e, void *ctx)
{
	struct builder *b = ctx;
	const struct sp_agg_key *k = e->key;
	uint32_t n = k->n_kernel + k->n_user;
	struct sp_sample s = { 0 };
	int32_t stack, res;
	int err = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct sp_location l = { 0 };
		uint64_t a = e->frames.addrs[i] - (i > 0 && e->frames.addrs[i] ? 1 : 0);
		int32_t m = i < k->n_kernel && b->o->kernel ? kernel_frame(b, a, &a)
							    : mapping_for(b, e->frames.mappings[i]);

		if (m < 0)
			return m;
		l.mapping = m;
		l.address = a;
		l.frame_kind = i < k->n_kernel ? SP_FRAME_KERNEL : SP_FRAME_NATIVE;
		b->locs[i] = sp_profile__add_location(b->p, &l);
		if (b->locs[i] < 0)
			return b->locs[i];
	}
	stack = sp_profile__add_stack(b->p, b->locs, n);
	res = resource_for(b, k->pid, k->comm);
	if (stack < 0 || res < 0)
		return stack < 0 ? stack : res;

	s.resource = res;
	s.stack = stack;
	s.kind = k->kind;
	s.tid = k->tid;
	s.thread_name = sp_profile__intern_n(b->p, k->comm, strnlen(k->comm, sizeof(k->comm)));
	s.count = e->count;
	s.value_ns = k->kind == SP_KIND_ONCPU ? (int64_t)(e->count * b->o->period_ns)
					      : (int64_t)e->weight_ns;
	if (k->has_ctx) {
		s.link = sp_profile__add_link(b->p, k->trace_id, k->span_id);
		if (s.link < 0)
			return s.link;
	}
	if (k->kind == SP_KIND_OFFCPU && k->reason <= SP_OFF_OTHER) {
		s.labels[0].key = b->reason_key;
		s.labels[0].str = b->reason_str[k->reason];
		s.n_labels = 1;
	}
	if (k->attrs_len) {
		err = add_attr_labels(b, k->pid, e->frames.attrs, k->attrs_len, &s);
		if (err)
			return err;
	}
	if (e->timestamps) {
		/* The aggregator lends its grouped timestamps; convert a copy. */
		uint64_t *ts = malloc(e->count * sizeof(*ts));

		if (!ts)
			return -ENOMEM;
		for (uint64_t i = 0; i < e->count; i++)
			ts[i] = e->timestamps[i] + b->o->mono_to_unix_ns;
		s.timestamps = ts;
		s.n_timestamps = e->count;
		err = sp_profile__add_sample(b->p, &s);
		free(ts);
	} else {
		err = sp_profile__add_sample(b->p, &s);
	}
	return err < 0 ? err : 0;
}

int sp_snapshot__build(struct sp_agg *agg, struct sp_proc_table *procs,
		       const struct sp_snapshot_opts *o, struct sp_profile **out)
{
	struct builder b = { .procs = procs, .o = o };
	char host[256] = "";
	uint32_t cap = 64;
	int err = -ENOMEM;

	*out = NULL;
	b.p = sp_profile__new();
	if (!b.p)
		return -ENOMEM;
	while (cap < 2 * (sp_agg__stats(agg)->entries + 1))
		cap <<= 1;
	b.pid_mask = cap - 1;
	b.pids = malloc(cap * sizeof(*b.pids));
	b.n_map_index = sp_proc_table__n_mappings(procs) + 1;
	b.map_index = calloc(b.n_map_index, sizeof(*b.map_index));
	b.n_kslots = sp_kernel_layout__n_slots(o->kernel);
	b.kslot_index = calloc(b.n_kslots + 1, sizeof(*b.kslot_index));
	if (!b.pids || !b.map_index || !b.kslot_index)
		goto out;
	for (uint32_t i = 0; i < cap; i++)
		b.pids[i].resource = -1;

	if (o->host_name)
		snprintf(host, sizeof(host), "%s", o->host_name);
	else
		gethostname(host, sizeof(host) - 1);
	b.host_name = sp_profile__intern(b.p, host);
	b.reason_key = sp_profile__intern(b.p, SP_LABEL_OFFCPU_REASON);
	for (int r = 0; r <= SP_OFF_OTHER; r++)
		b.reason_str[r] = sp_profile__intern(b.p, reason_names[r]);
	b.p->time_unix_ns = o->start_mono_ns + o->mono_to_unix_ns;
	b.p->duration_ns = o->end_mono_ns > o->start_mono_ns ? o->end_mono_ns - o->start_mono_ns : 0;
	b.p->period_ns[SP_KIND_ONCPU] = o->period_ns;

	err = sp_agg__foreach(agg, add_entry, &b);
	if (err)
		goto out;
	*out = b.p;
	b.p = NULL;
out:
	sp_profile__free(b.p);
	free(b.pids);
	free(b.map_index);
	free(b.kslot_index);
	return err;
}
