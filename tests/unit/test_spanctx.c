/* SPDX-License-Identifier: MIT */
/*
 * test_spanctx.c - libspanctx thread context (OTEP 4947 writer side):
 * traceparent parsing, nesting, record immutability, attributes,
 * capture/restore across threads, random ids, thread names, and a
 * signal-driven reader that interrupts a writer at arbitrary instructions
 * and must never see a torn or mixed record.
 *
 * Linked with libspanctx.a (lib/spanctx/build.mk has the rule).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "spanctx.h"

static const char *const test_keys[] = { "k0", "k1", "k2" };

static int setup_keys(void **state)
{
	(void)state;
	return spanctx_init("test-spanctx", test_keys, 3);
}

static int teardown_all(void **state)
{
	(void)state;
	spanctx_thread_reset();
	spanctx_shutdown();
	return 0;
}

/* ------------------------------------------------------------ traceparent */

#define TP_OK "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void test_traceparent_valid(void **state)
{
	static const struct {
		const char *s;
		uint8_t flags;
	} ok[] = {
		{ TP_OK, 0x01 },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 0x00 },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", 0xff },
		{ "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0x01 },
		{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-future", 0x09 },
		{ "00-00000000000000000000000000000001-0000000000000001-01", 0x01 },
	};
	static const uint8_t tid[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3,
		0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const uint8_t sid[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9,
					0x02, 0xb7 };
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct spanctx_context c;

		memset(&c, 0xab, sizeof(c));
		assert_int_equal(spanctx_traceparent_parse(ok[i].s, &c), 0);
		assert_int_equal(c.trace_flags, ok[i].flags);
		assert_int_equal(c.attrs_size, 0);
		if (i < 5) {
			assert_memory_equal(c.trace_id, tid, 16);
			assert_memory_equal(c.span_id, sid, 8);
		}
	}
}

static void test_traceparent_invalid_changes_nothing(void **state)
{
	static const char *const bad[] = {
		"",
		"00",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",	/* short */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",	/* upper */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
		"0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* ff */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",	/* 0 trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",	/* 0 span */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",	/* 00 + extra */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",	/* trailing ws */
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* leading ws */
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",	/* no '-' */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* separators */
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",	/* non-hex */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1g",
		"00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",	/* shifted */
		"00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	};
	struct spanctx_scope outer, s;
	struct spanctx_record before;
	void *ptr;
	(void)state;

	assert_int_equal(spanctx_span_enter_traceparent(&outer, TP_OK), 0);
	assert_int_equal(spanctx_span_set_attr_str(1, "v"), 0);
	ptr = otel_thread_ctx_v1;
	memcpy(&before, ptr, sizeof(before));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct spanctx_context c, sentinel;

		memset(&c, 0x5c, sizeof(c));
		sentinel = c;
		assert_int_equal(spanctx_traceparent_parse(bad[i], &c), -EINVAL);
		assert_memory_equal(&c, &sentinel, sizeof(c));

		memset(&s, 0x77, sizeof(s));
		assert_int_equal(spanctx_span_enter_traceparent(&s, bad[i]),
				 -EINVAL);
		assert_ptr_equal(otel_thread_ctx_v1, ptr);
		assert_memory_equal(ptr, &before, sizeof(before));
		assert_int_equal(s.active, 0);
		assert_int_equal(spanctx_span_leave(&s), 0);	/* no-op */
		assert_ptr_equal(otel_thread_ctx_v1, ptr);
	}
	assert_int_equal(spanctx_traceparent_parse(NULL, NULL), -EINVAL);
	assert_int_equal(spanctx_span_enter_traceparent(&s, NULL), -EINVAL);
	assert_ptr_equal(otel_thread_ctx_v1, ptr);
	assert_int_equal(spanctx_span_leave(&outer), 0);
	assert_null(otel_thread_ctx_v1);
}

static void test_format_and_hex(void **state)
{
	struct spanctx_context c;
	struct spanctx_scope s;
	char out[SPANCTX_TRACEPARENT_BUF], hex[33];
	(void)state;

	assert_int_equal(spanctx_traceparent_parse(TP_OK, &c), 0);
	assert_int_equal(spanctx_traceparent_format(&c, out), 55);
	assert_string_equal(out, TP_OK);
	spanctx_trace_id_hex(c.trace_id, hex);
	assert_string_equal(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
	spanctx_span_id_hex(c.span_id, hex);
	assert_string_equal(hex, "00f067aa0ba902b7");

	assert_int_equal(spanctx_current_traceparent(out), -ENOENT);
	assert_int_equal(spanctx_span_enter_traceparent(&s, TP_OK), 0);
	assert_int_equal(spanctx_current_traceparent(out), 55);
	assert_string_equal(out, TP_OK);
	spanctx_span_leave(&s);
}

/* ------------------------------------------------------------ nesting */

static void test_nesting_restores_exact_pointer(void **state)
{
	struct spanctx_scope s[SPANCTX_MAX_DEPTH + 1];
	void *ptrs[SPANCTX_MAX_DEPTH + 1];
	struct spanctx_context root, c;
	(void)state;

	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanctx_span_enter_root(&s[0], SPANCTX_FLAG_SAMPLED), 0);
	ptrs[0] = otel_thread_ctx_v1;
	assert_non_null(ptrs[0]);
	assert_int_equal(spanctx_capture(&root), 0);
	for (int i = 1; i < SPANCTX_MAX_DEPTH; i++) {
		assert_int_equal(spanctx_span_enter_child(&s[i]), 0);
		ptrs[i] = otel_thread_ctx_v1;
		assert_ptr_not_equal(ptrs[i], ptrs[i - 1]);
		assert_int_equal(spanctx_capture(&c), 0);
		assert_memory_equal(c.trace_id, root.trace_id, 16);
		assert_int_equal(c.trace_flags, SPANCTX_FLAG_SAMPLED);
	}
	/* One too deep: refused, nothing changes, leave is a no-op. */
	assert_int_equal(spanctx_span_enter_child(&s[SPANCTX_MAX_DEPTH]),
			 -EOVERFLOW);
	assert_ptr_equal(otel_thread_ctx_v1, ptrs[SPANCTX_MAX_DEPTH - 1]);
	assert_int_equal(spanctx_span_leave(&s[SPANCTX_MAX_DEPTH]), 0);
	assert_ptr_equal(otel_thread_ctx_v1, ptrs[SPANCTX_MAX_DEPTH - 1]);

	for (int i = SPANCTX_MAX_DEPTH - 1; i > 0; i--) {
		assert_int_equal(spanctx_span_leave(&s[i]), 0);
		assert_ptr_equal(otel_thread_ctx_v1, ptrs[i - 1]);
	}
	assert_int_equal(spanctx_span_leave(&s[0]), 0);
	assert_null(otel_thread_ctx_v1);
}

static void test_leave_misuse(void **state)
{
	struct spanctx_scope a, b, c, zero;
	void *pa, *pb;
	(void)state;

	memset(&zero, 0, sizeof(zero));
	assert_int_equal(spanctx_span_leave(&zero), 0);
	assert_int_equal(spanctx_span_leave(NULL), 0);

	assert_int_equal(spanctx_span_enter_root(&a, 1), 0);
	pa = otel_thread_ctx_v1;
	assert_int_equal(spanctx_span_enter_child(&b), 0);
	pb = otel_thread_ctx_v1;
	(void)pb;
	/* Leaving the outer scope ends the inner one too. */
	assert_int_equal(spanctx_span_leave(&a), 0);
	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanctx_span_leave(&b), -EINVAL);	/* stale */
	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanctx_span_leave(&a), 0);	/* twice: inactive */

	/* A stale scope must not match a new span at its old level. */
	assert_int_equal(spanctx_span_enter_root(&a, 1), 0);
	pa = otel_thread_ctx_v1;
	assert_int_equal(spanctx_span_enter_child(&c), 0);
	assert_int_equal(spanctx_span_leave(&b), -EINVAL);
	assert_int_equal(spanctx_span_leave(&c), 0);
	assert_ptr_equal(otel_thread_ctx_v1, pa);

	/* Reset forgets everything. */
	spanctx_thread_reset();
	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanctx_span_leave(&a), -EINVAL);
	assert_null(otel_thread_ctx_v1);

	/* Bad ids. */
	static const uint8_t z16[16], z8[8], one16[16] = { 1 }, one8[8] = { 1 };
	assert_int_equal(spanctx_span_enter(&a, z16, one8, 1), -EINVAL);
	assert_int_equal(spanctx_span_enter(&a, one16, z8, 1), -EINVAL);
	assert_int_equal(spanctx_span_enter(&a, NULL, one8, 1), -EINVAL);
	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanctx_span_enter(&a, one16, one8, 0), 0);
	assert_int_equal(spanctx_span_leave(&a), 0);
	assert_null(otel_thread_ctx_v1);
}

