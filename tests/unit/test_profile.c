/* SPDX-License-Identifier: MIT */
/*
 * test_profile.c - the profile model (zero entries, dedup, validation,
 * NULL-safety) and the gzip helpers (round trip, truncation, bombs).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "test_profile_fixture.h"

static void test_profile_zero_entries(void **state)
{
	struct sp_profile *p = sp_profile__new();
	static const uint8_t z[16];

	(void)state;
	assert_non_null(p);
	assert_int_equal(p->n_strings, 1);
	assert_string_equal(p->strings[0], "");
	assert_int_equal(p->n_mappings, 1);
	assert_int_equal(p->n_locations, 1);
	assert_int_equal(p->n_functions, 1);
	assert_int_equal(p->n_links, 1);
	assert_int_equal(p->n_stacks, 1);
	assert_int_equal(p->stack_len[0], 0);
	assert_int_equal(p->n_resources, 0);
	assert_int_equal(p->n_samples, 0);
	assert_int_equal(sp_profile__validate(p), 0);
	/* zero values dedup to index 0 */
	assert_int_equal(sp_profile__intern(p, ""), 0);
	assert_int_equal(sp_profile__add_mapping(p, &(struct sp_mapping){ 0 }), 0);
	assert_int_equal(sp_profile__add_function(p, &(struct sp_function){ 0 }), 0);
	assert_int_equal(sp_profile__add_location(p, &(struct sp_location){ 0 }), 0);
	assert_int_equal(sp_profile__add_link(p, z, z), 0);
	assert_int_equal(sp_profile__add_stack(p, NULL, 0), 0);
	/* resources have no zero entry */
	assert_int_equal(sp_profile__add_resource(p, &(struct sp_resource){ 0 }), 0);
	assert_int_equal(p->n_resources, 1);
	sp_profile__free(p);
	sp_profile__free(NULL);
}

static void test_profile_dedup(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m = { 0 };
	struct sp_location l;
	struct sp_function f = { 0 };
	uint8_t t[16] = { 1 }, s[8] = { 2 };
	int32_t a, b, i;
	char name[32];

	(void)state;
	a = sp_profile__intern(p, "hello");
	assert_int_equal(a, 1);
	assert_int_equal(sp_profile__intern(p, "hello"), a);
	assert_int_equal(sp_profile__intern_n(p, "hello world", 5), a);
	assert_int_equal(sp_profile__intern_n(p, "a\0b", 3), -EINVAL);
	assert_int_equal(sp_profile__intern(p, NULL), -EINVAL);
	/* many strings: indices stable across growth and rehash */
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(sp_profile__intern(p, name), i + 2);
	}
	for (i = 0; i < 20000; i += 997) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(sp_profile__intern(p, name), i + 2);
	}
	assert_string_equal(sp_profile__str(p, a), "hello");
	assert_string_equal(sp_profile__str(p, -5), "");

	m.filename = a;
	m.memory_limit = 10;
	b = sp_profile__add_mapping(p, &m);
	assert_int_equal(b, 1);
	assert_int_equal(sp_profile__add_mapping(p, &m), b);
	m.has_functions = true;
	assert_int_equal(sp_profile__add_mapping(p, &m), 2);

	f.name = a;
	assert_int_equal(sp_profile__add_function(p, &f), 1);
	assert_int_equal(sp_profile__add_function(p, &f), 1);

	memset(&l, 0, sizeof(l));
	l.mapping = 1;
	l.address = 0x10;
	l.n_lines = 1;
	l.lines[0].function = 1;
	l.lines[1].function = 1;	/* beyond n_lines: ignored by dedup */
	assert_int_equal(sp_profile__add_location(p, &l), 1);
	l.lines[1].function = 0;
	assert_int_equal(sp_profile__add_location(p, &l), 1);
	l.frame_kind = SP_FRAME_KERNEL;
	assert_int_equal(sp_profile__add_location(p, &l), 2);

	assert_int_equal(sp_profile__add_link(p, t, s), 1);
	assert_int_equal(sp_profile__add_link(p, t, s), 1);

	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 1, 2 }, 2), 1);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 2, 1 }, 2), 2);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 1, 2 }, 2), 1);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 1 }, 1), 3);
	/* many stacks: offsets stay right across growth */
	for (i = 0; i < 5000; i++) {
		int32_t locs[3] = { 1 + i % 2, 2 - i % 2, 1 };

		assert_true(sp_profile__add_stack(p, locs, 1 + (uint32_t)(i % 3)) >= 1);
	}
	assert_int_equal(p->n_stacks, 1 + 3 + 3);	/* only 6 distinct */

	assert_int_equal(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 5 }), 0);
	assert_int_equal(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 6 }), 1);
	assert_int_equal(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 5 }), 0);
	assert_int_equal(sp_profile__validate(p), 0);
	sp_profile__free(p);
}

