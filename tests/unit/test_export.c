/* SPDX-License-Identifier: MIT */
/*
 * test_export.c - the exporter's pieces without a server: the bounded
 * queue and both drop policies with exact counts, the retry policy
 * (classification, full-jitter bounds), response decoders on good and
 * hostile bytes, configuration validation (one-line messages), URL
 * building, OTEL_EXPORTER_OTLP_* variables, and the whole exporter
 * against a loopback port where nothing listens (every batch accounted
 * for, the queue never above its cap).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_profile_fixture.h"
#include "testutil.h"
#include "export/config.h"
#include "export/exporter.h"
#include "export/otlp_response.h"
#include "export/queue.h"
#include "export/retry.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct sp_batch *batch(size_t len, uint64_t samples)
{
	uint8_t *d = malloc(len ? len : 1);
	struct sp_batch *b;

	assert_non_null(d);
	memset(d, (int)len, len);
	b = sp_batch__new(d, len, samples);
	assert_non_null(b);
	return b;
}

static int list_len(struct sp_batch *l, size_t *bytes)
{
	int n = 0;

	*bytes = 0;
	for (; l; l = l->next, n++)
		*bytes += l->len;
	return n;
}

/* ------------------------------------------------------------ queue */

static void test_queue_drop_oldest(void **state)
{
	struct sp_queue q;
	struct sp_batch *d, *b;
	size_t bytes;

	(void)state;
	sp_queue__init(&q, 100);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sp_queue__push(&q, batch(25, 1), SP_DROP_OLDEST, &d), 0);
		assert_null(d);
	}
	assert_int_equal(q.bytes, 100);
	assert_int_equal(q.n, 4);
	/* 30 more: the two oldest (50 bytes) go */
	b = batch(30, 1);
	assert_int_equal(sp_queue__push(&q, b, SP_DROP_OLDEST, &d), 0);
	assert_int_equal(list_len(d, &bytes), 2);
	assert_int_equal(bytes, 50);
	sp_batch__free_list(d);
	assert_int_equal(q.bytes, 80);
	assert_int_equal(q.n, 3);
	assert_ptr_equal(q.tail, b);
	/* exactly the cap fits after dropping everything */
	assert_int_equal(sp_queue__push(&q, batch(100, 1), SP_DROP_OLDEST, &d), 0);
	assert_int_equal(list_len(d, &bytes), 3);
	assert_int_equal(bytes, 80);
	sp_batch__free_list(d);
	assert_int_equal(q.bytes, 100);
	/* over the cap: refused whatever the policy, nothing dropped */
	b = batch(101, 1);
	assert_int_equal(sp_queue__push(&q, b, SP_DROP_OLDEST, &d), -ENOSPC);
	assert_null(d);
	sp_batch__free(b);
	assert_int_equal(q.bytes, 100);
	assert_int_equal(q.n, 1);
	/* FIFO */
	b = sp_queue__pop(&q);
	assert_int_equal(b->len, 100);
	sp_batch__free(b);
	assert_null(sp_queue__pop(&q));
	assert_int_equal(q.bytes, 0);
	assert_null(q.head);
	assert_null(q.tail);
}

static void test_queue_drop_newest(void **state)
{
	struct sp_queue q;
	struct sp_batch *d, *b, *l;
	size_t bytes;

	(void)state;
	sp_queue__init(&q, 100);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sp_queue__push(&q, batch(30, 1), SP_DROP_NEWEST, &d), 0);
	b = batch(11, 1);
	assert_int_equal(sp_queue__push(&q, b, SP_DROP_NEWEST, &d), -ENOSPC);
	assert_null(d);
	sp_batch__free(b);
	assert_int_equal(sp_queue__push(&q, batch(10, 1), SP_DROP_NEWEST, &d), 0);
	assert_int_equal(q.bytes, 100);
	assert_int_equal(q.n, 4);
	b = sp_queue__pop(&q);
	assert_int_equal(b->len, 30);
	sp_batch__free(b);
	l = sp_queue__take_all(&q);
	assert_int_equal(list_len(l, &bytes), 3);
	assert_int_equal(bytes, 70);
	sp_batch__free_list(l);
	assert_int_equal(q.bytes, 0);
	assert_int_equal(q.n, 0);
	sp_batch__free(NULL);
	sp_batch__free_list(NULL);
}

