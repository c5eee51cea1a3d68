/* SPDX-License-Identifier: MIT */
/*
 * otlp.c - struct sp_profile <-> OTLP Profiles v1development
 * (opentelemetry-proto v1.11.0) ExportProfilesServiceRequest.
 *
 * Encoder (sp_otlp__encode): validates the profile and writes one request;
 * *out is a malloc'd buffer the caller frees.
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
 *     (hex) when build_id != 0, or process.executable.build_id.go when
 *     build_id is a Go build id (base/go_buildid.h).  Location (not the zero one):
 *     profile.frame.type = "native" | "kernel".  Sample: thread.id (int, when
 *     tid != 0), thread.name (when set), then each sp_label (string when str
 *     != 0, else int).  Resource (KeyValue with key_strindex): service.name,
 *     process.pid, process.executable.path, process.executable.name,
 *     container.id, host.name, each only when set.
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
 * Decoder (sp_otlp__decode): untrusted input.  Input above
 * SP_DECODE_MAX_BYTES -> -E2BIG; protobuf-c unpacks within a byte budget;
 * tables and the total sample count are capped at SP_DECODE_MAX_ENTRIES
 * (-E2BIG); every index (string, attribute, mapping, function, location,
 * stack, link) is range-checked before use, negative ones included
 * (-EINVAL); link ids must be 0/16 and 0/8 bytes; a non-empty
 * string_table must start with "".  Profile kind: sample_type "off_cpu" ->
 * OFFCPU, anything else ONCPU.  Values back to the model:
 *   ONCPU:  count = sum(values), or the number of timestamps when there are
 *           no values; value_ns = count * period;
 *   OFFCPU: value_ns = sum(values); count = number of timestamps, else 1
 *           (a sample without timestamps does not say how many waits).
 * Timestamps are kept when their number equals count, dropped otherwise.
 * Unknown sample attributes become sp_labels (more than SP_MAX_LABELS ->
 * -E2BIG); time/duration come from the first Profile.  Equal samples are not
 * merged.  Lost on the way: mapping has_* flags (OTLP has none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/go_buildid.h"
#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/pbdepth.h"
#include "otlp_profiles_service.pb-c.h"

/* Deepest nesting accepted in a request: Request > ResourceProfiles >
 * Resource > KeyValue > AnyValue is 5; 32 leaves room for nested
 * attribute values and bounds protobuf-c's recursion. */
#define SP_OTLP_MAX_DEPTH 32

#define OT(x) Opentelemetry__Proto__Profiles__V1development__##x
#define ot_(x) opentelemetry__proto__profiles__v1development__##x
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest OtRequest;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;

#define ANY_STR OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE
#define ANY_BOOL OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE
#define ANY_STRIDX OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX

#define SAMPLE_ATTRS (2 + SP_MAX_LABELS)
#define RES_ATTRS 6

/* ================================================================ encode */

/* One attribute-table entry: key and value are string-table indices (the
 * value only for strings), so equal strings compare equal as indices. */
struct attr {
	int32_t key;
	bool is_int;
	int32_t str;
	int64_t num;
};

struct enc {
	const struct sp_profile *p;
	struct sp_strtab st;
	struct attr *attrs;	/* [0] = empty */
	uint32_t n_attrs, cap_attrs;
	struct sp_hidx attr_idx;
};

struct attr_key {
	const struct enc *e;
	const struct attr *a;
};

static bool attr_eq(const void *ctx, int32_t v)
{
	const struct attr_key *k = ctx;
	const struct attr *a = &k->e->attrs[v], *b = k->a;

	return a->key == b->key && a->is_int == b->is_int && a->str == b->str &&
	       a->num == b->num;
}

/* Attribute-table index of {key, value}; key is a C string. */
static int32_t enc_attr(struct enc *e, const char *key, bool is_int,
			int32_t str, int64_t num)
{
	struct attr a = { 0 };
	struct attr_key k = { e, &a };
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
	i = sp_hidx__find(&e->attr_idx, h, attr_eq, &k);
	if (i >= 0)
		return i;
	if (e->n_attrs == e->cap_attrs) {
		uint32_t ncap = e->cap_attrs ? e->cap_attrs * 2 : 64;
		struct attr *n;

		if (ncap > SP_TABLE_MAX)
			return -E2BIG;
		n = reallocarray(e->attrs, ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		e->attrs = n;
		e->cap_attrs = ncap;
	}
	i = (int32_t)e->n_attrs;
	err = sp_hidx__insert(&e->attr_idx, h, i);
	if (err)
		return err;
	e->attrs[e->n_attrs++] = a;
	return i;
}

#define TRY(x) ({ __typeof__(x) t_ = (x); if (t_ < 0) { err = (int)t_; goto out; } t_; })
#define ALLOC(ptr, n) do { (ptr) = calloc((size_t)(n) + 1, sizeof(*(ptr))); \
	if (!(ptr)) { err = -ENOMEM; goto out; } } while (0)

