/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - the agent's small HTTP server (libmicrohttpd) for /metrics
 * and /healthz.  The text is written with base/metrics_text.h (included
 * here: the render callback gets its writer).
 *
 * Server: one internal polling thread, at most 64 connections and 4 from
 * one client address, each with deadlines (base/http_guard.h: the request
 * within 5 s of the connection or of the previous answer, kept alive 10 s
 * at most), GET only.
 *   GET /metrics -> 200, Content-Type "text/plain; version=0.0.4", the text
 *                   the render callback wrote into a buffer of buf_bytes
 *                   (allocated per request, freed by the server: memory is
 *                   bounded by connections x buf_bytes);
 *   GET /healthz -> 200 "ok\n" while the health callback says so, else 503
 *                   with the callback's reason;
 *   other paths 404, other methods 405.
 * The render and health callbacks run on the server's thread: they must
 * only read state published for other threads.
 */
#ifndef SPANPROF_METRICS_H
#define SPANPROF_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics_text.h"

/* ------------------------------------------------------------- server */
typedef void (*sp_metrics_render_fn)(struct sp_metrics_buf *b, void *ctx);
/* true: healthy; false with a one-line reason in why (no newline). */
typedef bool (*sp_metrics_health_fn)(void *ctx, char *why, size_t why_len);

struct sp_metrics_server;

/* addr: "HOST:PORT" with an IPv4 literal or "[IPv6]:PORT"; port 0 picks a
 * free one (see sp_metrics_server__port).  Returns 0 and *out, or a negative
 * errno with a message in err. */
int sp_metrics_server__start(const char *addr, size_t buf_bytes, sp_metrics_render_fn render,
			     sp_metrics_health_fn health, void *ctx,
			     struct sp_metrics_server **out, char *err, size_t err_len);
uint16_t sp_metrics_server__port(const struct sp_metrics_server *s);
uint64_t sp_metrics_server__requests(const struct sp_metrics_server *s);
/* Connections cut at a deadline (trickling or idle clients). */
uint64_t sp_metrics_server__cut(const struct sp_metrics_server *s);
void sp_metrics_server__stop(struct sp_metrics_server *s);	/* NULL-safe */

/* Parses "HOST:PORT" into a sockaddr (exposed for tests). */
struct sockaddr_storage;
int sp_metrics__parse_addr(const char *addr, struct sockaddr_storage *ss);

#endif
