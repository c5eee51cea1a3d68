// SPDX-License-Identifier: MIT
/*
 * test_proc_read.c - base/proc_read.h against a proc root the test builds:
 * PID/maps a regular file (read and parsed on the caller's thread, every
 * line, the same as the line reader sees), or a FIFO nobody opens for
 * writing (open(2) blocks: a /proc file whose read never returns, as
 * /proc/PID/maps of a process whose mmap lock is held for good; the real
 * case: tests/integration/test_fault_hung_proc.py).
 *   - a regular maps file: every line handed to fn, 0;
 *   - the FIFO: -ETIMEDOUT at the limit; the same pid again: -EBUSY at
 *     once (its read is still stuck, io_deadline__stuck_on), another pid
 *     still read; counted timed_out 1, skipped 1, stuck 1;
 *   - a writer opens the FIFO: the stuck read returns, the pid is read
 *     again (an empty maps: 0 lines), stuck back to 0;
 *   - a job keyed by pid is refused while that pid is stuck.
 * spanprof-test: serial (bounds a latency)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/proc_read.h"

static const char MAPS[] =
	"55d0c000-55d0d000 r-xp 00001000 fe:00 18624 /usr/bin/true\n"
	"7f00000000-7f00001000 rw-p 00000000 00:00 0 \n"
	"not a maps line\n"
	"7fff0000-7fff1000 r-xp 00000000 00:00 0 [vdso]";

static int count_line(const struct sp_map_entry *e, void *ctx)
{
	(void)e;
	(*(int *)ctx)++;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void put(const char *root, unsigned pid, const char *maps, int fifo)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%u", root, pid);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/%u/maps", root, pid);
	if (fifo) {
		assert_int_equal(mkfifo(p, 0600), 0);
		return;
	}
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(maps, f);
	fclose(f);
}

static void noop_run(struct sp_io_job *j)
{
	(void)j;
}

static void noop_destroy(struct sp_io_job *j)
{
	(void)j;
}

static void test_proc_read(void **state)
{
	struct sp_io_deadline_config cfg = { .timeout_ms = 60, .max_stuck = 2 };
	struct sp_io_job job = { .run = noop_run, .destroy = noop_destroy };
	char root[] = "/tmp/sp-proc-read-XXXXXX", fifo[PATH_MAX];
	struct sp_proc_read_stats st;
	struct sp_maps_read_stats ms;
	struct sp_proc_read *r;
	int n = 0, wfd;
	double t0, dt;

	(void)state;
	assert_non_null(mkdtemp(root));
	put(root, 10, MAPS, 0);
	put(root, 20, NULL, 1);
	r = sp_proc_read__new(&cfg);
	assert_non_null(r);

	assert_int_equal(sp_proc_read__maps(r, root, 10, count_line, &n, &ms), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ms.lines, 4);
	assert_int_equal(ms.malformed, 1);
	assert_int_equal(sp_proc_read__maps(r, root, 99, count_line, &n, &ms), -ENOENT);

	t0 = now_ms();
	assert_int_equal(sp_proc_read__maps(r, root, 20, count_line, &n, &ms), -ETIMEDOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 59 && dt < 1000);
	t0 = now_ms();
	assert_int_equal(sp_proc_read__maps(r, root, 20, count_line, &n, &ms), -EBUSY);
	assert_true(now_ms() - t0 < 50);
	assert_int_equal(sp_proc_read__job(r, 20, &job), -EBUSY);
	n = 0;
	assert_int_equal(sp_proc_read__maps(r, root, 10, count_line, &n, &ms), 0);
	assert_int_equal(n, 3);
	sp_proc_read__stats(r, &st);
	assert_int_equal(st.timed_out, 1);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(st.stuck, 1);

	/* the writer comes: the stuck open returns, the pid is read again */
	snprintf(fifo, sizeof(fifo), "%s/20/maps", root);
	wfd = open(fifo, O_WRONLY);
	assert_true(wfd >= 0);
	close(wfd);
	for (int w = 0; w < 400; w++) {
		sp_proc_read__stats(r, &st);
		if (!st.stuck)
			break;
		usleep(5000);
	}
	assert_int_equal(st.stuck, 0);
	assert_int_equal(sp_proc_read__job(r, 20, &job), 0);
	/* a FIFO with no writer now blocks again: only check the pid is no
	 * longer skipped, through the job above */
	sp_proc_read__free(r);
	sp_proc_read__free(NULL);
	unlink(fifo);
	snprintf(fifo, sizeof(fifo), "%s/20", root);
	rmdir(fifo);
	snprintf(fifo, sizeof(fifo), "%s/10/maps", root);
	unlink(fifo);
	snprintf(fifo, sizeof(fifo), "%s/10", root);
	rmdir(fifo);
	rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
