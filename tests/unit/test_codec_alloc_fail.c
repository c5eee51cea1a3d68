/* SPDX-License-Identifier: MIT */
/*
 * test_codec_alloc_fail.c - both encoders under memory exhaustion: the
 * N-th allocation of an encode fails, for every N until the encode needs
 * no more; each failed encode returns -ENOMEM, hands out no buffer and
 * frees every block it took (their one cleanup path: the arena freed once,
 * then the string and attribute tables).  The encode that succeeds gives
 * the same bytes as without failures.  Malloc is counted by alloc_count.h,
 * so under ASan (unit-san) the cases are skipped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_count.h"
#include "test_profile_fixture.h"

typedef int (*encode_fn)(const struct sp_profile *, uint8_t **, size_t *);

static void exhaust(encode_fn encode)
{
	struct sp_profile *p = fx_build();
	uint8_t *want = NULL, *got;
	size_t want_len, len;
	unsigned long n, failures = 0;
	int r;

	if (!HAVE_ALLOC_COUNT) {
		sp_profile__free(p);
		skip();
	}
	assert_int_equal(encode(p, &want, &want_len), 0);
	for (n = 1;; n++) {
		long live;

		got = (uint8_t *)1;
		len = 1;
		alloc_live = 0;
		alloc_calls = 0;
		alloc_fail_at = n;
		alloc_counting = 1;
		r = encode(p, &got, &len);
		alloc_counting = 0;
		live = alloc_live;
		if (!r)
			break;
		failures++;
		assert_int_equal(r, -ENOMEM);
		assert_null(got);
		assert_int_equal(len, 0);
		if (live)
			fail_msg("allocation %lu failed: %ld block(s) not freed", n, live);
	}
	/* the successful encode owns exactly its output buffer */
	assert_int_equal(alloc_live, 1);
	assert_int_equal(len, want_len);
	assert_memory_equal(got, want, len);
	print_message("%lu allocation failures, each cleaned up\n", failures);
	assert_true(failures >= 5);
	free(got);
	free(want);
	sp_profile__free(p);
}

static void test_otlp_encode_exhausted(void **state)
{
	(void)state;
	exhaust(sp_otlp__encode);
}

static void test_pprof_encode_exhausted(void **state)
{
	(void)state;
	exhaust(sp_pprof__encode);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp_encode_exhausted),
		cmocka_unit_test(test_pprof_encode_exhausted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
