// SPDX-License-Identifier: MIT
/*
 * test_perf_map.c - perf maps as runtimes write them (V8, JDK 17's 0x
 * format, Python), hostile ones (non-hex, NUL bytes, overlaps, bad ranges,
 * long names, invalid UTF-8, a line being written), and JIT chains read
 * back from a store directory (jit_syms.h): pieces in order, a missing or
 * forged piece, a piece that is not its parent's child, the cache bound;
 * a jitdump's line rows ("@F", "@L": the row covering an address, sorted,
 * bounded by their entry, refused when no entry takes them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/jit_piece.h"
#include "base/symstore.h"
#include "symbolizer/jit_syms.h"
#include "symbolizer/perf_map.h"
#include "testutil.h"

static struct sp_perf_map *parse(const char *text, struct sp_perf_map_stats *st)
{
	struct sp_perf_map *m = NULL;

	assert_int_equal(sp_perf_map__parse((const uint8_t *)text, strlen(text), &m, st), 0);
	return m;
}

static const char *name_at(const struct sp_perf_map *m, uint64_t a)
{
	const char *n = NULL;

	return sp_perf_map__resolve(m, a, &n, NULL) ? NULL : n;
}

static void test_runtimes(void **state)
{
	/* lines as verified in jit-symbols.md: V8, V8 builtins, JDK 17 jcmd
	 * (0x, 16 digits), Python 3.12 -X perf */
	static const char text[] =
		"7f213afc66c0 180 JS:*fib /srv/app/load.js:1:13\n"
		"18c4680 aa0 Builtin:RecordWriteSaveFP\n"
		"0x00007ff304ec7640 0x0000000000000130 long Hot.fib(int)\n"
		"7f854d4bac97 b py::fib:/srv/app/load.py\n";
	struct sp_perf_map_stats st;
	struct sp_perf_map *m = parse(text, &st);
	uint64_t start = 0;
	const char *n;

	assert_int_equal(st.entries, 4);
	assert_int_equal(st.malformed + st.nul + st.bad_range, 0);
	assert_string_equal(name_at(m, 0x7f213afc66c0), "JS:*fib /srv/app/load.js:1:13");
	assert_string_equal(name_at(m, 0x7f213afc683f), "JS:*fib /srv/app/load.js:1:13");
	assert_null(name_at(m, 0x7f213afc6840));
	assert_string_equal(name_at(m, 0x18c4680 + 0xa9f), "Builtin:RecordWriteSaveFP");
	assert_string_equal(name_at(m, 0x7ff304ec7700), "long Hot.fib(int)");
	assert_int_equal(sp_perf_map__resolve(m, 0x7ff304ec7700, &n, &start), 0);
	assert_int_equal(start, 0x7ff304ec7640);
	assert_string_equal(name_at(m, 0x7f854d4baca1), "py::fib:/srv/app/load.py");
	assert_null(name_at(m, 0x7f854d4baca2));
	assert_null(name_at(m, 0));
	assert_true(sp_perf_map__bytes(m) > 0);
	sp_perf_map__free(m);
	sp_perf_map__free(NULL);
	(void)state;
}

