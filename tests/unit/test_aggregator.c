// SPDX-License-Identifier: MIT
/*
 * test_aggregator.c - the bounded aggregator (collector/aggregator.h).
 *
 * What is checked: equal keys merge (count, weight, per-entry timestamps in
 * insertion order); every key field and the frames/mapping ids separate
 * keys; key normalization (comm after NUL, trace context when has_ctx = 0,
 * NULL vs zero mapping ids); floods far past the entry cap, the byte budget
 * and the event log keep entries/bytes at their caps, count every drop under
 * exactly one reason (checked call by call) and keep RSS flat; an existing
 * entry absorbs samples when the table is full; reset empties and allows
 * reuse; keep_timestamps = false; config defaults (NULL, 0 = default) and
 * rejection (EINVAL) of budgets too small for max_entries.
 *
 * sp_agg__add/foreach/reset must not allocate: this file defines malloc,
 * calloc, realloc and free (forwarding to glibc's __libc_* versions) and
 * counts calls inside a window.  Under AddressSanitizer the allocator
 * belongs to ASan, so the interposer is compiled out and that test skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "collector/pipeline/aggregator.h"

#include "alloc_count.h"

/* ------------------------------------------------------------ helpers */
#define MAXF 256
#define SP_ATTRS_TEST_MAX 128

struct stack {
	struct sp_agg_key key;
	uint64_t addrs[MAXF];
	uint32_t maps[MAXF];
	struct sp_agg_frames fr;
};

/* A deterministic stack: id selects the frames; nk kernel + nu user. */
static void make_stack(struct stack *s, uint64_t id, unsigned int nk,
		       unsigned int nu)
{
	memset(&s->key, 0, sizeof(s->key));
	s->key.pid = 100;
	s->key.tid = 101;
	s->key.kind = 0;
	s->key.n_kernel = (uint16_t)nk;
	s->key.n_user = (uint16_t)nu;
	strcpy(s->key.comm, "worker");
	for (unsigned int j = 0; j < nk + nu; j++) {
		s->addrs[j] = 0x400000ull + (id << 12) + j * 8;
		s->maps[j] = 1 + j % 3;
	}
	s->fr.addrs = s->addrs;
	s->fr.mappings = s->maps;
}

static struct sp_agg *new_agg(size_t budget, uint32_t max_entries, bool ts)
{
	struct sp_agg_config c = {
		.byte_budget = budget,
		.max_entries = max_entries,
		.keep_timestamps = ts,
	};
	struct sp_agg *a = sp_agg__new(&c);

	assert_non_null(a);
	return a;
}

static uint64_t dropped(const struct sp_agg_stats *st)
{
	return st->dropped_entries_full + st->dropped_bytes_full;
}

static void check_invariants(const struct sp_agg *a, size_t budget)
{
	const struct sp_agg_stats *st = sp_agg__stats(a);

	assert_int_equal(st->added, st->accepted + dropped(st));
	assert_true(st->bytes_used <= st->bytes_reserved);
	assert_true(st->bytes_reserved <= budget);
}

static long rss_bytes(void)
{
	char buf[128];
	long size = 0, res = 0;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY);

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = 0;
	assert_int_equal(sscanf(buf, "%ld %ld", &size, &res), 2);
	return res * sysconf(_SC_PAGESIZE);
}

/* foreach collector: up to 64 entries, copied out. */
struct seen {
	unsigned int n;
	struct {
		struct sp_agg_key key;
		uint64_t count, weight;
		uint64_t ts[16];
		uint64_t addr0;
		uint32_t map0;
		bool ts_null;
	} e[64];
};

static int collect_cb(const struct sp_agg_entry *e, void *ctx)
{
	struct seen *s = ctx;
	unsigned int i = s->n++;

	assert_true(i < 64);
	s->e[i].key = *e->key;
	s->e[i].count = e->count;
	s->e[i].weight = e->weight_ns;
	s->e[i].ts_null = !e->timestamps;
	if (e->timestamps)
		for (uint64_t k = 0; k < e->count && k < 16; k++)
			s->e[i].ts[k] = e->timestamps[k];
	if (e->key->n_kernel + e->key->n_user) {
		s->e[i].addr0 = e->frames.addrs[0];
		s->e[i].map0 = e->frames.mappings[0];
	}
	return 0;
}

