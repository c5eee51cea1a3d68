// SPDX-License-Identifier: MIT
/*
 * process_ctx.c - reader of the OTEP 4719 process context (contract:
 * process_ctx.h).
 *
 * Header (32 bytes, host endian) at the start of a mapping named OTEL_CTX:
 *   0 char[8] "OTEL_CTX" | 8 u32 version (2) | 12 u32 payload_size |
 *   16 u64 published_at_ns (0 = update in progress) | 24 u64 payload address
 *
 * sp_process_ctx__parse_header() returns 0, -EPROTO (signature, version,
 * or a non-empty payload at address 0), -EAGAIN (published_at_ns == 0) or
 * -EFBIG (payload_size above SP_PROCESS_CTX_MAX_PAYLOAD); the outputs are
 * filled whenever the signature and version are right.
 *
 * sp_process_ctx__parse_payload() overwrites *out (it does not free what
 * *out held: call sp_process_ctx__clear first when reusing one).  Before
 * protobuf-c sees the bytes, a schema-aware walk of the wire format
 * rejects nesting deeper than MAX_DEPTH messages (protobuf-c recurses once
 * per level, so 64 KiB of nested AnyValue arrays could otherwise exhaust
 * the stack).  It takes
 *   service.name                  resource attributes, else attributes
 *   threadlocal.schema_version    attributes, else resource attributes;
 *                                 "tlsdesc_v1_dev" or "tls_v1"; any other
 *                                 value: -EPROTONOSUPPORT (absent is fine:
 *                                 the process publishes no thread context)
 *   threadlocal.attribute_key_map same lookup; an array of strings; the
 *                                 first SP_PROCESS_CTX_MAX_KEYS entries,
 *                                 each at most MAX_KEY_LEN bytes
 *                                 (truncated); a non-string entry keeps
 *                                 its index with an empty key
 * Returns 0, -EFBIG (len above the cap), -EBADMSG (does not decode, too
 * deep, or a threadlocal attribute of the wrong type), -EPROTONOSUPPORT,
 * -ENOMEM.
 *
 * sp_process_ctx__read(): finds "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]"
 * or "/memfd:OTEL_CTX" (a " (deleted)" suffix is fine) in /proc/PID/maps,
 * then per candidate mapping (first that works wins) up to MAX_TRIES
 * times: header, payload copy, header again; identical headers = a
 * consistent snapshot.  An update in progress (ts 0 or a changed header)
 * waits RETRY_SLEEP_NS and retries, so one call costs at most
 * MAX_TRIES * RETRY_SLEEP_NS of sleep.  Errors: -ENOENT NO_MAPPING, -ESRCH
 * / -EIO READ_ERR, -EPROTO BAD_HEADER, -EFBIG TOO_BIG, -EAGAIN
 * IN_PROGRESS, -EBADMSG / -EPROTONOSUPPORT BAD_PAYLOAD.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/maps.h"
#include "base/maps_reader.h"
#include "collector/tracectx/process_ctx.h"
#include "profile/pbdepth.h"
#include "otel_process_context.pb-c.h"

#define HDR_SIZE 32
#define VERSION 2
#define MAX_DEPTH 32
#define MAX_KEY_LEN 255
#define MAX_TRIES 5
#define RETRY_SLEEP_NS 1000000L	/* 1 ms */
#define MAX_CANDIDATES 4

typedef Opentelemetry__Proto__Processcontext__ProcessContext pb_pctx;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;

static const char *const fail_names[SP_PCTX__MAX] = {
	[SP_PCTX_OK] = "ok",
	[SP_PCTX_NO_MAPPING] = "no_mapping",
	[SP_PCTX_BAD_HEADER] = "bad_header",
	[SP_PCTX_IN_PROGRESS] = "in_progress",
	[SP_PCTX_TOO_BIG] = "too_big",
	[SP_PCTX_BAD_PAYLOAD] = "bad_payload",
	[SP_PCTX_READ_ERR] = "read_err",
};

const char *sp_pctx_fail__name(enum sp_pctx_fail f)
{
	if ((unsigned)f >= SP_PCTX__MAX || !fail_names[f])
		return "unknown";
	return fail_names[f];
}

int sp_process_ctx__parse_header(const uint8_t hdr[32], uint32_t *payload_size,
				 uint64_t *published_at_ns, uint64_t *payload_addr)
{
	uint32_t version, size;
	uint64_t ts, addr;

	if (!hdr)
		return -EINVAL;
	if (memcmp(hdr, "OTEL_CTX", 8) != 0)
		return -EPROTO;
	memcpy(&version, hdr + 8, 4);
	memcpy(&size, hdr + 12, 4);
	memcpy(&ts, hdr + 16, 8);
	memcpy(&addr, hdr + 24, 8);
	if (version != VERSION)
		return -EPROTO;
	if (payload_size)
		*payload_size = size;
	if (published_at_ns)
		*published_at_ns = ts;
	if (payload_addr)
		*payload_addr = addr;
	if (ts == 0)
		return -EAGAIN;
	if (size > SP_PROCESS_CTX_MAX_PAYLOAD)
		return -EFBIG;
	if (size > 0 && addr == 0)
		return -EPROTO;
	return 0;
}