int sp_otlp__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len)
{
	OtRequest req = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	OT(ProfilesDictionary) dict = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	OT(ValueType) vt_samples = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	OT(ValueType) vt_offcpu = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	OT(ValueType) vt_period = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	Scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	OT(Mapping) *maps = NULL, **mapp = NULL;
	OT(Location) *locs = NULL, **locp = NULL;
	OT(Line) *lines = NULL, **linep = NULL;
	OT(Function) *funcs = NULL, **funcp = NULL;
	OT(Link) *links = NULL, **linkp = NULL;
	OT(Stack) *stacks = NULL, **stackp = NULL;
	OT(KeyValueAndUnit) *kvus = NULL, **kvup = NULL;
	AnyValue *kvu_vals = NULL;
	OT(ResourceProfiles) *rps = NULL, **rpp = NULL;
	OT(ScopeProfiles) *sps = NULL, **spp = NULL;
	OT(Profile) *profs = NULL, **profp = NULL;
	OT(Sample) *samples = NULL, **samplep = NULL;
	Resource *ress = NULL;
	KeyValue *rkvs = NULL, **rkvp = NULL;
	AnyValue *rvals = NULL;
	int32_t *map_attrs = NULL, *loc_attrs = NULL, *smp_attrs = NULL;
	int64_t *values = NULL;
	uint32_t *grp_count = NULL, *grp_off = NULL, *grp_fill = NULL;
	char **strtab = NULL;
	uint8_t *buf = NULL;
	struct enc e;
	size_t n_lines = 0, n_values = 0, li = 0, vi = 0, len;
	uint32_t i, j, n_str, n_prof = 0;
	int32_t v_native = 0, v_kernel = 0;
	int err;

	if (!out || !out_len)
		return -EINVAL;
	*out = NULL;
	*out_len = 0;
	err = sp_profile__validate(p);
	if (err)
		return err;
	memset(&e, 0, sizeof(e));
	e.p = p;
	sp_strtab__init(&e.st, p);
	/* attribute_table[0]: the empty entry */
	err = -ENOMEM;
	e.attrs = calloc(64, sizeof(*e.attrs));
	if (!e.attrs)
		goto out;
	e.cap_attrs = 64;
	e.n_attrs = 1;

	for (i = 1; i < p->n_locations; i++)
		n_lines += p->locations[i].n_lines;
	for (i = 0; i < p->n_samples; i++)
		n_values += p->samples[i].n_timestamps ? p->samples[i].n_timestamps : 1;

	ALLOC(maps, p->n_mappings);
	ALLOC(mapp, p->n_mappings);
	ALLOC(map_attrs, p->n_mappings);
	ALLOC(locs, p->n_locations);
	ALLOC(locp, p->n_locations);
	ALLOC(loc_attrs, p->n_locations);
	ALLOC(lines, n_lines);
	ALLOC(linep, n_lines);
	ALLOC(funcs, p->n_functions);
	ALLOC(funcp, p->n_functions);
	ALLOC(links, p->n_links);
	ALLOC(linkp, p->n_links);
	ALLOC(stacks, p->n_stacks);
	ALLOC(stackp, p->n_stacks);
	ALLOC(rps, p->n_resources);
	ALLOC(rpp, p->n_resources);
	ALLOC(sps, p->n_resources);
	ALLOC(spp, p->n_resources);
	ALLOC(ress, p->n_resources);
	ALLOC(rkvs, (size_t)p->n_resources * RES_ATTRS);
	ALLOC(rkvp, (size_t)p->n_resources * RES_ATTRS);
	ALLOC(rvals, (size_t)p->n_resources * RES_ATTRS);
	ALLOC(profs, (size_t)p->n_resources * SP_KIND__MAX);
	ALLOC(profp, (size_t)p->n_resources * SP_KIND__MAX);
	ALLOC(samples, p->n_samples);
	ALLOC(samplep, p->n_samples);
	ALLOC(smp_attrs, (size_t)p->n_samples * SAMPLE_ATTRS);
	ALLOC(values, n_values);
	ALLOC(grp_count, (size_t)p->n_resources * SP_KIND__MAX);
	ALLOC(grp_off, (size_t)p->n_resources * SP_KIND__MAX);
	ALLOC(grp_fill, (size_t)p->n_resources * SP_KIND__MAX);

	/* ---- dictionary: mappings */
	for (i = 0; i < p->n_mappings; i++) {
		const struct sp_mapping *m = &p->mappings[i];
		OT(Mapping) *om = &maps[i];

		ot_(mapping__init)(om);
		om->memory_start = m->memory_start;
		om->memory_limit = m->memory_limit;
		om->file_offset = m->file_offset;
		om->filename_strindex = m->filename;
		if (m->build_id) {
			map_attrs[i] = TRY(enc_attr(&e, sp_go_buildid__valid(p->strings[m->build_id])
							    ? SP_A_BUILD_ID_GO : SP_A_BUILD_ID_GNU,
						    false, m->build_id, 0));
			om->n_attribute_indices = 1;
			om->attribute_indices = &map_attrs[i];
		}
		mapp[i] = om;
	}

	/* ---- functions */
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

	/* ---- locations (entry 0 stays empty: no frame type) */
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
			int32_t *v = l->frame_kind == SP_FRAME_KERNEL ? &v_kernel : &v_native;

			if (!*v)
				*v = TRY(sp_strtab__get(&e.st,
					l->frame_kind == SP_FRAME_KERNEL ? "kernel" : "native"));
			loc_attrs[i] = TRY(enc_attr(&e, SP_A_FRAME_TYPE, false, *v, 0));
			ol->n_attribute_indices = 1;
			ol->attribute_indices = &loc_attrs[i];
		}
		locp[i] = ol;
	}

	/* ---- links: [0] is written as 16 + 8 zero bytes, like every link */
	for (i = 0; i < p->n_links; i++) {
		ot_(link__init)(&links[i]);
		links[i].trace_id.len = 16;
		links[i].trace_id.data = (uint8_t *)p->links[i].trace_id;
		links[i].span_id.len = 8;
		links[i].span_id.data = (uint8_t *)p->links[i].span_id;
		linkp[i] = &links[i];
	}

	/* ---- stacks: location indices are the model's, borrowed */
	for (i = 0; i < p->n_stacks; i++) {
		ot_(stack__init)(&stacks[i]);
		stacks[i].n_location_indices = p->stack_len[i];
		stacks[i].location_indices = p->stack_len[i] ?
			&p->stack_locs[p->stack_off[i]] : NULL;
		stackp[i] = &stacks[i];
	}

	/* ---- value types, scope */
	vt_samples.type_strindex = TRY(sp_strtab__get(&e.st, "samples"));
	vt_samples.unit_strindex = TRY(sp_strtab__get(&e.st, "count"));
	vt_period.type_strindex = TRY(sp_strtab__get(&e.st, "cpu"));
	vt_period.unit_strindex = TRY(sp_strtab__get(&e.st, "nanoseconds"));
	scope.name = "spanprof";

	/* ---- samples grouped by (resource, kind): counting sort */
	for (i = 0; i < p->n_samples; i++)
		grp_count[(size_t)p->samples[i].resource * SP_KIND__MAX + p->samples[i].kind]++;
	for (i = 0, j = 0; i < p->n_resources * SP_KIND__MAX; i++) {
		grp_off[i] = j;
		j += grp_count[i];
	}
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		size_t g = (size_t)s->resource * SP_KIND__MAX + s->kind;
		OT(Sample) *os = &samples[i];
		int32_t *ai = &smp_attrs[(size_t)i * SAMPLE_ATTRS];

		ot_(sample__init)(os);
		os->stack_index = s->stack;
		os->link_index = s->link;
		os->attribute_indices = ai;
		if (s->tid)
			ai[os->n_attribute_indices++] =
				TRY(enc_attr(&e, SP_A_THREAD_ID, true, 0, s->tid));
		if (s->thread_name)
			ai[os->n_attribute_indices++] =
				TRY(enc_attr(&e, SP_A_THREAD_NAME, false, s->thread_name, 0));
		for (j = 0; j < s->n_labels; j++)
			ai[os->n_attribute_indices++] =
				TRY(enc_attr(&e, p->strings[s->labels[j].key],
					     s->labels[j].str == 0, s->labels[j].str,
					     s->labels[j].num));
		os->values = &values[vi];
		if (s->n_timestamps) {
			os->n_timestamps_unix_nano = s->n_timestamps;
			os->timestamps_unix_nano = s->timestamps;
			os->n_values = s->n_timestamps;
			for (j = 0; j < s->n_timestamps; j++)
				values[vi + j] = s->kind == SP_KIND_ONCPU ? 1 :
					s->value_ns / (int64_t)s->n_timestamps;
			if (s->kind != SP_KIND_ONCPU)
				values[vi + j - 1] += s->value_ns % (int64_t)s->n_timestamps;
		} else {
			os->n_values = 1;
			values[vi] = s->kind == SP_KIND_ONCPU ? s->count : s->value_ns;
		}
		vi += os->n_values;
		samplep[grp_off[g] + grp_fill[g]++] = os;
	}

	/* ---- resources */
	for (i = 0; i < p->n_resources; i++) {
		const struct sp_resource *r = &p->resources[i];
		OT(ResourceProfiles) *rp = &rps[i];
		OT(ScopeProfiles) *sp = &sps[i];
		Resource *res = &ress[i];
		KeyValue **kvp = &rkvp[(size_t)i * RES_ATTRS];
		const struct { const char *key; int32_t str; } strs[] = {
			{ SP_K_SERVICE_NAME, r->service_name },
			{ SP_A_EXE_PATH, r->exe_path },
			{ SP_A_EXE_NAME, r->exe_name },
			{ SP_A_CONTAINER_ID, r->container_id },
			{ SP_A_HOST_NAME, r->host_name },
		};
		uint32_t first = n_prof, kind;

		ot_(resource_profiles__init)(rp);
		ot_(scope_profiles__init)(sp);
		opentelemetry__proto__resource__v1__resource__init(res);
		res->attributes = kvp;
#define RKV(keystr) ({ size_t x_ = (size_t)i * RES_ATTRS + res->n_attributes; \
		opentelemetry__proto__common__v1__key_value__init(&rkvs[x_]); \
		opentelemetry__proto__common__v1__any_value__init(&rvals[x_]); \
		rkvs[x_].key_strindex = TRY(sp_strtab__get(&e.st, (keystr))); \
		rkvs[x_].value = &rvals[x_]; kvp[res->n_attributes++] = &rkvs[x_]; \
		&rvals[x_]; })
		for (j = 0; j < 5; j++) {
			if (j == 1 && r->pid) {
				AnyValue *v = RKV(SP_A_PROCESS_PID);

				v->value_case = ANY_INT;
				v->int_value = r->pid;
			}
			if (strs[j].str) {
				AnyValue *v = RKV(strs[j].key);

				v->value_case = ANY_STR;
				v->string_value = p->strings[strs[j].str];
			}
		}
