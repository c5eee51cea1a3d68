/* SPDX-License-Identifier: MIT */
/*
 * test_profile_fixture.h - shared by the profile/pprof/OTLP unit tests:
 * a small but complete profile, a tiny one for golden bytes, a comparison
 * that resolves strings, and hex helpers.  Header-only (static functions);
 * include after <cmocka.h>.
 */
#ifndef SPANPROF_TEST_PROFILE_FIXTURE_H
#define SPANPROF_TEST_PROFILE_FIXTURE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/codec.h"
#include "profile/profile.h"

#define FX_PERIOD 10309278ull	/* 1e9 / 97 */
#define FX_T0 1700000000000000000ull

#define OK(x) ({ __typeof__(x) r_ = (x); assert_true(r_ >= 0); r_; })

/* Samples appear in resource order, then kind order, and every table entry
 * in first-use order, so both codecs keep indices and order. */
static __attribute__((unused)) struct sp_profile *fx_build(void)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m = { 0 };
	struct sp_function f = { 0 };
	struct sp_location l;
	struct sp_resource r = { 0 };
	struct sp_sample s;
	int32_t mu, mk, fmain, fwork, l1, l2, l3, s1, s2, s3, lk, r0, r1;
	uint8_t trace[16], span[8];
	uint64_t ts[3] = { FX_T0 + 1000, FX_T0 + 2000, FX_T0 + 3000 };
	uint64_t ts_off[1] = { FX_T0 + 4000 };
	int i;

	assert_non_null(p);
	p->time_unix_ns = FX_T0;
	p->duration_ns = 10000000000ull;
	p->period_ns[SP_KIND_ONCPU] = FX_PERIOD;

	m.memory_start = 0x400000;
	m.memory_limit = 0x500000;
	m.file_offset = 0x1000;
	m.filename = OK(sp_profile__intern(p, "/usr/bin/demo"));
	m.build_id = OK(sp_profile__intern(p, "0123456789abcdef0123456789abcdef01234567"));
	m.has_functions = true;
	mu = OK(sp_profile__add_mapping(p, &m));
	memset(&m, 0, sizeof(m));
	m.memory_start = 0xffffffff81000000ull;
	m.memory_limit = 0xffffffff82000000ull;
	m.filename = OK(sp_profile__intern(p, "[kernel.kallsyms]"));
	m.build_id = OK(sp_profile__intern(p, "aabbccdd"));
	mk = OK(sp_profile__add_mapping(p, &m));

	f.name = OK(sp_profile__intern(p, "work"));
	f.system_name = OK(sp_profile__intern(p, "_Z4workv"));
	f.filename = OK(sp_profile__intern(p, "demo.c"));
	f.start_line = 7;
	fwork = OK(sp_profile__add_function(p, &f));
	memset(&f, 0, sizeof(f));
	f.name = OK(sp_profile__intern(p, "main"));
	f.filename = OK(sp_profile__intern(p, "demo.c"));
	fmain = OK(sp_profile__add_function(p, &f));

	memset(&l, 0, sizeof(l));
	l.mapping = mu;
	l.address = 0x401234;
	l.n_lines = 2;
	l.lines[0] = (struct sp_line){ fwork, 12, 3 };
	l.lines[1] = (struct sp_line){ fmain, 30, 0 };
	l1 = OK(sp_profile__add_location(p, &l));
	memset(&l, 0, sizeof(l));
	l.mapping = mu;
	l.address = 0x401500;
	l2 = OK(sp_profile__add_location(p, &l));
	memset(&l, 0, sizeof(l));
	l.mapping = mk;
	l.address = 0xffffffff81234567ull;
	l.frame_kind = SP_FRAME_KERNEL;
	l3 = OK(sp_profile__add_location(p, &l));

	s1 = OK(sp_profile__add_stack(p, (int32_t[]){ l1, l2 }, 2));
	s2 = OK(sp_profile__add_stack(p, (int32_t[]){ l3, l1, l2 }, 3));
	s3 = OK(sp_profile__add_stack(p, (int32_t[]){ l2 }, 1));

	for (i = 0; i < 16; i++)
		trace[i] = (uint8_t)(0xa0 + i);
	for (i = 0; i < 8; i++)
		span[i] = (uint8_t)(0x10 + i);
	lk = OK(sp_profile__add_link(p, trace, span));

	r.pid = 100;
	r.service_name = OK(sp_profile__intern(p, "checkout"));
	r.exe_path = OK(sp_profile__intern(p, "/usr/bin/demo"));
	r.exe_name = OK(sp_profile__intern(p, "demo"));
	r.container_id = OK(sp_profile__intern(p, "c0ffee"));
	r.host_name = OK(sp_profile__intern(p, "host1"));
	r0 = OK(sp_profile__add_resource(p, &r));
	memset(&r, 0, sizeof(r));
	r.pid = 200;
	r1 = OK(sp_profile__add_resource(p, &r));

	memset(&s, 0, sizeof(s));
	s.resource = r0;
	s.stack = s1;
	s.link = lk;
	s.kind = SP_KIND_ONCPU;
	s.tid = 101;
	s.thread_name = OK(sp_profile__intern(p, "worker-1"));
	s.count = 3;
	s.value_ns = 3 * FX_PERIOD;
	s.n_timestamps = 3;
	s.timestamps = ts;
	OK(sp_profile__add_sample(p, &s));

	memset(&s, 0, sizeof(s));
	s.resource = r0;
	s.stack = s2;
	s.link = lk;
	s.kind = SP_KIND_OFFCPU;
	s.tid = 102;
	s.thread_name = OK(sp_profile__intern(p, "worker-2"));
	s.count = 1;
	s.value_ns = 123456789;
	s.n_labels = 1;
	s.labels[0].key = OK(sp_profile__intern(p, "off_cpu_reason"));
	s.labels[0].str = OK(sp_profile__intern(p, "futex"));
	s.n_timestamps = 1;
	s.timestamps = ts_off;
	OK(sp_profile__add_sample(p, &s));

	memset(&s, 0, sizeof(s));
	s.resource = r1;
	s.stack = s3;
	s.kind = SP_KIND_ONCPU;
	s.tid = 201;
	s.count = 2;
	s.value_ns = 2 * FX_PERIOD;
	s.n_labels = 1;
	s.labels[0].key = OK(sp_profile__intern(p, "cpu.logical_number"));
	s.labels[0].num = 3;
	OK(sp_profile__add_sample(p, &s));

	assert_int_equal(sp_profile__validate(p), 0);
	return p;
}

