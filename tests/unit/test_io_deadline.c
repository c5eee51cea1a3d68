// SPDX-License-Identifier: MIT
/*
 * test_io_deadline.c - base/io_deadline.h with jobs that really block: a
 * read(2) from a pipe nobody writes to stands for a file on a hung file
 * system (the FUSE case itself: tests/integration/test_fault_hung_fs.py).
 *   - a job that returns is the caller's again, with its result;
 *   - a blocked job is abandoned at the limit (-ETIMEDOUT, within a few
 *     milliseconds of it), the next job gets a fresh helper and runs;
 *   - max_stuck blocked helpers: the next job is refused at once
 *     (-EBUSY, not run);
 *   - once the pipes are written to, the abandoned helpers finish, destroy
 *     their jobs exactly once and the stuck gauge returns to 0; new jobs
 *     run again;
 *   - __free with stuck helpers returns at once (they are detached);
 *   - __retire_all ends every idle helper of every object (the process
 *     is back to one thread: what the agent's capability drop needs),
 *     reports the stuck ones, and the next run starts a new helper.
 * spanprof-test: serial (bounds a latency)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/io_deadline.h"

static atomic_int destroyed;

struct pipe_job {
	struct sp_io_job base;
	int fd;		/* -1: return at once */
	int ran;
	char got;
};

static void pj_run(struct sp_io_job *b)
{
	struct pipe_job *j = (struct pipe_job *)b;

	j->ran = 1;
	if (j->fd >= 0 && read(j->fd, &j->got, 1) != 1)
		j->got = '?';
}

static void pj_destroy(struct sp_io_job *b)
{
	atomic_fetch_add(&destroyed, 1);
	free(b);
}

static struct pipe_job *pj_new(int fd)
{
	struct pipe_job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->base = (struct sp_io_job){ .run = pj_run, .destroy = pj_destroy };
	j->fd = fd;
	return j;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_deadline(void **state)
{
	struct sp_io_deadline_config cfg = { .timeout_ms = 50, .max_stuck = 2 };
	struct sp_io_deadline *d = sp_io_deadline__new(&cfg);
	struct sp_io_deadline_stats st;
	struct pipe_job *j;
	int p[2][2];
	double t0, dt;

	(void)state;
	assert_non_null(d);
	atomic_store(&destroyed, 0);

	j = pj_new(-1);
	assert_int_equal(sp_io_deadline__run(d, &j->base), 0);
	assert_int_equal(j->ran, 1);
	pj_destroy(&j->base);

	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe(p[i]), 0);
		j = pj_new(p[i][0]);
		t0 = now_ms();
		assert_int_equal(sp_io_deadline__run(d, &j->base), -ETIMEDOUT);
		dt = now_ms() - t0;
		assert_true(dt >= 49 && dt < 500);
		/* a fresh helper runs the next job */
		if (i == 0) {
			j = pj_new(-1);
			assert_int_equal(sp_io_deadline__run(d, &j->base), 0);
			pj_destroy(&j->base);
		}
	}
	sp_io_deadline__stats(d, &st);
	assert_int_equal(st.stuck, 2);
	assert_int_equal(st.timeouts, 2);
	assert_int_equal(st.runs, 2);

	/* both helpers stuck: refused at once, not run */
	j = pj_new(-1);
	t0 = now_ms();
	assert_int_equal(sp_io_deadline__run(d, &j->base), -EBUSY);
	assert_true(now_ms() - t0 < 20);
	assert_int_equal(j->ran, 0);
	pj_destroy(&j->base);
	sp_io_deadline__stats(d, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(atomic_load(&destroyed), 3);

	/* the file system comes back: the helpers finish and destroy their jobs */
	for (int i = 0; i < 2; i++)
		assert_int_equal(write(p[i][1], "x", 1), 1);
	for (int w = 0; w < 200 && atomic_load(&destroyed) < 5; w++)
		usleep(5000);
	assert_int_equal(atomic_load(&destroyed), 5);
	for (int w = 0; w < 200; w++) {
		sp_io_deadline__stats(d, &st);
		if (!st.stuck)
			break;
		usleep(5000);
	}
	assert_int_equal(st.stuck, 0);
	j = pj_new(-1);
	assert_int_equal(sp_io_deadline__run(d, &j->base), 0);
	pj_destroy(&j->base);

	/* free with a stuck helper returns at once; the helper ends later */
	assert_int_equal(pipe(p[0]) == 0 && pipe(p[1]) == 0, 1);
	j = pj_new(p[0][0]);
	assert_int_equal(sp_io_deadline__run(d, &j->base), -ETIMEDOUT);
	t0 = now_ms();
	sp_io_deadline__free(d);
	assert_true(now_ms() - t0 < 100);
	assert_int_equal(write(p[0][1], "y", 1), 1);
	for (int w = 0; w < 200 && atomic_load(&destroyed) < 7; w++)
		usleep(5000);
	assert_int_equal(atomic_load(&destroyed), 7);
	sp_io_deadline__free(NULL);
}

/* Threads of this process (/proc/self/status "Threads:"). */
static int n_threads(void)
{
	char line[128];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			n = atoi(line + 8);
	fclose(f);
	return n;
}

static void test_retire_all(void **state)
{
	struct sp_io_deadline_config cfg = { .timeout_ms = 50, .max_stuck = 2 };
	struct sp_io_deadline *a, *b;
	struct pipe_job *j;
	int p[2];

	(void)state;
	atomic_store(&destroyed, 0);
	a = sp_io_deadline__new(&cfg);
	b = sp_io_deadline__new(&cfg);
	assert_non_null(a);
	assert_non_null(b);
	/* test_deadline's released helpers end on their own */
	for (int w = 0; w < 200 && n_threads() > 1; w++)
		usleep(5000);
	assert_int_equal(n_threads(), 1);
	for (int i = 0; i < 2; i++) {
		j = pj_new(-1);
		assert_int_equal(sp_io_deadline__run(i ? b : a, &j->base), 0);
		j->base.destroy(&j->base);
	}
	assert_int_equal(n_threads(), 3);	/* one idle helper each */
	assert_int_equal(sp_io_deadline__retire_all(), 0);
	assert_int_equal(n_threads(), 1);
	/* a stuck helper is reported, and stays */
	assert_int_equal(pipe(p), 0);
	j = pj_new(p[0]);
	assert_int_equal(sp_io_deadline__run(a, &j->base), -ETIMEDOUT);
	assert_int_equal(sp_io_deadline__retire_all(), 1);
	assert_int_equal(n_threads(), 2);
	/* the next run gets a new helper */
	j = pj_new(-1);
	assert_int_equal(sp_io_deadline__run(b, &j->base), 0);
	assert_true(j->ran);
	j->base.destroy(&j->base);
	assert_int_equal(write(p[1], "x", 1), 1);
	for (int w = 0; w < 200 && atomic_load(&destroyed) < 4; w++)
		usleep(5000);
	assert_int_equal(atomic_load(&destroyed), 4);
	sp_io_deadline__free(a);
	sp_io_deadline__free(b);
	assert_int_equal(sp_io_deadline__retire_all(), 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_retire_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
