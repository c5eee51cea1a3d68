// SPDX-License-Identifier: MIT
/*
 * test_ctx_discovery.c - the trace-context discovery table forgets pids
 * (collector/ctx_discovery.h): after __forget a pid's slot is reusable, the
 * pids still held stay findable (deletion keeps probe chains intact), and
 * many more pids than SP_CTX_DISCOVERY_MAX pass through over time as long
 * as the live set fits.  A fake proc root with no processes: examining a
 * pid takes a slot and finds nothing published (no sampler needed).
 * Also: an exited process keeps its slot (names for buffered samples) until
 * forgotten, a pid reused before that starts afresh in the same slot, and
 * publications are re-read at most once per 100 ms, the rest coalesced
 * into one deferred re-read (tick) and counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "collector/tracectx/ctx_discovery.h"
#include "collector/pipeline/summary.h"

#define ROUND 12000	/* pids per round: the table 73% full */
/* 3 rounds pass 36000 pids (2.2x SP_CTX_DISCOVERY_MAX) through: a slot
 * that __forget did not make reusable (a tombstone never taken again)
 * fills the table in round 2.  6 rounds took 11-23 s of CI (a thread
 * hand-off per scan, ~16 futex calls each) for no case 3 does not reach. */
#define ROUNDS 3


/* The i-th pid of a round: a bijection on 22 bits, so pids are distinct
 * but scattered (consecutive pids hash without any collision, which would
 * hide a deletion that breaks probe chains). */
static uint32_t pid_of(uint32_t round, uint32_t i)
{
	uint32_t x = (round * ROUND + i) & 0x3fffff;

	x = (x * 0x9e3779b1u) & 0x3fffff;
	x ^= x >> 11;
	x = (x * 0x85ebca6bu) & 0x3fffff;
	return x + 1;
}

static void scan_round(struct sp_ctx_discovery *d, uint32_t r, uint32_t step)
{
	for (uint32_t i = 0; i < ROUND; i += step) {
		uint32_t pid = pid_of(r, i);

		sp_ctx_discovery__scan(d, false, &pid, 1);
	}
}

static void test_forget_bounded(void **state)
{
	struct sp_ctx_discovery *d;

	(void)state;
	d = sp_ctx_discovery__new(NULL, tu_dir);
	assert_non_null(d);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		scan_round(d, r, 1);
		assert_int_equal(sp_ctx_discovery__tracked(d), ROUND);
		/* Forget every other pid: the rest must still be found (a
		 * second look takes no new slot). */
		for (uint32_t i = 1; i < ROUND; i += 2)
			sp_ctx_discovery__forget(d, pid_of(r, i));
		assert_int_equal(sp_ctx_discovery__tracked(d), ROUND / 2);
		scan_round(d, r, 2);
		assert_int_equal(sp_ctx_discovery__tracked(d), ROUND / 2);
		sp_ctx_discovery__forget(d, pid_of(r, 1));	/* already gone: no-op */
		for (uint32_t i = 0; i < ROUND; i += 2)
			sp_ctx_discovery__forget(d, pid_of(r, i));
		assert_int_equal(sp_ctx_discovery__tracked(d), 0);
	}
	sp_ctx_discovery__forget(NULL, 1);
	sp_ctx_discovery__free(d);
}

static void test_exit_keeps_slot_until_forgotten(void **state)
{
	struct sp_ctx_discovery *d = sp_ctx_discovery__new(NULL, "/nonexistent-proc-root");

	(void)state;
	assert_non_null(d);
	sp_ctx_discovery__on_proc(4242, SP_PROC_FIRST_SIGHT, d);
	assert_int_equal(sp_ctx_discovery__tracked(d), 1);
	sp_ctx_discovery__on_proc(4242, SP_PROC_EXIT, d);
	sp_ctx_discovery__on_proc(4242, SP_PROC_EXIT, d);	/* twice: no change */
	sp_ctx_discovery__on_proc(7, SP_PROC_EXIT, d);		/* never seen: nothing */
	assert_int_equal(sp_ctx_discovery__tracked(d), 1);
	/* Reused before it was forgotten: the same slot, examined afresh. */
	sp_ctx_discovery__on_proc(4242, SP_PROC_FIRST_SIGHT, d);
	assert_int_equal(sp_ctx_discovery__tracked(d), 1);
	sp_ctx_discovery__forget(d, 4242);
	assert_int_equal(sp_ctx_discovery__tracked(d), 0);
	sp_ctx_discovery__free(d);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_publish_rate_limited(void **state)
{
	struct sp_ctx_discovery *d = sp_ctx_discovery__new(NULL, "/nonexistent-proc-root");
	struct sp_summary s = { 0 };

	(void)state;
	assert_non_null(d);
	for (int i = 0; i < 1000; i++)
		sp_ctx_discovery__on_proc(99, SP_PROC_PUBLISH, d);
	sp_ctx_discovery__on_proc(100, SP_PROC_PUBLISH, d);	/* another process: due */
	sp_ctx_discovery__tick(d);	/* not due yet: nothing re-read */
	sp_ctx_discovery__fill_summary(d, &s);
	assert_int_equal(s.ctx_publish_rereads, 2);
	assert_int_equal(s.ctx_publish_coalesced, 999);
	sleep_ms(130);
	sp_ctx_discovery__tick(d);	/* the coalesced 999: one re-read */
	sp_ctx_discovery__tick(d);	/* and only one */
	sp_ctx_discovery__fill_summary(d, &s);
	assert_int_equal(s.ctx_publish_rereads, 2);
	assert_int_equal(s.ctx_publish_coalesced, 999);
	assert_int_equal(s.ctx_publish_deferred, 1);
	/* An immediate re-read covers what was coalesced before it: no
	 * deferred one after it. */
	for (int i = 0; i < 10; i++)
		sp_ctx_discovery__on_proc(100, SP_PROC_PUBLISH, d);
	sleep_ms(130);
	sp_ctx_discovery__on_proc(100, SP_PROC_PUBLISH, d);
	sleep_ms(130);
	sp_ctx_discovery__tick(d);
	sp_ctx_discovery__fill_summary(d, &s);
	assert_int_equal(s.ctx_publish_rereads, 4);	/* the first of the 10, the last */
	assert_int_equal(s.ctx_publish_coalesced, 1008);
	assert_int_equal(s.ctx_publish_deferred, 1);
	/* A publication after an exit and reuse of the pid is due at once. */
	sp_ctx_discovery__on_proc(99, SP_PROC_EXIT, d);
	sp_ctx_discovery__on_proc(99, SP_PROC_EXEC, d);
	sp_ctx_discovery__on_proc(99, SP_PROC_PUBLISH, d);
	sp_ctx_discovery__fill_summary(d, &s);
	assert_int_equal(s.ctx_publish_rereads, 5);
	assert_int_equal(s.ctx_publish_deferred, 1);
	sp_ctx_discovery__tick(NULL);
	sp_ctx_discovery__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_forget_bounded, tu_setup_dir, tu_teardown_dir),
		cmocka_unit_test(test_exit_keeps_slot_until_forgotten),
		cmocka_unit_test(test_publish_rate_limited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
