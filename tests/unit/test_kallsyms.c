// SPDX-License-Identifier: MIT
/*
 * test_kallsyms.c - kernel symbol snapshots, both sides.
 *
 * Parser (src/symbolizer/kallsyms.c) on good, malformed and hostile input:
 * header rules, strict hex, unsorted input, duplicates chosen the same way
 * whatever the order, over-long lines, a last line without newline, NUL
 * bytes, gzip (good, truncated, a decompression bomb), the symbol-count
 * bound; resolution edges (below the first symbol, exact starts, the last
 * byte before the next symbol, end markers, module tails).  The snapshot
 * set (files, lazy directories, misnamed files, invalid build ids) and
 * kernel frames in sp_symbolize__profile_ks with every counter, and
 * through the layout (link-time image offsets against another boot's
 * slid snapshot, module offsets by build id, boot-id slots).
 * Capture (src/collector/host/kallsyms.c) on fake inputs through
 * SPANPROF_KALLSYMS_PATH (all-zero addresses -> -EPERM, unsorted and
 * malformed lines) and, as root, on the real /proc/kallsyms: mode 0644,
 * gzip, the running kernel's build id in the header, sorted, and
 * do_syscall_64/schedule at the addresses /proc/kallsyms gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "base/buildid.h"
#include "collector/host/kallsyms.h"
#include "profile/codec.h"
#include "profile/profile.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbolize.h"

#define ID "0123456789abcdef0123456789abcdef01234567"
#define HDR "# spanprof-kallsyms v1 build-id=" ID " captured-at=1700000000000000000 kernel=6.1.0-test boot-id=abc\n"

static struct sp_ksyms *parse_ok(const char *text, struct sp_ksyms_stats *st)
{
	struct sp_ksyms *k = NULL;

	assert_int_equal(sp_ksyms__parse(text, strlen(text), &k, st), 0);
	assert_non_null(k);
	return k;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* ------------------------------------------------------------ parser */

static const char good[] = HDR
	"ffffffff81000300 T irq_entries_start\n"
	"ffffffff81000100 t entry_a\n"		/* unsorted */
	"ffffffff81000100 T alias_global\n"	/* same address: T wins */
	"ffffffff81000200 W weak_one\n"
	"ffffffff81000400 T _etext\n"		/* end marker: gap after it */
	"ffffffff81000800 T after_gap\n"
	"ffffffff81000900 D some_data\n"	/* not text: skipped */
	"# a comment\n"
	"ffffffffc0201000 t mod_fn_a\t[mymod]\n"
	"ffffffffc0201080 t mod_fn_b\t[mymod]\n"
	"ffffffffc0300000 t bpf_prog_1234_x\t[bpf]\n"
	"ffffffffc0400000 t last_one\t[other]";	/* no newline */

static void test_parse_good(void **state)
{
	struct sp_ksyms_stats st;
	struct sp_ksyms *k;
	struct sp_ksym s;

	(void)state;
	k = parse_ok(good, &st);
	assert_string_equal(sp_ksyms__build_id(k), ID);
	assert_string_equal(sp_ksyms__kernel(k), "6.1.0-test");
	assert_string_equal(sp_ksyms__boot_id(k), "abc");
	assert_true(sp_ksyms__captured_at(k) == 1700000000000000000ull);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.skipped_type, 1);
	assert_int_equal(st.comments, 1);
	assert_int_equal(st.malformed, 0);
	assert_true(st.unsorted);
	assert_int_equal(sp_ksyms__count(k), 9);
	assert_int_equal(st.symbols, 9);

	/* below the first symbol */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff810000ffull, &s), -ERANGE);
	assert_int_equal(sp_ksyms__resolve(k, 0, &s), -ERANGE);
	/* exact start: the global alias wins over the local one */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000100ull, &s), 0);
	assert_string_equal(s.name, "alias_global");
	assert_null(s.module);
	assert_true(s.offset == 0);
	/* last byte before the next symbol */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff810001ffull, &s), 0);
	assert_string_equal(s.name, "alias_global");
	assert_true(s.offset == 0xff);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000200ull, &s), 0);
	assert_string_equal(s.name, "weak_one");
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff810003ffull, &s), 0);
	assert_string_equal(s.name, "irq_entries_start");
	/* the gap after _etext is not a function */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000400ull, &s), -ERANGE);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff810007ffull, &s), -ERANGE);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000800ull, &s), 0);
	assert_string_equal(s.name, "after_gap");
	/* vmlinux's last symbol before modules: bounded tail */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000800ull + SP_KSYMS_TAIL_MAX - 1, &s), 0);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000800ull + SP_KSYMS_TAIL_MAX, &s),
			 -ERANGE);
	/* modules */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0201010ull, &s), 0);
	assert_string_equal(s.name, "mod_fn_a");
	assert_string_equal(s.module, "mymod");
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc02010a0ull, &s), 0);
	assert_string_equal(s.name, "mod_fn_b");
	assert_string_equal(s.module, "mymod");
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0201080ull + SP_KSYMS_TAIL_MAX, &s),
			 -ERANGE);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0300010ull, &s), 0);
	assert_string_equal(s.module, "bpf");
	/* the very last symbol (no newline after it) and beyond */
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0400004ull, &s), 0);
	assert_string_equal(s.name, "last_one");
	assert_string_equal(s.module, "other");
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0400000ull + SP_KSYMS_TAIL_MAX, &s),
			 -ERANGE);
	assert_int_equal(sp_ksyms__resolve(k, UINT64_MAX, &s), -ERANGE);
	sp_ksyms__free(k);
	sp_ksyms__free(NULL);
}

