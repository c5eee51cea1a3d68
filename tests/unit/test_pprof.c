/* SPDX-License-Identifier: MIT */
/*
 * test_pprof.c - pprof codec: round trip, golden bytes derived by hand from
 * the field numbers of google/pprof profile.proto, and hostile input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "test_profile_fixture.h"
#include "pprof.pb-c.h"

static void test_pprof_round_trip(void **state)
{
	(void)state;
	fx_assert_round_trip(sp_pprof__encode, sp_pprof__decode, FX_NO_TIMESTAMPS | FX_NO_RES_EXTRA);
}

/* go tool pprof names a profile after its first mapping: the main
 * executable's is written first even when the kernel's came first in the
 * model; ids stay the model's indices. */
static void test_pprof_main_mapping_first(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m = { .memory_start = 0xffff800000000000ull, .memory_limit = UINT64_MAX };
	Perftools__Profiles__Profile *pb;
	uint8_t *buf = NULL;
	size_t len;
	int32_t exe, res, loc, st;

	(void)state;
	m.filename = OK(sp_profile__intern(p, "[kernel.kallsyms]"));
	OK(sp_profile__add_mapping(p, &m));
	m = (struct sp_mapping){ .memory_start = 0x7f0000000000, .memory_limit = 0x7f0000100000 };
	m.filename = OK(sp_profile__intern(p, "/usr/lib/libc.so.6"));
	OK(sp_profile__add_mapping(p, &m));
	exe = OK(sp_profile__intern(p, "/usr/bin/make"));
	m = (struct sp_mapping){ .memory_start = 0x400000, .memory_limit = 0x500000,
				 .filename = exe };
	OK(sp_profile__add_mapping(p, &m));
	res = OK(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 7, .exe_path = exe }));
	loc = OK(sp_profile__add_location(p, &(struct sp_location){ .mapping = 3,
								    .address = 0x400100 }));
	st = OK(sp_profile__add_stack(p, &loc, 1));
	OK(sp_profile__add_sample(p, &(struct sp_sample){ .resource = res, .stack = st,
							  .count = 1 }));
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(pb);
	assert_int_equal(pb->n_mapping, 3);
	assert_int_equal(pb->mapping[0]->id, 3);
	assert_string_equal(pb->string_table[pb->mapping[0]->filename], "/usr/bin/make");
	assert_int_equal(pb->mapping[1]->id, 1);
	assert_int_equal(pb->mapping[2]->id, 2);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(buf);
	sp_profile__free(p);
}

/* pprof has no frame type: the decoder gives it back from the mapping.
 * Every mapping of kernel code the collector writes (docs/formats.md
 * "Kernel frames": [kernel.kallsyms], [module:NAME], [kernel.boot]) makes
 * its locations kernel frames - a module frame taken for user code would
 * be looked up as an offset in an ELF file instead of in the snapshot's
 * module. */
static void test_pprof_kernel_mappings_decode_as_kernel(void **state)
{
	static const char *const names[] = { "[kernel.kallsyms]", "[module:nf_tables]",
					      "[kernel.boot]", "/usr/bin/make" };
	static const uint64_t addrs[] = { 0xffffffff81234567ull, 0x1a2b,
					  0xffffffffc0001000ull, 0x400100 };
	struct sp_profile *p = sp_profile__new(), *q = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int32_t locs[4], st, res;

	(void)state;
	for (int i = 0; i < 4; i++) {
		struct sp_mapping m = { .memory_start = i == 3 ? 0x400000 : 0,
					.memory_limit = i == 3 ? 0x500000 : UINT64_MAX };

		m.filename = OK(sp_profile__intern(p, names[i]));
		OK(sp_profile__add_mapping(p, &m));
		locs[i] = OK(sp_profile__add_location(p, &(struct sp_location){
			.mapping = i + 1, .address = addrs[i],
			.frame_kind = i == 3 ? SP_FRAME_NATIVE : SP_FRAME_KERNEL }));
	}
	st = OK(sp_profile__add_stack(p, locs, 4));
	res = OK(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 7 }));
	OK(sp_profile__add_sample(p, &(struct sp_sample){ .resource = res, .stack = st,
							  .count = 1 }));
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	assert_int_equal(sp_pprof__decode(buf, len, &q), 0);
	assert_int_equal(q->n_locations, p->n_locations);
	for (uint32_t i = 1; i < q->n_locations; i++) {	/* 0: no location */
		const char *fn = sp_profile__str(q, q->mappings[q->locations[i].mapping].filename);

		assert_int_equal(q->locations[i].frame_kind,
				 strcmp(fn, "/usr/bin/make") ? SP_FRAME_KERNEL : SP_FRAME_NATIVE);
	}
	free(buf);
	sp_profile__free(p);
	sp_profile__free(q);
}