#undef RKV
		rp->resource = res;
		sp->scope = &scope;
		for (kind = 0; kind < SP_KIND__MAX; kind++) {
			size_t g = (size_t)i * SP_KIND__MAX + kind;
			OT(Profile) *pr;

			if (!grp_count[g])
				continue;
			pr = &profs[n_prof];
			ot_(profile__init)(pr);
			pr->time_unix_nano = p->time_unix_ns;
			pr->duration_nano = p->duration_ns;
			if (kind == SP_KIND_ONCPU) {
				pr->sample_type = &vt_samples;
			} else {
				if (!vt_offcpu.type_strindex) {
					vt_offcpu.type_strindex = TRY(sp_strtab__get(&e.st, "off_cpu"));
					vt_offcpu.unit_strindex = vt_period.unit_strindex;
				}
				pr->sample_type = &vt_offcpu;
			}
			if (kind == SP_KIND_ONCPU || p->period_ns[kind]) {
				pr->period_type = &vt_period;
				pr->period = (int64_t)p->period_ns[kind];
			}
			pr->n_samples = grp_count[g];
			pr->samples = &samplep[grp_off[g]];
			profp[n_prof++] = pr;
		}
		sp->n_profiles = n_prof - first;
		sp->profiles = &profp[first];
		spp[i] = sp;
		rp->n_scope_profiles = 1;
		rp->scope_profiles = &spp[i];
		rpp[i] = rp;
	}

	/* ---- attribute table (all attributes are known now) */
	ALLOC(kvus, e.n_attrs);
	ALLOC(kvup, e.n_attrs);
	ALLOC(kvu_vals, e.n_attrs);
	for (i = 0; i < e.n_attrs; i++) {
		ot_(key_value_and_unit__init)(&kvus[i]);
		kvup[i] = &kvus[i];
		if (!i)
			continue;	/* the empty zero entry */
		opentelemetry__proto__common__v1__any_value__init(&kvu_vals[i]);
		kvus[i].key_strindex = e.attrs[i].key;
		kvus[i].value = &kvu_vals[i];
		if (e.attrs[i].is_int) {
			kvu_vals[i].value_case = ANY_INT;
			kvu_vals[i].int_value = e.attrs[i].num;
		} else {
			kvu_vals[i].value_case = ANY_STR;
			kvu_vals[i].string_value = (char *)sp_strtab__at(&e.st,
							(uint32_t)e.attrs[i].str);
		}
	}

	/* ---- string table last */
	n_str = sp_strtab__count(&e.st);
	ALLOC(strtab, n_str);
	for (i = 0; i < n_str; i++)
		strtab[i] = (char *)sp_strtab__at(&e.st, i);

	dict.n_mapping_table = p->n_mappings;
	dict.mapping_table = mapp;
	dict.n_location_table = p->n_locations;
	dict.location_table = locp;
	dict.n_function_table = p->n_functions;
	dict.function_table = funcp;
	dict.n_link_table = p->n_links;
	dict.link_table = linkp;
	dict.n_string_table = n_str;
	dict.string_table = strtab;
	dict.n_attribute_table = e.n_attrs;
	dict.attribute_table = kvup;
	dict.n_stack_table = p->n_stacks;
	dict.stack_table = stackp;
	req.n_resource_profiles = p->n_resources;
	req.resource_profiles = rpp;
	req.dictionary = &dict;

	len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, buf) != len) {
		err = -EIO;
		goto out;
	}
	*out = buf;
	*out_len = len;
	buf = NULL;
	err = 0;
