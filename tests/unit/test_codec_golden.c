/* SPDX-License-Identifier: MIT */
/*
 * test_codec_golden.c - the OTLP and pprof encoders' bytes, pinned.
 *
 * Each case builds a deterministic profile, encodes it with both codecs and
 * compares the bytes with tests/unit/golden/<case>.{otlp,pprof}.pb, which
 * were written by the encoders as they were before they were split into one
 * function per table (so the refactor is proven byte-identical), and must
 * change only with a deliberate change of the wire format (issue 17's
 * compact OTLP will).  The cases cover what the small fixtures do not: many
 * tables, inline chains up to SP_MAX_INLINE, location 0 inside a stack,
 * kernel and native frames, numeric and string labels, samples with and
 * without timestamps of both kinds, an off-CPU period, resources with every
 * attribute, none, or no sample, and the empty profile.  Each golden file
 * must also decode, and the OTLP one re-encode to itself.
 *
 * SP_GOLDEN_WRITE=1 rewrites the files instead of comparing (then review
 * the diff: it is a wire-format change).  Files are found by
 * tu_source_path (testutil.h).
 *
 * The same cases check the compact form (issue 17): with every timestamp
 * dropped, the OTLP request decodes to the same totals (events and ns)
 * per stack and per span, of each kind, as the timestamped request and as
 * the pprof file; off-CPU wait counts included (they travel in the
 * off_cpu_waits Profile).  And samples of one identity become one Sample.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_profile_fixture.h"
#include "testutil.h"

/* ------------------------------------------------------------ cases */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)	/* 0 .. n-1, deterministic */
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (uint32_t)(rng_state >> 33) % n : 0;
}

static int32_t rstr(struct sp_profile *p, const char *prefix, uint32_t n)
{
	char s[64];

	snprintf(s, sizeof(s), "%s%u", prefix, rnd(n));
	return OK(sp_profile__intern(p, s));
}

/* Stable insertion sort of samples by (resource, kind). */
static void sort_res_kind(struct sp_sample *s, uint32_t n)
{
	uint32_t i, j;

	for (i = 1; i < n; i++) {
		struct sp_sample x = s[i];

		for (j = i; j > 0 && (s[j - 1].resource > x.resource ||
				      (s[j - 1].resource == x.resource && s[j - 1].kind > x.kind));
		     j--)
			s[j] = s[j - 1];
		s[j] = x;
	}
}

/* A profile shaped like a busy host's: 5 processes (one without samples,
 * one with every resource attribute), 300 samples. */
static struct sp_profile *case_random(void)
{
	struct sp_profile *p = sp_profile__new();
	int32_t maps[8], funcs[40], locs[120], stacks[60], links[10], res[5];
	static struct sp_sample smp[300];
	static uint64_t ts[300][8];
	uint32_t i, j;

