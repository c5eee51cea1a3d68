// SPDX-License-Identifier: MIT
/*
 * test_abi_compat.c - libspanctx's published record (lib/spanctx/spanctx.h,
 * the writer) and the layout BPF reads it with (include/spanprof/abi.h,
 * struct sp_otel_thread_ctx_hdr) are two definitions of one OTEP 4947
 * record.  Both headers are included here and every field is compared:
 * offset and size, at compile time (a drift breaks the build), and at run
 * time on a record libspanctx really published (a span entered with a
 * traceparent and an attribute, read through otel_thread_ctx_v1 with the
 * BPF layout the way tracectx.bpf.h reads it).  Also the limits the two
 * sides must agree on: id sizes, the attribute bytes BPF copies per sample
 * against the most libspanctx writes, and the OTEP 4719 process-context
 * constants the collector's reader (collector/tracectx/process_ctx.h)
 * shares with the library.
 *
 * Linked with libspanctx.a (lib/spanctx/build.mk has the rule).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "spanctx.h"
#include "spanprof/abi.h"
#include "collector/tracectx/process_ctx.h"

#define SAME_FIELD(a, fa, b, fb)                                                        \
	_Static_assert(offsetof(a, fa) == offsetof(b, fb), #fa " offset");             \
	_Static_assert(sizeof(((a *)0)->fa) == sizeof(((b *)0)->fb), #fa " size")

typedef struct spanctx_record lib_rec;
typedef struct sp_otel_thread_ctx_hdr bpf_hdr;

SAME_FIELD(lib_rec, trace_id, bpf_hdr, trace_id);
SAME_FIELD(lib_rec, span_id, bpf_hdr, span_id);
SAME_FIELD(lib_rec, valid, bpf_hdr, valid);
SAME_FIELD(lib_rec, trace_flags, bpf_hdr, trace_flags);
SAME_FIELD(lib_rec, attrs_size, bpf_hdr, attrs_size);
/* BPF reads the attrs right after the header it knows. */
_Static_assert(offsetof(lib_rec, attrs) == sizeof(bpf_hdr), "attrs follow the header");
_Static_assert(SPANCTX_RECORD_HDR_SIZE == sizeof(bpf_hdr), "header size");
_Static_assert(SPANCTX_TRACE_ID_SIZE == SP_TRACE_ID_LEN, "trace id size");
_Static_assert(SPANCTX_SPAN_ID_SIZE == SP_SPAN_ID_LEN, "span id size");
/* Every attribute byte libspanctx can publish fits the per-sample copy. */
_Static_assert(SPANCTX_ATTRS_MAX <= SP_CTX_ATTRS_MAX, "attrs bound");
_Static_assert(SPANCTX_PROCESS_CTX_MAX_PAYLOAD == SP_PROCESS_CTX_MAX_PAYLOAD,
	       "process context payload cap");
_Static_assert(SPANCTX_MAX_KEYS == SP_PROCESS_CTX_MAX_KEYS, "attribute key count");

struct field {
	const char *name;
	size_t lib_off, lib_size, bpf_off, bpf_size;
};

#define FIELD(f)                                                                          \
	{ #f, offsetof(lib_rec, f), sizeof(((lib_rec *)0)->f), offsetof(bpf_hdr, f),      \
	  sizeof(((bpf_hdr *)0)->f) }

static void test_offsets(void **state)
{
	static const struct field fields[] = {
		FIELD(trace_id), FIELD(span_id), FIELD(valid), FIELD(trace_flags),
		FIELD(attrs_size),
	};
	size_t i, end = 0;

	(void)state;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		print_message("%-12s lib %2zu+%zu  bpf %2zu+%zu\n", fields[i].name,
			      fields[i].lib_off, fields[i].lib_size, fields[i].bpf_off,
			      fields[i].bpf_size);
		assert_int_equal(fields[i].lib_off, fields[i].bpf_off);
		assert_int_equal(fields[i].lib_size, fields[i].bpf_size);
		/* in order, no gap: the header is packed as OTEP 4947 says */
		assert_int_equal(fields[i].bpf_off, end);
		end = fields[i].bpf_off + fields[i].bpf_size;
	}
	assert_int_equal(end, sizeof(bpf_hdr));
	assert_int_equal(sizeof(bpf_hdr), 28);
}

static void test_published_record(void **state)
{
	static const char *const keys[] = { "http.route" };
	static const uint8_t want_trace[16] = {
		0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
		0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
	};
	static const uint8_t want_span[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	struct spanctx_scope scope;
	const bpf_hdr *h;
	const uint8_t *rec;

	(void)state;
	assert_int_equal(spanctx_init("test-abi-compat", keys, 1), 0);
	assert_int_equal(spanctx_span_enter_traceparent(
				 &scope, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
			 0);
	assert_int_equal(spanctx_span_set_attr_str(0, "/checkout"), 0);

	/* What the profiler sees: the TLS pointer, read with BPF's layout. */
	rec = otel_thread_ctx_v1;
	assert_non_null(rec);
	h = (const bpf_hdr *)rec;
	assert_memory_equal(h->trace_id, want_trace, sizeof(want_trace));
	assert_memory_equal(h->span_id, want_span, sizeof(want_span));
	assert_int_equal(h->valid, 1);
	assert_int_equal(h->trace_flags, 1);
	assert_true(h->attrs_size > 0 && h->attrs_size <= SP_CTX_ATTRS_MAX);
	/* attrs right after the header: key index 0, length, value */
	assert_int_equal(rec[sizeof(bpf_hdr)], 0);
	assert_int_equal(rec[sizeof(bpf_hdr) + 1], strlen("/checkout"));
	assert_memory_equal(rec + sizeof(bpf_hdr) + 2, "/checkout", strlen("/checkout"));

	assert_int_equal(spanctx_span_leave(&scope), 0);
	spanctx_thread_reset();
	spanctx_shutdown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_published_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
