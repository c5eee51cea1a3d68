// SPDX-License-Identifier: MIT
/*
 * test_line_reader.c - sp_line_reader__fd / __buf (base/line_reader.h):
 * lines that straddle the caller's buffer at every buffer size from 2 to
 * 24 arrive whole and in order, the same through both forms; a line of cap
 * bytes is over-long (skipped, counted once however many buffer fills it
 * spans, reported in file order), one of cap - 1 is not; a last line
 * without '\n' is passed, an over-long one is not; an empty file gives no
 * line; callbacks stop (positive, returned) or fail (negative); max_bytes
 * gives -E2BIG; a read error (a directory: EISDIR; /proc/self/mem
 * running into an unmapped page after a page of lines: EIO mid-stream)
 * ends the call with its -errno after the complete lines before it; a
 * read interrupted by a signal (no SA_RESTART) is retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/line_reader.h"

/* What the callbacks saw, as text: each line then '\n', each over-long
 * report as "<LONG>\n". */
struct seen {
	char text[8192];
	size_t len;
	int calls;
	int stop_at;	/* a call number: return 7 there; 0 = never */
	int fail_at;	/* a call number: return -EIO there; 0 = never */
};

static int after(struct seen *s)
{
	s->calls++;
	if (s->fail_at && s->calls == s->fail_at)
		return -EIO;
	if (s->stop_at && s->calls == s->stop_at)
		return 7;
	return 0;
}

static int on_line(void *ctx, const char *l, size_t len)
{
	struct seen *s = ctx;

	assert_true(s->len + len + 1 <= sizeof(s->text));
	memcpy(s->text + s->len, l, len);
	s->len += len;
	s->text[s->len++] = '\n';
	return after(s);
}

static int on_long(void *ctx)
{
	struct seen *s = ctx;

	assert_true(s->len + 7 <= sizeof(s->text));
	memcpy(s->text + s->len, "<LONG>\n", 7);
	s->len += 7;
	return after(s);
}

