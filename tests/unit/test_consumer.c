/*
 * test_consumer.c - the ring-buffer consumer on records shaped like the BPF
 * program's, against the real process table (this test's own /proc entry)
 * and a real aggregator.
 *
 * Proves: no heap allocation per event in steady state (malloc counted by
 * alloc_count.h); user frames resolve to the test binary's mapping; kernel
 * frames to the kernel mapping; malformed records are counted, not parsed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc_count.h"
#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/consumer.h"
#include "collector/procs/proc_table.h"

struct rec {
	struct sp_event hdr;
	uint64_t frames[2 * SP_MAX_FRAMES];
};

__attribute__((noinline)) static void marker_a(void) { __asm__ volatile(""); }
__attribute__((noinline)) static void marker_b(void) { __asm__ volatile(""); }
__attribute__((noinline)) static void marker_c(void) { __asm__ volatile(""); }

static size_t make_rec(struct rec *r, uint32_t tid, uint64_t ts, int variant)
{
	memset(r, 0, sizeof(*r));
	r->hdr.ts_ns = ts;
	r->hdr.pid = getpid();
	r->hdr.tid = tid;
	r->hdr.type = SP_EV_ONCPU;
	r->hdr.kstack_n = 2;
	r->hdr.ustack_n = 3;
	memcpy(r->hdr.comm, "consumer-test", 14);
	r->frames[0] = 0xffffffff81000000ull + variant;
	r->frames[1] = 0xffffffff81001000ull;
	r->frames[2] = (uint64_t)(uintptr_t)marker_a + 1;
	r->frames[3] = (uint64_t)(uintptr_t)marker_b + 1;
	r->frames[4] = (uint64_t)(uintptr_t)marker_c + 1;
	return SP_EVENT_HDR_SIZE + 5 * 8;
}

struct fixture {
	struct sp_proc_table *procs;
	struct sp_agg *agg;
	struct sp_consumer c;
};

static int setup(void **state)
{
	static struct fixture f;
	struct sp_agg_config acfg = { .byte_budget = 32 << 20, .max_entries = 4096,
				      .keep_timestamps = true };

	f.procs = sp_proc_table__new(NULL);
	f.agg = sp_agg__new(&acfg);
	assert_non_null(f.procs);
	assert_non_null(f.agg);
	sp_consumer__init(&f.c, f.procs, f.agg);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sp_agg__free(f->agg);
	sp_proc_table__free(f->procs);
	return 0;
}

static int check_entry(const struct sp_agg_entry *e, void *ctx)
{
	struct fixture *f = ctx;
	const struct sp_mapping_info *m;

	assert_int_equal(e->key->n_kernel, 2);
	assert_int_equal(e->key->n_user, 3);
	assert_int_equal(e->frames.mappings[0], sp_proc_table__kernel_mapping(f->procs));
	for (int i = 2; i < 5; i++) {
		m = sp_proc_table__mapping(f->procs, e->frames.mappings[i]);
		assert_non_null(m);
		assert_false(m->kernel);
		assert_true(e->frames.addrs[i] >= m->start && e->frames.addrs[i] < m->limit);
		assert_true(m->build_id.len > 0);
	}
	return 0;
}

static void test_steady_state_allocates_nothing(void **state)
{
	struct fixture *f = *state;
	static struct rec r;
	size_t len;

	/* First sight: the process table reads /proc/self/maps (allocates). */
	len = make_rec(&r, getpid(), 1, 0);
	sp_consumer__handle(&f->c, &r, len);
	assert_int_equal(f->c.stats.aggregated, 1);
	assert_int_equal(f->c.stats.frames_unresolved, 0);

	if (!HAVE_ALLOC_COUNT) {
		print_message("ASan owns malloc: allocation counting skipped\n");
		skip();
	}
	alloc_calls = 0;
	alloc_counting = 1;
	for (uint64_t i = 0; i < 100000; i++) {
		len = make_rec(&r, getpid() + (i % 8), 2 + i, i % 50);
		sp_consumer__handle(&f->c, &r, len);
	}
	alloc_counting = 0;
	assert_int_equal(alloc_calls, 0);
	assert_int_equal(f->c.stats.aggregated, 100001);
	assert_int_equal(f->c.stats.frames_unresolved, 0);
	sp_agg__foreach(f->agg, check_entry, f);
}

