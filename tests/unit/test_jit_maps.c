// SPDX-License-Identifier: MIT
/*
 * test_jit_maps.c - the collector's perf-map snapshots against a fake
 * /proc tree (PROC/PID/status, stat, and root/ as the process's root
 * directory): the namespace pid in the file name, pieces that chain as
 * the file grows (a last line being written waits), a rewritten file
 * starting a new chain, the owner and staleness rules, non-regular files
 * (FIFO, symlink to /dev/zero, directory) refused without blocking, the
 * per-process and per-check bounds, a sink that refuses, forget, a full
 * queue, and the reader thread.  Jitdumps: found by their executable
 * mapping in PROC/PID/maps (jit-NSPID.dump), preferred over the perf map,
 * converted to perf-map text that chains as the dump grows (a record being
 * written waits), a rewritten dump starting over, a refused header
 * counted, a mapping that is not executable or names another pid ignored,
 * and the per-process bound on the text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <time.h>

#include "base/jit_piece.h"
#include "collector/procs/jit_maps.h"
#include "jitdump_build.h"
#include "testutil.h"

#define MS 1000000ull
#define MAX_PIECES 64

struct sink {
	int refuse;			/* refuse the next N */
	uint32_t n;
	struct sp_jit_piece pc[MAX_PIECES];
	uint8_t *buf[MAX_PIECES];
};

static struct sink sk;

static int sink(void *ctx, const struct sp_jit_id *id, const uint8_t *piece, size_t len)
{
	struct sink *s = ctx;

	if (s->refuse) {
		s->refuse--;
		return -ENOSPC;
	}
	assert_true(s->n < MAX_PIECES);
	s->buf[s->n] = malloc(len);
	memcpy(s->buf[s->n], piece, len);
	assert_int_equal(sp_jit_piece__decode(s->buf[s->n], len, id, &s->pc[s->n]), 0);
	s->n++;
	return 0;
}

static void sink_reset(void)
{
	for (uint32_t i = 0; i < sk.n; i++)
		free(sk.buf[i]);
	memset(&sk, 0, sizeof(sk));
}

static void wfile(const char *path, const char *s)
{
	assert_int_equal(tu_write_file(path, s, strlen(s)), 0);
}

/* PROC/pid with status (uid, NSpid) and stat (starttime in ticks since
 * boot); root/tmp made. */
