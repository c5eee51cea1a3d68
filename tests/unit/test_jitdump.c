// SPDX-License-Identifier: MIT
/*
 * test_jitdump.c - jitdump records to perf-map lines (collector/procs/
 * jitdump.h): header checks (magic, other byte order, version, machine,
 * sizes), loads turned into lines with their code bytes never read,
 * UNWINDING_INFO / unknown ids skipped by size, DEBUG_INFO line tables
 * written before their load's line (good, pending across calls, truncated,
 * rows outside the code, oversize, unused, no NUL, read errors), a record
 * being written waits, CLOSE ends, MOVE named from the remembered load
 * (or counted unknown), refused records (sizes that do not add up, no
 * NUL, empty names, empty or wrapping ranges) counted and skipped, control
 * bytes in names, long names cut, an unusable record size sticky, and the
 * output bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "jitdump_build.h"

/* Reads from a buffer; remembers every byte range read, to prove the
 * code bytes are never touched. */
struct src {
	const uint8_t *b;
	size_t len;
	uint8_t *touched;		/* len flags */
	int fail_at;			/* fail the Nth read (1-based); 0 never */
	int reads;
};

static int rd(void *ctx, uint8_t *buf, size_t n, uint64_t off)
{
	struct src *s = ctx;

	s->reads++;
	if (s->fail_at && s->reads == s->fail_at)
		return -EIO;
	if (off > s->len || n > s->len - off)
		return -ENODATA;
	memcpy(buf, s->b + off, n);
	if (s->touched)
		memset(s->touched + off, 1, n);
	return 0;
}

static char out[1 << 18];

/* Converts all of j (size = its length); returns convert's result. */
static int conv(struct sp_jitdump *d, struct src *s, size_t *n, struct sp_jitdump_stats *st)
{
	return sp_jitdump__convert(d, rd, s, s->len, out, sizeof(out) - 1, n, st);
}

static void test_loads_and_skips(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump_slot slots[SP_JITDUMP_SLOTS];
	struct sp_jitdump d = { .slots = slots };
	struct sp_jitdump_stats st = { 0 };
	size_t n = 0, code_at;
	struct src s = { 0 };

	(void)state;
	jd_header(&j);
	jd_other(&j, SP_JIT_CODE_DEBUG_INFO, 40);
	code_at = j.len + SP_JITDUMP_LOAD_FIXED + strlen("JS:*fib /srv/a.js:1:13") + 1;
	jd_load(&j, 0x7f213afc66c0, 0x180, 1, "JS:*fib /srv/a.js:1:13");
	jd_other(&j, SP_JIT_CODE_UNWINDING_INFO, 100);
	jd_other(&j, 77, 3);			/* an id not known */
	jd_load(&j, 0x18c4680, 0xaa0, 2, "Builtin:RecordWriteSaveFP");
	sp_jitdump__reset(&d);
	s.b = j.b;
	s.len = j.len;
	s.touched = calloc(1, j.len);
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	out[n] = 0;
	assert_string_equal(out, "7f213afc66c0 180 JS:*fib /srv/a.js:1:13\n"
				 "18c4680 aa0 Builtin:RecordWriteSaveFP\n");
	assert_int_equal(d.off, j.len);
	assert_int_equal(st.records, 5);
	assert_int_equal(st.loads, 2);
	/* the DEBUG_INFO (code_addr 0x5555...) had no load of its address */
	assert_int_equal(st.debug_info, 0);
	assert_int_equal(st.debug_unused, 0);	/* still pending: a load may come */
	assert_int_equal(st.skipped, 2);
	/* no byte of the code was read */
	for (size_t i = code_at; i < code_at + 0x180; i++)
		assert_int_equal(s.touched[i], 0);
	/* nothing more: nothing new */
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	assert_int_equal(st.records, 5);
	free(s.touched);
	free(j.b);
}