static void test_profile_add_rejects_bad_indices(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_location l;
	struct sp_sample s;
	uint64_t ts[2] = { 1, 2 };

	(void)state;
	assert_int_equal(sp_profile__add_mapping(p, &(struct sp_mapping){ .filename = 3 }), -EINVAL);
	assert_int_equal(sp_profile__add_mapping(p, &(struct sp_mapping){ .build_id = -1 }), -EINVAL);
	assert_int_equal(sp_profile__add_function(p, &(struct sp_function){ .name = 1 }), -EINVAL);
	memset(&l, 0, sizeof(l));
	l.mapping = 1;
	assert_int_equal(sp_profile__add_location(p, &l), -EINVAL);
	l.mapping = 0;
	l.n_lines = SP_MAX_INLINE + 1;
	assert_int_equal(sp_profile__add_location(p, &l), -EINVAL);
	l.n_lines = 1;
	l.lines[0].function = 7;
	assert_int_equal(sp_profile__add_location(p, &l), -EINVAL);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ 3 }, 1), -EINVAL);
	assert_int_equal(sp_profile__add_stack(p, (int32_t[]){ -1 }, 1), -EINVAL);
	assert_int_equal(sp_profile__add_resource(p, &(struct sp_resource){ .host_name = 2 }), -EINVAL);

	memset(&s, 0, sizeof(s));
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);	/* no resource */
	OK(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 1 }));
	assert_int_equal(sp_profile__add_sample(p, &s), 0);
	s.stack = 1;
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);
	s.stack = 0;
	s.kind = SP_KIND__MAX;
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);
	s.kind = SP_KIND_ONCPU;
	s.n_labels = SP_MAX_LABELS + 1;
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);
	s.n_labels = 1;
	s.labels[0].key = 4;
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);
	s.n_labels = 0;
	s.count = 3;
	s.n_timestamps = 2;
	s.timestamps = ts;
	assert_int_equal(sp_profile__add_sample(p, &s), -EINVAL);	/* 2 != 3 */
	s.count = 2;
	assert_int_equal(sp_profile__add_sample(p, &s), 1);
	ts[0] = 99;	/* the profile copied them */
	assert_int_equal(p->samples[1].timestamps[0], 1);
	assert_int_equal(p->n_samples, 2);
	assert_int_equal(sp_profile__validate(p), 0);
	assert_int_equal(sp_profile__intern(NULL, "x"), -EINVAL);
	assert_int_equal(sp_profile__validate(NULL), -EINVAL);
	sp_profile__free(p);
}

static void test_profile_validate_catches_corruption(void **state)
{
	struct sp_profile *p;
	char *saved;

	(void)state;
#define CORRUPT(stmt) do { p = fx_build(); stmt; \
		assert_int_equal(sp_profile__validate(p), -EINVAL); sp_profile__free(p); } while (0)
	CORRUPT(p->samples[0].stack = (int32_t)p->n_stacks);
	CORRUPT(p->samples[0].stack = -1);
	CORRUPT(p->samples[1].link = 9);
	CORRUPT(p->samples[0].resource = 2);
	CORRUPT(p->samples[0].thread_name = -3);
	CORRUPT(p->samples[1].labels[0].str = 1000);
	CORRUPT(p->samples[0].n_timestamps = 2);
	CORRUPT(p->mappings[1].build_id = 5000);
	CORRUPT(p->mappings[0].memory_limit = 1);
	CORRUPT(p->locations[1].mapping = 9);
	CORRUPT(p->locations[1].lines[0].function = -2);
	CORRUPT(p->locations[0].address = 4);
	CORRUPT(p->functions[1].filename = 777);
	CORRUPT(p->links[0].trace_id[3] = 1);
	CORRUPT(p->stack_locs[p->stack_off[1]] = 42);
	CORRUPT(p->stack_len[1] = 1000);
	CORRUPT(p->resources[0].exe_name = 999);
	CORRUPT(p->n_stacks = 0);
	/* strings[0] must be "" */
	p = fx_build();
	saved = p->strings[0];
	p->strings[0] = "x";
	assert_int_equal(sp_profile__validate(p), -EINVAL);
	p->strings[0] = saved;
	assert_int_equal(sp_profile__validate(p), 0);
	sp_profile__free(p);