/* The tiny profile of the golden-bytes tests: strings "", "a.out"; mapping
 * 1 [0x10, 0x20) a.out; location 1 = mapping 1 address 0x15 (native);
 * stack 1 = [1]; resource 0 pid 7; one on-CPU sample count 1, value 3 ns,
 * timestamp 9; time 5, duration 6, period 3. */
static __attribute__((unused)) struct sp_profile *fx_tiny(void)
{
	static uint64_t ts[1] = { 9 };
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m = { 0 };
	struct sp_location l;
	struct sp_resource r = { 0 };
	struct sp_sample s;

	assert_non_null(p);
	m.memory_start = 0x10;
	m.memory_limit = 0x20;
	m.filename = OK(sp_profile__intern(p, "a.out"));
	assert_int_equal(sp_profile__add_mapping(p, &m), 1);
	memset(&l, 0, sizeof(l));
	l.mapping = 1;
	l.address = 0x15;
	assert_int_equal(sp_profile__add_location(p, &l), 1);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 1 }, 1), 1);
	r.pid = 7;
	assert_int_equal(sp_profile__add_resource(p, &r), 0);
	memset(&s, 0, sizeof(s));
	s.stack = 1;
	s.count = 1;
	s.value_ns = 3;
	s.n_timestamps = 1;
	s.timestamps = ts;
	assert_int_equal(sp_profile__add_sample(p, &s), 0);
	p->time_unix_ns = 5;
	p->duration_ns = 6;
	p->period_ns[SP_KIND_ONCPU] = 3;
	return p;
}

/* What a codec cannot carry. */
#define FX_NO_TIMESTAMPS 1u	/* pprof */
#define FX_NO_RES_EXTRA 2u	/* pprof: only pid and service.name */
#define FX_NO_HAS_FLAGS 4u	/* OTLP: mapping has_* */

#define S(p, i) sp_profile__str((p), (i))

