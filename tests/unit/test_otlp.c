/* SPDX-License-Identifier: MIT */
/*
 * test_otlp.c - OTLP Profiles codec: round trip, dictionary zero entries,
 * golden bytes derived by hand from the v1.11.0 field numbers, hostile input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_profile_fixture.h"
#include "testutil.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
#define req_unpack opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack
#define req_free opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked

static bool sp_all_zero_test(const uint8_t *b, size_t n)
{
	while (n--)
		if (b[n])
			return false;
	return true;
}

static void test_otlp_round_trip(void **state)
{
	(void)state;
	fx_assert_round_trip(sp_otlp__encode, sp_otlp__decode, FX_NO_HAS_FLAGS);
}

/* A resource's extra attributes (OTEL_RESOURCE_ATTRIBUTES) survive a round
 * trip; a decoded duplicate key keeps its first value, a fixed key
 * (host.name) goes to its field, never into attrs. */
static void test_otlp_resource_attrs(void **state)
{
	struct sp_profile *p = sp_profile__new(), *q = NULL;
	struct sp_resource r = { .pid = 9 };
	uint8_t *buf = NULL;
	size_t len;
	int32_t loc, st, res;

	(void)state;
	r.host_name = OK(sp_profile__intern(p, "node-7"));
	r.attrs[0] = (struct sp_res_attr){ OK(sp_profile__intern(p, "k8s.node.name")),
					   OK(sp_profile__intern(p, "node-7")) };
	r.attrs[1] = (struct sp_res_attr){ OK(sp_profile__intern(p, "deployment.environment")),
					   OK(sp_profile__intern(p, "prod")) };
	r.n_attrs = 2;
	res = OK(sp_profile__add_resource(p, &r));
	assert_int_equal(sp_profile__add_resource(p, &r), res);	/* deduplicated */
	r.n_attrs = 1;
	assert_int_not_equal(sp_profile__add_resource(p, &r), res);	/* attrs count */
	r.n_attrs = SP_RES_ATTRS_MAX + 1;
	assert_int_equal(sp_profile__add_resource(p, &r), -EINVAL);
	loc = OK(sp_profile__add_location(p, &(struct sp_location){ .address = 1 }));
	st = OK(sp_profile__add_stack(p, &loc, 1));
	OK(sp_profile__add_sample(p, &(struct sp_sample){ .resource = res, .stack = st,
							  .count = 1 }));
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	assert_int_equal(sp_otlp__decode(buf, len, &q), 0);
	assert_int_equal(q->n_resources, 2);	/* the second has no sample */
	assert_int_equal(q->resources[0].n_attrs, 2);
	assert_string_equal(q->strings[q->resources[0].attrs[0].key], "k8s.node.name");
	assert_string_equal(q->strings[q->resources[0].attrs[1].value], "prod");
	assert_string_equal(q->strings[q->resources[0].host_name], "node-7");
	assert_true(sp_profile__resource_key_fixed("host.name"));
	assert_false(sp_profile__resource_key_fixed("k8s.node.name"));
	free(buf);
	sp_profile__free(p);
	sp_profile__free(q);
}

