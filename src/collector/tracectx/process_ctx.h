/* SPDX-License-Identifier: MIT */
/*
 * process_ctx.h - reader of the OTEP 4719 process context: a 32-byte
 * "OTEL_CTX" header at the start of a mapping of that name, pointing at a
 * protobuf ProcessContext payload in the publisher's memory.
 *
 * Untrusted input: payload size capped (SP_PROCESS_CTX_MAX_PAYLOAD), the
 * header re-read after copying the payload (retry when published_at_ns
 * changed), every string bounded.  Malformed data is reported, never fatal.
 */
#ifndef SPANPROF_PROCESS_CTX_H
#define SPANPROF_PROCESS_CTX_H

#include <stddef.h>
#include <stdint.h>

#define SP_PROCESS_CTX_MAX_PAYLOAD (64u * 1024)
#define SP_PROCESS_CTX_MAX_KEYS 255	/* key_index is a u8 */

struct sp_process_ctx {
	char service_name[128];
	char schema_version[32];	/* "tlsdesc_v1_dev" or "tls_v1" */
	uint32_t n_keys;		/* threadlocal.attribute_key_map */
	char *keys[SP_PROCESS_CTX_MAX_KEYS];	/* owned */
	uint64_t published_at_ns;
};

enum sp_pctx_fail {
	SP_PCTX_OK = 0,
	SP_PCTX_NO_MAPPING,	/* no OTEL_CTX mapping: not published */
	SP_PCTX_BAD_HEADER,	/* signature/version wrong */
	SP_PCTX_IN_PROGRESS,	/* published_at_ns stayed 0 / kept changing */
	SP_PCTX_TOO_BIG,	/* payload_size above the cap */
	SP_PCTX_BAD_PAYLOAD,	/* protobuf did not decode */
	SP_PCTX_READ_ERR,	/* process memory unreadable */
	SP_PCTX__MAX,
};

const char *sp_pctx_fail__name(enum sp_pctx_fail f);

/* Parses a header + payload already copied out (pure; fuzzed). */
int sp_process_ctx__parse_header(const uint8_t hdr[32], uint32_t *payload_size,
				 uint64_t *published_at_ns, uint64_t *payload_addr);
int sp_process_ctx__parse_payload(const uint8_t *buf, size_t len,
				  struct sp_process_ctx *out);

/* Reads a live process's context.  Returns 0 or negative errno; *why says
 * which failure (SP_PCTX_NO_MAPPING when there is nothing published). */
int sp_process_ctx__read(const char *proc_root, uint32_t pid,
			 struct sp_process_ctx *out, enum sp_pctx_fail *why);
void sp_process_ctx__clear(struct sp_process_ctx *c);	/* frees keys */

#endif
