/* SPDX-License-Identifier: MIT */
/*
 * pprof_decode.c - google/pprof profile.proto -> struct sp_profile.  The
 * encoder is pprof_encode.c.
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

#include "base/kallsyms_format.h"
#include "profile/codec.h"
#include "profile/internal.h"
#include "profile/pprof_pb.h"

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

/* pprof carries no frame type: kernel frames are those of the mappings the
 * collector writes for kernel code (docs/formats.md "Kernel frames"):
 * [kernel.kallsyms], [kernel.boot] and [module:NAME]. */
static bool is_kernel_mapping(const struct sp_profile *p, int32_t m)
{
	const char *fn = sp_profile__str(p, p->mappings[m].filename);

	return !strncmp(fn, "[kernel", 7) ||
	       !strncmp(fn, SP_KALLSYMS_FN_MODULE, sizeof(SP_KALLSYMS_FN_MODULE) - 1);
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

	err = sp_dec__begin(buf, len, out, &alloc);
	if (err)
		return err;
	memset(&d, 0, sizeof(d));
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
