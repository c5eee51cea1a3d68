/* SPDX-License-Identifier: MIT */
/*
 * otlp_encode.c - struct sp_profile -> OTLP Profiles v1development
 * (opentelemetry-proto v1.11.0) ExportProfilesServiceRequest.
 *
 * sp_otlp__encode validates the profile and writes one request; *out is a
 * malloc'd buffer the caller frees.
 *   - dictionary: one for the request.  Tables keep the model's indices
 *     (mapping/location/function/link/stack i -> table entry i), so every
 *     zero entry sits at [0]: string_table[0] = "", link_table[0] = 16 + 8
 *     zero bytes, attribute_table[0] = empty KeyValueAndUnit, empty stack,
 *     mapping, location and function.  The string table is the model's
 *     followed by the extra strings OTLP needs (attribute keys, sample type
 *     names), deduplicated; the attribute table is deduplicated.
 *   - attributes: keys are always key_strindex (never the plain key:
 *     collectors >= v0.148 blank those out); values are plain AnyValue
 *     string_value / int_value.  Mapping: process.executable.build_id.gnu
 *     (hex) when build_id != 0, process.executable.build_id.go instead when
 *     it is a Go build id (base/buildid.h).  Location (not the zero one):
 *     profile.frame.type = "native" | "kernel".  Sample: thread.id (int, when
 *     tid != 0), thread.name (when set), then each sp_label (string when str
 *     != 0, else int).  Resource (KeyValue with key_strindex): the entries of
 *     res_attrs[] below, each only when set.
 *   - one ResourceProfiles per resource (also for a resource without
 *     samples, so indices survive a round trip), one ScopeProfiles (scope
 *     name "spanprof"), one Profile per sample kind present in it, in kind
 *     order: ONCPU sample_type samples/count, period_type cpu/nanoseconds,
 *     period = period_ns[ONCPU]; OFFCPU sample_type off_cpu/nanoseconds
 *     (period_type/period only when period_ns[OFFCPU] != 0).  Every Profile
 *     carries the profile's time_unix_nano and duration_nano.
 *   - sample values, following the reference eBPF profiler (one timestamp
 *     and one value per event):
 *       with timestamps (n_timestamps == count): timestamps_unix_nano as
 *         given; values one per timestamp: ONCPU 1 each, OFFCPU value_ns
 *         split evenly (the remainder on the last) so the sum is exact;
 *       without: a single value, ONCPU count, OFFCPU value_ns.
 *
 * How: the encoder is a list of steps (steps[] at the end), one per table,
 * each filling its part of the protobuf-c message tree from the model.
 * Every message, pointer array and index array comes from one arena that is
 * freed once; the string table and the attribute table are deduplicating
 * builders (sp_strtab, struct attr_table).  The order of the steps is part
 * of the wire format: the extra strings and the attribute entries are
 * numbered in the order the steps first ask for them, and
 * tests/unit/test_codec_golden.c pins the resulting bytes.  To change a
 * table (issue 17: compact samples), change its step.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/buildid.h"
#include "profile/arena.h"
#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/otlp_pb.h"

#define SAMPLE_ATTRS (2 + SP_MAX_LABELS)

/* One attribute-table entry: key and value are string-table indices (the
 * value only for strings), so equal strings compare equal as indices. */
struct attr {
	int32_t key;
	bool is_int;
	int32_t str;
	int64_t num;
};

/* The attribute table being built: [0] is the empty entry. */
struct attr_table {
	struct attr *v;
	uint32_t n, cap;
	struct sp_hidx idx;
};

/* Samples grouped by (resource, kind), index g = resource * SP_KIND__MAX +
 * kind: group g is grouped[off[g] .. off[g] + count[g]). */
struct sample_groups {
	OT(Sample) **grouped;
	uint32_t *count, *off;
};

struct otlp_enc {
	const struct sp_profile *p;
	struct sp_arena arena;		/* every wire struct below points here */
	struct sp_strtab st;
	struct attr_table at;
	OtRequest req;
	OT(ProfilesDictionary) dict;
	OT(ValueType) vt_samples, vt_offcpu, vt_period;
	Scope scope;
	struct sample_groups groups;	/* from enc_samples, for enc_resources */
};

