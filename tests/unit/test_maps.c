// SPDX-License-Identifier: MIT
/*
 * test_maps.c - sp_maps__parse_line (base/maps.h) on good lines, the
 * kernel's special names, paths with spaces and " (deleted)", and on
 * malformed input: missing fields, bad hex, overflow, start >= end, bad
 * perms, glued fields, embedded NUL.  Every prefix of valid lines is parsed
 * from an exactly sized heap copy (so ASan catches a read past len) and
 * must either fail or agree with the full line on every field it has.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/maps.h"

/* Parses a heap copy of exactly len bytes (no NUL after it). */
static int parse_exact(const char *s, size_t len, struct sp_map_entry *e)
{
	char *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, s, len);
	r = sp_maps__parse_line(copy, len, e);
	/* path points into copy: compare before freeing is the caller's
	 * job, so re-point it at s for the caller. */
	if (r == 0 && e->path)
		e->path = s + (e->path - copy);
	free(copy);
	return r;
}

static int parse(const char *s, struct sp_map_entry *e)
{
	return parse_exact(s, strlen(s), e);
}

static void assert_path(const struct sp_map_entry *e, const char *want)
{
	assert_int_equal(e->path_len, strlen(want));
	assert_memory_equal(e->path, want, e->path_len);
}

static void test_good_line(void **state)
{
	struct sp_map_entry e;

	(void)state;
	assert_int_equal(parse("7f12a000-7f12c000 r-xp 00002000 fd:01 1311"
			       "                       /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e), 0);
	assert_int_equal(e.start, 0x7f12a000);
	assert_int_equal(e.end, 0x7f12c000);
	assert_int_equal(e.offset, 0x2000);
	assert_int_equal(e.dev_major, 0xfd);
	assert_int_equal(e.dev_minor, 0x01);
	assert_int_equal(e.inode, 1311);
	assert_int_equal(e.perms, SP_MAP_R | SP_MAP_X | SP_MAP_P);
	assert_int_equal(e.deleted, 0);
	assert_path(&e, "/usr/lib/x86_64-linux-gnu/libc.so.6");

	/* Without the newline, shared, all-dash perms, 64-bit values. */
	assert_int_equal(parse("ffffffffff600000-ffffffffff601000 --xs ffffffffffffffff "
			       "ffffffff:ffffffff 18446744073709551615 /a", &e), 0);
	assert_true(e.start == 0xffffffffff600000ULL);
	assert_true(e.offset == UINT64_MAX);
	assert_true(e.inode == UINT64_MAX);
	assert_int_equal(e.dev_major, 0xffffffffU);
	assert_int_equal(e.perms, SP_MAP_X);
	assert_path(&e, "/a");

	/* Upper-case hex is hex. */
	assert_int_equal(parse("ABC-DEF rw-p 0 0:0 0", &e), 0);
	assert_int_equal(e.start, 0xabc);
	assert_int_equal(e.perms, SP_MAP_R | SP_MAP_W | SP_MAP_P);
}

static void test_anonymous(void **state)
{
	struct sp_map_entry e;

	(void)state;
	/* Modern kernels: nothing after the inode; older ones: a space. */
	assert_int_equal(parse("7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n", &e), 0);
	assert_null(e.path);
	assert_int_equal(e.path_len, 0);
	assert_int_equal(parse("7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n", &e), 0);
	assert_int_equal(e.path_len, 0);
	assert_int_equal(e.perms, SP_MAP_R | SP_MAP_W | SP_MAP_X | SP_MAP_P);
	assert_int_equal(parse("7f0000000000-7f0000001000 rwxp 00000000 00:00 0          \n", &e), 0);
	assert_int_equal(e.path_len, 0);
}

static void test_specials(void **state)
{
	struct sp_map_entry e;

	(void)state;
	assert_int_equal(parse("7ffd1c5f2000-7ffd1c5f4000 r-xp 00000000 00:00 0"
			       "                          [vdso]\n", &e), 0);
	assert_path(&e, "[vdso]");
	assert_int_equal(parse("7ffd1c4d0000-7ffd1c4f1000 rw-p 00000000 00:00 0"
			       "                          [stack]\n", &e), 0);
	assert_path(&e, "[stack]");
	assert_int_equal(parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
			       "                  [vsyscall]\n", &e), 0);
	assert_path(&e, "[vsyscall]");
	assert_int_equal(parse("7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [anon:v8 jit]", &e), 0);
	assert_path(&e, "[anon:v8 jit]");
}

static void test_spaces_and_deleted(void **state)
{
	struct sp_map_entry e;

	(void)state;
	assert_int_equal(parse("1000-2000 r-xp 00000000 08:02 42   /opt/my app/lib x.so\n", &e), 0);
	assert_path(&e, "/opt/my app/lib x.so");
	assert_int_equal(e.deleted, 0);

	assert_int_equal(parse("1000-2000 r-xp 00001000 08:02 42 /tmp/gone (deleted)\n", &e), 0);
	assert_path(&e, "/tmp/gone");
	assert_int_equal(e.deleted, 1);

	assert_int_equal(parse("1000-2000 r-xp 00001000 08:02 42 /tmp/a b (deleted)", &e), 0);
	assert_path(&e, "/tmp/a b");
	assert_int_equal(e.deleted, 1);

	/* Only the suffix counts; "(deleted)" elsewhere is a name. */
	assert_int_equal(parse("1000-2000 r-xp 0 08:02 42 /tmp/x (deleted) y", &e), 0);
	assert_path(&e, "/tmp/x (deleted) y");
	assert_int_equal(e.deleted, 0);
	assert_int_equal(parse("1000-2000 r-xp 0 08:02 42 (deleted)", &e), 0);
	assert_path(&e, "(deleted)");
	assert_int_equal(e.deleted, 0);

	assert_int_equal(parse("1000-2000 r-xp 0 08:02 42 /memfd:jit (deleted)", &e), 0);
	assert_path(&e, "/memfd:jit");
	assert_int_equal(e.deleted, 1);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		" ",
		"1000",
		"1000-",
		"1000-2000",
		"1000-2000 ",
		"1000-2000 r-xp",
		"1000-2000 r-xp 0",
		"1000-2000 r-xp 0 08:02",
		"1000-2000 r-xp 0 08:02 ",
		"1000-2000 r-xp 0 08 42",
		"1000-2000 r-xp 0 08: 42",
		"1000-2000 r-xp 0 :02 42",
		/* bad hex / dec */
		"10g0-2000 r-xp 0 08:02 42",
		"0x1000-2000 r-xp 0 08:02 42",
		"1000-2000 r-xp 0z 08:02 42",
		"1000-2000 r-xp 0 0g:02 42",
		"1000-2000 r-xp 0 08:02 4a",
		"1000-2000 r-xp 0 08:02 -1",
		"-1000-2000 r-xp 0 08:02 42",
		"+1000-2000 r-xp 0 08:02 42",
		/* overflow */
		"10000000000000000-20000000000000000 r-xp 0 08:02 42",
		"1000-2000 r-xp 10000000000000000 08:02 42",
		"1000-2000 r-xp 0 100000000:02 42",
		"1000-2000 r-xp 0 08:100000000 42",
		"1000-2000 r-xp 0 08:02 18446744073709551616",
		"1000-2000 r-xp 0 08:02 99999999999999999999",
		/* start >= end */
		"2000-2000 r-xp 0 08:02 42",
		"2000-1000 r-xp 0 08:02 42",
		/* perms */
		"1000-2000 r-x 0 08:02 42",
		"1000-2000 r-xpp 0 08:02 42",
		"1000-2000 x-rp 0 08:02 42",
		"1000-2000 r-xq 0 08:02 42",
		"1000-2000 R-XP 0 08:02 42",
		/* separators */
		"1000 2000 r-xp 0 08:02 42",
		"1000-2000  r-xp 0 08:02 42",
		"1000-2000\tr-xp 0 08:02 42",
		"1000-2000 r-xp 0 08:02 42/glued",
		"1000-2000 r-xp 0 08:02 42 /a\nb",
		"1000-2000 r-xp 0 08:02 42\n\n",
		" 1000-2000 r-xp 0 08:02 42",
	};
	struct sp_map_entry e;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0xa5, sizeof(e));
		if (parse(bad[i], &e) != -EINVAL)
			fail_msg("accepted malformed line %zu: \"%s\"", i, bad[i]);
		/* out is zeroed on failure */
		assert_null(e.path);
		assert_int_equal(e.start, 0);
	}
	/* NUL inside the path (length-delimited input). */
	assert_int_equal(parse_exact("1000-2000 r-xp 0 08:02 42 /a\0b", 30, &e), -EINVAL);
	/* NULL arguments */
	assert_int_equal(sp_maps__parse_line(NULL, 10, &e), -EINVAL);
	assert_int_equal(sp_maps__parse_line("1000-2000 r-xp 0 08:02 42", 25, NULL), -EINVAL);
}

