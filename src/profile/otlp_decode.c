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
 * OFFCPU, "off_cpu_waits" -> the wait counts of OFFCPU samples (below),
 * anything else ONCPU.  Values back to the model:
 *   ONCPU:  count = sum(values), or the number of timestamps when there are
 *           no values; value_ns = count * period;
 *   OFFCPU: value_ns = sum(values); count = number of timestamps, else the
 *           sum of the values of the off_cpu_waits Samples of the same
 *           resource with the same stack, attributes and link, else 1 (a
 *           sample without timestamps or waits does not say how many); a
 *           waits Sample matching no off_cpu Sample becomes an OFFCPU sample
 *           of 0 ns with that count.  Wait counts below 0 -> -EINVAL.
 * Timestamps are kept when their number equals count, dropped otherwise.
 * Unknown sample attributes become sp_labels (more than SP_MAX_LABELS ->
 * -E2BIG); time/duration come from the first Profile.  Equal samples are not
 * merged (the encoder merges them).  Lost on the way: mapping has_* flags
 * (OTLP has none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/pbcost.h"
#include "profile/pbdepth.h"
#include "profile/otlp_pb.h"

/* Deepest nesting accepted in a request: Request > ResourceProfiles >
 * Resource > KeyValue > AnyValue is 5; 32 leaves room for nested
 * attribute values and bounds protobuf-c's recursion. */
#define SP_OTLP_MAX_DEPTH 32

/* An off_cpu_waits Profile, applied once every off_cpu Sample is known. */
struct waits_prof {
	const OT(Profile) *pr;
	int32_t resource;
};

struct dec {
	const OT(ProfilesDictionary) *d;	/* never NULL (empty if absent) */
	struct sp_profile *p;
	int32_t *smap, *fmap, *mmap, *lmap, *kmap, *stmap;
	uint64_t n_samples;
	bool have_time;
	struct waits_prof *waits;
	size_t n_waits, cap_waits;
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

/* Another string attribute of r is kept when there is room, its value is
 * not empty and its key is new (the first of a key wins; the rest and
 * what does not fit are dropped: a resource is at most SP_RES_ATTRS_MAX
 * of them, as the collector writes). */
static bool keep_attr(struct dec *d, const struct sp_resource *r, const char *key)
{
	if (r->n_attrs >= SP_RES_ATTRS_MAX || !key[0] || sp_profile__resource_key_fixed(key))
		return false;
	for (uint32_t j = 0; j < r->n_attrs; j++)
		if (!strcmp(d->p->strings[r->attrs[j].key], key))
			return false;
	return true;
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
		else if (str && keep_attr(d, &r, key))
			r.attrs[r.n_attrs++] = (struct sp_res_attr){ sp_profile__intern(d->p, key),
								     str };
		if (r.n_attrs && r.attrs[r.n_attrs - 1].key < 0)
			return r.attrs[r.n_attrs - 1].key;
	}
	*out = sp_profile__add_resource(d->p, &r);
	return *out < 0 ? *out : 0;
}

/* The identity of os (resource, kind, stack, link, thread, labels) into
 * *s, values and timestamps left zero. */
static int dec_sample_ident(const struct dec *d, const OT(Sample) *os, int32_t resource,
			    enum sp_sample_kind kind, struct sp_sample *s)
{
	const struct sp_profile *p = d->p;
	size_t j;
	int r;

	memset(s, 0, sizeof(*s));
	s->resource = resource;
	s->kind = kind;
	if (!idx_ok(os->stack_index, d->d->n_stack_table) ||
	    !idx_ok(os->link_index, d->d->n_link_table))
		return -EINVAL;
	s->stack = os->stack_index ? d->stmap[os->stack_index] : 0;
	s->link = os->link_index ? d->kmap[os->link_index] : 0;
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
			s->tid = num;
		} else if (!is_int && !strcmp(ks, SP_A_THREAD_NAME)) {
			s->thread_name = str;
		} else {
			if (s->n_labels >= SP_MAX_LABELS)
				return -E2BIG;
			s->labels[s->n_labels].key = key;
			s->labels[s->n_labels].str = str;
			s->labels[s->n_labels].num = num;
			s->n_labels++;
		}
	}
	return 0;
}