static void test_duplicates_deterministic(void **state)
{
	static const char *const orders[] = {
		HDR "1000 t b_local\n1000 T __a_global\n1000 T a_global\n1000 W w\n",
		HDR "1000 W w\n1000 T a_global\n1000 t b_local\n1000 T __a_global\n",
		HDR "1000 T __a_global\n1000 W w\n1000 t b_local\n1000 T a_global\n",
		/* markers lose against anything else at their address */
		HDR "1000 T __x_text_end\n1000 T a_global\n",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
		struct sp_ksyms_stats st;
		struct sp_ksyms *k = parse_ok(orders[i], &st);
		struct sp_ksym s;

		assert_int_equal(sp_ksyms__count(k), 1);
		assert_int_equal(sp_ksyms__resolve(k, 0x1001, &s), 0);
		assert_string_equal(s.name, "a_global");
		sp_ksyms__free(k);
	}
}

static void test_header_rules(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"ffffffff81000000 T _text\n",				/* no header */
		"# spanprof-kallsyms v2 build-id=" ID "\n",		/* version */
		"# spanprof-kallsyms v1 kernel=x\n",			/* no build id */
		"# spanprof-kallsyms v1 build-id=ABCD\n",		/* upper case */
		"# spanprof-kallsyms v1 build-id=abc\n",		/* odd length */
		"# spanprof-kallsyms v1 build-id=../../etc/passwd\n",
		"# spanprof-kallsyms v1 build-id=" ID " junk\n",	/* not key=value */
		"# spanprof-kallsyms v1 build-id=" ID ID ID ID "\n",	/* > 128 hex */
	};
	struct sp_ksyms *k = (void *)1;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sp_ksyms__parse(bad[i], strlen(bad[i]), &k, NULL), -EINVAL);
		assert_null(k);
	}
	/* a header alone is a valid, empty snapshot; unknown keys ignored */
	k = parse_ok("# spanprof-kallsyms v1 build-id=ab future=1", NULL);
	assert_int_equal(sp_ksyms__count(k), 0);
	assert_string_equal(sp_ksyms__build_id(k), "ab");
	assert_string_equal(sp_ksyms__kernel(k), "");
	sp_ksyms__free(k);
}

static void test_malformed_lines(void **state)
{
	static const char text[] = HDR
		"zzzz T bad_hex\n"
		"0xffff T prefixed\n"
		"-1000 T signed\n"
		"10000000000000000 T seventeen_digits\n"
		"1000 T\n"					/* no name */
		"1000 T \n"					/* empty name */
		"1000  T two_spaces\n"
		"1000 TT long_type\n"
		"1000 T name\t[unclosed\n"
		"1000 T name\t[]\n"
		"1000 T name\t[mod] trailing\n"
		"1000 T name extra\n"
		"1000 T na\x01me\n"
		"1000 T name\r\n"
		"0000000000000000 T zero\n"			/* kptr_restrict */
		"\n"
		"2000 T fine\n"
		"2100 t Fine_Upper_HEX_ok\n"
		"ABCD T upper_hex_addr\n";
	struct sp_ksyms_stats st;
	struct sp_ksyms *k;
	struct sp_ksym s;

	(void)state;
	k = parse_ok(text, &st);
	assert_int_equal(st.malformed, 15);
	assert_int_equal(st.skipped_zero, 1);
	assert_int_equal(sp_ksyms__count(k), 3);
	assert_int_equal(sp_ksyms__resolve(k, 0x2050, &s), 0);
	assert_string_equal(s.name, "fine");
	assert_int_equal(sp_ksyms__resolve(k, 0xabcd, &s), 0);
	assert_string_equal(s.name, "upper_hex_addr");
	sp_ksyms__free(k);
}