out:
	free(buf);
	free(strtab);
	free(maps); free(mapp); free(map_attrs);
	free(locs); free(locp); free(loc_attrs);
	free(lines); free(linep);
	free(funcs); free(funcp);
	free(links); free(linkp);
	free(stacks); free(stackp);
	free(kvus); free(kvup); free(kvu_vals);
	free(rps); free(rpp); free(sps); free(spp);
	free(ress); free(rkvs); free(rkvp); free(rvals);
	free(profs); free(profp);
	free(samples); free(samplep); free(smp_attrs);
	free(values);
	free(grp_count); free(grp_off); free(grp_fill);
	free(e.attrs);
	sp_hidx__free(&e.attr_idx);
	sp_strtab__free(&e.st);
	return err;
}

/* ================================================================ decode */

struct dec {
	const OT(ProfilesDictionary) *d;	/* never NULL (empty if absent) */
	struct sp_profile *p;
	int32_t *smap, *fmap, *mmap, *lmap, *kmap, *stmap;
	uint64_t n_samples;
	bool have_time;
};

/* Table index check: 0 is always allowed ("unset") even in an empty table. */
static bool idx_ok(int32_t i, size_t n)
{
	return i == 0 || (i > 0 && (size_t)i < n);
}

/* OTLP string index -> model string index */
static int32_t dstr(const struct dec *d, int32_t i)
{
	if (!idx_ok(i, d->d->n_string_table))
		return -EINVAL;
	return i ? d->smap[i] : 0;
}