static __attribute__((unused)) void fx_assert_equal(const struct sp_profile *a, const struct sp_profile *b,
			    unsigned int lossy)
{
	uint32_t i, j;

	assert_int_equal(sp_profile__validate(b), 0);
	assert_int_equal(a->time_unix_ns, b->time_unix_ns);
	assert_int_equal(a->duration_ns, b->duration_ns);
	assert_int_equal(a->period_ns[SP_KIND_ONCPU], b->period_ns[SP_KIND_ONCPU]);

	assert_int_equal(a->n_mappings, b->n_mappings);
	for (i = 0; i < a->n_mappings; i++) {
		const struct sp_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		assert_int_equal(x->memory_start, y->memory_start);
		assert_int_equal(x->memory_limit, y->memory_limit);
		assert_int_equal(x->file_offset, y->file_offset);
		assert_string_equal(S(a, x->filename), S(b, y->filename));
		assert_string_equal(S(a, x->build_id), S(b, y->build_id));
		if (!(lossy & FX_NO_HAS_FLAGS)) {
			assert_int_equal(x->has_functions, y->has_functions);
			assert_int_equal(x->has_filenames, y->has_filenames);
			assert_int_equal(x->has_line_numbers, y->has_line_numbers);
			assert_int_equal(x->has_inline_frames, y->has_inline_frames);
		}
	}
	assert_int_equal(a->n_functions, b->n_functions);
	for (i = 0; i < a->n_functions; i++) {
		assert_string_equal(S(a, a->functions[i].name), S(b, b->functions[i].name));
		assert_string_equal(S(a, a->functions[i].system_name),
				    S(b, b->functions[i].system_name));
		assert_string_equal(S(a, a->functions[i].filename),
				    S(b, b->functions[i].filename));
		assert_int_equal(a->functions[i].start_line, b->functions[i].start_line);
	}
	assert_int_equal(a->n_locations, b->n_locations);
	for (i = 0; i < a->n_locations; i++) {
		const struct sp_location *x = &a->locations[i], *y = &b->locations[i];

		assert_int_equal(x->mapping, y->mapping);
		assert_int_equal(x->address, y->address);
		assert_int_equal(x->frame_kind, y->frame_kind);
		assert_int_equal(x->n_lines, y->n_lines);
		for (j = 0; j < x->n_lines; j++) {
			assert_int_equal(x->lines[j].function, y->lines[j].function);
			assert_int_equal(x->lines[j].line, y->lines[j].line);
			assert_int_equal(x->lines[j].column, y->lines[j].column);
		}
	}
	assert_int_equal(a->n_links, b->n_links);
	assert_memory_equal(a->links, b->links, a->n_links * sizeof(*a->links));
	assert_int_equal(a->n_stacks, b->n_stacks);
	for (i = 0; i < a->n_stacks; i++) {
		assert_int_equal(a->stack_len[i], b->stack_len[i]);
		for (j = 0; j < a->stack_len[i]; j++)
			assert_int_equal(a->stack_locs[a->stack_off[i] + j],
					 b->stack_locs[b->stack_off[i] + j]);
	}
	assert_int_equal(a->n_resources, b->n_resources);
	for (i = 0; i < a->n_resources; i++) {
		const struct sp_resource *x = &a->resources[i], *y = &b->resources[i];

		assert_int_equal(x->pid, y->pid);
		assert_string_equal(S(a, x->service_name), S(b, y->service_name));
		if (!(lossy & FX_NO_RES_EXTRA)) {
			assert_string_equal(S(a, x->exe_path), S(b, y->exe_path));
			assert_string_equal(S(a, x->exe_name), S(b, y->exe_name));
			assert_string_equal(S(a, x->container_id), S(b, y->container_id));
			assert_string_equal(S(a, x->host_name), S(b, y->host_name));
		}
	}
	assert_int_equal(a->n_samples, b->n_samples);
	for (i = 0; i < a->n_samples; i++) {
		const struct sp_sample *x = &a->samples[i], *y = &b->samples[i];

		assert_int_equal(x->resource, y->resource);
		assert_int_equal(x->stack, y->stack);
		assert_int_equal(x->link, y->link);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->tid, y->tid);
		assert_string_equal(S(a, x->thread_name), S(b, y->thread_name));
		assert_int_equal(x->count, y->count);
		assert_int_equal(x->value_ns, y->value_ns);
		assert_int_equal(x->n_labels, y->n_labels);
		for (j = 0; j < x->n_labels; j++) {
			assert_string_equal(S(a, x->labels[j].key), S(b, y->labels[j].key));
			assert_string_equal(S(a, x->labels[j].str), S(b, y->labels[j].str));
			assert_int_equal(x->labels[j].num, y->labels[j].num);
		}
		if (lossy & FX_NO_TIMESTAMPS) {
			assert_int_equal(y->n_timestamps, 0);
		} else {
			assert_int_equal(x->n_timestamps, y->n_timestamps);
			if (x->n_timestamps)
				assert_memory_equal(x->timestamps, y->timestamps,
						    x->n_timestamps * sizeof(uint64_t));
		}
	}
}