static void test_hostile_lines(void **state)
{
	char text[8192];
	size_t n = 0;
	struct sp_perf_map_stats st;
	struct sp_perf_map *m = NULL;
	char big[SP_PERF_MAP_MAX_NAME + 100];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	n += (size_t)sprintf(text + n, "zz10 10 not hex\n");		/* malformed */
	n += (size_t)sprintf(text + n, "1000\n");			/* malformed */
	n += (size_t)sprintf(text + n, "1000 10\n");			/* no name */
	n += (size_t)sprintf(text + n, "0x 10 empty hex\n");		/* malformed */
	n += (size_t)sprintf(text + n, "12345678901234567 10 seventeen\n");	/* malformed */
	n += (size_t)sprintf(text + n, "1000 0 zero size\n");		/* bad range */
	n += (size_t)sprintf(text + n, "ffffffffffffff00 200 wraps\n");	/* bad range */
	n += (size_t)sprintf(text + n, "2000 10 good\t tail  \r\n");	/* trailing blanks */
	memcpy(text + n, "3000 10 nul\0here\n", 17);			/* NUL */
	n += 17;
	n += (size_t)sprintf(text + n, "4000 10 bad\xff\xfeutf8\n");
	n += (size_t)sprintf(text + n, "5000 10 %s\n", big);		/* cut */
	n += (size_t)sprintf(text + n, "  6000\t\t10   spaced   name\n");
	n += (size_t)sprintf(text + n, "7000 10 being writ");		/* no newline */
	assert_int_equal(sp_perf_map__parse((const uint8_t *)text, n, &m, &st), 0);
	assert_int_equal(st.malformed, 5);
	assert_int_equal(st.nul, 1);
	assert_int_equal(st.bad_range, 2);
	assert_int_equal(st.long_names, 1);
	assert_int_equal(st.partial_tail, strlen("7000 10 being writ"));
	assert_int_equal(st.entries, 4);
	assert_string_equal(name_at(m, 0x2005), "good? tail");	/* the tab: a control */
	assert_null(name_at(m, 0x3005));
	assert_string_equal(name_at(m, 0x4005), "bad??utf8");
	assert_int_equal(strlen(name_at(m, 0x5005)), SP_PERF_MAP_MAX_NAME);
	assert_string_equal(name_at(m, 0x6005), "spaced   name");
	assert_null(name_at(m, 0x7005));
	sp_perf_map__free(m);

	/* empty and newline-only input */
	assert_int_equal(sp_perf_map__parse((const uint8_t *)"", 0, &m, &st), 0);
	assert_null(name_at(m, 1));
	sp_perf_map__free(m);
	assert_int_equal(sp_perf_map__parse((const uint8_t *)"\n\n", 2, &m, &st), 0);
	assert_int_equal(st.malformed, 2);
	sp_perf_map__free(m);
}

/* Later lines win where they overlap (a tier replacing another, code
 * reused); the earlier entry keeps what is left of its range. */
static void test_overlaps(void **state)
{
	static const char text[] =
		"1000 100 first\n"		/* [1000,1100) */
		"1040 20 second\n"		/* [1040,1060) inside first */
		"10f0 40 third\n"		/* [10f0,1130) over first's end */
		"1000 100 first\n"		/* first again: wins everywhere */
		"5000 10 a\n"
		"5000 10 b\n";			/* same range: b */
	struct sp_perf_map_stats st;
	struct sp_perf_map *m = parse(text, &st);

	assert_string_equal(name_at(m, 0x1050), "first");
	assert_string_equal(name_at(m, 0x10f8), "first");
	assert_string_equal(name_at(m, 0x1100), "third");
	assert_string_equal(name_at(m, 0x112f), "third");
	assert_null(name_at(m, 0x1130));
	assert_string_equal(name_at(m, 0x5000), "b");
	assert_true(st.overlaps >= 4);
	sp_perf_map__free(m);

	m = parse("1000 100 first\n1040 20 second\n10f0 40 third\n", &st);
	assert_string_equal(name_at(m, 0x1000), "first");
	assert_string_equal(name_at(m, 0x1045), "second");
	assert_string_equal(name_at(m, 0x1060), "first");
	assert_string_equal(name_at(m, 0x10f0), "third");
	assert_int_equal(st.segments, 4);
	sp_perf_map__free(m);
	(void)state;
}

/* Many lines over one range: building stays O(n log n), the last wins. */
static void test_many_overlapping(void **state)
{
	size_t n = 200000, len = 0;
	char *text = malloc(n * 32);
	struct sp_perf_map_stats st;
	struct sp_perf_map *m = NULL;

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "1000 %zx f%zu\n", 0x100 + i, i);
	assert_int_equal(sp_perf_map__parse((const uint8_t *)text, len, &m, &st), 0);
	assert_int_equal(st.entries, n);
	assert_string_equal(name_at(m, 0x1000), "f199999");
	assert_string_equal(name_at(m, 0x1000 + 0x100 + n - 2), "f199999");
	sp_perf_map__free(m);
	free(text);
}

/* ------------------------------------------------------------ chains */

static void put_piece_of(uint8_t source, const char *dir, const struct sp_jit_id *parent,
			 uint64_t off, const char *data, struct sp_jit_id *id)
{
	char hex[SP_JIT_ID_HEX + 1];
	uint8_t *p;
	size_t len;

	assert_int_equal(sp_jit_piece__encode(source, 42, parent, off,
					      (const uint8_t *)data, strlen(data), &p, &len, id), 0);
	sp_jit_id__hex(id, hex);
	assert_int_equal(sp_symstore__write(dir, SP_SYMSTORE_JIT, hex, p, len), 0);
	assert_int_equal(sp_symstore__write(dir, SP_SYMSTORE_JIT, hex, p, len), -EEXIST);
	free(p);
}

