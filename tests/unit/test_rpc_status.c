// SPDX-License-Identifier: MIT
/*
 * test_rpc_status.c - google.rpc.Status (base/rpc_status.h): what serve
 * writes is what the exporter reads back.  Round trips of a code and a
 * message (negative codes take ten varint bytes), the message cut to the
 * buffer, proto3's omitted zero code and empty message, the exact bytes of
 * a known answer, a buffer below SP_RPC_STATUS_MIN_BUF, and the decoder's
 * sanitizing of control characters.  The decoder's refusals of malformed
 * input are in test_export.c (test_response_rpc_status).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "base/rpc_status.h"

static void round_trip(int32_t code, const char *msg, size_t cap, const char *want_msg)
{
	uint8_t buf[600];
	char got[600];
	int32_t c = 12345;
	size_t n;

	assert_true(cap <= sizeof(buf));
	n = sp_rpc_status__encode(code, msg, buf, cap);
	assert_true(n <= cap);
	assert_int_equal(sp_rpc_status__decode(buf, n, &c, got, sizeof(got)), 0);
	assert_int_equal(c, code);
	assert_string_equal(got, want_msg);
}

static void test_round_trips(void **state)
{
	char long_msg[1000];

	(void)state;
	round_trip(3, "malformed protobuf", 512, "malformed protobuf");
	round_trip(-1, "negative", 512, "negative");
	round_trip(INT32_MIN, "min", 512, "min");
	round_trip(INT32_MAX, "", 512, "");
	round_trip(0, "only a message", 512, "only a message");
	round_trip(0, NULL, 512, "");
	memset(long_msg, 'm', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';
	/* cut to fit: cap minus the room the two tags and varints may need */
	round_trip(14, long_msg, 64, "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm");
}

static void test_exact_bytes(void **state)
{
	static const uint8_t want[] = { 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd' };
	static const uint8_t want_neg[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0x01 };
	uint8_t buf[64];

	(void)state;
	assert_int_equal(sp_rpc_status__encode(3, "bad", buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(sp_rpc_status__encode(-1, "", buf, sizeof(buf)), sizeof(want_neg));
	assert_memory_equal(buf, want_neg, sizeof(want_neg));
	assert_int_equal(sp_rpc_status__encode(0, "", buf, sizeof(buf)), 0);
	assert_int_equal(sp_rpc_status__encode(3, "bad", buf, SP_RPC_STATUS_MIN_BUF - 1), 0);
}

static void test_sanitized(void **state)
{
	uint8_t buf[64];
	char got[64];
	int32_t code;
	size_t n;

	(void)state;
	n = sp_rpc_status__encode(13, "line\nforged\x1b[31m", buf, sizeof(buf));
	assert_int_equal(sp_rpc_status__decode(buf, n, &code, got, sizeof(got)), 0);
	assert_int_equal(code, 13);
	assert_string_equal(got, "line?forged?[31m");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_exact_bytes),
		cmocka_unit_test(test_sanitized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
