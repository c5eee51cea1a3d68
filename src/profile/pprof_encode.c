/* SPDX-License-Identifier: MIT */
/*
 * pprof_encode.c - struct sp_profile -> google/pprof profile.proto.
 *
 * sp_pprof__encode validates the profile, then writes one
 * perftools.profiles.Profile.  *out is a malloc'd buffer the caller frees.
 *   - string_table: only the strings the file references (the profile's
 *     and the extra ones pprof needs: column names, label keys, hex
 *     trace/span ids), each once, in the order of first reference
 *     (sp_strtab): a resource's exe path or host name, which pprof does not
 *     carry, is not written.
 *   - mappings: the main executable's first (main_mapping: go tool pprof
 *     names the profile after the first), then the others in index order.
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
 * How: like otlp_encode.c, a list of steps (steps[] at the end), one per
 * table, all messages in one arena freed once.  The step order numbers the
 * extra strings and is pinned by tests/unit/test_codec_golden.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/arena.h"
#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/pprof_pb.h"

#define PB_LABELS_PER_SAMPLE (6 + SP_MAX_LABELS)
#define PB_MAX_COLS 4

struct pprof_enc {
	struct sp_enc b;		/* every wire struct below points into b.arena */
	PbProfile pb;
	PbValueType vt[PB_MAX_COLS], *vtp[PB_MAX_COLS], period_type;
	uint32_t n_cols;		/* 2, or 4 with off-CPU samples */
	/* label keys, interned on first use (0 = not yet) */
	int32_t k_pid, k_tid, k_thread_name, k_trace_id, k_span_id, k_service;
};

#define NEW(e, n, T) ((T *)sp_arena__array(&(e)->b.arena, (size_t)(n), sizeof(T)))

/* Interns s into *slot on first use; returns the index or a negative errno. */
static int32_t key(struct pprof_enc *e, int32_t *slot, const char *s)
{
	if (*slot <= 0)
		*slot = sp_strtab__get(&e->b.st, s);
	return *slot;
}

/* ------------------------------------------------------------ header */

static int enc_sample_types(struct pprof_enc *e)
{
	static const char *const names[PB_MAX_COLS][2] = {
		{ "samples", "count" }, { "cpu", "nanoseconds" },
		{ "off_cpu_waits", "count" }, { "off_cpu", "nanoseconds" },
	};
	const struct sp_profile *p = e->b.p;
	int32_t t, u, d;
	uint32_t i;

	e->n_cols = 2;
	for (i = 0; i < p->n_samples; i++)
		if (p->samples[i].kind == SP_KIND_OFFCPU)
			e->n_cols = 4;
	for (i = 0; i < e->n_cols; i++) {
		t = sp_strtab__get(&e->b.st, names[i][0]);
		u = t < 0 ? t : sp_strtab__get(&e->b.st, names[i][1]);
		if (u < 0)
			return u;
		perftools__profiles__value_type__init(&e->vt[i]);
		e->vt[i].type = t;
		e->vt[i].unit = u;
		e->vtp[i] = &e->vt[i];
	}
	e->pb.n_sample_type = e->n_cols;
	e->pb.sample_type = e->vtp;
	t = sp_strtab__get(&e->b.st, "cpu");
	u = t < 0 ? t : sp_strtab__get(&e->b.st, "nanoseconds");
	d = u < 0 ? u : sp_strtab__get(&e->b.st, "cpu");
	if (d < 0)
		return d;
	perftools__profiles__value_type__init(&e->period_type);
	e->period_type.type = t;
	e->period_type.unit = u;
	e->pb.period_type = &e->period_type;
	e->pb.period = (int64_t)p->period_ns[SP_KIND_ONCPU];
	e->pb.default_sample_type = d;
	e->pb.time_nanos = (int64_t)p->time_unix_ns;
	e->pb.duration_nanos = (int64_t)p->duration_ns;
	return 0;
}

/* ------------------------------------------------------------ tables */

/* "libc.so.6", "ld-linux-x86-64.so.2", "x.so": a shared library's name. */
static bool is_shared_lib(const char *path)
{
	const char *b = strrchr(path, '/'), *so;

	b = b ? b + 1 : path;
	so = strstr(b, ".so");
	return so && (so[3] == 0 || so[3] == '.');
}

/*
 * The mapping pprof shows as the profile's "File:" (its first one, which
 * go tool pprof takes for the main binary): the executable of the process
 * with the most samples; without executable paths (a profile decoded from
 * pprof) the first file that is neither a pseudo-file ("[kernel.kallsyms]",
 * "[vdso]") nor a shared library, else the first real file, else the
 * first.  Model index, 0 when
 * there is no mapping.  Samples are counted per resource in one pass.
 */
