/* SPDX-License-Identifier: MIT */
/*
 * serve.h - the OTLP/HTTP profiles receiver of spanprof-symbolizer.
 *
 * Contract:
 *   - POST /spanprof/v1/symbols (base/symstore.h: one host-symbol blob,
 *     application/octet-stream, identity or gzip) with store_dir set:
 *     read into the same memory budget as profiles (its bytes and the
 *     inflated bytes taken as they grow, the store's checks taken before
 *     them) on its connection's thread, under the same connection limits
 *     and deadlines, then checked and stored by store.h; 200 stored or
 *     already there, 400 malformed or not what its key says, 413 too
 *     large, 503 budget in use, shutting down or the store not open yet
 *     (it is opened after after_bind, as the user serve runs as), 507
 *     store full (not retried by OTLP senders: the agent counts it), 404
 *     without store_dir.
 *   - POST /v1development/profiles with Content-Type
 *     application/x-protobuf (an ExportProfilesServiceRequest), identity or
 *     gzip Content-Encoding.  The body is read, decoded and handed to a
 *     worker on the connection's own thread; the answer waits for what
 *     became of the profile: 200 (an empty ExportProfilesServiceResponse)
 *     only once it is written to output_dir (synced) and/or accepted by
 *     the next hop, every configured destination; else 503 with
 *     Retry-After, so the sender keeps it (OTLP's contract).  Nothing
 *     answered 200 is lost; nothing is kept that was not answered 200.
 *   - Memory: one budget (membudget.h, memory_budget bytes) covers every
 *     byte a request holds: its body, the inflated bytes, the decode's
 *     predicted peak (taken before protobuf-c allocates), the profile in
 *     the queue and in a worker, the symbolization working set, the
 *     encoded and compressed copies.  Past it: 503 + Retry-After; a
 *     request that could never fit (its decode predicted over the whole
 *     budget) 413.  Refusing costs less than accepting: the refusal comes
 *     at the first piece of body that shows it, and the rest is dropped.
 *   - Refusals, each counted: 413 body over max_body (from Content-Length
 *     before the body when the client expects "100 Continue", else after
 *     reading and dropping it), decompressed over max_decompressed (gzip
 *     bomb), over the decoder's table limits, or over the budget; 400
 *     malformed gzip or protobuf, with a google.rpc.Status body (code 3
 *     INVALID_ARGUMENT); 415 other content types or encodings; 503 with
 *     Retry-After when the queue is full, the budget is in use, a
 *     destination failed, forwarding failed in the last
 *     forward_down_hold_ms (refused before the body is decoded), or serve is stopping; 404 other paths; 405
 *     other methods.  GET /metrics answers Prometheus text with every
 *     counter, the budget's limit and use; GET /healthz 200 "ok" (503
 *     while stopping).
 *   - Connections: one thread each (a hostile body costs its own thread's
 *     time, not the other clients'), at most max_connections, at most
 *     per_ip from one address; deadlines (base/http_guard.h): the headers
 *     within header_timeout_ms, the body within body_timeout_ms, none
 *     while a worker has the profile.  admin_listen, when set, is a second
 *     port with its own slots (16, 4 per address) answering only /healthz
 *     and /metrics: data connections cannot starve a liveness probe.
 *   - Workers take profiles from the bounded queue, symbolize them through
 *     the shared resolver (kernel frames through the shared kallsyms
 *     snapshot set, looked up by the kernel's build id) and then write
 *     them to output_dir as gzip'd OTLP (profile-SEQ.otlp.pb.gz, written
 *     to a temporary name, synced and renamed) and/or forward them: each
 *     worker owns one sp_sender (export/sender.h: OTLP/HTTP's retry rules,
 *     headers, TLS, timeout, compression from o->forward), created after
 *     after_bind so its files are checked as the user serve runs as, as
 *     is output_dir (serve refuses to start when that user cannot write
 *     it).
 *   - Shutdown: when *stop becomes true new requests and queued profiles
 *     are answered 503; profiles in a worker's hands get up to
 *     shutdown_timeout_ms, then their forwards are aborted (503); then the
 *     daemons stop.  Bounded: the grace period plus closing connections.
 *   - sp_serve__run() returns when *stop becomes true (the caller's signal
 *     handling).  0 or a negative errno; every failure is reported on
 *     stderr in one line.
 */
#ifndef SPANPROF_SYMBOLIZER_SERVE_H
#define SPANPROF_SYMBOLIZER_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "export/exporter.h"
#include "jit_syms.h"
#include "kallsyms.h"
#include "resolve.h"

struct sp_serve_opts {
	const char *listen;		/* "HOST:PORT" or "[V6]:PORT" */
	/* the next hop (profiles_url, used as is), OTLP/HTTP settings; NULL:
	 * no forwarding.  Not owned; must outlive the call. */
	const struct sp_export_config *forward;
	const char *output_dir;		/* NULL: no files */
	struct sp_resolver *resolver;	/* required, shared, not owned */
	struct sp_ksyms_set *ksyms;	/* kernel snapshots; NULL none; not owned */
	struct sp_jit_syms *jit;	/* JIT perf-map pieces; NULL none; not owned */
	/* host-symbol uploads (store.h) are written here; NULL: refused (404) */
	const char *store_dir;
	uint64_t store_max_bytes;	/* default 1 GiB */
	const char *admin_listen;	/* NULL: no admin port */
	uint32_t queue_len;		/* default 16 */
	uint32_t workers;		/* default 1 */
	uint32_t max_connections;	/* default 256 */
	uint32_t per_ip;		/* connections from one address, default 32 */
	/* after a failed forward, refuse new profiles at once this long */
	uint32_t forward_down_hold_ms;
	uint32_t header_timeout_ms;	/* default 10000 */
	uint32_t body_timeout_ms;	/* default 30000 */
	size_t max_body;		/* default 16 MiB */
	size_t max_decompressed;	/* default SP_DECODE_MAX_BYTES */
	size_t memory_budget;		/* default SP_SERVE_DEFAULT_BUDGET */
	uint32_t shutdown_timeout_ms;	/* grace for work in hand, default 10000 */
	bool quiet;
	/* called once the socket is bound (e.g. to drop privileges);
	 * non-zero aborts */
	int (*after_bind)(void *arg);
	void *after_bind_arg;
	/* called once serving, with the bound ports (tests bind port 0) */
	void (*on_listening)(uint16_t port, uint16_t admin_port, void *arg);
	void *on_listening_arg;
};

/* 512 MiB: the shipped Kubernetes limit is 1 GiB; the rest is headroom
 * for what is not per request (resolver caches, libdw's modules, the
 * debuginfod client, thread stacks). */
#define SP_SERVE_DEFAULT_BUDGET ((size_t)512 << 20)

int sp_serve__run(const struct sp_serve_opts *o, volatile bool *stop);

/* "HOST:PORT" or "[V6]:PORT", numeric, port 0..65535: 0, -ERANGE (port),
 * -EINVAL. */
int sp_serve__parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len);

#endif /* SPANPROF_SYMBOLIZER_SERVE_H */