static void test_hostile_lines(void **state)
{
	size_t huge = 1u << 20, n = 0;
	char *buf = malloc(huge + 4096);
	struct sp_ksyms_stats st;
	struct sp_ksyms *k;
	struct sp_ksym s;

	(void)state;
	assert_non_null(buf);
	n += (size_t)sprintf(buf + n, "%s", HDR);
	n += (size_t)sprintf(buf + n, "1000 T before\n");
	/* one 1 MiB line, then a line exactly at the limit, then one over */
	memset(buf + n, 'a', huge);
	memcpy(buf + n, "1100 T ", 7);
	n += huge;
	buf[n++] = '\n';
	memset(buf + n, 'b', SP_KALLSYMS_MAX_LINE);
	memcpy(buf + n, "1200 T ", 7);
	n += SP_KALLSYMS_MAX_LINE;
	buf[n++] = '\n';
	memset(buf + n, 'c', SP_KALLSYMS_MAX_LINE + 1);
	memcpy(buf + n, "1300 T ", 7);
	n += SP_KALLSYMS_MAX_LINE + 1;
	buf[n++] = '\n';
	/* NUL bytes inside a line */
	memcpy(buf + n, "1400 T nu\0l\n", 12);
	n += 12;
	n += (size_t)sprintf(buf + n, "2000 T after");	/* no newline */
	assert_int_equal(sp_ksyms__parse(buf, n, &k, &st), 0);
	assert_int_equal(st.too_long, 2);
	/* the line at exactly the limit has a name over 512 bytes */
	assert_int_equal(st.malformed, 2);
	assert_int_equal(sp_ksyms__count(k), 2);
	assert_int_equal(sp_ksyms__resolve(k, 0x1300, &s), 0);
	assert_string_equal(s.name, "before");
	assert_int_equal(sp_ksyms__resolve(k, 0x2001, &s), 0);
	assert_string_equal(s.name, "after");
	sp_ksyms__free(k);

	/* the header itself too long */
	memset(buf, 'x', SP_KALLSYMS_MAX_LINE + 10);
	memcpy(buf, "# spanprof-kallsyms v1 build-id=ab ", 35);
	assert_int_equal(sp_ksyms__parse(buf, SP_KALLSYMS_MAX_LINE + 10, &k, &st), -EINVAL);
	assert_null(k);
	free(buf);
}

static void test_gzip_and_bombs(void **state)
{
	struct sp_ksyms_stats st;
	struct sp_ksyms *k;
	uint8_t *gz = NULL, *big;
	size_t gz_len = 0, big_len = SP_KALLSYMS_MAX_BYTES + 4096;
	char path[PATH_MAX];
	struct sp_ksym s;

	(void)state;
	assert_int_equal(sp_gzip((const uint8_t *)good, strlen(good), &gz, &gz_len), 0);
	assert_int_equal(sp_ksyms__parse(gz, gz_len, &k, &st), 0);
	assert_int_equal(sp_ksyms__count(k), 9);
	sp_ksyms__free(k);
	/* the same through a file, gzip'd and plain */
	snprintf(path, sizeof(path), "%s/g.kallsyms.gz", tu_dir);
	write_file(path, gz, gz_len);
	assert_int_equal(sp_ksyms__load(path, &k, &st), 0);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0201010ull, &s), 0);
	assert_string_equal(s.name, "mod_fn_a");
	sp_ksyms__free(k);
	snprintf(path, sizeof(path), "%s/plain.kallsyms", tu_dir);
	write_file(path, good, strlen(good));
	assert_int_equal(sp_ksyms__load(path, &k, &st), 0);
	assert_int_equal(sp_ksyms__count(k), 9);
	sp_ksyms__free(k);
	/* truncated gzip: an error, not a partial table */
	assert_int_not_equal(sp_ksyms__parse(gz, gz_len - 12, &k, &st), 0);
	assert_null(k);
	snprintf(path, sizeof(path), "%s/trunc.kallsyms.gz", tu_dir);
	write_file(path, gz, gz_len / 2);
	assert_int_not_equal(sp_ksyms__load(path, &k, &st), 0);
	assert_null(k);
	free(gz);
	/* missing file */
	assert_int_equal(sp_ksyms__load("/nonexistent/x.kallsyms.gz", &k, NULL), -ENOENT);

	/* a bomb: 64 MiB + 4 KiB of newlines after a header, gzip'd */
	big = malloc(big_len);
	assert_non_null(big);
	memset(big, '\n', big_len);
	memcpy(big, HDR, strlen(HDR));
	assert_int_equal(sp_gzip(big, big_len, &gz, &gz_len), 0);
	assert_true(gz_len < big_len / 100);
	assert_int_equal(sp_ksyms__parse(gz, gz_len, &k, &st), -EFBIG);
	assert_null(k);
	snprintf(path, sizeof(path), "%s/bomb.kallsyms.gz", tu_dir);
	write_file(path, gz, gz_len);
	assert_int_equal(sp_ksyms__load(path, &k, &st), -EFBIG);
	assert_null(k);
	free(gz);
	free(big);
}