static int find_pid(const struct seen *s, uint32_t pid)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (s->e[i].key.pid == pid)
			return (int)i;
	fail_msg("pid %u not seen", pid);
	return -1;
}

/* ------------------------------------------------------------ tests */
static void test_merge_equal_keys(void **state)
{
	static struct stack a, b, c;
	static struct seen s;
	struct sp_agg *g = new_agg(1 << 20, 256, true);
	int ia, ib, ic;

	(void)state;
	make_stack(&a, 1, 3, 5);
	make_stack(&b, 1, 3, 5);
	make_stack(&c, 2, 0, 4);
	b.key.pid = 200;
	c.key.pid = 300;

	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 10, 1000), 0);
	assert_int_equal(sp_agg__add(g, &b.key, &b.fr, 20, 0), 0);
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 30, 500), 0);
	assert_int_equal(sp_agg__add(g, &c.key, &c.fr, 40, 7), 0);
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 50, 1), 0);
	assert_int_equal(sp_agg__add(g, &b.key, &b.fr, 60, 2), 0);
	assert_int_equal(sp_agg__stats(g)->entries, 3);
	assert_int_equal(sp_agg__stats(g)->accepted, 6);

	/* twice: foreach regroups from scratch */
	for (int round = 0; round < 2; round++) {
		memset(&s, 0, sizeof(s));
		assert_int_equal(sp_agg__foreach(g, collect_cb, &s), 0);
		assert_int_equal(s.n, 3);
		ia = find_pid(&s, 100);
		ib = find_pid(&s, 200);
		ic = find_pid(&s, 300);
		assert_int_equal(s.e[ia].count, 3);
		assert_int_equal(s.e[ia].weight, 1501);
		assert_int_equal(s.e[ia].ts[0], 10);
		assert_int_equal(s.e[ia].ts[1], 30);
		assert_int_equal(s.e[ia].ts[2], 50);
		assert_int_equal(s.e[ib].count, 2);
		assert_int_equal(s.e[ib].weight, 2);
		assert_int_equal(s.e[ib].ts[0], 20);
		assert_int_equal(s.e[ib].ts[1], 60);
		assert_int_equal(s.e[ic].count, 1);
		assert_int_equal(s.e[ic].weight, 7);
		assert_int_equal(s.e[ic].ts[0], 40);
		assert_int_equal(s.e[ic].addr0, c.addrs[0]);
		assert_int_equal(s.e[ic].map0, c.maps[0]);
		assert_int_equal(s.e[ia].key.n_kernel, 3);
		assert_int_equal(s.e[ia].key.n_user, 5);
		assert_string_equal(s.e[ia].key.comm, "worker");
	}
	check_invariants(g, 1 << 20);
	sp_agg__free(g);
}

static int frames_check_cb(const struct sp_agg_entry *e, void *ctx)
{
	const struct stack *want = ctx;
	unsigned int n = e->key->n_kernel + e->key->n_user;

	assert_int_equal(n, want->key.n_kernel + want->key.n_user);
	assert_memory_equal(e->frames.addrs, want->addrs, n * sizeof(uint64_t));
	assert_memory_equal(e->frames.mappings, want->maps, n * sizeof(uint32_t));
	return 0;
}

static void test_frames_round_trip(void **state)
{
	static struct stack a;
	struct sp_agg *g = new_agg(1 << 20, 16, true);

	(void)state;
	make_stack(&a, 9, 40, 87);
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 1, 0), 0);
	assert_int_equal(sp_agg__foreach(g, frames_check_cb, &a), 0);
	sp_agg__free(g);
}

/* Attributes are part of an entry's identity, come back byte for byte
 * after the frames, and are ignored without a trace context. */
struct attrs_seen {
	unsigned int n;
	uint8_t len[4];
	uint8_t bytes[4][SP_ATTRS_TEST_MAX];
	uint64_t count[4];
};

