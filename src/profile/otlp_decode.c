/* SPDX-License-Identifier: MIT */
/*
 * otlp_decode.c - OTLP Profiles v1development (opentelemetry-proto v1.11.0)
 * ExportProfilesServiceRequest -> struct sp_profile.  The encoder is
 * otlp_encode.c.
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

#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/pbdepth.h"
#include "profile/otlp_pb.h"

/* Deepest nesting accepted in a request: Request > ResourceProfiles >
 * Resource > KeyValue > AnyValue is 5; 32 leaves room for nested
 * attribute values and bounds protobuf-c's recursion. */
#define SP_OTLP_MAX_DEPTH 32

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
	req = otlp_request__unpack(&alloc.a, len, buf);
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
	otlp_request__free_unpacked(req, &alloc.a);
	return err;
}