struct foreign_leave {
	struct spanctx_scope *s;
	int rc;
	void *ptr_after;
};

static void *foreign_leave_main(void *arg)
{
	struct foreign_leave *f = arg;

	f->rc = spanctx_span_leave(f->s);
	f->ptr_after = otel_thread_ctx_v1;
	return NULL;
}

static void test_leave_from_other_thread_refused(void **state)
{
	struct spanctx_scope a;
	struct foreign_leave f = { .s = &a };
	pthread_t t;
	void *p;
	(void)state;

	assert_int_equal(spanctx_span_enter_root(&a, 1), 0);
	p = otel_thread_ctx_v1;
	assert_int_equal(pthread_create(&t, NULL, foreign_leave_main, &f), 0);
	pthread_join(t, NULL);
	assert_int_equal(f.rc, -EINVAL);
	assert_null(f.ptr_after);
	assert_ptr_equal(otel_thread_ctx_v1, p);
	assert_int_equal(spanctx_span_leave(&a), 0);
	assert_null(otel_thread_ctx_v1);
}

/* ------------------------------------------------------------ immutability */

struct snap {
	const void *ptr;
	struct spanctx_record bytes;
};

static void take_snap(struct snap *s)
{
	s->ptr = otel_thread_ctx_v1;
	memcpy(&s->bytes, s->ptr, sizeof(s->bytes));
}