/* Structure of the request as a generic protobuf reader sees it. */
static void test_otlp_structure_and_zero_entries(void **state)
{
	struct sp_profile *p = fx_build();
	uint8_t *buf = NULL;
	size_t len, i, j;
	Req *r;
	const Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary *d;
	int kernel = 0, native = 0, build_ids = 0;

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	r = req_unpack(NULL, len, buf);
	assert_non_null(r);
	d = r->dictionary;
	assert_non_null(d);
	/* every table has its zero entry */
	assert_true(d->n_string_table > 0);
	assert_string_equal(d->string_table[0], "");
	assert_true(d->n_mapping_table == p->n_mappings);
	assert_int_equal(d->mapping_table[0]->n_attribute_indices, 0);
	assert_int_equal(d->mapping_table[0]->memory_limit, 0);
	assert_int_equal(d->location_table[0]->n_lines, 0);
	assert_int_equal(d->location_table[0]->n_attribute_indices, 0);
	assert_int_equal(d->function_table[0]->name_strindex, 0);
	assert_int_equal(d->link_table[0]->trace_id.len, 16);
	assert_int_equal(d->link_table[0]->span_id.len, 8);
	assert_true(sp_all_zero_test(d->link_table[0]->trace_id.data, 16));
	assert_int_equal(d->attribute_table[0]->key_strindex, 0);
	assert_null(d->attribute_table[0]->value);
	assert_int_equal(d->stack_table[0]->n_location_indices, 0);
	/* attribute table: no duplicates; frame types and build ids present */
	for (i = 1; i < d->n_attribute_table; i++) {
		const char *k = d->string_table[d->attribute_table[i]->key_strindex];

		for (j = 1; j < i; j++)
			assert_false(
				protobuf_c_message_get_packed_size(&d->attribute_table[i]->base) ==
				protobuf_c_message_get_packed_size(&d->attribute_table[j]->base) &&
				d->attribute_table[i]->key_strindex == d->attribute_table[j]->key_strindex &&
				d->attribute_table[i]->value->value_case == d->attribute_table[j]->value->value_case &&
				(d->attribute_table[i]->value->value_case != 1 ||
				 !strcmp(d->attribute_table[i]->value->string_value,
					 d->attribute_table[j]->value->string_value)) &&
				(d->attribute_table[i]->value->value_case != 3 ||
				 d->attribute_table[i]->value->int_value ==
				 d->attribute_table[j]->value->int_value));
		if (!strcmp(k, "profile.frame.type")) {
			if (!strcmp(d->attribute_table[i]->value->string_value, "kernel"))
				kernel++;
			else if (!strcmp(d->attribute_table[i]->value->string_value, "native"))
				native++;
		}
		if (!strcmp(k, "process.executable.build_id.gnu"))
			build_ids++;
	}
	assert_int_equal(kernel, 1);
	assert_int_equal(native, 1);
	assert_int_equal(build_ids, 2);
	/* two resources; the first has on- and off-CPU profiles */
	assert_int_equal(r->n_resource_profiles, 2);
	assert_int_equal(r->resource_profiles[0]->n_scope_profiles, 1);
	assert_string_equal(r->resource_profiles[0]->scope_profiles[0]->scope->name, "spanprof");
	assert_int_equal(r->resource_profiles[0]->scope_profiles[0]->n_profiles, 2);
	assert_int_equal(r->resource_profiles[1]->scope_profiles[0]->n_profiles, 1);
	/* resource attribute keys are key_strindex, never key */
	for (i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Resource__V1__Resource *res =
			r->resource_profiles[i]->resource;

		for (j = 0; j < res->n_attributes; j++) {
			assert_true(res->attributes[j]->key == NULL ||
				    res->attributes[j]->key[0] == '\0');
			assert_true(res->attributes[j]->key_strindex > 0);
		}
	}
	assert_int_equal(r->resource_profiles[0]->resource->n_attributes, 6);
	{
		const Opentelemetry__Proto__Profiles__V1development__Profile *on =
			r->resource_profiles[0]->scope_profiles[0]->profiles[0];
		const Opentelemetry__Proto__Profiles__V1development__Profile *off =
			r->resource_profiles[0]->scope_profiles[0]->profiles[1];

		assert_string_equal(d->string_table[on->sample_type->type_strindex], "samples");
		assert_string_equal(d->string_table[on->sample_type->unit_strindex], "count");
		assert_string_equal(d->string_table[on->period_type->type_strindex], "cpu");
		assert_int_equal(on->period, FX_PERIOD);
		assert_int_equal(on->time_unix_nano, FX_T0);
		/* one value per timestamp, 1 each */
		assert_int_equal(on->samples[0]->n_timestamps_unix_nano, 3);
		assert_int_equal(on->samples[0]->n_values, 3);
		assert_int_equal(on->samples[0]->values[0], 1);
		assert_int_equal(on->samples[0]->link_index, 1);
		assert_string_equal(d->string_table[off->sample_type->type_strindex], "off_cpu");
		assert_string_equal(d->string_table[off->sample_type->unit_strindex], "nanoseconds");
		assert_int_equal(off->samples[0]->values[0], 123456789);
	}
	req_free(r, NULL);
	free(buf);
	sp_profile__free(p);
}

/*
 * Golden bytes for fx_tiny().  Derived by hand from the spec's field numbers;
 * tag = field << 3 | wire type (0 varint, 1 I64, 2 LEN).  String table:
 * only referenced strings, in order of first use: "", a.out(1) (mapping
 * filename), profile.frame.type(2) (the location's attribute key; its value
 * "native" is inline in the attribute), samples(3) count(4) cpu(5)
 * nanoseconds(6), process.pid(7).  Attribute 1 = {key 2, "native"}.
 */
