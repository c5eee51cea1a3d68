/* SPDX-License-Identifier: MIT */
/*
 * service_name.h - a process's service.name, in the one order every user
 * takes (the resources snapshot.c builds and the agent's --select-service,
 * through sp_pipeline__service_name):
 *
 *   1. OTEL_SERVICE_NAME from its environment,
 *   2. service.name in its OTEL_RESOURCE_ATTRIBUTES (the SDKs' order),
 *   3. service.name of its OTEP 4719 process context,
 *   4. none: NULL (resources then say "unknown_service:<executable name>",
 *      the semantic conventions' fallback; no --select-service matches).
 *
 * env is the process's declaration (procs/proc_env.h; NULL with
 * --no-process-env or when it declares nothing), ctx_name the context's
 * name (tracectx/ctx_discovery.h; NULL when none is published).  The
 * result points into one of them.
 */
#ifndef SPANPROF_COLLECTOR_SERVICE_NAME_H
#define SPANPROF_COLLECTOR_SERVICE_NAME_H

#include "collector/procs/proc_env.h"

#define SP_SERVICE_NAME_KEY "service.name"

const char *sp_service_name__resolve(const struct sp_proc_env_ident *env, const char *ctx_name);
/* The value of key among env's attributes, or NULL. */
const char *sp_service_name__env_value(const struct sp_proc_env_ident *env, const char *key);

#endif