/* Every prefix of a valid line: no crash, no read past the prefix (exact
 * heap copy under ASan), and a success must agree with the full line. */
static void check_prefixes(const char *line)
{
	struct sp_map_entry full, e;
	size_t len = strlen(line), n;

	assert_int_equal(parse(line, &full), 0);
	for (n = 0; n <= len; n++) {
		int r = parse_exact(line, n, &e);

		if (r == 0) {
			assert_true(e.start == full.start);
			assert_true(e.start < e.end);
			assert_int_equal(e.perms, full.perms);
			assert_true(e.path_len <= n);
			if (e.path_len) {
				assert_true(e.path >= line && e.path + e.path_len <= line + n);
				assert_memory_equal(e.path, full.path,
						    e.path_len < full.path_len ? e.path_len : full.path_len);
			}
		} else {
			assert_int_equal(r, -EINVAL);
		}
	}
}

static void test_prefixes(void **state)
{
	(void)state;
	check_prefixes("7f12a000-7f12c000 r-xp 00002000 fd:01 1311"
		       "                       /usr/lib/x86_64-linux-gnu/libc.so.6\n");
	check_prefixes("1000-2000 r-xp 00001000 08:02 42 /tmp/a b (deleted)\n");
	check_prefixes("7ffd1c5f2000-7ffd1c5f4000 r-xp 00000000 00:00 0 [vdso]");
	check_prefixes("ffffffffffffffe-ffffffffffffffff rw-s ffffffffffffffff "
		       "ffffffff:ffffffff 18446744073709551615\n");
}