static void put_piece(const char *dir, const struct sp_jit_id *parent, uint64_t off,
		      const char *data, struct sp_jit_id *id)
{
	put_piece_of(SP_JIT_PERF_MAP, dir, parent, off, data, id);
}

/* file:line at a, "-" when no row covers it ("file?" when it has none) */
static const char *line_at(const struct sp_perf_map *m, uint64_t a)
{
	static char buf[256];
	const char *f = NULL;
	uint32_t l = 0;

	if (sp_perf_map__line(m, a, &f, &l, NULL))
		return "-";
	snprintf(buf, sizeof(buf), "%s:%u", f ? f : "file?", l);
	return buf;
}

static void test_line_rows(void **state)
{
	static const char text[] =
		"@F /srv/gen/hot.c\n"
		"@L 10 c\n"
		"@L 0 b\n"		/* out of order: sorted */
		"@L 10 2a\n"		/* the same offset: the later wins */
		"@F /srv/gen/inl.h\n"
		"@L 20 28\n"
		"@F\n"			/* no file */
		"@L 28 5\n"
		"@F /srv/gen/hot.c\n"
		"@L 30 0\n"		/* line 0: nothing known from here */
		"@L 40 63\n"		/* at the entry's end: refused */
		"1000 40 jit_hot\n"
		"2000 10 no_rows\n"	/* rows do not carry over to the next entry */
		"@L 0 1\n"
		"@Lx 0 1\n"		/* malformed row */
		"@L zz 1\n"
		"@L 0 100000000\n"	/* line past 32 bits */
		"not a line\n"		/* the row before it is dropped */
		"3000 10 after_bad\n"
		"@F /srv/over.c\n"
		"@L 0 7\n"
		"1008 10 overlaps_hot\n"	/* later: owns [1008, 1018) */
		"@L 0 9\n";		/* no entry after it: dropped */
	struct sp_perf_map_stats st;
	struct sp_perf_map *m = parse(text, &st);

	(void)state;
	assert_int_equal(st.entries, 4);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(st.rows, 6);
	/* 40 (past the end), @Lx, zz, the long line, the row before the bad
	 * line, the trailing one */
	assert_int_equal(st.rows_refused, 6);
	assert_string_equal(line_at(m, 0x1000), "/srv/gen/hot.c:11");
	assert_string_equal(line_at(m, 0x1007), "/srv/gen/hot.c:11");
	assert_string_equal(line_at(m, 0x1008), "/srv/over.c:7");	/* the later entry */
	assert_string_equal(line_at(m, 0x1018), "/srv/gen/hot.c:42");
	assert_string_equal(line_at(m, 0x101f), "/srv/gen/hot.c:42");
	assert_string_equal(line_at(m, 0x1020), "/srv/gen/inl.h:40");
	assert_string_equal(line_at(m, 0x1028), "file?:5");
	assert_string_equal(line_at(m, 0x1030), "-");			/* line 0 */
	assert_string_equal(line_at(m, 0x103f), "-");
	assert_string_equal(name_at(m, 0x103f), "jit_hot");
	assert_string_equal(line_at(m, 0x2000), "-");
	assert_string_equal(name_at(m, 0x2000), "no_rows");
	assert_string_equal(line_at(m, 0x3000), "-");
	assert_string_equal(line_at(m, 0x4000), "-");
	assert_int_equal(sp_perf_map__line(m, 0x4000, &(const char *){ NULL },
					   &(uint32_t){ 0 }, NULL), -ERANGE);
	{
		const char *f;
		uint32_t l, first = 9;

		/* the entry's first row (offset 0, line 11) is of the same file */
		assert_int_equal(sp_perf_map__line(m, 0x1020, &f, &l, &first), 0);
		assert_int_equal(first, 0);	/* inl.h: another file */
		assert_int_equal(sp_perf_map__line(m, 0x1018, &f, &l, &first), 0);
		assert_int_equal(first, 11);
	}
	assert_true(sp_perf_map__bytes(m) >= 6 * 24);
	sp_perf_map__free(m);
}

/* Pieces converted from a jitdump (source 2) carry perf-map text too: a
 * chain of them resolves; a chain that mixes sources is refused. */