static void check_snaps(const struct snap *s, int n)
{
	for (int i = 0; i < n; i++)
		assert_memory_equal(s[i].ptr, &s[i].bytes, sizeof(s[i].bytes));
}

static void test_published_chain_never_mutated(void **state)
{
	struct spanctx_scope root, mid, leaf;
	struct snap chain[3];
	char v[8];
	(void)state;

	assert_int_equal(spanctx_span_enter_root(&root, 1), 0);
	assert_int_equal(spanctx_span_set_attr_str(0, "root"), 0);
	take_snap(&chain[0]);
	assert_int_equal(spanctx_span_enter_child(&mid), 0);
	assert_int_equal(spanctx_span_set_attr_str(0, "mid"), 0);
	take_snap(&chain[1]);
	for (int i = 0; i < 200; i++) {
		struct snap cur;

		assert_int_equal(spanctx_span_enter_child(&leaf), 0);
		check_snaps(chain, 2);
		for (int j = 0; j < 5; j++) {
			take_snap(&cur);
			snprintf(v, sizeof(v), "%d", i * 5 + j);
			assert_int_equal(spanctx_span_set_attr_str(1, v), 0);
			/* The record that was published is untouched and the
			 * new one is elsewhere. */
			assert_ptr_not_equal(otel_thread_ctx_v1, cur.ptr);
			check_snaps(&cur, 1);
			check_snaps(chain, 2);
		}
		if (i % 3 == 0) {
			struct spanctx_scope deeper;

			assert_int_equal(spanctx_span_enter_child(&deeper), 0);
			assert_int_equal(spanctx_span_set_attr_str(2, "x"), 0);
			assert_int_equal(spanctx_span_leave(&deeper), 0);
		}
		assert_int_equal(spanctx_span_leave(&leaf), 0);
		assert_ptr_equal(otel_thread_ctx_v1, chain[1].ptr);
		check_snaps(chain, 2);
	}
	assert_int_equal(spanctx_span_leave(&mid), 0);
	assert_ptr_equal(otel_thread_ctx_v1, chain[0].ptr);
	check_snaps(chain, 1);
	assert_int_equal(spanctx_span_leave(&root), 0);
}

