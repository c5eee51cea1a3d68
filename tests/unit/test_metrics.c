// SPDX-License-Identifier: MIT
/*
 * test_metrics.c - Prometheus text writer and the /metrics server
 * (base/metrics_text.h, collector/agent/metrics.h).
 *
 * Writer: HELP/TYPE lines, counters must end in _total, invalid metric and
 * label names are refused, label values and help text escaped, floats and
 * special values, a full buffer never holds half a line.  Server: port 0
 * picks a free port; GET /metrics returns the render callback's text with
 * the 0.0.4 content type, /healthz follows the health callback (200/503),
 * 404 for other paths, 405 for POST; address parsing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/agent/metrics.h"

static void test_writer(void **state)
{
	char mem[4096];
	struct sp_metrics_buf b;
	const char *const lab[] = { "reason", "ring \"full\"\\\n", NULL };

	(void)state;
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	assert_int_equal(sp_metrics__family(&b, "spanprof_x_total", SP_METRIC_COUNTER,
					    "a\\b\nc"), 0);
	assert_int_equal(sp_metrics__u64(&b, "spanprof_x_total", lab, 18446744073709551615ull), 0);
	assert_int_equal(sp_metrics__family(&b, "spanprof_g", SP_METRIC_GAUGE, "g"), 0);
	assert_int_equal(sp_metrics__f64(&b, "spanprof_g", NULL, 0.25), 0);
	assert_int_equal(sp_metrics__f64(&b, "spanprof_g", NULL, 1.0 / 0.0), 0);
	assert_string_equal(mem,
		"# HELP spanprof_x_total a\\\\b\\nc\n"
		"# TYPE spanprof_x_total counter\n"
		"spanprof_x_total{reason=\"ring \\\"full\\\"\\\\\\n\"} 18446744073709551615\n"
		"# HELP spanprof_g g\n"
		"# TYPE spanprof_g gauge\n"
		"spanprof_g 0.25\n"
		"spanprof_g +Inf\n");
	assert_false(b.truncated);
	assert_false(b.bad_name);
}

/* Issue 16: %.9g printed process_start_time_seconds 1764597600.25 as
 * 1.7645976e+09, ten seconds off.  Every finite value now reads back
 * exactly, in the shortest form. */
static void test_f64_precision(void **state)
{
	static const double vals[] = { 1764597600.25, 1764597601.0, 0.1, 1.0 / 3.0,
				       5e-324, 1.7976931348623157e308, -2.5, 0.0 };
	char mem[1024], s[40];
	struct sp_metrics_buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		sp_metrics__format_f64(vals[i], s, sizeof(s));
		assert_true(strtod(s, NULL) == vals[i]);
		assert_true(strlen(s) <= 24);
	}
	sp_metrics__format_f64(0.1, s, sizeof(s));
	assert_string_equal(s, "0.1");
	sp_metrics__format_f64(1764597601.0, s, sizeof(s));
	assert_string_equal(s, "1764597601");
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	assert_int_equal(sp_metrics__family(&b, "process_start_time_seconds", SP_METRIC_GAUGE,
					    "t"), 0);
	assert_int_equal(sp_metrics__f64(&b, "process_start_time_seconds", NULL,
					 1764597600.25), 0);
	assert_non_null(strstr(mem, "\nprocess_start_time_seconds 1764597600.25\n"));
}

static void test_names(void **state)
{
	char mem[256];
	struct sp_metrics_buf b;
	const char *const bad_label[] = { "a:b", "x", NULL };

	(void)state;
	assert_true(sp_metrics__valid_name("a_b:c9"));
	assert_false(sp_metrics__valid_name("9a"));
	assert_false(sp_metrics__valid_name("a-b"));
	assert_false(sp_metrics__valid_name(""));
	assert_false(sp_metrics__valid_name(NULL));
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	assert_int_equal(sp_metrics__family(&b, "c_count", SP_METRIC_COUNTER, "x"), -EINVAL);
	assert_int_equal(sp_metrics__family(&b, "x_totals", SP_METRIC_COUNTER, "x"), -EINVAL);
	assert_int_equal(sp_metrics__u64(&b, "bad-name", NULL, 1), -EINVAL);
	assert_int_equal(sp_metrics__u64(&b, "ok", bad_label, 1), -EINVAL);
	assert_true(b.bad_name);
	assert_int_equal(b.len, 0);
}