static void fake_pid(uint32_t pid, uint32_t uid, uint32_t nspid, unsigned long long start)
{
	char p[PATH_MAX], buf[512];

	snprintf(p, sizeof(p), "%s/%u", tu_dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/root", tu_dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/root/tmp", tu_dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/status", tu_dir, pid);
	snprintf(buf, sizeof(buf), "Name:\tnode\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t%u\t%u\n", uid, uid,
		 uid, uid, pid, nspid);
	wfile(p, buf);
	snprintf(p, sizeof(p), "%s/%u/stat", tu_dir, pid);
	snprintf(buf, sizeof(buf), "%u (no de) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n",
		 pid, start);
	wfile(p, buf);
}

static void map_path(char *p, size_t n, uint32_t pid, uint32_t nspid)
{
	snprintf(p, n, "%s/%u/root/tmp/perf-%u.map", tu_dir, pid, nspid);
}

static struct sp_jit_maps *make(uint64_t per_proc, uint64_t per_check, uint32_t queue)
{
	struct sp_jit_maps_config c = {
		.proc_root = tu_dir, .min_interval_ns = 100 * MS, .no_thread = true,
		.max_bytes_per_proc = per_proc, .max_read_per_check = per_check,
		.queue_len = queue, .max_procs = 8, .sink = sink, .sink_ctx = &sk,
	};
	struct sp_jit_maps *j = NULL;

	assert_int_equal(sp_jit_maps__new(&c, &j), 0);
	return j;
}

static uint64_t t_ns = 1000 * MS;

/* One check of pid, as a sample would trigger it. */
static void check(struct sp_jit_maps *j, uint32_t pid)
{
	t_ns += 200 * MS;
	sp_jit_maps__note(j, pid, t_ns);
	sp_jit_maps__run_pending(j, t_ns);
}

static void test_chain_grows(void **state)
{
	char p[PATH_MAX];
	struct sp_jit_maps_stats st;
	struct sp_jit_maps *j;
	struct sp_jit_id head;
	uint8_t src;
	FILE *f;

	(void)state;
	sink_reset();
	fake_pid(300, getuid(), 7, 0);
	map_path(p, sizeof(p), 300, 7);
	wfile(p, "1000 10 a\n2000 10 b\n");
	j = make(0, 0, 0);
	assert_int_equal(sp_jit_maps__head(j, 300, &src, &head), -ENOENT);
	check(j, 300);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.pc[0].offset, 0);
	assert_true(sp_jit_id__is_zero(&sk.pc[0].parent));
	assert_int_equal(sk.pc[0].len, 20);
	assert_int_equal(sk.pc[0].pid, 300);
	assert_int_equal(sp_jit_maps__head(j, 300, &src, &head), 0);
	assert_int_equal(src, SP_JIT_PERF_MAP);
	assert_memory_equal(head.b, sk.pc[0].id.b, SP_JIT_ID_LEN);

	/* nothing new: no piece; a note within the interval: no check */
	check(j, 300);
	sp_jit_maps__note(j, 300, t_ns + 1);
	sp_jit_maps__run_pending(j, t_ns + 1);
	assert_int_equal(sk.n, 1);

	/* grows by a line and a half: the half waits */
	f = fopen(p, "a");
	fputs("3000 10 c\n4000 10 d", f);
	fclose(f);
	check(j, 300);
	assert_int_equal(sk.n, 2);
	assert_int_equal(sk.pc[1].offset, 20);
	assert_memory_equal(sk.pc[1].parent.b, sk.pc[0].id.b, SP_JIT_ID_LEN);
	assert_int_equal(sk.pc[1].len, 10);
	assert_memory_equal(sk.pc[1].data, "3000 10 c\n", 10);
	f = fopen(p, "a");
	fputs("\n", f);
	fclose(f);
	check(j, 300);
	assert_int_equal(sk.n, 3);
	assert_int_equal(sk.pc[2].offset, 30);
	assert_memory_equal(sk.pc[2].data, "4000 10 d\n", 10);
	assert_int_equal(sp_jit_maps__head(j, 300, &src, &head), 0);
	assert_memory_equal(head.b, sk.pc[2].id.b, SP_JIT_ID_LEN);

	/* rewritten (as jcmd does): a new chain from 0 */
	wfile(p, "9000 10 z\n1000 10 a\n2000 10 b\n3000 10 c\n");
	check(j, 300);
	assert_int_equal(sk.n, 4);
	assert_int_equal(sk.pc[3].offset, 0);
	assert_true(sp_jit_id__is_zero(&sk.pc[3].parent));
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.restarts, 1);
	assert_int_equal(st.pieces, 4);
	assert_int_equal(st.procs_with_map, 1);

	/* forgotten: no head any more */
	sp_jit_maps__forget(j, 300);
	assert_int_equal(sp_jit_maps__head(j, 300, &src, &head), -ENOENT);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.procs, 0);
	sp_jit_maps__free(j);
	sink_reset();
}

