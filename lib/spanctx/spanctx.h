/* SPDX-License-Identifier: MIT */
/*
 * spanctx.h - libspanctx, the client library applications link so that an
 * out-of-process profiler (spanprof, or any other OpenTelemetry reader) can
 * tell which trace and span each sampled thread is serving.
 *
 * Contract
 * --------
 * libspanctx is a WRITER of two OpenTelemetry profiling standards:
 *
 *  - OTEP 4947 thread context.  Every thread has the thread-local pointer
 *    `otel_thread_ctx_v1` (in .dynsym of libspanctx.so, accessed through the
 *    TLSDESC dialect).  It is NULL or points at the thread's active record:
 *
 *      offset size field
 *      0      16   trace_id      W3C trace id bytes
 *      16     8    span_id       W3C span id bytes
 *      24     1    valid         1 = valid
 *      25     1    trace_flags   W3C flags (bit 0 = sampled)
 *      26     2    attrs_size    bytes of attrs that follow (host endian)
 *      28     n    attrs         repeated {u8 key_index; u8 len; u8 value[len]}
 *
 *    Records are SPANCTX_RECORD_SIZE (128) bytes; attrs hold at most
 *    SPANCTX_ATTRS_MAX (100) bytes.  Writer protocol (a) of the standard: a
 *    record is filled while unpublished, valid is set to 1, a compiler fence,
 *    then ONE aligned 8-byte store publishes the pointer.  A published record
 *    is never modified: nested spans use a per-thread stack of records, and
 *    changing an attribute writes a fresh copy and republishes.  So a reader
 *    that interrupts the thread at any instruction (a perf sample, a
 *    sched_switch) sees either the old or the new record, never a torn one.
 *
 *  - OTEP 4719 process context.  spanctx_init() maps one page named
 *    OTEL_CTX (memfd "OTEL_CTX", or an anonymous mapping named with
 *    PR_SET_VMA_ANON_NAME) holding the 32-byte header
 *      {"OTEL_CTX", u32 version = 2, u32 payload_size,
 *       u64 published_at_ns (CLOCK_BOOTTIME, written last), u64 payload}
 *    whose payload is a protobuf ProcessContext (wire-compatible with
 *    proto/otel_process_context.proto): resource attributes service.name,
 *    telemetry.sdk.name, telemetry.sdk.version, and the extra attributes
 *    threadlocal.schema_version = "tlsdesc_v1_dev" and
 *    threadlocal.attribute_key_map = [key names]; a thread record's
 *    key_index indexes that array.
 *
 * Usage
 * -----
 *    static const char *const keys[] = { "http.route", "worker.id" };
 *    spanctx_init("checkout", keys, 2);          // once per process
 *
 *    struct spanctx_scope req, child;
 *    spanctx_span_enter_traceparent(&req, hdr);   // or _enter_root()
 *    spanctx_span_set_attr_str(0, "/api/checkout");
 *    spanctx_span_enter_child(&child);            // new span id, same trace
 *    ...work...
 *    spanctx_span_leave(&child);                  // exact previous pointer
 *    spanctx_span_leave(&req);
 *
 * Thread pools: spanctx_capture(&ctx) on the submitting thread, pass ctx
 * (a plain value, copyable), spanctx_restore(&scope, &ctx) on the worker,
 * spanctx_span_leave(&scope) when the task ends.
 *
 * Linking
 * -------
 *  - Shared: -lspanctx (soname libspanctx.so.1).  The library is built with
 *    -mtls-dialect=gnu2; otel_thread_ctx_v1 is reached through an
 *    R_X86_64_TLSDESC relocation and exported in .dynsym.
 *  - Static archive (libspanctx.a) in a dynamically linked program: the
 *    variable then lives in the executable's static TLS (the linker relaxes
 *    the access to initial-exec).  Readers still find it only through
 *    .dynsym, so link the program with
 *        -Wl,--export-dynamic-symbol=otel_thread_ctx_v1
 *    (binutils >= 2.35; or -Wl,--dynamic-list with the symbol).
 *  - Fully static programs: -static has no .dynsym at all, so OTEP readers
 *    cannot find the variable.  -static-pie with the export flag links,
 *    but glibc 2.36's static-pie self-relocation crashes at start-up on
 *    the R_X86_64_TPOFF64 relocation ld emits for the exported TLS symbol
 *    (checked on Debian 12); prefer a dynamic PIE there.
 *
 * Conventions: every function returning int returns 0 (or a length) on
 * success and a negative errno on failure; a failed call changes nothing.
 * Thread context functions act on the calling thread only, take no locks
 * and make no system calls except getrandom(2) for new ids; the first call
 * on a thread allocates ~9 KiB of per-thread state with malloc (freed at
 * thread exit).  They are not reentrant: do not call them from a signal
 * handler that may interrupt another spanctx call on the same thread.
 * Reading otel_thread_ctx_v1 from such a handler is fine (that is what a
 * profiler does).  spanctx_init and spanctx_shutdown are thread-safe.
 * Usable from C and C++ (the declarations are extern "C").
 */