	assert_non_null(p);
	rng_state = 42;
	p->time_unix_ns = FX_T0;
	p->duration_ns = 60000000000ull;
	p->period_ns[SP_KIND_ONCPU] = FX_PERIOD;
	p->period_ns[SP_KIND_OFFCPU] = 1000;
	for (i = 0; i < 8; i++) {
		struct sp_mapping m = { 0 };
		char bid[41];

		m.memory_start = 0x400000ull + i * 0x100000ull;
		m.memory_limit = m.memory_start + 0x80000 + rnd(0x1000);
		m.file_offset = rnd(4) * 0x1000;
		m.filename = i == 7 ? OK(sp_profile__intern(p, "[kernel.kallsyms]")) :
				      rstr(p, "/usr/lib/lib", 1000);
		if (i % 3) {
			uint32_t hi = rnd(1u << 31), lo = rnd(1u << 31);

			snprintf(bid, sizeof(bid), "%08x%08x%08x", hi, lo, i);
			m.build_id = OK(sp_profile__intern(p, bid));
		}
		m.has_functions = i & 1;
		m.has_filenames = i & 2;
		m.has_line_numbers = i & 4;
		m.has_inline_frames = i == 5;
		maps[i] = OK(sp_profile__add_mapping(p, &m));
	}
	for (i = 0; i < 40; i++) {
		struct sp_function f = { 0 };

		f.name = rstr(p, "fn_", 100000);
		f.system_name = i % 2 ? rstr(p, "_Z2fn", 100000) : 0;
		f.filename = i % 5 ? rstr(p, "src/file", 20) : 0;
		f.start_line = rnd(3) ? rnd(5000) : 0;
		funcs[i] = OK(sp_profile__add_function(p, &f));
	}
	for (i = 0; i < 120; i++) {
		struct sp_location l;
		uint32_t m = rnd(8);

		memset(&l, 0, sizeof(l));
		l.mapping = i == 3 ? 0 : maps[m];
		l.address = p->mappings[l.mapping].memory_start + rnd(0x80000) + i;
		l.frame_kind = m == 7 ? SP_FRAME_KERNEL : SP_FRAME_NATIVE;
		l.n_lines = (uint8_t)(i == 11 ? SP_MAX_INLINE : rnd(4));
		for (j = 0; j < l.n_lines; j++) {
			l.lines[j].function = rnd(9) ? funcs[rnd(40)] : 0;
			l.lines[j].line = rnd(10000);
			l.lines[j].column = rnd(3) ? 0 : rnd(80);
		}
		locs[i] = OK(sp_profile__add_location(p, &l));
	}
	for (i = 0; i < 60; i++) {
		int32_t st[64];
		uint32_t n = i == 0 ? 64 : 1 + rnd(20);

		for (j = 0; j < n; j++)
			st[j] = (i == 9 && j == 2) ? 0 : locs[rnd(120)];
		stacks[i] = OK(sp_profile__add_stack(p, st, n));
	}
	for (i = 0; i < 10; i++) {
		uint8_t trace[16], span[8];

		for (j = 0; j < 16; j++)
			trace[j] = (uint8_t)rnd(256);
		for (j = 0; j < 8; j++)
			span[j] = (uint8_t)rnd(256);
		links[i] = OK(sp_profile__add_link(p, trace, span));
	}
	for (i = 0; i < 5; i++) {
		struct sp_resource r = { 0 };

		r.pid = 1000 + i;
		if (i == 0) {
			r.service_name = OK(sp_profile__intern(p, "checkout"));
			r.exe_path = OK(sp_profile__intern(p, "/srv/checkout"));
			r.exe_name = OK(sp_profile__intern(p, "checkout"));
			r.container_id = OK(sp_profile__intern(p, "abcdef0123456789"));
			r.host_name = OK(sp_profile__intern(p, "node-7"));
		} else if (i == 2) {
			r.service_name = OK(sp_profile__intern(p, "cart"));
			r.host_name = OK(sp_profile__intern(p, "node-7"));
		} else if (i == 3) {
			r.pid = 0;	/* a kernel thread's resource */
		}
		res[i] = OK(sp_profile__add_resource(p, &r));
	}
	for (i = 0; i < 300; i++) {
		struct sp_sample *s = &smp[i];
		uint32_t nts;

		memset(s, 0, sizeof(*s));
		s->resource = res[rnd(4) == 3 ? 3 : rnd(3)];	/* res[4]: no samples */
		s->stack = rnd(15) ? stacks[rnd(60)] : 0;
		s->link = rnd(3) ? 0 : links[rnd(10)];
		s->kind = rnd(3) ? SP_KIND_ONCPU : SP_KIND_OFFCPU;
		s->tid = rnd(7) ? 1000 + rnd(50) : 0;
		s->thread_name = rnd(4) ? rstr(p, "worker-", 8) : 0;
		nts = rnd(3) ? 1 + rnd(8) : 0;
		s->count = nts ? nts : 1 + rnd(100);
		s->value_ns = s->kind == SP_KIND_ONCPU ? s->count * (int64_t)FX_PERIOD :
							 (int64_t)rnd(1u << 30) + 7;
		for (j = 0; j < nts; j++)
			ts[i][j] = FX_T0 + (uint64_t)i * 1000000 + j * 1000 + rnd(999);
		s->n_timestamps = nts;
		s->timestamps = nts ? ts[i] : NULL;
		s->n_labels = i == 17 ? SP_MAX_LABELS : rnd(4);
		for (j = 0; j < s->n_labels; j++) {
			s->labels[j].key = rstr(p, "label.", 6);
			if (rnd(2))
				s->labels[j].str = rstr(p, "value-", 30);
			else
				s->labels[j].num = (int64_t)rnd(1u << 31) - (1 << 30);
		}
		if (s->kind == SP_KIND_OFFCPU && rnd(2) && s->n_labels < SP_MAX_LABELS) {
			s->labels[s->n_labels].key =
				OK(sp_profile__intern(p, SP_LABEL_OFFCPU_REASON));
			s->labels[s->n_labels].str = rstr(p, "reason", 4);
			s->n_labels++;
		}
	}
	/* in (resource, kind) order, the order OTLP writes them in, so a
	 * decoded copy re-encodes to the same bytes */
	sort_res_kind(smp, 300);
	for (i = 0; i < 300; i++)
		OK(sp_profile__add_sample(p, &smp[i]));
	assert_int_equal(sp_profile__validate(p), 0);
	return p;
}

