/* SPDX-License-Identifier: MIT */
/*
 * test_export_http.c - the real exporter against a real HTTP server on
 * 127.0.0.1 (tests/integration/export_server.py, a child process scripted
 * over a pipe; each test starts its own on an ephemeral port):
 * 200 with body and headers checked, URL paths, 503 + Retry-After timing,
 * 4xx/5xx not retried, 429 backoff and exhaustion, closed connections and
 * garbage answers retried, endpoint down then up, partial success, and a
 * server answering one byte per second (submit never blocks, the queue
 * drops per policy, free returns promptly), and the sender alone, as the
 * symbolizer's serve workers use it (synchronous, stopped by a flag).
 * Every wait is bounded.
 *
 * spanprof-test: serial (it bounds submit's latency to 10 ms, which other
 * tests' CPU load would stretch: tests/run.sh runs it alone)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "test_profile_fixture.h"
#include "export/exporter.h"
#include "export/sender.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ server */

struct srv {
	pid_t pid;
	FILE *to;
	FILE *from;
	int port;
	char dir[64];
};

static const char *server_script(void)
{
	static const char *const cands[] = {
		"tests/integration/export_server.py",
		"../tests/integration/export_server.py",
	};
	const char *env = getenv("SPANPROF_EXPORT_SERVER");

	if (env)
		return env;
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (!access(cands[i], R_OK))
			return cands[i];
	fail_msg("export_server.py not found: run from the repository root");
	return NULL;
}

static char *srv_line(struct srv *s, char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fileno(s->from), .events = POLLIN };

	/* bounded: the server answers at once */
	if (poll(&pfd, 1, 5000) != 1 || !fgets(buf, (int)len, s->from))
		fail_msg("export server did not answer");
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* tls: NULL, or a directory holding server.pem/server.key/client.pem */
static struct srv *srv_start_tls(int port, const char *tls)
{
	struct srv *s = calloc(1, sizeof(*s));
	char cert[128], key[128], cca[128];
	int in[2], out[2];
	char pbuf[16], line[64];
	const char *script = server_script();

	assert_non_null(s);
	assert_non_null(tu_mkdtemp(s->dir, sizeof(s->dir), "sp-export-srv"));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	snprintf(pbuf, sizeof(pbuf), "%d", port);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (!s->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (tls) {
			snprintf(cert, sizeof(cert), "%s/server.pem", tls);
			snprintf(key, sizeof(key), "%s/server.key", tls);
			snprintf(cca, sizeof(cca), "%s/client.pem", tls);
			execlp("python3", "python3", script, "--port", pbuf, "--dir", s->dir,
			       "--tls-cert", cert, "--tls-key", key, "--client-ca", cca,
			       (char *)NULL);
		}
		execlp("python3", "python3", script, "--port", pbuf, "--dir", s->dir,
		       (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->to = fdopen(in[1], "w");
	s->from = fdopen(out[0], "r");
	assert_non_null(s->to);
	assert_non_null(s->from);
	srv_line(s, line, sizeof(line));
	assert_int_equal(sscanf(line, "port %d", &s->port), 1);
	return s;
}

static struct srv *srv_start(int port)
{
	return srv_start_tls(port, NULL);
}

static void srv_cmd(struct srv *s, const char *cmd)
{
	char line[128];

	fprintf(s->to, "%s\n", cmd);
	fflush(s->to);
	if (strcmp(srv_line(s, line, sizeof(line)), "ok"))
		fail_msg("server refused \"%s\": %s", cmd, line);
}

static int srv_count(struct srv *s)
{
	char line[64];

	fprintf(s->to, "count\n");
	fflush(s->to);
	return atoi(srv_line(s, line, sizeof(line)));
}

static void srv_stop(struct srv *s)
{
	int st;

	if (!s)
		return;
	fprintf(s->to, "quit\n");
	fflush(s->to);
	for (int i = 0; i < 200; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid)
			goto reaped;
		sleep_ms(10);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
reaped:
	fclose(s->to);
	fclose(s->from);
	if (tu_rm_rf(s->dir))
		fprintf(stderr, "could not remove %s\n", s->dir);
	free(s);
}

/* Reads req-NNNN.<ext>; NULL when absent. */
static uint8_t *srv_file(struct srv *s, int idx, const char *ext, size_t *len)
{
	char path[128];
	uint8_t *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/req-%04d.%s", s->dir, idx, ext);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A line of req-NNNN.hdr: "t", "path", "peer" (key=value) or a header
 * name (case-insensitive, "Name: value").  Returns "" when absent. */
static const char *srv_hdr(struct srv *s, int idx, const char *key, char *out, size_t out_len)
{
	size_t len, kl = strlen(key);
	char *buf = (char *)srv_file(s, idx, "hdr", &len), *line, *save = NULL;

	out[0] = '\0';
	if (!buf)
		return out;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncasecmp(line, key, kl) && (line[kl] == '=' || line[kl] == ':')) {
			const char *v = line + kl + 1;

			while (*v == ' ')
				v++;
			snprintf(out, out_len, "%s", v);
			break;
		}
	}
	free(buf);
	return out;
}

static double srv_time(struct srv *s, int idx)
{
	char v[64];

	return atof(srv_hdr(s, idx, "t", v, sizeof(v)));
}

/* ------------------------------------------------------------ helpers */

static uint64_t events_of(const struct sp_profile *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->n_samples; i++)
		n += (uint64_t)p->samples[i].count;
	return n;
}

static struct sp_exporter *mk(struct sp_export_config *cfg)
{
	struct sp_exporter *e = NULL;
	char err[256];
	int r = sp_exporter__new(cfg, &e, err, sizeof(err));