static int attrs_cb(const struct sp_agg_entry *e, void *ctx)
{
	struct attrs_seen *s = ctx;
	unsigned int i = s->n++;

	assert_true(i < 4);
	s->len[i] = e->key->attrs_len;
	s->count[i] = e->count;
	if (e->key->attrs_len)
		memcpy(s->bytes[i], e->frames.attrs, e->key->attrs_len);
	/* frames stay intact next to the attrs */
	if (e->key->n_kernel + e->key->n_user)
		assert_int_equal(e->frames.addrs[0], 0x400000ull + (7ull << 12));
	return 0;
}

static void test_attrs_in_identity(void **state)
{
	static const uint8_t r1[] = { 0, 4, '/', 'a', 'p', 'i', 1, 1, '3' };
	static const uint8_t r2[] = { 0, 4, '/', 'a', 'p', 'i', 1, 1, '4' };
	static struct stack a;
	static struct attrs_seen s;
	struct sp_agg *g = new_agg(1 << 20, 16, false);	/* bytes: entries only */
	size_t used;

	(void)state;
	make_stack(&a, 7, 1, 3);
	a.key.has_ctx = 1;
	a.key.trace_id[0] = 1;
	a.key.attrs_len = sizeof(r1);
	a.fr.attrs = NULL;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 1, 0), -EINVAL);	/* bytes missing */
	a.fr.attrs = r1;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 1, 0), 0);
	used = sp_agg__stats(g)->bytes_used;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 2, 0), 0);	/* merges */
	assert_int_equal(sp_agg__stats(g)->bytes_used, used);	/* no new storage */
	a.fr.attrs = r2;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 3, 0), 0);	/* one byte differs */
	a.key.attrs_len = 0;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 4, 0), 0);	/* no attrs */
	/* Without ids, attrs still count (pprof labels of a goroutine that
	 * serves no span) and must be there. */
	a.key.has_ctx = 0;
	a.key.attrs_len = sizeof(r1);
	a.fr.attrs = NULL;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 5, 0), -EINVAL);
	a.fr.attrs = r1;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 5, 0), 0);
	assert_int_equal(sp_agg__stats(g)->entries, 4);

	assert_int_equal(sp_agg__foreach(g, attrs_cb, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.len[0], sizeof(r1));
	assert_memory_equal(s.bytes[0], r1, sizeof(r1));
	assert_int_equal(s.count[0], 2);
	assert_int_equal(s.len[1], sizeof(r2));
	assert_memory_equal(s.bytes[1], r2, sizeof(r2));
	assert_int_equal(s.len[2], 0);
	assert_int_equal(s.len[3], sizeof(r1));	/* apart from the one with ids */
	assert_memory_equal(s.bytes[3], r1, sizeof(r1));
	assert_int_equal(s.count[3], 1);
	check_invariants(g, 1 << 20);
	sp_agg__free(g);
}

static void test_distinct_every_field(void **state)
{
	enum { NV = 16 };
	static struct stack v[NV];
	static struct seen s;
	struct sp_agg *g = new_agg(1 << 20, 256, true);
	int i;

	(void)state;
	for (i = 0; i < NV; i++) {
		make_stack(&v[i], 1, 2, 4);
		v[i].key.has_ctx = 1;
		memset(v[i].key.trace_id, 0xab, 16);
		memset(v[i].key.span_id, 0xcd, 8);
		v[i].key.trace_flags = 1;
	}
	i = 1;
	v[i++].key.pid = 7;
	v[i++].key.tid = 7;
	v[i++].key.comm[0] = 'W';
	v[i++].key.kind = 1;
	v[i++].key.reason = 2;
	v[i++].key.trace_id[15] ^= 1;
	v[i++].key.span_id[0] ^= 1;
	v[i++].key.trace_flags = 0;
	v[i++].key.has_ctx = 0;
	v[i++].addrs[5] ^= 8;			/* last user frame */
	v[i++].addrs[0] ^= 8;			/* kernel leaf */
	v[i++].maps[3] = 99;			/* one mapping id */
	v[i].key.n_kernel = 3;			/* same frames, other split */
	v[i++].key.n_user = 3;
	v[i++].key.n_user = 3;			/* shorter stack (prefix) */
	strcpy(v[i++].key.comm, "worker2");	/* comm sharing a prefix */
	assert_int_equal(i, NV);

	for (int round = 0; round < 2; round++)
		for (i = 0; i < NV; i++)
			assert_int_equal(sp_agg__add(g, &v[i].key, &v[i].fr,
						     (uint64_t)round, 1), 0);
	assert_int_equal(sp_agg__stats(g)->entries, NV);
	memset(&s, 0, sizeof(s));
	assert_int_equal(sp_agg__foreach(g, collect_cb, &s), 0);
	assert_int_equal(s.n, NV);
	for (i = 0; i < NV; i++) {
		assert_int_equal(s.e[i].count, 2);
		assert_int_equal(s.e[i].ts[0], 0);
		assert_int_equal(s.e[i].ts[1], 1);
	}
	check_invariants(g, 1 << 20);
	sp_agg__free(g);
}