#define NEW(e, n, T) ((T *)sp_arena__array(&(e)->arena, (size_t)(n), sizeof(T)))

/* ------------------------------------------------------------ builders */

struct attr_key {
	const struct attr_table *t;
	const struct attr *a;
};

static bool attr_eq(const void *ctx, int32_t v)
{
	const struct attr_key *k = ctx;
	const struct attr *a = &k->t->v[v], *b = k->a;

	return a->key == b->key && a->is_int == b->is_int && a->str == b->str &&
	       a->num == b->num;
}

/* Attribute-table index of {key, value}; key is a C string.  >= 0 or a
 * negative errno. */
static int32_t enc_attr(struct otlp_enc *e, const char *key, bool is_int,
			int32_t str, int64_t num)
{
	struct attr_table *t = &e->at;
	struct attr a = { 0 };
	struct attr_key k = { t, &a };
	uint8_t img[17];
	uint64_t h;
	int32_t i;
	int err;

	i = sp_strtab__get(&e->st, key);
	if (i < 0)
		return i;
	a.key = i;
	a.is_int = is_int;
	a.str = is_int ? 0 : str;
	a.num = is_int ? num : 0;
	memcpy(img, &a.key, 4);
	img[4] = a.is_int;
	memcpy(img + 5, &a.str, 4);
	memcpy(img + 9, &a.num, 8);
	h = sp_hash_bytes(img, sizeof(img));
	i = sp_hidx__find(&t->idx, h, attr_eq, &k);
	if (i >= 0)
		return i;
	if (t->n == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 64;
		struct attr *n;

		if (ncap > SP_TABLE_MAX)
			return -E2BIG;
		n = reallocarray(t->v, ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->v = n;
		t->cap = ncap;
	}
	if (!t->n)
		t->v[t->n++] = (struct attr){ 0 };	/* the empty zero entry */
	i = (int32_t)t->n;
	err = sp_hidx__insert(&t->idx, h, i);
	if (err)
		return err;
	t->v[t->n++] = a;
	return i;
}

/* ------------------------------------------------------------ dictionary */

static int enc_mappings(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	OT(Mapping) *maps = NEW(e, p->n_mappings, OT(Mapping));
	OT(Mapping) **mapp = NEW(e, p->n_mappings, OT(Mapping) *);
	int32_t *attrs = NEW(e, p->n_mappings, int32_t);
	uint32_t i;

	if (!maps || !mapp || !attrs)
		return -ENOMEM;
	for (i = 0; i < p->n_mappings; i++) {
		const struct sp_mapping *m = &p->mappings[i];
		OT(Mapping) *om = &maps[i];

		ot_(mapping__init)(om);
		om->memory_start = m->memory_start;
		om->memory_limit = m->memory_limit;
		om->file_offset = m->file_offset;
		om->filename_strindex = m->filename;
		if (m->build_id) {
			/* a Go build id (a Go binary without a GNU one) has its
			 * own semantic-conventions attribute */
			attrs[i] = enc_attr(e, sp_buildid__validate_go(p->strings[m->build_id])
						       ? SP_A_BUILD_ID_GNU : SP_A_BUILD_ID_GO,
					    false, m->build_id, 0);
			if (attrs[i] < 0)
				return attrs[i];
			om->n_attribute_indices = 1;
			om->attribute_indices = &attrs[i];
		}
		mapp[i] = om;
	}
	e->dict.n_mapping_table = p->n_mappings;
	e->dict.mapping_table = mapp;
	return 0;
}

static int enc_functions(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	OT(Function) *funcs = NEW(e, p->n_functions, OT(Function));
	OT(Function) **funcp = NEW(e, p->n_functions, OT(Function) *);
	uint32_t i;

	if (!funcs || !funcp)
		return -ENOMEM;
	for (i = 0; i < p->n_functions; i++) {
		const struct sp_function *f = &p->functions[i];
		OT(Function) *of = &funcs[i];

		ot_(function__init)(of);
		of->name_strindex = f->name;
		of->system_name_strindex = f->system_name;
		of->filename_strindex = f->filename;
		of->start_line = f->start_line;
		funcp[i] = of;
	}
	e->dict.n_function_table = p->n_functions;
	e->dict.function_table = funcp;
	return 0;
}

/* Entry 0 stays empty: no lines, no frame type. */
static int enc_locations(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	OT(Location) *locs = NEW(e, p->n_locations, OT(Location));
	OT(Location) **locp = NEW(e, p->n_locations, OT(Location) *);
	int32_t *attrs = NEW(e, p->n_locations, int32_t);
	int32_t frame_type[2] = { 0, 0 };	/* string of "native", "kernel" */
	OT(Line) *lines, **linep;
	size_t n_lines = 0, li = 0;
	uint32_t i, j;

	for (i = 1; i < p->n_locations; i++)
		n_lines += p->locations[i].n_lines;
	lines = NEW(e, n_lines, OT(Line));
	linep = NEW(e, n_lines, OT(Line) *);
	if (!locs || !locp || !attrs || !lines || !linep)
		return -ENOMEM;
	for (i = 0; i < p->n_locations; i++) {
		const struct sp_location *l = &p->locations[i];
		OT(Location) *ol = &locs[i];

		ot_(location__init)(ol);
		ol->mapping_index = l->mapping;
		ol->address = l->address;
		ol->n_lines = l->n_lines;
		ol->lines = &linep[li];
		for (j = 0; j < l->n_lines; j++, li++) {
			ot_(line__init)(&lines[li]);
			lines[li].function_index = l->lines[j].function;
			lines[li].line = l->lines[j].line;
			lines[li].column = l->lines[j].column;
			linep[li] = &lines[li];
		}
		if (i) {
			bool kernel = l->frame_kind == SP_FRAME_KERNEL;
			int32_t *v = &frame_type[kernel];

			if (!*v)
				*v = sp_strtab__get(&e->st, kernel ? "kernel" : "native");
			if (*v < 0)
				return *v;
			attrs[i] = enc_attr(e, SP_A_FRAME_TYPE, false, *v, 0);
			if (attrs[i] < 0)
				return attrs[i];
			ol->n_attribute_indices = 1;
			ol->attribute_indices = &attrs[i];
		}
		locp[i] = ol;
	}
	e->dict.n_location_table = p->n_locations;
	e->dict.location_table = locp;
	return 0;
}

/* [0] is written as 16 + 8 zero bytes, like every link. */
static int enc_links(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	OT(Link) *links = NEW(e, p->n_links, OT(Link));
	OT(Link) **linkp = NEW(e, p->n_links, OT(Link) *);
	uint32_t i;

	if (!links || !linkp)
		return -ENOMEM;
	for (i = 0; i < p->n_links; i++) {
		ot_(link__init)(&links[i]);
		links[i].trace_id.len = 16;
		links[i].trace_id.data = (uint8_t *)p->links[i].trace_id;
		links[i].span_id.len = 8;
		links[i].span_id.data = (uint8_t *)p->links[i].span_id;
		linkp[i] = &links[i];
	}
	e->dict.n_link_table = p->n_links;
	e->dict.link_table = linkp;
	return 0;
}

/* Location indices are the model's, borrowed. */
static int enc_stacks(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	OT(Stack) *stacks = NEW(e, p->n_stacks, OT(Stack));
	OT(Stack) **stackp = NEW(e, p->n_stacks, OT(Stack) *);
	uint32_t i;

	if (!stacks || !stackp)
		return -ENOMEM;
	for (i = 0; i < p->n_stacks; i++) {
		ot_(stack__init)(&stacks[i]);
		stacks[i].n_location_indices = p->stack_len[i];
		stacks[i].location_indices = p->stack_len[i] ?
			&p->stack_locs[p->stack_off[i]] : NULL;
		stackp[i] = &stacks[i];
	}
	e->dict.n_stack_table = p->n_stacks;
	e->dict.stack_table = stackp;
	return 0;
}

/* samples/count and cpu/nanoseconds; off_cpu is added by enc_resources when
 * the first off-CPU Profile is written. */
static int enc_value_types(struct otlp_enc *e)
{
	const struct { OT(ValueType) *vt; const char *type, *unit; } vts[] = {
		{ &e->vt_samples, "samples", "count" },
		{ &e->vt_period, "cpu", "nanoseconds" },
	};
	size_t i;

	for (i = 0; i < sizeof(vts) / sizeof(vts[0]); i++) {
		int32_t t = sp_strtab__get(&e->st, vts[i].type);
		int32_t u = t < 0 ? t : sp_strtab__get(&e->st, vts[i].unit);

		if (u < 0)
			return u;
		vts[i].vt->type_strindex = t;
		vts[i].vt->unit_strindex = u;
	}
	e->scope.name = "spanprof";
	return 0;
}

/* ------------------------------------------------------------ samples */

/* Values of one sample (see the header comment), into v. */
static void sample_values(const struct sp_sample *s, int64_t *v)
{
	uint32_t j;

	if (!s->n_timestamps) {
		v[0] = s->kind == SP_KIND_ONCPU ? s->count : s->value_ns;
		return;
	}
	for (j = 0; j < s->n_timestamps; j++)
		v[j] = s->kind == SP_KIND_ONCPU ? 1 : s->value_ns / (int64_t)s->n_timestamps;
	if (s->kind != SP_KIND_ONCPU)
		v[j - 1] += s->value_ns % (int64_t)s->n_timestamps;
}

/* Sample attributes into ai (SAMPLE_ATTRS slots); returns how many, or a
 * negative errno. */
static int sample_attrs(struct otlp_enc *e, const struct sp_sample *s, int32_t *ai)
{
	int32_t n = 0, r;
	uint32_t j;

	if (s->tid) {
		r = enc_attr(e, SP_A_THREAD_ID, true, 0, s->tid);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	if (s->thread_name) {
		r = enc_attr(e, SP_A_THREAD_NAME, false, s->thread_name, 0);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	for (j = 0; j < s->n_labels; j++) {
		const struct sp_label *l = &s->labels[j];

		r = enc_attr(e, e->p->strings[l->key], l->str == 0, l->str, l->num);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	return n;
}

/* Samples, grouped by (resource, kind) with a counting sort that keeps the
 * model's order inside a group. */
static int enc_samples(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	size_t n_groups = (size_t)p->n_resources * SP_KIND__MAX, n_values = 0, vi = 0;
	struct sample_groups *g = &e->groups;
	OT(Sample) *samples = NEW(e, p->n_samples, OT(Sample));
	int32_t *attrs = NEW(e, (size_t)p->n_samples * SAMPLE_ATTRS, int32_t);
	uint32_t *fill = NEW(e, n_groups, uint32_t);
	int64_t *values;
	uint32_t i, j;
	int n;

	g->grouped = NEW(e, p->n_samples, OT(Sample) *);
	g->count = NEW(e, n_groups, uint32_t);
	g->off = NEW(e, n_groups, uint32_t);
	for (i = 0; i < p->n_samples; i++)
		n_values += p->samples[i].n_timestamps ? p->samples[i].n_timestamps : 1;
	values = NEW(e, n_values, int64_t);
	if (!samples || !attrs || !fill || !g->grouped || !g->count || !g->off || !values)
		return -ENOMEM;

	for (i = 0; i < p->n_samples; i++)
		g->count[(size_t)p->samples[i].resource * SP_KIND__MAX + p->samples[i].kind]++;
	for (i = 0, j = 0; i < n_groups; i++) {
		g->off[i] = j;
		j += g->count[i];
	}
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		size_t gi = (size_t)s->resource * SP_KIND__MAX + s->kind;
		OT(Sample) *os = &samples[i];

		ot_(sample__init)(os);
		os->stack_index = s->stack;
		os->link_index = s->link;
		os->attribute_indices = &attrs[(size_t)i * SAMPLE_ATTRS];
		n = sample_attrs(e, s, os->attribute_indices);
		if (n < 0)
			return n;
		os->n_attribute_indices = (size_t)n;
		if (s->n_timestamps) {
			os->n_timestamps_unix_nano = s->n_timestamps;
			os->timestamps_unix_nano = s->timestamps;
		}
		os->values = &values[vi];
		os->n_values = s->n_timestamps ? s->n_timestamps : 1;
		sample_values(s, os->values);
		vi += os->n_values;
		g->grouped[g->off[gi] + fill[gi]++] = os;
	}
	return 0;
}

/* ------------------------------------------------------------ resources */

/* Resource attributes in the order they are written, each only when set:
 * strings by their offset in struct sp_resource, the pid as an int. */
static const struct res_attr_def {
	const char *key;
	bool is_pid;
	size_t str_off;
} res_attrs[] = {
	{ SP_K_SERVICE_NAME, false, offsetof(struct sp_resource, service_name) },
	{ SP_A_PROCESS_PID, true, 0 },
	{ SP_A_EXE_PATH, false, offsetof(struct sp_resource, exe_path) },
	{ SP_A_EXE_NAME, false, offsetof(struct sp_resource, exe_name) },
	{ SP_A_CONTAINER_ID, false, offsetof(struct sp_resource, container_id) },
	{ SP_A_HOST_NAME, false, offsetof(struct sp_resource, host_name) },
};
#define RES_ATTRS (sizeof(res_attrs) / sizeof(res_attrs[0]))

/* Everything one ResourceProfiles needs, in one allocation. */
struct res_msgs {
	OT(ResourceProfiles) rp;
	OT(ScopeProfiles) sp, *spp;
	Resource res;
	KeyValue kv[RES_ATTRS], *kvp[RES_ATTRS];
	AnyValue val[RES_ATTRS];
	OT(Profile) prof[SP_KIND__MAX], *profp[SP_KIND__MAX];
};

static int resource_attrs(struct otlp_enc *e, const struct sp_resource *r,
			  struct res_msgs *m)
{
	size_t j;

	opentelemetry__proto__resource__v1__resource__init(&m->res);
	m->res.attributes = m->kvp;
	for (j = 0; j < RES_ATTRS; j++) {
		const struct res_attr_def *d = &res_attrs[j];
		int32_t str = d->is_pid ? 0 : *(const int32_t *)((const char *)r + d->str_off);
		size_t k = m->res.n_attributes;
		int32_t key;

		if (d->is_pid ? !r->pid : !str)
			continue;
		key = sp_strtab__get(&e->st, d->key);
		if (key < 0)
			return key;
		opentelemetry__proto__common__v1__key_value__init(&m->kv[k]);
		opentelemetry__proto__common__v1__any_value__init(&m->val[k]);
		m->kv[k].key_strindex = key;
		m->kv[k].value = &m->val[k];
		if (d->is_pid) {
			m->val[k].value_case = ANY_INT;
			m->val[k].int_value = r->pid;
		} else {
			m->val[k].value_case = ANY_STR;
			m->val[k].string_value = e->p->strings[str];
		}
		m->kvp[m->res.n_attributes++] = &m->kv[k];
	}
	return 0;
}

/* One Profile per kind with samples in resource ri. */
static int resource_profiles(struct otlp_enc *e, uint32_t ri, struct res_msgs *m)
{
	const struct sp_profile *p = e->p;
	uint32_t kind;

	for (kind = 0; kind < SP_KIND__MAX; kind++) {
		size_t g = (size_t)ri * SP_KIND__MAX + kind;
		OT(Profile) *pr = &m->prof[m->sp.n_profiles];

		if (!e->groups.count[g])
			continue;
		ot_(profile__init)(pr);
		pr->time_unix_nano = p->time_unix_ns;
		pr->duration_nano = p->duration_ns;
		if (kind == SP_KIND_ONCPU) {
			pr->sample_type = &e->vt_samples;
		} else {
			if (!e->vt_offcpu.type_strindex) {
				int32_t t = sp_strtab__get(&e->st, "off_cpu");

				if (t < 0)
					return t;
				e->vt_offcpu.type_strindex = t;
				e->vt_offcpu.unit_strindex = e->vt_period.unit_strindex;
			}
			pr->sample_type = &e->vt_offcpu;
		}
		if (kind == SP_KIND_ONCPU || p->period_ns[kind]) {
			pr->period_type = &e->vt_period;
			pr->period = (int64_t)p->period_ns[kind];
		}
		pr->n_samples = e->groups.count[g];
		pr->samples = &e->groups.grouped[e->groups.off[g]];
		m->profp[m->sp.n_profiles++] = pr;
	}
	return 0;
}

/* One ResourceProfiles per resource, each with one ScopeProfiles.  The
 * extra strings are asked for resource by resource (its attribute keys,
 * then "off_cpu" at the first off-CPU Profile). */
static int enc_resources(struct otlp_enc *e)
{
	const struct sp_profile *p = e->p;
	struct res_msgs *msgs = NEW(e, p->n_resources, struct res_msgs);
	OT(ResourceProfiles) **rpp = NEW(e, p->n_resources, OT(ResourceProfiles) *);
	uint32_t i;
	int err;

	if (!msgs || !rpp)
		return -ENOMEM;
	for (i = 0; i < p->n_resources; i++) {
		struct res_msgs *m = &msgs[i];

		ot_(resource_profiles__init)(&m->rp);
		ot_(scope_profiles__init)(&m->sp);
		err = resource_attrs(e, &p->resources[i], m);
		if (err)
			return err;
		m->sp.scope = &e->scope;
		m->sp.profiles = m->profp;
		err = resource_profiles(e, i, m);
		if (err)
			return err;
		m->spp = &m->sp;
		m->rp.resource = &m->res;
		m->rp.n_scope_profiles = 1;
		m->rp.scope_profiles = &m->spp;
		rpp[i] = &m->rp;
	}
	e->req.n_resource_profiles = p->n_resources;
	e->req.resource_profiles = rpp;
	return 0;
}

/* ------------------------------------------------------------ last tables */

/* Every attribute is known once the tables above are written. */
static int enc_attribute_table(struct otlp_enc *e)
{
	uint32_t i, n = e->at.n ? e->at.n : 1;
	OT(KeyValueAndUnit) *kvus = NEW(e, n, OT(KeyValueAndUnit));
	OT(KeyValueAndUnit) **kvup = NEW(e, n, OT(KeyValueAndUnit) *);
	AnyValue *vals = NEW(e, n, AnyValue);

	if (!kvus || !kvup || !vals)
		return -ENOMEM;
	ot_(key_value_and_unit__init)(&kvus[0]);	/* the empty zero entry */
	kvup[0] = &kvus[0];
	for (i = 1; i < n; i++) {
		const struct attr *a = &e->at.v[i];

		ot_(key_value_and_unit__init)(&kvus[i]);
		kvup[i] = &kvus[i];
		opentelemetry__proto__common__v1__any_value__init(&vals[i]);
		kvus[i].key_strindex = a->key;
		kvus[i].value = &vals[i];
		if (a->is_int) {
			vals[i].value_case = ANY_INT;
			vals[i].int_value = a->num;
		} else {
			vals[i].value_case = ANY_STR;
			vals[i].string_value = (char *)sp_strtab__at(&e->st, (uint32_t)a->str);
		}
	}
	e->dict.n_attribute_table = n;
	e->dict.attribute_table = kvup;
	return 0;
}

/* Every extra string is known once every other table is written. */
static int enc_string_table(struct otlp_enc *e)
{
	e->dict.string_table = sp_strtab__array(&e->st, &e->arena);
	e->dict.n_string_table = sp_strtab__count(&e->st);
	return e->dict.string_table ? 0 : -ENOMEM;
}

/* In this order (see the header comment: the order is part of the format). */
static int (*const steps[])(struct otlp_enc *) = {
	enc_mappings, enc_functions, enc_locations, enc_links, enc_stacks,
	enc_value_types, enc_samples, enc_resources,
	enc_attribute_table, enc_string_table,
};

int sp_otlp__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len)
{
	struct otlp_enc e;
	size_t i;
	int err;

	err = sp_enc__begin(p, out, out_len);
	if (err)
		return err;
	memset(&e, 0, sizeof(e));
	e.p = p;
	sp_strtab__init(&e.st, p);
	otlp_request__init(&e.req);
	ot_(profiles_dictionary__init)(&e.dict);
	ot_(value_type__init)(&e.vt_samples);
	ot_(value_type__init)(&e.vt_offcpu);
	ot_(value_type__init)(&e.vt_period);
	opentelemetry__proto__common__v1__instrumentation_scope__init(&e.scope);
	e.req.dictionary = &e.dict;

	for (i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](&e);
	if (!err)
		err = sp_pb__pack(&e.req.base, out, out_len);
	sp_arena__free(&e.arena);
	free(e.at.v);
	sp_hidx__free(&e.at.idx);
	sp_strtab__free(&e.st);
	return err;
}
