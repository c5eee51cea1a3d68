/* libFuzzer target: the OTEP 4719 OTEL_CTX header and its protobuf payload
 * (src/collector/tracectx/process_ctx.c).  First 32 bytes: header; rest: payload. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/tracectx/process_ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_process_ctx c;
	uint64_t ts, addr;
	uint32_t psize;

	if (size >= 32)
		sp_process_ctx__parse_header(data, &psize, &ts, &addr);
	memset(&c, 0, sizeof(c));
	if (sp_process_ctx__parse_payload(size >= 32 ? data + 32 : data,
					  size >= 32 ? size - 32 : size, &c) == 0) {
		if (c.n_keys > SP_PROCESS_CTX_MAX_KEYS)
			abort();
		if (!memchr(c.service_name, 0, sizeof(c.service_name)))
			abort();
	}
	sp_process_ctx__clear(&c);
	return 0;
}
