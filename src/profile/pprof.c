/* SPDX-License-Identifier: MIT */
/*
 * pprof.c - struct sp_profile <-> google/pprof profile.proto.
 *
 * Encoder (sp_pprof__encode): validates the profile, then writes one
 * perftools.profiles.Profile.  *out is a malloc'd buffer the caller frees.
 *   - string_table: the profile's strings with their indices unchanged,
 *     followed by the extra strings pprof needs (column names, label keys,
 *     hex trace/span ids), deduplicated.
 *   - ids: mapping/location/function id = model index.  Index 0 (the zero
 *     entry) is never written, so ids are non-zero and unique; a reference
 *     to index 0 becomes id 0 ("none").  Location index 0 inside a stack is
 *     skipped (pprof has no unknown location).
 *   - sample_type: [samples/count, cpu/nanoseconds] and, when any off-CPU
 *     sample exists, [off_cpu_waits/count, off_cpu/nanoseconds].  A sample
 *     fills its kind's two columns and zeros in the others.
 *   - period_type cpu/nanoseconds, period = period_ns[SP_KIND_ONCPU],
 *     default_sample_type "cpu", time_nanos, duration_nanos.
 *   - labels per sample: "pid" (num), "tid" (num, when non-zero),
 *     "thread_name" (str, when set; pprof has no fixed key, we choose the
 *     one go tool pprof users grep for), "trace_id"/"span_id" (lower-case
 *     hex str, when link != 0), "service.name" (str, from the resource, when
 *     set), then the sample's own sp_label entries (str when str != 0, else
 *     num), e.g. "off_cpu_reason".
 *   - Not carried (pprof has no place for them): sample timestamps, a
 *     resource's exe path/name, container id and host name, frame kinds.
 *
 * Decoder (sp_pprof__decode): untrusted input.  Input above
 * SP_DECODE_MAX_BYTES -> -E2BIG; protobuf-c unpacks with a byte budget;
 * tables above SP_DECODE_MAX_ENTRIES -> -E2BIG; every string index, id and
 * value count is checked before use (-EINVAL).  Labels map back: pid (and
 * service.name) build one resource per distinct pair, tid, thread_name,
 * trace_id/span_id (hex) fill the fixed fields, everything else becomes an
 * sp_label (more than SP_MAX_LABELS -> -E2BIG).  Columns are found by type
 * name; a sample with non-zero on-CPU and off-CPU columns becomes two
 * samples.  Frame kind: KERNEL when the mapping's file name starts with
 * "[kernel" or, without a mapping, when the address has its top bit set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/codec.h"
#include "profile/internal.h"
#include "pprof.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#define PB_LABELS_PER_SAMPLE (6 + SP_MAX_LABELS)

/* ================================================================ encode */

struct enc {
	struct sp_strtab st;
	int32_t k_pid, k_tid, k_thread_name, k_trace_id, k_span_id, k_service;
};

/* Interns lazily into *slot; returns the index or a negative errno. */
static int32_t key(struct enc *e, int32_t *slot, const char *s)
{
	if (*slot <= 0)
		*slot = sp_strtab__get(&e->st, s);
	return *slot;
}

#define KEY(e, field, s) ({ int32_t k_ = key((e), &(e)->field, (s)); \
	if (k_ < 0) { err = k_; goto out; } k_; })
#define STRX(e, s) ({ int32_t k_ = sp_strtab__get(&(e)->st, (s)); \
	if (k_ < 0) { err = k_; goto out; } k_; })