static void test_refusals(void **state)
{
	char p[PATH_MAX];
	struct sp_jit_maps_stats st;
	struct sp_jit_maps *j;
	struct timespec ts;

	(void)state;
	sink_reset();
	j = make(0, 0, 0);

	/* no map */
	fake_pid(301, getuid(), 301, 0);
	check(j, 301);
	/* another owner in status */
	fake_pid(302, getuid() + 1000, 302, 0);
	map_path(p, sizeof(p), 302, 302);
	wfile(p, "1000 10 a\n");
	check(j, 302);
	/* stale: modified an hour before the process started */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	fake_pid(303, getuid(), 303, (unsigned long long)ts.tv_sec * sysconf(_SC_CLK_TCK));
	map_path(p, sizeof(p), 303, 303);
	wfile(p, "1000 10 a\n");
	{
		struct timespec t[2];

		clock_gettime(CLOCK_REALTIME, &t[0]);
		t[0].tv_sec -= 3600;
		t[1] = t[0];
		assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
	}
	check(j, 303);
	/* FIFO, symlink to /dev/zero, directory: refused, nothing blocks */
	fake_pid(304, getuid(), 304, 0);
	map_path(p, sizeof(p), 304, 304);
	assert_int_equal(mkfifo(p, 0644), 0);
	check(j, 304);
	/* a symlink to a FIFO (resolved inside the process's root: a fake
	 * root has no /dev/zero, test_jit_hostile.py tries the real one) */
	fake_pid(305, getuid(), 305, 0);
	map_path(p, sizeof(p), 305, 305);
	assert_int_equal(symlink("/tmp/fifo", p), 0);
	snprintf(p, sizeof(p), "%s/%u/root/tmp/fifo", tu_dir, 305);
	assert_int_equal(mkfifo(p, 0644), 0);
	check(j, 305);
	fake_pid(306, getuid(), 306, 0);
	map_path(p, sizeof(p), 306, 306);
	assert_int_equal(mkdir(p, 0755), 0);
	check(j, 306);
	/* a symlink out of the root resolves inside it: nothing there */
	fake_pid(307, getuid(), 307, 0);
	map_path(p, sizeof(p), 307, 307);
	{
		char target[PATH_MAX];

		snprintf(target, sizeof(target), "%s/%u/root/tmp/real", tu_dir, 302);
		assert_int_equal(symlink(target, p), 0);
	}
	check(j, 307);
	/* the process is gone */
	check(j, 399);

	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.checks, 8);
	assert_int_equal(st.no_map, 2);		/* 301, 307 */
	assert_int_equal(st.wrong_owner, 1);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.not_regular, 3);
	assert_int_equal(st.unreadable, 1);
	assert_int_equal(st.pieces, 0);
	assert_int_equal(sk.n, 0);
	sp_jit_maps__free(j);
}

static void test_bounds(void **state)
{
	char p[PATH_MAX], line[32];
	struct sp_jit_maps_stats st;
	struct sp_jit_maps *j;
	FILE *f;

	(void)state;
	sink_reset();
	fake_pid(310, getuid(), 310, 0);
	map_path(p, sizeof(p), 310, 310);
	f = fopen(p, "w");
	for (int i = 0; i < 1000; i++) {
		snprintf(line, sizeof(line), "%x 10 f%05d\n", 0x10000 + 16 * i, i);
		fputs(line, f);	/* 16 bytes each */
	}
	fclose(f);
	/* per process 8000 bytes, per check 3000 */
	j = make(8000, 3000, 0);
	check(j, 310);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.pc[0].len, 2992);	/* cut after the last whole line */
	check(j, 310);
	check(j, 310);
	check(j, 310);
	check(j, 310);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.bytes_read, 8000);
	assert_int_equal(sk.pc[sk.n - 1].offset + sk.pc[sk.n - 1].len, 8000);
	for (uint32_t i = 1; i < sk.n; i++)
		assert_memory_equal(sk.pc[i].parent.b, sk.pc[i - 1].id.b, SP_JIT_ID_LEN);
	sp_jit_maps__free(j);

	/* a sink that refuses: the chain breaks and starts over whole */
	sink_reset();
	j = make(0, 0, 0);
	sk.refuse = 1;
	check(j, 310);
	assert_int_equal(sk.n, 0);
	check(j, 310);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.pc[0].offset, 0);
	assert_int_equal(sk.pc[0].len, 16000);
	/* restart_all: the next check ships the whole file again */
	sp_jit_maps__restart_all(j);
	check(j, 310);
	assert_int_equal(sk.n, 2);
	assert_int_equal(sk.pc[1].offset, 0);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.sink_refused, 1);
	sp_jit_maps__free(j);

	/* the total budget: two processes' maps of 16000 bytes each, 20000
	 * bytes for both and no refill: the first is copied whole, the
	 * second up to the budget (cut after a whole line), then waits */
	sink_reset();
	fake_pid(312, getuid(), 312, 0);
	{
		char q[PATH_MAX];
		struct sp_jit_maps_config c = {
			.proc_root = tu_dir, .min_interval_ns = 100 * MS, .no_thread = true,
			.max_procs = 8, .burst_bytes = 20000, .no_refill = true, .sink = sink,
			.sink_ctx = &sk,
		};

		map_path(q, sizeof(q), 312, 312);
		assert_int_equal(link(p, q), 0);	/* the same 16000 bytes */
		assert_int_equal(sp_jit_maps__new(&c, &j), 0);
	}
	check(j, 310);
	check(j, 312);
	assert_int_equal(sk.n, 2);
	assert_int_equal(sk.pc[0].len, 16000);
	assert_int_equal(sk.pc[1].len, 4000);	/* 250 whole lines of 16 */
	check(j, 312);				/* nothing left: nothing read */
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.bytes_read, 20000);
	assert_int_equal(st.over_budget, 2);
	assert_int_equal(sk.n, 2);
	sp_jit_maps__free(j);

	/* a full queue drops the note (counted) */
	sink_reset();
	j = make(0, 0, 1);
	fake_pid(311, getuid(), 311, 0);
	sp_jit_maps__note(j, 310, t_ns);
	sp_jit_maps__note(j, 311, t_ns);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.notes_dropped, 1);
	sp_jit_maps__run_pending(j, t_ns);
	sp_jit_maps__free(j);
	sink_reset();
}