static void test_normalization(void **state)
{
	static struct stack a, b;
	struct sp_agg_frames nomaps;
	uint32_t zeros[8] = { 0 };
	struct sp_agg *g = new_agg(1 << 20, 64, true);
	const struct sp_agg_stats *st = sp_agg__stats(g);

	(void)state;
	/* garbage after the comm NUL is ignored */
	make_stack(&a, 1, 1, 1);
	make_stack(&b, 1, 1, 1);
	memset(b.key.comm, 'x', sizeof(b.key.comm));
	strcpy(b.key.comm, "worker");
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 1, 0), 0);
	assert_int_equal(sp_agg__add(g, &b.key, &b.fr, 2, 0), 0);
	assert_int_equal(st->entries, 1);

	/* without context, trace id / span id / flags are ignored */
	memset(b.key.comm + 7, 0, 9);
	memset(b.key.trace_id, 0x55, 16);
	memset(b.key.span_id, 0x66, 8);
	b.key.trace_flags = 1;
	assert_int_equal(sp_agg__add(g, &b.key, &b.fr, 3, 0), 0);
	assert_int_equal(st->entries, 1);

	/* has_ctx is a boolean */
	a.key.has_ctx = 1;
	b.key.has_ctx = 2;
	memcpy(a.key.trace_id, b.key.trace_id, 16);
	memcpy(a.key.span_id, b.key.span_id, 8);
	a.key.trace_flags = 1;
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 4, 0), 0);
	assert_int_equal(sp_agg__add(g, &b.key, &b.fr, 5, 0), 0);
	assert_int_equal(st->entries, 2);

	/* NULL mappings == all-zero mapping ids */
	make_stack(&a, 3, 2, 6);
	memcpy(a.maps, zeros, sizeof(zeros));
	nomaps.addrs = a.addrs;
	nomaps.mappings = NULL;
	assert_int_equal(sp_agg__add(g, &a.key, &nomaps, 6, 0), 0);
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 7, 0), 0);
	assert_int_equal(st->entries, 3);

	/* empty stacks: frames may be NULL */
	make_stack(&a, 4, 0, 0);
	assert_int_equal(sp_agg__add(g, &a.key, NULL, 8, 0), 0);
	assert_int_equal(sp_agg__add(g, &a.key, &a.fr, 9, 0), 0);
	assert_int_equal(st->entries, 4);
	assert_int_equal(st->accepted, 9);

	/* programming errors: -EINVAL, not counted as added */
	make_stack(&a, 5, 1, 1);
	nomaps.addrs = NULL;
	assert_int_equal(sp_agg__add(g, &a.key, &nomaps, 0, 0), -EINVAL);
	assert_int_equal(sp_agg__add(g, &a.key, NULL, 0, 0), -EINVAL);
	assert_int_equal(sp_agg__add(g, NULL, &a.fr, 0, 0), -EINVAL);
	assert_int_equal(sp_agg__add(NULL, &a.key, &a.fr, 0, 0), -EINVAL);
	assert_int_equal(st->added, 9);
	check_invariants(g, 1 << 20);
	sp_agg__free(g);
}

