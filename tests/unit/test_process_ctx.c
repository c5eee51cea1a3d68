// SPDX-License-Identifier: MIT
/*
 * test_process_ctx.c - the OTEP 4719 process-context reader against
 * headers and payloads written by hand: the pure parsers, then live reads
 * of this process (and of a forked child) after publishing an OTEL_CTX
 * mapping the three ways writers do it (memfd, anonymous shared and
 * anonymous private mappings named with PR_SET_VMA_ANON_NAME).  Every
 * malformed case must give its failure code quickly (bounded retries).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "collector/tracectx/process_ctx.h"
#include "otel_process_context.pb-c.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

typedef Opentelemetry__Proto__Common__V1__KeyValue KV;
typedef Opentelemetry__Proto__Common__V1__AnyValue AV;

enum pub_kind { PUB_MEMFD, PUB_ANON_SHARED, PUB_ANON_PRIVATE };

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ payloads */

/* Encodes a ProcessContext.  keys may be NULL; n_keys < 0 = no key map. */
static uint8_t *make_payload(const char *service, const char *schema, const char *const *keys,
			     int n_keys, size_t *len)
{
	Opentelemetry__Proto__Processcontext__ProcessContext pc =
		OPENTELEMETRY__PROTO__PROCESSCONTEXT__PROCESS_CONTEXT__INIT;
	Opentelemetry__Proto__Resource__V1__Resource res = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	Opentelemetry__Proto__Common__V1__ArrayValue arr =
		OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
	KV kv_svc = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	KV kv_schema = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	KV kv_map = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	AV av_svc = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	AV av_schema = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	AV av_map = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	KV *res_attrs[1], *attrs[2];
	AV *vals = NULL, **valp = NULL;
	uint8_t *buf;
	int i;

	if (service) {
		kv_svc.key = (char *)"service.name";
		av_svc.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		av_svc.string_value = (char *)service;
		kv_svc.value = &av_svc;
		res_attrs[0] = &kv_svc;
		res.attributes = res_attrs;
		res.n_attributes = 1;
	}
	pc.resource = &res;
	pc.attributes = attrs;
	if (schema) {
		kv_schema.key = (char *)"threadlocal.schema_version";
		av_schema.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		av_schema.string_value = (char *)schema;
		kv_schema.value = &av_schema;
		attrs[pc.n_attributes++] = &kv_schema;
	}
	if (n_keys >= 0) {
		vals = calloc((size_t)n_keys + 1, sizeof(*vals));
		valp = calloc((size_t)n_keys + 1, sizeof(*valp));
		assert_non_null(vals);
		assert_non_null(valp);
		for (i = 0; i < n_keys; i++) {
			opentelemetry__proto__common__v1__any_value__init(&vals[i]);
			if (keys[i]) {
				vals[i].value_case =
					OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
				vals[i].string_value = (char *)keys[i];
			} else {
				vals[i].value_case =
					OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
				vals[i].int_value = 7;
			}
			valp[i] = &vals[i];
		}
		arr.values = valp;
		arr.n_values = (size_t)n_keys;
		kv_map.key = (char *)"threadlocal.attribute_key_map";
		av_map.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
		av_map.array_value = &arr;
		kv_map.value = &av_map;
		attrs[pc.n_attributes++] = &kv_map;
	}
	*len = opentelemetry__proto__processcontext__process_context__get_packed_size(&pc);
	buf = malloc(*len ? *len : 1);
	assert_non_null(buf);
	assert_int_equal(opentelemetry__proto__processcontext__process_context__pack(&pc, buf), *len);
	free(vals);
	free(valp);
	return buf;
}

static const char *const demo_keys[] = { "http.route", "user.id", "tenant" };

static uint8_t *demo_payload(size_t *len)
{
	return make_payload("checkout", "tlsdesc_v1_dev", demo_keys, 3, len);
}

/* ------------------------------------------------------------ publishing */

struct pub {
	uint8_t *map;
	size_t map_len;
	int fd;
	uint8_t *payload;	/* what the header points at */
	size_t payload_len;
};

static struct pub g_pub;