static void test_thread(void **state)
{
	struct sp_jit_maps_config c = {
		.proc_root = tu_dir, .min_interval_ns = 1, .sink = sink, .sink_ctx = &sk,
	};
	char p[PATH_MAX];
	struct sp_jit_maps *j = NULL;
	struct sp_jit_id head;
	uint8_t src;

	(void)state;
	sink_reset();
	fake_pid(320, getuid(), 2, 0);
	map_path(p, sizeof(p), 320, 2);
	wfile(p, "1000 10 threaded\n");
	assert_int_equal(sp_jit_maps__new(&c, &j), 0);
	assert_int_equal(sp_jit_maps__start(j), 0);
	sp_jit_maps__note(j, 320, 5);
	assert_int_equal(sp_jit_maps__drain(j, 5000), 0);
	assert_int_equal(sp_jit_maps__head(j, 320, &src, &head), 0);
	assert_int_equal(sk.n, 1);
	sp_jit_maps__free(j);
	sp_jit_maps__free(NULL);
	sink_reset();
}

/* root/srv/jit-NSPID.dump with j's bytes, and PROC/pid/maps naming it
 * (perms as given) after an unrelated line. */
static void put_dump(uint32_t pid, uint32_t nspid, const struct jd_buf *jb, const char *perms)
{
	char p[PATH_MAX], line[PATH_MAX + 128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%u/root/srv", tu_dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/root/srv/jit-%u.dump", tu_dir, pid, nspid);
	assert_int_equal(tu_write_file(p, jb->b, jb->len), 0);
	assert_int_equal(stat(p, &st), 0);
	snprintf(line, sizeof(line),
		 "55d000000000-55d000001000 r-xp 00000000 fe:00 12 /usr/bin/node\n"
		 "7f0000000000-7f0000001000 %s 00000000 fe:00 %llu /srv/jit-%u.dump\n", perms,
		 (unsigned long long)st.st_ino, nspid);
	snprintf(p, sizeof(p), "%s/%u/maps", tu_dir, pid);
	wfile(p, line);
}

