// SPDX-License-Identifier: MIT
/*
 * test_maps_reader.c - sp_maps_reader__scan (base/maps_reader.h) over
 * maps files written into a private proc root: every parsed line reaches
 * the callback in order, a malformed line and a line longer than
 * SP_MAPS_LINE_MAX are skipped and counted once each, a last line without
 * '\n' is read, a callback can stop early or fail, a missing process is
 * -ENOENT, more than SP_MAPS_MAX_LINES lines set truncated; the real
 * /proc/self/maps holds this test's own executable mapping; and
 * sp_maps__is_otel_ctx knows the three OTEP 4719 mapping names.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "base/maps_reader.h"

/* Opens ROOT/pid/maps for writing. */
static FILE *maps_file(uint32_t pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u", tu_dir, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%u/maps", tu_dir, pid);
	return fopen(path, "w");
}

struct seen {
	int n;
	uint64_t starts[8];
	char paths[8][64];
	int stop_after;		/* 0 = never */
	int fail_after;		/* 0 = never */
};

static int collect(const struct sp_map_entry *e, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		s->starts[s->n] = e->start;
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%.*s", (int)e->path_len,
			 e->path ? e->path : "");
	}
	s->n++;
	if (s->fail_after && s->n == s->fail_after)
		return -EIO;
	if (s->stop_after && s->n == s->stop_after)
		return 1;
	return 0;
}

static void test_lines(void **state)
{
	struct sp_maps_read_stats st;
	struct seen s = { 0 };
	FILE *f = maps_file(1);
	size_t i;

	(void)state;
	assert_non_null(f);
	fputs("1000-2000 r-xp 00000000 fd:01 11 /usr/bin/a\n", f);
	fputs("this is not a maps line\n", f);
	fputs("3000-4000 rw-p 00000000 00:00 0 [heap]\n", f);
	/* An overlong line (a path longer than PATH_MAX): skipped whole. */
	fputs("5000-6000 r-xp 00000000 fd:01 12 /", f);
	for (i = 0; i < SP_MAPS_LINE_MAX; i++)
		fputc('x', f);
	fputs("\n", f);
	fputs("7000-8000 r--s 00000000 00:01 5 /memfd:OTEL_CTX (deleted)", f);	/* no '\n' */
	assert_int_equal(fclose(f), 0);

	assert_int_equal(sp_maps_reader__scan(tu_dir, 1, collect, &s, &st), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.starts[0], 0x1000);
	assert_string_equal(s.paths[0], "/usr/bin/a");
	assert_int_equal(s.starts[1], 0x3000);
	assert_string_equal(s.paths[1], "[heap]");
	assert_int_equal(s.starts[2], 0x7000);
	assert_string_equal(s.paths[2], "/memfd:OTEL_CTX");
	assert_int_equal(st.lines, 5);
	assert_int_equal(st.malformed, 2);
	assert_false(st.truncated);

	/* Stop early (not an error) and fail (the callback's errno). */
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	assert_int_equal(sp_maps_reader__scan(tu_dir, 1, collect, &s, &st), 0);
	assert_int_equal(s.n, 2);
	memset(&s, 0, sizeof(s));
	s.fail_after = 1;
	assert_int_equal(sp_maps_reader__scan(tu_dir, 1, collect, &s, &st), -EIO);
	assert_int_equal(s.n, 1);

	/* A process that is gone. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(sp_maps_reader__scan(tu_dir, 2, collect, &s, &st), -ENOENT);
	assert_int_equal(s.n, 0);
	assert_int_equal(sp_maps_reader__scan(tu_dir, 1, NULL, &s, &st), -EINVAL);
}

static void test_line_cap(void **state)
{
	struct sp_maps_read_stats st;
	struct seen s = { 0 };
	FILE *f = maps_file(3);
	uint32_t i;

	(void)state;
	assert_non_null(f);
	for (i = 0; i < SP_MAPS_MAX_LINES + 10; i++)
		fprintf(f, "%x-%x r--p 00000000 00:00 0\n", (i + 1) << 12, (i + 2) << 12);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(sp_maps_reader__scan(tu_dir, 3, collect, &s, &st), 0);
	assert_int_equal(s.n, SP_MAPS_MAX_LINES);
	assert_int_equal(st.lines, SP_MAPS_MAX_LINES);
	assert_true(st.truncated);
}

struct self_scan {
	uint64_t addr;
	int found;
};

static int find_addr(const struct sp_map_entry *e, void *ctx)
{
	struct self_scan *s = ctx;

	if (s->addr >= e->start && s->addr < e->end && (e->perms & SP_MAP_X) && e->inode) {
		s->found = 1;
		return 1;
	}
	return 0;
}

static void test_real_proc(void **state)
{
	struct self_scan s = { .addr = (uint64_t)(uintptr_t)&test_real_proc };
	struct sp_maps_read_stats st;

	(void)state;
	assert_int_equal(sp_maps_reader__scan("/proc", (uint32_t)getpid(), find_addr, &s, &st), 0);
	assert_int_equal(s.found, 1);
	assert_int_equal(st.malformed, 0);
}

static void test_otel_ctx_names(void **state)
{
	static const char *const yes[] = {
		"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX",
	};
	static const char *const no[] = {
		"[anon:OTEL_CTX2]", "/memfd:OTEL_CT", "OTEL_CTX", "", "[heap]",
	};
	struct sp_map_entry e = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		e.path = yes[i];
		e.path_len = strlen(yes[i]);
		assert_true(sp_maps__is_otel_ctx(&e));
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		e.path = no[i];
		e.path_len = strlen(no[i]);
		assert_false(sp_maps__is_otel_ctx(&e));
	}
	e.path = NULL;
	e.path_len = 0;
	assert_false(sp_maps__is_otel_ctx(&e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_line_cap),
		cmocka_unit_test(test_real_proc),
		cmocka_unit_test(test_otel_ctx_names),
	};

	return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