static void test_symbol_count_bound(void **state)
{
	size_t lines = SP_KSYMS_MAX_SYMS + 1, n = 0;
	char *buf = malloc(strlen(HDR) + lines * 6);
	struct sp_ksyms *k;

	(void)state;
	assert_non_null(buf);
	n += (size_t)sprintf(buf, "%s", HDR);
	for (size_t i = 0; i < lines; i++) {
		memcpy(buf + n, "1 t a\n", 6);
		n += 6;
	}
	assert_int_equal(sp_ksyms__parse(buf, n, &k, NULL), -E2BIG);
	assert_null(k);
	free(buf);
}

/* ------------------------------------------------------------ sets */

static void test_set_files_and_dirs(void **state)
{
	static const char other[] = "# spanprof-kallsyms v1 build-id=beef\n1000 T other_fn\n";
	char path[PATH_MAX], dir[128];
	struct sp_ksyms_set_stats st;
	const struct sp_ksyms *k;
	struct sp_ksyms_set *s;
	struct sp_ksym sym;

	(void)state;
	assert_int_equal(sp_ksyms_set__new(&s), 0);
	assert_true(sp_ksyms_set__empty(s));
	snprintf(path, sizeof(path), "%s/a.kallsyms", tu_dir);
	write_file(path, good, strlen(good));
	assert_int_equal(sp_ksyms_set__add_file(s, path), 0);
	assert_int_equal(sp_ksyms_set__add_file(s, path), 0);	/* duplicate id */
	assert_int_equal(sp_ksyms_set__add_file(s, "/nonexistent"), -ENOENT);
	assert_false(sp_ksyms_set__empty(s));
	assert_non_null(sp_ksyms_set__get(s, ID));
	assert_null(sp_ksyms_set__get(s, "beef"));
	assert_null(sp_ksyms_set__get(s, "../../x"));
	assert_null(sp_ksyms_set__get(s, NULL));
	assert_null(sp_ksyms_set__get(NULL, ID));

	/* a directory, searched by build id, lazily */
	snprintf(dir, sizeof(dir), "%s/snaps", tu_dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(sp_ksyms_set__add_dir(s, dir), 0);
	assert_null(sp_ksyms_set__get(s, "beef"));	/* not there yet */
	snprintf(path, sizeof(path), "%s/beef.kallsyms.gz", dir);
	write_file(path, other, strlen(other));
	/* remembered as missing for SP_KSYMS_RETRY_S seconds */
	assert_null(sp_ksyms_set__get(s, "beef"));
	sp_ksyms_set__stats(s, &st);
	assert_int_equal(st.dir_lookups, 1);
	assert_int_equal(st.dir_misses, 1);
	sp_ksyms_set__free(s);

	assert_int_equal(sp_ksyms_set__new(&s), 0);
	assert_int_equal(sp_ksyms_set__add_dir(s, dir), 0);
	k = sp_ksyms_set__get(s, "beef");
	assert_non_null(k);
	assert_int_equal(sp_ksyms__resolve(k, 0x1001, &sym), 0);
	assert_string_equal(sym.name, "other_fn");
	/* a misnamed file (its header says another build id) is refused */
	snprintf(path, sizeof(path), "%s/cafe.kallsyms.gz", dir);
	write_file(path, other, strlen(other));
	assert_null(sp_ksyms_set__get(s, "cafe"));
	sp_ksyms_set__stats(s, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(st.load_failed, 1);
	assert_int_equal(st.duplicate_build_id, 0);
	sp_ksyms_set__free(s);
	sp_ksyms_set__free(NULL);
}

/* ------------------------------------------------------------ symbolize */

static void test_symbolize_kernel_frames(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping km = { 0 }, km2 = { 0 };
	struct sp_location l = { .frame_kind = SP_FRAME_KERNEL };
	struct sp_symbolize_stats st;
	struct sp_ksyms_set *s;
	int32_t mk, mk2, locs[6];
	char path[PATH_MAX];

	(void)state;
	assert_non_null(p);
	km.filename = sp_profile__intern(p, "[kernel.kallsyms]");
	km.build_id = sp_profile__intern(p, ID);
	mk = sp_profile__add_mapping(p, &km);
	km2.filename = km.filename;
	km2.build_id = sp_profile__intern(p, "beef");
	km2.memory_start = 1;	/* distinct mapping */
	mk2 = sp_profile__add_mapping(p, &km2);
	assert_true(mk > 0 && mk2 > 0 && mk != mk2);

	l.mapping = mk;
	l.address = 0xffffffff81000123ull;		/* alias_global+0x23 */
	locs[0] = sp_profile__add_location(p, &l);
	l.address = 0xffffffffc0201081ull;		/* mod_fn_b [mymod] */
	locs[1] = sp_profile__add_location(p, &l);
	l.address = 0xffffffff81000500ull;		/* in the _etext gap */
	locs[2] = sp_profile__add_location(p, &l);
	l.mapping = mk2;				/* build id with no snapshot */
	l.address = 0xffffffff81000123ull;
	locs[3] = sp_profile__add_location(p, &l);
	l.mapping = 0;					/* no mapping */
	l.address = 0xffffffff81000124ull;
	locs[4] = sp_profile__add_location(p, &l);
	l.mapping = mk;
	l.address = 0xffffffff81000201ull;
	locs[5] = sp_profile__add_location(p, &l);

	/* no snapshot at all */
	assert_int_equal(sp_symbolize__profile_ks(NULL, NULL, p, &st), 0);
	assert_int_equal(st.unresolved_kernel, 6);
	assert_int_equal(st.unresolved_kernel_no_snapshot, 5);
	assert_int_equal(st.unresolved_kernel_no_build_id, 1);
	assert_int_equal(st.resolved, 0);

	assert_int_equal(sp_ksyms_set__new(&s), 0);
	snprintf(path, sizeof(path), "%s/k.kallsyms", tu_dir);
	write_file(path, good, strlen(good));
	assert_int_equal(sp_ksyms_set__add_file(s, path), 0);
	assert_int_equal(sp_symbolize__profile_ks(NULL, s, p, &st), 0);
	assert_int_equal(st.locations, 6);
	assert_int_equal(st.resolved, 3);
	assert_int_equal(st.resolved_kernel, 3);
	assert_int_equal(st.unresolved, 3);
	assert_int_equal(st.unresolved_kernel, 3);
	assert_int_equal(st.unresolved_kernel_not_found, 1);
	assert_int_equal(st.unresolved_kernel_mismatch, 1);
	assert_int_equal(st.unresolved_kernel_no_build_id, 1);
	assert_int_equal(st.unresolved_kernel_no_snapshot, 0);
	{
		const struct sp_location *a = &p->locations[locs[0]];
		const struct sp_location *b = &p->locations[locs[1]];
		const struct sp_location *c = &p->locations[locs[5]];
		const struct sp_function *fa = &p->functions[a->lines[0].function];
		const struct sp_function *fb = &p->functions[b->lines[0].function];
		const struct sp_function *fc = &p->functions[c->lines[0].function];

		assert_int_equal(a->n_lines, 1);
		assert_string_equal(sp_profile__str(p, fa->name), "alias_global");
		assert_string_equal(sp_profile__str(p, fa->system_name), "alias_global");
		assert_string_equal(sp_profile__str(p, fa->filename), "");
		assert_int_equal(a->lines[0].line, 0);
		assert_string_equal(sp_profile__str(p, fb->name), "mod_fn_b [mymod]");
		assert_string_equal(sp_profile__str(p, fb->system_name), "mod_fn_b");
		assert_string_equal(sp_profile__str(p, fc->name), "weak_one");
		assert_int_equal(a->address, 0xffffffff81000123ull);
	}
	assert_int_equal(p->locations[locs[2]].n_lines, 0);
	assert_int_equal(p->locations[locs[3]].n_lines, 0);
	assert_true(p->mappings[mk].has_functions);
	assert_false(p->mappings[mk].has_filenames);
	assert_false(p->mappings[mk2].has_functions);
	assert_int_equal(sp_profile__validate(p), 0);
	/* a second pass leaves them alone */
	assert_int_equal(sp_symbolize__profile_ks(NULL, s, p, &st), 0);
	assert_int_equal(st.already, 3);
	sp_ksyms_set__free(s);
	sp_profile__free(p);
}

/* Kernel frames through the collector's layout (kernel_layout.h): image
 * frames as link-time addresses (memory_start = the link-time _text),
 * module frames as (module build id, offset in .text), boot frames as
 * (boot id, runtime address).  The snapshot is another boot's: its _text
 * and every symbol moved by one KASLR slide, its modules loaded elsewhere,
 * so only offsets name them right. */
#define MOD_ID "abcdef0123456789abcdef0123456789abcdef01"
#define BOOT "11111111-2222-3333-4444-555555555555"
#define BOOT_HEX "11111111222233334444555555555555"
static const char slid[] =
	"# spanprof-kallsyms v1 build-id=" ID " captured-at=1 kernel=6.1.0-test boot-id=" BOOT "\n"
	"# module mymod build-id=" MOD_ID " text=ffffffffc1230000 size=1000\n"
	"ffffffff9a000000 T _text\n"
	"ffffffff9a000100 T first_fn\n"			/* link-time 0x...81000100 */
	"ffffffff9a000200 T second_fn\n"
	"ffffffff9a000400 T _etext\n"
	"ffffffffc1230000 t mod_a\t[mymod]\n"
	"ffffffffc1230080 t mod_b\t[mymod]\n"
	"ffffffffc2000000 t bpf_prog_feed_x\t[bpf]\n";

static const char *name_of(struct sp_profile *p, int32_t loc)
{
	const struct sp_location *l = &p->locations[loc];

	if (l->n_lines != 1)
		return "";
	return sp_profile__str(p, p->functions[l->lines[0].function].name);
}

static void test_symbolize_layout_frames(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping km = { 0 }, mm = { 0 }, bm = { 0 }, om = { 0 };
	struct sp_location l = { .frame_kind = SP_FRAME_KERNEL };
	struct sp_symbolize_stats st;
	struct sp_ksyms_set *s;
	int32_t locs[7];
	char path[PATH_MAX];

	(void)state;
	assert_non_null(p);
	km.filename = sp_profile__intern(p, "[kernel.kallsyms]");
	km.build_id = sp_profile__intern(p, ID);
	km.memory_start = 0xffffffff81000000ull;	/* link-time _text */
	km.memory_limit = 0xffffffff82000000ull;
	mm.filename = sp_profile__intern(p, "[module:mymod]");
	mm.build_id = sp_profile__intern(p, MOD_ID);
	mm.memory_limit = 0x1000;
	bm.filename = sp_profile__intern(p, "[kernel.boot]");
	bm.build_id = sp_profile__intern(p, BOOT_HEX);
	bm.memory_start = 0xffffffffc0000000ull;
	om.filename = sp_profile__intern(p, "[kernel.boot]");	/* another boot */
	om.build_id = sp_profile__intern(p, "99999999999999999999999999999999");
	om.memory_start = 0xffffffffc0000000ull;
	om.memory_limit = 1;
	l.mapping = sp_profile__add_mapping(p, &km);
	l.address = 0xffffffff81000123ull;		/* first_fn + 0x23 */
	locs[0] = sp_profile__add_location(p, &l);
	l.address = 0xffffffff81000200ull;		/* second_fn */
	locs[1] = sp_profile__add_location(p, &l);
	l.address = 0xffffffff80000000ull;		/* below memory_start */
	locs[2] = sp_profile__add_location(p, &l);
	l.mapping = sp_profile__add_mapping(p, &mm);
	l.address = 0x84;				/* mod_b + 4 */
	locs[3] = sp_profile__add_location(p, &l);
	l.address = 0x2000;				/* past the module's size */
	locs[4] = sp_profile__add_location(p, &l);
	l.mapping = sp_profile__add_mapping(p, &bm);
	l.address = 0xffffffffc2000010ull;		/* runtime, this boot */
	locs[5] = sp_profile__add_location(p, &l);
	l.mapping = sp_profile__add_mapping(p, &om);
	l.address = 0xffffffffc2000010ull;		/* runtime of a boot not held */
	locs[6] = sp_profile__add_location(p, &l);

	assert_int_equal(sp_ksyms_set__new(&s), 0);
	snprintf(path, sizeof(path), "%s/slid.kallsyms", tu_dir);
	write_file(path, slid, strlen(slid));
	assert_int_equal(sp_ksyms_set__add_file(s, path), 0);
	assert_int_equal(sp_symbolize__profile_ks(NULL, s, p, &st), 0);
	assert_string_equal(name_of(p, locs[0]), "first_fn");
	assert_string_equal(name_of(p, locs[1]), "second_fn");
	assert_string_equal(name_of(p, locs[2]), "");
	assert_string_equal(name_of(p, locs[3]), "mod_b [mymod]");
	assert_string_equal(name_of(p, locs[4]), "");
	assert_string_equal(name_of(p, locs[5]), "bpf_prog_feed_x [bpf]");
	assert_string_equal(name_of(p, locs[6]), "");
	assert_int_equal(st.resolved_kernel, 4);
	assert_int_equal(st.unresolved_kernel, 3);
	assert_int_equal(st.unresolved_kernel_not_found, 2);	/* below, past the size */
	assert_int_equal(st.unresolved_kernel_mismatch, 1);	/* the boot not held */
	assert_int_equal(sp_profile__validate(p), 0);
	sp_ksyms_set__free(s);
	sp_profile__free(p);
}

/* ------------------------------------------------------------ capture */

static struct sp_ksyms *load_capture(const char *path)
{
	struct sp_ksyms_stats st;
	struct sp_ksyms *k = NULL;
	unsigned char magic[2];
	struct stat sb;
	FILE *f;

	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 2, f), 2);
	fclose(f);
	assert_int_equal(magic[0], 0x1f);
	assert_int_equal(magic[1], 0x8b);
	assert_int_equal(sp_ksyms__load(path, &k, &st), 0);
	assert_false(st.unsorted);
	assert_int_equal(st.malformed, 0);
	assert_int_equal(st.skipped_type, 0);
	assert_int_equal(st.too_long, 0);
	return k;
}

