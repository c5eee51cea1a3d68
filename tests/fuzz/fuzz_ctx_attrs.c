/* libFuzzer target: OTEP 4947 thread-record attributes as a sample carries
 * them (src/collector/tracectx/ctx_attrs.c): decode, canonical form, label
 * strings; and a goroutine's pprof labels (keys inline) to the same form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/tracectx/ctx_attrs.h"

/* a key table: index by the first two bytes, some dropped */
static int go_key(const uint8_t *key, uint8_t len, void *ctx)
{
	(void)ctx;
	return len > 1 && key[1] == 'x' ? -1 : (key[0] + (len > 1 ? key[1] : 0)) & 255;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS], b[SP_CTX_ATTRS_KEYS];
	uint8_t canon[SP_CTX_ATTRS_MAX], again[SP_CTX_ATTRS_MAX];
	/* An exactly sized heap copy so ASan sees any read past the end. */
	uint8_t *buf = malloc(size ? size : 1);
	uint32_t n, m, c, c2, dropped, dropped2;
	char str[256];

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	n = sp_ctx_attrs__decode(buf, size, a, &dropped);
	if (n > SP_CTX_ATTRS_KEYS)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		if (a[i].value < buf || a[i].value + a[i].len > buf + size)
			abort();	/* values point into the input */
		sp_ctx_attrs__string(&a[i], str);
		if (strlen(str) > a[i].len)
			abort();	/* one output byte per input byte at most */
	}
	c = sp_ctx_attrs__canon(buf, size, canon, &dropped);
	if (c > SP_CTX_ATTRS_MAX || c > size)
		abort();
	/* The canonical form decodes to whole entries, none dropped, and
	 * canonicalizes to itself. */
	m = sp_ctx_attrs__decode(canon, c, b, &dropped2);
	if (dropped2)
		abort();
	c2 = sp_ctx_attrs__canon(canon, c, again, &dropped2);
	if (c2 != c || memcmp(canon, again, c) || dropped2)
		abort();
	if (size <= SP_CTX_ATTRS_MAX && m != n)
		abort();
	/* Go labels: the canonical form fits, sorted, one entry per key */
	c = sp_ctx_attrs__canon_go(buf, size, go_key, NULL, canon, &dropped, &dropped2);
	if (c > SP_CTX_ATTRS_MAX || c > size)
		abort();
	m = sp_ctx_attrs__decode(canon, c, b, &dropped2);
	for (uint32_t i = 1; i < m; i++)
		if (b[i - 1].key >= b[i].key || dropped2)
			abort();
	free(buf);
	return 0;
}
