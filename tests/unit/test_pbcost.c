/* SPDX-License-Identifier: MIT */
/*
 * test_pbcost.c - the unpack-cost walker (src/profile/pbcost.c) and the
 * OTLP decode cost built on it (sp_otlp__cost):
 *   - the prediction covers what protobuf-c really allocates (live peak,
 *     measured with a counting allocator) plus the model the decoder
 *     builds (sp_profile__footprint), for profiles shaped like the
 *     agent's and like the hostile body of issue 15 (1M labelled samples),
 *     and is not wildly above it (within 3x);
 *   - streaming: fed in pieces of any size it gives the same answer;
 *   - 1M empty ResourceProfiles (the padding body) cost > 30 bytes per
 *     wire byte, known after the first piece, before any allocation;
 *   - malformed input (truncated, a length past its message, groups,
 *     nesting past the limit) is refused;
 *   - sp_otlp__decode_capped stops protobuf-c at the budget.
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "otlp_profiles_service.pb-c.h"
#include "profile/codec.h"
#include "profile/pbcost.h"
#include "profile/profile.h"

#define REQ_DESC \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor

/* ------------------------------------------------ measuring allocator */
struct live {
	size_t used, peak;
};

static void *live_alloc(void *d, size_t n)
{
	struct live *l = d;
	void *p = malloc(n);

	if (p) {
		l->used += malloc_usable_size(p) + 8;
		if (l->used > l->peak)
			l->peak = l->used;
	}
	return p;
}

static void live_free(void *d, void *p)
{
	struct live *l = d;

	if (p)
		l->used -= malloc_usable_size(p) + 8;
	free(p);
}

/* protobuf-c's real live peak for buf, or 0 when it refuses it. */
static size_t unpack_peak(const uint8_t *buf, size_t len)
{
	struct live l = { 0 };
	ProtobufCAllocator a = { live_alloc, live_free, &l };
	ProtobufCMessage *m = protobuf_c_message_unpack(&REQ_DESC, &a, len, buf);

	if (!m)
		return 0;
	protobuf_c_message_free_unpacked(m, &a);
	assert_int_equal(l.used, 0);
	return l.peak;
}

/* ------------------------------------------------ inputs */

/* n_samples samples over n_stacks stacks of depth frames, each sample
 * with labels string labels and ts timestamps. */
static uint8_t *make_request(uint32_t n_samples, uint32_t n_stacks, uint32_t depth,
			     uint32_t labels, uint32_t ts, size_t *len)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_resource r = { .pid = 42 };
	struct sp_mapping m = { .memory_start = 0x400000, .memory_limit = 0x800000 };
	int32_t stacks[256], locs[64], res;
	uint64_t *times = calloc(ts ? ts : 1, sizeof(*times));
	uint8_t *out = NULL;

	assert_non_null(p);
	assert_true(n_stacks <= 256 && depth <= 64);
	m.filename = sp_profile__intern(p, "/usr/bin/app");
	m.build_id = sp_profile__intern(p, "0123456789abcdef0123456789abcdef01234567");
	r.exe_path = m.filename;
	res = sp_profile__add_resource(p, &r);
	m.memory_start = sp_profile__add_mapping(p, &m) ? 0x400000 : 0;
	for (uint32_t s = 0; s < n_stacks; s++) {
		for (uint32_t d = 0; d < depth; d++) {
			struct sp_location l = { .mapping = 1, .address = 0x401000 + s * 4096 + d };

			locs[d] = sp_profile__add_location(p, &l);
			assert_true(locs[d] > 0);
		}
		stacks[s] = sp_profile__add_stack(p, locs, depth);
		assert_true(stacks[s] > 0);
	}
	p->period_ns[SP_KIND_ONCPU] = 10309278;
	for (uint32_t i = 0; i < n_samples; i++) {
		struct sp_sample s = { .resource = res, .stack = stacks[i % n_stacks],
				       .tid = i % 97 + 1, .count = ts ? ts : 1 };
		char key[16], val[32];

		s.value_ns = s.count * 10309278;
		for (uint32_t k = 0; k < labels && k < SP_MAX_LABELS; k++) {
			snprintf(key, sizeof(key), "k%u", k);
			snprintf(val, sizeof(val), "v%u", (i + k) % 1000);
			s.labels[k].key = sp_profile__intern(p, key);
			s.labels[k].str = sp_profile__intern(p, val);
		}
		s.n_labels = labels;
		for (uint32_t t = 0; t < ts; t++)
			times[t] = 1700000000000000000ull + i * 1000 + t;
		s.n_timestamps = ts;
		s.timestamps = ts ? times : NULL;
		assert_true(sp_profile__add_sample(p, &s) >= 0);
	}
	assert_int_equal(sp_otlp__encode(p, &out, len), 0);
	sp_profile__free(p);
	free(times);
	return out;
}

static void walk_all(struct sp_pbcost *w, const uint8_t *buf, size_t len)
{
	sp_pbcost__init(w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__finish(w, buf, len), 0);
}

/* prediction >= protobuf-c's peak + the model, and within 3x of it */
static void check_covers(const uint8_t *buf, size_t len)
{
	struct sp_pbcost w;
	struct sp_profile *p = NULL;
	size_t peak = unpack_peak(buf, len);
	uint64_t predicted, model;

	assert_true(peak > 0);
	walk_all(&w, buf, len);
	assert_true(w.bytes >= peak);
	assert_int_equal(sp_otlp__decode(buf, len, &p), 0);
	model = sp_profile__footprint(p);
	sp_profile__free(p);
	predicted = sp_otlp__cost(&w);
	print_message("  %zu wire bytes: unpack %zu (predicted %llu), model %llu, total "
		      "predicted %llu (%.2fx)\n", len, peak, (unsigned long long)w.bytes,
		      (unsigned long long)model, (unsigned long long)predicted,
		      (double)predicted / (double)(peak + model));
	assert_true(predicted >= peak + model);
	assert_true(predicted <= 3 * (peak + model));
}