static void test_full_buffer(void **state)
{
	char mem[64];
	struct sp_metrics_buf b;
	int rc = 0, n = 0;

	(void)state;
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	while (!rc && n < 100) {
		rc = sp_metrics__u64(&b, "spanprof_some_metric", NULL, 123456);
		n++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(b.truncated);
	assert_true(b.len < sizeof(mem));
	assert_int_equal(mem[b.len - 1], '\n');		/* whole lines only */
	assert_int_equal(strlen(mem), b.len);
	/* nothing more once truncated, even a short line */
	assert_int_equal(sp_metrics__u64(&b, "a", NULL, 1), -ENOSPC);
}

static void test_parse_addr(void **state)
{
	struct sockaddr_storage ss;

	(void)state;
	assert_int_equal(sp_metrics__parse_addr("127.0.0.1:9464", &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
	assert_int_equal(sp_metrics__parse_addr("[::1]:0", &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(sp_metrics__parse_addr("localhost:9464", &ss), -EINVAL);
	assert_int_equal(sp_metrics__parse_addr("127.0.0.1", &ss), -EINVAL);
	assert_int_equal(sp_metrics__parse_addr("127.0.0.1:", &ss), -EINVAL);
	assert_int_equal(sp_metrics__parse_addr("127.0.0.1:70000", &ss), -EINVAL);
	assert_int_equal(sp_metrics__parse_addr("127.0.0.1:-1", &ss), -EINVAL);
	assert_int_equal(sp_metrics__parse_addr("[::1:80", &ss), -EINVAL);
}

static bool healthy = true;

static void render(struct sp_metrics_buf *b, void *ctx)
{
	(void)ctx;
	sp_metrics__family(b, "t_requests_total", SP_METRIC_COUNTER, "test");
	sp_metrics__u64(b, "t_requests_total", NULL, 42);
}

static bool health(void *ctx, char *why, size_t why_len)
{
	snprintf(why, why_len, "unhealthy: test says so");
	(void)ctx;
	return healthy;
}

/* One HTTP/1.0 exchange; returns the status code and the body in body. */
static int http(uint16_t port, const char *method, const char *path, char *resp, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char req[256];
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0), code = -1;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		 method, path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (got + 1 < len && (n = read(fd, resp + got, len - 1 - got)) > 0)
		got += n;
	resp[got] = '\0';
	close(fd);
	sscanf(resp, "HTTP/1.%*d %d", &code);
	return code;
}

static void test_server(void **state)
{
	struct sp_metrics_server *s = NULL;
	char err[256], resp[4096];
	uint16_t port;

	(void)state;
	assert_int_equal(sp_metrics_server__start("127.0.0.1:0", 0, render, health, NULL, &s,
						  err, sizeof(err)), 0);
	port = sp_metrics_server__port(s);
	assert_true(port > 0);
	assert_int_equal(http(port, "GET", "/metrics", resp, sizeof(resp)), 200);
	assert_non_null(strstr(resp, "text/plain; version=0.0.4"));
	assert_non_null(strstr(resp, "\r\n\r\n# HELP t_requests_total test\n"
				     "# TYPE t_requests_total counter\nt_requests_total 42\n"));
	assert_int_equal(http(port, "GET", "/healthz", resp, sizeof(resp)), 200);
	assert_non_null(strstr(resp, "\r\n\r\nok\n"));
	healthy = false;
	assert_int_equal(http(port, "GET", "/healthz", resp, sizeof(resp)), 503);
	assert_non_null(strstr(resp, "unhealthy: test says so"));
	healthy = true;
	assert_int_equal(http(port, "GET", "/nope", resp, sizeof(resp)), 404);
	assert_int_equal(http(port, "POST", "/metrics", resp, sizeof(resp)), 405);
	assert_int_equal(sp_metrics_server__requests(s), 5);
	/* the same port twice: refused with a message */
	{
		struct sp_metrics_server *s2 = NULL;
		char addr[32];

		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		assert_int_equal(sp_metrics_server__start(addr, 0, render, health, NULL, &s2,
							  err, sizeof(err)), -EADDRINUSE);
		assert_null(s2);
		assert_non_null(strstr(err, "cannot listen"));
	}
	sp_metrics_server__stop(s);
	assert_int_equal(sp_metrics_server__start("nope", 0, render, health, NULL, &s,
						  err, sizeof(err)), -EINVAL);
	assert_null(s);
	sp_metrics_server__stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_f64_precision),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_full_buffer),
		cmocka_unit_test(test_parse_addr),
		cmocka_unit_test(test_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