/* Adds and checks, call by call, that each call moves exactly one counter. */
static int add_checked(struct sp_agg *g, const struct stack *s, uint64_t ts)
{
	const struct sp_agg_stats *st = sp_agg__stats(g);
	struct sp_agg_stats before = *st;
	int ret = sp_agg__add(g, &s->key, &s->fr, ts, 1);

	if (st->added != before.added + 1)
		fail_msg("added did not move");
	if (ret == 0) {
		if (st->accepted != before.accepted + 1 ||
		    dropped(st) != dropped(&before))
			fail_msg("accept miscounted");
	} else {
		if (ret != -ENOSPC || st->accepted != before.accepted ||
		    dropped(st) != dropped(&before) + 1)
			fail_msg("drop miscounted (ret %d)", ret);
	}
	return ret;
}

static void test_flood_entry_cap(void **state)
{
	static struct stack s;
	const size_t budget = 16 << 20;
	struct sp_agg *g = new_agg(budget, 1000, false);
	const struct sp_agg_stats *st = sp_agg__stats(g);

	(void)state;
	for (uint64_t i = 0; i < 1000000; i++) {
		make_stack(&s, i, 10, 20);
		assert_int_equal(sp_agg__add(g, &s.key, &s.fr, i, 1),
				 i < 1000 ? 0 : -ENOSPC);
	}
	assert_int_equal(st->added, 1000000);
	assert_int_equal(st->accepted, 1000);
	assert_int_equal(st->entries, 1000);
	assert_int_equal(st->dropped_entries_full, 999000);
	assert_int_equal(st->dropped_bytes_full, 0);
	assert_int_equal(st->timestamps_dropped, 0);

	/* an existing entry still absorbs samples */
	make_stack(&s, 5, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), 0);
	make_stack(&s, 999, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), 0);
	make_stack(&s, 1000, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), -ENOSPC);
	assert_int_equal(st->accepted, 1002);
	assert_int_equal(st->entries, 1000);
	check_invariants(g, budget);
	sp_agg__free(g);
}

static void test_flood_byte_budget_rss(void **state)
{
	static struct stack s;
	const size_t budget = 1 << 20;
	struct sp_agg *g = new_agg(budget, 4096, false);
	const struct sp_agg_stats *st = sp_agg__stats(g);
	size_t used_full;
	long rss0, rss1;
	uint32_t kept;

	(void)state;
	/* warm up the stack / helpers, then measure */
	make_stack(&s, 0, 10, 20);
	rss0 = rss_bytes();
	for (uint64_t i = 0; i < 1000000; i++) {
		make_stack(&s, i, 10, 20);
		(void)sp_agg__add(g, &s.key, &s.fr, i, 1);
	}
	rss1 = rss_bytes();
	print_message("1e6 unique 30-frame stacks into %zu B: reserved %zu, "
		      "used %zu, entries %u, RSS +%ld B\n", budget,
		      st->bytes_reserved, st->bytes_used, st->entries,
		      rss1 - rss0);
	assert_true(rss1 - rss0 < (long)st->bytes_reserved + (1 << 20));

	kept = st->entries;
	assert_true(kept > 100 && kept < 4096);	/* bytes ran out first */
	assert_int_equal(st->accepted, kept);
	assert_int_equal(st->dropped_bytes_full, 1000000 - kept);
	assert_int_equal(st->dropped_entries_full, 0);
	assert_int_equal(st->timestamps_dropped, 0);
	/* frame storage is full: most of the reservation is in use */
	assert_true(st->bytes_used > st->bytes_reserved / 2);
	check_invariants(g, budget);

	/* drop-tail: the first `kept` stacks are in, the rest are not */
	make_stack(&s, 0, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), 0);
	make_stack(&s, kept - 1, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), 0);
	make_stack(&s, kept, 10, 20);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 1), -ENOSPC);
	used_full = st->bytes_used;
	/* a new key with no frames needs no frame storage */
	make_stack(&s, 0, 0, 0);
	assert_int_equal(sp_agg__add(g, &s.key, NULL, 0, 1), 0);
	assert_true(st->bytes_used > used_full);
	check_invariants(g, budget);
	sp_agg__free(g);
}

