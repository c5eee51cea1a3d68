/* SPDX-License-Identifier: MIT */
/*
 * tls_resolve.h - where does a process keep its OTEP 4947 thread-context
 * pointer (otel_thread_ctx_v1)?  Resolved once per process in user space
 * from its mappings and ELF files; the answer is a struct sp_tls_desc
 * (include/spanprof/abi.h) that the BPF sampler uses on every sample.
 *
 * Inputs are untrusted (a process's ELF files and memory): every read is
 * bounded and every offset checked.  Results:
 *   0            *out filled (model STATIC or DTV)
 *   -ENOENT      the process does not define otel_thread_ctx_v1
 *   other < 0    could not resolve; *reason says why (counted by caller)
 */
#ifndef SPANPROF_TLS_RESOLVE_H
#define SPANPROF_TLS_RESOLVE_H

#include <stdint.h>

#include "spanprof/abi.h"

enum sp_tls_fail {
	SP_TLS_FAIL_NONE = 0,
	SP_TLS_FAIL_NO_SYMBOL,		/* no module defines the symbol */
	SP_TLS_FAIL_NOT_TLS,		/* symbol exists but is not STT_TLS */
	SP_TLS_FAIL_NO_PT_TLS,		/* module has no PT_TLS segment */
	SP_TLS_FAIL_NO_RELOC,		/* shared lib: no TLSDESC/DTPMOD reloc */
	SP_TLS_FAIL_DYNAMIC_DESC,	/* TLSDESC resolved to dynamic TLS */
	SP_TLS_FAIL_READ_MEM,		/* reading the process's memory failed */
	SP_TLS_FAIL_ELF,		/* malformed or unreadable ELF */
	SP_TLS_FAIL_MAPS,		/* /proc/PID/maps unreadable */
	SP_TLS_FAIL__MAX,
};

const char *sp_tls_fail__name(enum sp_tls_fail f);

/* Resolves for a live process.  proc_root is "/proc" outside tests. */
int sp_tls_resolve__pid(const char *proc_root, uint32_t pid,
			struct sp_tls_desc *out, enum sp_tls_fail *reason);

#endif
