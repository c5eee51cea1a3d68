// SPDX-License-Identifier: MIT
/*
 * cmd_serve.c - `spanprof-symbolizer serve`: the OTLP/HTTP receiver
 * (serve.h) with its forward target configured like an OTLP exporter.
 *
 * The next hop: --forward URL is used as is (the full profiles URL).  Its
 * headers, TLS files, timeout and compression come from the --forward-*
 * options, else from the standard OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS,
 * CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY, TIMEOUT and COMPRESSION
 * variables (export/exporter.h); the ENDPOINT variables are not used: a
 * forward target is always explicit.  The configuration is checked before
 * the socket is bound (a bad value is a usage error, exit 2).
 *
 * Order: kernel snapshots (--kallsyms, before the drop), resolver, bind,
 * drop privileges (serve.h's after_bind), senders, workers.
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse_uint.h"
#include "export/exporter.h"
#include "export/sender.h"
#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/cli/privs.h"
#include "symbolizer/serve.h"

enum {
	OPT_LISTEN = SP_OPT_CMD, OPT_FORWARD, OPT_OUTPUT_DIR, OPT_QUEUE, OPT_WORKERS,
	OPT_MAX_BODY, OPT_FWD_HEADERS, OPT_FWD_COMPRESSION, OPT_FWD_TIMEOUT, OPT_FWD_CA,
	OPT_FWD_CERT, OPT_FWD_KEY, OPT_FWD_ATTEMPTS, OPT_SHUTDOWN, OPT_ADMIN, OPT_BUDGET,
	OPT_MAX_CONNS, OPT_PER_IP, OPT_HEADER_TIMEOUT, OPT_BODY_TIMEOUT, OPT_DOWN_HOLD,
	OPT_STORE_DIR, OPT_STORE_MAX,
};

struct serve_opts {
	struct sp_common_opts c;
	const char *listen;
	const char *admin_listen;
	const char *output_dir;
	const char *store_dir;
	uint64_t store_max;
	uint32_t queue, workers, max_body, budget_mib, max_conns, per_ip;
	uint32_t header_ms, body_ms, down_hold_ms;
	bool down_hold_set;
	double shutdown_s;
	int compression;		/* -1 unset, 0 none, 1 gzip */
	bool fwd_timeout_set, fwd_attempts_set;
	bool forward_opts;		/* a --forward-* option was given */
	struct sp_export_config fwd;	/* fwd.profiles_url: --forward */
};