/* ------------------------------------------------------------ attributes */

static const struct spanctx_record *cur_rec(void)
{
	return otel_thread_ctx_v1;
}

static void test_attrs_encoding_and_bounds(void **state)
{
	static const uint8_t want1[] = { 0, 3, 'a', 'b', 'c', 1, 2, 'x', 'y' };
	static const uint8_t want2[] = { 1, 2, 'x', 'y', 0, 1, 'Z' };
	static const uint8_t want3[] = { 1, 2, 'x', 'y', 0, 1, 'Z', 2, 0 };
	struct spanctx_scope s;
	struct spanctx_record before;
	uint8_t big[256];
	int n = 0, rc;
	(void)state;

	assert_int_equal(spanctx_span_set_attr_str(0, "abc"), -ENOENT);
	assert_int_equal(spanctx_span_enter_root(&s, 1), 0);
	assert_int_equal(cur_rec()->attrs_size, 0);
	assert_int_equal(cur_rec()->valid, 1);
	assert_int_equal(spanctx_span_set_attr_str(0, "abc"), 0);
	assert_int_equal(spanctx_span_set_attr_str(1, "xy"), 0);
	assert_int_equal(cur_rec()->attrs_size, sizeof(want1));
	assert_memory_equal(cur_rec()->attrs, want1, sizeof(want1));
	/* Replacing a key drops its old entry and appends the new one. */
	assert_int_equal(spanctx_span_set_attr_str(0, "Z"), 0);
	assert_int_equal(cur_rec()->attrs_size, sizeof(want2));
	assert_memory_equal(cur_rec()->attrs, want2, sizeof(want2));
	assert_int_equal(spanctx_span_set_attr(2, NULL, 0), 0);	/* empty */
	assert_memory_equal(cur_rec()->attrs, want3, sizeof(want3));

	/* Refusals change nothing. */
	memcpy(&before, cur_rec(), sizeof(before));
	const void *p = otel_thread_ctx_v1;
	memset(big, 'q', sizeof(big));
	assert_int_equal(spanctx_span_set_attr(3, "v", 1), -EINVAL); /* key */
	assert_int_equal(spanctx_span_set_attr(0, big, 256), -E2BIG);
	assert_int_equal(spanctx_span_set_attr(0, big, SPANCTX_ATTRS_MAX), -E2BIG);
	assert_int_equal(spanctx_span_set_attr(0, NULL, 3), -EINVAL);
	assert_ptr_equal(otel_thread_ctx_v1, p);
	assert_memory_equal(p, &before, sizeof(before));

	/* Fill to the bound: largest value that still fits for key 0. */
	size_t others = sizeof(want3) - 3;	/* entries of keys 1 and 2 */
	size_t room = SPANCTX_ATTRS_MAX - others - 2;
	assert_int_equal(spanctx_span_set_attr(0, big, room + 1), -E2BIG);
	assert_int_equal(spanctx_span_set_attr(0, big, room), 0);
	assert_int_equal(cur_rec()->attrs_size, SPANCTX_ATTRS_MAX);
	/* Walk it as a reader does. */
	for (int off = 0; off + 2 <= cur_rec()->attrs_size; n++) {
		rc = cur_rec()->attrs[off + 1];
		off += 2 + rc;
		assert_true(off <= cur_rec()->attrs_size);
	}
	assert_int_equal(n, 3);
	assert_int_equal(spanctx_span_leave(&s), 0);
	assert_int_equal(spanctx_span_set_attr_str(0, "abc"), -ENOENT);
}

