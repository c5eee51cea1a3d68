// SPDX-License-Identifier: MIT
/*
 * test_otel_env.c - OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME parsing
 * (collector/procs/otel_env.h) and the per-pid cache that reads them from
 * /proc/PID/environ (collector/procs/proc_env.h), on a private proc root
 * made of real files.
 *
 * Syntax: trimming, empty entries, percent-decoding, later duplicates
 * win; each malformed form discards the whole value and names the entry;
 * bounds drop and count, never truncate; hostile bytes become '?'; the
 * first of each variable wins, as getenv's; a block without a final NUL.
 * Cache: declarations stored, none for a plain process, unreadable
 * counted, the byte budget enforced, forget and re-read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/procs/otel_env.h"
#include "collector/procs/proc_env.h"

static void expect_attrs(const char *s, uint32_t n, const char *const *kv, uint32_t dropped)
{
	struct sp_otel_attrs a;

	assert_int_equal(sp_otel_env__parse_attrs(s, strlen(s), &a, NULL), 0);
	if (a.n != n)
		fail_msg("\"%s\": %u attributes, want %u", s, a.n, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_string_equal(a.a[i].key, kv[2 * i]);
		assert_string_equal(a.a[i].value, kv[2 * i + 1]);
	}
	assert_int_equal(a.dropped, dropped);
}

static void test_syntax(void **state)
{
	(void)state;
	expect_attrs("a=1,b=2", 2, (const char *const[]){ "a", "1", "b", "2" }, 0);
	expect_attrs(" a = x%20y , ,b=%2C%3D,", 2,
		     (const char *const[]){ "a", "x y", "b", ",=" }, 0);
	expect_attrs("a=1,a=2", 1, (const char *const[]){ "a", "2" }, 0);
	expect_attrs("a=", 1, (const char *const[]){ "a", "" }, 0);
	expect_attrs("a=b=c", 1, (const char *const[]){ "a", "b=c" }, 0);
	expect_attrs("k=%1b%ff", 1, (const char *const[]){ "k", "??" }, 0);
	expect_attrs("k=caf%C3%A9", 1, (const char *const[]){ "k", "caf\xc3\xa9" }, 0);
	expect_attrs("", 0, NULL, 0);
}

static void test_invalid(void **state)
{
	static const struct { const char *s; uint32_t entry; } bad[] = {
		{ "novalue", 1 }, { "a=1,b", 2 }, { "=1", 1 }, { "a=%", 1 }, { "a=%2", 1 },
		{ "a=%zz", 1 }, { "a b=1", 1 }, { "a;b=1", 1 }, { "k\x01=1", 1 },
		{ "x=1,y=2,\"q\"=3", 3 },
	};
	struct sp_otel_attrs a;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t entry = 0;

		if (sp_otel_env__parse_attrs(bad[i].s, strlen(bad[i].s), &a, &entry) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i].s);
		assert_int_equal(a.n, 0);
		if (entry != bad[i].entry)
			fail_msg("\"%s\": entry %u, want %u", bad[i].s, entry, bad[i].entry);
	}
}

static void test_bounds(void **state)
{
	char s[8192], key[200], val[400];
	struct sp_otel_attrs a;
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 20; i++)
		n += snprintf(s + n, sizeof(s) - n, "%sk%02d=v", i ? "," : "", i);
	assert_int_equal(sp_otel_env__parse_attrs(s, n, &a, NULL), 0);
	assert_int_equal(a.n, SP_OTEL_ATTRS_MAX);
	assert_int_equal(a.dropped, 20 - SP_OTEL_ATTRS_MAX);
	assert_string_equal(a.a[15].key, "k15");
	memset(key, 'k', 128);
	key[128] = 0;
	memset(val, 'v', 256);
	val[256] = 0;
	snprintf(s, sizeof(s), "%s=1,ok=1,long=%s", key, val);
	assert_int_equal(sp_otel_env__parse_attrs(s, strlen(s), &a, NULL), 0);
	assert_int_equal(a.n, 1);
	assert_string_equal(a.a[0].key, "ok");
	assert_int_equal(a.dropped, 2);
	/* 255 bytes after decoding fit exactly */
	val[255] = 0;
	snprintf(s, sizeof(s), "v=%s", val);
	assert_int_equal(sp_otel_env__parse_attrs(s, strlen(s), &a, NULL), 0);
	assert_int_equal(strlen(a.a[0].value), 255);
}