static void test_pprof_oncpu_only_two_columns(void **state)
{
	struct sp_profile *p = fx_tiny(), *q = NULL;
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	assert_int_equal(sp_pprof__decode(buf, len, &q), 0);
	assert_int_equal(q->n_samples, 1);
	assert_int_equal(q->samples[0].kind, SP_KIND_ONCPU);
	assert_int_equal(q->samples[0].count, 1);
	assert_int_equal(q->samples[0].value_ns, 3);
	free(buf);
	sp_profile__free(p);
	sp_profile__free(q);
}

/*
 * Golden bytes for fx_tiny().  Derived by hand; field numbers from the spec
 * (Profile: 1 sample_type, 2 sample, 3 mapping, 4 location, 6 string_table,
 * 9 time_nanos, 10 duration_nanos, 11 period_type, 12 period,
 * 14 default_sample_type).  tag = field << 3 | wire type (0 varint, 2 LEN).
 * String table: only the strings the file references, in order of first
 * use: "", samples(1) count(2) cpu(3) nanoseconds(4) (sample types come
 * first), a.out(5) (the mapping), pid(6) (the label).
 */
static const char pprof_golden[] =
	"0a 04 08 01 10 02\n"		/* 1 sample_type {type 1 samples, unit 2 count} */
	"0a 04 08 03 10 04\n"		/* 1 sample_type {3 cpu, 4 nanoseconds} */
	"12 0d\n"			/* 2 sample, 13 bytes */
	"   0a 01 01\n"			/*   1 location_id packed [1] */
	"   12 02 01 03\n"		/*   2 value packed [1, 3] */
	"   1a 04 08 06 18 07\n"	/*   3 label {1 key 6 pid, 3 num 7} */
	"1a 08 08 01 10 10 18 20 28 05\n" /* 3 mapping {1 id 1, 2 start 0x10, 3 limit 0x20, 5 filename 5} */
	"22 06 08 01 10 01 18 15\n"	/* 4 location {1 id 1, 2 mapping_id 1, 3 address 0x15} */
	"32 00\n"			/* 6 string_table "" */
	"32 07 73 61 6d 70 6c 65 73\n"	/* "samples" */
	"32 05 63 6f 75 6e 74\n"	/* "count" */
	"32 03 63 70 75\n"		/* "cpu" */
	"32 0b 6e 61 6e 6f 73 65 63 6f 6e 64 73\n" /* "nanoseconds" */
	"32 05 61 2e 6f 75 74\n"	/* "a.out" */
	"32 03 70 69 64\n"		/* "pid" */
	"48 05\n"			/* 9 time_nanos 5 */
	"50 06\n"			/* 10 duration_nanos 6 */
	"5a 04 08 03 10 04\n"		/* 11 period_type {cpu, nanoseconds} */
	"60 03\n"			/* 12 period 3 */
	"70 03\n";			/* 14 default_sample_type 3 "cpu" */

static void test_pprof_golden_bytes(void **state)
{
	struct sp_profile *p = fx_tiny();
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	fx_assert_bytes(buf, len, pprof_golden);
	free(buf);
	sp_profile__free(p);
}

/* The golden bytes decode too (an independent writer's view of the file). */
static void test_pprof_decode_golden(void **state)
{
	struct sp_profile *q = NULL;
	uint8_t *in;
	size_t len;

	(void)state;
	in = fx_unhex(pprof_golden, &len);
	assert_int_equal(sp_pprof__decode(in, len, &q), 0);
	assert_int_equal(q->n_samples, 1);
	assert_int_equal(q->resources[q->samples[0].resource].pid, 7);
	assert_int_equal(q->n_mappings, 2);
	assert_string_equal(S(q, q->mappings[1].filename), "a.out");
	assert_int_equal(q->locations[1].address, 0x15);
	assert_int_equal(q->time_unix_ns, 5);
	assert_int_equal(q->period_ns[SP_KIND_ONCPU], 3);
	free(in);
	sp_profile__free(q);
}