/* Cheap deterministic fuzz: random mutations of a valid line must not
 * crash or read out of bounds, and successes must be self-consistent. */
static void test_mutations(void **state)
{
	static const char base[] = "7f12a000-7f12c000 r-xp 00002000 fd:01 1311 /usr/lib/libc.so.6 (deleted)\n";
	static const char alphabet[] = "0123456789abcdefxg-: \t\n\0rwxps/([)]";
	uint64_t x = 0x12345678abcdefULL;
	char buf[sizeof(base)];
	struct sp_map_entry e;
	int i, k;

	(void)state;
	for (i = 0; i < 20000; i++) {
		size_t len = sizeof(base) - 1;

		memcpy(buf, base, len);
		for (k = 0; k < 1 + i % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[x % len] = alphabet[(x >> 32) % (sizeof(alphabet) - 1)];
		}
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = (size_t)(x % (len + 1));
		if (parse_exact(buf, len, &e) == 0) {
			assert_true(e.start < e.end);
			assert_true(e.path_len < len);
			if (e.path_len == 0)
				assert_null(e.path);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_line),
		cmocka_unit_test(test_anonymous),
		cmocka_unit_test(test_specials),
		cmocka_unit_test(test_spaces_and_deleted),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests_name("maps", tests, NULL, NULL);
}
