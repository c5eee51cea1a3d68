/* libFuzzer target: the HTTP values the exporter reads from peers and the
 * environment (src/export/http_parse.c): Retry-After (delay-seconds and the
 * three HTTP-date forms) and OTEL_EXPORTER_OTLP_HEADERS.
 *
 * Input: byte 0 picks the parser (even: Retry-After, odd: headers), bytes
 * 1..8 are the "now" the date is compared with, the rest is the value.
 * Checked: the delay never exceeds max_ms; every header handed to the
 * callback is a non-empty token key and a value without CR, LF or other
 * control characters except HTAB; at most 64 entries of at most 8 KiB. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/http_parse.h"

struct hstate {
	unsigned n;
	int stop_at;
};

static int on_header(const char *key, const char *value, void *ctx)
{
	struct hstate *st = ctx;
	size_t kl = strlen(key), vl = strlen(value);

	if (kl == 0 || kl + vl > 8192)
		abort();
	for (size_t i = 0; i < kl; i++) {
		unsigned char c = (unsigned char)key[i];

		/* RFC 9110 tchar: no separators, spaces or controls */
		if (c <= 0x20 || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c))
			abort();
	}
	for (size_t i = 0; i < vl; i++) {
		unsigned char c = (unsigned char)value[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			abort();	/* header injection */
	}
	if (++st->n > 64)
		abort();
	if (st->stop_at >= 0 && (int)st->n == st->stop_at)
		return -1;	/* the callback's error stops the walk */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t now_raw = 0, delay = 0, max_ms;
	const uint8_t *val;
	size_t len;
	char *s;

	if (size < 9)
		return 0;
	memcpy(&now_raw, data + 1, 8);
	val = data + 9;
	len = size - 9;
	/* exactly sized heap copy, so ASan sees any read past the end */
	s = malloc(len + 1);
	if (!s)
		return 0;
	memcpy(s, val, len);
	s[len] = '\0';
	if (!(data[0] & 1)) {
		/* any time a 64-bit time_t can hold, and the real cap */
		time_t now = (time_t)(now_raw % 253402300800ull);

		max_ms = data[0] & 2 ? 30000 : UINT64_MAX;
		if (sp_http__parse_retry_after(s, len, now, max_ms, &delay) == 0 &&
		    delay > max_ms)
			abort();
		(void)sp_http__status_retryable((long)(int64_t)now_raw);
	} else {
		struct hstate st = { 0, (data[0] & 2) ? (int)(now_raw % 70) : -1 };

		/* headers are a C string: cut at the first NUL */
		(void)sp_http__parse_headers(s, on_header, &st);
	}
	free(s);
	return 0;
}