/* Sum of os's values into *sum; -EINVAL on overflow. */
static int dec_sum(const OT(Sample) *os, int64_t *sum)
{
	*sum = 0;
	for (size_t j = 0; j < os->n_values; j++)
		if (__builtin_add_overflow(*sum, os->values[j], sum))
			return -EINVAL;
	return 0;
}

static int dec_sample(struct dec *d, const OT(Sample) *os, int32_t resource,
		      enum sp_sample_kind kind, uint64_t period)
{
	struct sp_profile *p = d->p;
	struct sp_sample s;
	int64_t sum;
	int r;

	r = dec_sample_ident(d, os, resource, kind, &s);
	if (r)
		return r;
	if (os->n_values && os->n_timestamps_unix_nano &&
	    os->n_values != os->n_timestamps_unix_nano)
		return -EINVAL;
	if (os->n_timestamps_unix_nano > UINT32_MAX)
		return -E2BIG;
	if (dec_sum(os, &sum))
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

/* ------------------------------------------------------------ wait counts */

static uint64_t ident_hash(const struct sp_sample *s)
{
	int64_t img[6 + 3 * SP_MAX_LABELS];
	uint32_t n = 6;

	img[0] = s->resource;
	img[1] = s->stack;
	img[2] = s->link;
	img[3] = s->tid;
	img[4] = s->thread_name;
	img[5] = s->n_labels;
	for (uint32_t j = 0; j < s->n_labels; j++) {
		img[n++] = s->labels[j].key;
		img[n++] = s->labels[j].str;
		img[n++] = s->labels[j].num;
	}
	return sp_hash_bytes(img, n * sizeof(*img));
}

struct ident_key {
	const struct sp_profile *p;
	const struct sp_sample *s;
};

static bool same_ident(const void *ctx, int32_t v)
{
	const struct ident_key *k = ctx;
	const struct sp_sample *a = &k->p->samples[v], *b = k->s;

	if (a->resource != b->resource || a->stack != b->stack || a->link != b->link ||
	    a->tid != b->tid || a->thread_name != b->thread_name ||
	    a->n_labels != b->n_labels)
		return false;
	for (uint32_t j = 0; j < a->n_labels; j++)
		if (a->labels[j].key != b->labels[j].key || a->labels[j].str != b->labels[j].str ||
		    a->labels[j].num != b->labels[j].num)
			return false;
	return true;
}

/* The off_cpu_waits Profiles: each Sample's count onto the OFFCPU sample
 * without timestamps of the same identity (the first count replaces the
 * default of 1, further ones add), or a new sample of 0 ns. */
static int dec_waits(struct dec *d)
{
	struct sp_profile *p = d->p;
	struct sp_hidx idx = { 0 };
	uint8_t *counted = NULL;
	uint32_t n_before = p->n_samples;
	int err = 0;

	if (!d->n_waits)
		return 0;
	counted = calloc(n_before ? n_before : 1, 1);
	if (!counted)
		return -ENOMEM;
	for (uint32_t i = 0; i < n_before && !err; i++) {
		const struct sp_sample *s = &p->samples[i];

		if (s->kind == SP_KIND_OFFCPU && !s->n_timestamps)
			err = sp_hidx__insert(&idx, ident_hash(s), (int32_t)i);
	}
	for (size_t w = 0; w < d->n_waits && !err; w++) {
		const OT(Profile) *pr = d->waits[w].pr;

		for (size_t m = 0; m < pr->n_samples && !err; m++) {
			struct sp_sample s;
			struct ident_key k = { p, &s };
			int64_t n;
			int32_t i;

			err = dec_sample_ident(d, pr->samples[m], d->waits[w].resource,
					       SP_KIND_OFFCPU, &s);
			if (!err && (dec_sum(pr->samples[m], &n) || n < 0))
				err = -EINVAL;
			if (err)
				break;
			i = sp_hidx__find(&idx, ident_hash(&s), same_ident, &k);
			if (i >= 0 && (uint32_t)i < n_before) {
				struct sp_sample *t = &p->samples[i];

				if (!counted[i])
					t->count = 0;
				counted[i] = 1;
				if (__builtin_add_overflow(t->count, n, &t->count))
					err = -EINVAL;
			} else if (n) {
				s.count = n;
				i = sp_profile__add_sample(p, &s);
				err = i < 0 ? i : 0;
			}
		}
	}
	sp_hidx__free(&idx);
	free(counted);
	return err;
}

static int defer_waits(struct dec *d, const OT(Profile) *pr, int32_t resource)
{
	if (d->n_waits == d->cap_waits) {
		size_t nc = d->cap_waits ? d->cap_waits * 2 : 16;
		struct waits_prof *n = reallocarray(d->waits, nc, sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->waits = n;
		d->cap_waits = nc;
	}
	d->waits[d->n_waits++] = (struct waits_prof){ pr, resource };
	return 0;
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
				bool waits = false;

				if (pr->sample_type) {
					int32_t t = dstr(d, pr->sample_type->type_strindex);

					if (t < 0 || dstr(d, pr->sample_type->unit_strindex) < 0)
						return -EINVAL;
					if (!strcmp(p->strings[t], "off_cpu"))
						kind = SP_KIND_OFFCPU;
					waits = !strcmp(p->strings[t], "off_cpu_waits");
				}
				if (pr->period_type &&
				    (dstr(d, pr->period_type->type_strindex) < 0 ||
				     dstr(d, pr->period_type->unit_strindex) < 0))
					return -EINVAL;
				if (waits) {
					d->n_samples += pr->n_samples;
					if (d->n_samples > SP_DECODE_MAX_ENTRIES)
						return -E2BIG;
					err = defer_waits(d, pr, resource);
					if (err)
						return err;
					continue;
				}
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

/* The sample and location tables at their final size at once (the two
 * largest: no doubling, so sp_otlp__cost can count them once). */
static int reserve(struct dec *d, const OtRequest *req)
{
	uint64_t n = 0;

	for (size_t i = 0; i < req->n_resource_profiles; i++)
		for (size_t j = 0; j < req->resource_profiles[i]->n_scope_profiles; j++) {
			const OT(ScopeProfiles) *sp = req->resource_profiles[i]->scope_profiles[j];

			for (size_t k = 0; k < sp->n_profiles; k++)
				n += sp->profiles[k]->n_samples;
		}
	if (n > SP_DECODE_MAX_ENTRIES || d->d->n_location_table > SP_DECODE_MAX_ENTRIES)
		return -E2BIG;
	return sp_profile__reserve(d->p, (uint32_t)n, (uint32_t)d->d->n_location_table);
}

/* ------------------------------------------------------------ cost */

const ProtobufCMessageDescriptor *sp_otlp__request_descriptor(void)
{
	return &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor;
}

#define D_DICT ot_(profiles_dictionary__descriptor)

/* Elements of the repeated field name of d counted by the walk. */
static uint64_t elems_of(const struct sp_pbcost *w, const ProtobufCMessageDescriptor *d,
			 const char *name)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);

	return f ? sp_pbcost__elems(w, d, f->id) : 0;
}

/* One model table of n entries of elem bytes: at most 2n at its
 * capacity; while it doubles, old and new exist together (one table at a
 * time: the largest such extra is added once).  Its dedup index holds at
 * most 4n slots of 12 bytes, 6n while it is rehashed. */
struct model_cost {
	uint64_t bytes, extra;
};

static void table(struct model_cost *m, uint64_t n, uint64_t elem, bool dedup)
{
	uint64_t grow = n * elem + (dedup ? 2 * n * 12 : 0);

	m->bytes += 2 * n * elem + (dedup ? 4 * n * 12 : 0) + 64;
	if (grow > m->extra)
		m->extra = grow;
}

/* A table reserved at its final size (reserve() above). */
static void table_exact(struct model_cost *m, uint64_t n, uint64_t elem, bool dedup)
{
	uint64_t grow = dedup ? 2 * n * 12 : 0;

	m->bytes += n * elem + (dedup ? 4 * n * 12 : 0) + 64;
	if (grow > m->extra)
		m->extra = grow;
}

uint64_t sp_otlp__cost(const struct sp_pbcost *w)
{
	struct model_cost m = { 0 };
	uint64_t n_str, n_ts;

	n_str = elems_of(w, &D_DICT, "string_table") +
		sp_pbcost__msgs(w, &opentelemetry__proto__common__v1__any_value__descriptor) +
		sp_pbcost__msgs(w, &opentelemetry__proto__common__v1__key_value__descriptor);
	n_ts = elems_of(w, &ot_(sample__descriptor), "timestamps_unix_nano");
	/* strings: a pointer each, a copy each, deduplicated */
	table(&m, n_str, sizeof(char *), true);
	m.bytes += w->str_bytes + n_str * 32;
	table(&m, sp_pbcost__msgs(w, &ot_(mapping__descriptor)), sizeof(struct sp_mapping), true);
	table_exact(&m, sp_pbcost__msgs(w, &ot_(location__descriptor)) + 1,
		    sizeof(struct sp_location), true);
	table(&m, sp_pbcost__msgs(w, &ot_(function__descriptor)), sizeof(struct sp_function),
	      true);
	table(&m, sp_pbcost__msgs(w, &ot_(link__descriptor)), sizeof(struct sp_link), true);
	table(&m, sp_pbcost__msgs(w, &ot_(stack__descriptor)), 2 * sizeof(uint32_t), true);
	table(&m, elems_of(w, &ot_(stack__descriptor), "location_indices"), sizeof(int32_t),
	      false);
	table(&m, sp_pbcost__msgs(w, &ot_(resource_profiles__descriptor)),
	      sizeof(struct sp_resource), true);
	table_exact(&m, sp_pbcost__msgs(w, &ot_(sample__descriptor)), sizeof(struct sp_sample),
		    false);
	/* each sample's timestamps in one allocation of its own */
	m.bytes += n_ts * 8 + sp_pbcost__msgs(w, &ot_(sample__descriptor)) * 32;
	/* the decoder's index maps, one int32 per dictionary entry */
	m.bytes += 4 * (n_str + sp_pbcost__msgs(w, &ot_(mapping__descriptor)) +
			sp_pbcost__msgs(w, &ot_(location__descriptor)) +
			sp_pbcost__msgs(w, &ot_(function__descriptor)) +
			sp_pbcost__msgs(w, &ot_(link__descriptor)) +
			sp_pbcost__msgs(w, &ot_(stack__descriptor))) + 4096;
	return w->bytes + m.bytes + m.extra;
}

int sp_otlp__decode(const uint8_t *buf, size_t len, struct sp_profile **out)
{
	return sp_otlp__decode_capped(buf, len, 0, out);
}

int sp_otlp__decode_capped(const uint8_t *buf, size_t len, size_t unpack_budget,
			   struct sp_profile **out)
{
	static const OT(ProfilesDictionary) empty =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	struct sp_pballoc alloc;
	OtRequest *req;
	struct dec d;
	int err;

	err = sp_dec__begin(buf, len, out, &alloc);
	if (err)
		return err;
	/* protobuf-c recurses once per nested AnyValue, without a limit. */
	if (sp_pb__check_depth(buf, len, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
			       sp_pb_otlp_request_n_edges, SP_OTLP_MAX_DEPTH))
		return -EINVAL;
	if (unpack_budget && unpack_budget < alloc.budget)
		alloc.budget = unpack_budget;
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
	err = reserve(&d, req);
	if (err)
		goto out;
	err = dec_dict(&d);
	if (err)
		goto out;
	err = dec_profiles(&d, req);
	if (!err)
		err = dec_waits(&d);
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
	free(d.waits);
	otlp_request__free_unpacked(req, &alloc.a);
	return err;
}