/* A child starts with its parent's attributes; changing them in the child
 * leaves the parent's record as it was. */
static void test_child_inherits_attrs(void **state)
{
	static const uint8_t parent_attrs[] = { 0, 5, '/', 'p', 'a', 'y', 's', 1, 1, '7' };
	static const uint8_t child_attrs[] = { 0, 5, '/', 'p', 'a', 'y', 's', 1, 1, '8' };
	struct spanctx_scope root, child, fresh;
	const struct spanctx_record *parent;
	(void)state;

	assert_int_equal(spanctx_span_enter_root(&root, 1), 0);
	assert_int_equal(spanctx_span_set_attr_str(0, "/pays"), 0);
	assert_int_equal(spanctx_span_set_attr_str(1, "7"), 0);
	parent = cur_rec();
	assert_int_equal(spanctx_span_enter_child(&child), 0);
	assert_ptr_not_equal(cur_rec(), parent);
	assert_memory_equal(cur_rec()->trace_id, parent->trace_id, SPANCTX_TRACE_ID_SIZE);
	assert_memory_not_equal(cur_rec()->span_id, parent->span_id, SPANCTX_SPAN_ID_SIZE);
	assert_int_equal(cur_rec()->attrs_size, sizeof(parent_attrs));
	assert_memory_equal(cur_rec()->attrs, parent_attrs, sizeof(parent_attrs));
	assert_int_equal(spanctx_span_set_attr_str(1, "8"), 0);
	assert_memory_equal(cur_rec()->attrs, child_attrs, sizeof(child_attrs));
	assert_int_equal(spanctx_span_leave(&child), 0);
	assert_ptr_equal(cur_rec(), parent);
	assert_int_equal(parent->attrs_size, sizeof(parent_attrs));
	assert_memory_equal(parent->attrs, parent_attrs, sizeof(parent_attrs));
	/* A new root starts a new trace with no attributes. */
	assert_int_equal(spanctx_span_enter_root(&fresh, 1), 0);
	assert_int_equal(cur_rec()->attrs_size, 0);
	assert_int_equal(spanctx_span_leave(&fresh), 0);
	assert_int_equal(spanctx_span_leave(&root), 0);
}

/* ------------------------------------------------------------ threads */

struct handoff {
	struct spanctx_context ctx;
	struct spanctx_context seen;
	void *ptr_in, *ptr_after;
	int rc_restore, rc_capture, rc_leave;
};

static void *handoff_main(void *arg)
{
	struct handoff *h = arg;
	struct spanctx_scope s;

	if (otel_thread_ctx_v1)
		return NULL;	/* a new thread starts with no context */
	h->rc_restore = spanctx_restore(&s, &h->ctx);
	h->ptr_in = otel_thread_ctx_v1;
	h->rc_capture = spanctx_capture(&h->seen);
	h->rc_leave = spanctx_span_leave(&s);
	h->ptr_after = otel_thread_ctx_v1;
	return NULL;
}

static void test_capture_restore_across_threads(void **state)
{
	struct handoff h;
	struct spanctx_scope s;
	struct spanctx_context bad;
	pthread_t t;
	void *mine;
	(void)state;

	memset(&h, 0, sizeof(h));
	assert_int_equal(spanctx_capture(&h.ctx), -ENOENT);
	assert_int_equal(spanctx_span_enter_root(&s, 1), 0);
	assert_int_equal(spanctx_span_set_attr_str(2, "pool"), 0);
	mine = otel_thread_ctx_v1;
	assert_int_equal(spanctx_capture(&h.ctx), 0);
	h.rc_restore = h.rc_capture = h.rc_leave = 99;
	assert_int_equal(pthread_create(&t, NULL, handoff_main, &h), 0);
	pthread_join(t, NULL);
	assert_int_equal(h.rc_restore, 0);
	assert_int_equal(h.rc_capture, 0);
	assert_int_equal(h.rc_leave, 0);
	assert_non_null(h.ptr_in);
	assert_ptr_not_equal(h.ptr_in, mine);
	assert_null(h.ptr_after);
	assert_memory_equal(&h.seen, &h.ctx, sizeof(h.ctx));
	assert_int_equal(h.seen.attrs_size, 6);
	assert_memory_equal(h.seen.attrs, "\x02\x04pool", 6);
	assert_ptr_equal(otel_thread_ctx_v1, mine);

	bad = h.ctx;
	bad.attrs_size = SPANCTX_ATTRS_MAX + 1;
	assert_int_equal(spanctx_restore(&s, &bad), -EINVAL);
	assert_ptr_equal(otel_thread_ctx_v1, mine);
	assert_int_equal(spanctx_restore(&s, NULL), -EINVAL);
	spanctx_thread_reset();
}

