/*
 * test_pbdepth.c - the protobuf nesting-depth check (src/profile/pbdepth.c)
 * and the OTLP decoder's use of it: deep AnyValue nesting is refused
 * before protobuf-c's unbounded recursion; ordinary requests pass.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/codec.h"
#include "profile/pbdepth.h"

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		v >>= 7;
	} while (v);
	return n;
}

/* request{dictionary{attribute_table{value: AnyValue nested `levels` deep}}}.
 * The payload is only nested headers: each is built from the inside out
 * (it needs its payload's length) at the back of the buffer, moving the
 * start forward-to-back, so the result is outermost first. */
static uint8_t *nested_request(int levels, size_t *len)
{
	static const uint32_t outer[] = { 2, 6, 2 };
	size_t cap = (size_t)levels * 24 + 64, start = cap;
	uint8_t *buf = malloc(cap), hdr[24];

	for (int i = 0; i < 2 * levels + 3; i++) {
		uint32_t field = i < 2 * levels ? (i % 2 ? 5 : 1) : outer[i - 2 * levels];
		size_t n = put_varint(hdr, (uint64_t)field << 3 | 2);

		n += put_varint(hdr + n, cap - start);
		start -= n;
		memcpy(buf + start, hdr, n);
	}
	*len = cap - start;
	memmove(buf, buf + start, *len);
	return buf;
}

static void test_deep_refused(void **state)
{
	struct sp_profile *p = NULL;
	size_t len;
	uint8_t *req = nested_request(200000, &len);

	(void)state;
	assert_int_equal(sp_pb__check_depth(req, len, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
					    sp_pb_otlp_request_n_edges, 32), -EBADMSG);
	assert_int_equal(sp_otlp__decode(req, len, &p), -EINVAL);	/* no stack overflow */
	assert_null(p);
	free(req);
}

static void test_shallow_nesting_passes(void **state)
{
	size_t len;
	uint8_t *req = nested_request(10, &len);

	(void)state;
	assert_int_equal(sp_pb__check_depth(req, len, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
					    sp_pb_otlp_request_n_edges, 32), 0);
	free(req);
}

static void test_encoded_profile_passes(void **state)
{
	struct sp_profile *p = sp_profile__new(), *back = NULL;
	struct sp_resource r = { .pid = 1 };
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	r.service_name = sp_profile__intern(p, "svc");
	assert_true(sp_profile__add_resource(p, &r) >= 0);
	assert_int_equal(sp_otlp__encode(p, &buf, &len), 0);
	assert_int_equal(sp_pb__check_depth(buf, len, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
					    sp_pb_otlp_request_n_edges, 32), 0);
	assert_int_equal(sp_otlp__decode(buf, len, &back), 0);
	sp_profile__free(back);
	sp_profile__free(p);
	free(buf);
}

static void test_malformed(void **state)
{
	static const uint8_t bad[] = { 0x12, 0x05, 0x01 };	/* length past the end */
	static const uint8_t group[] = { 0x0b };		/* wire type 3 */

	(void)state;
	assert_int_equal(sp_pb__check_depth(bad, sizeof(bad), SP_PB_OTLP_REQUEST,
					    sp_pb_otlp_request_edges, sp_pb_otlp_request_n_edges, 32),
			 -EBADMSG);
	assert_int_equal(sp_pb__check_depth(group, sizeof(group), SP_PB_OTLP_REQUEST,
					    sp_pb_otlp_request_edges, sp_pb_otlp_request_n_edges, 32),
			 -EBADMSG);
	assert_int_equal(sp_pb__check_depth(NULL, 0, SP_PB_OTLP_REQUEST, sp_pb_otlp_request_edges,
					    sp_pb_otlp_request_n_edges, 32), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deep_refused),
		cmocka_unit_test(test_shallow_nesting_passes),
		cmocka_unit_test(test_encoded_profile_passes),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
