/* SPDX-License-Identifier: MIT */
/*
 * otlp_encode.c - struct sp_profile -> OTLP Profiles v1development
 * (opentelemetry-proto v1.11.0) ExportProfilesServiceRequest.
 *
 * sp_otlp__encode validates the profile and writes one request; *out is a
 * malloc'd buffer the caller frees.
 *   - dictionary: one for the request.  Mapping/location/function/link/
 *     stack tables keep the model's indices (entry i is model entry i; the
 *     model deduplicates them on add), so every zero entry sits at [0]:
 *     link_table[0] = 16 + 8 zero bytes, attribute_table[0] = empty
 *     KeyValueAndUnit, empty stack, mapping, location and function.  The
 *     string table holds only the strings the request references, "" first,
 *     each once, in the order of first reference (sp_strtab): values the
 *     request carries inline (resource attributes, attribute values) are not
 *     repeated in it.  The attribute table is deduplicated.
 *   - attributes: keys are always key_strindex (never the plain key:
 *     collectors >= v0.148 blank those out); values are plain AnyValue
 *     string_value / int_value.  Mapping: process.executable.build_id.gnu
 *     (hex) when build_id != 0, process.executable.build_id.go instead when
 *     it is a Go build id (base/buildid.h).  Location (not the zero one):
 *     profile.frame.type = "native" | "kernel".  Sample: thread.id (int, when
 *     tid != 0), thread.name (when set), then each sp_label (string when str
 *     != 0, else int).  Resource (KeyValue with key_strindex): the entries of
 *     res_attrs[] below, each only when set.  What is the same for every
 *     sample of a process is on the Resource, of a file on the Mapping, of a
 *     frame on the Location; a Sample carries only the thread and the span.
 *   - one ResourceProfiles per resource (also for a resource without
 *     samples, so indices survive a round trip), one ScopeProfiles (scope
 *     name "spanprof"), and per sample kind present, in kind order:
 *       ONCPU  sample_type samples/count, period_type cpu/nanoseconds,
 *              period = period_ns[ONCPU];
 *       OFFCPU sample_type off_cpu/nanoseconds (period_type/period only when
 *              period_ns[OFFCPU] != 0), then, when any of its samples has no
 *              timestamps, a Profile off_cpu_waits/count with one Sample of
 *              the same stack, attributes and link per such sample, its value
 *              the number of waits (which nanoseconds alone do not say).
 *     Every Profile carries the profile's time_unix_nano and duration_nano.
 *   - samples: model samples with the same identity (resource, kind, stack,
 *     attribute set, link, and whether they carry timestamps) become one
 *     Sample (OTLP: "SHOULD be merged").  Values:
 *       compact (no timestamps): one value, the sum over the merged samples
 *         (ONCPU count, OFFCPU value_ns);
 *       with timestamps (n_timestamps == count): timestamps_unix_nano as
 *         given, merged samples' concatenated, and one value per timestamp
 *         (ONCPU 1 each; OFFCPU a sample's value_ns split evenly over its
 *         timestamps, the remainder on the last, so the sum is exact), as the
 *         reference eBPF profiler writes them.
 *
 * How: the encoder is a list of steps (steps[] at the end), one per table,
 * each filling its part of the protobuf-c message tree from the model.
 * Every message, pointer array and index array comes from one arena that is
 * freed once; the string table and the attribute table are deduplicating
 * builders (sp_strtab, struct attr_table), and samples are merged through a
 * hash index over their identity (struct sample_merge).  The order of the
 * steps is part of the wire format: strings and attribute entries are
 * numbered in the order the steps first ask for them, and
 * tests/unit/test_codec_golden.c pins the resulting bytes.  To change a
 * table, change its step.
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
#define N_PROFILES (SP_KIND__MAX + 1)	/* per resource: + off_cpu_waits */

/* One attribute-table entry: the key a wire string index, a string value
 * by content (model strings and literals alike). */
struct attr {
	int32_t key;
	bool is_int;
	const char *str;	/* NULL for ints */
	int64_t num;
};

/* The attribute table being built: [0] is the empty entry. */
struct attr_table {
	struct attr *v;
	uint32_t n, cap;
	struct sp_hidx idx;
};