static void test_header(void **state)
{
	static const struct {
		uint32_t magic, version, size, mach;
		int want;
	} cases[] = {
		{ SP_JITDUMP_MAGIC_SWAPPED, 1, 40, EM_X86_64, -EPROTO },
		{ 0x12345678, 1, 40, EM_X86_64, -EINVAL },
		{ SP_JITDUMP_MAGIC, 2, 40, EM_X86_64, -EPROTO },
		{ SP_JITDUMP_MAGIC, 1, 40, EM_AARCH64, -EPROTO },
		{ SP_JITDUMP_MAGIC, 1, 39, EM_X86_64, -EINVAL },
		{ SP_JITDUMP_MAGIC, 1, SP_JITDUMP_HDR_MAX + 1, EM_X86_64, -EINVAL },
		{ SP_JITDUMP_MAGIC, 1, 64, EM_X86_64, 0 },	/* a longer header: skipped */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jd_buf j = { 0 };
		struct sp_jitdump d = { 0 };
		struct sp_jitdump_stats st = { 0 };
		struct src s = { 0 };
		size_t n = 0;

		jd_header_raw(&j, cases[i].magic, cases[i].version, cases[i].size, cases[i].mach);
		jd_load(&j, 0x1000, 0x10, 1, "f");
		s.b = j.b;
		s.len = j.len;
		assert_int_equal(conv(&d, &s, &n, &st), cases[i].want);
		if (cases[i].want) {
			assert_int_equal(n, 0);
			assert_int_equal(d.state, cases[i].want);
			/* sticky: refused again at once, nothing read */
			s.reads = 0;
			assert_int_equal(conv(&d, &s, &n, &st), cases[i].want);
			assert_int_equal(s.reads, 0);
		} else {
			assert_int_equal(st.loads, 1);
			assert_int_equal(d.off, j.len);
		}
		free(j.b);
	}
}

static void test_partial_and_close(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump d = { 0 };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	size_t n = 0, rec1;

	(void)state;
	jd_header(&j);
	s.b = j.b;
	/* half a header: waits */
	s.len = 20;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	assert_int_equal(d.off, 0);
	jd_load(&j, 0x1000, 0x10, 1, "a");
	rec1 = j.len;
	jd_load(&j, 0x2000, 0x10, 2, "b");
	jd_other(&j, SP_JIT_CODE_CLOSE, 0);
	jd_load(&j, 0x3000, 0x10, 3, "after_close");
	s.b = j.b;
	/* the second load is being written: only the first is taken */
	s.len = rec1 + 30;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	assert_int_equal(d.off, rec1);
	assert_int_equal(n, strlen("1000 10 a\n"));
	s.len = j.len;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	out[n] = 0;
	assert_string_equal(out, "1000 10 a\n2000 10 b\n");
	assert_int_equal(d.state, 1);
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	assert_int_equal(st.loads, 2);
	free(j.b);
}

static void test_move(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump_slot slots[SP_JITDUMP_SLOTS];
	struct sp_jitdump d = { .slots = slots };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	size_t n = 0;

	(void)state;
	sp_jitdump__reset(&d);
	jd_header(&j);
	jd_load(&j, 0x1000, 0x10, 5, "moved_fn");
	jd_load(&j, 0x9000, 0x10, 5 + SP_JITDUMP_SLOTS, "evicts_slot");
	jd_load(&j, 0x2000, 0x10, 6, "also_moved");
	jd_move(&j, 0x2000, 0x6000, 0x10, 6);
	jd_move(&j, 0x1000, 0x5000, 0x10, 5);		/* its slot was taken */
	jd_move(&j, 0x7000, 0x8000, 0x10, 99);		/* never loaded */
	jd_move(&j, 0x7000, 0x8000, 0, 6);		/* empty */
	s.b = j.b;
	s.len = j.len;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	out[n] = 0;
	assert_string_equal(out, "1000 10 moved_fn\n9000 10 evicts_slot\n2000 10 also_moved\n"
				 "6000 10 also_moved\n");
	assert_int_equal(st.moves, 1);
	assert_int_equal(st.moves_unknown, 2);
	assert_int_equal(st.bad_range, 1);

	/* without a table, every move is unknown */
	{
		struct sp_jitdump d2 = { 0 };
		struct sp_jitdump_stats st2 = { 0 };

		n = 0;
		assert_int_equal(conv(&d2, &s, &n, &st2), 0);
		assert_int_equal(st2.moves, 0);
		assert_int_equal(st2.moves_unknown, 3);
	}
	free(j.b);
}