static void test_jitdump(void **state)
{
	char p[PATH_MAX];
	struct sp_jit_maps_stats st;
	struct sp_jit_maps *j;
	struct sp_jit_id head;
	struct jd_buf jb = { 0 }, bad = { 0 };
	size_t half;
	uint8_t src;

	(void)state;
	sink_reset();
	fake_pid(330, getuid(), 9, 0);
	map_path(p, sizeof(p), 330, 9);
	wfile(p, "1000 10 from_the_perf_map\n");
	jd_header(&jb);
	jd_other(&jb, SP_JIT_CODE_UNWINDING_INFO, 64);
	/* its line table travels with the load, in the same piece (V8's rows
	 * are 0x40 late: jitdump.h) */
	jd_debug(&jb, 0x7f0000010000,
		 (const struct jd_row[]){ { 0x7f0000010044, 1, "/srv/a.js" },
					  { 0x7f0000010080, 2, "/srv/a.js" } }, 2);
	jd_load(&jb, 0x7f0000010000, 0x40, 1, "JS:*hot /srv/a.js:1:1");
	put_dump(330, 9, &jb, "r-xp");
	j = make(0, 0, 0);
	check(j, 330);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.pc[0].source, SP_JIT_JITDUMP);
	assert_int_equal(sk.pc[0].len,
			 strlen("@F /srv/a.js\n@L 4 1\n7f0000010000 40 JS:*hot /srv/a.js:1:1\n"));
	assert_memory_equal(sk.pc[0].data,
			    "@F /srv/a.js\n@L 4 1\n7f0000010000 40 JS:*hot /srv/a.js:1:1\n",
			    sk.pc[0].len);
	assert_int_equal(sp_jit_maps__head(j, 330, &src, &head), 0);
	assert_int_equal(src, SP_JIT_JITDUMP);

	/* grows by a load and half a record: the half waits */
	jd_load(&jb, 0x7f0000020000, 0x20, 2, "JS:*warm /srv/a.js:2:1");
	half = jb.len;
	jd_load(&jb, 0x7f0000030000, 0x20, 3, "JS:*late /srv/a.js:3:1");
	{
		char dp[PATH_MAX];
		FILE *f;

		snprintf(dp, sizeof(dp), "%s/330/root/srv/jit-9.dump", tu_dir);
		f = fopen(dp, "r+");

		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		fwrite(jb.b + (size_t)ftell(f), 1, half + 20 - (size_t)ftell(f), f);
		fclose(f);
		check(j, 330);
		assert_int_equal(sk.n, 2);
		assert_int_equal(sk.pc[1].offset, sk.pc[0].len);
		assert_memory_equal(sk.pc[1].parent.b, sk.pc[0].id.b, SP_JIT_ID_LEN);
		assert_memory_equal(sk.pc[1].data, "7f0000020000 20 JS:*warm /srv/a.js:2:1\n",
				    sk.pc[1].len);
		f = fopen(dp, "r+");
		fseek(f, 0, SEEK_END);
		fwrite(jb.b + half + 20, 1, jb.len - half - 20, f);
		fclose(f);
		check(j, 330);
		assert_int_equal(sk.n, 3);
		assert_memory_equal(sk.pc[2].data, "7f0000030000 20 JS:*late /srv/a.js:3:1\n",
				    sk.pc[2].len);
	}
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.jitdump_loads, 3);
	assert_int_equal(st.jitdump_skipped, 1);
	assert_int_equal(st.jitdump_line_tables, 1);
	assert_int_equal(st.jitdump_line_rows, 1);
	assert_int_equal(st.jitdump_debug_rows_out, 1);	/* the row at the code's end */
	assert_int_equal(st.jitdump_debug_bad + st.jitdump_debug_too_big, 0);
	assert_true(st.jitdump_checks >= 3);
	assert_int_equal(st.restarts, 0);

	/* rewritten from the start (another file at that name): a new chain */
	free(jb.b);
	memset(&jb, 0, sizeof(jb));
	jd_header(&jb);
	jd_load(&jb, 0x7f0000040000, 0x10, 1, "JS:*new /srv/b.js:1:1");
	put_dump(330, 9, &jb, "r-xp");
	check(j, 330);
	assert_int_equal(sk.n, 4);
	assert_true(sp_jit_id__is_zero(&sk.pc[3].parent));
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.restarts, 1);

	/* a header that is not a jitdump's: refused, counted, nothing shipped */
	jd_header_raw(&bad, SP_JITDUMP_MAGIC_SWAPPED, 1, SP_JITDUMP_HDR, EM_X86_64);
	jd_load(&bad, 0x1000, 0x10, 1, "x");
	put_dump(330, 9, &bad, "r-xp");
	check(j, 330);
	assert_int_equal(sk.n, 4);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.jitdump_refused, 1);
	check(j, 330);		/* unchanged: not read, not counted again */
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.jitdump_refused, 1);
	assert_int_equal(st.unreadable, 0);

	/* a record size that cannot be followed: the loads before it are shipped */
	free(bad.b);
	memset(&bad, 0, sizeof(bad));
	jd_header(&bad);
	jd_load(&bad, 0x7f0000050000, 0x10, 1, "kept");
	jd_u32(&bad, SP_JIT_CODE_LOAD);
	jd_u32(&bad, 8);
	jd_u64(&bad, 0);
	jd_load(&bad, 0x7f0000060000, 0x10, 2, "never");
	put_dump(330, 9, &bad, "r-xp");
	check(j, 330);
	assert_int_equal(sk.n, 5);
	assert_memory_equal(sk.pc[4].data, "7f0000050000 10 kept\n", sk.pc[4].len);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.jitdump_refused, 2);
	assert_int_equal(st.unreadable, 0);

	/* not executable, or another pid's name: not this process's jitdump;
	 * the perf map is read instead (a new chain, from the other source) */
	wfile(p, "1000 10 from_the_perf_map\n");
	put_dump(330, 9, &jb, "r--p");
	check(j, 330);
	assert_int_equal(sk.n, 6);
	assert_int_equal(sk.pc[5].source, SP_JIT_PERF_MAP);
	put_dump(330, 10, &jb, "r-xp");
	check(j, 330);
	assert_int_equal(sk.n, 6);
	assert_int_equal(sp_jit_maps__head(j, 330, &src, &head), 0);
	assert_int_equal(src, SP_JIT_PERF_MAP);
	sp_jit_maps__free(j);
	sink_reset();

	/* the per-process bound applies to the text: two lines fit, counted */
	free(jb.b);
	memset(&jb, 0, sizeof(jb));
	jd_header(&jb);
	for (uint64_t i = 0; i < 10; i++)
		jd_load(&jb, 0x1000 + 0x100 * i, 0x10, i, "f");
	put_dump(330, 9, &jb, "r-xp");
	j = make(SP_JITDUMP_LINE_MAX + 15, 0, 0);
	check(j, 330);
	check(j, 330);
	assert_int_equal(sk.n, 1);
	assert_int_equal(sk.pc[0].len, 20);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.truncated, 1);
	sp_jit_maps__free(j);
	sink_reset();
	free(jb.b);
	free(bad.b);
}