int sp_pprof__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len)
{
	PbProfile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	PbValueType vt[4], period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	PbValueType *vtp[4];
	PbMapping *maps = NULL, **mapp = NULL;
	PbFunction *funcs = NULL, **funcp = NULL;
	PbLocation *locs = NULL, **locp = NULL;
	PbLine *lines = NULL, **linep = NULL;
	PbSample *samples = NULL, **samplep = NULL;
	PbLabel *labels = NULL, **labelp = NULL;
	uint64_t *loc_ids = NULL;
	int64_t *values = NULL;
	char **strtab = NULL;
	uint8_t *buf = NULL;
	struct enc e;
	size_t n_lines = 0, li = 0, n_stack_ids = 0, si = 0, lbi = 0, len;
	uint32_t i, j, n_cols = 2, n_str;
	int err;

	if (!out || !out_len)
		return -EINVAL;
	*out = NULL;
	*out_len = 0;
	err = sp_profile__validate(p);
	if (err)
		return err;
	memset(&e, 0, sizeof(e));
	sp_strtab__init(&e.st, p);

	for (i = 0; i < p->n_samples; i++) {
		if (p->samples[i].kind == SP_KIND_OFFCPU)
			n_cols = 4;
		n_stack_ids += p->stack_len[p->samples[i].stack];
	}
	for (i = 1; i < p->n_locations; i++)
		n_lines += p->locations[i].n_lines;

	/* sample_type columns */
	{
		static const char *names[4][2] = {
			{ "samples", "count" }, { "cpu", "nanoseconds" },
			{ "off_cpu_waits", "count" }, { "off_cpu", "nanoseconds" },
		};

		for (i = 0; i < n_cols; i++) {
			perftools__profiles__value_type__init(&vt[i]);
			vt[i].type = STRX(&e, names[i][0]);
			vt[i].unit = STRX(&e, names[i][1]);
			vtp[i] = &vt[i];
		}
	}
	pb.n_sample_type = n_cols;
	pb.sample_type = vtp;
	period_type.type = STRX(&e, "cpu");
	period_type.unit = STRX(&e, "nanoseconds");
	pb.period_type = &period_type;
	pb.period = (int64_t)p->period_ns[SP_KIND_ONCPU];
	pb.default_sample_type = STRX(&e, "cpu");
	pb.time_nanos = (int64_t)p->time_unix_ns;
	pb.duration_nanos = (int64_t)p->duration_ns;

	err = -ENOMEM;
	maps = calloc(p->n_mappings, sizeof(*maps));
	mapp = calloc(p->n_mappings, sizeof(*mapp));
	funcs = calloc(p->n_functions, sizeof(*funcs));
	funcp = calloc(p->n_functions, sizeof(*funcp));
	locs = calloc(p->n_locations, sizeof(*locs));
	locp = calloc(p->n_locations, sizeof(*locp));
	lines = calloc(n_lines + 1, sizeof(*lines));
	linep = calloc(n_lines + 1, sizeof(*linep));
	samples = calloc(p->n_samples + 1, sizeof(*samples));
	samplep = calloc(p->n_samples + 1, sizeof(*samplep));
	labels = calloc((size_t)p->n_samples * PB_LABELS_PER_SAMPLE + 1, sizeof(*labels));
	labelp = calloc((size_t)p->n_samples * PB_LABELS_PER_SAMPLE + 1, sizeof(*labelp));
	loc_ids = calloc(n_stack_ids + 1, sizeof(*loc_ids));
	values = calloc((size_t)p->n_samples * n_cols + 1, sizeof(*values));
	if (!maps || !mapp || !funcs || !funcp || !locs || !locp || !lines ||
	    !linep || !samples || !samplep || !labels || !labelp || !loc_ids ||
	    !values)
		goto out;

	for (i = 1; i < p->n_mappings; i++) {
		const struct sp_mapping *m = &p->mappings[i];
		PbMapping *pm = &maps[i - 1];

		perftools__profiles__mapping__init(pm);
		pm->id = i;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		pm->has_functions = m->has_functions;
		pm->has_filenames = m->has_filenames;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
		mapp[i - 1] = pm;
	}
	pb.n_mapping = p->n_mappings - 1;
	pb.mapping = mapp;

	for (i = 1; i < p->n_functions; i++) {
		const struct sp_function *f = &p->functions[i];
		PbFunction *pf = &funcs[i - 1];

		perftools__profiles__function__init(pf);
		pf->id = i;
		pf->name = f->name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		pf->start_line = f->start_line;
		funcp[i - 1] = pf;
	}
	pb.n_function = p->n_functions - 1;
	pb.function = funcp;

	for (i = 1; i < p->n_locations; i++) {
		const struct sp_location *l = &p->locations[i];
		PbLocation *pl = &locs[i - 1];

		perftools__profiles__location__init(pl);
		pl->id = i;
		pl->mapping_id = (uint64_t)l->mapping;
		pl->address = l->address;
		pl->n_line = l->n_lines;
		pl->line = &linep[li];
		for (j = 0; j < l->n_lines; j++, li++) {
			perftools__profiles__line__init(&lines[li]);
			lines[li].function_id = (uint64_t)l->lines[j].function;
			lines[li].line = l->lines[j].line;
			lines[li].column = l->lines[j].column;
			linep[li] = &lines[li];
		}
		locp[i - 1] = pl;
	}
	pb.n_location = p->n_locations - 1;
	pb.location = locp;

	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		const struct sp_resource *r = &p->resources[s->resource];
		PbSample *ps = &samples[i];
		PbLabel *lb;
		uint32_t off = p->stack_off[s->stack];
		size_t n0 = lbi;

		perftools__profiles__sample__init(ps);
		ps->location_id = &loc_ids[si];
		for (j = 0; j < p->stack_len[s->stack]; j++) {
			int32_t l = p->stack_locs[off + j];

			if (l > 0)
				loc_ids[si + ps->n_location_id++] = (uint64_t)l;
		}
		si += ps->n_location_id;

		ps->value = &values[(size_t)i * n_cols];
		ps->n_value = n_cols;
		ps->value[s->kind == SP_KIND_OFFCPU ? 2 : 0] = s->count;
		ps->value[s->kind == SP_KIND_OFFCPU ? 3 : 1] = s->value_ns;

#define LABEL() ({ lb = &labels[lbi]; perftools__profiles__label__init(lb); \
		labelp[lbi++] = lb; lb; })
		LABEL()->key = KEY(&e, k_pid, SP_K_PID);
		lb->num = r->pid;
		if (s->tid) {
			LABEL()->key = KEY(&e, k_tid, SP_K_TID);
			lb->num = s->tid;
		}
		if (s->thread_name) {
			LABEL()->key = KEY(&e, k_thread_name, SP_K_THREAD_NAME);
			lb->str = s->thread_name;
		}
		if (s->link) {
			char hex[33];

			sp_hex_encode(p->links[s->link].trace_id, 16, hex);
			LABEL()->key = KEY(&e, k_trace_id, SP_K_TRACE_ID);
			lb->str = STRX(&e, hex);
			sp_hex_encode(p->links[s->link].span_id, 8, hex);
			LABEL()->key = KEY(&e, k_span_id, SP_K_SPAN_ID);
			lb->str = STRX(&e, hex);
		}
		if (r->service_name) {
			LABEL()->key = KEY(&e, k_service, SP_K_SERVICE_NAME);
			lb->str = r->service_name;
		}
		for (j = 0; j < s->n_labels; j++) {
			LABEL()->key = s->labels[j].key;
			if (s->labels[j].str)
				lb->str = s->labels[j].str;
			else
				lb->num = s->labels[j].num;
		}