	if (r)
		fail_msg("sp_exporter__new: %d: %s", r, err);
	return e;
}

static void base_cfg(struct sp_export_config *cfg, char *url, size_t url_len, int port)
{
	sp_export_config__init(cfg);
	snprintf(url, url_len, "http://127.0.0.1:%d", port);
	cfg->endpoint = url;
	cfg->timeout_ms = 5000;
	cfg->initial_backoff_ms = 10;
	cfg->max_backoff_ms = 5000;
	cfg->max_attempts = 5;
}

static struct sp_export_stats stats(struct sp_exporter *e)
{
	struct sp_export_stats st;

	sp_exporter__stats(e, &st);
	return st;
}

/* ------------------------------------------------------------ tests */

static void test_http_200_body_and_headers(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build(), *q = NULL;
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	uint8_t *body, *raw = NULL;
	size_t len, raw_len;
	char url[64], v[256];

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	cfg.headers = "Authorization=Bearer%20s3cr3t, x-scope-orgid = tenant-1";
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(st.batches_submitted, 1);
	assert_int_equal(st.batches_exported, 1);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.request_failures, 0);
	assert_int_equal(st.retries, 0);
	assert_true(st.bytes_sent > 0);
	assert_true(st.latency_ns_sum > 0 && st.latency_ns_max > 0);
	assert_int_equal(st.queue_bytes, 0);
	assert_int_equal(st.inflight_bytes, 0);
	assert_int_equal(srv_count(s), 1);

	assert_string_equal(srv_hdr(s, 1, "path", v, sizeof(v)), "/v1development/profiles");
	assert_string_equal(srv_hdr(s, 1, "Content-Type", v, sizeof(v)),
			    "application/x-protobuf");
	assert_string_equal(srv_hdr(s, 1, "Content-Encoding", v, sizeof(v)), "gzip");
	assert_string_equal(srv_hdr(s, 1, "Authorization", v, sizeof(v)), "Bearer s3cr3t");
	assert_string_equal(srv_hdr(s, 1, "X-Scope-OrgID", v, sizeof(v)), "tenant-1");
	assert_string_equal(srv_hdr(s, 1, "User-Agent", v, sizeof(v)), "spanprof/0.1");
	assert_string_equal(srv_hdr(s, 1, "Expect", v, sizeof(v)), "");

	body = srv_file(s, 1, "body", &len);
	assert_non_null(body);
	assert_int_equal(st.bytes_sent, len);
	assert_true(sp_is_gzip(body, len));
	assert_int_equal(sp_gunzip(body, len, SP_DECODE_MAX_BYTES, &raw, &raw_len), 0);
	assert_int_equal(sp_otlp__decode(raw, raw_len, &q), 0);
	assert_int_equal(q->n_samples, p->n_samples);
	assert_int_equal(events_of(q), events_of(p));
	fx_assert_equal(p, q, FX_NO_HAS_FLAGS);