#undef CORRUPT
}

static void test_profile_gzip_round_trip(void **state)
{
	uint8_t in[10000], *gz = NULL, *out = NULL;
	size_t i, gzlen, outlen;

	(void)state;
	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 % 251);
	assert_int_equal(sp_gzip(in, sizeof(in), &gz, &gzlen), 0);
	assert_true(sp_is_gzip(gz, gzlen));
	assert_false(sp_is_gzip(in, sizeof(in)));
	assert_int_equal(sp_gunzip(gz, gzlen, sizeof(in), &out, &outlen), 0);
	assert_int_equal(outlen, sizeof(in));
	assert_memory_equal(in, out, sizeof(in));
	free(out);
	/* one byte short of the limit: too big */
	assert_int_equal(sp_gunzip(gz, gzlen, sizeof(in) - 1, &out, &outlen), -E2BIG);
	assert_null(out);
	/* every truncation is rejected */
	for (i = 0; i < gzlen; i++) {
		out = (uint8_t *)1;
		assert_int_equal(sp_gunzip(gz, i, sizeof(in), &out, &outlen), -EINVAL);
		assert_null(out);
	}
	/* corrupt CRC */
	gz[gzlen - 5] ^= 0xff;
	assert_int_equal(sp_gunzip(gz, gzlen, sizeof(in), &out, &outlen), -EINVAL);
	free(gz);
	/* empty input */
	assert_int_equal(sp_gzip(NULL, 0, &gz, &gzlen), 0);
	assert_int_equal(sp_gunzip(gz, gzlen, 0, &out, &outlen), 0);
	assert_int_equal(outlen, 0);
	free(out);
	free(gz);
}

/* 256 MiB of zeros compresses to ~250 KiB; the limit stops it early. */
static void test_profile_gzip_bomb_rejected(void **state)
{
	const size_t chunk = 1 << 20, total = (size_t)256 << 20;
	uint8_t *zeros = calloc(1, chunk), *gz, *out = NULL;
	size_t gzcap = 1 << 20, done, outlen;
	z_stream zs;

	(void)state;
	assert_non_null(zeros);
	gz = malloc(gzcap);
	assert_non_null(gz);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_out = gz;
	zs.avail_out = (uInt)gzcap;
	for (done = 0; done < total; done += chunk) {
		zs.next_in = zeros;
		zs.avail_in = (uInt)chunk;
		assert_int_equal(deflate(&zs, done + chunk < total ? Z_NO_FLUSH : Z_FINISH),
				 done + chunk < total ? Z_OK : Z_STREAM_END);
	}
	assert_true(zs.total_out < gzcap);
	assert_int_equal(sp_gunzip(gz, zs.total_out, SP_DECODE_MAX_BYTES, &out, &outlen), -E2BIG);
	assert_null(out);
	deflateEnd(&zs);
	free(gz);
	free(zeros);
}

static void test_profile_read_file_bomb(void **state)
{
	uint8_t *zeros = calloc(1, (size_t)SP_DECODE_MAX_BYTES + 1), *gz = NULL;
	size_t gzlen;
	char path[] = "/tmp/sp_bomb_XXXXXX";
	struct sp_profile *q = NULL;
	int fd;

	(void)state;
	assert_non_null(zeros);
	assert_int_equal(sp_gzip(zeros, (size_t)SP_DECODE_MAX_BYTES + 1, &gz, &gzlen), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, gz, gzlen), (ssize_t)gzlen);
	close(fd);
	assert_int_equal(sp_profile__read_file(path, &q), -E2BIG);
	assert_null(q);
	unlink(path);
	free(gz);
	free(zeros);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_zero_entries),
		cmocka_unit_test(test_profile_dedup),
		cmocka_unit_test(test_profile_add_rejects_bad_indices),
		cmocka_unit_test(test_profile_validate_catches_corruption),
		cmocka_unit_test(test_profile_gzip_round_trip),
		cmocka_unit_test(test_profile_gzip_bomb_rejected),
		cmocka_unit_test(test_profile_read_file_bomb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