static void test_agent_shaped(void **state)
{
	size_t len;
	uint8_t *buf = make_request(4000, 200, 24, 2, 3, &len);

	(void)state;
	check_covers(buf, len);
	free(buf);
}

static void test_labelled_million(void **state)
{
	size_t len;
	/* the hostile body: ~1M samples with 16 labels each */
	uint8_t *buf = make_request(1u << 20, 16, 8, 16, 0, &len);

	(void)state;
	check_covers(buf, len);
	free(buf);
}

static void test_streaming_same(void **state)
{
	struct sp_pbcost whole, parts;
	size_t len, at = 0, step = 1;
	uint8_t *buf = make_request(300, 30, 12, 4, 2, &len);

	(void)state;
	walk_all(&whole, buf, len);
	sp_pbcost__init(&parts, &REQ_DESC, 32);
	while (at < len) {
		uint64_t before = parts.bytes;

		at = at + step > len ? len : at + step;
		step = step * 3 % 97 + 1;	/* pieces of 1..97 bytes */
		assert_int_equal(sp_pbcost__feed(&parts, buf, at), 0);
		assert_true(parts.bytes >= before);	/* a lower bound that only grows */
	}
	assert_int_equal(sp_pbcost__finish(&parts, buf, len), 0);
	assert_int_equal(parts.bytes, whole.bytes);
	assert_int_equal(parts.total_msgs, whole.total_msgs);
	assert_int_equal(parts.str_bytes, whole.str_bytes);
	free(buf);
}

static void test_padding_early(void **state)
{
	const size_t n = 1u << 20, len = 2 * n;	/* field 1, length 0, n times */
	uint8_t *buf = malloc(len);
	struct sp_pbcost w;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = 0x0a;
		buf[2 * i + 1] = 0;
	}
	sp_pbcost__init(&w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__feed(&w, buf, 64 << 10), 0);
	/* after the first 64 KiB piece the cost is already known to pass
	 * 30 bytes per wire byte */
	assert_true(w.bytes > 30ull * (64 << 10));
	assert_int_equal(sp_pbcost__finish(&w, buf, len), 0);
	assert_int_equal(sp_pbcost__msgs(&w, &opentelemetry__proto__profiles__v1development__resource_profiles__descriptor),
			 n);
	assert_true(w.bytes > 30ull * len);
	assert_true(w.bytes >= unpack_peak(buf, len));
	free(buf);
}

static void test_malformed(void **state)
{
	/* truncated: a resource_profiles field of 5 bytes with 2 present */
	static const uint8_t cut[] = { 0x0a, 0x05, 0x0a, 0x00 };
	/* an inner length past its message */
	static const uint8_t past[] = { 0x0a, 0x02, 0x0a, 0x05, 0, 0, 0, 0, 0 };
	/* a group (wire type 3) */
	static const uint8_t group[] = { 0x0b, 0x0c };
	/* a varint of 11 bytes */
	static const uint8_t longv[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0x01 };
	uint8_t deep[256];
	struct sp_pbcost w;
	size_t n = 0;

	(void)state;
	sp_pbcost__init(&w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__feed(&w, cut, sizeof(cut)), 0);	/* waits */
	assert_int_equal(sp_pbcost__finish(&w, cut, sizeof(cut)), -EBADMSG);
	sp_pbcost__init(&w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__finish(&w, past, sizeof(past)), -EBADMSG);
	sp_pbcost__init(&w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__feed(&w, group, sizeof(group)), -EBADMSG);
	sp_pbcost__init(&w, &REQ_DESC, 32);
	assert_int_equal(sp_pbcost__feed(&w, longv, sizeof(longv)), -EBADMSG);
	/* dictionary(2) > attribute_table(6) > value(2) AnyValue, then
	 * kvlist_value(6) > values(1) KeyValue > value(2) AnyValue, 12 times:
	 * 39 levels, built inside out */
	for (int level = 38; level >= 0; level--) {
		static const uint8_t head[3] = { 2, 6, 2 }, body[3] = { 6, 1, 2 };
		uint8_t field = level < 3 ? head[level] : body[(level - 3) % 3];

		memmove(deep + 2, deep, n);
		deep[0] = (uint8_t)(field << 3 | 2);
		deep[1] = (uint8_t)n;
		n += 2;
	}
	sp_pbcost__init(&w, &REQ_DESC, 8);
	assert_int_equal(sp_pbcost__finish(&w, deep, n), -EBADMSG);
	/* sticky */
	assert_int_equal(sp_pbcost__feed(&w, deep, n), -EBADMSG);
}

static void test_decode_capped(void **state)
{
	struct sp_profile *p = NULL;
	struct sp_pbcost w;
	size_t len;
	uint8_t *buf = make_request(2000, 50, 16, 4, 0, &len);

	(void)state;
	walk_all(&w, buf, len);
	assert_int_equal(sp_otlp__decode_capped(buf, len, w.bytes, &p), 0);
	sp_profile__free(p);
	p = NULL;
	assert_int_equal(sp_otlp__decode_capped(buf, len, w.bytes / 4, &p), -E2BIG);
	assert_null(p);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_shaped),
		cmocka_unit_test(test_labelled_million),
		cmocka_unit_test(test_streaming_same),
		cmocka_unit_test(test_padding_early),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_decode_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