/* Resolves attribute idx into key (model string) and value.  *str is the
 * model string index for string values (0 otherwise); is_int and num
 * carry ints and bools.  Returns 0, or 1 for an empty entry / unsupported value
 * type (skipped), or -EINVAL. */
static int dattr(const struct dec *d, int32_t idx, int32_t *key, int32_t *str,
		 bool *is_int, int64_t *num)
{
	const OT(KeyValueAndUnit) *kv;
	const AnyValue *v;

	if (!idx_ok(idx, d->d->n_attribute_table))
		return -EINVAL;
	if (!idx)
		return 1;
	kv = d->d->attribute_table[idx];
	*key = dstr(d, kv->key_strindex);
	if (*key < 0 || !idx_ok(kv->unit_strindex, d->d->n_string_table))
		return -EINVAL;
	*str = 0;
	*is_int = false;
	*num = 0;
	v = kv->value;
	if (!v || !*key)
		return 1;
	switch (v->value_case) {
	case ANY_STR:
		*str = sp_profile__intern(d->p, v->string_value ? v->string_value : "");
		return *str < 0 ? *str : 0;
	case ANY_STRIDX:
		*str = dstr(d, v->string_value_strindex);
		return *str < 0 ? *str : 0;
	case ANY_INT:
		*is_int = true;
		*num = v->int_value;
		return 0;
	case ANY_BOOL:
		*is_int = true;
		*num = !!v->bool_value;
		return 0;
	default:
		return 1;
	}
}