static void put_header(uint8_t *h, const char *sig, uint32_t version, uint32_t size, uint64_t ts,
		       uint64_t addr)
{
	memcpy(h, sig, 8);
	memcpy(h + 8, &version, 4);
	memcpy(h + 12, &size, 4);
	memcpy(h + 16, &ts, 8);
	memcpy(h + 24, &addr, 8);
}

/* 0, or -EOPNOTSUPP when this kernel cannot name anonymous mappings. */
static int publish(enum pub_kind kind, const char *sig, uint32_t version, uint32_t size, uint64_t ts,
		   uint64_t addr)
{
	struct pub *p = &g_pub;

	p->map_len = 4096;
	p->fd = -1;
	if (kind == PUB_MEMFD) {
		p->fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
		assert_true(p->fd >= 0);
		assert_int_equal(ftruncate(p->fd, (off_t)p->map_len), 0);
		p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	} else {
		p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE,
			      (kind == PUB_ANON_SHARED ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
	}
	assert_true(p->map != MAP_FAILED);
	put_header(p->map, sig, version, size, ts, addr);
	if (kind != PUB_MEMFD &&
	    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p->map, p->map_len,
		  (unsigned long)"OTEL_CTX") != 0)
		return -EOPNOTSUPP;
	return 0;
}

static void publish_ok(enum pub_kind kind)
{
	g_pub.payload = demo_payload(&g_pub.payload_len);
	assert_int_equal(publish(kind, "OTEL_CTX", 2, (uint32_t)g_pub.payload_len,
				 now_ns(CLOCK_BOOTTIME), (uint64_t)(uintptr_t)g_pub.payload), 0);
}

static int teardown(void **state)
{
	(void)state;
	if (g_pub.map && g_pub.map != MAP_FAILED)
		munmap(g_pub.map, g_pub.map_len);
	if (g_pub.fd >= 0)
		close(g_pub.fd);
	free(g_pub.payload);
	memset(&g_pub, 0, sizeof(g_pub));
	g_pub.fd = -1;
	return 0;
}

static int read_self(struct sp_process_ctx *c, enum sp_pctx_fail *why)
{
	return sp_process_ctx__read("/proc", (uint32_t)getpid(), c, why);
}

static void check_demo(const struct sp_process_ctx *c)
{
	assert_string_equal(c->service_name, "checkout");
	assert_string_equal(c->schema_version, "tlsdesc_v1_dev");
	assert_int_equal(c->n_keys, 3);
	assert_string_equal(c->keys[0], "http.route");
	assert_string_equal(c->keys[1], "user.id");
	assert_string_equal(c->keys[2], "tenant");
}

/* ------------------------------------------------------------ parse_header */

static void test_parse_header(void **s)
{
	uint8_t h[32];
	uint32_t size;
	uint64_t ts, addr;

	(void)s;
	put_header(h, "OTEL_CTX", 2, 100, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), 0);
	assert_int_equal(size, 100);
	assert_int_equal(ts, 12345);
	assert_int_equal(addr, 0x7000);

	put_header(h, "OTEL_CTY", 2, 100, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EPROTO);
	put_header(h, "OTEL_CTX", 3, 100, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EPROTO);
	put_header(h, "OTEL_CTX", 1, 100, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EPROTO);
	put_header(h, "OTEL_CTX", 2, 100, 0, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EAGAIN);
	put_header(h, "OTEL_CTX", 2, 1u << 30, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EFBIG);
	put_header(h, "OTEL_CTX", 2, SP_PROCESS_CTX_MAX_PAYLOAD + 1, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EFBIG);
	put_header(h, "OTEL_CTX", 2, SP_PROCESS_CTX_MAX_PAYLOAD, 12345, 0x7000);
	assert_int_equal(sp_process_ctx__parse_header(h, NULL, NULL, NULL), 0);
	put_header(h, "OTEL_CTX", 2, 10, 12345, 0);
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), -EPROTO);
	put_header(h, "OTEL_CTX", 2, 0, 12345, 0);	/* empty context */
	assert_int_equal(sp_process_ctx__parse_header(h, &size, &ts, &addr), 0);
	assert_int_equal(sp_process_ctx__parse_header(NULL, &size, &ts, &addr), -EINVAL);
}

