/* SPDX-License-Identifier: MIT */
/*
 * http_guard.h - deadlines for the connections of a libmicrohttpd server
 * (serve's receiver and admin port, the agent's /metrics), so a client
 * that trickles its request cannot hold a connection slot.
 *
 * libmicrohttpd's own timeout is an idle timeout: it restarts at every
 * byte, so one header byte every 10 s keeps a connection for ever.  The
 * guard gives every connection an absolute deadline per phase:
 *   headers   from the connection's accept (or the end of the previous
 *             request on a kept-alive connection) until the access
 *             handler's first call: header_ms;
 *   body      from there until the request is answered: body_ms;
 *   working   while the server works on a request it holds (a suspended
 *             connection waiting for a worker): none, the server bounds
 *             its own work;
 *   idle      after an answer, for the next request: idle_ms then
 *             header_ms.
 * A reaper thread sleeps until the earliest deadline (without one, until
 * a deadline is set: an idle server costs no wakeups; it used to look
 * every 100 ms) and cuts a connection past its deadline with shutdown(2) on a dup of its socket (the duplicate is the
 * guard's own, closed when libmicrohttpd reports the connection closed, so
 * a reused descriptor number is never cut by mistake); libmicrohttpd then
 * sees the end of the stream and closes the connection as usual.  Cuts are
 * counted per phase.
 *
 * Use: pass MHD_OPTION_NOTIFY_CONNECTION, sp_http_guard__notify, g to
 * MHD_start_daemon; call __body at the handler's first call, __working
 * before suspending, __answered after queueing a response (or from the
 * request-completed callback).  Each takes the connection and finds its
 * slot through MHD_CONNECTION_INFO_SOCKET_CONTEXT; a connection the guard
 * has no slot for (more than max_conns, or dup failed) is left alone.
 *
 * Threads: every function may be called from any of libmicrohttpd's
 * threads; one mutex covers the slots.  Memory: max_conns slots at __new.
 */
#ifndef SPANPROF_BASE_HTTP_GUARD_H
#define SPANPROF_BASE_HTTP_GUARD_H

#include <stdint.h>

#include <microhttpd.h>

enum sp_http_phase {
	SP_HTTP_HEADERS = 0,
	SP_HTTP_BODY,
	SP_HTTP_WORKING,
	SP_HTTP_IDLE,
	SP_HTTP__PHASES,
};

struct sp_http_guard_config {
	uint32_t header_ms;	/* default 10000 */
	uint32_t body_ms;	/* default 30000 */
	uint32_t idle_ms;	/* default 30000 */
	uint32_t max_conns;	/* slots: the daemon's connection limit */
};

struct sp_http_guard;

/* NULL with errno on failure (the reaper thread could not start). */
struct sp_http_guard *sp_http_guard__new(const struct sp_http_guard_config *cfg);
void sp_http_guard__free(struct sp_http_guard *g);	/* NULL-safe; after MHD_stop_daemon */

void sp_http_guard__notify(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code);
void sp_http_guard__body(struct MHD_Connection *c);
void sp_http_guard__working(struct MHD_Connection *c);
void sp_http_guard__answered(struct MHD_Connection *c);

/* Connections cut in phase p since __new; open connections now. */
uint64_t sp_http_guard__cut(const struct sp_http_guard *g, enum sp_http_phase p);
uint32_t sp_http_guard__open(const struct sp_http_guard *g);
const char *sp_http_guard__phase_name(enum sp_http_phase p);

#endif /* SPANPROF_BASE_HTTP_GUARD_H */