/* Samples after merging.  Merged sample g stands for the model samples
 * whose identity equals that of model sample rep[g]; its attributes are
 * attrs[g * SAMPLE_ATTRS ..][0 .. n_attrs[g]). */
struct sample_merge {
	uint32_t n;
	uint32_t *rep;
	int32_t *attrs;
	uint8_t *n_attrs;
	uint32_t *of_sample;	/* model sample -> merged sample */
	struct sp_hidx idx;
};

/* Merged samples grouped by (resource, kind), index g = resource *
 * SP_KIND__MAX + kind: group g is grouped[off[g] .. off[g] + count[g]);
 * waits[off[g] .. off[g] + n_waits[g]) are the off_cpu_waits companions of
 * an OFFCPU group's samples without timestamps. */
struct sample_groups {
	OT(Sample) **grouped, **waits;
	uint32_t *count, *off, *n_waits;
};

struct otlp_enc {
	struct sp_enc b;		/* every wire struct below points into b.arena */
	struct attr_table at;
	struct sample_merge sm;
	OtRequest req;
	OT(ProfilesDictionary) dict;
	OT(ValueType) vt_samples, vt_offcpu, vt_waits, vt_period;
	Scope scope;
	struct sample_groups groups;	/* from enc_samples, for enc_resources */
};

#define NEW(e, n, T) ((T *)sp_arena__array(&(e)->b.arena, (size_t)(n), sizeof(T)))

/* ------------------------------------------------------------ builders */

struct attr_key {
	const struct attr_table *t;
	const struct attr *a;
};

static bool attr_eq(const void *ctx, int32_t v)
{
	const struct attr_key *k = ctx;
	const struct attr *a = &k->t->v[v], *b = k->a;

	return a->key == b->key && a->is_int == b->is_int && a->num == b->num &&
	       (a->str == b->str || (a->str && b->str && !strcmp(a->str, b->str)));
}

/* Attribute-table index of {key, value}; key is a C string, str the
 * value when !is_int.  >= 0 or a negative errno. */