static int memfd_with(const char *text, size_t len)
{
	int fd = memfd_create("line-reader", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* Both forms over text with buffer cap: same result, same calls, same
 * counts; the fd form's result returned, *s what it saw. */
static int both(const char *text, size_t len, size_t cap, struct seen *s,
		struct sp_line_stats *st)
{
	struct seen b = *s;
	struct sp_line_sink sink = { .line = on_line, .overlong = on_long, .ctx = s };
	struct sp_line_stats bst;
	char *buf = malloc(cap);	/* exactly cap: ASan sees an overrun */
	int fd = memfd_with(text, len), rc, brc;

	assert_non_null(buf);
	rc = sp_line_reader__fd(fd, buf, cap, 0, &sink, st);
	close(fd);
	free(buf);
	sink.ctx = &b;
	brc = sp_line_reader__buf(text, len, cap, &sink, &bst);
	assert_int_equal(brc, rc);
	assert_int_equal(b.len, s->len);
	assert_memory_equal(b.text, s->text, s->len);
	assert_int_equal(bst.lines, st->lines);
	assert_int_equal(bst.overlong, st->overlong);
	return rc;
}

static void test_lines_across_buffer_boundaries(void **state)
{
	/* Lines of 0 to 9 bytes, an empty one among them, no '\n' at the end. */
	static const char text[] = "a\nbc\n\ndef\nghij\nklmno\npqrstu\nvwxyz01\n23456789\nlast";
	(void)state;
	for (size_t cap = 2; cap <= 24; cap++) {
		struct seen s = { 0 };
		struct sp_line_stats st;
		char want[256];
		size_t wl = 0, start = 0;
		uint64_t lines = 0, longs = 0;

		/* The expected calls, cut by hand: a line of cap bytes or more
		 * is over-long. */
		for (size_t i = 0; i <= sizeof(text) - 1; i++) {
			if (i < sizeof(text) - 1 && text[i] != '\n')
				continue;
			if (i - start >= cap) {
				memcpy(want + wl, "<LONG>\n", 7);
				wl += 7;
				longs++;
			} else {
				memcpy(want + wl, text + start, i - start);
				wl += i - start;
				want[wl++] = '\n';
				lines++;
			}
			start = i + 1;
		}
		assert_int_equal(both(text, sizeof(text) - 1, cap, &s, &st), 0);
		if (s.len != wl || memcmp(s.text, want, wl))
			fail_msg("cap %zu: saw \"%.*s\", want \"%.*s\"", cap, (int)s.len, s.text,
				 (int)wl, want);
		assert_int_equal(st.lines, lines);
		assert_int_equal(st.overlong, longs);
		assert_int_equal(st.bytes, sizeof(text) - 1);
	}
}

static void test_overlong_skipped_and_counted(void **state)
{
	struct seen s = { 0 };
	struct sp_line_stats st;
	char text[256];
	int n;

	(void)state;
	/* cap 8: 7 bytes fit, 8 do not; 30 bytes span several buffer fills
	 * and are still one over-long line; the line after each is whole. */
	n = snprintf(text, sizeof(text), "1234567\n12345678\nafter\n%s\nend\n",
		     "abcdefghijklmnopqrstuvwxyz0123");
	assert_int_equal(both(text, (size_t)n, 8, &s, &st), 0);
	assert_int_equal(s.len, strlen("1234567\n<LONG>\nafter\n<LONG>\nend\n"));
	assert_memory_equal(s.text, "1234567\n<LONG>\nafter\n<LONG>\nend\n", s.len);
	assert_int_equal(st.lines, 3);
	assert_int_equal(st.overlong, 2);

	/* Without an overlong callback: only counted. */
	{
		struct seen q = { 0 };
		const struct sp_line_sink sink = { .line = on_line, .ctx = &q };
		char buf[8];
		int fd = memfd_with(text, (size_t)n);

		assert_int_equal(sp_line_reader__fd(fd, buf, sizeof(buf), 0, &sink, &st), 0);
		close(fd);
		assert_int_equal(q.len, strlen("1234567\nafter\nend\n"));
		assert_memory_equal(q.text, "1234567\nafter\nend\n", q.len);
		assert_int_equal(st.overlong, 2);
	}
}

static void test_last_line_without_newline(void **state)
{
	struct seen s = { 0 };
	struct sp_line_stats st;

	(void)state;
	assert_int_equal(both("one\ntwo", 7, 16, &s, &st), 0);
	assert_int_equal(s.len, 8);
	assert_memory_equal(s.text, "one\ntwo\n", 8);
	assert_int_equal(st.lines, 2);

	/* A '\n' at the very end makes no extra empty line. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(both("one\ntwo\n", 8, 16, &s, &st), 0);
	assert_int_equal(st.lines, 2);

	/* An over-long last line without '\n': reported once, not passed. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(both("ok\nabcdefghijkl", 15, 8, &s, &st), 0);
	assert_int_equal(s.len, strlen("ok\n<LONG>\n"));
	assert_memory_equal(s.text, "ok\n<LONG>\n", s.len);
	assert_int_equal(st.lines, 1);
	assert_int_equal(st.overlong, 1);
}

static void test_empty_file(void **state)
{
	struct seen s = { 0 };
	struct sp_line_stats st;

	(void)state;
	assert_int_equal(both("", 0, 8, &s, &st), 0);
	assert_int_equal(s.calls, 0);
	assert_int_equal(st.lines, 0);
	assert_int_equal(st.overlong, 0);
	assert_int_equal(st.bytes, 0);

	/* A lone '\n' is one empty line. */
	assert_int_equal(both("\n", 1, 8, &s, &st), 0);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.len, 1);
}

static void test_stop_and_fail(void **state)
{
	static const char text[] = "a\nb\nc\nd\n";
	struct seen s = { .stop_at = 2 };
	struct sp_line_stats st;

	(void)state;
	assert_int_equal(both(text, sizeof(text) - 1, 8, &s, &st), 7);
	assert_int_equal(s.len, 4);
	assert_memory_equal(s.text, "a\nb\n", 4);

	memset(&s, 0, sizeof(s));
	s.fail_at = 3;
	assert_int_equal(both(text, sizeof(text) - 1, 8, &s, &st), -EIO);
	assert_int_equal(s.calls, 3);

	/* An over-long report may stop too. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(both("a\n0123456789\nz\n", 15, 8, &s, &st), 7);
	assert_int_equal(s.len, strlen("a\n<LONG>\n"));
}

static void test_max_bytes(void **state)
{
	struct seen s = { 0 };
	const struct sp_line_sink sink = { .line = on_line, .ctx = &s };
	struct sp_line_stats st;
	char buf[64];
	int fd = memfd_with("a\nb\nc\n", 6);

	(void)state;
	assert_int_equal(sp_line_reader__fd(fd, buf, sizeof(buf), 5, &sink, &st), -E2BIG);
	assert_int_equal(s.calls, 0);	/* that read's lines are not passed */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(sp_line_reader__fd(fd, buf, sizeof(buf), 6, &sink, &st), 0);
	assert_int_equal(s.calls, 3);
	close(fd);
}

static void test_bad_arguments(void **state)
{
	struct seen s = { 0 };
	const struct sp_line_sink sink = { .line = on_line, .ctx = &s };
	const struct sp_line_sink none = { .ctx = &s };
	struct sp_line_stats st = { .lines = 99 };
	char buf[8];

	(void)state;
	assert_int_equal(sp_line_reader__fd(-1, buf, sizeof(buf), 0, &sink, &st), -EBADF);
	assert_int_equal(st.lines, 0);	/* filled in every case */
	assert_int_equal(sp_line_reader__fd(0, buf, 1, 0, &sink, &st), -EINVAL);
	assert_int_equal(sp_line_reader__fd(0, NULL, 8, 0, &sink, &st), -EINVAL);
	assert_int_equal(sp_line_reader__fd(0, buf, sizeof(buf), 0, &none, &st), -EINVAL);
	assert_int_equal(sp_line_reader__buf(NULL, 1, 8, &sink, &st), -EINVAL);
	assert_int_equal(sp_line_reader__buf(NULL, 0, 8, &sink, &st), 0);
	assert_int_equal(sp_line_reader__buf("a", 1, 8, NULL, &st), -EINVAL);
	assert_int_equal(s.calls, 0);
}

static void test_read_error(void **state)
{
	struct seen s = { 0 };
	const struct sp_line_sink sink = { .line = on_line, .ctx = &s };
	struct sp_line_stats st;
	long pg = sysconf(_SC_PAGESIZE);
	char buf[16384], *page;
	int fd;

	(void)state;
	/* A directory: read(2) fails at once with EISDIR. */
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(sp_line_reader__fd(fd, buf, sizeof(buf), 0, &sink, &st), -EISDIR);
	close(fd);
	assert_int_equal(s.calls, 0);

	/* Mid-stream: /proc/self/mem from a page of lines up to an unmapped
	 * page.  The first read returns the page, the next fails with EIO;
	 * the complete lines before it are passed, the unfinished one not. */
	assert_true(pg >= 64 && (size_t)pg * 2 <= sizeof(buf));
	page = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	assert_true(page != MAP_FAILED);
	assert_int_equal(munmap(page + pg, (size_t)pg), 0);
	memset(page, 'x', (size_t)pg);
	memcpy(page, "first\nsecond\n", 13);	/* then a line of 'x' without '\n' */
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, (off_t)(uintptr_t)page, SEEK_SET), (off_t)(uintptr_t)page);
	assert_int_equal(sp_line_reader__fd(fd, buf, sizeof(buf), 0, &sink, &st), -EIO);
	close(fd);
	munmap(page, (size_t)pg);
	assert_int_equal(st.bytes, (uint64_t)pg);
	assert_int_equal(s.len, 13);
	assert_memory_equal(s.text, "first\nsecond\n", 13);
}