#undef LABEL
		ps->label = &labelp[n0];
		ps->n_label = lbi - n0;
		samplep[i] = ps;
	}
	pb.n_sample = p->n_samples;
	pb.sample = samplep;

	/* string table last: every extra string is known now */
	n_str = sp_strtab__count(&e.st);
	strtab = calloc(n_str, sizeof(*strtab));
	if (!strtab)
		goto out;
	for (i = 0; i < n_str; i++)
		strtab[i] = (char *)sp_strtab__at(&e.st, i);
	pb.n_string_table = n_str;
	pb.string_table = strtab;

	len = perftools__profiles__profile__get_packed_size(&pb);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	if (perftools__profiles__profile__pack(&pb, buf) != len) {
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
	free(maps);
	free(mapp);
	free(funcs);
	free(funcp);
	free(locs);
	free(locp);
	free(lines);
	free(linep);
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(loc_ids);
	free(values);
	sp_strtab__free(&e.st);
	return err;
}

/* ================================================================ decode */

/* id -> position in the message's array, for mappings/locations/functions */
struct idmap {
	struct sp_hidx h;
	const uint64_t *ids;	/* ids[pos] */
};

struct id_key {
	const struct idmap *m;
	uint64_t id;
};

static bool id_eq(const void *ctx, int32_t v)
{
	const struct id_key *k = ctx;

	return k->m->ids[v] == k->id;
}