/* sp_kallsyms__text_range streams the file through a 16 KiB buffer: lines
 * across its edges, a line longer than the whole buffer (skipped, and the
 * one after it read), modules and zeros. */
static void test_text_range_streamed(void **state)
{
	char in[PATH_MAX], err[256];
	uint64_t text = 0, end = 0;
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);

	(void)state;
	assert_non_null(buf);
	/* 20000 lines (~500 KB): every buffer edge falls inside a line */
	for (int i = 0; i < 20000; i++)
		len += (size_t)snprintf(buf + len, cap - len, "ffffffff81%06x t fn_%d\n",
					0x100000 + i * 16, i);
	/* a line over the 16 KiB buffer: skipped whole, its tail too */
	len += (size_t)snprintf(buf + len, cap - len, "ffffffff8f000000 T ");
	memset(buf + len, 'x', 40 << 10);
	len += 40 << 10;
	buf[len++] = '\n';
	len += (size_t)snprintf(buf + len, cap - len,
				"ffffffff81000000 T _text\n"
				"ffffffffc0001000 t m_fn\t[mod]\n"	/* a module: not the image */
				"ffffffff82000000 D data\n"		/* not text */
				"ffffffff81f00000 T last_fn");		/* no newline at the end */
	snprintf(in, sizeof(in), "%s/stream_kallsyms", tu_dir);
	write_file(in, buf, len);
	setenv(SP_KALLSYMS_PATH_ENV, in, 1);
	assert_int_equal(sp_kallsyms__text_range(&text, &end, err, sizeof(err)), 0);
	assert_int_equal(text, 0xffffffff81000000ull);
	assert_int_equal(end, 0xffffffff81f00000ull + SP_KALLSYMS_TAIL_MAX);

	len = (size_t)snprintf(buf, cap, "0000000000000000 T _text\n0000000000000000 t b\n");
	write_file(in, buf, len);
	assert_int_equal(sp_kallsyms__text_range(&text, &end, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "kptr_restrict"));
	len = (size_t)snprintf(buf, cap, "ffffffff81000100 T first_fn\n");
	write_file(in, buf, len);
	assert_int_equal(sp_kallsyms__text_range(&text, &end, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "_text"));
	unsetenv(SP_KALLSYMS_PATH_ENV);
	free(buf);

	/* the real file, when this process may see its addresses: _text is
	 * the one /proc/kallsyms names */
	if (sp_kallsyms__text_range(&text, &end, err, sizeof(err)) == 0) {
		FILE *f = fopen("/proc/kallsyms", "r");
		char line[512];
		unsigned long long want = 0;

		assert_non_null(f);
		while (!want && fgets(line, sizeof(line), f)) {
			unsigned long long a;
			char t, name[256];

			if (sscanf(line, "%llx %c %255s", &a, &t, name) == 3 &&
			    !strcmp(name, "_text"))
				want = a;
		}
		fclose(f);
		assert_int_equal(text, want);
		assert_true(end > text);
	}
}