static int dec_dict(struct dec *d)
{
	const OT(ProfilesDictionary) *t = d->d;
	struct sp_profile *p = d->p;
	size_t i, j;
	int32_t r;

	if (t->n_string_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_attribute_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_function_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_mapping_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_location_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_link_table > SP_DECODE_MAX_ENTRIES ||
	    t->n_stack_table > SP_DECODE_MAX_ENTRIES)
		return -E2BIG;
	if (t->n_string_table && (!t->string_table[0] || t->string_table[0][0]))
		return -EINVAL;
	d->smap = calloc(t->n_string_table + 1, sizeof(int32_t));
	d->fmap = calloc(t->n_function_table + 1, sizeof(int32_t));
	d->mmap = calloc(t->n_mapping_table + 1, sizeof(int32_t));
	d->lmap = calloc(t->n_location_table + 1, sizeof(int32_t));
	d->kmap = calloc(t->n_link_table + 1, sizeof(int32_t));
	d->stmap = calloc(t->n_stack_table + 1, sizeof(int32_t));
	if (!d->smap || !d->fmap || !d->mmap || !d->lmap || !d->kmap || !d->stmap)
		return -ENOMEM;

	for (i = 0; i < t->n_string_table; i++) {
		r = sp_profile__intern(p, t->string_table[i] ? t->string_table[i] : "");
		if (r < 0)
			return r;
		d->smap[i] = r;
	}
	/* every attribute entry must be well-formed even if unreferenced */
	for (i = 0; i < t->n_attribute_table; i++) {
		int32_t key, str;
		bool is_int;
		int64_t num;

		if (!idx_ok(d->d->attribute_table[i]->key_strindex, t->n_string_table))
			return -EINVAL;	/* [0] included, though never read */
		r = dattr(d, (int32_t)i, &key, &str, &is_int, &num);
		if (r < 0)
			return r;
	}
	for (i = 0; i < t->n_function_table; i++) {
		const OT(Function) *f = t->function_table[i];
		struct sp_function sf = { 0 };

		if ((sf.name = dstr(d, f->name_strindex)) < 0 ||
		    (sf.system_name = dstr(d, f->system_name_strindex)) < 0 ||
		    (sf.filename = dstr(d, f->filename_strindex)) < 0)
			return -EINVAL;
		sf.start_line = f->start_line;
		r = sp_profile__add_function(p, &sf);
		if (r < 0)
			return r;
		d->fmap[i] = r;
	}
	for (i = 0; i < t->n_mapping_table; i++) {
		const OT(Mapping) *m = t->mapping_table[i];
		struct sp_mapping sm = { 0 };

		sm.memory_start = m->memory_start;
		sm.memory_limit = m->memory_limit;
		sm.file_offset = m->file_offset;
		if ((sm.filename = dstr(d, m->filename_strindex)) < 0)
			return -EINVAL;
		for (j = 0; j < m->n_attribute_indices; j++) {
			int32_t key, str;
			bool is_int;
			int64_t num;

			r = dattr(d, m->attribute_indices[j], &key, &str, &is_int, &num);
			if (r < 0)
				return r;
			/* a GNU id wins over a Go one (cgo binaries have both) */
			if (!r && !is_int && !strcmp(p->strings[key], SP_A_BUILD_ID_GNU))
				sm.build_id = str;
			else if (!r && !is_int && !strcmp(p->strings[key], SP_A_BUILD_ID_GO) &&
				 !sm.build_id)
				sm.build_id = str;
		}
		r = sp_profile__add_mapping(p, &sm);
		if (r < 0)
			return r;
		d->mmap[i] = r;
	}
	for (i = 0; i < t->n_location_table; i++) {
		const OT(Location) *l = t->location_table[i];
		struct sp_location sl;

		memset(&sl, 0, sizeof(sl));
		if (!idx_ok(l->mapping_index, t->n_mapping_table))
			return -EINVAL;
		sl.mapping = l->mapping_index ? d->mmap[l->mapping_index] : 0;
		sl.address = l->address;
		if (l->n_lines > SP_MAX_INLINE)
			return -E2BIG;
		for (j = 0; j < l->n_lines; j++) {
			int32_t fi = l->lines[j]->function_index;

			if (!idx_ok(fi, t->n_function_table))
				return -EINVAL;
			sl.lines[j].function = fi ? d->fmap[fi] : 0;
			sl.lines[j].line = l->lines[j]->line;
			sl.lines[j].column = l->lines[j]->column;
		}
		sl.n_lines = (uint8_t)l->n_lines;
		for (j = 0; j < l->n_attribute_indices; j++) {
			int32_t key, str;
			bool is_int;
			int64_t num;

			r = dattr(d, l->attribute_indices[j], &key, &str, &is_int, &num);
			if (r < 0)
				return r;
			if (!r && !is_int && !strcmp(p->strings[key], SP_A_FRAME_TYPE) &&
			    !strcmp(p->strings[str], "kernel"))
				sl.frame_kind = SP_FRAME_KERNEL;
		}
		r = sp_profile__add_location(p, &sl);
		if (r < 0)
			return r;
		d->lmap[i] = r;
	}
	for (i = 0; i < t->n_link_table; i++) {
		const OT(Link) *k = t->link_table[i];
		static const uint8_t zero[16];

		if ((k->trace_id.len != 0 && k->trace_id.len != 16) ||
		    (k->span_id.len != 0 && k->span_id.len != 8))
			return -EINVAL;
		r = sp_profile__add_link(p, k->trace_id.len ? k->trace_id.data : zero,
					 k->span_id.len ? k->span_id.data : zero);
		if (r < 0)
			return r;
		d->kmap[i] = r;
	}
	for (i = 0; i < t->n_stack_table; i++) {
		const OT(Stack) *s = t->stack_table[i];
		int32_t *locs;

		if (s->n_location_indices > SP_DECODE_MAX_ENTRIES)
			return -E2BIG;
		locs = malloc((s->n_location_indices + 1) * sizeof(*locs));
		if (!locs)
			return -ENOMEM;
		for (j = 0; j < s->n_location_indices; j++) {
			int32_t li = s->location_indices[j];

			if (!idx_ok(li, t->n_location_table)) {
				free(locs);
				return -EINVAL;
			}
			locs[j] = li ? d->lmap[li] : 0;
		}
		r = sp_profile__add_stack(p, locs, (uint32_t)s->n_location_indices);
		free(locs);
		if (r < 0)
			return r;
		d->stmap[i] = r;
	}
	return 0;
}