#ifndef SPANCTX_H
#define SPANCTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SPANCTX_API __attribute__((visibility("default")))
#else
#define SPANCTX_API
#endif

#define SPANCTX_VERSION_STRING "1.0.0"

#define SPANCTX_TRACE_ID_SIZE 16
#define SPANCTX_SPAN_ID_SIZE 8
#define SPANCTX_RECORD_HDR_SIZE 28
#define SPANCTX_RECORD_SIZE 128
#define SPANCTX_ATTRS_MAX (SPANCTX_RECORD_SIZE - SPANCTX_RECORD_HDR_SIZE)
#define SPANCTX_MAX_DEPTH 32		/* nested spans per thread */
#define SPANCTX_MAX_KEYS 255		/* key_index is a u8 */
#define SPANCTX_FLAG_SAMPLED 0x01
#define SPANCTX_SCHEMA_VERSION "tlsdesc_v1_dev"
#define SPANCTX_THREAD_NAME_MAX 15	/* bytes, without the NUL */

/* "00-" 32 hex "-" 16 hex "-" 2 hex = 55 characters (+1 for the NUL). */
#define SPANCTX_TRACEPARENT_LEN 55
#define SPANCTX_TRACEPARENT_BUF (SPANCTX_TRACEPARENT_LEN + 1)

/* OTEP 4719 header constants. */
#define SPANCTX_PROCESS_CTX_SIGNATURE "OTEL_CTX"
#define SPANCTX_PROCESS_CTX_VERSION 2
#define SPANCTX_PROCESS_CTX_HDR_SIZE 32
#define SPANCTX_PROCESS_CTX_MAX_PAYLOAD (64 * 1024)

/*
 * The thread's published record pointer (OTEP 4947).  Read it if you like
 * (it is what the profiler reads); never write it: use the functions below.
 */
extern __thread void *otel_thread_ctx_v1 SPANCTX_API;

/* One published record, exactly as readers see it (128 bytes, align 2). */
struct spanctx_record {
	uint8_t trace_id[SPANCTX_TRACE_ID_SIZE];
	uint8_t span_id[SPANCTX_SPAN_ID_SIZE];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_size;
	uint8_t attrs[SPANCTX_ATTRS_MAX];
};

/*
 * A context as a plain value: what spanctx_capture() returns and
 * spanctx_restore() publishes, possibly on another thread.  Copy it freely.
 */
struct spanctx_context {
	uint8_t trace_id[SPANCTX_TRACE_ID_SIZE];
	uint8_t span_id[SPANCTX_SPAN_ID_SIZE];
	uint8_t trace_flags;
	uint8_t _reserved;
	uint16_t attrs_size;
	uint8_t attrs[SPANCTX_ATTRS_MAX];
};

/*
 * A span's scope: filled by an enter function, consumed by
 * spanctx_span_leave() on the same thread.  Treat the fields as private.
 * A scope whose enter failed is inactive; leaving it is a harmless no-op,
 * so callers may always pair enter with leave.
 */