/* Adds ids[pos]; -EINVAL for id 0 or a duplicate. */
static int idmap_add(struct idmap *m, int32_t pos)
{
	uint64_t id = m->ids[pos];
	struct id_key k = { m, id };
	uint64_t h = sp_hash_bytes(&id, sizeof(id));

	if (!id || sp_hidx__find(&m->h, h, id_eq, &k) >= 0)
		return -EINVAL;
	return sp_hidx__insert(&m->h, h, pos);
}

static int32_t idmap_find(const struct idmap *m, uint64_t id)
{
	struct id_key k = { m, id };

	return sp_hidx__find(&m->h, sp_hash_bytes(&id, sizeof(id)), id_eq, &k);
}

struct dec {
	const PbProfile *pb;
	struct sp_profile *p;
	int32_t *smap;		/* pprof string index -> model string index */
	struct idmap fn, mp, lc;
	uint64_t *fn_ids, *mp_ids, *lc_ids;
	int32_t *fn_idx, *mp_idx, *lc_idx;	/* position -> model index */
};

/* pprof string index -> model index, or -EINVAL */
static int32_t dstr(const struct dec *d, int64_t i)
{
	if (i < 0 || (uint64_t)i >= d->pb->n_string_table)
		return -EINVAL;
	return d->smap[i];
}

#define DSTR(d, i) ({ int32_t s_ = dstr((d), (i)); \
	if (s_ < 0) { err = s_; goto out; } s_; })
#define CHECK(x) do { int32_t r_ = (x); if (r_ < 0) { err = r_; goto out; } } while (0)

static bool is_kernel_mapping(const struct sp_profile *p, int32_t m)
{
	return strncmp(sp_profile__str(p, p->mappings[m].filename), "[kernel", 7) == 0;
}

static int dec_tables(struct dec *d)
{
	const PbProfile *pb = d->pb;
	struct sp_profile *p = d->p;
	size_t i, j;
	int err = 0;

	for (i = 0; i < pb->n_string_table; i++) {
		int32_t s = sp_profile__intern(p, pb->string_table[i] ?
						     pb->string_table[i] : "");

		if (s < 0)
			return s;
		d->smap[i] = s;
	}

	for (i = 0; i < pb->n_function; i++) {
		const PbFunction *f = pb->function[i];
		struct sp_function sf = { 0 };
		int32_t idx;

		d->fn_ids[i] = f->id;
		CHECK(idmap_add(&d->fn, (int32_t)i));
		sf.name = DSTR(d, f->name);
		sf.system_name = DSTR(d, f->system_name);
		sf.filename = DSTR(d, f->filename);
		sf.start_line = f->start_line;
		idx = sp_profile__add_function(p, &sf);
		CHECK(idx);
		d->fn_idx[i] = idx;
	}

	for (i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = pb->mapping[i];
		struct sp_mapping sm = { 0 };
		int32_t idx;

		d->mp_ids[i] = m->id;
		CHECK(idmap_add(&d->mp, (int32_t)i));
		sm.memory_start = m->memory_start;
		sm.memory_limit = m->memory_limit;
		sm.file_offset = m->file_offset;
		sm.filename = DSTR(d, m->filename);
		sm.build_id = DSTR(d, m->build_id);
		sm.has_functions = m->has_functions;
		sm.has_filenames = m->has_filenames;
		sm.has_line_numbers = m->has_line_numbers;
		sm.has_inline_frames = m->has_inline_frames;
		idx = sp_profile__add_mapping(p, &sm);
		CHECK(idx);
		d->mp_idx[i] = idx;
	}

	for (i = 0; i < pb->n_location; i++) {
		const PbLocation *l = pb->location[i];
		struct sp_location sl;
		int32_t idx;

		memset(&sl, 0, sizeof(sl));
		d->lc_ids[i] = l->id;
		CHECK(idmap_add(&d->lc, (int32_t)i));
		if (l->n_line > SP_MAX_INLINE)
			return -E2BIG;
		if (l->mapping_id) {
			idx = idmap_find(&d->mp, l->mapping_id);
			if (idx < 0)
				return -EINVAL;
			sl.mapping = d->mp_idx[idx];
		}
		sl.address = l->address;
		if (sl.mapping ? is_kernel_mapping(p, sl.mapping) :
				 (l->address >> 63) != 0)
			sl.frame_kind = SP_FRAME_KERNEL;
		for (j = 0; j < l->n_line; j++) {
			const PbLine *ln = l->line[j];

			if (ln->function_id) {
				idx = idmap_find(&d->fn, ln->function_id);
				if (idx < 0)
					return -EINVAL;
				sl.lines[j].function = d->fn_idx[idx];
			}
			sl.lines[j].line = ln->line;
			sl.lines[j].column = ln->column;
		}
		sl.n_lines = (uint8_t)l->n_line;
		idx = sp_profile__add_location(p, &sl);
		CHECK(idx);
		d->lc_idx[i] = idx;
	}
out:
	return err;
}