static int decode_hex(const char *hex)
{
	return fx_decode_hex(sp_pprof__decode, hex);
}

static void test_pprof_rejects_bad_references(void **state)
{
	(void)state;
	/* no string table */
	assert_int_equal(decode_hex("48 05"), -EINVAL);
	/* string_table[0] not empty */
	assert_int_equal(decode_hex("32 01 41"), -EINVAL);
	/* mapping id 0 */
	assert_int_equal(decode_hex("1a 02 10 10 32 00"), -EINVAL);
	/* duplicate mapping id */
	assert_int_equal(decode_hex("1a 02 08 01 1a 02 08 01 32 00"), -EINVAL);
	/* location with dangling mapping_id 9 */
	assert_int_equal(decode_hex("22 04 08 01 10 09 32 00"), -EINVAL);
	/* sample with unknown location id */
	assert_int_equal(decode_hex("12 03 0a 01 05 32 00"), -EINVAL);
	/* filename string index out of range (5) and negative (-1) */
	assert_int_equal(decode_hex("1a 04 08 01 28 05 32 00"), -EINVAL);
	assert_int_equal(decode_hex("1a 0d 08 01 28 ff ff ff ff ff ff ff ff ff 01 32 00"),
			 -EINVAL);
	/* value count (1) differs from sample_type count (0) */
	assert_int_equal(decode_hex("12 03 12 01 01 32 00"), -EINVAL);
	/* label key out of range */
	assert_int_equal(decode_hex("12 04 1a 02 08 09 32 00"), -EINVAL);
	/* line with unknown function id */
	assert_int_equal(decode_hex("22 06 08 01 22 02 08 03 32 00"), -EINVAL);
	/* minimal valid profile */
	assert_int_equal(decode_hex("32 00"), 0);
}

static void test_pprof_rejects_truncated_and_garbage(void **state)
{
	struct sp_profile *p = fx_build(), *q;
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	fx_assert_decode_robust(sp_pprof__decode, buf, len, 12345);
	assert_int_equal(sp_pprof__decode(NULL, 5, &q), -EINVAL);
	assert_int_equal(sp_pprof__decode(buf, (size_t)SP_DECODE_MAX_BYTES + 1, &q), -E2BIG);
	free(buf);
	sp_profile__free(p);
}

static void test_pprof_encode_rejects_invalid_profile(void **state)
{
	struct sp_profile *p = fx_build();
	uint8_t *buf = (uint8_t *)1;
	size_t len;

	(void)state;
	p->samples[0].stack = 99;
	assert_int_equal(sp_pprof__encode(p, &buf, &len), -EINVAL);
	assert_null(buf);
	sp_profile__free(p);
}

/* Gzip'd pprof file for the integration test (only with SP_CODEC_DUMP_DIR). */
static void test_pprof_dump_file(void **state)
{
	struct sp_profile *p = fx_build(), *q = NULL;
	uint8_t *buf = NULL, *gz = NULL;
	size_t len, gzlen;
	char path[4096];

	(void)state;
	assert_int_equal(sp_pprof__encode(p, &buf, &len), 0);
	assert_int_equal(sp_gzip(buf, len, &gz, &gzlen), 0);
	fx_dump("fixture.pb", buf, len);
	fx_dump("fixture.pb.gz", gz, gzlen);
	if (getenv("SP_CODEC_DUMP_DIR")) {
		snprintf(path, sizeof(path), "%s/fixture.pb.gz", getenv("SP_CODEC_DUMP_DIR"));
		assert_int_equal(sp_profile__read_file(path, &q), 0);
		fx_assert_equal(p, q, FX_NO_TIMESTAMPS | FX_NO_RES_EXTRA);
	}
	free(buf);
	free(gz);
	sp_profile__free(p);
	sp_profile__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pprof_round_trip),
		cmocka_unit_test(test_pprof_main_mapping_first),
		cmocka_unit_test(test_pprof_kernel_mappings_decode_as_kernel),
		cmocka_unit_test(test_pprof_oncpu_only_two_columns),
		cmocka_unit_test(test_pprof_golden_bytes),
		cmocka_unit_test(test_pprof_decode_golden),
		cmocka_unit_test(test_pprof_rejects_bad_references),
		cmocka_unit_test(test_pprof_rejects_truncated_and_garbage),
		cmocka_unit_test(test_pprof_encode_rejects_invalid_profile),
		cmocka_unit_test(test_pprof_dump_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