#define S struct serve_opts
static const struct sp_cli_opt serve_options[] = {
	SP_CLI_OPT("listen", required_argument, OPT_LISTEN, "HOST:PORT",
	  "where to listen (default 127.0.0.1:4318)"),
	SP_CLI_OPT("admin-listen", required_argument, OPT_ADMIN, "HOST:PORT",
	  "a second port for /healthz and /metrics only (probes, scrapers)"),
	SP_CLI_U32_OPT(S, "memory-budget", OPT_BUDGET, "MIB", budget_mib, 16, 1u << 20,
		       "memory all requests may hold, 16..1048576 (default 512)"),
	SP_CLI_U32_OPT(S, "max-connections", OPT_MAX_CONNS, "N", max_conns, 4, 4096,
		       "connections at once (a thread each), 4..4096 (default 256)"),
	SP_CLI_U32_OPT(S, "max-connections-per-ip", OPT_PER_IP, "N", per_ip, 1, 4096,
		       "connections from one address, 1..4096 (default 32)"),
	SP_CLI_U32_OPT(S, "header-timeout-ms", OPT_HEADER_TIMEOUT, "MS", header_ms, 100, 600000,
		       "a request's headers must arrive within, 100..600000 (default 10000)"),
	SP_CLI_U32_OPT(S, "body-timeout-ms", OPT_BODY_TIMEOUT, "MS", body_ms, 100, 3600000,
		       "its body then within, 100..3600000 (default 30000)"),
	SP_CLI_STR_OPT(S, "output-dir", OPT_OUTPUT_DIR, "DIR", output_dir,
		       "write each symbolized profile as DIR/profile-N.otlp.pb.gz"),
	SP_CLI_OPT("forward", required_argument, OPT_FORWARD, "URL",
	  "POST each symbolized profile to this OTLP/HTTP URL (used as is)"),
	SP_CLI_OPT("forward-headers", required_argument, OPT_FWD_HEADERS, "K=V,..",
	  "request headers (else OTEL_EXPORTER_OTLP_HEADERS)"),
	SP_CLI_OPT("forward-compression", required_argument, OPT_FWD_COMPRESSION, "gzip|none",
	  "request body encoding (default gzip)"),
	SP_CLI_OPT("forward-timeout-ms", required_argument, OPT_FWD_TIMEOUT, "MS",
	  "per attempt (default 4000; else OTEL_EXPORTER_OTLP_TIMEOUT)"),
	SP_CLI_OPT("forward-ca", required_argument, OPT_FWD_CA, "FILE",
	  "https: CA bundle (else OTEL_EXPORTER_OTLP_CERTIFICATE)"),
	SP_CLI_OPT("forward-client-cert", required_argument, OPT_FWD_CERT, "FILE",
	  "https: client certificate (mTLS)"),
	SP_CLI_OPT("forward-client-key", required_argument, OPT_FWD_KEY, "FILE",
	  "https: client key (mTLS)"),
	SP_CLI_OPT("forward-down-hold-ms", required_argument, OPT_DOWN_HOLD, "MS",
	  "after a failed forward, refuse new profiles at once for MS (503),\n"
	  "                            0..600000 (default 5000; 0: never)"),
	SP_CLI_OPT("forward-attempts", required_argument, OPT_FWD_ATTEMPTS, "N",
	  "attempts per profile on 429/502/503/504 or no answer (default 2: the\n"
	  "                            client waits for them; then 503, it resends)"),
	SP_CLI_OPT("store-dir", required_argument, OPT_STORE_DIR, "DIR",
	  "accept host-symbol uploads (kernel snapshots, vDSO, JIT maps) into DIR"),
	SP_CLI_OPT("store-max-bytes", required_argument, OPT_STORE_MAX, "B",
	  "the store's disk budget; oldest JIT maps go first (default 1 GiB)"),
	SP_CLI_U32_OPT(S, "queue", OPT_QUEUE, "N", queue, 1, 1u << 20,
		       "decoded profiles waiting for a worker (default 16)"),
	SP_CLI_U32_OPT(S, "workers", OPT_WORKERS, "N", workers, 1, 64,
		       "symbolizing workers, 1..64 (default 1)"),
	SP_CLI_U32_OPT(S, "max-body", OPT_MAX_BODY, "BYTES", max_body, 1, UINT32_MAX,
		       "largest request body (default 16 MiB)"),
	SP_CLI_OPT("shutdown-timeout", required_argument, OPT_SHUTDOWN, "SEC",
	  "on SIGTERM, finish work in hand for at most SEC, then abort (503)\n"
	  "                            (0.1..600, default 10)"),
	SP_CLI_OPT_END,
};