static int dec_samples(struct dec *d)
{
	const PbProfile *pb = d->pb;
	struct sp_profile *p = d->p;
	int col_count = -1, col_cpu = -1, col_waits = -1, col_off = -1;
	int32_t *locs = NULL;
	size_t i, j, max_locs = 0;
	int err = 0;

	for (i = 0; i < pb->n_sample_type; i++) {
		const char *t;
		int32_t s = DSTR(d, pb->sample_type[i]->type);

		t = sp_profile__str(p, s);
		if (!strcmp(t, "samples") && col_count < 0)
			col_count = (int)i;
		else if (!strcmp(t, "cpu") && col_cpu < 0)
			col_cpu = (int)i;
		else if (!strcmp(t, "off_cpu_waits") && col_waits < 0)
			col_waits = (int)i;
		else if (!strcmp(t, "off_cpu") && col_off < 0)
			col_off = (int)i;
	}
	if (col_count < 0 && col_cpu < 0 && col_waits < 0 && col_off < 0) {
		/* foreign profile: first column counts, second measures */
		col_count = pb->n_sample_type > 0 ? 0 : -1;
		col_cpu = pb->n_sample_type > 1 ? 1 : -1;
	}

	for (i = 0; i < pb->n_sample; i++)
		if (pb->sample[i]->n_location_id > max_locs)
			max_locs = pb->sample[i]->n_location_id;
	locs = calloc(max_locs + 1, sizeof(*locs));
	if (!locs)
		return -ENOMEM;

	for (i = 0; i < pb->n_sample; i++) {
		const PbSample *ps = pb->sample[i];
		struct sp_sample s;
		struct sp_resource r = { 0 };
		uint8_t trace[16] = { 0 }, span[8] = { 0 };
		bool have_link = false;
		int64_t v[4];
		int32_t idx;
		int k;

		memset(&s, 0, sizeof(s));
		if (ps->n_value != pb->n_sample_type)
			goto bad;
		for (j = 0; j < ps->n_location_id; j++) {
			idx = idmap_find(&d->lc, ps->location_id[j]);
			if (idx < 0)
				goto bad;
			locs[j] = d->lc_idx[idx];
		}
		s.stack = sp_profile__add_stack(p, locs, (uint32_t)ps->n_location_id);
		CHECK(s.stack);

		for (j = 0; j < ps->n_label; j++) {
			const PbLabel *l = ps->label[j];
			int32_t key = DSTR(d, l->key), str = DSTR(d, l->str);
			const char *ks = sp_profile__str(p, key);
			const char *vs = sp_profile__str(p, str);

			if (!strcmp(ks, SP_K_PID)) {
				r.pid = l->num;
			} else if (!strcmp(ks, SP_K_TID)) {
				s.tid = l->num;
			} else if (!strcmp(ks, SP_K_THREAD_NAME)) {
				s.thread_name = str;
			} else if (!strcmp(ks, SP_K_SERVICE_NAME)) {
				r.service_name = str;
			} else if (!strcmp(ks, SP_K_TRACE_ID) &&
				   !sp_hex_decode(vs, trace, 16)) {
				have_link = true;
			} else if (!strcmp(ks, SP_K_SPAN_ID) &&
				   !sp_hex_decode(vs, span, 8)) {
				have_link = true;
			} else {
				if (s.n_labels >= SP_MAX_LABELS) {
					err = -E2BIG;
					goto out;
				}
				s.labels[s.n_labels].key = key;
				s.labels[s.n_labels].str = str;
				s.labels[s.n_labels].num = str ? 0 : l->num;
				s.n_labels++;
			}
		}
		if (have_link) {
			s.link = sp_profile__add_link(p, trace, span);
			CHECK(s.link);
		}
		s.resource = sp_profile__add_resource(p, &r);
		CHECK(s.resource);

		v[0] = col_count >= 0 ? ps->value[col_count] : 0;
		v[1] = col_cpu >= 0 ? ps->value[col_cpu] : 0;
		v[2] = col_waits >= 0 ? ps->value[col_waits] : 0;
		v[3] = col_off >= 0 ? ps->value[col_off] : 0;
		for (k = 0; k < 2; k++) {
			bool on = k == 0;
			int64_t c = on ? v[0] : v[2], ns = on ? v[1] : v[3];

			/* on-CPU part when non-zero or when nothing else is */
			if (!c && !ns && !(on && !v[2] && !v[3]))
				continue;
			s.kind = on ? SP_KIND_ONCPU : SP_KIND_OFFCPU;
			s.count = c;
			s.value_ns = ns;
			CHECK(sp_profile__add_sample(p, &s));
		}
	}
out:
	free(locs);
	return err;
bad:
	err = -EINVAL;
	goto out;
}

