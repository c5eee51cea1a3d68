/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - see metrics.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "base/http_guard.h"
#include "collector/agent/metrics.h"

/* Slots for scrapers and probes; one address holds at most PER_IP of
 * them, and a request must arrive whole within HEADER_MS (the guard's
 * deadline, base/http_guard.h): a slow client can neither hold every
 * slot from one address nor keep a slot by trickling. */
#define MAX_CONNECTIONS 64
#define PER_IP 4
#define HEADER_MS 5000
#define IDLE_MS 10000

/* ------------------------------------------------------------- server */

struct sp_metrics_server {
	struct MHD_Daemon *d;
	struct sp_http_guard *guard;
	size_t buf_bytes;
	sp_metrics_render_fn render;
	sp_metrics_health_fn health;
	void *ctx;
	uint16_t port;
	_Atomic uint64_t requests;
};

int sp_metrics__parse_addr(const char *addr, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon;
	unsigned long port;
	char *end;
	size_t hl;

	if (!addr || !ss)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	colon = strrchr(addr, ':');
	if (!colon || colon == addr || !colon[1])
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535 || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	hl = colon - addr;
	if (addr[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (hl < 3 || addr[hl - 1] != ']' || hl - 2 >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr + 1, hl - 2);
		host[hl - 2] = '\0';
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return 0;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	}
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *ctype,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	sp_http_guard__answered(c);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_len, void **con_cls)
{
	struct sp_metrics_server *s = cls;
	static int first_call_marker;

	(void)version;
	(void)upload;
	if (*con_cls == NULL) {		/* headers only so far */
		*con_cls = &first_call_marker;
		sp_http_guard__body(c);
		return MHD_YES;
	}
	if (*upload_len) {		/* a body is never wanted: discard it */
		*upload_len = 0;
		return MHD_YES;
	}
	atomic_fetch_add(&s->requests, 1);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			     (char *)"method not allowed\n", 19, MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/healthz")) {
		char why[160] = "unhealthy\n";
		size_t n;
		char *body;

		if (!s->health || s->health(s->ctx, why, sizeof(why)))
			return reply(c, MHD_HTTP_OK, "text/plain", (char *)"ok\n", 3,
				     MHD_RESPMEM_PERSISTENT);
		n = strnlen(why, sizeof(why) - 1);
		body = malloc(n + 1);
		if (!body)
			return MHD_NO;
		memcpy(body, why, n);
		body[n] = '\n';
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", body, n + 1,
			     MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/metrics")) {
		struct sp_metrics_buf b;
		char *mem = malloc(s->buf_bytes);

		if (!mem)
			return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
				     (char *)"out of memory\n", 14, MHD_RESPMEM_PERSISTENT);
		sp_metrics_buf__init(&b, mem, s->buf_bytes);
		s->render(&b, s->ctx);
		return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", mem, b.len,
			     MHD_RESPMEM_MUST_FREE);
	}
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", (char *)"not found\n", 10,
		     MHD_RESPMEM_PERSISTENT);
}

int sp_metrics_server__start(const char *addr, size_t buf_bytes, sp_metrics_render_fn render,
			     sp_metrics_health_fn health, void *ctx,
			     struct sp_metrics_server **out, char *err, size_t err_len)
{
	struct sockaddr_storage ss;
	struct sp_metrics_server *s;
	const union MHD_DaemonInfo *info;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;

	*out = NULL;
	if (!render || sp_metrics__parse_addr(addr, &ss)) {
		snprintf(err, err_len, "--metrics-addr %s: expected IPv4:PORT or [IPv6]:PORT",
			 addr ? addr : "(null)");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	s->guard = sp_http_guard__new(&(struct sp_http_guard_config){
		.header_ms = HEADER_MS, .body_ms = HEADER_MS, .idle_ms = IDLE_MS,
		.max_conns = MAX_CONNECTIONS });
	if (!s->guard) {
		snprintf(err, err_len, "cannot start the metrics server's connection guard: %s",
			 strerror(errno));
		free(s);
		return -ENOMEM;
	}
	s->buf_bytes = buf_bytes ? buf_bytes : 256 << 10;
	s->render = render;
	s->health = health;
	s->ctx = ctx;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)PER_IP,
				MHD_OPTION_NOTIFY_CONNECTION, sp_http_guard__notify, s->guard,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 << 10),
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, err_len, "cannot listen on %s (address in use or not local?): "
			 "choose another with --metrics-addr, or --metrics-addr none", addr);
		sp_http_guard__free(s->guard);
		free(s);
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	*out = s;
	return 0;
}

uint16_t sp_metrics_server__port(const struct sp_metrics_server *s)
{
	return s ? s->port : 0;
}

uint64_t sp_metrics_server__cut(const struct sp_metrics_server *s)
{
	uint64_t n = 0;

	for (int p = 0; s && p < SP_HTTP__PHASES; p++)
		n += sp_http_guard__cut(s->guard, (enum sp_http_phase)p);
	return n;
}

uint64_t sp_metrics_server__requests(const struct sp_metrics_server *s)
{
	return s ? atomic_load(&((struct sp_metrics_server *)s)->requests) : 0;
}

void sp_metrics_server__stop(struct sp_metrics_server *s)
{
	if (!s)
		return;
	if (s->d)
		MHD_stop_daemon(s->d);
	sp_http_guard__free(s->guard);
	free(s);
}
