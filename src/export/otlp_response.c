/* SPDX-License-Identifier: MIT */
/*
 * otlp_response.c - ExportProfilesServiceResponse (protobuf-c) and
 * google.rpc.Status (a minimal wire reader: the message has three fields
 * and no .proto in the tree) (contract: otlp_response.h).
 */
#include <errno.h>
#include <string.h>

#include "export/otlp_response.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
	sp_resp_t;
#define sp_resp_unpack \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack
#define sp_resp_free \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked

void sp_log_sanitize(const char *s, size_t len, char *out, size_t out_len)
{
	size_t n = 0;

	if (!out_len)
		return;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (n + 1 >= out_len) {
			if (out_len >= 4)
				memcpy(out + out_len - 4, "...", 3);
			n = out_len - 1;
			break;
		}
		out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	out[n] = '\0';
}

int sp_otlp_response__partial(const uint8_t *buf, size_t len, int64_t *rejected,
			      char *msg, size_t msg_len)
{
	sp_resp_t *r;

	*rejected = 0;
	if (msg_len)
		msg[0] = '\0';
	if (!len)
		return 0;
	r = sp_resp_unpack(NULL, len, buf);
	if (!r)
		return -EINVAL;
	if (r->partial_success) {
		const char *m = r->partial_success->error_message;

		*rejected = r->partial_success->rejected_profiles;
		if (m)
			sp_log_sanitize(m, strlen(m), msg, msg_len);
	}
	sp_resp_free(r, NULL);
	return 0;
}

static int rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -EINVAL;
		x |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

int sp_rpc_status__decode(const uint8_t *buf, size_t len, int32_t *code, char *msg,
			  size_t msg_len)
{
	const uint8_t *p = buf, *end = buf + len;

	*code = 0;
	if (msg_len)
		msg[0] = '\0';
	while (p < end) {
		uint64_t key, v;
		unsigned int field, wt;

		if (rd_varint(&p, end, &key))
			return -EINVAL;
		field = (unsigned int)(key >> 3);
		wt = key & 7;
		if (field == 0)
			return -EINVAL;
		switch (wt) {
		case 0:
			if (rd_varint(&p, end, &v))
				return -EINVAL;
			if (field == 1)
				*code = (int32_t)v;
			else if (field == 2 || field == 3)
				return -EINVAL;
			break;
		case 1:
			if (end - p < 8 || field <= 3)
				return -EINVAL;
			p += 8;
			break;
		case 5:
			if (end - p < 4 || field <= 3)
				return -EINVAL;
			p += 4;
			break;
		case 2:
			if (rd_varint(&p, end, &v) || v > (uint64_t)(end - p) || field == 1)
				return -EINVAL;
			if (field == 2)
				sp_log_sanitize((const char *)p, (size_t)v, msg, msg_len);
			p += v;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}