static int count_cb(const struct sp_agg_entry *e, void *ctx)
{
	uint64_t *sum = ctx;

	if (e->timestamps)
		for (uint64_t k = 1; k < e->count; k++)
			assert_true(e->timestamps[k] > e->timestamps[k - 1]);
	*sum += e->count;
	return 0;
}

static int ts_cb(const struct sp_agg_entry *e, void *ctx)
{
	uint64_t *with_ts = ctx;

	if (e->timestamps)
		*with_ts += e->count;
	return 0;
}

/* A full event log costs timestamps, never samples: counts stay exact, the
 * entries that lost a timestamp report none, the others keep theirs. */
static void test_event_log_full(void **state)
{
	static struct stack s, t, u;
	const size_t budget = 1 << 20;
	struct sp_agg *g = new_agg(budget, 4096, true);
	const struct sp_agg_stats *st = sp_agg__stats(g);
	uint64_t cap, sum = 0, with_ts = 0;

	(void)state;
	make_stack(&u, 3, 10, 20);
	assert_int_equal(add_checked(g, &u, 0), 0);	/* complete, keeps its ts */
	make_stack(&s, 1, 10, 20);
	for (uint64_t i = 1; i <= 1000000; i++)
		assert_int_equal(add_checked(g, &s, i), 0);
	cap = 1000001 - st->timestamps_dropped;	/* events the log took */
	assert_true(st->timestamps_dropped > 0 && cap > 1000 && cap < 1000000);
	assert_int_equal(st->accepted, 1000001);
	assert_int_equal(st->entries, 2);
	assert_int_equal(st->dropped_entries_full + st->dropped_bytes_full, 0);
	/* a new key is still accepted, without a timestamp */
	make_stack(&t, 2, 10, 20);
	assert_int_equal(add_checked(g, &t, 0), 0);
	assert_int_equal(st->timestamps_dropped, 1000001 - cap + 1);
	assert_int_equal(sp_agg__foreach(g, count_cb, &sum), 0);
	assert_int_equal(sum, 1000002);
	assert_int_equal(sp_agg__foreach(g, ts_cb, &with_ts), 0);
	assert_int_equal(with_ts, 1);	/* only u kept its timestamps */
	check_invariants(g, budget);

	/* after reset the log takes exactly as many again */
	sp_agg__reset(g);
	for (uint64_t i = 0; i < cap; i++)
		assert_int_equal(add_checked(g, &t, i), 0);
	with_ts = 0;
	assert_int_equal(sp_agg__foreach(g, ts_cb, &with_ts), 0);
	assert_int_equal(with_ts, cap);
	assert_int_equal(add_checked(g, &t, cap), 0);
	with_ts = 0;
	assert_int_equal(sp_agg__foreach(g, ts_cb, &with_ts), 0);
	assert_int_equal(with_ts, 0);
	check_invariants(g, budget);
	sp_agg__free(g);
}

/* Unique stacks alternating deep (200 frames) and empty, with 1 in 4 calls
 * re-adding an old stack, keep_timestamps: both drop reasons fire, the
 * event log fills (timestamps dropped, samples kept), and each call moves
 * exactly one of accepted / dropped. */
static void test_flood_all_reasons(void **state)
{
	static struct stack s;
	const size_t budget = 1 << 20;
	struct sp_agg *g = new_agg(budget, 512, true);
	const struct sp_agg_stats *st = sp_agg__stats(g);
	uint64_t sum = 0;
	long rss0, rss1;

	(void)state;
	rss0 = rss_bytes();
	for (uint64_t i = 0; i < 1000000; i++) {
		if (i % 4 == 0)
			make_stack(&s, (i / 4) % 50, 100, 100);
		else if (i % 2)
			make_stack(&s, i, 100, 100);
		else {
			make_stack(&s, i, 0, 0);
			s.key.tid = (uint32_t)i;
		}
		(void)add_checked(g, &s, i);
	}
	rss1 = rss_bytes();
	assert_true(rss1 - rss0 < (long)st->bytes_reserved + (1 << 20));
	assert_int_equal(st->added, 1000000);
	assert_true(st->dropped_entries_full > 0);
	assert_true(st->dropped_bytes_full > 0);
	assert_true(st->timestamps_dropped > 0);
	assert_int_equal(st->entries, 512);
	assert_int_equal(sp_agg__foreach(g, count_cb, &sum), 0);
	assert_int_equal(sum, st->accepted);
	check_invariants(g, budget);
	sp_agg__free(g);
}