/* Random pushes and pops against a model: the cap always holds and bytes
 * are conserved (queued + dropped + refused + popped = pushed). */
static void test_queue_random_model(void **state)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull, pushed = 0, out = 0;
	struct sp_queue q;
	struct sp_batch *d, *b;
	size_t bytes;

	(void)state;
	sp_queue__init(&q, 1000);
	for (int i = 0; i < 20000; i++) {
		uint64_t r = sp_retry__rand(&rng);
		enum sp_drop_policy pol = (r >> 8) & 1 ? SP_DROP_OLDEST : SP_DROP_NEWEST;

		if (r % 4 == 0) {
			b = sp_queue__pop(&q);
			if (b)
				out += b->len;
			sp_batch__free(b);
		} else {
			b = batch((size_t)(r >> 16) % 1200, 1);
			pushed += b->len;
			if (sp_queue__push(&q, b, pol, &d)) {
				out += b->len;
				sp_batch__free(b);
			}
			list_len(d, &bytes);
			out += bytes;
			sp_batch__free_list(d);
		}
		assert_true(q.bytes <= q.cap);
		assert_int_equal(pushed, out + q.bytes);
	}
	sp_batch__free_list(sp_queue__take_all(&q));
}

/* ------------------------------------------------------------ retry */

static void test_retry_classify(void **state)
{
	(void)state;
	assert_int_equal(sp_retry__classify(200, false), SP_RETRY_DONE);
	assert_int_equal(sp_retry__classify(202, false), SP_RETRY_DONE);
	assert_int_equal(sp_retry__classify(204, false), SP_RETRY_DONE);
	for (long s = 100; s < 600; s++) {
		enum sp_retry_verdict v = sp_retry__classify(s, true);

		if (s >= 200 && s < 300)
			assert_int_equal(v, SP_RETRY_DONE);
		else if (s == 429 || s == 502 || s == 503 || s == 504)
			assert_int_equal(v, SP_RETRY_AGAIN);
		else
			assert_int_equal(v, SP_RETRY_FAIL);
	}
	assert_int_equal(sp_retry__classify(0, true), SP_RETRY_AGAIN);
	assert_int_equal(sp_retry__classify(0, false), SP_RETRY_FAIL);
}

static void test_retry_backoff_full_jitter(void **state)
{
	uint64_t rng = 42, seen_max[8] = { 0 }, seen_min[8];

	(void)state;
	for (int i = 0; i < 8; i++)
		seen_min[i] = UINT64_MAX;
	/* caps: 100, 200, 400, 800, 1000, 1000, ... */
	for (int n = 0; n < 20000; n++)
		for (uint32_t a = 1; a <= 8; a++) {
			uint64_t cap = a >= 5 ? 1000 : 100ull << (a - 1);
			uint64_t d = sp_retry__backoff_ms(a, 100, 1000, sp_retry__rand(&rng));

			assert_true(d <= cap);
			if (d > seen_max[a - 1])
				seen_max[a - 1] = d;
			if (d < seen_min[a - 1])
				seen_min[a - 1] = d;
		}
	/* uniform over [0, cap]: both ends are approached */
	for (uint32_t a = 1; a <= 8; a++) {
		uint64_t cap = a >= 5 ? 1000 : 100ull << (a - 1);

		assert_true(seen_max[a - 1] >= cap * 95 / 100);
		assert_true(seen_min[a - 1] <= cap * 5 / 100);
	}
	/* extremes without overflow */
	assert_int_equal(sp_retry__backoff_ms(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX),
			 UINT64_MAX % ((uint64_t)UINT32_MAX + 1));
	assert_int_equal(sp_retry__backoff_ms(1000, 1, 30000, 30000), 30000);
	assert_int_equal(sp_retry__backoff_ms(1, 0, 0, 12345), 0);
	assert_int_equal(sp_retry__backoff_ms(0, 100, 1000, 100), 100);
}