/* ---------------------------------------------------------- depth check */

/* ProcessContext's recursive paths (to AnyValue), for sp_pb__check_depth. */
enum { M_PCTX = 1, M_RESOURCE, M_KV, M_ANY, M_ARRAY, M_KVLIST };

static const struct sp_pb_edge pctx_edges[] = {
	{ M_PCTX, 1, M_RESOURCE },	/* resource */
	{ M_PCTX, 2, M_KV },		/* attributes */
	{ M_RESOURCE, 1, M_KV },	/* attributes */
	{ M_KV, 2, M_ANY },		/* value */
	{ M_ANY, 5, M_ARRAY },		/* array_value */
	{ M_ANY, 6, M_KVLIST },		/* kvlist_value */
	{ M_ARRAY, 1, M_ANY },		/* values */
	{ M_KVLIST, 1, M_KV },		/* values */
};

/* ---------------------------------------------------------- payload */

static const pb_any *find_attr(pb_kv *const *kv, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i] && kv[i]->key && strcmp(kv[i]->key, key) == 0)
			return kv[i]->value;
	return NULL;
}

/* Looks in the first list, then the second. */
static const pb_any *find_attr2(const pb_pctx *m, const char *key, int resource_first)
{
	pb_kv *const *ra = m->resource ? m->resource->attributes : NULL;
	size_t rn = m->resource ? m->resource->n_attributes : 0;
	const pb_any *v;

	if (resource_first) {
		v = find_attr(ra, rn, key);
		return v ? v : find_attr(m->attributes, m->n_attributes, key);
	}
	v = find_attr(m->attributes, m->n_attributes, key);
	return v ? v : find_attr(ra, rn, key);
}

static const char *any_string(const pb_any *v)
{
	if (!v || v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		return NULL;
	return v->string_value;
}

static void copy_bounded(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

int sp_process_ctx__parse_payload(const uint8_t *buf, size_t len, struct sp_process_ctx *out)
{
	static const uint8_t empty[1];
	const pb_any *v;
	const char *s;
	pb_pctx *m = NULL;
	int err = 0;

	if (!out || (!buf && len))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!buf)
		buf = empty;
	if (len > SP_PROCESS_CTX_MAX_PAYLOAD)
		return -EFBIG;
	if (sp_pb__check_depth(buf, len, M_PCTX, pctx_edges,
			       sizeof(pctx_edges) / sizeof(pctx_edges[0]), MAX_DEPTH))
		return -EBADMSG;
	m = opentelemetry__proto__processcontext__process_context__unpack(NULL, len, buf);
	if (!m)
		return -EBADMSG;

	s = any_string(find_attr2(m, "service.name", 1));
	if (s)
		copy_bounded(out->service_name, sizeof(out->service_name), s);

	v = find_attr2(m, "threadlocal.schema_version", 0);
	if (v) {
		s = any_string(v);
		if (!s) {
			err = -EBADMSG;
			goto out;
		}
		if (strcmp(s, "tlsdesc_v1_dev") != 0 && strcmp(s, "tls_v1") != 0) {
			err = -EPROTONOSUPPORT;
			goto out;
		}
		copy_bounded(out->schema_version, sizeof(out->schema_version), s);
	}

	v = find_attr2(m, "threadlocal.attribute_key_map", 0);
	if (v) {
		const Opentelemetry__Proto__Common__V1__ArrayValue *a;
		size_t i, n;

		if (v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE ||
		    !v->array_value) {
			err = -EBADMSG;
			goto out;
		}
		a = v->array_value;
		n = a->n_values < SP_PROCESS_CTX_MAX_KEYS ? a->n_values : SP_PROCESS_CTX_MAX_KEYS;
		for (i = 0; i < n; i++) {
			s = any_string(a->values[i]);
			out->keys[i] = strndup(s ? s : "", MAX_KEY_LEN);
			if (!out->keys[i]) {
				err = -ENOMEM;
				goto out;
			}
			out->n_keys = (uint32_t)(i + 1);
		}
	}
out:
	opentelemetry__proto__processcontext__process_context__free_unpacked(m, NULL);
	if (err)
		sp_process_ctx__clear(out);
	return err;
}

void sp_process_ctx__clear(struct sp_process_ctx *c)
{
	uint32_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_keys && i < SP_PROCESS_CTX_MAX_KEYS; i++)
		free(c->keys[i]);
	memset(c, 0, sizeof(*c));
}