static void test_bad_records(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump d = { 0 };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	char longname[SP_JITDUMP_NAME_MAX + 100];
	size_t n = 0;

	(void)state;
	memset(longname, 'n', sizeof(longname));
	jd_header(&j);
	jd_load_raw(&j, 0x1000, 0x100, 1, "short_code", 10, 0, 0x10, 0);	/* code_size > record */
	jd_load_raw(&j, 0x1000, 0x10, 2, "no_nul", 6, 1, 0, 0);		/* name runs to the end */
	jd_load_raw(&j, 0x1000, 0x10, 3, "", 0, 0, 0x10, 0);			/* empty name */
	jd_load_raw(&j, 0x1000, 0, 4, "zero", 4, 0, 0, 0);			/* no code */
	jd_load_raw(&j, UINT64_MAX - 8, 0x10, 5, "wraps", 5, 0, 0x10, 0);
	jd_other(&j, SP_JIT_CODE_LOAD, 8);					/* too small for a load */
	jd_other(&j, SP_JIT_CODE_MOVE, 8);					/* too small for a move */
	jd_load(&j, 0x2000, 0x10, 6, "ctl\n\x01\x7fname\r");
	jd_load_raw(&j, 0x3000, 0x10, 7, longname, sizeof(longname), 0, 0x10, 0);
	jd_load(&j, 0x4000, 0x10, 8, "good");
	s.b = j.b;
	s.len = j.len;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	out[n] = 0;
	assert_int_equal(st.bad_record, 4);
	assert_int_equal(st.bad_name, 1);
	assert_int_equal(st.bad_range, 2);
	assert_int_equal(st.names_cut, 1);
	assert_int_equal(st.loads, 3);
	assert_int_equal(d.off, j.len);
	assert_non_null(strstr(out, "2000 10 ctl???name?\n"));
	assert_non_null(strstr(out, "4000 10 good\n"));
	{
		const char *l = strstr(out, "3000 10 ");

		assert_non_null(l);
		assert_int_equal(strchr(l, '\n') - (l + 8), SP_JITDUMP_NAME_MAX);
	}
	free(j.b);
}

static void test_sticky_size_and_io(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump d = { 0 };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	size_t n = 0;

	(void)state;
	jd_header(&j);
	jd_load(&j, 0x1000, 0x10, 1, "a");
	jd_u32(&j, SP_JIT_CODE_LOAD);
	jd_u32(&j, 15);				/* cannot be followed */
	jd_u64(&j, 0);
	jd_load(&j, 0x2000, 0x10, 2, "never");
	s.b = j.b;
	s.len = j.len;
	assert_int_equal(conv(&d, &s, &n, &st), -EBADMSG);
	assert_int_equal(st.loads, 1);
	assert_int_equal(st.bad_record, 1);
	assert_int_equal(conv(&d, &s, &n, &st), -EBADMSG);

	/* a read error: returned, the record not taken, taken next time */
	{
		struct sp_jitdump d2 = { 0 };
		struct sp_jitdump_stats st2 = { 0 };
		uint64_t off;

		n = 0;
		s.fail_at = 3;		/* header, record header, then its prefix */
		s.reads = 0;
		assert_int_equal(conv(&d2, &s, &n, &st2), -EIO);
		assert_int_equal(n, 0);
		off = d2.off;
		assert_int_equal(off, SP_JITDUMP_HDR);
		s.fail_at = 0;
		assert_int_equal(conv(&d2, &s, &n, &st2), -EBADMSG);
		assert_int_equal(st2.loads, 1);
	}
	free(j.b);
}