static int dec_resource(struct dec *d, const Resource *res, int32_t *out)
{
	struct sp_resource r = { 0 };
	size_t i;

	for (i = 0; res && i < res->n_attributes; i++) {
		const KeyValue *kv = res->attributes[i];
		const AnyValue *v = kv->value;
		const char *key;
		int32_t str = 0, k;

		if (kv->key && kv->key[0]) {
			key = kv->key;
		} else {
			k = dstr(d, kv->key_strindex);
			if (k < 0)
				return k;
			key = d->p->strings[k];
		}
		if (!v)
			continue;
		if (v->value_case == ANY_INT) {
			if (!strcmp(key, SP_A_PROCESS_PID))
				r.pid = v->int_value;
			continue;
		}
		if (v->value_case == ANY_STR)
			str = sp_profile__intern(d->p, v->string_value ? v->string_value : "");
		else if (v->value_case == ANY_STRIDX)
			str = dstr(d, v->string_value_strindex);
		else
			continue;
		if (str < 0)
			return str;
		/* key stays valid: each string is its own allocation */
		if (!strcmp(key, SP_K_SERVICE_NAME))
			r.service_name = str;
		else if (!strcmp(key, SP_A_EXE_PATH))
			r.exe_path = str;
		else if (!strcmp(key, SP_A_EXE_NAME))
			r.exe_name = str;
		else if (!strcmp(key, SP_A_CONTAINER_ID))
			r.container_id = str;
		else if (!strcmp(key, SP_A_HOST_NAME))
			r.host_name = str;
	}
	*out = sp_profile__add_resource(d->p, &r);
	return *out < 0 ? *out : 0;
}

static int dec_sample(struct dec *d, const OT(Sample) *os, int32_t resource,
		      enum sp_sample_kind kind, uint64_t period)
{
	struct sp_profile *p = d->p;
	struct sp_sample s;
	int64_t sum = 0;
	size_t j;
	int r;

	memset(&s, 0, sizeof(s));
	s.resource = resource;
	s.kind = kind;
	if (!idx_ok(os->stack_index, d->d->n_stack_table) ||
	    !idx_ok(os->link_index, d->d->n_link_table))
		return -EINVAL;
	s.stack = os->stack_index ? d->stmap[os->stack_index] : 0;
	s.link = os->link_index ? d->kmap[os->link_index] : 0;
	for (j = 0; j < os->n_attribute_indices; j++) {
		int32_t key, str;
		bool is_int;
		int64_t num;
		const char *ks;

		r = dattr(d, os->attribute_indices[j], &key, &str, &is_int, &num);
		if (r < 0)
			return r;
		if (r)
			continue;
		ks = p->strings[key];
		if (is_int && !strcmp(ks, SP_A_THREAD_ID)) {
			s.tid = num;
		} else if (!is_int && !strcmp(ks, SP_A_THREAD_NAME)) {
			s.thread_name = str;
		} else {
			if (s.n_labels >= SP_MAX_LABELS)
				return -E2BIG;
			s.labels[s.n_labels].key = key;
			s.labels[s.n_labels].str = str;
			s.labels[s.n_labels].num = num;
			s.n_labels++;
		}
	}
	if (os->n_values && os->n_timestamps_unix_nano &&
	    os->n_values != os->n_timestamps_unix_nano)
		return -EINVAL;
	if (os->n_timestamps_unix_nano > UINT32_MAX)
		return -E2BIG;
	for (j = 0; j < os->n_values; j++)
		if (__builtin_add_overflow(sum, os->values[j], &sum))
			return -EINVAL;
	if (kind == SP_KIND_ONCPU) {
		s.count = os->n_values ? sum : (int64_t)os->n_timestamps_unix_nano;
		if (__builtin_mul_overflow(s.count, (int64_t)period, &s.value_ns))
			return -EINVAL;
	} else {
		s.value_ns = sum;
		s.count = os->n_timestamps_unix_nano ?
			  (int64_t)os->n_timestamps_unix_nano : 1;
	}
	if (os->n_timestamps_unix_nano &&
	    (uint64_t)s.count == os->n_timestamps_unix_nano) {
		s.n_timestamps = (uint32_t)os->n_timestamps_unix_nano;
		s.timestamps = os->timestamps_unix_nano;	/* copied by add */
	}
	r = sp_profile__add_sample(p, &s);
	return r < 0 ? r : 0;
}