static void test_jitdump_chains(void **state)
{
	static const char a[] = "7f0000010000 40 JS:*hot /srv/a.js:1:1\n",
			  b[] = "7f0000020000 20 JS:*warm /srv/a.js:2:1\n";
	struct sp_jit_id i1, i2, m2;
	char dir[PATH_MAX], hex[SP_JIT_ID_HEX + 1], name[64];
	struct sp_jit_syms *js;
	struct sp_jit_syms_stats st;

	(void)state;
	tu_path(dir, sizeof(dir), "store_jitdump");
	assert_int_equal(mkdir(dir, 0755), 0);
	put_piece_of(SP_JIT_JITDUMP, dir, NULL, 0, a, &i1);
	put_piece_of(SP_JIT_JITDUMP, dir, &i1, strlen(a), b, &i2);
	put_piece_of(SP_JIT_PERF_MAP, dir, &i1, strlen(a), b, &m2);
	assert_int_equal(sp_jit_syms__new(NULL, &js), 0);
	assert_int_equal(sp_jit_syms__add_dir(js, dir), 0);
	sp_jit_id__hex(&i2, hex);
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x7f0000010008, name, sizeof(name)), 0);
	assert_string_equal(name, "JS:*hot /srv/a.js:1:1");
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x7f0000020008, name, sizeof(name)), 0);
	assert_string_equal(name, "JS:*warm /srv/a.js:2:1");
	sp_jit_id__hex(&m2, hex);
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x7f0000010008, name, sizeof(name)),
			 -ENOENT);
	sp_jit_syms__stats(js, &st);
	assert_true(st.bad_piece >= 1);
	sp_jit_syms__free(js);
}

/* A jitdump chain's line rows through jit_syms: name and file:line. */
static void test_jitdump_lines(void **state)
{
	static const char a[] = "@F /srv/gen/hot.c\n@L 0 b\n@L 8 c\n7f0000010000 40 jit_hot\n",
			  b[] = "@F /srv/x.c\n@L 9 1\n7f0000020000 20 jit_warm\n";
	struct sp_jit_id i1, i2;
	char dir[PATH_MAX], hex[SP_JIT_ID_HEX + 1], name[64], file[8];
	struct sp_jit_syms *js;
	struct sp_jit_syms_stats st;
	uint32_t line = 77, first = 77;

	(void)state;
	tu_path(dir, sizeof(dir), "store_jitdump_lines");
	assert_int_equal(mkdir(dir, 0755), 0);
	put_piece_of(SP_JIT_JITDUMP, dir, NULL, 0, a, &i1);
	put_piece_of(SP_JIT_JITDUMP, dir, &i1, strlen(a), b, &i2);
	assert_int_equal(sp_jit_syms__new(NULL, &js), 0);
	assert_int_equal(sp_jit_syms__add_dir(js, dir), 0);
	sp_jit_id__hex(&i2, hex);
	assert_int_equal(sp_jit_syms__resolve_line(js, hex, 0x7f0000010009, name, sizeof(name),
						   file, sizeof(file), &line, &first), 0);
	assert_int_equal(first, 11);
	assert_string_equal(name, "jit_hot");
	assert_string_equal(file, "/srv/ge");	/* cut to the buffer */
	assert_int_equal(line, 12);
	/* below the first row: the name, no line */
	assert_int_equal(sp_jit_syms__resolve_line(js, hex, 0x7f0000020004, name, sizeof(name),
						   file, sizeof(file), &line, &first), 0);
	assert_int_equal(first, 0);
	assert_string_equal(name, "jit_warm");
	assert_int_equal(line, 0);
	assert_string_equal(file, "");
	sp_jit_syms__stats(js, &st);
	assert_int_equal(st.with_line, 1);
	assert_int_equal(st.rows_refused, 0);
	sp_jit_syms__free(js);
}