static void test_output_bound(void **state)
{
	struct jd_buf j = { 0 };
	struct sp_jitdump d = { 0 };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	static char small[SP_JITDUMP_LINE_MAX + 20];
	size_t n = 0, total = 0;
	int rounds = 0;

	(void)state;
	jd_header(&j);
	for (int i = 0; i < 10; i++)
		jd_load(&j, 0x1000 + 0x100 * (uint64_t)i, 0x10, (uint64_t)i, "f");
	s.b = j.b;
	s.len = j.len;
	/* room for one line at a time: each call takes what fits, no more */
	while (d.off < j.len && rounds < 100) {
		n = 0;
		assert_int_equal(sp_jitdump__convert(&d, rd, &s, s.len, small, sizeof(small), &n,
						     &st), 0);
		assert_true(n <= sizeof(small));
		total += n;
		rounds++;
	}
	assert_int_equal(st.loads, 10);
	assert_int_equal(total, 10 * strlen("1000 10 f\n"));
	assert_true(rounds >= 2);
	/* less room than a line: nothing taken */
	sp_jitdump__reset(&d);
	n = 0;
	assert_int_equal(sp_jitdump__convert(&d, rd, &s, s.len, small, SP_JITDUMP_LINE_MAX - 1, &n,
					     &st), 0);
	assert_int_equal(n, 0);
	assert_int_equal(d.off, SP_JITDUMP_HDR);
	free(j.b);
}

/* Converts j whole from a fresh state into out (NUL-terminated). */
static int conv_all(const struct jd_buf *j, struct sp_jitdump_stats *st)
{
	struct sp_jitdump d = { 0 };
	struct src s = { .b = j->b, .len = j->len };
	size_t n = 0;
	int err;

	memset(st, 0, sizeof(*st));
	err = conv(&d, &s, &n, st);
	out[n] = 0;
	return err;
}