static int dec_profiles(struct dec *d, const OtRequest *req)
{
	struct sp_profile *p = d->p;
	size_t i, j, k, m;
	int err;

	for (i = 0; i < req->n_resource_profiles; i++) {
		const OT(ResourceProfiles) *rp = req->resource_profiles[i];
		int32_t resource;

		err = dec_resource(d, rp->resource, &resource);
		if (err)
			return err;
		for (j = 0; j < rp->n_scope_profiles; j++) {
			const OT(ScopeProfiles) *sp = rp->scope_profiles[j];

			for (k = 0; k < sp->n_profiles; k++) {
				const OT(Profile) *pr = sp->profiles[k];
				enum sp_sample_kind kind = SP_KIND_ONCPU;
				uint64_t period = pr->period > 0 ? (uint64_t)pr->period : 0;

				if (pr->sample_type) {
					int32_t t = dstr(d, pr->sample_type->type_strindex);

					if (t < 0 || dstr(d, pr->sample_type->unit_strindex) < 0)
						return -EINVAL;
					if (!strcmp(p->strings[t], "off_cpu"))
						kind = SP_KIND_OFFCPU;
				}
				if (pr->period_type &&
				    (dstr(d, pr->period_type->type_strindex) < 0 ||
				     dstr(d, pr->period_type->unit_strindex) < 0))
					return -EINVAL;
				if (period)
					p->period_ns[kind] = period;
				if (!d->have_time) {
					p->time_unix_ns = pr->time_unix_nano;
					p->duration_ns = pr->duration_nano;
					d->have_time = true;
				}
				d->n_samples += pr->n_samples;
				if (d->n_samples > SP_DECODE_MAX_ENTRIES)
					return -E2BIG;
				for (m = 0; m < pr->n_samples; m++) {
					err = dec_sample(d, pr->samples[m], resource,
							 kind, period);
					if (err)
						return err;
				}
			}
		}
	}
	return 0;
}

int sp_otlp__decode(const uint8_t *buf, size_t len, struct sp_profile **out)
{
	static const OT(ProfilesDictionary) empty =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	struct sp_pballoc alloc;
	OtRequest *req;
	struct dec d;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!buf && len)
		return -EINVAL;
	if (len > SP_DECODE_MAX_BYTES)
		return -E2BIG;
	/* protobuf-c recurses once per nested AnyValue, without a limit. */
	if (sp_pb__check_depth(buf, len, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
			       sp_pb_otlp_request_n_edges, SP_OTLP_MAX_DEPTH))
		return -EINVAL;
	sp_pballoc__init(&alloc, len);
	req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		&alloc.a, len, buf);
	if (!req)
		return alloc.exhausted ? -E2BIG : -EINVAL;
	memset(&d, 0, sizeof(d));
	d.d = req->dictionary ? req->dictionary : &empty;
	err = -ENOMEM;
	d.p = sp_profile__new();
	if (!d.p)
		goto out;
	err = -E2BIG;
	if (req->n_resource_profiles > SP_DECODE_MAX_ENTRIES)
		goto out;
	err = dec_dict(&d);
	if (err)
		goto out;
	err = dec_profiles(&d, req);
	if (err)
		goto out;
	err = sp_profile__validate(d.p);
	if (err)
		goto out;
	*out = d.p;
	d.p = NULL;
out:
	sp_profile__free(d.p);
	free(d.smap);
	free(d.fmap);
	free(d.mmap);
	free(d.lmap);
	free(d.kmap);
	free(d.stmap);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		req, &alloc.a);
	return err;
}