/* ------------------------------------------------------------ responses */

static void test_response_partial_success(void **state)
{
	/* {1: {1: 3, 2: "bad\nline"}} */
	static const uint8_t ok[] = { 0x0a, 0x0c, 0x08, 0x03, 0x12, 0x08,
				      'b', 'a', 'd', '\n', 'l', 'i', 'n', 'e' };
	static const uint8_t empty_ps[] = { 0x0a, 0x00 };
	static const uint8_t trunc[] = { 0x0a, 0x0c, 0x08, 0x03 };
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 0xff };
	int64_t rej;
	char msg[64];

	(void)state;
	assert_int_equal(sp_otlp_response__partial(ok, sizeof(ok), &rej, msg, sizeof(msg)), 0);
	assert_int_equal(rej, 3);
	assert_string_equal(msg, "bad?line");
	assert_int_equal(sp_otlp_response__partial(empty_ps, sizeof(empty_ps), &rej, msg,
						   sizeof(msg)), 0);
	assert_int_equal(rej, 0);
	assert_string_equal(msg, "");
	assert_int_equal(sp_otlp_response__partial(NULL, 0, &rej, msg, sizeof(msg)), 0);
	assert_int_equal(rej, 0);
	assert_int_equal(sp_otlp_response__partial(trunc, sizeof(trunc), &rej, msg, sizeof(msg)),
			 -EINVAL);
	assert_int_equal(sp_otlp_response__partial(garbage, sizeof(garbage), &rej, msg,
						   sizeof(msg)), -EINVAL);
	/* message truncated to the buffer */
	assert_int_equal(sp_otlp_response__partial(ok, sizeof(ok), &rej, msg, 6), 0);
	assert_string_equal(msg, "ba...");
}

static void test_response_rpc_status(void **state)
{
	/* {1: 3, 2: "too big", 3: {..}} */
	static const uint8_t ok[] = { 0x08, 0x03, 0x12, 0x07, 't', 'o', 'o', ' ', 'b', 'i', 'g',
				      0x1a, 0x02, 0x0a, 0x00 };
	static const uint8_t unknown_fields[] = { 0x20, 0x05, 0x12, 0x01, 'x', 0x2d, 1, 2, 3, 4 };
	static const uint8_t bad_len[] = { 0x12, 0x09, 'a' };
	static const uint8_t bad_wire[] = { 0x0a, 0x01, 'a' };	/* code as LEN */
	static const uint8_t bad_wt7[] = { 0x0f };
	static const uint8_t field0[] = { 0x00, 0x01 };
	static const uint8_t long_varint[] = { 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					       0x80, 0x80, 0x80, 0x80, 0x01 };
	int32_t code;
	char msg[64];

	(void)state;
	assert_int_equal(sp_rpc_status__decode(ok, sizeof(ok), &code, msg, sizeof(msg)), 0);
	assert_int_equal(code, 3);
	assert_string_equal(msg, "too big");
	assert_int_equal(sp_rpc_status__decode(unknown_fields, sizeof(unknown_fields), &code, msg,
					       sizeof(msg)), 0);
	assert_string_equal(msg, "x");
	assert_int_equal(sp_rpc_status__decode(bad_len, sizeof(bad_len), &code, msg, sizeof(msg)),
			 -EINVAL);
	assert_int_equal(sp_rpc_status__decode(bad_wire, sizeof(bad_wire), &code, msg,
					       sizeof(msg)), -EINVAL);
	assert_int_equal(sp_rpc_status__decode(bad_wt7, sizeof(bad_wt7), &code, msg, sizeof(msg)),
			 -EINVAL);
	assert_int_equal(sp_rpc_status__decode(field0, sizeof(field0), &code, msg, sizeof(msg)),
			 -EINVAL);
	assert_int_equal(sp_rpc_status__decode(long_varint, sizeof(long_varint), &code, msg,
					       sizeof(msg)), -EINVAL);
	/* every truncation of a good message is rejected or decodes: no over-read
	 * (ASan checks) */
	for (size_t n = 0; n < sizeof(ok); n++) {
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, ok, n);
		(void)sp_rpc_status__decode(cut, n, &code, msg, sizeof(msg));
		free(cut);
	}
}

