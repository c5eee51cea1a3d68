/* SPDX-License-Identifier: MIT */
/*
 * spanctx.c - OTEP 4947 thread-context writer, ids, traceparent, thread names.
 *
 * Contract: otel_thread_ctx_v1 is only ever written by publish(), with one
 * aligned 8-byte store after a compiler fence, and only ever points at NULL,
 * at a pointer the caller had before (scope->prev) or at a record of this
 * thread's stack that was completely written before the store.  A record
 * that is published (or that a live scope's prev refers to) is never
 * written: each stack level owns two record slots, and an attribute change
 * writes the unpublished slot and republishes.  Invariant kept by every
 * function below: when depth > 0 the published pointer is the active slot
 * of level depth - 1, and every live scope at level L saved as prev the
 * active slot of level L - 1 (or the pointer found at level 0).
 *
 * Per-thread state is heap memory reached through a second TLS pointer, so
 * the library's TLS block stays 16 bytes (it fits the static TLS surplus
 * even when the library is dlopen()ed, which keeps TLSDESC offsets static).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>

#include "spanctx.h"
#include "spanctx_internal.h"

/* The standard's symbol: exported, initial value NULL (.tbss). */
__thread void *otel_thread_ctx_v1 SPANCTX_API = NULL;

_Static_assert(sizeof(struct spanctx_context) == SPANCTX_RECORD_SIZE,
	       "spanctx_context layout");
_Static_assert(SPANCTX_ATTRS_MAX <= 0xffff, "attrs_size is a u16");

#define RANDOM_POOL 256

struct level {
	struct spanctx_record rec[2];
	uint64_t seq;		/* seq of the scope occupying this level */
	uint8_t act;		/* which rec[] is (or was last) published */
};

struct spanctx_thread {
	uint32_t depth;		/* levels in use */
	uint64_t next_seq;
	uint32_t rnd_pos;	/* RANDOM_POOL = empty */
	uint8_t rnd[RANDOM_POOL];
	struct level lv[SPANCTX_MAX_DEPTH];
};

static __thread struct spanctx_thread *sp_self;

static pthread_once_t sp_once = PTHREAD_ONCE_INIT;
static pthread_key_t sp_key;
static bool sp_key_ok;

/* ------------------------------------------------------------ state */