	free(body);
	free(raw);
	sp_profile__free(q);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_url_paths_and_no_gzip(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build(), *q = NULL;
	struct sp_export_config cfg;
	struct sp_exporter *e;
	char url[128], v[256];
	uint8_t *body;
	size_t len;

	(void)state;
	/* generic endpoint with a base path: the signal path is appended */
	base_cfg(&cfg, url, sizeof(url), s->port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/otlp/", s->port);
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	sp_exporter__free(e);
	assert_string_equal(srv_hdr(s, 1, "path", v, sizeof(v)), "/otlp/v1development/profiles");

	/* signal URL used as is; no gzip: no Content-Encoding, raw protobuf */
	base_cfg(&cfg, url, sizeof(url), s->port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/custom/ingest?x=1", s->port);
	cfg.profiles_url = url;
	cfg.endpoint = "http://127.0.0.1:1";	/* ignored: profiles_url wins */
	cfg.gzip = false;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	assert_int_equal(stats(e).batches_exported, 1);
	sp_exporter__free(e);
	assert_string_equal(srv_hdr(s, 2, "path", v, sizeof(v)), "/custom/ingest?x=1");
	assert_string_equal(srv_hdr(s, 2, "Content-Encoding", v, sizeof(v)), "");
	body = srv_file(s, 2, "body", &len);
	assert_non_null(body);
	assert_false(sp_is_gzip(body, len));
	assert_int_equal(sp_otlp__decode(body, len, &q), 0);
	assert_int_equal(q->n_samples, p->n_samples);
	free(body);
	sp_profile__free(q);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_503_retry_after(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	char url[64], a[16], b[16];
	double gap;

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	/* backoff alone would wait <= 10 ms: a ~1 s gap is Retry-After */
	srv_cmd(s, "push 503 ra=1 body=status:14:unavailable");
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.request_failures, 1);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.batches_exported, 1);
	assert_int_equal(st.batches_dropped_failed, 0);
	assert_int_equal(srv_count(s), 2);
	gap = srv_time(s, 2) - srv_time(s, 1);
	print_message("503 Retry-After: 1 -> retried after %.3f s\n", gap);
	assert_true(gap >= 0.95 && gap < 2.0);
	/* the connection was reused across the retry */
	assert_string_equal(srv_hdr(s, 1, "peer", a, sizeof(a)), srv_hdr(s, 2, "peer", b, sizeof(b)));

	/* Retry-After over max_backoff_ms is capped; an HTTP-date in the past
	 * means now */
	sp_exporter__free(e);
	cfg.max_backoff_ms = 200;
	srv_cmd(s, "push 503 ra=3600");
	srv_cmd(s, "push 503 ra=Sun,_06_Nov_1994_08:49:37_GMT");
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	assert_int_equal(srv_count(s), 5);
	gap = srv_time(s, 4) - srv_time(s, 3);
	print_message("503 Retry-After: 3600 capped at 200 ms -> %.3f s\n", gap);
	assert_true(gap >= 0.19 && gap < 0.8);
	gap = srv_time(s, 5) - srv_time(s, 4);
	assert_true(gap < 0.5);
	assert_int_equal(stats(e).batches_exported, 1);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_4xx_5xx_not_retried(void **state)
{
	static const char *const specs[] = {
		"push 400 body=status:3:profile_is_invalid",
		"push 401 body=text:no_token",
		"push 403",
		"push 404",
		"push 413 body=status:8:too_large",
		"push 500 body=status:13:internal",
		"push 501",
		"push 301",
		"push 408",
	};
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	uint64_t ev = events_of(p);
	char url[64];
	int n = (int)(sizeof(specs) / sizeof(specs[0]));

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	e = mk(&cfg);
	for (int i = 0; i < n; i++) {
		srv_cmd(s, specs[i]);
		assert_int_equal(sp_exporter__submit(e, p), 0);
		assert_int_equal(sp_exporter__flush(e, 5000), 0);
		if (srv_count(s) != i + 1)
			fail_msg("%s: %d requests, want %d", specs[i], srv_count(s), i + 1);
	}
	sleep_ms(50);	/* nothing more arrives */
	assert_int_equal(srv_count(s), n);
	st = stats(e);
	assert_int_equal(st.requests, n);
	assert_int_equal(st.request_failures, n);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.batches_dropped_failed, n);
	assert_int_equal(st.samples_dropped, (uint64_t)n * ev);
	assert_int_equal(st.batches_exported, 0);
	assert_int_equal(st.batches_submitted, n);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_429_backoff_and_exhaustion(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	char url[64];

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	cfg.initial_backoff_ms = 50;
	cfg.max_backoff_ms = 200;
	cfg.max_attempts = 3;
	srv_cmd(s, "push 429");
	srv_cmd(s, "push 429");
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.retries, 2);
	assert_int_equal(st.batches_exported, 1);
	assert_int_equal(srv_count(s), 3);
	/* full jitter: each wait <= its cap (50 ms, then 100 ms) + slack */
	assert_true(srv_time(s, 2) - srv_time(s, 1) < 0.05 + 0.3);
	assert_true(srv_time(s, 3) - srv_time(s, 2) < 0.1 + 0.3);

	/* retryable every time: dropped after max_attempts, counted */
	srv_cmd(s, "push 502");
	srv_cmd(s, "push 504");
	srv_cmd(s, "push 503");
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(srv_count(s), 6);
	assert_int_equal(st.requests, 6);
	assert_int_equal(st.retries, 4);
	assert_int_equal(st.batches_dropped_failed, 1);
	assert_int_equal(st.samples_dropped, events_of(p));
	assert_int_equal(st.batches_exported, 1);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_close_and_garbage_retried(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	char url[64];

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	srv_cmd(s, "push 200 mode=close");
	srv_cmd(s, "push 200 mode=garbage");
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(srv_count(s), 3);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.request_failures, 2);
	assert_int_equal(st.retries, 2);
	assert_int_equal(st.batches_exported, 1);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_partial_success(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	char url[64];

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	srv_cmd(s, "push 200 body=partial:2:two_profiles_had_no_samples");
	srv_cmd(s, "push 200 body=text:not_protobuf");	/* undecodable 2xx: still exported */
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	sleep_ms(50);
	st = stats(e);
	assert_int_equal(srv_count(s), 2);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.batches_exported, 2);
	assert_int_equal(st.partial_success_rejected, 2);
	assert_int_equal(st.batches_dropped_failed, 0);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_endpoint_down_then_up(void **state)
{
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	struct srv *s;
	int port = tu_free_port();
	char url[64];
	double t0;

	(void)state;
	base_cfg(&cfg, url, sizeof(url), port);
	cfg.initial_backoff_ms = 50;
	cfg.max_backoff_ms = 200;
	cfg.max_attempts = 1000;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	t0 = now_s();
	while (stats(e).request_failures < 3 && now_s() - t0 < 5)
		sleep_ms(5);
	st = stats(e);
	assert_true(st.request_failures >= 3);
	assert_int_equal(st.batches_exported, 0);
	assert_int_equal(st.batches_dropped_failed, 0);
	assert_int_equal(sp_exporter__flush(e, 10), -ETIMEDOUT);

	s = srv_start(port);	/* the endpoint comes up */
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	print_message("endpoint down: %llu failed attempts, then exported\n",
		      (unsigned long long)st.request_failures);
	assert_int_equal(st.batches_exported, 1);
	assert_int_equal(st.batches_dropped_failed, 0);
	assert_int_equal(st.retries, st.request_failures);
	assert_int_equal(srv_count(s), 1);
	sp_exporter__free(e);
	sp_profile__free(p);
	srv_stop(s);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void test_http_slow_server_never_blocks(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len, gz_len;
	double t0, t, worst = 0, lat[40];
	char url[64];
	int n = 40;

	(void)state;
	/* the batch size, to size the queue for exactly 4 */
	assert_int_equal(sp_otlp__encode(p, &raw, &raw_len), 0);
	assert_int_equal(sp_gzip(raw, raw_len, &gz, &gz_len), 0);
	free(raw);
	free(gz);

	srv_cmd(s, "default 200 mode=slow");
	base_cfg(&cfg, url, sizeof(url), s->port);
	cfg.timeout_ms = 30000;
	cfg.queue_bytes = 4 * gz_len;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	t0 = now_s();
	while (srv_count(s) < 1 && now_s() - t0 < 5)
		sleep_ms(5);
	assert_int_equal(srv_count(s), 1);	/* the export thread is now stuck */
	sleep_ms(200);
	for (int i = 0; i < n; i++) {
		t0 = now_s();
		assert_int_equal(sp_exporter__submit(e, p), 0);
		t = now_s() - t0;
		lat[i] = t;
		if (t > worst)
			worst = t;
		st = stats(e);
		assert_true(st.queue_bytes <= cfg.queue_bytes);
	}
	st = stats(e);
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_double);
	print_message("slow endpoint: submit median %.3f ms, worst %.3f ms over %d submits; queue %zu/%zu bytes, %u batches; %llu dropped\n",
		      lat[n / 2] * 1e3, worst * 1e3, n, st.queue_bytes, cfg.queue_bytes, st.queue_batches,
		      (unsigned long long)st.batches_dropped_queue_full);
	assert_true(worst < 0.010);
	assert_int_equal(st.queue_batches, 4);
	assert_int_equal(st.queue_bytes, 4 * gz_len);
	assert_int_equal(st.inflight_bytes, gz_len);
	assert_int_equal(st.batches_submitted, n + 1);
	assert_int_equal(st.batches_dropped_queue_full, n - 4);
	assert_int_equal(st.samples_dropped, (uint64_t)(n - 4) * events_of(p));
	assert_int_equal(st.batches_exported, 0);
	/* every batch is somewhere */
	assert_int_equal(st.batches_submitted, st.batches_exported + st.batches_dropped_queue_full +
			 st.batches_dropped_failed + st.queue_batches + 1);
	assert_int_equal(sp_exporter__flush(e, 50), -ETIMEDOUT);

	t0 = now_s();
	sp_exporter__free(e);	/* mid-request */
	t = now_s() - t0;
	print_message("slow endpoint: sp_exporter__free took %.3f ms\n", t * 1e3);
	assert_true(t < 1.0);
	sp_profile__free(p);
	srv_stop(s);
}

static void test_http_free_mid_backoff(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_exporter *e;
	char url[64];
	double t0, t;

	(void)state;
	base_cfg(&cfg, url, sizeof(url), s->port);
	cfg.max_backoff_ms = 60000;
	srv_cmd(s, "push 503 ra=60");
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	t0 = now_s();
	while (stats(e).retries < 1 && now_s() - t0 < 5)
		sleep_ms(5);
	assert_int_equal(stats(e).retries, 1);
	t0 = now_s();
	sp_exporter__free(e);
	t = now_s() - t0;
	print_message("free mid-backoff took %.3f ms\n", t * 1e3);
	assert_true(t < 0.5);
	assert_int_equal(srv_count(s), 1);
	sp_profile__free(p);
	srv_stop(s);
}

/* https with a private CA bundle and a client certificate (mTLS); without
 * the CA the peer cannot be verified: dropped at once, never retried. */
static void test_https_ca_and_client_cert(void **state)
{
	const char *dir = tu_dir;
	char cmd[1024], url[64], ca[96], cc[96], ck[96];
	struct sp_profile *p = fx_build();
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	struct srv *s;

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && for n in server client; do openssl req -x509 -newkey ec "
		 "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 -keyout $n.key -out $n.pem "
		 ">/dev/null 2>&1 || exit 1; done", dir);
	if (system(cmd))
		fail_msg("openssl could not make test certificates in %s", dir);
	s = srv_start_tls(0, dir);
	snprintf(ca, sizeof(ca), "%s/server.pem", dir);
	snprintf(cc, sizeof(cc), "%s/client.pem", dir);
	snprintf(ck, sizeof(ck), "%s/client.key", dir);

	base_cfg(&cfg, url, sizeof(url), s->port);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", s->port);
	cfg.ca_file = ca;
	cfg.client_cert = cc;
	cfg.client_key = ck;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(st.batches_exported, 1);
	assert_int_equal(st.requests, 1);
	assert_int_equal(srv_count(s), 1);
	sp_exporter__free(e);

	cfg.ca_file = NULL;	/* the system store does not know this server */
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	st = stats(e);
	assert_int_equal(st.batches_exported, 0);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.batches_dropped_failed, 1);
	assert_int_equal(srv_count(s), 1);
	sp_exporter__free(e);

	srv_stop(s);
	sp_profile__free(p);
}

struct stopper {
	struct sp_sender *s;
	atomic_bool *stop;
	unsigned after_ms;
};

static void *stop_later(void *arg)
{
	struct stopper *x = arg;

	sleep_ms(x->after_ms);
	atomic_store(x->stop, true);
	sp_sender__wakeup(x->s);
	return NULL;
}

/* The sender on its own: a message delivered after a retry; a message
 * abandoned mid-backoff when the flag is set (aborted, not failed); a
 * refused one failed at once. */
static void test_sender_direct(void **state)
{
	struct srv *s = srv_start(0);
	struct sp_export_config cfg;
	struct sp_sender_stats st;
	struct sp_sender *snd = NULL;
	struct stopper x;
	atomic_bool stop;
	pthread_t th;
	char url[64], err[256];
	double t0, t;
	static const uint8_t msg[] = "not really protobuf";

	(void)state;
	atomic_init(&stop, false);
	base_cfg(&cfg, url, sizeof(url), s->port);
	cfg.max_backoff_ms = 60000;
	cfg.gzip = false;
	assert_int_equal(sp_sender__new(&cfg, "test: ", &stop, &snd, err, sizeof(err)), 0);

	srv_cmd(s, "push 503 ra=0");
	assert_int_equal(sp_sender__send(snd, msg, sizeof(msg), "message"), SP_SEND_DELIVERED);
	sp_sender__stats(snd, &st);
	assert_int_equal(st.delivered, 1);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.bytes_sent, 2 * sizeof(msg));