/* ------------------------------------------------------------ config */

static int try_new(const struct sp_export_config *cfg, char *err, size_t len)
{
	struct sp_exporter *e = NULL;
	int r = sp_exporter__new(cfg, &e, err, len);

	if (!r) {
		assert_non_null(e);
		sp_exporter__free(e);
	} else {
		assert_null(e);
	}
	return r;
}

static void assert_one_line(const char *err, const char *must_contain)
{
	assert_true(err[0]);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, must_contain))
		fail_msg("message \"%s\" lacks \"%s\"", err, must_contain);
}

static void test_config_validation(void **state)
{
	static const struct {
		const char *endpoint;
		const char *headers;
		const char *want;
	} bad[] = {
		{ "ftp://collector:4318", NULL, "http or https" },
		{ "file:///etc/passwd", NULL, "http or https" },
		{ "localhost:4318", NULL, "localhost:4318" },
		{ "http://", NULL, "http://" },
		{ "http:///v1", NULL, "http:///v1" },
		{ "http://exa mple.com", NULL, "space" },
		{ "", NULL, "\"\"" },
		{ "http://localhost:4318", "authorization", "malformed" },
		{ "http://localhost:4318", "a=b,=c", "malformed" },
		{ "http://localhost:4318", "k=%zz", "malformed" },
		{ "http://localhost:4318", "k=a%0d%0aHost: evil", "malformed" },
		{ "http://localhost:4318", "Content-Type=text/plain", "Content-Type" },
		{ "http://localhost:4318", "host=x", "host" },
	};
	struct sp_export_config cfg;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sp_export_config__init(&cfg);
		cfg.endpoint = bad[i].endpoint;
		cfg.headers = bad[i].headers;
		err[0] = '\0';
		if (try_new(&cfg, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted endpoint \"%s\" headers \"%s\"", bad[i].endpoint,
				 bad[i].headers ? bad[i].headers : "");
		assert_one_line(err, bad[i].want);
	}

	sp_export_config__init(&cfg);
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -EINVAL);
	assert_one_line(err, "nothing to export to");

	sp_export_config__init(&cfg);
	cfg.endpoint = "http://localhost:4318";
	cfg.ca_file = "/nonexistent/ca.pem";
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -EINVAL);
	assert_one_line(err, "/nonexistent/ca.pem");

	cfg.ca_file = NULL;
	cfg.client_cert = "/etc/hostname";
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -EINVAL);
	assert_one_line(err, "client key");

	cfg.client_cert = NULL;
	cfg.initial_backoff_ms = 5000;
	cfg.max_backoff_ms = 100;
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -EINVAL);
	assert_one_line(err, "backoff");

	sp_export_config__init(&cfg);
	cfg.endpoint = "http://localhost:4318";
	cfg.drop_policy = (enum sp_drop_policy)7;
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -EINVAL);
	assert_one_line(err, "drop policy");

	sp_export_config__init(&cfg);
	cfg.output_dir = "/proc/nonexistent/dir";
	assert_int_equal(try_new(&cfg, err, sizeof(err)), -ENOENT);
	assert_one_line(err, "/proc/nonexistent/dir");

	sp_export_config__init(&cfg);
	cfg.output_dir = "/etc/hostname";
	assert_true(try_new(&cfg, err, sizeof(err)) < 0);
	assert_one_line(err, "/etc/hostname");

	/* good ones, including https with the defaults */
	sp_export_config__init(&cfg);
	cfg.endpoint = "HTTPS://[::1]:4318/prefix";
	cfg.headers = "a=b, c = d%2Ce,";
	assert_int_equal(try_new(&cfg, err, sizeof(err)), 0);

	/* NULL safety */
	sp_exporter__free(NULL);
	assert_int_equal(sp_exporter__flush(NULL, 10), 0);
	assert_int_equal(sp_exporter__submit(NULL, NULL), -EINVAL);
	{
		struct sp_export_stats st;

		memset(&st, 0xff, sizeof(st));
		sp_exporter__stats(NULL, &st);
		assert_int_equal(st.batches_submitted, 0);
	}
}