static const char otlp_golden[] =
	"# ExportProfilesServiceRequest\n"
	"0a 44\n"				/* 1 resource_profiles, 68 bytes */
	"  0a 08\n"				/*   1 resource, 8 */
	"    0a 06 12 02 18 07 18 07\n"		/*     1 attributes KeyValue{2 value{3 int 7}, 3 key_strindex 7} */
	"  12 38\n"				/*   2 scope_profiles, 56 */
	"    0a 0a 0a 08 73 70 61 6e 70 72 6f 66\n" /* 1 scope {1 name "spanprof"} */
	"    12 2a\n"				/*     2 profiles, 42 */
	"      0a 04 08 03 10 04\n"		/*       1 sample_type {samples, count} */
	"      12 0f\n"				/*       2 samples, 15 */
	"        08 01\n"			/*         1 stack_index 1 */
	"        22 01 01\n"			/*         4 values packed [1] */
	"        2a 08 09 00 00 00 00 00 00 00\n" /*       5 timestamps packed fixed64 [9] */
	"      19 05 00 00 00 00 00 00 00\n"	/*       3 time_unix_nano fixed64 5 */
	"      20 06\n"				/*       4 duration_nano 6 */
	"      2a 04 08 05 10 06\n"		/*       5 period_type {cpu, nanoseconds} */
	"      30 03\n"				/*       6 period 3 */
	"12 98 01\n"				/* 2 dictionary, 152 bytes */
	"  0a 00\n"				/*   1 mapping_table[0] empty */
	"  0a 06 08 10 10 20 20 01\n"		/*   [1] {1 start 0x10, 2 limit 0x20, 4 filename 1} */
	"  12 00\n"				/*   2 location_table[0] empty */
	"  12 07 08 01 10 15 22 01 01\n"	/*   [1] {1 mapping 1, 2 address 0x15, 4 attrs [1]} */
	"  1a 00\n"				/*   3 function_table[0] empty */
	"  22 1c 0a 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n"
	"        12 08 00 00 00 00 00 00 00 00\n" /* 4 link_table[0]: 16 + 8 zero bytes */
	"  2a 00\n"				/*   5 string_table "" */
	"  2a 05 61 2e 6f 75 74\n"		/*   "a.out" */
	"  2a 12 70 72 6f 66 69 6c 65 2e 66 72 61 6d 65 2e 74 79 70 65\n" /* "profile.frame.type" */
	"  2a 07 73 61 6d 70 6c 65 73\n"	/*   "samples" */
	"  2a 05 63 6f 75 6e 74\n"		/*   "count" */
	"  2a 03 63 70 75\n"			/*   "cpu" */
	"  2a 0b 6e 61 6e 6f 73 65 63 6f 6e 64 73\n" /* "nanoseconds" */
	"  2a 0b 70 72 6f 63 65 73 73 2e 70 69 64\n" /* "process.pid" */
	"  32 00\n"				/*   6 attribute_table[0] empty */
	"  32 0c 08 02 12 08 0a 06 6e 61 74 69 76 65\n" /* [1] {1 key 2, 2 {1 "native"}} */
	"  3a 00\n"				/*   7 stack_table[0] empty */
	"  3a 03 0a 01 01\n";			/*   [1] {1 location_indices [1]} */

static void test_otlp_golden_bytes(void **state)
{
	struct sp_profile *p = fx_tiny();
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	fx_assert_bytes(buf, len, otlp_golden);
	free(buf);
	sp_profile__free(p);
}

static void test_otlp_decode_golden(void **state)
{
	struct sp_profile *p = fx_tiny(), *q = NULL;
	uint8_t *in;
	size_t len;

	(void)state;
	in = fx_unhex(otlp_golden, &len);
	assert_int_equal(sp_otlp__decode(in, len, &q), 0);
	fx_assert_equal(p, q, 0);
	free(in);
	sp_profile__free(p);
	sp_profile__free(q);
}

static int decode_hex(const char *hex)
{
	return fx_decode_hex(sp_otlp__decode, hex);
}