/* On-CPU only: pprof writes two columns, OTLP one Profile per resource. */
static struct sp_profile *case_oncpu_only(void)
{
	struct sp_profile *p = fx_build();
	uint32_t i, n = 0;

	for (i = 0; i < p->n_samples; i++)
		if (p->samples[i].kind == SP_KIND_ONCPU)
			p->samples[n++] = p->samples[i];
		else
			free(p->samples[i].timestamps);
	p->n_samples = n;
	assert_int_equal(sp_profile__validate(p), 0);
	return p;
}

static struct sp_profile *case_empty(void)
{
	struct sp_profile *p = sp_profile__new();

	assert_non_null(p);
	assert_int_equal(sp_profile__validate(p), 0);
	return p;
}

static const struct golden_case {
	const char *name;
	struct sp_profile *(*build)(void);
} cases[] = {
	{ "fixture", fx_build },
	{ "tiny", fx_tiny },
	{ "oncpu_only", case_oncpu_only },
	{ "random", case_random },
	{ "empty", case_empty },
};

/* ------------------------------------------------------------ files */

static void check_golden(const char *name, const char *ext, const uint8_t *got, size_t len)
{
	char rel[128], path[4096];
	uint8_t *want;
	size_t want_len;
	int err;

	snprintf(rel, sizeof(rel), "tests/unit/golden/%s.%s.pb", name, ext);
	if (tu_source_path(path, sizeof(path), rel))
		snprintf(path, sizeof(path), "%s", rel);	/* a new case: written here */
	if (getenv("SP_GOLDEN_WRITE")) {
		assert_int_equal(tu_write_file(path, got, len), 0);
		print_message("wrote %s (%zu bytes)\n", path, len);
		return;
	}
	err = tu_read_file(path, &want, &want_len);
	if (err)
		fail_msg("cannot read %s: %s (run from the repository root or set "
			 "SPANPROF_SRCDIR)", path, strerror(-err));
	if (want_len != len || memcmp(want, got, len)) {
		size_t i = 0;

		while (i < len && i < want_len && want[i] == got[i])
			i++;
		fail_msg("%s: %zu bytes encoded, %zu in the golden file; first difference "
			 "at byte %zu (a wire-format change? SP_GOLDEN_WRITE=1 rewrites)",
			 path, len, want_len, i);
	}
	free(want);
}

