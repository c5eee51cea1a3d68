/* SPDX-License-Identifier: MIT */
/*
 * test_http_parse.c - Retry-After (seconds and the three HTTP-date forms),
 * retryable statuses, OTEL_EXPORTER_OTLP_HEADERS: tables of good and bad
 * inputs, bounds and overflow.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/http_parse.h"

/* 1994-11-06 08:49:37 UTC */
#define T94 ((time_t)784111777)

static void test_retry_after_seconds(void **state)
{
	static const struct {
		const char *in;
		uint64_t max;
		uint64_t want;
	} good[] = {
		{ "0", 60000, 0 },
		{ "1", 60000, 1000 },
		{ "  7\t", 60000, 7000 },
		{ "120", 60000, 60000 },		/* capped */
		{ "60", 60000, 60000 },
		{ "59", 60000, 59000 },
		{ "007", 60000, 7000 },
		{ "18446744073709551615", 60000, 60000 },	/* UINT64_MAX s */
		{ "18446744073709551616", 60000, 60000 },	/* overflows u64 */
		{ "99999999999999999999999999999999999999", 60000, 60000 },
		{ "18446744073709551", UINT64_MAX, 18446744073709551000ull },
		{ "18446744073709552", UINT64_MAX, UINT64_MAX },	/* * 1000 overflows */
		{ "5", 0, 0 },
		{ "5", 4500, 4500 },
	};
	static const char *const bad[] = {
		"", " ", "-1", "+1", "1.5", "1s", "0x10", "1 2", "one", "1,", "\r\n",
	};
	uint64_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		d = 12345;
		assert_int_equal(sp_http__parse_retry_after(good[i].in, strlen(good[i].in), T94,
							    good[i].max, &d), 0);
		if (d != good[i].want)
			fail_msg("\"%s\": got %llu want %llu", good[i].in, (unsigned long long)d,
				 (unsigned long long)good[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sp_http__parse_retry_after(bad[i], strlen(bad[i]), T94, 60000, &d) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	/* length is honoured: the digits after len are not read */
	assert_int_equal(sp_http__parse_retry_after("12x", 2, T94, 60000, &d), 0);
	assert_int_equal(d, 12000);
	assert_int_equal(sp_http__parse_retry_after("1\0002", 3, T94, 60000, &d), -EINVAL);
	assert_int_equal(sp_http__parse_retry_after(NULL, 0, T94, 60000, &d), -EINVAL);
}

static void test_retry_after_dates(void **state)
{
	static const struct {
		const char *in;
		time_t now;
		uint64_t want;
	} good[] = {
		/* the three forms of the same instant, 10 s after now */
		{ "Sun, 06 Nov 1994 08:49:47 GMT", T94, 10000 },
		{ "Sunday, 06-Nov-94 08:49:47 GMT", T94, 10000 },
		{ "Sun Nov  6 08:49:47 1994", T94, 10000 },
		{ "Sun Nov 06 08:49:47 1994", T94, 10000 },
		{ " Sun, 06 Nov 1994 08:49:47 GMT \t", T94, 10000 },
		/* now and the past: 0 */
		{ "Sun, 06 Nov 1994 08:49:37 GMT", T94, 0 },
		{ "Sun, 06 Nov 1994 08:49:36 GMT", T94, 0 },
		{ "Thu, 01 Jan 1970 00:00:00 GMT", T94, 0 },
		{ "Mon, 01 Jan 1900 00:00:00 GMT", T94, 0 },
		/* far future: capped */
		{ "Fri, 31 Dec 9999 23:59:59 GMT", T94, 60000 },
		{ "Mon, 07 Nov 1994 08:49:37 GMT", T94, 60000 },
		/* leap day, leap second, month ends */
		{ "Tue, 29 Feb 2000 00:00:00 GMT", T94, 60000 },
		{ "Sun, 06 Nov 1994 08:49:60 GMT", T94, 23000 },
		{ "Wed, 30 Nov 1994 00:00:00 GMT", T94, 60000 },
		/* RFC 850 two-digit years: "94" seen from 2030 is 2094?  no: more
		 * than 50 years ahead means the past century */
		{ "Sunday, 06-Nov-94 08:49:37 GMT", (time_t)1893456000 /* 2030 */, 0 },
		{ "Thursday, 01-Jan-70 00:00:00 GMT", T94, 0 },
		{ "Tuesday, 01-Jan-30 00:00:00 GMT", (time_t)1893456000 - 10, 10000 },
	};
	static const char *const bad[] = {
		"Sun, 06 Nov 1994 08:49:37 UTC",	/* zone must be GMT */
		"Sun, 06 Nov 1994 08:49:37 gmt",
		"sun, 06 Nov 1994 08:49:37 GMT",	/* case-sensitive */
		"Sun, 06 nov 1994 08:49:37 GMT",
		"Mon, 06 Nov 1994 08:49:37 GMT",	/* wrong weekday */
		"Sun, 6 Nov 1994 08:49:37 GMT",		/* 2DIGIT day */
		"Sun, 06 Nov 94 08:49:37 GMT",
		"Sun,06 Nov 1994 08:49:37 GMT",
		"Sun, 06  Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 8:49:37 GMT",
		"Sun, 06 Nov 1994 08:49 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1994 08:49:61 GMT",
		"Sun, 31 Nov 1994 08:49:37 GMT",	/* no Nov 31 */
		"Sun, 00 Nov 1994 08:49:37 GMT",
		"Mon, 29 Feb 1900 00:00:00 GMT",	/* 1900 not leap */
		"Sun, 29 Feb 1995 00:00:00 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT x",
		"Sun, 06 Nov 1994 08:49:37 GMTT",
		"Sun, 06 Nov 1994 08:49:37",
		"Sun, 06 Xyz 1994 08:49:37 GMT",
		"Sun, 01 Jan 1800 00:00:00 GMT",	/* before 1900 */
		"Sunday, 06-Nov-1994 08:49:37 GMT",
		"Sun, 06-Nov-94 08:49:37 GMT",		/* 850 needs the long name */
		"Sunday, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 UTC",
		"Sun Nov 6 08:49:37 1994",		/* asctime: SP pads the day */
		"Sun Nov  6 08:49:37 94",
		"Sun Nov  6 08:49:37 1994 GMT",
		"Sun  Nov 6 08:49:37 1994",
		"Mon Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:49:37 GMT\r\n",
		"Sun, 06 Nov 1994\00008:49:37 GMT",
	};
	uint64_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		d = 12345;
		if (sp_http__parse_retry_after(good[i].in, strlen(good[i].in), good[i].now, 60000,
					       &d))
			fail_msg("refused \"%s\"", good[i].in);
		if (d != good[i].want)
			fail_msg("\"%s\": got %llu want %llu", good[i].in, (unsigned long long)d,
				 (unsigned long long)good[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sp_http__parse_retry_after(bad[i], strlen(bad[i]), T94, 60000, &d) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	/* embedded NUL within len */
	assert_int_equal(sp_http__parse_retry_after("Sun, 06 Nov 1994\00008:49:37 GMT", 29, T94,
						    60000, &d), -EINVAL);
	/* max_ms above the distance: exact */
	assert_int_equal(sp_http__parse_retry_after("Mon, 07 Nov 1994 08:49:37 GMT", 29, T94,
						    UINT64_MAX, &d), 0);
	assert_int_equal(d, 86400000ull);
}

static void test_status_retryable(void **state)
{
	static const long yes[] = { 429, 502, 503, 504 };
	static const long no[] = { 0, -1, 100, 200, 204, 301, 400, 401, 403, 404, 408, 413,
				   415, 499, 500, 501, 505, 599, 1000 };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(sp_http__status_retryable(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (sp_http__status_retryable(no[i]))
			fail_msg("%ld retryable", no[i]);
}

struct collect {
	char out[4096];
	int n;
	int fail_at;	/* cb returns -ECANCELED on this call (1-based), 0 never */
};

static int collect_cb(const char *k, const char *v, void *ctx)
{
	struct collect *c = ctx;
	size_t l = strlen(c->out);

	c->n++;
	if (c->fail_at && c->n == c->fail_at)
		return -ECANCELED;
	snprintf(c->out + l, sizeof(c->out) - l, "[%s]=[%s]", k, v);
	return 0;
}

static void test_headers_good(void **state)
{
	static const struct {
		const char *in;
		const char *want;
	} t[] = {
		{ "", "" },
		{ "a=b", "[a]=[b]" },
		{ " a = b ,c=d", "[a]=[b][c]=[d]" },
		{ "api-key=secret%20value", "[api-key]=[secret value]" },
		{ "Authorization=Bearer%20abc%3D%3D", "[Authorization]=[Bearer abc==]" },
		{ "k=%2C%3d%25", "[k]=[,=%]" },
		{ "k=a=b", "[k]=[a=b]" },
		{ "k=", "[k]=[]" },
		{ "k= ", "[k]=[]" },
		{ "k=%20x%20", "[k]=[ x ]" },
		{ "k=a\tb", "[k]=[a\tb]" },
		{ "a=1,,b=2,", "[a]=[1][b]=[2]" },
		{ " , ", "" },
		{ "x-Tenant_ID.v2=~!", "[x-Tenant_ID.v2]=[~!]" },
		{ "k=\xc3\xa9", "[k]=[\xc3\xa9]" },
	};
	struct collect c;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&c, 0, sizeof(c));
		if (sp_http__parse_headers(t[i].in, collect_cb, &c))
			fail_msg("refused \"%s\"", t[i].in);
		if (strcmp(c.out, t[i].want))
			fail_msg("\"%s\": got %s want %s", t[i].in, c.out, t[i].want);
	}
}

static void test_headers_bad(void **state)
{
	static const struct {
		const char *in;
		int err;
		int calls;	/* cb calls made before the error */
	} t[] = {
		{ "a", -EINVAL, 0 },
		{ "=b", -EINVAL, 0 },
		{ " =b", -EINVAL, 0 },
		{ "a=1,b", -EINVAL, 1 },
		{ "a b=c", -EINVAL, 0 },
		{ "a:b=c", -EINVAL, 0 },
		{ "a(=c", -EINVAL, 0 },
		{ "k=%", -EINVAL, 0 },
		{ "k=%2", -EINVAL, 0 },
		{ "k=%zz", -EINVAL, 0 },
		{ "k=%g0", -EINVAL, 0 },
		{ "k=a%0d%0aX-Injected: 1", -EINVAL, 0 },	/* CRLF injection */
		{ "k=a%0aX: 1", -EINVAL, 0 },
		{ "k=a%00b", -EINVAL, 0 },
		{ "k=a%7f", -EINVAL, 0 },
		{ "k=a\rb", -EINVAL, 0 },
		{ "k=a\nb", -EINVAL, 0 },
		{ "k\x01=v", -EINVAL, 0 },
		{ "\xc3\xa9=v", -EINVAL, 0 },
	};
	struct collect c;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int r;

		memset(&c, 0, sizeof(c));
		r = sp_http__parse_headers(t[i].in, collect_cb, &c);
		if (r != t[i].err || c.n != t[i].calls)
			fail_msg("\"%s\": got %d after %d calls, want %d after %d", t[i].in, r, c.n,
				 t[i].err, t[i].calls);
	}
	assert_int_equal(sp_http__parse_headers(NULL, collect_cb, &c), -EINVAL);
	assert_int_equal(sp_http__parse_headers("a=b", NULL, NULL), -EINVAL);
	/* the callback's error stops the walk */
	memset(&c, 0, sizeof(c));
	c.fail_at = 2;
	assert_int_equal(sp_http__parse_headers("a=1,b=2,c=3", collect_cb, &c), -ECANCELED);
	assert_int_equal(c.n, 2);
}

static void test_headers_bounds(void **state)
{
	char *s = malloc(20000);
	struct collect c;
	size_t o = 0;

	(void)state;
	assert_non_null(s);
	/* exactly 64 entries pass, 65 do not (and 64 calls are made first) */
	for (int i = 0; i < 64; i++)
		o += (size_t)sprintf(s + o, "%sk%d=v", i ? "," : "", i);
	memset(&c, 0, sizeof(c));
	assert_int_equal(sp_http__parse_headers(s, collect_cb, &c), 0);
	assert_int_equal(c.n, 64);
	sprintf(s + o, ",k64=v");
	memset(&c, 0, sizeof(c));
	assert_int_equal(sp_http__parse_headers(s, collect_cb, &c), -E2BIG);
	assert_int_equal(c.n, 64);

	/* an entry of key + value = 8190 bytes (+2 NULs = 8 KiB) passes */
	memset(s, 'v', 8190);
	s[0] = 'k';
	s[1] = '=';
	memset(s + 2, 'v', 8189);
	s[8191] = '\0';	/* "k=" + 8189 v: key 1 + value 8189 = 8190 */
	memset(&c, 0, sizeof(c));
	assert_int_equal(sp_http__parse_headers(s, collect_cb, &c), 0);
	s[8191] = 'v';
	s[8192] = '\0';
	assert_int_equal(sp_http__parse_headers(s, collect_cb, &c), -E2BIG);
	/* percent-encoded bytes count before decoding: bounded by the input */
	memset(s + 2, 'v', 15000);
	s[15002] = '\0';
	assert_int_equal(sp_http__parse_headers(s, collect_cb, &c), -E2BIG);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_after_seconds),
		cmocka_unit_test(test_retry_after_dates),
		cmocka_unit_test(test_status_retryable),
		cmocka_unit_test(test_headers_good),
		cmocka_unit_test(test_headers_bad),
		cmocka_unit_test(test_headers_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