static void test_capture_fake(void **state)
{
	static const char fake[] =
		"ffffffff81000300 T c_fn\n"
		"ffffffff81000100 t a_fn\n"
		"ffffffff81000200 D data\n"
		"garbage line\n"
		"ffffffffc0001000 t m_fn\t[mod]\n"
		"ffffffff81000200 W b_fn\n";
	static const char zeros[] =
		"0000000000000000 T a\n0000000000000000 t b\n0000000000000000 D c\n";
	struct sp_build_id id = { .len = 4, .id = { 0xde, 0xad, 0xbe, 0xef } };
	char in[PATH_MAX], out[PATH_MAX], err[256];
	struct sp_ksyms *k;
	struct sp_ksym s;

	(void)state;
	snprintf(in, sizeof(in), "%s/fake_kallsyms", tu_dir);
	snprintf(out, sizeof(out), "%s/fake.kallsyms.gz", tu_dir);
	write_file(in, fake, strlen(fake));
	setenv(SP_KALLSYMS_PATH_ENV, in, 1);
	assert_int_equal(sp_kallsyms__capture(out, &id, err, sizeof(err)), 0);
	k = load_capture(out);
	assert_string_equal(sp_ksyms__build_id(k), "deadbeef");
	assert_true(sp_ksyms__captured_at(k) > 0);
	assert_true(sp_ksyms__kernel(k)[0] != '\0');
	assert_int_equal(sp_ksyms__count(k), 4);
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffff81000210ull, &s), 0);
	assert_string_equal(s.name, "b_fn");
	assert_int_equal(sp_ksyms__resolve(k, 0xffffffffc0001001ull, &s), 0);
	assert_string_equal(s.module, "mod");
	sp_ksyms__free(k);

	/* kptr_restrict: every address 0 */
	write_file(in, zeros, strlen(zeros));
	err[0] = '\0';
	assert_int_equal(sp_kallsyms__capture(out, &id, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "kptr_restrict"));
	/* the previous snapshot is still there, intact */
	k = load_capture(out);
	assert_int_equal(sp_ksyms__count(k), 4);
	sp_ksyms__free(k);
	/* no text at all */
	write_file(in, "ffffffff81000200 D data\n", 24);
	assert_int_equal(sp_kallsyms__capture(out, &id, err, sizeof(err)), -ENOENT);
	/* unwritable destination: nothing left behind */
	write_file(in, fake, strlen(fake));
	assert_true(sp_kallsyms__capture("/nonexistent-dir/x.kallsyms.gz", &id, err,
					 sizeof(err)) < 0);
	assert_int_equal(sp_kallsyms__capture(NULL, &id, NULL, 0), -EINVAL);
	unsetenv(SP_KALLSYMS_PATH_ENV);
}