static void test_scan(void **state)
{
	static const char block[] = "PATH=/bin\0OTEL_SERVICE_NAMEX=no\0OTEL_SERVICE_NAME=cart\0"
				    "OTEL_RESOURCE_ATTRIBUTES=a=1\0OTEL_SERVICE_NAME=second\0"
				    "OTEL_RESOURCE_ATTRIBUTES=b=2";	/* no final NUL */
	static const char bad[] = "OTEL_RESOURCE_ATTRIBUTES=oops\0OTEL_SERVICE_NAME=ev\x1bil";
	static const char plain[] = "HOME=/\0TERM=xterm";
	struct sp_otel_identity id;

	(void)state;
	assert_int_equal(sp_otel_env__scan(block, sizeof(block) - 1, &id), 1);
	assert_string_equal(id.service_name, "cart");
	assert_int_equal(id.attrs.n, 1);
	assert_string_equal(sp_otel_env__get(&id.attrs, "a"), "1");
	assert_null(sp_otel_env__get(&id.attrs, "b"));
	assert_int_equal(sp_otel_env__scan(bad, sizeof(bad) - 1, &id), 1);
	assert_int_equal(id.invalid, 1);
	assert_int_equal(id.attrs.n, 0);
	assert_string_equal(id.service_name, "ev?il");
	assert_int_equal(sp_otel_env__scan(plain, sizeof(plain) - 1, &id), 0);
	assert_int_equal(sp_otel_env__scan(NULL, 0, &id), 0);
}

static void write_environ(const char *root, uint32_t pid, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/environ", root, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_cache(void **state)
{
	char root[] = "/tmp/test_otel_env.XXXXXX";
	static const char svc[] = "A=1\0OTEL_SERVICE_NAME=cart\0OTEL_RESOURCE_ATTRIBUTES=t=x";
	static const char plain[] = "A=1";
	const struct sp_proc_env_ident *id;
	struct sp_proc_env *c;
	char cmd[300];

	(void)state;
	assert_non_null(mkdtemp(root));
	write_environ(root, 10, svc, sizeof(svc));
	write_environ(root, 11, plain, sizeof(plain));
	write_environ(root, 12, svc, sizeof(svc));
	c = sp_proc_env__new(16, 400, root);	/* room for one declaration (~300 B) */
	assert_non_null(c);
	sp_proc_env__note(c, 10);
	id = sp_proc_env__get(c, 10);
	assert_non_null(id);
	assert_string_equal(id->service_name, "cart");
	assert_int_equal(id->n_attrs, 1);
	assert_string_equal(id->keys[0], "t");
	assert_string_equal(id->values[0], "x");
	assert_null(sp_proc_env__get(c, 11));		/* read at lookup, declares nothing */
	assert_null(sp_proc_env__get(c, 99));		/* no such process */
	assert_int_equal(sp_proc_env__stats(c)->unreadable, 1);
	assert_null(sp_proc_env__get(c, 12));		/* over the byte budget */
	assert_int_equal(sp_proc_env__stats(c)->over_budget, 1);
	sp_proc_env__forget(c, 10);			/* frees its bytes */
	sp_proc_env__forget(c, 12);
	assert_non_null(sp_proc_env__get(c, 12));
	assert_int_equal(sp_proc_env__stats(c)->declared, 3);
	sp_proc_env__free(c);
	sp_proc_env__free(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