	srv_cmd(s, "push 503 ra=60");
	x = (struct stopper){ .s = snd, .stop = &stop, .after_ms = 200 };
	assert_int_equal(pthread_create(&th, NULL, stop_later, &x), 0);
	t0 = now_s();
	assert_int_equal(sp_sender__send(snd, msg, sizeof(msg), "message"), SP_SEND_ABORTED);
	t = now_s() - t0;
	pthread_join(th, NULL);
	print_message("sender: stopped mid-backoff after %.3f s\n", t);
	assert_true(t >= 0.15 && t < 2.0);
	sp_sender__stats(snd, &st);
	assert_int_equal(st.aborted, 1);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.requests, 3);
	/* stopped: nothing more is sent */
	assert_int_equal(sp_sender__send(snd, msg, sizeof(msg), "message"), SP_SEND_ABORTED);
	assert_int_equal(srv_count(s), 3);

	atomic_store(&stop, false);
	srv_cmd(s, "push 400 body=status:3:no");
	assert_int_equal(sp_sender__send(snd, msg, sizeof(msg), "message"), SP_SEND_FAILED);
	sp_sender__stats(snd, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.aborted, 2);
	assert_int_equal(st.delivered, 1);
	assert_int_equal(srv_count(s), 4);
	sp_sender__free(snd);

	/* a URL is required */
	sp_export_config__init(&cfg);
	cfg.output_dir = "/tmp";
	assert_int_equal(sp_sender__new(&cfg, "", NULL, &snd, err, sizeof(err)), -EINVAL);
	assert_null(snd);
	srv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_200_body_and_headers),
		cmocka_unit_test(test_http_url_paths_and_no_gzip),
		cmocka_unit_test(test_http_503_retry_after),
		cmocka_unit_test(test_http_4xx_5xx_not_retried),
		cmocka_unit_test(test_http_429_backoff_and_exhaustion),
		cmocka_unit_test(test_http_close_and_garbage_retried),
		cmocka_unit_test(test_http_partial_success),
		cmocka_unit_test(test_http_endpoint_down_then_up),
		cmocka_unit_test(test_http_slow_server_never_blocks),
		cmocka_unit_test(test_http_free_mid_backoff),
		cmocka_unit_test_setup_teardown(test_https_ca_and_client_cert, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test(test_sender_direct),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