static void publish(void *rec)
{
	/* Everything the record holds is written before the pointer. */
	atomic_signal_fence(memory_order_seq_cst);
	__atomic_store_n(&otel_thread_ctx_v1, rec, __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
}

static void thread_exit(void *arg)
{
	struct spanctx_thread *t = arg;

	if (sp_self == t) {
		publish(NULL);
		sp_self = NULL;
	}
	free(t);
}

static void atfork_child(void)
{
	/* The child must not hand out the parent's next random bytes. */
	if (sp_self)
		sp_self->rnd_pos = RANDOM_POOL;
	spanctx__procctx_atfork_child();
}

static void once_init(void)
{
	sp_key_ok = pthread_key_create(&sp_key, thread_exit) == 0;
	pthread_atfork(NULL, NULL, atfork_child);
}

void spanctx__once(void)
{
	pthread_once(&sp_once, once_init);
}

static struct spanctx_thread *self_get(void)
{
	struct spanctx_thread *t = sp_self;

	if (t)
		return t;
	spanctx__once();
	/* C11: the size must be a multiple of the alignment. */
	t = aligned_alloc(64, (sizeof(*t) + 63) & ~(size_t)63);
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->next_seq = 1;
	t->rnd_pos = RANDOM_POOL;
	if (sp_key_ok)
		pthread_setspecific(sp_key, t);	/* freed at thread exit */
	sp_self = t;
	return t;
}

/* ------------------------------------------------------------ random */

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

static int fill_random(uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t r = getrandom(buf, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

static int random_id(uint8_t *out, size_t n)
{
	struct spanctx_thread *t = self_get();

	if (!t) {	/* no pool: straight from the kernel */
		do {
			int err = fill_random(out, n);

			if (err)
				return err;
		} while (all_zero(out, n));
		return 0;
	}
	do {
		if (t->rnd_pos + n > RANDOM_POOL) {
			int err = fill_random(t->rnd, RANDOM_POOL);

			if (err)
				return err;
			t->rnd_pos = 0;
		}
		memcpy(out, t->rnd + t->rnd_pos, n);
		t->rnd_pos += (uint32_t)n;
	} while (all_zero(out, n));
	return 0;
}

int spanctx_random_trace_id(uint8_t out[SPANCTX_TRACE_ID_SIZE])
{
	if (!out)
		return -EINVAL;
	return random_id(out, SPANCTX_TRACE_ID_SIZE);
}

int spanctx_random_span_id(uint8_t out[SPANCTX_SPAN_ID_SIZE])
{
	if (!out)
		return -EINVAL;
	return random_id(out, SPANCTX_SPAN_ID_SIZE);
}

/* ------------------------------------------------------------ spans */

static void scope_clear(struct spanctx_scope *s)
{
	memset(s, 0, sizeof(*s));
}

/*
 * Pushes a record built from ctx (ids already validated) and publishes it.
 * The slot written is unpublished: the published pointer is at a level
 * below t->depth (or is not ours).
 */
static int push(struct spanctx_scope *s, const struct spanctx_context *ctx)
{
	struct spanctx_thread *t = self_get();
	struct spanctx_record *r;
	struct level *l;

	if (!t)
		return -ENOMEM;
	if (t->depth >= SPANCTX_MAX_DEPTH)
		return -EOVERFLOW;
	l = &t->lv[t->depth];
	l->act = 0;
	r = &l->rec[0];
	r->valid = 0;
	memcpy(r->trace_id, ctx->trace_id, SPANCTX_TRACE_ID_SIZE);
	memcpy(r->span_id, ctx->span_id, SPANCTX_SPAN_ID_SIZE);
	r->trace_flags = ctx->trace_flags;
	r->attrs_size = ctx->attrs_size;
	memcpy(r->attrs, ctx->attrs, ctx->attrs_size);
	r->valid = 1;

	s->prev = otel_thread_ctx_v1;
	s->owner = t;
	s->seq = t->next_seq++;
	s->level = t->depth;
	s->active = 1;
	l->seq = s->seq;
	t->depth++;
	publish(r);
	return 0;
}

static void ctx_init(struct spanctx_context *c)
{
	memset(c, 0, sizeof(*c));
}

int spanctx_span_enter(struct spanctx_scope *scope,
		       const uint8_t trace_id[SPANCTX_TRACE_ID_SIZE],
		       const uint8_t span_id[SPANCTX_SPAN_ID_SIZE],
		       uint8_t trace_flags)
{
	struct spanctx_context c;

	if (!scope)
		return -EINVAL;
	scope_clear(scope);
	if (!trace_id || !span_id ||
	    all_zero(trace_id, SPANCTX_TRACE_ID_SIZE) ||
	    all_zero(span_id, SPANCTX_SPAN_ID_SIZE))
		return -EINVAL;
	ctx_init(&c);
	memcpy(c.trace_id, trace_id, SPANCTX_TRACE_ID_SIZE);
	memcpy(c.span_id, span_id, SPANCTX_SPAN_ID_SIZE);
	c.trace_flags = trace_flags;
	return push(scope, &c);
}

int spanctx_span_enter_root(struct spanctx_scope *scope, uint8_t trace_flags)
{
	struct spanctx_context c;
	int err;

	if (!scope)
		return -EINVAL;
	scope_clear(scope);
	ctx_init(&c);
	err = spanctx_random_trace_id(c.trace_id);
	if (!err)
		err = spanctx_random_span_id(c.span_id);
	if (err)
		return err;
	c.trace_flags = trace_flags;
	return push(scope, &c);
}

/* The record otel_thread_ctx_v1 points at, if it is a valid one. */
static const struct spanctx_record *current_record(void)
{
	const struct spanctx_record *r = otel_thread_ctx_v1;

	if (!r || r->valid != 1)
		return NULL;
	return r;
}

int spanctx_span_enter_child(struct spanctx_scope *scope)
{
	const struct spanctx_record *cur;
	struct spanctx_context c;
	int err;

	if (!scope)
		return -EINVAL;
	scope_clear(scope);
	cur = current_record();
	if (!cur || all_zero(cur->trace_id, SPANCTX_TRACE_ID_SIZE))
		return spanctx_span_enter_root(scope, SPANCTX_FLAG_SAMPLED);
	ctx_init(&c);
	memcpy(c.trace_id, cur->trace_id, SPANCTX_TRACE_ID_SIZE);
	c.trace_flags = cur->trace_flags;
	/* Attributes describe the work (the request's route, the tenant):
	 * a child span's samples keep them, as pprof labels do through a Go
	 * context.  cur's attrs_size was bounded when it was written. */
	c.attrs_size = cur->attrs_size;
	memcpy(c.attrs, cur->attrs, cur->attrs_size);
	err = spanctx_random_span_id(c.span_id);
	if (err)
		return err;
	return push(scope, &c);
}

int spanctx_span_enter_traceparent(struct spanctx_scope *scope,
				   const char *traceparent)
{
	struct spanctx_context c;
	int err;

	if (!scope)
		return -EINVAL;
	scope_clear(scope);
	err = spanctx_traceparent_parse(traceparent, &c);
	if (err)
		return err;
	return push(scope, &c);
}

int spanctx_restore(struct spanctx_scope *scope,
		    const struct spanctx_context *ctx)
{
	if (!scope)
		return -EINVAL;
	scope_clear(scope);
	if (!ctx || ctx->attrs_size > SPANCTX_ATTRS_MAX ||
	    all_zero(ctx->trace_id, SPANCTX_TRACE_ID_SIZE) ||
	    all_zero(ctx->span_id, SPANCTX_SPAN_ID_SIZE))
		return -EINVAL;
	return push(scope, ctx);
}

int spanctx_span_leave(struct spanctx_scope *scope)
{
	struct spanctx_thread *t = sp_self;

	if (!scope || !scope->active)
		return 0;
	if (scope->owner != t || !t || scope->level >= t->depth ||
	    t->lv[scope->level].seq != scope->seq)
		return -EINVAL;	/* stale, or another thread's */
	t->depth = scope->level;
	publish(scope->prev);
	scope->active = 0;
	return 0;
}

void spanctx_thread_reset(void)
{
	struct spanctx_thread *t = sp_self;

	publish(NULL);
	if (t) {
		t->depth = 0;
		/* Levels keep their seq; a stale scope fails the depth test
		 * now and the seq test once the level is reused. */
	}
}

/*
 * Copies the attrs of `from` except key `key` into `to`; returns the bytes
 * written.  Entries that do not fit (malformed) end the copy, as readers do.
 */
static uint16_t copy_attrs_without(uint8_t *to, const uint8_t *from,
				   uint16_t size, uint8_t key)
{
	uint16_t in = 0, out = 0;

	while (in + 2 <= size) {
		uint8_t k = from[in], len = from[in + 1];

		if (in + 2 + len > size)
			break;
		if (k != key) {
			memcpy(to + out, from + in, 2u + len);
			out += 2 + len;
		}
		in += 2 + len;
	}
	return out;
}

int spanctx_span_set_attr(uint8_t key_index, const void *value, size_t len)
{
	struct spanctx_thread *t = sp_self;
	const struct spanctx_record *cur;
	struct spanctx_record *nr;
	struct level *l;
	uint16_t used;

	if (!t || t->depth == 0)
		return -ENOENT;
	if (key_index >= spanctx__n_keys() || (!value && len))
		return -EINVAL;
	if (len > 255)
		return -E2BIG;
	l = &t->lv[t->depth - 1];
	cur = &l->rec[l->act];
	nr = &l->rec[l->act ^ 1];	/* unpublished: safe to write */
	used = copy_attrs_without(nr->attrs, cur->attrs, cur->attrs_size,
				  key_index);
	if ((size_t)used + 2 + len > SPANCTX_ATTRS_MAX)
		return -E2BIG;
	nr->valid = 0;
	memcpy(nr->trace_id, cur->trace_id, SPANCTX_TRACE_ID_SIZE);
	memcpy(nr->span_id, cur->span_id, SPANCTX_SPAN_ID_SIZE);
	nr->trace_flags = cur->trace_flags;
	nr->attrs[used] = key_index;
	nr->attrs[used + 1] = (uint8_t)len;
	if (len)
		memcpy(nr->attrs + used + 2, value, len);
	nr->attrs_size = (uint16_t)(used + 2 + len);
	nr->valid = 1;
	l->act ^= 1;
	publish(nr);
	return 0;
}

int spanctx_span_set_attr_str(uint8_t key_index, const char *value)
{
	if (!value)
		return -EINVAL;
	return spanctx_span_set_attr(key_index, value, strlen(value));
}

int spanctx_capture(struct spanctx_context *out)
{
	const struct spanctx_record *r = current_record();
	uint16_t n;

	if (!out)
		return -EINVAL;
	if (!r)
		return -ENOENT;
	n = r->attrs_size;
	if (n > SPANCTX_ATTRS_MAX)	/* a foreign writer's larger record */
		n = SPANCTX_ATTRS_MAX;
	ctx_init(out);
	memcpy(out->trace_id, r->trace_id, SPANCTX_TRACE_ID_SIZE);
	memcpy(out->span_id, r->span_id, SPANCTX_SPAN_ID_SIZE);
	out->trace_flags = r->trace_flags;
	out->attrs_size = n;
	memcpy(out->attrs, r->attrs, n);
	return 0;
}

/* ------------------------------------------------------------ hex */

static const char hexdig[] = "0123456789abcdef";

void spanctx_hex(const uint8_t *bytes, size_t n, char *out)
{
	if (!out)
		return;
	for (size_t i = 0; bytes && i < n; i++) {
		*out++ = hexdig[bytes[i] >> 4];
		*out++ = hexdig[bytes[i] & 15];
	}
	*out = '\0';
}

void spanctx_trace_id_hex(const uint8_t id[SPANCTX_TRACE_ID_SIZE],
			  char out[2 * SPANCTX_TRACE_ID_SIZE + 1])
{
	spanctx_hex(id, SPANCTX_TRACE_ID_SIZE, out);
}

void spanctx_span_id_hex(const uint8_t id[SPANCTX_SPAN_ID_SIZE],
			 char out[2 * SPANCTX_SPAN_ID_SIZE + 1])
{
	spanctx_hex(id, SPANCTX_SPAN_ID_SIZE, out);
}

/* Lower-case hex digit value, or -1 (upper case is rejected on purpose). */
static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool parse_hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

int spanctx_traceparent_parse(const char *s, struct spanctx_context *out)
{
	struct spanctx_context c;
	uint8_t version;
	size_t len;

	if (!s || !out)
		return -EINVAL;
	len = strnlen(s, SPANCTX_TRACEPARENT_LEN + 1);
	if (len < SPANCTX_TRACEPARENT_LEN)
		return -EINVAL;
	/* Each parse_hex stops at the first non-hex byte, so it never reads
	 * past the NUL of a short string; len was checked anyway. */
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return -EINVAL;
	ctx_init(&c);
	if (!parse_hex(s, &version, 1) || version == 0xff)
		return -EINVAL;
	if (len > SPANCTX_TRACEPARENT_LEN &&
	    (version == 0 || s[SPANCTX_TRACEPARENT_LEN] != '-'))
		return -EINVAL;
	if (!parse_hex(s + 3, c.trace_id, SPANCTX_TRACE_ID_SIZE) ||
	    !parse_hex(s + 36, c.span_id, SPANCTX_SPAN_ID_SIZE) ||
	    !parse_hex(s + 53, &c.trace_flags, 1))
		return -EINVAL;
	if (all_zero(c.trace_id, SPANCTX_TRACE_ID_SIZE) ||
	    all_zero(c.span_id, SPANCTX_SPAN_ID_SIZE))
		return -EINVAL;
	*out = c;
	return 0;
}

int spanctx_traceparent_format(const struct spanctx_context *ctx,
			       char out[SPANCTX_TRACEPARENT_BUF])
{
	if (!ctx || !out)
		return -EINVAL;
	out[0] = '0';
	out[1] = '0';
	out[2] = '-';
	spanctx_hex(ctx->trace_id, SPANCTX_TRACE_ID_SIZE, out + 3);
	out[35] = '-';
	spanctx_hex(ctx->span_id, SPANCTX_SPAN_ID_SIZE, out + 36);
	out[52] = '-';
	spanctx_hex(&ctx->trace_flags, 1, out + 53);
	return SPANCTX_TRACEPARENT_LEN;
}

int spanctx_current_traceparent(char out[SPANCTX_TRACEPARENT_BUF])
{
	struct spanctx_context c;
	int err;

	if (!out)
		return -EINVAL;
	err = spanctx_capture(&c);
	if (err)
		return err;
	return spanctx_traceparent_format(&c, out);
}

/* ------------------------------------------------------------ threads */

int spanctx_thread_name_truncate(const char *name,
				 char out[SPANCTX_THREAD_NAME_MAX + 1])
{
	size_t n;

	if (!name || !out)
		return -EINVAL;
	n = strnlen(name, SPANCTX_THREAD_NAME_MAX + 1);
	if (n > SPANCTX_THREAD_NAME_MAX) {
		n = SPANCTX_THREAD_NAME_MAX;
		/* name[n] is the first byte dropped; if it continues a UTF-8
		 * sequence, drop that sequence's kept bytes too. */
		while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, name, n);
	out[n] = '\0';
	return (int)n;
}

int spanctx_set_thread_name(const char *name)
{
	char buf[SPANCTX_THREAD_NAME_MAX + 1];
	int n = spanctx_thread_name_truncate(name, buf);

	if (n < 0)
		return n;
	if (prctl(PR_SET_NAME, (unsigned long)buf, 0, 0, 0) < 0)
		return -errno;
	return n;
}

const char *spanctx_version(void)
{
	return SPANCTX_VERSION_STRING;
}