static void test_config_url(void **state)
{
	static const struct {
		const char *endpoint, *profiles_url, *want;
	} t[] = {
		{ "http://h:4318", NULL, "http://h:4318/v1development/profiles" },
		{ "http://h:4318/", NULL, "http://h:4318/v1development/profiles" },
		{ "http://h:4318/base", NULL, "http://h:4318/base/v1development/profiles" },
		{ "http://h:4318/base//", NULL, "http://h:4318/base/v1development/profiles" },
		{ "https://h", NULL, "https://h/v1development/profiles" },
		{ "http://h:4318/b?tenant=1", NULL, "http://h:4318/b/v1development/profiles?tenant=1" },
		{ NULL, "http://h:4318/v1development/profiles", "http://h:4318/v1development/profiles" },
		{ NULL, "http://h:4318/custom", "http://h:4318/custom" },
		{ NULL, "http://h:4318", "http://h:4318/" },
		{ "http://ignored", "http://h/x", "http://h/x" },
	};
	char err[256], *url;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(sp_export__url(t[i].endpoint, t[i].profiles_url, &url, err,
						sizeof(err)), 0);
		if (strcmp(url, t[i].want))
			fail_msg("%s | %s -> %s, want %s", t[i].endpoint, t[i].profiles_url, url,
				 t[i].want);
		free(url);
	}
	assert_int_equal(sp_export__url(NULL, NULL, &url, err, sizeof(err)), 0);
	assert_null(url);
}