static void test_chains(void **state)
{
	static const char a[] = "1000 10 one\n", b[] = "2000 10 two\n1000 10 uno\n";
	struct sp_jit_id i1, i2, i3, forged;
	char dir[PATH_MAX], path[PATH_MAX], hex[SP_JIT_ID_HEX + 1], name[64];
	struct sp_jit_syms *js;
	struct sp_jit_syms_stats st;

	(void)state;
	tu_path(dir, sizeof(dir), "store");
	assert_int_equal(mkdir(dir, 0755), 0);
	put_piece(dir, NULL, 0, a, &i1);
	put_piece(dir, &i1, strlen(a), b, &i2);
	assert_int_equal(sp_jit_syms__new(NULL, &js), 0);
	assert_int_equal(sp_jit_syms__add_dir(js, "/nonexistent"), 0);
	assert_int_equal(sp_jit_syms__add_dir(js, dir), 0);

	sp_jit_id__hex(&i1, hex);
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), 0);
	assert_string_equal(name, "one");
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x2005, name, sizeof(name)), -ERANGE);
	sp_jit_id__hex(&i2, hex);
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x2005, name, sizeof(name)), 0);
	assert_string_equal(name, "two");
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), 0);
	assert_string_equal(name, "uno");	/* the later line of the chain */
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, 3), 0);
	assert_string_equal(name, "un");	/* cut to the buffer */
	assert_int_equal(sp_jit_syms__resolve(js, "nothex", 1, name, sizeof(name)), -EINVAL);

	/* a piece whose parent is missing: no snapshot, then found after
	 * sp_jit_syms__changed once the parent arrives */
	memset(&forged, 0x5a, sizeof(forged));
	{
		uint8_t *p;
		size_t len;
		struct sp_jit_id id;

		assert_int_equal(sp_jit_piece__encode(SP_JIT_PERF_MAP, 1, &forged, 12,
						      (const uint8_t *)a, strlen(a), &p, &len, &id),
				 0);
		sp_jit_id__hex(&id, hex);
		assert_int_equal(sp_symstore__write(dir, SP_SYMSTORE_JIT, hex, p, len), 0);
		free(p);
		assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)),
				 -ENOENT);
		i3 = id;
	}
	/* a file under one id holding another piece is refused */
	sp_jit_id__hex(&forged, hex);
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_JIT, hex, path, sizeof(path)), 0);
	{
		char src[PATH_MAX], h1[SP_JIT_ID_HEX + 1];

		sp_jit_id__hex(&i1, h1);
		assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_JIT, h1, src, sizeof(src)), 0);
		assert_int_equal(link(src, path), 0);
	}
	sp_jit_syms__changed(js);
	sp_jit_id__hex(&i3, hex);
	assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), -ENOENT);
	sp_jit_syms__stats(js, &st);
	assert_true(st.missing >= 1);
	assert_true(st.bad_piece >= 1);
	assert_int_equal(st.chains_loaded, 2);
	assert_true(st.cache_hits >= 2);
	sp_jit_syms__free(js);

	/* a tiny cache keeps one map at a time */
	{
		struct sp_jit_syms_opts o = { .cache_bytes = 1 };

		assert_int_equal(sp_jit_syms__new(&o, &js), 0);
		assert_int_equal(sp_jit_syms__add_dir(js, dir), 0);
		sp_jit_id__hex(&i1, hex);
		assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), 0);
		sp_jit_id__hex(&i2, hex);
		assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), 0);
		sp_jit_syms__stats(js, &st);
		assert_int_equal(st.cached, 1);
		assert_int_equal(st.evictions, 1);
		sp_jit_syms__free(js);
	}
	/* a chain longer than allowed */
	{
		struct sp_jit_syms_opts o = { .max_chain_pieces = 1 };

		assert_int_equal(sp_jit_syms__new(&o, &js), 0);
		assert_int_equal(sp_jit_syms__add_dir(js, dir), 0);
		sp_jit_id__hex(&i2, hex);
		assert_int_equal(sp_jit_syms__resolve(js, hex, 0x1005, name, sizeof(name)), -ENOENT);
		sp_jit_syms__stats(js, &st);
		assert_int_equal(st.too_big, 1);
		sp_jit_syms__free(js);
	}
	sp_jit_syms__free(NULL);
}

