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
 *   - a job keyed by pid is refused while that pid is stuck;
 *   - __maps_with: the extras run on the helper after the maps read, in
 *     the same hand-off (one run counted), and are the caller's again;
 *     not run when the pid is stuck; abandoned with a stuck maps read,
 *     the helper destroys them once the read returns; an extra that
 *     hangs after a good maps read: the maps are parsed all the same,
 *     the extra abandoned, the pid skipped until it returns;
 *   - __set_pin_exec: this process's own maps (real /proc): every
 *     executable file mapping comes pinned (an O_PATH descriptor on the
 *     very inode the line names), others are not (-ENODATA), in the one
 *     hand-off.
 * spanprof-test: serial (bounds a latency)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
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

/* Removes what put() made for pids 10 and 20, and root. */
static void unput(const char *root)
{
	char p[PATH_MAX];

	for (unsigned pid = 10; pid <= 20; pid += 10) {
		snprintf(p, sizeof(p), "%s/%u/maps", root, pid);
		unlink(p);
		snprintf(p, sizeof(p), "%s/%u", root, pid);
		rmdir(p);
	}
	rmdir(root);
}

/* The fake proc root both cases read, made in root (a mkdtemp template):
 * pid 10 with MAPS, pid 20 with a FIFO for maps; and a reader on it with a
 * 60 ms deadline and at most 2 stuck reads.  unput(root) removes the
 * files; the caller frees the reader. */
static struct sp_proc_read *fake_proc_new(char *root)
{
	const struct sp_io_deadline_config cfg = { .timeout_ms = 60, .max_stuck = 2 };
	struct sp_proc_read *r;

	assert_non_null(mkdtemp(root));
	put(root, 10, MAPS, 0);
	put(root, 20, NULL, 1);
	r = sp_proc_read__new(&cfg);
	assert_non_null(r);
	return r;
}

/* A writer opens pid 20's FIFO and closes it: a read stuck opening it
 * returns. */
static void fifo_writer_comes(const char *root)
{
	char p[PATH_MAX];
	int wfd;

	snprintf(p, sizeof(p), "%s/20/maps", root);
	wfd = open(p, O_WRONLY);
	assert_true(wfd >= 0);
	close(wfd);
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
	struct sp_io_job job = { .run = noop_run, .destroy = noop_destroy };
	char root[] = "/tmp/sp-proc-read-XXXXXX";
	struct sp_proc_read_stats st;
	struct sp_maps_read_stats ms;
	struct sp_proc_read *r;
	int n = 0;
	double t0, dt;

	(void)state;
	r = fake_proc_new(root);

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
	fifo_writer_comes(root);
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
	unput(root);
}

struct extra {
	struct sp_io_job base;		/* first */
	pthread_t ran_on;
	int runs;
	int block_fd;			/* > 0: read it (blocks until written) */
	atomic_int *destroyed;		/* the test's */
};

static void extra_run(struct sp_io_job *j)
{
	struct extra *x = (struct extra *)j;
	char c;

	x->ran_on = pthread_self();
	x->runs++;
	if (x->block_fd > 0 && read(x->block_fd, &c, 1) != 1)
		x->runs = -1;
}

static void extra_destroy(struct sp_io_job *j)
{
	struct extra *x = (struct extra *)j;

	atomic_fetch_add(x->destroyed, 1);
	free(x);
}

static struct extra *extra_new(atomic_int *destroyed)
{
	struct extra *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->base = (struct sp_io_job){ .run = extra_run, .destroy = extra_destroy };
	x->destroyed = destroyed;
	return x;
}