struct spanctx_scope {
	void *prev;		/* otel_thread_ctx_v1 before the enter */
	void *owner;		/* per-thread state that entered it */
	uint64_t seq;		/* enter sequence number on that thread */
	uint32_t level;		/* stack slot the span occupies */
	uint32_t active;
};

/* ------------------------------------------------------------ process */

/*
 * Publishes (or republishes) the OTEP 4719 process context.
 * service_name: NULL or "" = $OTEL_SERVICE_NAME, else the program name.
 * attr_keys[0..n_keys): names of the thread-record attribute keys
 * (threadlocal.attribute_key_map); key_index i means attr_keys[i].
 * n_keys <= SPANCTX_MAX_KEYS.  Calling it again updates the published
 * context with the standard's update protocol (published_at_ns = 0,
 * swap payload, new published_at_ns).  Returns 0 or -EINVAL, -E2BIG
 * (payload above 64 KiB), -ENOMEM, or the mmap errno.
 * After fork() the child has no mapping (MADV_DONTFORK): call it again.
 */
SPANCTX_API int spanctx_init(const char *service_name,
			     const char *const *attr_keys, size_t n_keys);

/* Unpublishes and unmaps the process context.  Safe to call twice. */
SPANCTX_API void spanctx_shutdown(void);

/* ------------------------------------------------------------ spans */

/*
 * Enters a span with the given ids (both non-zero, else -EINVAL) and
 * flags.  -EOVERFLOW past SPANCTX_MAX_DEPTH nested spans, -ENOMEM when the
 * per-thread state cannot be allocated.  On failure nothing is published
 * and *scope is inactive.
 */
SPANCTX_API int spanctx_span_enter(struct spanctx_scope *scope,
				   const uint8_t trace_id[SPANCTX_TRACE_ID_SIZE],
				   const uint8_t span_id[SPANCTX_SPAN_ID_SIZE],
				   uint8_t trace_flags);

/* Enters the root span of a new trace: random trace id and span id. */
SPANCTX_API int spanctx_span_enter_root(struct spanctx_scope *scope,
					uint8_t trace_flags);

/*
 * Enters a child of the current span: same trace id and flags, a new
 * random span id.  With no current context it starts a new trace
 * (flags SPANCTX_FLAG_SAMPLED).  The child starts with the current span's
 * attributes (set_attr then changes the child's copy only), so that work
 * done in nested spans keeps e.g. the request's http.route.
 */
SPANCTX_API int spanctx_span_enter_child(struct spanctx_scope *scope);

/*
 * Enters the context carried by a W3C traceparent header value (exactly
 * the header's trace id, parent id and flags; enter a child of it for
 * the local server span).  Validation is strict (spanctx_traceparent_parse);
 * a rejected header returns -EINVAL and changes nothing.
 */
SPANCTX_API int spanctx_span_enter_traceparent(struct spanctx_scope *scope,
					       const char *traceparent);

/*
 * Leaves a span: publishes exactly the pointer that was current before the
 * matching enter.  Leaving an outer scope also ends the spans nested in
 * it.  Returns 0; 0 for an inactive scope; -EINVAL for a scope that is no
 * longer on this thread's stack or belongs to another thread (nothing
 * changes).  The scope becomes inactive.
 */
SPANCTX_API int spanctx_span_leave(struct spanctx_scope *scope);

/*
 * Sets attribute key_index (< n_keys given to spanctx_init) of the current
 * span to value[0..len) (len <= 255).  A previous value for the key is
 * replaced.  The record is rewritten into a spare slot and republished.
 * -ENOENT: no current span of this library on the thread; -EINVAL: bad
 * key; -E2BIG: the record would exceed SPANCTX_ATTRS_MAX bytes of attrs.
 */
SPANCTX_API int spanctx_span_set_attr(uint8_t key_index, const void *value,
				      size_t len);
SPANCTX_API int spanctx_span_set_attr_str(uint8_t key_index,
					  const char *value);

/*
 * Forgets every span of the calling thread and publishes NULL (e.g. a pool
 * thread between tasks, or after a task leaked a scope).  Outstanding
 * scopes become stale (leaving them returns -EINVAL).
 */
