/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - Prometheus text exposition (format 0.0.4) and the small HTTP
 * server (libmicrohttpd) that serves it on /metrics, plus /healthz.
 *
 * Writer: a fixed-capacity text buffer; sp_metrics__family writes the
 * "# HELP" and "# TYPE" lines of a metric family, sp_metrics__u64 /
 * sp_metrics__f64 one sample line "name{labels} value".  Names are checked
 * against [a-zA-Z_:][a-zA-Z0-9_:]*, label values escaped (\\ \" \n).  When
 * the buffer is full the text is cut at the last complete line and
 * truncated is set (the server then appends nothing more); a caller never
 * sees a partial line.
 *
 * Server: one internal polling thread, at most 8 connections, GET only.
 *   GET /metrics -> 200, Content-Type "text/plain; version=0.0.4", the text
 *                   the render callback wrote into a buffer of buf_bytes
 *                   (allocated per request, freed by the server: memory is
 *                   bounded by connections x buf_bytes);
 *   GET /healthz -> 200 "ok\n" while the health callback says so, else 503;
 *   other paths 404, other methods 405.
 * The render and health callbacks run on the server's thread: they must
 * only read state published for other threads.
 */
#ifndef SPANPROF_METRICS_H
#define SPANPROF_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_metrics_buf {
	char *p;
	size_t len;
	size_t cap;
	bool truncated;
	bool bad_name;		/* a name failed validation (nothing written) */
};

enum sp_metric_type {
	SP_METRIC_COUNTER,
	SP_METRIC_GAUGE,
	SP_METRIC_SUMMARY,
	SP_METRIC_HISTOGRAM,
};

void sp_metrics_buf__init(struct sp_metrics_buf *b, char *mem, size_t cap);

/* "# HELP name help\n# TYPE name type\n".  help: backslash and newline
 * are escaped.  Counter names must end in "_total" (-EINVAL otherwise). */
int sp_metrics__family(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
		       const char *help);
/* "name{k1="v1",k2="v2"} value\n".  labels: NULL-terminated array of
 * key, value pairs, or NULL. */
int sp_metrics__u64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    uint64_t v);
int sp_metrics__f64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    double v);

bool sp_metrics__valid_name(const char *name);

/* ------------------------------------------------------------- server */
typedef void (*sp_metrics_render_fn)(struct sp_metrics_buf *b, void *ctx);
typedef bool (*sp_metrics_health_fn)(void *ctx);

struct sp_metrics_server;

/* addr: "HOST:PORT" with an IPv4 literal or "[IPv6]:PORT"; port 0 picks a
 * free one (see sp_metrics_server__port).  Returns 0 and *out, or a negative
 * errno with a message in err. */
int sp_metrics_server__start(const char *addr, size_t buf_bytes, sp_metrics_render_fn render,
			     sp_metrics_health_fn health, void *ctx,
			     struct sp_metrics_server **out, char *err, size_t err_len);
uint16_t sp_metrics_server__port(const struct sp_metrics_server *s);
uint64_t sp_metrics_server__requests(const struct sp_metrics_server *s);
void sp_metrics_server__stop(struct sp_metrics_server *s);	/* NULL-safe */

/* Parses "HOST:PORT" into a sockaddr (exposed for tests). */
struct sockaddr_storage;
int sp_metrics__parse_addr(const char *addr, struct sockaddr_storage *ss);

#endif