static void test_golden(void **state)
{
	const struct golden_case *c = *state;
	struct sp_profile *p = c->build(), *q = NULL;
	uint8_t *o = NULL, *pp = NULL, *o2 = NULL;
	size_t olen, plen, o2len;

	assert_int_equal(sp_otlp__encode(p, &o, &olen), 0);
	assert_int_equal(sp_pprof__encode(p, &pp, &plen), 0);
	check_golden(c->name, "otlp", o, olen);
	check_golden(c->name, "pprof", pp, plen);

	/* what was written reads back: OTLP to the same bytes (an off-CPU
	 * sample without timestamps loses its count, which OTLP does not
	 * carry), pprof as a valid profile */
	assert_int_equal(sp_otlp__decode(o, olen, &q), 0);
	assert_int_equal(sp_otlp__encode(q, &o2, &o2len), 0);
	assert_int_equal(o2len, olen);
	assert_memory_equal(o2, o, olen);
	sp_profile__free(q);
	q = NULL;
	assert_int_equal(sp_pprof__decode(pp, plen, &q), 0);
	assert_int_equal(sp_profile__validate(q), 0);

	sp_profile__free(q);
	sp_profile__free(p);
	free(o);
	free(o2);
	free(pp);
}

/* ------------------------------------------------------------ totals */

/* Events and ns of one key: a stack (by its addresses) or a span (by its
 * ids), of one kind. */