static uint32_t main_mapping(struct pprof_enc *e)
{
	const struct sp_profile *p = e->b.p;
	uint64_t *n = p->n_resources ? calloc(p->n_resources, sizeof(*n)) : NULL;
	int32_t exe = 0;
	uint64_t best = 0;
	uint32_t i, first_file = 0, first_exe = 0;

	for (i = 0; n && i < p->n_samples; i++)
		if (p->samples[i].resource >= 0 && (uint32_t)p->samples[i].resource < p->n_resources)
			n[p->samples[i].resource] += p->samples[i].count > 0 ?
						     (uint64_t)p->samples[i].count : 1;
	for (i = 0; n && i < p->n_resources; i++)
		if (n[i] > best && p->resources[i].exe_path > 0) {
			best = n[i];
			exe = p->resources[i].exe_path;
		}
	free(n);
	for (i = 1; i < p->n_mappings; i++) {
		const char *f = p->strings[p->mappings[i].filename];

		if (exe && p->mappings[i].filename == exe)
			return i;
		if (!first_file && f[0] && f[0] != '[')
			first_file = i;
		if (!first_exe && f[0] && f[0] != '[' && !is_shared_lib(f))
			first_exe = i;
	}
	if (first_exe)
		return first_exe;
	return first_file ? first_file : p->n_mappings > 1 ? 1 : 0;
}

static int enc_mappings(struct pprof_enc *e)
{
	const struct sp_profile *p = e->b.p;
	PbMapping *maps = NEW(e, p->n_mappings, PbMapping);
	PbMapping **mapp = NEW(e, p->n_mappings, PbMapping *);
	uint32_t i, main = main_mapping(e), k = 1;

	if (!maps || !mapp)
		return -ENOMEM;
	for (i = 1; i < p->n_mappings; i++) {
		const struct sp_mapping *m = &p->mappings[i];
		PbMapping *pm = &maps[i - 1];
		int32_t fn = sp_strtab__ref(&e->b.st, m->filename);
		int32_t bid = fn < 0 ? fn : sp_strtab__ref(&e->b.st, m->build_id);

		if (bid < 0)
			return bid;
		perftools__profiles__mapping__init(pm);
		pm->id = i;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = fn;
		pm->build_id = bid;
		pm->has_functions = m->has_functions;
		pm->has_filenames = m->has_filenames;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
		/* ids stay model indices; only the order changes: main first */
		mapp[i == main ? 0 : k++] = pm;	/* main >= 1 when there are any */
	}
	e->pb.n_mapping = p->n_mappings - 1;
	e->pb.mapping = mapp;
	return 0;
}

static int enc_functions(struct pprof_enc *e)
{
	const struct sp_profile *p = e->b.p;
	PbFunction *funcs = NEW(e, p->n_functions, PbFunction);
	PbFunction **funcp = NEW(e, p->n_functions, PbFunction *);
	uint32_t i;

	if (!funcs || !funcp)
		return -ENOMEM;
	for (i = 1; i < p->n_functions; i++) {
		const struct sp_function *f = &p->functions[i];
		PbFunction *pf = &funcs[i - 1];
		int32_t nm = sp_strtab__ref(&e->b.st, f->name);
		int32_t sys = nm < 0 ? nm : sp_strtab__ref(&e->b.st, f->system_name);
		int32_t fn = sys < 0 ? sys : sp_strtab__ref(&e->b.st, f->filename);

		if (fn < 0)
			return fn;
		perftools__profiles__function__init(pf);
		pf->id = i;
		pf->name = nm;
		pf->system_name = sys;
		pf->filename = fn;
		pf->start_line = f->start_line;
		funcp[i - 1] = pf;
	}
	e->pb.n_function = p->n_functions - 1;
	e->pb.function = funcp;
	return 0;
}

static int enc_locations(struct pprof_enc *e)
{
	const struct sp_profile *p = e->b.p;
	PbLocation *locs = NEW(e, p->n_locations, PbLocation);
	PbLocation **locp = NEW(e, p->n_locations, PbLocation *);
	PbLine *lines, **linep;
	size_t n_lines = 0, li = 0;
	uint32_t i, j;

	for (i = 1; i < p->n_locations; i++)
		n_lines += p->locations[i].n_lines;
	lines = NEW(e, n_lines, PbLine);
	linep = NEW(e, n_lines, PbLine *);
	if (!locs || !locp || !lines || !linep)
		return -ENOMEM;
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
	e->pb.n_location = p->n_locations - 1;
	e->pb.location = locp;
	return 0;
}

/* ------------------------------------------------------------ samples */

/* Appends label {key, str, num} to ps, whose label array points at slots'
 * pointers (PB_LABELS_PER_SAMPLE of each).  key and str may be negative
 * errnos from the lookups that produced them: returned as they are. */
static int add_label(PbSample *ps, PbLabel *slots, int32_t k, int32_t str, int64_t num)
{
	PbLabel *lb;

	if (k < 0)
		return k;
	if (str < 0)
		return str;
	lb = &slots[ps->n_label];
	perftools__profiles__label__init(lb);
	lb->key = k;
	lb->str = str;
	lb->num = num;
	ps->label[ps->n_label++] = lb;
	return 0;
}

/* A string label: key (a wire index or a negative errno) first, then the
 * value's wire index, in this order (the order numbers the strings). */
static int str_label(struct pprof_enc *e, PbSample *ps, PbLabel *slots, int32_t k,
		     int32_t model_str, const char *str)
{
	int32_t v;

	if (k < 0)
		return k;
	v = str ? sp_strtab__get(&e->b.st, str) : sp_strtab__ref(&e->b.st, model_str);
	return add_label(ps, slots, k, v, 0);
}