int sp_pprof__decode(const uint8_t *buf, size_t len, struct sp_profile **out)
{
	struct sp_pballoc alloc;
	PbProfile *pb = NULL;
	struct dec d;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!buf && len)
		return -EINVAL;
	if (len > SP_DECODE_MAX_BYTES)
		return -E2BIG;
	memset(&d, 0, sizeof(d));
	sp_pballoc__init(&alloc, len);
	pb = perftools__profiles__profile__unpack(&alloc.a, len, buf);
	if (!pb)
		return alloc.exhausted ? -E2BIG : -EINVAL;

	err = -E2BIG;
	if (pb->n_string_table > SP_DECODE_MAX_ENTRIES ||
	    pb->n_function > SP_DECODE_MAX_ENTRIES ||
	    pb->n_mapping > SP_DECODE_MAX_ENTRIES ||
	    pb->n_location > SP_DECODE_MAX_ENTRIES ||
	    pb->n_sample > SP_DECODE_MAX_ENTRIES)
		goto out;
	err = -EINVAL;
	if (!pb->n_string_table || !pb->string_table[0] || pb->string_table[0][0])
		goto out;

	err = -ENOMEM;
	d.pb = pb;
	d.p = sp_profile__new();
	d.smap = calloc(pb->n_string_table, sizeof(*d.smap));
	d.fn_ids = calloc(pb->n_function + 1, sizeof(uint64_t));
	d.mp_ids = calloc(pb->n_mapping + 1, sizeof(uint64_t));
	d.lc_ids = calloc(pb->n_location + 1, sizeof(uint64_t));
	d.fn_idx = calloc(pb->n_function + 1, sizeof(int32_t));
	d.mp_idx = calloc(pb->n_mapping + 1, sizeof(int32_t));
	d.lc_idx = calloc(pb->n_location + 1, sizeof(int32_t));
	if (!d.p || !d.smap || !d.fn_ids || !d.mp_ids || !d.lc_ids ||
	    !d.fn_idx || !d.mp_idx || !d.lc_idx)
		goto out;
	d.fn.ids = d.fn_ids;
	d.mp.ids = d.mp_ids;
	d.lc.ids = d.lc_ids;

	err = dec_tables(&d);
	if (err)
		goto out;
	err = dec_samples(&d);
	if (err)
		goto out;
	d.p->time_unix_ns = (uint64_t)pb->time_nanos;
	d.p->duration_ns = (uint64_t)pb->duration_nanos;
	d.p->period_ns[SP_KIND_ONCPU] = pb->period > 0 ? (uint64_t)pb->period : 0;
	err = sp_profile__validate(d.p);
	if (err)
		goto out;
	*out = d.p;
	d.p = NULL;
out:
	sp_profile__free(d.p);
	free(d.smap);
	free(d.fn_ids);
	free(d.mp_ids);
	free(d.lc_ids);
	free(d.fn_idx);
	free(d.mp_idx);
	free(d.lc_idx);
	sp_hidx__free(&d.fn.h);
	sp_hidx__free(&d.mp.h);
	sp_hidx__free(&d.lc.h);
	perftools__profiles__profile__free_unpacked(pb, &alloc.a);
	return err;
}