static void test_piece_format(void **state)
{
	struct sp_jit_id id, id2, parent = { .b = { 1 } };
	struct sp_jit_piece pc;
	uint8_t *p;
	size_t len;
	char hex[SP_JIT_ID_HEX + 1];

	(void)state;
	assert_int_equal(sp_jit_piece__encode(SP_JIT_PERF_MAP, 7, &parent, 100,
					      (const uint8_t *)"x\n", 2, &p, &len, &id), 0);
	assert_int_equal(len, SP_JIT_PIECE_HDR + 2);
	assert_memory_equal(p, "SPJITPC1", 8);
	assert_int_equal(sp_jit_piece__decode(p, len, &id, &pc), 0);
	assert_int_equal(pc.pid, 7);
	assert_int_equal(pc.offset, 100);
	assert_int_equal(pc.len, 2);
	assert_memory_equal(pc.parent.b, parent.b, SP_JIT_ID_LEN);
	id2 = id;
	id2.b[0] ^= 1;
	assert_int_equal(sp_jit_piece__decode(p, len, &id2, &pc), -EBADMSG);
	p[SP_JIT_PIECE_HDR] = 'y';	/* content changed: another id */
	assert_int_equal(sp_jit_piece__decode(p, len, &id, &pc), -EBADMSG);
	assert_int_equal(sp_jit_piece__decode(p, len - 1, NULL, &pc), -EINVAL);
	p[9] = 1;			/* reserved byte */
	assert_int_equal(sp_jit_piece__decode(p, len, NULL, &pc), -EINVAL);
	free(p);
	/* a first piece must start at 0; a child may not */
	assert_int_equal(sp_jit_piece__encode(SP_JIT_PERF_MAP, 7, NULL, 5,
					      (const uint8_t *)"x", 1, &p, &len, &id), -EINVAL);
	assert_int_equal(sp_jit_piece__encode(3, 7, NULL, 0, (const uint8_t *)"x", 1, &p, &len,
					      &id), -EINVAL);
	sp_jit_id__hex(&parent, hex);
	assert_int_equal(strlen(hex), 32);
	assert_int_equal(sp_jit_id__parse(hex, &id), 0);
	assert_memory_equal(id.b, parent.b, SP_JIT_ID_LEN);
	assert_int_equal(sp_jit_id__parse("0102", &id), -EINVAL);
	hex[3] = 'A';
	assert_int_equal(sp_jit_id__parse(hex, &id), -EINVAL);
}

static void test_store_layout(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const uint8_t key[3] = { 0xab, 0xcd, 0xef };
	const uint8_t *k, *pl;
	size_t kl, pll;
	uint8_t *env;
	size_t len;
	int kind;

	(void)state;
	tu_path(dir, sizeof(dir), "layout");
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_KALLSYMS, "abcd", path, sizeof(path)),
			 0);
	assert_non_null(strstr(path, "/abcd.kallsyms.gz"));
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_ELF, "abcdef", path, sizeof(path)), 0);
	assert_non_null(strstr(path, "/.build-id/ab/cdef"));
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_ELF, "../etc", path, sizeof(path)),
			 -EINVAL);
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_JIT, "abcd", path, sizeof(path)),
			 -EINVAL);
	assert_int_equal(sp_symstore__path(dir, 9, "abcd", path, sizeof(path)), -EINVAL);
	assert_int_equal(sp_symstore__write(dir, SP_SYMSTORE_ELF, "abcdef", "elf", 3), 0);
	assert_int_equal(sp_symstore__path(dir, SP_SYMSTORE_ELF, "abcdef", path, sizeof(path)), 0);
	{
		struct stat st;

		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0644);
		assert_int_equal(st.st_size, 3);
	}
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_ELF, key, 3, "data", 4, &env,
						    &len), 0);
	assert_int_equal(len, SP_SYMSTORE_UPLOAD_HDR + 3 + 4);
	assert_int_equal(sp_symstore__upload_decode(env, len, &kind, &k, &kl, &pl, &pll), 0);
	assert_int_equal(kind, SP_SYMSTORE_ELF);
	assert_int_equal(kl, 3);
	assert_memory_equal(k, key, 3);
	assert_int_equal(pll, 4);
	assert_memory_equal(pl, "data", 4);
	assert_int_equal(sp_symstore__upload_decode(env, SP_SYMSTORE_UPLOAD_HDR + 2, &kind, &k,
						    &kl, &pl, &pll), -EINVAL);
	env[12] = 1;
	assert_int_equal(sp_symstore__upload_decode(env, len, &kind, &k, &kl, &pl, &pll), -EINVAL);
	env[12] = 0;
	env[8] = 0;
	assert_int_equal(sp_symstore__upload_decode(env, len, &kind, &k, &kl, &pl, &pll), -EINVAL);
	free(env);
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_ELF, key, 0, "", 0, &env, &len),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtimes),
		cmocka_unit_test(test_hostile_lines),
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_many_overlapping),
		cmocka_unit_test(test_piece_format),
		cmocka_unit_test(test_store_layout),
		cmocka_unit_test(test_chains),
		cmocka_unit_test(test_jitdump_chains),
		cmocka_unit_test(test_line_rows),
		cmocka_unit_test(test_jitdump_lines),
	};

	return cmocka_run_group_tests_name("perf_map", tests, tu_setup_dir, tu_teardown_dir);
}