/* grep-like: the address /proc/kallsyms gives for a vmlinux text symbol */
static uint64_t proc_addr(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[1100], n[600], t;
	unsigned long long a;
	uint64_t found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %599s", &a, &t, n) == 3 && !strcmp(n, name) &&
		    (t == 'T' || t == 't')) {
			found = a;
			break;
		}
	fclose(f);
	return found;
}

static void test_capture_real(void **state)
{
	char out[PATH_MAX], err[256], hex[2 * SP_BUILD_ID_MAX + 1];
	static const char *const names[] = { "do_syscall_64", "schedule" };
	struct sp_build_id kid;
	struct sp_ksyms *k;

	(void)state;
	if (geteuid() != 0 || !proc_addr("schedule")) {
		print_message("needs root and visible kernel addresses\n");
		skip();
	}
	assert_int_equal(sp_buildid__kernel(&kid), 0);
	sp_buildid__hex(&kid, hex);
	snprintf(out, sizeof(out), "%s/real.kallsyms.gz", tu_dir);
	unsetenv(SP_KALLSYMS_PATH_ENV);
	/* NULL id: the capture reads the kernel's own */
	assert_int_equal(sp_kallsyms__capture(out, NULL, err, sizeof(err)), 0);
	k = load_capture(out);
	assert_string_equal(sp_ksyms__build_id(k), hex);
	assert_true(sp_ksyms__count(k) > 1000);
	for (size_t i = 0; i < 2; i++) {
		uint64_t a = proc_addr(names[i]);
		struct sp_ksym s;

		assert_true(a != 0);
		assert_int_equal(sp_ksyms__resolve(k, a, &s), 0);
		assert_string_equal(s.name, names[i]);
		assert_true(s.offset == 0);
		assert_int_equal(sp_ksyms__resolve(k, a + 5, &s), 0);
		assert_string_equal(s.name, names[i]);
		assert_true(s.offset == 5);
		assert_null(s.module);
	}
	sp_ksyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_duplicates_deterministic),
		cmocka_unit_test(test_header_rules),
		cmocka_unit_test(test_malformed_lines),
		cmocka_unit_test(test_hostile_lines),
		cmocka_unit_test(test_gzip_and_bombs),
		cmocka_unit_test(test_symbol_count_bound),
		cmocka_unit_test(test_set_files_and_dirs),
		cmocka_unit_test(test_symbolize_kernel_frames),
		cmocka_unit_test(test_symbolize_layout_frames),
		cmocka_unit_test(test_text_range_streamed),
		cmocka_unit_test(test_capture_fake),
		cmocka_unit_test(test_capture_real),
	};

	return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