static void *exit_in_span_main(void *arg)
{
	struct spanctx_scope s;

	(void)arg;
	spanctx_span_enter_root(&s, 1);	/* never left: freed at exit */
	return otel_thread_ctx_v1;
}

static void test_thread_exit_inside_span(void **state)
{
	pthread_t t;
	void *ret = NULL;
	(void)state;

	for (int i = 0; i < 20; i++) {
		assert_int_equal(pthread_create(&t, NULL, exit_in_span_main,
						NULL), 0);
		pthread_join(t, &ret);
		assert_non_null(ret);
	}
}

/* ------------------------------------------------------------ ids */

static int cmp8(const void *a, const void *b)
{
	return memcmp(a, b, 8);
}

static int cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static void test_random_ids(void **state)
{
	enum { N = 2000 };
	static uint8_t spans[N][8], traces[N][16];
	static const uint8_t z[16];
	struct spanctx_scope r, c1, c2;
	struct spanctx_context a, b, d;
	(void)state;

	for (int i = 0; i < N; i++) {
		assert_int_equal(spanctx_random_span_id(spans[i]), 0);
		assert_int_equal(spanctx_random_trace_id(traces[i]), 0);
		assert_memory_not_equal(spans[i], z, 8);
		assert_memory_not_equal(traces[i], z, 16);
	}
	qsort(spans, N, 8, cmp8);
	qsort(traces, N, 16, cmp16);
	for (int i = 1; i < N; i++) {
		assert_memory_not_equal(spans[i], spans[i - 1], 8);
		assert_memory_not_equal(traces[i], traces[i - 1], 16);
	}

	assert_int_equal(spanctx_span_enter_root(&r, 1), 0);
	spanctx_capture(&a);
	assert_int_equal(spanctx_span_enter_child(&c1), 0);
	spanctx_capture(&b);
	assert_memory_equal(a.trace_id, b.trace_id, 16);
	assert_memory_not_equal(a.span_id, b.span_id, 8);
	spanctx_span_leave(&c1);
	assert_int_equal(spanctx_span_enter_root(&c2, 0), 0);
	spanctx_capture(&d);
	assert_memory_not_equal(a.trace_id, d.trace_id, 16);
	assert_int_equal(d.trace_flags, 0);
	spanctx_span_leave(&c2);
	spanctx_span_leave(&r);
}

static void test_random_ids_differ_after_fork(void **state)
{
	uint8_t mine[8], theirs[8];
	int fds[2], status;
	pid_t pid;
	(void)state;

	assert_int_equal(spanctx_random_span_id(mine), 0);	/* fills pool */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t id[8];

		spanctx_random_span_id(id);
		_exit(write(fds[1], id, 8) == 8 ? 0 : 1);
	}
	assert_int_equal(spanctx_random_span_id(mine), 0);
	assert_int_equal(read(fds[0], theirs, 8), 8);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_memory_not_equal(mine, theirs, 8);
	close(fds[0]);
	close(fds[1]);
}

/* ------------------------------------------------------------ names */

static void *name_main(void *arg)
{
	const char *name = arg;
	char got[17] = { 0 };
	char *ret;

	if (spanctx_set_thread_name(name) < 0)
		return NULL;
	prctl(PR_GET_NAME, (unsigned long)got, 0, 0, 0);
	ret = strdup(got);
	return ret;
}