/* ---------------------------------------------------------- live read */

struct ctx_scan {
	uint64_t *starts;
	int n;
};

static int take_ctx_line(const struct sp_map_entry *e, void *ctx)
{
	struct ctx_scan *sc = ctx;

	if (!sp_maps__is_otel_ctx(e) || e->end - e->start < HDR_SIZE || !(e->perms & SP_MAP_R))
		return 0;
	sc->starts[sc->n++] = e->start;
	return sc->n < MAX_CANDIDATES ? 0 : 1;	/* enough: stop reading */
}

/* Up to MAX_CANDIDATES start addresses of OTEL_CTX mappings. */
static int find_mappings(const char *proc_root, uint32_t pid, uint64_t *starts, int *n)
{
	struct ctx_scan sc = { .starts = starts };
	int err;

	err = sp_maps_reader__scan(proc_root, pid, take_ctx_line, &sc, NULL);
	*n = sc.n;
	return err == -ENOENT ? -ESRCH : err;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t addr)
{
	ssize_t n;

	if (addr > (uint64_t)INT64_MAX - len)
		return -EFAULT;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static void retry_pause(void)
{
	struct timespec ts = { 0, RETRY_SLEEP_NS };

	nanosleep(&ts, NULL);
}

/* One candidate mapping: 0 and *out filled, or negative errno and *why. */
static int read_one(int mem_fd, uint64_t start, uint8_t *buf, struct sp_process_ctx *out,
		    enum sp_pctx_fail *why)
{
	uint8_t h1[HDR_SIZE], h2[HDR_SIZE];
	int tries, err = -EAGAIN;

	*why = SP_PCTX_IN_PROGRESS;
	for (tries = 0; tries < MAX_TRIES; tries++) {
		uint32_t size;
		uint64_t ts, addr;

		if (tries)
			retry_pause();
		err = pread_full(mem_fd, h1, HDR_SIZE, start);
		if (err) {
			*why = SP_PCTX_READ_ERR;
			return err;
		}
		err = sp_process_ctx__parse_header(h1, &size, &ts, &addr);
		if (err == -EAGAIN) {
			*why = SP_PCTX_IN_PROGRESS;
			continue;
		}
		if (err == -EFBIG) {
			*why = SP_PCTX_TOO_BIG;
			return err;
		}
		if (err) {
			*why = SP_PCTX_BAD_HEADER;
			return err;
		}
		if (size) {
			err = pread_full(mem_fd, buf, size, addr);
			if (err) {
				*why = SP_PCTX_READ_ERR;
				return err;
			}
		}
		err = pread_full(mem_fd, h2, HDR_SIZE, start);
		if (err) {
			*why = SP_PCTX_READ_ERR;
			return err;
		}
		if (memcmp(h1, h2, HDR_SIZE) != 0) {
			/* republished while we copied: take it again */
			*why = SP_PCTX_IN_PROGRESS;
			err = -EAGAIN;
			continue;
		}
		err = sp_process_ctx__parse_payload(buf, size, out);
		if (err) {
			*why = SP_PCTX_BAD_PAYLOAD;
			return err;
		}
		out->published_at_ns = ts;
		*why = SP_PCTX_OK;
		return 0;
	}
	return err;
}

int sp_process_ctx__read(const char *proc_root, uint32_t pid, struct sp_process_ctx *out,
			 enum sp_pctx_fail *why)
{
	enum sp_pctx_fail dummy, w, first_why = SP_PCTX_OK;
	uint64_t starts[MAX_CANDIDATES];
	char path[PATH_MAX];
	uint8_t *buf = NULL;
	int i, n, err, first_err = 0, mem_fd = -1;

	if (!why)
		why = &dummy;
	*why = SP_PCTX_OK;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!proc_root)
		proc_root = "/proc";

	err = find_mappings(proc_root, pid, starts, &n);
	if (err) {
		*why = SP_PCTX_READ_ERR;
		return err;
	}
	if (n == 0) {
		*why = SP_PCTX_NO_MAPPING;
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/%u/mem", proc_root, pid);
	mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (mem_fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		*why = SP_PCTX_READ_ERR;
		goto out;
	}
	buf = malloc(SP_PROCESS_CTX_MAX_PAYLOAD);
	if (!buf) {
		err = -ENOMEM;
		*why = SP_PCTX_READ_ERR;
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = read_one(mem_fd, starts[i], buf, out, &w);
		if (err == 0) {
			*why = SP_PCTX_OK;
			goto out;
		}
		if (i == 0) {
			first_err = err;
			first_why = w;
		}
	}
	err = first_err;
	*why = first_why;
out:
	free(buf);
	if (mem_fd >= 0)
		close(mem_fd);
	return err;
}