struct total {
	uint64_t key;
	int64_t count, ns;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static int total_cmp(const void *a, const void *b)
{
	const struct total *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* Totals of p by stack (by_span false) or by span, sorted and summed per
 * key; *n gets how many keys. */
static struct total *totals(const struct sp_profile *p, bool by_span, uint32_t *n)
{
	struct total *t = calloc(p->n_samples + 1, sizeof(*t));
	uint32_t i, j, w = 0;

	assert_non_null(t);
	for (i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];
		uint64_t h = fnv(1469598103934665603ull, &s->kind, 1);

		if (by_span) {
			h = fnv(h, &p->links[s->link], sizeof(p->links[0]));
		} else {
			for (j = 0; j < p->stack_len[s->stack]; j++) {
				int32_t l = p->stack_locs[p->stack_off[s->stack] + j];

				if (l > 0)	/* pprof has no unknown location */
					h = fnv(h, &p->locations[l].address, 8);
			}
		}
		t[i] = (struct total){ h, s->count, s->value_ns };
	}
	qsort(t, p->n_samples, sizeof(*t), total_cmp);
	for (i = 0; i < p->n_samples; i++) {
		if (w && t[w - 1].key == t[i].key) {
			t[w - 1].count += t[i].count;
			t[w - 1].ns += t[i].ns;
		} else {
			t[w++] = t[i];
		}
	}
	*n = w;
	return t;
}

static void assert_same_totals(const struct sp_profile *a, const struct sp_profile *b)
{
	for (int by_span = 0; by_span < 2; by_span++) {
		uint32_t na, nb;
		struct total *ta = totals(a, by_span, &na), *tb = totals(b, by_span, &nb);

		assert_int_equal(na, nb);
		for (uint32_t i = 0; i < na; i++) {
			assert_int_equal(ta[i].key, tb[i].key);
			assert_int_equal(ta[i].count, tb[i].count);
			assert_int_equal(ta[i].ns, tb[i].ns);
		}
		free(ta);
		free(tb);
	}
}

static bool any_timestamps(const struct sp_profile *p)
{
	for (uint32_t i = 0; i < p->n_samples; i++)
		if (p->samples[i].n_timestamps)
			return true;
	return false;
}

/* What the timestamped request says, the compact one says too. */
static void test_compact_totals(void **state)
{
	const struct golden_case *c = *state;
	struct sp_profile *p = c->build(), *ts = NULL, *compact = NULL, *pp = NULL;
	uint8_t *o = NULL, *oc = NULL, *ppb = NULL;
	size_t olen, oclen, pplen;

	assert_int_equal(sp_otlp__encode(p, &o, &olen), 0);
	assert_int_equal(sp_otlp__decode(o, olen, &ts), 0);
	sp_profile__drop_timestamps(p);
	assert_false(any_timestamps(p));
	assert_int_equal(sp_otlp__encode(p, &oc, &oclen), 0);
	assert_int_equal(sp_otlp__decode(oc, oclen, &compact), 0);
	assert_int_equal(sp_pprof__encode(p, &ppb, &pplen), 0);
	assert_int_equal(sp_pprof__decode(ppb, pplen, &pp), 0);
	assert_false(any_timestamps(compact));
	assert_true(compact->n_samples <= ts->n_samples);
	assert_same_totals(ts, compact);
	assert_same_totals(p, compact);
	assert_same_totals(pp, compact);

	sp_profile__free(p);
	sp_profile__free(ts);
	sp_profile__free(compact);
	sp_profile__free(pp);
	free(o);
	free(oc);
	free(ppb);
}

/* Three model samples of one identity (and one of another link) are two
 * Samples: the first with the summed count, off-CPU likewise with its
 * waits; with timestamps the merged Sample has them all. */
static void test_merge_identity(void **state)
{
	struct sp_profile *p = fx_tiny(), *q = NULL;
	struct sp_sample s = p->samples[0];
	uint8_t trace[16] = { 1 }, span[8] = { 2 };
	uint64_t ts[2] = { 11, 12 };
	uint8_t *o = NULL;
	size_t len;

	(void)state;
	s.n_timestamps = 0;
	s.timestamps = NULL;
	s.count = 4;
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	s.count = 5;
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	s.link = OK(sp_profile__add_link(p, trace, span));
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	s.link = 0;
	s.kind = SP_KIND_OFFCPU;
	s.count = 2;
	s.value_ns = 700;
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	s.count = 3;
	s.value_ns = 300;
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	s.kind = SP_KIND_ONCPU;
	s.count = 2;
	s.n_timestamps = 2;
	s.timestamps = ts;
	assert_true(sp_profile__add_sample(p, &s) >= 0);
	assert_int_equal(sp_otlp__encode(p, &o, &len), 0);
	assert_int_equal(sp_otlp__decode(o, len, &q), 0);
	/* fx_tiny's timestamped sample + this one; 4 + 5; the link's; the
	 * off-CPU pair */
	assert_int_equal(q->n_samples, 4);
	assert_int_equal(q->samples[0].n_timestamps, 3);
	assert_int_equal(q->samples[0].count, 3);
	assert_int_equal(q->samples[0].timestamps[1], 11);
	assert_int_equal(q->samples[1].count, 9);
	assert_int_equal(q->samples[1].n_timestamps, 0);
	assert_int_equal(q->samples[2].count, 5);
	assert_true(q->samples[2].link > 0);
	assert_int_equal(q->samples[3].kind, SP_KIND_OFFCPU);
	assert_int_equal(q->samples[3].count, 5);
	assert_int_equal(q->samples[3].value_ns, 1000);
	sp_profile__free(p);
	sp_profile__free(q);
	free(o);
}

int main(void)
{
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[2 * N + 1];
	char names[N][64];
	size_t i;

	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "compact_totals_%s", cases[i].name);
		tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_golden,
						.initial_state = (void *)&cases[i] };
		tests[N + i] = (struct CMUnitTest){ .name = names[i],
						    .test_func = test_compact_totals,
						    .initial_state = (void *)&cases[i] };
	}
	tests[2 * N] = (struct CMUnitTest){ .name = "merge_identity",
					    .test_func = test_merge_identity };
	return _cmocka_run_group_tests("golden", tests, 2 * N + 1, NULL, NULL);
}
