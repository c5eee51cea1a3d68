/* SPDX-License-Identifier: MIT */
/*
 * procctx.c - OTEP 4719 process-context writer.
 *
 * Contract: spanctx_init() maps one page whose first 32 bytes are the
 * OTEL_CTX header, names the mapping OTEL_CTX, and points the header at a
 * heap buffer holding a protobuf ProcessContext.  published_at_ns
 * (CLOCK_BOOTTIME, never 0, never repeated) is written last; an update
 * stores 0 first, swaps payload pointer and size, then stores the new
 * timestamp, with full fences between, so a concurrent reader in another
 * process that re-reads the timestamp after copying the payload detects
 * any change.  The old payload is freed only after the swap.  All state is
 * under one mutex; the thread-context fast path never takes it.
 *
 * The payload is encoded here by hand instead of with protobuf-c: it is
 * five length-delimited fields of strings (ProcessContext{resource=1,
 * attributes=2}, Resource{attributes=1}, KeyValue{key=1,value=2},
 * AnyValue{string_value=1, array_value=5}, ArrayValue{values=1}), and a
 * dependency on libprotobuf-c in every instrumented application is not
 * worth that.  The unit test decodes the bytes with protobuf-c generated
 * from proto/otel_process_context.proto, so the two cannot drift apart.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "spanctx.h"
#include "spanctx_internal.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

struct otel_ctx_hdr {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload;
};

_Static_assert(sizeof(struct otel_ctx_hdr) == SPANCTX_PROCESS_CTX_HDR_SIZE,
	       "OTEP 4719 header");

static pthread_mutex_t pc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct otel_ctx_hdr *pc_hdr;	/* the mapping, NULL = unpublished */
static size_t pc_map_len;
static uint8_t *pc_payload;		/* published payload (heap) */
static uint64_t pc_last_ts;
static _Atomic uint32_t pc_n_keys;

uint32_t spanctx__n_keys(void)
{
	return atomic_load_explicit(&pc_n_keys, memory_order_relaxed);
}

void spanctx__procctx_atfork_child(void)
{
	/* The mapping is MADV_DONTFORK: gone in the child.  The payload is
	 * ordinary heap, copied; forget it too (the child republishes). */
	pc_hdr = NULL;
	pc_map_len = 0;
	free(pc_payload);
	pc_payload = NULL;
	pc_last_ts = 0;
	atomic_store(&pc_n_keys, 0);
	pthread_mutex_init(&pc_lock, NULL);
}

/* ------------------------------------------------------------ protobuf */

struct pb {
	uint8_t *p;
	size_t len, cap;
	int err;	/* 0, -E2BIG (over the 64 KiB cap) or -ENOMEM */
};

static void pb_free(struct pb *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static void pb_put(struct pb *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > SPANCTX_PROCESS_CTX_MAX_PAYLOAD) {
		b->err = -E2BIG;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_put(b, tmp, n);
}

/* Field `field` with wire type 2 (length-delimited): tag, length, bytes. */
static void pb_len_field(struct pb *b, uint32_t field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_put(b, d, n);
}

/* Appends child as a length-delimited field of b, then frees child. */
static void pb_nest(struct pb *b, uint32_t field, struct pb *child)
{
	if (child->err) {
		if (!b->err)
			b->err = child->err;
	} else {
		pb_len_field(b, field, child->p, child->len);
	}
	pb_free(child);
}

/* AnyValue{string_value = s} as field `field` of b. */
static void pb_any_string(struct pb *b, uint32_t field, const char *s)
{
	struct pb any = { 0 };

	pb_len_field(&any, 1, s, strlen(s));
	pb_nest(b, field, &any);
}

/* KeyValue{key, value = AnyValue{string_value}} as field `field` of b. */
static void pb_kv_string(struct pb *b, uint32_t field, const char *key,
			 const char *val)
{
	struct pb kv = { 0 };

	pb_len_field(&kv, 1, key, strlen(key));
	pb_any_string(&kv, 2, val);
	pb_nest(b, field, &kv);
}

/* KeyValue{key, value = AnyValue{array_value = [strings]}}. */
static void pb_kv_string_array(struct pb *b, uint32_t field, const char *key,
			       const char *const *vals, size_t n)
{
	struct pb arr = { 0 }, any = { 0 }, kv = { 0 };

	for (size_t i = 0; i < n; i++)
		pb_any_string(&arr, 1, vals[i]);	/* ArrayValue.values */
	pb_nest(&any, 5, &arr);				/* AnyValue.array_value */
	pb_len_field(&kv, 1, key, strlen(key));
	pb_nest(&kv, 2, &any);
	pb_nest(b, field, &kv);
}

static int encode_payload(const char *service, const char *const *keys,
			  size_t n_keys, struct pb *out)
{
	struct pb res = { 0 };

	pb_kv_string(&res, 1, "service.name", service);
	pb_kv_string(&res, 1, "telemetry.sdk.name", "libspanctx");
	pb_kv_string(&res, 1, "telemetry.sdk.version", SPANCTX_VERSION_STRING);
	pb_nest(out, 1, &res);				/* resource */
	pb_kv_string(out, 2, "threadlocal.schema_version",
		     SPANCTX_SCHEMA_VERSION);
	pb_kv_string_array(out, 2, "threadlocal.attribute_key_map", keys,
			   n_keys);
	if (out->err) {
		int err = out->err;

		pb_free(out);
		return err;
	}
	return 0;
}

/* ------------------------------------------------------------ mapping */

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A fresh timestamp: non-zero and different from the previous one. */
static uint64_t next_ts(void)
{
	uint64_t t = boottime_ns();

	if (t <= pc_last_ts)
		t = pc_last_ts + 1;
	pc_last_ts = t;
	return t;
}

static void *map_otel_ctx(size_t len)
{
	void *p = MAP_FAILED;
	int fd;

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING |
			  MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)	/* kernels before 6.3 */
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)len) == 0)
			p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE, fd, 0);
		close(fd);	/* the mapping keeps the file */
	}
	if (p == MAP_FAILED)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static const char *pick_service_name(const char *arg)
{
	const char *env;

	if (arg && *arg)
		return arg;
	env = getenv("OTEL_SERVICE_NAME");
	if (env && *env)
		return env;
	if (program_invocation_short_name && *program_invocation_short_name)
		return program_invocation_short_name;
	return "unknown_service";
}