static int32_t enc_attr(struct otlp_enc *e, const char *key, bool is_int,
			const char *str, int64_t num)
{
	struct attr_table *t = &e->at;
	struct attr a = { 0 };
	struct attr_key k = { t, &a };
	uint8_t img[21];
	uint64_t h;
	int32_t i;
	int err;

	i = sp_strtab__get(&e->b.st, key);
	if (i < 0)
		return i;
	a.key = i;
	a.is_int = is_int;
	a.str = is_int ? NULL : str;
	a.num = is_int ? num : 0;
	memcpy(img, &a.key, 4);
	img[4] = a.is_int;
	memcpy(img + 5, &a.num, 8);
	h = a.str ? sp_hash_bytes(a.str, strlen(a.str)) : 0;
	memcpy(img + 13, &h, 8);
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
	const struct sp_profile *p = e->b.p;
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
		om->filename_strindex = sp_strtab__ref(&e->b.st, m->filename);
		if (om->filename_strindex < 0)
			return om->filename_strindex;
		if (m->build_id) {
			/* a Go build id (a Go binary without a GNU one) has its
			 * own semantic-conventions attribute */
			const char *bid = p->strings[m->build_id];

			attrs[i] = enc_attr(e, sp_buildid__validate_go(bid)
						       ? SP_A_BUILD_ID_GNU : SP_A_BUILD_ID_GO,
					    false, bid, 0);
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
	const struct sp_profile *p = e->b.p;
	OT(Function) *funcs = NEW(e, p->n_functions, OT(Function));
	OT(Function) **funcp = NEW(e, p->n_functions, OT(Function) *);
	uint32_t i;

	if (!funcs || !funcp)
		return -ENOMEM;
	for (i = 0; i < p->n_functions; i++) {
		const struct sp_function *f = &p->functions[i];
		OT(Function) *of = &funcs[i];

		ot_(function__init)(of);
		if ((of->name_strindex = sp_strtab__ref(&e->b.st, f->name)) < 0)
			return of->name_strindex;
		if ((of->system_name_strindex = sp_strtab__ref(&e->b.st, f->system_name)) < 0)
			return of->system_name_strindex;
		if ((of->filename_strindex = sp_strtab__ref(&e->b.st, f->filename)) < 0)
			return of->filename_strindex;
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
	const struct sp_profile *p = e->b.p;
	OT(Location) *locs = NEW(e, p->n_locations, OT(Location));
	OT(Location) **locp = NEW(e, p->n_locations, OT(Location) *);
	int32_t *attrs = NEW(e, p->n_locations, int32_t);
	int32_t frame_type[2] = { 0, 0 };	/* attribute of "native", "kernel" */
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
				*v = enc_attr(e, SP_A_FRAME_TYPE, false,
					      kernel ? "kernel" : "native", 0);
			if (*v < 0)
				return *v;
			attrs[i] = *v;
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
	const struct sp_profile *p = e->b.p;
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
	const struct sp_profile *p = e->b.p;
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

/* samples/count and cpu/nanoseconds; off_cpu and off_cpu_waits are added
 * by enc_resources when the first off-CPU Profile is written. */
static int enc_value_types(struct otlp_enc *e)
{
	const struct { OT(ValueType) *vt; const char *type, *unit; } vts[] = {
		{ &e->vt_samples, "samples", "count" },
		{ &e->vt_period, "cpu", "nanoseconds" },
	};
	size_t i;

	for (i = 0; i < sizeof(vts) / sizeof(vts[0]); i++) {
		int32_t t = sp_strtab__get(&e->b.st, vts[i].type);
		int32_t u = t < 0 ? t : sp_strtab__get(&e->b.st, vts[i].unit);

		if (u < 0)
			return u;
		vts[i].vt->type_strindex = t;
		vts[i].vt->unit_strindex = u;
	}
	e->scope.name = "spanprof";
	return 0;
}

/* ------------------------------------------------------------ samples */

/* Sample attributes into ai (SAMPLE_ATTRS slots); returns how many, or a
 * negative errno. */
static int sample_attrs(struct otlp_enc *e, const struct sp_sample *s, int32_t *ai)
{
	const struct sp_profile *p = e->b.p;
	int32_t n = 0, r;
	uint32_t j;

	if (s->tid) {
		r = enc_attr(e, SP_A_THREAD_ID, true, NULL, s->tid);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	if (s->thread_name) {
		r = enc_attr(e, SP_A_THREAD_NAME, false, p->strings[s->thread_name], 0);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	for (j = 0; j < s->n_labels; j++) {
		const struct sp_label *l = &s->labels[j];

		r = enc_attr(e, p->strings[l->key], l->str == 0, p->strings[l->str], l->num);
		if (r < 0)
			return r;
		ai[n++] = r;
	}
	return n;
}

/* What makes two model samples one Sample. */
struct ident_key {
	const struct otlp_enc *e;
	const struct sp_sample *s;
	const int32_t *attrs;
	uint32_t n_attrs;
};

static bool same_ident(const void *ctx, int32_t g)
{
	const struct ident_key *k = ctx;
	const struct sample_merge *sm = &k->e->sm;
	const struct sp_sample *a = &k->e->b.p->samples[sm->rep[g]], *b = k->s;

	return a->resource == b->resource && a->kind == b->kind && a->stack == b->stack &&
	       a->link == b->link && !a->n_timestamps == !b->n_timestamps &&
	       sm->n_attrs[g] == k->n_attrs &&
	       !memcmp(&sm->attrs[(size_t)g * SAMPLE_ATTRS], k->attrs,
		       k->n_attrs * sizeof(*k->attrs));
}

static uint64_t ident_hash(const struct sp_sample *s, const int32_t *attrs, uint32_t n)
{
	int32_t img[5 + SAMPLE_ATTRS];

	img[0] = s->resource;
	img[1] = (int32_t)s->kind | (s->n_timestamps ? 0x100 : 0);
	img[2] = s->stack;
	img[3] = s->link;
	img[4] = (int32_t)n;
	memcpy(&img[5], attrs, n * sizeof(*attrs));
	return sp_hash_bytes(img, (5 + n) * sizeof(*img));
}

/* Assigns every model sample its merged sample (sm->of_sample), first
 * appearance first. */
static int merge_samples(struct otlp_enc *e)
{
	const struct sp_profile *p = e->b.p;
	struct sample_merge *sm = &e->sm;
	int32_t ai[SAMPLE_ATTRS];
	uint32_t i;

	sm->rep = NEW(e, p->n_samples, uint32_t);
	sm->attrs = NEW(e, (size_t)p->n_samples * SAMPLE_ATTRS, int32_t);
	sm->n_attrs = NEW(e, p->n_samples, uint8_t);
	sm->of_sample = NEW(e, p->n_samples, uint32_t);
	if (!sm->rep || !sm->attrs || !sm->n_attrs || !sm->of_sample)
		return -ENOMEM;
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		int n = sample_attrs(e, s, ai);
		struct ident_key k = { e, s, ai, 0 };
		uint64_t h;
		int32_t g;
		int err;

		if (n < 0)
			return n;
		k.n_attrs = (uint32_t)n;
		h = ident_hash(s, ai, k.n_attrs);
		g = sp_hidx__find(&sm->idx, h, same_ident, &k);
		if (g < 0) {
			g = (int32_t)sm->n;
			err = sp_hidx__insert(&sm->idx, h, g);
			if (err)
				return err;
			sm->rep[g] = i;
			sm->n_attrs[g] = (uint8_t)n;
			memcpy(&sm->attrs[(size_t)g * SAMPLE_ATTRS], ai, (size_t)n * sizeof(*ai));
			sm->n++;
		}
		sm->of_sample[i] = (uint32_t)g;
	}
	return 0;
}

/* Appends the values of one model sample with timestamps to v (see the
 * header comment). */
static void ts_values(const struct sp_sample *s, int64_t *v)
{
	uint32_t j;

	for (j = 0; j < s->n_timestamps; j++)
		v[j] = s->kind == SP_KIND_ONCPU ? 1 : s->value_ns / (int64_t)s->n_timestamps;
	if (s->kind != SP_KIND_ONCPU)
		v[j - 1] += s->value_ns % (int64_t)s->n_timestamps;
}

/* Merged samples and their values; the off_cpu_waits companions; the
 * grouping by (resource, kind) with a counting sort that keeps the order
 * of first appearance inside a group. */
static int enc_samples(struct otlp_enc *e)
{
	const struct sp_profile *p = e->b.p;
	size_t n_groups = (size_t)p->n_resources * SP_KIND__MAX, n_ts = 0;
	struct sample_merge *sm = &e->sm;
	struct sample_groups *g = &e->groups;
	OT(Sample) *samples, *waits;
	uint32_t *fill, *wfill, *n_vals, *vfill;
	int64_t *values, *wvalues;
	uint64_t *ts;
	size_t vi = 0, ti = 0;
	uint32_t i, j;
	int err;

	err = merge_samples(e);
	if (err)
		return err;
	samples = NEW(e, sm->n, OT(Sample));
	waits = NEW(e, sm->n, OT(Sample));
	wvalues = NEW(e, sm->n, int64_t);
	n_vals = NEW(e, sm->n, uint32_t);
	vfill = NEW(e, sm->n, uint32_t);
	fill = NEW(e, n_groups, uint32_t);
	wfill = NEW(e, n_groups, uint32_t);
	g->grouped = NEW(e, sm->n, OT(Sample) *);
	g->waits = NEW(e, sm->n, OT(Sample) *);
	g->count = NEW(e, n_groups, uint32_t);
	g->off = NEW(e, n_groups, uint32_t);
	g->n_waits = NEW(e, n_groups, uint32_t);
	if (!samples || !waits || !wvalues || !n_vals || !vfill || !fill || !wfill ||
	    !g->grouped || !g->waits || !g->count || !g->off || !g->n_waits)
		return -ENOMEM;
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];

		if (s->n_timestamps) {
			n_vals[sm->of_sample[i]] += s->n_timestamps;
			n_ts += s->n_timestamps;
		} else {
			n_vals[sm->of_sample[i]] = 1;
		}
	}
	values = NEW(e, sm->n + n_ts, int64_t);
	ts = NEW(e, n_ts, uint64_t);
	if (!values || !ts)
		return -ENOMEM;

	/* the Samples, their arrays carved from values/ts */
	for (i = 0; i < sm->n; i++) {
		const struct sp_sample *r = &p->samples[sm->rep[i]];
		size_t gi = (size_t)r->resource * SP_KIND__MAX + r->kind;
		OT(Sample) *os = &samples[i];

		ot_(sample__init)(os);
		os->stack_index = r->stack;
		os->link_index = r->link;
		os->n_attribute_indices = sm->n_attrs[i];
		os->attribute_indices = &sm->attrs[(size_t)i * SAMPLE_ATTRS];
		os->n_values = n_vals[i];
		os->values = &values[vi];
		vi += n_vals[i];
		if (r->n_timestamps) {
			os->n_timestamps_unix_nano = n_vals[i];
			os->timestamps_unix_nano = &ts[ti];
			ti += n_vals[i];
		}
		g->count[gi]++;
		if (r->kind == SP_KIND_OFFCPU && !r->n_timestamps)
			g->n_waits[gi]++;
	}
	/* the values, in model order */
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		uint32_t m = sm->of_sample[i];
		OT(Sample) *os = &samples[m];
		int64_t v = s->kind == SP_KIND_ONCPU ? s->count : s->value_ns;

		if (s->n_timestamps) {
			memcpy(&os->timestamps_unix_nano[vfill[m]], s->timestamps,
			       s->n_timestamps * sizeof(*s->timestamps));
			ts_values(s, &os->values[vfill[m]]);
			vfill[m] += s->n_timestamps;
		} else if (__builtin_add_overflow(os->values[0], v, &os->values[0]) ||
			   __builtin_add_overflow(wvalues[m], s->count, &wvalues[m])) {
			return -EOVERFLOW;
		}
	}
	for (i = 0, j = 0; i < n_groups; i++) {
		g->off[i] = j;
		j += g->count[i];
	}
	for (i = 0; i < sm->n; i++) {
		const struct sp_sample *r = &p->samples[sm->rep[i]];
		size_t gi = (size_t)r->resource * SP_KIND__MAX + r->kind;

		g->grouped[g->off[gi] + fill[gi]++] = &samples[i];
		if (r->kind == SP_KIND_OFFCPU && !r->n_timestamps) {
			OT(Sample) *w = &waits[i];

			*w = samples[i];	/* same stack, attributes, link */
			w->n_values = 1;
			w->values = &wvalues[i];
			g->waits[g->off[gi] + wfill[gi]++] = w;
		}
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
	KeyValue kv[RES_ATTRS + SP_RES_ATTRS_MAX], *kvp[RES_ATTRS + SP_RES_ATTRS_MAX];
	AnyValue val[RES_ATTRS + SP_RES_ATTRS_MAX];
	OT(Profile) prof[N_PROFILES], *profp[N_PROFILES];
};

/* The next attribute of m's resource, keyed key (interned): its value
 * to fill, or NULL (ENOMEM). */
static AnyValue *res_attr_add(struct otlp_enc *e, struct res_msgs *m, const char *key)
{
	size_t k = m->res.n_attributes;
	int32_t ki = sp_strtab__get(&e->b.st, key);

	if (ki < 0)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(&m->kv[k]);
	opentelemetry__proto__common__v1__any_value__init(&m->val[k]);
	m->kv[k].key_strindex = ki;
	m->kv[k].value = &m->val[k];
	m->kvp[m->res.n_attributes++] = &m->kv[k];
	return &m->val[k];
}

static int resource_attrs(struct otlp_enc *e, const struct sp_resource *r,
			  struct res_msgs *m)
{
	size_t j;

	opentelemetry__proto__resource__v1__resource__init(&m->res);
	m->res.attributes = m->kvp;
	for (j = 0; j < RES_ATTRS; j++) {
		const struct res_attr_def *d = &res_attrs[j];
		int32_t str = d->is_pid ? 0 : *(const int32_t *)((const char *)r + d->str_off);
		AnyValue *v;

		if (d->is_pid ? !r->pid : !str)
			continue;
		v = res_attr_add(e, m, d->key);
		if (!v)
			return -ENOMEM;
		if (d->is_pid) {
			v->value_case = ANY_INT;
			v->int_value = r->pid;
		} else {
			v->value_case = ANY_STR;
			v->string_value = e->b.p->strings[str];
		}
	}
	/* The extra attributes, as strings, after the fixed ones. */
	for (j = 0; j < r->n_attrs; j++) {
		AnyValue *v = res_attr_add(e, m, e->b.p->strings[r->attrs[j].key]);

		if (!v)
			return -ENOMEM;
		v->value_case = ANY_STR;
		v->string_value = e->b.p->strings[r->attrs[j].value];
	}
	return 0;
}

/* The value type of vt, its strings asked for on first use. */
static int lazy_value_type(struct otlp_enc *e, OT(ValueType) *vt, const char *type)
{
	int32_t t;

	if (vt->type_strindex)
		return 0;
	t = sp_strtab__get(&e->b.st, type);
	if (t < 0)
		return t;
	vt->type_strindex = t;
	vt->unit_strindex = vt == &e->vt_waits ? e->vt_samples.unit_strindex
					       : e->vt_period.unit_strindex;
	return 0;
}

/* A Profile of the resource's samples in m->prof, appended to its scope. */
static OT(Profile) *add_profile(const struct otlp_enc *e, struct res_msgs *m,
				OT(ValueType) *type, OT(Sample) **samples, uint32_t n)
{
	OT(Profile) *pr = &m->prof[m->sp.n_profiles];

	ot_(profile__init)(pr);
	pr->time_unix_nano = e->b.p->time_unix_ns;
	pr->duration_nano = e->b.p->duration_ns;
	pr->sample_type = type;
	pr->n_samples = n;
	pr->samples = samples;
	m->profp[m->sp.n_profiles++] = pr;
	return pr;
}

/* The Profiles of resource ri, in the order of the header comment. */
static int resource_profiles(struct otlp_enc *e, uint32_t ri, struct res_msgs *m)
{
	const struct sp_profile *p = e->b.p;
	const struct sample_groups *gr = &e->groups;
	uint32_t kind;
	int err;

	for (kind = 0; kind < SP_KIND__MAX; kind++) {
		size_t g = (size_t)ri * SP_KIND__MAX + kind;
		OT(Profile) *pr;

		if (!gr->count[g])
			continue;
		if (kind == SP_KIND_OFFCPU) {
			err = lazy_value_type(e, &e->vt_offcpu, "off_cpu");
			if (err)
				return err;
		}
		pr = add_profile(e, m, kind == SP_KIND_ONCPU ? &e->vt_samples : &e->vt_offcpu,
				 &gr->grouped[gr->off[g]], gr->count[g]);
		if (kind == SP_KIND_ONCPU || p->period_ns[kind]) {
			pr->period_type = &e->vt_period;
			pr->period = (int64_t)p->period_ns[kind];
		}
		if (!gr->n_waits[g])
			continue;
		err = lazy_value_type(e, &e->vt_waits, "off_cpu_waits");
		if (err)
			return err;
		add_profile(e, m, &e->vt_waits, &gr->waits[gr->off[g]], gr->n_waits[g]);
	}
	return 0;
}

/* One ResourceProfiles per resource, each with one ScopeProfiles.  The
 * extra strings are asked for resource by resource (its attribute keys,
 * then "off_cpu" and "off_cpu_waits" at the first off-CPU Profiles). */
static int enc_resources(struct otlp_enc *e)
{
	const struct sp_profile *p = e->b.p;
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
			vals[i].string_value = (char *)a->str;
		}
	}
	e->dict.n_attribute_table = n;
	e->dict.attribute_table = kvup;
	return 0;
}

/* Every string is known once every other table is written. */
static int enc_string_table(struct otlp_enc *e)
{
	return sp_enc__string_table(&e->b, &e->dict.string_table, &e->dict.n_string_table);
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

	memset(&e, 0, sizeof(e));
	err = sp_enc__begin(&e.b, p, out, out_len);
	if (err)
		return err;
	otlp_request__init(&e.req);
	ot_(profiles_dictionary__init)(&e.dict);
	ot_(value_type__init)(&e.vt_samples);
	ot_(value_type__init)(&e.vt_offcpu);
	ot_(value_type__init)(&e.vt_waits);
	ot_(value_type__init)(&e.vt_period);
	opentelemetry__proto__common__v1__instrumentation_scope__init(&e.scope);
	e.req.dictionary = &e.dict;

	for (i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](&e);
	err = sp_enc__end(&e.b, err, &e.req.base, out, out_len);
	free(e.at.v);
	sp_hidx__free(&e.at.idx);
	sp_hidx__free(&e.sm.idx);
	return err;
}
