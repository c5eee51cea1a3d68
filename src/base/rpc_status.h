/* SPDX-License-Identifier: MIT */
/*
 * rpc_status.h - google.rpc.Status, the error body of OTLP/HTTP answers:
 * written by spanprof-symbolizer serve, read by the exporter.
 *
 *   message Status { int32 code = 1; string message = 2;
 *                    repeated google.protobuf.Any details = 3; }
 *
 *   byte  field  wire type      content
 *   0x08  1      0 varint       code (int32, sign-extended to 64 bits)
 *   0x12  2      2 length       message bytes (UTF-8)
 *   0x1a  3      2 length       details (never written; skipped on read)
 *
 * sp_rpc_status__encode: writes code and msg into buf (cap bytes) and
 *   returns the length (0 when cap < SP_RPC_STATUS_MIN_BUF).  The message
 *   is cut to fit; proto3 omits a zero code and an empty message.
 * sp_rpc_status__decode: untrusted input.  Fills *code (0 when absent) and
 *   msg (sanitized for a log line with sp_log_sanitize, truncated to
 *   msg_len).  Unknown fields of any valid wire type are skipped.  Returns
 *   0, or -EINVAL: a truncated or over-long varint, a length past the end,
 *   field 0, a group or reserved wire type, or one of the three known
 *   fields with the wrong wire type.
 */
#ifndef SPANPROF_BASE_RPC_STATUS_H
#define SPANPROF_BASE_RPC_STATUS_H

#include <stddef.h>
#include <stdint.h>

/* Tag + 10-byte code + tag + 10-byte length, before any message byte. */
#define SP_RPC_STATUS_MIN_BUF (2 + 2 * 10)	/* 2 * SP_PB_WIRE_VARINT_MAX */

size_t sp_rpc_status__encode(int32_t code, const char *msg, uint8_t *buf, size_t cap);
int sp_rpc_status__decode(const uint8_t *buf, size_t len, int32_t *code, char *msg,
			  size_t msg_len);

#endif /* SPANPROF_BASE_RPC_STATUS_H */
