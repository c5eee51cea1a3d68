/* SPDX-License-Identifier: MIT */
/*
 * otel_env.h - the OpenTelemetry SDK environment variables that name a
 * resource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, parsed from a
 * process's environment block (/proc/PID/environ: untrusted bytes) or
 * from spanprof's own environment.
 *
 * OTEL_RESOURCE_ATTRIBUTES is "key1=value1,key2=value2" (OpenTelemetry
 * SDK configuration; the W3C Baggage syntax without properties): blanks
 * around keys and values are trimmed, empty entries are skipped, values
 * are percent-decoded.  An entry without '=', an empty key, a key with a
 * character outside printable ASCII (or one of ' ', ',', '=', ';', '"',
 * '\\'), or a broken %XX makes the whole value invalid: the SDK
 * specification says to discard it then, and it is (counted by callers).
 * A later duplicate key replaces the earlier one.
 *
 * Bounds (a process controls its environment): at most SP_OTEL_ATTRS_MAX
 * attributes, keys of at most SP_OTEL_KEY_MAX bytes, values and the
 * service name of at most SP_OTEL_VALUE_MAX bytes after decoding; what is
 * beyond is dropped and counted in ->dropped, never truncated into a
 * different name.  Values are made valid UTF-8 without control characters
 * (each offending byte becomes '?'): they go into protobuf strings.
 * No allocation; the structs are filled in place.
 */
#ifndef SPANPROF_OTEL_ENV_H
#define SPANPROF_OTEL_ENV_H

#include <stddef.h>
#include <stdint.h>

#define SP_OTEL_ATTRS_MAX 16
#define SP_OTEL_KEY_MAX 127
#define SP_OTEL_VALUE_MAX 255

struct sp_otel_attr {
	char key[SP_OTEL_KEY_MAX + 1];
	char value[SP_OTEL_VALUE_MAX + 1];
};

struct sp_otel_attrs {
	uint32_t n;
	uint32_t dropped;	/* over the bounds above */
	struct sp_otel_attr a[SP_OTEL_ATTRS_MAX];
};

/* What one environment declares. */
struct sp_otel_identity {
	char service_name[SP_OTEL_VALUE_MAX + 1];	/* "" = not declared */
	struct sp_otel_attrs attrs;	/* from OTEL_RESOURCE_ATTRIBUTES */
	uint32_t invalid;		/* 1: OTEL_RESOURCE_ATTRIBUTES discarded */
};

/* Parses an OTEL_RESOURCE_ATTRIBUTES value s[0..len) into out (cleared
 * first).  0, or -EINVAL (out then empty) with the 1-based number of the
 * bad entry in *bad_entry (may be NULL). */
int sp_otel_env__parse_attrs(const char *s, size_t len, struct sp_otel_attrs *out,
			     uint32_t *bad_entry);

/* Scans an environment block (NUL-separated NAME=VALUE entries, as
 * /proc/PID/environ holds; the last may lack its NUL) for the first
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, as getenv() would find
 * them, into out (cleared first).  Returns 1 when either was present, 0
 * when neither. */
int sp_otel_env__scan(const char *env, size_t len, struct sp_otel_identity *out);

/* The value for key in attrs, or NULL. */
const char *sp_otel_env__get(const struct sp_otel_attrs *attrs, const char *key);

#endif