/* EINTR: the reader blocks on an empty pipe; a helper waits until the
 * reading thread sleeps in the pipe read (its wchan), signals it (a handler without SA_RESTART, so the
 * read returns EINTR), then writes two lines and closes. */
struct intr {
	int wfd;
	pid_t tid;
	pthread_t reader;
	int ok;
};

static volatile sig_atomic_t interrupts;

static void on_usr1(int sig)
{
	(void)sig;
	interrupts++;
}

/* True when the thread sleeps in a pipe read (its wchan: pipe_read, or
 * anon_pipe_read on newer kernels), so a signal now interrupts read(2). */
static bool in_pipe_read(pid_t tid)
{
	char path[64], wchan[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(wchan, 1, sizeof(wchan) - 1, f);
	fclose(f);
	wchan[n] = 0;
	return strstr(wchan, "pipe_read") != NULL;
}

static bool wait_for(bool (*cond)(struct intr *), struct intr *x)
{
	struct timespec d = { 0, 1000000 };

	for (int i = 0; i < 10000; i++) {	/* 10 s at the most */
		if (cond(x))
			return true;
		nanosleep(&d, NULL);
	}
	return false;
}

static bool reader_sleeps(struct intr *x)
{
	return in_pipe_read(x->tid);
}

static bool interrupted(struct intr *x)
{
	(void)x;
	return interrupts > 0;
}

static void *interrupter(void *arg)
{
	struct intr *x = arg;

	if (wait_for(reader_sleeps, x) && !pthread_kill(x->reader, SIGUSR1) &&
	    wait_for(interrupted, x))
		x->ok = 1;
	if (write(x->wfd, "x\ny\n", 4) != 4)
		x->ok = 0;
	close(x->wfd);
	return NULL;
}

static void test_eintr_retried(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	struct seen s = { 0 };
	const struct sp_line_sink sink = { .line = on_line, .ctx = &s };
	struct sp_line_stats st;
	struct intr x = { .tid = (pid_t)syscall(SYS_gettid), .reader = pthread_self() };
	pthread_t th;
	char buf[64];
	int p[2], rc;

	(void)state;
	sigemptyset(&sa.sa_mask);	/* sa_flags 0: no SA_RESTART */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	x.wfd = p[1];
	assert_int_equal(pthread_create(&th, NULL, interrupter, &x), 0);
	rc = sp_line_reader__fd(p[0], buf, sizeof(buf), 0, &sink, &st);
	pthread_join(th, NULL);
	close(p[0]);
	sigaction(SIGUSR1, &old, NULL);
	if (!x.ok)
		fail_msg("the reading thread was never seen asleep in a pipe read (wchan) and "
			 "signalled "
			 "(interrupts %d)", (int)interrupts);
	assert_int_equal(rc, 0);
	assert_int_equal(s.len, 4);
	assert_memory_equal(s.text, "x\ny\n", 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_across_buffer_boundaries),
		cmocka_unit_test(test_overlong_skipped_and_counted),
		cmocka_unit_test(test_last_line_without_newline),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_stop_and_fail),
		cmocka_unit_test(test_max_bytes),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_read_error),
		cmocka_unit_test(test_eintr_retried),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