SPANCTX_API void spanctx_thread_reset(void);

/* ------------------------------------------------------------ values */

/* Copies the thread's current context.  -ENOENT when there is none. */
SPANCTX_API int spanctx_capture(struct spanctx_context *out);

/*
 * Enters a captured context (ids, flags and attributes) on the calling
 * thread, typically another thread than the one that captured it.
 * -EINVAL for an all-zero id or attrs_size > SPANCTX_ATTRS_MAX.
 */
SPANCTX_API int spanctx_restore(struct spanctx_scope *scope,
				const struct spanctx_context *ctx);

/*
 * Strict W3C trace-context parsing of a traceparent value:
 * "vv-<32 hex>-<16 hex>-<2 hex>", lower-case hex only, no surrounding
 * whitespace.  Version ff is invalid; version 00 must be exactly 55
 * characters; a higher version may be followed by "-..." (ignored).
 * All-zero trace id or parent id is invalid.  Returns 0 and fills *out
 * (attrs_size 0), or -EINVAL leaving *out untouched.
 */
SPANCTX_API int spanctx_traceparent_parse(const char *s,
					  struct spanctx_context *out);

/* Writes "00-<trace>-<span>-<flags>" + NUL into out (56 bytes).  Returns
 * 55, or -EINVAL for NULL arguments. */
SPANCTX_API int spanctx_traceparent_format(const struct spanctx_context *ctx,
					   char out[SPANCTX_TRACEPARENT_BUF]);

/* The current context as a traceparent (for outgoing requests).
 * Returns 55 or -ENOENT. */
SPANCTX_API int spanctx_current_traceparent(char out[SPANCTX_TRACEPARENT_BUF]);

/* Lower-case hex of n bytes into out (2n + 1 bytes, NUL terminated). */
SPANCTX_API void spanctx_hex(const uint8_t *bytes, size_t n, char *out);
SPANCTX_API void spanctx_trace_id_hex(const uint8_t id[SPANCTX_TRACE_ID_SIZE],
				      char out[2 * SPANCTX_TRACE_ID_SIZE + 1]);
SPANCTX_API void spanctx_span_id_hex(const uint8_t id[SPANCTX_SPAN_ID_SIZE],
				     char out[2 * SPANCTX_SPAN_ID_SIZE + 1]);

/* New random, non-zero ids (getrandom(2) through a per-thread pool that is
 * discarded in a forked child).  0 or -errno. */
SPANCTX_API int spanctx_random_trace_id(uint8_t out[SPANCTX_TRACE_ID_SIZE]);
SPANCTX_API int spanctx_random_span_id(uint8_t out[SPANCTX_SPAN_ID_SIZE]);

/* ------------------------------------------------------------ threads */

/*
 * The name the kernel will keep for `name` (comm is 16 bytes): the first
 * 15 bytes, cut back to the start of a UTF-8 sequence that would be split.
 * Writes it NUL-terminated into out and returns its length, or -EINVAL.
 */
SPANCTX_API int spanctx_thread_name_truncate(const char *name,
					     char out[SPANCTX_THREAD_NAME_MAX + 1]);

/* Names the calling thread (PR_SET_NAME) with the truncated name.
 * Returns the length kept or -errno. */
SPANCTX_API int spanctx_set_thread_name(const char *name);

SPANCTX_API const char *spanctx_version(void);

#ifdef __cplusplus
}	/* extern "C" */
#endif

#ifdef __cplusplus
static_assert(sizeof(struct spanctx_record) == SPANCTX_RECORD_SIZE,
	      "spanctx_record layout");
#else
_Static_assert(sizeof(struct spanctx_record) == SPANCTX_RECORD_SIZE,
	       "spanctx_record layout");
_Static_assert(__builtin_offsetof(struct spanctx_record, attrs) ==
	       SPANCTX_RECORD_HDR_SIZE, "OTEP 4947 header is 28 bytes");
#endif

#endif /* SPANCTX_H */