static void test_reset_reuse(void **state)
{
	static struct stack s;
	static struct seen seen;
	struct sp_agg *g = new_agg(4 << 20, 1000, true);
	const struct sp_agg_stats *st = sp_agg__stats(g);
	size_t used0 = st->bytes_used;

	(void)state;
	for (int round = 0; round < 50; round++) {
		for (uint64_t i = 0; i < 1500; i++) {
			make_stack(&s, i + (uint64_t)round * 7, 4, 4);
			(void)sp_agg__add(g, &s.key, &s.fr, i, 1);
		}
		assert_int_equal(st->entries, 1000);
		sp_agg__reset(g);
		assert_int_equal(st->entries, 0);
		assert_int_equal(st->bytes_used, used0);
		memset(&seen, 0, sizeof(seen));
		assert_int_equal(sp_agg__foreach(g, collect_cb, &seen), 0);
		assert_int_equal(seen.n, 0);
	}
	assert_int_equal(st->added, 50 * 1500);
	assert_int_equal(st->accepted, 50 * 1000);
	assert_int_equal(st->dropped_entries_full, 50 * 500);

	/* no stale slots: an old key is new again and merges normally */
	make_stack(&s, 3, 4, 4);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 1, 1), 0);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 2, 1), 0);
	assert_int_equal(st->entries, 1);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sp_agg__foreach(g, collect_cb, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.e[0].count, 2);
	assert_int_equal(seen.e[0].ts[0], 1);
	assert_int_equal(seen.e[0].ts[1], 2);
	check_invariants(g, 4 << 20);
	sp_agg__free(g);
}

static void test_no_timestamps(void **state)
{
	static struct stack s;
	static struct seen seen;
	struct sp_agg *g = new_agg(1 << 20, 64, false);
	const struct sp_agg_stats *st = sp_agg__stats(g);

	(void)state;
	make_stack(&s, 1, 2, 2);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(sp_agg__add(g, &s.key, &s.fr, (uint64_t)i, 3), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sp_agg__foreach(g, collect_cb, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_true(seen.e[0].ts_null);
	assert_int_equal(seen.e[0].count, 100000);
	assert_int_equal(seen.e[0].weight, 300000);
	assert_int_equal(st->timestamps_dropped, 0);
	check_invariants(g, 1 << 20);
	sp_agg__free(g);
}

static int stop_cb(const struct sp_agg_entry *e, void *ctx)
{
	int *n = ctx;

	(void)e;
	return ++*n == 2 ? 7 : 0;
}

static void test_foreach_stops(void **state)
{
	static struct stack s;
	struct sp_agg *g = new_agg(1 << 20, 64, true);
	int n = 0;

	(void)state;
	for (uint64_t i = 0; i < 5; i++) {
		make_stack(&s, i, 1, 1);
		assert_int_equal(sp_agg__add(g, &s.key, &s.fr, i, 0), 0);
	}
	assert_int_equal(sp_agg__foreach(g, stop_cb, &n), 7);
	assert_int_equal(n, 2);
	assert_int_equal(sp_agg__foreach(NULL, stop_cb, &n), -EINVAL);
	assert_int_equal(sp_agg__foreach(g, NULL, &n), -EINVAL);
	sp_agg__free(g);
}

static void test_config(void **state)
{
	static struct stack s;
	static struct seen seen;
	struct sp_agg_config c = { 0 };
	struct sp_agg *g;
	const struct sp_agg_stats *st;

	(void)state;
	/* NULL: all defaults (64 MiB, 65536 entries, timestamps kept) */
	g = sp_agg__new(NULL);
	assert_non_null(g);
	st = sp_agg__stats(g);
	assert_true(st->bytes_reserved <= 64u << 20);
	assert_true(st->bytes_reserved > 60u << 20);
	make_stack(&s, 1, 1, 1);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 5, 0), 0);
	memset(&seen, 0, sizeof(seen));
	sp_agg__foreach(g, collect_cb, &seen);
	assert_false(seen.e[0].ts_null);
	sp_agg__free(g);

	/* zero budget / zero max_entries mean "default" */
	g = sp_agg__new(&c);
	assert_non_null(g);
	assert_true(sp_agg__stats(g)->bytes_reserved > 60u << 20);
	assert_true(sp_agg__stats(g)->bytes_reserved <= 64u << 20);
	sp_agg__free(g);

	/* too small for the fixed part: rejected with EINVAL */
	c.byte_budget = 1000;
	errno = 0;
	assert_null(sp_agg__new(&c));
	assert_int_equal(errno, EINVAL);
	c.byte_budget = 1 << 20;	/* 65536 entries need ~6.5 MiB */
	errno = 0;
	assert_null(sp_agg__new(&c));
	assert_int_equal(errno, EINVAL);
	c.max_entries = (1u << 30) + 1;
	c.byte_budget = (size_t)1 << 40;
	errno = 0;
	assert_null(sp_agg__new(&c));
	assert_int_equal(errno, EINVAL);

	/* tiny but valid: one entry, reserved stays within an odd budget */
	c.max_entries = 1;
	c.byte_budget = 10000;
	c.keep_timestamps = true;
	g = sp_agg__new(&c);
	assert_non_null(g);
	st = sp_agg__stats(g);
	assert_true(st->bytes_reserved <= 10000);
	make_stack(&s, 1, 1, 1);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 0), 0);
	make_stack(&s, 2, 1, 1);
	assert_int_equal(sp_agg__add(g, &s.key, &s.fr, 0, 0), -ENOSPC);
	assert_int_equal(st->dropped_entries_full, 1);
	check_invariants(g, 10000);
	sp_agg__free(g);

	/* NULL-safe */
	sp_agg__free(NULL);
	sp_agg__reset(NULL);
	assert_null(sp_agg__stats(NULL));
}