static void test_maps_with(void **state)
{
	char root[] = "/tmp/sp-proc-read-XXXXXX";
	atomic_int destroyed = 0;
	struct sp_io_job *jobs[2];
	struct sp_proc_read_stats st;
	struct extra *a, *b;
	struct sp_proc_read *r;
	int xrc = 1;
	int n = 0;

	(void)state;
	r = fake_proc_new(root);
	a = extra_new(&destroyed);
	b = extra_new(&destroyed);
	jobs[0] = &a->base;
	jobs[1] = &b->base;
	assert_int_equal(sp_proc_read__maps_with(r, root, 10, jobs, 2, &xrc, count_line, &n, NULL),
			 0);
	assert_int_equal(xrc, 0);
	assert_int_equal(n, 3);
	assert_int_equal(a->runs, 1);
	assert_int_equal(b->runs, 1);
	assert_false(pthread_equal(a->ran_on, pthread_self()));
	assert_true(pthread_equal(a->ran_on, b->ran_on));
	sp_proc_read__stats(r, &st);
	assert_int_equal(st.runs, 1);	/* one hand-off for all three */
	assert_int_equal(atomic_load(&destroyed), 0);	/* still ours */
	/* a pid that is gone: the extras still run (they report it) */
	assert_int_equal(sp_proc_read__maps_with(r, root, 99, jobs, 2, &xrc, count_line, &n, NULL),
			 -ENOENT);
	assert_int_equal(xrc, 0);
	assert_int_equal(a->runs, 2);

	/* stuck: abandoned with the read, freed by the helper after it */
	assert_int_equal(sp_proc_read__maps_with(r, root, 20, jobs, 2, &xrc, count_line, &n, NULL),
			 -ETIMEDOUT);
	assert_int_equal(xrc, -ETIMEDOUT);
	a = extra_new(&destroyed);
	jobs[0] = &a->base;
	assert_int_equal(sp_proc_read__maps_with(r, root, 20, jobs, 1, &xrc, count_line, &n, NULL),
			 -EBUSY);
	assert_int_equal(xrc, -EBUSY);
	assert_int_equal(a->runs, 0);
	fifo_writer_comes(root);
	for (int w = 0; w < 400 && atomic_load(&destroyed) < 2; w++)
		usleep(5000);
	assert_int_equal(atomic_load(&destroyed), 2);
	extra_destroy(&a->base);

	/* the maps read is done and an extra hangs: the maps still parsed,
	 * the extra abandoned (freed by the helper once it returns) */
	{
		int p2[2];

		assert_int_equal(pipe(p2), 0);
		a = extra_new(&destroyed);
		a->block_fd = p2[0];
		jobs[0] = &a->base;
		n = 0;
		assert_int_equal(sp_proc_read__maps_with(r, root, 10, jobs, 1, &xrc, count_line,
							 &n, NULL), 0);
		assert_int_equal(xrc, -ETIMEDOUT);
		assert_int_equal(n, 3);
		/* pid 10 is stuck now: skipped until the extra returns */
		assert_int_equal(sp_proc_read__maps(r, root, 10, count_line, &n, NULL), -EBUSY);
		assert_int_equal(write(p2[1], "x", 1), 1);
		for (int w = 0; w < 400 && atomic_load(&destroyed) < 4; w++)
			usleep(5000);
		assert_int_equal(atomic_load(&destroyed), 4);
		close(p2[0]);
		close(p2[1]);
	}
	sp_proc_read__free(r);
	unput(root);
}

struct pin_seen {
	struct sp_proc_read *r;
	int pinned, unpinned, bad;
};

static int take_line(const struct sp_map_entry *e, void *ctx)
{
	struct pin_seen *ps = ctx;
	struct stat st;
	int fd = sp_proc_read__take_pin(ps->r, e, &st);
	bool file = (e->perms & SP_MAP_X) && e->path_len && e->path[0] != '[';

	if (fd >= 0) {
		ps->pinned++;
		ps->bad += !file || st.st_ino != e->inode || !S_ISREG(st.st_mode);
		/* taken once */
		ps->bad += sp_proc_read__take_pin(ps->r, e, &st) != -ENODATA;
		close(fd);
	} else {
		ps->unpinned++;
		ps->bad += file || fd != -ENODATA;
	}
	return 0;
}

static void test_pin_exec(void **state)
{
	struct sp_proc_read_stats st;
	struct pin_seen ps = { 0 };

	(void)state;
	ps.r = sp_proc_read__new(NULL);
	assert_non_null(ps.r);
	sp_proc_read__set_pin_exec(ps.r, true);
	assert_int_equal(sp_proc_read__maps(ps.r, "/proc", (uint32_t)getpid(), take_line, &ps,
					    NULL), 0);
	assert_int_equal(ps.bad, 0);
	assert_true(ps.pinned >= 2);	/* this test and libc at least */
	assert_true(ps.unpinned >= 1);
	sp_proc_read__stats(ps.r, &st);
	assert_int_equal(st.runs, 1);
	sp_proc_read__free(ps.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pin_exec),
		cmocka_unit_test(test_proc_read),
		cmocka_unit_test(test_maps_with),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
