/*
 * test_fileio.c - bounded whole-input reads (src/profile/fileio.c): files
 * whose size is not known in advance (/proc, pipes), the byte bound, the
 * trailing NUL, errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/fileio.h"

static void test_proc_file(void **state)
{
	uint8_t *b;
	size_t n;

	(void)state;
	/* st_size is 0 for /proc files: the reader must not trust it. */
	assert_int_equal(sp_read_path("/proc/self/maps", 64 << 20, &b, &n), 0);
	assert_true(n > 0);
	assert_int_equal(b[n], 0);
	assert_non_null(strstr((char *)b, "test_fileio"));
	free(b);
}

static void test_pipe_and_bound(void **state)
{
	static uint8_t chunk[100000];
	uint8_t *b;
	size_t n;
	int fds[2];

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], chunk, 50000), 50000);
	close(fds[1]);
	assert_int_equal(sp_read_fd(fds[0], 50000, &b, &n), 0);	/* exactly max */
	assert_int_equal(n, 50000);
	assert_int_equal(b[n], 0);
	free(b);
	close(fds[0]);

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], chunk, 50001), 50001);
	close(fds[1]);
	assert_int_equal(sp_read_fd(fds[0], 50000, &b, &n), -E2BIG);	/* one over */
	assert_null(b);
	assert_int_equal(n, 0);
	close(fds[0]);
}

static void test_errors(void **state)
{
	uint8_t *b = (uint8_t *)1;
	size_t n = 1;

	(void)state;
	assert_int_equal(sp_read_path("/nonexistent/file", 1024, &b, &n), -ENOENT);
	assert_null(b);
	assert_int_equal(n, 0);
	assert_int_equal(sp_read_path("/proc/self", 1024, &b, &n), -EISDIR);
	assert_null(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_file),
		cmocka_unit_test(test_pipe_and_bound),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