static int parse_forward(struct sp_cli *p, struct serve_opts *o, int c, const char *optarg)
{
	o->forward_opts |= c >= OPT_FWD_HEADERS && c <= OPT_FWD_ATTEMPTS;
	switch (c) {
	case OPT_FORWARD:
		o->fwd.profiles_url = optarg;
		return 0;
	case OPT_FWD_HEADERS:
		o->fwd.headers = optarg;
		return 0;
	case OPT_FWD_COMPRESSION:
		if (sp_cli__pick(p, "--forward-compression", optarg, "none", "gzip",
				 &o->compression))
			return SP_CLI_USAGE;
		return 0;
	case OPT_FWD_TIMEOUT:
		o->fwd_timeout_set = true;
		return sp_cli__u32(p, "--forward-timeout-ms", optarg, 1, 600000,
				   &o->fwd.timeout_ms);
	case OPT_FWD_CA:
		o->fwd.ca_file = optarg;
		return 0;
	case OPT_FWD_CERT:
		o->fwd.client_cert = optarg;
		return 0;
	case OPT_FWD_KEY:
		o->fwd.client_key = optarg;
		return 0;
	case OPT_FWD_ATTEMPTS:
		o->fwd_attempts_set = true;
		return sp_cli__u32(p, "--forward-attempts", optarg, 1, 1000,
				   &o->fwd.max_attempts);
	default:	/* in the table, not handled: a bug */
		return sp_cli__bad(p, "option %d not handled", c);
	}
}

/* Fills what the options left unset from OTEL_EXPORTER_OTLP_*, then
 * checks the whole configuration by making (and dropping) one sender. */
static int check_forward(struct sp_cli *p, struct serve_opts *o)
{
	struct sp_sender *probe = NULL;
	char err[320];

	if (!o->fwd.profiles_url) {
		if (o->forward_opts)
			return sp_cli__bad(p, "--forward-* options need --forward URL");
		return 0;
	}
	if (sp_export_config__from_env(&o->fwd, err, sizeof(err)))
		return sp_cli__bad(p, "%s", err);
	/* The client waits for the forward (serve.h): keep it short by
	 * default; a 503 makes the client resend later. */
	if (!o->fwd_timeout_set && !getenv("OTEL_EXPORTER_OTLP_TIMEOUT") &&
	    !getenv("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT"))
		o->fwd.timeout_ms = 4000;
	if (!o->fwd_attempts_set)
		o->fwd.max_attempts = 2;
	if (o->compression >= 0)
		o->fwd.gzip = o->compression;
	if (sp_sender__new(&o->fwd, "", NULL, &probe, err, sizeof(err)))
		return sp_cli__bad(p, "--forward: %s", err);
	sp_sender__free(probe);
	return 0;
}

static void init(void *opts)
{
	struct serve_opts *o = opts;

	o->compression = -1;
	sp_export_config__init(&o->fwd);
}

/* The options not stored by their rows. */
static int option(struct sp_cli *p, int c, const char *optarg, void *opts)
{
	struct serve_opts *o = opts;
	char *end;
	int r;

	switch (c) {
	case OPT_LISTEN:
	case OPT_ADMIN: {
		struct sockaddr_storage ss;
		socklen_t sl;
		int pr = sp_serve__parse_listen(optarg, &ss, &sl);

		if (pr == -ERANGE)
			return sp_cli__bad(p, "%s %s: the port must be 0..65535",
					   c == OPT_LISTEN ? "--listen" : "--admin-listen", optarg);
		if (pr)
			return sp_cli__bad(p, "%s %s: want HOST:PORT or [V6]:PORT with a numeric "
					   "address", c == OPT_LISTEN ? "--listen" : "--admin-listen",
					   optarg);
		*(c == OPT_LISTEN ? &o->listen : &o->admin_listen) = optarg;
		return 0;
	}
	case OPT_DOWN_HOLD:
		r = sp_cli__u32(p, "--forward-down-hold-ms", optarg, 0, 600000, &o->down_hold_ms);
		o->down_hold_set = !r;
		return r;
	case OPT_STORE_DIR:
		if (o->store_dir || o->c.n_stores == SP_CLI_MAX_DIRS)
			return sp_cli__bad(p, "--store-dir is given once");
		o->store_dir = optarg;
		o->c.stores[o->c.n_stores++] = optarg;	/* read there too */
		return 0;
	case OPT_STORE_MAX:
		if (sp_parse_uint(optarg, 10, UINT64_MAX, &o->store_max) ||
		    o->store_max < (1u << 20))
			return sp_cli__bad(p, "--store-max-bytes %s: want bytes, at least 1048576",
					   optarg);
		return 0;
	case OPT_SHUTDOWN:
		o->shutdown_s = strtod(optarg, &end);
		if (end == optarg || *end || !(o->shutdown_s >= 0.1 && o->shutdown_s <= 600))
			return sp_cli__bad(p, "--shutdown-timeout %s: want seconds, 0.1..600",
					   optarg);
		return 0;
	default:
		return parse_forward(p, o, c, optarg);
	}
}