static void test_thread_name_truncation(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "short", "short" },
		{ "exactly15bytes!", "exactly15bytes!" },
		{ "sixteen-bytes-xx", "sixteen-bytes-x" },
		{ "a-very-long-worker-thread-name-42", "a-very-long-wor" },
		/* 13 ASCII + 2-byte "é" = 15 bytes: kept whole */
		{ "abcdefghijklm\xc3\xa9", "abcdefghijklm\xc3\xa9" },
		/* 14 ASCII + "é": the split sequence is dropped */
		{ "abcdefghijklmn\xc3\xa9", "abcdefghijklmn" },
		/* 13 ASCII + 3-byte "€" straddling byte 15 */
		{ "abcdefghijklm\xe2\x82\xac", "abcdefghijklm" },
	};
	char out[SPANCTX_THREAD_NAME_MAX + 1];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pthread_t t;
		char *got = NULL;

		assert_int_equal(spanctx_thread_name_truncate(cases[i].in, out),
				 (int)strlen(cases[i].out));
		assert_string_equal(out, cases[i].out);
		assert_int_equal(pthread_create(&t, NULL, name_main,
						(void *)cases[i].in), 0);
		pthread_join(t, (void **)&got);
		assert_non_null(got);
		assert_string_equal(got, cases[i].out);
		free(got);
	}
	assert_int_equal(spanctx_thread_name_truncate(NULL, out), -EINVAL);
	assert_int_equal(spanctx_set_thread_name(NULL), -EINVAL);
}

/* ------------------------------------------------------------ torn reads */

/*
 * A SIGUSR1 handler plays the profiler: it interrupts the writer thread at
 * arbitrary instructions and reads the record the way a BPF program does.
 * Every record the writer publishes has span_id derived from trace_id and
 * an attribute derived from both, so any mix of two contexts shows.
 */
static atomic_bool hammer_stop;
static volatile sig_atomic_t reads_valid, reads_null, reads_bad;

static void derive_span(const uint8_t t[16], uint8_t salt, uint8_t out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(t[i] ^ t[15 - i] ^ salt ^ 0xa5);
	out[0] |= 1;
}

static void reader_handler(int sig)
{
	const struct spanctx_record *r = otel_thread_ctx_v1;
	uint8_t want[8];
	bool ok = true;

	(void)sig;
	if (!r) {
		reads_null++;
		return;
	}
	if (r->valid != 1 || r->attrs_size > SPANCTX_ATTRS_MAX) {
		reads_bad++;
		return;
	}
	/* The salt is the record's attrs: key 0 = one salt byte, if any. */
	uint8_t salt = 0;
	uint16_t off = 0;

	while (off + 2 <= r->attrs_size) {
		uint8_t k = r->attrs[off], len = r->attrs[off + 1];

		if (off + 2 + len > r->attrs_size) {
			ok = false;
			break;
		}
		if (k == 0 && len == 1)
			salt = r->attrs[off + 2];
		else if (k == 1 && (len != 16 ||
				    memcmp(r->attrs + off + 2, r->trace_id, 16)))
			ok = false;	/* key 1 must echo the trace id */
		off += 2 + len;
	}
	derive_span(r->trace_id, salt, want);
	if (memcmp(want, r->span_id, 8))
		ok = false;
	if (ok)
		reads_valid++;
	else
		reads_bad++;
}

static atomic_int hammer_tid;