int spanctx_init(const char *service_name, const char *const *attr_keys,
		 size_t n_keys)
{
	struct pb payload = { 0 };
	struct otel_ctx_hdr *h;
	uint8_t *old = NULL;
	int err = 0;

	if (n_keys > SPANCTX_MAX_KEYS || (n_keys && !attr_keys))
		return -EINVAL;
	for (size_t i = 0; i < n_keys; i++)
		if (!attr_keys[i])
			return -EINVAL;
	spanctx__once();
	err = encode_payload(pick_service_name(service_name), attr_keys,
			     n_keys, &payload);
	if (err)
		return err;

	pthread_mutex_lock(&pc_lock);
	h = pc_hdr;
	if (!h) {
		long pg = sysconf(_SC_PAGESIZE);
		size_t len = pg > 0 ? (size_t)pg : 4096;

		h = map_otel_ctx(len);
		if (!h) {
			err = -errno;
			goto out;
		}
		/* Best effort: no fork inheritance, and a name readers find.
		 * PR_SET_VMA_ANON_NAME fails with EINVAL on kernels without
		 * CONFIG_ANON_VMA_NAME and EBADF on the memfd mapping (whose
		 * name is already /memfd:OTEL_CTX); both are fine. */
		madvise(h, len, MADV_DONTFORK);
		memcpy(h->signature, SPANCTX_PROCESS_CTX_SIGNATURE, 8);
		h->version = SPANCTX_PROCESS_CTX_VERSION;
		h->payload_size = (uint32_t)payload.len;
		h->payload = (uint64_t)(uintptr_t)payload.p;
		atomic_thread_fence(memory_order_seq_cst);
		__atomic_store_n(&h->published_at_ns, next_ts(),
				 __ATOMIC_RELEASE);
		prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, len,
		      (unsigned long)"OTEL_CTX");
		pc_hdr = h;
		pc_map_len = len;
	} else {
		__atomic_store_n(&h->published_at_ns, 0, __ATOMIC_RELEASE);
		atomic_thread_fence(memory_order_seq_cst);
		h->payload_size = (uint32_t)payload.len;
		h->payload = (uint64_t)(uintptr_t)payload.p;
		atomic_thread_fence(memory_order_seq_cst);
		__atomic_store_n(&h->published_at_ns, next_ts(),
				 __ATOMIC_RELEASE);
		old = pc_payload;
	}
	pc_payload = payload.p;
	payload.p = NULL;
	atomic_store(&pc_n_keys, (uint32_t)n_keys);
out:
	pthread_mutex_unlock(&pc_lock);
	free(old);
	pb_free(&payload);
	return err;
}

void spanctx_shutdown(void)
{
	pthread_mutex_lock(&pc_lock);
	if (pc_hdr) {
		__atomic_store_n(&pc_hdr->published_at_ns, 0, __ATOMIC_RELEASE);
		atomic_thread_fence(memory_order_seq_cst);
		munmap(pc_hdr, pc_map_len);
		pc_hdr = NULL;
		pc_map_len = 0;
	}
	free(pc_payload);
	pc_payload = NULL;
	atomic_store(&pc_n_keys, 0);
	pthread_mutex_unlock(&pc_lock);
}
