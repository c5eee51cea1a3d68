/* SPDX-License-Identifier: MIT */
/*
 * otlp_response.c - ExportProfilesServiceResponse (protobuf-c) (contract:
 * otlp_response.h).
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