static void test_otlp_rejects_bad_indices(void **state)
{
	(void)state;
	/* empty request: an empty profile */
	assert_int_equal(decode_hex(""), 0);
	/* string_table[0] not "" */
	assert_int_equal(decode_hex("12 03 2a 01 41"), -EINVAL);
	/* mapping filename_strindex 5 out of range (table has "") */
	assert_int_equal(decode_hex("12 06 2a 00 0a 02 20 05"), -EINVAL);
	/* negative filename_strindex (-1 as int32 varint, 10 bytes) */
	assert_int_equal(decode_hex("12 0f 2a 00 0a 0b 20 ff ff ff ff ff ff ff ff ff 01"),
			 -EINVAL);
	/* location mapping_index 3 out of range */
	assert_int_equal(decode_hex("12 06 2a 00 12 02 08 03"), -EINVAL);
	/* line function_index 2 out of range */
	assert_int_equal(decode_hex("12 08 2a 00 12 04 1a 02 08 02"), -EINVAL);
	/* stack location index 4 out of range */
	assert_int_equal(decode_hex("12 07 2a 00 3a 03 0a 01 04"), -EINVAL);
	/* link with a 3-byte trace id */
	assert_int_equal(decode_hex("12 09 2a 00 22 05 0a 03 01 02 03"), -EINVAL);
	/* attribute key_strindex 9 out of range */
	assert_int_equal(decode_hex("12 06 2a 00 32 02 08 09"), -EINVAL);
	/* sample stack_index 2 in an empty stack table:
	 * rp{ scope_profiles{ profiles{ samples{1: 2} } } } */
	assert_int_equal(decode_hex("0a 08 12 06 12 04 12 02 08 02  12 02 2a 00"), -EINVAL);
	/* sample link_index 1 out of range */
	assert_int_equal(decode_hex("0a 08 12 06 12 04 12 02 18 01  12 02 2a 00"), -EINVAL);
	/* sample attribute index 7 out of range */
	assert_int_equal(decode_hex("0a 09 12 07 12 05 12 03 12 01 07  12 02 2a 00"), -EINVAL);
	/* values (2) and timestamps (1) of different length */
	assert_int_equal(decode_hex("0a 12 12 10 12 0e 12 0c 22 02 01 01 2a 08 01 00 00 00 00 00 00 00"
				    " 12 02 2a 00"), -EINVAL);
	/* a valid one-sample request (stack 0, value 1) */
	assert_int_equal(decode_hex("0a 09 12 07 12 05 12 03 22 01 01  12 02 2a 00"), 0);
}

static void test_otlp_rejects_truncated_and_garbage(void **state)
{
	struct sp_profile *p = fx_build(), *q;
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	fx_assert_decode_robust(sp_otlp__decode, buf, len, 777);
	assert_int_equal(sp_otlp__decode(NULL, 3, &q), -EINVAL);
	assert_int_equal(sp_otlp__decode(buf, (size_t)SP_DECODE_MAX_BYTES + 1, &q), -E2BIG);
	free(buf);
	sp_profile__free(p);
}

/* pprof bytes are not mistaken for OTLP by read_file, and vice versa. */
static void test_otlp_read_file_detects_format(void **state)
{
	struct sp_profile *p = fx_build(), *q = NULL;
	uint8_t *o = NULL, *pp = NULL, *gz = NULL;
	size_t olen, plen, gzlen;
	char path[256];

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &o, &olen), 0);
	assert_int_equal(sp_pprof__encode(p, &pp, &plen), 0);

	assert_int_equal(tu_write_file(tu_path(path, sizeof(path), "a.otlp"), o, olen), 0);
	assert_int_equal(sp_profile__read_file(path, &q), 0);
	fx_assert_equal(p, q, FX_NO_HAS_FLAGS);	/* timestamps: it was OTLP */
	sp_profile__free(q);

	assert_int_equal(sp_gzip(o, olen, &gz, &gzlen), 0);
	assert_int_equal(tu_write_file(path, gz, gzlen), 0);
	assert_int_equal(sp_profile__read_file(path, &q), 0);
	fx_assert_equal(p, q, FX_NO_HAS_FLAGS);
	sp_profile__free(q);

	assert_int_equal(tu_write_file(tu_path(path, sizeof(path), "a.pprof"), pp, plen), 0);
	assert_int_equal(sp_profile__read_file(path, &q), 0);
	fx_assert_equal(p, q, FX_NO_TIMESTAMPS | FX_NO_RES_EXTRA);
	sp_profile__free(q);

	assert_int_equal(sp_profile__read_file("/nonexistent/x", &q), -ENOENT);
	free(o);
	free(pp);
	free(gz);
	sp_profile__free(p);
}

static void test_otlp_dump_file(void **state)
{
	struct sp_profile *p = fx_build();
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	fx_dump("fixture.otlp", buf, len);
	free(buf);
	sp_profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp_round_trip),
		cmocka_unit_test(test_otlp_resource_attrs),
		cmocka_unit_test(test_otlp_structure_and_zero_entries),
		cmocka_unit_test(test_otlp_golden_bytes),
		cmocka_unit_test(test_otlp_decode_golden),
		cmocka_unit_test(test_otlp_rejects_bad_indices),
		cmocka_unit_test(test_otlp_rejects_truncated_and_garbage),
		cmocka_unit_test_setup_teardown(test_otlp_read_file_detects_format, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test(test_otlp_dump_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