/* A file the reader waits on for good: pid 61's status is a FIFO no one
 * opens for writing (a stand-in for a hung file system, which a unit
 * test cannot make: test_fault_hung_jit.py hangs a jitdump on a real FUSE
 * mount).  The check comes back at the limit (timed_out), the next one of
 * that pid is skipped at once while the first stays stuck (skipped_stuck),
 * another process's perf map is read meanwhile, and once a writer comes
 * the pid is read again. */
static void test_hung(void **state)
{
	struct sp_jit_maps_config c = {
		.proc_root = tu_dir, .min_interval_ns = 100 * MS, .no_thread = true,
		.io_timeout_ms = 100, .io_max_stuck = 2, .sink = sink, .sink_ctx = &sk,
	};
	struct sp_jit_maps_stats st;
	struct sp_jit_maps *j = NULL;
	struct timespec t0, t1;
	char p[PATH_MAX];
	int wfd;

	(void)state;
	fake_pid(61, getuid(), 61, 0);
	snprintf(p, sizeof(p), "%s/61/status", tu_dir);
	unlink(p);
	assert_int_equal(mkfifo(p, 0600), 0);
	fake_pid(62, getuid(), 62, 0);
	map_path(p, sizeof(p), 62, 62);
	wfile(p, "7f0000001000 10 beside_the_hang\n");
	assert_int_equal(sp_jit_maps__new(&c, &j), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	check(j, 61);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.timed_out, 1);
	assert_int_equal(st.io_stuck, 1);
	/* at the limit, with margin for a loaded machine, not for good */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 5000);
	check(j, 61);
	check(j, 62);
	sp_jit_maps__stats(j, &st);
	assert_int_equal(st.skipped_stuck, 1);
	assert_int_equal(st.reads, 1);
	assert_int_equal(sk.n, 1);
	/* the writer comes: the stuck open returns, its helper ends */
	snprintf(p, sizeof(p), "%s/61/status", tu_dir);
	wfd = open(p, O_WRONLY);
	assert_true(wfd >= 0);
	close(wfd);
	for (int w = 0; w < 400; w++) {
		sp_jit_maps__stats(j, &st);
		if (!st.io_stuck)
			break;
		usleep(5000);
	}
	assert_int_equal(st.io_stuck, 0);
	sp_jit_maps__free(j);
	sink_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung),
		cmocka_unit_test(test_chain_grows),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_thread),
		cmocka_unit_test(test_jitdump),
	};

	return cmocka_run_group_tests_name("jit_maps", tests, tu_setup_dir, tu_teardown_dir);
}