/* A link as two labels of lower-case hex. */
static int link_labels(struct pprof_enc *e, PbSample *ps, PbLabel *slots,
		       const struct sp_link *l)
{
	char hex[33];
	int err;

	sp_hex_encode(l->trace_id, 16, hex);
	err = str_label(e, ps, slots, key(e, &e->k_trace_id, SP_K_TRACE_ID), 0, hex);
	if (err)
		return err;
	sp_hex_encode(l->span_id, 8, hex);
	return str_label(e, ps, slots, key(e, &e->k_span_id, SP_K_SPAN_ID), 0, hex);
}

/* The labels of one sample, in the order of the header comment. */
static int sample_labels(struct pprof_enc *e, const struct sp_sample *s, PbSample *ps,
			 PbLabel *slots)
{
	const struct sp_profile *p = e->b.p;
	const struct sp_resource *r = &p->resources[s->resource];
	uint32_t j;
	int err;

	err = add_label(ps, slots, key(e, &e->k_pid, SP_K_PID), 0, r->pid);
	if (!err && s->tid)
		err = add_label(ps, slots, key(e, &e->k_tid, SP_K_TID), 0, s->tid);
	if (!err && s->thread_name)
		err = str_label(e, ps, slots, key(e, &e->k_thread_name, SP_K_THREAD_NAME),
				s->thread_name, NULL);
	if (!err && s->link)
		err = link_labels(e, ps, slots, &p->links[s->link]);
	if (!err && r->service_name)
		err = str_label(e, ps, slots, key(e, &e->k_service, SP_K_SERVICE_NAME),
				r->service_name, NULL);
	for (j = 0; !err && j < s->n_labels; j++) {
		const struct sp_label *l = &s->labels[j];
		int32_t k = sp_strtab__ref(&e->b.st, l->key);

		if (l->str)
			err = str_label(e, ps, slots, k, l->str, NULL);
		else
			err = add_label(ps, slots, k, 0, l->num);
	}
	return err;
}

static int enc_samples(struct pprof_enc *e)
{
	const struct sp_profile *p = e->b.p;
	size_t n_labels = (size_t)p->n_samples * PB_LABELS_PER_SAMPLE, n_ids = 0, si = 0;
	PbSample *samples = NEW(e, p->n_samples, PbSample);
	PbSample **samplep = NEW(e, p->n_samples, PbSample *);
	PbLabel *labels = NEW(e, n_labels, PbLabel);
	PbLabel **labelp = NEW(e, n_labels, PbLabel *);
	int64_t *values = NEW(e, (size_t)p->n_samples * e->n_cols, int64_t);
	uint64_t *loc_ids;
	uint32_t i, j;
	int err;

	for (i = 0; i < p->n_samples; i++)
		n_ids += p->stack_len[p->samples[i].stack];
	loc_ids = NEW(e, n_ids, uint64_t);
	if (!samples || !samplep || !labels || !labelp || !values || !loc_ids)
		return -ENOMEM;
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		PbSample *ps = &samples[i];
		uint32_t off = p->stack_off[s->stack];
		bool off_cpu = s->kind == SP_KIND_OFFCPU;

		perftools__profiles__sample__init(ps);
		ps->location_id = &loc_ids[si];
		for (j = 0; j < p->stack_len[s->stack]; j++) {
			int32_t l = p->stack_locs[off + j];

			if (l > 0)
				loc_ids[si + ps->n_location_id++] = (uint64_t)l;
		}
		si += ps->n_location_id;
		ps->value = &values[(size_t)i * e->n_cols];
		ps->n_value = e->n_cols;
		ps->value[off_cpu ? 2 : 0] = s->count;
		ps->value[off_cpu ? 3 : 1] = s->value_ns;
		ps->label = &labelp[(size_t)i * PB_LABELS_PER_SAMPLE];
		err = sample_labels(e, s, ps, &labels[(size_t)i * PB_LABELS_PER_SAMPLE]);
		if (err)
			return err;
		samplep[i] = ps;
	}
	e->pb.n_sample = p->n_samples;
	e->pb.sample = samplep;
	return 0;
}

/* Every extra string is known once every other table is written. */
static int enc_string_table(struct pprof_enc *e)
{
	return sp_enc__string_table(&e->b, &e->pb.string_table, &e->pb.n_string_table);
}

/* In this order (the order numbers the extra strings). */
static int (*const steps[])(struct pprof_enc *) = {
	enc_sample_types, enc_mappings, enc_functions, enc_locations, enc_samples,
	enc_string_table,
};

int sp_pprof__encode(const struct sp_profile *p, uint8_t **out, size_t *out_len)
{
	struct pprof_enc e;
	size_t i;
	int err;

	memset(&e, 0, sizeof(e));
	err = sp_enc__begin(&e.b, p, out, out_len);
	if (err)
		return err;
	perftools__profiles__profile__init(&e.pb);

	for (i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](&e);
	return sp_enc__end(&e.b, err, &e.pb.base, out, out_len);
}