/* Hex with spaces, newlines and "#...\n" comments -> bytes (malloc'd). */
static __attribute__((unused)) uint8_t *fx_unhex(const char *s, size_t *len)
{
	uint8_t *out = malloc(strlen(s) / 2 + 1);
	size_t n = 0;
	int hi = -1;

	assert_non_null(out);
	for (; *s; s++) {
		int v;

		if (*s == '#') {
			while (*s && *s != '\n')
				s++;
			if (!*s)
				break;
			continue;
		}
		if (isspace((unsigned char)*s))
			continue;
		assert_true(isxdigit((unsigned char)*s));
		v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	assert_int_equal(hi, -1);
	*len = n;
	return out;
}

static __attribute__((unused)) void fx_assert_bytes(const uint8_t *got, size_t got_len, const char *want_hex)
{
	size_t want_len, i;
	uint8_t *want = fx_unhex(want_hex, &want_len);

	if (got_len != want_len || memcmp(got, want, got_len)) {
		fprintf(stderr, "golden mismatch: got %zu bytes, want %zu\n got:", got_len, want_len);
		for (i = 0; i < got_len; i++)
			fprintf(stderr, " %02x", got[i]);
		fprintf(stderr, "\nwant:");
		for (i = 0; i < want_len; i++)
			fprintf(stderr, " %02x", want[i]);
		fprintf(stderr, "\n");
	}
	assert_int_equal(got_len, want_len);
	assert_memory_equal(got, want, want_len);
	free(want);
}

/* Writes buf to $SP_CODEC_DUMP_DIR/name when that variable is set (used by
 * tests/integration/test_codec_protoc.sh). */
static __attribute__((unused)) void fx_dump(const char *name, const uint8_t *buf, size_t len)
{
	const char *dir = getenv("SP_CODEC_DUMP_DIR");
	char path[4096];
	FILE *f;

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* A codec's two directions (sp_pprof__*, sp_otlp__*), for the checks both
 * codecs' tests make alike. */
typedef int (*fx_encode_fn)(const struct sp_profile *p, uint8_t **out, size_t *out_len);
typedef int (*fx_decode_fn)(const uint8_t *buf, size_t len, struct sp_profile **out);

/* fx_build() through encode and decode is the same profile but for what
 * the codec cannot carry (lossy: FX_NO_*), and re-encoding the decoded
 * profile gives the same bytes. */
static __attribute__((unused)) void fx_assert_round_trip(fx_encode_fn encode, fx_decode_fn decode,
							 unsigned int lossy)
{
	struct sp_profile *p = fx_build(), *q = NULL;
	uint8_t *buf = NULL, *buf2 = NULL;
	size_t len, len2;

	assert_int_equal(encode(p, &buf, &len), 0);
	assert_int_equal(decode(buf, len, &q), 0);
	fx_assert_equal(p, q, lossy);
	assert_int_equal(encode(q, &buf2, &len2), 0);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	free(buf);
	free(buf2);
	sp_profile__free(p);
	sp_profile__free(q);
}

/* decode's result for the bytes hex spells (fx_unhex); a failed decode
 * must leave its output NULL (asserted). */
static __attribute__((unused)) int fx_decode_hex(fx_decode_fn decode, const char *hex)
{
	struct sp_profile *q = (struct sp_profile *)1;
	uint8_t *in;
	size_t len;
	int r;

	in = fx_unhex(hex, &len);
	r = decode(in, len, &q);
	if (r)
		assert_null(q);
	sp_profile__free(q);
	free(in);
	return r;
}

/* Untrusted bytes never crash decode nor give an invalid profile: every
 * strict prefix of buf (len bytes, a valid encoding) that cuts a field
 * fails with its output NULL, one ending on a field boundary may decode (a
 * smaller profile, valid); then 200 random buffers of up to 4 KiB and one
 * corrupted byte at each offset of buf (restored after: buf is unchanged
 * on return), from rand_r(seed). */
static __attribute__((unused)) void fx_assert_decode_robust(fx_decode_fn decode, uint8_t *buf,
							    size_t len, unsigned int seed)
{
	struct sp_profile *q;
	uint8_t junk[4096];
	size_t cut;

	for (cut = 0; cut < len; cut++) {
		q = NULL;
		if (decode(buf, cut, &q) == 0)
			assert_int_equal(sp_profile__validate(q), 0);
		else
			assert_null(q);
		sp_profile__free(q);
	}
	for (unsigned int i = 0; i < 200; i++) {
		for (size_t j = 0; j < sizeof(junk); j++)
			junk[j] = (uint8_t)(rand_r(&seed) >> 7);
		q = NULL;
		if (decode(junk, 1 + rand_r(&seed) % sizeof(junk), &q) == 0)
			assert_int_equal(sp_profile__validate(q), 0);
		sp_profile__free(q);
	}
	for (cut = 0; cut < len; cut++) {
		uint8_t saved = buf[cut];

		buf[cut] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		q = NULL;
		if (decode(buf, len, &q) == 0)
			assert_int_equal(sp_profile__validate(q), 0);
		sp_profile__free(q);
		buf[cut] = saved;
	}
}

#endif /* SPANPROF_TEST_PROFILE_FIXTURE_H */