/* ------------------------------------------------------------ parse_payload */

static void test_parse_payload(void **s)
{
	struct sp_process_ctx c;
	size_t len;
	uint8_t *b;

	(void)s;
	b = demo_payload(&len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	check_demo(&c);
	sp_process_ctx__clear(&c);
	assert_int_equal(c.n_keys, 0);
	sp_process_ctx__clear(&c);	/* twice is fine */
	sp_process_ctx__clear(NULL);

	/* truncated: every proper prefix that cuts a field is rejected */
	for (size_t cut = 1; cut < len; cut++) {
		int err = sp_process_ctx__parse_payload(b, len - cut, &c);

		assert_true(err == 0 || err == -EBADMSG);
		sp_process_ctx__clear(&c);
	}
	assert_int_equal(sp_process_ctx__parse_payload(b, len - 3, &c), -EBADMSG);
	free(b);

	/* the intended final schema name */
	b = make_payload("svc", "tls_v1", demo_keys, 2, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	assert_string_equal(c.schema_version, "tls_v1");
	assert_int_equal(c.n_keys, 2);
	sp_process_ctx__clear(&c);
	free(b);

	/* an unknown thread-context schema */
	b = make_payload("svc", "tls_v9", demo_keys, 2, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), -EPROTONOSUPPORT);
	assert_int_equal(c.n_keys, 0);
	free(b);

	/* no thread-context attributes at all: a plain process context */
	b = make_payload("svc", NULL, NULL, -1, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	assert_string_equal(c.service_name, "svc");
	assert_string_equal(c.schema_version, "");
	assert_int_equal(c.n_keys, 0);
	free(b);

	/* empty payload: valid, empty */
	assert_int_equal(sp_process_ctx__parse_payload(NULL, 0, &c), 0);
	assert_string_equal(c.service_name, "");

	/* garbage */
	{
		static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						 0xff, 0xff, 0xff, 0x01, 0x02, 0x03 };
		static const uint8_t group[] = { 0x0b, 0x0c };	/* wire types 3/4 */
		static const uint8_t badlen[] = { 0x0a, 0x7f, 0x00 };

		assert_int_equal(sp_process_ctx__parse_payload(junk, sizeof(junk), &c), -EBADMSG);
		assert_int_equal(sp_process_ctx__parse_payload(group, sizeof(group), &c), -EBADMSG);
		assert_int_equal(sp_process_ctx__parse_payload(badlen, sizeof(badlen), &c), -EBADMSG);
	}
	assert_int_equal(sp_process_ctx__parse_payload((const uint8_t *)"x", SP_PROCESS_CTX_MAX_PAYLOAD + 1, &c),
			 -EFBIG);
	assert_int_equal(sp_process_ctx__parse_payload(NULL, 5, &c), -EINVAL);
}

static void test_parse_payload_bounds(void **s)
{
	static const char *const mixed[] = { "a", NULL, "c" };
	struct sp_process_ctx c;
	const char **many;
	char *longkey, *longsvc;
	size_t len;
	uint8_t *b;
	int i;

	(void)s;
	/* more keys than a u8 index can name: the first 255 are kept */
	many = calloc(300, sizeof(*many));
	assert_non_null(many);
	for (i = 0; i < 300; i++)
		many[i] = "k";
	b = make_payload("svc", "tls_v1", many, 300, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	assert_int_equal(c.n_keys, SP_PROCESS_CTX_MAX_KEYS);
	sp_process_ctx__clear(&c);
	free(b);
	free(many);

	/* long strings are truncated, not overflowed */
	longkey = malloc(5000);
	longsvc = malloc(5000);
	assert_non_null(longkey);
	assert_non_null(longsvc);
	memset(longkey, 'k', 4999);
	longkey[4999] = '\0';
	memset(longsvc, 's', 4999);
	longsvc[4999] = '\0';
	b = make_payload(longsvc, "tls_v1", (const char *const *)&longkey, 1, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	assert_int_equal(strlen(c.service_name), sizeof(c.service_name) - 1);
	assert_int_equal(c.n_keys, 1);
	assert_true(strlen(c.keys[0]) <= 255 && strlen(c.keys[0]) > 0);
	sp_process_ctx__clear(&c);
	free(b);
	free(longkey);
	free(longsvc);

	/* a non-string entry keeps its index */
	b = make_payload("svc", "tls_v1", mixed, 3, &len);
	assert_int_equal(sp_process_ctx__parse_payload(b, len, &c), 0);
	assert_int_equal(c.n_keys, 3);
	assert_string_equal(c.keys[0], "a");
	assert_string_equal(c.keys[1], "");
	assert_string_equal(c.keys[2], "c");
	sp_process_ctx__clear(&c);
	free(b);
}

/* Prepends tag + varint length in front of *start (building inside out). */
static void wrap(uint8_t **start, uint8_t *end, uint8_t tag)
{
	uint8_t v[10];
	size_t len = (size_t)(end - *start), n = 0;

	do {
		v[n] = (uint8_t)(len & 0x7f);
		len >>= 7;
		if (len)
			v[n] |= 0x80;
		n++;
	} while (len);
	*start -= n;
	memcpy(*start, v, n);
	*--*start = tag;
}

/* 64 KiB of AnyValue{array_value: ArrayValue{values: AnyValue{...}}}:
 * rejected before protobuf-c recurses into it (stack exhaustion). */
static void test_parse_payload_deep_nesting(void **s)
{
	size_t cap = SP_PROCESS_CTX_MAX_PAYLOAD;
	uint8_t *buf = malloc(cap), *end = buf + cap, *start = end, *kv_end;
	struct sp_process_ctx c;
	int levels = 0;

	(void)s;
	assert_non_null(buf);
	while (start - buf > 64) {
		wrap(&start, end, 0x0a);	/* ArrayValue.values */
		wrap(&start, end, 0x2a);	/* AnyValue.array_value */
		levels++;
	}
	wrap(&start, end, 0x12);		/* KeyValue.value */
	kv_end = end;
	*--start = 'k';
	*--start = 0x01;
	*--start = 0x0a;			/* KeyValue.key = "k" */
	wrap(&start, kv_end, 0x12);		/* ProcessContext.attributes */
	assert_true(levels > 1000);
	assert_int_equal(sp_process_ctx__parse_payload(start, (size_t)(end - start), &c), -EBADMSG);

	/* a sane depth still decodes */
	start = end;
	for (int i = 0; i < 8; i++) {
		wrap(&start, end, 0x0a);
		wrap(&start, end, 0x2a);
	}
	wrap(&start, end, 0x12);
	*--start = 'k';
	*--start = 0x01;
	*--start = 0x0a;
	wrap(&start, end, 0x12);
	assert_int_equal(sp_process_ctx__parse_payload(start, (size_t)(end - start), &c), 0);
	free(buf);
}

/* ------------------------------------------------------------ live reads */

static void test_read_memfd(void **s)
{
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	uint64_t ts;

	(void)s;
	publish_ok(PUB_MEMFD);
	memcpy(&ts, g_pub.map + 16, 8);
	assert_int_equal(read_self(&c, &why), 0);
	assert_int_equal(why, SP_PCTX_OK);
	check_demo(&c);
	assert_int_equal(c.published_at_ns, ts);
	sp_process_ctx__clear(&c);
}

static void test_read_anon(void **s)
{
	static const enum pub_kind kinds[] = { PUB_ANON_SHARED, PUB_ANON_PRIVATE };
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	size_t k;

	(void)s;
	for (k = 0; k < 2; k++) {
		g_pub.payload = demo_payload(&g_pub.payload_len);
		if (publish(kinds[k], "OTEL_CTX", 2, (uint32_t)g_pub.payload_len,
			    now_ns(CLOCK_BOOTTIME), (uint64_t)(uintptr_t)g_pub.payload) != 0) {
			teardown(NULL);
			skip();	/* no CONFIG_ANON_VMA_NAME */
		}
		assert_int_equal(read_self(&c, &why), 0);
		check_demo(&c);
		sp_process_ctx__clear(&c);
		teardown(NULL);
	}
}

/* The context is inherited by a child (MAP_SHARED memfd, heap payload). */
static void test_read_child(void **s)
{
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	int ready[2];
	pid_t pid;
	char ch;

	(void)s;
	publish_ok(PUB_MEMFD);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ch = 'r';
		if (write(ready[1], &ch, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	assert_int_equal(read(ready[0], &ch, 1), 1);
	close(ready[0]);
	close(ready[1]);
	assert_int_equal(sp_process_ctx__read("/proc", (uint32_t)pid, &c, &why), 0);
	check_demo(&c);
	sp_process_ctx__clear(&c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* and gone */
	assert_int_equal(sp_process_ctx__read("/proc", (uint32_t)pid, &c, &why), -ESRCH);
	assert_int_equal(why, SP_PCTX_READ_ERR);
}

static void test_no_mapping(void **s)
{
	struct sp_process_ctx c;
	enum sp_pctx_fail why;

	(void)s;
	assert_int_equal(read_self(&c, &why), -ENOENT);
	assert_int_equal(why, SP_PCTX_NO_MAPPING);
	/* a mapping with a similar but different name */
	g_pub.fd = memfd_create("OTEL_CTX2", MFD_CLOEXEC);
	assert_true(g_pub.fd >= 0);
	assert_int_equal(ftruncate(g_pub.fd, 4096), 0);
	g_pub.map_len = 4096;
	g_pub.map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, g_pub.fd, 0);
	assert_true(g_pub.map != MAP_FAILED);
	put_header(g_pub.map, "OTEL_CTX", 2, 0, 1, 0);
	assert_int_equal(read_self(&c, &why), -ENOENT);
	assert_int_equal(why, SP_PCTX_NO_MAPPING);
}

/* Runs one malformed publication and checks code, reason and speed. */
static void expect_fail(const char *sig, uint32_t version, uint32_t size, uint64_t ts,
			uint64_t addr, int want_err, enum sp_pctx_fail want_why)
{
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	uint64_t t0;

	assert_int_equal(publish(PUB_MEMFD, sig, version, size, ts, addr), 0);
	t0 = now_ns(CLOCK_MONOTONIC);
	assert_int_equal(read_self(&c, &why), want_err);
	assert_true(now_ns(CLOCK_MONOTONIC) - t0 < 200000000ull);	/* 200 ms */
	assert_int_equal(why, want_why);
	assert_int_equal(c.n_keys, 0);
	teardown(NULL);
}

static void test_read_malformed(void **s)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05 };
	uint64_t ts = now_ns(CLOCK_BOOTTIME);
	size_t len;
	uint8_t *p;

	(void)s;
	p = demo_payload(&len);
	expect_fail("NOT_OTEL", 2, (uint32_t)len, ts, (uint64_t)(uintptr_t)p, -EPROTO,
		    SP_PCTX_BAD_HEADER);
	expect_fail("OTEL_CTX", 3, (uint32_t)len, ts, (uint64_t)(uintptr_t)p, -EPROTO,
		    SP_PCTX_BAD_HEADER);
	expect_fail("OTEL_CTX", 2, 1u << 30, ts, (uint64_t)(uintptr_t)p, -EFBIG, SP_PCTX_TOO_BIG);
	/* update in progress forever: bounded retries */
	expect_fail("OTEL_CTX", 2, (uint32_t)len, 0, (uint64_t)(uintptr_t)p, -EAGAIN,
		    SP_PCTX_IN_PROGRESS);
	/* garbage protobuf */
	expect_fail("OTEL_CTX", 2, sizeof(junk), ts, (uint64_t)(uintptr_t)junk, -EBADMSG,
		    SP_PCTX_BAD_PAYLOAD);
	/* truncated payload: size says less than was encoded */
	expect_fail("OTEL_CTX", 2, (uint32_t)len - 3, ts, (uint64_t)(uintptr_t)p, -EBADMSG,
		    SP_PCTX_BAD_PAYLOAD);
	/* payload pointer into nothing */
	expect_fail("OTEL_CTX", 2, (uint32_t)len, ts, 0x10, -EIO, SP_PCTX_READ_ERR);
	free(p);
}

/* Payload runs past the end of a mapping into a hole.  The hole is made
 * after publishing so no later mmap() fills it. */
static void test_read_payload_past_mapping(void **s)
{
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	uint64_t addr;
	uint8_t *two;
	size_t len;
	uint8_t *p;

	(void)s;
	p = demo_payload(&len);
	assert_int_equal(publish(PUB_MEMFD, "OTEL_CTX", 2, (uint32_t)len, now_ns(CLOCK_BOOTTIME), 1),
			 0);
	two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(two != MAP_FAILED);
	assert_int_equal(munmap(two + 4096, 4096), 0);
	memcpy(two + 4096 - len / 2, p, len / 2);
	addr = (uint64_t)(uintptr_t)(two + 4096 - len / 2);
	memcpy(g_pub.map + 24, &addr, 8);
	assert_true(read_self(&c, &why) < 0);
	assert_int_equal(why, SP_PCTX_READ_ERR);
	munmap(two, 4096);
	free(p);
}

/* A writer republishing as fast as it can: every read either returns a
 * consistent context or reports an update in progress, quickly. */
struct flipper {
	atomic_int stop;
	uint8_t *hdr;
};

static void *flip(void *arg)
{
	struct flipper *f = arg;
	uint64_t zero = 0, ts = 1;

	while (!atomic_load(&f->stop)) {
		memcpy(f->hdr + 16, &zero, 8);
		atomic_signal_fence(memory_order_seq_cst);
		ts++;
		memcpy(f->hdr + 16, &ts, 8);
		atomic_signal_fence(memory_order_seq_cst);
	}
	return NULL;
}

static void test_read_concurrent_updates(void **s)
{
	struct flipper f = { .stop = 0 };
	struct sp_process_ctx c;
	enum sp_pctx_fail why;
	pthread_t t;
	int i, ok = 0, busy = 0;
	uint64_t t0;

	(void)s;
	publish_ok(PUB_MEMFD);
	f.hdr = g_pub.map;
	assert_int_equal(pthread_create(&t, NULL, flip, &f), 0);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < 50; i++) {
		int err = read_self(&c, &why);

		if (err == 0) {
			check_demo(&c);
			ok++;
		} else {
			assert_int_equal(err, -EAGAIN);
			assert_int_equal(why, SP_PCTX_IN_PROGRESS);
			busy++;
		}
		sp_process_ctx__clear(&c);
	}
	atomic_store(&f.stop, 1);
	pthread_join(t, NULL);
	assert_int_equal(ok + busy, 50);
	/* 50 reads, each at most 5 tries with 1 ms pauses */
	assert_true(now_ns(CLOCK_MONOTONIC) - t0 < 2000000000ull);
	print_message("concurrent: %d consistent, %d in progress\n", ok, busy);
}

static void test_fail_names(void **s)
{
	int i, j;

	(void)s;
	for (i = 0; i < SP_PCTX__MAX; i++) {
		assert_string_not_equal(sp_pctx_fail__name((enum sp_pctx_fail)i), "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(sp_pctx_fail__name((enum sp_pctx_fail)i),
						sp_pctx_fail__name((enum sp_pctx_fail)j));
	}
	assert_string_equal(sp_pctx_fail__name(SP_PCTX__MAX), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_header),
		cmocka_unit_test(test_parse_payload),
		cmocka_unit_test(test_parse_payload_bounds),
		cmocka_unit_test(test_parse_payload_deep_nesting),
		cmocka_unit_test_teardown(test_read_memfd, teardown),
		cmocka_unit_test_teardown(test_read_anon, teardown),
		cmocka_unit_test_teardown(test_read_child, teardown),
		cmocka_unit_test_teardown(test_no_mapping, teardown),
		cmocka_unit_test_teardown(test_read_malformed, teardown),
		cmocka_unit_test_teardown(test_read_payload_past_mapping, teardown),
		cmocka_unit_test_teardown(test_read_concurrent_updates, teardown),
		cmocka_unit_test(test_fail_names),
	};

	g_pub.fd = -1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