static int check(struct sp_cli *p, int argc, char **argv, void *opts)
{
	struct serve_opts *o = opts;

	if (optind != argc)
		return sp_cli__bad(p, "unexpected argument %s", argv[optind]);
	if (!o->fwd.profiles_url && !o->output_dir)
		return sp_cli__bad(p, "needs --forward URL and/or --output-dir DIR");
	return check_forward(p, o);
}

static volatile bool stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = true;
}

static int after_bind(void *arg)
{
	return sp_privs__drop(arg);
}

static int run(void *opts)
{
	struct serve_opts o = *(struct serve_opts *)opts;
	struct sigaction sa = { .sa_handler = on_signal };
	struct sp_sym_ctx x = { 0 };
	struct sp_serve_opts so;
	int err;

	so = (struct sp_serve_opts){
		.listen = o.listen ? o.listen : "127.0.0.1:4318",
		.admin_listen = o.admin_listen,
		.memory_budget = (size_t)o.budget_mib << 20,
		.max_connections = o.max_conns,
		.per_ip = o.per_ip,
		.header_timeout_ms = o.header_ms,
		.body_timeout_ms = o.body_ms,
		.forward_down_hold_ms = o.down_hold_set ? o.down_hold_ms : 5000,
		.forward = o.fwd.profiles_url ? &o.fwd : NULL,
		.output_dir = o.output_dir,
		.store_dir = o.store_dir,
		.store_max_bytes = o.store_max,
		.queue_len = o.queue,
		.workers = o.workers,
		.max_body = o.max_body,
		.shutdown_timeout_ms = (uint32_t)(o.shutdown_s * 1000),
		.quiet = o.c.quiet,
		.after_bind = after_bind,
		.after_bind_arg = &o.c,
	};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = sp_sym_ctx__load_ksyms(&x, &o.c, NULL);
	if (!err)
		err = sp_sym_ctx__open(&x, &o.c);
	if (err)
		goto out;
	so.resolver = x.res;
	so.ksyms = x.ks;
	so.jit = x.jit;
	err = sp_serve__run(&so, &stop_flag);
	if (!o.c.quiet && !err)
		sp_sym_ctx__print_stats(&x, NULL);
out:
	sp_sym_ctx__close(&x);
	return err ? 1 : 0;
}

const struct sp_cmd sp_cmd_serve = {
	.name = "serve",
	.operands = "",
	.summary = "OTLP/HTTP receiver: symbolize, then write files and/or forward",
	.about = "  POST /v1development/profiles (application/x-protobuf, identity or\n"
		 "  gzip); with --store-dir, POST /spanprof/v1/symbols (host symbols an\n"
		 "  agent ships); GET /metrics, /healthz.  200 only once every destination\n"
		 "  has the profile (file synced, next hop answered 2xx), else 503 +\n"
		 "  Retry-After (the sender keeps it).  Forwarding follows OTLP/HTTP's retry\n"
		 "  rules; unset --forward-* values come from OTEL_EXPORTER_OTLP_* variables.\n",
	.opts = serve_options,
	.groups = SP_OPTG_DEBUGINFO | SP_OPTG_CACHE | SP_OPTG_KALLSYMS | SP_OPTG_PRIVS,
	.opts_size = sizeof(struct serve_opts),
	.init = init,
	.option = option,
	.check = check,
	.run = run,
};
