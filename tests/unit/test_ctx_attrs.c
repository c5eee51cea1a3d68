// SPDX-License-Identifier: MIT
/*
 * test_ctx_attrs.c - decoding and canonical form of OTEP 4947 thread-record
 * attributes (src/collector/tracectx/ctx_attrs.c): entry boundaries, last duplicate
 * wins, the per-sample key limit, partial entries, and label strings that
 * are always valid UTF-8.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "collector/tracectx/ctx_attrs.h"

static void test_decode_entries(void **state)
{
	static const uint8_t buf[] = { 0, 3, 'a', 'b', 'c', 2, 0, 1, 2, 'x', 'y' };
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint32_t dropped = 99;
	(void)state;

	assert_int_equal(sp_ctx_attrs__decode(buf, sizeof(buf), a, &dropped), 3);
	assert_int_equal(dropped, 0);
	assert_int_equal(a[0].key, 0);
	assert_int_equal(a[0].len, 3);
	assert_memory_equal(a[0].value, "abc", 3);
	assert_int_equal(a[1].key, 2);
	assert_int_equal(a[1].len, 0);
	assert_int_equal(a[2].key, 1);
	assert_memory_equal(a[2].value, "xy", 2);
	assert_int_equal(sp_ctx_attrs__decode(NULL, 0, a, &dropped), 0);
	assert_int_equal(dropped, 0);
}

/* Decoding stops at the first entry that does not fit; the rest counts as
 * one dropped (partial) entry, whatever the bytes are. */
static void test_partial_entry(void **state)
{
	static const uint8_t buf[] = { 0, 1, 'a', 1, 9, 'x', 'y' };
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint32_t dropped;
	(void)state;

	assert_int_equal(sp_ctx_attrs__decode(buf, sizeof(buf), a, &dropped), 1);
	assert_int_equal(dropped, 1);
	assert_int_equal(sp_ctx_attrs__decode(buf, 4, a, &dropped), 1);	/* lone key byte */
	assert_int_equal(dropped, 1);
	assert_int_equal(sp_ctx_attrs__decode(buf, 3, a, &dropped), 1);
	assert_int_equal(dropped, 0);
}

static void test_last_duplicate_wins(void **state)
{
	static const uint8_t buf[] = { 5, 1, 'a', 6, 1, 'b', 5, 2, 'c', 'd' };
	static const uint8_t canon[] = { 5, 2, 'c', 'd', 6, 1, 'b' };
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint8_t out[SP_CTX_ATTRS_MAX];
	uint32_t dropped;
	(void)state;

	assert_int_equal(sp_ctx_attrs__decode(buf, sizeof(buf), a, &dropped), 2);
	assert_int_equal(dropped, 0);
	assert_int_equal(a[0].key, 5);
	assert_memory_equal(a[0].value, "cd", 2);
	assert_int_equal(sp_ctx_attrs__canon(buf, sizeof(buf), out, &dropped), sizeof(canon));
	assert_memory_equal(out, canon, sizeof(canon));
}

/* Same meaning, same bytes: trailing garbage and duplicates vanish. */
static void test_canon_equal_for_equal_meaning(void **state)
{
	static const uint8_t x[] = { 1, 1, 'r', 2, 1, 'w', 0xff };
	static const uint8_t y[] = { 1, 1, 'q', 2, 1, 'w', 1, 1, 'r' };
	uint8_t cx[SP_CTX_ATTRS_MAX], cy[SP_CTX_ATTRS_MAX];
	uint32_t nx, ny, dx, dy;
	(void)state;

	nx = sp_ctx_attrs__canon(x, sizeof(x), cx, &dx);
	ny = sp_ctx_attrs__canon(y, sizeof(y), cy, &dy);
	assert_int_equal(nx, ny);
	assert_memory_equal(cx, cy, nx);
	assert_int_equal(dx, 1);
	assert_int_equal(dy, 0);
}

static void test_key_limit(void **state)
{
	uint8_t buf[2 * (SP_CTX_ATTRS_KEYS + 3)], out[SP_CTX_ATTRS_MAX];
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint32_t dropped;
	(void)state;

	for (int i = 0; i < SP_CTX_ATTRS_KEYS + 3; i++) {
		buf[2 * i] = (uint8_t)i;
		buf[2 * i + 1] = 0;
	}
	assert_int_equal(sp_ctx_attrs__decode(buf, sizeof(buf), a, &dropped), SP_CTX_ATTRS_KEYS);
	assert_int_equal(dropped, 3);
	assert_int_equal(sp_ctx_attrs__canon(buf, sizeof(buf), out, &dropped),
			 2 * SP_CTX_ATTRS_KEYS);
	assert_int_equal(dropped, 3);
}

/* Canon reads at most SP_CTX_ATTRS_MAX bytes even when told more. */
static void test_canon_bounds_input(void **state)
{
	uint8_t buf[300], out[SP_CTX_ATTRS_MAX];
	uint32_t dropped, n;
	(void)state;

	memset(buf, 0, sizeof(buf));
	buf[0] = 1;
	buf[1] = 200;	/* runs past SP_CTX_ATTRS_MAX: partial */
	n = sp_ctx_attrs__canon(buf, sizeof(buf), out, &dropped);
	assert_int_equal(n, 0);
	assert_int_equal(dropped, 1);
}

static void test_string_is_valid_utf8(void **state)
{
	static const uint8_t v1[] = "caf\xc3\xa9";		/* valid 2-byte */
	static const uint8_t v2[] = "a\xc3(b";			/* broken sequence */
	static const uint8_t v3[] = "\xe0\x80\xafz";		/* overlong */
	static const uint8_t v4[] = "\xed\xa0\x80";		/* surrogate */
	static const uint8_t v5[] = "t\x01\x7f\n";		/* controls */
	static const uint8_t v6[] = "\xf0\x9f\x98\x80!";	/* 4-byte emoji */
	struct sp_ctx_attr a;
	char out[256];
	uint8_t big[255];
	(void)state;

#define STR(v, want) do { a.value = v; a.len = sizeof(v) - 1; \
	sp_ctx_attrs__string(&a, out); assert_string_equal(out, want); } while (0)
	STR(v1, "caf\xc3\xa9");
	STR(v2, "a?(b");
	STR(v3, "???z");
	STR(v4, "???");
	STR(v5, "t???");
	STR(v6, "\xf0\x9f\x98\x80!");
#undef STR
	memset(big, 0xff, sizeof(big));
	a.value = big;
	a.len = sizeof(big);
	sp_ctx_attrs__string(&a, out);
	assert_int_equal(strlen(out), 255);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_entries),
		cmocka_unit_test(test_partial_entry),
		cmocka_unit_test(test_last_duplicate_wins),
		cmocka_unit_test(test_canon_equal_for_equal_meaning),
		cmocka_unit_test(test_key_limit),
		cmocka_unit_test(test_canon_bounds_input),
		cmocka_unit_test(test_string_is_valid_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
