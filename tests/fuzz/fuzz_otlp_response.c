/* libFuzzer target: what an OTLP/HTTP endpoint answers
 * (src/export/otlp_response.c): ExportProfilesServiceResponse's
 * partial_success (protobuf-c) and google.rpc.Status (hand-written wire
 * reader), with messages copied into buffers of every small size.
 *
 * Input: byte 0 is the message buffer size (0..255), the rest the body.
 * Checked: the message is NUL-terminated inside the buffer and holds no
 * control character (it goes to a log line). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp_response.h"

static void check_msg(const char *msg, size_t cap)
{
	size_t n;

	if (!cap)
		return;
	n = strnlen(msg, cap);
	if (n == cap)
		abort();	/* not terminated inside the buffer */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap;
	uint8_t *body;
	char *msg;
	int64_t rejected;
	int32_t code;

	if (size < 1)
		return 0;
	cap = data[0];
	/* exactly sized heap copies, so ASan sees any access past either end */
	body = malloc(size - 1 ? size - 1 : 1);
	msg = malloc(cap ? cap : 1);
	if (!body || !msg) {
		free(body);
		free(msg);
		return 0;
	}
	memcpy(body, data + 1, size - 1);
	if (sp_otlp_response__partial(body, size - 1, &rejected, msg, cap) == 0)
		check_msg(msg, cap);
	if (sp_rpc_status__decode(body, size - 1, &code, msg, cap) == 0)
		check_msg(msg, cap);
	/* the sanitizer alone, on the raw bytes */
	sp_log_sanitize((const char *)body, size - 1, msg, cap);
	check_msg(msg, cap);
	free(body);
	free(msg);
	return 0;
}