static void test_debug_info(void **state)
{
	static const struct jd_row rows[] = {
		{ 0x7f0000001010, 12, "/srv/gen/hot.c" },
		{ 0x7f0000001000, 11, "/srv/gen/hot.c" },	/* out of order: kept */
		{ 0x7f0000001020, 40, "/srv/gen/inl\x01.h" },
		{ 0x7f0000001030, 13, "/srv/gen/hot.c" },
		{ 0x7f0000001040, 99, "/srv/gen/hot.c" },	/* == end: outside */
		{ 0x7f0000000ff0, 98, "/srv/gen/hot.c" },	/* below the start */
	};
	/* V8's freed bytes where the file name goes (seen on node 20): not
	 * text, so no file; the line stays.  A valid multibyte name is kept. */
	static const struct jd_row garbled[] = {
		{ 0x7f0000003000, 2, ">-\xf6>" },
		{ 0x7f0000003008, 3, "\xc3\xa9t\xe9.js" },
		{ 0x7f0000003010, 4, "/srv/\xc3\xa9t\xc3\xa9.js" },
	};
	struct jd_buf j = { 0 };
	struct sp_jitdump d = { 0 };
	struct sp_jitdump_stats st = { 0 };
	struct src s = { 0 };
	size_t n = 0, load_at;

	(void)state;
	/* good: written before the load's line, rows relative to its start,
	 * the file when it changes, rows outside [start, end) dropped */
	jd_header(&j);
	jd_debug(&j, 0x7f0000001000, rows, 6);
	jd_load(&j, 0x7f0000001000, 0x40, 1, "jit_hot");
	jd_load(&j, 0x7f0000002000, 0x10, 2, "no_table");
	assert_int_equal(conv_all(&j, &st), 0);
	assert_string_equal(out, "@F /srv/gen/hot.c\n@L 10 c\n@L 0 b\n"
				 "@F\n@L 20 28\n@F /srv/gen/hot.c\n@L 30 d\n"
				 "7f0000001000 40 jit_hot\n7f0000002000 10 no_table\n");
	assert_int_equal(st.debug_info, 1);
	assert_int_equal(st.debug_rows, 4);
	assert_int_equal(st.debug_rows_out, 2);
	assert_int_equal(st.loads, 2);
	assert_int_equal(st.debug_bad_names, 1);	/* inl\x01.h: not text */
	free(j.b);
	memset(&j, 0, sizeof(j));
	memset(&st, 0, sizeof(st));
	jd_header(&j);
	jd_debug(&j, 0x7f0000003000, garbled, 3);
	jd_load(&j, 0x7f0000003000, 0x40, 3, "v8_code");
	assert_int_equal(conv_all(&j, &st), 0);
	assert_string_equal(out, "@F\n@L 0 2\n@L 8 3\n@F /srv/\xc3\xa9t\xc3\xa9.js\n@L 10 4\n"
				 "7f0000003000 40 v8_code\n");
	assert_int_equal(st.debug_info, 1);
	assert_int_equal(st.debug_rows, 3);
	assert_int_equal(st.debug_bad_names, 2);

	/* pending across calls: the load arrives after the table was taken */
	load_at = j.len;
	free(j.b);
	memset(&j, 0, sizeof(j));
	jd_header(&j);
	jd_debug(&j, 0x7f0000001000, rows, 1);
	load_at = j.len;
	jd_load(&j, 0x7f0000001000, 0x40, 1, "later");
	s.b = j.b;
	s.len = load_at + 10;		/* the load is being written */
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	assert_int_equal(n, 0);
	assert_int_equal(d.dbg_off, SP_JITDUMP_HDR);
	s.len = j.len;
	assert_int_equal(conv(&d, &s, &n, &st), 0);
	out[n] = 0;
	assert_string_equal(out, "@F /srv/gen/hot.c\n@L 10 c\n7f0000001000 40 later\n");
	assert_int_equal(d.dbg_off, 0);

	/* applies to the next load of its address only; one replaced before
	 * its load came, or left at CLOSE, is unused */
	free(j.b);
	memset(&j, 0, sizeof(j));
	jd_header(&j);
	jd_debug(&j, 0x7f0000001000, rows, 1);
	jd_load(&j, 0x7f0000005000, 0x40, 1, "other_addr");
	jd_load(&j, 0x7f0000001000, 0x40, 2, "takes_it");
	jd_load(&j, 0x7f0000001000, 0x40, 3, "no_more");
	jd_debug(&j, 0x7f0000009000, rows, 1);
	jd_debug(&j, 0x7f0000008000, rows, 1);
	jd_other(&j, SP_JIT_CODE_CLOSE, 0);
	assert_int_equal(conv_all(&j, &st), 0);
	assert_string_equal(out, "7f0000005000 40 other_addr\n@F /srv/gen/hot.c\n@L 10 c\n"
				 "7f0000001000 40 takes_it\n7f0000001000 40 no_more\n");
	assert_int_equal(st.debug_info, 1);
	assert_int_equal(st.debug_unused, 2);
	free(j.b);

	/* V8's rows are 0x40 late (perf inject's ELF header): taken off for
	 * its "JS:" loads; a row below the bias is outside the code */
	memset(&j, 0, sizeof(j));
	jd_header(&j);
	jd_debug(&j, 0x7f0000001000,
		 (const struct jd_row[]){ { 0x7f0000001040, 3, "/srv/a.js" },
					  { 0x7f0000001050, 4, "/srv/a.js" },
					  { 0x7f0000001010, 9, "/srv/a.js" },
					  { 0x7f0000001080, 5, "/srv/a.js" } }, 4);
	jd_load(&j, 0x7f0000001000, 0x40, 1, "JS:*f /srv/a.js:3:1");
	assert_int_equal(conv_all(&j, &st), 0);
	assert_string_equal(out, "@F /srv/a.js\n@L 0 3\n@L 10 4\n7f0000001000 40 JS:*f /srv/a.js:3:1\n");
	assert_int_equal(st.debug_rows, 2);
	assert_int_equal(st.debug_rows_out, 2);
	free(j.b);
}