static void test_add_allocates_nothing(void **state)
{
	static struct stack s;
	struct sp_agg *g;
	uint64_t sum = 0;

	(void)state;
	if (!HAVE_ALLOC_COUNT) {
		print_message("ASan owns malloc: allocation counting skipped\n");
		skip();
	}
	/* the interposer sees calls at all */
	{
		void *(*volatile m)(size_t) = malloc;
		void *p;

		alloc_calls = 0;
		alloc_counting = 1;
		p = m(16);
		alloc_counting = 0;
		free(p);
		assert_int_equal(alloc_calls, 1);
	}
	g = new_agg(2 << 20, 512, true);
	alloc_calls = 0;
	alloc_counting = 1;
	for (uint64_t i = 0; i < 200000; i++) {
		make_stack(&s, i % 2000, 20, 20);	/* new, merge, drop */
		(void)sp_agg__add(g, &s.key, &s.fr, i, 1);
	}
	sp_agg__foreach(g, count_cb, &sum);
	sp_agg__reset(g);
	make_stack(&s, 1, 20, 20);
	(void)sp_agg__add(g, &s.key, &s.fr, 0, 1);
	alloc_counting = 0;
	assert_int_equal(alloc_calls, 0);
	assert_true(sp_agg__stats(g)->dropped_entries_full > 0);
	assert_true(sp_agg__stats(g)->timestamps_dropped > 0);
	sp_agg__free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_equal_keys),
		cmocka_unit_test(test_frames_round_trip),
		cmocka_unit_test(test_attrs_in_identity),
		cmocka_unit_test(test_distinct_every_field),
		cmocka_unit_test(test_normalization),
		cmocka_unit_test(test_flood_entry_cap),
		cmocka_unit_test(test_flood_byte_budget_rss),
		cmocka_unit_test(test_event_log_full),
		cmocka_unit_test(test_flood_all_reasons),
		cmocka_unit_test(test_reset_reuse),
		cmocka_unit_test(test_no_timestamps),
		cmocka_unit_test(test_foreach_stops),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_add_allocates_nothing),
	};

	return cmocka_run_group_tests_name("aggregator", tests, NULL, NULL);
}