static const char *const env_vars[] = {
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT",
	"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static void test_config_from_env(void **state)
{
	struct sp_export_config cfg;
	char err[256], *url;

	(void)state;
	clear_env();
	sp_export_config__init(&cfg);
	assert_int_equal(sp_export_config__from_env(&cfg, err, sizeof(err)), 0);
	assert_null(cfg.endpoint);
	assert_null(cfg.profiles_url);
	assert_true(cfg.gzip);

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://gen:4318", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=k%201", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", 1);
	setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem", 1);
	setenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem", 1);
	setenv("OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", "/k.pem", 1);
	setenv("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/generic-k.pem", 1);
	sp_export_config__init(&cfg);
	assert_int_equal(sp_export_config__from_env(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.endpoint, "http://gen:4318");
	assert_null(cfg.profiles_url);
	assert_string_equal(cfg.headers, "api-key=k%201");
	assert_false(cfg.gzip);
	assert_int_equal(cfg.timeout_ms, 2500);
	assert_string_equal(cfg.ca_file, "/ca.pem");
	assert_string_equal(cfg.client_cert, "/c.pem");
	assert_string_equal(cfg.client_key, "/k.pem");	/* PROFILES_ wins */

	/* the signal-specific endpoint wins and is used as is */
	setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://sig:4318/my/path", 1);
	setenv("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "gzip", 1);
	sp_export_config__init(&cfg);
	assert_int_equal(sp_export_config__from_env(&cfg, err, sizeof(err)), 0);
	assert_null(cfg.endpoint);
	assert_string_equal(cfg.profiles_url, "http://sig:4318/my/path");
	assert_true(cfg.gzip);
	assert_int_equal(sp_export__url(cfg.endpoint, cfg.profiles_url, &url, err, sizeof(err)), 0);
	assert_string_equal(url, "http://sig:4318/my/path");
	free(url);

	/* set fields are kept */
	sp_export_config__init(&cfg);
	cfg.endpoint = "http://flag:1";
	cfg.timeout_ms = 7;
	cfg.headers = "x=y";
	assert_int_equal(sp_export_config__from_env(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.endpoint, "http://flag:1");
	assert_null(cfg.profiles_url);
	assert_int_equal(cfg.timeout_ms, 7);
	assert_string_equal(cfg.headers, "x=y");

	/* bad values: -EINVAL and a one-line message naming the variable */
	{
		static const struct {
			const char *var, *val;
		} bad[] = {
			{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd" },
			{ "OTEL_EXPORTER_OTLP_TIMEOUT", "10s" },
			{ "OTEL_EXPORTER_OTLP_TIMEOUT", "0" },
			{ "OTEL_EXPORTER_OTLP_TIMEOUT", "-5" },
			{ "OTEL_EXPORTER_OTLP_TIMEOUT", "99999999999999999999" },
			{ "OTEL_EXPORTER_OTLP_HEADERS", "a=1,broken" },
			{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "grpc://x:4317" },
			{ "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			clear_env();
			setenv(bad[i].var, bad[i].val, 1);
			sp_export_config__init(&cfg);
			if (sp_export_config__from_env(&cfg, err, sizeof(err)) != -EINVAL)
				fail_msg("%s=%s accepted", bad[i].var, bad[i].val);
			assert_one_line(err, bad[i].var);
		}
		clear_env();
		setenv("OTEL_EXPORTER_OTLP_HEADERS", "a=1,broken", 1);
		sp_export_config__init(&cfg);
		assert_int_equal(sp_export_config__from_env(&cfg, err, sizeof(err)), -EINVAL);
		assert_one_line(err, "entry 2");
	}
	clear_env();
}

/* ------------------------------------------------------------ exporter, nothing listening */

static size_t encoded_len(const struct sp_profile *p)
{
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len, gz_len;

	assert_int_equal(sp_otlp__encode(p, &raw, &raw_len), 0);
	assert_int_equal(sp_gzip(raw, raw_len, &gz, &gz_len), 0);
	free(raw);
	free(gz);
	return gz_len;
}

static uint64_t events_of(const struct sp_profile *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->n_samples; i++)
		n += (uint64_t)p->samples[i].count;
	return n;
}

/* The export thread holds batch 1 in a long backoff; 30 more are submitted
 * into a queue of 3: exact drop counts for each policy. */
static void run_policy(enum sp_drop_policy pol)
{
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e = NULL;
	size_t len = encoded_len(p);
	uint64_t ev = events_of(p);
	char url[64], err[256];
	int n = 30, refused = 0;
	double t0;

	sp_export_config__init(&cfg);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", tu_free_port());
	cfg.endpoint = url;
	cfg.initial_backoff_ms = 30000;
	cfg.max_backoff_ms = 30000;
	cfg.queue_bytes = 3 * len;
	cfg.drop_policy = pol;
	assert_int_equal(sp_exporter__new(&cfg, &e, err, sizeof(err)), 0);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	t0 = now_s();
	do {
		sleep_ms(2);
		sp_exporter__stats(e, &st);
	} while (st.request_failures < 1 && now_s() - t0 < 5);
	assert_int_equal(st.request_failures, 1);
	assert_int_equal(st.inflight_bytes, len);

	for (int i = 0; i < n; i++) {
		int r = sp_exporter__submit(e, p);

		if (r == -ENOSPC)
			refused++;
		else
			assert_int_equal(r, 0);
		sp_exporter__stats(e, &st);
		assert_true(st.queue_bytes <= cfg.queue_bytes);
	}
	sp_exporter__stats(e, &st);
	assert_int_equal(st.batches_submitted, n + 1);
	assert_int_equal(st.queue_batches, 3);
	assert_int_equal(st.queue_bytes, 3 * len);
	assert_int_equal(st.batches_dropped_queue_full, n - 3);
	assert_int_equal(st.samples_dropped, (uint64_t)(n - 3) * ev);
	assert_int_equal(refused, pol == SP_DROP_NEWEST ? n - 3 : 0);
	assert_int_equal(st.batches_exported + st.batches_dropped_queue_full +
			 st.batches_dropped_failed + st.queue_batches + (st.inflight_bytes ? 1 : 0),
			 st.batches_submitted);
	t0 = now_s();
	sp_exporter__free(e);	/* mid-backoff */
	assert_true(now_s() - t0 < 1.0);
	sp_profile__free(p);
}

static void test_exporter_policy_oldest(void **state)
{
	(void)state;
	run_policy(SP_DROP_OLDEST);
}

static void test_exporter_policy_newest(void **state)
{
	(void)state;
	run_policy(SP_DROP_NEWEST);
}

/* Far more than queue_bytes while nothing listens and attempts fail fast:
 * after flush, every batch is dropped and counted exactly once. */
static void test_exporter_unreachable_accounting(void **state)
{
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e = NULL;
	size_t len = encoded_len(p);
	uint64_t ev = events_of(p);
	char url[64], err[256];
	int n = 500;

	(void)state;
	for (int pol = 0; pol < 2; pol++) {
		sp_export_config__init(&cfg);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", tu_free_port());
		cfg.endpoint = url;
		cfg.initial_backoff_ms = 1;
		cfg.max_backoff_ms = 2;
		cfg.max_attempts = 2;
		cfg.queue_bytes = 5 * len + len / 2;
		cfg.drop_policy = (enum sp_drop_policy)pol;
		assert_int_equal(sp_exporter__new(&cfg, &e, err, sizeof(err)), 0);
		for (int i = 0; i < n; i++) {
			int r = sp_exporter__submit(e, p);

			assert_true(r == 0 || r == -ENOSPC);
			sp_exporter__stats(e, &st);
			assert_true(st.queue_bytes <= cfg.queue_bytes);
			assert_true(st.queue_batches <= 5);
		}
		assert_int_equal(sp_exporter__flush(e, 20000), 0);
		sp_exporter__stats(e, &st);
		print_message("policy %s: %d submitted, %llu dropped queue full, %llu failed, %llu attempts\n",
			      pol ? "newest" : "oldest", n,
			      (unsigned long long)st.batches_dropped_queue_full,
			      (unsigned long long)st.batches_dropped_failed,
			      (unsigned long long)st.requests);
		assert_int_equal(st.batches_submitted, n);
		assert_int_equal(st.batches_exported, 0);
		assert_int_equal(st.batches_dropped_queue_full + st.batches_dropped_failed, n);
		assert_int_equal(st.samples_dropped, (uint64_t)n * ev);
		assert_int_equal(st.requests, 2 * st.batches_dropped_failed);
		assert_int_equal(st.retries, st.batches_dropped_failed);
		assert_int_equal(st.queue_bytes, 0);
		assert_int_equal(st.queue_batches, 0);
		assert_int_equal(st.inflight_bytes, 0);
		sp_exporter__free(e);
	}
	sp_profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_drop_oldest),
		cmocka_unit_test(test_queue_drop_newest),
		cmocka_unit_test(test_queue_random_model),
		cmocka_unit_test(test_retry_classify),
		cmocka_unit_test(test_retry_backoff_full_jitter),
		cmocka_unit_test(test_response_partial_success),
		cmocka_unit_test(test_response_rpc_status),
		cmocka_unit_test(test_config_validation),
		cmocka_unit_test(test_config_url),
		cmocka_unit_test(test_config_from_env),
		cmocka_unit_test(test_exporter_policy_oldest),
		cmocka_unit_test(test_exporter_policy_newest),
		cmocka_unit_test(test_exporter_unreachable_accounting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