static void test_debug_info_refused(void **state)
{
	static const struct jd_row one[] = { { 0x1000, 7, "/a.c" } };
	static struct jd_row many[SP_JITDUMP_DEBUG_MAX_ENTRIES + 1];
	static char longfile[SP_JITDUMP_FILE_MAX + 2], midfile[SP_JITDUMP_FILE_MAX];
	static struct jd_row big[140];
	struct jd_buf j = { 0 };
	struct sp_jitdump_stats st;

	(void)state;
	for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++)
		many[i] = (struct jd_row){ 0x1000 + i, (uint32_t)i + 1, "" };
	memset(longfile, 'f', sizeof(longfile) - 1);
	memset(midfile, 'm', sizeof(midfile) - 1);
	for (size_t i = 0; i < 140; i++)	/* 70 files of 1 KiB: > 64 KiB of text */
		big[i] = (struct jd_row){ 0x1000 + i, 1, i % 2 ? midfile : "/x.c" };

	/* each table refused whole, counted; the load's line still written */
	jd_header(&j);
	jd_debug_raw(&j, 0x1000, one, 1, 2, 0);		/* claims 2 entries, has 1 */
	jd_load(&j, 0x1000, 0x100, 1, "a");
	jd_debug_raw(&j, 0x1000, one, 1, 1, 1);		/* the file's NUL cut off */
	jd_load(&j, 0x1000, 0x100, 2, "b");
	jd_debug_raw(&j, 0x1000, one, 0, 0, 0);		/* no entry */
	jd_load(&j, 0x1000, 0x100, 3, "c");
	jd_other(&j, SP_JIT_CODE_DEBUG_INFO, 8);	/* too small to be one */
	jd_load(&j, 0x1000, 0x100, 4, "d");
	jd_debug(&j, 0x1000, many, SP_JITDUMP_DEBUG_MAX_ENTRIES + 1);
	jd_load(&j, 0x1000, 0x10000, 5, "e");
	many[0].file = longfile;			/* a file name over the bound */
	jd_debug(&j, 0x1000, many, 1);
	jd_load(&j, 0x1000, 0x100, 6, "f");
	jd_debug(&j, 0x1000, big, 140);			/* over the text bound */
	jd_load(&j, 0x1000, 0x100, 7, "g");
	many[0].file = midfile;				/* the longest file taken */
	jd_debug(&j, 0x1000, many, 1);
	jd_load(&j, 0x1000, 0x100, 8, "h");
	assert_int_equal(conv_all(&j, &st), 0);
	assert_int_equal(st.loads, 8);
	assert_int_equal(st.debug_bad, 4);
	assert_int_equal(st.debug_too_big, 3);
	assert_int_equal(st.debug_info, 1);
	assert_int_equal(st.debug_rows, 1);
	assert_int_equal(strncmp(out, "1000 100 a\n1000 100 b\n1000 100 c\n1000 100 d\n"
				      "1000 10000 e\n1000 100 f\n1000 100 g\n@F mmm",
				 strlen("1000 100 a\n1000 100 b\n1000 100 c\n1000 100 d\n"
					"1000 10000 e\n1000 100 f\n1000 100 g\n@F mmm")),
			 0);
	assert_non_null(strstr(out, "\n@L 0 1\n1000 100 h\n"));
	free(j.b);

	/* a read error inside the table: returned, the load taken next time */
	{
		struct sp_jitdump d = { 0 };
		struct src s = { 0 };
		size_t n = 0;

		memset(&j, 0, sizeof(j));
		jd_header(&j);
		jd_debug(&j, 0x1000, one, 1);
		jd_load(&j, 0x1000, 0x100, 1, "a");
		s.b = j.b;
		s.len = j.len;
		/* header; debug record header, its fields; load header, prefix,
		 * name; then the table's header: fail */
		s.fail_at = 7;
		memset(&st, 0, sizeof(st));
		assert_int_equal(conv(&d, &s, &n, &st), -EIO);
		assert_int_equal(n, 0);
		s.fail_at = 0;
		assert_int_equal(conv(&d, &s, &n, &st), 0);
		out[n] = 0;
		assert_string_equal(out, "@F /a.c\n@L 0 7\n1000 100 a\n");
		free(j.b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_and_skips),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_partial_and_close),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_sticky_size_and_io),
		cmocka_unit_test(test_output_bound),
		cmocka_unit_test(test_debug_info),
		cmocka_unit_test(test_debug_info_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