static void test_malformed_counted(void **state)
{
	struct fixture *f = *state;
	static struct rec r;
	uint64_t before = f->c.stats.malformed, agg = f->c.stats.aggregated;
	size_t len = make_rec(&r, 1, 1, 0);

	sp_consumer__handle(&f->c, &r, SP_EVENT_HDR_SIZE - 1);	/* short header */
	sp_consumer__handle(&f->c, &r, len - 8);		/* frames cut */
	r.hdr.ustack_n = SP_MAX_FRAMES + 1;
	sp_consumer__handle(&f->c, &r, sizeof(r));		/* too many frames */
	make_rec(&r, 1, 1, 0);
	r.hdr.type = 99;
	sp_consumer__handle(&f->c, &r, len);			/* unknown type */
	assert_int_equal(f->c.stats.malformed - before, 4);
	assert_int_equal(f->c.stats.aggregated, agg);
}

/* Attributes after the frames: canonicalized into the entry's key,
 * counted, and a record whose size cannot hold them is malformed. */
static int attrs_entry_cb(const struct sp_agg_entry *e, void *ctx)
{
	static const uint8_t want[] = { 1, 1, 'y', 0, 2, 'h', 'i' };
	int *found = ctx;

	if (e->key->tid != 4242)
		return 0;
	assert_int_equal(e->key->has_ctx, 1);
	assert_int_equal(e->key->attrs_len, sizeof(want));
	assert_memory_equal(e->frames.attrs, want, sizeof(want));
	(*found)++;
	return 0;
}

static void test_attrs_carried(void **state)
{
	/* key 1 twice (last wins), then a partial entry */
	static const uint8_t raw[] = { 1, 1, 'x', 0, 2, 'h', 'i', 1, 1, 'y', 3, 9 };
	struct fixture *f = *state;
	static struct rec r;
	uint64_t mal = f->c.stats.malformed, as = f->c.stats.attrs_samples;
	uint64_t ad = f->c.stats.attrs_dropped;
	size_t len = make_rec(&r, 4242, 7, 0);
	int found = 0;

	r.hdr.ctx_status = SP_CTX_OK;
	r.hdr.ctx.trace_id[0] = 0xab;
	r.hdr.ctx.span_id[0] = 0xcd;
	r.hdr.ctx.attrs_len = sizeof(raw);
	memcpy(&r.frames[5], raw, sizeof(raw));
	sp_consumer__handle(&f->c, &r, len + sizeof(raw) - 1);	/* attrs cut */
	assert_int_equal(f->c.stats.malformed, mal + 1);
	r.hdr.ctx.attrs_len = SP_CTX_ATTRS_MAX + 1;
	sp_consumer__handle(&f->c, &r, sizeof(r));		/* above the bound */
	assert_int_equal(f->c.stats.malformed, mal + 2);
	r.hdr.ctx.attrs_len = sizeof(raw);
	sp_consumer__handle(&f->c, &r, len + sizeof(raw));
	sp_consumer__handle(&f->c, &r, len + sizeof(raw));
	assert_int_equal(f->c.stats.malformed, mal + 2);
	assert_int_equal(f->c.stats.attrs_samples, as + 2);
	assert_int_equal(f->c.stats.attrs_dropped, ad + 2);	/* the partial entry, twice */
	sp_agg__foreach(f->agg, attrs_entry_cb, &found);
	assert_int_equal(found, 1);					/* both merged */
}

static void test_exec_exit_events(void **state)
{
	struct fixture *f = *state;
	static struct rec r;

	make_rec(&r, getpid(), 5, 0);
	r.hdr.type = SP_EV_EXEC;
	r.hdr.kstack_n = r.hdr.ustack_n = 0;
	sp_consumer__handle(&f->c, &r, SP_EVENT_HDR_SIZE);
	assert_int_equal(f->c.stats.received_exec, 1);
	assert_non_null(sp_proc_table__proc(f->procs, getpid()));
	r.hdr.type = SP_EV_EXIT;
	sp_consumer__handle(&f->c, &r, SP_EVENT_HDR_SIZE);
	assert_int_equal(f->c.stats.received_exit, 1);
	assert_true(sp_proc_table__proc(f->procs, getpid())->gone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_steady_state_allocates_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attrs_carried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_exit_events, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