static void *hammer_writer(void *arg)
{
	uint64_t n = 0;
	(void)arg;

	atomic_store(&hammer_tid, gettid());
	while (!atomic_load_explicit(&hammer_stop, memory_order_relaxed)) {
		struct spanctx_scope a, b;
		struct spanctx_context cap;
		uint8_t t[16], s[8], salt = (uint8_t)(n * 7 + 3);

		memcpy(t, &n, sizeof(n));
		memcpy(t + 8, &n, sizeof(n));
		t[15] ^= 0x5a;
		derive_span(t, 0, s);
		if (spanctx_span_enter(&a, t, s, 1))
			break;
		/* Republish with an attribute echoing the trace id. */
		spanctx_span_set_attr(1, t, 16);
		/* Nested record: another span id, tied to the salt attr. */
		derive_span(t, salt, s);
		memset(&cap, 0, sizeof(cap));
		cap.trace_flags = 1;
		memcpy(cap.trace_id, t, 16);
		memcpy(cap.span_id, s, 8);
		cap.attrs_size = 3;
		cap.attrs[0] = 0;
		cap.attrs[1] = 1;
		cap.attrs[2] = salt;
		spanctx_restore(&b, &cap);
		spanctx_span_set_attr(1, t, 16);
		spanctx_span_leave(&b);
		spanctx_span_leave(&a);
		n++;
	}
	return (void *)(uintptr_t)n;
}

/*
 * The "profiler" is a POSIX timer aimed at the writer thread
 * (SIGEV_THREAD_ID, 20 us period): on this kind of VM it interrupts a busy
 * thread ~10^4 times a second, where pthread_kill() mostly coalesces.
 */
static void test_signal_reader_never_sees_torn_record(void **state)
{
	struct itimerspec it = { { 0, 20000 }, { 0, 20000 } }, off = { 0 };
	struct sigevent se;
	struct sigaction sa;
	timer_t tm;
	pthread_t w;
	void *ret;
	(void)state;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = reader_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	reads_valid = reads_null = reads_bad = 0;
	atomic_store(&hammer_stop, false);
	atomic_store(&hammer_tid, 0);
	assert_int_equal(pthread_create(&w, NULL, hammer_writer, NULL), 0);
	while (atomic_load(&hammer_tid) == 0)
		usleep(100);
	memset(&se, 0, sizeof(se));
	se.sigev_notify = SIGEV_THREAD_ID;
	se.sigev_signo = SIGUSR1;
	se._sigev_un._tid = atomic_load(&hammer_tid);
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &se, &tm), 0);
	assert_int_equal(timer_settime(tm, 0, &it, NULL), 0);
	/* 1.5 s, longer on a loaded machine (the writer off its CPU takes
	 * no signals): until 1000 reads landed inside records, at most 15 s */
	for (int i = 0; i < 150 && (i < 15 || reads_valid <= 1000); i++)
		usleep(100000);
	timer_settime(tm, 0, &off, NULL);
	timer_delete(tm);
	atomic_store(&hammer_stop, true);
	pthread_join(w, &ret);
	signal(SIGUSR1, SIG_IGN);
	print_message("hammer: %lu writer iterations, %d valid, %d null, "
		      "%d bad reads\n", (unsigned long)(uintptr_t)ret,
		      (int)reads_valid, (int)reads_null, (int)reads_bad);
	assert_int_equal(reads_bad, 0);
	assert_true(reads_valid > 1000);
	assert_true((uintptr_t)ret > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traceparent_valid),
		cmocka_unit_test(test_traceparent_invalid_changes_nothing),
		cmocka_unit_test(test_format_and_hex),
		cmocka_unit_test(test_nesting_restores_exact_pointer),
		cmocka_unit_test(test_leave_misuse),
		cmocka_unit_test(test_leave_from_other_thread_refused),
		cmocka_unit_test(test_published_chain_never_mutated),
		cmocka_unit_test(test_attrs_encoding_and_bounds),
		cmocka_unit_test(test_child_inherits_attrs),
		cmocka_unit_test(test_capture_restore_across_threads),
		cmocka_unit_test(test_thread_exit_inside_span),
		cmocka_unit_test(test_random_ids),
		cmocka_unit_test(test_random_ids_differ_after_fork),
		cmocka_unit_test(test_thread_name_truncation),
		cmocka_unit_test(test_signal_reader_never_sees_torn_record),
	};

	return cmocka_run_group_tests_name("spanctx", tests, setup_keys,
					   teardown_all);
}
