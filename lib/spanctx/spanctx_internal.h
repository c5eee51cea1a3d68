/* SPDX-License-Identifier: MIT */
/*
 * spanctx_internal.h - glue between the files of libspanctx.  Not installed;
 * nothing here is exported (the version script keeps only spanctx_* API
 * functions and otel_thread_ctx_v1, and these are hidden by visibility).
 */
#ifndef SPANCTX_INTERNAL_H
#define SPANCTX_INTERNAL_H

#include <stdint.h>

/* Runs the library's one-time setup (thread-exit key, fork handler). */
void spanctx__once(void);

/* Number of attribute keys published by spanctx_init (0 before). */
uint32_t spanctx__n_keys(void);

/* Fork child: the OTEL_CTX mapping was not inherited (MADV_DONTFORK). */
void spanctx__procctx_atfork_child(void);

#endif
